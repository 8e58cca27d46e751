# Anteroom: one self-contained binary (API + embedded web UI).
# Not built on the development machines (they have no Docker engine); kept honest by using the
# exact build path CI exercises: `cargo xtask build`.

FROM rust:1.95-bookworm AS builder
WORKDIR /src
RUN rustup target add wasm32-unknown-unknown
COPY . .
ENV CARGO_TARGET_DIR=/src/target
RUN cargo xtask build && cp target/release/anteroom /usr/local/bin/anteroom

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/anteroom --shell /usr/sbin/nologin anteroom \
 && mkdir -p /var/lib/anteroom && chown anteroom:anteroom /var/lib/anteroom
COPY --from=builder /usr/local/bin/anteroom /usr/local/bin/anteroom
USER anteroom
ENV ANTEROOM_LISTEN=0.0.0.0:8080 \
    ANTEROOM_DATA_DIR=/var/lib/anteroom \
    ANTEROOM_LOG_FORMAT=json
VOLUME ["/var/lib/anteroom"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ["anteroom", "healthcheck"]
ENTRYPOINT ["anteroom"]
CMD ["serve"]

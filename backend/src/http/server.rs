//! The accept loop: hyper with a timer (so a connection that dribbles its request header is
//! closed after `header_read_timeout_seconds`), a cap on open connections, the peer address for
//! the login throttle, and a graceful shutdown that finishes the requests in flight.
//!
//! `axum::serve` does none of the first two: it installs no timer, so hyper's header timeout
//! never fires, and it accepts connections without limit. 300 connections that each sent half a
//! header stayed open for good with it. HTTP/1.1 only: browsers speak HTTP/2 only over TLS,
//! which the reverse proxy in front terminates.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt;

use crate::config::HttpLimits;

/// The gauge of open connections (`/metrics`): what the cap holds down.
pub const OPEN_CONNECTIONS: &str = "anteroom_http_open_connections";

/// How long the shutdown waits for open connections to finish their requests.
const DRAIN: Duration = Duration::from_secs(30);

/// Serves `router` on `listener` until `shutdown` resolves, then stops accepting and waits for
/// the open connections to finish their requests (at most [`DRAIN`]).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let (closing, closed) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        // At the cap, stop accepting: further clients wait in the kernel's backlog (and are
        // served as connections close) instead of each costing a task and buffers here.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // wait a moment rather than spin, and go on.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        axum_prometheus::metrics::gauge!(OPEN_CONNECTIONS).increment(1.0);
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
            router.clone().oneshot(req.map(axum::body::Body::new))
        });
        let connection = http.serve_connection(TokioIo::new(stream), service).with_upgrades();
        let mut closed = closed.clone();
        tokio::spawn(async move {
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                () = async { let _ = closed.wait_for(|c| *c).await; } => {
                    // Finish the request in flight, answer it with `Connection: close`.
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            // An error here is the client's (a reset, a timeout, a malformed request): hyper
            // already answered what could be answered.
            if let Err(e) = result {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
            axum_prometheus::metrics::gauge!(OPEN_CONNECTIONS).decrement(1.0);
            drop(slot);
        });
    }
    drop(listener);
    let _ = closing.send(true);
    // Every connection gives its slot back when it ends: all slots back = all ended.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(DRAIN, slots.acquire_many(all)).await.is_err() {
        tracing::warn!(
            "connections still open {} s after the shutdown began; closing them",
            DRAIN.as_secs()
        );
    }
    Ok(())
}

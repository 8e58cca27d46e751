//! The accept loop: hyper with a timer (so a connection that dribbles its request header is
//! closed after `header_read_timeout_seconds`), a cap on open connections, the peer address for
//! the login throttle, and a graceful shutdown that finishes the requests in flight.
//!
//! A client that stops reading its answers is cut off too: a write that makes no progress for
//! `request_timeout_seconds` ends its connection ([`StallGuard`]), or a few sockets that never
//! read would hold every connection slot for good.
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
/// the open connections to finish their requests (at most `DRAIN`, 30 s).
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
        let stream = StallGuard::new(stream, limits.request_timeout);
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

/// A socket whose writes must make progress: a write that stays pending for `limit` fails with
/// `TimedOut`, which ends the connection (and frees its slot). Reads are left alone: an idle
/// keep-alive connection is the header timeout's business, and an event stream's client sends
/// nothing while it listens.
pub struct StallGuard<S> {
    inner: S,
    limit: Duration,
    /// Armed while a write is pending; reset by any progress.
    stalled: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl<S> StallGuard<S> {
    /// Guards `inner`'s writes with `limit`.
    pub fn new(inner: S, limit: Duration) -> Self {
        StallGuard {
            inner,
            limit,
            stalled: None,
        }
    }

    /// After a write poll: on progress disarm; while pending, arm (once) and fail when the
    /// timer has run out.
    fn check<T>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        poll: std::task::Poll<std::io::Result<T>>,
    ) -> std::task::Poll<std::io::Result<T>> {
        use std::future::Future;
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let limit = self.limit;
        let timer = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            std::task::Poll::Ready(()) => std::task::Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client has not read its answer for too long",
            ))),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for StallGuard<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for StallGuard<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let poll = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        self.check(cx, poll)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let poll = std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.check(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let poll = std::pin::Pin::new(&mut self.inner).poll_flush(cx);
        self.check(cx, poll)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_never_reads_fails_after_the_limit_and_a_read_one_goes_on() {
        let (client, server) = tokio::io::duplex(64);
        let mut guarded = StallGuard::new(server, Duration::from_secs(30));
        // The peer reads nothing: the buffer fills, the next write stalls, and fails.
        let err = guarded.write_all(&[7_u8; 4096]).await.expect_err("stalled");
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        // A peer that reads keeps the writes going, however long the whole answer takes.
        let (mut client2, server2) = tokio::io::duplex(64);
        let mut guarded = StallGuard::new(server2, Duration::from_secs(30));
        let reader = tokio::spawn(async move {
            let mut buf = vec![0_u8; 4096];
            let mut got = 0;
            while got < buf.len() {
                tokio::time::sleep(Duration::from_secs(10)).await;
                got += client2.read(&mut buf[got..]).await.unwrap();
            }
            got
        });
        guarded
            .write_all(&[7_u8; 4096])
            .await
            .expect("a reading peer is served");
        assert_eq!(reader.await.unwrap(), 4096);
        drop(client);
    }
}

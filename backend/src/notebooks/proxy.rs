//! The reverse proxy of a notebook origin (`super::host`): check the notebook cookie and the
//! job, then forward HTTP and tunnel WebSocket to the job's notebook server.
//!
//! What one user can hold here is bounded: proxied requests in flight (until their answer is
//! sent) and open tunnels each count against a per-user cap of their own
//! (`max_notebook_requests_per_user`, `max_notebook_tunnels_per_user`), apart from the portal's
//! event streams; an answer that sends nothing for `notebook_idle_timeout_seconds` is cut. A
//! tunnel opens only for the notebook's own pages (`Origin`, `Sec-Fetch-Site`), and the session
//! behind it is checked again every few seconds: a logout, a password or role change, a
//! deletion or the session's expiry closes it.

use std::sync::OnceLock;
use std::time::Duration;

use anteroom_shared::scheduling::JobKind;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, Version, header};
use axum::response::{IntoResponse, Redirect, Response};
use futures::StreamExt;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::{
    FromNotebook, NotebookHost, answered_headers, base_path, error_page, forwarded_headers, is_websocket, path_is_plain,
};
use crate::auth::{SECURE_SESSION_COOKIE, SESSION_COOKIE};
use crate::cluster::NotebookTarget;
use crate::error::ApiError;
use crate::state::AppState;

/// How long connecting to a notebook may take before the answer is 502.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How often an open tunnel checks that its viewer may still use it.
pub const REAUTHORIZE: Duration = Duration::from_secs(5);

/// Cookies that are Anteroom's, never forwarded to a notebook nor set by one: the portal's
/// session (a browser may hold it for a sibling host) and the notebook cookie itself.
const ANTEROOM_COOKIES: [&str; 4] = [
    SESSION_COOKIE,
    SECURE_SESSION_COOKIE,
    super::session::NOTEBOOK_COOKIE,
    super::session::SECURE_NOTEBOOK_COOKIE,
];

/// One HTTP client for every notebook (it pools connections).
fn client() -> &'static Client<HttpConnector, Body> {
    static CLIENT: OnceLock<Client<HttpConnector, Body>> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
        Client::builder(TokioExecutor::new()).build(connector)
    })
}

/// `/jobs/{id}/open` → `/jobs/{id}/open/` (query kept): relative links in the notebook need
/// the slash.
pub async fn to_slash(Path(id): Path<String>, uri: Uri) -> Response {
    match id.parse::<i64>() {
        Ok(id) => {
            let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
            Redirect::permanent(&format!("{}{query}", base_path(id))).into_response()
        }
        Err(_) => ApiError::not_found("job_not_found", "no such job").into_response(),
    }
}

/// `/jobs/{id}/open/`.
pub async fn open(
    State(state): State<AppState>,
    axum::Extension(host): axum::Extension<NotebookHost>,
    Path(id): Path<String>,
    req: Request,
) -> Response {
    answer(state, host, &id, req).await
}

/// `/jobs/{id}/open/{*rest}`.
pub async fn open_path(
    State(state): State<AppState>,
    axum::Extension(host): axum::Extension<NotebookHost>,
    Path((id, _)): Path<(String, String)>,
    req: Request,
) -> Response {
    answer(state, host, &id, req).await
}

/// The notebook's answer, or why there is none: as a page in the viewer's language when a
/// person opened the address, as the API's JSON otherwise.
async fn answer(state: AppState, host: NotebookHost, id: &str, req: Request) -> Response {
    let page = is_navigation(req.method(), req.headers());
    let language = req.headers().get(header::ACCEPT_LANGUAGE).cloned();
    let id = id.parse::<i64>().ok().filter(|id| *id == host.0);
    match forward(state.clone(), id, req).await {
        Ok(response) => response,
        Err(e) if page => error_page(
            &state,
            &e,
            Some(host.0),
            language.as_ref().and_then(|v| v.to_str().ok()),
        ),
        Err(e) => e.into_response(),
    }
}

/// Whether a browser is loading a page here (rather than a script asking): a `GET` for a
/// document, by `Sec-Fetch-Dest` where the browser says it, else by `Accept`.
fn is_navigation(method: &axum::http::Method, headers: &HeaderMap) -> bool {
    if *method != axum::http::Method::GET || is_websocket(headers) {
        return false;
    }
    match headers.get("sec-fetch-dest").and_then(|v| v.to_str().ok()) {
        Some(dest) => dest == "document",
        None => headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("text/html")),
    }
}

/// Whether a WebSocket handshake comes from the notebook's own pages: its `Origin` is this
/// notebook origin, and the browser, if it says, calls it same-origin. A handshake from any
/// other page — another notebook, the portal, another site — would otherwise carry the
/// viewer's cookie into the kernel.
pub fn handshake_is_own(headers: &HeaderMap, own_origin: &str) -> bool {
    let origin_ok = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|o| o.trim().eq_ignore_ascii_case(own_origin));
    let site_ok = headers
        .get("sec-fetch-site")
        .is_none_or(|s| s.as_bytes().eq_ignore_ascii_case(b"same-origin"));
    origin_ok && site_ok
}

/// Checks the viewer and the job, then hands the request to the notebook.
async fn forward(state: AppState, id: Option<i64>, mut req: Request) -> Result<Response, ApiError> {
    let id = id.ok_or_else(|| ApiError::not_found("job_not_found", "not this origin's notebook"))?;
    if !path_is_plain(req.uri().path()) {
        return Err(ApiError::not_found("not_found", "not a path under this notebook"));
    }
    let websocket = is_websocket(req.headers());
    if websocket && !handshake_is_own(req.headers(), &state.notebook_origin.origin(id)) {
        axum_prometheus::metrics::counter!(crate::http::csrf::CROSS_SITE_REFUSALS, "origin" => "notebook").increment(1);
        tracing::warn!(job = id, origin = ?req.headers().get(header::ORIGIN), "a notebook WebSocket from another origin refused");
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "cross_site_request",
            "a notebook's WebSocket opens only from the notebook's own pages",
        ));
    }
    let (user, row) = super::session::viewer(&state, req.headers(), id).await?;
    let job = crate::jobs::to_api(&row)?;
    super::openable(&job)?;
    let limits = state.config.notebook_limits;
    // Held until the answer is sent (HTTP) or the tunnel closes.
    let slot = if websocket {
        state.notebook_tunnels.try_take(user.id, limits.max_tunnels_per_user)
    } else {
        state.notebook_requests.try_take(user.id, limits.max_requests_per_user)
    }
    .ok_or_else(|| too_many(websocket, &limits))?;
    let task = job.tasks.first().map(|t| t.name.as_str()).unwrap_or("main");
    let base = match state.cluster.notebook_target(id, job.kind, task) {
        NotebookTarget::Simulated => return Ok(super::simulated_page(id, &job.name, &user, req.headers())),
        NotebookTarget::Http(base) => base,
    };
    let client_upgrade = websocket.then(|| hyper::upgrade::on(&mut req));
    let request_headers = req.headers().clone();
    let (parts, body) = req.into_parts();
    let full = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    // code-server serves from its root (relative links work under any prefix); Jupyter is
    // started with the base path and keeps it.
    let path = match job.kind {
        JobKind::Webide => full.strip_prefix(base_path(id).trim_end_matches('/')).unwrap_or(full),
        _ => full,
    };
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    let uri: Uri = format!("{base}{path}")
        .parse()
        .map_err(|_| ApiError::not_found("not_found", "not a path a notebook can serve"))?;
    let idle = limits.idle_timeout;
    // An upload that moves is not idle: its pieces count as progress while the notebook's
    // answer is awaited.
    let progress = Progress::new();
    let mut out = axum::http::Request::builder()
        .method(parts.method)
        .uri(uri)
        .version(Version::HTTP_11)
        .body(if websocket {
            Body::empty()
        } else {
            progress.counting(body, idle)
        })
        .map_err(|e| ApiError::internal(anyhow::anyhow!("proxy request: {e}")))?;
    *out.headers_mut() = forwarded_headers(&parts.headers, &ANTEROOM_COOKIES, state.notebook_origin.https(), id);
    let mut answer = match progress.within(idle, client().request(out)).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => {
            tracing::warn!(job = id, error = %e, "the notebook did not answer");
            return Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "notebook_unreachable",
                "the notebook did not answer; it may still be starting",
            ));
        }
        Err(_) => {
            tracing::warn!(job = id, idle_s = idle.as_secs(), "the notebook did not answer in time");
            return Err(ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "notebook_timeout",
                "the notebook did not answer in time",
            ));
        }
    };
    let switching = answer.status() == StatusCode::SWITCHING_PROTOCOLS;
    let (answer_parts, answer_body) = if switching && let Some(client_upgrade) = client_upgrade {
        let upstream_upgrade = hyper::upgrade::on(&mut answer);
        let (parts, _) = answer.into_parts();
        tokio::spawn(tunnel(
            state.clone(),
            request_headers,
            id,
            client_upgrade,
            upstream_upgrade,
            slot,
        ));
        (parts, Body::empty())
    } else {
        let (parts, body) = answer.into_parts();
        (parts, idle_bounded(Body::new(body), idle, slot, id))
    };
    let mut response = Response::new(answer_body);
    *response.status_mut() = answer_parts.status;
    *response.headers_mut() = answered_headers(&answer_parts.headers, &ANTEROOM_COOKIES, switching, id);
    response.extensions_mut().insert(FromNotebook);
    Ok(response)
}

/// When a proxied request last moved (a piece of its upload), for the idle deadline.
#[derive(Clone)]
struct Progress {
    start: tokio::time::Instant,
    /// Milliseconds from `start` to the last piece.
    last_ms: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Progress {
    fn new() -> Self {
        Progress {
            start: tokio::time::Instant::now(),
            last_ms: Default::default(),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    fn last(&self) -> tokio::time::Instant {
        self.start + Duration::from_millis(self.last_ms.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// `body` as it is sent on: each piece counts as progress, and a pause of `idle` between
    /// pieces ends it with an error.
    fn counting(&self, body: Body, idle: Duration) -> Body {
        let progress = self.clone();
        let stream = body.into_data_stream();
        Body::from_stream(
            futures::stream::unfold(Some(stream), move |state| {
                let progress = progress.clone();
                async move {
                    let mut stream = state?;
                    match tokio::time::timeout(idle, stream.next()).await {
                        Ok(Some(Ok(piece))) => {
                            progress.touch();
                            Some((Ok(piece), Some(stream)))
                        }
                        Ok(Some(Err(e))) => Some((Err(std::io::Error::other(e)), None)),
                        Ok(None) => None,
                        Err(_) => Some((Err(std::io::Error::other("the upload went idle")), None)),
                    }
                }
            })
            .fuse(),
        )
    }

    /// `answer`, unless `idle` passes with neither it nor a piece of the upload: `Err(())`.
    async fn within<T>(&self, idle: Duration, answer: impl std::future::Future<Output = T>) -> Result<T, ()> {
        tokio::pin!(answer);
        loop {
            let deadline = self.last() + idle;
            tokio::select! {
                done = &mut answer => return Ok(done),
                () = tokio::time::sleep_until(deadline) => {
                    if self.last() + idle <= tokio::time::Instant::now() {
                        return Err(());
                    }
                }
            }
        }
    }
}

/// 429 when the viewer holds as many tunnels or requests as allowed.
fn too_many(websocket: bool, limits: &crate::config::NotebookLimits) -> ApiError {
    let (code, max, what) = if websocket {
        (
            "too_many_notebook_tunnels",
            limits.max_tunnels_per_user,
            "notebook connections",
        )
    } else {
        (
            "too_many_notebook_requests",
            limits.max_requests_per_user,
            "notebook requests in flight",
        )
    };
    let mut e = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        code,
        format!("you already have {max} {what}; close some first"),
    )
    .with_details(serde_json::json!({ "limit": max }));
    e.retry_after_seconds = Some(5);
    e
}

/// The notebook's answer on its way to the browser: cut when the notebook sends nothing for
/// `idle`, and holding the viewer's request slot until it ends.
fn idle_bounded(body: Body, idle: Duration, slot: crate::slots::Slot, id: i64) -> Body {
    let stream = body.into_data_stream();
    Body::from_stream(
        futures::stream::unfold(Some((stream, slot)), move |state| async move {
            let (mut stream, slot) = state?;
            match tokio::time::timeout(idle, stream.next()).await {
                Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some((stream, slot)))),
                Ok(Some(Err(e))) => Some((Err(std::io::Error::other(e)), None)),
                Ok(None) => None,
                Err(_) => {
                    tracing::debug!(
                        job = id,
                        idle_s = idle.as_secs(),
                        "a notebook answer went idle and was cut"
                    );
                    Some((Err(std::io::Error::other("the notebook's answer went idle")), None))
                }
            }
        })
        .fuse(),
    )
}

/// An open tunnel: bytes both ways until either side closes, the server shuts down, or the
/// viewer may no longer use it (checked every [`REAUTHORIZE`]).
async fn tunnel(
    state: AppState,
    headers: HeaderMap,
    id: i64,
    client_upgrade: hyper::upgrade::OnUpgrade,
    upstream_upgrade: hyper::upgrade::OnUpgrade,
    slot: crate::slots::Slot,
) {
    let _slot = slot;
    let (client, upstream) = match tokio::try_join!(client_upgrade, upstream_upgrade) {
        Ok(both) => both,
        Err(e) => {
            tracing::debug!(job = id, error = %e, "a notebook WebSocket did not open");
            return;
        }
    };
    let (mut client, mut upstream) = (TokioIo::new(client), TokioIo::new(upstream));
    let copy = tokio::io::copy_bidirectional(&mut client, &mut upstream);
    tokio::pin!(copy);
    let mut check = tokio::time::interval_at(tokio::time::Instant::now() + REAUTHORIZE, REAUTHORIZE);
    loop {
        tokio::select! {
            copied = &mut copy => {
                if let Err(e) = copied {
                    tracing::debug!(job = id, error = %e, "a notebook WebSocket ended");
                }
                return;
            }
            () = state.signals.closed() => return,
            _ = check.tick() => {
                if let Err(e) = super::session::viewer(&state, &headers, id).await {
                    tracing::info!(job = id, code = e.code, "a notebook WebSocket closed: its session ended");
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[tokio::test(start_paused = true)]
    async fn an_answer_awaited_behind_a_moving_upload_is_not_idle_and_one_behind_nothing_is() {
        let idle = Duration::from_secs(60);
        // The notebook answers after 90 s, while the upload sends a piece every 30 s.
        let progress = Progress::new();
        let uploading = progress.clone();
        let upload = tokio::spawn(async move {
            for _ in 0..3 {
                tokio::time::sleep(Duration::from_secs(30)).await;
                uploading.touch();
            }
        });
        let answer = async {
            tokio::time::sleep(Duration::from_secs(90)).await;
            "answered"
        };
        assert_eq!(progress.within(idle, answer).await, Ok("answered"));
        upload.await.unwrap();
        // Nothing moves for 60 s: cut.
        let stalled = Progress::new();
        let never = std::future::pending::<()>();
        assert_eq!(stalled.within(idle, never).await, Err(()));
    }

    #[test]
    fn a_websocket_handshake_is_the_notebook_s_own_only_from_its_origin() {
        let own = "http://j7.localhost:8080";
        let h = |pairs: &[(&'static str, &'static str)]| -> HeaderMap {
            pairs
                .iter()
                .map(|(k, v)| (k.parse().unwrap(), HeaderValue::from_static(v)))
                .collect()
        };
        assert!(handshake_is_own(&h(&[("origin", "http://j7.localhost:8080")]), own));
        assert!(handshake_is_own(
            &h(&[
                ("origin", "http://J7.localhost:8080"),
                ("sec-fetch-site", "same-origin")
            ]),
            own
        ));
        for foreign in [
            h(&[("origin", "https://evil.example")]),
            h(&[("origin", "http://j8.localhost:8080")]),
            h(&[("origin", "http://127.0.0.1:8080")]),
            h(&[("origin", "http://j7.localhost:8081")]),
            h(&[("origin", "null")]),
            h(&[]),
            h(&[("origin", "http://j7.localhost:8080"), ("sec-fetch-site", "same-site")]),
        ] {
            assert!(!handshake_is_own(&foreign, own), "{foreign:?}");
        }
    }
}

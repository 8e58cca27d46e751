//! The reverse proxy at `/jobs/{id}/open/`: authorise, find the notebook, forward HTTP and
//! tunnel WebSocket.

use std::sync::OnceLock;
use std::time::Duration;

use anteroom_shared::api::Role;
use anteroom_shared::scheduling::{JobKind, JobPhase};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, Version, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::any;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::{FromNotebook, answered_headers, base_path, forwarded_headers, is_websocket, path_is_plain};
use crate::auth::{SECURE_SESSION_COOKIE, SESSION_COOKIE};
use crate::cluster::NotebookTarget;
use crate::error::ApiError;
use crate::state::AppState;

/// How long connecting to a notebook may take before the answer is 502.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Both names the session cookie can have; neither is forwarded nor set by a notebook.
const SESSION_COOKIES: [&str; 2] = [SESSION_COOKIE, SECURE_SESSION_COOKIE];

/// The routes; outside the API (no JSON contract: whatever the notebook serves).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/jobs/{id}/open", any(to_slash))
        .route("/jobs/{id}/open/", any(open))
        .route("/jobs/{id}/open/{*rest}", any(open_path))
}

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
async fn to_slash(Path(id): Path<String>, uri: Uri) -> Response {
    match id.parse::<i64>() {
        Ok(id) => {
            let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
            Redirect::permanent(&format!("{}{query}", base_path(id))).into_response()
        }
        Err(_) => ApiError::not_found("job_not_found", "no such job").into_response(),
    }
}

async fn open(State(state): State<AppState>, Path(id): Path<String>, req: Request) -> Response {
    answer(state, &id, req).await
}

async fn open_path(State(state): State<AppState>, Path((id, _)): Path<(String, String)>, req: Request) -> Response {
    answer(state, &id, req).await
}

/// The notebook's answer, or why there is none: as a page in the viewer's language when a
/// person opened the address (the Open button, a bookmark), as the API's JSON otherwise.
async fn answer(state: AppState, id: &str, req: Request) -> Response {
    let page = is_navigation(req.method(), req.headers());
    let language = req.headers().get(header::ACCEPT_LANGUAGE).cloned();
    match forward(state, id, req).await {
        Ok(response) => response,
        Err(e) if page => error_page(&e, id.parse().ok(), language.as_ref().and_then(|v| v.to_str().ok())),
        Err(e) => e.into_response(),
    }
}

/// Whether a browser is loading a page here (rather than a script or the API asking): a
/// `GET` for a document, by `Sec-Fetch-Dest` where the browser says it, else by `Accept`.
fn is_navigation(method: &axum::http::Method, headers: &axum::http::HeaderMap) -> bool {
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

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Why a notebook does not open, as a small page with the error's status: the reason in the
/// viewer's language (the UI's own text for the code) and the way on — the job's page, or
/// the login page when there is no session.
fn error_page(e: &ApiError, id: Option<i64>, accept_language: Option<&str>) -> Response {
    let locale = crate::i18n::negotiate(accept_language);
    let text = |key: &str| crate::i18n::text(locale, key);
    let reason = match text(&format!("error.{}", e.code)) {
        missing if missing.starts_with("error.") => e.message.clone(),
        found => found,
    };
    let (href, label) = match (e.status, id) {
        (StatusCode::UNAUTHORIZED, Some(id)) => (format!("/login?next=/jobs/{id}"), text("nav.login")),
        (StatusCode::UNAUTHORIZED, None) => ("/login".to_owned(), text("nav.login")),
        (_, Some(id)) if e.code != "job_not_found" => (format!("/jobs/{id}"), text("notebook.backToJob")),
        _ => ("/jobs".to_owned(), text("nav.jobs")),
    };
    let body = format!(
        "<!doctype html><html lang=\"{locale}\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><main><h1>{title}</h1><p data-code=\"{code}\">{reason}</p><p><a href=\"{href}\">{label}</a></p></main></body></html>",
        title = escape_html(&text("notebook.cannotOpen")),
        code = e.code,
        reason = escape_html(&reason),
        href = escape_html(&href),
        label = escape_html(&label),
    );
    let mut response = (e.status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // The same address answers JSON or a page, in one language or another, and may open
    // once the job runs: nothing may keep this answer.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Language, Sec-Fetch-Dest"),
    );
    if let Some(seconds) = e.retry_after_seconds {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Checks the caller and the job, then hands the request to the notebook.
async fn forward(state: AppState, id: &str, mut req: Request) -> Result<Response, ApiError> {
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::not_found("job_not_found", "no such job"))?;
    if !path_is_plain(req.uri().path()) {
        return Err(ApiError::not_found("not_found", "not a path under this notebook"));
    }
    // The notebook's own page may send `Authorization: token …` (a Jupyter with a token):
    // that is the notebook's, not Anteroom's; only a bearer token or the session cookie counts.
    let mut credentials = req.headers().clone();
    if credentials
        .get(header::AUTHORIZATION)
        .is_some_and(|v| !v.as_bytes().starts_with(b"Bearer "))
    {
        credentials.remove(header::AUTHORIZATION);
    }
    let user = crate::auth::authenticate(&credentials, &state).await?.0;
    // Another user's job does not exist for them: 404, as everywhere. Admins included: the
    // notebook's pages run on Anteroom's origin, so its scripts could act as whoever opens it,
    // and an admin's session is the one that must never be lent to a user's code.
    let row = crate::jobs::visible(&state.db_read, &user, id).await?;
    if row.owner_id != user.id {
        return Err(ApiError::not_found(
            "job_not_found",
            format!("job {id} is not yours to open"),
        ));
    }
    let job = crate::jobs::to_api(&row)?;
    if !matches!(job.kind, JobKind::Jupyter | JobKind::Webide) {
        return Err(ApiError::not_found(
            "not_a_notebook",
            format!("job {id} is not a notebook"),
        ));
    }
    if job.phase != JobPhase::Running {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "notebook_not_running",
            format!("job {id} is {}: its notebook opens once it runs", job.phase),
        )
        .with_details(serde_json::json!({ "phase": job.phase })));
    }
    let task = job.tasks.first().map(|t| t.name.as_str()).unwrap_or("main");
    let base = match state.cluster.notebook_target(id, job.kind, task) {
        NotebookTarget::Simulated => return Ok(simulated_page(id, &job.name, &user, req.headers())),
        NotebookTarget::Http(base) => base,
    };
    let https = state.config.public_url.as_ref().is_some_and(|u| u.https);
    let websocket = is_websocket(req.headers());
    let client_upgrade = websocket.then(|| hyper::upgrade::on(&mut req));
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
    let mut out = axum::http::Request::builder()
        .method(parts.method)
        .uri(uri)
        .version(Version::HTTP_11)
        .body(if websocket { Body::empty() } else { body })
        .map_err(|e| ApiError::internal(anyhow::anyhow!("proxy request: {e}")))?;
    *out.headers_mut() = forwarded_headers(&parts.headers, &SESSION_COOKIES, https, id);
    let mut answer = client().request(out).await.map_err(|e| {
        tracing::warn!(job = id, error = %e, "the notebook did not answer");
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "notebook_unreachable",
            "the notebook did not answer; it may still be starting",
        )
    })?;
    let switching = answer.status() == StatusCode::SWITCHING_PROTOCOLS;
    if switching && let Some(client_upgrade) = client_upgrade {
        // An open tunnel holds one of its user's stream slots (a connection's slot is freed
        // when it is upgraded), and ends when the server shuts down.
        let slot = crate::jobs::stream::stream_slot(&state, &user)?;
        let signals = state.signals.clone();
        let upstream_upgrade = hyper::upgrade::on(&mut answer);
        tokio::spawn(async move {
            let _slot = slot;
            let (client, upstream) = match tokio::try_join!(client_upgrade, upstream_upgrade) {
                Ok(both) => both,
                Err(e) => {
                    tracing::debug!(job = id, error = %e, "a notebook WebSocket did not open");
                    return;
                }
            };
            let (mut client, mut upstream) = (TokioIo::new(client), TokioIo::new(upstream));
            tokio::select! {
                copied = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {
                    if let Err(e) = copied {
                        tracing::debug!(job = id, error = %e, "a notebook WebSocket ended");
                    }
                }
                () = signals.closed() => {}
            }
        });
    }
    let (answer_parts, answer_body) = answer.into_parts();
    let mut response = Response::new(if switching {
        Body::empty()
    } else {
        Body::new(answer_body)
    });
    *response.status_mut() = answer_parts.status;
    *response.headers_mut() = answered_headers(&answer_parts.headers, &SESSION_COOKIES, switching, id);
    response.extensions_mut().insert(FromNotebook);
    Ok(response)
}

/// What a simulated notebook shows: a page in the viewer's language saying that no notebook
/// server runs, and how to point `sim_notebook_upstream` at one.
fn simulated_page(
    id: i64,
    name: &str,
    user: &crate::users::entity::Model,
    headers: &axum::http::HeaderMap,
) -> Response {
    let locale = crate::i18n::negotiate(headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok()));
    let text = |key: &str| crate::i18n::text(locale, key);
    let escape = escape_html;
    let admin = crate::users::role_of(user) == Role::Admin;
    let body = format!(
        "<!doctype html><html lang=\"{locale}\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><main><h1>{title}</h1><p data-job=\"{id}\">{job}</p><p>{explain}</p>{hint}</main></body></html>",
        title = escape(&text("notebook.simulatedTitle")),
        job = escape(&text("notebook.simulatedJob").replace("{name}", name)),
        explain = escape(&text("notebook.simulatedBody")),
        hint = if admin {
            format!(
                "<p><code>ANTEROOM_SIM_NOTEBOOK_UPSTREAM</code> {}</p>",
                escape(&text("notebook.simulatedHint"))
            )
        } else {
            String::new()
        },
    );
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

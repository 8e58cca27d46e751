//! Opening a notebook: `jupyter` and `webide` jobs are served from an origin of their own per
//! job (`notebook_origin`, default `http://j{job}.localhost:<port>`), never the portal's: a
//! notebook's pages are user code, and on the portal's origin they would run with the session
//! of whoever views them (an admin helping a user included).
//!
//! The way in: the portal's job page asks for a one-time link (`handlers`,
//! `POST /api/v1/jobs/{id}/notebook`), the browser follows it to the notebook origin, which
//! claims it once (`handoff`) and sets a notebook-only cookie (`session`) that names that job
//! and viewer and dies with the portal session. Requests whose `Host` is a notebook host are
//! routed apart from the portal's (`host`), and reverse-proxied to the job's pod (`proxy`; kube:
//! the pod's name under the job's headless service; the simulated cluster:
//! `sim_notebook_upstream`, or a page saying it is simulated). Only Anteroom can reach the pod
//! (a NetworkPolicy in `deploy/`), so who may open it stays Anteroom's decision.
//!
//! What crosses the boundary is filtered both ways ([`forwarded_headers`], [`answered_headers`]):
//! Anteroom's cookies and `Authorization` never reach the notebook, and it cannot set them.
//!
//! The path is kept as it came (`/jobs/{id}/open/...`): the notebook is started with that base
//! URL (`NOTEBOOK_ARGS` for Jupyter's images, `ANTEROOM_BASE_URL` for anything else), so its
//! links and redirects stay under it. `Host` is kept too (as nginx's `proxy_set_header Host
//! $host`): Jupyter compares a WebSocket's `Origin` with it.

pub mod handlers;
pub mod handoff;
pub mod host;
pub mod origin;
pub mod proxy;
pub mod session;
#[cfg(test)]
mod tests;

use anteroom_shared::api::Role;
use anteroom_shared::api::jobs::Job;
use anteroom_shared::scheduling::{JobKind, JobPhase};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// The path under which job `id`'s notebook is opened.
pub fn base_path(id: i64) -> String {
    format!("/jobs/{id}/open/")
}

/// The job whose notebook origin a request came to (from its `Host`), put into the request by
/// [`host::dispatch`] for the handlers of the notebook origins' router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotebookHost(pub i64);

/// Marks a response that came from a notebook: the notebook origin's headers layer leaves its
/// content policy to the notebook.
#[derive(Debug, Clone, Copy)]
pub struct FromNotebook;

/// `http://host:port` from a setting's URL: http only, a host, no path beyond `/`, no query or
/// credentials. The error says what is wrong.
pub fn upstream_base(url: &str) -> Result<String, &'static str> {
    let uri: axum::http::Uri = url.trim().parse().map_err(|_| "is not a URL")?;
    if uri.scheme_str() != Some("http") {
        return Err("must start with http:// (the notebook is reached inside the cluster)");
    }
    let authority = uri.authority().ok_or("has no host")?;
    if authority.as_str().contains('@') {
        return Err("must not carry credentials");
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err("must be http://host:port without a path (requests keep their /jobs/<id>/open/ path)");
    }
    Ok(format!("http://{authority}"))
}

/// Headers that belong to one connection, never forwarded either way (RFC 9110 §7.6.1), plus
/// the ones a proxy replaces.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Whether the request asks to switch to WebSocket.
pub fn is_websocket(headers: &HeaderMap) -> bool {
    let has = |name: HeaderName, word: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(word))
    };
    has(header::CONNECTION, "upgrade") && has(header::UPGRADE, "websocket")
}

/// Cookie names a notebook server sets and reads for itself (Jupyter's `_xsrf`, `username-*`
/// and `jupyterlab*`, code-server's `code-server-session`): the only cookies forwarded. Any
/// other cookie of the site — Anteroom's session, an SSO proxy's in front of it — would be in
/// the hands of the user code the notebook runs.
pub const NOTEBOOK_COOKIE_PREFIXES: [&str; 4] = ["_xsrf", "username-", "jupyterlab", "code-server"];

/// Response headers a notebook may not send: a service worker scope or site-data clearing would
/// reach the portal's own pages on the same origin.
pub const REFUSED_ANSWER_HEADERS: [&str; 2] = ["service-worker-allowed", "clear-site-data"];

/// What the notebook is sent: the browser's headers without the hop-by-hop ones (kept for a
/// WebSocket handshake: `Connection: Upgrade`, `Upgrade: websocket`), without `Authorization`
/// and forwarding headers the client made up, with only the notebook's own cookies
/// ([`NOTEBOOK_COOKIE_PREFIXES`]; `session_cookies` never, whatever their names); then
/// `X-Forwarded-Proto`/`-Host`/`-Prefix` for the notebook's own URLs.
pub fn forwarded_headers(incoming: &HeaderMap, session_cookies: &[&str], https: bool, id: i64) -> HeaderMap {
    let websocket = is_websocket(incoming);
    let mut out = HeaderMap::with_capacity(incoming.len() + 3);
    for (name, value) in incoming {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) || n == "authorization" || n.starts_with("x-forwarded-") || n == "forwarded" {
            continue;
        }
        if name == header::COOKIE {
            if let Some(kept) = without_cookies(value, session_cookies) {
                out.append(header::COOKIE, kept);
            }
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    if websocket {
        out.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        out.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    }
    out.insert(
        "x-forwarded-proto",
        HeaderValue::from_static(if https { "https" } else { "http" }),
    );
    if let Some(host) = incoming.get(header::HOST) {
        out.insert("x-forwarded-host", host.clone());
    }
    if let Ok(prefix) = HeaderValue::from_str(&base_path(id)) {
        out.insert("x-forwarded-prefix", prefix);
    }
    out
}

/// A `Cookie` header with only the notebook's own pairs ([`NOTEBOOK_COOKIE_PREFIXES`]), never
/// one named in `names`; `None` when nothing is left.
fn without_cookies(value: &HeaderValue, names: &[&str]) -> Option<HeaderValue> {
    let text = value.to_str().ok()?;
    let kept: Vec<&str> = text
        .split(';')
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let name = pair.split_once('=').map_or(*pair, |(n, _)| n).trim();
            !names.iter().any(|n| n.eq_ignore_ascii_case(name))
                && NOTEBOOK_COOKIE_PREFIXES.iter().any(|p| name.starts_with(p))
        })
        .collect();
    if kept.is_empty() {
        return None;
    }
    HeaderValue::from_str(&kept.join("; ")).ok()
}

/// What the browser is sent back: the notebook's headers without the hop-by-hop ones (kept
/// for a `101 Switching Protocols`), without [`REFUSED_ANSWER_HEADERS`], and with only the
/// cookies a notebook may set ([`notebook_may_set`]) — it must not log its viewer in or out of
/// the portal, nor plant a cookie the portal's pages would send.
pub fn answered_headers(upstream: &HeaderMap, session_cookies: &[&str], switching: bool, id: i64) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(upstream.len());
    for (name, value) in upstream {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) && !(switching && (name == header::CONNECTION || name == header::UPGRADE)) {
            continue;
        }
        if REFUSED_ANSWER_HEADERS.contains(&n) {
            continue;
        }
        if name == header::SET_COOKIE && !value.to_str().is_ok_and(|v| notebook_may_set(v, session_cookies, id)) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// Whether a notebook's `Set-Cookie` may reach the browser: a named cookie, not one of the
/// session's names, without `Domain`, and with a `Path` under the notebook's own base path —
/// (or none, which scopes it to the request's directory), so it is sent to the notebook only, never to the portal's pages or API (a nameless cookie
/// would be read as the session's by a browser that sends it as `anteroom_session=…`).
pub fn notebook_may_set(set_cookie: &str, session_cookies: &[&str], id: i64) -> bool {
    let mut parts = set_cookie.split(';');
    let Some((name, _)) = parts.next().and_then(|pair| pair.split_once('=')) else {
        return false;
    };
    let name = name.trim();
    if name.is_empty()
        || session_cookies
            .iter()
            .any(|s| name.to_ascii_lowercase().contains(&s.to_ascii_lowercase()))
    {
        return false;
    }
    let base = base_path(id);
    // Without a `Path` the browser scopes it to the request's directory: under the base path.
    let mut path_ok = true;
    for attribute in parts {
        let (key, value) = attribute.split_once('=').unwrap_or((attribute, ""));
        match key.trim().to_ascii_lowercase().as_str() {
            "domain" => return false,
            "path" => {
                let path = value.trim();
                path_ok = path.starts_with(&base) || format!("{path}/") == base;
            }
            _ => {}
        }
    }
    path_ok
}

/// Whether a request path stays under job `id`'s base path once a browser or server resolves
/// it: no `.` or `..` segment, plain or percent-encoded (`%2e`), no encoded slash.
pub fn path_is_plain(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    if lower.contains("%2f") || lower.contains("%5c") || lower.contains('\\') {
        return false;
    }
    !lower
        .split('/')
        .map(|segment| segment.replace("%2e", "."))
        .any(|segment| segment == "." || segment == "..")
}

/// Whether `job` has a notebook to open now: 404 `not_a_notebook` for a batch kind, 409
/// `notebook_not_running` until it runs.
pub fn openable(job: &Job) -> Result<(), ApiError> {
    if !matches!(job.kind, JobKind::Jupyter | JobKind::Webide) {
        return Err(ApiError::not_found(
            "not_a_notebook",
            format!("job {} is not a notebook", job.id),
        ));
    }
    if job.phase != JobPhase::Running {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "notebook_not_running",
            format!("job {} is {}: its notebook opens once it runs", job.id, job.phase),
        )
        .with_details(serde_json::json!({ "phase": job.phase })));
    }
    Ok(())
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Why a notebook does not open, as a small page with the error's status: the reason in the
/// viewer's language (the UI's own text for the code) and the way on — back to the job's page
/// in the portal (or its login page) when the portal's address is known.
pub fn error_page(state: &AppState, e: &ApiError, id: Option<i64>, accept_language: Option<&str>) -> Response {
    let locale = crate::i18n::negotiate(accept_language);
    let text = |key: &str| crate::i18n::text(locale, key);
    let reason = match text(&format!("error.{}", e.code)) {
        missing if missing.starts_with("error.") => e.message.clone(),
        found => found,
    };
    let portal = state.notebook_origin.portal().unwrap_or_default();
    let (href, label) = match (e.status, id) {
        (StatusCode::UNAUTHORIZED, Some(id)) if e.code == "unauthorized" => {
            (format!("{portal}/login?next=/jobs/{id}"), text("nav.login"))
        }
        (_, Some(id)) if e.code != "job_not_found" => (format!("{portal}/jobs/{id}"), text("notebook.backToJob")),
        _ => (format!("{portal}/jobs"), text("nav.jobs")),
    };
    let link = if state.notebook_origin.portal().is_some() {
        format!("<p><a href=\"{}\">{}</a></p>", escape_html(&href), escape_html(&label))
    } else {
        String::new()
    };
    let body = format!(
        "<!doctype html><html lang=\"{locale}\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><main><h1>{title}</h1><p data-code=\"{code}\">{reason}</p>{link}</main></body></html>",
        title = escape_html(&text("notebook.cannotOpen")),
        code = e.code,
        reason = escape_html(&reason),
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

/// What a simulated notebook shows: a page in the viewer's language saying that no notebook
/// server runs, and (to admins) how to point `sim_notebook_upstream` at one.
pub fn simulated_page(id: i64, name: &str, user: &crate::users::entity::Model, headers: &HeaderMap) -> Response {
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

/// The portal's old notebook address (`/jobs/{id}/open/...`, bookmarks from before notebooks
/// had origins of their own): the job's page, where **Open** hands over to the notebook's
/// origin. Nothing of a notebook is ever served on the portal.
pub fn portal_router() -> axum::Router<AppState> {
    async fn to_job_page(axum::extract::Path(params): axum::extract::Path<Vec<(String, String)>>) -> Response {
        match params.first().and_then(|(_, id)| id.parse::<i64>().ok()) {
            Some(id) => axum::response::Redirect::to(&format!("/jobs/{id}")).into_response(),
            None => ApiError::not_found("job_not_found", "no such job").into_response(),
        }
    }
    axum::Router::new()
        .route("/jobs/{id}/open", axum::routing::get(to_job_page))
        .route("/jobs/{id}/open/", axum::routing::get(to_job_page))
        .route("/jobs/{id}/open/{*rest}", axum::routing::get(to_job_page))
}

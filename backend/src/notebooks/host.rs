//! A notebook's own origin (`notebook_origin`): the requests whose `Host` is a job's notebook
//! host never reach the portal's router, and the portal's never reach this one. Here there is
//! no API, no UI, no portal session: only the handoff that sets the notebook cookie, and the
//! proxy to that one job's notebook (`super::proxy`).
//!
//! Like the portal, a notebook origin refuses what a sibling origin asks of it with the
//! viewer's cookie (`Sec-Fetch-Site: same-site` or `cross-site`, top-level navigations
//! excepted): on `*.nb.example.org` every notebook is the others' sibling, and one notebook's
//! script must not drive another's.

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{any, get};
use chrono::Utc;
use serde::Deserialize;

use super::handlers::HANDOFF_PATH;
use super::{NotebookHost, base_path, error_page, session};
use crate::auth::token::NotebookGrant;
use crate::error::ApiError;
use crate::state::AppState;

/// The job whose notebook origin `req` is addressed to, if any: by the request's authority
/// (absolute-form) or its `Host` header.
pub fn job_of_request<B>(state: &AppState, req: &axum::http::Request<B>) -> Option<i64> {
    let host = req.uri().authority().map(|a| a.as_str().to_owned()).or_else(|| {
        req.headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned)
    })?;
    state.notebook_origin.job_of_host(&host)
}

/// The routes of a notebook origin, with the layers they need (the portal's are not theirs).
pub fn router(state: AppState) -> Router {
    Router::new()
        .route(HANDOFF_PATH, get(arrive))
        .route("/", any(to_notebook))
        .route("/jobs/{id}/open", any(super::proxy::to_slash))
        .route("/jobs/{id}/open/", any(super::proxy::open))
        .route("/jobs/{id}/open/{*rest}", any(super::proxy::open_path))
        .fallback(not_here)
        .layer(axum::middleware::from_fn(refuse_siblings))
        .layer(axum::middleware::from_fn_with_state(state.clone(), headers))
        .with_state(state)
}

/// The outermost layer of the whole app: a request for a notebook host goes to `notebooks` (the
/// job marked on it), everything else on to the portal.
pub async fn dispatch(State((state, notebooks)): State<(AppState, Router)>, mut req: Request, next: Next) -> Response {
    match job_of_request(&state, &req) {
        Some(job) => {
            req.extensions_mut().insert(NotebookHost(job));
            use tower::ServiceExt;
            match notebooks.oneshot(req).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
        }
        None => next.run(req).await,
    }
}

/// `/` of a notebook origin: its notebook.
async fn to_notebook(axum::Extension(NotebookHost(id)): axum::Extension<NotebookHost>) -> Response {
    Redirect::to(&base_path(id)).into_response()
}

/// Anything else on a notebook origin: there is nothing of the portal here.
async fn not_here() -> ApiError {
    ApiError::not_found("not_found", "a notebook origin serves only its notebook")
}

/// The handoff's query.
#[derive(Debug, Deserialize)]
struct Arrival {
    code: Option<String>,
}

/// `GET /_anteroom/handoff?code=…`: claims the one-time code the portal made for this origin's
/// job and sets the notebook cookie, then leads to the notebook. A code that is unknown, used,
/// expired or for another job gets a page that says to open the notebook again from Anteroom.
async fn arrive(
    State(state): State<AppState>,
    axum::Extension(NotebookHost(id)): axum::Extension<NotebookHost>,
    Query(query): Query<Arrival>,
    request_headers: HeaderMap,
) -> Response {
    let language = request_headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match set_session(&state, id, query.code).await {
        Ok(cookie) => {
            let mut response = Redirect::to(&base_path(id)).into_response();
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(e) => error_page(&state, &e, Some(id), language.as_deref()),
    }
}

/// The notebook cookie for the handoff `code` of job `id`.
async fn set_session(state: &AppState, id: i64, code: Option<String>) -> Result<String, ApiError> {
    let expired = || {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "notebook_link_expired",
            "this link to the notebook was used or has expired: open the notebook again from its job's page",
        )
    };
    let now = Utc::now();
    let code = code.ok_or_else(expired)?;
    let handoff = super::handoff::claim(&state.db, &code, id, now)
        .await?
        .ok_or_else(expired)?;
    // The viewer as they are now: a logout or a role change since the portal made the code
    // counts (the cookie carries the version, and every request checks it again).
    crate::auth::current_user(state, handoff.user_id, handoff.user_version).await?;
    let expires_at = handoff.session_expires_at.timestamp();
    let grant = NotebookGrant {
        user_id: handoff.user_id,
        version: handoff.user_version,
        job_id: id,
        as_admin: handoff.as_admin,
        expires_at,
    };
    let value = state.tokens.issue_notebook(&grant, now).map_err(ApiError::internal)?;
    Ok(session::set_cookie(
        &state.notebook_origin,
        &value,
        (expires_at - now.timestamp()).max(0),
    ))
}

/// Whether a browser says the request comes from another origin of the site or another site,
/// and it is not the top-level `GET` of a person following a link (frames and form posts from
/// another origin count as that origin's requests).
pub fn from_a_sibling(method: &axum::http::Method, headers: &HeaderMap) -> bool {
    let site = headers.get("sec-fetch-site").map(HeaderValue::as_bytes);
    let foreign =
        matches!(site, Some(s) if s.eq_ignore_ascii_case(b"same-site") || s.eq_ignore_ascii_case(b"cross-site"));
    foreign && !crate::http::csrf::is_navigation(method, headers)
}

/// Refuses a request another origin's page makes here with the viewer's cookie (see the
/// module's doc): 403 `cross_site_request`, before any notebook sees it.
async fn refuse_siblings(req: Request, next: Next) -> Response {
    if from_a_sibling(req.method(), req.headers()) {
        axum_prometheus::metrics::counter!(crate::http::csrf::CROSS_SITE_REFUSALS, "origin" => "notebook").increment(1);
        tracing::warn!(http.path = %req.uri().path(), origin = ?req.headers().get(header::ORIGIN), "a request from another origin to a notebook refused");
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "cross_site_request",
            "this request does not come from the notebook's own pages",
        )
        .into_response();
    }
    next.run(req).await
}

/// The headers of every answer of a notebook origin: no sniffing, no referrer (the handoff's
/// code is in a URL), HSTS over https; Anteroom's own pages here (errors, the simulated
/// notebook) get a policy that runs nothing, a notebook's answers keep their own.
async fn headers(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let ours = res.extensions().get::<super::FromNotebook>().is_none();
    let h = res.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    if ours {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
        );
    }
    if state.notebook_origin.https() {
        h.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (k.parse().unwrap(), HeaderValue::from_static(v)))
            .collect()
    }

    #[test]
    fn a_sibling_s_fetch_frame_or_form_is_refused_and_a_navigation_or_the_page_s_own_fetch_is_not() {
        use axum::http::Method;
        let get = Method::GET;
        assert!(from_a_sibling(
            &get,
            &h(&[("sec-fetch-site", "same-site"), ("sec-fetch-mode", "cors")])
        ));
        assert!(from_a_sibling(
            &get,
            &h(&[("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "websocket")])
        ));
        assert!(from_a_sibling(&get, &h(&[("sec-fetch-site", "Same-Site")])));
        let frame = h(&[
            ("sec-fetch-site", "same-site"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-dest", "iframe"),
        ]);
        assert!(from_a_sibling(&get, &frame), "a frame");
        let page = h(&[
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-dest", "document"),
        ]);
        assert!(!from_a_sibling(&get, &page), "a person's navigation");
        assert!(from_a_sibling(&Method::POST, &page), "a form posted from elsewhere");
        assert!(!from_a_sibling(
            &get,
            &h(&[("sec-fetch-site", "same-origin"), ("sec-fetch-mode", "cors")])
        ));
        assert!(!from_a_sibling(&get, &h(&[("sec-fetch-site", "none")])));
        assert!(!from_a_sibling(&get, &HeaderMap::new()));
    }
}

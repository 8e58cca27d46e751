//! Cross-site request refusal (`spec/api.md`, conventions): a write the browser makes with the
//! session cookie must come from the UI's own origin, and no other origin of the site may use
//! the session at all.
//!
//! `SameSite=Strict` keeps the cookie away from other *sites*, but a page on a sibling host or
//! port of the same site (`https://wiki.example.org` against `https://anteroom.example.org`)
//! still gets it sent. Browsers say where a request comes from in `Sec-Fetch-Site` (every
//! current browser) and `Origin` (every non-GET request): a cookie-authenticated write needs
//! `Sec-Fetch-Site: same-origin`, or, from a browser that sends no fetch metadata, an `Origin`
//! equal to the server's own. Bearer-token clients carry no ambient credential and are not
//! affected. Login is checked too (login CSRF: a foreign page must not log a victim into the
//! attacker's account), but only against what a browser says: a client that sends neither
//! header is a script, not a browser, and logs in as before.
//!
//! Reads too: a cookie-authenticated request a browser says comes from another origin
//! (`Sec-Fetch-Site: same-site` or `cross-site`, or a foreign `Origin`) is refused whatever its
//! method — an event stream, a log, a list — unless it is the top-level navigation of a person
//! following a link (`Sec-Fetch-Mode: navigate`), which shows the page and lends the session
//! to no script. Notebooks are served from sibling hosts (`notebook_origin`): their pages must
//! get nothing from the viewer's portal session, not even a stream slot.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// Requests refused for coming from another origin (`origin`: `portal` or `notebook`): a
/// notebook page or another site trying a user's session shows here.
pub const CROSS_SITE_REFUSALS: &str = "anteroom_cross_site_refusals_total";

/// The login path, checked without a cookie (login CSRF).
const LOGIN_PATH: &str = "/api/v1/auth/login";

/// Where a request says it comes from, as far as this check cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// The UI's own origin said so.
    SameOrigin,
    /// A browser said it comes from elsewhere.
    Foreign,
    /// No browser header at all (a script, or a very old browser).
    Unknown,
}

/// Reads `Sec-Fetch-Site`, else `Origin` against `own_origin` (the `public_url`'s origin) or,
/// without one, against the request's `Host` under either scheme.
pub fn provenance(headers: &HeaderMap, own_origin: Option<&str>) -> Provenance {
    if let Some(site) = headers.get("sec-fetch-site") {
        return if site.as_bytes().eq_ignore_ascii_case(b"same-origin") {
            Provenance::SameOrigin
        } else {
            Provenance::Foreign
        };
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Provenance::Unknown;
    };
    let Ok(origin) = origin.to_str() else {
        return Provenance::Foreign;
    };
    let origin = origin.trim().to_ascii_lowercase();
    let same = match own_origin {
        Some(own) => origin == own,
        None => headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(|host| host.trim().to_ascii_lowercase())
            .is_some_and(|host| origin == format!("http://{host}") || origin == format!("https://{host}")),
    };
    if same {
        Provenance::SameOrigin
    } else {
        Provenance::Foreign
    }
}

/// GET, HEAD and OPTIONS change nothing; everything else is a write.
fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Whether the browser says this is a person's top-level navigation — following a link or
/// typing an address: a `GET` (or `HEAD`) with `Sec-Fetch-Mode: navigate` and `Sec-Fetch-Dest:
/// document`. Not a frame (`Sec-Fetch-Dest: iframe`, `object`…: a page can make as many as it
/// likes, each holding what it loads), not a form's `POST`, not a script's request.
pub fn is_navigation(method: &Method, headers: &HeaderMap) -> bool {
    let says = |name: &str, value: &[u8]| {
        headers
            .get(name)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(value))
    };
    matches!(*method, Method::GET | Method::HEAD)
        && says("sec-fetch-mode", b"navigate")
        && says("sec-fetch-dest", b"document")
}

/// The layer: refuses a cookie-authenticated write that does not come from the UI's origin, a
/// cookie-authenticated read a browser says comes from another origin (navigations excepted),
/// and a browser's login from a foreign page, with 403 `cross_site_request`.
pub async fn refuse_cross_site(State(state): State<AppState>, req: Request, next: Next) -> Response {
    // Only a bearer token exempts: a browser behind a basic-auth proxy attaches `Basic` by
    // itself, even to a foreign page's form post.
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer "));
    if !bearer {
        let own = state.config.public_url.as_ref().map(|u| u.origin.as_str());
        let from = provenance(req.headers(), own);
        let by_cookie = crate::auth::session_token(req.headers(), &state.config).is_some();
        let refused = match (is_write(req.method()), by_cookie) {
            (true, true) => from != Provenance::SameOrigin,
            (true, false) => req.uri().path() == LOGIN_PATH && from == Provenance::Foreign,
            (false, true) => from == Provenance::Foreign && !is_navigation(req.method(), req.headers()),
            (false, false) => false,
        };
        if refused {
            axum_prometheus::metrics::counter!(CROSS_SITE_REFUSALS, "origin" => "portal").increment(1);
            tracing::warn!(
                http.method = %req.method(),
                http.path = %req.uri().path(),
                origin = ?req.headers().get(header::ORIGIN),
                "cross-site request refused"
            );
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "cross_site_request",
                "this request does not come from Anteroom's own pages: a browser session may only write from them",
            )
            .into_response();
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_a_person_s_top_level_navigation_counts_as_one() {
        let document = headers(&[("sec-fetch-mode", "navigate"), ("sec-fetch-dest", "document")]);
        assert!(is_navigation(&Method::GET, &document));
        assert!(is_navigation(&Method::HEAD, &document));
        assert!(!is_navigation(&Method::POST, &document), "a form's post is a write");
        for dest in ["iframe", "frame", "object", "embed", "empty"] {
            let h = headers(&[("sec-fetch-mode", "navigate"), ("sec-fetch-dest", dest)]);
            assert!(!is_navigation(&Method::GET, &h), "{dest}");
        }
        for mode in ["cors", "no-cors", "same-origin", "websocket"] {
            let h = headers(&[("sec-fetch-mode", mode), ("sec-fetch-dest", "document")]);
            assert!(!is_navigation(&Method::GET, &h), "{mode}");
        }
        assert!(!is_navigation(&Method::GET, &HeaderMap::new()));
    }

    #[test]
    fn fetch_metadata_decides_when_present() {
        let same = headers(&[("sec-fetch-site", "same-origin"), ("origin", "https://evil.example")]);
        assert_eq!(provenance(&same, None), Provenance::SameOrigin);
        for site in ["same-site", "cross-site", "none"] {
            let h = headers(&[
                ("sec-fetch-site", site),
                ("host", "a.example"),
                ("origin", "http://a.example"),
            ]);
            assert_eq!(provenance(&h, None), Provenance::Foreign, "{site}");
        }
    }

    #[test]
    fn origin_is_compared_with_the_public_url_or_else_the_host() {
        let h = headers(&[("origin", "https://Anteroom.example.org"), ("host", "10.0.0.5:8080")]);
        assert_eq!(
            provenance(&h, Some("https://anteroom.example.org")),
            Provenance::SameOrigin
        );
        assert_eq!(provenance(&h, None), Provenance::Foreign);
        let sibling = headers(&[("origin", "https://wiki.example.org"), ("host", "anteroom.example.org")]);
        assert_eq!(
            provenance(&sibling, Some("https://anteroom.example.org")),
            Provenance::Foreign
        );
        assert_eq!(provenance(&sibling, None), Provenance::Foreign);
        let port = headers(&[("origin", "http://127.0.0.1:9999"), ("host", "127.0.0.1:8080")]);
        assert_eq!(provenance(&port, None), Provenance::Foreign);
        let own = headers(&[("origin", "http://127.0.0.1:8080"), ("host", "127.0.0.1:8080")]);
        assert_eq!(provenance(&own, None), Provenance::SameOrigin);
        assert_eq!(provenance(&headers(&[("origin", "null")]), None), Provenance::Foreign);
        assert_eq!(provenance(&headers(&[("host", "a")]), None), Provenance::Unknown);
    }
}

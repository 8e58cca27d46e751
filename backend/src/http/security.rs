//! Security headers on every answer: no content sniffing, no referrer, and a Content-Security-
//! Policy that lets the web UI load only from its own origin (WebAssembly compilation is the one
//! extra it needs), never be framed, never run inline script and never post a form elsewhere.
//! Pages also get a `Permissions-Policy` (no camera, microphone, location, …) and
//! `Cross-Origin-Opener-Policy: same-origin` (a page that opens the UI gets no handle on it);
//! served over https (`public_url`), every answer carries HSTS.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// The web UI's policy: everything from the origin, WebAssembly allowed to compile, no inline
/// script (the UI boots from a file), no framing, no `<base>`, no plugins.
pub const UI_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
    frame-ancestors 'none'; base-uri 'none'; object-src 'none'; form-action 'self'";

/// The Swagger UI page's policy: its bundled scripts from the origin, and the inline styles and
/// `data:` images its React components use; still no inline script and no framing.
pub const DOCS_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
    img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; object-src 'none'; form-action 'self'";

/// Everything else (JSON, assets): nothing may be loaded or framed on its account.
pub const API_POLICY: &str = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'";

/// Powerful browser features the UI never uses, switched off for it and anything it embeds.
pub const PERMISSIONS_POLICY: &str = "camera=(), microphone=(), geolocation=(), payment=(), usb=()";

/// HSTS over https: a year, this host only (sibling hosts of the site are not Anteroom's to
/// decide for).
pub const HSTS: &str = "max-age=31536000";

/// Adds the headers to every response, whatever produced it (handlers, fallbacks, errors).
pub async fn headers(State(state): State<crate::state::AppState>, req: Request, next: Next) -> Response {
    let https = state.config.public_url.as_ref().is_some_and(|u| u.https);
    let docs = req.uri().path().starts_with("/api/docs");
    let mut res = next.run(req).await;
    let html = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/html"));
    let policy = match (html, docs) {
        (true, true) => DOCS_POLICY,
        (true, false) => UI_POLICY,
        (false, _) => API_POLICY,
    };
    let h = res.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(policy));
    if html {
        h.insert("permissions-policy", HeaderValue::from_static(PERMISSIONS_POLICY));
        h.insert("cross-origin-opener-policy", HeaderValue::from_static("same-origin"));
    }
    if https {
        h.insert(header::STRICT_TRANSPORT_SECURITY, HeaderValue::from_static(HSTS));
    }
    res
}

//! The embedded web UI: hashed assets under `/pkg/` with year-long caching, gzip when the
//! client accepts it, `index.html` for every other non-API path (the client routes), and the
//! JSON 404 for unknown `/api/` paths.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// One file of the UI build.
pub struct EmbeddedAsset {
    /// Path relative to the site root, without the leading slash.
    pub path: &'static str,
    /// The file.
    pub bytes: &'static [u8],
    /// Its gzip twin, precompressed at build time.
    pub gzip: Option<&'static [u8]>,
}

include!(concat!(env!("OUT_DIR"), "/ui_assets.rs"));

/// Whether this binary carries a real UI build (not the placeholder page).
pub fn ui_built() -> bool {
    UI_BUILT
}

/// Finds an embedded file by its path (no leading slash).
pub fn find(path: &str) -> Option<&'static EmbeddedAsset> {
    ASSETS.iter().find(|a| a.path == path)
}

/// Everything no route matched: API 404s, assets, and the SPA's `index.html`.
pub async fn fallback(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path();
    if path == "/api" || path.starts_with("/api/") {
        return ApiError::not_found("not_found", format!("no API endpoint at {path}")).into_response();
    }
    if method != Method::GET && method != Method::HEAD {
        return ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "only GET and HEAD are served here",
        )
        .into_response();
    }
    let rel = path.trim_start_matches('/');
    if let Some(asset) = find(rel).filter(|_| rel != "index.html") {
        return serve(asset, &headers);
    }
    // A missing hashed asset must not turn into a 200 HTML page (the browser would try to run
    // it as WASM or JS).
    if rel.starts_with("pkg/") || rel.contains('.') && !rel.ends_with(".html") {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    }
    match find("index.html") {
        Some(index) => serve(index, &headers),
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

fn serve(asset: &EmbeddedAsset, headers: &HeaderMap) -> Response {
    let accepts_gzip = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|e| e.trim().split(';').next() == Some("gzip")));
    let (bytes, gzipped) = match asset.gzip {
        Some(gz) if accepts_gzip => (gz, true),
        _ => (asset.bytes, false),
    };
    let mut res = Response::new(Body::from(bytes));
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(asset.path)));
    // Names under pkg/ contain a content hash: they never change, so cache them for a year.
    // index.html names the current hash, so it must always be revalidated.
    let cache = if asset.path.starts_with("pkg/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if gzipped {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    res
}

/// Content type by extension; WASM must be `application/wasm` for streaming compilation.
pub fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wasm_is_served_as_application_wasm() {
        assert_eq!(content_type("pkg/abc/anteroom_web_bg.wasm"), "application/wasm");
        assert_eq!(
            content_type("pkg/abc/anteroom_web.js"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
    }

    #[test]
    fn an_index_page_is_always_embedded() {
        assert!(find("index.html").is_some());
    }
}

//! Opening a notebook: `jupyter` and `webide` jobs are reached at `/jobs/{id}/open/` through
//! Anteroom itself, which reverse-proxies HTTP and WebSocket to the job's pod (kube: the pod's
//! name under the job's headless service; the simulated cluster: `sim_notebook_upstream`, or a
//! page saying it is simulated).
//!
//! Why through Anteroom: only Anteroom can reach the pod (a NetworkPolicy in `deploy/` lets
//! nothing else in), so the notebook runs without a token of its own and the session that
//! opened the portal is the one that opens the notebook — owner and admins only, checked on
//! every request, the WebSocket handshake included. What the notebook is sent is filtered
//! ([`forwarded_headers`]): Anteroom's session cookie and `Authorization` never leave, and what
//! it answers cannot set Anteroom's session cookie ([`answered_headers`]).
//!
//! The path is kept as it came (`/jobs/{id}/open/...`): the notebook is started with that base
//! URL (`NOTEBOOK_ARGS` for Jupyter's images, `ANTEROOM_BASE_URL` for anything else), so its
//! links and redirects stay under it. `Host` is kept too (as nginx's `proxy_set_header Host
//! $host`): Jupyter compares a WebSocket's `Origin` with it.

pub mod proxy;
#[cfg(test)]
mod tests;

use axum::http::{HeaderMap, HeaderName, HeaderValue, header};

/// The path under which job `id`'s notebook is opened.
pub fn base_path(id: i64) -> String {
    format!("/jobs/{id}/open/")
}

/// Marks a response that came from a notebook: the security headers' layer leaves its content
/// policy to the notebook (Jupyter's pages would not run under the portal's).
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

//! Authentication: session tokens, the login throttle, and the layers that make authorisation a
//! matter of where a route is mounted: every route of the user router passes [`require_user`],
//! every route of the `/api/v1/admin` router passes [`require_admin`] (see `http::router`), so
//! no handler has to remember an extractor to be protected.

pub mod client;
pub mod handlers;
pub mod throttle;
pub mod token;

use anteroom_shared::api::Role;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::config::Config;
use crate::error::ApiError;
use crate::state::AppState;
use crate::users;
pub use crate::users::AuthUser;

/// The browser's session cookie: the same token as the bearer header, set by login as
/// `HttpOnly` (no script reads it, so an injected script cannot steal it) and
/// `SameSite=Strict` (no other site's page can send it), so the UI keeps no token in
/// `localStorage` (`spec/api.md`, "Auth"). Served over https (`public_url`), it is
/// [`SECURE_SESSION_COOKIE`] instead.
pub const SESSION_COOKIE: &str = "anteroom_session";

/// The session cookie's name when `public_url` is https: the `__Host-` prefix makes browsers
/// accept it only with `Secure`, `Path=/` and no `Domain`, so no sibling host (and no plain
/// http page of the same host) can plant or overwrite it.
pub const SECURE_SESSION_COOKIE: &str = "__Host-anteroom_session";

/// The session cookie's name under `config`.
pub fn session_cookie_name(config: &Config) -> &'static str {
    if config.public_url.as_ref().is_some_and(|u| u.https) {
        SECURE_SESSION_COOKIE
    } else {
        SESSION_COOKIE
    }
}

/// The `Set-Cookie` value that holds `token` for `max_age_seconds`; 0 clears it.
pub fn session_cookie(config: &Config, token: &str, max_age_seconds: i64) -> String {
    let name = session_cookie_name(config);
    let secure = if name == SECURE_SESSION_COOKIE { "; Secure" } else { "" };
    format!("{name}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_seconds}{secure}")
}

/// The session cookie's token in `headers`, if the request carries one (empty counts as none).
/// Two different ones count as none: the browser holds only one of its own (host-only), so a
/// second was planted by a page of a parent or sibling domain (a notebook over plain http can
/// set `Domain=` cookies for the site, with a path that puts it first) to log the victim into
/// the planter's account; the request goes unauthenticated instead.
pub fn session_token<'h>(headers: &'h HeaderMap, config: &Config) -> Option<&'h str> {
    let name = session_cookie_name(config);
    let mut values = headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(n, _)| *n == name)
        .map(|(_, value)| value)
        .filter(|value| !value.is_empty());
    let first = values.next()?;
    if values.any(|other| other != first) {
        return None;
    }
    Some(first)
}

/// The token of a request: the bearer header (API clients) or, without one, the session
/// cookie (the browser).
fn request_token<'h>(headers: &'h HeaderMap, config: &Config) -> Result<&'h str, ApiError> {
    if let Some(header) = headers.get(axum::http::header::AUTHORIZATION) {
        let header = header
            .to_str()
            .map_err(|_| ApiError::unauthorized("the Authorization header must be `Bearer <token>`"))?;
        return header
            .strip_prefix("Bearer ")
            .ok_or_else(|| ApiError::unauthorized("the Authorization header must be `Bearer <token>`"));
    }
    session_token(headers, config).ok_or_else(|| ApiError::unauthorized("missing bearer token or session cookie"))
}

/// Checks the caller's token (bearer header, or the session cookie) and reloads its user (or
/// takes it from [`AppState::session_users`], read less than a second ago and not changed
/// since): a deleted user, or a token issued before the user's last password change, role
/// change or logout (an older token version), is refused.
pub async fn authenticate(headers: &HeaderMap, state: &AppState) -> Result<AuthUser, ApiError> {
    let token = request_token(headers, &state.config)?;
    let claims = state
        .tokens
        .verify(token.trim())
        .ok_or_else(|| ApiError::unauthorized("invalid or expired token"))?;
    Ok(AuthUser(current_user(state, claims.user_id, claims.version).await?))
}

/// User `id` as they are now, if `version` is still their token version: a deleted user, or a
/// credential issued before their last password change, role change or logout, is refused.
/// Read from [`AppState::session_users`] when it was read less than a second ago.
pub async fn current_user(state: &AppState, id: i64, version: i64) -> Result<users::entity::Model, ApiError> {
    let user = match state.session_users.get(id) {
        Some(user) => user,
        None => {
            let generation = state.session_users.generation();
            let user = users::find_by_id(&state.db_read, id)
                .await?
                .ok_or_else(|| ApiError::unauthorized("the token's user no longer exists"))?;
            state.session_users.keep(user.clone(), generation);
            user
        }
    };
    if user.token_version != version {
        return Err(ApiError::unauthorized(
            "this session has ended (logout, or a password or role change): log in again",
        ));
    }
    Ok(user)
}

/// When the caller's session (bearer token or cookie) expires, if it is a valid one.
pub fn session_expiry(headers: &HeaderMap, state: &AppState) -> Option<i64> {
    let token = request_token(headers, &state.config).ok()?;
    state.tokens.verify(token.trim()).map(|v| v.expires_at)
}

/// The layer of the user router: authenticates and hands the caller to the handler.
pub async fn require_user(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    match authenticate(req.headers(), &state).await {
        Ok(user) => {
            req.extensions_mut().insert(user);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}

/// The layer of the admin router: authenticates, and refuses anyone but an admin with 403
/// before the handler (or any of its extractors) runs.
pub async fn require_admin(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    match authenticate(req.headers(), &state).await {
        Ok(user) if user.role() == Role::Admin => {
            req.extensions_mut().insert(user);
            next.run(req).await
        }
        Ok(_) => ApiError::forbidden("this needs the admin role").into_response(),
        Err(e) => e.into_response(),
    }
}

/// The caller, as the layer in front of the handler authenticated them; a route mounted outside
/// the user and admin routers authenticates here instead.
impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match parts.extensions.get::<AuthUser>() {
            Some(user) => Ok(user.clone()),
            None => authenticate(&parts.headers, state).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_session_cookie_is_the_session_and_two_different_ones_are_none() {
        let config = Config::for_data_dir(std::path::Path::new("/nonexistent"));
        let with = |cookie: &str| {
            let mut h = HeaderMap::new();
            h.insert(axum::http::header::COOKIE, cookie.parse().unwrap());
            h
        };
        let one = with("a=1; anteroom_session=mine; b=2");
        assert_eq!(session_token(&one, &config), Some("mine"));
        let same_twice = with("anteroom_session=mine; anteroom_session=mine");
        assert_eq!(session_token(&same_twice, &config), Some("mine"));
        let planted = with("anteroom_session=planted; anteroom_session=mine");
        assert_eq!(session_token(&planted, &config), None);
        assert_eq!(session_token(&with("anteroom_session="), &config), None);
    }
}

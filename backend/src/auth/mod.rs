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

use crate::error::ApiError;
use crate::state::AppState;
use crate::users;
pub use crate::users::AuthUser;

/// Checks the bearer token and reloads its user: a deleted user, or a token issued before the
/// user's last password change, role change or logout (an older token version), is refused.
pub async fn authenticate(headers: &HeaderMap, state: &AppState) -> Result<AuthUser, ApiError> {
    let header = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ApiError::unauthorized("missing bearer token"))?;
    let token = header
        .strip_prefix("Bearer ")
        .ok_or_else(|| ApiError::unauthorized("the Authorization header must be `Bearer <token>`"))?;
    let claims = state
        .tokens
        .verify(token.trim())
        .ok_or_else(|| ApiError::unauthorized("invalid or expired token"))?;
    let user = users::find_by_id(&state.db_read, claims.user_id)
        .await?
        .ok_or_else(|| ApiError::unauthorized("the token's user no longer exists"))?;
    if user.token_version != claims.version {
        return Err(ApiError::unauthorized(
            "this session has ended (logout, or a password or role change): log in again",
        ));
    }
    Ok(AuthUser(user))
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

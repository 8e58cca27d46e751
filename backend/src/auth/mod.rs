//! Authentication: Argon2id passwords, HS256 session tokens, and the extractors that make
//! authorisation a matter of a handler's signature (`AuthUser`, `AdminUser`).

pub mod handlers;
pub mod password;
pub mod throttle;
pub mod token;

use anteroom_shared::api::Role;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::app::AppState;
use crate::error::ApiError;
use crate::users;

/// The caller, authenticated by a bearer token whose user still exists.
#[derive(Clone, Debug)]
pub struct AuthUser(pub users::entity::Model);

impl AuthUser {
    /// True for admins.
    pub fn is_admin(&self) -> bool {
        users::role_of(&self.0) == Role::Admin
    }
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| ApiError::unauthorized("missing bearer token"))?;
        let token = header
            .strip_prefix("Bearer ")
            .ok_or_else(|| ApiError::unauthorized("the Authorization header must be `Bearer <token>`"))?;
        let user_id = state
            .tokens
            .verify(token.trim())
            .ok_or_else(|| ApiError::unauthorized("invalid or expired token"))?;
        // Load the user on every request: a deleted user or a changed role takes effect at once.
        let user = users::find_by_id(&state.db_read, user_id)
            .await?
            .ok_or_else(|| ApiError::unauthorized("the token's user no longer exists"))?;
        Ok(AuthUser(user))
    }
}

/// The caller, authenticated and an admin; anyone else gets 403.
#[derive(Clone, Debug)]
pub struct AdminUser(pub users::entity::Model);

impl FromRequestParts<AppState> for AdminUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let user = AuthUser::from_request_parts(parts, state).await?;
        if !user.is_admin() {
            return Err(ApiError::forbidden("this needs the admin role"));
        }
        Ok(AdminUser(user.0))
    }
}

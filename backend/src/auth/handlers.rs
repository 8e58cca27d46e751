//! `POST /api/v1/auth/login` and `GET /api/v1/auth/me`.

use anteroom_shared::api::{ErrorBody, LoginRequest, LoginResponse, User};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{AuthUser, password};
use crate::app::AppState;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::users;

/// The auth routes, with their OpenAPI description.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(login)).routes(routes!(me))
}

/// Exchange a username and password for a bearer token.
#[utoipa::path(
    post,
    path = "/api/v1/auth/login",
    tag = "auth",
    request_body = LoginRequest,
    responses(
        (status = 200, description = "Logged in", body = LoginResponse),
        (status = 401, description = "`invalid_credentials`", body = ErrorBody),
        (status = 422, description = "`validation_failed`", body = ErrorBody),
    )
)]
#[tracing::instrument(skip_all, fields(user.name = %body.username))]
async fn login(State(state): State<AppState>, ApiJson(body): ApiJson<LoginRequest>) -> ApiResult<Json<LoginResponse>> {
    let invalid = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_credentials",
            "wrong username or password",
        )
    };
    let user = users::find_by_username(&state.db, &body.username).await?;
    // Verify against a real hash even when the user is unknown, so timing does not reveal
    // which usernames exist.
    let stored = user.as_ref().map(|u| u.password_hash.clone());
    let password = body.password.clone();
    let ok = tokio::task::spawn_blocking(move || {
        let hash: &str = match &stored {
            Some(h) => h,
            None => unknown_user_hash(),
        };
        password::verify(&password, hash)
    })
    .await
    .map_err(ApiError::internal)?;
    let user = match (user, ok) {
        (Some(u), true) => u,
        _ => return Err(invalid()),
    };
    let (token, expires_at) = state.tokens.issue(user.id, Utc::now()).map_err(ApiError::internal)?;
    tracing::info!(user.id = user.id, "login");
    Ok(Json(LoginResponse {
        token,
        expires_at,
        user: users::to_api(&user),
    }))
}

/// A real Argon2id hash (same parameters as stored ones) of a random password nobody knows,
/// made once: verifying against it costs what verifying a real user's password costs.
fn unknown_user_hash() -> &'static str {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HASH.get_or_init(|| {
        use rand::Rng;
        let secret: [u8; 16] = rand::rng().random();
        password::hash(&format!("{secret:?}")).unwrap_or_default()
    })
}

/// The logged-in user.
#[utoipa::path(
    get,
    path = "/api/v1/auth/me",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller", body = User),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
    )
)]
async fn me(AuthUser(user): AuthUser) -> Json<User> {
    Json(users::to_api(&user))
}

//! `POST /api/v1/auth/login` and `GET /api/v1/auth/me`.

use anteroom_shared::api::{ErrorBody, LoginRequest, LoginResponse, User};
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::Json;
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
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
        (status = 429, description = "`too_many_attempts`: too many wrong passwords for this username from this address; \
            wait `details.retryAfterSeconds` (also the `Retry-After` header)", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    )
)]
#[tracing::instrument(skip_all, fields(user.name = %body.username))]
async fn login(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    ApiJson(body): ApiJson<LoginRequest>,
) -> ApiResult<Json<LoginResponse>> {
    // Refused before any hashing: a flood of throttled attempts costs no Argon2 work. An
    // attempt let through counts as a failure until the password proves right.
    if let Err(seconds) = state.login_throttle.attempt(&body.username, client, Instant::now()) {
        tracing::warn!(client = ?client, retry_after = seconds, "login throttled");
        return Err(ApiError::too_many_attempts(
            format!("too many failed logins for this username; try again in {seconds} s"),
            seconds,
        ));
    }
    let invalid = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_credentials",
            "wrong username or password",
        )
    };
    let user = users::find_by_username(&state.db_read, &body.username).await?;
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
    state.login_throttle.succeeded(&body.username, client);
    let (token, expires_at) = state.tokens.issue(user.id, Utc::now()).map_err(ApiError::internal)?;
    tracing::info!(user.id = user.id, "login");
    Ok(Json(LoginResponse {
        token,
        expires_at,
        user: users::to_api(&user),
    }))
}

/// The peer's IP address when the server was started with connect info (`app::serve` is),
/// `None` otherwise (a router driven in-process): never a rejection.
struct ClientIp(Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientIp(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| addr.ip()),
        ))
    }
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

//! `POST /api/v1/auth/login`, `POST /api/v1/auth/logout` and `GET /api/v1/auth/me`.

use anteroom_shared::api::{ErrorBody, LoginRequest, LoginResponse, Session, User};
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::AuthUser;
use super::client::ClientIp;
use super::throttle;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;
use crate::users::{self, password};

/// The routes anyone may call: logging in, and asking whether one is.
pub fn public_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(login)).routes(routes!(session))
}

/// The routes of a logged-in user: who am I, log out.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(me)).routes(routes!(logout))
}

/// Exchange a username and password for a bearer token.
#[utoipa::path(
    post,
    path = "/api/v1/auth/login",
    tag = "auth",
    request_body = LoginRequest,
    responses(
        (status = 200, description = "Logged in; the token also comes as the HttpOnly, SameSite=Strict \
            session cookie `anteroom_session` for the browser", body = LoginResponse,
            headers(("Set-Cookie" = String, description = "The session cookie"))),
        (status = 401, description = "`invalid_credentials`", body = ErrorBody),
        (status = 422, description = "`validation_failed`", body = ErrorBody),
        (status = 429, description = "`too_many_attempts`: too many wrong passwords for this username, or for any \
            username, from this address; wait `details.retryAfterSeconds` (also the `Retry-After` header)", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 503, description = "`busy`: the server is checking too many passwords at once; retry after \
            `Retry-After` seconds. `database_unavailable`: the database does not answer", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    )
)]
// The name is logged cut and escaped (`?`): a username is whatever the client sent, and one
// with a newline or an ANSI escape must not forge or hide log lines.
#[tracing::instrument(skip_all, fields(user.name = ?throttle::login_name(&body.username)))]
async fn login(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    ApiJson(body): ApiJson<LoginRequest>,
) -> ApiResult<(axum::http::HeaderMap, Json<LoginResponse>)> {
    // Refused before any hashing: a flood of throttled attempts costs no Argon2 work. An
    // attempt let through counts as a failure until the password proves right.
    let attempt = match state.login_throttle.attempt(&body.username, client, Instant::now()) {
        Ok(attempt) => attempt,
        Err(seconds) => {
            tracing::warn!(client = ?client, retry_after = seconds, "login throttled");
            return Err(ApiError::too_many_attempts(
                format!("too many failed logins from this address; try again in {seconds} s"),
                seconds,
            ));
        }
    };
    // A name longer than any username can be is nobody's, and is not sent to the database;
    // its password is still checked against a hash so it answers no faster.
    let lookup = if body.username.chars().nth(throttle::MAX_LOGIN_USERNAME_CHARS).is_some() {
        Ok(None)
    } else {
        users::find_by_username(&state.db_read, &body.username).await
    };
    // Neither a database failure nor a busy server says anything about the password: such an
    // attempt is not held against the caller.
    let user = match lookup {
        Ok(user) => user,
        Err(e) => {
            state.login_throttle.not_counted(&attempt);
            return Err(e.into());
        }
    };
    // Verify against a real hash even when the user is unknown, so timing does not reveal
    // which usernames exist.
    let stored = user.as_ref().map(|u| u.password_hash.clone());
    let password = body.password.clone();
    let verdict = state
        .passwords
        .run(move || {
            let hash = stored.as_deref().unwrap_or_else(|| unknown_user_hash());
            password::verify(&password, hash)
        })
        .await;
    let ok = match verdict {
        Ok(ok) => ok,
        Err(password::Busy) => {
            state.login_throttle.not_counted(&attempt);
            tracing::warn!("login refused: password hashing is saturated");
            return Err(ApiError::busy(1));
        }
    };
    let user = match (user, ok) {
        (Some(u), true) => u,
        _ => {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "invalid_credentials",
                "wrong username or password",
            ));
        }
    };
    state.login_throttle.succeeded(&attempt);
    let (token, expires_at) = state
        .tokens
        .issue(user.id, user.token_version, Utc::now())
        .map_err(ApiError::internal)?;
    tracing::info!(user.id = user.id, "login");
    // The browser keeps the session in an HttpOnly cookie; API clients use the token.
    let mut headers = axum::http::HeaderMap::new();
    let cookie = super::session_cookie(&state.config, &token, (expires_at - Utc::now()).num_seconds().max(0));
    headers.insert(
        axum::http::header::SET_COOKIE,
        axum::http::HeaderValue::from_str(&cookie).map_err(ApiError::internal)?,
    );
    Ok((
        headers,
        Json(LoginResponse {
            token,
            expires_at,
            user: users::to_api_one(&state.db_read, &user).await?,
        }),
    ))
}

/// Ends every session of the caller: all tokens issued to them before now stop working, on
/// every device.
#[utoipa::path(
    post,
    path = "/api/v1/auth/logout",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Logged out everywhere; the session cookie is cleared",
            headers(("Set-Cookie" = String, description = "The session cookie, expired"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
    )
)]
async fn logout(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
) -> ApiResult<(StatusCode, [(axum::http::HeaderName, String); 1])> {
    let ended = users::end_sessions(&state.db, user.id).await;
    // Whatever the outcome: the token version may have changed.
    state.session_users.forget(user.id);
    ended?;
    tracing::info!(user.id = user.id, "logout");
    // The browser's cookie goes too (its token no longer works anyway).
    Ok((
        StatusCode::NO_CONTENT,
        [(
            axum::http::header::SET_COOKIE,
            super::session_cookie(&state.config, "", 0),
        )],
    ))
}

/// A real Argon2id hash (same parameters as stored ones) of a random password nobody knows,
/// made once: verifying against it costs what verifying a real user's password costs.
pub(crate) fn unknown_user_hash() -> &'static str {
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
async fn me(State(state): State<AppState>, AuthUser(user): AuthUser) -> ApiResult<Json<User>> {
    Ok(Json(users::to_api_one(&state.db_read, &user).await?))
}

/// Who the caller's session is, or nobody: 200 either way, so the web UI can decide between
/// its pages and the login page without a failed request on every first visit.
#[utoipa::path(
    get,
    path = "/api/v1/auth/session",
    tag = "auth",
    responses(
        (status = 200, description = "The caller, or `user: null` without a valid session", body = Session),
        (status = 503, description = "`database_unavailable`", body = ErrorBody),
    )
)]
async fn session(State(state): State<AppState>, headers: axum::http::HeaderMap) -> ApiResult<Json<Session>> {
    match super::authenticate(&headers, &state).await {
        Ok(AuthUser(user)) => Ok(Json(Session {
            user: Some(users::to_api_one(&state.db_read, &user).await?),
        })),
        Err(e) if e.status == StatusCode::UNAUTHORIZED => Ok(Json(Session { user: None })),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    use crate::auth::throttle::{self, Limits, LoginThrottle};
    use crate::config::{Config, Secret};

    /// What the log subscriber wrote.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_login_username_is_logged_cut_to_64_characters_and_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::for_data_dir(dir.path());
        config.admin_password = Some(Secret::new("an-admin-password"));
        config.jwt_secret = Some(Secret::new("a-test-secret-a-test-secret-a-test-secret"));
        let clock = Arc::new(crate::cluster::clock::ManualClock::new(chrono::Utc::now()));
        let mut state = crate::app::prepare_with(config, Some(clock)).await.unwrap().state;
        // Throttled at the second attempt: the refusal is logged inside the login's span.
        state.login_throttle = Arc::new(LoginThrottle::new(Limits {
            per_pair: 1,
            ..Limits::default()
        }));
        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let router = crate::http::router(state);
        let forged = format!(
            "mallory\n2030-01-01T00:00:00Z  INFO anteroom: login user.id=1\u{1b}[2K{}",
            "z".repeat(100)
        );
        let mut statuses = Vec::new();
        for _ in 0..2 {
            let body = serde_json::json!({"username": forged, "password": "wrong-password"}).to_string();
            let req = Request::post("/api/v1/auth/login")
                .header("content-type", "application/json")
                .body(Body::from(body))
                .unwrap();
            statuses.push(router.clone().oneshot(req).await.unwrap().status().as_u16());
        }
        assert_eq!(statuses, [401, 429]);
        let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
        assert!(text.contains("login throttled"), "{text}");
        let logged = format!("user.name={:?}", throttle::login_name(&forged));
        assert!(text.contains(&logged), "the name, cut and escaped, in:\n{text}");
        assert!(
            logged.contains(r"mallory\n2030") && logged.contains(r"\u{1b}"),
            "{logged}"
        );
        assert!(!text.contains("\n2030-01-01"), "a forged line:\n{text}");
        assert!(!text.contains('\u{1b}'), "a raw escape:\n{text}");
        assert!(!text.contains(&"z".repeat(20)), "the name uncut:\n{text}");
    }
}

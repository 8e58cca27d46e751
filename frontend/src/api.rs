//! The one typed client of the REST API, over the `shared` crate's DTOs — the types the
//! backend serialises, so a renamed field breaks the build here too. Calls go to the same
//! origin; the browser sends the session cookie that login set (`HttpOnly`: this code never
//! sees the token, and nothing is kept in `localStorage`).

use anteroom_shared::api::{ErrorBody, LoginRequest, LoginResponse};
use gloo_net::http::{Request, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a call failed: the API's stable `code` and English `message`; `network` (translated
/// like the API's codes, under `error.network`) when no answer came at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiFailure {
    /// Stable code (the UI shows the translation of `error.<code>`).
    pub code: String,
    /// English text, the fallback.
    pub message: String,
}

impl ApiFailure {
    fn network(message: impl ToString) -> Self {
        ApiFailure {
            code: "network".into(),
            message: message.to_string(),
        }
    }
}

/// The body of a successful answer, or the API's error.
async fn answer<R: DeserializeOwned>(res: Response) -> Result<R, ApiFailure> {
    if res.ok() {
        return res.json::<R>().await.map_err(ApiFailure::network);
    }
    let status = res.status();
    match res.json::<ErrorBody>().await {
        Ok(body) => Err(ApiFailure {
            code: body.error.code,
            message: body.error.message,
        }),
        Err(_) => Err(ApiFailure {
            code: "internal".into(),
            message: format!("HTTP {status}"),
        }),
    }
}

/// `POST path` with a JSON body.
pub async fn post<B: Serialize, R: DeserializeOwned>(path: &str, body: &B) -> Result<R, ApiFailure> {
    let request = Request::post(path).json(body).map_err(ApiFailure::network)?;
    answer(request.send().await.map_err(ApiFailure::network)?).await
}

/// `POST /api/v1/auth/login`: on success the browser holds the session cookie.
pub async fn login(username: &str, password: &str) -> Result<LoginResponse, ApiFailure> {
    post(
        "/api/v1/auth/login",
        &LoginRequest {
            username: username.to_owned(),
            password: password.to_owned(),
        },
    )
    .await
}

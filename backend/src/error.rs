//! The HTTP layer's error: one type, one JSON shape (`spec/api.md`), stable codes.
//!
//! Domain layers keep their own `thiserror` enums and convert into [`ApiError`] at the edge, so
//! the mapping from a failure to a status and a code lives in one place per domain. Internal
//! causes are logged once, here, and never sent to the client.

use anteroom_shared::api::{ErrorBody, ErrorObject};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

pub use crate::field_rule::Rule;

/// An error answer: status, stable code, English message, optional details, and — for 5xx —
/// the hidden cause that gets logged.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable snake_case code.
    pub code: &'static str,
    /// English text for people.
    pub message: String,
    /// Structured context (fields, limits…).
    pub details: Option<Value>,
    /// Seconds for a `Retry-After` header (429, 503).
    pub retry_after_seconds: Option<u64>,
    /// What really went wrong, for the log only.
    source: Option<anyhow::Error>,
}

impl ApiError {
    /// An error with a status, a code and a message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            details: None,
            retry_after_seconds: None,
            source: None,
        }
    }

    /// 429 `too_many_attempts`: the caller must wait `seconds` (sent as `Retry-After` and as
    /// `details.retryAfterSeconds`, so both HTTP clients and the UI can show it).
    pub fn too_many_attempts(message: impl Into<String>, seconds: u64) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, "too_many_attempts", message)
            .with_details(serde_json::json!({ "retryAfterSeconds": seconds }));
        e.retry_after_seconds = Some(seconds);
        e
    }

    /// 503 `busy`: too much work of one kind at once (password hashing under a login flood);
    /// retry after `seconds`.
    pub fn busy(seconds: u64) -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            format!("the server is busy, try again in {seconds} s"),
        );
        e.retry_after_seconds = Some(seconds);
        e
    }

    /// Adds structured details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// 422 `validation_failed` naming the fields: `[{field, message, code, params?}]`.
    pub fn validation(fields: Vec<FieldError>) -> Self {
        let msg = match fields.first() {
            Some(f) if fields.len() == 1 => format!("invalid {}: {}", f.field, f.message),
            _ => format!("{} fields are invalid", fields.len()),
        };
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "validation_failed", msg)
            .with_details(serde_json::json!({ "fields": fields }))
    }

    /// 422 `validation_failed` from (field, problem) pairs, as every domain's checks give them.
    pub fn from_problems<P: Into<Rule>>(problems: impl IntoIterator<Item = (String, P)>) -> Self {
        Self::validation(
            problems
                .into_iter()
                .map(|(field, problem)| FieldError::new(field, problem))
                .collect(),
        )
    }

    /// 404 for something that does not exist (or that the caller may not know exists).
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    /// 401: no valid credentials.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 403: authenticated but not allowed.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 500 with a hidden cause: the client sees a generic message, the log sees the cause.
    pub fn internal(source: impl Into<anyhow::Error>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "internal",
            message: "internal error".into(),
            details: None,
            retry_after_seconds: None,
            source: Some(source.into()),
        }
    }

    /// 503: a dependency (database, cluster) is not answering.
    pub fn unavailable(what: &'static str, source: impl Into<anyhow::Error>) -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "unavailable",
            message: format!("{what} is unavailable, try again shortly"),
            details: None,
            retry_after_seconds: None,
            source: Some(source.into()),
        }
    }
}

/// One invalid field of a request.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct FieldError {
    /// Dotted path of the field, e.g. `tasks[0].resources.cpu`.
    pub field: String,
    /// What is wrong with it, in English.
    pub message: String,
    /// What is wrong with it, as a stable code a client translates (the web UI:
    /// `fieldError.<code>` with `params`); `invalid` when no finer code exists, then only
    /// `message` says what.
    pub code: &'static str,
    /// The values the code's text names (`{"min": 1, "max": 63}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub params: Option<Value>,
}

impl FieldError {
    /// A field and what is wrong with it.
    pub fn new(field: impl Into<String>, rule: impl Into<Rule>) -> Self {
        let rule = rule.into();
        Self {
            field: field.into(),
            message: rule.message.into_owned(),
            code: rule.code,
            params: rule.params,
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status.as_u16(), self.code, self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            match &self.source {
                Some(cause) => tracing::error!(
                    error.code = self.code,
                    error.cause = format!("{cause:#}"),
                    "request failed"
                ),
                None => tracing::error!(error.code = self.code, "request failed"),
            }
        }
        let body = ErrorBody {
            error: ErrorObject {
                code: self.code.to_string(),
                message: self.message,
                details: self.details,
            },
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(seconds) = self.retry_after_seconds {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(seconds));
        }
        response
    }
}

/// Seconds a client is asked to wait after 503 `database_unavailable`: long enough for a lock
/// holder to finish or a connection to come back, short enough that nobody gives up.
pub const DATABASE_RETRY_AFTER_SECONDS: u64 = 2;

impl ApiError {
    /// 503 `database_unavailable` with `Retry-After` (`spec/api.md`): the database is there
    /// but cannot serve us now (see [`crate::store::is_unavailable`]); the same request may
    /// succeed shortly, unlike after a 500.
    pub fn database_unavailable(source: impl Into<anyhow::Error>) -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "database_unavailable",
            "the database is unavailable, try again shortly",
        );
        e.retry_after_seconds = Some(DATABASE_RETRY_AFTER_SECONDS);
        e.source = Some(source.into());
        e
    }
}

/// A database error is 503 when it means "unavailable" (one rule, in the store) and 500
/// otherwise: a failing query is our bug, a lost connection is not.
impl From<sea_orm::DbErr> for ApiError {
    fn from(e: sea_orm::DbErr) -> Self {
        if crate::store::is_unavailable(&e) {
            ApiError::database_unavailable(e)
        } else {
            ApiError::internal(e)
        }
    }
}

/// Result of a handler.
pub type ApiResult<T> = Result<T, ApiError>;

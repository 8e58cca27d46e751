//! Queue quotas over HTTP (admin only).

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::queues::{QueueQuotaBody, QueueQuotaRule, QueueUserUse};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::QuotaError;
use crate::error::{ApiError, ApiResult};
use crate::etag::{IfMatch, Tagged};
use crate::extract::{ApiJson, ApiPath};
use crate::quotas;
use crate::state::AppState;

/// Routes of admins.
pub fn admin_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_quotas, create_quota))
        .routes(routes!(get_quota, replace_quota, delete_quota))
        .routes(routes!(queue_usage))
}

/// What each user's occupying normal jobs use in each queue now (users with none are absent).
#[utoipa::path(
    get,
    path = "/api/v1/admin/queue-usage",
    tag = "quotas",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "By queue, then username", body = Vec<QueueUserUse>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
    )
)]
async fn queue_usage(State(state): State<AppState>) -> ApiResult<Json<Vec<QueueUserUse>>> {
    Ok(Json(crate::queues::usage::per_user(&state.db_read).await?))
}

impl From<QuotaError> for ApiError {
    fn from(e: QuotaError) -> Self {
        let message = e.to_string();
        match e {
            QuotaError::NotFound(_) => ApiError::not_found("quota_not_found", message),
            QuotaError::Exists(_) => ApiError::new(StatusCode::CONFLICT, "quota_exists", message),
            QuotaError::UnknownQueue(_) => {
                ApiError::not_found("queue_not_found", message).with_details(serde_json::json!({ "field": "queue" }))
            }
            QuotaError::Invalid(problems) => ApiError::from_problems(problems),
            QuotaError::Stale(tag) => crate::etag::stale(&tag),
            QuotaError::Db(e) => e.into(),
        }
    }
}

/// Every quota rule.
#[utoipa::path(
    get,
    path = "/api/v1/admin/queue-quotas",
    tag = "quotas",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every rule by id", body = Vec<QueueQuotaRule>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
    )
)]
async fn list_quotas(State(state): State<AppState>) -> ApiResult<Json<Vec<QueueQuotaRule>>> {
    Ok(Json(quotas::list(&state.db_read).await?))
}

/// Creates the rule of a queue (one per queue); wakes the watcher.
#[utoipa::path(
    post,
    path = "/api/v1/admin/queue-quotas",
    tag = "quotas",
    security(("bearer" = [])),
    request_body = QueueQuotaBody,
    responses(
        (status = 201, description = "Created", body = QueueQuotaRule),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 409, description = "`quota_exists`: the queue has a rule", body = ErrorBody),
        (status = 404, description = "`queue_not_found`: the body names an unknown queue", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields", body = ErrorBody),
    )
)]
async fn create_quota(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<QueueQuotaBody>,
) -> ApiResult<(StatusCode, Json<QueueQuotaRule>)> {
    let rule = quotas::save(&state.db, &body, None, None).await?;
    state.signals.wake_watcher();
    Ok((StatusCode::CREATED, Json(rule)))
}

/// One rule, and its version (`ETag`) for a change.
#[utoipa::path(
    get,
    path = "/api/v1/admin/queue-quotas/{id}",
    tag = "quotas",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Rule id")),
    responses(
        (status = 200, description = "The rule", body = QueueQuotaRule,
            headers(("ETag" = String, description = "Its version: send it back in `If-Match` with a change"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`quota_not_found`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: the id is not a number", body = ErrorBody),
    )
)]
async fn get_quota(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Tagged<QueueQuotaRule>> {
    Ok(Tagged::new(quotas::get(&state.db_read, id).await?))
}

/// Replaces a rule; wakes the watcher.
#[utoipa::path(
    put,
    path = "/api/v1/admin/queue-quotas/{id}",
    tag = "quotas",
    security(("bearer" = [])),
    params(
        ("id" = i64, Path, description = "Rule id"),
        ("If-Match" = Option<String>, Header, description = "The `ETag` of the rule the change was made on"),
    ),
    request_body = QueueQuotaBody,
    responses(
        (status = 200, description = "Replaced", body = QueueQuotaRule,
            headers(("ETag" = String, description = "Its new version"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`quota_not_found`; `queue_not_found` (the body names an unknown queue)", body = ErrorBody),
        (status = 409, description = "`quota_exists`: another rule has that queue", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: changed since the `If-Match` was read; nothing stored", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields", body = ErrorBody),
    )
)]
async fn replace_quota(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    IfMatch(if_match): IfMatch,
    ApiJson(body): ApiJson<QueueQuotaBody>,
) -> ApiResult<Tagged<QueueQuotaRule>> {
    let rule = quotas::save(&state.db, &body, Some(id), if_match.as_deref()).await?;
    state.signals.wake_watcher();
    Ok(Tagged::new(rule))
}

/// Deletes a rule; wakes the watcher (jobs it held may start).
#[utoipa::path(
    delete,
    path = "/api/v1/admin/queue-quotas/{id}",
    tag = "quotas",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Rule id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`quota_not_found`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: the id is not a number", body = ErrorBody),
    )
)]
async fn delete_quota(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<StatusCode> {
    quotas::delete(&state.db, id).await?;
    state.signals.wake_watcher();
    Ok(StatusCode::NO_CONTENT)
}

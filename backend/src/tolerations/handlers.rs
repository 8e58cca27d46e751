//! Toleration rules over HTTP (admin only).

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::tolerations::{TolerationRule, TolerationRuleBody};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::TolerationRuleError;
use crate::error::{ApiError, ApiResult};
use crate::etag::{IfMatch, Tagged};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use crate::tolerations;

/// Routes of admins.
pub fn admin_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_rules, create_rule))
        .routes(routes!(get_rule, replace_rule, delete_rule))
}

impl From<TolerationRuleError> for ApiError {
    fn from(e: TolerationRuleError) -> Self {
        let message = e.to_string();
        match e {
            TolerationRuleError::NotFound(_) => ApiError::not_found("toleration_rule_not_found", message),
            TolerationRuleError::UnknownQueue(_) => {
                ApiError::not_found("queue_not_found", message).with_details(serde_json::json!({ "field": "queue" }))
            }
            TolerationRuleError::Invalid(problems) => ApiError::from_problems(problems),
            TolerationRuleError::Stale(tag) => crate::etag::stale(&tag),
            TolerationRuleError::Db(e) => e.into(),
        }
    }
}

/// Every toleration rule, in the order they apply.
#[utoipa::path(
    get,
    path = "/api/v1/admin/toleration-rules",
    tag = "tolerations",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every rule by id", body = Vec<TolerationRule>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
    )
)]
async fn list_rules(State(state): State<AppState>) -> ApiResult<Json<Vec<TolerationRule>>> {
    Ok(Json(tolerations::list(&state.db_read).await?))
}

/// Creates a rule; it applies to jobs submitted from now on.
#[utoipa::path(
    post,
    path = "/api/v1/admin/toleration-rules",
    tag = "tolerations",
    security(("bearer" = [])),
    request_body = TolerationRuleBody,
    responses(
        (status = 201, description = "Created", body = TolerationRule),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`queue_not_found`: the body names an unknown queue", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields", body = ErrorBody),
    )
)]
async fn create_rule(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<TolerationRuleBody>,
) -> ApiResult<(StatusCode, Json<TolerationRule>)> {
    let rule = tolerations::save(&state.db, &body, None, None).await?;
    Ok((StatusCode::CREATED, Json(rule)))
}

/// One rule, and its version (`ETag`) for a change.
#[utoipa::path(
    get,
    path = "/api/v1/admin/toleration-rules/{id}",
    tag = "tolerations",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Rule id")),
    responses(
        (status = 200, description = "The rule", body = TolerationRule,
            headers(("ETag" = String, description = "Its version: send it back in `If-Match` with a change"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`toleration_rule_not_found`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: the id is not a number", body = ErrorBody),
    )
)]
async fn get_rule(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<Tagged<TolerationRule>> {
    Ok(Tagged::new(tolerations::get(&state.db_read, id).await?))
}

/// Replaces a rule; jobs already submitted keep the tolerations they got.
#[utoipa::path(
    put,
    path = "/api/v1/admin/toleration-rules/{id}",
    tag = "tolerations",
    security(("bearer" = [])),
    params(
        ("id" = i64, Path, description = "Rule id"),
        ("If-Match" = Option<String>, Header, description = "The `ETag` of the rule the change was made on"),
    ),
    request_body = TolerationRuleBody,
    responses(
        (status = 200, description = "Replaced", body = TolerationRule,
            headers(("ETag" = String, description = "Its new version"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`toleration_rule_not_found`; `queue_not_found` (the body names an unknown queue)", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: changed since the `If-Match` was read; nothing stored", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields", body = ErrorBody),
    )
)]
async fn replace_rule(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<i64>,
    IfMatch(if_match): IfMatch,
    ApiJson(body): ApiJson<TolerationRuleBody>,
) -> ApiResult<Tagged<TolerationRule>> {
    Ok(Tagged::new(
        tolerations::save(&state.db, &body, Some(id), if_match.as_deref()).await?,
    ))
}

/// Deletes a rule.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/toleration-rules/{id}",
    tag = "tolerations",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Rule id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`toleration_rule_not_found`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: the id is not a number", body = ErrorBody),
    )
)]
async fn delete_rule(State(state): State<AppState>, ApiPath(id): ApiPath<i64>) -> ApiResult<StatusCode> {
    tolerations::delete(&state.db, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

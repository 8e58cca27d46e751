//! `GET/PUT/DELETE /api/v1/admin/queues/{name}/budget` and `GET /api/v1/admin/budgets`
//! (`spec/api.md`, §10): a queue's budget and its use this period, for admins.

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::usage::BudgetStatus;
use anteroom_shared::scheduling::QueueBudgetBody;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use sea_orm::EntityTrait;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath};
use crate::queues::QueueError;
use crate::state::AppState;

/// Routes of admins.
pub fn admin_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_budgets))
        .routes(routes!(get_budget, put_budget, delete_budget))
}

/// Every budget against its use this period.
#[utoipa::path(
    get,
    path = "/api/v1/admin/budgets",
    tag = "usage",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every queue's budget and use, by queue name", body = Vec<BudgetStatus>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
    )
)]
async fn list_budgets(State(state): State<AppState>) -> ApiResult<Json<Vec<BudgetStatus>>> {
    Ok(Json(super::budget::all(&state.db_read, state.clock.now()).await?))
}

/// The status of `name`'s budget now: 404 `queue_not_found` or `budget_not_found`.
async fn status(state: &AppState, name: &str) -> ApiResult<BudgetStatus> {
    let rows = crate::queues::all(&state.db_read).await?;
    let row = rows
        .iter()
        .find(|r| r.name == name)
        .ok_or_else(|| QueueError::NotFound(name.to_owned()))?;
    super::budget::status_of(&state.db_read, &rows, row, state.clock.now())
        .await?
        .ok_or_else(|| {
            ApiError::not_found("budget_not_found", format!("queue {name:?} has no budget"))
                .with_details(serde_json::json!({ "queue": name }))
        })
}

/// A queue's budget and its subtree's use this period.
#[utoipa::path(
    get,
    path = "/api/v1/admin/queues/{name}/budget",
    tag = "usage",
    security(("bearer" = [])),
    params(("name" = String, Path, description = "Queue name")),
    responses(
        (status = 200, description = "The budget against its use", body = BudgetStatus),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`queue_not_found`; `budget_not_found`: the queue has none", body = ErrorBody),
    )
)]
async fn get_budget(State(state): State<AppState>, ApiPath(name): ApiPath<String>) -> ApiResult<Json<BudgetStatus>> {
    Ok(Json(status(&state, &name).await?))
}

/// Sets a queue's budget (GPU-hours per week or month for the normal jobs of it and its
/// sub-queues); with `holdWhenExhausted` its normal jobs wait (`budget_exhausted`) once it is
/// spent, until the period ends (left out: as it was). Measured and applied at once: no job of
/// the queue is activated against it from the answer on.
#[utoipa::path(
    put,
    path = "/api/v1/admin/queues/{name}/budget",
    tag = "usage",
    security(("bearer" = [])),
    params(("name" = String, Path, description = "Queue name")),
    request_body = QueueBudgetBody,
    responses(
        (status = 200, description = "Stored; the budget against its use", body = BudgetStatus),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`queue_not_found`", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields", body = ErrorBody),
    )
)]
async fn put_budget(
    State(state): State<AppState>,
    AuthUser(admin): AuthUser,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<QueueBudgetBody>,
) -> ApiResult<Json<BudgetStatus>> {
    let Some(row) = crate::queues::entity::queue::Entity::find_by_id(name.clone())
        .one(&state.db)
        .await?
    else {
        return Err(QueueError::NotFound(name).into());
    };
    let body = body.applied_to(crate::queues::budget::of(&row).as_ref());
    if !super::budget::set(&state.db, &name, Some(&body), state.clock.now()).await? {
        return Err(QueueError::NotFound(name).into());
    }
    tracing::info!(queue = %name, gpu_hours = body.gpu_hours.hours(), hold = body.hold_when_exhausted, by = %admin.username, "budget set");
    state.signals.wake_watcher();
    Ok(Json(status(&state, &name).await?))
}

/// Removes a queue's budget (and any hold it made).
#[utoipa::path(
    delete,
    path = "/api/v1/admin/queues/{name}/budget",
    tag = "usage",
    security(("bearer" = [])),
    params(("name" = String, Path, description = "Queue name")),
    responses(
        (status = 204, description = "Removed (or there was none)"),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`queue_not_found`", body = ErrorBody),
    )
)]
async fn delete_budget(
    State(state): State<AppState>,
    AuthUser(admin): AuthUser,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    if crate::queues::entity::queue::Entity::find_by_id(name.clone())
        .one(&state.db)
        .await?
        .is_none()
    {
        return Err(QueueError::NotFound(name).into());
    }
    super::budget::set(&state.db, &name, None, state.clock.now()).await?;
    tracing::info!(queue = %name, by = %admin.username, "budget removed");
    state.signals.wake_watcher();
    Ok(StatusCode::NO_CONTENT)
}

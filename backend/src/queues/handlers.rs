//! Queues over HTTP: the queues a user may use (with capacity and usage), and the admin's
//! create, replace and delete.

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::queues::{AdminQueue, Queue, QueueBody};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use sea_orm::EntityTrait;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::QueueError;
use crate::auth::AuthUser;
use crate::cluster::ClusterError;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::etag::{IfMatch, Tagged};
use crate::extract::{ApiJson, ApiPath};
use crate::queues;
use crate::state::AppState;

/// Routes of every user.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_queues))
}

/// Routes of admins.
pub fn admin_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(admin_list_queues, create_queue))
        .routes(routes!(admin_get_queue, replace_queue, delete_queue))
}

impl From<QueueError> for ApiError {
    fn from(e: QueueError) -> Self {
        let message = e.to_string();
        match e {
            QueueError::NotFound(queue) => ApiError::not_found("queue_not_found", message)
                .with_details(serde_json::json!({ "field": "queue", "queue": queue })),
            QueueError::Forbidden(queue) => ApiError::new(StatusCode::FORBIDDEN, "queue_forbidden", message)
                .with_details(serde_json::json!({ "field": "queue", "queue": queue })),
            QueueError::Invalid(field, problem) => ApiError::validation(vec![FieldError::new(field, problem)]),
            QueueError::Exists(_) => ApiError::new(StatusCode::CONFLICT, "queue_exists", message),
            QueueError::Tree(tree) => {
                let details = serde_json::to_value(&tree).unwrap_or_default();
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, tree.code(), message).with_details(details)
            }
            QueueError::Stale(version) => crate::etag::stale(&version),
            QueueError::HasChildren(_) => ApiError::new(StatusCode::CONFLICT, "queue_has_children", message),
            QueueError::InUse { jobs, .. } => ApiError::new(StatusCode::CONFLICT, "queue_in_use", message)
                .with_details(serde_json::json!({ "unfinishedJobs": jobs })),
            QueueError::NamedByVolumes { volumes, .. } => ApiError::new(StatusCode::CONFLICT, "queue_in_use", message)
                .with_details(serde_json::json!({ "volumes": volumes })),
            QueueError::Protected => ApiError::new(StatusCode::CONFLICT, "queue_protected", message),
            QueueError::Cluster(ClusterError::Rejected(why)) | QueueError::Cluster(ClusterError::Conflict(why)) => {
                ApiError::new(
                    StatusCode::CONFLICT,
                    "queue_not_in_cluster",
                    format!("the cluster has no usable queue of that name: {why}"),
                )
            }
            QueueError::Cluster(e) => e.into(),
            QueueError::Db(e) => e.into(),
        }
    }
}

/// The queues the caller may submit to, with the tree, capacities and current usage (all
/// users' normal jobs in the queue and below).
#[utoipa::path(
    get,
    path = "/api/v1/queues",
    tag = "queues",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Usable queues by name", body = Vec<Queue>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
    )
)]
async fn list_queues(State(state): State<AppState>, AuthUser(user): AuthUser) -> ApiResult<Json<Vec<Queue>>> {
    let rows = queues::usable_by(&state.db_read, &user).await?;
    let used = queues::used_by_queue(&state.db_read).await?;
    let waiting = queues::usage::waiting_by_queue(&state.db_read).await?;
    let mut shares = sharing_now(&state).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(Queue {
            capacity: queues::capacity_of(&row)?,
            sharing: queues::sharing_of(&row)?,
            used: used.get(&row.name).cloned().unwrap_or_default(),
            waiting: waiting.get(&row.name).copied().unwrap_or(0),
            borrowed: shares
                .get_mut(&row.name)
                .map(|s| std::mem::take(&mut s.borrowed))
                .unwrap_or_default(),
            lent: shares
                .get_mut(&row.name)
                .map(|s| std::mem::take(&mut s.lent))
                .unwrap_or_default(),
            name: row.name,
            display_name: row.display_name,
            open: row.open,
            parent: row.parent,
            default_runtime_seconds: row.default_runtime_seconds,
            max_runtime_seconds: row.max_runtime_seconds,
            run_as_user: row.run_as_user,
        });
    }
    Ok(Json(out))
}

/// What each queue borrows and lends now (§9); empty while queues do not share. A cluster
/// that does not answer leaves it empty rather than failing the list (it is a picture, not a
/// decision).
async fn sharing_now(
    state: &AppState,
) -> ApiResult<std::collections::BTreeMap<String, crate::prequeue::sharing::QueueSharingUse>> {
    let config = state.settings.current();
    if !config.queue_quota_enabled {
        return Ok(Default::default());
    }
    let nodes = match state.cluster.nodes().await {
        Ok(nodes) => nodes,
        Err(e) => {
            tracing::warn!(error = %e, "the cluster's nodes are unknown; queues are listed without what they lend");
            return Ok(Default::default());
        }
    };
    Ok(queues::usage::sharing_by_queue(&state.db_read, &config, &nodes).await?)
}

async fn admin_view(state: &AppState, name: Option<&str>) -> ApiResult<Vec<AdminQueue>> {
    let rows = queues::all(&state.db_read).await?;
    let mut members = queues::members(&state.db_read).await?;
    let used = queues::used_by_queue(&state.db_read).await?;
    let waiting = queues::usage::waiting_by_queue(&state.db_read).await?;
    let mut shares = sharing_now(state).await?;
    let mut out = Vec::new();
    for row in rows.into_iter().filter(|r| name.is_none_or(|n| n == r.name)) {
        out.push(AdminQueue {
            capacity: queues::capacity_of(&row)?,
            sharing: queues::sharing_of(&row)?,
            used: used.get(&row.name).cloned().unwrap_or_default(),
            waiting: waiting.get(&row.name).copied().unwrap_or(0),
            borrowed: shares
                .get_mut(&row.name)
                .map(|s| std::mem::take(&mut s.borrowed))
                .unwrap_or_default(),
            lent: shares
                .get_mut(&row.name)
                .map(|s| std::mem::take(&mut s.lent))
                .unwrap_or_default(),
            members: members.remove(&row.name).unwrap_or_default(),
            name: row.name,
            display_name: row.display_name,
            open: row.open,
            parent: row.parent,
            default_runtime_seconds: row.default_runtime_seconds,
            max_runtime_seconds: row.max_runtime_seconds,
            run_as_user: row.run_as_user,
        });
    }
    Ok(out)
}

/// Every queue with its members, capacity and usage.
#[utoipa::path(
    get,
    path = "/api/v1/admin/queues",
    tag = "queues",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every queue by name", body = Vec<AdminQueue>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
    )
)]
async fn admin_list_queues(State(state): State<AppState>) -> ApiResult<Json<Vec<AdminQueue>>> {
    Ok(Json(admin_view(&state, None).await?))
}

/// Creates a queue (in the cluster too, where Anteroom manages queues).
#[utoipa::path(
    post,
    path = "/api/v1/admin/queues",
    tag = "queues",
    security(("bearer" = [])),
    request_body = QueueBody,
    responses(
        (status = 201, description = "Created", body = AdminQueue),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 409, description = "`queue_exists`; `queue_not_in_cluster`", body = ErrorBody),
        (status = 422, description = "`validation_failed`, `queue_cycle`, `parent_not_found`, `capacity_exceeds_parent`, `guarantee_exceeds_parent`, `guarantee_exceeds_capacity`", body = ErrorBody),
    )
)]
async fn create_queue(
    State(state): State<AppState>,
    AuthUser(admin): AuthUser,
    ApiJson(body): ApiJson<QueueBody>,
) -> ApiResult<(StatusCode, Json<AdminQueue>)> {
    let saved = queues::save(&state.db, state.cluster.as_ref(), &body, None, None).await?;
    tracing::info!(queue = %saved.name, by = %admin.username, "queue created");
    state.signals.wake_watcher();
    let view = admin_view(&state, Some(&saved.name)).await?;
    let queue = view
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("queue vanished")))?;
    Ok((StatusCode::CREATED, Json(queue)))
}

/// Replaces a queue: display name, openness, members, parent, capacity and sharing settings
/// (not its name); a field added after the first clients keeps its value when left out.
#[utoipa::path(
    put,
    path = "/api/v1/admin/queues/{name}",
    tag = "queues",
    security(("bearer" = [])),
    params(
        ("name" = String, Path, description = "Queue name"),
        ("If-Match" = Option<String>, Header, description = "The `ETag` of the queue the change was made on"),
    ),
    request_body = QueueBody,
    responses(
        (status = 200, description = "Replaced", body = AdminQueue,
            headers(("ETag" = String, description = "Its new version"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`queue_not_found`", body = ErrorBody),
        (status = 409, description = "`queue_not_in_cluster`", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: changed since the `If-Match` was read; nothing stored", body = ErrorBody),
        (status = 422, description = "`validation_failed`, `queue_cycle`, `parent_not_found`, `capacity_exceeds_parent`, `guarantee_exceeds_parent`, `guarantee_exceeds_capacity`", body = ErrorBody),
    )
)]
async fn replace_queue(
    State(state): State<AppState>,
    AuthUser(admin): AuthUser,
    ApiPath(name): ApiPath<String>,
    IfMatch(if_match): IfMatch,
    ApiJson(body): ApiJson<QueueBody>,
) -> ApiResult<Tagged<AdminQueue>> {
    let saved = queues::save(
        &state.db,
        state.cluster.as_ref(),
        &body,
        Some(&name),
        if_match.as_deref(),
    )
    .await?;
    tracing::info!(queue = %saved.name, by = %admin.username, "queue replaced");
    state.signals.wake_watcher();
    let view = admin_view(&state, Some(&saved.name)).await?;
    let queue = view
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("queue vanished")))?;
    Ok(Tagged::versioned(queues::version(&saved), queue))
}

/// One queue with its members, capacity and usage, and its version (`ETag`) for a change.
#[utoipa::path(
    get,
    path = "/api/v1/admin/queues/{name}",
    tag = "queues",
    security(("bearer" = [])),
    params(("name" = String, Path, description = "Queue name")),
    responses(
        (status = 200, description = "The queue", body = AdminQueue,
            headers(("ETag" = String, description = "Its version: send it back in `If-Match` with a change"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`queue_not_found`", body = ErrorBody),
    )
)]
async fn admin_get_queue(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Tagged<AdminQueue>> {
    // The version first: a write landing between the two reads makes the tag older than the
    // view, so a change made on it is refused rather than let through.
    let row = queues::entity::queue::Entity::find_by_id(name.clone())
        .one(&state.db_read)
        .await?
        .ok_or_else(|| QueueError::NotFound(name.clone()))?;
    let version = queues::version(&row);
    let queue = admin_view(&state, Some(&name))
        .await?
        .into_iter()
        .next()
        .ok_or(QueueError::NotFound(name))?;
    Ok(Tagged::versioned(version, queue))
}

/// Deletes a queue with no children and no unfinished jobs; its quota goes with it.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/queues/{name}",
    tag = "queues",
    security(("bearer" = [])),
    params(("name" = String, Path, description = "Queue name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`queue_not_found`", body = ErrorBody),
        (status = 409, description = "`queue_in_use`, `queue_has_children`, `queue_protected` (default)", body = ErrorBody),
    )
)]
async fn delete_queue(
    State(state): State<AppState>,
    AuthUser(admin): AuthUser,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    queues::delete(&state.db, state.cluster.as_ref(), &name).await?;
    tracing::info!(queue = %name, by = %admin.username, "queue deleted");
    state.signals.wake_watcher();
    Ok(StatusCode::NO_CONTENT)
}

//! The volume catalogue over HTTP: admins write it, users list what their queue may mount.

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::volumes::{Volume, VolumeBody, VolumeChoice};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::VolumeError;
use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult};
use crate::etag::{IfMatch, Tagged};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::queues;
use crate::state::AppState;
use crate::volumes;

/// Routes of every user.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_choices))
}

/// Routes of admins.
pub fn admin_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_volumes, create_volume))
        .routes(routes!(get_volume, replace_volume, delete_volume))
}

impl From<VolumeError> for ApiError {
    fn from(e: VolumeError) -> Self {
        let message = e.to_string();
        match e {
            VolumeError::NotFound(_) => ApiError::not_found("volume_not_found", message),
            VolumeError::Exists(_) => ApiError::new(StatusCode::CONFLICT, "volume_exists", message),
            VolumeError::UnknownQueue(_) => {
                ApiError::not_found("queue_not_found", message).with_details(serde_json::json!({ "field": "queues" }))
            }
            VolumeError::Invalid(problems) => ApiError::from_problems(problems),
            VolumeError::Stale(tag) => crate::etag::stale(&tag),
            VolumeError::Db(e) => e.into(),
        }
    }
}

/// `?queue=` of the volume list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ChoiceQuery {
    /// A queue the caller may use (`default` when absent).
    queue: Option<String>,
}

/// The volumes a job in this queue may mount (the picker of the submit form); their sources
/// stay with the admins.
#[utoipa::path(
    get,
    path = "/api/v1/volumes",
    tag = "volumes",
    security(("bearer" = [])),
    params(ChoiceQuery),
    responses(
        (status = 200, description = "The volumes offered to the queue, by name", body = Vec<VolumeChoice>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`queue_forbidden`", body = ErrorBody),
        (status = 404, description = "`queue_not_found`", body = ErrorBody),
    )
)]
async fn list_choices(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiQuery(query): ApiQuery<ChoiceQuery>,
) -> ApiResult<Json<Vec<VolumeChoice>>> {
    let queue = query.queue.unwrap_or_else(|| queues::DEFAULT_QUEUE.to_string());
    queues::usable(&state.db_read, &user, &queue).await?;
    let (_, tree) = queues::tree(&state.db_read).await?;
    let path = tree.names_to_root(&queue);
    let choices = volumes::list(&state.db_read)
        .await?
        .iter()
        .filter(|v| v.allows(&path))
        .map(VolumeChoice::of)
        .collect();
    Ok(Json(choices))
}

/// Every volume of the catalogue.
#[utoipa::path(
    get,
    path = "/api/v1/admin/volumes",
    tag = "volumes",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every volume by name", body = Vec<Volume>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
    )
)]
async fn list_volumes(State(state): State<AppState>) -> ApiResult<Json<Vec<Volume>>> {
    Ok(Json(volumes::list(&state.db_read).await?))
}

/// Adds a volume to the catalogue.
#[utoipa::path(
    post,
    path = "/api/v1/admin/volumes",
    tag = "volumes",
    security(("bearer" = [])),
    request_body = VolumeBody,
    responses(
        (status = 201, description = "Created", body = Volume),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`queue_not_found`: `queues` names an unknown queue", body = ErrorBody),
        (status = 409, description = "`volume_exists`", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields", body = ErrorBody),
    )
)]
async fn create_volume(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<VolumeBody>,
) -> ApiResult<(StatusCode, Json<Volume>)> {
    Ok((
        StatusCode::CREATED,
        Json(volumes::save(&state.db, &body, None, None).await?),
    ))
}

/// One volume of the catalogue, and its version (`ETag`) for a change.
#[utoipa::path(
    get,
    path = "/api/v1/admin/volumes/{name}",
    tag = "volumes",
    security(("bearer" = [])),
    params(("name" = String, Path, description = "Volume name")),
    responses(
        (status = 200, description = "The volume", body = Volume,
            headers(("ETag" = String, description = "Its version: send it back in `If-Match` with a change"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`volume_not_found`", body = ErrorBody),
    )
)]
async fn get_volume(State(state): State<AppState>, ApiPath(name): ApiPath<String>) -> ApiResult<Tagged<Volume>> {
    Ok(Tagged::new(volumes::get(&state.db_read, &name).await?))
}

/// Replaces a volume (its name stays); jobs already submitted keep what they mount.
#[utoipa::path(
    put,
    path = "/api/v1/admin/volumes/{name}",
    tag = "volumes",
    security(("bearer" = [])),
    params(
        ("name" = String, Path, description = "Volume name"),
        ("If-Match" = Option<String>, Header, description = "The `ETag` of the volume the change was made on"),
    ),
    request_body = VolumeBody,
    responses(
        (status = 200, description = "Replaced", body = Volume,
            headers(("ETag" = String, description = "Its new version"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`volume_not_found`; `queue_not_found`", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: changed since the `If-Match` was read; nothing stored", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields (also a changed name)", body = ErrorBody),
    )
)]
async fn replace_volume(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    IfMatch(if_match): IfMatch,
    ApiJson(body): ApiJson<VolumeBody>,
) -> ApiResult<Tagged<Volume>> {
    Ok(Tagged::new(
        volumes::save(&state.db, &body, Some(&name), if_match.as_deref()).await?,
    ))
}

/// Removes a volume from the catalogue; jobs that mount it keep it.
#[utoipa::path(
    delete,
    path = "/api/v1/admin/volumes/{name}",
    tag = "volumes",
    security(("bearer" = [])),
    params(("name" = String, Path, description = "Volume name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`volume_not_found`", body = ErrorBody),
    )
)]
async fn delete_volume(State(state): State<AppState>, ApiPath(name): ApiPath<String>) -> ApiResult<StatusCode> {
    volumes::delete(&state.db, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

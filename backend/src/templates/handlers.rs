//! Templates over HTTP: every signed-in user keeps their own and reads the published ones;
//! what an admin may do more is decided by [`super::access`], not by where a route is mounted
//! (the same routes serve both).

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::templates::{JobTemplate, KindDefault, TemplateWrite};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{Caller, TemplateError};
use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult};
use crate::etag::{IfMatch, Tagged};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use crate::templates;

/// Routes of every user.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_templates, create_template))
        .routes(routes!(get_template, replace_template, delete_template))
        .routes(routes!(job_defaults))
}

impl From<TemplateError> for ApiError {
    fn from(e: TemplateError) -> Self {
        let message = e.to_string();
        match e {
            TemplateError::NotFound(_) => ApiError::not_found("template_not_found", message),
            TemplateError::Exists(_) => ApiError::new(StatusCode::CONFLICT, "template_exists", message)
                .with_details(serde_json::json!({ "field": "name" })),
            TemplateError::Limit => ApiError::new(StatusCode::CONFLICT, "template_limit", message)
                .with_details(serde_json::json!({ "limit": templates::MAX_TEMPLATES_PER_OWNER })),
            TemplateError::Forbidden(why) => ApiError::forbidden(why),
            TemplateError::Invalid(problems) => ApiError::from_problems(problems),
            TemplateError::Stale(tag) => crate::etag::stale(&tag),
            TemplateError::Db(e) => e.into(),
        }
    }
}

/// The caller's templates and every published one, by name.
#[utoipa::path(
    get,
    path = "/api/v1/templates",
    tag = "templates",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller's own templates and every published one, by name then id", body = Vec<JobTemplate>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
    )
)]
async fn list_templates(State(state): State<AppState>, user: AuthUser) -> ApiResult<Json<Vec<JobTemplate>>> {
    Ok(Json(templates::list(&state.db_read, Caller::from(&user)).await?))
}

/// Saves a job body without its name as a template of the caller's.
#[utoipa::path(
    post,
    path = "/api/v1/templates",
    tag = "templates",
    security(("bearer" = [])),
    request_body = TemplateWrite,
    responses(
        (status = 201, description = "Created, owned by the caller", body = JobTemplate),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: `published` or `defaultForKind` without the admin role", body = ErrorBody),
        (status = 409, description = "`template_exists`: the caller has a template of that name; `template_limit`: the caller has 100 templates", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields (the body's under `body.`, by a submission's rules)", body = ErrorBody),
    )
)]
async fn create_template(
    State(state): State<AppState>,
    user: AuthUser,
    ApiJson(write): ApiJson<TemplateWrite>,
) -> ApiResult<(StatusCode, Json<JobTemplate>)> {
    let defaults = state.settings.current().default_requests;
    let saved = templates::save(&state.db, Caller::from(&user), &write, None, &defaults, None).await?;
    Ok((StatusCode::CREATED, Json(saved)))
}

/// One template: the caller's own, a published one, or (admins) any.
#[utoipa::path(
    get,
    path = "/api/v1/templates/{id}",
    tag = "templates",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Template id")),
    responses(
        (status = 200, description = "The template", body = JobTemplate,
            headers(("ETag" = String, description = "Its version: send it back in `If-Match` with a change"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 404, description = "`template_not_found`: none, or someone else's unpublished one", body = ErrorBody),
        (status = 422, description = "`validation_failed`: the id is not a number", body = ErrorBody),
    )
)]
async fn get_template(
    State(state): State<AppState>,
    user: AuthUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Tagged<JobTemplate>> {
    Ok(Tagged::new(
        templates::get(&state.db_read, Caller::from(&user), id).await?,
    ))
}

/// Replaces a template as a whole (its owner stays): the owner's own unpublished one, or any
/// for an admin.
#[utoipa::path(
    put,
    path = "/api/v1/templates/{id}",
    tag = "templates",
    security(("bearer" = [])),
    params(
        ("id" = i64, Path, description = "Template id"),
        ("If-Match" = Option<String>, Header, description = "The `ETag` of the template the change was made on"),
    ),
    request_body = TemplateWrite,
    responses(
        (status = 200, description = "Replaced", body = JobTemplate,
            headers(("ETag" = String, description = "Its new version"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: a published template and no admin role, or `published`/`defaultForKind` without it", body = ErrorBody),
        (status = 404, description = "`template_not_found`", body = ErrorBody),
        (status = 409, description = "`template_exists`: the owner has another template of that name", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: changed since the `If-Match` was read; nothing stored", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields (the body's under `body.`), or the id is not a number", body = ErrorBody),
    )
)]
async fn replace_template(
    State(state): State<AppState>,
    user: AuthUser,
    ApiPath(id): ApiPath<i64>,
    IfMatch(if_match): IfMatch,
    ApiJson(write): ApiJson<TemplateWrite>,
) -> ApiResult<Tagged<JobTemplate>> {
    let defaults = state.settings.current().default_requests;
    Ok(Tagged::new(
        templates::save(
            &state.db,
            Caller::from(&user),
            &write,
            Some(id),
            &defaults,
            if_match.as_deref(),
        )
        .await?,
    ))
}

/// Deletes a template; jobs submitted from it keep running.
#[utoipa::path(
    delete,
    path = "/api/v1/templates/{id}",
    tag = "templates",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Template id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: a published template and no admin role", body = ErrorBody),
        (status = 404, description = "`template_not_found`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: the id is not a number", body = ErrorBody),
    )
)]
async fn delete_template(
    State(state): State<AppState>,
    user: AuthUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<StatusCode> {
    templates::delete(&state.db, Caller::from(&user), id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The template the submission form starts from, per kind that has one.
#[utoipa::path(
    get,
    path = "/api/v1/job-defaults",
    tag = "templates",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The published default of each kind that has one, in the kinds' order", body = Vec<KindDefault>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
    )
)]
async fn job_defaults(State(state): State<AppState>) -> ApiResult<Json<Vec<KindDefault>>> {
    Ok(Json(templates::defaults(&state.db_read).await?))
}

//! Jobs over HTTP (`spec/api.md` "Jobs", and the caller's resource summary and limit check).
//! Thin: parse, authorise, call the service, map its errors to statuses and stable codes.

use anteroom_shared::api::jobs::{
    Job, JobBody, JobDetail, LimitCheck, LimitCheckBody, LockBody, PrequeuedJob, Preview, ResubmitBody, SubmitResponse,
};
use anteroom_shared::api::prequeue::ResourceSummary;
use anteroom_shared::api::{ErrorBody, Page};
use anteroom_shared::scheduling::{JobKind, TaskResourceError};
use axum::Json;
use axum::extract::{FromRequest, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::JobError;
use super::context::context;
use super::list_query::{JobListParams, JobListQuery};
use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::field_rule::Rule;
use crate::http::paging::{PageQuery, PageRequest};
use crate::prequeue::SubmitRejection;
use crate::state::AppState;
use crate::{jobs, queues};

/// The header of idempotent submits.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Routes of every user.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(submit_job, list_jobs))
        .routes(routes!(preview_job))
        .routes(routes!(get_job, delete_job))
        .routes(routes!(super::bulk::delete_jobs))
        .routes(routes!(super::diagnosis::job_pods))
        .routes(routes!(super::diagnosis::job_logs))
        .routes(routes!(super::ahead::jobs_ahead))
        .routes(routes!(resubmit_job))
        .routes(routes!(super::stream::job_events_stream))
        .routes(routes!(resource_summary))
        .routes(routes!(resource_limit_check))
}

/// Routes of admins.
pub fn admin_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(admin_list_jobs))
        .routes(routes!(lock_job))
        .routes(routes!(super::bulk::lock_jobs))
        .routes(routes!(admin_prequeue))
}

impl From<JobError> for ApiError {
    fn from(e: JobError) -> Self {
        let message = e.to_string();
        match e {
            JobError::Invalid(problems) => ApiError::from_problems(problems),
            JobError::ImageNotAllowed(problems) => {
                let message = match problems.first() {
                    Some((field, problem)) if problems.len() == 1 => format!("{field}: the image {problem}"),
                    _ => format!("{} images are not allowed", problems.len()),
                };
                let fields: Vec<FieldError> = problems
                    .into_iter()
                    .map(|(field, problem)| FieldError::new(field, problem))
                    .collect();
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "image_not_allowed", message)
                    .with_details(serde_json::json!({ "fields": fields }))
            }
            JobError::Queue(e) => e.into(),
            JobError::Rejected(rejection) => rejection_error(&rejection),
            JobError::NotFound(_) => ApiError::not_found("job_not_found", message),
            JobError::AlreadyFinished(_, phase) => ApiError::new(StatusCode::CONFLICT, "already_finished", message)
                .with_details(serde_json::json!({ "phase": phase })),
            JobError::IdempotencyKeyReused => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused", message)
            }
            JobError::InvalidIdempotencyKey(problem) => {
                ApiError::validation(vec![FieldError::new("Idempotency-Key", problem)])
            }
            JobError::Cluster(e) => e.into(),
            JobError::Db(e) => e.into(),
            JobError::VolumeForbidden(name) => ApiError::new(StatusCode::FORBIDDEN, "volume_forbidden", message)
                .with_details(serde_json::json!({ "volume": name })),
            JobError::Timeout => {
                let mut e = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "timeout", message);
                e.retry_after_seconds = Some(1);
                e
            }
        }
    }
}

/// The core's refusals (`spec/prequeue.md` §4 steps 1–6) with their statuses.
fn rejection_error(rejection: &SubmitRejection) -> ApiError {
    let details = rejection.details();
    match rejection {
        SubmitRejection::InvalidResources(_) | SubmitRejection::UnknownNode { .. } => {
            let field = details["field"].as_str().unwrap_or("tasks").to_string();
            let message = details["message"].as_str().unwrap_or("invalid").to_string();
            let rule = match rejection {
                SubmitRejection::UnknownNode { node, .. } => {
                    Rule::with("unknownNode", message, serde_json::json!({ "node": node }))
                }
                SubmitRejection::InvalidResources(TaskResourceError::Negative { .. }) => {
                    Rule::coded("negativeRequest", message)
                }
                _ => Rule::coded("requestOutOfRange", message),
            };
            ApiError::validation(vec![FieldError::new(field, rule)])
        }
        _ => {
            let status = match rejection {
                SubmitRejection::BackfillDisabled => StatusCode::CONFLICT,
                SubmitRejection::PrequeueFull { .. } | SubmitRejection::TooManyUnfinishedJobs { .. } => {
                    StatusCode::TOO_MANY_REQUESTS
                }
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            let error = ApiError::new(status, rejection.code(), rejection.to_string());
            if details.is_null() {
                error
            } else {
                error.with_details(details)
            }
        }
    }
}

/// Submits a job: validated, checked against the queue, the cluster's capacity, the quota and
/// the queue tree's capacities, then activated at once or prequeued — the answer says which and
/// why. With an `Idempotency-Key`, a retry of the same body answers the first answer again.
#[utoipa::path(
    post,
    path = "/api/v1/jobs",
    tag = "jobs",
    security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "Repeat-safe submit: the same key and body within 24 h answer the first answer")),
    request_body = JobBody,
    responses(
        (status = 201, description = "Accepted: activated or prequeued", body = SubmitResponse, headers(("Idempotent-Replayed" = String, description = "`true` when the answer repeats the first answer to this `Idempotency-Key`: nothing was created"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`queue_forbidden`; `volume_forbidden`: a volume the body names is not offered to its queue", body = ErrorBody),
        (status = 404, description = "`queue_not_found`", body = ErrorBody),
        (status = 409, description = "`backfill_disabled`", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming the fields; `image_not_allowed` naming each `tasks[i].image` outside the allowed image prefixes (setting allowed_images); `backfill_kind_unsupported`; `unschedulable`; `quota_request_exceeds_limit`; `request_exceeds_queue_capacity`; `request_exceeds_queue_job_limit`; `priority_out_of_range`; `idempotency_key_reused`", body = ErrorBody),
        (status = 429, description = "`prequeue_full`; `too_many_unfinished_jobs`", body = ErrorBody),
    )
)]
async fn submit_job(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    headers: HeaderMap,
    request: axum::extract::Request,
) -> ApiResult<Response> {
    // The generic request deadline skips this route (a job admitted must be answered as
    // admitted), so the body is read within it here: a client that sends the header and never
    // its body must not hold a connection.
    let body: JobBody = read_in_time(&state, request).await?;
    let submitted = jobs::submit(context(&state), &user, &body, idempotency_key(&headers)?).await?;
    Ok(submitted_answer(submitted))
}

/// 201 with the answer; a repeated `Idempotency-Key` also says `Idempotent-Replayed: true`
/// (nothing was created this time).
fn submitted_answer(submitted: jobs::Submitted) -> Response {
    let mut response = (StatusCode::CREATED, Json(submitted.response)).into_response();
    if submitted.replayed {
        response.headers_mut().insert(
            axum::http::HeaderName::from_static(anteroom_shared::api::jobs::IDEMPOTENT_REPLAYED_HEADER),
            axum::http::HeaderValue::from_static("true"),
        );
    }
    response
}

/// A JSON body read within `request_timeout_seconds` (503 `timeout` past it), for the routes
/// the generic deadline skips.
async fn read_in_time<T: serde::de::DeserializeOwned>(
    state: &AppState,
    request: axum::extract::Request,
) -> ApiResult<T> {
    let read = ApiJson::<T>::from_request(request, state);
    let ApiJson(body) = tokio::time::timeout(state.config.http_limits.request_timeout, read)
        .await
        .map_err(|_| crate::http::deadline::out_of_time())??;
    Ok(body)
}

/// The `Idempotency-Key` header, if sent.
fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<&str>> {
    match headers.get(IDEMPOTENCY_KEY) {
        Some(value) => Ok(Some(value.to_str().map_err(|_| {
            ApiError::validation(vec![FieldError::new("Idempotency-Key", "must be visible ASCII")])
        })?)),
        None => Ok(None),
    }
}

/// Runs a job again: a new job from its body (`{}`: as it was) under the next run name
/// (`train` → `train-r2`), with the changes the body gives, submitted by the caller exactly as
/// `POST /api/v1/jobs` would be — the same checks, answers and `Idempotency-Key`. Tolerations and
/// volumes are worked out again from today's rules and catalogue.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{id}/resubmit",
    tag = "jobs",
    security(("bearer" = [])),
    params(
        ("id" = i64, Path, description = "The job to run again"),
        ("Idempotency-Key" = Option<String>, Header, description = "Repeat-safe submit, as for POST /api/v1/jobs"),
    ),
    request_body = ResubmitBody,
    responses(
        (status = 201, description = "The new job: activated or prequeued", body = SubmitResponse, headers(("Idempotent-Replayed" = String, description = "`true` when the answer repeats the first answer to this `Idempotency-Key`: nothing was created"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`queue_forbidden`; `volume_forbidden`; `interactive_job_of_another_user`: an admin cannot run another user's notebook (jupyter, webide) as their own", body = ErrorBody),
        (status = 404, description = "`job_not_found`; `queue_not_found`", body = ErrorBody),
        (status = 409, description = "`backfill_disabled`", body = ErrorBody),
        (status = 422, description = "As for POST /api/v1/jobs: `validation_failed` naming the fields of the new body, and the admission refusals", body = ErrorBody),
        (status = 429, description = "`prequeue_full`; `too_many_unfinished_jobs`", body = ErrorBody),
    )
)]
async fn resubmit_job(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiPath(id): ApiPath<i64>,
    headers: HeaderMap,
    request: axum::extract::Request,
) -> ApiResult<Response> {
    let changes: ResubmitBody = read_in_time(&state, request).await?;
    let old = tokio::time::timeout(
        state.config.http_limits.request_timeout,
        jobs::visible(&state.db_read, &user, id),
    )
    .await
    .map_err(|_| crate::http::deadline::out_of_time())??;
    let body = changes.apply_to(&jobs::to_api(&old)?);
    // A notebook made from another user's job would be the caller's own, opened with their
    // session and running that user's image and settings: an admin helping must open the
    // user's notebook (as an admin, confirmed), never run it as themselves.
    if old.owner_id != user.id && matches!(body.kind, JobKind::Jupyter | JobKind::Webide) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "interactive_job_of_another_user",
            format!("job {id} is {}'s notebook: only they can run it again", old.owner_name),
        )
        .with_details(serde_json::json!({ "owner": old.owner_name })));
    }
    let submitted = jobs::submit(context(&state), &user, &body, idempotency_key(&headers)?).await?;
    Ok(submitted_answer(submitted))
}

/// What a submission would do now (steps 1–7): the decision, its reasons and the caller's
/// quota against this request. Nothing is written.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/preview",
    tag = "jobs",
    security(("bearer" = [])),
    request_body = JobBody,
    responses(
        (status = 200, description = "The decision a submit would get now", body = Preview),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`queue_forbidden`; `volume_forbidden`: a volume the body names is not offered to its queue", body = ErrorBody),
        (status = 404, description = "`queue_not_found`", body = ErrorBody),
        (status = 409, description = "`backfill_disabled`", body = ErrorBody),
        (status = 422, description = "as for a submit: `validation_failed` naming the fields; `image_not_allowed` naming each `tasks[i].image` outside the allowed image prefixes (setting allowed_images); `backfill_kind_unsupported`; `unschedulable`; `quota_request_exceeds_limit`; `request_exceeds_queue_capacity`; `request_exceeds_queue_job_limit`; `priority_out_of_range`", body = ErrorBody),
        (status = 429, description = "`prequeue_full`; `too_many_unfinished_jobs`", body = ErrorBody),
    )
)]
async fn preview_job(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiJson(body): ApiJson<JobBody>,
) -> ApiResult<Json<Preview>> {
    Ok(Json(jobs::preview(context(&state), &user, &body).await?))
}

fn page_of<T>(items: Vec<T>, total: u64, page: PageRequest) -> Page<T> {
    Page {
        items,
        total,
        page: page.page,
        page_size: page.page_size,
    }
}

/// The caller's own jobs, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/jobs",
    tag = "jobs",
    security(("bearer" = [])),
    params(JobListParams),
    responses(
        (status = 200, description = "One page of the caller's jobs", body = Page<Job>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: a filter or the page is out of range", body = ErrorBody),
    )
)]
async fn list_jobs(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    query: JobListQuery,
) -> ApiResult<Response> {
    let mut filter = query.filter;
    filter.users.clear();
    filter.owner = Some(user.id);
    job_page(&state, &filter, query.page, query.standing).await
}

/// One page of jobs as `Page<Job>`: written by SQLite itself ([`jobs::list_json`]), or read
/// into rows and serialised here (PostgreSQL, or with each waiting job's `standing`).
async fn job_page(
    state: &AppState,
    filter: &jobs::JobFilter,
    page: PageRequest,
    standing: bool,
) -> ApiResult<Response> {
    if standing {
        let (mut items, total) = jobs::list(&state.db_read, filter, page.offset(), page.page_size).await?;
        // The board only for a page that shows a waiting job (a list of finished jobs asks for
        // nothing more than a plain one).
        if items
            .iter()
            .any(|j| j.phase == anteroom_shared::scheduling::JobPhase::Prequeue)
        {
            let board = state.forecasts.current(&state.db_read).await?;
            jobs::attach_standings(&state.db_read, &mut items, board.as_deref()).await?;
        }
        return Ok(Json(page_of(items, total, page)).into_response());
    }
    if let Some(json) = jobs::list_json(&state.db_read, filter, page.page, page.page_size).await? {
        return Ok(([(axum::http::header::CONTENT_TYPE, "application/json")], json).into_response());
    }
    let (items, total) = jobs::list(&state.db_read, filter, page.offset(), page.page_size).await?;
    Ok(Json(page_of(items, total, page)).into_response())
}

/// Every job, newest first; filters as for a user's list plus `user`.
#[utoipa::path(
    get,
    path = "/api/v1/admin/jobs",
    tag = "jobs",
    security(("bearer" = [])),
    params(
        JobListParams,
        ("user" = Option<Vec<String>>, Query, description = "Owners by username (any of; at most 32).", max_items = 32),
    ),
    responses(
        (status = 200, description = "One page of jobs", body = Page<Job>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 422, description = "`validation_failed`: a filter or the page is out of range", body = ErrorBody),
    )
)]
async fn admin_list_jobs(State(state): State<AppState>, query: JobListQuery) -> ApiResult<Response> {
    job_page(&state, &query.filter, query.page, query.standing).await
}

/// A job with its timeline and, while prequeued, its position and reasons. Another user's job
/// is 404, as if it did not exist.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}",
    tag = "jobs",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Job id")),
    responses(
        (status = 200, description = "The job", body = JobDetail),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 404, description = "`job_not_found`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: the id is not a number", body = ErrorBody),
    )
)]
async fn get_job(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<JobDetail>> {
    let board = state.forecasts.current(&state.db_read).await?;
    let detail = jobs::detail(&state.db_read, &user, id, board.as_deref()).await?;
    let covered =
        |b: &Option<std::sync::Arc<crate::forecasts::Board>>| b.as_ref().is_some_and(|b| b.jobs.contains_key(&id));
    if detail.prequeue.is_none() || covered(&board) {
        return Ok(Json(detail));
    }
    // Just submitted: its forecast follows within a second; wait for it rather than answer a
    // standing the next read contradicts.
    let board = state
        .forecasts
        .covering(&state.db_read, id, crate::forecasts::STANDING_WAIT)
        .await?;
    if !covered(&board) {
        return Ok(Json(detail));
    }
    Ok(Json(jobs::detail(&state.db_read, &user, id, board.as_deref()).await?))
}

/// Deletes a job: a prequeued one never reaches the cluster; any other unfinished one is
/// deleted there. Wakes the watcher.
#[utoipa::path(
    delete,
    path = "/api/v1/jobs/{id}",
    tag = "jobs",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Job id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 404, description = "`job_not_found`", body = ErrorBody),
        (status = 409, description = "`already_finished`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: the id is not a number", body = ErrorBody),
    )
)]
async fn delete_job(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<StatusCode> {
    // Detached: the cluster delete and the write that records it run to the end even when the
    // request is cut short (its deadline, a client that hangs up), so a job is never left
    // deleted in the cluster but unfinished in the store.
    let task = tokio::spawn(async move { jobs::delete(context(&state), &user, id).await });
    task.await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("the delete task failed: {e}")))??;
    Ok(StatusCode::NO_CONTENT)
}

/// Locks a job against preemption until a time, or unlocks it (`null`).
#[utoipa::path(
    put,
    path = "/api/v1/admin/jobs/{id}/lock",
    tag = "jobs",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Job id")),
    request_body = LockBody,
    responses(
        (status = 200, description = "The job with its lock", body = Job),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 404, description = "`job_not_found`", body = ErrorBody),
        (status = 409, description = "`already_finished`", body = ErrorBody),
        (status = 422, description = "`validation_failed`", body = ErrorBody),
    )
)]
async fn lock_job(
    State(state): State<AppState>,
    AuthUser(admin): AuthUser,
    ApiPath(id): ApiPath<i64>,
    ApiJson(body): ApiJson<LockBody>,
) -> ApiResult<Json<Job>> {
    Ok(Json(jobs::lock(context(&state), &admin, id, body.until).await?))
}

/// Every prequeued job in submission order, with its position in its queue and its reasons.
#[utoipa::path(
    get,
    path = "/api/v1/admin/prequeue",
    tag = "prequeue",
    security(("bearer" = [])),
    params(PageQuery),
    responses(
        (status = 200, description = "One page of prequeued jobs", body = Page<PrequeuedJob>),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 422, description = "`validation_failed`: page out of range", body = ErrorBody),
    )
)]
async fn admin_prequeue(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Page<PrequeuedJob>>> {
    let page = query.validate()?;
    let (mut items, total) = jobs::prequeued(&state.db_read, page.offset(), page.page_size).await?;
    // The order the prequeue follows (fair share included) where the forecast covers a job.
    if let Some(board) = state.forecasts.current(&state.db_read).await? {
        for item in &mut items {
            if let Some(entry) = board.jobs.get(&item.job.id) {
                item.position = entry.rank as u64 + 1;
            }
        }
    }
    Ok(Json(page_of(items, total, page)))
}

/// `?queue=` of the resource summary.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct SummaryQuery {
    /// A queue the caller may use (`default` when absent).
    queue: Option<String>,
}

/// The caller's jobs and resources in one queue against the quota, plus the capacity and
/// usage of the queue and each ancestor with a capacity (`spec/prequeue.md` §7).
#[utoipa::path(
    get,
    path = "/api/v1/me/resource-summary",
    tag = "prequeue",
    security(("bearer" = [])),
    params(SummaryQuery),
    responses(
        (status = 200, description = "The summary", body = ResourceSummary),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`queue_forbidden`", body = ErrorBody),
        (status = 404, description = "`queue_not_found`", body = ErrorBody),
    )
)]
async fn resource_summary(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiQuery(query): ApiQuery<SummaryQuery>,
) -> ApiResult<Json<ResourceSummary>> {
    let queue = query.queue.unwrap_or_else(|| queues::DEFAULT_QUEUE.to_string());
    queues::usable(&state.db_read, &user, &queue).await?;
    let summary = jobs::summary::resource_summary(&state.db_read, state.settings.current(), user.id, &queue).await?;
    Ok(Json(summary))
}

/// The caller's usage plus a request against the queue's quota.
#[utoipa::path(
    post,
    path = "/api/v1/me/resource-limit-check",
    tag = "prequeue",
    security(("bearer" = [])),
    request_body = LimitCheckBody,
    responses(
        (status = 200, description = "Each limited resource", body = LimitCheck),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`queue_forbidden`", body = ErrorBody),
        (status = 404, description = "`queue_not_found`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: a negative quantity", body = ErrorBody),
    )
)]
async fn resource_limit_check(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiJson(body): ApiJson<LimitCheckBody>,
) -> ApiResult<Json<LimitCheck>> {
    if let Some((name, _)) = body.resources.iter().find(|(_, q)| q.milli() < 0) {
        return Err(ApiError::validation(vec![FieldError::new(
            format!("resources.{name}"),
            "must be zero or more",
        )]));
    }
    queues::usable(&state.db_read, &user, &body.queue).await?;
    let check = jobs::summary::limit_check(
        &state.db_read,
        state.settings.current(),
        user.id,
        &body.queue,
        &body.resources,
    )
    .await?;
    Ok(Json(check))
}

//! Several jobs at once: `POST /api/v1/jobs/delete` and `PUT /api/v1/admin/jobs/lock`, each job
//! done as its own request would do it (the same rules and errors), a few at a time, and the
//! answer saying which were done and why the others were not.

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::jobs::{BulkDeleteBody, BulkFailure, BulkLockBody, BulkResult, MAX_BULK_JOBS};
use axum::Json;
use axum::extract::State;

use super::JobError;
use super::context::context;
use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::ApiJson;
use crate::jobs;
use crate::state::AppState;

/// The ids of a bulk request, each once in the order first named: 1 to [`MAX_BULK_JOBS`].
fn bulk_ids(ids: Vec<i64>) -> Result<Vec<i64>, ApiError> {
    let problem = if ids.is_empty() {
        Some("name at least one job".to_owned())
    } else if ids.len() > MAX_BULK_JOBS {
        Some(format!("at most {MAX_BULK_JOBS} jobs at once; got {}", ids.len()))
    } else {
        None
    };
    if let Some(message) = problem {
        return Err(ApiError::validation(vec![FieldError::new("ids", message)]));
    }
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    Ok(ids.into_iter().filter(|id| seen.insert(*id)).collect())
}

/// How many jobs of a bulk request are worked on at once.
const BULK_AT_ONCE: usize = 8;

/// Each id through `one`, in order, to the end: what it changed, and each refusal with the
/// code and message its own request would have answered.
async fn each_job<F, Fut, T>(ids: Vec<i64>, one: F) -> BulkResult
where
    F: Fn(i64) -> Fut,
    Fut: std::future::Future<Output = Result<T, JobError>>,
{
    use futures::StreamExt;
    let mut result = BulkResult {
        done: Vec::with_capacity(ids.len()),
        failed: Vec::new(),
    };
    // A few at a time (each may wait on the cluster), answered in the order given.
    let mut outcomes = futures::stream::iter(ids)
        .map(|id| {
            let run = one(id);
            async move { (id, run.await) }
        })
        .buffered(BULK_AT_ONCE);
    while let Some((id, outcome)) = outcomes.next().await {
        match outcome {
            Ok(_) => result.done.push(id),
            Err(e) => {
                let e = ApiError::from(e);
                if e.status.is_server_error() {
                    tracing::error!(job = id, code = e.code, error = %e.message, "a job of a bulk request failed");
                }
                result.failed.push(BulkFailure {
                    id,
                    code: e.code.to_owned(),
                    message: e.message,
                });
            }
        }
    }
    result
}

/// Deletes several jobs, each as `DELETE /api/v1/jobs/{id}` would (the caller's own; an
/// admin's, any): a sweep of fifty is one request and one confirmation, not fifty. Each job
/// is deleted or refused on its own; the answer says which.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/delete",
    tag = "jobs",
    security(("bearer" = [])),
    request_body = BulkDeleteBody,
    responses(
        (status = 200, description = "The jobs deleted, and each other one with its error (`job_not_found`, `already_finished`)", body = BulkResult),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: no ids, or more than 500", body = ErrorBody),
    )
)]
pub(super) async fn delete_jobs(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiJson(body): ApiJson<BulkDeleteBody>,
) -> ApiResult<Json<BulkResult>> {
    let ids = bulk_ids(body.ids)?;
    // Detached, as one delete is: a client that hangs up does not stop it halfway through a
    // job.
    let task = tokio::spawn(async move {
        let state = &state;
        let user = &user;
        each_job(ids, |id| jobs::delete(context(state), user, id)).await
    });
    let result = task
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("the delete task failed: {e}")))?;
    Ok(Json(result))
}

/// Locks several jobs against preemption until a time, or unlocks them (`null`), each as
/// `PUT /api/v1/admin/jobs/{id}/lock` would.
#[utoipa::path(
    put,
    path = "/api/v1/admin/jobs/lock",
    tag = "jobs",
    security(("bearer" = [])),
    request_body = BulkLockBody,
    responses(
        (status = 200, description = "The jobs locked (or unlocked), and each other one with its error (`job_not_found`, `already_finished`)", body = BulkResult),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 422, description = "`validation_failed`: no ids, or more than 500", body = ErrorBody),
    )
)]
pub(super) async fn lock_jobs(
    State(state): State<AppState>,
    AuthUser(admin): AuthUser,
    ApiJson(body): ApiJson<BulkLockBody>,
) -> ApiResult<Json<BulkResult>> {
    let ids = bulk_ids(body.ids)?;
    // Detached, as the deletes are: a client that hangs up does not stop it halfway.
    let task = tokio::spawn(async move {
        let until = body.until;
        let state = &state;
        let admin = &admin;
        each_job(ids, |id| jobs::lock(context(state), admin, id, until)).await
    });
    let result = task
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("the lock task failed: {e}")))?;
    Ok(Json(result))
}

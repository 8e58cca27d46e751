//! What is ahead of a waiting job (`GET /api/v1/jobs/{id}/ahead`, issue 27) and where it
//! stands in the order the prequeue really follows: both read from the watcher's forecast
//! board ([`crate::forecasts`]), not from submission times — under fair share the order is the
//! DRF walk's.
//!
//! Another user's job ahead shows what it asks for, when it was submitted, why it waits and
//! when it may start; its id, name and owner are shown only to admins and its own owner, and of its reasons
//! only their codes (their figures are that user's quota and usage). Each job's reasons are
//! the stored ones (read for the page's jobs only).

use std::collections::HashMap;

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::jobs::{AheadJob, JobsAhead, WaitReason};
use anteroom_shared::scheduling::JobPhase;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};
use serde::Deserialize;

use super::entity::job;
use super::{phase_of, reads};
use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::{ApiPath, ApiQuery};
use crate::forecasts::Board;
use crate::state::AppState;

/// The most jobs ahead one answer lists.
pub const MAX_AHEAD_LIMIT: u32 = 500;

/// How many jobs ahead to list.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AheadQuery {
    /// The first this many (1–500, default 50), the next to be considered first.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
}

/// The waiting jobs of its queue that the prequeue will consider before this one, under the
/// active activation order, each with its resources, reasons and start estimate.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/ahead",
    tag = "jobs",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Job id"), AheadQuery),
    responses(
        (status = 200, description = "The jobs ahead", body = JobsAhead),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 404, description = "`job_not_found`", body = ErrorBody),
        (status = 409, description = "`job_not_waiting`: it is not in the prequeue", body = ErrorBody),
        (status = 422, description = "`validation_failed`: a bad parameter", body = ErrorBody),
    )
)]
pub async fn jobs_ahead(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiPath(id): ApiPath<i64>,
    ApiQuery(query): ApiQuery<AheadQuery>,
) -> ApiResult<Json<JobsAhead>> {
    let limit = query.limit.unwrap_or(50);
    if !(1..=MAX_AHEAD_LIMIT).contains(&limit) {
        return Err(ApiError::validation(vec![FieldError::new(
            "limit",
            format!("must be 1–{MAX_AHEAD_LIMIT}"),
        )]));
    }
    let row = reads::visible(&state.db_read, &user, id).await?;
    if phase_of(&row)? != JobPhase::Prequeue {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "job_not_waiting",
            format!("job {id} is not waiting in the prequeue"),
        ));
    }
    // The leader's board as stored, the same on every replica; a job just submitted waits for
    // the forecast its submission woke.
    let board = state
        .forecasts
        .covering(&state.db_read, id, crate::forecasts::STANDING_WAIT)
        .await?;
    let Some(board) = board else {
        // No leader ever forecast (none is running): the submission order, nothing listed.
        return Ok(Json(JobsAhead {
            job_id: id,
            order: anteroom_shared::scheduling::ActivationOrder::Fcfs,
            position: super::reads::position(&state.db_read, &row).await?,
            total: 0,
            items: Vec::new(),
            computed_at: state.clock.now(),
        }));
    };
    let ahead = match board.ahead_of(id) {
        Some(ahead) => ahead,
        // Not forecast yet (the leader is slow or gone): after every job of its queue the
        // board holds, which were all considered before it.
        None => board.queues.get(&row.queue).map_or(&[][..], Vec::as_slice),
    };
    let page = &ahead[..ahead.len().min(limit as usize)];
    let rows = page_rows(&state.db_read, page).await?;
    let items = page
        .iter()
        .filter_map(|ahead_id| item(&board, *ahead_id, rows.get(ahead_id), &user))
        .collect();
    Ok(Json(JobsAhead {
        job_id: id,
        order: board.order,
        position: ahead.len() as u64 + 1,
        total: ahead.len() as u64,
        items,
        computed_at: board.computed_at,
    }))
}

/// What the page needs from each job's row.
struct AheadRow {
    name: String,
    owner_id: i64,
    owner_name: String,
    /// Σ replicas × requests (JSON).
    resources: String,
    submitted_at: chrono::DateTime<chrono::Utc>,
    wait_reasons: Option<String>,
}

/// The rows of `ids`, by id.
async fn page_rows(db: &impl ConnectionTrait, ids: &[i64]) -> Result<HashMap<i64, AheadRow>, DbErr> {
    type Row = (
        i64,
        String,
        i64,
        String,
        String,
        chrono::DateTime<chrono::Utc>,
        Option<String>,
    );
    let mut out = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(250) {
        let rows: Vec<Row> = job::Entity::find()
            .select_only()
            .column(job::Column::Id)
            .column(job::Column::Name)
            .column(job::Column::OwnerId)
            .column(job::Column::OwnerName)
            .column(job::Column::Resources)
            .column(job::Column::SubmittedAt)
            .column(job::Column::WaitReasons)
            .filter(job::Column::Id.is_in(chunk.iter().copied()))
            .into_tuple()
            .all(db)
            .await?;
        out.extend(rows.into_iter().map(
            |(id, name, owner_id, owner_name, resources, submitted_at, wait_reasons)| {
                (
                    id,
                    AheadRow {
                        name,
                        owner_id,
                        owner_name,
                        resources,
                        submitted_at,
                        wait_reasons,
                    },
                )
            },
        ));
    }
    Ok(out)
}

/// One job ahead as `reader` may see it; `None` when its row is gone (deleted since the
/// forecast).
fn item(board: &Board, id: i64, row: Option<&AheadRow>, reader: &crate::users::entity::Model) -> Option<AheadJob> {
    let entry = board.jobs.get(&id)?;
    let row = row?;
    let mine = row.owner_id == reader.id;
    let shown = mine || crate::users::role_of(reader) == anteroom_shared::api::Role::Admin;
    let mut reasons: Vec<WaitReason> = row
        .wait_reasons
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
        .unwrap_or_default();
    if !shown {
        // Another user's figures (their quota, their usage) stay theirs: the cause only.
        for reason in &mut reasons {
            reason.message = reason.code.clone();
            reason.details = None;
        }
    }
    Some(AheadJob {
        id: shown.then_some(id),
        name: shown.then(|| row.name.clone()),
        owner: shown.then(|| row.owner_name.clone()),
        mine,
        resources: serde_json::from_str(&row.resources).unwrap_or_default(),
        submitted_at: row.submitted_at,
        reasons,
        estimated_start_at: entry.estimated_start_at,
        basis: entry.basis,
    })
}

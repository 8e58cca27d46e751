//! `POST /api/v1/jobs/{id}/notebook`: the portal's half of opening a notebook. The caller gets
//! a one-time link to the notebook's own origin; the browser follows it there and gets the
//! notebook's cookie (`super::host`). The portal itself never serves a notebook.

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::notebooks::{NotebookHandoff, OpenNotebook};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use chrono::{DateTime, Utc};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::handoff::{self, Handoff};
use super::session::{self, Opener};
use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;

/// The path on a notebook origin where a handoff arrives.
pub const HANDOFF_PATH: &str = "/_anteroom/handoff";

/// Routes of every user.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(open_notebook))
}

/// A one-time link that opens the job's notebook on its own origin (`notebook_origin`), for
/// its owner — or for an admin who says `asAdmin` after being warned that the notebook's pages
/// run the owner's code. The link works once, for a minute; the notebook's cookie it sets is
/// good for that job only and ends with the caller's session.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{id}/notebook",
    tag = "jobs",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Job id")),
    request_body = OpenNotebook,
    responses(
        (status = 201, description = "The link to follow", body = NotebookHandoff),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`admin_confirmation_required`: an admin opening another user's notebook must say `asAdmin`", body = ErrorBody),
        (status = 404, description = "`job_not_found`; `not_a_notebook`: the job is no jupyter or webide", body = ErrorBody),
        (status = 409, description = "`notebook_not_running`: it opens once the job runs (`details.phase`)", body = ErrorBody),
        (status = 422, description = "`validation_failed`", body = ErrorBody),
    )
)]
async fn open_notebook(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiPath(id): ApiPath<i64>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<OpenNotebook>,
) -> ApiResult<(StatusCode, Json<NotebookHandoff>)> {
    let row = crate::jobs::visible(&state.db_read, &user, id).await?;
    let job = crate::jobs::to_api(&row)?;
    super::openable(&job)?;
    let opener = session::may_open(&user, row.owner_id, body.as_admin).ok_or_else(|| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "admin_confirmation_required",
            format!(
                "job {id} is {}'s: its notebook runs their code in your browser; confirm with asAdmin to open it",
                job.owner
            ),
        )
        .with_details(serde_json::json!({ "owner": job.owner }))
    })?;
    let session_expires_at = crate::auth::session_expiry(&headers, &state)
        .and_then(|s| DateTime::<Utc>::from_timestamp(s, 0))
        .ok_or_else(|| ApiError::unauthorized("invalid or expired token"))?;
    let now = Utc::now();
    let (code, expires_at) = handoff::create(
        &state.db,
        Handoff {
            job_id: id,
            user_id: user.id,
            user_version: user.token_version,
            as_admin: opener == Opener::Admin,
            session_expires_at,
        },
        now,
    )
    .await?;
    if opener == Opener::Admin {
        tracing::warn!(user.id = user.id, job.id = id, job.owner = %job.owner, "an admin opens another user's notebook");
    }
    let origin = state.notebook_origin.origin(id);
    Ok((
        StatusCode::CREATED,
        Json(NotebookHandoff {
            url: format!("{origin}{HANDOFF_PATH}?code={code}"),
            origin,
            expires_at,
        }),
    ))
}

//! The prequeue settings over HTTP: the admin's form (`GET`/`PUT`
//! `/api/v1/admin/prequeue-config`) and what the submit form needs
//! (`GET /api/v1/prequeue/status`).

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::prequeue::PrequeueStatus;
use anteroom_shared::scheduling::{PrequeueConfig, PrequeueConfigChange};
use axum::Json;
use axum::extract::State;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::SettingsError;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::etag::{IfMatch, Tagged};
use crate::extract::ApiJson;
use crate::state::AppState;

/// Routes of every user.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(prequeue_status))
}

/// Routes of admins.
pub fn admin_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_config, put_config))
}

impl From<SettingsError> for ApiError {
    fn from(e: SettingsError) -> Self {
        match e {
            SettingsError::Invalid(fields) => ApiError::validation(
                fields
                    .into_iter()
                    .map(|f| FieldError::new(f.field, f.message))
                    .collect(),
            ),
            SettingsError::Stale(tag) => crate::etag::stale(&tag),
            SettingsError::Db(e) => e.into(),
        }
    }
}

/// Whether backfill and quotas are on (drives the submit form's schedule-type choice).
#[utoipa::path(
    get,
    path = "/api/v1/prequeue/status",
    tag = "prequeue",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The switches", body = PrequeueStatus),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
    )
)]
async fn prequeue_status(State(state): State<AppState>) -> Json<PrequeueStatus> {
    let config = state.settings.current();
    Json(PrequeueStatus {
        backfill_enabled: config.backfill_enabled,
        queue_quota_enabled: config.queue_quota_enabled,
        default_requests: config.default_requests,
        requeue_by_default: config.requeue_by_default,
    })
}

/// The prequeue settings.
#[utoipa::path(
    get,
    path = "/api/v1/admin/prequeue-config",
    tag = "prequeue",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every setting of prequeue.md §3", body = PrequeueConfig,
            headers(("ETag" = String, description = "Their version: send it back in `If-Match` with a change"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
    )
)]
async fn get_config(State(state): State<AppState>) -> ApiResult<Tagged<PrequeueConfig>> {
    // Read through, so an admin sees what another replica wrote a moment ago.
    state.settings.refresh(&state.db_read).await?;
    Ok(Tagged::new(state.settings.current()))
}

/// Changes the settings the body names (any subset; one left out keeps its stored value, so a
/// client written for an earlier table never resets what it does not know); the result is
/// validated as a whole, nothing stored when a field is invalid. With `If-Match` (the `ETag` of
/// the settings read), refused when someone changed them since. Takes effect at once and wakes
/// the watcher.
#[utoipa::path(
    put,
    path = "/api/v1/admin/prequeue-config",
    tag = "prequeue",
    security(("bearer" = [])),
    params(("If-Match" = Option<String>, Header, description = "The `ETag` of the settings the change was made on")),
    request_body = PrequeueConfigChange,
    responses(
        (status = 200, description = "Stored: every setting as it is now", body = PrequeueConfig,
            headers(("ETag" = String, description = "Their new version"))),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 412, description = "`precondition_failed`: changed by someone else since the `If-Match` was read; nothing stored", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming every offending field", body = ErrorBody),
    )
)]
async fn put_config(
    State(state): State<AppState>,
    IfMatch(if_match): IfMatch,
    ApiJson(body): ApiJson<PrequeueConfigChange>,
) -> ApiResult<Tagged<PrequeueConfig>> {
    let stored = state.settings.save(&state.db, &body, if_match.as_deref()).await?;
    // The other replicas read the settings again before their watcher's round, if they lead.
    state.signals.settings_written();
    state.signals.wake_watcher();
    tracing::info!(?stored, "prequeue settings changed");
    Ok(Tagged::new(stored))
}

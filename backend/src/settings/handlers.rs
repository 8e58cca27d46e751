//! The prequeue settings over HTTP: the admin's form (`GET`/`PUT`
//! `/api/v1/admin/prequeue-config`) and what the submit form needs
//! (`GET /api/v1/prequeue/status`).

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::prequeue::PrequeueStatus;
use anteroom_shared::scheduling::PrequeueConfig;
use axum::Json;
use axum::extract::State;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::SettingsError;
use crate::error::{ApiError, ApiResult, FieldError};
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
        (status = 200, description = "Every setting of prequeue.md §3", body = PrequeueConfig),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
    )
)]
async fn get_config(State(state): State<AppState>) -> ApiResult<Json<PrequeueConfig>> {
    // Read through, so an admin sees what another replica wrote a moment ago.
    state.settings.refresh(&state.db_read).await?;
    Ok(Json(state.settings.current()))
}

/// Replaces every setting at once; validated as a whole, nothing stored when a field is
/// invalid. Takes effect at once and wakes the watcher.
#[utoipa::path(
    put,
    path = "/api/v1/admin/prequeue-config",
    tag = "prequeue",
    security(("bearer" = [])),
    request_body = PrequeueConfig,
    responses(
        (status = 200, description = "Stored", body = PrequeueConfig),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin", body = ErrorBody),
        (status = 422, description = "`validation_failed` naming every offending field", body = ErrorBody),
    )
)]
async fn put_config(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<PrequeueConfig>,
) -> ApiResult<Json<PrequeueConfig>> {
    let stored = state.settings.save(&state.db, body).await?;
    // The other replicas read the settings again before their watcher's round, if they lead.
    state.signals.settings_written();
    state.signals.wake_watcher();
    tracing::info!(?stored, "prequeue settings changed");
    Ok(Json(stored))
}

//! `GET /api/v1/usage` (`spec/api.md`): a usage report as JSON, or as CSV for a spreadsheet
//! (`Accept: text/csv`, or `format=csv` for a download link).

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::usage::{FairShare, UsagePeriod, UsageReport};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{Ask, UsageError};
use crate::auth::AuthUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::state::AppState;

/// Routes of every user (what an admin may read more is decided by [`Ask::check`]).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(usage))
        .routes(routes!(my_fair_share))
}

impl From<UsageError> for ApiError {
    fn from(e: UsageError) -> Self {
        match e {
            UsageError::Invalid(field, rule) => ApiError::from_problems([(field, rule)]),
            UsageError::Forbidden => ApiError::forbidden(e.to_string()),
            UsageError::Db(e) => e.into(),
        }
    }
}

/// `?from=&to=&by=&user=&queue=` of a report.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct UsageQuery {
    /// First instant (RFC 3339); default: 30 days before `to`.
    from: Option<DateTime<Utc>>,
    /// End, exclusive (RFC 3339); default: now. At most 400 days after `from`.
    to: Option<DateTime<Utc>>,
    /// `day` (default), `week` (ISO) or `month`, in UTC.
    by: Option<UsagePeriod>,
    /// Only this user's runs (admins; a user may name only themselves).
    user: Option<String>,
    /// Only this queue's runs.
    queue: Option<String>,
    /// `csv`: the CSV form, as `Accept: text/csv` gives it (what a plain download link asks
    /// for: it cannot set `Accept`); `json`: JSON whatever `Accept` says. Default: by `Accept`.
    #[param(inline)]
    format: Option<ReportFormat>,
}

/// A report's form named in the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
enum ReportFormat {
    /// JSON.
    Json,
    /// CSV.
    Csv,
}

/// What jobs occupied, per period, queue, user and resource, with waits, preemptions and
/// reclaims: the caller's own (an admin: anyone's, everyone's by default).
#[utoipa::path(
    get,
    path = "/api/v1/usage",
    tag = "usage",
    security(("bearer" = [])),
    params(UsageQuery),
    responses(
        (status = 200, description = "The report; with `Accept: text/csv` or `format=csv` the same as CSV, a line per period, queue, user and resource", content(
            (UsageReport = "application/json"),
            (String = "text/csv"),
        )),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`forbidden`: another user's usage, asked by a user", body = ErrorBody),
        (status = 422, description = "`validation_failed`: `from` not before `to`, or a range over 400 days", body = ErrorBody),
    )
)]
async fn usage(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<UsageQuery>,
) -> ApiResult<Response> {
    let now = state.clock.now();
    let admin = crate::users::role_of(&user) == anteroom_shared::api::Role::Admin;
    let wanted = super::Wanted {
        from: query.from,
        to: query.to,
        by: query.by,
        user: query.user,
        queue: query.queue,
    };
    let ask = Ask::check((user.id, &user.username), admin, wanted, now)?;
    let report = super::report(&state.db_read, &ask, now).await?;
    let accepts_csv = || {
        headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|accept| accept.split(',').any(|t| t.trim().starts_with("text/csv")))
    };
    let wants_csv = match query.format {
        Some(format) => format == ReportFormat::Csv,
        None => accepts_csv(),
    };
    if wants_csv {
        let name = format!(
            "anteroom-usage-{}-{}.csv",
            report.from.format("%Y%m%d"),
            report.to.format("%Y%m%d")
        );
        return Ok((
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
                (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
            ],
            report.to_csv(),
        )
            .into_response());
    }
    Ok(Json(report).into_response())
}

/// The caller's fair share over time (§10): per queue where they have usage, their decayed
/// usage, share, factor (1: used nothing, 0.5: exactly their share) and what drives it.
#[utoipa::path(
    get,
    path = "/api/v1/me/fair-share",
    tag = "usage",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller's fair share per queue", body = FairShare),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
    )
)]
async fn my_fair_share(State(state): State<AppState>, AuthUser(user): AuthUser) -> ApiResult<Json<FairShare>> {
    let config = crate::settings::read(&state.db_read).await?;
    let (specs, _) = crate::queues::tree(&state.db_read).await?;
    // Without the cluster's nodes the derived weights count accelerators only (1 a GPU-hour;
    // CPU and memory weigh nothing): still an answer.
    let nodes = state.cluster.nodes().await.unwrap_or_default();
    let now = state.clock.now();
    Ok(Json(
        super::fair_share::of_user(&state.db_read, &config, &specs, &nodes, user.id, now).await?,
    ))
}

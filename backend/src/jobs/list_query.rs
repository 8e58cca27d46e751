//! A job list's query string (`GET /api/v1/jobs`, `/api/v1/admin/jobs`): repeatable filters,
//! search, sort and paging, read by hand (serde's form decoder cannot collect repeated keys),
//! every bad value named in one 422.

use std::str::FromStr;

use anteroom_shared::api::jobs::JobSort;
use anteroom_shared::scheduling::{JobKind, JobPhase, ScheduleType};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::JobFilter;
use crate::error::{ApiError, FieldError};
use crate::http::paging::{PageQuery, PageRequest};

/// Most values one repeated filter of a list takes (`?queue=a&queue=b…`): a person filters by
/// a few names, and every value is a bound parameter of the query, so a URL with thousands of
/// them would cost the database for nothing.
pub const MAX_FILTER_VALUES: usize = 32;

/// The repeatable filters of a job list, by their query names (the admin list adds `user`).
const REPEATED_FILTERS: [&str; 5] = ["phase", "scheduleType", "kind", "queue", "user"];

/// The filters of a job list; each may be repeated (`?phase=Running&phase=Pending`), up to
/// [`MAX_FILTER_VALUES`] times.
#[derive(Debug, Default, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub(super) struct JobListParams {
    /// 1-based page number (default 1, at most 1,000,000).
    #[param(minimum = 1, maximum = 1_000_000)]
    page: Option<u64>,
    /// Items per page (default 50, at most 500).
    #[param(rename = "pageSize", minimum = 1, maximum = 500)]
    page_size: Option<u64>,
    /// Phases (any of; at most 32).
    #[param(max_items = 32)]
    phase: Option<Vec<JobPhase>>,
    /// Schedule types (any of; at most 32).
    #[param(rename = "scheduleType", max_items = 32)]
    schedule_type: Option<Vec<ScheduleType>>,
    /// Kinds (any of; at most 32).
    #[param(max_items = 32)]
    kind: Option<Vec<JobKind>>,
    /// Queues (any of; at most 32).
    #[param(max_items = 32)]
    queue: Option<Vec<String>>,
    /// Only jobs whose name contains this (letters' case ignored; at most 100 characters;
    /// blank: every name).
    #[param(max_length = 100)]
    q: Option<String>,
    /// The order: `submittedAt`, `name`, `phase`, `queue` or `owner`, with `-` before it for
    /// descending (default `-submittedAt`, newest first); ties in submission order.
    #[param(pattern = "^-?(submittedAt|name|phase|queue|owner)$")]
    sort: Option<String>,
    /// `true`: each waiting job carries its standing (`prequeue`: position, reasons,
    /// estimate), so a table of jobs needs no request per waiting job (the terminal client's
    /// `ar ls`). Default `false`.
    standing: Option<bool>,
}

/// Longest `q` of a job list, in characters.
pub const MAX_SEARCH_CHARS: usize = 100;

/// A job list's query, parsed by hand: serde's form decoder cannot collect repeated keys.
/// Unknown parameters are ignored; a value that does not parse, or a filter repeated more than
/// [`MAX_FILTER_VALUES`] times, is a 422 naming it.
pub(super) struct JobListQuery {
    pub(super) page: PageRequest,
    pub(super) filter: JobFilter,
    /// `standing=true`: waiting jobs with their standing.
    pub(super) standing: bool,
}

impl<S: Send + Sync> FromRequestParts<S> for JobListQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let mut page = PageQuery::default();
        let mut filter = JobFilter::default();
        let mut standing = false;
        let mut errors = Vec::new();
        fn parse<T: FromStr>(key: &str, value: &str, into: &mut Vec<T>, errors: &mut Vec<FieldError>) {
            match T::from_str(value) {
                Ok(v) => into.push(v),
                Err(_) => errors.push(FieldError::new(key, format!("unknown value {value:?}"))),
            }
        }
        let mut counts = [0usize; REPEATED_FILTERS.len()];
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            if let Some(i) = REPEATED_FILTERS.iter().position(|f| *f == key) {
                counts[i] += 1;
                // Past the cap a value is only counted: the answer is a 422 anyway.
                if counts[i] > MAX_FILTER_VALUES {
                    continue;
                }
            }
            match key.as_ref() {
                "page" | "pageSize" => match value.parse::<u64>() {
                    Ok(n) if key == "page" => page.page = Some(n),
                    Ok(n) => page.page_size = Some(n),
                    Err(_) => errors.push(FieldError::new(key.as_ref(), "must be a positive integer")),
                },
                "phase" => parse(&key, &value, &mut filter.phases, &mut errors),
                "scheduleType" => parse(&key, &value, &mut filter.schedule_types, &mut errors),
                "kind" => parse(&key, &value, &mut filter.kinds, &mut errors),
                "queue" => filter.queues.push(value.into_owned()),
                "user" => filter.users.push(value.into_owned()),
                "q" if value.chars().count() > MAX_SEARCH_CHARS => errors.push(FieldError::new(
                    "q",
                    format!("at most {MAX_SEARCH_CHARS} characters"),
                )),
                "q" => {
                    let text = value.trim();
                    filter.name_contains = (!text.is_empty()).then(|| text.to_owned());
                }
                "standing" => match value.as_ref() {
                    "true" => standing = true,
                    "false" => standing = false,
                    _ => errors.push(FieldError::new("standing", "must be true or false")),
                },
                "sort" => match JobSort::parse(&value) {
                    Some(sort) => filter.sort = sort,
                    None => errors.push(FieldError::new(
                        "sort",
                        format!("unknown value {value:?}: a field (submittedAt, name, phase, queue, owner), `-` before it for descending"),
                    )),
                },
                _ => {}
            }
        }
        for (name, count) in REPEATED_FILTERS.iter().zip(counts) {
            if count > MAX_FILTER_VALUES {
                errors.push(FieldError::new(
                    *name,
                    format!("at most {MAX_FILTER_VALUES} values; got {count}"),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(ApiError::validation(errors));
        }
        Ok(JobListQuery {
            page: page.validate()?,
            filter,
            standing,
        })
    }
}

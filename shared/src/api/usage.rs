//! Accounting (`GET /api/v1/usage`, `spec/prequeue.md` §10): what jobs occupied, per period,
//! queue, user and resource, from the usage history that outlives the jobs themselves. Shared
//! so the CLI and the UI read exactly what the server writes.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Serialize};

/// How a report groups time: calendar days, ISO weeks (Monday first) or calendar months, in
/// UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum UsagePeriod {
    /// One row per UTC day (`2026-11-27`).
    #[default]
    Day,
    /// One row per ISO week (`2026-W48`).
    Week,
    /// One row per UTC month (`2026-11`).
    Month,
}

impl UsagePeriod {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            UsagePeriod::Day => "day",
            UsagePeriod::Week => "week",
            UsagePeriod::Month => "month",
        }
    }
}

/// The first instant of the period of `by` that holds `t`: its UTC day, its ISO week's Monday
/// or its month's first day. The server splits runs with it and the UI lays out its chart's
/// periods with it, so both cut time the same way.
pub fn period_start(t: DateTime<Utc>, by: UsagePeriod) -> DateTime<Utc> {
    let date = t.date_naive();
    let first = match by {
        UsagePeriod::Day => date,
        UsagePeriod::Week => date - Duration::days(i64::from(date.weekday().num_days_from_monday())),
        UsagePeriod::Month => NaiveDate::from_ymd_opt(date.year(), date.month(), 1).unwrap_or(date),
    };
    Utc.from_utc_datetime(&first.and_hms_opt(0, 0, 0).unwrap_or_default())
}

/// The first instant of the period after the one that starts at `start`.
pub fn next_period(start: DateTime<Utc>, by: UsagePeriod) -> DateTime<Utc> {
    match by {
        UsagePeriod::Day => start + Duration::days(1),
        UsagePeriod::Week => start + Duration::days(7),
        UsagePeriod::Month => start
            .checked_add_months(chrono::Months::new(1))
            .unwrap_or(start + Duration::days(31)),
    }
}

/// The period's name: `2026-11-27`, `2026-W48` (ISO week) or `2026-11`.
pub fn period_name(start: DateTime<Utc>, by: UsagePeriod) -> String {
    match by {
        UsagePeriod::Day => start.format("%Y-%m-%d").to_string(),
        UsagePeriod::Week => {
            let week = start.iso_week();
            format!("{}-W{:02}", week.year(), week.week())
        }
        UsagePeriod::Month => start.format("%Y-%m").to_string(),
    }
}

/// The most days one report may span: a longer range is refused (422 on `to`), so one request
/// cannot make the server split years of history into days.
pub const MAX_REPORT_DAYS: i64 = 400;

/// One period's use by one user in one queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageRow {
    /// The period's name: `2026-11-27`, `2026-W48` or `2026-11`.
    pub period: String,
    /// Its first instant (UTC).
    pub period_start: DateTime<Utc>,
    /// The queue the jobs ran in.
    pub queue: String,
    /// The user who owned them.
    pub user: String,
    /// Normal jobs' use in the period, per resource, in resource-hours: GPU-hours for an
    /// accelerator, CPU-hours for `cpu`, GiB-hours for `memory` (and other byte resources).
    /// The part of a run inside the period counts, to the second.
    pub used: BTreeMap<String, f64>,
    /// Elastic (backfill) jobs' use, in the same units.
    pub backfill: BTreeMap<String, f64>,
    /// Runs that started in the period (a requeued job that ran twice counts twice).
    pub jobs: u64,
    /// Median wait of those runs, from the start of their wait to their start, in seconds.
    pub wait_median_seconds: Option<f64>,
    /// 90th percentile of the same waits (nearest rank).
    pub wait_p90_seconds: Option<f64>,
    /// Runs that ended in the period preempted for another job (reclaims not included).
    pub preempted: u64,
    /// Runs that ended in the period reclaimed by the queue that lent their room (§9).
    pub reclaimed: u64,
}

/// A usage report: rows by period, then queue, then user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    /// The first instant covered.
    pub from: DateTime<Utc>,
    /// The end (exclusive).
    pub to: DateTime<Utc>,
    /// How rows group time.
    pub by: UsagePeriod,
    /// Rows with some use, start or end in them.
    pub rows: Vec<UsageRow>,
}

/// One queue of a user's fair share over time (`GET /api/v1/me/fair-share`, §10).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FairShareQueue {
    /// The queue.
    pub queue: String,
    /// The user's decayed usage in it, in units (a GPU-hour just used is 1).
    pub decayed_usage: f64,
    /// That usage as a part of the queue's capacity: what using that part of the queue
    /// steadily would have accumulated (0.2: as if a fifth of the queue were theirs all along).
    /// The order adds it to the user's dominant share now.
    pub usage_fraction: f64,
    /// The user's share of the queue (0–1): an equal part among the users with usage in it.
    pub share: f64,
    /// `2^(-usageFraction / share)`: 1 used nothing, 0.5 used exactly its share, lower goes
    /// later under `fairShareHistory`.
    pub factor: f64,
    /// What drives the usage: decayed units per resource (normal and Elastic runs, Elastic at
    /// its weight).
    pub drivers: BTreeMap<String, f64>,
}

/// A user's fair share over time: per queue where they have usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FairShare {
    /// Whether the prequeue orders by it now (`activationOrder: fairShareHistory`).
    pub in_effect: bool,
    /// The half-life the usage decays with, in seconds (0: no decay).
    pub half_life_seconds: i64,
    /// Per queue, by name; a queue where the user has no usage is not listed (factor 1).
    pub queues: Vec<FairShareQueue>,
}

/// The header of the CSV form of a report (`Accept: text/csv`): one line per period, queue,
/// user and resource.
pub const CSV_HEADER: &str = "period,period_start,queue,user,resource,used_hours,backfill_hours,jobs,\
wait_median_seconds,wait_p90_seconds,preempted,reclaimed";

impl UsageReport {
    /// The report as CSV ([`CSV_HEADER`]), RFC 4180: a field with a comma, quote or line break
    /// is quoted, quotes doubled. A row without any resource still has one line (empty
    /// resource), so its counts are not lost.
    pub fn to_csv(&self) -> String {
        let mut out = String::from(CSV_HEADER);
        out.push_str("\r\n");
        let number = |v: Option<f64>| v.map(|v| format!("{v}")).unwrap_or_default();
        for row in &self.rows {
            let mut resources: Vec<&str> = row.used.keys().chain(row.backfill.keys()).map(String::as_str).collect();
            resources.sort_unstable();
            resources.dedup();
            if resources.is_empty() {
                resources.push("");
            }
            for resource in resources {
                let fields = [
                    csv_field(&row.period),
                    csv_field(&row.period_start.to_rfc3339()),
                    csv_field(&row.queue),
                    csv_field(&row.user),
                    csv_field(resource),
                    number(row.used.get(resource).copied()),
                    number(row.backfill.get(resource).copied()),
                    row.jobs.to_string(),
                    number(row.wait_median_seconds),
                    number(row.wait_p90_seconds),
                    row.preempted.to_string(),
                    row.reclaimed.to_string(),
                ];
                out.push_str(&fields.join(","));
                out.push_str("\r\n");
            }
        }
        out
    }
}

/// One CSV field: quoted when it must be. A field starting with `=`, `+`, `-`, `@`, a tab or a
/// carriage return is prefixed with `'` so a spreadsheet does not run it as a formula (a queue
/// or user name is chosen by people).
fn csv_field(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_follow_one_another_across_a_year_end() {
        let at = |text: &str| text.parse::<DateTime<Utc>>().expect("an RFC 3339 time");
        // Friday 1 January 2027 is in 2026's ISO week 53, which began on Monday 28 December.
        let week = period_start(at("2027-01-01T08:00:00Z"), UsagePeriod::Week);
        assert_eq!(week, at("2026-12-28T00:00:00Z"));
        assert_eq!(period_name(week, UsagePeriod::Week), "2026-W53");
        assert_eq!(next_period(week, UsagePeriod::Week), at("2027-01-04T00:00:00Z"));
        let month = period_start(at("2026-12-31T23:59:59Z"), UsagePeriod::Month);
        assert_eq!(period_name(month, UsagePeriod::Month), "2026-12");
        assert_eq!(
            period_name(next_period(month, UsagePeriod::Month), UsagePeriod::Month),
            "2027-01"
        );
        let day = period_start(at("2026-11-27T23:00:00Z"), UsagePeriod::Day);
        assert_eq!(
            period_name(next_period(day, UsagePeriod::Day), UsagePeriod::Day),
            "2026-11-28"
        );
    }

    #[test]
    fn csv_quotes_what_it_must_and_keeps_formulas_out() {
        let row = UsageRow {
            period: "2026-11-27".into(),
            period_start: "2026-11-27T00:00:00Z".parse().expect("time"),
            queue: "a,b".into(),
            user: "=cmd".into(),
            used: BTreeMap::from([("nvidia.com/a100".into(), 1.5)]),
            backfill: BTreeMap::from([("cpu".into(), 0.25)]),
            jobs: 2,
            wait_median_seconds: Some(30.0),
            wait_p90_seconds: None,
            preempted: 0,
            reclaimed: 1,
        };
        let report = UsageReport {
            from: row.period_start,
            to: row.period_start,
            by: UsagePeriod::Day,
            rows: vec![row],
        };
        let csv = report.to_csv();
        let lines: Vec<&str> = csv.split("\r\n").collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(
            lines[1],
            "2026-11-27,2026-11-27T00:00:00+00:00,\"a,b\",'=cmd,cpu,,0.25,2,30,,0,1"
        );
        assert_eq!(
            lines[2],
            "2026-11-27,2026-11-27T00:00:00+00:00,\"a,b\",'=cmd,nvidia.com/a100,1.5,,2,30,,0,1"
        );
        assert_eq!(lines.len(), 4, "a trailing line break");
    }
}

/// A queue's budget against its use this period (`GET/PUT /api/v1/admin/queues/{name}/budget`,
/// §10).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BudgetStatus {
    /// The queue.
    pub queue: String,
    /// How often the budget renews.
    pub period: crate::scheduling::BudgetPeriod,
    /// GPU-hours per period for the normal jobs of the queue and its sub-queues.
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    pub gpu_hours: crate::scheduling::GpuHours,
    /// Whether a spent budget holds the subtree's normal jobs until the next period.
    pub hold_when_exhausted: bool,
    /// The current period's first instant (UTC).
    pub period_start: DateTime<Utc>,
    /// Its end: the budget renews then.
    pub period_end: DateTime<Utc>,
    /// GPU-hours the subtree's normal jobs used in the period so far (running ones until now).
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    pub used_gpu_hours: crate::scheduling::GpuHours,
    /// GPU-hours its Elastic (backfill) jobs used, shown but not spent from the budget.
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    pub backfill_gpu_hours: crate::scheduling::GpuHours,
    /// Used ≥ budget.
    pub exhausted: bool,
    /// Its normal jobs are held now (`budget_exhausted`).
    pub holding: bool,
}

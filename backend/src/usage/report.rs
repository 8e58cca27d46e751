//! Usage reports from runs (pure): each run's time split across the periods it overlaps, to
//! the second, summed per period, queue and user; waits and ends counted where they happen.

use std::collections::BTreeMap;

use anteroom_shared::api::usage::{UsagePeriod, UsageRow, next_period};
pub use anteroom_shared::api::usage::{period_name, period_start};
use anteroom_shared::scheduling::{ResourceList, ScheduleType};
use chrono::{DateTime, Utc};

/// One run of a job, as the usage history keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Its queue.
    pub queue: String,
    /// Its owner's username.
    pub user: String,
    /// Normal or Elastic.
    pub schedule_type: ScheduleType,
    /// What it requested.
    pub resources: ResourceList,
    /// When the wait before it began.
    pub waiting_since: DateTime<Utc>,
    /// When it began.
    pub started_at: DateTime<Utc>,
    /// When it ended; `None`: it runs (counted until the report's `now`).
    pub ended_at: Option<DateTime<Utc>>,
    /// How it ended (`Preempted`, `Reclaimed`, ...).
    pub end_phase: Option<String>,
}

/// A request in the report's unit: GiB for byte resources, whole units otherwise.
pub use crate::prequeue::history::units_of as report_units;

#[derive(Default)]
struct Acc {
    used: BTreeMap<String, f64>,
    backfill: BTreeMap<String, f64>,
    waits: Vec<f64>,
    preempted: u64,
    reclaimed: u64,
}

/// The report of `runs` over `[from, to)` by `by`, with running runs counted until `now`: rows
/// by period, queue and user, only those with some use, start or end in them.
pub fn report(
    runs: &[Run],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    by: UsagePeriod,
    now: DateTime<Utc>,
) -> Vec<UsageRow> {
    let mut rows: BTreeMap<(DateTime<Utc>, &str, &str), Acc> = BTreeMap::new();
    for run in runs {
        let key = |start: DateTime<Utc>| (start, run.queue.as_str(), run.user.as_str());
        let end = run.ended_at.unwrap_or(now).min(to);
        let mut at = run.started_at.max(from);
        while at < end {
            let start = period_start(at, by);
            let until = next_period(start, by).min(end);
            let seconds = (until - at).num_milliseconds() as f64 / 1000.0;
            let acc = rows.entry(key(start)).or_default();
            let column = if run.schedule_type == ScheduleType::Backfill {
                &mut acc.backfill
            } else {
                &mut acc.used
            };
            for (name, quantity) in run.resources.iter().filter(|(_, q)| q.is_positive()) {
                *column.entry(name.to_owned()).or_default() += report_units(name, quantity.milli()) * seconds / 3600.0;
            }
            at = until;
        }
        if run.started_at >= from && run.started_at < to {
            let waited = (run.started_at - run.waiting_since).num_milliseconds().max(0) as f64 / 1000.0;
            rows.entry(key(period_start(run.started_at, by)))
                .or_default()
                .waits
                .push(waited);
        }
        if let Some(ended) = run.ended_at.filter(|e| *e >= from && *e < to) {
            let acc = rows.entry(key(period_start(ended, by))).or_default();
            match run.end_phase.as_deref() {
                Some("Preempted") => acc.preempted += 1,
                Some("Reclaimed") => acc.reclaimed += 1,
                _ => {}
            }
        }
    }
    rows.into_iter()
        .map(|((start, queue, user), mut acc)| {
            acc.waits.sort_by(f64::total_cmp);
            UsageRow {
                period: period_name(start, by),
                period_start: start,
                queue: queue.to_owned(),
                user: user.to_owned(),
                used: acc.used,
                backfill: acc.backfill,
                jobs: acc.waits.len() as u64,
                wait_median_seconds: nearest_rank(&acc.waits, 50),
                wait_p90_seconds: nearest_rank(&acc.waits, 90),
                preempted: acc.preempted,
                reclaimed: acc.reclaimed,
            }
        })
        .collect()
}

/// The `percent`th percentile of sorted `values` by nearest rank (the smallest value with at
/// least that share of values at or below it); `None` for none.
fn nearest_rank(values: &[f64], percent: usize) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let rank = (percent * values.len()).div_ceil(100).max(1);
    values.get(rank - 1).copied()
}

#[cfg(test)]
mod tests;

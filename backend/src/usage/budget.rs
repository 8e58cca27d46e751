//! Budgets per queue (`spec/prequeue.md` §10, issue 44): GPU-hours a queue's subtree may use per
//! week or month, measured from the usage history, and — when an admin chose so — a hold on
//! its normal jobs once spent (`budget_exhausted`), until the period ends.
//!
//! The hold is kept on the queue's row (`queues.budget_hold`), so every path that reads the
//! queues (a submission, the watcher's round and its claims, the forecast) sees it without
//! measuring use:
//! [`refresh`] measures and writes it, from the watcher every [`CHECK_SECONDS`] and at once when
//! an admin changes a budget. It lifts by itself at the period's end (the core compares
//! `until` with its `now`), so a hold is never left behind by a watcher that stopped.

use anteroom_shared::api::usage::{BudgetStatus, UsagePeriod};
use anteroom_shared::scheduling::{BudgetHold, BudgetPeriod, GpuHours, QueueBudget, ScheduleType};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};

use super::entity;
use crate::prequeue::QueueTree;
use crate::prequeue::gauges::accelerators;
use crate::queues::entity::queue;

/// How often the watcher measures budgets against use, at most.
pub const CHECK_SECONDS: i64 = 30;

/// The period of `budget` holding `now`: its first instant and its end.
pub fn period_of(period: BudgetPeriod, now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let by = match period {
        BudgetPeriod::Week => UsagePeriod::Week,
        BudgetPeriod::Month => UsagePeriod::Month,
    };
    let start = anteroom_shared::api::usage::period_start(now, by);
    (start, anteroom_shared::api::usage::next_period(start, by))
}

/// `queue` and every queue below it, by name (a budget counts its subtree, as a capacity does).
fn subtree(rows: &[queue::Model], queue: &str) -> Vec<String> {
    let (_, tree) = match crate::queues::tree_of(rows) {
        Ok(t) => t,
        Err(_) => return vec![queue.to_owned()],
    };
    subtree_in(&tree, rows, queue)
}

fn subtree_in(tree: &QueueTree, rows: &[queue::Model], queue: &str) -> Vec<String> {
    rows.iter()
        .filter(|r| tree.names_to_root(&r.name).contains(&queue))
        .map(|r| r.name.clone())
        .collect()
}

/// GPU-hours (every accelerator, summed) the runs of `queues` used in `[from, now)`: normal
/// jobs', Elastic jobs'. Running runs count until `now`, each to the millisecond.
pub async fn spent(
    db: &impl ConnectionTrait,
    queues: &[String],
    from: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(f64, f64), DbErr> {
    let rows = entity::Entity::find()
        .filter(entity::Column::Queue.is_in(queues.iter().map(String::as_str)))
        .filter(entity::Column::StartedAt.lt(now))
        .filter(
            sea_orm::Condition::any()
                .add(entity::Column::EndedAt.is_null())
                .add(entity::Column::EndedAt.gt(from)),
        )
        .all(db)
        .await?;
    let (mut normal, mut backfill) = (0.0, 0.0);
    for run in rows.into_iter().filter_map(super::run_of) {
        let start = run.started_at.max(from);
        let end = run.ended_at.unwrap_or(now).min(now);
        if end <= start {
            continue;
        }
        let hours = (end - start).num_milliseconds() as f64 / 3_600_000.0;
        let used = accelerators(&run.resources) * hours;
        match run.schedule_type {
            ScheduleType::Normal => normal += used,
            ScheduleType::Backfill => backfill += used,
        }
    }
    Ok((normal, backfill))
}

/// `row`'s budget against its subtree's use at `now`; `None` without a budget.
pub async fn status_of(
    db: &impl ConnectionTrait,
    rows: &[queue::Model],
    row: &queue::Model,
    now: DateTime<Utc>,
) -> Result<Option<BudgetStatus>, DbErr> {
    let Some(budget) = crate::queues::budget::of(row) else {
        return Ok(None);
    };
    let (start, end) = period_of(budget.period, now);
    let (normal, backfill) = spent(db, &subtree(rows, &row.name), start, now).await?;
    let used = GpuHours::saturating(normal);
    let exhausted = used >= budget.gpu_hours;
    let holding = crate::queues::budget::hold_of(row).is_some_and(|h| h.until > now);
    Ok(Some(BudgetStatus {
        queue: row.name.clone(),
        period: budget.period,
        gpu_hours: budget.gpu_hours,
        hold_when_exhausted: budget.hold_when_exhausted,
        period_start: start,
        period_end: end,
        used_gpu_hours: used,
        backfill_gpu_hours: GpuHours::saturating(backfill),
        exhausted,
        holding,
    }))
}

/// The hold a budget status calls for: while spent, if the admin chose to hold.
fn hold_for(status: &BudgetStatus) -> Option<BudgetHold> {
    (status.hold_when_exhausted && status.exhausted).then_some(BudgetHold {
        until: status.period_end,
        used: status.used_gpu_hours,
        budget: status.gpu_hours,
    })
}

/// Measures every budget against its use at `now` and writes the holds that change: set when a
/// budget that holds is spent, cleared when it is not (raised, turned off, a new period).
/// A hold is rewritten only when it starts, ends or moves to another period, not as use grows.
/// Each write is conditional on the budget it was measured against, so a budget an admin
/// changed meanwhile is not overwritten with a stale verdict. Returns the holds changed.
pub async fn refresh(db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<u64, DbErr> {
    let rows = crate::queues::all(db).await?;
    let mut changed = 0;
    for row in rows.iter().filter(|r| r.budget.is_some() || r.budget_hold.is_some()) {
        let wanted = match status_of(db, &rows, row, now).await? {
            Some(status) => hold_for(&status),
            None => None,
        };
        let stored = crate::queues::budget::hold_of(row).filter(|h| h.until > now);
        let same = match (&stored, &wanted) {
            (None, None) => row.budget_hold.is_none(),
            (Some(a), Some(b)) => a.until == b.until && a.budget == b.budget,
            _ => false,
        };
        if same {
            continue;
        }
        let text = wanted
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| DbErr::Custom(e.to_string()))?;
        let mut update = queue::Entity::update_many()
            .col_expr(queue::Column::BudgetHold, Expr::value(text))
            .filter(queue::Column::Name.eq(row.name.as_str()));
        update = match &row.budget {
            Some(budget) => update.filter(queue::Column::Budget.eq(budget.as_str())),
            None => update.filter(queue::Column::Budget.is_null()),
        };
        changed += update.exec(db).await?.rows_affected;
        tracing::info!(queue = %row.name, holding = wanted.is_some(), "budget hold changed");
    }
    Ok(changed)
}

/// Sets (`Some`) or removes `queue`'s budget; the hold follows at once. `Ok(false)`: no such
/// queue.
pub async fn set(
    db: &impl ConnectionTrait,
    queue_name: &str,
    budget: Option<&QueueBudget>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let text = budget
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| DbErr::Custom(e.to_string()))?;
    let written = queue::Entity::update_many()
        .col_expr(queue::Column::Budget, Expr::value(text))
        .filter(queue::Column::Name.eq(queue_name))
        .exec(db)
        .await?;
    if written.rows_affected == 0 {
        return Ok(false);
    }
    refresh(db, now).await?;
    Ok(true)
}

/// Every budget against its use at `now`, by queue name.
pub async fn all(db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<Vec<BudgetStatus>, DbErr> {
    let rows = crate::queues::all(db).await?;
    let mut out = Vec::new();
    for row in rows.iter().filter(|r| r.budget.is_some()) {
        if let Some(status) = status_of(db, &rows, row, now).await? {
            out.push(status);
        }
    }
    out.sort_by(|a, b| a.queue.cmp(&b.queue));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().expect("time")
    }

    #[test]
    fn weeks_start_on_monday_and_months_on_the_first_in_utc() {
        // Sunday 29 November 2026, late.
        let now = at("2026-11-29T23:59:59Z");
        assert_eq!(
            period_of(BudgetPeriod::Week, now),
            (at("2026-11-23T00:00:00Z"), at("2026-11-30T00:00:00Z"))
        );
        assert_eq!(
            period_of(BudgetPeriod::Month, now),
            (at("2026-11-01T00:00:00Z"), at("2026-12-01T00:00:00Z"))
        );
        assert_eq!(
            period_of(BudgetPeriod::Month, at("2026-12-31T12:00:00Z")).1,
            at("2027-01-01T00:00:00Z")
        );
    }

    #[test]
    fn a_hold_is_called_for_only_when_spent_and_chosen() {
        let status = |used: f64, hold: bool| BudgetStatus {
            queue: "lab".into(),
            period: BudgetPeriod::Month,
            gpu_hours: GpuHours::saturating(10.0),
            hold_when_exhausted: hold,
            period_start: at("2026-11-01T00:00:00Z"),
            period_end: at("2026-12-01T00:00:00Z"),
            used_gpu_hours: GpuHours::saturating(used),
            backfill_gpu_hours: GpuHours::default(),
            exhausted: used >= 10.0,
            holding: false,
        };
        assert_eq!(hold_for(&status(9.999, true)), None);
        assert_eq!(hold_for(&status(12.0, false)), None);
        let hold = hold_for(&status(10.0, true)).expect("a hold");
        assert_eq!(hold.until, at("2026-12-01T00:00:00Z"));
        assert_eq!(hold.used.hours(), 10.0);
    }
}

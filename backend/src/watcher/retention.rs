//! Bounded history (issue 23, point 9): finished jobs older than `job_retention_days` (by
//! `finished_at`) go, with their events and their preemption records, and so do idempotency
//! keys past their 24 h ([`crate::jobs::idempotency::retention`]). Only the leader prunes,
//! every [`PRUNE_EVERY`], in transactions of at most [`BATCH`] jobs and [`BATCH`] keys with a
//! pause between them, so the one SQLite writer is never held for long; each transaction
//! carries the watcher's fence, so a replica that lost the lease deletes nothing more. Webhook
//! deliveries go with their jobs, and done ones after [`DELIVERY_RETENTION_DAYS`].
//!
//! What is never pruned, whatever its times: a job not in a terminal phase
//! ([`JobPhase::is_terminal`]), a terminal job without `finished_at`, and a victim whose
//! preemption is still under way (its delete not yet accepted, or its pods not yet gone: the
//! watcher still reads that record).
//!
//! The event stream resumes after `Last-Event-ID` with `id > last` ([`crate::jobs::events::after`]),
//! so a client resuming from a pruned id gets what follows it. Ids are never reused after a
//! prune (SQLite `AUTOINCREMENT`, PostgreSQL sequences), so nothing new hides below an id a
//! client has seen.

use std::time::Duration;

use anteroom_shared::scheduling::JobPhase;
use axum_prometheus::metrics;
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{ColumnTrait, Condition, DbErr, EntityTrait, ExprTrait, QueryFilter, QueryOrder, QuerySelect};

use super::entity::preemption;
use super::{Watcher, WatcherError};
use crate::jobs::activation::Writer;
use crate::jobs::entity::{event, idempotency_key, job};
use crate::jobs::idempotency;
use crate::notifications::entity::delivery;
use crate::store::lease::Fence;

/// How long a done webhook delivery (delivered, or given up) is kept for its owner to see.
pub const DELIVERY_RETENTION_DAYS: i64 = 7;

/// Jobs (with their events) and idempotency keys deleted per transaction at most.
pub const BATCH: u64 = 500;
/// How often the leader prunes.
pub const PRUNE_EVERY: Duration = Duration::from_secs(600);
/// Transactions per pruning run at most; a backlog beyond it (a first start on an old
/// database) continues at the leader's next wake-up, between rounds.
const BATCHES_PER_RUN: usize = 20;
/// The pause between two transactions of a run, in which queued writes take the writer.
const BATCH_GAP: Duration = Duration::from_millis(20);

/// What pruning deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneCounts {
    /// Finished jobs.
    pub jobs: u64,
    /// Their events.
    pub events: u64,
    /// Their preemption records (as victims).
    pub preemptions: u64,
    /// Spent idempotency keys.
    pub idempotency_keys: u64,
    /// Webhook deliveries: those of pruned jobs, and those done (delivered or given up) for
    /// longer than [`DELIVERY_RETENTION_DAYS`].
    pub deliveries: u64,
    /// The last transaction deleted a full batch of jobs or keys: more may be left.
    pub more: bool,
}

impl std::ops::AddAssign for PruneCounts {
    /// Sums the counts; `more` is the later transaction's.
    fn add_assign(&mut self, later: Self) {
        self.jobs += later.jobs;
        self.events += later.events;
        self.preemptions += later.preemptions;
        self.idempotency_keys += later.idempotency_keys;
        self.deliveries += later.deliveries;
        self.more = later.more;
    }
}

/// How long finished jobs are kept: `job_retention_days`, `None` for 0 (for ever).
pub fn job_retention(days: u32) -> Option<chrono::Duration> {
    (days > 0).then(|| chrono::Duration::days(i64::from(days)))
}

/// The terminal phases' words: the only jobs ever pruned.
fn terminal_phases() -> Vec<&'static str> {
    JobPhase::ALL
        .iter()
        .filter(|p| p.is_terminal())
        .map(|p| p.as_str())
        .collect()
}

/// One transaction: at most [`BATCH`] finished jobs that finished before `now - job_retention`
/// (none when `job_retention` is `None`), with their events and preemption records, and at most
/// [`BATCH`] idempotency keys older than 24 h. `now` is read from `w`'s clock inside the
/// transaction; `None` when `w`'s fence no longer holds the lease (nothing was deleted).
pub async fn prune_once(w: Writer<'_>, job_retention: Option<chrono::Duration>) -> Result<Option<PruneCounts>, DbErr> {
    let Some((txn, now)) = w.begin().await? else {
        return Ok(None);
    };
    let mut counts = PruneCounts::default();
    if let Some(cutoff) = job_retention.and_then(|r| now.checked_sub_signed(r)) {
        // Preemptions the watcher still works on: their victims stay.
        let unfinished_preemptions = Query::select()
            .column(preemption::Column::VictimId)
            .from(preemption::Entity)
            .cond_where(
                Condition::any()
                    .add(preemption::Column::DeletedAt.is_null())
                    .add(preemption::Column::GoneAt.is_null()),
            )
            .to_owned();
        let ids: Vec<i64> = job::Entity::find()
            .select_only()
            .column(job::Column::Id)
            .filter(job::Column::Phase.is_in(terminal_phases()))
            .filter(job::Column::FinishedAt.lt(cutoff))
            .filter(job::Column::Id.not_in_subquery(unfinished_preemptions))
            .order_by_asc(job::Column::Id)
            .limit(BATCH)
            // PostgreSQL: rows locked until the commit (terminal phases are final anyway);
            // SQLite: the write transaction already holds the database.
            .lock_exclusive()
            .into_tuple()
            .all(&txn)
            .await?;
        if !ids.is_empty() {
            counts.events = event::Entity::delete_many()
                .filter(event::Column::JobId.is_in(ids.clone()))
                .exec(&txn)
                .await?
                .rows_affected;
            counts.deliveries = delivery::Entity::delete_many()
                .filter(delivery::Column::JobId.is_in(ids.clone()))
                .exec(&txn)
                .await?
                .rows_affected;
            counts.preemptions = preemption::Entity::delete_many()
                .filter(preemption::Column::VictimId.is_in(ids.clone()))
                .exec(&txn)
                .await?
                .rows_affected;
            counts.jobs = job::Entity::delete_many()
                .filter(job::Column::Id.is_in(ids))
                .exec(&txn)
                .await?
                .rows_affected;
        }
    }
    let spent = Query::select()
        .columns([idempotency_key::Column::UserId, idempotency_key::Column::Key])
        .from(idempotency_key::Entity)
        .and_where(idempotency_key::Column::CreatedAt.lte(now - idempotency::retention()))
        .order_by(idempotency_key::Column::CreatedAt, sea_orm::Order::Asc)
        .limit(BATCH)
        .to_owned();
    counts.idempotency_keys = idempotency_key::Entity::delete_many()
        .filter(
            Expr::tuple([
                Expr::col(idempotency_key::Column::UserId),
                Expr::col(idempotency_key::Column::Key),
            ])
            .in_subquery(spent),
        )
        .exec(&txn)
        .await?
        .rows_affected;
    let done_before = now - chrono::Duration::days(DELIVERY_RETENTION_DAYS);
    let done = Query::select()
        .column(delivery::Column::Id)
        .from(delivery::Entity)
        .cond_where(
            Condition::any().add(delivery::Column::DeliveredAt.lt(done_before)).add(
                Condition::all()
                    .add(delivery::Column::GivenUp.eq(true))
                    .add(delivery::Column::CreatedAt.lt(done_before)),
            ),
        )
        .order_by(delivery::Column::Id, sea_orm::Order::Asc)
        .limit(BATCH)
        .to_owned();
    let old_deliveries = delivery::Entity::delete_many()
        .filter(delivery::Column::Id.in_subquery(done))
        .exec(&txn)
        .await?
        .rows_affected;
    counts.deliveries += old_deliveries;
    txn.commit().await?;
    counts.more = counts.jobs >= BATCH || counts.idempotency_keys >= BATCH || old_deliveries >= BATCH;
    pruned(&counts);
    Ok(Some(counts))
}

/// `anteroom_history_pruned_total{table}`: rows pruning deleted, per table (every table's
/// series exists from the first run on, at 0).
fn pruned(counts: &PruneCounts) {
    for (table, rows) in [
        ("jobs", counts.jobs),
        ("job_events", counts.events),
        ("preemptions", counts.preemptions),
        ("idempotency_keys", counts.idempotency_keys),
        ("webhook_deliveries", counts.deliveries),
    ] {
        metrics::counter!("anteroom_history_pruned_total", "table" => table).increment(rows);
    }
}

impl Watcher {
    /// One pruning run while `fence` holds the lease: transactions of [`prune_once`] while
    /// they come back full, at most `BATCHES_PER_RUN`, with a pause between them and the
    /// lease renewed when due. `more` in the answer: a backlog is left for the next run.
    pub async fn prune_history(&self, fence: &Fence) -> Result<PruneCounts, WatcherError> {
        let mut total = PruneCounts::default();
        for run in 0..BATCHES_PER_RUN {
            if run > 0 {
                tokio::time::sleep(BATCH_GAP).await;
                self.renew_if_due(fence).await?;
            }
            let Some(counts) = prune_once(self.writer(fence), self.job_retention).await? else {
                return Err(WatcherError::LeaseLost);
            };
            total += counts;
            if !counts.more {
                break;
            }
        }
        Ok(total)
    }

    /// The loop's call: prunes, logs what it did, and answers when to prune next — at the
    /// loop's next wake-up while a backlog is left, else after [`PRUNE_EVERY`]. A failure is logged and retried
    /// at the next interval (a lost lease is noticed by the loop's next renewal).
    pub(super) async fn prune_when_due(&self, fence: &Fence) -> tokio::time::Instant {
        let next = match self.prune_history(fence).await {
            Ok(counts) => {
                if counts.jobs > 0 || counts.idempotency_keys > 0 {
                    tracing::info!(
                        jobs = counts.jobs,
                        events = counts.events,
                        preemptions = counts.preemptions,
                        idempotency_keys = counts.idempotency_keys,
                        more = counts.more,
                        "pruned old history"
                    );
                }
                if counts.more { super::MIN_ROUND_GAP } else { PRUNE_EVERY }
            }
            Err(e) => {
                tracing::warn!(error = %e, "pruning old history failed; retrying later");
                PRUNE_EVERY
            }
        };
        tokio::time::Instant::now() + next
    }
}

#[cfg(test)]
mod tests;

//! What a batch of submissions decides from (issue 25): everything the decisions of
//! `spec/prequeue.md` §4 steps 2–7 read, read once for the whole batch inside its write
//! transaction and then kept up to date with the batch's own admissions.
//!
//! Read per submission, a batch cost up to six statements per submission (the quota rules, the
//! tree's usage, the queue's timed-out jobs, two per-owner counts, the queue membership), each
//! a hand-over to SQLite's worker thread — most of the writer's time. Read per batch, the same
//! figures take at most five statements whatever the batch's size.
//!
//! The transaction holds SQLite's one write lock from its start (on PostgreSQL, the locks of
//! the batch's queue trees and owners, see the admission), so nothing but the batch itself
//! changes these figures until it commits — but jobs ending, which only free room: each
//! decision sees what a fresh read at its turn would see, or a moment older. Two details:
//!
//! - a job blocks once its `timeout_at` is past, which moves with time, not with writes. Jobs
//!   are read up to a horizon a minute ahead and filtered at each submission's own time; a
//!   submission past the horizon (a batch that took a minute) reads the store itself
//!   ([`BatchReads::snapshot`] answers `None`).
//! - the per-owner limits of step 6 come from each submission's settings, so the counts are
//!   kept whole (from the `job_counts` table the triggers of migrations 23 and 24 keep) and
//!   each submission caps them at its own limit, as a read limited to that many rows would.
//!   An owner whose counts are unreadable (a negative count, an unknown phase) is left out,
//!   and their submissions count their rows in the store as before.

use std::collections::{BTreeMap, HashMap, HashSet};

use anteroom_shared::scheduling::{JobPhase, ResourceList, ScheduleType};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Query};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder};

use super::SchedulingRow;
use super::entity::job;
use super::pending::{OwnerCounts, Pending};
use crate::prequeue::{JobSnapshot, QueueQuota, QueueSpec, QueueTree, Snapshot, UsageRow, UserId};
use crate::queues::{self, QueueError, entity::member, entity::queue};
use crate::store::compact;
use crate::{quotas, users};

/// How far past the batch's start the timed-out jobs are read: a submission decided later than
/// that reads the store.
const HORIZON: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// The figures one batch decides from.
#[derive(Debug, Default)]
pub(super) struct BatchReads {
    /// Every quota rule (read when a submission of the batch has queue quotas on).
    quotas: Vec<QueueQuota>,
    /// Usage per (owner, queue) in the trees of the batch's queues.
    usage: BTreeMap<(UserId, String), UsageRow>,
    /// The roots whose trees' usage was read.
    usage_roots: HashSet<String>,
    /// Per queue whose blockers were read: its waiting normal jobs whose `timeout_at` is before
    /// [`BatchReads::horizon`].
    blockers: HashMap<String, Vec<JobSnapshot>>,
    /// See [`HORIZON`].
    horizon: DateTime<Utc>,
    /// Per owner of the batch: prequeued and unfinished jobs, uncapped.
    counts: HashMap<UserId, OwnerCounts>,
    /// (queue, user) memberships among the batch's closed queues and users.
    members: HashSet<(String, UserId)>,
    /// Submissions that read the store for want of a figure ([`BatchReads::snapshot`]).
    pub fallbacks: usize,
}

#[derive(FromQueryResult)]
struct CountRow {
    owner_id: i64,
    phase: String,
    n: i64,
}

impl BatchReads {
    /// Reads what the submissions of `batch` will decide from, inside `txn` (which holds the
    /// write lock, or on PostgreSQL the batch's trees' and owners' locks), against the queue
    /// rows `rows` read in it.
    pub async fn read(
        txn: &impl ConnectionTrait,
        rows: &[queue::Model],
        (specs, tree): (&[QueueSpec], &QueueTree),
        batch: &[&Pending],
        now: DateTime<Utc>,
    ) -> Result<BatchReads, DbErr> {
        let known = |q: &str| rows.iter().any(|r| r.name == q);
        let mut reads = BatchReads {
            horizon: now + HORIZON,
            ..BatchReads::default()
        };
        // Memberships, for the closed queues non-admins submit to.
        let closed: Vec<(&str, UserId)> = batch
            .iter()
            .filter(|p| users::role_of(&p.user) != anteroom_shared::api::Role::Admin)
            .filter_map(|p| {
                rows.iter()
                    .find(|r| r.name == p.body.queue && !r.open)
                    .map(|r| (r.name.as_str(), p.user.id))
            })
            .collect();
        if !closed.is_empty() {
            let found = member::Entity::find()
                .filter(member::Column::Queue.is_in(closed.iter().map(|(q, _)| *q)))
                .filter(member::Column::UserId.is_in(closed.iter().map(|(_, u)| *u)))
                .all(txn)
                .await?;
            reads.members = found.into_iter().map(|m| (m.queue, m.user_id)).collect();
        }
        // Quota rules and the usage of every tree the batch submits into.
        let quota_roots: HashSet<String> = batch
            .iter()
            .filter(|p| p.config.queue_quota_enabled && known(&p.body.queue))
            .map(|p| tree.turn_of(&p.body.queue).to_owned())
            .collect();
        if !quota_roots.is_empty() {
            let family: Vec<String> = specs
                .iter()
                .filter(|s| quota_roots.contains(tree.turn_of(&s.name)))
                .map(|s| s.name.clone())
                .collect();
            reads.quotas = quotas::all(txn).await?;
            reads.usage = queues::usage::usage_rows(txn, Some(&family), None)
                .await?
                .into_iter()
                .map(|row| ((row.owner, row.queue.clone()), row))
                .collect();
            reads.usage_roots = quota_roots;
        }
        // The waiting normal jobs that may block, per queue, up to the horizon.
        let blocking_queues: HashSet<&str> = batch
            .iter()
            .filter(|p| p.config.blocking_enabled() && known(&p.body.queue))
            .map(|p| p.body.queue.as_str())
            .collect();
        if !blocking_queues.is_empty() {
            let found = SchedulingRow::select()
                .filter(job::Column::Queue.is_in(blocking_queues.iter().copied()))
                .filter(job::Column::Phase.is_in([JobPhase::Prequeue.as_str(), JobPhase::Pending.as_str()]))
                .filter(job::Column::ScheduleType.eq(ScheduleType::Normal.as_str()))
                .filter(job::Column::TimeoutAt.lt(reads.horizon))
                .order_by_asc(job::Column::Id)
                .into_model::<SchedulingRow>()
                .all(txn)
                .await?;
            for queue in blocking_queues {
                reads.blockers.insert(queue.to_owned(), Vec::new());
            }
            for row in found {
                let job = row.to_snapshot()?;
                reads.blockers.entry(job.queue.clone()).or_default().push(job);
            }
        }
        // Each owner's jobs by phase, from the counts the triggers keep.
        let owners: HashSet<UserId> = batch.iter().map(|p| p.user.id).collect();
        if owners.is_empty() {
            return Ok(reads);
        }
        // One row a pair on SQLite; on PostgreSQL its `+1`/`-1` rows, summed (migration 24).
        let mut query = Query::select();
        query
            .columns([Alias::new("owner_id"), Alias::new("phase")])
            .expr_as(Expr::cust("CAST(sum(n) AS BIGINT)"), Alias::new("n"))
            .from(Alias::new("job_counts"))
            .and_where(Expr::col(Alias::new("owner_id")).is_in(owners.iter().copied()))
            .group_by_columns([Alias::new("owner_id"), Alias::new("phase")]);
        let counted = CountRow::find_by_statement(txn.get_database_backend().build(&query))
            .all(txn)
            .await?;
        for owner in owners {
            reads.counts.insert(
                owner,
                OwnerCounts {
                    prequeued: 0,
                    unfinished: 0,
                },
            );
        }
        let mut unreadable = HashSet::new();
        for row in counted {
            let (Ok(phase), Ok(n)) = (row.phase.parse::<JobPhase>(), u64::try_from(row.n)) else {
                tracing::error!(owner = row.owner_id, phase = %row.phase, n = row.n, "job_counts holds an unreadable count; that owner's submissions count their jobs in the store");
                unreadable.insert(row.owner_id);
                continue;
            };
            let counts = reads.counts.entry(row.owner_id).or_insert(OwnerCounts {
                prequeued: 0,
                unfinished: 0,
            });
            if phase == JobPhase::Prequeue {
                counts.prequeued += n;
            }
            if !phase.is_terminal() {
                counts.unfinished += n;
            }
        }
        reads.counts.retain(|owner, _| !unreadable.contains(owner));
        Ok(reads)
    }

    /// Step 2 under the lock ([`queues::usable_among`]) from the memberships read. Only for a
    /// submission of the batch it was read for: a closed queue's members are read for those
    /// submissions' users only (a submission left out of the read because its client had hung
    /// up is never decided: a closed reply stays closed).
    pub fn usable(&self, rows: &[queue::Model], user: &users::entity::Model, name: &str) -> Result<(), QueueError> {
        let row = rows
            .iter()
            .find(|q| q.name == name)
            .ok_or_else(|| QueueError::NotFound(name.to_owned()))?;
        if row.open
            || users::role_of(user) == anteroom_shared::api::Role::Admin
            || self.members.contains(&(name.to_owned(), user.id))
        {
            return Ok(());
        }
        Err(QueueError::Forbidden(name.to_owned()))
    }

    /// What the admission's `decision_snapshot` would read now for `p` at `now`; `None` when
    /// `now` is past the horizon or a figure it needs was not read (a tree, queue or owner the
    /// batch's read did not cover, unreadable counts): then the caller reads the store.
    pub fn snapshot(
        &self,
        p: &Pending,
        specs: &[QueueSpec],
        tree: &QueueTree,
        now: DateTime<Utc>,
    ) -> Option<(Snapshot, OwnerCounts)> {
        let (config, queue) = (p.config.clone(), p.body.queue.as_str());
        if now >= self.horizon {
            return None;
        }
        let (quotas, usage) = if config.queue_quota_enabled {
            let root = tree.turn_of(queue);
            if !self.usage_roots.contains(root) {
                return None;
            }
            let usage = self
                .usage
                .values()
                .filter(|row| tree.turn_of(&row.queue) == root)
                .cloned()
                .collect();
            (self.quotas.clone(), usage)
        } else {
            (Vec::new(), Vec::new())
        };
        let jobs = if config.blocking_enabled() {
            self.blockers
                .get(queue)?
                .iter()
                .filter(|job| {
                    super::timeout_at(job.waiting_since, job.waiting_tolerance_seconds).is_some_and(|t| t < now)
                })
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        let counts = self.counts.get(&p.user.id)?;
        // As a read limited to the maximum would count (`decision_snapshot`).
        let cap = |n: u64, max: i64| Ord::min(n, u64::try_from(Ord::max(max, 1)).unwrap_or(u64::MAX));
        let counts = OwnerCounts {
            prequeued: cap(counts.prequeued, config.max_prequeued_jobs_per_user),
            unfinished: cap(counts.unfinished, config.max_unfinished_jobs_per_user),
        };
        let snapshot = Snapshot {
            config,
            queues: specs.to_vec(),
            quotas,
            jobs,
            usage,
            nodes: p.nodes.clone(),
            preemptions_in_flight: Vec::new(),
            recent_plans: Vec::new(),
            history: Default::default(),
        };
        Some((snapshot, counts))
    }

    /// Counts the job just inserted (`row`) in the figures, as the store now holds it.
    pub fn admitted(&mut self, row: &job::Model) -> Result<(), DbErr> {
        let phase: JobPhase = row
            .phase
            .parse()
            .map_err(|_| DbErr::Custom(format!("job {}: unreadable phase", row.id)))?;
        // An owner left out of the counts (unreadable) stays out: their submissions count in
        // the store, which holds this row already.
        if let Some(counts) = self.counts.get_mut(&row.owner_id) {
            if phase == JobPhase::Prequeue {
                counts.prequeued += 1;
            }
            if !phase.is_terminal() {
                counts.unfinished += 1;
            }
        }
        let normal = row.schedule_type == ScheduleType::Normal.as_str();
        if normal && phase.is_occupying() {
            let request = compact::decode_request(&row.request_milli)
                .map_err(|e| DbErr::Custom(format!("job {}: {e}", row.id)))?;
            let entry = self
                .usage
                .entry((row.owner_id, row.queue.clone()))
                .or_insert_with(|| UsageRow {
                    owner: row.owner_id,
                    queue: row.queue.clone(),
                    resources: ResourceList::new(),
                    active_jobs: 0,
                });
            entry.resources.saturating_add_assign(&request);
            entry.active_jobs = entry.active_jobs.saturating_add(1);
        }
        if normal
            && matches!(phase, JobPhase::Prequeue | JobPhase::Pending)
            && super::timeout_at(row.waiting_since, row.waiting_tolerance_seconds).is_some_and(|t| t < self.horizon)
            && let Some(blockers) = self.blockers.get_mut(&row.queue)
        {
            blockers.push(SchedulingRow::of(row).to_snapshot()?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

//! Activation by the watcher (`spec/prequeue.md` §5 steps 2 and 5): the selected jobs, and
//! the repair of `Activating` jobs left behind — each through the one activation path of
//! [`crate::jobs::activation`], with the watcher's fence on every write.

use anteroom_shared::scheduling::JobPhase;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::{FaultPoint, Watcher, WatcherError, metrics};
use crate::jobs::SchedulingRow;
use crate::jobs::activation::{self, ActivationOutcome};
use crate::jobs::entity::job;
use crate::prequeue::{QuotaView, Snapshot};
use crate::store::lease::Fence;
use crate::{queues, quotas};

/// A claim older than this without a recorded outcome is re-driven (`spec/prequeue.md` §5).
const STALE_CLAIM_SECONDS: i64 = 60;
/// Jobs driven again per round at most (the rest wait for the next round).
const REPAIRS_PER_ROUND: u64 = 100;

/// What became of one selected job.
pub(super) enum Result {
    /// Created in the cluster, now `Pending`.
    Activated,
    /// Its last allowed create failed: now `Failed`.
    Failed,
    /// Not activated this round (no longer prequeued, over a limit under the lock, or a create
    /// that failed and will be retried after its backoff).
    NotNow,
}

type Outcome<T> = std::result::Result<T, WatcherError>;

impl Watcher {
    /// Repair (§5 step 2): `Activating` jobs whose create failed and whose backoff has passed,
    /// or whose claim is older than a minute (a crash between claim and `Pending`), are driven
    /// again — re-claimed by compare-and-set on their claim, so two drivers never both record.
    /// "Already exists" counts as created, so a job created before a crash is not doubled.
    /// Answers (jobs driven, jobs that became `Failed`).
    ///
    /// The first round of a lease term re-drives every claim at once: a claim of an earlier
    /// term belongs to a watcher that can no longer record anything (its fence is stale), so
    /// waiting a minute for it would only delay the jobs a crash left behind.
    pub(super) async fn repair(&self, fence: &Fence) -> Outcome<(usize, usize)> {
        let now = self.clock.now();
        let new_term = {
            let mut term = self.repaired_term.lock().expect("repaired term");
            let new = *term != Some(fence.token);
            *term = Some(fence.token);
            new
        };
        let stale = if new_term {
            now
        } else {
            now - chrono::Duration::seconds(STALE_CLAIM_SECONDS)
        };
        let due = job::Entity::find()
            .filter(job::Column::Phase.eq(JobPhase::Activating.as_str()))
            .filter(
                Condition::any().add(job::Column::NextAttemptAt.lte(now)).add(
                    Condition::all()
                        .add(job::Column::NextAttemptAt.is_null())
                        .add(job::Column::ClaimedAt.lt(stale)),
                ),
            )
            .order_by_asc(job::Column::Id)
            .limit(REPAIRS_PER_ROUND)
            .all(&self.db)
            .await?;
        let (mut driven, mut failed) = (0, 0);
        for row in due {
            self.renew_if_due(fence).await?;
            let Some((txn, now)) = self.writer(fence).begin().await? else {
                return Err(WatcherError::LeaseLost);
            };
            let updated = job::Entity::update_many()
                .col_expr(job::Column::ClaimedAt, Expr::value(now))
                .col_expr(job::Column::NextAttemptAt, Expr::value(Option::<DateTime<Utc>>::None))
                .filter(job::Column::Id.eq(row.id))
                .filter(job::Column::Phase.eq(JobPhase::Activating.as_str()))
                .filter(job::Column::Attempts.eq(row.attempts))
                .filter(match row.claimed_at {
                    Some(at) => job::Column::ClaimedAt.eq(at),
                    None => job::Column::ClaimedAt.is_null(),
                })
                .exec(&txn)
                .await?;
            if updated.rows_affected == 0 {
                continue;
            }
            // Driven as re-claimed: its outcome is recorded against this claim, as stored
            // (PostgreSQL keeps microseconds, the clock has nanoseconds).
            let Some(row) = job::Entity::find_by_id(row.id).one(&txn).await? else {
                continue;
            };
            txn.commit().await?;
            if matches!(self.drive(&row, fence).await?, Result::Failed) {
                failed += 1;
            }
            driven += 1;
        }
        Ok((driven, failed))
    }

    /// Claims the selected jobs tree by tree, then drives each claimed one. Per queue tree one
    /// transaction under that tree's turn reads its queues, quotas and usage once and re-checks
    /// each of its selected jobs, in selection order, against the usage committed now plus the
    /// jobs claimed before it (a submission may have taken the room since the snapshot).
    /// Answers each selected job's result, in selection order.
    /// `nodes`: the round's, for the cluster's room when queues share (§9).
    pub(super) async fn activate_selected(
        &self,
        selected: &[i64],
        nodes: &[crate::prequeue::NodeSnapshot],
        fence: &Fence,
    ) -> Outcome<Vec<(i64, Result)>> {
        let mut rows: Vec<SchedulingRow> = Vec::with_capacity(selected.len());
        for chunk in selected.chunks(500) {
            rows.extend(
                SchedulingRow::select()
                    .filter(job::Column::Id.is_in(chunk.iter().copied()))
                    .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
                    .into_model::<SchedulingRow>()
                    .all(&self.db)
                    .await?,
            );
        }
        let order: std::collections::HashMap<i64, usize> =
            selected.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        rows.sort_by_key(|r| order[&r.id]);
        let (_, tree) = queues::tree(&self.db).await?;
        let mut by_root: Vec<(String, Vec<SchedulingRow>)> = Vec::new();
        for row in rows {
            let root = tree.turn_of(&row.queue).to_owned();
            match by_root.iter_mut().find(|(r, _)| *r == root) {
                Some((_, group)) => group.push(row),
                None => by_root.push((root, vec![row])),
            }
        }
        let mut results: std::collections::HashMap<i64, Result> = std::collections::HashMap::new();
        for (root, group) in by_root {
            self.renew_if_due(fence).await?;
            for claimed in self.claim_in_tree(&root, group, nodes, fence).await? {
                self.renew_if_due(fence).await?;
                let id = claimed.id;
                results.insert(id, self.drive(&claimed, fence).await?);
            }
        }
        Ok(selected
            .iter()
            .map(|id| (*id, results.remove(id).unwrap_or(Result::NotNow)))
            .collect())
    }

    /// One tree's claims in one fenced transaction under the tree's turn.
    /// `root` is a turn ([`QueueTree::turn_of`](crate::prequeue::QueueTree::turn_of)): one tree,
    /// or every queue while queues share.
    async fn claim_in_tree(
        &self,
        root: &str,
        group: Vec<SchedulingRow>,
        nodes: &[crate::prequeue::NodeSnapshot],
        fence: &Fence,
    ) -> Outcome<Vec<job::Model>> {
        let Some((txn, now)) = self.writer(fence).begin().await? else {
            return Err(WatcherError::LeaseLost);
        };
        crate::store::lock_queue_tree(&txn, root).await?;
        let mut turn = TurnCheck::read(&txn, root, self.settings.current(), nodes).await?;
        let mut claimed = Vec::with_capacity(group.len());
        for row in group {
            if let Some(model) = turn.claim(&txn, &row, now).await? {
                claimed.push(model);
            }
        }
        txn.commit().await?;
        if !claimed.is_empty() {
            self.signals.events_written();
        }
        Ok(claimed)
    }

    /// A claimed job: the cluster create outside any transaction, then its outcome recorded
    /// under the fence.
    pub(super) async fn drive(&self, claimed: &job::Model, fence: &Fence) -> Outcome<Result> {
        self.fault(FaultPoint::AfterClaim)?;
        let terms = activation::ClusterTerms::of(&self.settings.current());
        let created = activation::create(self.cluster.as_ref(), claimed, terms).await?;
        let outcome = match created {
            Ok(preemptable) => {
                self.fault(FaultPoint::AfterCreate)?;
                activation::record_created(self.writer(fence), self.cluster.as_ref(), claimed, preemptable).await?
            }
            Err(error) => activation::record_failure(self.writer(fence), claimed, &error).await?,
        };
        self.signals.events_written();
        match outcome {
            ActivationOutcome::Activated(activated) => {
                self.fault(FaultPoint::AfterPending)?;
                let waited = (self.clock.now() - activated.submitted_at).num_milliseconds().max(0) as f64 / 1000.0;
                metrics::activated(&activated.queue, &activated.schedule_type, waited);
                Ok(Result::Activated)
            }
            ActivationOutcome::CreateFailed { job, .. } if job.phase == JobPhase::Failed.as_str() => {
                metrics::gave_up();
                Ok(Result::Failed)
            }
            ActivationOutcome::CreateFailed { .. } | ActivationOutcome::Superseded => Ok(Result::NotNow),
            ActivationOutcome::LeaseLost => Err(WatcherError::LeaseLost),
        }
    }
}

/// One turn's view of the store for claims: its queues, quotas and usage read under the turn
/// ([`crate::store::lock_queue_tree`], taken by the caller), plus the jobs claimed in it since.
pub(super) struct TurnCheck {
    root: String,
    tree: crate::prequeue::QueueTree,
    check: Snapshot,
}

impl TurnCheck {
    /// Reads the turn `root`'s queues, quotas and usage in `txn`, which holds the turn.
    pub(super) async fn read(
        txn: &sea_orm::DatabaseTransaction,
        root: &str,
        config: anteroom_shared::scheduling::PrequeueConfig,
        nodes: &[crate::prequeue::NodeSnapshot],
    ) -> std::result::Result<Self, sea_orm::DbErr> {
        // Read under the turn: a queue may have moved to another tree meanwhile.
        let (specs, tree) = queues::tree(txn).await?;
        let family: Vec<String> = specs
            .iter()
            .filter(|s| tree.turn_of(&s.name) == root)
            .map(|s| s.name.clone())
            .collect();
        let check = Snapshot {
            config,
            queues: specs.clone(),
            quotas: quotas::all(txn).await?,
            usage: queues::usage::usage_rows(txn, Some(&family), None).await?,
            nodes: nodes.to_vec(),
            ..Snapshot::default()
        };
        Ok(TurnCheck {
            root: root.to_owned(),
            tree,
            check,
        })
    }

    /// Claims `row` (`Activating`) when nothing holds it against the usage read plus the jobs
    /// claimed before it, which it then joins; `None`: held, moved to another turn, or no longer
    /// prequeued.
    pub(super) async fn claim(
        &mut self,
        txn: &sea_orm::DatabaseTransaction,
        row: &SchedulingRow,
        now: DateTime<Utc>,
    ) -> std::result::Result<Option<job::Model>, sea_orm::DbErr> {
        if self.tree.turn_of(&row.queue) != self.root {
            return Ok(None);
        }
        let mut job = row.to_snapshot()?;
        // A budget spent since the round's snapshot holds it now (§10).
        if job.schedule_type == anteroom_shared::scheduling::ScheduleType::Normal
            && crate::prequeue::budget_hold_on_path(&self.check, &self.tree, &job.queue, now).is_some()
        {
            return Ok(None);
        }
        let view = QuotaView::new(&self.check, &self.tree);
        let reasons = view.soft_reasons(
            job.owner,
            &job.queue,
            job.schedule_type,
            &job.resources,
            job.sharing.borrow,
        );
        if !reasons.is_empty() {
            return Ok(None);
        }
        let borrowing = job.schedule_type == anteroom_shared::scheduling::ScheduleType::Normal
            && !view
                .sharing_verdict(&job.queue, &job.resources, job.sharing.borrow)
                .borrowed
                .is_empty();
        let waiting = (row.waiting_since, row.waiting_tolerance_seconds);
        let Some(model) = activation::claim(txn, row.id, waiting, borrowing, now).await? else {
            return Ok(None);
        };
        // Claimed is occupying: the next job of this turn sees it in the usage.
        job.phase = JobPhase::Activating;
        self.check.usage.extend(crate::prequeue::usage_from_jobs([&job]));
        Ok(Some(model))
    }
}

//! The prequeue watcher (`spec/prequeue.md` §5): the loop around the pure core that lets held
//! jobs into the cluster when their quota allows, preempts elastic jobs for normal jobs that
//! waited too long, and tells every waiting job why it waits. All I/O of the prequeue lives
//! here; the decisions stay in [`crate::prequeue`].
//!
//! - [`Watcher::run`]: the loop, and leadership — one replica at a time holds the watcher's
//!   lease ([`crate::store::lease`]); every write of a round carries its fence.
//! - [`Watcher::round`]: repair, preemption (`preempt.rs`), activation (`activate.rs`), the
//!   reasons of waiting jobs (`reasons.rs`).
//! - [`sync`]: cluster statuses back into the store.
//! - [`retention`]: the leader prunes old finished jobs and spent idempotency keys.
//!
//! Crash safety does not depend on the order of a round's steps finishing: each step's writes
//! are compare-and-set and their cluster calls idempotent, so killing the process anywhere and
//! starting again converges ([`FaultPoint`] lets tests kill a round at the dangerous places).

mod activate;
pub mod entity;
pub mod job_view;
mod metrics;
mod preempt;
pub mod protection;
mod reasons;
mod reclaim;
pub mod requeue;
pub mod retention;
mod running;
mod snapshot;
pub mod sync;

pub use metrics::{activated as metrics_activated, describe as describe_metrics};

use std::sync::Arc;
use std::time::{Duration, Instant};

use anteroom_shared::scheduling::JobPhase;
use sea_orm::{DatabaseConnection, DbErr};

use crate::cluster::Cluster;
use crate::cluster::clock::Clock;
use crate::jobs::activation::Writer;
use crate::prequeue::{JobSnapshot, PreemptionSkip, PreparedRound, Snapshot, plan_preemption};
use crate::settings::Settings;
use crate::signals::Signals;
use crate::store::lease::{Fence, Lease, WATCHER_LEASE};

/// How long a grant of the watcher's lease lasts without renewal: a crashed leader is replaced
/// within this.
pub const LEASE_TTL_SECONDS: i64 = 15;
/// The leader renews at least this often (a third of the lease).
const RENEW_EVERY: Duration = Duration::from_secs(5);
/// A standby tries to take the lease this often: a released lease changes hands within it.
const STANDBY_POLL: Duration = Duration::from_secs(1);
/// The least time from the start of one woken round to the next.
const MIN_ROUND_GAP: Duration = Duration::from_millis(250);

/// How often the leader folds PostgreSQL's job counts (`store::fold_job_counts`): a sweep of
/// submissions adds a few thousand rows a second, which every count read would otherwise sum.
const FOLD_COUNTS_EVERY: Duration = Duration::from_secs(1);

/// A place in a round where tests kill it (`spec/prequeue.md` §5, "nothing lost, nothing
/// doubled"): the round stops there as if the process died, writing nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// A job was claimed (`Activating` committed), before its cluster create.
    AfterClaim,
    /// The cluster create succeeded, before `Pending` was written.
    AfterCreate,
    /// `Pending` and its event were written.
    AfterPending,
    /// Victims were marked `Preempted` (and the plan stored), before their cluster deletes.
    MidPreemption,
}

/// A test's hook: true at a point kills the round there.
pub type FaultHook = Arc<dyn Fn(FaultPoint) -> bool + Send + Sync>;

/// Why a round stopped early.
#[derive(Debug, thiserror::Error)]
pub enum WatcherError {
    /// The store failed.
    #[error(transparent)]
    Db(#[from] DbErr),
    /// The lease expired or was taken over: this replica stopped writing.
    #[error("the watcher lease was lost")]
    LeaseLost,
    /// A test killed the round here.
    #[error("fault injected at {0:?}")]
    Injected(FaultPoint),
}

/// What one round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundReport {
    /// Prequeued jobs when the round began.
    pub prequeued: usize,
    /// `Activating` jobs driven again (failed creates after their backoff, stale claims).
    pub repaired: usize,
    /// Jobs created in the cluster.
    pub activated: Vec<i64>,
    /// Selected jobs not activated: no longer prequeued, over a limit when re-checked under the
    /// lock, or their create failed.
    pub skipped: usize,
    /// Jobs that became `Failed` after their last allowed create failed.
    pub failed: usize,
    /// Backfill jobs preempted (at most one plan a round).
    pub preempted: Vec<i64>,
    /// The job they were preempted for.
    pub preempted_for: Option<i64>,
    /// Jobs taken this round for waiting jobs (§9): borrowers reclaimed for jobs owed their
    /// queue's guarantee, and lower-priority jobs of queues that allow preemption by priority.
    pub reclaimed: Vec<i64>,
    /// The jobs they were taken for.
    pub reclaimed_for: Vec<i64>,
    /// Waiting jobs whose stored reasons changed.
    pub reasons_written: usize,
    /// Waiting jobs whose waiting clock (`waitingSince`) started this round.
    pub clocks_started: usize,
    /// Eligible jobs were left for the next round.
    pub more_work: bool,
    /// Backfill jobs whose pods were told anew whether the cluster may evict them
    /// (`volcano.sh/preemptable`: a lock, the minimum runtime).
    pub preemptable_told: usize,
}

/// What a watcher is made of: the handles of the application it uses.
pub struct WatcherInputs {
    /// The writer.
    pub db: DatabaseConnection,
    /// The pool for reads that stand alone.
    pub db_read: DatabaseConnection,
    /// Where jobs run.
    pub cluster: Arc<dyn Cluster>,
    /// The prequeue settings.
    pub settings: Arc<Settings>,
    /// Wake-ups and the shutdown notice.
    pub signals: Signals,
    /// Where "now" comes from.
    pub clock: Arc<dyn Clock>,
    /// `job_retention_days` (0: for ever).
    pub job_retention_days: u32,
    /// Where webhook deliveries may not go (`cluster_networks`).
    pub webhook_network: crate::notifications::sender::NetworkRules,
    /// Where each round's forecast goes.
    pub forecasts: Arc<crate::forecasts::Forecasts>,
    /// `metrics_user_labels`: whether the metrics name users (ids) in a label.
    pub metrics_user_labels: bool,
}

/// The watcher's dependencies and its memory between rounds.
#[derive(Clone)]
pub struct Watcher {
    /// The writer (claims, activation, preemption, reasons).
    pub db: DatabaseConnection,
    /// The snapshot is read here (SQLite: beside the one writer, not on it).
    pub db_read: DatabaseConnection,
    /// Where jobs run.
    pub cluster: Arc<dyn Cluster>,
    /// The prequeue settings.
    pub settings: Arc<Settings>,
    /// Wake-ups.
    pub signals: Signals,
    /// Where "now" comes from.
    pub clock: Arc<dyn Clock>,
    /// This replica's side of the watcher's lease.
    pub lease: Lease,
    /// Tests only: where to kill a round.
    pub faults: Option<FaultHook>,
    /// How long finished jobs are kept (`job_retention_days`); `None`: for ever.
    pub job_retention: Option<chrono::Duration>,
    /// Where webhook deliveries may not go (`cluster_networks`).
    pub webhook_network: crate::notifications::sender::NetworkRules,
    /// Where each round's forecast goes.
    pub forecasts: Arc<crate::forecasts::Forecasts>,
    /// Whether the metrics carry per-user fair-share factors (`metrics_user_labels`).
    pub metrics_user_labels: bool,
    reasons: Arc<tokio::sync::Mutex<reasons::ReasonCache>>,
    /// Every waiting and occupying job, refreshed from the rows that changed.
    view: Arc<tokio::sync::Mutex<job_view::JobView>>,
    /// Decayed usage per (queue, owner) for `fairShareHistory` (§10), kept between rounds.
    ledger: Arc<tokio::sync::Mutex<crate::usage::ledger::UsageLedger>>,
    /// When the lease was last taken or renewed.
    renewed: Arc<std::sync::Mutex<Instant>>,
    /// Preemption plans counted as missed (`anteroom_preemption_misses_total`), once each.
    misses: Arc<metrics::SeenPlans>,
    /// When budgets were last measured against use.
    budgets_checked: Arc<std::sync::Mutex<Option<chrono::DateTime<chrono::Utc>>>>,
    /// The lease term (fence) whose first repair ran.
    repaired_term: Arc<std::sync::Mutex<Option<i64>>>,
}

/// The jobs a round reads: waiting, being activated, and everything occupying.
fn round_phases() -> Vec<&'static str> {
    JobPhase::ALL
        .iter()
        .filter(|p| **p == JobPhase::Prequeue || p.is_occupying())
        .map(|p| p.as_str())
        .collect()
}

impl Watcher {
    /// A watcher of these inputs (a new lease holder): the few handles of the application it
    /// uses, no more, so its reader and its tests see what it depends on.
    pub fn new(inputs: WatcherInputs) -> Self {
        let WatcherInputs {
            db,
            db_read,
            cluster,
            settings,
            signals,
            clock,
            job_retention_days,
            webhook_network,
            forecasts,
            metrics_user_labels,
        } = inputs;
        Watcher {
            db,
            db_read,
            cluster,
            settings,
            signals,
            clock,
            lease: Lease::for_this_process(WATCHER_LEASE, chrono::Duration::seconds(LEASE_TTL_SECONDS)),
            faults: None,
            job_retention: retention::job_retention(job_retention_days),
            webhook_network,
            forecasts,
            metrics_user_labels,
            reasons: Arc::default(),
            view: Arc::default(),
            ledger: Arc::default(),
            renewed: Arc::new(std::sync::Mutex::new(Instant::now())),
            repaired_term: Arc::default(),
            misses: Arc::default(),
            budgets_checked: Arc::default(),
        }
    }

    /// How this watcher writes while `fence` holds.
    fn writer<'a>(&'a self, fence: &'a Fence) -> Writer<'a> {
        Writer {
            db: &self.db,
            clock: self.clock.as_ref(),
            fence: Some(fence),
        }
    }

    /// Budgets against use (§10), at most every [`crate::usage::budget::CHECK_SECONDS`]: the
    /// holds change before the round reads the queues.
    async fn check_budgets(&self) -> Result<(), WatcherError> {
        let now = self.clock.now();
        {
            let last = self
                .budgets_checked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_some_and(|at| (now - at).num_seconds() < crate::usage::budget::CHECK_SECONDS && at <= now) {
                return Ok(());
            }
        }
        crate::usage::budget::refresh(&self.db, now).await?;
        *self
            .budgets_checked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(now);
        Ok(())
    }

    /// Stops the round here if a test asked for it.
    fn fault(&self, point: FaultPoint) -> Result<(), WatcherError> {
        match &self.faults {
            Some(hook) if hook(point) => Err(WatcherError::Injected(point)),
            _ => Ok(()),
        }
    }

    /// One round (§5) while `fence` holds the lease: repair, preemption, activation, reasons.
    pub async fn round(&self, fence: &Fence) -> Result<RoundReport, WatcherError> {
        let started = Instant::now();
        let (repaired, failed) = self.repair(fence).await?;
        let mut report = RoundReport {
            repaired,
            failed,
            ..RoundReport::default()
        };
        preempt::finish_deletes(self, fence).await?;
        self.check_budgets().await?;
        let repaired_at = started.elapsed();
        let (snapshot, loan) = self.snapshot(fence.token).await?;
        let loaded_at = started.elapsed();
        let decided = self.decide_and_act(fence, &snapshot, &mut report, started).await;
        // Given back whatever happened: the round only read the jobs.
        self.give_back(snapshot, loan).await;
        decided?;
        // After every round that got this far, whatever it decided: the log is read up to here.
        self.prune_job_changes(fence).await?;
        // Where a round's time goes, cumulative from its start (RUST_LOG=anteroom=debug).
        tracing::debug!(
            repaired_ms = repaired_at.as_secs_f64() * 1e3,
            loaded_ms = loaded_at.as_secs_f64() * 1e3,
            done_ms = started.elapsed().as_secs_f64() * 1e3,
            prequeued = report.prequeued,
            "prequeue round timing"
        );
        metrics::round_done(started.elapsed());
        Ok(report)
    }

    /// The round's work on `snapshot`: preemption, protection, selection, activation, clocks and
    /// reasons, into `report`.
    async fn decide_and_act(
        &self,
        fence: &Fence,
        snapshot: &Snapshot,
        report: &mut RoundReport,
        started: Instant,
    ) -> Result<(), WatcherError> {
        metrics::round_gauges(snapshot, self.metrics_user_labels);
        let now = self.clock.now();
        report.prequeued = snapshot.jobs.iter().filter(|j| j.phase == JobPhase::Prequeue).count();

        let preemption = plan_preemption(snapshot, now);
        for (job, skip) in &preemption.skipped {
            if let PreemptionSkip::RecentPlan { planned_at } = skip {
                metrics::preemption_missed(&self.misses, *job, *planned_at);
            }
        }
        if let Some(plan) = preemption.plan {
            report.preempted = preempt::execute(self, fence, &plan).await?;
            if !report.preempted.is_empty() {
                report.preempted_for = Some(plan.beneficiary);
            }
        }

        // Reclaim (§9): borrowers taken back for jobs owed their guarantee, and lower-priority
        // jobs for a higher-priority one where its queue allows it. The round then goes on
        // without the victims, so the jobs they made room for start now, before any borrower
        // could take that room.
        let mut taken: Vec<i64> = Vec::new();
        let mut claimed: Vec<i64> = Vec::new();
        for plan in reclaim::reclaims(&self.db, snapshot, now).await? {
            let reclaimed = preempt::execute_reclaim(self, fence, &plan, &snapshot.nodes).await?;
            if !reclaimed.victims.is_empty() {
                report.reclaimed_for.push(plan.beneficiary);
                taken.extend(&reclaimed.victims);
                // Claimed with its victims: it occupies, whatever its create did.
                claimed.push(plan.beneficiary);
            }
            if reclaimed.activated {
                report.activated.push(plan.beneficiary);
            }
        }
        report.reclaimed.clone_from(&taken);
        let released;
        let snapshot = if taken.is_empty() {
            snapshot
        } else {
            released = snapshot::without_jobs(snapshot, &taken, &claimed);
            &released
        };

        report.preemptable_told = protection::tell(self, fence, snapshot, now).await?;

        // Backfill that knows time reads the timed-out jobs' start estimates from the latest
        // forecast (`crate::forecasts`); without one, nothing backfills past them.
        let estimates = if snapshot.config.time_aware_backfill {
            self.blocker_estimates(snapshot, now)
        } else {
            Vec::new()
        };
        let prepared = match PreparedRound::with_start_estimates(snapshot, now, &estimates) {
            Ok(prepared) => prepared,
            Err(e) => {
                tracing::error!(error = %e, "the prequeue round cannot run on these rules");
                return Ok(());
            }
        };
        let outcome = prepared.select();
        let selected_at = started.elapsed();
        report.more_work = outcome.more_work;
        for (id, result) in self
            .activate_selected(&outcome.selected, &snapshot.nodes, fence)
            .await?
        {
            match result {
                activate::Result::Activated => report.activated.push(id),
                activate::Result::Failed => {
                    report.failed += 1;
                    report.skipped += 1;
                }
                activate::Result::NotNow => report.skipped += 1,
            }
        }
        let activated_at = started.elapsed();
        self.forecasts.observe_activated(&report.activated, now);
        self.forecasts
            .refresh(snapshot, &report.activated, now, fence.token)
            .await;
        report.clocks_started = reasons::start_waiting_clocks(self, fence, &prepared, &outcome).await?;
        report.reasons_written = reasons::write(self, fence, &prepared, &outcome).await?;
        tracing::debug!(
            preempted_and_selected_ms = selected_at.as_secs_f64() * 1e3,
            activated_ms = activated_at.as_secs_f64() * 1e3,
            reasons_ms = started.elapsed().as_secs_f64() * 1e3,
            "prequeue round steps"
        );
        Ok(())
    }

    /// `(id, estimated start)` of the timed-out waiting jobs the latest forecast gives a start:
    /// what time-aware backfill compares a job's end with.
    fn blocker_estimates(
        &self,
        snapshot: &Snapshot,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Vec<(i64, chrono::DateTime<chrono::Utc>)> {
        let Some(board) = self.forecasts.board() else {
            return Vec::new();
        };
        snapshot
            .jobs
            .iter()
            .filter(|j| j.phase == JobPhase::Prequeue && j.is_timed_out(now))
            .filter_map(|j| Some((j.id, board.jobs.get(&j.id)?.estimated_start_at?)))
            .collect()
    }

    /// Deletes the change log the job view has read, once there is enough of it, while
    /// `fence` holds (a deposed leader must not delete what the new one has not read).
    async fn prune_job_changes(&self, fence: &Fence) -> Result<(), WatcherError> {
        let mut view = self.view.lock().await;
        if !view.wants_pruning() {
            return Ok(());
        }
        let Some((txn, _)) = self.writer(fence).begin().await? else {
            return Err(WatcherError::LeaseLost);
        };
        let pruned = view.prune(&txn).await?;
        txn.commit().await?;
        tracing::debug!(pruned, "job change log pruned");
        Ok(())
    }

    /// Tests: what a refresh of the job view for lease term `term` did, the view, and a full
    /// read of the store, both in id order.
    #[doc(hidden)]
    pub async fn job_view_and_store(
        &self,
        term: i64,
    ) -> Result<(job_view::Refreshed, Vec<JobSnapshot>, Vec<JobSnapshot>), DbErr> {
        let mut view = self.view.lock().await;
        job_view::refreshed_and_whole(&mut view, &self.db_read, &round_phases(), term).await
    }

    /// What a replica that stopped leading lets go: its job view (another leader may prune
    /// the log it would read from; it is built whole again if this replica leads again).
    async fn stand_down(&self) {
        metrics::stood_down();
        self.view.lock().await.reset();
        self.forecasts.clear();
    }

    /// Tests: forgets the job view, as a restarted process would have none.
    #[doc(hidden)]
    pub async fn forget_job_view(&self) {
        self.view.lock().await.reset();
    }
}

//! The prequeue watcher (`spec/prequeue.md` §5): the loop around the pure core that lets held
//! jobs into the cluster when their quota allows, and the status sync that tells it when
//! quota frees up. All I/O of the prequeue lives here; the decisions stay in
//! [`crate::prequeue`].
//!
//! This first part runs rounds of activation (snapshot, FCFS or fair-share selection by the
//! core, a re-check of each selected job's quota and capacities under its queue tree's turn,
//! then the one activation path of [`crate::jobs::activation`]) and the status sync
//! ([`sync`]), and the repair of `Activating` jobs whose create failed (after their backoff) or
//! whose claim went stale. Metrics on `/metrics`: `anteroom_prequeue_jobs{queue}`,
//! `anteroom_prequeue_activations_total`, `anteroom_prequeue_round_seconds`,
//! `anteroom_prequeue_activation_wait_seconds`. Not yet: preemption, reasons rewritten every
//! round, the lease that elects one watcher among replicas, the preemption and failure counters
//! and the leader gauge (issue 16).

pub mod sync;

use std::sync::Arc;
use std::time::Duration;

use anteroom_shared::scheduling::JobPhase;
use chrono::Utc;
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, QueryFilter};

use axum_prometheus::metrics;

use crate::cluster::Cluster;
use crate::jobs::SchedulingRow;
use crate::jobs::activation::{self, ActivationOutcome};
use crate::jobs::entity::job;
use crate::prequeue::{QuotaView, Snapshot, select_round, usage_from_jobs};
use crate::settings::Settings;
use crate::signals::Signals;
use crate::{queues, quotas};

/// `anteroom_prequeue_jobs{queue}`: prequeued jobs per queue, every queue (0 included, so a
/// queue that emptied does not keep its last value).
fn record_prequeue_lengths(snapshot: &Snapshot) {
    let mut counts: std::collections::BTreeMap<&str, u64> =
        snapshot.queues.iter().map(|q| (q.name.as_str(), 0)).collect();
    for job in snapshot.jobs.iter().filter(|j| j.phase == JobPhase::Prequeue) {
        *counts.entry(job.queue.as_str()).or_default() += 1;
    }
    for (queue, count) in counts {
        metrics::gauge!("anteroom_prequeue_jobs", "queue" => queue.to_owned()).set(count as f64);
    }
}

/// A claim older than this without a recorded outcome is re-driven (`spec/prequeue.md` §5).
const STALE_CLAIM_SECONDS: i64 = 60;
/// Jobs driven again per round at most (the rest wait for the next round).
const REPAIRS_PER_ROUND: u64 = 100;

/// The least time from the start of one woken round to the next.
const MIN_ROUND_GAP: Duration = Duration::from_millis(250);

/// What one round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundReport {
    /// Prequeued jobs when the round began.
    pub prequeued: usize,
    /// Jobs created in the cluster.
    pub activated: Vec<i64>,
    /// Selected jobs not activated: no longer prequeued, over a limit when re-checked under the
    /// lock, or their create failed.
    pub skipped: usize,
    /// Eligible jobs were left for the next round.
    pub more_work: bool,
}

/// The watcher's dependencies.
#[derive(Clone)]
pub struct Watcher {
    /// The writer (claims, activation).
    pub db: DatabaseConnection,
    /// The snapshot is read here (SQLite: beside the one writer, not on it).
    pub db_read: DatabaseConnection,
    /// Where jobs run.
    pub cluster: Arc<dyn Cluster>,
    /// The prequeue settings.
    pub settings: Arc<Settings>,
    /// Wake-ups.
    pub signals: Signals,
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
    /// One snapshot in a constant number of queries (§5 step 1): settings, queues, quotas, the
    /// scheduling columns of every waiting or occupying job, and the nodes.
    pub async fn snapshot(&self) -> Result<Snapshot, DbErr> {
        let (specs, _) = queues::tree(&self.db_read).await?;
        let rows = SchedulingRow::select()
            .filter(job::Column::Phase.is_in(round_phases()))
            .into_model::<SchedulingRow>()
            .all(&self.db_read)
            .await?;
        let jobs = rows
            .iter()
            .map(SchedulingRow::to_snapshot)
            .collect::<Result<Vec<_>, _>>()?;
        let nodes = self
            .cluster
            .nodes()
            .await
            .map_err(|e| DbErr::Custom(format!("reading the cluster's nodes: {e}")))?;
        Ok(Snapshot {
            config: self.settings.current(),
            queues: specs,
            quotas: quotas::all(&self.db_read).await?,
            usage: usage_from_jobs(&jobs),
            jobs,
            nodes,
            preemptions_in_flight: Vec::new(),
        })
    }

    /// Repair (§5 step 2): `Activating` jobs whose create failed and whose backoff has passed,
    /// or whose claim is older than a minute (a crash between claim and `Pending`), are driven
    /// again — re-claimed by compare-and-set on their claim, so two drivers never both create.
    /// "Already exists" counts as success, so a job created before a crash is not doubled.
    pub async fn repair(&self, now: chrono::DateTime<Utc>) -> Result<usize, DbErr> {
        use sea_orm::{Condition, EntityTrait, QueryOrder, QuerySelect};
        let stale = now - chrono::Duration::seconds(STALE_CLAIM_SECONDS);
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
        let grace = self.settings.current().preemption_grace_period_seconds;
        let mut driven = 0;
        for row in due {
            let updated = job::Entity::update_many()
                .col_expr(job::Column::ClaimedAt, sea_orm::sea_query::Expr::value(now))
                .col_expr(
                    job::Column::NextAttemptAt,
                    sea_orm::sea_query::Expr::value(Option::<chrono::DateTime<Utc>>::None),
                )
                .filter(job::Column::Id.eq(row.id))
                .filter(job::Column::Phase.eq(JobPhase::Activating.as_str()))
                .filter(job::Column::Attempts.eq(row.attempts))
                .filter(match row.claimed_at {
                    Some(at) => job::Column::ClaimedAt.eq(at),
                    None => job::Column::ClaimedAt.is_null(),
                })
                .exec(&self.db)
                .await?;
            if updated.rows_affected == 0 {
                continue;
            }
            activation::activate_claimed(&self.db, self.cluster.as_ref(), &row, grace).await?;
            self.signals.events_written();
            driven += 1;
        }
        Ok(driven)
    }

    /// One round: repair, then select with the core and activate each selected job that still
    /// fits.
    pub async fn round(&self) -> Result<RoundReport, DbErr> {
        let started = std::time::Instant::now();
        self.repair(Utc::now()).await?;
        let snapshot = self.snapshot().await?;
        record_prequeue_lengths(&snapshot);
        let now = Utc::now();
        let outcome = match select_round(&snapshot, now) {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!(error = %e, "the prequeue round cannot run on these rules");
                return Ok(RoundReport::default());
            }
        };
        let mut report = RoundReport {
            prequeued: snapshot.jobs.iter().filter(|j| j.phase == JobPhase::Prequeue).count(),
            more_work: outcome.more_work,
            ..RoundReport::default()
        };
        for id in outcome.selected {
            match self.activate(id).await? {
                Some(id) => report.activated.push(id),
                None => report.skipped += 1,
            }
        }
        metrics::counter!("anteroom_prequeue_activations_total").increment(report.activated.len() as u64);
        metrics::histogram!("anteroom_prequeue_round_seconds").record(started.elapsed().as_secs_f64());
        Ok(report)
    }

    /// Claims one selected job under its queue tree's turn, re-checking its quota and the
    /// capacities on its path against the usage committed now (a submission may have taken the
    /// room since the snapshot), then creates it in the cluster outside the transaction.
    async fn activate(&self, id: i64) -> Result<Option<i64>, DbErr> {
        let txn = crate::store::write_transaction(&self.db).await?;
        let Some(row) = SchedulingRow::select()
            .filter(job::Column::Id.eq(id))
            .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
            .into_model::<SchedulingRow>()
            .one(&txn)
            .await?
        else {
            return Ok(None);
        };
        let (specs, tree) = queues::tree(&txn).await?;
        let root = tree.root_of(&row.queue).to_owned();
        crate::store::lock_queue_tree(&txn, &root).await?;
        let family: Vec<String> = specs
            .iter()
            .filter(|s| tree.root_of(&s.name) == root)
            .map(|s| s.name.clone())
            .collect();
        let config = self.settings.current();
        let check = Snapshot {
            config: config.clone(),
            queues: specs.clone(),
            quotas: quotas::all(&txn).await?,
            usage: queues::usage::usage_rows(&txn, Some(&family), None).await?,
            ..Snapshot::default()
        };
        let job = row.to_snapshot()?;
        let reasons =
            QuotaView::new(&check, &tree).soft_reasons(job.owner, &job.queue, job.schedule_type, &job.resources);
        if !reasons.is_empty() {
            return Ok(None);
        }
        let Some(claimed) = activation::claim(&txn, id, Utc::now()).await? else {
            return Ok(None);
        };
        txn.commit().await?;
        self.signals.events_written();
        let outcome = activation::activate_claimed(
            &self.db,
            self.cluster.as_ref(),
            &claimed,
            config.preemption_grace_period_seconds,
        )
        .await?;
        self.signals.events_written();
        Ok(match outcome {
            ActivationOutcome::Activated(activated) => {
                let waited = (Utc::now() - activated.submitted_at).num_milliseconds().max(0) as f64 / 1000.0;
                metrics::histogram!("anteroom_prequeue_activation_wait_seconds").record(waited);
                Some(id)
            }
            _ => None,
        })
    }

    /// Runs rounds until the server shuts down: on the ticker (`activateTickerIntervalSeconds`,
    /// read anew each time), on a wake-up signal, and again at once while a round reports more
    /// work. The status sync runs beside it.
    pub async fn run(self) {
        let sync = tokio::spawn(sync::run(self.db.clone(), self.cluster.clone(), self.signals.clone()));
        loop {
            let started = std::time::Instant::now();
            let more = match self.round().await {
                Ok(report) => {
                    if !report.activated.is_empty() {
                        tracing::info!(
                            activated = report.activated.len(),
                            prequeued = report.prequeued,
                            "prequeue round"
                        );
                    }
                    report.more_work && !report.activated.is_empty()
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a prequeue round failed; retrying on the next tick");
                    false
                }
            };
            if more {
                continue;
            }
            let seconds = self.settings.current().activate_ticker_interval_seconds.clamp(1, 3600) as u64;
            tokio::select! {
                () = self.signals.watcher().notified() => {
                    // Wake-ups come with every prequeued submission: under a flood, at most
                    // one round per `MIN_ROUND_GAP` (a round reads every waiting job).
                    tokio::time::sleep(MIN_ROUND_GAP.saturating_sub(started.elapsed())).await;
                }
                () = tokio::time::sleep(Duration::from_secs(seconds)) => {}
                () = self.signals.closed() => break,
            }
        }
        sync.abort();
    }
}

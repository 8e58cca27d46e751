//! The watcher's snapshot of the prequeue (§5 step 1): what one round decides on, read in a
//! constant number of queries, its jobs lent by the job view.

use sea_orm::DbErr;

use std::sync::Arc;

use anteroom_shared::scheduling::ActivationOrder;

use super::{Watcher, job_view, preempt, round_phases};
use crate::prequeue::history::History;
use crate::prequeue::{Snapshot, usage_from_jobs};
use crate::{queues, quotas};

impl Watcher {
    /// One snapshot in a constant number of queries (§5 step 1): settings, queues, quotas, the
    /// scheduling columns of every waiting or occupying job (from the job view: the rows that
    /// changed since the last round of lease term `term`), the nodes, and the preemptions whose
    /// victims still terminate. Its jobs are lent by the job view, as loan number `.1`: give
    /// them back with `Watcher::give_back` when done (if not, the next round reads every job
    /// again).
    pub async fn snapshot(&self, term: i64) -> Result<(Snapshot, u64), DbErr> {
        let (specs, _) = queues::tree(&self.db_read).await?;
        let nodes = self
            .cluster
            .nodes()
            .await
            .map_err(|e| DbErr::Custom(format!("reading the cluster's nodes: {e}")))?;
        let quotas = quotas::all(&self.db_read).await?;
        let preemptions_in_flight = preempt::in_flight(&self.db_read).await?;
        let recent_plans = preempt::recent_plans(&self.db_read).await?;
        // Lent last, after everything that can fail.
        let (jobs, loan) = {
            let mut view = self.view.lock().await;
            let refreshed = view
                .refresh(&self.db_read, &round_phases(), term, job_view::FULL_READ_EVERY)
                .await?;
            tracing::debug!(
                full = refreshed.full,
                changed = refreshed.changed,
                jobs = view.len(),
                "job view refreshed"
            );
            view.lend()
        };
        let config = self.settings.current();
        // Fair share over time orders by the decayed past (§10); the other orders never read it.
        let history = if config.activation_order == ActivationOrder::FairShareHistory {
            let now = self.clock.now();
            let mut ledger = self.ledger.lock().await;
            match ledger.history(&self.db_read, &config, &jobs, &nodes, now).await {
                Ok(history) => history,
                Err(e) => {
                    // The jobs are lent: they must go back, so the error does not return here.
                    tracing::warn!(error = %e, "reading the usage history failed; this round orders without it");
                    History::default()
                }
            }
        } else {
            History::default()
        };
        Ok((
            Snapshot {
                config,
                queues: specs,
                quotas,
                usage: usage_from_jobs(&jobs),
                preemptions_in_flight,
                recent_plans,
                jobs,
                nodes,
                history: Arc::new(history),
            },
            loan,
        ))
    }

    /// Returns a snapshot's jobs to the job view they were lent by.
    pub(super) async fn give_back(&self, snapshot: Snapshot, loan: u64) {
        self.view.lock().await.give_back(snapshot.jobs, loan);
    }
}

/// `snapshot` as it stands once `victims` are preempted and the beneficiaries `claimed` with
/// them: the victims no longer occupy and the beneficiaries do, so the rest of the round
/// (selection, reasons) sees the room as it now is. A copy: the snapshot's own jobs go back to
/// the job view unchanged.
pub(super) fn without_jobs(snapshot: &Snapshot, victims: &[i64], claimed: &[i64]) -> Snapshot {
    let mut released = snapshot.clone();
    for job in released.jobs.iter_mut() {
        if victims.contains(&job.id) {
            job.phase = anteroom_shared::scheduling::JobPhase::Preempted;
        } else if claimed.contains(&job.id) {
            job.phase = anteroom_shared::scheduling::JobPhase::Activating;
        }
    }
    released.usage = usage_from_jobs(&released.jobs);
    released
}

//! The watcher's life on a replica: taking and renewing the lease, running rounds on the
//! ticker or when woken while it leads, standing by when another replica does, and letting go
//! on shutdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{FOLD_COUNTS_EVERY, MIN_ROUND_GAP, RENEW_EVERY, STANDBY_POLL, Watcher, WatcherError, metrics, sync};
use crate::store::lease::Fence;

impl Watcher {
    /// Runs until the server shuts down: takes or renews the lease, and while holding it runs
    /// rounds on the ticker (`activateTickerIntervalSeconds`, read anew each time), on a
    /// wake-up signal, and again at once while a round reports more work. The status sync runs
    /// beside it on every replica (its writes are compare-and-set on what the cluster says).
    /// On shutdown the current step finishes and the lease is released, so a standby takes
    /// over within a second (a standby tries every second).
    pub async fn run(self) {
        let sync = tokio::spawn(sync::run(self.db.clone(), self.cluster.clone(), self.signals.clone()));
        // Webhook deliveries go out from the lease holder only.
        let leading = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sender = tokio::spawn(crate::notifications::sender::run(
            self.db.clone(),
            self.clock.clone(),
            self.signals.clone(),
            leading.clone(),
            self.webhook_network.clone(),
        ));
        let mut fence: Option<Fence> = None;
        let mut next_round = tokio::time::Instant::now();
        let mut next_prune = tokio::time::Instant::now();
        let mut next_fold = tokio::time::Instant::now();
        loop {
            let was_leader = fence.is_some();
            fence = self.hold_lease(fence).await;
            leading.store(fence.is_some(), std::sync::atomic::Ordering::Release);
            if fence.is_some() && !was_leader {
                // A new leader starts with a round: the old one may have left work.
                next_round = tokio::time::Instant::now();
            }
            let mut more = false;
            if let Some(f) = &fence
                && tokio::time::Instant::now() >= next_round
            {
                next_round = tokio::time::Instant::now() + self.ticker();
                match self.round(f).await {
                    Ok(report) => {
                        if !report.activated.is_empty() || !report.preempted.is_empty() {
                            tracing::info!(
                                activated = report.activated.len(),
                                preempted = report.preempted.len(),
                                prequeued = report.prequeued,
                                "prequeue round"
                            );
                        }
                        more = report.more_work && !report.activated.is_empty();
                    }
                    Err(WatcherError::LeaseLost) => {
                        tracing::warn!("the watcher lease was lost during a round; standing by");
                        metrics::leader(false);
                        self.stand_down().await;
                        fence = None;
                    }
                    Err(e) => tracing::warn!(error = %e, "a prequeue round failed; retrying on the next tick"),
                }
            }
            // PostgreSQL's job counts grow a row a change: the leader folds them (`store`).
            if fence.is_some() && tokio::time::Instant::now() >= next_fold {
                next_fold = tokio::time::Instant::now() + FOLD_COUNTS_EVERY;
                if let Err(e) = crate::store::fold_job_counts(&self.db).await {
                    tracing::warn!(error = %e, "folding the job counts failed; retrying later");
                }
            }
            // Bounded history: the leader's chore, every ten minutes (`retention.rs`).
            if let Some(f) = &fence
                && tokio::time::Instant::now() >= next_prune
            {
                next_prune = self.prune_when_due(f).await;
            }
            if self.signals.is_closed() {
                break;
            }
            if more {
                next_round = tokio::time::Instant::now();
                continue;
            }
            let woke = tokio::time::Instant::now();
            // The leader wakes for its next round or its next renewal, whichever comes first; a
            // standby to try the lease again.
            let until = if fence.is_some() {
                next_round.min(woke + RENEW_EVERY.saturating_sub(self.since_renewal()))
            } else {
                woke + STANDBY_POLL
            };
            tokio::select! {
                () = self.signals.watcher().notified() => {
                    // Wake-ups come with every prequeued submission: under a flood, at most
                    // one round per `MIN_ROUND_GAP` (a round reads every waiting job).
                    tokio::time::sleep(MIN_ROUND_GAP.saturating_sub(woke.elapsed())).await;
                    next_round = tokio::time::Instant::now();
                }
                () = tokio::time::sleep_until(until) => {}
                () = self.signals.closed() => break,
            }
        }
        if let Some(f) = fence {
            match self.lease.release(&self.db, &f).await {
                Ok(()) => tracing::info!("released the watcher lease"),
                Err(e) => tracing::warn!(error = %e, "releasing the watcher lease failed; it expires by itself"),
            }
            metrics::leader(false);
        }
        sync.abort();
        sender.abort();
    }

    /// `activateTickerIntervalSeconds`, read anew each time (a change applies at once).
    pub(super) fn ticker(&self) -> Duration {
        Duration::from_secs(self.settings.current().activate_ticker_interval_seconds.clamp(1, 3600) as u64)
    }

    pub(super) fn since_renewal(&self) -> Duration {
        self.renewed.lock().expect("renewal time").elapsed()
    }

    /// Renews the lease when [`RENEW_EVERY`] has passed since the last renewal: called between
    /// rounds and between the jobs of a long round, so a round that takes longer than the
    /// lease does not lose it half-way. `LeaseLost` when it was lost.
    pub(super) async fn renew_if_due(&self, fence: &Fence) -> Result<(), WatcherError> {
        if self.since_renewal() < RENEW_EVERY {
            return Ok(());
        }
        if self.lease.renew(&self.db, fence, self.clock.now()).await? {
            *self.renewed.lock().expect("renewal time") = Instant::now();
            Ok(())
        } else {
            Err(WatcherError::LeaseLost)
        }
    }

    /// Renews a held lease when due, or tries to take it: the fence to act under, if any.
    pub(super) async fn hold_lease(&self, fence: Option<Fence>) -> Option<Fence> {
        match fence {
            Some(f) => match self.renew_if_due(&f).await {
                Ok(()) => Some(f),
                Err(WatcherError::LeaseLost) => {
                    tracing::warn!(
                        fence = f.token,
                        "the watcher lease expired or was taken over; standing by"
                    );
                    metrics::leader(false);
                    self.stand_down().await;
                    None
                }
                // Kept: its writes check the expiry themselves, so a lease that lapses while
                // the store is unreachable stops them anyway.
                Err(e) => {
                    tracing::warn!(error = %e, "renewing the watcher lease failed");
                    Some(f)
                }
            },
            None => match self.lease.acquire(&self.db, self.clock.now()).await {
                Ok(Some(f)) => {
                    tracing::info!(fence = f.token, holder = %f.holder, "this replica now runs the prequeue watcher");
                    metrics::leader(true);
                    *self.renewed.lock().expect("renewal time") = Instant::now();
                    Some(f)
                }
                Ok(None) => None,
                Err(e) => {
                    tracing::warn!(error = %e, "taking the watcher lease failed");
                    None
                }
            },
        }
    }
}

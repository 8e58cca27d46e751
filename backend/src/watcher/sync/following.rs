//! Following the cluster: its status stream applied as it comes, and the whole cluster listed
//! again ([`resync`]) at start, after the stream lagged and every [`RESYNC_EVERY`].

use chrono::Utc;
use sea_orm::DatabaseConnection;

use super::{Applied, BATCH, apply_all};
use crate::cluster::{JobEvent, JobStatus};
use crate::signals::Signals;

/// How often the whole cluster is listed again even when the stream did not lag: a safety net
/// for statuses lost some other way (a write that failed).
pub const RESYNC_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// How often statuses of jobs still `Activating` in the store ([`Applied::Parked`]: the
/// cluster's event came before the activation path's `Pending` write) are applied again, besides
/// every time job events are written (the activation path writes one with its `Pending`, here or
/// on another replica). A status parked longer than [`RESYNC_EVERY`] is left to the resync.
pub const PARKED_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// The least time between two retries of the parked statuses: job events written back to back
/// (a burst of activations) do not turn the retry into a busy loop.
const PARKED_SPACING: std::time::Duration = std::time::Duration::from_millis(50);

/// Statuses of jobs still `Activating` in the store, the latest per job, with when each was
/// parked first (kept across retries, so a job that stays `Activating` is given up on after
/// [`RESYNC_EVERY`]: the resync lists it again).
#[derive(Debug)]
struct Parked {
    statuses: std::collections::BTreeMap<i64, (JobEvent, tokio::time::Instant)>,
    /// When the statuses being retried were parked first (between [`Parked::take`] and the
    /// retry's end).
    retrying: std::collections::BTreeMap<i64, tokio::time::Instant>,
    /// When the last retry began.
    last_retry: tokio::time::Instant,
}

impl Default for Parked {
    fn default() -> Self {
        Parked {
            statuses: Default::default(),
            retrying: Default::default(),
            last_retry: tokio::time::Instant::now(),
        }
    }
}

impl Parked {
    /// Keeps `event` (a job's later status replaces its earlier one, keeping the first time).
    fn keep(&mut self, event: &JobEvent) {
        if let JobEvent::Status(status) = event {
            let since = self
                .statuses
                .get(&status.job_id)
                .map(|(_, since)| *since)
                .or_else(|| self.retrying.get(&status.job_id).copied())
                .unwrap_or_else(tokio::time::Instant::now);
            self.statuses.insert(status.job_id, (event.clone(), since));
        }
    }

    /// A status of the job was applied: the parked one is stale (applying it later would move
    /// the job back).
    fn supersede(&mut self, event: &JobEvent) {
        let (JobEvent::Status(JobStatus { job_id, .. }) | JobEvent::Gone { job_id, .. }) = event;
        self.statuses.remove(job_id);
    }

    /// Every parked status, taken out for a retry; those parked too long dropped (the resync
    /// sees them).
    fn take(&mut self) -> Vec<JobEvent> {
        let now = tokio::time::Instant::now();
        self.last_retry = now;
        self.retrying.clear();
        let mut out = Vec::new();
        for (id, (event, since)) in std::mem::take(&mut self.statuses) {
            if now.duration_since(since) < RESYNC_EVERY {
                self.retrying.insert(id, since);
                out.push(event);
            }
        }
        out
    }
}

/// Lists every job in the cluster and applies each status; preempted jobs absent from the
/// listing are marked gone. Used at start, after a lagged stream, every [`RESYNC_EVERY`], and
/// by tests that step the simulation by hand.
pub async fn resync(
    db: &DatabaseConnection,
    cluster: &dyn crate::cluster::Cluster,
    signals: &Signals,
) -> Result<(), crate::cluster::ClusterError> {
    resync_parking(db, cluster, signals, &mut Parked::default()).await
}

/// [`resync`] with the follower's parked statuses: a status it applies supersedes the one
/// parked for the job (a parked `Pending` retried after the resync stored `Running` would move
/// the job back), and one it parks is retried like the stream's.
async fn resync_parking(
    db: &DatabaseConnection,
    cluster: &dyn crate::cluster::Cluster,
    signals: &Signals,
    parked: &mut Parked,
) -> Result<(), crate::cluster::ClusterError> {
    let statuses = cluster.job_statuses().await?;
    let present: std::collections::HashSet<i64> = statuses.iter().map(|s| s.job_id).collect();
    let now = statuses.iter().map(|s| s.observed_at).max().unwrap_or_else(Utc::now);
    let events: Vec<JobEvent> = statuses.into_iter().map(JobEvent::Status).collect();
    for chunk in events.chunks(BATCH) {
        // A status that could not be stored is logged; the next resync lists it again. One
        // of a job still `Activating` is parked.
        note_all(db, cluster, signals, chunk, parked).await;
    }
    match crate::watcher::preempt::mark_absent_gone(db, cluster, &present, now).await {
        Ok(0) => {}
        Ok(_) => {
            // Requeued jobs wait again.
            signals.events_written();
            signals.wake_watcher();
        }
        Err(e) => tracing::warn!(error = %e, "marking preempted jobs gone after a resync failed"),
    }
    Ok(())
}

/// Follows the cluster's status stream until shutdown, resyncing ([`resync`]) at start, every
/// [`RESYNC_EVERY`] and whenever the stream lagged; wakes the watcher when a job finished.
/// Statuses of jobs still `Activating` are kept and applied again (every `PARKED_RETRY`, and
/// when job events are written).
pub async fn run(db: DatabaseConnection, cluster: std::sync::Arc<dyn crate::cluster::Cluster>, signals: Signals) {
    let mut events = cluster.subscribe();
    let mut resync_due = true;
    let mut next_resync = tokio::time::Instant::now();
    let mut parked = Parked::default();
    loop {
        if resync_due {
            next_resync = tokio::time::Instant::now() + RESYNC_EVERY;
            match resync_parking(&db, cluster.as_ref(), &signals, &mut parked).await {
                Ok(()) => resync_due = false,
                Err(e) => {
                    tracing::warn!(error = %e, "listing the cluster's jobs for a status resync failed");
                    tokio::select! {
                        () = tokio::time::sleep(std::time::Duration::from_secs(5)) => continue,
                        () = signals.closed() => return,
                    }
                }
            }
        }
        tokio::select! {
            received = events.recv() => match received {
                Ok(event) => {
                    // Whatever else arrived meanwhile goes with it.
                    let mut batch = vec![event];
                    while batch.len() < BATCH {
                        match events.try_recv() {
                            Ok(event) => batch.push(event),
                            Err(tokio::sync::broadcast::error::TryRecvError::Lagged(missed)) => {
                                tracing::warn!(missed, "the status stream lagged; resyncing");
                                resync_due = true;
                            }
                            Err(_) => break,
                        }
                    }
                    if !note_all(&db, cluster.as_ref(), &signals, &batch, &mut parked).await {
                        // A status that failed is listed again by the resync (a `Gone` that
                        // failed shows there as the job's absence only if it was preempted;
                        // the others are seen again by the next status of the job).
                        resync_due = true;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "the status stream lagged; resyncing");
                    resync_due = true;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            () = tokio::time::sleep_until(next_resync) => resync_due = true,
            // The activation path wrote its events (its `Pending` with them), or time passed:
            // the parked statuses again.
            () = parked_due(&parked, &signals) => {
                let again = parked.take();
                note_all(&db, cluster.as_ref(), &signals, &again, &mut parked).await;
            }
            () = signals.closed() => return,
        }
    }
}

/// Resolves when parked statuses should be tried again: when job events were written, or
/// after [`PARKED_RETRY`]; never while none is parked.
async fn parked_due(parked: &Parked, signals: &Signals) {
    if parked.statuses.is_empty() {
        return std::future::pending().await;
    }
    tokio::time::sleep_until(parked.last_retry + PARKED_SPACING).await;
    let _ = tokio::time::timeout(PARKED_RETRY, signals.events().notified()).await;
}

/// Applies `events` ([`apply_all`]) and acts on what they did; `false` when storing one of
/// them failed (logged).
async fn note_all(
    db: &DatabaseConnection,
    cluster: &dyn crate::cluster::Cluster,
    signals: &Signals,
    events: &[JobEvent],
    parked: &mut Parked,
) -> bool {
    let applied = apply_all(db, cluster, events).await;
    let mut stored = true;
    if applied.iter().any(|a| matches!(a, Ok(Applied::Finished))) {
        signals.events_written();
        signals.wake_watcher();
    } else if applied.iter().any(|a| matches!(a, Ok(Applied::Updated))) {
        // A job's pods started (its `started` event), or moved.
        signals.events_written();
    }
    for (event, applied) in events.iter().zip(applied) {
        match applied {
            Ok(Applied::Parked) => parked.keep(event),
            Ok(Applied::Orphan) => {
                parked.supersede(event);
                delete_orphan(cluster, event).await;
            }
            Ok(_) => parked.supersede(event),
            Err(e) => {
                tracing::warn!(error = %e, "storing a cluster status failed");
                stored = false;
            }
        }
    }
    stored
}

/// The cluster runs a job the store has ended: delete it there.
async fn delete_orphan(cluster: &dyn crate::cluster::Cluster, event: &JobEvent) {
    let JobEvent::Status(status) = event else {
        return;
    };
    tracing::warn!(
        job = status.job_id,
        "the cluster runs a job the store has ended; deleting it"
    );
    // The object observed: its own uid (an unlabelled one is a legacy job's).
    let uid = status
        .cluster_uid
        .clone()
        .unwrap_or_else(|| crate::jobs::entity::job::legacy_cluster_uid(status.job_id));
    if let Err(e) = cluster
        .delete_job(status.job_id, &uid, crate::jobs::DELETE_GRACE_SECONDS)
        .await
    {
        tracing::warn!(job = status.job_id, error = %e, "deleting an orphaned job failed; the next resync retries");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anteroom_shared::scheduling::JobPhase;

    fn status(job_id: i64, phase: JobPhase) -> JobEvent {
        JobEvent::Status(JobStatus {
            job_id,
            phase,
            nodes: Vec::new(),
            observed_at: Utc::now(),
            started_at: None,
            failure: None,
            cluster_uid: None,
            failed_pod: None,
        })
    }

    #[test]
    fn a_status_parked_again_keeps_when_it_was_parked_first_and_a_later_one_supersedes_it() {
        let mut parked = Parked::default();
        parked.keep(&status(7, JobPhase::Pending));
        let first = parked.statuses[&7].1;
        // Retried and parked again (the job still `Activating`): the first time stays, so the
        // status is given up on after `RESYNC_EVERY` instead of being retried for ever.
        let again = parked.take();
        assert_eq!(again.len(), 1);
        assert!(parked.statuses.is_empty());
        parked.keep(&again[0]);
        assert_eq!(parked.statuses[&7].1, first);
        // A later status of the job replaces it, keeping the first time too.
        parked.keep(&status(7, JobPhase::Running));
        assert_eq!(parked.statuses[&7].1, first);
        assert!(matches!(&parked.statuses[&7].0, JobEvent::Status(s) if s.phase == JobPhase::Running));
        // Applied (by the stream or the resync): the parked one is stale and goes.
        parked.supersede(&status(7, JobPhase::Running));
        assert!(parked.statuses.is_empty());
        assert!(parked.take().is_empty());
    }

    #[test]
    fn a_status_parked_longer_than_a_resync_is_left_to_it() {
        let mut parked = Parked::default();
        parked.keep(&status(8, JobPhase::Pending));
        let long_ago = tokio::time::Instant::now()
            .checked_sub(RESYNC_EVERY + std::time::Duration::from_secs(1))
            .expect("the clock is past that");
        parked.statuses.get_mut(&8).expect("parked").1 = long_ago;
        assert!(parked.take().is_empty());
    }
}

//! The watcher's metrics on `/metrics` (`spec/prequeue.md` §5, issue 16): prequeue length by
//! queue, activations, preemptions and failures (counters), round duration and the time from
//! submission to activation (histograms), and whether this replica leads.

use anteroom_shared::scheduling::JobPhase;
use axum_prometheus::metrics;

use crate::prequeue::Snapshot;

/// `anteroom_prequeue_jobs{queue}`: prequeued jobs per queue, every queue (0 included, so a
/// queue that emptied does not keep its last value).
pub(super) fn prequeue_lengths(snapshot: &Snapshot) {
    let mut counts: std::collections::BTreeMap<&str, u64> =
        snapshot.queues.iter().map(|q| (q.name.as_str(), 0)).collect();
    for job in snapshot.jobs.iter().filter(|j| j.phase == JobPhase::Prequeue) {
        *counts.entry(job.queue.as_str()).or_default() += 1;
    }
    for (queue, count) in counts {
        metrics::gauge!("anteroom_prequeue_jobs", "queue" => queue.to_owned()).set(count as f64);
    }
}

/// `anteroom_prequeue_round_seconds`: a finished round's duration.
pub(super) fn round_done(took: std::time::Duration) {
    metrics::histogram!("anteroom_prequeue_round_seconds").record(took.as_secs_f64());
}

/// One job activated: `anteroom_prequeue_activations_total`, and
/// `anteroom_prequeue_activation_wait_seconds` (from submission to activation). Counted where
/// it happens, so a round that fails later still counts what it did.
pub(super) fn activated(waited_seconds: f64) {
    metrics::counter!("anteroom_prequeue_activations_total").increment(1);
    metrics::histogram!("anteroom_prequeue_activation_wait_seconds").record(waited_seconds);
}

/// One job `Failed` after its last allowed create: `anteroom_prequeue_failed_total{cause=
/// "activation"}` (the cluster's own failures count under `cause="cluster"`, in status sync).
pub(super) fn gave_up() {
    metrics::counter!("anteroom_prequeue_failed_total", "cause" => "activation").increment(1);
}

/// Jobs preempted: `anteroom_prequeue_preempted_total`.
/// Borrowing jobs reclaimed for jobs owed their queue's guarantee (§9).
pub(super) fn reclaimed(victims: usize) {
    metrics::counter!("anteroom_prequeue_reclaimed_total").increment(victims as u64);
}

pub(super) fn preempted(victims: usize) {
    metrics::counter!("anteroom_prequeue_preempted_total").increment(victims as u64);
}

/// `anteroom_prequeue_requeued_total`: preempted jobs sent back to the prequeue.
pub(super) fn requeued() {
    metrics::counter!("anteroom_prequeue_requeued_total").increment(1);
}

/// `anteroom_prequeue_requeue_refused_total{code}`: preempted jobs not admitted again when
/// their requeue came (`spec/prequeue.md` §6), by refusal code.
pub(super) fn requeue_refused(code: &'static str) {
    metrics::counter!("anteroom_prequeue_requeue_refused_total", "code" => code).increment(1);
}

/// `anteroom_prequeue_leader`: 1 while this replica holds the watcher's lease.
pub(super) fn leader(is_leader: bool) {
    metrics::gauge!("anteroom_prequeue_leader").set(if is_leader { 1.0 } else { 0.0 });
    if is_leader {
        // Present from the start (at 0), so a dashboard's rate has a series to work on.
        metrics::counter!("anteroom_prequeue_activations_total").increment(0);
        metrics::counter!("anteroom_prequeue_preempted_total").increment(0);
        metrics::counter!("anteroom_prequeue_reclaimed_total").increment(0);
        metrics::counter!("anteroom_prequeue_failed_total", "cause" => "activation").increment(0);
    }
}

/// The plans (beneficiary, when) already counted as missed.
pub(super) type SeenPlans = std::sync::Mutex<std::collections::HashSet<(i64, chrono::DateTime<chrono::Utc>)>>;

/// `anteroom_preemption_misses_total`: plans whose victims are gone while their beneficiary
/// still does not fit — the scheduler gave the freed room to another job. Counted once per
/// plan (`seen` remembers the plans counted by this process; a new leader may count a plan
/// again).
pub(super) fn preemption_missed(seen: &SeenPlans, beneficiary: i64, planned_at: chrono::DateTime<chrono::Utc>) {
    let mut seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if seen.len() > 10_000 {
        seen.clear();
    }
    if seen.insert((beneficiary, planned_at)) {
        metrics::counter!("anteroom_preemption_misses_total").increment(1);
    }
}

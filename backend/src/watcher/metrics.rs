//! The watcher's metrics on `/metrics` (`spec/prequeue.md` §5, issue 16): prequeue length by
//! queue, activations, preemptions and failures (counters), round duration and the time from
//! submission to activation (histograms), and whether this replica leads.

use anteroom_shared::scheduling::JobPhase;
use axum_prometheus::metrics;

use super::RoundReport;
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

/// A round's counters and its duration: `anteroom_prequeue_activations_total`,
/// `anteroom_prequeue_preempted_total`, `anteroom_prequeue_failed_total{cause="activation"}` (the cluster's failures count under
/// `cause="cluster"`, in status sync),
/// `anteroom_prequeue_round_seconds`.
pub(super) fn round_done(report: &RoundReport, took: std::time::Duration) {
    metrics::counter!("anteroom_prequeue_activations_total").increment(report.activated.len() as u64);
    metrics::counter!("anteroom_prequeue_preempted_total").increment(report.preempted.len() as u64);
    metrics::counter!("anteroom_prequeue_failed_total", "cause" => "activation").increment(report.failed as u64);
    metrics::histogram!("anteroom_prequeue_round_seconds").record(took.as_secs_f64());
}

/// `anteroom_prequeue_activation_wait_seconds`: from submission to activation.
pub(super) fn activation_wait(seconds: f64) {
    metrics::histogram!("anteroom_prequeue_activation_wait_seconds").record(seconds);
}

/// `anteroom_prequeue_leader`: 1 while this replica holds the watcher's lease.
pub(super) fn leader(is_leader: bool) {
    metrics::gauge!("anteroom_prequeue_leader").set(if is_leader { 1.0 } else { 0.0 });
}

//! The watcher's metrics on `/metrics` (`spec/prequeue.md` §5, issues 16 and 44): prequeue
//! length, activations, preemptions and reclaims per queue, accelerators per queue against
//! guarantee and capacity, fair-share factors, failures, round duration and the time from
//! submission to activation (histograms with buckets, so `histogram_quantile` works across
//! replicas), and whether this replica leads. `deploy/grafana/anteroom.json` plots them; its
//! every query is checked against a real Prometheus (`tests/tests/prometheus_dashboard.rs`).

use axum_prometheus::metrics;

use crate::prequeue::Snapshot;

/// The queues this replica's rounds gave gauges to, and which of their optional gauges
/// (guarantee, capacity, fair-share factor) they showed: a queue deleted since, or a value
/// gone, is set to 0 rather than left at its last value (the exporter cannot drop a series).
static SHOWN: std::sync::Mutex<std::collections::BTreeMap<String, [bool; 3]>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

const KINDS: [&str; 2] = ["normal", "backfill"];

/// The per-queue gauges whose value only the replica leading has.
const QUEUE_OPTIONAL: [&str; 3] = [
    "anteroom_queue_accelerators_guaranteed",
    "anteroom_queue_accelerators_capacity",
    "anteroom_queue_fair_share_factor",
];

/// Zeroes `queue`'s gauges (those `optional` marks, and the per-kind ones when `all`).
fn zero(queue: &str, optional: [bool; 3], all: bool) {
    if all {
        for kind in KINDS {
            let labels = [("queue", queue.to_owned()), ("kind", kind.to_owned())];
            metrics::gauge!("anteroom_prequeue_jobs", &labels).set(0.0);
            metrics::gauge!("anteroom_queue_accelerators_used", &labels).set(0.0);
        }
    }
    for (name, shown) in QUEUE_OPTIONAL.iter().zip(optional) {
        if shown {
            metrics::gauge!(*name, "queue" => queue.to_owned()).set(0.0);
        }
    }
}

/// A replica that stops leading zeroes the gauges only the leader keeps, so a dashboard's sum
/// over replicas counts the new leader's alone (and its max is the new leader's).
pub(super) fn stood_down() {
    let mut shown = SHOWN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (queue, optional) in std::mem::take(&mut *shown) {
        zero(&queue, optional, true);
    }
    metrics::gauge!("anteroom_cluster_accelerators_allocatable").set(0.0);
    metrics::gauge!("anteroom_cluster_accelerators_used").set(0.0);
}

/// The round's gauges ([`crate::prequeue::gauges`]): `anteroom_prequeue_jobs{queue,kind}`,
/// `anteroom_queue_accelerators_{used{queue,kind},guaranteed,capacity}`,
/// `anteroom_queue_fair_share_factor`, `anteroom_cluster_accelerators_{allocatable,used}` and,
/// when an admin opted in, `anteroom_user_fair_share_factor{queue,user_id}`. Every queue's
/// counters are made present (at 0) too, so a dashboard's `rate` has a series from the start.
pub(super) fn round_gauges(snapshot: &Snapshot, with_users: bool) {
    let gauges = crate::prequeue::gauges::of(snapshot, with_users);
    let mut shown = SHOWN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut now: std::collections::BTreeMap<String, [bool; 3]> = std::collections::BTreeMap::new();
    for q in &gauges.queues {
        let optional = [
            q.accelerators_guaranteed.is_some(),
            q.accelerators_capacity.is_some(),
            q.fair_share_factor.is_some(),
        ];
        let before = shown.get(&q.queue).copied().unwrap_or_default();
        // A value gone since the last round (a guarantee removed, another order): 0.
        zero(&q.queue, [0, 1, 2].map(|i| before[i] && !optional[i]), false);
        now.insert(q.queue.clone(), optional);
    }
    for (gone, optional) in shown.iter().filter(|(q, _)| !now.contains_key(*q)) {
        zero(gone, *optional, true);
    }
    *shown = now;
    drop(shown);
    for q in &gauges.queues {
        for (k, kind) in KINDS.iter().enumerate() {
            let labels = [("queue", q.queue.clone()), ("kind", (*kind).to_owned())];
            metrics::gauge!("anteroom_prequeue_jobs", &labels).set(q.prequeued[k] as f64);
            metrics::gauge!("anteroom_queue_accelerators_used", &labels).set(q.accelerators_used[k]);
            metrics::counter!("anteroom_prequeue_activations_total", &labels).increment(0);
            // Registered before its first observation, so that observation is an increase a
            // `rate` sees (a series born at 1 has no earlier sample to differ from).
            let _ = metrics::histogram!("anteroom_prequeue_activation_wait_seconds", &labels);
        }
        let queue = [("queue", q.queue.clone())];
        metrics::counter!("anteroom_prequeue_preempted_total", &queue).increment(0);
        metrics::counter!("anteroom_prequeue_reclaimed_total", &queue).increment(0);
        if let Some(g) = q.accelerators_guaranteed {
            metrics::gauge!("anteroom_queue_accelerators_guaranteed", &queue).set(g);
        }
        if let Some(c) = q.accelerators_capacity {
            metrics::gauge!("anteroom_queue_accelerators_capacity", &queue).set(c);
        }
        if let Some(f) = q.fair_share_factor {
            metrics::gauge!("anteroom_queue_fair_share_factor", &queue).set(f);
        }
    }
    // Only the replica holding the lease runs rounds.
    metrics::gauge!("anteroom_prequeue_leader").set(1.0);
    metrics::gauge!("anteroom_cluster_accelerators_allocatable").set(gauges.cluster_allocatable);
    metrics::gauge!("anteroom_cluster_accelerators_used").set(gauges.cluster_used);
    for user in &gauges.users {
        let labels = [("queue", user.queue.clone()), ("user_id", user.owner.to_string())];
        metrics::gauge!("anteroom_user_fair_share_factor", &labels).set(user.factor);
    }
}

/// `anteroom_prequeue_round_seconds`: a finished round's duration.
pub(super) fn round_done(took: std::time::Duration) {
    metrics::histogram!("anteroom_prequeue_round_seconds").record(took.as_secs_f64());
}

/// One job activated: `anteroom_prequeue_activations_total{queue,kind}`, and
/// `anteroom_prequeue_activation_wait_seconds{queue,kind}` (from submission to activation; 0
/// for a job admitted at its submission). Counted where it happens, so a round that fails
/// later still counts what it did.
pub fn activated(queue: &str, kind: &str, waited_seconds: f64) {
    let labels = [("queue", queue.to_owned()), ("kind", kind.to_owned())];
    metrics::counter!("anteroom_prequeue_activations_total", &labels).increment(1);
    metrics::histogram!("anteroom_prequeue_activation_wait_seconds", &labels).record(waited_seconds);
}

/// One job `Failed` after its last allowed create: `anteroom_prequeue_failed_total{cause=
/// "activation"}` (the cluster's own failures count under `cause="cluster"`, in status sync).
pub(super) fn gave_up() {
    metrics::counter!("anteroom_prequeue_failed_total", "cause" => "activation").increment(1);
}

/// A borrowing job reclaimed for a job owed its queue's guarantee (§9):
/// `anteroom_prequeue_reclaimed_total{queue}`, the victim's queue.
pub(super) fn reclaimed(victim_queue: &str) {
    metrics::counter!("anteroom_prequeue_reclaimed_total", "queue" => victim_queue.to_owned()).increment(1);
}

/// A job preempted (an Elastic job for a normal one that waited too long, or a lower-priority
/// one): `anteroom_prequeue_preempted_total{queue}`, the victim's queue.
pub(super) fn preempted(victim_queue: &str) {
    metrics::counter!("anteroom_prequeue_preempted_total", "queue" => victim_queue.to_owned()).increment(1);
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
        // Present from the start (at 0), so a dashboard's rate has a series to work on; the
        // per-queue counters are made present by each round.
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

/// The `# HELP` lines of the watcher's metrics (and their units), so that whoever reads
/// `/metrics` or builds a dashboard learns what each series means from the scrape itself.
pub fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_gauge!(
        "anteroom_prequeue_jobs",
        "Jobs waiting in the prequeue, per queue and kind"
    );
    describe_counter!(
        "anteroom_prequeue_activations_total",
        "Jobs the watcher activated, per queue and kind"
    );
    describe_histogram!(
        "anteroom_prequeue_activation_wait_seconds",
        Unit::Seconds,
        "Time from submission to activation of the jobs the watcher activated"
    );
    describe_histogram!(
        "anteroom_prequeue_round_seconds",
        Unit::Seconds,
        "Duration of a watcher round"
    );
    describe_counter!(
        "anteroom_prequeue_preempted_total",
        "Jobs preempted, per victim's queue"
    );
    describe_counter!(
        "anteroom_prequeue_reclaimed_total",
        "Borrowing jobs reclaimed for a guarantee, per victim's queue"
    );
    describe_gauge!(
        "anteroom_queue_accelerators_used",
        "Accelerators held by the queue's subtree, per kind"
    );
    describe_gauge!(
        "anteroom_queue_accelerators_guaranteed",
        "Accelerators the queue's subtree is guaranteed"
    );
    describe_gauge!(
        "anteroom_queue_accelerators_capacity",
        "Accelerators the queue's capacity allows"
    );
    describe_gauge!(
        "anteroom_queue_fair_share_factor",
        "2^-(decayed usage as a part of the queue's capacity), under fairShareHistory: 1 unused, 0.5 kept full"
    );
    describe_gauge!(
        "anteroom_user_fair_share_factor",
        "A user's fair-share factor in a queue (metrics_user_labels = true)"
    );
    describe_gauge!(
        "anteroom_cluster_accelerators_allocatable",
        "Accelerators the ready nodes offer"
    );
    describe_gauge!(
        "anteroom_cluster_accelerators_used",
        "Accelerators in use on the ready nodes"
    );
    describe_gauge!("anteroom_prequeue_leader", "1 while this replica runs the watcher");
}

//! Property tests of time-aware backfill (`round/backfill.rs`) against the naive step
//! simulator of the forecast (`forecast/tests/naive.rs`: one second at a time, plain
//! `ResourceList` sums), on small random snapshots with timed-out blockers:
//!
//! - the jobs the rule lets through (selected, yet blocked by the naive statement of §5 step 4)
//!   delay no blocker: started now in the naive simulation, every timed-out blocker still
//!   starts no later than its estimate without them;
//! - the selection and the final pass agree with the rule restated naively (a limit, every
//!   blocker a `Prequeue` job whose estimate is at or after the job's end, and the naive
//!   forecast starting the job now): a blocked job is selected, or left without `blocked_by`,
//!   only when the naive rule lets it through, and one left with `blocked_by` alone is not;
//! - with the setting off, estimates or not, the selection is the naive FCFS or DRF one.

use anteroom_shared::scheduling::{ActivationOrder, JobPhase};
use chrono::{DateTime, Utc};
use proptest::prelude::*;

use super::fixtures::{JobBuilder, node, queue, rl};
use anteroom_shared::scheduling::domain_blocks;

use super::naive::{blocked, held_privately, naive_drf, naive_fcfs, now};
use crate::prequeue::forecast::tests::naive::{naive_forecast, naive_forecast_in_order, naive_order};
use crate::prequeue::round::PreparedRound;
use crate::prequeue::snapshot::{JobId, JobSnapshot, QueueQuota, Snapshot, usage_from_jobs};

/// Seconds the naive simulation runs: every limit is at most 40 s, at most 14 jobs.
const HORIZON: i64 = 800;

#[derive(Debug, Clone)]
struct Spec {
    owner: i64,
    queue: usize,
    cpu: i64,
    gpu: i64,
    /// 0–3: Prequeue; 4: Running; 5: Pending.
    phase: u8,
    limit: Option<i64>,
    submitted: i64,
    /// Timed out at `now` when below 40 (waiting since submission, ≤ 60 s after `t0`).
    tolerance: Option<i64>,
    /// 0–1: any node; 2: `n1`; 3: `n2`.
    nodes: u8,
    started_ago: i64,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        (
            1_i64..=3,
            0_usize..2,
            0_i64..5,
            prop_oneof![2 => Just(0_i64), 1 => 1_i64..3],
        ),
        (
            prop_oneof![8 => 0_u8..4, 3 => Just(4_u8), 1 => Just(5_u8)],
            proptest::option::weighted(0.8, 1_i64..=40),
            0_i64..60,
        ),
        (proptest::option::weighted(0.6, 0_i64..80), 0_u8..4, 0_i64..60),
    )
        .prop_map(
            |((owner, queue, cpu, gpu), (phase, limit, submitted), (tolerance, nodes, started_ago))| Spec {
                owner,
                queue,
                cpu,
                gpu,
                phase,
                limit,
                submitted,
                tolerance,
                nodes,
                started_ago,
            },
        )
}

fn build(id: JobId, spec: &Spec) -> JobSnapshot {
    let mut b = JobBuilder::normal(id)
        .owner(spec.owner)
        .queue(["a", "b"][spec.queue])
        .submitted(spec.submitted)
        .cpu(&spec.cpu.to_string())
        .gpus("nvidia.com/a100", spec.gpu);
    if let Some(limit) = spec.limit {
        b = b.limit(limit);
    }
    if let Some(t) = spec.tolerance {
        b = b.tolerance(t);
    }
    b = match spec.nodes {
        2 => b.nodes(&["n1"]),
        3 => b.nodes(&["n2"]),
        _ => b,
    };
    let mut job = match spec.phase {
        4 => b.running_on("n1").build(),
        5 => b.phase(JobPhase::Pending).build(),
        _ => b.build(),
    };
    if job.phase == JobPhase::Running {
        job.started_at = Some(now() - chrono::Duration::seconds(spec.started_ago));
    }
    job
}

/// Queues `a` (often with a capacity) and `b`; sometimes a quota rule on `a`; two nodes.
fn snapshot() -> impl Strategy<Value = Snapshot> {
    (
        (any::<bool>(), any::<bool>(), any::<bool>(), 1_i64..8),
        proptest::option::weighted(0.5, (0_i64..10, 0_i64..4)),
        proptest::option::weighted(0.3, (1_i64..8, proptest::option::of(1_u32..3))),
        proptest::collection::vec(spec(), 0..=14),
    )
        .prop_map(|((backfill, quotas, fair, limit), cap, rule, specs)| {
            let mut s = Snapshot::default();
            s.config.backfill_enabled = backfill;
            s.config.queue_quota_enabled = quotas;
            s.config.time_aware_backfill = true;
            s.config.prequeue_candidate_size = limit;
            s.config.activation_order = if fair {
                ActivationOrder::FairShare
            } else {
                ActivationOrder::Fcfs
            };
            let cap = cap.map(|(cpu, gpu)| rl(&[("cpu", &cpu.to_string()), ("nvidia.com/a100", &gpu.to_string())]));
            s.queues = vec![queue("a", None, cap), queue("b", None, None)];
            if let Some((cpu, max_active_jobs)) = rule {
                s.quotas.push(QueueQuota {
                    queue: "a".into(),
                    limits: rl(&[("cpu", &cpu.to_string())]),
                    max_active_jobs,
                });
            }
            s.jobs = specs
                .iter()
                .enumerate()
                .map(|(i, sp)| build(i as JobId + 1, sp))
                .collect();
            s.usage = usage_from_jobs(&s.jobs);
            s.nodes = vec![
                node("n1", &[("cpu", "6"), ("nvidia.com/a100", "3")]),
                node("n2", &[("cpu", "4")]),
            ];
            s
        })
}

/// The naive forecast's known starts, as the watcher passes them to the round.
fn estimates(s: &Snapshot) -> Vec<(JobId, DateTime<Utc>)> {
    naive_forecast(s, now(), HORIZON)
        .into_iter()
        .filter_map(|(id, start)| Some((id, start?)))
        .collect()
}

fn job(s: &Snapshot, id: JobId) -> &JobSnapshot {
    s.jobs.iter().find(|j| j.id == id).expect("listed")
}

/// The timed-out `Prequeue` jobs that block others (§1: not held privately).
fn blockers(s: &Snapshot) -> Vec<&JobSnapshot> {
    s.jobs
        .iter()
        .filter(|j| j.phase == JobPhase::Prequeue && j.is_timed_out(now()) && !held_privately(s, j))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn jobs_let_through_by_time_aware_backfill_delay_no_blocker(s in snapshot()) {
        let est = estimates(&s);
        let prepared = PreparedRound::with_start_estimates(&s, now(), &est).expect("prepared");
        let outcome = prepared.select();
        let through: Vec<JobId> = outcome
            .selected
            .iter()
            .copied()
            .filter(|&id| blocked(&s, job(&s, id)))
            .collect();
        // Started now, with their limits, as the cluster would run them; the usage rows (and
        // so the fair-share order) stay those of the forecast the estimates came from.
        let mut forced = s.clone();
        for j in forced.jobs.iter_mut().filter(|j| through.contains(&j.id)) {
            j.phase = JobPhase::Running;
            j.started_at = Some(now());
        }
        // The forecast's model: its consideration order, computed once, less the jobs started.
        let order: Vec<JobId> = naive_order(&s).into_iter().filter(|id| !through.contains(id)).collect();
        let after = naive_forecast_in_order(&forced, now(), HORIZON, &order);
        for b in blockers(&s) {
            let Some(before) = est.iter().find(|(id, _)| *id == b.id).map(|e| e.1) else {
                continue;
            };
            let started = after.iter().find(|(id, _)| *id == b.id).and_then(|(_, t)| *t);
            prop_assert!(
                started.is_some_and(|t| t <= before),
                "blocker {} estimated at {} starts at {:?} once {:?} start now",
                b.id, before, started, through
            );
        }
    }

    #[test]
    fn the_selection_and_the_final_pass_agree_with_the_naive_rule(s in snapshot()) {
        let est = estimates(&s);
        let baseline = naive_forecast(&s, now(), HORIZON);
        let prepared = PreparedRound::with_start_estimates(&s, now(), &est).expect("prepared");
        let outcome = prepared.select();
        for &id in &outcome.selected {
            let j = job(&s, id);
            if blocked(&s, j) {
                prop_assert!(naive_lets_through(&s, &est, &baseline, j), "job {} selected past a blocker", id);
            }
        }
        for w in &outcome.waiting {
            let j = job(&s, w.id);
            if w.causes.blocked_by().is_some() && !w.causes.held_privately() && !w.causes.queue_capacity() {
                prop_assert!(!naive_lets_through(&s, &est, &baseline, j), "job {} left blocked_by", w.id);
            }
            if blocked(&s, j) && w.causes.blocked_by().is_none() {
                prop_assert!(naive_lets_through(&s, &est, &baseline, j), "job {} lost blocked_by", w.id);
            }
        }
    }

    #[test]
    fn with_the_setting_off_the_selection_is_the_current_one(mut s in snapshot(), with_estimates in any::<bool>()) {
        s.config.time_aware_backfill = false;
        let est = if with_estimates { estimates(&s) } else { Vec::new() };
        let outcome = PreparedRound::with_start_estimates(&s, now(), &est).expect("prepared").select();
        let expected = match s.config.activation_order {
            ActivationOrder::Fcfs => naive_fcfs(&s),
            ActivationOrder::FairShare | ActivationOrder::FairShareHistory => naive_drf(&s),
        };
        prop_assert_eq!(&outcome.selected, &expected);
        let plain = PreparedRound::new(&s, now()).expect("prepared").select();
        prop_assert_eq!(outcome.selected, plain.selected);
        prop_assert_eq!(outcome.waiting, plain.waiting);
    }
}

/// The rule restated: `job` has a limit; every timed-out job that would hold it (§5 step 4, as
/// `blocked` reads it) is a `Prequeue` job with an estimate at or after `now + limit`; and the
/// naive forecast starts `job` at `now`.
fn naive_lets_through(
    s: &Snapshot,
    est: &[(JobId, DateTime<Utc>)],
    baseline: &[(JobId, Option<DateTime<Utc>>)],
    job: &JobSnapshot,
) -> bool {
    let Some(limit) = job.max_runtime_seconds else {
        return false;
    };
    let end = now() + chrono::Duration::seconds(limit.max(0));
    let domain = job.resources.domain();
    let timed_out = job.is_timed_out(now());
    let holders = s.jobs.iter().filter(|b| {
        b.id != job.id
            && b.queue == job.queue
            && b.is_timed_out(now())
            && (b.phase == JobPhase::Pending || (b.phase == JobPhase::Prequeue && !timed_out && !held_privately(s, b)))
            && domain_blocks(&b.resources.domain(), &domain)
            && b.explicit_nodes.overlaps(&job.explicit_nodes)
    });
    let mut holders = holders.peekable();
    holders.peek().is_some()
        && holders.all(|b| b.phase == JobPhase::Prequeue && est.iter().any(|(id, start)| *id == b.id && end <= *start))
        && baseline
            .iter()
            .any(|(id, start)| *id == job.id && *start == Some(now()))
}

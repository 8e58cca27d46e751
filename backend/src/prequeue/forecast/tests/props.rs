//! Property tests: the forecast equals the naive step simulator (`naive.rs`) on small random
//! snapshots, start and basis of every job, in both activation orders; the consideration order
//! equals the naive order, is submission order under FCFS, and under fair share is the order
//! a round selects in when every job is eligible.

use std::collections::BTreeMap;

use anteroom_shared::scheduling::{ActivationOrder, JobPhase, Quantity, ResourceList};
use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;

use super::naive::{naive_forecast, naive_order};
use crate::prequeue::forecast::{EstimateBasis, ForecastBounds, StartEstimate, consideration_order, forecast};
use crate::prequeue::round::select_round;
use crate::prequeue::snapshot::{JobId, JobSnapshot, QueueQuota, Snapshot, usage_from_jobs};
use crate::prequeue::tests::fixtures::{JobBuilder, node, queue, t0};

/// `ghost` is named by jobs and rules only (a root without a capacity).
const QUEUES: [&str; 4] = ["root", "a", "b", "ghost"];

fn now() -> DateTime<Utc> {
    t0() + Duration::seconds(100)
}

#[derive(Debug, Clone)]
struct JobSpec {
    owner: i64,
    queue: usize,
    cpu: i64,
    gpu: i64,
    fpga: bool,
    backfill: bool,
    /// 0–1: Prequeue; 2: Running; 3: Pending; 4: Activating.
    phase: u8,
    limit: Option<i64>,
    submitted: i64,
    /// A running job started this long before `now` (its end may be past: released now).
    started_ago: i64,
}

fn job_spec() -> impl Strategy<Value = JobSpec> {
    (
        (
            1_i64..=3,
            0_usize..4,
            0_i64..4,
            prop_oneof![3 => Just(0_i64), 1 => 1_i64..3],
        ),
        (proptest::bool::weighted(0.1), proptest::bool::weighted(0.25), 0_u8..5),
        (proptest::option::weighted(0.8, 1_i64..=50), 0_i64..60, 0_i64..80),
    )
        .prop_map(
            |((owner, queue, cpu, gpu), (fpga, backfill, phase), (limit, submitted, started_ago))| JobSpec {
                owner,
                queue,
                cpu,
                gpu,
                fpga,
                backfill,
                phase,
                limit,
                submitted,
                started_ago,
            },
        )
}

fn build_job(id: JobId, spec: &JobSpec) -> JobSnapshot {
    let mut b = if spec.backfill {
        JobBuilder::backfill(id)
    } else {
        JobBuilder::normal(id)
    };
    b = b
        .owner(spec.owner)
        .queue(QUEUES[spec.queue])
        .submitted(spec.submitted)
        .cpu(&spec.cpu.to_string())
        .gpus("nvidia.com/a100", spec.gpu);
    if spec.fpga {
        b = b.res("example.com/fpga", "1");
    }
    if let Some(limit) = spec.limit {
        b = b.limit(limit);
    }
    let mut job = match spec.phase {
        2 => b.running_on("n1").build(),
        3 => b.phase(JobPhase::Pending).build(),
        4 => b.phase(JobPhase::Activating).build(),
        _ => b.build(),
    };
    if job.phase == JobPhase::Running {
        job.started_at = Some(now() - Duration::seconds(spec.started_ago));
    }
    job
}

fn limits() -> impl Strategy<Value = ResourceList> {
    (proptest::option::of(0_i64..7), proptest::option::of(0_i64..3)).prop_map(|(cpu, gpu)| {
        let mut l = ResourceList::new();
        if let Some(c) = cpu {
            l.insert("cpu", Quantity::from_units(c));
        }
        if let Some(g) = gpu {
            l.insert("nvidia.com/a100", Quantity::from_units(g));
        }
        l
    })
}

/// ≤ 3 users, queues `root` (a parent, usually with a capacity) → `a`, a separate `b`, and
/// `ghost` (no row); ≤ 12 jobs; quota rules on some queues; three nodes, one often cordoned and
/// one often not ready (and the only one with the FPGA).
fn snapshot() -> impl Strategy<Value = Snapshot> {
    (
        (any::<bool>(), any::<bool>(), any::<bool>()),
        (
            proptest::option::weighted(0.7, limits()),
            proptest::option::weighted(0.3, limits()),
            proptest::option::weighted(0.2, limits()),
        ),
        proptest::collection::vec(
            proptest::option::weighted(0.4, (limits(), proptest::option::of(1_u32..3))),
            4,
        ),
        proptest::collection::vec(job_spec(), 0..=12),
        (proptest::bool::weighted(0.3), proptest::bool::weighted(0.5)),
    )
        .prop_map(
            |((backfill, quotas, fair), (root_cap, a_cap, b_cap), rules, jobs, (cordoned, not_ready))| {
                let mut s = Snapshot::default();
                s.config.backfill_enabled = backfill;
                s.config.queue_quota_enabled = quotas;
                s.config.activation_order = if fair {
                    ActivationOrder::FairShare
                } else {
                    ActivationOrder::Fcfs
                };
                s.queues = vec![
                    queue("root", None, root_cap),
                    queue("a", Some("root"), a_cap),
                    queue("b", None, b_cap),
                ];
                for (i, rule) in rules.into_iter().enumerate() {
                    if let Some((limits, max_active_jobs)) = rule {
                        s.quotas.push(QueueQuota {
                            queue: QUEUES[i].into(),
                            limits,
                            max_active_jobs,
                        });
                    }
                }
                s.jobs = jobs
                    .iter()
                    .enumerate()
                    .map(|(i, spec)| build_job(i as JobId + 1, spec))
                    .collect();
                s.usage = usage_from_jobs(&s.jobs);
                s.nodes = vec![
                    node("n1", &[("cpu", "6"), ("nvidia.com/a100", "2")]),
                    node("n2", &[("cpu", "4")]),
                    node("n3", &[("cpu", "2"), ("example.com/fpga", "1")]),
                ];
                s.nodes[1].schedulable = !cordoned;
                s.nodes[2].ready = !not_ready;
                s
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn the_forecast_equals_a_naive_second_by_second_simulation(
        s in snapshot(),
        horizon in prop_oneof![2 => Just(2_000_i64), 1 => 0_i64..60],
    ) {
        // No step cap: the horizon alone bounds both, at the same instant.
        let bounds = ForecastBounds { max_steps: usize::MAX, horizon: Duration::seconds(horizon) };
        let expected: Vec<StartEstimate> = naive_forecast(&s, now(), horizon)
            .into_iter()
            .map(|(id, start)| StartEstimate {
                id,
                start,
                basis: if start.is_some() { EstimateBasis::Limits } else { EstimateBasis::Unknown },
            })
            .collect();
        prop_assert_eq!(forecast(&s, now(), bounds), expected);
    }

    #[test]
    fn the_consideration_order_equals_the_naive_order(s in snapshot()) {
        prop_assert_eq!(consideration_order(&s), naive_order(&s));
    }

    #[test]
    fn under_fcfs_the_consideration_order_is_submission_order(mut s in snapshot(), seed in any::<u64>()) {
        s.config.activation_order = ActivationOrder::Fcfs;
        crate::prequeue::tests::fixtures::shuffle(&mut s.jobs, seed);
        let mut expected: Vec<(DateTime<Utc>, JobId)> = s
            .jobs
            .iter()
            .filter(|j| j.phase == JobPhase::Prequeue)
            .map(|j| (j.submitted_at, j.id))
            .collect();
        expected.sort();
        let expected: Vec<JobId> = expected.into_iter().map(|(_, id)| id).collect();
        prop_assert_eq!(consideration_order(&s), expected);
    }

    #[test]
    fn under_fair_share_with_every_job_eligible_a_round_selects_in_consideration_order(mut s in snapshot()) {
        // Quotas off (and so no blockers) and backfill on: nothing holds any job in a round.
        s.config.activation_order = ActivationOrder::FairShare;
        s.config.queue_quota_enabled = false;
        s.config.backfill_enabled = true;
        s.config.prequeue_candidate_size = 1_000;
        s.config.max_total_activations_per_round = 1_000;
        let order = consideration_order(&s);
        let outcome = select_round(&s, now()).expect("prepared");
        prop_assert_eq!(outcome.selected.first(), order.first());
        prop_assert_eq!(outcome.selected, order);
    }

    #[test]
    fn a_forecast_lists_every_prequeued_job_once_and_never_before_now(s in snapshot()) {
        let estimates = forecast(&s, now(), ForecastBounds::default());
        let mut ids: BTreeMap<JobId, usize> = BTreeMap::new();
        for e in &estimates {
            *ids.entry(e.id).or_default() += 1;
            prop_assert_eq!(e.start.is_some(), e.basis == EstimateBasis::Limits);
            prop_assert!(e.start.is_none_or(|t| t >= now()));
        }
        let prequeued = s.jobs.iter().filter(|j| j.phase == JobPhase::Prequeue).count();
        prop_assert_eq!(ids.len(), prequeued);
        prop_assert!(ids.values().all(|&n| n == 1));
    }
}

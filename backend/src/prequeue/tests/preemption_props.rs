//! Property tests of [`plan_preemption`] as a whole (issue 14, point 11): on small clusters
//! the plan (and why older candidates got none) is compared with a brute-force restatement of
//! `spec/prequeue.md` §5 step 3 written from the spec, not from the implementation — every
//! subset of every node's eligible victims is tried — plus the invariants a plan must keep,
//! and determinism under any order of the input.

use anteroom_shared::scheduling::{JobKind, JobPhase, NodeSet, PreemptionPolicy, ResourceList, ScheduleType};
use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;

use super::fixtures::{JobBuilder, node, rl, shuffle, t0};
use crate::prequeue::preemption::{PreemptionOutcome, PreemptionPlan, PreemptionSkip, plan_preemption};
use crate::prequeue::snapshot::{InFlightPreemption, JobId, JobSnapshot, NodeSnapshot, Snapshot};

const NODES: [&str; 3] = ["n1", "n2", "n3"];
const RESOURCES: [&str; 2] = ["cpu", "nvidia.com/a100"];

fn now() -> DateTime<Utc> {
    t0() + Duration::seconds(1000)
}

/// A node: allocatable and free per resource, ready, schedulable.
type NodeSpec = ((i64, i64), (i64, i64), bool, bool);

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        (6_i64..10, 3_i64..6),
        // Little free room, so most candidates need a plan.
        (0_i64..4, 0_i64..2),
        proptest::bool::weighted(0.95),
        proptest::bool::weighted(0.95),
    )
}

/// A candidate beneficiary: request, submitted (seconds after t0), tolerance, pending,
/// single node, pinned to a node (index) or not, `Never` policy.
type WaiterSpec = ((i64, i64), i64, i64, bool, bool, Option<usize>, bool);

fn waiter_spec() -> impl Strategy<Value = WaiterSpec> {
    (
        (1_i64..9, 0_i64..5),
        0_i64..200,
        0_i64..1200,
        proptest::bool::weighted(0.85),
        proptest::bool::weighted(0.9),
        proptest::option::weighted(0.3, 0_usize..3),
        proptest::bool::weighted(0.1),
    )
}

/// How long a victim has run: no start time, some seconds, or the minimum runtime plus -1, 0
/// or +1 second (the boundary).
#[derive(Debug, Clone, Copy)]
enum Ran {
    Unknown,
    Seconds(i64),
    MinimumPlus(i64),
}

/// A running job that may or may not be a victim: resources, node (index modulo the number
/// of nodes; 3 = a node the snapshot lacks), kind, backfill, running, locked, how long it has run, on a second node
/// too, single node.
type VictimSpec = ((i64, i64), usize, u8, bool, bool, bool, Ran, bool, bool);

fn victim_spec() -> impl Strategy<Value = VictimSpec> {
    (
        (0_i64..4, 0_i64..3),
        prop_oneof![9 => 0_usize..3, 1 => Just(3_usize)],
        prop_oneof![9 => 0_u8..3, 1 => Just(3_u8)],
        proptest::bool::weighted(0.95),
        proptest::bool::weighted(0.95),
        proptest::bool::weighted(0.05),
        prop_oneof![
            1 => Just(Ran::Unknown),
            6 => (0_i64..400).prop_map(Ran::Seconds),
            3 => (-1_i64..=1).prop_map(Ran::MinimumPlus),
        ],
        proptest::bool::weighted(0.05),
        proptest::bool::weighted(0.95),
    )
}

fn resources(cpu: i64, gpu: i64) -> ResourceList {
    rl(&[(RESOURCES[0], &cpu.to_string()), (RESOURCES[1], &gpu.to_string())])
}

fn snapshot() -> impl Strategy<Value = Snapshot> {
    (
        (
            proptest::bool::weighted(0.9),
            prop_oneof![3 => Just(0_i64), 1 => 0_i64..300],
        ),
        proptest::collection::vec(node_spec(), 1..=3),
        proptest::collection::vec(waiter_spec(), 1..=3),
        proptest::collection::vec(victim_spec(), 2..=12),
        proptest::collection::vec((0_usize..3, 0_usize..3, proptest::bool::weighted(0.6)), 0..=2),
    )
        .prop_map(|((blocking, min_runtime), nodes, waiters, victims, in_flight)| {
            let mut s = Snapshot::default();
            s.config.backfill_enabled = blocking;
            s.config.backfill_min_runtime_seconds = min_runtime;
            s.nodes = nodes
                .iter()
                .enumerate()
                .map(|(i, ((a_cpu, a_gpu), (f_cpu, f_gpu), ready, schedulable))| {
                    let mut n: NodeSnapshot = node(NODES[i], &[]);
                    n.allocatable = resources(*a_cpu, *a_gpu);
                    n.free = resources(*f_cpu.min(a_cpu), *f_gpu.min(a_gpu));
                    n.ready = *ready;
                    n.schedulable = *schedulable;
                    n
                })
                .collect();
            for (i, ((cpu, gpu), submitted, tolerance, pending, single, pinned, never)) in waiters.iter().enumerate() {
                let mut job = JobBuilder::normal(i as JobId + 1)
                    .submitted(*submitted)
                    .tolerance(*tolerance)
                    .phase(if *pending { JobPhase::Pending } else { JobPhase::Running })
                    .build();
                job.resources = resources(*cpu, *gpu);
                job.single_node = *single;
                if let Some(p) = pinned {
                    job.explicit_nodes = NodeSet::from_names([NODES[*p]]);
                }
                if *never {
                    job.preemption_policy = PreemptionPolicy::Never;
                }
                s.jobs.push(job);
            }
            for (i, ((cpu, gpu), at, kind, backfill, running, locked, ran, second, single)) in
                victims.iter().enumerate()
            {
                let id = 100 + i as JobId;
                let mut job = if *backfill {
                    JobBuilder::backfill(id)
                } else {
                    JobBuilder::normal(id)
                }
                // Several victims share a submission second: ties go to the id.
                .submitted(i as i64 / 2)
                .running_on(if *at < 3 { NODES[at % nodes.len()] } else { "gone" })
                .build();
                job.resources = resources(*cpu, *gpu);
                job.kind = [JobKind::Custom, JobKind::Jupyter, JobKind::Webide, JobKind::Pytorch][usize::from(*kind)];
                if !running {
                    job.phase = JobPhase::Pending;
                }
                if *locked {
                    job.locked_until = Some(now() + Duration::seconds(60));
                }
                job.started_at = match ran {
                    Ran::Unknown => None,
                    Ran::Seconds(r) => Some(now() - Duration::seconds(*r)),
                    Ran::MinimumPlus(d) => Some(now() - Duration::seconds(min_runtime + d)),
                };
                if *second {
                    job.nodes.push(NODES[(at + 1) % 3].into());
                    job.nodes.dedup();
                }
                job.single_node = *single;
                s.jobs.push(job);
            }
            s.preemptions_in_flight = in_flight
                .iter()
                .map(|(beneficiary, at, active)| InFlightPreemption {
                    beneficiary: *beneficiary as JobId + 1,
                    node: NODES[*at].into(),
                    terminating_victims: if *active { vec![999] } else { Vec::new() },
                })
                .collect();
            // The same beneficiaries had their last plan 0, 150 or 300 s ago: some within
            // their window (their tolerance), some past it.
            s.recent_plans = in_flight
                .iter()
                .map(|(beneficiary, at, _)| crate::prequeue::snapshot::RecentPlan {
                    beneficiary: *beneficiary as JobId + 1,
                    planned_at: now() - Duration::seconds(*at as i64 * 150),
                })
                .collect();
            s
        })
}

/// The spec's victim: running backfill jupyter/webide/custom, unlocked, single-node, on exactly
/// one node, that has run for at least the minimum (exactly the minimum counts).
fn naive_victim_on(s: &Snapshot, job: &JobSnapshot, node: &str) -> bool {
    let min = s.config.backfill_min_runtime_seconds;
    job.phase == JobPhase::Running
        && job.schedule_type == ScheduleType::Backfill
        && matches!(job.kind, JobKind::Jupyter | JobKind::Webide | JobKind::Custom)
        && job.locked_until.is_none_or(|until| until <= now())
        && job.single_node
        && job.nodes.iter().all(|n| n == node)
        && !job.nodes.is_empty()
        && (min == 0 || job.started_at.is_some_and(|at| now() - at >= Duration::seconds(min)))
}

fn naive_covers(have: &ResourceList, need: &ResourceList) -> bool {
    need.iter().all(|(r, q)| !q.is_positive() || have.get(r) >= q)
}

/// What `plan_preemption` decided, without the count of search steps it took (which the
/// brute force does not count, and which may depend on the order of the input).
fn decided(s: &Snapshot) -> PreemptionOutcome {
    PreemptionOutcome {
        search_steps: 0,
        ..plan_preemption(s, now())
    }
}

/// §5 step 3 by brute force: timed-out single-node `Pending` normal jobs oldest first; skip
/// `Never`, a job with victims still terminating, a job that fits on a feasible node; else on
/// every feasible node not reserved by another job's terminating victims, every subset of its
/// eligible victims whose resources plus the free capacity cover the request; the best plan
/// has the fewest victims, then the first node by name, then the earliest-submitted victims.
fn naive_plan(s: &Snapshot) -> PreemptionOutcome {
    let mut outcome = PreemptionOutcome {
        plan: None,
        skipped: Vec::new(),
        search_steps: 0,
    };
    if !(s.config.backfill_enabled || s.config.queue_quota_enabled) {
        return outcome;
    }
    let mut waiters: Vec<&JobSnapshot> = s
        .jobs
        .iter()
        .filter(|j| {
            j.schedule_type == ScheduleType::Normal
                && j.phase == JobPhase::Pending
                && j.single_node
                && j.waiting_since
                    .zip(j.waiting_tolerance_seconds)
                    .is_some_and(|(since, t)| since + Duration::seconds(t) < now())
        })
        .collect();
    waiters.sort_by_key(|j| (j.submitted_at, j.id));
    let mut nodes: Vec<&NodeSnapshot> = s.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    let active: Vec<&InFlightPreemption> = s
        .preemptions_in_flight
        .iter()
        .filter(|p| !p.terminating_victims.is_empty())
        .collect();
    for job in waiters {
        if job.preemption_policy == PreemptionPolicy::Never {
            outcome.skipped.push((job.id, PreemptionSkip::PolicyNever));
            continue;
        }
        if active.iter().any(|p| p.beneficiary == job.id) {
            outcome.skipped.push((job.id, PreemptionSkip::VictimsTerminating));
            continue;
        }
        let feasible: Vec<&&NodeSnapshot> = nodes
            .iter()
            .filter(|n| {
                n.ready
                    && n.schedulable
                    && job.explicit_nodes.allows(&n.name)
                    && naive_covers(&n.allocatable, &job.resources)
            })
            .collect();
        if let Some(n) = feasible.iter().find(|n| naive_covers(&n.free, &job.resources)) {
            outcome
                .skipped
                .push((job.id, PreemptionSkip::FitsOnNode { node: n.name.clone() }));
            continue;
        }
        // At most one plan per window: its last plan, if any, must be at least the window old
        // (the setting, or the job's tolerance when the setting is 0).
        let window = if s.config.preemption_plan_window_seconds > 0 {
            s.config.preemption_plan_window_seconds
        } else {
            job.waiting_tolerance_seconds.unwrap_or(0)
        };
        let last = s
            .recent_plans
            .iter()
            .filter(|p| p.beneficiary == job.id)
            .map(|p| p.planned_at)
            .max();
        if let Some(planned_at) = last
            && planned_at + Duration::seconds(window) > now()
        {
            outcome
                .skipped
                .push((job.id, PreemptionSkip::RecentPlan { planned_at }));
            continue;
        }
        let mut best: Option<(usize, String, Vec<usize>, Vec<JobId>)> = None;
        let mut reserved_by: Option<(String, JobId)> = None;
        for n in &feasible {
            if let Some(holder) = active.iter().filter(|p| p.node == n.name).map(|p| p.beneficiary).min() {
                reserved_by.get_or_insert((n.name.clone(), holder));
                continue;
            }
            let mut pool: Vec<&JobSnapshot> = s.jobs.iter().filter(|v| naive_victim_on(s, v, &n.name)).collect();
            pool.sort_by_key(|v| (v.submitted_at, v.id));
            for mask in 0_u32..(1 << pool.len()) {
                let chosen: Vec<usize> = (0..pool.len()).filter(|i| mask & (1 << i) != 0).collect();
                let mut have = n.free.clone();
                for &i in &chosen {
                    have = have.checked_add(&pool[i].resources).expect("small");
                }
                if !naive_covers(&have, &job.resources) {
                    continue;
                }
                let key = (chosen.len(), n.name.clone(), chosen.clone());
                if best
                    .as_ref()
                    .is_none_or(|(len, name, idx, _)| key < (*len, name.clone(), idx.clone()))
                {
                    let ids = chosen.iter().map(|&i| pool[i].id).collect();
                    best = Some((key.0, key.1, key.2, ids));
                }
            }
        }
        match best {
            Some((_, node, _, victims)) => {
                let free = &s.nodes.iter().find(|n| n.name == node).expect("a node").free;
                let deficit: ResourceList = job
                    .resources
                    .iter()
                    .filter(|(r, q)| q.is_positive() && *q > free.get(r))
                    .map(|(r, q)| {
                        let missing = q.checked_sub(free.get(r)).expect("small");
                        (r.to_owned(), missing)
                    })
                    .collect();
                outcome.plan = Some(PreemptionPlan {
                    beneficiary: job.id,
                    node,
                    victims,
                    deficit,
                    exact: true,
                });
                return outcome;
            }
            None => outcome.skipped.push((
                job.id,
                match reserved_by {
                    Some((node, beneficiary)) => PreemptionSkip::RoomReserved { node, beneficiary },
                    None => PreemptionSkip::NoPlan,
                },
            )),
        }
    }
    outcome
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn a_preemption_plan_is_the_brute_force_best_plan(s in snapshot()) {
        prop_assert_eq!(decided(&s), naive_plan(&s));
    }

    #[test]
    fn a_preemption_plan_frees_enough_room_on_one_node_with_eligible_victims_only(s in snapshot()) {
        let Some(plan) = plan_preemption(&s, now()).plan else { return Ok(()) };
        let node = s.nodes.iter().find(|n| n.name == plan.node).expect("a node of the snapshot");
        let beneficiary = s.jobs.iter().find(|j| j.id == plan.beneficiary).expect("a job");
        prop_assert!(!plan.victims.is_empty());
        let mut have = node.free.clone();
        for id in &plan.victims {
            let victim = s.jobs.iter().find(|j| j.id == *id).expect("a job");
            prop_assert!(naive_victim_on(&s, victim, &plan.node), "victim {} is not eligible on {}", id, plan.node);
            have = have.checked_add(&victim.resources).expect("small");
        }
        prop_assert!(naive_covers(&have, &beneficiary.resources));
        // No in-flight plan holds the node, and none is the beneficiary's.
        prop_assert!(!s.preemptions_in_flight.iter().any(|p| !p.terminating_victims.is_empty()
            && (p.node == plan.node || p.beneficiary == plan.beneficiary)));
        // Minimal: no victim can be left out.
        for left_out in &plan.victims {
            let mut without = node.free.clone();
            for id in plan.victims.iter().filter(|id| *id != left_out) {
                let victim = s.jobs.iter().find(|j| j.id == *id).expect("a job");
                without = without.checked_add(&victim.resources).expect("small");
            }
            prop_assert!(!naive_covers(&without, &beneficiary.resources), "victim {} is not needed", left_out);
        }
    }

    #[test]
    fn a_preemption_plan_does_not_depend_on_the_order_of_its_input(s in snapshot(), seed in any::<u64>()) {
        let mut shuffled = s.clone();
        shuffle(&mut shuffled.jobs, seed);
        shuffle(&mut shuffled.nodes, seed.rotate_left(17));
        shuffle(&mut shuffled.preemptions_in_flight, seed.rotate_left(31));
        prop_assert_eq!(decided(&s), decided(&shuffled));
    }
}

#[test]
fn the_brute_force_prefers_a_later_node_that_needs_fewer_victims() {
    // n1 needs 3 GPUs from victims of 1 and 2; n2 needs 4 from one victim of 4.
    let mut s = Snapshot::default();
    s.config.backfill_enabled = true;
    let mut n1 = node("n1", &[("nvidia.com/a100", "4")]);
    n1.free = rl(&[("nvidia.com/a100", "1")]);
    let mut n2 = node("n2", &[("nvidia.com/a100", "4")]);
    n2.free = rl(&[("nvidia.com/a100", "0")]);
    s.nodes = vec![n2, n1];
    s.jobs = vec![
        JobBuilder::normal(1)
            .gpus("nvidia.com/a100", 4)
            .tolerance(1)
            .phase(JobPhase::Pending)
            .build(),
        JobBuilder::backfill(10)
            .gpus("nvidia.com/a100", 1)
            .running_on("n1")
            .build(),
        JobBuilder::backfill(11)
            .gpus("nvidia.com/a100", 2)
            .running_on("n1")
            .build(),
        JobBuilder::backfill(20)
            .gpus("nvidia.com/a100", 4)
            .running_on("n2")
            .build(),
    ];
    let plan = naive_plan(&s).plan.expect("a plan");
    assert_eq!((plan.node.as_str(), plan.victims.as_slice()), ("n2", &[20][..]));
    assert_eq!(decided(&s), naive_plan(&s));
}

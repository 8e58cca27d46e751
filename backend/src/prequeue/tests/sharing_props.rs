//! Property tests of sharing between queues (`spec/prequeue.md` §9) on random worlds: a lab
//! (`lab` → `cv`, `nlp`), a root `ops`, and `default` guaranteeing nothing, on 8 GPUs. The
//! guarantee rules are re-stated naively here (`naive_*`, plain maps over names) so the dense
//! model cannot drift from them:
//!
//! 1. a round never leaves the cluster's held room beyond the pool (or beyond an overcommit
//!    it started with), nor a queue beyond its capacity;
//! 2. no job running within its guarantee is ever a reclaim victim, and victims are running,
//!    unlocked, old enough and outside the beneficiary's subtree;
//! 3. a job asking for no more than its queue's guarantee starts within a few rounds of
//!    reclaim once borrowers' minimum runtimes have passed;
//! 4. with quotas off, guarantees change nothing: every decision is the one of the same world
//!    without them (and without any, the round is the one `props.rs` checks against the
//!    naive statement of today's rules).

use std::collections::BTreeMap;

use anteroom_shared::scheduling::{JobPhase, ResourceList, ScheduleType};
use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;

use super::fixtures::{JobBuilder, node, queue, rl, t0};
use crate::prequeue::queue_tree::QueueTree;
use crate::prequeue::round::select_round;
use crate::prequeue::sharing::{SharingTree, plan_reclaims};
use crate::prequeue::snapshot::{JobId, JobSnapshot, QueueSpec, Snapshot, usage_from_jobs};

const GPU: &str = "nvidia.com/a100";
const QUEUES: [&str; 5] = ["lab", "cv", "nlp", "ops", "default"];

/// Guarantees (cv, nlp, ops, lab's extra or none), lending limits and the lab's capacity.
#[derive(Debug, Clone)]
struct Rules {
    cv: i64,
    nlp: i64,
    ops: i64,
    lab_extra: Option<i64>,
    lending: [Option<i64>; 4],
    lab_capacity: Option<i64>,
    min_runtime: i64,
}

fn rules() -> impl Strategy<Value = Rules> {
    (
        (0_i64..4, 0_i64..4, 0_i64..3, proptest::option::of(0_i64..2)),
        proptest::array::uniform4(proptest::option::weighted(0.3, 0_i64..3)),
        proptest::option::weighted(0.3, 2_i64..9),
        prop_oneof![Just(0_i64), 0_i64..60],
    )
        .prop_map(
            |((cv, nlp, ops, lab_extra), lending, lab_capacity, min_runtime)| Rules {
                cv,
                nlp,
                ops,
                lab_extra,
                lending,
                lab_capacity,
                min_runtime,
            },
        )
}

fn specs(r: &Rules) -> Vec<QueueSpec> {
    let g = |n: i64| Some(rl(&[(GPU, &n.to_string())]));
    let mut lab = queue("lab", None, r.lab_capacity.map(|c| rl(&[(GPU, &c.to_string())])));
    lab.sharing.guarantee = r.lab_extra.and_then(|x| g(r.cv + r.nlp + x));
    let mut out = vec![
        lab,
        queue("cv", Some("lab"), None),
        queue("nlp", Some("lab"), None),
        queue("ops", None, None),
        queue("default", None, None),
    ];
    out[1].sharing.guarantee = g(r.cv);
    out[2].sharing.guarantee = g(r.nlp);
    out[3].sharing.guarantee = g(r.ops);
    for (i, limit) in r.lending.iter().enumerate() {
        out[i].sharing.lending_limit = limit.and_then(g);
    }
    for q in &mut out {
        q.sharing.reclaim_min_runtime_seconds = r.min_runtime;
    }
    // A guarantee above the lab's capacity is refused on write: keep the world valid.
    if let Some(cap) = r.lab_capacity {
        for q in &mut out[..3] {
            if let Some(gq) = &q.sharing.guarantee
                && gq.get(GPU).milli() > i128::from(cap) * 1000
            {
                q.sharing.guarantee = g(cap);
            }
        }
        if out[1].sharing.guarantee.as_ref().map_or(0, |x| x.get(GPU).milli())
            + out[2].sharing.guarantee.as_ref().map_or(0, |x| x.get(GPU).milli())
            > i128::from(cap) * 1000
        {
            out[2].sharing.guarantee = None;
        }
        if out[0].sharing.guarantee.is_some() {
            out[0].sharing.guarantee = g(cap);
        }
    }
    out
}

/// (queue, gpus, started second or waiting, node, locked).
type JobSpec = (usize, i64, Option<i64>, bool, bool);

fn job_specs() -> impl Strategy<Value = Vec<JobSpec>> {
    proptest::collection::vec(
        (
            0_usize..5,
            1_i64..4,
            proptest::option::weighted(0.6, 0_i64..100),
            any::<bool>(),
            proptest::bool::weighted(0.15),
        ),
        0..14,
    )
}

fn world(r: &Rules, jobs: &[JobSpec]) -> Snapshot {
    let mut s = Snapshot::default();
    s.config.queue_quota_enabled = true;
    s.config.reclaim_delay_seconds = 0;
    s.queues = specs(r);
    s.nodes = vec![
        node("n1", &[("cpu", "64"), (GPU, "4")]),
        node("n2", &[("cpu", "64"), (GPU, "4")]),
    ];
    for (i, &(q, gpus, started, on_n2, locked)) in jobs.iter().enumerate() {
        let id = i as JobId + 1;
        let mut b = JobBuilder::normal(id)
            .owner(id % 3 + 1)
            .queue(QUEUES[q])
            .gpus(GPU, gpus)
            .submitted(started.unwrap_or(100 + id));
        if started.is_some() {
            b = b.running_on(if on_n2 { "n2" } else { "n1" });
        } else {
            b = b.waiting_since(Some(100 + id));
        }
        let mut job = b.build();
        if locked {
            job.locked_until = Some(t0() + Duration::seconds(10_000));
        }
        s.jobs.push(job);
    }
    s.usage = usage_from_jobs(&s.jobs);
    s
}

fn at(seconds: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(seconds)
}

/// The naive effective guarantee of a queue: what it names, else its children's sum.
fn naive_guarantee(specs: &[QueueSpec], name: &str) -> i128 {
    let spec = specs.iter().find(|s| s.name == name).expect("known queue");
    match spec.sharing.guarantee.as_ref().and_then(|g| g.get_named(GPU)) {
        Some(v) => v.milli(),
        None => specs
            .iter()
            .filter(|s| s.parent.as_deref() == Some(name))
            .map(|c| naive_guarantee(specs, &c.name))
            .sum(),
    }
}

fn naive_keep(specs: &[QueueSpec], name: &str) -> i128 {
    let spec = specs.iter().find(|s| s.name == name).expect("known queue");
    match spec.sharing.lending_limit.as_ref().and_then(|l| l.get_named(GPU)) {
        Some(l) => (naive_guarantee(specs, name) - l.milli()).max(0),
        None => 0,
    }
}

/// What a queue holds given each queue's own GPUs: max(children's holds + own, keep).
fn naive_hold(specs: &[QueueSpec], own: &BTreeMap<String, i128>, name: &str) -> i128 {
    let children: i128 = specs
        .iter()
        .filter(|s| s.parent.as_deref() == Some(name))
        .map(|c| naive_hold(specs, own, &c.name))
        .sum();
    (children + own.get(name).copied().unwrap_or(0)).max(naive_keep(specs, name))
}

fn path<'a>(specs: &'a [QueueSpec], name: &'a str) -> Vec<&'a str> {
    let mut out = vec![name];
    let mut at = name;
    while let Some(parent) = specs.iter().find(|s| s.name == at).and_then(|s| s.parent.as_deref()) {
        out.push(parent);
        at = parent;
    }
    out
}

/// Σ of the roots' holds.
fn naive_total(specs: &[QueueSpec], own: &BTreeMap<String, i128>) -> i128 {
    specs
        .iter()
        .filter(|s| s.parent.is_none())
        .map(|s| naive_hold(specs, own, &s.name))
        .sum()
}

fn own_gpus<'a>(jobs: impl IntoIterator<Item = &'a JobSnapshot>) -> BTreeMap<String, i128> {
    let mut own = BTreeMap::new();
    for job in jobs {
        *own.entry(job.queue.clone()).or_insert(0) += job.resources.get(GPU).milli();
    }
    own
}

/// The running jobs within their guarantee, naively: in start order, a job is within when, with
/// it added, no level of its path whose hold grows holds more than its guarantee.
fn naive_within(s: &Snapshot) -> Vec<JobId> {
    let mut running: Vec<&JobSnapshot> = s.jobs.iter().filter(|j| j.phase.is_occupying()).collect();
    running.sort_by_key(|j| (j.started_at.is_none(), j.started_at, j.submitted_at, j.id));
    let mut own: BTreeMap<String, i128> = BTreeMap::new();
    let mut within = Vec::new();
    for job in running {
        let mut after = own.clone();
        *after.entry(job.queue.clone()).or_insert(0) += job.resources.get(GPU).milli();
        let ok = path(&s.queues, &job.queue).iter().all(|level| {
            let before = naive_hold(&s.queues, &own, level);
            let now = naive_hold(&s.queues, &after, level);
            now == before || now <= naive_guarantee(&s.queues, level)
        });
        if ok {
            within.push(job.id);
        }
        own = after;
    }
    within
}

/// Applies reclaims and a selection as the watcher does: victims preempted, selected started.
fn step(s: &mut Snapshot, now: DateTime<Utc>) -> (Vec<JobId>, Vec<JobId>) {
    let plans = plan_reclaims(s, now);
    let victims: Vec<JobId> = plans.iter().flat_map(|p| p.victims.clone()).collect();
    for job in s.jobs.iter_mut().filter(|j| victims.contains(&j.id)) {
        job.phase = JobPhase::Preempted;
    }
    s.usage = usage_from_jobs(&s.jobs);
    let selected = select_round(s, now).expect("round").selected;
    for job in s.jobs.iter_mut().filter(|j| selected.contains(&j.id)) {
        job.phase = JobPhase::Running;
        job.started_at = Some(now);
        job.nodes = vec!["n1".into()];
    }
    s.usage = usage_from_jobs(&s.jobs);
    (victims, selected)
}

proptest! {
    // Reclaim's property keeps only worlds where the job is owed room: about one in six.
    #![proptest_config(ProptestConfig { cases: 600, max_global_rejects: 20_000, ..ProptestConfig::default() })]

    #[test]
    fn a_round_never_overcommits_the_pool_or_a_capacity(r in rules(), jobs in job_specs()) {
        let mut s = world(&r, &jobs);
        let occupying = |s: &Snapshot| own_gpus(s.jobs.iter().filter(|j| j.phase.is_occupying()));
        let before = naive_total(&s.queues, &occupying(&s));
        step(&mut s, at(200));
        let after = naive_total(&s.queues, &occupying(&s));
        // With nothing guaranteed the cluster's room is Volcano's business, as before sharing.
        let shares = QUEUES.iter().any(|q| naive_guarantee(&s.queues, q) > 0);
        prop_assert!(!shares || after <= before.max(8000), "held {after} of 8000 (was {before})");
        if let Some(cap) = r.lab_capacity {
            let lab: i128 = occupying(&s)
                .iter()
                .filter(|(q, _)| ["lab", "cv", "nlp"].contains(&q.as_str()))
                .map(|(_, v)| *v)
                .sum();
            let lab_before: i128 = jobs
                .iter()
                .filter(|j| j.2.is_some() && j.0 < 3)
                .map(|j| i128::from(j.1) * 1000)
                .sum();
            prop_assert!(lab <= lab_before.max(i128::from(cap) * 1000), "lab holds {lab} over {cap}");
        }
    }

    #[test]
    fn victims_are_borrowers_never_jobs_within_their_guarantee(r in rules(), jobs in job_specs()) {
        let s = world(&r, &jobs);
        let within = naive_within(&s);
        let now = at(200);
        for plan in plan_reclaims(&s, now) {
            let beneficiary = s.jobs.iter().find(|j| j.id == plan.beneficiary).expect("beneficiary");
            prop_assert_eq!(beneficiary.phase, JobPhase::Prequeue);
            for id in &plan.victims {
                let victim = s.jobs.iter().find(|j| j.id == *id).expect("victim");
                prop_assert!(!within.contains(id), "job {} runs within its guarantee: {:?}", id, plan);
                prop_assert_eq!(victim.phase, JobPhase::Running);
                prop_assert!(!victim.is_locked(now));
                prop_assert_eq!(victim.schedule_type, ScheduleType::Normal);
                prop_assert!(victim.started_at.is_some_and(|t| t + Duration::seconds(r.min_runtime) <= now));
                prop_assert!(
                    !path(&s.queues, &victim.queue).contains(&beneficiary.queue.as_str()),
                    "{} is in {}'s subtree", victim.queue, beneficiary.queue
                );
            }
        }
    }

    #[test]
    fn a_job_within_its_guarantee_starts_once_borrowers_may_go(
        r in rules(),
        jobs in job_specs(),
        team in 1_usize..4,
        gpus in 1_i64..4,
    ) {
        let mut s = world(&r, &jobs);
        // Only the new job waits (other waiting jobs could be owed the same room first), and
        // nothing is locked: what the guarantee promises is room, not priority over locks.
        s.jobs.retain(|j| j.phase != JobPhase::Prequeue);
        for job in &mut s.jobs {
            job.locked_until = None;
        }
        let id = 1000;
        let waiting = JobBuilder::normal(id).owner(9).queue(QUEUES[team]).gpus(GPU, gpus).submitted(150).build();
        s.jobs.push(waiting);
        s.usage = usage_from_jobs(&s.jobs);
        // The guarantees must fit the cluster, and the job its queue's guarantee with what the
        // queue's own subtree already holds (it is owed room, not promised others' room).
        let roots: i128 = ["lab", "ops", "default"].iter().map(|q| naive_guarantee(&s.queues, q)).sum();
        prop_assume!(roots <= 8000);
        let mut own = own_gpus(s.jobs.iter().filter(|j| j.phase.is_occupying()));
        let before = own.clone();
        *own.entry(QUEUES[team].to_owned()).or_insert(0) += i128::from(gpus) * 1000;
        let owed = path(&s.queues, QUEUES[team]).iter().all(|level| {
            naive_hold(&s.queues, &own, level) <= naive_guarantee(&s.queues, level)
                || naive_hold(&s.queues, &own, level) == naive_hold(&s.queues, &before, level)
        });
        prop_assume!(owed);
        // Minimum runtimes pass by second 200 (started ≤ 100, minimum < 60).
        let mut started = false;
        for round in 0..4 {
            let (_, selected) = step(&mut s, at(200 + round));
            if selected.contains(&id) {
                started = true;
                break;
            }
        }
        prop_assert!(started, "job {} of {} never started", id, QUEUES[team]);
    }

    #[test]
    fn with_quotas_off_guarantees_change_nothing(r in rules(), jobs in job_specs()) {
        let mut with = world(&r, &jobs);
        with.config.queue_quota_enabled = false;
        let mut without = with.clone();
        for q in &mut without.queues {
            q.sharing = Default::default();
        }
        let now = at(200);
        prop_assert!(plan_reclaims(&with, now).is_empty());
        let a = select_round(&with, now).expect("round");
        let b = select_round(&without, now).expect("round");
        prop_assert_eq!(a.selected, b.selected);
        prop_assert_eq!(a.waiting, b.waiting);
        // And without any guarantee the model is off entirely.
        let tree = QueueTree::new_lenient(&without.queues);
        prop_assert!(SharingTree::new(&without.queues, &tree, &without.nodes).is_none());
    }
}

#[test]
fn the_worked_example_is_a_world_of_these_properties() {
    // Sanity of the generator's pieces: two teams of 4, nlp running 6 (2 borrowed), cv owed 2.
    let r = Rules {
        cv: 4,
        nlp: 4,
        ops: 0,
        lab_extra: None,
        lending: [None; 4],
        lab_capacity: None,
        min_runtime: 0,
    };
    let jobs: Vec<JobSpec> = (0..6)
        .map(|i| (2, 1, Some(i), i >= 4, false))
        .chain([(1, 2, None, false, false)])
        .collect();
    let mut s = world(&r, &jobs);
    assert_eq!(naive_within(&s), vec![1, 2, 3, 4]);
    let (victims, selected) = step(&mut s, at(200));
    assert!(victims.is_empty(), "6 + 2 fit the 8 GPUs: {victims:?}");
    assert_eq!(selected, vec![7]);
    let _ = ResourceList::new();
}

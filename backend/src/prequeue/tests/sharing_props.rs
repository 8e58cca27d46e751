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
    /// Fair share (with weights) instead of FCFS.
    fair: Option<u32>,
}

fn rules() -> impl Strategy<Value = Rules> {
    (
        (0_i64..4, 0_i64..4, 0_i64..3, proptest::option::of(0_i64..2)),
        proptest::array::uniform4(proptest::option::weighted(0.3, 0_i64..3)),
        proptest::option::weighted(0.3, 2_i64..9),
        prop_oneof![Just(0_i64), 0_i64..60],
        proptest::option::of(1_u32..4),
    )
        .prop_map(
            |((cv, nlp, ops, lab_extra), lending, lab_capacity, min_runtime, fair)| Rules {
                cv,
                nlp,
                ops,
                lab_extra,
                lending,
                lab_capacity,
                min_runtime,
                fair,
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
    // Under fair share, nlp weighs more.
    out[2].sharing.weight = r.fair.unwrap_or(1);
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
    if r.fair.is_some() {
        s.config.activation_order = anteroom_shared::scheduling::ActivationOrder::FairShare;
    }
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
    // Running jobs were admitted in the order they started, each told whether it borrows.
    let mut started: Vec<(i64, JobId)> = s
        .jobs
        .iter()
        .filter_map(|j| j.started_at.map(|t| (t.timestamp(), j.id)))
        .collect();
    started.sort_unstable();
    let running: Vec<JobId> = started.into_iter().map(|(_, id)| id).collect();
    for job in s.jobs.iter_mut().filter(|j| running.contains(&j.id)) {
        job.phase = JobPhase::Prequeue;
    }
    for id in running {
        admit(&mut s, &[id]);
        s.jobs.iter_mut().find(|j| j.id == id).expect("job").phase = JobPhase::Running;
    }
    refresh_free(&mut s);
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

/// Whether a job of `queue` asking `v` GPUs is within its guarantee given each queue's own
/// GPUs `own` (without it), naively: its queue's own jobs, it included, within the part of the
/// guarantee no sub-queue has; at each ancestor, the branch (up to its guarantee) plus what
/// every other child holds up to its own guarantee plus the ancestor's own jobs up to its own
/// part — each level (and what its lending limit keeps) within its guarantee.
fn naive_job_within(specs: &[QueueSpec], own: &BTreeMap<String, i128>, queue: &str, v: i128) -> bool {
    if v == 0 {
        return true;
    }
    let children = |a: &str| -> Vec<String> {
        specs
            .iter()
            .filter(|s| s.parent.as_deref() == Some(a))
            .map(|s| s.name.clone())
            .collect()
    };
    let capped = |c: &str| naive_hold(specs, own, c).min(naive_guarantee(specs, c));
    let part = |a: &str| {
        let given: i128 = children(a).iter().map(|c| naive_guarantee(specs, c)).sum();
        (naive_guarantee(specs, a) - given).max(0)
    };
    let mut branch: Option<(String, i128)> = None;
    for level in path(specs, queue) {
        let g = naive_guarantee(specs, level);
        let others: i128 = children(level)
            .iter()
            .filter(|c| branch.as_ref().is_none_or(|(b, _)| b != *c))
            .map(|c| capped(c))
            .sum();
        let mine = own.get(level).copied().unwrap_or(0);
        let held = match &branch {
            // Its own queue's jobs have the part no sub-queue is guaranteed.
            None => {
                if mine + v > part(level) {
                    return false;
                }
                others + mine + v
            }
            Some((_, h)) => h + others + mine.min(part(level)),
        };
        let held = held.max(naive_keep(specs, level));
        if held > g {
            return false;
        }
        branch = Some((level.to_owned(), held.min(g)));
    }
    true
}

/// The occupying jobs within their guarantee, naively: those admitted within it fill
/// guarantees first, then the others in start order; each is within when it fits
/// [`naive_job_within`] on top of the ones before it.
fn naive_within(s: &Snapshot) -> Vec<JobId> {
    let mut running: Vec<&JobSnapshot> = s.jobs.iter().filter(|j| j.phase.is_occupying()).collect();
    running.sort_by_key(|j| {
        (
            j.sharing.borrowing,
            j.started_at.is_none(),
            j.started_at,
            j.submitted_at,
            j.id,
        )
    });
    let mut own: BTreeMap<String, i128> = BTreeMap::new();
    let mut within = Vec::new();
    for job in running {
        let v = job.resources.get(GPU).milli();
        if naive_job_within(&s.queues, &own, &job.queue, v) {
            within.push(job.id);
        }
        *own.entry(job.queue.clone()).or_insert(0) += v;
    }
    within
}

/// Marks the jobs `ids` (in this order) admitted: each told it borrows when it is not within
/// its guarantee on top of what occupies before it, as a submission or claim tells it.
fn admit(s: &mut Snapshot, ids: &[JobId]) {
    let mut own = own_gpus(s.jobs.iter().filter(|j| j.phase.is_occupying()));
    for id in ids {
        let job = s.jobs.iter_mut().find(|j| j.id == *id).expect("job");
        let v = job.resources.get(GPU).milli();
        job.sharing.borrowing = !naive_job_within(&s.queues, &own, &job.queue, v);
        *own.entry(job.queue.clone()).or_insert(0) += v;
    }
}

/// Each node's free GPUs: allocatable minus what running jobs there ask.
fn refresh_free(s: &mut Snapshot) {
    for n in &mut s.nodes {
        let used: i128 = s
            .jobs
            .iter()
            .filter(|j| j.phase.is_occupying() && j.nodes.contains(&n.name))
            .map(|j| j.resources.get(GPU).milli())
            .sum();
        let free = n.allocatable.get(GPU).milli() - used;
        n.free.insert(
            GPU,
            anteroom_shared::scheduling::Quantity::from_milli_saturating(free, Default::default()),
        );
    }
}

/// Applies reclaims and a selection as the watcher does: reclaims only for jobs the round says
/// nothing but room holds, victims preempted, selected jobs admitted and placed on a node with
/// room (else left `Pending`).
fn step(s: &mut Snapshot, now: DateTime<Utc>) -> (Vec<JobId>, Vec<JobId>) {
    let outcome = select_round(s, now).expect("round");
    let allowed: std::collections::HashSet<JobId> = outcome
        .waiting
        .iter()
        .filter(|w| {
            let c = w.causes;
            c.blocked_by().is_none() && !c.held_privately() && !c.round_limit() && !c.borrowing_limit()
        })
        .map(|w| w.id)
        .collect();
    let plans = plan_reclaims(s, now, Some(&allowed), None);
    let victims: Vec<JobId> = plans.iter().flat_map(|p| p.victims.clone()).collect();
    for job in s.jobs.iter_mut().filter(|j| victims.contains(&j.id)) {
        job.phase = JobPhase::Preempted;
        job.nodes.clear();
    }
    s.usage = usage_from_jobs(&s.jobs);
    refresh_free(s);
    let selected = select_round(s, now).expect("round").selected;
    admit(s, &selected);
    for id in &selected {
        let job_gpus = s
            .jobs
            .iter()
            .find(|j| j.id == *id)
            .expect("job")
            .resources
            .get(GPU)
            .milli();
        let place = s
            .nodes
            .iter()
            .find(|n| n.free.get(GPU).milli() >= job_gpus)
            .map(|n| n.name.clone());
        let job = s.jobs.iter_mut().find(|j| j.id == *id).expect("job");
        match place {
            Some(node) => {
                job.phase = JobPhase::Running;
                job.started_at = Some(now);
                job.nodes = vec![node];
            }
            None => job.phase = JobPhase::Pending,
        }
        refresh_free(s);
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
        for plan in plan_reclaims(&s, now, None, None) {
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
        let own = own_gpus(s.jobs.iter().filter(|j| j.phase.is_occupying()));
        let owed = naive_job_within(&s.queues, &own, QUEUES[team], i128::from(gpus) * 1000);
        prop_assume!(owed);
        // A guarantee is room, not a place: some node must hold the job once the borrowers on
        // it are gone (jobs within their guarantee are never moved for it).
        let within = naive_within(&s);
        let placeable = s.nodes.iter().any(|n| {
            let freed: i128 = s
                .jobs
                .iter()
                .filter(|j| j.phase == JobPhase::Running && j.nodes.contains(&n.name))
                .filter(|j| j.sharing.borrowing && !within.contains(&j.id))
                .map(|j| j.resources.get(GPU).milli())
                .sum();
            n.free.get(GPU).milli() + freed >= i128::from(gpus) * 1000
        });
        prop_assume!(placeable);
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
        prop_assert!(plan_reclaims(&with, now, None, None).is_empty());
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
        fair: None,
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

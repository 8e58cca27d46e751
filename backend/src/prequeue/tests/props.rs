//! Property tests of the round, the fair-share order and the preemption search
//! (issue 11, item 10). The round is compared against deliberately naive re-statements of
//! `spec/prequeue.md` §5 step 4 (`naive.rs`), in both activation orders, written with `ResourceList`
//! arithmetic, so the interned, optimised walks and the rules as written cannot drift apart.

use std::collections::{BTreeMap, HashMap};

use anteroom_shared::scheduling::{ActivationOrder, JobPhase, ResourceList, ScheduleType};
use chrono::{DateTime, Utc};
use proptest::prelude::*;

use super::fixtures::{JobBuilder, node, queue, rl, shuffle};
use super::naive::*;
use crate::prequeue::preemption::min_cover;
use crate::prequeue::queue_tree::QueueTree;
use crate::prequeue::reason::Reason;
use crate::prequeue::round::{PreparedRound, RoundOutcome, select_round};
use crate::prequeue::snapshot::{JobId, JobSnapshot, QueueQuota, Snapshot, UsageRow, UserId};
use crate::prequeue::submit::{Submission, SubmitDecision, decide_submission};

const QUEUES: [&str; 5] = ["root", "a", "b", "a1", "loose"];
const PARENTS: [Option<&str>; 5] = [None, Some("root"), Some("root"), Some("a"), None];

fn limits() -> impl Strategy<Value = ResourceList> {
    (proptest::option::of(0_i64..12), proptest::option::of(0_i64..4)).prop_map(|(cpu, gpu)| {
        let mut l = ResourceList::new();
        if let Some(c) = cpu {
            l.insert("cpu", anteroom_shared::scheduling::Quantity::from_units(c));
        }
        if let Some(g) = gpu {
            l.insert("nvidia.com/a100", anteroom_shared::scheduling::Quantity::from_units(g));
        }
        l
    })
}

#[derive(Debug, Clone)]
struct JobSpec {
    owner: UserId,
    queue: usize,
    cpu: i64,
    gpu: i64,
    h100: bool,
    backfill: bool,
    tolerance: Option<i64>,
    submitted: i64,
    nodes: u8,
    pending: bool,
    /// 0: no `waitingSince` (held only privately so far); 1: 30 s after submission; else at it.
    waiting: u8,
}

fn job_spec() -> impl Strategy<Value = JobSpec> {
    (
        (1_i64..5, 0_usize..5, 0_i64..5, 0_i64..3, proptest::bool::weighted(0.15)),
        (
            proptest::bool::weighted(0.2),
            proptest::option::weighted(0.4, 0_i64..150),
            0_i64..60,
            0_u8..4,
            proptest::bool::weighted(0.15),
            0_u8..5,
        ),
    )
        .prop_map(
            |((owner, queue, cpu, gpu, h100), (backfill, tolerance, submitted, nodes, pending, waiting))| JobSpec {
                owner,
                queue,
                cpu,
                gpu,
                h100,
                backfill,
                tolerance,
                submitted,
                nodes,
                pending,
                waiting,
            },
        )
}

fn build_job(id: JobId, spec: &JobSpec) -> JobSnapshot {
    let mut b = if spec.backfill && !spec.pending {
        JobBuilder::backfill(id)
    } else {
        JobBuilder::normal(id)
    };
    b = b
        .owner(spec.owner)
        .queue(QUEUES[spec.queue])
        .submitted(spec.submitted)
        .cpu(&spec.cpu.to_string());
    let gpu_name = if spec.h100 {
        "nvidia.com/h100"
    } else {
        "nvidia.com/a100"
    };
    b = b.gpus(gpu_name, spec.gpu);
    if let Some(t) = spec.tolerance
        && (!spec.backfill || spec.pending)
    {
        b = b.tolerance(t);
    }
    b = match spec.nodes {
        1 => b.nodes(&["n1"]),
        2 => b.nodes(&["n2"]),
        3 => b.nodes(&["n1", "n2"]),
        _ => b,
    };
    if spec.pending {
        b = b.phase(JobPhase::Pending);
    }
    b = match spec.waiting {
        // A Pending job's clock started at its activation at the latest.
        0 if !spec.pending => b.waiting_since(None),
        1 => b.waiting_since(Some(spec.submitted + 30)),
        _ => b,
    };
    b.build()
}

fn snapshot() -> impl Strategy<Value = Snapshot> {
    (
        (any::<bool>(), any::<bool>(), 1_i64..12, any::<bool>()),
        proptest::collection::vec(proptest::option::weighted(0.6, limits()), 5),
        proptest::collection::vec(
            proptest::option::weighted(0.5, (limits(), proptest::option::of(0_u32..4))),
            5,
        ),
        proptest::collection::vec((1_i64..5, 0_usize..5, 0_i64..4, 0_i64..2, 0_u32..3), 0..6),
        (
            proptest::collection::vec(job_spec(), 0..40),
            proptest::bool::weighted(0.3),
        ),
    )
        .prop_map(
            |((backfill, quotas, limit, fair), capacities, rules, usage, (jobs, cordoned))| {
                let mut s = Snapshot::default();
                s.config.backfill_enabled = backfill;
                s.config.queue_quota_enabled = quotas;
                s.config.prequeue_candidate_size = limit;
                s.config.activation_order = if fair {
                    ActivationOrder::FairShare
                } else {
                    ActivationOrder::Fcfs
                };
                s.queues = (0..4)
                    .map(|i| queue(QUEUES[i], PARENTS[i], capacities[i].clone()))
                    .collect();
                for (i, rule) in rules.into_iter().enumerate() {
                    if let Some((limits, max_active_jobs)) = rule {
                        s.quotas.push(QueueQuota {
                            queue: QUEUES[i].into(),
                            limits,
                            max_active_jobs,
                        });
                    }
                }
                let mut rows: BTreeMap<(UserId, usize), UsageRow> = BTreeMap::new();
                for (owner, q, cpu, gpu, active) in usage {
                    rows.entry((owner, q)).or_insert(UsageRow {
                        owner,
                        queue: QUEUES[q].into(),
                        resources: rl(&[("cpu", &cpu.to_string()), ("nvidia.com/a100", &gpu.to_string())]),
                        active_jobs: active,
                    });
                }
                s.usage = rows.into_values().collect();
                s.jobs = jobs
                    .iter()
                    .enumerate()
                    .map(|(i, spec)| build_job(i as JobId + 1, spec))
                    .collect();
                s.nodes = vec![
                    node("n1", &[("cpu", "16"), ("nvidia.com/a100", "4")]),
                    node("n2", &[("cpu", "16")]),
                ];
                // A cordoned node still counts in the cluster's allocatable total (fair share).
                s.nodes[1].schedulable = !cordoned;
                s
            },
        )
}

fn check_invariants(s: &Snapshot, outcome: &RoundOutcome) -> Result<(), TestCaseError> {
    let tree = QueueTree::new_lenient(&s.queues);
    let by_id: HashMap<JobId, &JobSnapshot> = s.jobs.iter().map(|j| (j.id, j)).collect();
    let selected: Vec<&JobSnapshot> = outcome.selected.iter().map(|id| by_id[id]).collect();
    prop_assert!(selected.len() <= s.config.round_limit());
    let prequeued = s.jobs.iter().filter(|j| j.phase == JobPhase::Prequeue).count();
    prop_assert_eq!(selected.len() + outcome.waiting.len(), prequeued);
    prop_assert_eq!(
        outcome.more_work,
        outcome.waiting.iter().any(|w| w.causes.round_limit())
    );
    if outcome.more_work {
        prop_assert_eq!(selected.len(), s.config.round_limit());
    }
    for job in &selected {
        prop_assert_eq!(job.phase, JobPhase::Prequeue);
        prop_assert!(!blocked(s, job), "selected job {} is blocked", job.id);
        prop_assert!(s.config.backfill_enabled || job.schedule_type == ScheduleType::Normal);
    }
    if !s.config.queue_quota_enabled {
        return Ok(());
    }
    let normal: Vec<&&JobSnapshot> = selected
        .iter()
        .filter(|j| j.schedule_type == ScheduleType::Normal)
        .collect();
    // No user over a quota limit.
    for rule in &s.quotas {
        let mut per_user: BTreeMap<UserId, (ResourceList, u32)> = BTreeMap::new();
        for job in normal.iter().filter(|j| j.queue == rule.queue) {
            let e = per_user.entry(job.owner).or_default();
            e.0 = e.0.checked_add(&job.resources).expect("small");
            e.1 += 1;
        }
        for (owner, (sel, count)) in per_user {
            let (used, active) = row_usage(s, owner, &rule.queue);
            let total = used.checked_add(&sel).expect("small");
            prop_assert!(
                !total.exceeds(&rule.limits),
                "user {} over quota in {}",
                owner,
                rule.queue
            );
            if let Some(max) = rule.max_active_jobs {
                prop_assert!(active + count <= max, "user {} over maxActiveJobs", owner);
            }
        }
    }
    // No queue or ancestor over its capacity.
    for q in 0..tree.len() {
        let Some(cap) = tree.capacity(q) else { continue };
        let name = tree.name(q);
        let inside: Vec<&&&JobSnapshot> = normal.iter().filter(|j| tree.path_of(&j.queue).contains(&q)).collect();
        if inside.is_empty() {
            continue;
        }
        let mut total = subtree_usage(s, &tree, name);
        for job in inside {
            total = total.checked_add(&job.resources).expect("small");
        }
        prop_assert!(!total.exceeds(cap), "queue {} over capacity", name);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_round_never_breaks_a_quota_a_capacity_or_a_blocker(s in snapshot()) {
        let outcome = select_round(&s, now()).expect("prepared");
        check_invariants(&s, &outcome)?;
    }

    #[test]
    fn every_waiting_job_is_explained_by_its_causes(s in snapshot()) {
        let prepared = PreparedRound::new(&s, now()).expect("prepared");
        let outcome = prepared.select();
        for waiting in &outcome.waiting {
            let reasons = prepared.explain(&outcome, waiting);
            prop_assert!(!reasons.is_empty());
            let c = waiting.causes;
            let expected = [
                (c.backfill_disabled(), "backfill_disabled"),
                (c.quota(), "quota"),
                (c.max_active_jobs(), "max_active_jobs"),
                (c.queue_capacity(), "queue_capacity"),
                (c.blocked_by().is_some(), "blocked_by"),
                (c.round_limit(), "round_limit"),
            ];
            for (flag, code) in expected {
                prop_assert_eq!(flag, reasons.iter().any(|r| r.code() == code), "{} for job {}", code, waiting.id);
            }
            for reason in &reasons {
                match reason {
                    Reason::Quota(d) => prop_assert!(d.resources.iter().any(|r| r.exceeded)),
                    Reason::QueueCapacity(d) => prop_assert!(d.resources.iter().any(|r| r.exceeded)),
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn an_activated_submission_never_breaks_a_quota_or_a_capacity(s in snapshot(), spec in job_spec()) {
        let tree = QueueTree::new_lenient(&s.queues);
        let mut job = build_job(10_000, &JobSpec { pending: false, ..spec.clone() });
        // A submission is new, so never timed out itself: `blocked` then counts Prequeue
        // blockers too, as the decision does.
        job.submitted_at = now();
        job.waiting_since = Some(now());
        let tasks = [anteroom_shared::scheduling::TaskResources {
            name: "main".into(),
            replicas: 1,
            requests: job.resources.clone(),
            node_names: Vec::new(),
        }];
        let submission = Submission {
            owner_prequeued: None,
            owner_unfinished: None,
            owner: job.owner,
            queue: &job.queue,
            kind: job.kind,
            schedule_type: job.schedule_type,
            preemption_policy: job.preemption_policy,
            tasks: &tasks,
            tolerations: &[],
        borrow: Default::default(),
        priority: 0,
        };
        let Ok(decision) = decide_submission(&s, &tree, &submission, now()) else { return Ok(()) };
        // The decision names a blocker exactly when the naive statement (§4 step 7: a
        // timed-out Pending job, or a timed-out Prequeue job not held privately) finds one.
        job.explicit_nodes = anteroom_shared::scheduling::NodeSet::Any;
        let named = matches!(&decision, SubmitDecision::Prequeued { reasons } if reasons.iter().any(|r| r.code() == "blocked_by"));
        prop_assert_eq!(named, blocked(&s, &job));
        if decision != SubmitDecision::activated() || job.schedule_type != ScheduleType::Normal {
            return Ok(());
        }
        if s.config.queue_quota_enabled {
            if let Some(rule) = s.quotas.iter().find(|q| q.queue == job.queue) {
                let (used, active) = row_usage(&s, job.owner, &job.queue);
                prop_assert!(!used.checked_add(&job.resources).expect("small").exceeds(&rule.limits));
                prop_assert!(rule.max_active_jobs.is_none_or(|max| active < max));
            }
            for &q in tree.path_of(&job.queue) {
                let Some(cap) = tree.capacity(q) else { continue };
                let total = subtree_usage(&s, &tree, tree.name(q)).checked_add(&job.resources).expect("small");
                prop_assert!(!total.exceeds(cap));
            }
        }
        prop_assert!(!blocked(&s, &job) || !s.config.blocking_enabled());
    }

    #[test]
    fn fcfs_selection_is_first_come_first_served_among_eligible_jobs(mut s in snapshot()) {
        s.config.activation_order = ActivationOrder::Fcfs;
        let outcome = select_round(&s, now()).expect("prepared");
        prop_assert_eq!(outcome.selected, naive_fcfs(&s));
    }

    #[test]
    fn fair_share_selection_follows_the_naive_drf_statement(mut s in snapshot()) {
        s.config.activation_order = ActivationOrder::FairShare;
        let outcome = select_round(&s, now()).expect("prepared");
        prop_assert_eq!(outcome.selected, naive_drf(&s));
    }

    #[test]
    fn a_round_does_not_depend_on_the_order_of_jobs_usage_rows_or_nodes(s in snapshot(), seed in any::<u64>()) {
        // Queues and quota rules keep their order: the first definition of a name wins, by
        // design, in the tree, the round and the submission alike.
        let mut shuffled = s.clone();
        shuffle(&mut shuffled.jobs, seed);
        shuffle(&mut shuffled.usage, seed.rotate_left(17));
        shuffle(&mut shuffled.nodes, seed.rotate_left(31));
        let (a, b) = (PreparedRound::new(&s, now()).expect("prepared"), PreparedRound::new(&shuffled, now()).expect("prepared"));
        let (out_a, out_b) = (a.select(), b.select());
        prop_assert_eq!(&out_a.selected, &out_b.selected);
        prop_assert_eq!(out_a.more_work, out_b.more_work);
        prop_assert_eq!(out_a.waiting.len(), out_b.waiting.len());
        // Waiting jobs compared by what they say (the causes also hold an index into the
        // snapshot's jobs, which a shuffle moves).
        for (x, y) in out_a.waiting.iter().zip(&out_b.waiting) {
            prop_assert_eq!((x.id, x.position), (y.id, y.position));
            prop_assert_eq!(x.causes.blocked_by(), y.causes.blocked_by());
            prop_assert_eq!(a.explain(&out_a, x), b.explain(&out_b, y));
        }
    }

    #[test]
    fn fair_share_with_equal_demands_keeps_owners_within_one_job(
        jobs in proptest::collection::vec((1_i64..6, 0_i64..40), 1..60),
        limit in 1_i64..40,
    ) {
        let mut s = Snapshot::default();
        s.config.activation_order = ActivationOrder::FairShare;
        s.config.prequeue_candidate_size = limit;
        s.queues = vec![queue("default", None, None)];
        s.nodes = vec![node("n1", &[("cpu", "64"), ("memory", "256Gi")])];
        s.jobs = jobs.iter().enumerate()
            .map(|(i, (owner, at))| JobBuilder::normal(i as JobId + 1).owner(*owner).submitted(*at).cpu("1").mem("4Gi").build())
            .collect();
        let outcome = select_round(&s, now()).expect("prepared");
        let mut got: BTreeMap<UserId, i64> = BTreeMap::new();
        let mut left: BTreeMap<UserId, i64> = BTreeMap::new();
        for job in &s.jobs {
            if outcome.selected.contains(&job.id) {
                *got.entry(job.owner).or_default() += 1;
            } else {
                *left.entry(job.owner).or_default() += 1;
            }
        }
        let max_got = got.values().copied().max().unwrap_or(0);
        for owner in left.keys() {
            // An owner still holding eligible jobs is at most one job behind anyone.
            let mine = got.get(owner).copied().unwrap_or(0);
            prop_assert!(max_got - mine <= 1, "owner {} got {} while another got {}", owner, mine, max_got);
        }
        // Each owner's own jobs stay first-come-first-served.
        let mut last: BTreeMap<UserId, (DateTime<Utc>, JobId)> = BTreeMap::new();
        for id in &outcome.selected {
            let job = s.jobs.iter().find(|j| j.id == *id).expect("exists");
            let key = (job.submitted_at, job.id);
            if let Some(prev) = last.insert(job.owner, key) {
                prop_assert!(prev < key);
            }
        }
    }

    #[test]
    fn the_preemption_cover_is_a_brute_force_minimum(
        pool in proptest::collection::vec(proptest::collection::vec(0_i128..6, 2), 0..=12),
        need in proptest::collection::vec(0_i128..12, 2),
    ) {
        let got = min_cover(&pool, &need, pool.len());
        // Brute force: every subset, smallest size first, then lexicographic index order.
        let mut best: Option<Vec<usize>> = None;
        for mask in 0_u32..(1 << pool.len()) {
            let indices: Vec<usize> = (0..pool.len()).filter(|i| mask & (1 << i) != 0).collect();
            let covers = (0..need.len()).all(|r| indices.iter().map(|&i| pool[i][r]).sum::<i128>() >= need[r]);
            if covers && best.as_ref().is_none_or(|b| (indices.len(), &indices) < (b.len(), b)) {
                best = Some(indices);
            }
        }
        match (got, best) {
            (None, None) => {}
            (Some(cover), Some(best)) => {
                prop_assert!(cover.exact);
                let sums: Vec<i128> = (0..need.len()).map(|r| cover.indices.iter().map(|&i| pool[i][r]).sum()).collect();
                prop_assert!(sums.iter().zip(&need).all(|(s, n)| s >= n), "cover does not cover");
                prop_assert_eq!(cover.indices, best);
            }
            (got, best) => prop_assert!(false, "search {:?} vs brute force {:?}", got, best),
        }
    }
}

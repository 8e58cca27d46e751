//! The hierarchical queue over-admission defect of seed `003_f798bd274929b8a2.txt` (Volcano
//! checked only the leaf queue): root capacity 2 CPU / 4Gi with children `sub-0` and `sub-1`;
//! a 2 CPU / 4Gi job in `sub-0` is admitted, the same job in `sub-1` must wait with a
//! `queue_capacity` reason naming the root — at submission and within one round.

use anteroom_shared::scheduling::{JobKind, JobPhase, PreemptionPolicy, ScheduleType};
use chrono::Duration;

use super::fixtures::{JobBuilder, node, queue, rl, t0, task};
use crate::prequeue::queue_tree::QueueTree;
use crate::prequeue::reason::Reason;
use crate::prequeue::round::PreparedRound;
use crate::prequeue::snapshot::{Snapshot, usage_from_jobs};
use crate::prequeue::submit::{Submission, SubmitDecision, decide_submission};

fn seed_snapshot() -> Snapshot {
    let mut s = Snapshot::default();
    s.config.queue_quota_enabled = true;
    s.config.prequeue_candidate_size = 10;
    s.queues = vec![
        queue("test-root", None, Some(rl(&[("cpu", "2"), ("memory", "4Gi")]))),
        queue("sub-0", Some("test-root"), None),
        queue("sub-1", Some("test-root"), None),
    ];
    s.nodes = vec![node("n1", &[("cpu", "16"), ("memory", "64Gi")])];
    s
}

fn capacity_queues(reasons: &[Reason]) -> Vec<&str> {
    reasons
        .iter()
        .filter_map(|r| match r {
            Reason::QueueCapacity(d) => Some(d.queue.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_same_job_in_a_sibling_queue_waits_for_the_root_capacity_at_submission() {
    let mut s = seed_snapshot();
    let tree = QueueTree::new(&s.queues).expect("valid tree");
    let tasks = [task("main", 1, &[("cpu", "2"), ("memory", "4Gi")])];
    let job = |queue: &'static str| Submission {
        owner_prequeued: None,
        owner_unfinished: None,
        owner: 1,
        queue,
        kind: JobKind::Custom,
        schedule_type: ScheduleType::Normal,
        preemption_policy: PreemptionPolicy::PreemptLowerPriority,
        tasks: &tasks,
        tolerations: &[],
        borrow: Default::default(),
        priority: 0,
    };
    let now = t0() + Duration::seconds(10);
    assert_eq!(
        decide_submission(&s, &tree, &job("sub-0"), now),
        Ok(SubmitDecision::activated())
    );

    // job-1 now occupies sub-0 (and so test-root).
    s.jobs.push(
        JobBuilder::normal(1)
            .queue("sub-0")
            .cpu("2")
            .mem("4Gi")
            .phase(JobPhase::Activating)
            .build(),
    );
    s.usage = usage_from_jobs(&s.jobs);
    let decision = decide_submission(&s, &tree, &job("sub-1"), now).expect("accepted");
    let SubmitDecision::Prequeued { reasons } = decision else {
        panic!("job-2 must wait, got {decision:?}")
    };
    assert_eq!(capacity_queues(&reasons), ["test-root"]);
    let json = serde_json::to_value(&reasons[0]).expect("serializes");
    assert_eq!(json["code"], "queue_capacity");
    assert_eq!(json["details"]["queue"], "test-root");
    assert_eq!(json["details"]["jobQueue"], "sub-1");
    assert_eq!(json["details"]["resources"][0]["usage"], "2");
    assert_eq!(json["details"]["resources"][0]["exceeded"], true);
}

#[test]
fn the_same_job_in_a_sibling_queue_waits_for_the_root_capacity_within_one_round() {
    let mut s = seed_snapshot();
    s.jobs = vec![
        JobBuilder::normal(1).queue("sub-0").cpu("2").mem("4Gi").build(),
        JobBuilder::normal(2).queue("sub-1").cpu("2").mem("4Gi").build(),
    ];
    let now = t0() + Duration::seconds(10);
    let prepared = PreparedRound::new(&s, now).expect("prepared");
    let outcome = prepared.select();
    assert_eq!(outcome.selected, vec![1]);
    assert_eq!(outcome.waiting.len(), 1);
    assert_eq!(outcome.waiting[0].id, 2);
    let reasons = prepared.explain(&outcome, &outcome.waiting[0]);
    assert_eq!(capacity_queues(&reasons), ["test-root"]);
    assert!(!outcome.more_work);
    // This round's selection (job-1) counts at the root; quantities keep the capacity's format.
    let json = serde_json::to_value(&reasons[0]).expect("serializes");
    let memory = &json["details"]["resources"][1];
    assert_eq!(memory["resource"], "memory");
    assert_eq!(memory["usage"], "4Gi");
    assert_eq!(memory["request"], "4Gi");
    assert_eq!(memory["limit"], "4Gi");
    assert_eq!(memory["exceeded"], true);
}

#[test]
fn a_request_alone_over_the_root_capacity_is_refused_at_submission() {
    let s = seed_snapshot();
    let tree = QueueTree::new(&s.queues).expect("valid tree");
    let tasks = [task("main", 1, &[("cpu", "3")])];
    let job = Submission {
        owner_prequeued: None,
        owner_unfinished: None,
        owner: 1,
        queue: "sub-1",
        kind: JobKind::Custom,
        schedule_type: ScheduleType::Normal,
        preemption_policy: PreemptionPolicy::PreemptLowerPriority,
        tasks: &tasks,
        tolerations: &[],
        borrow: Default::default(),
        priority: 0,
    };
    let err = decide_submission(&s, &tree, &job, t0()).expect_err("refused");
    assert_eq!(err.code(), "request_exceeds_queue_capacity");
    assert_eq!(err.details()["queue"], "test-root");
}

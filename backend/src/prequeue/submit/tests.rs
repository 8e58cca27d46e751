use super::*;
use crate::prequeue::snapshot::QueueQuota;
use crate::prequeue::tests::fixtures::{JobBuilder, node, queue, rl, t0, task, usage};
use chrono::Duration;

fn cluster() -> Snapshot {
    Snapshot {
        nodes: vec![
            node("n1", &[("cpu", "32"), ("memory", "128Gi"), ("nvidia.com/a100", "8")]),
            node("n2", &[("cpu", "32"), ("memory", "128Gi")]),
        ],
        queues: vec![queue("default", None, None)],
        ..Snapshot::default()
    }
}

fn submit<'a>(tasks: &'a [TaskResources], schedule_type: ScheduleType) -> Submission<'a> {
    Submission {
        owner_prequeued: None,
        owner_unfinished: None,
        owner: 7,
        queue: "default",
        kind: JobKind::Custom,
        schedule_type,
        preemption_policy: PreemptionPolicy::default(),
        tasks,
        tolerations: &[],
        borrow: Default::default(),
        priority: 0,
    }
}

fn decide(s: &Snapshot, job: &Submission<'_>) -> Result<SubmitDecision, SubmitRejection> {
    let tree = QueueTree::new_lenient(&s.queues);
    decide_submission(s, &tree, job, t0() + Duration::seconds(1000))
}

fn with_quota(mut s: Snapshot, limits: &[(&str, &str)]) -> Snapshot {
    s.config.queue_quota_enabled = true;
    s.quotas.push(QueueQuota {
        queue: "default".into(),
        limits: rl(limits),
        max_active_jobs: None,
    });
    s
}

#[test]
fn a_job_with_room_everywhere_is_activated() {
    let tasks = [task("main", 1, &[("cpu", "4")])];
    assert_eq!(
        decide(&cluster(), &submit(&tasks, ScheduleType::Normal)),
        Ok(SubmitDecision::activated())
    );
}

#[test]
fn backfill_for_distributed_kinds_is_refused() {
    let tasks = [task("main", 1, &[("cpu", "4")])];
    let mut job = submit(&tasks, ScheduleType::Backfill);
    job.kind = JobKind::Pytorch;
    let err = decide(&cluster(), &job).expect_err("refused");
    assert_eq!(err.code(), "backfill_kind_unsupported");
}

#[test]
fn backfill_while_backfill_is_disabled_is_refused() {
    let tasks = [task("main", 1, &[("cpu", "4")])];
    let err = decide(&cluster(), &submit(&tasks, ScheduleType::Backfill)).expect_err("refused");
    assert_eq!(err.code(), "backfill_disabled");
}

#[test]
fn a_job_that_can_never_fit_is_unschedulable() {
    let tasks = [task("main", 1, &[("nvidia.com/a100", "16")])];
    let err = decide(&cluster(), &submit(&tasks, ScheduleType::Normal)).expect_err("refused");
    assert_eq!(err.code(), "unschedulable");
    assert!(err.to_string().contains("\"main\""));
}

#[test]
fn a_negative_request_in_a_second_task_is_refused_before_anything_else() {
    // 64 CPUs plus -60 would pass as 4 CPUs against a quota of 8 while reserving 64.
    let s = with_quota(cluster(), &[("cpu", "8")]);
    let tasks = [
        task("master", 1, &[("cpu", "64")]),
        task("worker", 1, &[("cpu", "-60")]),
    ];
    let err = decide(&s, &submit(&tasks, ScheduleType::Normal)).expect_err("refused");
    assert_eq!(err.code(), "validation_failed");
    assert_eq!(err.details()["field"], "tasks[1].resources.cpu");
    assert!(matches!(
        err,
        SubmitRejection::InvalidResources(TaskResourceError::Negative { .. })
    ));
    assert!(submission_request(&submit(&tasks, ScheduleType::Normal)).is_err());
}

#[test]
fn a_request_out_of_range_is_refused_naming_its_field() {
    let mut huge = task("worker", 1, &[("memory", "1e30")]);
    huge.replicas = 4_000;
    let tasks = [task("master", 1, &[("memory", "1Gi")]), huge];
    let err = decide(&cluster(), &submit(&tasks, ScheduleType::Normal)).expect_err("refused");
    assert_eq!(err.code(), "validation_failed");
    assert_eq!(err.details()["field"], "tasks[1].resources.memory");
}

#[test]
fn a_task_pinned_to_a_node_the_cluster_does_not_have_is_refused_naming_the_field() {
    let mut pinned = task("worker", 1, &[("cpu", "1")]);
    pinned.node_names = vec!["n1".into(), "n9".into()];
    let tasks = [task("master", 1, &[("cpu", "1")]), pinned];
    let err = decide(&cluster(), &submit(&tasks, ScheduleType::Normal)).expect_err("refused");
    assert_eq!(
        err,
        SubmitRejection::UnknownNode {
            field: "tasks[1].nodeNames[1]".into(),
            node: "n9".into()
        }
    );
    assert_eq!(err.code(), "validation_failed");
    assert_eq!(err.details()["field"], "tasks[1].nodeNames[1]");
}

#[test]
fn a_task_pinned_to_a_cordoned_node_of_the_cluster_is_not_an_unknown_node() {
    let mut s = cluster();
    s.nodes[1].schedulable = false;
    let mut pinned = task("main", 1, &[("cpu", "1")]);
    pinned.node_names = vec!["n2".into()];
    let err = decide(&s, &submit(&[pinned], ScheduleType::Normal)).expect_err("cannot be placed");
    assert_eq!(err.code(), "unschedulable");
}

#[test]
fn a_request_alone_over_the_limit_is_refused() {
    let s = with_quota(cluster(), &[("cpu", "8")]);
    let tasks = [task("main", 1, &[("cpu", "9")])];
    let err = decide(&s, &submit(&tasks, ScheduleType::Normal)).expect_err("refused");
    assert_eq!(err.code(), "quota_request_exceeds_limit");
    assert_eq!(err.details()["resources"][0]["request"], "9");
    assert_eq!(err.details()["resources"][0]["limit"], "8");
}

#[test]
fn normal_job_over_quota_waits_in_prequeue() {
    let mut s = with_quota(cluster(), &[("cpu", "8")]);
    s.usage.push(usage(7, "default", &[("cpu", "6")], 1));
    let tasks = [task("main", 1, &[("cpu", "4")])];
    let decision = decide(&s, &submit(&tasks, ScheduleType::Normal)).expect("accepted");
    let SubmitDecision::Prequeued { reasons } = decision else {
        panic!("expected prequeue")
    };
    assert_eq!(reasons[0].code(), "quota");
    let json = serde_json::to_value(&reasons[0]).expect("serializes");
    assert_eq!(json["details"]["resources"][0]["usage"], "6");
    assert_eq!(json["details"]["resources"][0]["request"], "4");
}

#[test]
fn quotas_are_ignored_while_switched_off() {
    let mut s = with_quota(cluster(), &[("cpu", "8")]);
    s.config.queue_quota_enabled = false;
    s.usage.push(usage(7, "default", &[("cpu", "8")], 1));
    let tasks = [task("main", 1, &[("cpu", "9")])];
    assert_eq!(
        decide(&s, &submit(&tasks, ScheduleType::Normal)),
        Ok(SubmitDecision::activated())
    );
}

#[test]
fn a_full_prequeue_refuses_further_submissions() {
    let mut s = cluster();
    s.config.max_prequeued_jobs_per_user = 2;
    s.jobs = (1..=2).map(|id| JobBuilder::normal(id).owner(7).build()).collect();
    let tasks = [task("main", 1, &[("cpu", "1")])];
    let err = decide(&s, &submit(&tasks, ScheduleType::Normal)).expect_err("refused");
    assert_eq!(err.code(), "prequeue_full");
}

#[test]
fn a_timed_out_prequeued_job_blocks_a_new_job_at_submission() {
    let mut s = cluster();
    s.config.backfill_enabled = true;
    s.jobs = vec![JobBuilder::normal(41).owner(8).cpu("1").tolerance(10).build()];
    let tasks = [task("main", 1, &[("cpu", "1")])];
    let decision = decide(&s, &submit(&tasks, ScheduleType::Normal)).expect("accepted");
    let SubmitDecision::Prequeued { reasons } = decision else {
        panic!("expected prequeue")
    };
    assert_eq!(
        reasons,
        vec![Reason::BlockedBy(BlockedByDetails {
            job_id: 41,
            phase: JobPhase::Prequeue,
            queue: "default".into(),
            domain: "cpu-only".into(),
        })]
    );
}

#[test]
fn a_timed_out_job_held_by_its_owners_own_quota_does_not_block_a_new_job() {
    let mut s = with_quota(cluster(), &[("nvidia.com/a100", "2")]);
    s.config.backfill_enabled = true;
    // Alice (8) has her two a100 running and a third waiting, timed out.
    s.usage = vec![usage(8, "default", &[("nvidia.com/a100", "2")], 1)];
    s.jobs = vec![
        JobBuilder::normal(41)
            .owner(8)
            .gpus("nvidia.com/a100", 1)
            .tolerance(10)
            .build(),
    ];
    let tasks = [task("main", 1, &[("cpu", "1"), ("nvidia.com/a100", "1")])];
    let decision = decide(&s, &submit(&tasks, ScheduleType::Normal)).expect("accepted");
    assert_eq!(decision, SubmitDecision::activated());
    assert!(starts_waiting_clock(&decision));
    // Once Alice's usage drops, her job waits for shared room again and blocks.
    s.usage.clear();
    let decision = decide(&s, &submit(&tasks, ScheduleType::Normal)).expect("accepted");
    assert!(
        matches!(decision, SubmitDecision::Prequeued { ref reasons } if reasons[0].code() == "blocked_by"),
        "{decision:?}"
    );
    assert!(starts_waiting_clock(&decision));
}

#[test]
fn a_submission_held_by_its_own_quota_starts_no_waiting_clock() {
    let mut s = with_quota(cluster(), &[("cpu", "2")]);
    s.usage = vec![usage(7, "default", &[("cpu", "2")], 1)];
    let tasks = [task("main", 1, &[("cpu", "1")])];
    let decision = decide(&s, &submit(&tasks, ScheduleType::Normal)).expect("accepted");
    assert!(matches!(decision, SubmitDecision::Prequeued { ref reasons } if reasons[0].code() == "quota"));
    assert!(!starts_waiting_clock(&decision));
    // Held by the queue's capacity (shared room) instead: the clock starts.
    let mut s = cluster();
    s.config.queue_quota_enabled = true;
    s.queues = vec![queue("default", None, Some(rl(&[("cpu", "2")])))];
    s.usage = vec![usage(9, "default", &[("cpu", "2")], 1)];
    let decision = decide(&s, &submit(&tasks, ScheduleType::Normal)).expect("accepted");
    assert!(matches!(decision, SubmitDecision::Prequeued { ref reasons } if reasons[0].code() == "queue_capacity"));
    assert!(starts_waiting_clock(&decision));
}

#[test]
fn an_unconstrained_accelerator_blocker_blocks_a_cpu_only_candidate_pinned_anywhere() {
    let mut s = cluster();
    s.config.backfill_enabled = true;
    s.jobs = vec![
        JobBuilder::normal(41)
            .gpus("nvidia.com/a100", 1)
            .tolerance(10)
            .phase(JobPhase::Pending)
            .build(),
    ];
    // A zero-valued accelerator does not make the candidate leave the cpu-only domain.
    let mut pinned = task("main", 1, &[("cpu", "1"), ("nvidia.com/h100", "0")]);
    pinned.node_names = vec!["n1".into()];
    let tasks = [pinned];
    let decision = decide(&s, &submit(&tasks, ScheduleType::Normal)).expect("accepted");
    let SubmitDecision::Prequeued { reasons } = decision else {
        panic!("expected prequeue")
    };
    assert!(
        matches!(reasons[..], [Reason::BlockedBy(ref d)] if d.job_id == 41),
        "{reasons:?}"
    );
}

#[test]
fn a_timed_out_job_pinned_to_other_nodes_does_not_block() {
    let mut s = cluster();
    s.config.backfill_enabled = true;
    s.jobs = vec![
        JobBuilder::normal(42)
            .cpu("1")
            .tolerance(10)
            .phase(JobPhase::Pending)
            .nodes(&["n2"])
            .build(),
    ];
    let mut pinned = task("main", 1, &[("cpu", "1")]);
    pinned.node_names = vec!["n1".into()];
    let tasks = [pinned];
    assert_eq!(
        decide(&s, &submit(&tasks, ScheduleType::Normal)),
        Ok(SubmitDecision::activated())
    );
}

#[test]
fn a_timed_out_job_of_another_accelerator_domain_does_not_block() {
    let mut s = cluster();
    s.config.backfill_enabled = true;
    s.nodes.push(node("n3", &[("cpu", "32"), ("nvidia.com/h100", "8")]));
    s.jobs = vec![
        JobBuilder::normal(41)
            .gpus("nvidia.com/a100", 1)
            .tolerance(10)
            .phase(JobPhase::Pending)
            .build(),
        JobBuilder::normal(43).gpus("nvidia.com/a100", 2).tolerance(10).build(),
    ];
    let tasks = [task("main", 1, &[("cpu", "1"), ("nvidia.com/h100", "1")])];
    assert_eq!(
        decide(&s, &submit(&tasks, ScheduleType::Normal)),
        Ok(SubmitDecision::activated())
    );
}

#[test]
fn a_submission_naming_many_zero_valued_accelerators_is_decided_like_any_other() {
    let mut s = with_quota(cluster(), &[("cpu", "8")]);
    s.config.backfill_enabled = true;
    let names: Vec<String> = (0..129).map(|i| format!("v.io/r{i}")).collect();
    let mut requests: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "0")).collect();
    requests.push(("cpu", "1"));
    let tasks = [task("main", 1, &requests)];
    assert_eq!(
        decide(&s, &submit(&tasks, ScheduleType::Normal)),
        Ok(SubmitDecision::activated())
    );
}

#[test]
fn a_blocked_backfill_job_waits_in_prequeue_but_ignores_quotas() {
    let mut s = with_quota(cluster(), &[("cpu", "1")]);
    s.config.backfill_enabled = true;
    let tasks = [task("main", 1, &[("cpu", "8")])];
    // Over the normal quota, yet backfill is never limited by it.
    assert_eq!(
        decide(&s, &submit(&tasks, ScheduleType::Backfill)),
        Ok(SubmitDecision::activated())
    );
    s.jobs = vec![
        JobBuilder::normal(41)
            .owner(8)
            .cpu("1")
            .tolerance(10)
            .phase(JobPhase::Pending)
            .build(),
    ];
    let decision = decide(&s, &submit(&tasks, ScheduleType::Backfill)).expect("accepted");
    assert!(matches!(decision, SubmitDecision::Prequeued { ref reasons } if reasons[0].code() == "blocked_by"));
}

#[test]
fn every_applicable_reason_is_reported() {
    let mut s = with_quota(cluster(), &[("cpu", "8")]);
    s.config.backfill_enabled = true;
    s.queues = vec![queue("default", None, Some(rl(&[("cpu", "10")])))];
    s.usage.push(usage(7, "default", &[("cpu", "6")], 1));
    s.usage.push(usage(8, "default", &[("cpu", "3")], 1));
    s.jobs = vec![
        JobBuilder::normal(41)
            .owner(8)
            .cpu("1")
            .tolerance(10)
            .phase(JobPhase::Pending)
            .build(),
    ];
    let tasks = [task("main", 1, &[("cpu", "4")])];
    let decision = decide(&s, &submit(&tasks, ScheduleType::Normal)).expect("accepted");
    let SubmitDecision::Prequeued { reasons } = decision else {
        panic!("expected prequeue")
    };
    assert_eq!(
        reasons.iter().map(Reason::code).collect::<Vec<_>>(),
        ["quota", "queue_capacity", "blocked_by"]
    );
}

#[test]
fn blocking_is_off_while_backfill_and_quotas_are_off() {
    let mut s = cluster();
    s.jobs = vec![
        JobBuilder::normal(41)
            .cpu("1")
            .tolerance(10)
            .phase(JobPhase::Pending)
            .build(),
    ];
    let tasks = [task("main", 1, &[("cpu", "1")])];
    assert_eq!(
        decide(&s, &submit(&tasks, ScheduleType::Normal)),
        Ok(SubmitDecision::activated())
    );
}

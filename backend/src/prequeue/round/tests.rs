//! Unit tests of the round: selection in both orders, each wait cause and its details,
//! positions, and the edges of interning (huge requests, zero quantities, many accelerators).

use super::*;
use crate::prequeue::reason::Reason;
use crate::prequeue::snapshot::{QueueQuota, Snapshot};
use crate::prequeue::tests::fixtures::{JobBuilder, node, queue, rl, t0, usage};
use anteroom_shared::scheduling::{ActivationOrder, JobPhase, ScheduleType};
use chrono::Duration;

mod blocking;
mod time_aware;

fn now() -> DateTime<Utc> {
    t0() + Duration::seconds(1000)
}

fn base(limit: i64) -> Snapshot {
    let mut s = Snapshot::default();
    s.config.prequeue_candidate_size = limit;
    s.queues = vec![queue("default", None, None)];
    s.nodes = vec![node(
        "n1",
        &[("cpu", "64"), ("memory", "256Gi"), ("nvidia.com/a100", "8")],
    )];
    s
}

fn with_quota(mut s: Snapshot, queue: &str, limits: &[(&str, &str)], max_active: Option<u32>) -> Snapshot {
    s.config.queue_quota_enabled = true;
    s.quotas.push(QueueQuota {
        queue: queue.into(),
        limits: rl(limits),
        max_active_jobs: max_active,
    });
    s
}

fn run(s: &Snapshot) -> RoundOutcome {
    select_round(s, now()).expect("prepared")
}

fn codes(s: &Snapshot, id: JobId) -> Vec<&'static str> {
    let prepared = PreparedRound::new(s, now()).expect("prepared");
    let outcome = prepared.select();
    let waiting = outcome.waiting.iter().find(|w| w.id == id).expect("waiting");
    prepared.explain(&outcome, waiting).iter().map(Reason::code).collect()
}

#[test]
fn fcfs_selects_in_submission_order_up_to_the_limit() {
    let mut s = base(2);
    s.jobs = vec![
        JobBuilder::normal(3).build(),
        JobBuilder::normal(1).build(),
        JobBuilder::normal(2).build(),
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![1, 2]);
    assert!(outcome.more_work);
    assert_eq!(outcome.waiting.len(), 1);
    assert!(outcome.waiting[0].causes.round_limit());
}

#[test]
fn the_limit_is_the_smaller_of_candidate_size_and_max_activations() {
    let mut s = base(10);
    s.config.max_total_activations_per_round = 1;
    s.jobs = vec![JobBuilder::normal(1).build(), JobBuilder::normal(2).build()];
    assert_eq!(run(&s).selected, vec![1]);
}

#[test]
fn ties_in_submission_time_are_broken_by_id() {
    let mut s = base(1);
    s.jobs = vec![
        JobBuilder::normal(9).submitted(5).build(),
        JobBuilder::normal(4).submitted(5).build(),
    ];
    assert_eq!(run(&s).selected, vec![4]);
}

#[test]
fn no_more_work_when_everything_eligible_was_selected() {
    let mut s = with_quota(base(10), "default", &[("cpu", "1")], None);
    s.jobs = vec![
        JobBuilder::normal(1).cpu("1").build(),
        JobBuilder::normal(2).cpu("1").build(),
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![1]);
    assert!(!outcome.more_work);
    assert!(outcome.waiting[0].causes.quota());
}

#[test]
fn quota_accumulates_within_a_round_per_user_and_queue() {
    let mut s = with_quota(base(10), "default", &[("cpu", "4")], None);
    s.usage = vec![usage(1, "default", &[("cpu", "1")], 1)];
    s.jobs = vec![
        JobBuilder::normal(1).cpu("2").build(),
        JobBuilder::normal(2).cpu("2").build(),          // 1 + 2 + 2 > 4: waits
        JobBuilder::normal(3).cpu("1").build(),          // 1 + 2 + 1 = 4: fits, passes the held job
        JobBuilder::normal(4).owner(2).cpu("4").build(), // another user's own quota
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![1, 3, 4]);
    assert_eq!(codes(&s, 2), ["quota"]);
}

#[test]
fn quota_details_report_usage_request_and_limit() {
    let mut s = with_quota(base(10), "default", &[("cpu", "4"), ("memory", "8Gi")], None);
    s.usage = vec![usage(1, "default", &[("cpu", "3"), ("memory", "1Gi")], 1)];
    s.jobs = vec![JobBuilder::normal(1).cpu("2").mem("1Gi").build()];
    let prepared = PreparedRound::new(&s, now()).expect("prepared");
    let outcome = prepared.select();
    let reasons = prepared.explain(&outcome, &outcome.waiting[0]);
    let json = serde_json::to_value(&reasons[0]).expect("serializes");
    assert_eq!(json["code"], "quota");
    assert_eq!(json["details"]["user"], 1);
    let cpu = &json["details"]["resources"][0];
    assert_eq!(
        (
            cpu["resource"].as_str(),
            cpu["usage"].as_str(),
            cpu["request"].as_str(),
            cpu["limit"].as_str()
        ),
        (Some("cpu"), Some("3"), Some("2"), Some("4"))
    );
    assert_eq!(cpu["exceeded"], true);
    assert_eq!(json["details"]["resources"][1]["exceeded"], false);
    assert_eq!(json["details"]["resources"][1]["limit"], "8Gi");
}

#[test]
fn max_active_jobs_counts_this_rounds_selections() {
    let mut s = with_quota(base(10), "default", &[], Some(2));
    s.usage = vec![usage(1, "default", &[], 1)];
    s.jobs = vec![JobBuilder::normal(1).build(), JobBuilder::normal(2).build()];
    assert_eq!(run(&s).selected, vec![1]);
    assert_eq!(codes(&s, 2), ["max_active_jobs"]);
}

#[test]
fn queue_capacity_counts_this_rounds_selections_at_every_level() {
    let mut s = base(10);
    s.config.queue_quota_enabled = true;
    s.queues = vec![
        queue("team", None, Some(rl(&[("nvidia.com/a100", "4")]))),
        queue("team-a", Some("team"), Some(rl(&[("nvidia.com/a100", "3")]))),
        queue("team-b", Some("team"), None),
    ];
    s.usage = vec![usage(9, "team-b", &[("nvidia.com/a100", "1")], 1)];
    s.jobs = vec![
        JobBuilder::normal(1).queue("team-a").gpus("nvidia.com/a100", 2).build(),
        JobBuilder::normal(2)
            .queue("team-a")
            .owner(2)
            .gpus("nvidia.com/a100", 2)
            .build(), // team-a 4 > 3
        JobBuilder::normal(3).queue("team-b").gpus("nvidia.com/a100", 1).build(), // team 1+2+1 = 4
        JobBuilder::normal(4)
            .queue("team-b")
            .owner(3)
            .gpus("nvidia.com/a100", 1)
            .build(), // team 5 > 4
    ];
    let prepared = PreparedRound::new(&s, now()).expect("prepared");
    let outcome = prepared.select();
    assert_eq!(outcome.selected, vec![1, 3]);
    let names = |id: JobId| -> Vec<String> {
        let w = outcome.waiting.iter().find(|w| w.id == id).expect("waiting");
        prepared
            .explain(&outcome, w)
            .iter()
            .filter_map(|r| match r {
                Reason::QueueCapacity(d) => Some(d.queue.clone()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(names(2), ["team-a", "team"]);
    assert_eq!(names(4), ["team"]);
}

#[test]
fn a_duplicate_queue_row_is_ignored_by_the_round_as_by_submission() {
    use crate::prequeue::queue_tree::QueueTree;
    use crate::prequeue::submit::{Submission, SubmitDecision, decide_submission};
    use crate::prequeue::tests::fixtures::task;
    use anteroom_shared::scheduling::{JobKind, PreemptionPolicy};

    let mut s = base(10);
    s.config.queue_quota_enabled = true;
    // The first row of a name wins everywhere: here it has no capacity.
    s.queues = vec![
        queue("default", None, None),
        queue("default", None, Some(rl(&[("cpu", "1")]))),
    ];
    let tasks = [task("main", 1, &[("cpu", "2")])];
    let submission = Submission {
        owner_prequeued: None,
        owner_unfinished: None,
        owner: 1,
        queue: "default",
        kind: JobKind::Custom,
        schedule_type: ScheduleType::Normal,
        preemption_policy: PreemptionPolicy::default(),
        tasks: &tasks,
        tolerations: &[],
        borrow: Default::default(),
        priority: 0,
    };
    let tree = QueueTree::new_lenient(&s.queues);
    assert_eq!(
        decide_submission(&s, &tree, &submission, now()),
        Ok(SubmitDecision::activated())
    );
    s.jobs = vec![JobBuilder::normal(1).cpu("2").build()];
    assert_eq!(run(&s).selected, vec![1]);
}

#[test]
fn backfill_jobs_are_held_while_backfill_is_disabled() {
    let mut s = base(10);
    s.jobs = vec![
        JobBuilder::backfill(1).cpu("1").build(),
        JobBuilder::normal(2).cpu("1").build(),
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![2]);
    assert!(outcome.waiting[0].causes.backfill_disabled());
    assert!(!outcome.more_work);
    assert_eq!(codes(&s, 1), ["backfill_disabled"]);
}

#[test]
fn backfill_jobs_ignore_quotas_and_capacities() {
    let mut s = with_quota(base(10), "default", &[("cpu", "1")], Some(0));
    s.config.backfill_enabled = true;
    s.queues = vec![queue("default", None, Some(rl(&[("cpu", "1")])))];
    s.jobs = vec![
        JobBuilder::backfill(1).cpu("8").build(),
        JobBuilder::backfill(2).cpu("8").build(),
    ];
    assert_eq!(run(&s).selected, vec![1, 2]);
}

#[test]
fn positions_count_the_jobs_still_waiting_in_each_queue() {
    let mut s = base(1);
    s.jobs = vec![
        JobBuilder::normal(1).build(),
        JobBuilder::normal(2).queue("q2").build(),
        JobBuilder::normal(3).build(),
        JobBuilder::normal(4).queue("q2").build(),
        JobBuilder::normal(5).build(),
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![1]);
    let positions: Vec<(JobId, u32)> = outcome.waiting.iter().map(|w| (w.id, w.position)).collect();
    assert_eq!(positions, vec![(2, 1), (3, 1), (4, 2), (5, 2)]);
}

#[test]
fn fair_share_prefers_the_owner_with_the_lowest_dominant_share() {
    let mut s = base(3);
    s.config.activation_order = ActivationOrder::FairShare;
    // User 1 already uses half the GPUs; user 2 nothing.
    s.usage = vec![usage(1, "default", &[("nvidia.com/a100", "4")], 1)];
    s.jobs = vec![
        JobBuilder::normal(1).owner(1).gpus("nvidia.com/a100", 1).build(),
        JobBuilder::normal(2).owner(1).gpus("nvidia.com/a100", 1).build(),
        JobBuilder::normal(3).owner(2).gpus("nvidia.com/a100", 1).build(),
        JobBuilder::normal(4).owner(2).gpus("nvidia.com/a100", 1).build(),
        JobBuilder::normal(5).owner(2).gpus("nvidia.com/a100", 1).build(),
    ];
    // User 2 climbs from 0 to 3/8 while staying under user 1's 4/8.
    assert_eq!(run(&s).selected, vec![3, 4, 5]);
}

#[test]
fn fair_share_alternates_between_equal_owners_in_submission_order() {
    let mut s = base(4);
    s.config.activation_order = ActivationOrder::FairShare;
    s.jobs = vec![
        JobBuilder::normal(1).owner(1).cpu("1").build(),
        JobBuilder::normal(2).owner(1).cpu("1").build(),
        JobBuilder::normal(3).owner(1).cpu("1").build(),
        JobBuilder::normal(4).owner(2).cpu("1").build(),
        JobBuilder::normal(5).owner(2).cpu("1").build(),
    ];
    assert_eq!(run(&s).selected, vec![1, 4, 2, 5]);
}

#[test]
fn fair_share_skips_an_owners_held_job_but_keeps_the_rest_in_order() {
    let mut s = with_quota(base(10), "default", &[("cpu", "2")], None);
    s.config.activation_order = ActivationOrder::FairShare;
    s.jobs = vec![
        JobBuilder::normal(1).owner(1).cpu("4").build(), // over its owner's quota alone
        JobBuilder::normal(2).owner(1).cpu("1").build(),
        JobBuilder::normal(3).owner(2).cpu("1").build(),
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![2, 3]);
    assert!(outcome.waiting[0].causes.quota());
}

#[test]
fn a_selected_backfill_job_does_not_raise_its_owners_fair_share() {
    let mut s = base(3);
    s.config.activation_order = ActivationOrder::FairShare;
    s.config.backfill_enabled = true;
    s.jobs = vec![
        JobBuilder::backfill(1).owner(1).cpu("4").build(),
        JobBuilder::normal(2).owner(2).cpu("1").build(),
        JobBuilder::normal(3).owner(1).cpu("1").build(),
        JobBuilder::normal(4).owner(2).cpu("1").build(),
    ];
    // Backfill is not owner usage (running backfill is not in the usage rows either): after
    // job 1 owner 1 still has share 0 and job 3 goes before owner 2's second job.
    assert_eq!(run(&s).selected, vec![1, 2, 3]);
}

#[test]
fn fair_share_divides_by_the_allocatable_total_of_every_node() {
    let mut s = base(1);
    s.config.activation_order = ActivationOrder::FairShare;
    // 16 CPUs and 4 GPUs, half the CPUs on a cordoned node.
    s.nodes = vec![
        node("n1", &[("cpu", "8"), ("nvidia.com/a100", "4")]),
        node("n2", &[("cpu", "8")]),
    ];
    s.nodes[1].schedulable = false;
    s.usage = vec![
        usage(1, "default", &[("nvidia.com/a100", "1")], 1),
        usage(2, "default", &[("cpu", "4")], 1),
    ];
    s.jobs = vec![
        JobBuilder::normal(1).owner(2).cpu("1").build(),
        JobBuilder::normal(2).owner(1).cpu("1").build(),
    ];
    // Both owners hold a quarter of a resource (1/4 GPU, 4/16 CPU): the tie goes to the
    // older job. Counting only the schedulable node would make owner 2's share 4/8.
    assert_eq!(run(&s).selected, vec![1]);
}

#[test]
fn requests_beyond_i64_milli_units_are_still_compared_exactly() {
    let mut s = with_quota(base(10), "default", &[("memory", "1Ei")], None);
    s.jobs = vec![
        JobBuilder::normal(1).mem("2Ei").build(),   // 2.3e21 milli: over the limit
        JobBuilder::normal(2).mem("512Pi").build(), // 5.8e20 milli: under it
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![2]);
    assert!(outcome.waiting[0].causes.quota());
}

#[test]
fn zero_valued_resources_in_usage_rows_do_not_stop_the_round() {
    let mut s = with_quota(base(10), "default", &[("cpu", "8")], None);
    let names: Vec<String> = (0..129).map(|i| format!("v.io/d{i}")).collect();
    let zeros: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "0")).collect();
    s.usage = vec![usage(2, "default", &zeros, 1)];
    s.jobs = vec![JobBuilder::normal(1).cpu("1").build()];
    assert_eq!(run(&s).selected, vec![1]);
}

#[test]
fn a_running_job_with_zero_valued_accelerators_does_not_stop_later_rounds() {
    // It passed admission (zero requests need no capacity) and runs; its usage row must
    // not keep everyone else waiting from then on.
    let mut s = with_quota(base(10), "default", &[("cpu", "8")], None);
    let mut running = JobBuilder::normal(1).owner(2).cpu("1").phase(JobPhase::Running);
    for i in 0..129 {
        running = running.res(&format!("v.io/r{i}"), "0");
    }
    s.jobs = vec![running.build(), JobBuilder::normal(2).cpu("1").build()];
    s.usage = crate::prequeue::snapshot::usage_from_jobs(&s.jobs);
    assert_eq!(run(&s).selected, vec![2]);
}

#[test]
fn jobs_naming_more_than_128_accelerators_are_compared_exactly_not_refused() {
    let mut s = base(10);
    s.config.backfill_enabled = true;
    let many = |mut job: JobBuilder, last: &str| {
        for i in 0..129 {
            job = job.res(&format!("vendor.io/dev{i}"), "1");
        }
        job.res(last, "1")
    };
    s.jobs = vec![
        many(JobBuilder::normal(1), "vendor.io/x")
            .tolerance(60)
            .phase(JobPhase::Pending)
            .build(),
        many(JobBuilder::normal(2), "vendor.io/x").build(), // the blocker's domain: blocked
        many(JobBuilder::normal(3), "vendor.io/y").build(), // differs in one name: free
        JobBuilder::normal(4).cpu("1").build(),             // cpu-only: blocked
        JobBuilder::normal(5).gpus("nvidia.com/a100", 1).build(), // another domain: free
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![3, 5]);
    assert!(outcome.waiting.iter().all(|w| w.causes.blocked_by() == Some(1)));
}

//! Reclaim plans on the two-team cluster of `spec/prequeue.md` §9: cv and nlp guaranteed 4
//! GPUs each on two 4-GPU nodes.

use chrono::Duration;

use super::*;
use crate::prequeue::snapshot::usage_from_jobs;
use crate::prequeue::tests::fixtures::{JobBuilder, node, queue, rl, shared_queue, t0};
use anteroom_shared::scheduling::JobPhase;

const GPU: &str = "nvidia.com/a100";

/// nlp runs `running` one-GPU jobs (ids 1.., started a second apart, n1 first; those beyond
/// its guarantee admitted as borrowing) and cv's job 100 asks `asked` GPUs, waiting since
/// second 50.
fn world(running: i64, asked: i64) -> Snapshot {
    let mut s = Snapshot::default();
    s.config.queue_quota_enabled = true;
    s.config.reclaim_delay_seconds = 10;
    s.queues = vec![
        shared_queue("cv", None, Some(&[(GPU, "4")]), None),
        shared_queue("nlp", None, Some(&[(GPU, "4")]), None),
        queue("default", None, None),
    ];
    s.nodes = vec![
        node("n1", &[("cpu", "64"), (GPU, "4")]),
        node("n2", &[("cpu", "64"), (GPU, "4")]),
    ];
    for id in 1..=running {
        let on = if id <= 4 { "n1" } else { "n2" };
        let mut job = JobBuilder::normal(id).queue("nlp").gpus(GPU, 1).running_on(on).build();
        // Admitted beyond nlp's guarantee of 4: told it borrows.
        job.sharing.borrowing = id > 4;
        s.jobs.push(job);
    }
    s.jobs.push(
        JobBuilder::normal(100)
            .owner(2)
            .queue("cv")
            .gpus(GPU, asked)
            .submitted(40)
            .waiting_since(Some(50))
            .build(),
    );
    s.usage = usage_from_jobs(&s.jobs);
    s
}

fn at(seconds: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(seconds)
}

#[test]
fn the_newest_borrowers_on_one_node_are_reclaimed_after_the_delay() {
    let s = world(8, 2);
    assert!(
        plan_reclaims(&s, at(59), None, None).is_empty(),
        "the delay has not passed"
    );
    let plans = plan_reclaims(&s, at(60), None, None);
    assert_eq!(
        plans,
        vec![ReclaimPlan {
            beneficiary: 100,
            queue: "cv".into(),
            victims: vec![7, 8],
            node: "n2".into(),
            kind: TakeKind::Reclaim,
        }]
    );
}

#[test]
fn no_job_within_its_guarantee_is_a_victim() {
    // nlp borrows 2 (jobs 5 and 6); cv asks its whole guarantee: only the borrowers may go,
    // and they free enough.
    let s = world(6, 4);
    let plans = plan_reclaims(&s, at(60), None, None);
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].victims, vec![5, 6]);
    // Nothing borrows: nothing to reclaim even though cv waits.
    let s = world(4, 4);
    assert!(plan_reclaims(&s, at(60), None, None).is_empty());
}

#[test]
fn locked_and_young_borrowers_are_spared() {
    let mut s = world(8, 1);
    s.jobs[7].locked_until = Some(at(1000));
    let plans = plan_reclaims(&s, at(60), None, None);
    assert_eq!(plans[0].victims, vec![7], "job 8 is locked; the next newest goes");
    // cv protects nobody's runtime; nlp's minimum does not apply to cv's reclaim, but cv's own
    // does: a lender may promise its borrowers a minimum runtime.
    let mut s = world(8, 1);
    s.queues[0].sharing.reclaim_min_runtime_seconds = 60;
    // Job 8 started at second 8: at 60 it ran 52 s, job 1..=7 longer but within guarantee
    // or younger than 60 s too.
    assert!(plan_reclaims(&s, at(60), None, None).is_empty());
    assert_eq!(plan_reclaims(&s, at(68), None, None)[0].victims, vec![8]);
}

#[test]
fn a_job_its_owners_quota_holds_gets_no_reclaim() {
    let mut s = world(8, 2);
    s.quotas = vec![crate::prequeue::QueueQuota {
        queue: "cv".into(),
        limits: crate::prequeue::tests::fixtures::rl(&[(GPU, "1")]),
        max_active_jobs: None,
    }];
    assert!(plan_reclaims(&s, at(60), None, None).is_empty());
}

#[test]
fn a_borrowing_job_is_owed_nothing() {
    // default guarantees nothing: its waiting job would borrow, so nothing is reclaimed for it.
    let mut s = world(8, 1);
    s.jobs.last_mut().expect("job").queue = "default".into();
    assert!(plan_reclaims(&s, at(60), None, None).is_empty());
}

#[test]
fn without_guarantees_or_quotas_nothing_is_reclaimed() {
    let mut s = world(8, 2);
    s.config.queue_quota_enabled = false;
    assert!(plan_reclaims(&s, at(60), None, None).is_empty());
    let mut s = world(8, 2);
    for q in &mut s.queues {
        q.sharing.guarantee = None;
    }
    assert!(plan_reclaims(&s, at(60), None, None).is_empty());
}

#[test]
fn two_owed_jobs_in_one_round_take_different_victims() {
    let mut s = world(8, 2);
    s.jobs.push(
        JobBuilder::normal(101)
            .owner(2)
            .queue("cv")
            .gpus(GPU, 2)
            .submitted(41)
            .waiting_since(Some(50))
            .build(),
    );
    let plans = plan_reclaims(&s, at(60), None, None);
    assert_eq!(plans.len(), 2);
    assert_eq!(plans[0].victims, vec![7, 8]);
    assert_eq!(plans[1].victims, vec![5, 6]);
}

#[test]
fn a_queue_that_allows_it_preempts_its_own_lower_priority_jobs() {
    // No guarantee anywhere: one queue, capacity 4 GPUs, full of priority-0 jobs; a priority-5
    // job waits. Only with preemptWithinQueue: lowerPriority does it take their room.
    let mut s = Snapshot::default();
    s.config.queue_quota_enabled = true;
    s.config.reclaim_delay_seconds = 10;
    let mut lab = queue("lab", None, Some(crate::prequeue::tests::fixtures::rl(&[(GPU, "4")])));
    lab.sharing.priority_range = anteroom_shared::scheduling::PriorityRange { min: 0, max: 9 };
    s.queues = vec![lab];
    s.nodes = vec![node("n1", &[(GPU, "8")])];
    for id in 1..=4 {
        let mut j = JobBuilder::normal(id)
            .queue("lab")
            .gpus(GPU, 1)
            .running_on("n1")
            .build();
        j.sharing.priority = if id == 2 { 3 } else { 0 };
        s.jobs.push(j);
    }
    let mut urgent = JobBuilder::normal(100)
        .queue("lab")
        .gpus(GPU, 2)
        .submitted(40)
        .waiting_since(Some(50))
        .build();
    urgent.sharing.priority = 5;
    s.jobs.push(urgent);
    s.usage = usage_from_jobs(&s.jobs);
    assert!(
        plan_reclaims(&s, at(60), None, None).is_empty(),
        "the queue does not allow it"
    );
    s.queues[0].sharing.preempt_within_queue = anteroom_shared::scheduling::PreemptWithinQueue::LowerPriority;
    assert!(plan_reclaims(&s, at(59), None, None).is_empty(), "not before the delay");
    let plans = plan_reclaims(&s, at(60), None, None);
    assert_eq!(plans.len(), 1);
    // The lowest priorities go first (job 2 has 3), newest first among them: 4 and 3.
    assert_eq!(
        (plans[0].kind, plans[0].victims.clone()),
        (TakeKind::Priority, vec![3, 4])
    );
    // A job that preempts nobody takes nothing; nor does one of the same priority.
    s.jobs.last_mut().expect("job").preemption_policy = anteroom_shared::scheduling::PreemptionPolicy::Never;
    assert!(plan_reclaims(&s, at(60), None, None).is_empty());
    s.jobs.last_mut().expect("job").preemption_policy =
        anteroom_shared::scheduling::PreemptionPolicy::PreemptLowerPriority;
    assert_eq!(plan_reclaims(&s, at(60), None, None).len(), 1);
    s.jobs.last_mut().expect("job").sharing.priority = 0;
    assert!(plan_reclaims(&s, at(60), None, None).is_empty());
}

#[test]
fn a_job_admitted_within_its_guarantee_is_never_taken_whatever_started_first() {
    // nlp's job 9 (4 GPUs, admitted within the guarantee, borrow: never) started after job 10
    // (1 GPU, admitted borrowing): job 10 is the borrower, not job 9.
    let mut s = world(0, 1);
    let mut x = JobBuilder::normal(9).queue("nlp").gpus(GPU, 4).submitted(1).build();
    x.phase = JobPhase::Running;
    x.nodes = vec!["n1".into()];
    x.started_at = Some(at(20));
    x.sharing.borrow = anteroom_shared::scheduling::BorrowPolicy::Never;
    let mut y = JobBuilder::normal(10)
        .queue("nlp")
        .gpus(GPU, 1)
        .submitted(2)
        .running_on("n2")
        .build();
    y.started_at = Some(at(10));
    y.sharing.borrowing = true;
    let cv = JobBuilder::normal(11)
        .owner(2)
        .queue("cv")
        .gpus(GPU, 3)
        .submitted(3)
        .running_on("n2")
        .build();
    s.jobs.extend([x, y, cv]);
    s.usage = usage_from_jobs(&s.jobs);
    let plans = plan_reclaims(&s, at(60), None, None);
    assert_eq!(plans.len(), 1, "{plans:?}");
    assert_eq!(plans[0].victims, vec![10]);
}

#[test]
fn teams_under_one_parent_reclaim_from_each_other() {
    // The README's two teams under a lab: nlp's borrowers are nlp's, not charged to cv.
    let mut s = world(8, 2);
    s.queues = vec![
        queue("lab", None, None),
        shared_queue("cv", Some("lab"), Some(&[(GPU, "4")]), None),
        shared_queue("nlp", Some("lab"), Some(&[(GPU, "4")]), None),
    ];
    let plans = plan_reclaims(&s, at(60), None, None);
    assert_eq!(plans.len(), 1, "cv is owed its room: {plans:?}");
    assert_eq!(plans[0].victims, vec![7, 8]);
}

#[test]
fn victims_leave_room_on_a_node_the_job_may_run_on() {
    // n1 holds nlp 1, 2, 3 and borrower 7 (full); n2 holds 4, 5, 6 (one GPU free). cv asks 2 on
    // one node: taking 7 alone frees the pool but leaves one GPU free on each node.
    let mut s = world(0, 2);
    for (id, on, borrowing) in [
        (1, "n1", false),
        (2, "n1", false),
        (3, "n1", false),
        (7, "n1", true),
        (4, "n2", false),
        (5, "n2", true),
        (6, "n2", true),
    ] {
        let mut job = JobBuilder::normal(id).queue("nlp").gpus(GPU, 1).running_on(on).build();
        job.sharing.borrowing = borrowing;
        s.jobs.push(job);
    }
    s.nodes[0].free = rl(&[("cpu", "64"), (GPU, "0")]);
    s.nodes[1].free = rl(&[("cpu", "64"), (GPU, "1")]);
    s.usage = usage_from_jobs(&s.jobs);
    let plans = plan_reclaims(&s, at(60), None, None);
    assert_eq!(plans.len(), 1, "{plans:?}");
    // One borrower on n2 frees the pool and, with n2's free GPU, a place for 2.
    assert_eq!((plans[0].victims.clone(), plans[0].node.as_str()), (vec![6], "n2"));
}

/// n1 holds nlp's job 1 and borrowers 5 and 6 (one GPU free); n2 holds 2, 3, 4 and borrower 7
/// (full). cv's job 100 is a gang: a master asking `master_gpus` GPUs and a CPU-only worker.
fn gang_world(master_gpus: i64) -> (Snapshot, GangTasks) {
    let mut s = world(0, master_gpus);
    for (id, on, borrowing) in [
        (1, "n1", false),
        (5, "n1", true),
        (6, "n1", true),
        (2, "n2", false),
        (3, "n2", false),
        (4, "n2", false),
        (7, "n2", true),
    ] {
        let mut job = JobBuilder::normal(id).queue("nlp").gpus(GPU, 1).running_on(on).build();
        job.sharing.borrowing = borrowing;
        s.jobs.push(job);
    }
    s.nodes[0].free = rl(&[("cpu", "64"), (GPU, "1")]);
    s.nodes[1].free = rl(&[("cpu", "64"), (GPU, "0")]);
    let gang = s.jobs.iter_mut().find(|j| j.id == 100).expect("cv's job");
    gang.single_node = false;
    gang.resources = rl(&[("cpu", "1"), (GPU, &master_gpus.to_string())]);
    s.usage = usage_from_jobs(&s.jobs);
    let tasks = vec![
        crate::prequeue::tests::fixtures::task("master", 1, &[(GPU, &master_gpus.to_string())]),
        crate::prequeue::tests::fixtures::task("worker", 1, &[("cpu", "1")]),
    ];
    (s, GangTasks::from([(100, tasks)]))
}

#[test]
fn a_gang_gets_victims_only_where_its_replicas_can_be_placed() {
    // cv's gang needs 3 GPUs on one node for its master; the cluster is short by 2. The two
    // newest borrowers (6 on n1, 7 on n2) free the pool but leave 2 GPUs on n1 and 1 on n2:
    // the master fits nowhere. Taking 5 and 6 leaves 3 on n1.
    let (s, gangs) = gang_world(3);
    let unchecked = plan_reclaims(&s, at(60), None, None);
    assert_eq!(unchecked[0].victims, vec![6, 7], "the probe looks at the pool only");
    let plans = plan_reclaims(&s, at(60), None, Some(&gangs));
    assert_eq!(plans.len(), 1, "{plans:?}");
    assert_eq!((plans[0].victims.clone(), plans[0].node.as_str()), (vec![5, 6], "n1"));
    // A gang whose tasks were not read gets no plan.
    assert!(plan_reclaims(&s, at(60), None, Some(&GangTasks::new())).is_empty());
}

#[test]
fn a_gang_no_reclaim_could_place_takes_nobody() {
    // A 4-GPU master: with all three borrowers gone n1 has 3 free and n2 1 — nowhere to go,
    // so no borrower is taken for nothing.
    let (s, gangs) = gang_world(4);
    assert_eq!(plan_reclaims(&s, at(60), None, None)[0].victims, vec![5, 6, 7]);
    assert!(plan_reclaims(&s, at(60), None, Some(&gangs)).is_empty());
}

/// cv's gang (job 100, 4 GPUs) and nlp's borrower 8 on both nodes (2 GPUs), each node with
/// one GPU free and two of nlp's jobs within its guarantee.
fn wide_world() -> Snapshot {
    let mut s = world(0, 2);
    for (id, on) in [(1, "n1"), (2, "n1"), (3, "n2"), (4, "n2")] {
        s.jobs
            .push(JobBuilder::normal(id).queue("nlp").gpus(GPU, 1).running_on(on).build());
    }
    let mut wide = JobBuilder::normal(8).queue("nlp").gpus(GPU, 2).running_on("n1").build();
    wide.nodes = vec!["n1".into(), "n2".into()];
    wide.single_node = false;
    wide.sharing.borrowing = true;
    s.jobs.push(wide);
    s.nodes[0].free = rl(&[("cpu", "64"), (GPU, "1")]);
    s.nodes[1].free = rl(&[("cpu", "64"), (GPU, "1")]);
    let gang = s.jobs.iter_mut().find(|j| j.id == 100).expect("cv's job");
    gang.single_node = false;
    gang.resources = rl(&[(GPU, "4")]);
    s.usage = usage_from_jobs(&s.jobs);
    s
}

#[test]
fn a_victim_on_several_nodes_is_credited_only_what_each_of_its_pods_surely_frees() {
    use crate::prequeue::tests::fixtures::task;
    let s = wide_world();
    let gang = (100, vec![task("worker", 2, &[(GPU, "2")])]);
    // Borrower 8 is two 1-GPU workers: one on each node, so each node gets one back and the
    // gang's two 2-GPU replicas fit.
    let even = GangTasks::from([gang.clone(), (8, vec![task("worker", 2, &[(GPU, "1")])])]);
    assert_eq!(plan_reclaims(&s, at(60), None, Some(&even))[0].victims, vec![8]);
    // Its tasks unknown: nothing is counted on either node, and nobody is taken.
    let unknown = GangTasks::from([gang.clone()]);
    assert!(plan_reclaims(&s, at(60), None, Some(&unknown)).is_empty());
    // A 2-GPU master and a CPU-only worker: which node holds the GPUs is unknown, so none is
    // counted (an equal share would promise one on each, and a gang placed on it would wait).
    let uneven = GangTasks::from([
        gang,
        (
            8,
            vec![task("master", 1, &[(GPU, "2")]), task("worker", 1, &[("cpu", "1")])],
        ),
    ]);
    assert!(plan_reclaims(&s, at(60), None, Some(&uneven)).is_empty());
}

/// n1 holds nlp's 1, 2, 3 (its guarantee) and borrower 8; n2 holds nlp's 4 and borrowers 5
/// and 6, one GPU free. cv's jobs 100 and 101 ask 2 GPUs each, both pinned to n2.
fn pinned_world() -> Snapshot {
    let mut s = world(0, 2);
    for (id, on, borrowing) in [
        (1, "n1", false),
        (2, "n1", false),
        (3, "n1", false),
        (4, "n2", false),
        (5, "n2", true),
        (6, "n2", true),
        (8, "n1", true),
    ] {
        let mut job = JobBuilder::normal(id).queue("nlp").gpus(GPU, 1).running_on(on).build();
        job.sharing.borrowing = borrowing;
        s.jobs.push(job);
    }
    s.jobs.retain(|j| j.id != 100);
    for id in [100, 101] {
        s.jobs.push(
            JobBuilder::normal(id)
                .owner(2)
                .queue("cv")
                .gpus(GPU, 2)
                .nodes(&["n2"])
                .submitted(40 + id - 100)
                .waiting_since(Some(50))
                .build(),
        );
    }
    s.nodes[0].free = rl(&[("cpu", "64"), (GPU, "0")]);
    s.nodes[1].free = rl(&[("cpu", "64"), (GPU, "1")]);
    s.usage = usage_from_jobs(&s.jobs);
    s
}

#[test]
fn room_one_plan_gives_a_job_on_a_node_is_not_promised_again_in_the_round() {
    // 100 takes 6 (n2 then has 2 free, which 100 uses). 101 would need 2 more on n2, where
    // only 5 is left: no plan — not 8 (on n1) and 5, which would leave 101 one GPU short.
    let plans = plan_reclaims(&pinned_world(), at(60), None, None);
    assert_eq!(plans.len(), 1, "{plans:?}");
    assert_eq!((plans[0].beneficiary, plans[0].victims.clone()), (100, vec![6]));
}

#[test]
fn a_node_whose_room_an_earlier_plan_reserves_offers_none() {
    // Another job's preemption is in flight on n2: its free GPU is that job's. 100 needs two
    // of its own there: 5 and 6.
    let mut s = pinned_world();
    s.jobs.retain(|j| j.id != 101);
    s.preemptions_in_flight = vec![crate::prequeue::InFlightPreemption {
        beneficiary: 77,
        node: "n2".into(),
        terminating_victims: vec![78],
    }];
    let plans = plan_reclaims(&s, at(60), None, None);
    assert_eq!(plans.len(), 1, "{plans:?}");
    assert_eq!(plans[0].victims, vec![5, 6]);
}

/// cv's job's `reclaiming` reason as the round explains it at `now`.
fn reclaiming_reason(s: &Snapshot, now: DateTime<Utc>) -> crate::prequeue::reason::ReclaimingDetails {
    let prepared = crate::prequeue::PreparedRound::new(s, now).expect("round");
    let outcome = prepared.select();
    let waiting = outcome.waiting.iter().find(|w| w.id == 100).expect("cv's job waits");
    prepared
        .explain(&outcome, waiting)
        .into_iter()
        .find_map(|r| match r {
            crate::prequeue::reason::Reason::Reclaiming(d) => Some(d),
            _ => None,
        })
        .expect("a reclaiming reason")
}

#[test]
fn the_reason_says_when_borrowers_may_go_or_that_none_can() {
    // After the delay, with borrowers that may go at once.
    let s = world(8, 2);
    let d = reclaiming_reason(&s, at(55));
    assert_eq!((d.reclaim_at, d.nothing_to_take), (Some(at(60)), false));
    // cv promises its borrowers 60 s: the oldest borrower (5, started at 5) may go at 65.
    let mut s = world(8, 2);
    s.queues[0].sharing.reclaim_min_runtime_seconds = 60;
    assert_eq!(reclaiming_reason(&s, at(55)).reclaim_at, Some(at(65)));
    // Every borrower locked until 1000.
    let mut s = world(8, 2);
    for job in s.jobs.iter_mut().filter(|j| j.sharing.borrowing) {
        job.locked_until = Some(at(1000));
    }
    assert_eq!(reclaiming_reason(&s, at(55)).reclaim_at, Some(at(1000)));
    // The jobs beyond nlp's guarantee started before it had one: none borrows, nothing to take.
    let mut s = world(8, 2);
    for job in &mut s.jobs {
        job.sharing.borrowing = false;
    }
    let d = reclaiming_reason(&s, at(55));
    assert_eq!((d.reclaim_at, d.nothing_to_take), (None, true));
    assert!(plan_reclaims(&s, at(60), None, None).is_empty());
}

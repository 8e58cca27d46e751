//! A spent budget's hold (§10) in the core: the round, the submission and the forecast agree —
//! a normal job of the queue or of a sub-queue waits with `budget_exhausted` and gets no
//! estimate, an Elastic job does not, another tree does not, and a hold whose period ended
//! holds nothing whatever is stored.

use anteroom_shared::scheduling::{BudgetHold, GpuHours, JobKind, PreemptionPolicy, ScheduleType, TaskResources};
use chrono::{DateTime, Duration, Utc};

use super::fixtures::{JobBuilder, node, queue, t0, task};
use crate::prequeue::reason::Reason;
use crate::prequeue::snapshot::{JobId, Snapshot};
use crate::prequeue::{
    ForecastBounds, PreparedRound, QueueTree, Submission, SubmitDecision, decide_submission, forecast,
};

fn now() -> DateTime<Utc> {
    t0() + Duration::seconds(1000)
}

/// `lab` ← `lab/nlp`, and `other`; `lab`'s budget holds until `until`.
fn snapshot(until: DateTime<Utc>) -> Snapshot {
    let mut s = Snapshot::default();
    s.config.backfill_enabled = true;
    let mut lab = queue("lab", None, None);
    lab.budget_hold = Some(BudgetHold {
        until,
        used: GpuHours::saturating(101.5),
        budget: GpuHours::saturating(100.0),
    });
    s.queues = vec![lab, queue("lab/nlp", Some("lab"), None), queue("other", None, None)];
    s.nodes = vec![node("n1", &[("cpu", "64"), ("nvidia.com/a100", "8")])];
    s.jobs = vec![
        JobBuilder::normal(1)
            .queue("lab/nlp")
            .gpus("nvidia.com/a100", 1)
            .limit(3600)
            .build(),
        JobBuilder::backfill(2)
            .queue("lab")
            .gpus("nvidia.com/a100", 1)
            .limit(3600)
            .build(),
        JobBuilder::normal(3)
            .queue("other")
            .gpus("nvidia.com/a100", 1)
            .limit(3600)
            .build(),
        JobBuilder::normal(4)
            .queue("lab")
            .gpus("nvidia.com/a100", 1)
            .limit(3600)
            .build(),
    ];
    s
}

fn reasons(s: &Snapshot) -> Vec<(JobId, Vec<Reason>)> {
    let prepared = PreparedRound::new(s, now()).expect("prepared");
    let outcome = prepared.select();
    outcome
        .waiting
        .iter()
        .map(|w| (w.id, prepared.explain(&outcome, w)))
        .collect()
}

#[test]
fn a_holding_budget_keeps_its_subtrees_normal_jobs_and_says_why() {
    let s = snapshot(now() + Duration::days(3));
    let outcome = crate::prequeue::select_round(&s, now()).expect("round");
    let mut selected = outcome.selected.clone();
    selected.sort_unstable();
    assert_eq!(selected, [2, 3], "the Elastic job and the other tree's job start");
    let waiting = reasons(&s);
    assert_eq!(waiting.len(), 2);
    for (id, reasons) in &waiting {
        let [Reason::BudgetExhausted(d)] = reasons.as_slice() else {
            panic!("job {id}: {reasons:?}");
        };
        assert_eq!(d.queue, "lab", "the queue whose budget is spent");
        assert_eq!(d.job_queue, if *id == 1 { "lab/nlp" } else { "lab" });
        assert_eq!(d.used_gpu_hours.hours(), 101.5);
        assert_eq!(d.resets_at, now() + Duration::days(3));
    }
    // Held jobs start no waiting clock: they do not wait for room.
    let prepared = PreparedRound::new(&s, now()).expect("prepared");
    let outcome = prepared.select();
    assert_eq!(prepared.clocks_to_start(&outcome).count(), 0);
}

#[test]
fn a_hold_whose_period_ended_holds_nothing() {
    let s = snapshot(now());
    let outcome = crate::prequeue::select_round(&s, now()).expect("round");
    assert_eq!(outcome.selected.len(), 4, "{outcome:?}");
}

#[test]
fn the_forecast_gives_held_jobs_no_start() {
    let s = snapshot(now() + Duration::days(3));
    let estimates = forecast(&s, now(), ForecastBounds::default());
    let start = |id: JobId| estimates.iter().find(|e| e.id == id).and_then(|e| e.start);
    assert_eq!(start(1), None);
    assert_eq!(start(4), None);
    assert_eq!(start(2), Some(now()));
    assert_eq!(start(3), Some(now()));
}

fn submission<'a>(queue: &'a str, schedule_type: ScheduleType, tasks: &'a [TaskResources]) -> Submission<'a> {
    Submission {
        owner_prequeued: None,
        owner_unfinished: None,
        owner: 7,
        queue,
        kind: JobKind::Custom,
        schedule_type,
        preemption_policy: PreemptionPolicy::default(),
        tasks,
        tolerations: &[],
        borrow: Default::default(),
        priority: 0,
    }
}

#[test]
fn a_submission_to_a_held_tree_is_prequeued_with_the_budget_first() {
    let mut s = snapshot(now() + Duration::days(3));
    s.jobs.clear();
    let tree = QueueTree::new_lenient(&s.queues);
    let tasks = [task("main", 1, &[("nvidia.com/a100", "1")])];
    let decide =
        |queue: &str, schedule_type| decide_submission(&s, &tree, &submission(queue, schedule_type, &tasks), now());
    match decide("lab/nlp", ScheduleType::Normal) {
        Ok(SubmitDecision::Prequeued { reasons }) => {
            assert!(
                matches!(&reasons[0], Reason::BudgetExhausted(d) if d.queue == "lab"),
                "{reasons:?}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        decide("lab", ScheduleType::Backfill),
        Ok(SubmitDecision::Activated { .. })
    ));
    assert!(matches!(
        decide("other", ScheduleType::Normal),
        Ok(SubmitDecision::Activated { .. })
    ));
    let mut lifted = s.clone();
    lifted.queues[0].budget_hold.as_mut().expect("a hold").until = now();
    let tree = QueueTree::new_lenient(&lifted.queues);
    assert!(matches!(
        decide_submission(&lifted, &tree, &submission("lab", ScheduleType::Normal, &tasks), now()),
        Ok(SubmitDecision::Activated { .. })
    ));
}

/// `lab` held, and in it a normal job whose waiting clock ran out before the hold: timed out,
/// but held by the budget, it waits for the next period, not for room.
fn with_a_timed_out_held_job() -> Snapshot {
    let mut s = snapshot(now() + Duration::days(3));
    s.jobs[3] = JobBuilder::normal(4)
        .queue("lab")
        .gpus("nvidia.com/a100", 1)
        .limit(3600)
        .tolerance(60)
        .waiting_since(Some(0))
        .build();
    s
}

#[test]
fn a_held_job_past_its_tolerance_blocks_nobody() {
    let s = with_a_timed_out_held_job();
    assert!(s.jobs[3].is_timed_out(now()), "the fixture is timed out");
    let outcome = crate::prequeue::select_round(&s, now()).expect("round");
    let mut selected = outcome.selected.clone();
    selected.sort_unstable();
    assert_eq!(selected, [2, 3], "the Elastic job of the held queue still starts");
    // Nor does it block a submission: an Elastic one starts, a normal one is held by the
    // budget alone, and its waiting clock does not start.
    let mut s = s;
    s.jobs.retain(|j| j.id == 4);
    let tree = QueueTree::new_lenient(&s.queues);
    let tasks = [task("main", 1, &[("nvidia.com/a100", "1")])];
    let elastic = decide_submission(&s, &tree, &submission("lab", ScheduleType::Backfill, &tasks), now());
    assert!(matches!(elastic, Ok(SubmitDecision::Activated { .. })), "{elastic:?}");
    let normal =
        decide_submission(&s, &tree, &submission("lab", ScheduleType::Normal, &tasks), now()).expect("decided");
    let SubmitDecision::Prequeued { reasons } = &normal else {
        panic!("{normal:?}");
    };
    assert!(
        reasons.iter().all(|r| matches!(r, Reason::BudgetExhausted(_))),
        "{reasons:?}"
    );
    assert!(!crate::prequeue::starts_waiting_clock(&normal));
}

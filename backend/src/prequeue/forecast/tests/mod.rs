//! Tests of the start forecast: scenarios here, the property tests against a naive step
//! simulator in `props.rs` (the simulator in `naive.rs`), and the ignored timing run at
//! 100 000 waiting jobs in `bench.rs`.

mod bench;
pub(crate) mod naive;
mod props;

use anteroom_shared::scheduling::{ActivationOrder, JobPhase};
use chrono::{DateTime, Duration, Utc};

use super::{EstimateBasis, ForecastBounds, StartEstimate, consideration_order, forecast};
use crate::prequeue::snapshot::{JobId, JobSnapshot, QueueQuota, Snapshot, usage_from_jobs};
use crate::prequeue::tests::fixtures::{JobBuilder, node, queue, rl, t0};

fn now() -> DateTime<Utc> {
    t0() + Duration::seconds(1000)
}

/// `now + seconds`.
fn at(seconds: i64) -> Option<DateTime<Utc>> {
    Some(now() + Duration::seconds(seconds))
}

/// One queue `default`, one node of 4 CPUs, the given jobs and the usage they make.
fn snapshot(jobs: Vec<JobSnapshot>) -> Snapshot {
    Snapshot {
        queues: vec![queue("default", None, None)],
        nodes: vec![node("n1", &[("cpu", "4"), ("memory", "16Gi")])],
        usage: usage_from_jobs(&jobs),
        jobs,
        ..Snapshot::default()
    }
}

/// A job running on `n1` since its submission (`t0 + id` seconds).
fn running(id: JobId) -> JobBuilder {
    JobBuilder::normal(id).running_on("n1")
}

fn starts(s: &Snapshot) -> Vec<(JobId, Option<DateTime<Utc>>)> {
    forecast(s, now(), ForecastBounds::default())
        .iter()
        .map(|e| (e.id, e.start))
        .collect()
}

#[test]
fn a_job_behind_a_running_job_with_a_limit_starts_when_that_job_ends() {
    // Started at t0 + 1 s with a limit of 1 999 s: ends at t0 + 2 000 s = now + 1 000 s.
    let s = snapshot(vec![
        running(1).cpu("4").limit(1_999).build(),
        JobBuilder::normal(2).cpu("2").limit(60).build(),
    ]);
    assert_eq!(
        forecast(&s, now(), ForecastBounds::default()),
        [StartEstimate {
            id: 2,
            start: at(1_000),
            basis: EstimateBasis::Limits,
        }]
    );
}

#[test]
fn a_job_behind_a_running_job_without_a_limit_has_no_estimate() {
    let s = snapshot(vec![
        running(1).cpu("4").build(),
        JobBuilder::normal(2).cpu("2").limit(60).build(),
    ]);
    assert_eq!(
        forecast(&s, now(), ForecastBounds::default()),
        [StartEstimate {
            id: 2,
            start: None,
            basis: EstimateBasis::Unknown,
        }]
    );
}

#[test]
fn a_job_that_fits_now_starts_now_and_a_job_without_a_limit_still_gets_an_estimate() {
    let s = snapshot(vec![
        running(1).cpu("2").limit(5_000).build(),
        JobBuilder::normal(2).cpu("2").build(),
    ]);
    assert_eq!(starts(&s), [(2, Some(now()))]);
}

#[test]
fn an_overdue_running_job_is_released_now() {
    // Started at t0 + 1 s with a limit of 10 s: it should have ended long ago.
    let s = snapshot(vec![
        running(1).cpu("4").limit(10).build(),
        JobBuilder::normal(2).cpu("4").build(),
    ]);
    assert_eq!(starts(&s), [(2, Some(now()))]);
}

#[test]
fn an_activating_job_counts_its_limit_from_now() {
    let s = snapshot(vec![
        JobBuilder::normal(1)
            .cpu("4")
            .limit(300)
            .phase(JobPhase::Activating)
            .build(),
        JobBuilder::normal(2).cpu("4").build(),
    ]);
    assert_eq!(starts(&s), [(2, at(300))]);
}

#[test]
fn max_active_jobs_chains_an_owners_jobs_one_after_another() {
    let mut s = snapshot(vec![
        JobBuilder::normal(1).cpu("1").limit(600).build(),
        JobBuilder::normal(2).cpu("1").limit(600).build(),
        JobBuilder::normal(3).cpu("1").limit(600).build(),
    ]);
    s.config.queue_quota_enabled = true;
    s.quotas = vec![QueueQuota {
        queue: "default".into(),
        limits: rl(&[]),
        max_active_jobs: Some(1),
    }];
    assert_eq!(starts(&s), [(1, Some(now())), (2, at(600)), (3, at(1_200))]);
    // The rule binds per owner: another owner's job is not held by it.
    s.jobs.push(JobBuilder::normal(4).owner(2).cpu("1").limit(600).build());
    assert_eq!(starts(&s)[3], (4, Some(now())));
}

#[test]
fn a_quota_limit_holds_a_job_until_the_owners_own_job_ends() {
    let mut s = snapshot(vec![
        running(1).cpu("2").limit(1_299).build(), // ends at now + 300 s
        running(2).owner(2).cpu("1").limit(2_000).build(),
        JobBuilder::normal(3).cpu("2").limit(60).build(), // 2 + 2 > 3
        JobBuilder::normal(4).owner(2).cpu("1").build(),  // another owner: fits the room now
    ]);
    s.nodes = vec![node("n1", &[("cpu", "64")])];
    s.config.queue_quota_enabled = true;
    s.quotas = vec![QueueQuota {
        queue: "default".into(),
        limits: rl(&[("cpu", "3")]),
        max_active_jobs: None,
    }];
    assert_eq!(starts(&s), [(3, at(300)), (4, Some(now()))]);
}

#[test]
fn a_parent_queues_capacity_holds_the_jobs_of_its_children() {
    let mut s = snapshot(vec![
        JobBuilder::normal(1)
            .queue("team-b")
            .owner(2)
            .cpu("4")
            .limit(1_499) // ends at now + 500 s
            .running_on("n1")
            .build(),
        JobBuilder::normal(2).queue("team-a").cpu("2").limit(60).build(),
        JobBuilder::normal(3).queue("other").cpu("2").limit(60).build(),
    ]);
    s.config.queue_quota_enabled = true;
    s.queues = vec![
        queue("team", None, Some(rl(&[("cpu", "4")]))),
        queue("team-a", Some("team"), None),
        queue("team-b", Some("team"), None),
        queue("other", None, None),
    ];
    s.nodes = vec![node("n1", &[("cpu", "64")])];
    assert_eq!(starts(&s), [(2, at(500)), (3, Some(now()))]);
    // With quotas off, capacities do not hold anyone.
    s.config.queue_quota_enabled = false;
    assert_eq!(starts(&s), [(2, Some(now())), (3, Some(now()))]);
}

#[test]
fn backfill_jobs_have_no_estimate_while_backfill_is_disabled() {
    let mut s = snapshot(vec![
        JobBuilder::backfill(1).cpu("1").limit(60).build(),
        JobBuilder::normal(2).cpu("1").limit(60).build(),
    ]);
    assert_eq!(starts(&s), [(1, None), (2, Some(now()))]);
    s.config.backfill_enabled = true;
    assert_eq!(starts(&s), [(1, Some(now())), (2, Some(now()))]);
}

#[test]
fn running_backfill_jobs_take_room_but_no_quota_or_capacity() {
    let mut s = snapshot(vec![
        JobBuilder::backfill(1).cpu("3").limit(1_099).running_on("n1").build(), // ends at now + 100 s
        JobBuilder::normal(2).cpu("2").limit(60).build(),
    ]);
    s.config.queue_quota_enabled = true;
    s.queues = vec![queue("default", None, Some(rl(&[("cpu", "2")])))];
    // Room: 4 − 3 < 2 until the backfill job ends; the capacity (2) is not touched by it.
    assert_eq!(starts(&s), [(2, at(100))]);
}

#[test]
fn fair_share_interleaves_two_owners_one_job_at_a_time() {
    // One CPU: every job waits for the one before it, each running 100 s.
    let mut jobs = Vec::new();
    for id in 1..=3 {
        jobs.push(JobBuilder::normal(id).owner(1).cpu("1").limit(100).build());
    }
    for id in 4..=6 {
        jobs.push(JobBuilder::normal(id).owner(2).cpu("1").limit(100).build());
    }
    let mut s = snapshot(jobs);
    s.nodes = vec![node("n1", &[("cpu", "1")])];
    s.config.activation_order = ActivationOrder::FairShare;
    assert_eq!(
        starts(&s),
        [
            (1, Some(now())),
            (4, at(100)),
            (2, at(200)),
            (5, at(300)),
            (3, at(400)),
            (6, at(500)),
        ]
    );
    s.config.activation_order = ActivationOrder::Fcfs;
    assert_eq!(
        starts(&s).iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6]
    );
}

#[test]
fn a_job_that_does_not_fit_never_holds_the_jobs_behind_it() {
    // No reservation: a smaller job behind a big one starts as soon as it fits.
    let s = snapshot(vec![
        running(1).cpu("3").limit(1_099).build(), // ends at now + 100 s
        JobBuilder::normal(2).cpu("4").limit(60).build(),
        JobBuilder::normal(3).cpu("1").limit(60).build(),
        JobBuilder::normal(4).cpu("8").limit(60).build(), // more than the cluster has
    ]);
    assert_eq!(starts(&s), [(2, at(100)), (3, Some(now())), (4, None)]);
}

#[test]
fn the_room_counts_ready_schedulable_nodes_and_only_the_resources_they_name() {
    let mut s = snapshot(vec![
        JobBuilder::normal(1).cpu("6").res("example.com/fpga", "1").build(),
        JobBuilder::normal(2).cpu("1").res("nvidia.com/a100", "1").build(),
    ]);
    let mut cordoned = node("n2", &[("cpu", "8"), ("nvidia.com/a100", "4")]);
    cordoned.schedulable = false;
    s.nodes.push(cordoned);
    // No room for 6 CPUs on one 4-CPU node; the a100 is named only by a cordoned node, so it
    // is not compared; the FPGA no node names is ignored.
    assert_eq!(starts(&s), [(1, None), (2, Some(now()))]);
    s.nodes[1].schedulable = true;
    assert_eq!(starts(&s), [(1, Some(now())), (2, Some(now()))]);
}

#[test]
fn a_job_with_a_limit_of_zero_gives_its_room_back_at_once() {
    let s = snapshot(vec![
        JobBuilder::normal(1).cpu("4").limit(0).build(),
        JobBuilder::normal(2).cpu("4").limit(60).build(),
    ]);
    assert_eq!(starts(&s), [(1, Some(now())), (2, Some(now()))]);
}

#[test]
fn the_bounds_stop_the_simulation() {
    let chain = || {
        let mut s = snapshot(vec![
            JobBuilder::normal(1).cpu("4").limit(600).build(),
            JobBuilder::normal(2).cpu("4").limit(600).build(),
            JobBuilder::normal(3).cpu("4").limit(600).build(),
        ]);
        s.nodes = vec![node("n1", &[("cpu", "4")])];
        s
    };
    let s = chain();
    let with = |max_steps: usize, horizon: i64| -> Vec<Option<DateTime<Utc>>> {
        let bounds = ForecastBounds {
            max_steps,
            horizon: Duration::seconds(horizon),
        };
        forecast(&s, now(), bounds).iter().map(|e| e.start).collect()
    };
    assert_eq!(with(2_000, 86_400), [Some(now()), at(600), at(1_200)]);
    assert_eq!(with(1, 86_400), [Some(now()), at(600), None]);
    assert_eq!(with(0, 86_400), [Some(now()), None, None]);
    // An end exactly at the horizon is processed; one past it is not.
    assert_eq!(with(2_000, 600), [Some(now()), at(600), None]);
    assert_eq!(with(2_000, 599), [Some(now()), None, None]);
    assert_eq!(ForecastBounds::default().max_steps, 2_000);
    assert_eq!(ForecastBounds::default().horizon, Duration::days(30));
}

#[test]
fn consideration_order_is_submission_order_under_fcfs() {
    let s = snapshot(vec![
        JobBuilder::normal(9).submitted(5).build(),
        JobBuilder::normal(4).submitted(5).build(),
        JobBuilder::normal(1).submitted(7).build(),
        running(2).build(),
        JobBuilder::backfill(3).submitted(1).build(),
    ]);
    assert_eq!(consideration_order(&s), [3, 4, 9, 1]);
}

#[test]
fn consideration_order_under_fair_share_counts_usage_and_skips_no_one() {
    let mut s = snapshot(vec![
        running(1).owner(1).cpu("2").build(),
        JobBuilder::normal(2).owner(1).cpu("1").build(),
        JobBuilder::normal(3).owner(1).cpu("1").build(),
        JobBuilder::normal(4).owner(2).cpu("1").build(),
        JobBuilder::normal(5).owner(2).cpu("1").build(),
        JobBuilder::normal(6).owner(2).cpu("1").build(),
        JobBuilder::backfill(7).owner(2).cpu("4").build(),
    ]);
    s.config.activation_order = ActivationOrder::FairShare;
    s.config.queue_quota_enabled = true;
    // A rule that would hold every job of owner 2 in a round: the order ignores it.
    s.quotas = vec![QueueQuota {
        queue: "default".into(),
        limits: rl(&[("cpu", "0")]),
        max_active_jobs: None,
    }];
    // Owner 1 uses 2 of 4 CPUs (share 1/2): owner 2 goes until it catches up, then ties go to
    // the pair with the oldest head.
    assert_eq!(consideration_order(&s), [4, 5, 2, 6, 3, 7]);
}

#[test]
fn the_basis_is_serialized_in_lowercase() {
    let estimate = StartEstimate {
        id: 7,
        start: None,
        basis: EstimateBasis::Unknown,
    };
    let json = serde_json::to_value(estimate).expect("serializes");
    assert_eq!(json, serde_json::json!({"id": 7, "start": null, "basis": "unknown"}));
    assert_eq!(
        serde_json::to_value(EstimateBasis::Limits).expect("serializes"),
        "limits"
    );
}

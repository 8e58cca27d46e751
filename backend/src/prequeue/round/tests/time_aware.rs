//! Time-aware backfill (`backfill.rs`, `timeAwareBackfill`): a short job starts past a
//! timed-out blocker only when it ends before every blocker's estimated start and the
//! forecast starts it now; otherwise it stays `blocked_by`, and the reasons agree.

use super::*;
use crate::prequeue::{ForecastBounds, forecast};

/// Queue `default` (capacity 8 A100s) on one node with 8 A100s; job 9 runs on 4 of them until
/// `now + 100 s`; job 1 (8 A100s) is timed out and held by the capacity until then, so its
/// estimate is `now + 100 s` and it blocks the A100 and cpu-only jobs of the queue.
fn scene(on: bool) -> Snapshot {
    let mut s = base(10);
    s.config.backfill_enabled = true;
    s.config.queue_quota_enabled = true;
    s.config.time_aware_backfill = on;
    s.queues = vec![queue("default", None, Some(rl(&[("nvidia.com/a100", "8")])))];
    // Running since t0 + 9 s: ends at now + 100 s.
    let ends_in_100 = (now() - t0()).num_seconds() + 100 - 9;
    s.jobs = vec![
        JobBuilder::normal(9)
            .gpus("nvidia.com/a100", 4)
            .limit(ends_in_100)
            .running_on("n1")
            .build(),
        JobBuilder::normal(1)
            .gpus("nvidia.com/a100", 8)
            .tolerance(60)
            .limit(600)
            .build(),
    ];
    s.usage = crate::prequeue::usage_from_jobs(&s.jobs);
    s
}

fn short(id: JobId, gpus: i64, limit: Option<i64>) -> JobSnapshot {
    let b = JobBuilder::normal(id).gpus("nvidia.com/a100", gpus).tolerance(5000);
    match limit {
        Some(l) => b.limit(l).build(),
        None => b.build(),
    }
}

/// The forecast's known starts, as the watcher passes them.
fn estimates(s: &Snapshot) -> Vec<(JobId, DateTime<Utc>)> {
    forecast(s, now(), ForecastBounds::default())
        .into_iter()
        .filter_map(|e| Some((e.id, e.start?)))
        .collect()
}

fn round_with(s: &Snapshot, estimates: &[(JobId, DateTime<Utc>)]) -> (RoundOutcome, Vec<(JobId, Vec<&'static str>)>) {
    let prepared = PreparedRound::with_start_estimates(s, now(), estimates).expect("prepared");
    let outcome = prepared.select();
    let codes = outcome
        .waiting
        .iter()
        .map(|w| (w.id, prepared.explain(&outcome, w).iter().map(Reason::code).collect()))
        .collect();
    (outcome, codes)
}

#[test]
fn the_blocker_is_estimated_when_the_running_job_ends() {
    let s = scene(true);
    assert_eq!(estimates(&s), [(1, now() + Duration::seconds(100))]);
}

#[test]
fn a_short_job_starts_past_a_blocker_with_the_setting_on_and_not_off() {
    for on in [true, false] {
        let mut s = scene(on);
        s.jobs.push(short(2, 2, Some(50)));
        let (outcome, codes) = round_with(&s, &estimates(&s));
        if on {
            assert_eq!(outcome.selected, vec![2], "ends at now + 50, before now + 100");
            assert_eq!(codes, [(1, vec!["queue_capacity"])]);
        } else {
            assert!(outcome.selected.is_empty());
            assert_eq!(codes[1], (2, vec!["blocked_by"]));
        }
    }
}

#[test]
fn a_job_ending_exactly_at_the_estimate_starts() {
    let mut s = scene(true);
    s.jobs.push(short(2, 2, Some(100)));
    assert_eq!(round_with(&s, &estimates(&s)).0.selected, vec![2]);
}

#[test]
fn a_job_without_a_limit_stays_blocked() {
    let mut s = scene(true);
    s.jobs.push(short(2, 2, None));
    // Its own run has no end, so the forecast knows no start for job 1 either: given one by
    // hand, the missing limit alone holds job 2.
    let (outcome, codes) = round_with(&s, &[(1, now() + Duration::seconds(100))]);
    assert!(outcome.selected.is_empty());
    assert_eq!(codes[1], (2, vec!["blocked_by"]));
}

#[test]
fn a_job_ending_after_the_estimate_stays_blocked() {
    // The watcher's estimate (its latest forecast, made before job 2 came) is now + 100 s;
    // job 2 would still run at now + 101 s.
    let mut s = scene(true);
    s.jobs.push(short(2, 2, Some(101)));
    let (outcome, codes) = round_with(&s, &[(1, now() + Duration::seconds(100))]);
    assert!(outcome.selected.is_empty());
    assert_eq!(codes[1], (2, vec!["blocked_by"]));
    // With the estimate one second later it ends in time.
    let (outcome, _) = round_with(&s, &[(1, now() + Duration::seconds(101))]);
    assert_eq!(outcome.selected, vec![2]);
}

#[test]
fn nothing_backfills_past_a_blocker_without_a_known_start() {
    let mut s = scene(true);
    s.jobs.push(short(2, 2, Some(50)));
    let (outcome, codes) = round_with(&s, &[]);
    assert!(outcome.selected.is_empty());
    assert_eq!(codes[1], (2, vec!["blocked_by"]));
    // `PreparedRound::new` passes no estimates.
    assert!(select_round(&s, now()).expect("prepared").selected.is_empty());
}

#[test]
fn every_blocker_counts_not_only_the_oldest() {
    // Job 4, also timed out and younger, is given an earlier estimate than job 1: the short
    // job must end before the earliest of both, not only before its oldest blocker's.
    let mut s = scene(true);
    s.jobs
        .push(JobBuilder::normal(4).gpus("nvidia.com/a100", 1).tolerance(60).build());
    s.jobs.push(short(2, 2, Some(50)));
    let mut est = estimates(&s);
    est.retain(|(id, _)| *id != 4);
    est.push((4, now() + Duration::seconds(30)));
    let (outcome, codes) = round_with(&s, &est);
    assert!(!outcome.selected.contains(&2));
    assert!(codes.iter().any(|(id, c)| *id == 2 && c == &["blocked_by"]));
}

#[test]
fn a_job_the_forecast_does_not_start_now_stays_blocked() {
    // More cpu than the node has: the forecast never starts it (within the capacity, so
    // only the blocker holds it in the round).
    let mut s = scene(true);
    let mut job = short(2, 1, Some(50));
    job.resources
        .insert("cpu", anteroom_shared::scheduling::Quantity::from_units(65));
    s.jobs.push(job);
    let (outcome, codes) = round_with(&s, &estimates(&s));
    assert!(outcome.selected.is_empty());
    assert_eq!(codes[1], (2, vec!["blocked_by"]));
}

#[test]
fn a_timed_out_pending_blocker_has_no_start_and_holds_every_job() {
    let mut s = scene(true);
    s.config.queue_quota_enabled = false;
    s.jobs[1].phase = JobPhase::Pending;
    s.jobs.push(short(2, 2, Some(50)));
    let est = vec![(1, now() + Duration::seconds(100))];
    let (outcome, codes) = round_with(&s, &est);
    assert!(outcome.selected.is_empty());
    assert_eq!(codes[0], (2, vec!["blocked_by"]));
}

#[test]
fn a_job_let_through_but_over_the_round_limit_waits_for_the_limit_not_the_blocker() {
    for order in [ActivationOrder::Fcfs, ActivationOrder::FairShare] {
        let mut s = scene(true);
        s.config.activation_order = order;
        s.config.prequeue_candidate_size = 1;
        s.jobs.push(short(2, 1, Some(50)));
        s.jobs.push(short(3, 1, Some(50)));
        let (outcome, codes) = round_with(&s, &estimates(&s));
        assert_eq!(outcome.selected, vec![2], "{order:?}");
        assert!(outcome.more_work);
        assert_eq!(codes[1], (3, vec!["round_limit"]), "{order:?}");
        assert_eq!(codes[0], (1, vec!["queue_capacity"]), "{order:?}");
    }
}

#[test]
fn the_fair_share_walk_lets_the_short_job_through_too() {
    let mut s = scene(true);
    s.config.activation_order = ActivationOrder::FairShare;
    s.jobs.push(short(2, 2, Some(50)));
    // Another owner's job that never fits the node: the forecast does not start it now.
    let mut job = short(3, 1, Some(50));
    job.owner = 2;
    job.resources
        .insert("cpu", anteroom_shared::scheduling::Quantity::from_units(65));
    s.jobs.push(job);
    let (outcome, codes) = round_with(&s, &estimates(&s));
    assert_eq!(outcome.selected, vec![2]);
    assert!(codes.contains(&(3, vec!["blocked_by"])));
}

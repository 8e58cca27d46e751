use anteroom_shared::scheduling::JobPhase;
use chrono::Duration;

use super::*;
use crate::prequeue::tests::fixtures::{JobBuilder, t0};

/// Told nothing yet: every job's `(id, uid, None)`.
fn untold(jobs: &[JobSnapshot]) -> Vec<(i64, String, Option<bool>)> {
    jobs.iter().map(|j| (j.id, format!("uid-{}", j.id), None)).collect()
}

fn answers(changes: &[Change]) -> Vec<(i64, bool)> {
    changes.iter().map(|c| (c.id, c.preemptable)).collect()
}

#[test]
fn a_young_or_locked_backfill_job_is_not_the_clusters_to_evict_and_an_old_free_one_is() {
    let now = t0() + Duration::seconds(1000);
    // Started at t0 + id seconds: job 1 has run 999 s, job 2 998 s.
    let old = JobBuilder::backfill(1).running_on("n1").build();
    let mut locked = JobBuilder::backfill(2).running_on("n1").build();
    locked.locked_until = Some(now + Duration::seconds(1));
    let mut young = JobBuilder::backfill(3).running_on("n1").build();
    young.started_at = Some(now - Duration::seconds(599));
    let mut unknown_start = JobBuilder::backfill(4).phase(JobPhase::Pending).build();
    unknown_start.started_at = None;
    let normal = JobBuilder::normal(5).running_on("n1").build();
    let jobs = [old, locked, young, unknown_start, normal];
    let out = changes(&jobs, &untold(&jobs), 600, now);
    // The normal job is never listed: it is created `false` and stays so; nor is the pending
    // one, whose pods come from a template that says `false`.
    assert_eq!(answers(&out), [(1, true), (2, false), (3, false)]);
    assert_eq!(out[0].cluster_uid, "uid-1");
    // Without a minimum runtime only the lock protects.
    assert_eq!(
        answers(&changes(&jobs, &untold(&jobs), 0, now)),
        [(1, true), (2, false), (3, true)]
    );
}

#[test]
fn only_a_changed_answer_is_told_again() {
    let now = t0() + Duration::seconds(1000);
    let mut job = JobBuilder::backfill(1).running_on("n1").build();
    job.started_at = Some(now - Duration::seconds(600));
    let told_false = [(1, "uid-1".to_owned(), Some(false))];
    let told_true = [(1, "uid-1".to_owned(), Some(true))];
    // Exactly the minimum runtime: now the cluster's to evict (the boundary of the prequeue).
    assert_eq!(
        answers(&changes(std::slice::from_ref(&job), &told_false, 600, now)),
        [(1, true)]
    );
    assert!(changes(std::slice::from_ref(&job), &told_true, 600, now).is_empty());
    // A second less: still protected, nothing to tell.
    assert!(changes(std::slice::from_ref(&job), &told_false, 600, now - Duration::seconds(1)).is_empty());
    // A lock set later takes it back; lifted (expired), it is given again.
    job.locked_until = Some(now + Duration::seconds(60));
    assert_eq!(
        answers(&changes(std::slice::from_ref(&job), &told_true, 600, now)),
        [(1, false)]
    );
    job.locked_until = Some(now);
    assert_eq!(
        answers(&changes(std::slice::from_ref(&job), &told_false, 600, now)),
        [(1, true)]
    );
}

#[test]
fn jobs_without_pods_or_unknown_to_the_round_are_left_alone_and_a_round_is_bounded() {
    let now = t0() + Duration::seconds(10_000);
    let waiting = JobBuilder::backfill(1).build();
    let jobs: Vec<JobSnapshot> = std::iter::once(waiting)
        .chain((2..=200).map(|id| JobBuilder::backfill(id).running_on("n1").build()))
        .collect();
    // A job the store lists but the round did not read (it ended meanwhile): skipped.
    let mut told = untold(&jobs);
    told.push((9999, "uid-9999".into(), None));
    let out = changes(&jobs, &told, 0, now);
    assert_eq!(out.len(), MAX_PATCHES_PER_ROUND);
    assert_eq!(out[0].id, 2, "a prequeued job has no pods to tell");
    assert!(out.windows(2).all(|w| w[0].id < w[1].id), "in id order");
}

//! Deleting jobs: terminating pods keep their capacity for the grace, which a delete may shorten
//! but never lengthen; pending and unknown jobs go at once.

use super::*;

#[test]
fn a_deleted_running_job_holds_its_capacity_while_terminating_then_is_gone() {
    let mut s = default_cluster();
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Webide)
            .task("main", 1, "1", Some(("nvidia.com/v100", "4")))
            .pinned(&["gpu-v100-0"])
            .build()],
        t0(),
    );
    assert_eq!(free(&s, "gpu-v100-0", "nvidia.com/v100"), q("0"));

    let mut c = Changes::default();
    s.delete(1, "uid-1", 30, t0() + Duration::seconds(10), TIMING, &mut c);
    assert_eq!(s.jobs[&1].phase, SimPhase::Terminating);
    assert_eq!(
        free(&s, "gpu-v100-0", "nvidia.com/v100"),
        q("0"),
        "terminating pods still count"
    );
    // A second delete does not extend or reset the grace.
    s.delete(1, "uid-1", 30, t0() + Duration::seconds(12), TIMING, &mut c);
    s.step(t0() + Duration::seconds(14), TIMING, &mut c);
    assert!(s.jobs.contains_key(&1));
    s.step(t0() + Duration::seconds(15), TIMING, &mut c);
    assert!(!s.jobs.contains_key(&1));
    assert_eq!(free(&s, "gpu-v100-0", "nvidia.com/v100"), q("4"));
    assert!(c.removed.contains(&1));
    assert!(c.events.contains(&JobEvent::Gone {
        job_id: 1,
        observed_at: t0() + Duration::seconds(15)
    }));
}

#[test]
fn the_grace_a_delete_asks_for_caps_the_termination() {
    let mut s = default_cluster();
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Jupyter).task("main", 1, "1", None).build()],
        t0(),
    );
    let mut c = Changes::default();
    s.delete(1, "uid-1", 0, t0(), TIMING, &mut c);
    s.step(t0(), TIMING, &mut c);
    assert!(!s.jobs.contains_key(&1), "grace 0 frees at once");
}

#[test]
fn a_pending_job_deleted_is_gone_at_once_and_deleting_an_unknown_job_changes_nothing() {
    let mut s = default_cluster();
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Custom)
            .task("main", 1, "1", Some(("nvidia.com/h100", "1")))
            .build()],
        t0(),
    );
    assert_eq!(s.jobs[&1].phase, SimPhase::Pending, "no node has an h100");
    let mut c = Changes::default();
    s.delete(1, "uid-1", 30, t0(), TIMING, &mut c);
    assert!(s.jobs.is_empty());
    let mut c = Changes::default();
    s.delete(99, "uid-99", 30, t0(), TIMING, &mut c);
    assert!(c.is_empty());
}

#[test]
fn a_second_delete_may_shorten_the_grace_but_never_lengthen_it() {
    let mut s = default_cluster();
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Jupyter).task("main", 1, "1", None).build()],
        t0(),
    );
    let mut c = Changes::default();
    s.delete(1, "uid-1", 5, t0(), TIMING, &mut c);
    assert_eq!(s.jobs[&1].gone_at, Some(t0() + Duration::seconds(5)));
    // Longer: ignored.
    let mut c = Changes::default();
    s.delete(1, "uid-1", 30, t0() + Duration::seconds(1), TIMING, &mut c);
    assert_eq!(s.jobs[&1].gone_at, Some(t0() + Duration::seconds(5)));
    assert!(c.is_empty(), "nothing to persist");
    // Shorter: the pods go sooner, and the new end is persisted.
    let mut c = Changes::default();
    s.delete(1, "uid-1", 1, t0() + Duration::seconds(1), TIMING, &mut c);
    assert_eq!(s.jobs[&1].gone_at, Some(t0() + Duration::seconds(2)));
    assert!(c.upserted.contains(&1));
    assert!(
        c.events.is_empty(),
        "still terminating on the same nodes: nothing to announce"
    );
    s.step(t0() + Duration::seconds(2), TIMING, &mut c);
    assert!(!s.jobs.contains_key(&1));
}

#[test]
fn a_delete_for_another_job_of_the_same_id_leaves_the_job_alone() {
    let mut s = default_cluster();
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Custom).task("main", 1, "1", None).build()],
        t0(),
    );
    let mut c = Changes::default();
    // A restored database's job 1 has another uid: its delete is not this job's.
    s.delete(1, "uid-of-another-job-1", 0, t0(), TIMING, &mut c);
    assert!(c.is_empty(), "{c:?}");
    assert_eq!(s.jobs[&1].phase, SimPhase::Running);
    s.delete(1, "uid-1", 0, t0(), TIMING, &mut c);
    assert_eq!(s.jobs[&1].phase, SimPhase::Terminating);
}

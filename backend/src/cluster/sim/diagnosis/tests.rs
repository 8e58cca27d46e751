//! What the simulated cluster says about pods: the scheduler's message, pod states of a failed
//! job, and logs that only ever grow at the end.

use std::sync::Arc;

use anteroom_shared::scheduling::JobKind;
use chrono::{DateTime, Duration, Utc};

use super::*;
use crate::cluster::ClusterQueue;
use crate::cluster::sim::state::tests::JobBuilder;
use crate::cluster::sim::state::{Changes, SimState, Timing};

const RUNTIME: u64 = 600;

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn cluster() -> SimState {
    let mut s = SimState::default();
    for n in crate::cluster::sim::nodes::load(None).unwrap() {
        s.nodes.insert(n.name.clone(), n);
    }
    s.queues.insert("default".into(), ClusterQueue::new("default", true));
    s
}

const TIMING: Timing = Timing {
    default_runtime_seconds: RUNTIME,
    termination_grace_seconds: 5,
    finished_retention_seconds: 3600,
};

/// Creates `spec` at t0 and steps once: placed if it fits.
fn started(state: &mut SimState, spec: &crate::cluster::JobSpec) -> SimJob {
    let mut changes = Changes::default();
    state.create(spec, t0(), &mut changes).unwrap();
    state.step(t0(), TIMING, &mut changes);
    SimJob::clone(&state.jobs[&spec.id])
}

#[test]
fn a_pending_job_says_why_no_node_takes_it_as_the_scheduler_would() {
    let mut state = cluster();
    // Too much CPU for the CPU node, and no toleration for the GPU pool's taint.
    let job = started(
        &mut state,
        &JobBuilder::new(1, JobKind::Custom).task("main", 2, "100", None).build(),
    );
    assert_eq!(job.phase, SimPhase::Pending);
    let nodes = state.node_snapshots();
    let now = t0() + Duration::seconds(25);
    let pods = pods(&job, &nodes, now, RUNTIME);
    assert_eq!(pods.len(), 2);
    assert_eq!(pods[1].name, "ar-1-main-1");
    assert_eq!(pods[0].reason.as_deref(), Some("Unschedulable"));
    assert_eq!(
        pods[0].message.as_deref(),
        Some(
            "0/5 nodes are available: 1 Insufficient cpu, 4 node(s) had untolerated taint {nvidia.com/gpu: \
             present}."
        )
    );
    let events = events(&job, &nodes, now, RUNTIME);
    assert_eq!(events[0].reason, "FailedScheduling");
    assert_eq!(events[0].object, "Pod/ar-1-main-0");
    // Tried at 0, 10 and 20 s: folded into one event.
    assert_eq!(events[0].count, 3);
    assert_eq!(events.last().unwrap().object, "PodGroup/ar-1");
}

#[test]
fn a_tolerated_pool_without_enough_accelerators_reads_as_insufficient() {
    let mut state = cluster();
    let job = started(
        &mut state,
        &JobBuilder::new(1, JobKind::Custom)
            .task("main", 1, "1", Some(("nvidia.com/a100", "16")))
            .build(),
    );
    let message = pods(&job, &state.node_snapshots(), t0(), RUNTIME)[0]
        .message
        .clone()
        .unwrap();
    assert_eq!(message, "0/5 nodes are available: 5 Insufficient nvidia.com/a100.");
}

#[test]
fn a_gang_too_big_together_says_so_rather_than_blaming_every_node() {
    let mut state = cluster();
    // One pod fits on cpu-0; three at once do not.
    let job = started(
        &mut state,
        &JobBuilder::new(1, JobKind::Custom).task("main", 3, "40", None).build(),
    );
    let message = pods(&job, &state.node_snapshots(), t0(), RUNTIME)[0]
        .message
        .clone()
        .unwrap();
    assert!(
        message.starts_with("1/5 nodes have room for one pod of task main"),
        "{message}"
    );
}

#[test]
fn the_failing_task_s_pods_fail_with_its_code_and_the_others_are_stopped() {
    let mut state = cluster();
    let mut spec = JobBuilder::new(1, JobKind::Pytorch)
        .task("master", 1, "1", None)
        .task("worker", 2, "1", None)
        .build();
    spec.tasks[0].command = vec!["sleep".into(), "100".into()];
    spec.tasks[1].command = vec!["sh".into(), "-c".into(), "exit 3".into()];
    let mut job = started(&mut state, &spec);
    assert_eq!(job.phase, SimPhase::Running);
    // The job ends when the worker exits (at once), not when the master would.
    assert_eq!(job.finishes_at, Some(t0()));
    let failure = job.failure(RUNTIME).unwrap();
    assert_eq!(failure.one_line(), "ar-1-worker-0: Error (exit code 3)");
    job.phase = SimPhase::Failed;
    let pods = pods(&job, &state.node_snapshots(), t0(), RUNTIME);
    let by_name = |n: &str| pods.iter().find(|p| p.name == n).unwrap();
    assert_eq!(pods[0].task, "master", "by task order");
    assert_eq!(by_name("ar-1-worker-1").exit_code, Some(3));
    assert_eq!(by_name("ar-1-worker-1").reason.as_deref(), Some("Error"));
    assert_eq!(by_name("ar-1-master-0").reason.as_deref(), Some("Terminated"));
    assert_eq!(by_name("ar-1-master-0").exit_code, Some(143));
    let events = events(&job, &state.node_snapshots(), t0(), RUNTIME);
    assert!(
        events
            .iter()
            .any(|e| e.object == "Pod/ar-1-worker-0" && e.reason == "Failed" && e.event_type == "Warning"),
        "{events:?}"
    );
}

#[test]
fn a_job_that_exits_zero_completes_and_an_unreadable_code_is_not_an_exit() {
    let mut state = cluster();
    let ok = JobBuilder::new(1, JobKind::Custom)
        .task("main", 1, "1", None)
        .command(&["exit", "0"])
        .build();
    assert!(started(&mut state, &ok).failure(RUNTIME).is_none());
    let odd = JobBuilder::new(2, JobKind::Custom)
        .task("main", 1, "1", None)
        .command(&["exit", "256"])
        .build();
    assert!(
        started(&mut state, &odd).failure(RUNTIME).is_none(),
        "not an exit code: runs the default"
    );
}

#[test]
fn a_log_grows_at_its_end_only_and_ends_with_the_exit() {
    let mut state = cluster();
    let job = started(
        &mut state,
        &JobBuilder::new(1, JobKind::Custom)
            .task("main", 1, "1", None)
            .command(&["sleep", "20"])
            .build(),
    );
    let log = PodLog::of(&job, "ar-1-main-0", RUNTIME).unwrap();
    assert!(PodLog::of(&job, "ar-1-main-1", RUNTIME).is_none(), "no such replica");
    assert!(PodLog::of(&job, "ar-2-main-0", RUNTIME).is_none(), "another job's pod");

    let early = log.text(0, t0() + Duration::seconds(15), None, u64::MAX);
    assert_eq!(
        early,
        "2026-11-22T12:00:00Z [anteroom-sim] pod ar-1-main-0 started on node cpu-0\n\
         2026-11-22T12:00:00Z [anteroom-sim] image busybox, command: sleep 20\n\
         2026-11-22T12:00:10Z [anteroom-sim] running for 10s\n"
    );
    assert!(!log.ended(t0() + Duration::seconds(15)));
    let late = t0() + Duration::seconds(3600);
    let whole = log.text(0, late, None, u64::MAX);
    assert!(whole.starts_with(&early), "earlier lines never change");
    assert!(
        whole.ends_with("2026-11-22T12:00:20Z [anteroom-sim] exited with code 0\n"),
        "{whole}"
    );
    assert_eq!(log.line_count(late), 4, "no running line at the instant it exits");
    assert!(log.ended(late));
    // Follow: from the count seen earlier, only the new lines.
    let count = log.line_count(t0() + Duration::seconds(15));
    assert_eq!(
        log.text(count, late, None, u64::MAX),
        "2026-11-22T12:00:20Z [anteroom-sim] exited with code 0\n"
    );
    // The tail, and a byte limit that keeps whole last lines.
    assert_eq!(log.text(0, late, Some(1), u64::MAX).lines().count(), 1);
    let last = "2026-11-22T12:00:20Z [anteroom-sim] exited with code 0\n";
    assert_eq!(log.text(0, late, None, last.len() as u64 + 5), last);
}

#[test]
fn a_log_of_a_long_run_is_cut_without_writing_it_all() {
    let mut state = cluster();
    let job = started(
        &mut state,
        &JobBuilder::new(1, JobKind::Custom)
            .task("main", 1, "1", None)
            .command(&["sleep", "inf"])
            .build(),
    );
    let log = PodLog::of(&job, "ar-1-main-0", RUNTIME).unwrap();
    // Nine years in: 28 million lines; the tail is read from the end.
    let now = t0() + Duration::days(9 * 365);
    assert!(log.line_count(now) > 28_000_000);
    let tail = log.text(0, now, Some(3), u64::MAX);
    assert_eq!(tail.lines().count(), 3);
    assert!(log.text(0, now, None, 1000).len() <= 1000);
}

#[test]
fn a_deleted_pod_s_log_stops_at_its_end() {
    let mut state = cluster();
    let spec = JobBuilder::new(1, JobKind::Jupyter).task("main", 1, "1", None).build();
    started(&mut state, &spec);
    let mut changes = Changes::default();
    state.delete(1, "uid-1", 5, t0() + Duration::seconds(30), TIMING, &mut changes);
    let job = Arc::clone(&state.jobs[&1]);
    let log = PodLog::of(&job, "ar-1-main-0", RUNTIME).unwrap();
    let later = t0() + Duration::seconds(600);
    assert!(log.ended(later));
    assert_eq!(
        log.line_count(later),
        2 + 3,
        "running lines up to the end of its grace (35 s)"
    );
    let pods = pods(&job, &state.node_snapshots(), later, RUNTIME);
    assert_eq!(pods[0].reason.as_deref(), Some("Terminating"));
}

#[test]
fn a_failure_shows_from_the_instant_it_happens_whatever_the_phase_says_yet() {
    let mut state = cluster();
    let mut spec = JobBuilder::new(1, JobKind::Pytorch)
        .task("master", 1, "1", None)
        .task("worker", 1, "1", None)
        .build();
    spec.tasks[0].command = vec!["sleep".into(), "100".into()];
    spec.tasks[1].command = vec!["exit".into(), "4".into()];
    let job = started(&mut state, &spec);
    // Still `Running` (no step yet), but the worker has exited 4 at t0: it reads so already,
    // and the master's log ends with its stop — the lines never change afterwards.
    assert_eq!(job.phase, SimPhase::Running);
    let nodes = state.node_snapshots();
    let pods = pods(&job, &nodes, t0(), RUNTIME);
    assert_eq!((pods[1].phase.as_str(), pods[1].exit_code), ("Failed", Some(4)));
    assert_eq!((pods[0].phase.as_str(), pods[0].exit_code), ("Failed", Some(143)));
    let log = PodLog::of(&job, "ar-1-master-0", RUNTIME).unwrap();
    let later = t0() + Duration::seconds(50);
    assert!(log.ended(t0()));
    assert!(log.text(0, later, None, u64::MAX).ends_with("exited with code 143\n"));
    assert_eq!(log.line_count(later), 3, "no running line after the stop");
}

#[test]
fn a_follower_gets_every_line_once_in_order_up_to_its_budget() {
    let mut state = cluster();
    let job = started(
        &mut state,
        &JobBuilder::new(1, JobKind::Custom)
            .task("main", 1, "1", None)
            .command(&["sleep", "100"])
            .build(),
    );
    let log = PodLog::of(&job, "ar-1-main-0", RUNTIME).unwrap();
    let now = t0() + Duration::seconds(200);
    let whole = log.text(0, now, None, u64::MAX);
    let mut sent = String::new();
    let mut next = 0;
    loop {
        // A budget of two lines' worth at a time.
        let (chunk, after) = log.next_lines(next, now, 120);
        if chunk.is_empty() {
            break;
        }
        sent.push_str(&chunk);
        next = after;
    }
    assert_eq!(sent, whole, "nothing skipped, nothing twice");
    let (none, stays) = log.next_lines(0, now, 10);
    assert_eq!((none.as_str(), stays), ("", 0), "a line that does not fit is not cut");
}

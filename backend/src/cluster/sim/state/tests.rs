//! The simulation's rules, one test each, on the default cluster with a hand-moved clock.

use super::*;
use crate::cluster::TaskSpec;
use crate::cluster::sim::runtime::MAX_RUNTIME_SECONDS;
use crate::prequeue::{TaintEffect, TolerationOperator};
use anteroom_shared::scheduling::JobKind;
use anteroom_shared::scheduling::{PreemptionPolicy, Quantity, ScheduleType};
use chrono::Duration;

const TIMING: Timing = Timing {
    default_runtime_seconds: 600,
    termination_grace_seconds: 5,
    finished_retention_seconds: 3600,
};

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

/// Builder for the jobs the simulation runs.
pub(crate) struct JobBuilder(JobSpec);

impl JobBuilder {
    pub(crate) fn new(id: JobId, kind: JobKind) -> Self {
        JobBuilder(JobSpec {
            id,
            kind,
            queue: "default".into(),
            owner: "alice".into(),
            schedule_type: ScheduleType::Normal,
            waiting_tolerance_seconds: Some(300),
            preemption_policy: PreemptionPolicy::PreemptLowerPriority,
            tasks: Vec::new(),
            termination_grace_seconds: None,
        })
    }
    pub(crate) fn queue(mut self, q: &str) -> Self {
        self.0.queue = q.into();
        self
    }
    pub(crate) fn task(mut self, name: &str, replicas: u32, cpu: &str, gpus: Option<(&str, &str)>) -> Self {
        let mut resources = ResourceList::new()
            .with("cpu", Quantity::parse(cpu).unwrap())
            .with("memory", Quantity::parse("8Gi").unwrap());
        if let Some((model, n)) = gpus {
            resources.insert(model, Quantity::parse(n).unwrap());
        }
        self.0.tasks.push(TaskSpec {
            name: name.into(),
            replicas,
            image: "busybox".into(),
            command: vec!["train".into()],
            resources,
            node_names: Vec::new(),
            tolerations: Vec::new(),
        });
        self
    }
    pub(crate) fn command(mut self, cmd: &[&str]) -> Self {
        for t in &mut self.0.tasks {
            t.command = cmd.iter().map(|s| s.to_string()).collect();
        }
        self
    }
    pub(crate) fn pinned(mut self, nodes: &[&str]) -> Self {
        for t in &mut self.0.tasks {
            t.node_names = nodes.iter().map(|s| s.to_string()).collect();
        }
        self
    }
    pub(crate) fn tolerating(mut self, key: &str) -> Self {
        for t in &mut self.0.tasks {
            t.tolerations.push(Toleration {
                key: Some(key.into()),
                operator: TolerationOperator::Exists,
                value: None,
                effect: None,
            });
        }
        self
    }
    /// Tolerations for one task only.
    pub(crate) fn task_tolerating(mut self, task: &str, key: &str) -> Self {
        for t in self.0.tasks.iter_mut().filter(|t| t.name == task) {
            t.tolerations.push(Toleration {
                key: Some(key.into()),
                operator: TolerationOperator::Exists,
                value: None,
                effect: None,
            });
        }
        self
    }
    pub(crate) fn build(self) -> JobSpec {
        self.0
    }
}

/// The default nodes, and open queues for every queue name the tests use.
fn default_cluster() -> SimState {
    let mut s = SimState::default();
    for n in crate::cluster::sim::nodes::load(None).unwrap() {
        s.nodes.insert(n.name.clone(), n);
    }
    for q in ["default", "team", "other", "q2"] {
        s.queues.insert(q.into(), true);
    }
    s
}

fn run(state: &mut SimState, specs: &[JobSpec], now: DateTime<Utc>) -> Changes {
    let mut changes = Changes::default();
    for spec in specs {
        state.create(spec, now, &mut changes).expect("the queue is open");
    }
    state.step(now, TIMING, &mut changes);
    changes
}

fn free(state: &SimState, node: &str, resource: &str) -> Quantity {
    state
        .node_snapshots()
        .into_iter()
        .find(|n| n.name == node)
        .unwrap()
        .free
        .get(resource)
}

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap()
}

#[test]
fn a_gang_is_placed_whole_across_nodes_or_not_at_all() {
    let mut s = default_cluster();
    let fits = JobBuilder::new(1, JobKind::Pytorch)
        .task("master", 1, "4", Some(("nvidia.com/a100", "4")))
        .task("worker", 2, "4", Some(("nvidia.com/a100", "4")))
        .build();
    run(&mut s, &[fits], t0());
    let job = &s.jobs[&1];
    assert_eq!(job.phase, SimPhase::Running);
    assert_eq!(job.pods.len(), 3);
    assert_eq!(job.status(t0()).nodes, vec!["gpu-a100-0", "gpu-a100-1"]);

    // 5 × 4 GPUs = 20 > the 4 left: none of its pods is placed.
    let too_big = JobBuilder::new(2, JobKind::Custom)
        .queue("other")
        .task("main", 5, "1", Some(("nvidia.com/a100", "1")))
        .build();
    run(&mut s, &[too_big], t0());
    assert_eq!(s.jobs[&2].phase, SimPhase::Pending);
    assert!(s.jobs[&2].pods.is_empty());
    let a100_free =
        free(&s, "gpu-a100-0", "nvidia.com/a100").milli() + free(&s, "gpu-a100-1", "nvidia.com/a100").milli();
    assert_eq!(a100_free, 4_000);
}

#[test]
fn best_fit_puts_a_pod_on_the_node_it_fills_most() {
    let mut s = default_cluster();
    // Fill gpu-a100-1 with 6 of its 8 GPUs.
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Jupyter)
            .task("main", 1, "1", Some(("nvidia.com/a100", "6")))
            .pinned(&["gpu-a100-1"])
            .build()],
        t0(),
    );
    assert_eq!(s.jobs[&1].pods[0].node, "gpu-a100-1");
    run(
        &mut s,
        &[JobBuilder::new(2, JobKind::Jupyter)
            .task("main", 1, "1", Some(("nvidia.com/a100", "2")))
            .build()],
        t0(),
    );
    assert_eq!(s.jobs[&2].pods[0].node, "gpu-a100-1", "the tighter node wins");
    assert_eq!(free(&s, "gpu-a100-1", "nvidia.com/a100"), q("0"));
    assert_eq!(free(&s, "gpu-a100-0", "nvidia.com/a100"), q("8"));
}

#[test]
fn sleep_jobs_run_their_seconds_batch_jobs_the_default_and_notebooks_until_deleted() {
    let mut s = default_cluster();
    let sleeper = JobBuilder::new(1, JobKind::Custom)
        .task("main", 1, "1", None)
        .command(&["sleep", "30"])
        .build();
    let batch = JobBuilder::new(2, JobKind::Tensorflow)
        .task("ps", 1, "1", None)
        .task("worker", 2, "1", None)
        .build();
    let notebook = JobBuilder::new(3, JobKind::Jupyter)
        .task("main", 1, "1", None)
        .command(&["sleep", "5"])
        .build();
    run(&mut s, &[sleeper, batch, notebook], t0());
    assert!(s.jobs.values().all(|j| j.phase == SimPhase::Running));

    let mut c = Changes::default();
    s.step(t0() + Duration::seconds(29), TIMING, &mut c);
    assert_eq!(s.jobs[&1].phase, SimPhase::Running);
    s.step(t0() + Duration::seconds(30), TIMING, &mut c);
    assert!(s.finished.contains_key(&1));
    assert!(!s.jobs.contains_key(&1), "a completed job holds no capacity");
    s.step(t0() + Duration::seconds(599), TIMING, &mut c);
    assert_eq!(s.jobs[&2].phase, SimPhase::Running);
    s.step(t0() + Duration::seconds(600), TIMING, &mut c);
    assert!(s.finished.contains_key(&2));
    s.step(t0() + Duration::days(30), TIMING, &mut c);
    assert_eq!(s.jobs[&3].phase, SimPhase::Running, "a notebook runs until deleted");
}

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
    s.delete(1, 30, t0() + Duration::seconds(10), TIMING, &mut c);
    assert_eq!(s.jobs[&1].phase, SimPhase::Terminating);
    assert_eq!(
        free(&s, "gpu-v100-0", "nvidia.com/v100"),
        q("0"),
        "terminating pods still count"
    );
    // A second delete does not extend or reset the grace.
    s.delete(1, 30, t0() + Duration::seconds(12), TIMING, &mut c);
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
    s.delete(1, 0, t0(), TIMING, &mut c);
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
    s.delete(1, 30, t0(), TIMING, &mut c);
    assert!(s.jobs.is_empty());
    let mut c = Changes::default();
    s.delete(99, 30, t0(), TIMING, &mut c);
    assert!(c.is_empty());
}

#[test]
fn creating_a_job_twice_is_harmless() {
    let mut s = default_cluster();
    let spec = JobBuilder::new(1, JobKind::Custom).task("main", 1, "1", None).build();
    let mut c = Changes::default();
    assert_eq!(s.create(&spec, t0(), &mut c), Ok(Created::New));
    assert_eq!(
        s.create(&spec, t0() + Duration::seconds(1), &mut c),
        Ok(Created::AlreadyExists)
    );
    assert_eq!(s.jobs.len(), 1);
    assert_eq!(s.jobs[&1].created_at, t0());
}

#[test]
fn a_pending_job_that_does_not_fit_does_not_hold_back_smaller_jobs_behind_it_in_its_queue() {
    let mut s = default_cluster();
    // Queue `team`: a head that cannot fit now (9 GPUs on 8-GPU nodes), then a small job that
    // can: Volcano's allocate skips the head, as the simulation must.
    let head = JobBuilder::new(1, JobKind::Custom)
        .queue("team")
        .task("main", 1, "1", Some(("nvidia.com/a100", "9")))
        .build();
    let behind = JobBuilder::new(2, JobKind::Custom)
        .queue("team")
        .task("main", 1, "1", Some(("nvidia.com/a100", "1")))
        .build();
    let other = JobBuilder::new(3, JobKind::Custom)
        .queue("other")
        .task("main", 1, "1", Some(("nvidia.com/a100", "1")))
        .build();
    let mut c = Changes::default();
    s.create(&head, t0(), &mut c).unwrap();
    s.create(&behind, t0() + Duration::seconds(1), &mut c).unwrap();
    s.create(&other, t0() + Duration::seconds(2), &mut c).unwrap();
    s.step(t0() + Duration::seconds(2), TIMING, &mut c);
    assert_eq!(s.jobs[&1].phase, SimPhase::Pending);
    assert_eq!(s.jobs[&2].phase, SimPhase::Running, "not held back by its queue's head");
    assert_eq!(s.jobs[&3].phase, SimPhase::Running);
}

#[test]
fn pending_jobs_are_tried_in_creation_order() {
    let mut s = default_cluster();
    // Two jobs each wanting a whole v100 node's 4 GPUs plus one more than the other node has
    // left once the first is placed: the older one gets the room.
    let younger = JobBuilder::new(1, JobKind::Custom)
        .task("main", 2, "1", Some(("nvidia.com/v100", "4")))
        .build();
    let older = JobBuilder::new(2, JobKind::Custom)
        .task("main", 2, "1", Some(("nvidia.com/v100", "4")))
        .build();
    let mut c = Changes::default();
    s.create(&older, t0(), &mut c).unwrap();
    s.create(&younger, t0() + Duration::seconds(1), &mut c).unwrap();
    s.step(t0() + Duration::seconds(1), TIMING, &mut c);
    assert_eq!(s.jobs[&2].phase, SimPhase::Running, "the older job goes first");
    assert_eq!(s.jobs[&1].phase, SimPhase::Pending);
}

#[test]
fn cordoned_nodes_and_untolerated_taints_are_avoided() {
    let mut s = default_cluster();
    let mut c = Changes::default();
    assert!(s.set_schedulable("gpu-v100-0", false, &mut c));
    assert!(!s.set_schedulable("nope", false, &mut c));
    s.nodes.get_mut("gpu-v100-1").unwrap().taints.push(Taint {
        key: "dedicated".into(),
        value: Some("ml".into()),
        effect: TaintEffect::NoSchedule,
    });
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Custom)
            .task("main", 1, "1", Some(("nvidia.com/v100", "1")))
            .build()],
        t0(),
    );
    assert_eq!(
        s.jobs[&1].phase,
        SimPhase::Pending,
        "one v100 node cordoned, the other tainted"
    );
    run(
        &mut s,
        &[JobBuilder::new(2, JobKind::Custom)
            .queue("q2")
            .task("main", 1, "1", Some(("nvidia.com/v100", "1")))
            .tolerating("dedicated")
            .build()],
        t0(),
    );
    assert_eq!(s.jobs[&2].pods[0].node, "gpu-v100-1");
    let mut c = Changes::default();
    s.set_schedulable("gpu-v100-0", true, &mut c);
    s.step(t0(), TIMING, &mut c);
    assert_eq!(s.jobs[&1].pods[0].node, "gpu-v100-0");
}

#[test]
fn every_transition_is_announced_with_the_nodes_of_the_pods() {
    let mut s = default_cluster();
    let changes = run(
        &mut s,
        &[JobBuilder::new(7, JobKind::Custom)
            .task("main", 1, "1", None)
            .command(&["sleep", "1"])
            .pinned(&["cpu-0"])
            .build()],
        t0(),
    );
    let phases: Vec<_> = changes
        .events
        .iter()
        .map(|e| match e {
            JobEvent::Status(st) => (st.phase, st.nodes.clone()),
            JobEvent::Gone { .. } => panic!("not gone"),
        })
        .collect();
    assert_eq!(
        phases,
        vec![
            (JobPhase::Pending, vec![]),
            (JobPhase::Running, vec!["cpu-0".to_string()])
        ]
    );
    let mut c = Changes::default();
    s.step(t0() + Duration::seconds(1), TIMING, &mut c);
    assert!(matches!(&c.events[..], [JobEvent::Status(st)] if st.phase == JobPhase::Completed && st.nodes.is_empty()));
}

#[test]
fn runtime_is_the_longest_task_and_odd_sleeps_fall_back_to_the_default() {
    let spec = JobBuilder::new(1, JobKind::Pytorch)
        .task("master", 1, "1", None)
        .task("worker", 1, "1", None)
        .build();
    let mut spec2 = spec.clone();
    spec2.tasks[0].command = vec!["sleep".into(), "700".into()];
    spec2.tasks[1].command = vec!["sleep".into(), "10".into()];
    assert_eq!(runtime_seconds(&spec2, 600), Some(700));
    spec2.tasks[0].command = vec!["sleep".into(), "forever".into()];
    assert_eq!(runtime_seconds(&spec2, 600), Some(600));
    spec2.tasks[0].command = vec!["sleep".into(), "1.5".into()];
    assert_eq!(runtime_seconds(&spec2, 5), Some(10));
    assert_eq!(runtime_seconds(&spec, 42), Some(42));
}

#[test]
fn a_sleep_past_the_end_of_the_calendar_runs_ten_years_and_never_overflows_the_clock() {
    for huge in ["1e13", "1e300", "inf", "18446744073709551616"] {
        let spec = JobBuilder::new(1, JobKind::Custom)
            .task("main", 1, "1", None)
            .command(&["sleep", huge])
            .build();
        assert_eq!(runtime_seconds(&spec, 600), Some(MAX_RUNTIME_SECONDS), "sleep {huge}");
    }
    for odd in ["NaN", "-5", "-inf", "forever", ""] {
        let spec = JobBuilder::new(1, JobKind::Custom)
            .task("main", 1, "1", None)
            .command(&["sleep", odd])
            .build();
        assert_eq!(runtime_seconds(&spec, 600), Some(600), "sleep {odd:?} runs the default");
    }

    let mut s = default_cluster();
    let forever = JobBuilder::new(1, JobKind::Custom)
        .task("main", 1, "1", None)
        .command(&["sleep", "1e13"])
        .build();
    run(&mut s, &[forever], t0());
    let cap = t0() + Duration::seconds(MAX_RUNTIME_SECONDS as i64);
    assert_eq!(s.jobs[&1].finishes_at, Some(cap));
    let mut c = Changes::default();
    s.step(cap - Duration::seconds(1), TIMING, &mut c);
    assert_eq!(s.jobs[&1].phase, SimPhase::Running);
    s.step(cap, TIMING, &mut c);
    assert!(s.finished.contains_key(&1), "it completes at the cap");

    // Even a clock near the last date chrono holds places and deletes without a panic.
    let end = DateTime::<Utc>::MAX_UTC - Duration::days(1);
    let mut s = default_cluster();
    let spec = JobBuilder::new(2, JobKind::Custom)
        .task("main", 1, "1", None)
        .command(&["sleep", "1e13"])
        .build();
    run(&mut s, &[spec], end);
    assert_eq!(s.jobs[&2].phase, SimPhase::Running);
    assert_eq!(s.jobs[&2].finishes_at, None, "past the calendar it runs until deleted");
    let last = DateTime::<Utc>::MAX_UTC - Duration::seconds(2);
    let mut c = Changes::default();
    s.delete(2, 30, last, TIMING, &mut c);
    s.step(last, TIMING, &mut c);
    assert!(!s.jobs.contains_key(&2), "a grace past the calendar ends at once");
}

#[test]
fn tolerations_apply_to_the_pods_of_their_own_task_only() {
    let mut s = default_cluster();
    for n in ["gpu-v100-0", "gpu-v100-1"] {
        s.nodes.get_mut(n).unwrap().taints.push(Taint {
            key: "dedicated".into(),
            value: Some("ml".into()),
            effect: TaintEffect::NoSchedule,
        });
    }
    // The worker tolerates the taint; the ps, pinned to a tainted node, does not: pooled over
    // the job the ps would run there, per task it cannot.
    let mut spec = JobBuilder::new(1, JobKind::Tensorflow)
        .task("worker", 1, "1", Some(("nvidia.com/v100", "1")))
        .task("ps", 1, "1", None)
        .task_tolerating("worker", "dedicated")
        .build();
    spec.tasks[1].node_names = vec!["gpu-v100-0".into()];
    run(&mut s, &[spec.clone()], t0());
    assert_eq!(
        s.jobs[&1].phase,
        SimPhase::Pending,
        "the ps does not tolerate the taint"
    );

    // Unpinned, the ps goes where it is tolerated, not onto the v100 node it would fill most.
    let mut s = default_cluster();
    for n in ["gpu-v100-0", "gpu-v100-1"] {
        s.nodes.get_mut(n).unwrap().taints.push(Taint {
            key: "dedicated".into(),
            value: None,
            effect: TaintEffect::NoSchedule,
        });
    }
    spec.tasks[1].node_names.clear();
    spec.tasks[1].resources = ResourceList::new().with("cpu", q("30"));
    run(&mut s, &[spec], t0());
    let job = &s.jobs[&1];
    assert_eq!(job.phase, SimPhase::Running);
    let ps = job.pods.iter().find(|p| p.task == "ps").unwrap();
    let worker = job.pods.iter().find(|p| p.task == "worker").unwrap();
    assert!(worker.node.starts_with("gpu-v100"));
    assert!(!ps.node.starts_with("gpu-v100"), "the ps landed on {}", ps.node);
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
    s.delete(1, 5, t0(), TIMING, &mut c);
    assert_eq!(s.jobs[&1].gone_at, Some(t0() + Duration::seconds(5)));
    // Longer: ignored.
    let mut c = Changes::default();
    s.delete(1, 30, t0() + Duration::seconds(1), TIMING, &mut c);
    assert_eq!(s.jobs[&1].gone_at, Some(t0() + Duration::seconds(5)));
    assert!(c.is_empty(), "nothing to persist");
    // Shorter: the pods go sooner, and the new end is persisted.
    let mut c = Changes::default();
    s.delete(1, 1, t0() + Duration::seconds(1), TIMING, &mut c);
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
fn free_capacity_never_goes_negative_when_a_node_shrinks_under_running_pods() {
    let mut s = default_cluster();
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Jupyter)
            .task("main", 1, "4", Some(("nvidia.com/a100", "8")))
            .pinned(&["gpu-a100-0"])
            .build()],
        t0(),
    );
    // The node file now says 4 GPUs and 2 CPUs while the pod holds 8 and 4.
    let node = s.nodes.get_mut("gpu-a100-0").unwrap();
    node.allocatable.insert("nvidia.com/a100", q("4"));
    node.allocatable.insert("cpu", q("2"));
    for n in s.node_snapshots() {
        for (name, quantity) in n.free.iter() {
            assert!(quantity.milli() >= 0, "{}: {name} free is {quantity:?}", n.name);
        }
    }
    assert_eq!(free(&s, "gpu-a100-0", "nvidia.com/a100"), q("0"));
    assert_eq!(free(&s, "gpu-a100-0", "cpu"), q("0"));
    // Nothing more lands there until the pod is gone.
    run(
        &mut s,
        &[JobBuilder::new(2, JobKind::Custom)
            .task("main", 1, "1", None)
            .pinned(&["gpu-a100-0"])
            .build()],
        t0(),
    );
    assert_eq!(s.jobs[&2].phase, SimPhase::Pending);
}

#[test]
fn a_completed_job_leaves_memory_at_once_and_the_cluster_after_the_retention() {
    let mut s = default_cluster();
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Custom)
            .task("main", 1, "1", None)
            .command(&["sleep", "10"])
            .build()],
        t0(),
    );
    let done = t0() + Duration::seconds(10);
    let mut c = Changes::default();
    s.step(done, TIMING, &mut c);
    assert!(!s.jobs.contains_key(&1), "spec and pods leave memory");
    assert_eq!(
        s.finished[&1],
        FinishedJob {
            started_at: Some(t0()),
            finished_at: done
        }
    );
    let statuses = s.statuses(done);
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].phase, JobPhase::Completed);
    assert_eq!(statuses[0].started_at, Some(t0()));
    assert_eq!(
        s.create(
            &JobBuilder::new(1, JobKind::Custom).task("main", 1, "1", None).build(),
            done,
            &mut c
        ),
        Ok(Created::AlreadyExists),
        "a finished job still exists until it is purged"
    );

    let mut c = Changes::default();
    s.step(done + Duration::seconds(3599), TIMING, &mut c);
    assert!(s.finished.contains_key(&1));
    assert!(c.is_empty());
    s.step(done + Duration::seconds(3600), TIMING, &mut c);
    assert!(s.finished.is_empty() && s.jobs.is_empty());
    assert!(c.removed.contains(&1), "its row is deleted");
    assert_eq!(
        c.events,
        vec![JobEvent::Gone {
            job_id: 1,
            observed_at: done + Duration::seconds(3600)
        }]
    );
}

#[test]
fn a_job_is_refused_by_a_queue_the_cluster_does_not_know_or_that_is_closed() {
    let mut s = default_cluster();
    let mut c = Changes::default();
    let into = |queue: &str, id: JobId| {
        JobBuilder::new(id, JobKind::Custom)
            .queue(queue)
            .task("main", 1, "1", None)
            .build()
    };
    let err = s.create(&into("nlp", 1), t0(), &mut c).unwrap_err();
    assert!(err.contains("`nlp` does not exist"), "{err}");
    assert!(c.is_empty() && s.jobs.is_empty());

    s.sync_queue(
        &ClusterQueue {
            name: "nlp".into(),
            open: true,
        },
        &mut c,
    );
    assert!(c.queues.contains("nlp"));
    assert_eq!(s.create(&into("nlp", 1), t0(), &mut c), Ok(Created::New));
    s.sync_queue(
        &ClusterQueue {
            name: "nlp".into(),
            open: false,
        },
        &mut c,
    );
    let err = s.create(&into("nlp", 2), t0(), &mut c).unwrap_err();
    assert!(err.contains("`nlp` is closed"), "{err}");
    assert_eq!(
        s.create(&into("nlp", 1), t0(), &mut c),
        Ok(Created::AlreadyExists),
        "a retried create of a job that is there succeeds"
    );
    let mut c = Changes::default();
    s.remove_queue("nlp", &mut c);
    assert!(c.queues.contains("nlp"));
    assert!(!s.cluster_queues().iter().any(|q| q.name == "nlp"));
    assert!(s.jobs.contains_key(&1), "jobs already in a removed queue run on");
}

#[test]
fn a_status_says_when_the_job_started() {
    let mut s = default_cluster();
    let changes = run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Jupyter).task("main", 1, "1", None).build()],
        t0(),
    );
    let started: Vec<_> = changes
        .events
        .iter()
        .map(|e| match e {
            JobEvent::Status(st) => st.started_at,
            JobEvent::Gone { .. } => panic!("not gone"),
        })
        .collect();
    assert_eq!(started, vec![None, Some(t0())]);
    assert_eq!(s.statuses(t0() + Duration::hours(1))[0].started_at, Some(t0()));
}

#[test]
fn a_step_skips_the_placement_pass_until_something_could_let_a_pending_job_fit() {
    let mut s = default_cluster();
    // Job 1 holds all 8 GPUs of gpu-a100-0 for 10 s, job 2 (deleted later) those of
    // gpu-a100-1; job 3 wants 8 and waits.
    run(
        &mut s,
        &[
            JobBuilder::new(1, JobKind::Custom)
                .task("main", 1, "1", Some(("nvidia.com/a100", "8")))
                .command(&["sleep", "10"])
                .build(),
            JobBuilder::new(2, JobKind::Jupyter)
                .task("main", 1, "1", Some(("nvidia.com/a100", "8")))
                .build(),
            JobBuilder::new(3, JobKind::Jupyter)
                .task("main", 1, "1", Some(("nvidia.com/a100", "8")))
                .build(),
        ],
        t0(),
    );
    assert_eq!(s.jobs[&3].phase, SimPhase::Pending);
    assert!(s.placement_settled, "nothing more can fit until something changes");

    // Job 1 completes: in the same step its GPUs go to job 3.
    let mut c = Changes::default();
    s.step(t0() + Duration::seconds(10), TIMING, &mut c);
    assert_eq!(s.jobs[&3].phase, SimPhase::Running);
    assert_eq!(s.jobs[&3].pods[0].node, "gpu-a100-0");

    // A terminating job that is gone frees its node for the next one in the same step.
    run(
        &mut s,
        &[JobBuilder::new(4, JobKind::Jupyter)
            .task("main", 1, "1", Some(("nvidia.com/a100", "8")))
            .build()],
        t0() + Duration::seconds(10),
    );
    assert_eq!(s.jobs[&4].phase, SimPhase::Pending);
    let mut c = Changes::default();
    s.delete(2, 0, t0() + Duration::seconds(11), TIMING, &mut c);
    s.step(t0() + Duration::seconds(11), TIMING, &mut c);
    assert_eq!(s.jobs[&4].phase, SimPhase::Running);

    // A cordon lifted lets the pass run again.
    let mut c = Changes::default();
    s.set_schedulable("gpu-v100-0", false, &mut c);
    s.set_schedulable("gpu-v100-1", false, &mut c);
    run(
        &mut s,
        &[JobBuilder::new(5, JobKind::Jupyter)
            .task("main", 1, "1", Some(("nvidia.com/v100", "1")))
            .build()],
        t0() + Duration::seconds(12),
    );
    assert_eq!(s.jobs[&5].phase, SimPhase::Pending);
    s.set_schedulable("gpu-v100-1", true, &mut c);
    s.step(t0() + Duration::seconds(12), TIMING, &mut c);
    assert_eq!(s.jobs[&5].phase, SimPhase::Running);
}

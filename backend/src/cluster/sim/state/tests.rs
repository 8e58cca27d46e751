//! The simulation's rules, one test each, on the default cluster with a hand-moved clock.

use super::*;
use crate::cluster::TaskSpec;
use crate::prequeue::{TaintEffect, TolerationOperator};
use anteroom_shared::scheduling::{PreemptionPolicy, Quantity, ScheduleType};

const TIMING: Timing = Timing {
    default_runtime_seconds: 600,
    termination_grace_seconds: 5,
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
    pub(crate) fn build(self) -> JobSpec {
        self.0
    }
}

fn default_cluster() -> SimState {
    let mut s = SimState::default();
    for n in crate::cluster::sim::nodes::load(None).unwrap() {
        s.nodes.insert(n.name.clone(), n);
    }
    s
}

fn run(state: &mut SimState, specs: &[JobSpec], now: DateTime<Utc>) -> Changes {
    let mut changes = Changes::default();
    for spec in specs {
        state.create(spec, now, &mut changes);
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
    assert_eq!(s.jobs[&1].phase, SimPhase::Completed);
    assert!(s.jobs[&1].pods.is_empty(), "a completed job holds no capacity");
    s.step(t0() + Duration::seconds(599), TIMING, &mut c);
    assert_eq!(s.jobs[&2].phase, SimPhase::Running);
    s.step(t0() + Duration::seconds(600), TIMING, &mut c);
    assert_eq!(s.jobs[&2].phase, SimPhase::Completed);
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
    assert_eq!(s.create(&spec, t0(), &mut c), Created::New);
    assert_eq!(
        s.create(&spec, t0() + Duration::seconds(1), &mut c),
        Created::AlreadyExists
    );
    assert_eq!(s.jobs.len(), 1);
    assert_eq!(s.jobs[&1].created_at, t0());
}

#[test]
fn pending_jobs_are_first_in_first_out_per_queue() {
    let mut s = default_cluster();
    // Queue `team`: a head that cannot fit now, then a small job that could.
    let head = JobBuilder::new(1, JobKind::Custom)
        .queue("team")
        .task("main", 1, "1", Some(("nvidia.com/a100", "9")))
        .build();
    let behind = JobBuilder::new(2, JobKind::Custom)
        .queue("team")
        .task("main", 1, "1", Some(("nvidia.com/a100", "1")))
        .build();
    // Another queue is not held up by `team`'s head.
    let other = JobBuilder::new(3, JobKind::Custom)
        .queue("other")
        .task("main", 1, "1", Some(("nvidia.com/a100", "1")))
        .build();
    let mut c = Changes::default();
    s.create(&head, t0(), &mut c);
    s.create(&behind, t0() + Duration::seconds(1), &mut c);
    s.create(&other, t0() + Duration::seconds(2), &mut c);
    s.step(t0() + Duration::seconds(2), TIMING, &mut c);
    assert_eq!(s.jobs[&1].phase, SimPhase::Pending);
    assert_eq!(s.jobs[&2].phase, SimPhase::Pending, "waits behind its queue's head");
    assert_eq!(s.jobs[&3].phase, SimPhase::Running);
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

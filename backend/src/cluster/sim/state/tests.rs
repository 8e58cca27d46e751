//! The simulation's rules, one test each, on the default cluster with a hand-moved clock.

use super::*;
use crate::cluster::TaskSpec;
use crate::cluster::sim::runtime::MAX_RUNTIME_SECONDS;
use crate::prequeue::{Taint, TaintEffect, Toleration, TolerationOperator};
use anteroom_shared::scheduling::JobKind;
use anteroom_shared::scheduling::JobPhase;
use anteroom_shared::scheduling::{PreemptionPolicy, Quantity, ResourceList, ScheduleType};
use chrono::Duration;

mod deletion;

mod placement;

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
            cluster_uid: format!("uid-{id}"),
            kind,
            queue: "default".into(),
            owner: "alice".into(),
            schedule_type: ScheduleType::Normal,
            waiting_tolerance_seconds: Some(300),
            preemption_policy: PreemptionPolicy::PreemptLowerPriority,
            tasks: Vec::new(),
            preemptable: false,
            termination_grace_seconds: None,
            active_deadline_seconds: None,
            preempted_before: false,
            run_as_user: None,
        })
    }
    /// Another uid than the builder's `uid-<id>`: another job with the same id.
    pub(crate) fn uid(mut self, uid: &str) -> Self {
        self.0.cluster_uid = uid.into();
        self
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
            env: Vec::new(),
            shm: None,
            volumes: Vec::new(),
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
    /// The spec; a task asking for an `nvidia.com/*` accelerator tolerates the default GPU
    /// nodes' `nvidia.com/gpu` taint, as the seeded toleration rule gives it.
    pub(crate) fn build(mut self) -> JobSpec {
        let pool = Toleration {
            key: Some("nvidia.com/gpu".into()),
            operator: TolerationOperator::Exists,
            value: None,
            effect: Some(TaintEffect::NoSchedule),
        };
        for t in &mut self.0.tasks {
            if t.resources.iter().any(|(name, _)| name.starts_with("nvidia.com/")) && !t.tolerations.contains(&pool) {
                t.tolerations.push(pool.clone());
            }
        }
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
        s.queues.insert(q.into(), ClusterQueue::new(q, true));
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
fn a_create_under_an_existing_id_with_another_uid_is_refused_while_the_job_is_there() {
    let mut s = default_cluster();
    let mine = JobBuilder::new(1, JobKind::Custom)
        .task("main", 1, "1", None)
        .command(&["sleep", "10"])
        .build();
    // Another job 1: a restored database numbered a new job like one it forgot.
    let other = JobBuilder::new(1, JobKind::Custom)
        .uid("uid-of-another-job")
        .task("main", 1, "1", None)
        .build();
    let mut c = Changes::default();
    assert_eq!(s.create(&mine, t0(), &mut c), Ok(Created::New));
    let taken = Created::NameTaken { found: "uid-1".into() };

    let mut c = Changes::default();
    assert_eq!(s.create(&other, t0(), &mut c), Ok(taken.clone()));
    assert!(c.is_empty() && c.events.is_empty(), "nothing changed: {c:?}");
    assert_eq!(s.jobs[&1].spec.cluster_uid, "uid-1", "the job there is untouched");
    assert_eq!(s.statuses(t0())[0].cluster_uid.as_deref(), Some("uid-1"));

    // Running, then completed (until it is purged): still its id, still refused.
    s.step(t0(), TIMING, &mut c);
    assert_eq!(s.create(&other, t0(), &mut c), Ok(taken.clone()));
    let done = t0() + Duration::seconds(10);
    s.step(done, TIMING, &mut c);
    assert!(s.finished.contains_key(&1));
    assert_eq!(s.create(&other, done, &mut c), Ok(taken));
    assert_eq!(s.statuses(done)[0].cluster_uid.as_deref(), Some("uid-1"));
    assert_eq!(
        s.create(&mine, done, &mut c),
        Ok(Created::AlreadyExists),
        "its own retry is fine"
    );

    s.step(done + Duration::seconds(3600), TIMING, &mut c);
    assert_eq!(
        s.create(&other, done + Duration::seconds(3600), &mut c),
        Ok(Created::New),
        "once purged, the name is free"
    );
}

#[test]
fn a_job_stored_before_uids_has_none_and_counts_as_the_job_that_creates_it_again() {
    let mut s = default_cluster();
    let spec = JobBuilder::new(1, JobKind::Custom).task("main", 1, "1", None).build();
    // A spec as the store kept it before uids existed: no `clusterUid`.
    let mut stored = serde_json::to_value(&spec).unwrap();
    stored
        .as_object_mut()
        .unwrap()
        .remove("clusterUid")
        .expect("the field is serialised");
    let legacy: JobSpec = serde_json::from_value(stored).unwrap();
    assert_eq!(legacy.cluster_uid, "");
    let mut c = Changes::default();
    assert_eq!(s.create(&legacy, t0(), &mut c), Ok(Created::New));
    assert_eq!(s.statuses(t0())[0].cluster_uid, None);
    let again = JobBuilder::new(1, JobKind::Custom)
        .uid("legacy-1")
        .task("main", 1, "1", None)
        .build();
    assert_eq!(s.create(&again, t0(), &mut c), Ok(Created::AlreadyExists));
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
    s.delete(2, "uid-2", 30, last, TIMING, &mut c);
    s.step(last, TIMING, &mut c);
    assert!(!s.jobs.contains_key(&2), "a grace past the calendar ends at once");
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
            finished_at: done,
            cluster_uid: Some("uid-1".into()),
            failure: None,
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

    s.sync_queue(&ClusterQueue::new("nlp", true), &mut c);
    assert!(c.queues.contains("nlp"));
    assert_eq!(s.create(&into("nlp", 1), t0(), &mut c), Ok(Created::New));
    s.sync_queue(&ClusterQueue::new("nlp", false), &mut c);
    let err = s.create(&into("nlp", 2), t0(), &mut c).unwrap_err();
    assert!(err.contains("`nlp` is closed"), "{err}");
    assert_eq!(
        s.create(&into("nlp", 1), t0(), &mut c),
        Ok(Created::AlreadyExists),
        "a retried create of a job that is there succeeds"
    );
    // What a queue's sync says besides `open` is kept too, and a change of it is a change.
    let mut c = Changes::default();
    let shaped = ClusterQueue {
        parent: Some("lab".into()),
        capability: Some(ResourceList::parse_map([("nvidia.com/a100", "4")]).expect("quantities")),
        weight: 3,
        ..ClusterQueue::new("nlp", false)
    };
    s.sync_queue(&shaped, &mut c);
    assert!(c.queues.contains("nlp"));
    assert!(s.cluster_queues().contains(&shaped));
    let mut c = Changes::default();
    s.sync_queue(&shaped, &mut c);
    assert!(c.is_empty(), "the same again changes nothing");
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
fn a_queue_trees_capabilities_hold_jobs_pending_as_volcano_would() {
    // lab (4 CPUs) → team: two 3-CPU jobs in team; the second waits for the first although
    // the nodes have room, then runs once it ends.
    let mut s = default_cluster();
    let mut c = Changes::default();
    s.sync_queue(
        &ClusterQueue {
            capability: Some(ResourceList::parse_map([("cpu", "4")]).expect("quantities")),
            ..ClusterQueue::new("lab", true)
        },
        &mut c,
    );
    s.sync_queue(
        &ClusterQueue {
            parent: Some("lab".into()),
            ..ClusterQueue::new("team", true)
        },
        &mut c,
    );
    let job = |id: JobId| {
        JobBuilder::new(id, JobKind::Custom)
            .queue("team")
            .task("main", 1, "3", None)
            .command(&["sleep", "60"])
            .build()
    };
    run(&mut s, &[job(1), job(2)], t0());
    let phase = |s: &SimState, id: JobId| s.jobs.get(&id).map(|j| j.phase);
    assert_eq!(phase(&s, 1), Some(SimPhase::Running));
    assert_eq!(
        phase(&s, 2),
        Some(SimPhase::Pending),
        "lab's capability of 4 CPUs holds it"
    );
    let mut c = Changes::default();
    s.step(t0() + Duration::seconds(61), TIMING, &mut c);
    assert_eq!(
        phase(&s, 2),
        Some(SimPhase::Running),
        "room under the cap once job 1 ended"
    );
    // Without a capability the same two run together.
    let mut s = default_cluster();
    let job = |id: JobId| {
        JobBuilder::new(id, JobKind::Custom)
            .queue("team")
            .task("main", 1, "3", None)
            .build()
    };
    run(&mut s, &[job(1), job(2)], t0());
    assert_eq!(phase(&s, 2), Some(SimPhase::Running));
}

#[test]
fn an_elastic_job_is_not_held_by_a_capability_as_it_runs_beside_the_capped_tree() {
    // lab caps 4 CPUs and a normal 3-CPU job fills it; an Elastic 3-CPU job of the same queue
    // runs (in Volcano it would be in `anteroom-elastic`), and counts against no capability.
    let mut s = default_cluster();
    let mut c = Changes::default();
    s.sync_queue(
        &ClusterQueue {
            capability: Some(ResourceList::parse_map([("cpu", "4")]).expect("quantities")),
            ..ClusterQueue::new("lab", true)
        },
        &mut c,
    );
    let job = |id: JobId, schedule_type: ScheduleType| {
        let mut spec = JobBuilder::new(id, JobKind::Custom)
            .queue("lab")
            .task("main", 1, "3", None)
            .command(&["sleep", "60"])
            .build();
        spec.schedule_type = schedule_type;
        spec
    };
    run(
        &mut s,
        &[
            job(1, ScheduleType::Normal),
            job(2, ScheduleType::Backfill),
            job(3, ScheduleType::Normal),
        ],
        t0(),
    );
    let phase = |s: &SimState, id: JobId| s.jobs.get(&id).map(|j| j.phase);
    assert_eq!(phase(&s, 1), Some(SimPhase::Running));
    assert_eq!(
        phase(&s, 2),
        Some(SimPhase::Running),
        "no capability holds an Elastic job"
    );
    assert_eq!(
        phase(&s, 3),
        Some(SimPhase::Pending),
        "the normal one still meets the cap"
    );
}

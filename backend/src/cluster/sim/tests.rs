//! The simulated cluster with its store: write-through, restart resumes, events, and the ways
//! it used to drift from its database or freeze.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use anteroom_shared::scheduling::{JobKind, JobPhase};
use chrono::{DateTime, Duration, Utc};
use futures::FutureExt;
use sea_orm::{ConnectionTrait, DatabaseConnection};
use tokio::sync::broadcast;

use super::runtime::MAX_RUNTIME_SECONDS;
use super::state::Timing;
use super::state::tests::JobBuilder;
use super::{SimSettings, SimulatedCluster};
use crate::cluster::clock::{Clock, ManualClock};
use crate::cluster::{Cluster, ClusterError, ClusterQueue, JobEvent, JobStatus};

mod consistency;
mod restarts;

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

/// The simulated cluster over a migrated database in `dir` (reopening the same `dir` is a
/// restart).
async fn open(dir: &tempfile::TempDir, settings: SimSettings, clock: Arc<dyn Clock>) -> Arc<SimulatedCluster> {
    let db = crate::store::test_database(dir.path()).await;
    SimulatedCluster::open(db, settings, clock).await.unwrap()
}

fn settings(nodes: Option<std::path::PathBuf>) -> SimSettings {
    SimSettings {
        nodes_file: nodes,
        timing: Timing {
            default_runtime_seconds: 600,
            termination_grace_seconds: 5,
            finished_retention_seconds: 3600,
        },
        notebook_upstream: None,
    }
}

#[tokio::test]
async fn events_are_broadcast_after_each_change() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    let sim = open(&dir, settings(None), clock.clone()).await;
    let mut rx = sim.subscribe();
    sim.create_job(
        &JobBuilder::new(5, JobKind::Custom)
            .task("main", 1, "1", None)
            .command(&["sleep", "1"])
            .build(),
    )
    .await
    .unwrap();
    sim.step().await.unwrap();
    clock.advance(Duration::seconds(1));
    sim.step().await.unwrap();
    sim.delete_job(5, "uid-5", 30).await.unwrap();
    let mut seen = Vec::new();
    while let Ok(e) = rx.try_recv() {
        seen.push(match e {
            JobEvent::Status(s) => format!("{:?}", s.phase),
            JobEvent::Gone { job_id, .. } => format!("gone {job_id}"),
        });
    }
    assert_eq!(seen, vec!["Pending", "Running", "Completed", "gone 5"]);
}

#[tokio::test]
async fn a_node_file_replaces_the_default_cluster_and_unknown_nodes_cannot_be_cordoned() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nodes.toml");
    std::fs::write(
        &file,
        "[[node]]\nname = \"tiny\"\ncpu = \"2\"\nmemory = \"4Gi\"\naccelerators = { \"example.com/tpu\" = \"1\" }\n",
    )
    .unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    let sim = open(&dir, settings(Some(file)), clock).await;
    let nodes = sim.nodes().await.unwrap();
    assert_eq!(nodes.len(), 1);
    let names = sim.resource_names().await.unwrap();
    let rendered: Vec<_> = names.iter().map(|r| (r.name.as_str(), r.accelerator)).collect();
    assert_eq!(
        rendered,
        vec![("cpu", false), ("example.com/tpu", true), ("memory", false)]
    );
    assert!(matches!(
        sim.set_node_schedulable("gpu-a100-0", false).await,
        Err(crate::cluster::ClusterError::NodeNotFound(_))
    ));
}

#[tokio::test]
async fn the_background_ticker_starts_a_created_job_without_being_asked() {
    let dir = tempfile::tempdir().unwrap();
    let sim = open(&dir, settings(None), Arc::new(crate::cluster::clock::SystemClock)).await;
    sim.spawn_ticker();
    let mut rx = sim.subscribe();
    sim.create_job(&JobBuilder::new(9, JobKind::Jupyter).task("main", 1, "1", None).build())
        .await
        .unwrap();
    let running = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        loop {
            if let Ok(JobEvent::Status(s)) = rx.recv().await
                && s.phase == JobPhase::Running
            {
                return s;
            }
        }
    })
    .await
    .expect("the ticker places the job");
    assert_eq!(running.job_id, 9);
}

/// A guard for waiting on events the ticker sends: generous, and only ever a failure bound,
/// never a measurement.
const EVENT_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// The next status event of `job_id` in `phase`.
async fn wait_for(rx: &mut broadcast::Receiver<JobEvent>, job_id: i64, phase: JobPhase) -> JobStatus {
    tokio::time::timeout(EVENT_WAIT, async {
        loop {
            if let Ok(JobEvent::Status(s)) = rx.recv().await
                && s.job_id == job_id
                && s.phase == phase
            {
                return s;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("job {job_id} never became {phase:?}"))
}

/// What a fresh open of the same database reads, to compare memory with.
async fn exec(db: &DatabaseConnection, sql: &str) {
    db.execute_unprepared(sql).await.expect(sql);
}

async fn stored_statuses(dir: &tempfile::TempDir, clock: Arc<dyn Clock>) -> Vec<JobStatus> {
    open(dir, settings(None), clock).await.job_statuses().await.unwrap()
}

#[tokio::test]
async fn a_sleep_of_1e13_seconds_neither_kills_the_ticker_nor_runs_past_ten_years() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    let sim = open(&dir, settings(None), clock.clone()).await;
    sim.spawn_ticker();
    let mut rx = sim.subscribe();
    let forever = JobBuilder::new(1, JobKind::Custom)
        .task("main", 1, "1", None)
        .command(&["sleep", "1e13"])
        .build();
    sim.create_job(&forever).await.unwrap();
    let running = wait_for(&mut rx, 1, JobPhase::Running).await;
    assert_eq!(running.started_at, Some(t0()));
    // The ticker is alive: a second job starts too.
    sim.create_job(&JobBuilder::new(2, JobKind::Jupyter).task("main", 1, "1", None).build())
        .await
        .unwrap();
    wait_for(&mut rx, 2, JobPhase::Running).await;

    clock.advance(Duration::seconds(MAX_RUNTIME_SECONDS as i64 - 1));
    sim.step().await.unwrap();
    assert_eq!(
        sim.job_statuses().await.unwrap()[0].phase,
        JobPhase::Running,
        "a second before the cap"
    );
    clock.advance(Duration::seconds(1));
    sim.wake.notify_one();
    wait_for(&mut rx, 1, JobPhase::Completed).await;
}

/// A clock that panics on its first `panics` reads, like a bug in a step would.
#[derive(Debug)]
struct PanickingClock {
    clock: ManualClock,
    panics: AtomicU32,
    panicked: tokio::sync::Notify,
}

impl Clock for PanickingClock {
    fn now(&self) -> DateTime<Utc> {
        if self
            .panics
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            self.panicked.notify_one();
            panic!("injected: a step panics");
        }
        self.clock.now()
    }
}

#[tokio::test]
async fn a_step_that_panics_is_logged_and_the_ticker_carries_on() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(PanickingClock {
        clock: ManualClock::new(t0()),
        panics: AtomicU32::new(1),
        panicked: tokio::sync::Notify::new(),
    });
    let sim = open(&dir, settings(None), clock.clone()).await;
    let mut rx = sim.subscribe();
    sim.spawn_ticker();
    tokio::time::timeout(EVENT_WAIT, clock.panicked.notified())
        .await
        .expect("the ticker's first step read the clock");
    sim.create_job(&JobBuilder::new(1, JobKind::Jupyter).task("main", 1, "1", None).build())
        .await
        .unwrap();
    wait_for(&mut rx, 1, JobPhase::Running).await;
}

#[tokio::test]
async fn a_create_into_a_queue_the_cluster_does_not_know_or_that_is_closed_is_rejected_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    let nlp = |id| {
        JobBuilder::new(id, JobKind::Custom)
            .queue("nlp")
            .task("main", 1, "1", None)
            .build()
    };
    {
        let sim = open(&dir, settings(None), clock.clone()).await;
        assert_eq!(
            sim.queues().await.unwrap(),
            vec![ClusterQueue::new("default", true)],
            "a fresh cluster has `default`, open"
        );
        let err = sim.create_job(&nlp(1)).await.unwrap_err();
        assert!(
            matches!(&err, ClusterError::Rejected(m) if m.contains("`nlp`")),
            "{err}"
        );
        assert!(!err.is_transient());
        sim.sync_queue(&ClusterQueue::new("nlp", true)).await.unwrap();
        sim.create_job(&nlp(1)).await.unwrap();
        sim.sync_queue(&ClusterQueue::new("nlp", false)).await.unwrap();
    }
    let sim = open(&dir, settings(None), clock.clone()).await;
    assert!(
        sim.queues().await.unwrap().contains(&ClusterQueue::new("nlp", false)),
        "queues are kept across a restart"
    );
    let err = sim.create_job(&nlp(2)).await.unwrap_err();
    assert!(
        matches!(&err, ClusterError::Rejected(m) if m.contains("`nlp` is closed")),
        "{err}"
    );
    sim.create_job(&nlp(1))
        .await
        .expect("a retried create of a job that is there succeeds");
    sim.remove_queue("nlp").await.unwrap();
    assert_eq!(sim.queues().await.unwrap().len(), 1);
    assert_eq!(stored_statuses(&dir, clock.clone()).await.len(), 1);
}

/// A measurement, not a check (run with `--run-ignored only`): what copying the state costs per
/// change, and a create through the store, at a given number of live jobs.
#[tokio::test]
#[ignore = "a measurement; prints timings"]
async fn measure_the_cost_of_a_change_on_a_copy_as_live_jobs_grow() {
    for n in [1_000_i64, 10_000] {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(t0()));
        let sim = open(&dir, settings(None), clock.clone()).await;
        {
            // Fill memory directly: n pending jobs that no node can take (an h100 each).
            let mut inner = sim.inner.lock().await;
            let mut changes = super::state::Changes::default();
            for id in 1..=n {
                let spec = JobBuilder::new(id, JobKind::Pytorch)
                    .task("master", 1, "1", Some(("nvidia.com/h100", "1")))
                    .task("worker", 3, "1", Some(("nvidia.com/h100", "1")))
                    .build();
                inner.state.create(&spec, t0(), &mut changes).unwrap();
            }
        }
        let state = sim.inner.lock().await.state.clone();
        let started = std::time::Instant::now();
        for _ in 0..100 {
            std::hint::black_box(state.clone());
        }
        let clone_us = started.elapsed().as_micros() / 100;
        let started = std::time::Instant::now();
        for id in 0..10 {
            sim.create_job(
                &JobBuilder::new(n + 1 + id, JobKind::Jupyter)
                    .task("main", 1, "1", None)
                    .build(),
            )
            .await
            .unwrap();
        }
        let create_us = started.elapsed().as_micros() / 10;
        let started = std::time::Instant::now();
        sim.step().await.unwrap();
        let step_us = started.elapsed().as_micros();
        let started = std::time::Instant::now();
        sim.step().await.unwrap();
        let settled_us = started.elapsed().as_micros();
        println!(
            "{n} live jobs: clone {clone_us} µs, create_job {create_us} µs, step with a placement pass \
             {step_us} µs, step with nothing new {settled_us} µs"
        );
    }
}

#[tokio::test]
async fn an_idle_step_with_a_job_that_cannot_fit_does_not_try_to_place_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    let sim = open(&dir, settings(None), clock.clone()).await;
    sim.create_job(
        &JobBuilder::new(1, JobKind::Custom)
            .task("main", 1, "1", Some(("nvidia.com/h100", "1")))
            .build(),
    )
    .await
    .unwrap();
    // The pass finds no room and writes nothing; what it learnt must still be kept.
    sim.step().await.unwrap();
    assert!(sim.inner.lock().await.state.placement_settled);
    // Something that could make room lets the next step try again.
    sim.set_node_schedulable("cpu-0", false).await.unwrap();
    assert!(!sim.inner.lock().await.state.placement_settled);
}

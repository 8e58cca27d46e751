//! The simulated cluster with its store: write-through, restart resumes, events.

use std::sync::Arc;

use anteroom_shared::scheduling::{JobKind, JobPhase};
use chrono::{DateTime, Duration, Utc};

use super::state::Timing;
use super::state::tests::JobBuilder;
use super::{SimSettings, SimulatedCluster};
use crate::cluster::clock::{Clock, ManualClock};
use crate::cluster::{Cluster, JobEvent};

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
    }
}

#[tokio::test]
async fn a_restart_resumes_the_simulation_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    {
        let sim = open(&dir, settings(None), clock.clone()).await;
        let spec = JobBuilder::new(1, JobKind::Custom)
            .task("main", 2, "8", Some(("nvidia.com/a100", "8")))
            .command(&["sleep", "60"])
            .build();
        sim.create_job(&spec).await.unwrap();
        sim.create_job(&JobBuilder::new(2, JobKind::Jupyter).task("main", 1, "1", None).build())
            .await
            .unwrap();
        sim.step().await.unwrap();
        sim.set_node_schedulable("cpu-0", false).await.unwrap();
        sim.delete_job(2, 30).await.unwrap();
        // Dropped without any shutdown: like kill -9, only committed state survives.
    }
    clock.advance(Duration::seconds(2));
    let sim = open(&dir, settings(None), clock.clone()).await;
    let statuses = sim.job_statuses().await.unwrap();
    assert_eq!(statuses.len(), 2);
    let big = statuses.iter().find(|s| s.job_id == 1).unwrap();
    assert_eq!(big.phase, JobPhase::Running);
    assert_eq!(big.nodes, vec!["gpu-a100-0", "gpu-a100-1"]);
    assert_eq!(
        statuses.iter().find(|s| s.job_id == 2).unwrap().phase,
        JobPhase::Terminating
    );
    let nodes = sim.nodes().await.unwrap();
    assert!(
        !nodes.iter().find(|n| n.name == "cpu-0").unwrap().schedulable,
        "a cordon survives a restart"
    );
    assert!(
        nodes
            .iter()
            .filter(|n| n.name.starts_with("gpu-a100"))
            .all(|n| n.free.get("nvidia.com/a100").is_zero())
    );

    clock.advance(Duration::seconds(3));
    sim.step().await.unwrap();
    assert_eq!(
        sim.job_statuses().await.unwrap().len(),
        1,
        "the terminating job is gone after its grace"
    );
    clock.advance(Duration::seconds(60));
    sim.step().await.unwrap();
    assert_eq!(sim.job_statuses().await.unwrap()[0].phase, JobPhase::Completed);
    assert!(sim.nodes().await.unwrap().iter().all(|n| n.free == n.allocatable));
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
    sim.delete_job(5, 30).await.unwrap();
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

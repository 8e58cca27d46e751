//! The simulated cluster across restarts: what it had — jobs, their start times, finished
//! jobs until the purge, queues, uids — is there again after it reopens its store, on SQLite
//! and on PostgreSQL, and a node file that changed meanwhile is read anew.

use super::*;

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
        sim.delete_job(2, "uid-2", 30).await.unwrap();
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
async fn started_at_and_finished_jobs_survive_a_restart_until_the_retention_purges_them() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    {
        let sim = open(&dir, settings(None), clock.clone()).await;
        for (id, secs) in [(1, "60"), (2, "7200")] {
            sim.create_job(
                &JobBuilder::new(id, JobKind::Custom)
                    .task("main", 1, "1", None)
                    .command(&["sleep", secs])
                    .build(),
            )
            .await
            .unwrap();
        }
        sim.step().await.unwrap();
        clock.advance(Duration::seconds(60));
        sim.step().await.unwrap();
        assert!(sim.inner.lock().await.state.jobs.len() == 1, "job 1 left memory");
    }
    clock.advance(Duration::seconds(10));
    let sim = open(&dir, settings(None), clock.clone()).await;
    let statuses = sim.job_statuses().await.unwrap();
    assert_eq!(statuses.len(), 2);
    assert_eq!(statuses[0].phase, JobPhase::Completed);
    assert_eq!(statuses[0].started_at, Some(t0()), "kept across the restart");
    assert_eq!(statuses[1].phase, JobPhase::Running);
    assert_eq!(statuses[1].started_at, Some(t0()), "kept across the restart");
    assert!(
        sim.inner.lock().await.state.jobs.len() == 1,
        "a finished job loads as a summary"
    );

    // Retention counts from the completion (t0 + 60 s).
    let mut rx = sim.subscribe();
    clock.set(t0() + Duration::seconds(60 + 3600));
    sim.step().await.unwrap();
    assert!(matches!(rx.try_recv(), Ok(JobEvent::Gone { job_id: 1, .. })));
    let statuses = stored_statuses(&dir, clock.clone()).await;
    assert_eq!(statuses.len(), 1, "its row is gone too");
    assert_eq!(statuses[0].job_id, 2);
}

#[tokio::test]
async fn a_create_under_the_id_of_a_job_with_another_uid_is_refused_also_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    let job = |id, uid: &str| {
        JobBuilder::new(id, JobKind::Custom)
            .uid(uid)
            .task("main", 1, "1", None)
            .command(&["sleep", "60"])
            .build()
    };
    {
        let sim = open(&dir, settings(None), clock.clone()).await;
        sim.create_job(&job(1, "uid-a")).await.unwrap();
        sim.create_job(&job(2, "uid-b")).await.unwrap();
        sim.step().await.unwrap();
        clock.advance(Duration::seconds(30));
        sim.create_job(&job(3, "uid-c")).await.unwrap();
        sim.step().await.unwrap();
        clock.advance(Duration::seconds(30));
        sim.step().await.unwrap();
        let err = sim.create_job(&job(1, "uid-z")).await.unwrap_err();
        assert!(
            matches!(err, ClusterError::NameTakenByAnotherJob { ref found, ref expected, .. } if found == "uid-a" && expected == "uid-z"),
            "{err:?}"
        );
    }
    // Job 1 and 2 completed (kept as summaries), job 3 runs: all keep their uids.
    let sim = open(&dir, settings(None), clock.clone()).await;
    for (id, uid) in [(1, "uid-a"), (2, "uid-b"), (3, "uid-c")] {
        let err = sim.create_job(&job(id, "uid-z")).await.unwrap_err();
        assert!(
            matches!(err, ClusterError::NameTakenByAnotherJob { ref object, ref found, .. } if found == uid && *object == format!("ar-{id}")),
            "{err:?}"
        );
        assert!(!err.is_transient());
        assert_eq!(err.kind(), "name_taken_by_another_job");
        sim.create_job(&job(id, uid)).await.expect("its own retried create");
    }
    let uids: Vec<Option<String>> = sim
        .job_statuses()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.cluster_uid)
        .collect();
    assert_eq!(uids, [Some("uid-a".into()), Some("uid-b".into()), Some("uid-c".into())]);
}

#[tokio::test]
async fn a_node_shrunk_by_the_node_file_at_a_restart_has_no_negative_free_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nodes.toml");
    let node = |cpu: &str| format!("[[node]]\nname = \"n\"\ncpu = \"{cpu}\"\nmemory = \"64Gi\"\n");
    std::fs::write(&file, node("8")).unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    {
        let sim = open(&dir, settings(Some(file.clone())), clock.clone()).await;
        sim.create_job(&JobBuilder::new(1, JobKind::Jupyter).task("main", 1, "8", None).build())
            .await
            .unwrap();
        sim.step().await.unwrap();
    }
    std::fs::write(&file, node("4")).unwrap();
    let sim = open(&dir, settings(Some(file)), clock.clone()).await;
    let n = &sim.nodes().await.unwrap()[0];
    assert_eq!(
        n.free.get("cpu").milli(),
        0,
        "8 CPUs in use on a node of 4: none free, not -4"
    );
    assert!(n.free.iter().all(|(_, q)| q.milli() >= 0));
    sim.create_job(&JobBuilder::new(2, JobKind::Jupyter).task("main", 1, "1", None).build())
        .await
        .unwrap();
    sim.step().await.unwrap();
    assert_eq!(sim.job_statuses().await.unwrap()[1].phase, JobPhase::Pending);
}

/// The store on PostgreSQL: the migration's seed, the queue upserts, the completed-row update
/// and the purge, across a restart. Ignored unless asked for (a database server is needed),
/// so it shows as skipped rather than passing without one.
#[tokio::test]
#[ignore = "needs PostgreSQL: set ANTEROOM_TEST_POSTGRES_URL and run with --run-ignored"]
async fn on_postgresql_queues_started_at_and_finished_jobs_survive_a_restart_until_the_purge() {
    let server = std::env::var("ANTEROOM_TEST_POSTGRES_URL").expect("ANTEROOM_TEST_POSTGRES_URL is set");
    let name = format!("anteroom_sim_{}", std::process::id());
    let admin = crate::store::connect(&format!("{server}/postgres")).await.unwrap();
    exec(&admin, &format!("DROP DATABASE IF EXISTS {name}")).await;
    exec(&admin, &format!("CREATE DATABASE {name}")).await;
    let url = format!("{server}/{name}");
    let connect = || async {
        let db = crate::store::connect(&url).await.unwrap();
        crate::store::migrate(&db).await.unwrap();
        db
    };
    let clock = Arc::new(ManualClock::new(t0()));
    {
        let sim = SimulatedCluster::open(connect().await, settings(None), clock.clone())
            .await
            .unwrap();
        assert_eq!(sim.queues().await.unwrap().len(), 1, "`default` is seeded");
        sim.sync_queue(&ClusterQueue::new("nlp", true)).await.unwrap();
        sim.sync_queue(&ClusterQueue::new("nlp", false)).await.unwrap();
        for id in [1, 2] {
            sim.create_job(
                &JobBuilder::new(id, JobKind::Custom)
                    .task("main", 1, "1", None)
                    .command(&["sleep", if id == 1 { "60" } else { "1e13" }])
                    .build(),
            )
            .await
            .unwrap();
        }
        sim.step().await.unwrap();
        clock.advance(Duration::seconds(60));
        sim.step().await.unwrap();
    }
    let sim = SimulatedCluster::open(connect().await, settings(None), clock.clone())
        .await
        .unwrap();
    assert!(sim.queues().await.unwrap().contains(&ClusterQueue::new("nlp", false)));
    let statuses = sim.job_statuses().await.unwrap();
    let phases: Vec<_> = statuses.iter().map(|s| (s.job_id, s.phase, s.started_at)).collect();
    assert_eq!(
        phases,
        vec![(1, JobPhase::Completed, Some(t0())), (2, JobPhase::Running, Some(t0()))]
    );
    clock.advance(Duration::seconds(3600));
    sim.step().await.unwrap();
    let statuses = SimulatedCluster::open(connect().await, settings(None), clock.clone())
        .await
        .unwrap()
        .job_statuses()
        .await
        .unwrap();
    assert_eq!(statuses.len(), 1, "the completed job's row was purged");
    drop(sim);
    exec(&admin, &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
}

//! Memory and the database agree: a refused, dropped or panicking write changes neither, every
//! change reads the clock under the lock, and a long random run keeps both equal after each step.

use super::*;

#[tokio::test]
async fn a_write_the_database_refuses_leaves_memory_as_it_was_and_announces_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    let sim = open(&dir, settings(None), clock.clone()).await;
    let spec = JobBuilder::new(1, JobKind::Jupyter).task("main", 1, "8", None).build();
    sim.create_job(&spec).await.unwrap();
    let mut rx = sim.subscribe();
    // A trigger that raises: the step's write fails inside its transaction.
    exec(
        &sim.db,
        "CREATE TRIGGER refuse_job_updates BEFORE UPDATE ON sim_jobs BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
    )
    .await;
    let err = sim.step().await.unwrap_err();
    assert!(matches!(err, ClusterError::Store(_)), "{err}");
    let statuses = sim.job_statuses().await.unwrap();
    assert_eq!(statuses[0].phase, JobPhase::Pending, "memory did not run ahead");
    assert!(sim.nodes().await.unwrap().iter().all(|n| n.free == n.allocatable));
    assert!(rx.try_recv().is_err(), "no event for a change that did not happen");
    assert_eq!(stored_statuses(&dir, clock.clone()).await, statuses);

    exec(&sim.db, "DROP TRIGGER refuse_job_updates").await;
    sim.step().await.unwrap();
    assert_eq!(sim.job_statuses().await.unwrap()[0].phase, JobPhase::Running);
    assert_eq!(wait_for(&mut rx, 1, JobPhase::Running).await.started_at, Some(t0()));
}

#[tokio::test]
async fn a_write_dropped_half_way_leaves_memory_equal_to_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    let sim = open(&dir, settings(None), clock.clone()).await;
    let spec = JobBuilder::new(1, JobKind::Jupyter).task("main", 1, "8", None).build();
    sim.create_job(&spec).await.unwrap();
    // One poll: the step has changed its copy and waits on the database; then the caller gives
    // up (a timeout, a cancelled request).
    assert!(
        sim.step().now_or_never().is_none(),
        "the write had to wait for the database"
    );
    let after = sim.job_statuses().await.unwrap();
    assert_eq!(after[0].phase, JobPhase::Pending, "the placement was never committed");
    assert_eq!(stored_statuses(&dir, clock.clone()).await, after);
    // And the simulation goes on.
    sim.step().await.unwrap();
    assert_eq!(sim.job_statuses().await.unwrap()[0].phase, JobPhase::Running);
    assert_eq!(stored_statuses(&dir, clock.clone()).await[0].phase, JobPhase::Running);
}

#[tokio::test]
async fn a_change_that_panics_leaves_memory_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    let sim = open(&dir, settings(None), clock.clone()).await;
    sim.create_job(&JobBuilder::new(1, JobKind::Jupyter).task("main", 1, "8", None).build())
        .await
        .unwrap();
    let before = sim.job_statuses().await.unwrap();
    let panicked = std::panic::AssertUnwindSafe(sim.apply(|state, _, _| {
        state.jobs.clear();
        panic!("a bug in the rules");
    }))
    .catch_unwind()
    .await;
    assert!(panicked.is_err());
    assert_eq!(sim.job_statuses().await.unwrap(), before);
}

/// A clock that records, at every read, whether the simulated cluster's lock was held.
#[derive(Debug)]
struct LockWitnessClock {
    clock: ManualClock,
    sim: OnceLock<Weak<SimulatedCluster>>,
    unlocked_reads: AtomicU32,
}

impl Clock for LockWitnessClock {
    fn now(&self) -> DateTime<Utc> {
        if let Some(sim) = self.sim.get().and_then(Weak::upgrade)
            && sim.inner.try_lock().is_ok()
        {
            self.unlocked_reads.fetch_add(1, Ordering::SeqCst);
        }
        // Every read a second later: a change dated before the one it waited for shows.
        self.clock.advance(Duration::seconds(1));
        self.clock.now()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_reads_the_clock_under_the_lock_and_events_go_out_in_the_order_of_the_changes() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(LockWitnessClock {
        clock: ManualClock::new(t0()),
        sim: OnceLock::new(),
        unlocked_reads: AtomicU32::new(0),
    });
    let sim = open(&dir, settings(None), clock.clone()).await;
    clock.sim.set(Arc::downgrade(&sim)).ok().unwrap();
    let mut rx = sim.subscribe();
    let mut tasks = Vec::new();
    for id in 1..=20 {
        let sim = sim.clone();
        tasks.push(tokio::spawn(async move {
            let spec = JobBuilder::new(id, JobKind::Custom)
                .task("main", 1, "1", None)
                .command(&["sleep", "5"])
                .build();
            sim.create_job(&spec).await.unwrap();
            sim.step().await.unwrap();
            sim.job_statuses().await.unwrap();
            sim.delete_job(id, &format!("uid-{id}"), 1).await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(
        clock.unlocked_reads.load(Ordering::SeqCst),
        0,
        "the clock was read outside the lock"
    );
    let mut last = t0();
    let mut seen = 0;
    while let Ok(e) = rx.try_recv() {
        let at = match e {
            JobEvent::Status(s) => s.observed_at,
            JobEvent::Gone { observed_at, .. } => observed_at,
        };
        assert!(at >= last, "an event dated {at} went out after one dated {last}");
        last = at;
        seen += 1;
    }
    assert!(seen >= 40, "every create and delete was announced ({seen})");
}

/// The in-doubt flag is what makes a dropped write safe whichever side of the commit it was
/// dropped on; this shows the reload happens and is announced to nobody.
#[tokio::test]
async fn a_state_in_doubt_is_reloaded_from_the_database_before_it_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    let sim = open(&dir, settings(None), clock.clone()).await;
    // Another writer (standing in for a commit whose answer was lost) put a job in the table.
    {
        let other = open(&dir, settings(None), clock.clone()).await;
        other
            .create_job(&JobBuilder::new(3, JobKind::Jupyter).task("main", 1, "1", None).build())
            .await
            .unwrap();
    }
    assert!(sim.job_statuses().await.unwrap().is_empty());
    sim.inner.lock().await.in_doubt = true;
    let statuses = sim.job_statuses().await.unwrap();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].job_id, 3);
    assert!(!sim.inner.lock().await.in_doubt);
}

#[tokio::test]
async fn after_every_change_of_a_long_random_run_memory_equals_what_the_database_holds() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(t0()));
    let sim = open(&dir, settings(None), clock.clone()).await;
    sim.sync_queue(&ClusterQueue::new("team", true)).await.unwrap();
    // A fixed-seed generator: the run is the same every time, and a failure names its step.
    let mut seed: u64 = 0x5eed;
    let mut next = move |n: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let gpus = ["1", "2", "4", "8"];
    let sleeps = ["5", "30", "600", "1e13", "nan"];
    let nodes = ["gpu-a100-0", "gpu-v100-1", "cpu-0"];
    let mut next_id = 1;
    let mut rx = sim.subscribe();
    let mut seen = std::collections::BTreeSet::new();
    for step in 0..400 {
        let what = next(10);
        let result = match what {
            0..=3 => {
                let queue = ["default", "team", "unknown"][next(3) as usize];
                let gpu = gpus[next(4) as usize];
                let spec = JobBuilder::new(next_id, JobKind::Custom)
                    .queue(queue)
                    .task("main", 1 + next(2) as u32, "1", Some(("nvidia.com/a100", gpu)))
                    .command(&["sleep", sleeps[next(5) as usize]])
                    .build();
                next_id += 1;
                match sim.create_job(&spec).await {
                    // Into `unknown`, or `team` while closed: refused, and nothing changes.
                    Err(ClusterError::Rejected(_)) if queue != "default" => Ok(()),
                    other => other,
                }
            }
            4 => {
                let id = 1 + next(next_id as u64) as i64;
                sim.delete_job(id, &format!("uid-{id}"), next(10) as u32).await
            }
            5 => sim.set_node_schedulable(nodes[next(3) as usize], next(2) == 0).await,
            6 => sim.sync_queue(&ClusterQueue::new("team", next(2) == 0)).await,
            _ => {
                clock.advance(Duration::seconds([1, 10, 100, 1000, 4000][next(5) as usize]));
                sim.step().await
            }
        };
        result.unwrap_or_else(|e| panic!("step {step} (op {what}): {e}"));
        let mut memory = sim.inner.lock().await.state.clone();
        let mut stored = super::super::store::load(&sim.db, sim.timing.default_runtime_seconds)
            .await
            .unwrap();
        // What is not stored: whether placement settled, and when something is due next.
        memory.placement_settled = false;
        stored.placement_settled = false;
        (memory.next_due, stored.next_due) = (None, None);
        memory.created_since_pass.clear();
        assert_eq!(memory, stored, "step {step} (op {what}): memory and database differ");
        for n in memory.node_snapshots() {
            assert!(
                n.free.iter().all(|(_, q)| q.milli() >= 0),
                "step {step}: negative free on {}",
                n.name
            );
        }
        while let Ok(e) = rx.try_recv() {
            seen.insert(match e {
                JobEvent::Status(s) => format!("{:?}", s.phase),
                JobEvent::Gone { .. } => "Gone".to_string(),
            });
        }
    }
    // The run went through every transition, so the comparison covered each write path.
    let seen: Vec<_> = seen.into_iter().collect();
    assert_eq!(seen, ["Completed", "Gone", "Pending", "Running", "Terminating"]);
}

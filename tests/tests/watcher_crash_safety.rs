//! Nothing lost, nothing doubled (`spec/prequeue.md` §5): a round killed at each dangerous
//! place, then a new watcher (a restarted process: another lease holder, nothing in memory);
//! two watchers over one store; a watcher whose lease was taken over writes nothing. Time
//! moves by hand ([`anteroom_tests::driven`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use anteroom::cluster::Cluster;
use anteroom::cluster::clock::Clock;
use anteroom::watcher::{FaultPoint, Watcher, WatcherError};
use anteroom_tests::api::*;
use anteroom_tests::both_driven;
use anteroom_tests::driven::{Driven, GPU_NODES, gpu_job, node_with_three_elastic_jobs_and_a_waiting_normal_job};
use sea_orm::{ConnectionTrait, EntityTrait, Statement};
use serde_json::json;

/// The creation terms of these tests: a 30 s grace.
const TERMS: anteroom::jobs::activation::ClusterTerms = anteroom::jobs::activation::ClusterTerms {
    preemption_grace_seconds: 30,
};

/// Jobs per phase in the store.
async fn phases(d: &Driven) -> BTreeMap<i64, String> {
    let db = &d.app.state.db;
    db.query_all_raw(Statement::from_string(
        db.get_database_backend(),
        "SELECT id, phase FROM jobs",
    ))
    .await
    .unwrap()
    .into_iter()
    .map(|r| {
        (
            r.try_get::<i64>("", "id").unwrap(),
            r.try_get::<String>("", "phase").unwrap(),
        )
    })
    .collect()
}

/// `activated` events per job.
async fn activations(d: &Driven) -> BTreeMap<i64, i64> {
    let db = &d.app.state.db;
    db.query_all_raw(Statement::from_string(
        db.get_database_backend(),
        "SELECT job_id, COUNT(*) AS n FROM job_events WHERE kind = 'activated' GROUP BY job_id",
    ))
    .await
    .unwrap()
    .into_iter()
    .map(|r| {
        (
            r.try_get::<i64>("", "job_id").unwrap(),
            r.try_get::<i64>("", "n").unwrap(),
        )
    })
    .collect()
}

/// Jobs still `Prequeue` or `Activating`.
async fn waiting(d: &Driven) -> usize {
    phases(d)
        .await
        .values()
        .filter(|p| *p == "Prequeue" || *p == "Activating")
        .count()
}

/// The jobs the cluster has, each once (a second object of one job would be a second status).
async fn in_cluster(d: &Driven) -> BTreeSet<i64> {
    let statuses = d.sim.job_statuses().await.unwrap();
    let ids: BTreeSet<i64> = statuses.iter().map(|s| s.job_id).collect();
    assert_eq!(
        ids.len(),
        statuses.len(),
        "a job exists twice in the cluster: {statuses:?}"
    );
    ids
}

/// `count` prequeued 1-CPU jobs of one user, held by a quota that a first job fills and that is
/// then lifted, so all may start at the next round. Answers the first job (in the cluster
/// already) and the prequeued ones.
async fn prequeued_jobs(d: &Driven, count: usize) -> (i64, Vec<i64>) {
    let admin = d.app.admin_token().await;
    let una = d.app.user_token("una").await;
    settings(
        &d.app,
        &admin,
        json!({"queueQuotaEnabled": true, "maxPrequeuedJobsPerUser": 10_000, "maxUnfinishedJobsPerUser": 10_000}),
    )
    .await;
    quota(&d.app, &admin, "default", json!({"cpu": "1"})).await;
    let (_, first) = call(
        &d.app,
        "POST",
        "/api/v1/jobs",
        &una,
        Some(job("first", json!({"cpu": "1"}))),
    )
    .await;
    assert_eq!(first["admission"]["decision"], "activated");
    // Sixteen at a time: a thousand one by one would take most of the test's time.
    let mut ids = Vec::new();
    for chunk in (0..count).collect::<Vec<_>>().chunks(16) {
        let answers = futures::future::join_all(chunk.iter().map(|i| {
            call(
                &d.app,
                "POST",
                "/api/v1/jobs",
                &una,
                Some(job(&format!("j{i}"), json!({"cpu": "1"}))),
            )
        }))
        .await;
        for (status, answer) in answers {
            assert_eq!(status, 201, "{answer}");
            assert_eq!(answer["admission"]["decision"], "prequeued");
            ids.push(job_id(&answer));
        }
    }
    ids.sort_unstable();
    settings(&d.app, &admin, json!({"queueQuotaEnabled": false})).await;
    (job_id(&first), ids)
}

/// The cluster holds exactly `first` and `jobs`, each once.
async fn assert_cluster_holds(d: &Driven, first: i64, jobs: &[i64]) {
    let mut want: BTreeSet<i64> = jobs.iter().copied().collect();
    want.insert(first);
    assert_eq!(in_cluster(d).await, want);
}

/// A watcher that dies at `point`.
fn dying_at(d: &Driven, point: FaultPoint) -> Watcher {
    let mut w = Watcher::new(d.app.state.watcher_inputs());
    w.faults = Some(Arc::new(move |p| p == point));
    w
}

/// After a kill: the dead holder's lease expires and stale claims age (a minute), then the
/// new watcher runs rounds until nothing is left to do.
async fn restart_and_settle(d: &Driven) {
    for _ in 0..3 {
        d.advance(61).await;
        d.round().await;
    }
    d.settle().await;
}

async fn killed_activation_converges(point: FaultPoint, db: Option<String>) {
    let d = Driven::start(db, "").await;
    let (first, jobs) = prequeued_jobs(&d, 3).await;
    let dying = dying_at(&d, point);
    match d.try_round(&dying).await {
        Err(WatcherError::Injected(p)) => assert_eq!(p, point),
        other => panic!("the round should have died at {point:?}: {other:?}"),
    }
    restart_and_settle(&d).await;
    let phases = phases(&d).await;
    for id in &jobs {
        assert_eq!(phases[id], "Running", "job {id} after a kill at {point:?}: {phases:?}");
    }
    assert_cluster_holds(&d, first, &jobs).await;
    let activated = activations(&d).await;
    for id in &jobs {
        assert_eq!(activated.get(id), Some(&1), "one activation of {id}: {activated:?}");
    }
}

async fn killed_after_claim(db: Option<String>) {
    killed_activation_converges(FaultPoint::AfterClaim, db).await;
}
both_driven!(after_claim, killed_after_claim);

async fn killed_after_create(db: Option<String>) {
    killed_activation_converges(FaultPoint::AfterCreate, db).await;
}
both_driven!(after_create, killed_after_create);

async fn killed_after_pending(db: Option<String>) {
    killed_activation_converges(FaultPoint::AfterPending, db).await;
}
both_driven!(after_pending, killed_after_pending);

async fn a_preemption_killed_before_its_deletes_is_finished_by_the_next_watcher(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let (victims, normal) =
        node_with_three_elastic_jobs_and_a_waiting_normal_job(&d, gpu_job("train", "custom", 4, "normal")).await;
    d.advance(61).await;
    let dying = dying_at(&d, FaultPoint::MidPreemption);
    assert!(matches!(
        d.try_round(&dying).await,
        Err(WatcherError::Injected(FaultPoint::MidPreemption))
    ));
    // Marked in the store, still running in the cluster: the delete never went out.
    assert_eq!(phases(&d).await[&victims[2]], "Preempted");
    assert!(in_cluster(&d).await.contains(&victims[2]));
    // The next watcher deletes it (and plans nothing new meanwhile); after its grace the
    // normal job runs; the other notebooks were never touched.
    d.advance(16).await;
    let report = d.round().await;
    assert!(report.preempted.is_empty(), "{report:?}");
    d.advance(31).await;
    let phases = phases(&d).await;
    assert_eq!(phases[&normal], "Running");
    assert_eq!(phases[&victims[0]], "Running");
    assert_eq!(phases[&victims[1]], "Running");
    let cluster = in_cluster(&d).await;
    assert!(!cluster.contains(&victims[2]), "the victim is gone from the cluster");
    assert_eq!(cluster, BTreeSet::from([victims[0], victims[1], normal]));
    assert_eq!(count(&d.app, "preemptions").await, 1, "one plan, stored once");
}
both_driven!(
    mid_preemption,
    a_preemption_killed_before_its_deletes_is_finished_by_the_next_watcher
);

async fn a_watcher_whose_lease_was_taken_over_writes_nothing(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let (first, jobs) = prequeued_jobs(&d, 2).await;
    let old = Watcher::new(d.app.state.watcher_inputs());
    let now = d.clock.now();
    let stale = old
        .lease
        .acquire(&d.app.state.db, now)
        .await
        .unwrap()
        .expect("free lease");
    // It pauses past its lease; another replica takes over.
    d.clock.advance(chrono::Duration::seconds(16));
    let new = Watcher::new(d.app.state.watcher_inputs());
    let fresh = new
        .lease
        .acquire(&d.app.state.db, d.clock.now())
        .await
        .unwrap()
        .expect("the expired lease is taken");
    assert!(fresh.token > stale.token);
    // The old one wakes up and runs a round: refused before its first write.
    assert!(matches!(old.round(&stale).await, Err(WatcherError::LeaseLost)));
    let phases = phases(&d).await;
    for id in &jobs {
        assert_eq!(phases[id], "Prequeue", "nothing claimed by the stale watcher");
    }
    assert_cluster_holds(&d, first, &[]).await;
    let report = new.round(&fresh).await.unwrap();
    assert_eq!(report.activated, jobs);
}
both_driven!(fencing, a_watcher_whose_lease_was_taken_over_writes_nothing);

async fn two_watchers_on_one_store_create_each_of_a_thousand_jobs_once(db: Option<String>) {
    let d = Arc::new(Driven::start(db, "").await);
    let admin = d.app.admin_token().await;
    let (first, jobs) = prequeued_jobs(&d, 1000).await;
    settings(
        &d.app,
        &admin,
        json!({"maxTotalActivationsPerRound": 100, "prequeueCandidateSize": 100}),
    )
    .await;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let d = d.clone();
        tasks.push(tokio::spawn(async move {
            let w = Watcher::new(d.app.state.watcher_inputs());
            let mut fence = None;
            let mut terms = 0;
            for _ in 0..20_000 {
                if waiting(&d).await == 0 {
                    break;
                }
                let now = d.clock.now();
                fence = match fence.take() {
                    Some(f) if w.lease.renew(&d.app.state.db, &f, now).await.unwrap() => Some(f),
                    _ => {
                        let taken = w.lease.acquire(&d.app.state.db, now).await.unwrap();
                        terms += usize::from(taken.is_some());
                        taken
                    }
                };
                match &fence {
                    Some(f) => match w.round(f).await {
                        Ok(_) => {}
                        Err(WatcherError::LeaseLost) => fence = None,
                        Err(e) => panic!("{e}"),
                    },
                    None => tokio::time::sleep(std::time::Duration::from_millis(1)).await,
                }
                // Leases lapse all the time: now and then the clock jumps past one.
                if rand::random::<u8>() < 64 {
                    d.clock.advance(chrono::Duration::seconds(16));
                }
            }
            terms
        }));
    }
    let mut terms = 0;
    for t in tasks {
        terms += t.await.unwrap();
    }
    // Whatever a lost lease left half-done, the next rounds finish.
    restart_and_settle(&d).await;
    assert!(terms > 1, "the lease changed hands: {terms} terms");
    let phases = phases(&d).await;
    // The default cluster runs some; the rest wait in it (`Pending`): all were created.
    let not_created: Vec<_> = jobs
        .iter()
        .filter(|id| phases[id] != "Running" && phases[id] != "Pending")
        .collect();
    assert!(not_created.is_empty(), "{} jobs not created", not_created.len());
    assert_cluster_holds(&d, first, &jobs).await;
    let activated = activations(&d).await;
    assert_eq!(activated.len(), 1001);
    assert!(activated.values().all(|n| *n == 1), "a job was activated twice");
}
both_driven!(
    two_watchers,
    two_watchers_on_one_store_create_each_of_a_thousand_jobs_once
);

async fn a_status_seen_while_activating_records_the_creation_without_waiting_for_the_repair(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let (_, jobs) = prequeued_jobs(&d, 1).await;
    let dying = dying_at(&d, FaultPoint::AfterCreate);
    assert!(matches!(d.try_round(&dying).await, Err(WatcherError::Injected(_))));
    assert_eq!(phases(&d).await[&jobs[0]], "Activating");
    // Seconds old, the creation is the activation path's to record: sync leaves it.
    d.settle().await;
    assert_eq!(phases(&d).await[&jobs[0]], "Activating");
    // Once the claim is older (and still no repair: the dead holder's lease runs), status
    // sync alone records it.
    d.advance(6).await;
    assert_eq!(phases(&d).await[&jobs[0]], "Running");
    assert_eq!(activations(&d).await.get(&jobs[0]), Some(&1));
    // The repair later finds nothing to do; the job is still there once.
    restart_and_settle(&d).await;
    assert_eq!(activations(&d).await.get(&jobs[0]), Some(&1));
    assert!(in_cluster(&d).await.contains(&jobs[0]));
}
both_driven!(
    sync_records_creation,
    a_status_seen_while_activating_records_the_creation_without_waiting_for_the_repair
);

async fn a_slow_first_driver_leaves_a_job_another_driver_recorded(db: Option<String>) {
    use anteroom::jobs::activation::{self, ActivationOutcome, Writer};
    let d = Driven::start(db, "").await;
    let (_, jobs) = prequeued_jobs(&d, 1).await;
    let id = jobs[0];
    // A driver claims the job and its create hangs for over a minute ...
    let claimed = activation::claim(&d.app.state.db, id, (None, Some(300)), false, d.clock.now())
        .await
        .unwrap()
        .unwrap();
    d.clock.advance(chrono::Duration::seconds(61));
    // ... meanwhile the repair re-claims it, creates it and records it `Pending`.
    let report = d.round().await;
    assert_eq!(report.repaired, 1, "{report:?}");
    assert_eq!(phases(&d).await[&id], "Pending");
    // The first create returns; its record must not take the job for deleted.
    activation::create(d.sim.as_ref(), &claimed, TERMS)
        .await
        .unwrap()
        .unwrap();
    let w = Writer {
        db: &d.app.state.db,
        clock: d.clock.as_ref(),
        fence: None,
    };
    let outcome = activation::record_created(w, d.sim.as_ref(), &claimed, false)
        .await
        .unwrap();
    assert!(matches!(outcome, ActivationOutcome::Superseded), "{outcome:?}");
    d.settle().await;
    assert!(in_cluster(&d).await.contains(&id), "the job still runs");
    assert_eq!(phases(&d).await[&id], "Running");
}
both_driven!(
    slow_first_driver,
    a_slow_first_driver_leaves_a_job_another_driver_recorded
);

async fn a_job_created_after_its_delete_by_a_watcher_that_lost_its_lease_is_removed(db: Option<String>) {
    use anteroom::jobs::activation;
    let d = Driven::start(db, "").await;
    let (_, jobs) = prequeued_jobs(&d, 1).await;
    let id = jobs[0];
    let una = d.app.token("una", anteroom_tests::USER_PASSWORD).await;
    // A watcher dies right after claiming; its create is still in flight.
    let dying = dying_at(&d, FaultPoint::AfterClaim);
    assert!(matches!(d.try_round(&dying).await, Err(WatcherError::Injected(_))));
    let claimed = anteroom::jobs::entity::job::Entity::find_by_id(id)
        .one(&d.app.state.db)
        .await
        .unwrap()
        .unwrap();
    // The owner deletes it: nothing to delete in the cluster yet.
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{id}"), &una, None).await;
    assert_eq!(status, 204);
    // The create lands, and the stale watcher can record nothing (its lease is gone).
    activation::create(d.sim.as_ref(), &claimed, TERMS)
        .await
        .unwrap()
        .unwrap();
    d.sim.step().await.unwrap();
    assert!(in_cluster(&d).await.contains(&id), "an orphan runs");
    // Status sync sees a job the store has deleted, and deletes it; after its grace it is gone.
    d.settle().await;
    d.advance(31).await;
    assert!(!in_cluster(&d).await.contains(&id), "the orphan was removed");
    assert_eq!(phases(&d).await[&id], "Deleted");
}
both_driven!(
    orphan,
    a_job_created_after_its_delete_by_a_watcher_that_lost_its_lease_is_removed
);

async fn a_new_leader_re_drives_the_claims_of_the_last_one_at_once(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let (_, jobs) = prequeued_jobs(&d, 2).await;
    let dying = dying_at(&d, FaultPoint::AfterClaim);
    assert!(matches!(d.try_round(&dying).await, Err(WatcherError::Injected(_))));
    // The dead holder's lease lapses; its claims are 16 s old, not a minute: the new term's
    // first round drives them anyway (nobody else can record them any more).
    d.advance(16).await;
    let report = d.round().await;
    assert_eq!(report.repaired, 2, "{report:?}");
    let phases = phases(&d).await;
    assert!(jobs.iter().all(|id| phases[id] == "Pending"), "{phases:?}");
}
both_driven!(
    new_term_repair,
    a_new_leader_re_drives_the_claims_of_the_last_one_at_once
);

async fn a_job_whose_id_a_restored_database_reused_never_takes_the_lost_jobs_object(db: Option<String>) {
    use anteroom::jobs::activation;
    use anteroom::jobs::entity::job;
    let d = Driven::start(db, "").await;
    let (first, jobs) = prequeued_jobs(&d, 1).await;
    let id = jobs[0];
    // The cluster already has an `ar-<id>` of this installation: the job of that id which a
    // database restored from a backup no longer knows (same labels, another uid).
    let row = job::Entity::find_by_id(id).one(&d.app.state.db).await.unwrap().unwrap();
    let mut lost = activation::job_spec(&row, TERMS).unwrap();
    assert_ne!(lost.cluster_uid, "", "a submitted job has a uid");
    lost.cluster_uid = "0a1b2c3d4e5f60718293a4b5c6d7e8f9".to_owned();
    for task in &mut lost.tasks {
        task.command = vec!["sleep".to_owned(), "86400".to_owned()];
    }
    d.sim.create_job(&lost).await.unwrap();
    d.settle().await;

    // The create finds the name taken by the other job: a failed create, not an activation.
    d.round().await;
    let stored = job::Entity::find_by_id(id).one(&d.app.state.db).await.unwrap().unwrap();
    assert_eq!(stored.phase, "Activating");
    assert_eq!(stored.attempts, 1);
    let error = stored.last_error.unwrap_or_default();
    assert!(error.contains("another job with the same id"), "{error}");
    // Status sync sees `ar-<id>` running, long after the claim: not this job, so not recorded.
    d.advance(10).await;
    assert_eq!(phases(&d).await[&id], "Activating");
    assert_eq!(activations(&d).await.get(&id), None);
    assert_eq!(phases(&d).await[&first], "Running", "a job's own object still syncs");

    // Retried with backoff, it fails for good; the other job's object is left alone (it is no
    // orphan of this failed job's).
    for _ in 0..12 {
        d.advance(301).await;
        d.round().await;
    }
    d.settle().await;
    assert_eq!(phases(&d).await[&id], "Failed");
    let statuses = d.sim.job_statuses().await.unwrap();
    let there = statuses
        .iter()
        .find(|s| s.job_id == id)
        .expect("the other job still runs");
    assert_eq!(there.cluster_uid.as_deref(), Some(lost.cluster_uid.as_str()));
    assert_eq!(there.phase, anteroom_shared::scheduling::JobPhase::Running);
}
both_driven!(
    reused_id,
    a_job_whose_id_a_restored_database_reused_never_takes_the_lost_jobs_object
);

async fn a_group_of_activations_records_each_job_by_its_own_claim(db: Option<String>) {
    use anteroom::jobs::activation::{self, ActivationOutcome, Writer};
    use anteroom::jobs::entity::job;
    let d = Driven::start(db, "").await;
    let (_, jobs) = prequeued_jobs(&d, 4).await;
    let una = d.app.token("una", anteroom_tests::USER_PASSWORD).await;
    let mut claimed = Vec::new();
    for id in &jobs {
        let row = activation::claim(&d.app.state.db, *id, (None, Some(300)), false, d.clock.now())
            .await
            .unwrap()
            .expect("a prequeued job can be claimed");
        claimed.push(row);
    }
    // While the group's creates are in flight: the owner deletes the second job (nothing to
    // delete in the cluster yet) ...
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{}", jobs[1]), &una, None).await;
    assert_eq!(status, 204);
    // ... and the third one's name is taken in the cluster by another job (a restored
    // database's lost job: same name, another uid), so its create fails.
    let mut lost = activation::job_spec(&claimed[2], TERMS).unwrap();
    lost.cluster_uid = "0a1b2c3d4e5f60718293a4b5c6d7e8f9".to_owned();
    d.sim.create_job(&lost).await.unwrap();

    let w = Writer {
        db: &d.app.state.db,
        clock: d.clock.as_ref(),
        fence: None,
    };
    let outcomes = activation::activate_claimed_all(w, d.sim.as_ref(), &claimed, TERMS).await;
    let outcomes: Vec<ActivationOutcome> = outcomes.into_iter().map(Result::unwrap).collect();
    assert!(
        matches!(&outcomes[0], ActivationOutcome::Activated(row) if row.id == jobs[0] && row.phase == "Pending"),
        "{outcomes:?}"
    );
    assert!(matches!(outcomes[1], ActivationOutcome::Superseded), "{outcomes:?}");
    assert!(
        matches!(&outcomes[2], ActivationOutcome::CreateFailed { job, .. } if job.id == jobs[2]),
        "{outcomes:?}"
    );
    assert!(
        matches!(&outcomes[3], ActivationOutcome::Activated(row) if row.id == jobs[3]),
        "{outcomes:?}"
    );

    let phases = phases(&d).await;
    assert_eq!(phases[&jobs[0]], "Pending");
    assert_eq!(phases[&jobs[1]], "Deleted");
    assert_eq!(phases[&jobs[2]], "Activating", "retried later");
    assert_eq!(phases[&jobs[3]], "Pending");
    let failed = job::Entity::find_by_id(jobs[2])
        .one(&d.app.state.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(failed.attempts, 1);
    let activated = activations(&d).await;
    assert_eq!(activated.get(&jobs[0]), Some(&1));
    assert_eq!(activated.get(&jobs[1]), None);
    assert_eq!(activated.get(&jobs[2]), None);
    assert_eq!(activated.get(&jobs[3]), Some(&1));
    // The deleted job's object, created after its delete, was removed again.
    d.sim.step().await.unwrap();
    let there = in_cluster(&d).await;
    assert!(there.contains(&jobs[0]) && there.contains(&jobs[3]), "{there:?}");
    assert!(
        !there.contains(&jobs[1]),
        "the deleted job was left in the cluster: {there:?}"
    );
}
both_driven!(
    group_activation,
    a_group_of_activations_records_each_job_by_its_own_claim
);

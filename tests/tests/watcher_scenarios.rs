//! The watcher's scenarios (`spec/prequeue.md` §5), each on SQLite and PostgreSQL, with time
//! moved by hand ([`anteroom_tests::driven`]): jobs are submitted through the API, the
//! simulated cluster steps and the watcher runs a round only when the test says so.

use anteroom::cluster::clock::Clock;
use anteroom_tests::api::*;
use anteroom_tests::both_driven;
use anteroom_tests::driven::*;
use sea_orm::EntityTrait;
use serde_json::{Value, json};

async fn a_held_job_starts_when_an_earlier_job_completes(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let ann = d.app.user_token("ann").await;
    settings(&d.app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&d.app, &admin, "default", json!({"cpu": "2"})).await;
    let (first, _) = submit(&d, &ann, timed_job("first", json!({"cpu": "2"}), Some(60))).await;
    let (held, answer) = submit(&d, &ann, timed_job("held", json!({"cpu": "2"}), None)).await;
    assert_eq!(answer["admission"]["decision"], "prequeued");
    d.settle().await;
    assert_eq!(d.round().await.activated, Vec::<i64>::new(), "the quota is taken");
    assert_eq!(reason_codes(&detail(&d, &ann, held).await), ["quota"]);
    d.advance(61).await;
    assert_eq!(phase(&d, &ann, first).await, "Completed");
    let report = d.round().await;
    assert_eq!(report.activated, [held]);
    let held = detail(&d, &ann, held).await;
    assert_eq!(held["phase"], "Pending");
    assert_eq!(kinds(&held), ["submitted", "prequeued", "activated"]);
}
both_driven!(quota_hold, a_held_job_starts_when_an_earlier_job_completes);

async fn jobs_start_first_come_first_served_and_one_round_counts_its_own_selections(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let bea = d.app.user_token("bea").await;
    settings(&d.app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&d.app, &admin, "default", json!({"cpu": "4"})).await;
    submit(&d, &bea, timed_job("blocker", json!({"cpu": "3"}), Some(10))).await;
    let mut held = Vec::new();
    for name in ["a", "b", "c"] {
        let (id, answer) = submit(&d, &bea, timed_job(name, json!({"cpu": "2"}), None)).await;
        assert_eq!(answer["admission"]["decision"], "prequeued");
        held.push(id);
    }
    d.settle().await;
    d.advance(11).await;
    let report = d.round().await;
    // a and b fill the quota between them; c would be the third 2-CPU job: it waits.
    assert_eq!(report.activated, [held[0], held[1]]);
    let c = detail(&d, &bea, held[2]).await;
    assert_eq!(c["phase"], "Prequeue");
    assert_eq!(c["prequeue"]["position"], 1);
    assert_eq!(reason_codes(&c), ["quota"]);
    // Submitted while the blocker used 3 CPUs; now a and b use 4.
    let submitted = &c["events"][1]["details"]["reasons"][0]["details"]["resources"][0];
    assert_eq!(submitted["usage"], "3", "{c}");
    let now = &c["prequeue"]["reasons"][0]["details"]["resources"][0];
    assert_eq!(now["usage"], "4", "{c}");
}
both_driven!(
    fcfs,
    jobs_start_first_come_first_served_and_one_round_counts_its_own_selections
);

async fn a_timed_out_normal_job_blocks_later_same_domain_jobs_in_its_queue_and_no_others(db: Option<String>) {
    let nodes = format!(
        "{GPU_NODES}\n[[node]]\nname = \"v100-0\"\ncpu = \"32\"\nmemory = \"128Gi\"\naccelerators = {{ \"nvidia.com/v100\" = \"4\" }}\n"
    );
    let d = Driven::start(db, &nodes).await;
    let admin = d.app.admin_token().await;
    let (ann, bob) = (d.app.user_token("ann").await, d.app.user_token("bob").await);
    settings(
        &d.app,
        &admin,
        json!({"queueQuotaEnabled": true, "normalJobWaitingToleranceSeconds": 60}),
    )
    .await;
    // The team's share of `default` is 5 A100s, all users together: a shared hold.
    let (status, body) = call(
        &d.app,
        "PUT",
        "/api/v1/admin/queues/default",
        &admin,
        Some(json!({"name": "default", "open": true, "capacity": {"nvidia.com/a100": "5"}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    queue(&d.app, &admin, json!({"name": "other", "open": true})).await;
    // Ann's first job takes 4 of the 5; her next waits for the queue's room past its tolerance.
    submit(&d, &ann, gpu_job("running", "custom", 4, "normal")).await;
    let (waiting, a) = submit(&d, &ann, gpu_job("waiting", "custom", 4, "normal")).await;
    assert_eq!(
        a["job"]["waitingSince"], a["job"]["submittedAt"],
        "a shared hold starts the clock: {a}"
    );
    d.advance(61).await;
    // Submitted after it: Bob's A100 job in the same queue and his CPU-only job there are
    // blocked; his V100 job there (another resource domain) and his A100 job in another queue
    // start.
    let (gpu_same, a) = submit(&d, &bob, gpu_job("gpu-same", "custom", 1, "normal")).await;
    assert_eq!(a["admission"]["decision"], "prequeued", "{a}");
    let (cpu_same, a) = submit(&d, &bob, timed_job("cpu-same", json!({"cpu": "1"}), None)).await;
    assert_eq!(a["admission"]["decision"], "prequeued", "{a}");
    let v100 = job("v100-same", json!({"cpu": "1", "nvidia.com/v100": "1"}));
    let (v100_same, a) = submit(&d, &bob, v100).await;
    assert_eq!(a["admission"]["decision"], "activated", "{a}");
    let mut other = gpu_job("gpu-other", "custom", 1, "normal");
    other["queue"] = json!("other");
    let (_, a) = submit(&d, &bob, other).await;
    assert_eq!(a["admission"]["decision"], "activated", "{a}");
    let report = d.round().await;
    assert!(report.activated.is_empty(), "{report:?}");
    for id in [gpu_same, cpu_same] {
        let blocked = detail(&d, &bob, id).await;
        assert_eq!(reason_codes(&blocked), ["blocked_by"]);
        assert_eq!(blocked["prequeue"]["reasons"][0]["details"]["jobId"], waiting);
    }
    d.settle().await;
    assert_eq!(phase(&d, &bob, v100_same).await, "Running");
    // Ann's job goes first once the queue has room; then Bob's follow.
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{}", waiting - 1), &ann, None).await;
    assert_eq!(status, 204);
    assert_eq!(d.round().await.activated, [waiting]);
    assert!(
        d.round().await.activated.is_empty(),
        "pending and timed out, it still blocks"
    );
    // The deleted job's pods terminate (up to 30 s), then Ann's job runs.
    d.advance(31).await;
    assert_eq!(phase(&d, &ann, waiting).await, "Running");
    assert_eq!(
        d.round().await.activated,
        [gpu_same, cpu_same],
        "running, it blocks no more"
    );
}
both_driven!(
    blocking,
    a_timed_out_normal_job_blocks_later_same_domain_jobs_in_its_queue_and_no_others
);

async fn preemption_takes_the_fewest_victims_and_not_again_while_they_terminate(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    let (victims, normal) =
        node_with_three_elastic_jobs_and_a_waiting_normal_job(&d, gpu_job("train", "custom", 4, "normal")).await;
    assert!(d.round().await.preempted.is_empty(), "not timed out yet");
    d.advance(61).await;
    let report = d.round().await;
    // 3 GPUs missing: {4} covers it alone, {1, 2} would take two jobs.
    assert_eq!(report.preempted, [victims[2]]);
    assert_eq!(report.preempted_for, Some(normal));
    let victim = detail(&d, &admin, victims[2]).await;
    assert_eq!(victim["phase"], "Preempted");
    let event = victim["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(event["kind"], "preempted");
    assert_eq!(event["details"]["beneficiary"], normal);
    assert_eq!(
        kinds(&detail(&d, &admin, normal).await).last().unwrap(),
        "preempted_for"
    );
    // The victim terminates (grace: the admin's default); no second plan meanwhile.
    d.advance(5).await;
    assert!(d.round().await.preempted.is_empty(), "its victims still terminate");
    assert_eq!(phase(&d, &admin, victims[0]).await, "Running");
    d.advance(60).await;
    assert_eq!(phase(&d, &admin, normal).await, "Running", "it got the room");
    assert!(d.round().await.preempted.is_empty());
    assert_eq!(phase(&d, &admin, victims[1]).await, "Running");
}
both_driven!(
    preemption,
    preemption_takes_the_fewest_victims_and_not_again_while_they_terminate
);

async fn no_preemption_when_the_job_fits_on_a_node_already(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    settings(
        &d.app,
        &admin,
        json!({"backfillEnabled": true, "normalJobWaitingToleranceSeconds": 60, "backfillMinRuntimeSeconds": 0}),
    )
    .await;
    let (nb, _) = submit(&d, &admin, gpu_job("nb", "jupyter", 4, "backfill")).await;
    d.settle().await;
    // Created, but the simulation has not placed it yet: 4 GPUs are free for it.
    submit(&d, &admin, gpu_job("train", "custom", 4, "normal")).await;
    d.clock.advance(chrono::Duration::seconds(61));
    let report = d.round().await;
    assert!(
        report.preempted.is_empty() && report.preempted_for.is_none(),
        "{report:?}"
    );
    assert_eq!(phase(&d, &admin, nb).await, "Running");
    assert_eq!(count(&d.app, "preemptions").await, 0);
    assert_eq!(count(&d.app, "job_events WHERE kind = 'preempted_for'").await, 0);
}
both_driven!(fits_already, no_preemption_when_the_job_fits_on_a_node_already);

async fn minimum_runtime_and_admin_locks_protect_elastic_jobs(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    let (victims, _) =
        node_with_three_elastic_jobs_and_a_waiting_normal_job(&d, gpu_job("train", "custom", 4, "normal")).await;
    settings(&d.app, &admin, json!({"backfillMinRuntimeSeconds": 600})).await;
    d.advance(61).await;
    assert!(d.round().await.preempted.is_empty(), "they have run 61 s of 600");
    settings(&d.app, &admin, json!({"backfillMinRuntimeSeconds": 60})).await;
    // The 4-GPU notebook is locked: the plan takes the 1- and 2-GPU ones instead.
    let (status, body) = call(
        &d.app,
        "PUT",
        &format!("/api/v1/admin/jobs/{}/lock", victims[2]),
        &admin,
        Some(json!({"until": "2099-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let report = d.round().await;
    assert_eq!(report.preempted, [victims[0], victims[1]]);
    assert_eq!(phase(&d, &admin, victims[2]).await, "Running");
    // Every kind of row is here now (running with a start and nodes, locked, pending,
    // preempted): the snapshot's packed read (SQLite) gives what the plain read gives.
    let phases = ["Prequeue", "Activating", "Pending", "Running", "Preempted"];
    let db = &d.app.state.db;
    let mut packed = anteroom::jobs::packed::scheduling_rows(db, &phases).await.unwrap();
    let mut plain = anteroom::jobs::packed::plain_rows(db, &phases).await.unwrap();
    packed.sort_by_key(|r| r.id);
    plain.sort_by_key(|r| r.id);
    assert_eq!(packed.len(), 4);
    assert!(
        plain
            .iter()
            .any(|r| r.locked_until.is_some() && r.started_at.is_some() && r.nodes != "[]")
    );
    assert_eq!(packed, plain);
}
both_driven!(protection, minimum_runtime_and_admin_locks_protect_elastic_jobs);

/// What the simulated cluster's pods of `id` say now (`volcano.sh/preemptable`), and what the
/// store recorded as told.
async fn told(d: &Driven, id: i64) -> (bool, Option<bool>) {
    let spec = d.sim.spec_of(id).await.unwrap().expect("in the cluster");
    let row = anteroom::jobs::entity::job::Entity::find_by_id(id)
        .one(&d.app.state.db)
        .await
        .unwrap()
        .unwrap();
    (spec.preemptable, row.cluster_preemptable)
}

async fn the_cluster_may_evict_an_elastic_job_only_when_the_prequeue_could(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    settings(
        &d.app,
        &admin,
        json!({"backfillEnabled": true, "backfillMinRuntimeSeconds": 600}),
    )
    .await;
    let (nb, _) = submit(&d, &admin, gpu_job("nb", "jupyter", 1, "backfill")).await;
    let (normal, _) = submit(&d, &admin, gpu_job("train", "custom", 1, "normal")).await;
    d.settle().await;
    assert_eq!(phase(&d, &admin, nb).await, "Running");
    // Younger than the minimum runtime: created as not the cluster's to evict; a normal job
    // never is.
    assert_eq!(told(&d, nb).await, (false, Some(false)));
    assert_eq!(told(&d, normal).await, (false, Some(false)));
    d.advance(599).await;
    assert_eq!(d.round().await.preemptable_told, 0, "599 s of 600");
    assert_eq!(told(&d, nb).await, (false, Some(false)));
    d.advance(1).await;
    assert_eq!(d.round().await.preemptable_told, 1);
    assert_eq!(told(&d, nb).await, (true, Some(true)));
    assert_eq!(d.round().await.preemptable_told, 0, "told once");
    // An admin lock takes it back at once; the lock lifted, it is given again.
    let path = format!("/api/v1/admin/jobs/{nb}/lock");
    let lock = |until: Value| call(&d.app, "PUT", &path, &admin, Some(json!({ "until": until })));
    assert_eq!(lock(json!("2099-01-01T00:00:00Z")).await.0, 200);
    assert_eq!(d.round().await.preemptable_told, 1);
    assert_eq!(told(&d, nb).await, (false, Some(false)));
    assert_eq!(lock(Value::Null).await.0, 200);
    d.round().await;
    assert_eq!(told(&d, nb).await, (true, Some(true)));
    assert_eq!(told(&d, normal).await, (false, Some(false)));
}
both_driven!(
    cluster_protection,
    the_cluster_may_evict_an_elastic_job_only_when_the_prequeue_could
);

async fn a_job_that_never_preempts_preempts_nobody(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    let mut normal = gpu_job("polite", "custom", 4, "normal");
    normal["preemptionPolicy"] = json!("Never");
    let (victims, _) = node_with_three_elastic_jobs_and_a_waiting_normal_job(&d, normal).await;
    d.advance(61).await;
    assert!(d.round().await.preempted.is_empty());
    for v in victims {
        assert_eq!(phase(&d, &admin, v).await, "Running");
    }
}
both_driven!(never, a_job_that_never_preempts_preempts_nobody);

async fn a_job_held_by_an_ancestors_capacity_starts_when_a_sibling_queues_job_finishes(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let (ann, bob) = (d.app.user_token("ann").await, d.app.user_token("bob").await);
    settings(&d.app, &admin, json!({"queueQuotaEnabled": true})).await;
    for body in [
        json!({"name": "lab", "open": true, "capacity": {"cpu": "4"}}),
        json!({"name": "lab-a", "open": true, "parent": "lab", "members": ["ann"]}),
        json!({"name": "lab-b", "open": true, "parent": "lab", "members": ["bob"]}),
    ] {
        let (status, answer) = call(&d.app, "POST", "/api/v1/admin/queues", &admin, Some(body)).await;
        assert_eq!(status, 201, "{answer}");
    }
    let mut first = timed_job("first", json!({"cpu": "4"}), Some(30));
    first["queue"] = json!("lab-a");
    submit(&d, &ann, first).await;
    d.settle().await;
    let mut second = timed_job("second", json!({"cpu": "2"}), None);
    second["queue"] = json!("lab-b");
    let (held, a) = submit(&d, &bob, second).await;
    assert_eq!(a["admission"]["decision"], "prequeued", "{a}");
    d.settle().await;
    assert!(d.round().await.activated.is_empty());
    let waiting = detail(&d, &bob, held).await;
    assert_eq!(reason_codes(&waiting), ["queue_capacity"]);
    assert_eq!(waiting["prequeue"]["reasons"][0]["details"]["queue"], "lab");
    d.advance(31).await;
    assert_eq!(d.round().await.activated, [held]);
}
both_driven!(
    ancestor_capacity,
    a_job_held_by_an_ancestors_capacity_starts_when_a_sibling_queues_job_finishes
);

/// Ann's three and Bob's one job wait behind a full queue; the capacity is raised and a round
/// may start two. Answers the started ones, in names.
async fn two_of_four(order: &str, db: Option<String>) -> Vec<String> {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let (ann, bob) = (d.app.user_token("ann").await, d.app.user_token("bob").await);
    settings(
        &d.app,
        &admin,
        json!({"activationOrder": order, "maxTotalActivationsPerRound": 2, "queueQuotaEnabled": true}),
    )
    .await;
    let queue = json!({"name": "team", "open": true, "capacity": {"cpu": "1"}, "members": ["ann", "bob"]});
    let (status, _) = call(&d.app, "POST", "/api/v1/admin/queues", &admin, Some(queue.clone())).await;
    assert_eq!(status, 201);
    let mut names = std::collections::HashMap::new();
    let mut filler = timed_job("filler", json!({"cpu": "1"}), Some(10));
    filler["queue"] = json!("team");
    submit(&d, &ann, filler).await;
    for (token, name) in [(&ann, "a1"), (&ann, "a2"), (&ann, "a3"), (&bob, "b1")] {
        let mut body = timed_job(name, json!({"cpu": "1"}), None);
        body["queue"] = json!("team");
        let (id, a) = submit(&d, token, body).await;
        assert_eq!(a["admission"]["decision"], "prequeued", "{a}");
        names.insert(id, name.to_string());
    }
    let mut bigger = queue;
    bigger["capacity"] = json!({"cpu": "100"});
    let (status, body) = call(&d.app, "PUT", "/api/v1/admin/queues/team", &admin, Some(bigger)).await;
    assert_eq!(status, 200, "{body}");
    d.settle().await;
    d.advance(11).await;
    let report = d.round().await;
    report.activated.iter().map(|id| names[id].clone()).collect()
}

async fn fair_share_interleaves_owners_where_fcfs_does_not(db: Option<String>) {
    assert_eq!(two_of_four("fcfs", db.clone()).await, ["a1", "a2"]);
    let db = match db {
        Some(_) => Some(anteroom_tests::postgres::fresh_database(&anteroom_tests::postgres::server_url()).await),
        None => None,
    };
    assert_eq!(two_of_four("fairShare", db).await, ["a1", "b1"]);
}
both_driven!(fair_share, fair_share_interleaves_owners_where_fcfs_does_not);

async fn disabling_backfill_holds_prequeued_backfill_jobs(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    let (ann, bob) = (d.app.user_token("ann").await, d.app.user_token("bob").await);
    settings(
        &d.app,
        &admin,
        json!({"backfillEnabled": true, "queueQuotaEnabled": true, "normalJobWaitingToleranceSeconds": 60}),
    )
    .await;
    // The queue's share (shared room, unlike Ann's own quota) holds Ann's second job.
    let (status, body) = call(
        &d.app,
        "PUT",
        "/api/v1/admin/queues/default",
        &admin,
        Some(json!({"name": "default", "open": true, "capacity": {"nvidia.com/a100": "1"}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    submit(&d, &ann, gpu_job("running", "custom", 1, "normal")).await;
    let (timed_out, _) = submit(&d, &ann, gpu_job("waiting", "custom", 1, "normal")).await;
    d.advance(61).await;
    // Bob's elastic notebook waits behind Ann's timed-out job.
    let (elastic, a) = submit(&d, &bob, gpu_job("nb", "jupyter", 1, "backfill")).await;
    assert_eq!(a["admission"]["decision"], "prequeued", "{a}");
    settings(&d.app, &admin, json!({"backfillEnabled": false})).await;
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{timed_out}"), &ann, None).await;
    assert_eq!(status, 204);
    assert!(d.round().await.activated.is_empty());
    assert_eq!(reason_codes(&detail(&d, &bob, elastic).await), ["backfill_disabled"]);
    settings(&d.app, &admin, json!({"backfillEnabled": true})).await;
    assert_eq!(d.round().await.activated, [elastic]);
}
both_driven!(backfill_disabled, disabling_backfill_holds_prequeued_backfill_jobs);

async fn a_job_whose_create_always_fails_does_not_stop_the_jobs_behind_it(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let rex = d.app.user_token("rex").await;
    settings(&d.app, &admin, json!({"queueQuotaEnabled": true})).await;
    let (status, _) = call(
        &d.app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "gone", "open": true})),
    )
    .await;
    assert_eq!(status, 201);
    quota(&d.app, &admin, "default", json!({"cpu": "2"})).await;
    quota(&d.app, &admin, "gone", json!({"cpu": "1"})).await;
    let mut first = timed_job("first", json!({"cpu": "1"}), Some(10));
    first["queue"] = json!("gone");
    submit(&d, &rex, first).await;
    submit(&d, &rex, timed_job("full", json!({"cpu": "2"}), Some(10))).await;
    let mut doomed = timed_job("doomed", json!({"cpu": "1"}), None);
    doomed["queue"] = json!("gone");
    let (doomed, _) = submit(&d, &rex, doomed).await;
    let (behind1, _) = submit(&d, &rex, timed_job("behind1", json!({"cpu": "1"}), None)).await;
    let (behind2, _) = submit(&d, &rex, timed_job("behind2", json!({"cpu": "1"}), None)).await;
    d.settle().await;
    d.advance(11).await;
    // The cluster forgets the queue: every create into it is refused from now on.
    d.app.state.cluster.remove_queue("gone").await.unwrap();
    let report = d.round().await;
    assert_eq!(report.activated, [behind1, behind2], "{report:?}");
    assert_eq!(phase(&d, &rex, doomed).await, "Activating");
    let mut failed = 0;
    for _ in 0..12 {
        d.advance(301).await;
        failed += d.round().await.failed;
    }
    assert_eq!(failed, 1);
    let doomed = detail(&d, &rex, doomed).await;
    assert_eq!(doomed["phase"], "Failed");
    let events = kinds(&doomed);
    assert_eq!(events.iter().filter(|k| *k == "activation_failed").count(), 9);
    assert_eq!(events.last().unwrap(), "failed");
}
both_driven!(
    failing_create,
    a_job_whose_create_always_fails_does_not_stop_the_jobs_behind_it
);

async fn a_config_change_applies_at_the_next_round(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let cal = d.app.user_token("cal").await;
    settings(&d.app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&d.app, &admin, "default", json!({"cpu": "1"})).await;
    submit(&d, &cal, timed_job("first", json!({"cpu": "1"}), None)).await;
    let (held, _) = submit(&d, &cal, timed_job("held", json!({"cpu": "1"}), None)).await;
    assert!(d.round().await.activated.is_empty());
    settings(&d.app, &admin, json!({"queueQuotaEnabled": false})).await;
    assert_eq!(d.round().await.activated, [held]);
}
both_driven!(config_change, a_config_change_applies_at_the_next_round);

/// Two nodes of 8 A100s each.
const SIXTEEN_GPUS: &str = r#"
[[node]]
name = "gpu-0"
cpu = "64"
memory = "512Gi"
accelerators = { "nvidia.com/a100" = "8" }

[[node]]
name = "gpu-1"
cpu = "64"
memory = "512Gi"
accelerators = { "nvidia.com/a100" = "8" }
"#;

async fn a_job_held_by_its_owners_own_quota_blocks_nobody_and_its_clock_starts_at_the_shared_hold(db: Option<String>) {
    let d = Driven::start(db, SIXTEEN_GPUS).await;
    let admin = d.app.admin_token().await;
    let ann = d.app.user_token("ann").await;
    let bob = d.app.user_token("bob").await;
    let cal = d.app.user_token("cal").await;
    let dan = d.app.user_token("dan").await;
    settings(
        &d.app,
        &admin,
        json!({"queueQuotaEnabled": true, "normalJobWaitingToleranceSeconds": 60}),
    )
    .await;
    let rule = quota(&d.app, &admin, "default", json!({"nvidia.com/a100": "4"})).await;
    let (status, body) = call(
        &d.app,
        "PUT",
        "/api/v1/admin/queues/default",
        &admin,
        Some(json!({"name": "default", "open": true, "capacity": {"nvidia.com/a100": "8"}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Ann fills her own quota; her next job is held by it alone: no waiting clock.
    let (first, _) = submit(&d, &ann, gpu_job("first", "custom", 4, "normal")).await;
    let (parked, a) = submit(&d, &ann, gpu_job("parked", "custom", 4, "normal")).await;
    assert_eq!(a["admission"]["reasons"][0]["code"], "quota", "{a}");
    assert!(a["job"]["waitingSince"].is_null(), "{a}");
    // An hour later it is still parked behind her own quota, and blocks no one: Bob's job of
    // the same domain starts at once.
    d.advance(3600).await;
    assert!(d.round().await.activated.is_empty());
    let p = detail(&d, &ann, parked).await;
    assert!(p["waitingSince"].is_null(), "{p}");
    assert_eq!(reason_codes(&p), ["quota"]);
    let (_, a) = submit(&d, &bob, gpu_job("bob", "custom", 3, "normal")).await;
    assert_eq!(a["admission"]["decision"], "activated", "{a}");
    // Ann's first job ends; Cal takes the room the queue had before Ann's turn comes.
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{first}"), &ann, None).await;
    assert_eq!(status, 204);
    let (_, a) = submit(&d, &cal, gpu_job("cal", "custom", 4, "normal")).await;
    assert_eq!(a["admission"]["decision"], "activated", "{a}");
    // Now the queue's capacity (shared room) holds Ann's job: its clock starts at this round,
    // not at its submission an hour ago, so it is not timed out and blocks no one yet.
    assert!(d.round().await.activated.is_empty());
    let p = detail(&d, &ann, parked).await;
    assert_eq!(reason_codes(&p), ["queue_capacity"]);
    assert_eq!(p["waitingSince"], json!(d.clock.now()), "{p}");
    let (_, a) = submit(&d, &dan, timed_job("dan-early", json!({"cpu": "1"}), None)).await;
    assert_eq!(a["admission"]["decision"], "activated", "{a}");
    // One tolerance later it is timed out and blocks the CPU-only jobs of its queue.
    d.advance(61).await;
    let (late, a) = submit(&d, &dan, timed_job("dan-late", json!({"cpu": "1"}), None)).await;
    assert_eq!(a["admission"]["decision"], "prequeued", "{a}");
    assert_eq!(a["admission"]["reasons"][0]["details"]["jobId"], parked, "{a}");
    assert!(d.round().await.activated.is_empty());
    assert_eq!(reason_codes(&detail(&d, &dan, late).await), ["blocked_by"]);
    // The admin lowers Ann's quota below her job: timed out, but now held privately again, it
    // blocks no one any more, at submission or in a round (read from the store's usage).
    let (status, body) = call(
        &d.app,
        "PUT",
        &format!("/api/v1/admin/queue-quotas/{}", rule["id"]),
        &admin,
        Some(json!({"queue": "default", "limits": {"nvidia.com/a100": "2"}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, a) = submit(&d, &dan, timed_job("dan-after", json!({"cpu": "1"}), None)).await;
    assert_eq!(a["admission"]["decision"], "activated", "{a}");
    assert_eq!(d.round().await.activated, [late]);
    assert_eq!(
        reason_codes(&detail(&d, &ann, parked).await),
        ["quota", "queue_capacity"]
    );
}
both_driven!(
    private_hold,
    a_job_held_by_its_owners_own_quota_blocks_nobody_and_its_clock_starts_at_the_shared_hold
);

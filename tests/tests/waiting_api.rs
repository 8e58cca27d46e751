//! Waiting and recovering over real HTTP (issue 27): runtime limits — asked, defaulted and
//! capped by the queue, enforced by the cluster and shown with the time left.

use anteroom_tests::api::{call, code, queue, settings};
use anteroom_tests::both_driven;
use anteroom_tests::driven::*;
use serde_json::{Value, json};

/// A job of the `limited` queue that would run `seconds`, asking for a runtime limit.
fn limited_job(name: &str, seconds: u32, limit: Option<i64>) -> Value {
    let mut body = timed_job(name, json!({"cpu": "1", "memory": "1Gi"}), Some(seconds));
    body["queue"] = json!("limited");
    if let Some(limit) = limit {
        body["maxRuntimeSeconds"] = json!(limit);
    }
    body
}

async fn a_runtime_limit_is_defaulted_capped_and_enforced(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let ann = d.app.user_token("ann").await;
    queue(
        &d.app,
        &admin,
        json!({"name": "limited", "open": true, "defaultRuntimeSeconds": 600, "maxRuntimeSeconds": 3600}),
    )
    .await;
    // Listed with its limits, for the form.
    let queues = d.app.get_json("/api/v1/queues", Some(&ann)).await;
    let limited = queues
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "limited")
        .unwrap();
    assert_eq!(
        (
            limited["defaultRuntimeSeconds"].as_i64(),
            limited["maxRuntimeSeconds"].as_i64()
        ),
        (Some(600), Some(3600))
    );

    // Above the queue's maximum: 422 on the field, nothing written.
    let (status, body) = call(
        &d.app,
        "POST",
        "/api/v1/jobs",
        &ann,
        Some(limited_job("greedy", 60, Some(7200))),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(code(&body), "validation_failed");
    assert_eq!(
        body["error"]["details"]["fields"][0]["field"], "maxRuntimeSeconds",
        "{body}"
    );
    assert_eq!(
        body["error"]["details"]["fields"][0]["code"], "runtimeAboveQueueMax",
        "{body}"
    );
    // Outside the range any queue allows: 422 too.
    for absurd in [0, 59, -5, 31_536_001, i64::MAX] {
        let (status, body) = call(
            &d.app,
            "POST",
            "/api/v1/jobs",
            &ann,
            Some(limited_job("absurd", 60, Some(absurd))),
        )
        .await;
        assert_eq!(status, 422, "{absurd}: {body}");
    }
    let list = d.app.get_json("/api/v1/jobs", Some(&ann)).await;
    assert_eq!(list["total"], 0, "nothing written: {list}");

    // None asked: the queue's default. Asked: its own.
    let (defaulted, _) = submit(&d, &ann, limited_job("defaulted", 100_000, None)).await;
    let (own, _) = submit(&d, &ann, limited_job("own", 100_000, Some(120))).await;
    let (quick, _) = submit(&d, &ann, limited_job("quick", 30, Some(120))).await;
    assert_eq!(detail(&d, &ann, defaulted).await["maxRuntimeSeconds"], 600);
    assert_eq!(detail(&d, &ann, own).await["maxRuntimeSeconds"], 120);
    // The default queue has no limit.
    let mut plain = timed_job("plain", json!({"cpu": "1"}), Some(100_000));
    plain["queue"] = json!("default");
    let (unlimited, _) = submit(&d, &ann, plain).await;
    assert_eq!(detail(&d, &ann, unlimited).await["maxRuntimeSeconds"], Value::Null);
    d.settle().await;
    for id in [defaulted, own, quick, unlimited] {
        assert_eq!(phase(&d, &ann, id).await, "Running", "job {id}");
    }

    // A job that ends before its limit completes; one that reaches it fails, DeadlineExceeded.
    d.advance(60).await;
    assert_eq!(phase(&d, &ann, quick).await, "Completed");
    assert_eq!(phase(&d, &ann, own).await, "Running");
    d.advance(60).await;
    let failed = detail(&d, &ann, own).await;
    assert_eq!(failed["phase"], "Failed", "{failed}");
    assert_eq!(failed["failure"]["reason"], "DeadlineExceeded", "{failed}");
    let (status, pods) = call(&d.app, "GET", &format!("/api/v1/jobs/{own}/pods"), &ann, None).await;
    assert_eq!(status, 200);
    assert_eq!(pods["pods"][0]["reason"], "DeadlineExceeded", "{pods}");
    assert_eq!(phase(&d, &ann, defaulted).await, "Running");
    d.advance(480).await;
    assert_eq!(phase(&d, &ann, defaulted).await, "Failed");
    assert_eq!(phase(&d, &ann, unlimited).await, "Running", "no limit, no end");

    // Run again: the new run keeps the limit it had.
    let (status, again) = call(
        &d.app,
        "POST",
        &format!("/api/v1/jobs/{own}/resubmit"),
        &ann,
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(again["job"]["maxRuntimeSeconds"], 120, "{again}");
}
both_driven!(runtime_limits, a_runtime_limit_is_defaulted_capped_and_enforced);

async fn a_queue_refuses_runtime_limits_out_of_range_or_a_default_above_its_maximum(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    for (body, field) in [
        (
            json!({"name": "q1", "open": true, "defaultRuntimeSeconds": 7200, "maxRuntimeSeconds": 3600}),
            "defaultRuntimeSeconds",
        ),
        (
            json!({"name": "q2", "open": true, "maxRuntimeSeconds": 10}),
            "maxRuntimeSeconds",
        ),
        (
            json!({"name": "q3", "open": true, "defaultRuntimeSeconds": 40_000_000}),
            "defaultRuntimeSeconds",
        ),
    ] {
        let (status, answer) = call(&d.app, "POST", "/api/v1/admin/queues", &admin, Some(body.clone())).await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(answer["error"]["details"]["fields"][0]["field"], field, "{answer}");
    }
    let listed = d.app.get_json("/api/v1/admin/queues", Some(&admin)).await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "only default: {listed}");
    // Limits set, then a replace by a client that does not know them: kept. `null`: cleared.
    let limited = json!({"name": "lab", "open": true, "defaultRuntimeSeconds": 3600, "maxRuntimeSeconds": 7200});
    let (status, _) = call(&d.app, "POST", "/api/v1/admin/queues", &admin, Some(limited)).await;
    assert_eq!(status, 201);
    let (status, kept) = call(
        &d.app,
        "PUT",
        "/api/v1/admin/queues/lab",
        &admin,
        Some(json!({"name": "lab", "open": false})),
    )
    .await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(
        (
            kept["open"].clone(),
            kept["defaultRuntimeSeconds"].clone(),
            kept["maxRuntimeSeconds"].clone()
        ),
        (json!(false), json!(3600), json!(7200))
    );
    // A change of one checked against the other as stored: a default above the kept maximum.
    let (status, answer) = call(
        &d.app,
        "PUT",
        "/api/v1/admin/queues/lab",
        &admin,
        Some(json!({"name": "lab", "open": false, "defaultRuntimeSeconds": 9000})),
    )
    .await;
    assert_eq!(
        (
            status.as_u16(),
            answer["error"]["details"]["fields"][0]["field"].clone()
        ),
        (422, json!("defaultRuntimeSeconds")),
        "{answer}"
    );
    let (status, cleared) = call(
        &d.app,
        "PUT",
        "/api/v1/admin/queues/lab",
        &admin,
        Some(json!({"name": "lab", "open": false, "defaultRuntimeSeconds": null})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            cleared["defaultRuntimeSeconds"].clone(),
            cleared["maxRuntimeSeconds"].clone()
        ),
        (Value::Null, json!(7200))
    );
}
both_driven!(
    queue_runtime_limits,
    a_queue_refuses_runtime_limits_out_of_range_or_a_default_above_its_maximum
);

/// The job's event kinds, oldest first.
fn event_kinds(job: &Value) -> Vec<String> {
    kinds(job)
}

async fn a_preempted_job_that_asked_goes_back_to_the_prequeue_keeping_its_place_at_most_n_times(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    settings(&d.app, &admin, json!({"requeueByDefault": true, "maxRequeues": 1})).await;
    let status = d.app.get_json("/api/v1/prequeue/status", Some(&admin)).await;
    assert_eq!(status["requeueByDefault"], true, "{status}");
    let (victims, normal) =
        node_with_three_elastic_jobs_and_a_waiting_normal_job(&d, gpu_job("train", "custom", 4, "normal")).await;
    let nb4 = victims[2];
    // A submission may say no to the admin's default.
    // (CPU only: the GPU node's room stays as it was.)
    let mut declines = timed_job("declines", json!({"cpu": "1"}), None);
    declines["kind"] = json!("jupyter");
    declines["scheduleType"] = json!("backfill");
    declines["requeue"] = json!(false);
    let (declining, _) = submit(&d, &admin, declines).await;
    assert_eq!(detail(&d, &admin, declining).await["requeue"], false);
    let requeued_before = anteroom_tests::api::metric(&d.app, "anteroom_prequeue_requeued_total").await;
    let before = detail(&d, &admin, nb4).await;
    assert_eq!(before["requeue"], true, "{before}");
    d.advance(61).await;
    assert_eq!(d.round().await.preempted, [nb4]);
    let preempted = detail(&d, &admin, nb4).await;
    assert_eq!(preempted["phase"], "Preempted", "its pods have the grace period first");
    let last = preempted["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["kind"].as_str(), last["details"]["requeue"].as_bool()),
        (Some("preempted"), Some(true))
    );

    // Its pods gone (the admin's grace, 30 s): back in the prequeue with its submission time.
    d.advance(31).await;
    let requeued = detail(&d, &admin, nb4).await;
    assert_eq!(requeued["phase"], "Prequeue", "{requeued}");
    assert_eq!(requeued["requeues"], 1);
    assert_eq!(requeued["submittedAt"], before["submittedAt"], "keeps its place");
    assert_eq!(requeued["finishedAt"], Value::Null);
    assert_eq!(requeued["startedAt"], Value::Null);
    assert_eq!(event_kinds(&requeued).last().unwrap(), "requeued");
    assert_eq!(
        phase(&d, &admin, normal).await,
        "Running",
        "the room went to the normal job"
    );
    assert_eq!(
        anteroom_tests::api::metric(&d.app, "anteroom_prequeue_requeued_total").await - requeued_before,
        1.0
    );
    // It runs again once there is room: the next round activates it (the cluster holds it
    // Pending while the normal job runs).
    assert_eq!(d.round().await.activated, [nb4]);
    d.settle().await;
    assert_eq!(phase(&d, &admin, nb4).await, "Pending");

    // A second normal job, later: nb4 gets the room first (it was created first) and is
    // preempted again past the tolerance — this time for good, maxRequeues being 1.
    let (second, _) = submit(&d, &admin, gpu_job("train2", "custom", 4, "normal")).await;
    d.advance(100_000).await;
    assert_eq!(phase(&d, &admin, normal).await, "Completed");
    assert_eq!(phase(&d, &admin, nb4).await, "Running");
    assert_eq!(phase(&d, &admin, second).await, "Pending");
    d.advance(61).await;
    assert_eq!(d.round().await.preempted, [nb4]);
    let last = detail(&d, &admin, nb4).await["events"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["details"]["requeue"], false, "{last}");
    d.advance(31).await;
    let ended = detail(&d, &admin, nb4).await;
    assert_eq!(
        (ended["phase"].as_str(), ended["requeues"].as_i64()),
        (Some("Preempted"), Some(1)),
        "{ended}"
    );
    assert_eq!(phase(&d, &admin, second).await, "Running");
}
both_driven!(
    requeue,
    a_preempted_job_that_asked_goes_back_to_the_prequeue_keeping_its_place_at_most_n_times
);

/// A job of queue `lab` asking for `cpu` CPUs, running a day, with a runtime limit.
fn lab_job(name: &str, cpu: u32, limit: Option<i64>) -> Value {
    let mut body = timed_job(name, json!({"cpu": cpu.to_string(), "memory": "1Gi"}), None);
    body["queue"] = json!("lab");
    if let Some(limit) = limit {
        body["maxRuntimeSeconds"] = json!(limit);
    }
    body
}

/// A labelled metric's value on `/metrics` (0 before it is first recorded).
async fn labelled_metric(d: &Driven, line_start: &str) -> f64 {
    d.app
        .metrics()
        .await
        .lines()
        .find_map(|l| l.strip_prefix(line_start).map(|n| n.trim().parse().unwrap()))
        .unwrap_or(0.0)
}

fn at(d: &Driven, seconds: i64) -> String {
    use anteroom::cluster::clock::Clock;
    (d.clock.now() + chrono::Duration::seconds(seconds)).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

fn same_instant(value: &Value, expected: &str) -> bool {
    let parse = |s: &str| chrono::DateTime::parse_from_rfc3339(s).ok();
    value.as_str().and_then(parse).is_some() && value.as_str().and_then(parse) == parse(expected)
}

async fn what_is_ahead_and_when_it_starts_follow_the_real_order_and_the_limits(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let (ann, bob) = (d.app.user_token("ann").await, d.app.user_token("bob").await);
    settings(&d.app, &admin, json!({"queueQuotaEnabled": true})).await;
    queue(
        &d.app,
        &admin,
        json!({"name": "lab", "open": true, "capacity": {"cpu": "2"}}),
    )
    .await;
    let (first, a) = submit(&d, &ann, lab_job("first", 2, Some(600))).await;
    assert_eq!(a["admission"]["decision"], "activated", "{a}");
    d.settle().await;
    let (a2, _) = submit(&d, &ann, lab_job("a2", 2, Some(300))).await;
    let (a3, _) = submit(&d, &ann, lab_job("a3", 2, Some(300))).await;
    let (b1, answer) = submit(&d, &bob, lab_job("b1", 2, Some(300))).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");

    // Before any round, no forecast: the position is counted in submission order, the
    // estimate absent, and nothing is listed ahead (no 503: the store has the job).
    let standing = detail(&d, &bob, b1).await["prequeue"].clone();
    assert_eq!(
        (standing["position"].as_i64(), standing["basis"].clone()),
        (Some(3), Value::Null),
        "{standing}"
    );
    let (status, body) = call(&d.app, "GET", &format!("/api/v1/jobs/{b1}/ahead"), &bob, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (
            body["position"].as_i64(),
            body["total"].as_i64(),
            body["items"].as_array().map(Vec::len)
        ),
        (Some(3), Some(0), Some(0)),
        "{body}"
    );

    // FCFS: Bob's job is behind Ann's two; he sees them as another user's, with what they ask
    // for, why they wait and when they start; an admin sees whose they are.
    d.round().await;
    let (status, ahead) = call(&d.app, "GET", &format!("/api/v1/jobs/{b1}/ahead"), &bob, None).await;
    assert_eq!(status, 200, "{ahead}");
    assert_eq!(
        (
            ahead["position"].as_i64(),
            ahead["total"].as_i64(),
            ahead["order"].as_str()
        ),
        (Some(3), Some(2), Some("fcfs")),
        "{ahead}"
    );
    let items = ahead["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    for item in items {
        assert_eq!(
            (
                item["id"].clone(),
                item["owner"].clone(),
                item["name"].clone(),
                item["mine"].clone()
            ),
            (Value::Null, Value::Null, Value::Null, json!(false)),
            "{item}"
        );
        assert_eq!(item["resources"]["cpu"], "2");
        assert_eq!(item["reasons"][0]["code"], "queue_capacity", "{item}");
        assert_eq!(
            item["reasons"][0]["details"],
            Value::Null,
            "another user's figures stay theirs: {item}"
        );
    }
    // The first job runs until its limit (600 s), then a2 (300 s), then a3, then b1.
    assert!(same_instant(&items[0]["estimatedStartAt"], &at(&d, 600)), "{items:?}");
    assert!(same_instant(&items[1]["estimatedStartAt"], &at(&d, 900)), "{items:?}");
    let standing = detail(&d, &bob, b1).await["prequeue"].clone();
    assert_eq!(
        (standing["position"].as_i64(), standing["basis"].as_str()),
        (Some(3), Some("limits")),
        "{standing}"
    );
    assert!(same_instant(&standing["estimatedStartAt"], &at(&d, 1200)), "{standing}");
    let (_, seen_by_admin) = call(&d.app, "GET", &format!("/api/v1/jobs/{b1}/ahead?limit=1"), &admin, None).await;
    assert_eq!(seen_by_admin["items"].as_array().unwrap().len(), 1, "{seen_by_admin}");
    assert_eq!(
        (
            seen_by_admin["items"][0]["id"].as_i64(),
            seen_by_admin["items"][0]["owner"].as_str()
        ),
        (Some(a2), Some("ann"))
    );
    assert_eq!(seen_by_admin["total"], 2);
    let (_, own) = call(&d.app, "GET", &format!("/api/v1/jobs/{a3}/ahead"), &ann, None).await;
    assert_eq!(
        (own["items"][0]["id"].as_i64(), own["items"][0]["mine"].as_bool()),
        (Some(a2), Some(true)),
        "{own}"
    );

    // Fair share: Ann already runs 2 CPUs, Bob nothing: his job goes first, whatever the
    // submission times.
    settings(&d.app, &admin, json!({"activationOrder": "fairShare"})).await;
    d.round().await;
    let (_, ahead) = call(&d.app, "GET", &format!("/api/v1/jobs/{b1}/ahead"), &bob, None).await;
    assert_eq!(
        (
            ahead["position"].as_i64(),
            ahead["total"].as_i64(),
            ahead["order"].as_str()
        ),
        (Some(1), Some(0), Some("fairShare")),
        "{ahead}"
    );
    assert_eq!(detail(&d, &ann, a2).await["prequeue"]["position"], 2);
    let admin_list = d.app.get_json("/api/v1/admin/prequeue", Some(&admin)).await;
    let listed: Vec<(i64, i64)> = admin_list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["job"]["id"].as_i64().unwrap(), i["position"].as_i64().unwrap()))
        .collect();
    assert!(
        listed.contains(&(b1, 1)) && listed.contains(&(a2, 2)) && listed.contains(&(a3, 3)),
        "{listed:?}"
    );

    // Bad asks.
    let (status, body) = call(&d.app, "GET", &format!("/api/v1/jobs/{first}/ahead"), &ann, None).await;
    assert_eq!((status.as_u16(), code(&body)), (409, "job_not_waiting"), "{body}");
    let (status, _) = call(&d.app, "GET", &format!("/api/v1/jobs/{a2}/ahead"), &bob, None).await;
    assert_eq!(status, 404, "another user's job is not there");
    for limit in ["0", "501", "x"] {
        let (status, _) = call(
            &d.app,
            "GET",
            &format!("/api/v1/jobs/{b1}/ahead?limit={limit}"),
            &bob,
            None,
        )
        .await;
        assert_eq!(status, 422, "limit={limit}");
    }

    // Back to FCFS. The first job reaches its limit: a2 starts when its estimate said, and
    // the activation counts as within its estimate.
    settings(&d.app, &admin, json!({"activationOrder": "fcfs"})).await;
    d.round().await;
    let within = "anteroom_estimate_outcomes_total{outcome=\"within\"} ";
    let within_before = labelled_metric(&d, within).await;
    d.advance(600).await;
    assert_eq!(phase(&d, &ann, first).await, "Failed");
    assert_eq!(d.round().await.activated, [a2]);
    assert_eq!(labelled_metric(&d, within).await - within_before, 1.0);
}
both_driven!(
    ahead_and_estimates,
    what_is_ahead_and_when_it_starts_follow_the_real_order_and_the_limits
);

async fn a_job_waiting_for_one_without_a_limit_has_no_estimate(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let ann = d.app.user_token("ann").await;
    settings(&d.app, &admin, json!({"queueQuotaEnabled": true})).await;
    queue(
        &d.app,
        &admin,
        json!({"name": "lab", "open": true, "capacity": {"cpu": "2"}}),
    )
    .await;
    submit(&d, &ann, lab_job("endless", 2, None)).await;
    d.settle().await;
    let (waiting, _) = submit(&d, &ann, lab_job("waiting", 2, Some(300))).await;
    d.round().await;
    let standing = detail(&d, &ann, waiting).await["prequeue"].clone();
    assert_eq!(
        (standing["basis"].as_str(), standing["estimatedStartAt"].clone()),
        (Some("unknown"), Value::Null),
        "{standing}"
    );
}
both_driven!(no_estimate, a_job_waiting_for_one_without_a_limit_has_no_estimate);

async fn deleting_a_preempted_job_before_its_requeue_cancels_it(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    settings(&d.app, &admin, json!({"requeueByDefault": true})).await;
    let (victims, _) =
        node_with_three_elastic_jobs_and_a_waiting_normal_job(&d, gpu_job("train", "custom", 4, "normal")).await;
    let eli = d.app.token("eli", anteroom_tests::USER_PASSWORD).await;
    let nb4 = victims[2];
    d.advance(61).await;
    assert_eq!(d.round().await.preempted, [nb4]);
    assert_eq!(phase(&d, &eli, nb4).await, "Preempted");
    // Its owner does not want it back: the delete is accepted while its pods stop.
    let (status, body) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{nb4}"), &eli, None).await;
    assert_eq!(status, 204, "{body}");
    d.advance(31).await;
    let gone = detail(&d, &eli, nb4).await;
    assert_eq!(gone["phase"], "Deleted", "{gone}");
    assert!(!kinds(&gone).contains(&"requeued".to_owned()), "{gone}");
    // A job preempted for good is finished: a delete is refused as before.
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{nb4}"), &eli, None).await;
    assert_eq!(status, 409);
}
both_driven!(
    delete_cancels_requeue,
    deleting_a_preempted_job_before_its_requeue_cancels_it
);

async fn a_short_job_starts_past_a_timed_out_one_when_it_ends_before_that_ones_estimate(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let (ann, bob, cara) = (
        d.app.user_token("ann").await,
        d.app.user_token("bob").await,
        d.app.user_token("cara").await,
    );
    settings(
        &d.app,
        &admin,
        json!({"queueQuotaEnabled": true, "backfillEnabled": true, "normalJobWaitingToleranceSeconds": 60}),
    )
    .await;
    queue(
        &d.app,
        &admin,
        json!({"name": "lab", "open": true, "capacity": {"cpu": "5"}}),
    )
    .await;
    let cpu_job = |name: &str, cpu: u32, limit: i64| {
        let mut body = lab_job(name, cpu, Some(limit));
        body["tasks"][0]["resources"] = json!({"cpu": cpu.to_string()});
        body
    };
    let (_running, a) = submit(&d, &ann, cpu_job("running", 3, 600)).await;
    assert_eq!(a["admission"]["decision"], "activated", "{a}");
    d.settle().await;
    // Bob's 3-CPU job waits for the queue's room past its tolerance: it blocks the queue.
    let (big, _) = submit(&d, &bob, cpu_job("big", 3, 600)).await;
    d.advance(61).await;
    // Cara's two 1-CPU jobs fit the room left, but wait behind the timed-out job.
    let (short, a) = submit(&d, &cara, cpu_job("short", 1, 300)).await;
    assert_eq!(a["admission"]["decision"], "prequeued", "{a}");
    let (long, _) = submit(&d, &cara, cpu_job("long", 1, 3_600)).await;
    assert!(d.round().await.activated.is_empty(), "off: both wait");
    for id in [short, long] {
        assert_eq!(reason_codes(&detail(&d, &cara, id).await), ["blocked_by"]);
    }
    // The timed-out job is estimated to start when the running one reaches its limit (600 s
    // after it started). The short job ends 300 s from now, before that: with the setting on
    // it starts, and the timed-out job's estimate does not move; the long one would run past
    // it and stays behind.
    let before = detail(&d, &bob, big).await["prequeue"]["estimatedStartAt"].clone();
    assert!(before.is_string(), "{before}");
    settings(&d.app, &admin, json!({"timeAwareBackfill": true})).await;
    assert_eq!(d.round().await.activated, [short]);
    assert_eq!(reason_codes(&detail(&d, &cara, long).await), ["blocked_by"]);
    d.round().await;
    assert_eq!(detail(&d, &bob, big).await["prequeue"]["estimatedStartAt"], before);
}
both_driven!(
    time_aware_backfill,
    a_short_job_starts_past_a_timed_out_one_when_it_ends_before_that_ones_estimate
);

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
    // The 1-GPU notebook says no; the others take the admin's default.
    execute_sql(
        &d,
        &format!("UPDATE jobs SET requeue = false WHERE id = {}", victims[0]),
    )
    .await;
    let nb4 = victims[2];
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
        anteroom_tests::api::metric(&d.app, "anteroom_prequeue_requeued_total").await,
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

async fn execute_sql(d: &Driven, sql: &str) {
    anteroom_tests::api::execute(&d.app, sql).await;
}

//! Waiting and recovering over real HTTP (issue 27): runtime limits — asked, defaulted and
//! capped by the queue, enforced by the cluster and shown with the time left.

use anteroom_tests::api::{call, code, queue};
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

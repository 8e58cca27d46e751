//! The prequeue watcher through the API: status sync and activation rounds, and its metrics.

use std::time::Duration;

use anteroom_tests::api::*;
use anteroom_tests::{TestApp, both};
use serde_json::json;

async fn a_held_job_starts_when_the_job_holding_its_quota_finishes(app: TestApp) {
    let admin = app.admin_token().await;
    let sara = app.user_token("sara").await;
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&app, &admin, "default", json!({"cpu": "2"})).await;
    let mut short = job("short", json!({"cpu": "2"}));
    short["tasks"][0]["command"] = json!(["sleep", "1"]);
    let (_, first) = call(&app, "POST", "/api/v1/jobs", &sara, Some(short)).await;
    assert_eq!(first["admission"]["decision"], "activated");
    let (_, held) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &sara,
        Some(job("held", json!({"cpu": "2"}))),
    )
    .await;
    assert_eq!(held["admission"]["decision"], "prequeued");
    let (first, held) = (job_id(&first), job_id(&held));
    // The simulated cluster runs the first job for 1 s; its end is synced back, frees the
    // quota and wakes the watcher, which activates the held job. Polled, not timed.
    let mut phases = (String::new(), String::new());
    for _ in 0..100 {
        let (_, a) = call(&app, "GET", &format!("/api/v1/jobs/{first}"), &sara, None).await;
        let (_, b) = call(&app, "GET", &format!("/api/v1/jobs/{held}"), &sara, None).await;
        phases = (
            a["phase"].as_str().unwrap().to_string(),
            b["phase"].as_str().unwrap().to_string(),
        );
        // `Activating` is the claim before the create: its `activated` event comes with
        // `Pending`, in the write after the create (CI once saw the claim in between).
        if phases.1 != "Prequeue" && phases.1 != "Activating" {
            let kinds: Vec<&str> = b["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["kind"].as_str().unwrap())
                .collect();
            // (and `started` once its pods run)
            assert_eq!(kinds[..3], ["submitted", "prequeued", "activated"], "{kinds:?}");
            assert!(kinds[3..].iter().all(|k| *k == "started"), "{kinds:?}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(phases.0, "Completed", "the first job's end was synced back");
    assert!(
        !["Prequeue", "Activating"].contains(&phases.1.as_str()),
        "the held job was activated once the quota allowed: {}",
        phases.1
    );
}
both!(
    watcher_activation,
    a_held_job_starts_when_the_job_holding_its_quota_finishes
);

/// The metrics recorder is one per process: this test proves something under `cargo nextest`
/// (a process per test, as `./anteroom.sh test` runs it), where no other app records.
#[tokio::test]
async fn the_watcher_reports_its_rounds_and_the_prequeue_length_on_metrics() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let tina = app.user_token("tina").await;
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&app, &admin, "default", json!({"cpu": "1"})).await;
    call(&app, "POST", "/api/v1/jobs", &tina, Some(job("a", json!({"cpu": "1"})))).await;
    call(&app, "POST", "/api/v1/jobs", &tina, Some(job("b", json!({"cpu": "1"})))).await;
    // The prequeued submission wakes the watcher; its round records the metrics. Polled.
    let mut text = String::new();
    for _ in 0..50 {
        text = app.metrics().await;
        if text.contains("anteroom_prequeue_round_seconds")
            && text.contains("anteroom_prequeue_jobs{queue=\"default\",kind=\"normal\"} 1")
            && text.contains("anteroom_prequeue_leader")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(text.contains("anteroom_prequeue_round_seconds"), "{text}");
    assert!(
        text.contains("anteroom_prequeue_jobs{queue=\"default\",kind=\"normal\"} 1"),
        "{text}"
    );
    assert!(text.contains("anteroom_prequeue_activations_total"), "{text}");
    assert!(
        text.contains("anteroom_prequeue_leader 1"),
        "this replica leads: {text}"
    );
    assert!(text.contains("anteroom_prequeue_preempted_total"), "{text}");
}

async fn the_running_watcher_holds_the_lease_and_releases_it_on_shutdown(mut app: TestApp) {
    use sea_orm::{ConnectionTrait, Statement};
    let db = app.state.db.clone();
    let holder = || async {
        let row = db
            .query_one_raw(Statement::from_string(
                db.get_database_backend(),
                "SELECT holder, fence FROM leases WHERE name = 'prequeue-watcher'",
            ))
            .await
            .unwrap();
        row.map(|r| {
            (
                r.try_get::<String>("", "holder").unwrap(),
                r.try_get::<i64>("", "fence").unwrap(),
            )
        })
    };
    // The loop takes the lease at its start. Polled, not timed.
    let mut held = None;
    for _ in 0..100 {
        held = holder().await;
        if held.as_ref().is_some_and(|(h, _)| !h.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, fence) = held.clone().expect("the lease row exists");
    assert!(!held.unwrap().0.is_empty(), "the watcher holds its lease");
    app.stop_server().await;
    let (after, same_fence) = holder().await.unwrap();
    assert_eq!(
        after, "",
        "released on shutdown: the next replica need not wait for the expiry"
    );
    assert_eq!(same_fence, fence);
    // A second holder gets it at once, with a greater fence.
    let next = anteroom::store::lease::Lease::for_this_process("prequeue-watcher", chrono::Duration::seconds(15));
    let taken = next
        .acquire(&db, chrono::Utc::now())
        .await
        .unwrap()
        .expect("free at once");
    assert!(taken.token > fence);
    let other = anteroom::store::lease::Lease::for_this_process("prequeue-watcher", chrono::Duration::seconds(15));
    assert!(
        other.acquire(&db, chrono::Utc::now()).await.unwrap().is_none(),
        "held: no second holder"
    );
}
both!(
    watcher_lease,
    the_running_watcher_holds_the_lease_and_releases_it_on_shutdown
);

//! Waiting and recovering in the web UI (issue 27; headless Chromium, the running app, the
//! simulated cluster, the watcher on its own ticker): a waiting job's page says when it is
//! likely to start and lists the jobs ahead of it, another user's shown as such; a running
//! job shows the time its limit leaves; a researcher adds a webhook and sees its secret once.

use anteroom_tests::api::{call, queue, settings, submit_job};
use anteroom_tests::browser::{Browser, require_ui};
use anteroom_tests::{TestApp, USER_PASSWORD};
use serde_json::{Value, json};

/// Waits until the element matching `css` contains `text`.
async fn shows(b: &Browser, css: &str, text: &str) {
    let condition = format!("document.querySelector({css:?})?.textContent.includes({text:?})");
    b.wait_until(&format!("{css} shows {text:?}"), &condition)
        .await
        .unwrap();
}

fn lab_job(name: &str, limit: i64) -> Value {
    json!({"name": name, "kind": "custom", "queue": "lab", "maxRuntimeSeconds": limit,
        "tasks": [{"name": "main", "replicas": 1, "image": "busybox", "command": ["sleep", "3600"],
        "resources": {"cpu": "2", "memory": "1Gi"}}]})
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_a_waiting_job_says_when_it_starts_and_who_is_ahead_and_a_webhook_is_added() {
    require_ui();
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let (alice, bob) = (app.user_token("alice").await, app.user_token("bob").await);
    settings(
        &app,
        &admin,
        json!({"queueQuotaEnabled": true, "activateTickerIntervalSeconds": 1}),
    )
    .await;
    queue(
        &app,
        &admin,
        json!({"name": "lab", "open": true, "capacity": {"cpu": "2"}}),
    )
    .await;
    let (running, _) = submit_job(&app, &alice, lab_job("first", 1800)).await;
    submit_job(&app, &bob, lab_job("bobs", 600)).await;
    let (waiting, _) = submit_job(&app, &alice, lab_job("mine", 600)).await;
    // The watcher's forecast covers the job within a few rounds.
    let mut covered = false;
    for _ in 0..100 {
        let (status, _) = call(&app, "GET", &format!("/api/v1/jobs/{waiting}/ahead"), &alice, None).await;
        if status == 200 {
            covered = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(covered, "the forecast covers the waiting job");

    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "alice", USER_PASSWORD).await;
    b.client.goto(&app.url(&format!("/jobs/{waiting}"))).await.unwrap();
    shows(&b, "[data-testid=estimate]", "Likely to start within").await;
    shows(&b, "[data-testid=ahead]", "1 job ahead of it").await;
    shows(&b, "[data-testid=ahead-row]", "Another user's job").await;
    shows(&b, "[data-testid=ahead-row]", "Queue capacity").await;
    assert!(
        !b.text("[data-testid=ahead]").await.contains("bobs"),
        "Bob's job name stays his"
    );
    b.assert_clean("a waiting job's page").await;

    b.client.goto(&app.url(&format!("/jobs/{running}"))).await.unwrap();
    shows(&b, "[data-testid=runtime-left]", "left before the cluster ends it").await;

    // A webhook: the admins allow the host first.
    let (status, _) = call(
        &app,
        "PUT",
        "/api/v1/admin/webhook-destinations",
        &admin,
        Some(json!({"hosts": ["127.0.0.1:9"]})),
    )
    .await;
    assert_eq!(status, 200);
    b.client.goto(&app.url("/notifications")).await.unwrap();
    b.wait_for("[data-testid=webhook-form]").await.unwrap();
    shows(&b, "[data-testid=empty]", "No webhook yet").await;
    b.fill("#webhook-url", "http://127.0.0.1:9/anteroom").await;
    b.click("[data-testid=save-webhook]").await;
    b.wait_for("[data-testid=webhook-secret]").await.unwrap();
    shows(&b, "[data-testid=webhooks]", "http://127.0.0.1:9/anteroom").await;
    b.assert_clean("the notifications page").await;
    // Another host is refused on its field.
    b.fill("#webhook-url", "http://10.9.9.9/x").await;
    b.click("[data-testid=save-webhook]").await;
    shows(&b, "#webhook-url-error", "not among the destinations").await;
    b.close().await;
}

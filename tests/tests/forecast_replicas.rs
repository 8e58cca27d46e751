//! A prequeued job's standing at once and the same on every replica (issue 41, point 2;
//! `spec/prequeue.md` §8): real watcher loops with the ticker at an hour, so only the wake-up of
//! the submission can explain a forecast that covers the job; fair share, so the forecast's
//! order is not the submission order a replica could count by itself.

use anteroom_tests::TestApp;
use anteroom_tests::api::{call, job, queue, settings};
use serde_json::{Value, json};

/// A one-task job into `lab` asking for `cpu`, with a runtime limit (so it has an estimate).
fn lab_job(name: &str, cpu: u32) -> Value {
    let mut body = job(name, json!({"cpu": cpu.to_string()}));
    body["queue"] = json!("lab");
    body["maxRuntimeSeconds"] = json!(600);
    body
}

/// Submits through `through`; the job's id and the admission's decision.
async fn submit(through: &TestApp, token: &str, body: Value) -> (i64, String) {
    let (status, answer) = call(through, "POST", "/api/v1/jobs", token, Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["job"]["id"].as_i64().unwrap();
    (id, answer["admission"]["decision"].as_str().unwrap().to_owned())
}

/// What `replica` answers for the standing of job `id`: its `/ahead` and its detail's
/// `prequeue`.
async fn standing(replica: &TestApp, token: &str, id: i64) -> (Value, Value) {
    let (status, ahead) = call(replica, "GET", &format!("/api/v1/jobs/{id}/ahead"), token, None).await;
    assert_eq!(status, 200, "{ahead}");
    let (status, detail) = call(replica, "GET", &format!("/api/v1/jobs/{id}"), token, None).await;
    assert_eq!(status, 200, "{detail}");
    (ahead, detail["prequeue"].clone())
}

/// Submits, through `first`, Ann's job that fills `lab` and two of hers that wait, then Bob's
/// through `second`, and asks both replicas at once where Bob's stands: first under fair share
/// (Bob uses nothing, Ann all), whatever the submission order says.
async fn the_standing_exists_at_once_and_is_the_same_on(first: &TestApp, second: &TestApp) {
    let admin = first.admin_token().await;
    settings(
        first,
        &admin,
        json!({"activateTickerIntervalSeconds": 3600, "queueQuotaEnabled": true, "activationOrder": "fairShare"}),
    )
    .await;
    queue(
        first,
        &admin,
        json!({"name": "lab", "open": true, "capacity": {"cpu": "2"}}),
    )
    .await;
    let (ann, bob) = (first.user_token("ann").await, first.user_token("bob").await);
    let (_, decision) = submit(first, &ann, lab_job("fills", 2)).await;
    assert_eq!(decision, "activated");
    // In quick succession: the rounds they wake follow each other within the forecast's usual
    // 2 s, so Bob's is covered only because a round with a job the board lacks forecasts at once.
    let (a2, _) = submit(first, &ann, lab_job("a2", 1)).await;
    let (a3, _) = submit(first, &ann, lab_job("a3", 1)).await;
    let (b1, decision) = submit(second, &bob, lab_job("b1", 1)).await;
    assert_eq!(decision, "prequeued");

    let (ahead, detail) = standing(second, &bob, b1).await;
    assert_eq!(
        (
            ahead["order"].as_str(),
            ahead["position"].as_i64(),
            ahead["total"].as_i64()
        ),
        (Some("fairShare"), Some(1), Some(0)),
        "Bob's job is first under fair share, the submission order would say third: {ahead}"
    );
    assert_eq!(detail["position"], 1, "{detail}");
    assert_eq!(detail["basis"], "limits", "an estimate: {detail}");
    // The other replica, and Ann's jobs behind Bob's, answer alike.
    assert_eq!(
        standing(first, &bob, b1).await,
        (ahead.clone(), detail.clone()),
        "the same on both"
    );
    for (id, position) in [(a2, 2), (a3, 3)] {
        let on_first = standing(first, &ann, id).await;
        assert_eq!(on_first.0["position"], position, "{}", on_first.0);
        assert_eq!(standing(second, &ann, id).await, on_first, "job {id}: the same on both");
    }
    let (_, board) = call(second, "GET", "/api/v1/admin/prequeue", &admin, None).await;
    let positions: Vec<(i64, i64)> = board["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["job"]["id"].as_i64().unwrap(), i["position"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        positions,
        [(a2, 2), (a3, 3), (b1, 1)],
        "the admins' list, on the replica without the lease"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_sqlite_the_standing_exists_at_once() {
    let app = TestApp::builder().start().await;
    the_standing_exists_at_once_and_is_the_same_on(&app, &app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL"]
async fn on_postgres_the_standing_exists_at_once_and_is_the_same_on_two_replicas() {
    let url = anteroom_tests::postgres::fresh_database(&anteroom_tests::postgres::server_url()).await;
    let first = TestApp::builder().database_url(url).start().await;
    let second = TestApp::builder().replica_of(&first).start().await;
    the_standing_exists_at_once_and_is_the_same_on(&first, &second).await;
}

//! Several replicas over one PostgreSQL store and one cluster: what one replica is told
//! reaches the others at once (`backend/src/signals/replicas.rs`) — the leader's watcher,
//! wherever it runs, and the prequeue settings every replica holds. Real watcher loops, real
//! time; the ticker is set to an hour, so only a wake-up can explain a prompt activation.

use std::time::Duration;

use anteroom_tests::TestApp;
use anteroom_tests::api::{call, job, quota, settings, submit_job};
use serde_json::json;

/// Waits for `done`, polling; fails after a minute. A bound on the wait, not a measure of
/// speed: without the wake-up the answer would come at the watcher's next tick, in an hour.
async fn within_a_minute<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..600 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within a minute, with the watcher's ticker at an hour");
}

/// Rounds the watcher ran so far, in this process (both replicas share the metrics; only
/// the leader runs rounds).
async fn rounds(app: &TestApp) -> u64 {
    let text = app.metrics().await;
    text.lines()
        .find_map(|l| l.strip_prefix("anteroom_prequeue_round_seconds_count "))
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// Waits until no round has run for a second: nothing left to do, nothing woken.
async fn quiet(app: &TestApp) {
    let mut last = rounds(app).await;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = rounds(app).await;
        if now == last {
            return;
        }
        last = now;
    }
}

async fn phase(app: &TestApp, token: &str, id: i64) -> String {
    let (status, body) = call(app, "GET", &format!("/api/v1/jobs/{id}"), token, None).await;
    assert_eq!(status, 200, "{body}");
    body["phase"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL"]
async fn on_postgres_a_quota_raised_through_either_replica_activates_the_held_job_at_once() {
    let url = anteroom_tests::postgres::fresh_database(&anteroom_tests::postgres::server_url()).await;
    let first = TestApp::builder().database_url(url).start().await;
    let second = TestApp::builder().replica_of(&first).start().await;
    let admin = first.admin_token().await;
    // The second replica reads the settings again every ticker interval (5 s at first): an
    // hour from now on.
    settings(&first, &admin, json!({"activateTickerIntervalSeconds": 3600})).await;
    within_a_minute("the second replica holds the hour-long ticker", || async {
        second.state.settings.current().activate_ticker_interval_seconds == 3600
    })
    .await;
    // So it holds this one at once only because it was told.
    settings(&first, &admin, json!({"queueQuotaEnabled": true})).await;
    within_a_minute(
        "the second replica holds the settings written through the first",
        || async { second.state.settings.current().queue_quota_enabled },
    )
    .await;
    let rule = quota(&first, &admin, "default", json!({"cpu": "1"})).await;
    let rule = rule["id"].as_i64().unwrap();
    let ann = first.user_token("ann").await;
    // Runs for an hour: its end frees nothing during the test.
    submit_job(&first, &ann, job("running", json!({"cpu": "1"}))).await;
    // One of the two replicas does not hold the lease: the quota raised through it must
    // still wake the leader's watcher.
    for (cpu, through) in [(2, &first), (3, &second)] {
        quiet(&first).await;
        let before = rounds(&first).await;
        let (held, _) = submit_job(&first, &ann, job(&format!("held-{cpu}"), json!({"cpu": "1"}))).await;
        assert_eq!(phase(&first, &ann, held).await, "Prequeue");
        // The round this submission woke has run and held it, so only the raise below can
        // activate it.
        within_a_minute("the round after the submission", || async {
            rounds(&first).await > before
        })
        .await;
        let (status, body) = call(
            through,
            "PUT",
            &format!("/api/v1/admin/queue-quotas/{rule}"),
            &admin,
            Some(json!({"queue": "default", "limits": {"cpu": cpu.to_string()}})),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        within_a_minute(
            &format!("the job held by a {}-CPU quota activated", cpu - 1),
            || async { phase(&first, &ann, held).await != "Prequeue" },
        )
        .await;
    }
}

//! A job's start (issue 41, point 7): status sync writes a `started` event with the phase, sent
//! on the live stream; and no status is lost to the create's race — the cluster's events about
//! a job arrive before the activation path's `Pending` write (here forced: the simulated
//! cluster answers its creates late), and the store still follows the cluster at once instead
//! of at the next resync (every 30 s).

use std::time::Duration;

use anteroom_tests::TestApp;
use anteroom_tests::api::{call, job, job_id, read_events_after};
use anteroom_tests::both;
use serde_json::{Value, json};

/// The job's detail once `done` holds, polling; fails after 10 s — a bound, not a measure:
/// without the fix the store catches up at the resync, 30 s later.
async fn within_ten_seconds(app: &TestApp, token: &str, id: i64, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..100 {
        let (status, detail) = call(app, "GET", &format!("/api/v1/jobs/{id}"), token, None).await;
        assert_eq!(status, 200, "{detail}");
        if done(&detail) {
            return detail;
        }
        last = detail;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not within 10 s (the resync runs every 30 s): {last}");
}

async fn a_job_that_starts_at_once_shows_running_and_its_start(app: TestApp) {
    let ann = app.user_token("ann").await;
    let stream = app
        .client
        .get(app.url("/api/v1/jobs/events/stream"))
        .bearer_auth(&ann)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    // The cluster's events about the job come before the create's answer.
    app.sim
        .as_ref()
        .expect("the simulated cluster")
        .delay_create_answers(Duration::from_millis(700));
    let (status, answer) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &ann,
        Some(job("quick", json!({"cpu": "1"}))),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["admission"]["decision"], "activated");
    let id = job_id(&answer);
    let running = within_ten_seconds(&app, &ann, id, |d| d["phase"] == "Running").await;
    let kinds: Vec<&str> = running["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["submitted", "activated", "started"], "{running}");
    let started = &running["events"][2];
    assert_eq!(started["details"]["nodes"], running["nodes"], "{started}");
    // The live stream carries it, with the phase it brought.
    let sent = read_events_after(stream, 3, 0).await;
    let last = &sent.last().unwrap().1;
    assert_eq!(
        (last["kind"].as_str(), last["phase"].as_str()),
        (Some("started"), Some("Running")),
        "{sent:?}"
    );
}
both!(start, a_job_that_starts_at_once_shows_running_and_its_start);

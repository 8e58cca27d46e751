//! The job event stream (Server-Sent Events): only the caller's events, resume with
//! `Last-Event-ID`, and the end of a stream whose session ended. On SQLite and PostgreSQL.

use std::time::Duration;

use anteroom_tests::api::*;
use anteroom_tests::{TestApp, both};
use serde_json::json;

/// Events of submissions, not the `started` ones the simulated cluster adds as it runs the jobs.
fn not_started(event: &serde_json::Value) -> bool {
    event["kind"] != "started"
}

async fn the_event_stream_resumes_after_a_reconnect_without_losing_an_event(app: TestApp) {
    let mia = app.user_token("mia").await;
    let noah = app.user_token("noah").await;
    let open = |last: Option<i64>| {
        let mut req = app.client.get(app.url("/api/v1/jobs/events/stream")).bearer_auth(&mia);
        if let Some(last) = last {
            req = req.header("Last-Event-ID", last.to_string());
        }
        req.send()
    };
    let res = open(None).await.unwrap();
    assert_eq!(res.status(), 200);
    // An admin's stream carries everyone's events, each naming its job's owner.
    let admin = app.admin_token().await;
    let everyone = app
        .client
        .get(app.url("/api/v1/jobs/events/stream"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(everyone.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let (_, one) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &mia,
        Some(job("one", json!({"cpu": "1"}))),
    )
    .await;
    let (_, theirs) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &noah,
        Some(job("not-mine", json!({"cpu": "1"}))),
    )
    .await;
    let (_, two) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &mia,
        Some(job("two", json!({"cpu": "1"}))),
    )
    .await;
    let (one, theirs, two) = (job_id(&one), job_id(&theirs), job_id(&two));
    // Noah's events were written between Mia's: a leak would show them third and fourth.
    let first = read_events_after_where(res, 4, 0, not_started).await;
    let jobs: Vec<i64> = first.iter().map(|(_, e)| e["jobId"].as_i64().unwrap()).collect();
    assert_eq!(jobs, [one, one, two, two], "only the caller's events, in order");
    assert!(!jobs.contains(&theirs));
    assert_eq!(
        first
            .iter()
            .map(|(_, e)| e["kind"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["submitted", "activated", "submitted", "activated"]
    );
    // Each names its job's owner, so a list of one user's jobs can ignore the others'.
    assert!(first.iter().all(|(_, e)| e["owner"] == "mia"), "{first:?}");
    // And the job's phase as the stream sends it (on its way to the cluster or there), so a
    // list of other phases can ignore it.
    assert!(
        first
            .iter()
            .all(|(_, e)| matches!(e["phase"].as_str(), Some("Activating" | "Pending" | "Running"))),
        "{first:?}"
    );
    let all = read_events_after_where(everyone, 6, 0, not_started).await;
    let owners: Vec<&str> = all.iter().map(|(_, e)| e["owner"].as_str().unwrap()).collect();
    assert_eq!(owners, ["mia", "mia", "noah", "noah", "mia", "mia"], "{all:?}");
    let last = first[1].0;
    // Reconnect after the second event: what followed it arrives again, then what came later.
    call(
        &app,
        "POST",
        "/api/v1/jobs",
        &mia,
        Some(job("three", json!({"cpu": "1"}))),
    )
    .await;
    let res = open(Some(last)).await.unwrap();
    let resumed = read_events_after_where(res, 4, last, not_started).await;
    assert!(resumed.iter().all(|(id, _)| *id > last));
    assert_eq!(resumed[0].0, first[2].0, "resumes right after Last-Event-ID");
    assert_eq!(resumed[1].0, first[3].0);
    assert!(resumed[2..].iter().all(|(_, e)| e["jobId"].as_i64() != Some(two)));
}
both!(
    event_stream,
    the_event_stream_resumes_after_a_reconnect_without_losing_an_event
);

async fn a_session_that_ends_ends_its_stream(app: TestApp) {
    let quinn = app.user_token("quinn").await;
    let mut res = app
        .client
        .get(app.url("/api/v1/jobs/events/stream"))
        .bearer_auth(&quinn)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let (status, _) = call(&app, "POST", "/api/v1/auth/logout", &quinn, None).await;
    assert_eq!(status, 204);
    // The stream ends within its re-authorization period (5 s) and a poll; heartbeats are 15 s
    // apart, so an open stream would still be silent at 12 s.
    let end = tokio::time::timeout(Duration::from_secs(12), async {
        while let Ok(Some(_)) = res.chunk().await {}
    })
    .await;
    assert!(end.is_ok(), "the stream of a logged-out session ended");
}
both!(stream_ends_with_session, a_session_that_ends_ends_its_stream);

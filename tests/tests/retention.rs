//! Bounded history (issue 23, point 9) in the running app, on SQLite and PostgreSQL: the
//! leader's pruning run deletes old finished jobs with their events and spent idempotency keys,
//! keeps every unfinished job, works a backlog off in batches, and a stream resumed from a
//! pruned event id gets what follows. Time moves by hand ([`anteroom_tests::driven`]); the
//! rule over every phase and time is tested beside the code (`watcher/retention/tests.rs`).

use anteroom::cluster::clock::Clock;
use anteroom::store::lease::Fence;
use anteroom::watcher::retention::BATCH;
use anteroom_tests::api::*;
use anteroom_tests::both_driven;
use anteroom_tests::driven::Driven;
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};

/// One number from SQL run behind the API.
async fn number(d: &Driven, sql: &str) -> i64 {
    let db = &d.app.state.db;
    db.query_one_raw(Statement::from_string(db.get_database_backend(), sql.to_owned()))
        .await
        .unwrap()
        .unwrap()
        .try_get_by_index::<i64>(0)
        .unwrap()
}

/// The watcher's lease, taken as the loop would (nobody holds it: no round ran).
async fn lead(d: &Driven) -> Fence {
    d.watcher
        .lease
        .acquire(&d.app.state.db, d.clock.now())
        .await
        .unwrap()
        .expect("the lease is free")
}

async fn submit_keyed(d: &Driven, token: &str, key: &str, body: Value) -> i64 {
    let res = d
        .app
        .client
        .post(d.app.url("/api/v1/jobs"))
        .bearer_auth(token)
        .header("Idempotency-Key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    job_id(&res.json::<Value>().await.unwrap())
}

async fn old_history_goes_unfinished_jobs_stay_and_a_stream_resumed_from_a_pruned_id_gets_what_follows(
    url: Option<String>,
) {
    let d = Driven::start(url, "").await;
    let ann = d.app.user_token("ann").await;
    let done = submit_keyed(&d, &ann, "first-try", job("done", json!({"cpu": "1"}))).await;
    let (running, _) = submit_job(&d.app, &ann, job("still-here", json!({"cpu": "1"}))).await;
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{done}"), &ann, None).await;
    assert_eq!(status, 204);
    // The finished job's `deleted` event is the newest of all: pruning it must not let a new
    // event take its id (a resumed stream would skip the new one).
    let pruned_last = number(&d, &format!("SELECT MAX(id) FROM job_events WHERE job_id = {done}")).await;
    assert_eq!(number(&d, "SELECT MAX(id) FROM job_events").await, pruned_last);
    let done_events = number(&d, &format!("SELECT COUNT(*) FROM job_events WHERE job_id = {done}")).await;
    let running_events = number(&d, &format!("SELECT COUNT(*) FROM job_events WHERE job_id = {running}")).await;

    d.clock.advance(chrono::Duration::days(91));
    let fence = lead(&d).await;
    let counts = d.watcher.prune_history(&fence).await.unwrap();

    assert_eq!(
        (counts.jobs, counts.events, counts.idempotency_keys, counts.more),
        (1, done_events as u64, 1, false)
    );
    let (status, _) = call(&d.app, "GET", &format!("/api/v1/jobs/{done}"), &ann, None).await;
    assert_eq!(status, 404, "the old finished job is gone");
    let (status, detail) = call(&d.app, "GET", &format!("/api/v1/jobs/{running}"), &ann, None).await;
    assert_eq!(status, 200, "the unfinished job submitted as long ago stays");
    assert_eq!(detail["events"].as_array().unwrap().len() as i64, running_events);
    assert_eq!(count(&d.app, "idempotency_keys").await, 0);

    let res = d
        .app
        .client
        .get(d.app.url("/api/v1/jobs/events/stream"))
        .bearer_auth(&ann)
        .header("Last-Event-ID", pruned_last.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "a pruned id is a valid place to resume");
    let after = submit_keyed(&d, &ann, "first-try", job("after", json!({"cpu": "1"}))).await;
    assert!(after > done, "a job id is never reused ({after} after {done})");
    let first_new = number(&d, &format!("SELECT MIN(id) FROM job_events WHERE job_id = {after}")).await;
    assert!(
        first_new > pruned_last,
        "an event id is never reused ({first_new} after {pruned_last})"
    );
    let events = read_events_after(res, 1, pruned_last).await;
    assert_eq!(
        (events[0].0, events[0].1["jobId"].as_i64()),
        (first_new, Some(after)),
        "the resumed stream goes on with what follows the pruned id: {events:?}"
    );
}
both_driven!(
    pruning,
    old_history_goes_unfinished_jobs_stay_and_a_stream_resumed_from_a_pruned_id_gets_what_follows
);

async fn the_leader_works_off_a_backlog_of_several_batches_in_one_run(url: Option<String>) {
    let d = Driven::start(url, "").await;
    let bo = d.app.user_token("bo").await;
    let (first, _) = submit_job(&d.app, &bo, job("bulk", json!({"cpu": "1"}))).await;
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{first}"), &bo, None).await;
    assert_eq!(status, 204);
    // Copies of the finished job, each with one event, so the backlog is 2 × BATCH + 1 jobs.
    let copies = 2 * BATCH as i64;
    let db = &d.app.state.db;
    db.execute_unprepared(&format!(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {copies}) \
         INSERT INTO jobs (name, kind, queue, owner_id, owner_name, schedule_type, preemption_policy, \
           phase, tasks, resources, request_milli, explicit_nodes, single_node, nodes, submitted_at, \
           finished_at, updated_at, attempts) \
         SELECT name, kind, queue, owner_id, owner_name, schedule_type, preemption_policy, phase, \
           tasks, resources, request_milli, explicit_nodes, single_node, nodes, submitted_at, \
           finished_at, updated_at, attempts FROM jobs, n WHERE jobs.id = {first}"
    ))
    .await
    .unwrap();
    db.execute_unprepared(&format!(
        "INSERT INTO job_events (job_id, owner_id, kind, message, created_at) \
         SELECT id, owner_id, 'submitted', 'copy', submitted_at FROM jobs WHERE id <> {first}"
    ))
    .await
    .unwrap();
    let (unfinished, _) = submit_job(&d.app, &bo, job("unfinished", json!({"cpu": "1"}))).await;
    assert_eq!(count(&d.app, "jobs").await, copies + 2);

    d.clock.advance(chrono::Duration::days(91));
    let fence = lead(&d).await;
    let counts = d.watcher.prune_history(&fence).await.unwrap();

    assert_eq!((counts.jobs, counts.more), (copies as u64 + 1, false));
    assert_eq!(number(&d, "SELECT MIN(id) FROM jobs").await, unfinished);
    assert_eq!(count(&d.app, "jobs").await, 1);
    assert_eq!(
        number(
            &d,
            &format!("SELECT COUNT(*) FROM job_events WHERE job_id <> {unfinished}")
        )
        .await,
        0
    );
}
both_driven!(backlog, the_leader_works_off_a_backlog_of_several_batches_in_one_run);

//! Several replicas over one PostgreSQL store and one cluster: what one replica is told
//! reaches the others at once (`backend/src/signals/replicas.rs`) — the leader's watcher,
//! wherever it runs, and the prequeue settings every replica holds. Real watcher loops, real
//! time; the ticker is set to an hour, so only a wake-up can explain a prompt activation.

use std::time::Duration;

use anteroom::app::HandClock;
use anteroom_tests::TestApp;
use anteroom_tests::api::{call, execute, job, metric, queue, quota, settings, submit_job};
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
async fn rounds(app: &TestApp) -> f64 {
    metric(app, "anteroom_prequeue_round_seconds_count").await
}

/// A replica on a fresh database whose time stands still (no watcher loop, nothing ends, so
/// nothing frees room during a test), with its clock for the replicas started after it.
async fn standing_still() -> (TestApp, HandClock) {
    let url = anteroom_tests::postgres::fresh_database(&anteroom_tests::postgres::server_url()).await;
    let clock: HandClock = std::sync::Arc::new(anteroom::cluster::clock::ManualClock::new(
        anteroom_tests::driven::epoch(),
    ));
    let first = TestApp::builder()
        .database_url(url)
        .hand_clock(clock.clone())
        .start()
        .await;
    (first, clock)
}

/// A second replica of `first`, on its clock.
async fn second_of(first: &TestApp, clock: HandClock) -> TestApp {
    TestApp::builder().replica_of(first).hand_clock(clock).start().await
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

/// Waits until `to` listens for `from`'s notifications: `to`'s streams woken by `from` (the
/// first wake-up may be `to`'s catch-up as its listening connection is made, which happens
/// after it listens, so either way it listens from then on).
async fn listening(from: &TestApp, to: &TestApp) {
    for _ in 0..60 {
        let woken = to.state.signals.events().notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        from.state.signals.events_written();
        if tokio::time::timeout(Duration::from_secs(1), woken).await.is_ok() {
            return;
        }
    }
    panic!("the second replica never heard the first");
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
    let admin = first.admin_token().await;
    // Replicas read the settings again every ticker interval: an hour, from the second's
    // start on.
    settings(&first, &admin, json!({"activateTickerIntervalSeconds": 3600})).await;
    let second = TestApp::builder().replica_of(&first).start().await;
    assert_eq!(second.state.settings.current().activate_ticker_interval_seconds, 3600);
    listening(&first, &second).await;
    // So it holds this one within the minute only because it was told.
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

/// Two replicas admit in batches of their own, each holding the locks of its batch's trees and
/// owners: submissions through both at once still never exceed a user's quota, nor a parent
/// queue's capacity shared by several users and sub-queues.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL"]
async fn on_postgres_submissions_through_two_replicas_never_exceed_a_quota_or_a_shared_capacity() {
    let (first, clock) = standing_still().await;
    let admin = first.admin_token().await;
    settings(&first, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&first, &admin, "default", json!({"cpu": "4"})).await;
    for (name, parent, capacity) in [
        ("team", None, Some(json!({"cpu": "6"}))),
        ("team-a", Some("team"), None),
        ("team-b", Some("team"), None),
    ] {
        queue(
            &first,
            &admin,
            json!({"name": name, "open": true, "parent": parent, "capacity": capacity}),
        )
        .await;
    }
    let second = second_of(&first, clock).await;
    assert!(second.state.settings.current().queue_quota_enabled);
    let replicas = [&first, &second];
    let judy = first.user_token("judy").await;
    let mut members = Vec::new();
    for i in 0..6 {
        members.push(first.user_token(&format!("member{i}")).await);
    }
    // One user's 12 jobs into a 4-CPU quota, and six users' 12 into a 6-CPU parent, all at
    // once, alternating between the replicas.
    let mut submissions = Vec::new();
    for i in 0..12 {
        submissions.push((judy.clone(), job(&format!("j{i}"), json!({"cpu": "1"}))));
        let mut shared = job(&format!("m{i}"), json!({"cpu": "1"}));
        shared["queue"] = json!(if i % 2 == 0 { "team-a" } else { "team-b" });
        submissions.push((members[i % 6].clone(), shared));
    }
    let answers = futures::future::join_all(
        submissions
            .iter()
            .enumerate()
            .map(|(n, (token, body))| call(replicas[n % 2], "POST", "/api/v1/jobs", token, Some(body.clone()))),
    )
    .await;
    for (status, answer) in &answers {
        assert_eq!(*status, 201, "{answer}");
    }
    // Activated jobs in `default`, or (`false`) in the team's tree.
    let activated = |in_default: bool| {
        answers
            .iter()
            .filter(|(_, a)| {
                a["admission"]["decision"] == "activated" && (a["job"]["queue"] == "default") == in_default
            })
            .count()
    };
    assert_eq!(activated(true), 4, "exactly the quota's worth: {answers:?}");
    assert_eq!(activated(false), 6, "exactly the parent's capacity: {answers:?}");
}

/// The order that makes it so: while another replica's decision holds the `default` tree (here
/// the test's transaction, lowering judy's quota), a submission through the second replica waits
/// for it and decides under the lowered quota. A batch that did not take the tree's lock would
/// read the old quota and activate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL"]
async fn on_postgres_a_batch_waits_for_the_tree_another_replica_holds_and_decides_after_it() {
    use sea_orm::ConnectionTrait;
    let (first, clock) = standing_still().await;
    let admin = first.admin_token().await;
    settings(&first, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&first, &admin, "default", json!({"cpu": "4"})).await;
    let second = second_of(&first, clock).await;
    let judy = first.user_token("judy").await;
    let (_, running) = submit_job(&first, &judy, job("running", json!({"cpu": "1"}))).await;
    assert_eq!(running["admission"]["decision"], "activated");
    // Another decision in the tree: it holds the tree's lock and lowers the quota to 1 CPU.
    let db = &first.state.db;
    let other = anteroom::store::write_transaction(db).await.unwrap();
    anteroom::store::lock_queue_tree(&other, "default").await.unwrap();
    other
        .execute_unprepared(r#"UPDATE queue_quotas SET limits = '{"cpu":"1"}' WHERE queue = 'default'"#)
        .await
        .unwrap();
    let submitting = {
        let (second, judy) = (&second, judy.clone());
        async move {
            call(
                second,
                "POST",
                "/api/v1/jobs",
                &judy,
                Some(job("next", json!({"cpu": "1"}))),
            )
            .await
        }
    };
    let committing = async {
        // Long enough for the submission to reach the lock; it must wait there.
        tokio::time::sleep(Duration::from_secs(1)).await;
        other.commit().await.unwrap();
    };
    let ((status, answer), ()) = futures::join!(submitting, committing);
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        answer["admission"]["decision"], "prequeued",
        "decided under the quota committed while it waited: {answer}"
    );
}

/// A replica whose listening connection is cut (here by the server, as a restart or a proxy
/// would) listens again and hears the others from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL"]
async fn on_postgres_a_replica_whose_listening_connection_is_cut_hears_again() {
    let (first, clock) = standing_still().await;
    let second = second_of(&first, clock).await;
    listening(&first, &second).await;
    let listeners = || {
        anteroom_tests::api::count(
            &first,
            "(SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%') l",
        )
    };
    assert_eq!(listeners().await, 2, "each replica listens");
    execute(
        &first,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND query LIKE 'LISTEN%'",
    )
    .await;
    within_a_minute("both replicas listen again", || async { listeners().await == 2 }).await;
    // And hear each other, both ways: the first wake-up each may be the catch-up of a
    // connection made again, the second is heard.
    for _ in 0..2 {
        listening(&first, &second).await;
        listening(&second, &first).await;
    }
}

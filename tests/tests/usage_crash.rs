//! The usage history survives `kill -9` (`spec/prequeue.md` §10, issue 44 point 1): a real
//! server process (`crash-server`, the server as `anteroom serve` runs it, on SQLite with the
//! simulated cluster) runs short jobs and is killed with SIGKILL at uneven moments, six times,
//! then started once more until every job has ended. The history must have lost no run and
//! counted none twice: every job that started has a run, a job's runs never overlap, every run
//! is closed, and a job's last run ends exactly when the job did.
//!
//! The kill moments come from a fixed sequence (no randomness between runs); nothing here
//! asserts on how long anything took.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anteroom_tests::api::job;
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, Database, Statement};
use serde_json::{Value, json};

/// A stored instant.
type Instant = DateTime<Utc>;

const PASSWORD: &str = "crash-test-admin-password";

/// The server, killed with SIGKILL when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(data_dir: &std::path::Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_crash-server"))
            .env("ANTEROOM_DATA_DIR", data_dir)
            .env("ANTEROOM_LISTEN", "127.0.0.1:0")
            .env("ANTEROOM_ADMIN_PASSWORD", PASSWORD)
            .env("ANTEROOM_JWT_SECRET", "crash-test-secret-crash-test-secret")
            .env("ANTEROOM_SIM_TERMINATION_GRACE_SECONDS", "1")
            .env("ANTEROOM_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the crash-server binary runs");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("a first line");
        let addr = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the server did not start: {line:?}"))
            .to_owned();
        Server {
            child,
            base: format!("http://{addr}"),
        }
    }

    /// SIGKILL: no shutdown, no flush, no destructor.
    fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }
}

async fn token(client: &reqwest::Client, base: &str) -> String {
    let res: Value = client
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"username": "admin", "password": PASSWORD}))
        .send()
        .await
        .expect("login")
        .json()
        .await
        .expect("login JSON");
    res["token"].as_str().expect("a token").to_owned()
}

/// Jobs of every length around the kill moments: one, two or three seconds.
fn body(i: usize) -> Value {
    let mut body = job(&format!("j{i}"), json!({"cpu": "1"}));
    body["tasks"][0]["command"] = json!(["sleep", (1 + i % 3).to_string()]);
    body
}

#[tokio::test]
async fn a_killed_server_loses_no_run_and_counts_none_twice() {
    let dir = tempfile::tempdir().expect("data dir");
    let client = reqwest::Client::new();
    let mut submitted = 0;
    // Milliseconds between the submissions and the kill: before the first activation, mid-run,
    // around ends.
    for pause in [150_u64, 900, 1_700, 400, 2_300, 1_100] {
        let server = Server::start(dir.path());
        let admin = token(&client, &server.base).await;
        for _ in 0..4 {
            let res = client
                .post(format!("{}/api/v1/jobs", server.base))
                .bearer_auth(&admin)
                .json(&body(submitted))
                .send()
                .await
                .expect("submit");
            assert!(res.status().is_success(), "{}", res.text().await.unwrap_or_default());
            submitted += 1;
        }
        tokio::time::sleep(Duration::from_millis(pause)).await;
        server.kill();
    }

    // Once more, until every job has ended.
    let server = Server::start(dir.path());
    let admin = token(&client, &server.base).await;
    let mut ended = false;
    let mut last = Value::Null;
    for _ in 0..600 {
        let list: Value = client
            .get(format!("{}/api/v1/admin/jobs?pageSize=100", server.base))
            .bearer_auth(&admin)
            .send()
            .await
            .expect("list")
            .json()
            .await
            .expect("list JSON");
        let items = list["items"].as_array().expect("items");
        if items.len() == submitted && items.iter().all(|j| j["phase"] == "Completed") {
            ended = true;
            break;
        }
        last = json!(
            items
                .iter()
                .map(|j| (j["id"].clone(), j["phase"].clone()))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ended, "every job ends once the server runs again: {last}");
    server.kill();

    let db = Database::connect(format!("sqlite://{}?mode=ro", dir.path().join("anteroom.db").display()))
        .await
        .expect("the database");
    let rows = |sql: &'static str| {
        let db = &db;
        async move {
            db.query_all_raw(Statement::from_string(db.get_database_backend(), sql))
                .await
                .expect(sql)
        }
    };
    let mut jobs: BTreeMap<i64, (Option<Instant>, Option<Instant>)> = BTreeMap::new();
    for row in rows("SELECT id, started_at, finished_at FROM jobs").await {
        let id: i64 = row.try_get("", "id").expect("id");
        jobs.insert(
            id,
            (
                row.try_get::<Option<DateTime<Utc>>>("", "started_at")
                    .expect("started_at"),
                row.try_get::<Option<DateTime<Utc>>>("", "finished_at")
                    .expect("finished_at"),
            ),
        );
    }
    let mut runs: BTreeMap<i64, Vec<(Instant, Option<Instant>)>> = BTreeMap::new();
    for row in rows("SELECT job_id, started_at, ended_at FROM usage_intervals ORDER BY job_id, started_at").await {
        let id: i64 = row.try_get("", "job_id").expect("job_id");
        let started: DateTime<Utc> = row.try_get("", "started_at").expect("started_at");
        let ended: Option<DateTime<Utc>> = row.try_get("", "ended_at").expect("ended_at");
        runs.entry(id).or_default().push((started, ended));
    }
    assert_eq!(jobs.len(), submitted);
    for (id, (started, finished)) in &jobs {
        let of_job = runs
            .get(id)
            .unwrap_or_else(|| panic!("job {id} ran and has no run: {jobs:?}"));
        assert!(started.is_some(), "job {id} completed with a start");
        for pair in of_job.windows(2) {
            let (earlier_end, later_start) = (pair[0].1.expect("closed"), pair[1].0);
            assert!(earlier_end <= later_start, "job {id}'s runs overlap: {of_job:?}");
        }
        assert!(
            of_job.iter().all(|r| r.1.is_some()),
            "job {id} has a run left open: {of_job:?}"
        );
        assert_eq!(of_job.last().and_then(|r| r.1), *finished, "job {id}: {of_job:?}");
    }
}

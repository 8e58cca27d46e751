//! The webhook outbox survives `kill -9` (issue 27, point 6): the real `anteroom` binary on
//! SQLite and the simulated cluster, real time, a receiver in the test. Jobs start; the
//! receiver refuses the first try, so nothing is delivered yet when the server is killed with
//! SIGKILL and started again on the same data. Every (job, event) that happened is received — at least once, a repeat carrying the
//! same delivery id — and per job `started` arrives before `finished`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A server process that is killed when the test ends, also on failure.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `anteroom serve` on a free port with its data in `dir`; its address and the first
/// admin's password when this start created the admin.
fn start(dir: &std::path::Path) -> (Server, String, Option<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_anteroom"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.join("data"))
        .current_dir(dir)
        .env_clear()
        .env("ANTEROOM_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the anteroom binary");
    let stdout = child.stdout.take().expect("stdout");
    let server = Server(child);
    let mut password = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("a line");
        if line.starts_with("Created the first admin.") {
            password = line.rsplit(' ').next().map(str::to_owned);
        }
        if let Some(address) = line.strip_prefix("Anteroom is serving on ") {
            return (server, address.to_owned(), password);
        }
    }
    panic!("the server ended before saying where it serves");
}

/// What the receiver got: (delivery id, job id, event), in arrival order.
type Got = Arc<Mutex<Vec<(i64, i64, String)>>>;

/// A receiver that answers 503 (counted, not recorded) while `refusing`, then 204.
async fn receiver(refusing: Arc<Mutex<bool>>) -> (String, Got, Arc<Mutex<usize>>) {
    let got: Got = Arc::default();
    let refused = Arc::new(Mutex::new(0usize));
    let state = got.clone();
    let counter = refused.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let state = state.clone();
            let counter = counter.clone();
            let refusing = refusing.clone();
            async move {
                if *refusing.lock().unwrap() {
                    *counter.lock().unwrap() += 1;
                    return axum::http::StatusCode::SERVICE_UNAVAILABLE;
                }
                let v: Value = serde_json::from_str(&body).unwrap();
                state.lock().unwrap().push((
                    v["deliveryId"].as_i64().unwrap(),
                    v["jobId"].as_i64().unwrap(),
                    v["event"].as_str().unwrap().to_owned(),
                ));
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}/hook"), got, refused)
}

async fn call(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> Value {
    let res = http
        .request(method, format!("{base}{path}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("a request");
    assert!(res.status().is_success(), "{path}: {}", res.status());
    res.json().await.unwrap_or(Value::Null)
}

async fn login(http: &reqwest::Client, base: &str, password: &str) -> String {
    let res: Value = http
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"username": "admin", "password": password}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    res["token"].as_str().expect("a token").to_owned()
}

/// Waits (polling) until `done` holds of what was received, at most `limit`.
async fn wait_for(got: &Got, limit: Duration, done: impl Fn(&[(i64, i64, String)]) -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done(&got.lock().unwrap()) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_written_before_a_kill_9_are_sent_after_the_restart_in_order_per_job() {
    const JOBS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    // Every try is refused until the kill: the outbox then holds every delivery written so
    // far, none delivered.
    let refusing = Arc::new(Mutex::new(true));
    let (url, got, refused) = receiver(refusing.clone()).await;
    let (mut server, base, password) = start(dir.path());
    let password = password.expect("the first start makes the admin");
    let token = login(&http, &base, &password).await;
    call(
        &http,
        &base,
        &token,
        reqwest::Method::PUT,
        "/api/v1/admin/webhook-destinations",
        json!({"hosts": [url.trim_start_matches("http://").split('/').next().unwrap()]}),
    )
    .await;
    call(
        &http,
        &base,
        &token,
        reqwest::Method::POST,
        "/api/v1/webhooks",
        json!({"url": url, "events": ["started", "finished"]}),
    )
    .await;
    let mut jobs = BTreeSet::new();
    for i in 0..JOBS {
        let answer = call(
            &http,
            &base,
            &token,
            reqwest::Method::POST,
            "/api/v1/jobs",
            json!({"name": format!("j{i}"), "kind": "custom", "tasks": [{"name": "main", "replicas": 1, "image": "busybox", "command": ["sleep", "3"], "resources": {"cpu": "100m", "memory": "64Mi"}}]}),
        )
        .await;
        jobs.insert(answer["job"]["id"].as_i64().unwrap());
    }
    // A try refused, then SIGKILL: no shutdown, no flush.
    let until = Instant::now() + Duration::from_secs(60);
    while *refused.lock().unwrap() == 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(*refused.lock().unwrap() > 0, "a first try, refused");
    // `Child::kill` sends SIGKILL on Unix.
    server.0.kill().expect("SIGKILL");
    server.0.wait().unwrap();
    let before = got.lock().unwrap().len();
    assert_eq!(before, 0, "nothing was delivered before the kill");
    *refusing.lock().unwrap() = false;

    let (_again, base, _) = start(dir.path());
    let _ = base;
    let complete = wait_for(&got, Duration::from_secs(120), |g| {
        let seen: BTreeSet<(i64, &str)> = g.iter().map(|(_, job, event)| (*job, event.as_str())).collect();
        jobs.iter()
            .all(|j| seen.contains(&(*j, "started")) && seen.contains(&(*j, "finished")))
    })
    .await;
    let got = got.lock().unwrap().clone();
    assert!(
        complete,
        "every job's started and finished, {before} before the kill: {got:?}"
    );
    // At least once: a (job, event) has one delivery id, however often it came.
    let mut ids: BTreeMap<(i64, String), BTreeSet<i64>> = BTreeMap::new();
    for (delivery, job, event) in &got {
        ids.entry((*job, event.clone())).or_default().insert(*delivery);
    }
    assert!(
        ids.values().all(|d| d.len() == 1),
        "nothing doubled in the outbox: {ids:?}"
    );
    // In order per job: its first `finished` after its first `started`.
    for job in &jobs {
        let first = |e: &str| got.iter().position(|(_, j, ev)| j == job && ev == e).unwrap();
        assert!(first("started") < first("finished"), "job {job}: {got:?}");
    }
}

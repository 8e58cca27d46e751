//! The jobs API under load, against the release binary over real HTTP on SQLite
//! (`docs/performance.md`, "Jobs API"). Run through `./anteroom.sh bench-api`, which builds the
//! release server first; or by hand:
//!
//! ```text
//! cargo run --release -p anteroom-tests --bin api-bench -- <path/to/anteroom> [seconds] [concurrency]
//! ```
//!
//! It measures, each on a fresh data directory:
//! 1. submissions that are activated (created in the simulated cluster), at a fixed concurrency;
//! 2. submissions that are prequeued (quotas on, one active job per user: the cluster is not
//!    touched);
//! 3. `GET /api/v1/jobs?page=50` of one user who has 100,000 jobs (seeded straight into the
//!    database while the server is stopped, then read over HTTP);
//! 4. one researcher's sweep: `SWEEP` jobs (20,000 by default) of one user into a queue whose
//!    quota that user already fills, from `concurrency` clients at once, the watcher running
//!    (every submission is prequeued and wakes it): the time to submit them all.
//!
//! `ONLY=floor,activated,prequeued,list,sweep` runs some of the measurements only.
//! `POSTGRES=postgres://user@host:port` runs them on PostgreSQL instead of SQLite: each on a
//! fresh database of that server.
//!
//! Prints the sustained rate and p50/p99/max latency of each as a Markdown table.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

const ADMIN_PASSWORD: &str = "bench-admin-password";
const USERS: usize = 50;

struct Server {
    child: Child,
    base: String,
    client: reqwest::Client,
}

/// Where one measurement keeps its data: a fresh data directory and, with `POSTGRES` set, a
/// fresh database on that server (otherwise SQLite in the directory).
struct Store {
    dir: tempfile::TempDir,
    url: String,
}

impl Store {
    async fn fresh() -> anyhow::Result<Store> {
        let dir = tempfile::tempdir()?;
        let url = match std::env::var("POSTGRES") {
            Ok(server) if !server.is_empty() => anteroom_tests::postgres::fresh_database(&server).await,
            _ => format!("sqlite://{}?mode=rwc", dir.path().join("anteroom.db").display()),
        };
        Ok(Store { dir, url })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Server {
    async fn start(binary: &Path, store: &Store) -> anyhow::Result<Server> {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            listener.local_addr()?.port()
        };
        let child = Command::new(binary)
            .arg("serve")
            .env("ANTEROOM_DATA_DIR", store.path())
            .env("ANTEROOM_DATABASE_URL", &store.url)
            .env("ANTEROOM_LISTEN", format!("127.0.0.1:{port}"))
            .env("ANTEROOM_ADMIN_PASSWORD", ADMIN_PASSWORD)
            .env("ANTEROOM_JWT_SECRET", "bench-secret-bench-secret-bench-secret")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(if std::env::var("PROBE").is_ok() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::builder().pool_max_idle_per_host(256).build()?;
        for _ in 0..200 {
            if client.get(format!("{base}/healthz")).send().await.is_ok() {
                return Ok(Server { child, base, client });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("the server did not come up")
    }

    /// The CPU time the server process has used so far (user and system), from
    /// `/proc/<pid>/stat`: what a request costs the server, whatever else the machine does.
    fn cpu(&self) -> Duration {
        let Some(pid) = self.child.id() else {
            return Duration::ZERO;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return Duration::ZERO;
        };
        // The fields after the command's closing parenthesis; utime and stime are 14 and 15.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
        // Fields counted from the state (field 3) at index 0.
        let total = ticks(11) + ticks(12);
        // In clock ticks of USER_HZ, which Linux fixes at 100 a second for /proc.
        Duration::from_millis(total * 10)
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<(u16, Value)> {
        let (status, text) = self.measured(method, path, token, body).await?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// [`Server::call`] for the measured requests: the body is read, not parsed (the load tool
    /// shares the two cores with the server, and parsing every answer cost it a fifth of them
    /// for the list).
    async fn measured(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<(u16, String)> {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(body) = body {
            req = req.json(body);
        }
        let res = req.send().await?;
        let status = res.status().as_u16();
        Ok((status, res.text().await?))
    }

    async fn login(&self, username: &str, password: &str) -> anyhow::Result<String> {
        let res = self
            .client
            .post(format!("{}/api/v1/auth/login", self.base))
            .json(&json!({"username": username, "password": password}))
            .send()
            .await?;
        let body: Value = res.json().await?;
        Ok(body["token"].as_str().context("login failed")?.to_string())
    }

    /// The admin's token and `USERS` user tokens.
    async fn accounts(&self) -> anyhow::Result<(String, Vec<String>)> {
        let admin = self.login("admin", ADMIN_PASSWORD).await?;
        let mut tokens = Vec::new();
        for i in 0..USERS {
            let name = format!("user{i}");
            let (status, body) = self
                .call(
                    reqwest::Method::POST,
                    "/api/v1/admin/users",
                    &admin,
                    Some(&json!({"username": name, "password": "bench-password", "role": "user"})),
                )
                .await?;
            anyhow::ensure!(status == 201, "creating {name}: {body}");
            tokens.push(self.login(&name, "bench-password").await?);
        }
        Ok((admin, tokens))
    }
}

fn job(i: usize) -> Value {
    json!({
        "name": format!("bench-{i}"),
        "kind": "custom",
        "queue": "default",
        "tasks": [{"name": "main", "replicas": 1, "image": "busybox", "command": ["sleep", "86400"],
                   "resources": {"cpu": "10m", "memory": "16Mi"}}]
    })
}

struct Figures {
    requests: usize,
    errors: usize,
    seconds: f64,
    latencies: Vec<Duration>,
    /// The server's CPU time over the measurement.
    server_cpu: Duration,
}

impl Figures {
    /// What the workers measured (each: the latencies of its answers as wanted, and how many
    /// were not), over the time since `start`.
    async fn gather(workers: Vec<tokio::task::JoinHandle<(Vec<Duration>, usize)>>, start: Instant) -> Figures {
        let mut figures = Figures {
            requests: 0,
            errors: 0,
            seconds: 0.0,
            latencies: Vec::new(),
            server_cpu: Duration::ZERO,
        };
        for w in workers {
            let (latencies, errors) = w.await.expect("worker");
            figures.requests += latencies.len();
            figures.errors += errors;
            figures.latencies.extend(latencies);
        }
        figures.seconds = start.elapsed().as_secs_f64();
        figures
    }

    fn row(&mut self, what: &str, concurrency: usize) -> String {
        if self.latencies.is_empty() {
            return format!("| {what} | {concurrency} | 0 | {} | - | - | - | - | - |", self.errors);
        }
        self.latencies.sort();
        let pct = |p: f64| {
            let i = ((self.latencies.len() as f64 * p).ceil() as usize).clamp(1, self.latencies.len()) - 1;
            self.latencies[i].as_secs_f64() * 1000.0
        };
        format!(
            "| {what} | {concurrency} | {} | {} | {:.0}/s | {:.1} ms | {:.1} ms | {:.1} ms | {:.0} µs |",
            self.requests,
            self.errors,
            self.requests as f64 / self.seconds,
            pct(0.50),
            pct(0.99),
            self.latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0),
            self.server_cpu.as_secs_f64() * 1e6 / self.requests as f64,
        )
    }
}

/// `concurrency` workers send `request(worker, n)` for `seconds`; every answer must be `want`.
async fn load<F, Fut>(seconds: u64, concurrency: usize, want: u16, request: F) -> Figures
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<(u16, String)>> + Send,
{
    let request = Arc::new(request);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(seconds);
    let mut workers = Vec::new();
    for w in 0..concurrency {
        let request = request.clone();
        workers.push(tokio::spawn(async move {
            let (mut latencies, mut errors, mut n) = (Vec::new(), 0, 0);
            while Instant::now() < deadline {
                let t = Instant::now();
                match request(w, n).await {
                    Ok((status, _)) if status == want => latencies.push(t.elapsed()),
                    Ok((status, body)) => {
                        if errors == 0 {
                            eprintln!("unexpected {status}: {body}");
                        }
                        errors += 1;
                    }
                    Err(e) => {
                        if errors == 0 {
                            eprintln!("request failed: {e}");
                        }
                        errors += 1;
                    }
                }
                n += 1;
            }
            (latencies, errors)
        }));
    }
    Figures::gather(workers, start).await
}

async fn submissions(binary: &Path, seconds: u64, concurrency: usize, prequeued: bool) -> anyhow::Result<String> {
    let dir = Store::fresh().await?;
    let server = Arc::new(Server::start(binary, &dir).await?);
    let (admin, tokens) = server.accounts().await?;
    if prequeued {
        let (_, mut config) = server
            .call(reqwest::Method::GET, "/api/v1/admin/prequeue-config", &admin, None)
            .await?;
        config["queueQuotaEnabled"] = json!(true);
        config["maxPrequeuedJobsPerUser"] = json!(1_000_000);
        config["maxUnfinishedJobsPerUser"] = json!(1_000_000);
        server
            .call(
                reqwest::Method::PUT,
                "/api/v1/admin/prequeue-config",
                &admin,
                Some(&config),
            )
            .await?;
        let rule = json!({"queue": "default", "limits": {"cpu": "64"}, "maxActiveJobs": 1});
        server
            .call(reqwest::Method::POST, "/api/v1/admin/queue-quotas", &admin, Some(&rule))
            .await?;
    }
    let tokens = Arc::new(tokens);
    let s = server.clone();
    let cpu_before = server.cpu();
    let mut figures = load(seconds, concurrency, 201, move |w, n| {
        let (s, tokens) = (s.clone(), tokens.clone());
        async move {
            let token = &tokens[(w + n * concurrency) % tokens.len()];
            s.measured(reqwest::Method::POST, "/api/v1/jobs", token, Some(&job(n)))
                .await
        }
    })
    .await;
    let what = if prequeued {
        "POST /api/v1/jobs, prequeued"
    } else {
        "POST /api/v1/jobs, activated"
    };
    figures.server_cpu = server.cpu().saturating_sub(cpu_before);
    let row = figures.row(what, concurrency);
    if let Ok(server) = Arc::try_unwrap(server) {
        server.stop().await;
    }
    Ok(row)
}

/// One researcher submits `count` jobs, `concurrency` at a time, into a quota they fill.
async fn sweep(binary: &Path, count: usize, concurrency: usize) -> anyhow::Result<String> {
    let dir = Store::fresh().await?;
    let server = Arc::new(Server::start(binary, &dir).await?);
    let (admin, tokens) = server.accounts().await?;
    let (_, mut config) = server
        .call(reqwest::Method::GET, "/api/v1/admin/prequeue-config", &admin, None)
        .await?;
    config["queueQuotaEnabled"] = json!(true);
    config["maxPrequeuedJobsPerUser"] = json!(1_000_000);
    config["maxUnfinishedJobsPerUser"] = json!(1_000_000);
    let (status, body) = server
        .call(
            reqwest::Method::PUT,
            "/api/v1/admin/prequeue-config",
            &admin,
            Some(&config),
        )
        .await?;
    anyhow::ensure!(status == 200, "settings: {body}");
    // Each job asks for 10m cpu: the first fills the quota, every later one waits for it.
    let rule = json!({"queue": "default", "limits": {"cpu": "10m"}});
    let (status, body) = server
        .call(reqwest::Method::POST, "/api/v1/admin/queue-quotas", &admin, Some(&rule))
        .await?;
    anyhow::ensure!(status == 201, "quota: {body}");
    let token = Arc::new(tokens[0].clone());
    let (status, first) = server
        .call(reqwest::Method::POST, "/api/v1/jobs", &token, Some(&job(0)))
        .await?;
    anyhow::ensure!(
        status == 201 && first["job"]["phase"] != "Prequeue",
        "the first job: {first}"
    );
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(1));
    let cpu_before = server.cpu();
    let start = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (server, token, next) = (server.clone(), token.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let (mut latencies, mut errors) = (Vec::new(), 0);
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n > count {
                    break;
                }
                let t = Instant::now();
                match server
                    .call(reqwest::Method::POST, "/api/v1/jobs", &token, Some(&job(n)))
                    .await
                {
                    Ok((201, body)) if body["job"]["phase"] == "Prequeue" => latencies.push(t.elapsed()),
                    other => {
                        if errors == 0 {
                            eprintln!("unexpected: {other:?}");
                        }
                        errors += 1;
                    }
                }
            }
            (latencies, errors)
        }));
    }
    let mut figures = Figures::gather(workers, start).await;
    figures.server_cpu = server.cpu().saturating_sub(cpu_before);
    anyhow::ensure!(
        figures.errors == 0,
        "{} of the sweep's submissions failed",
        figures.errors
    );
    let row = figures.row(
        &format!(
            "sweep: {count} jobs of one user into a full quota ({:.1} s)",
            figures.seconds
        ),
        concurrency,
    );
    if let Ok(server) = Arc::try_unwrap(server) {
        server.stop().await;
    }
    Ok(row)
}

/// Seeds `count` jobs of one user straight into the database (the server stopped), in the
/// shape the API writes them.
async fn seed(url: &str, owner: i64, count: usize) -> anyhow::Result<()> {
    use sea_orm::{ConnectionTrait, TransactionTrait};
    let db = anteroom::store::connect(url).await?;
    let txn = db.begin().await?;
    let now = chrono::Utc::now();
    for chunk in (0..count).collect::<Vec<_>>().chunks(500) {
        let values: Vec<String> = chunk
            .iter()
            .map(|i| {
                let at = (now - chrono::Duration::seconds((count - i) as i64)).format("%Y-%m-%d %H:%M:%S%.6f+00:00");
                format!(
                    "('seed-{i}', 'custom', 'default', {owner}, 'user0', 'normal', 'PreemptLowerPriority', 'Completed', 300, NULL, \
                     '[{{\"name\":\"main\",\"replicas\":1,\"image\":\"busybox\",\"command\":[],\"resources\":{{\"cpu\":\"1\"}},\"nodeNames\":[]}}]', \
                     '{{\"cpu\":\"1\"}}', 'cpu=1000', '', TRUE, '[]', NULL, '{at}', NULL, NULL, '{at}', NULL, '{at}', NULL, 0, NULL, NULL)"
                )
            })
            .collect();
        txn.execute_unprepared(&format!(
            "INSERT INTO jobs (name, kind, queue, owner_id, owner_name, schedule_type, preemption_policy, phase, \
             waiting_tolerance_seconds, timeout_at, tasks, resources, request_milli, explicit_nodes, single_node, nodes, \
             wait_reasons, submitted_at, activated_at, started_at, finished_at, locked_until, updated_at, claimed_at, \
             attempts, next_attempt_at, last_error) VALUES {}",
            values.join(",")
        ))
        .await?;
    }
    txn.commit().await?;
    // PostgreSQL: what autovacuum would have done to a table grown over months (statistics,
    // the visibility map for index-only reads), done now instead of a minute into the run.
    // And the job counts folded, as the leader does every second (the next server waits out
    // the killed one's lease before it leads).
    if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        // (An older binary's store, measured side by side, has no counts to fold.)
        if let Err(e) = anteroom::store::fold_job_counts(&db).await {
            eprintln!("no job counts folded: {e}");
        }
        db.execute_unprepared("VACUUM ANALYZE jobs").await?;
    }
    db.close().await?;
    Ok(())
}

/// The floor every request stands on: authentication (token check, user reload) and the HTTP
/// stack, with an answer from memory.
async fn floor(binary: &Path, seconds: u64, concurrency: usize) -> anyhow::Result<String> {
    let dir = Store::fresh().await?;
    let server = Arc::new(Server::start(binary, &dir).await?);
    let (_, tokens) = server.accounts().await?;
    let tokens = Arc::new(tokens);
    let s = server.clone();
    let cpu_before = server.cpu();
    let mut figures = load(seconds, concurrency, 200, move |w, _| {
        let (s, tokens) = (s.clone(), tokens.clone());
        async move {
            s.measured(
                reqwest::Method::GET,
                "/api/v1/prequeue/status",
                &tokens[w % tokens.len()],
                None,
            )
            .await
        }
    })
    .await;
    figures.server_cpu = server.cpu().saturating_sub(cpu_before);
    let row = figures.row("GET /api/v1/prequeue/status (auth only)", concurrency);
    if let Ok(server) = Arc::try_unwrap(server) {
        server.stop().await;
    }
    Ok(row)
}

async fn list_page(binary: &Path, seconds: u64, concurrency: usize) -> anyhow::Result<String> {
    let dir = Store::fresh().await?;
    let server = Server::start(binary, &dir).await?;
    let (_, tokens) = server.accounts().await?;
    let me = server
        .call(reqwest::Method::GET, "/api/v1/auth/me", &tokens[0], None)
        .await?
        .1;
    let owner = me["id"].as_i64().context("me")?;
    server.stop().await;
    seed(&dir.url, owner, 100_000).await?;
    let server = Arc::new(Server::start(binary, &dir).await?);
    let token = Arc::new(server.login("user0", "bench-password").await?);
    let (_, page) = server
        .call(reqwest::Method::GET, "/api/v1/jobs?page=50", &token, None)
        .await?;
    anyhow::ensure!(page["total"] == 100_000, "seeded jobs not seen: {}", page["total"]);
    let s = server.clone();
    let cpu_before = server.cpu();
    let mut figures = load(seconds, concurrency, 200, move |_, _| {
        let (s, token) = (s.clone(), token.clone());
        async move {
            s.measured(reqwest::Method::GET, "/api/v1/jobs?page=50&pageSize=50", &token, None)
                .await
        }
    })
    .await;
    figures.server_cpu = server.cpu().saturating_sub(cpu_before);
    let row = figures.row("GET /api/v1/jobs?page=50 (100,000 jobs)", concurrency);
    if let Ok(server) = Arc::try_unwrap(server) {
        server.stop().await;
    }
    Ok(row)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let binary = PathBuf::from(
        args.get(1)
            .context("usage: api-bench <anteroom binary> [seconds] [concurrency]")?,
    );
    let seconds: u64 = args.get(2).map_or(Ok(10), |s| s.parse())?;
    let concurrency: usize = args.get(3).map_or(Ok(16), |s| s.parse())?;
    let mut rows = vec![
        "| what | concurrency | answered | errors | rate | p50 | p99 | max | server CPU a request |".to_string(),
        "|---|---|---|---|---|---|---|---|---|".to_string(),
    ];
    // `ONLY=floor,activated,prequeued,list,sweep` runs some of them (to profile one at a time).
    let only = std::env::var("ONLY").unwrap_or_default();
    let wanted = |what: &str| only.is_empty() || only.split(',').any(|w| w == what);
    if wanted("floor") {
        rows.push(floor(&binary, seconds, concurrency).await?);
        eprintln!("{}", rows.last().unwrap());
    }
    if wanted("activated") {
        rows.push(submissions(&binary, seconds, concurrency, false).await?);
        eprintln!("{}", rows.last().unwrap());
    }
    if wanted("prequeued") {
        rows.push(submissions(&binary, seconds, concurrency, true).await?);
        eprintln!("{}", rows.last().unwrap());
    }
    if wanted("list") {
        rows.push(list_page(&binary, seconds, concurrency).await?);
        eprintln!("{}", rows.last().unwrap());
    }
    if wanted("sweep") {
        let count: usize = std::env::var("SWEEP").map_or(Ok(20_000), |s| s.parse())?;
        rows.push(sweep(&binary, count, concurrency).await?);
    }
    anyhow::ensure!(
        rows.len() > 2,
        "ONLY={only:?} names none of floor, activated, prequeued, list, sweep"
    );
    println!("{}", rows.join("\n"));
    Ok(())
}

//! The Grafana dashboard (`deploy/grafana/anteroom.json`) against a real Prometheus (issue 44,
//! point 4): Debian's `prometheus` scrapes a running Anteroom every second while a scripted
//! morning happens on the simulated cluster — Elastic notebooks preempted for a normal job that
//! waited too long, a borrower reclaimed for a team's guarantee, a job the watcher activated
//! after a wait, usage under `fairShareHistory` — and then every panel's query is evaluated
//! through Prometheus's HTTP API, as Grafana would send it. A query that errors, returns no
//! series, or only NaN (a quantile of nothing) fails the test.
//!
//! Ignored without a Prometheus (`./anteroom.sh test` installs it and runs ignored tests), so
//! a machine without one shows it skipped, never passed.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anteroom_tests::api::{queue, settings};
use anteroom_tests::driven::{Driven, GPU_NODES, detail, gpu_job, node_with_three_elastic_jobs_in, submit};
use serde_json::{Value, json};

/// A Prometheus process, killed when dropped.
struct Prometheus {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl Prometheus {
    /// Starts Prometheus scraping `target` (`host:port`) every second.
    fn start(target: &str) -> Prometheus {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: anteroom\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("prometheus.yml");
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("Prometheus runs (Debian's `prometheus` package; ./anteroom.sh test installs it)");
        Prometheus {
            child,
            base: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    /// An instant query now: Prometheus's whole answer (`status`, `data` or `error`).
    async fn query(&self, client: &reqwest::Client, promql: &str) -> Value {
        match client
            .get(format!("{}/api/v1/query", self.base))
            .query(&[("query", promql)])
            .send()
            .await
        {
            Ok(res) => res
                .json()
                .await
                .unwrap_or_else(|e| json!({"status": "error", "error": e.to_string()})),
            Err(e) => json!({"status": "unreachable", "error": e.to_string()}),
        }
    }

    /// Waits (polling, up to a minute) until `promql` returns a sample `accept`s.
    async fn wait_for(&self, client: &reqwest::Client, promql: &str, accept: impl Fn(f64) -> bool) {
        let mut last = Value::Null;
        for _ in 0..300 {
            last = self.query(client, promql).await;
            if values(&last).into_iter().any(&accept) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("Prometheus never answered {promql} as expected: {last}");
    }
}

/// The values of an instant vector (or scalar) answer.
fn values(answer: &Value) -> Vec<f64> {
    let data = &answer["data"];
    let value_of = |v: &Value| v[1].as_str().and_then(|s| s.parse::<f64>().ok());
    match data["resultType"].as_str() {
        Some("vector") => data["result"]
            .as_array()
            .map(|r| r.iter().filter_map(|s| value_of(&s["value"])).collect())
            .unwrap_or_default(),
        Some("scalar") => value_of(&data["result"]).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// Every panel's queries, with the dashboard's variables as Grafana fills them: all queues,
/// a one-minute rate window (Grafana's `$__rate_interval` at a 1 s scrape interval).
fn panel_queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        let title = panel["title"].as_str().expect("a title");
        for target in panel["targets"].as_array().expect("targets") {
            let expr = target["expr"].as_str().expect("a PromQL expression");
            let filled = expr.replace("$__rate_interval", "1m").replace("$queue", ".*");
            assert!(
                !filled.contains('$'),
                "{title}: a variable the test does not fill: {expr}"
            );
            out.push((title.to_owned(), filled));
        }
    }
    out
}

fn dashboard() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/grafana/anteroom.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the dashboard")).expect("dashboard JSON")
}

#[test]
fn the_dashboard_is_importable_grafana_json() {
    let d = dashboard();
    assert_eq!(d["uid"], "anteroom-prequeue");
    let panels = d["panels"].as_array().expect("panels");
    assert!(panels.len() >= 9, "the seed's panels and more");
    let mut ids: Vec<i64> = panels.iter().map(|p| p["id"].as_i64().expect("an id")).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), panels.len(), "panel ids are unique");
    for p in panels {
        assert!(p["gridPos"]["w"].as_i64().is_some(), "{p}");
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{p}");
    }
    // Every metric the watcher describes is plotted by some panel.
    let queries: String = panel_queries(&d).into_iter().map(|(_, q)| q).collect();
    for name in [
        "anteroom_prequeue_jobs",
        "anteroom_prequeue_activation_wait_seconds_bucket",
        "anteroom_prequeue_activations_total",
        "anteroom_prequeue_preempted_total",
        "anteroom_prequeue_reclaimed_total",
        "anteroom_queue_accelerators_used",
        "anteroom_queue_accelerators_guaranteed",
        "anteroom_queue_accelerators_capacity",
        "anteroom_queue_fair_share_factor",
        "anteroom_cluster_accelerators_used",
        "anteroom_prequeue_round_seconds_bucket",
    ] {
        assert!(queries.contains(name), "no panel plots {name}");
    }
}

#[tokio::test]
#[ignore = "needs Prometheus"]
async fn every_dashboard_panel_returns_data_from_a_real_prometheus() {
    let d = Driven::start_configured(None, GPU_NODES, |c| c.metrics_user_labels = true).await;
    let admin = d.app.admin_token().await;
    // A first round puts the queue's series on /metrics (counters at 0), then Prometheus starts.
    d.round().await;
    let prometheus = Prometheus::start(&d.app.addr.to_string());
    let client = reqwest::Client::new();
    prometheus
        .wait_for(&client, r#"anteroom_prequeue_preempted_total{queue="default"}"#, |v| {
            v == 0.0
        })
        .await;

    // Before nine: Eli's notebooks on the node, Anna's 4-GPU job past its tolerance preempts
    // some of them; then Anna's job is deleted and the node is free again.
    let (notebooks, anna_job) =
        node_with_three_elastic_jobs_in("default", &d, gpu_job("anna", "custom", 4, "normal")).await;
    // The round that sees it Pending starts its waiting clock.
    d.round().await;
    d.advance(61).await;
    let report = d.round().await;
    assert!(!report.preempted.is_empty(), "the notebooks are preempted: {report:?}");
    d.settle().await;
    // The morning's jobs leave (a preempted notebook is already gone: 409).
    for id in notebooks.into_iter().chain([anna_job]) {
        anteroom_tests::api::call(&d.app, "DELETE", &format!("/api/v1/jobs/{id}"), &admin, None).await;
    }
    d.advance(31).await;
    d.settle().await;

    // Two teams are guaranteed half the node each; usage is ordered over time.
    settings(
        &d.app,
        &admin,
        json!({"queueQuotaEnabled": true, "reclaimDelaySeconds": 10, "activationOrder": "fairShareHistory"}),
    )
    .await;
    for (team, capacity) in [("cv", None), ("nlp", Some(json!({"nvidia.com/a100": "8"})))] {
        let mut body = json!({"name": team, "open": true, "guarantee": {"nvidia.com/a100": "4"}});
        if let Some(capacity) = capacity {
            body["capacity"] = capacity;
        }
        queue(&d.app, &admin, body).await;
    }
    d.round().await;
    prometheus
        .wait_for(&client, r#"anteroom_prequeue_reclaimed_total{queue="nlp"}"#, |v| {
            v == 0.0
        })
        .await;

    // Nine: nlp fills the node (borrowing cv's idle half); cv's job is owed its guarantee, waits
    // 10 s, and the watcher reclaims and activates it.
    let nina = d.app.user_token("nina").await;
    let carl = d.app.user_token("carl").await;
    for i in 0..8 {
        let mut body = gpu_job(&format!("nlp-{i}"), "custom", 1, "normal");
        body["queue"] = json!("nlp");
        let (_, answer) = submit(&d, &nina, body).await;
        assert_eq!(answer["admission"]["decision"], "activated", "nlp-{i}: {answer}");
        d.advance(1).await;
    }
    d.settle().await;
    let mut body = gpu_job("cv-0", "custom", 2, "normal");
    body["queue"] = json!("cv");
    let (cv, answer) = submit(&d, &carl, body).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    // Not before the delay, counted from the round that first sees it owed.
    assert!(d.round().await.reclaimed.is_empty());
    d.advance(10).await;
    let report = d.round().await;
    assert!(report.activated.contains(&cv), "{report:?}");
    // Once the victims' grace is over, cv's job runs.
    d.advance(31).await;
    d.settle().await;
    assert_eq!(detail(&d, &carl, cv).await["phase"], "Running");
    d.advance(60).await;
    d.round().await;

    // Scraped since: the reclaim is in Prometheus.
    prometheus
        .wait_for(&client, r#"sum(anteroom_prequeue_reclaimed_total{queue="nlp"})"#, |v| {
            v >= 2.0
        })
        .await;
    prometheus
        .wait_for(&client, r#"max(anteroom_queue_fair_share_factor{queue="nlp"})"#, |v| {
            v < 1.0
        })
        .await;
    // Two more scrapes, so every rate window holds the morning.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let mut failures = Vec::new();
    let queries = panel_queries(&dashboard());
    assert!(queries.len() >= 12, "{queries:?}");
    for (title, promql) in &queries {
        let answer = prometheus.query(&client, promql).await;
        if answer["status"] != "success" {
            failures.push(format!("{title}: {promql}: {answer}"));
        } else if !values(&answer).iter().any(|v| v.is_finite()) {
            failures.push(format!("{title}: {promql}: no data: {answer}"));
        }
    }
    assert!(failures.is_empty(), "panels without data:\n{}", failures.join("\n"));

    // The per-user factors an admin opted into: nina used more of nlp than carl of cv.
    let users = prometheus.query(&client, "anteroom_user_fair_share_factor").await;
    assert!(values(&users).len() >= 2, "{users}");
}

//! Scenarios with time moved by hand: the real app (API, store, simulated cluster, watcher),
//! but the clock stands still until the test moves it, the simulation steps only when told,
//! and the watcher runs a round only when the test asks. No sleeps: a ten-minute tolerance
//! passes in one call.
//!
//! ```no_run
//! # async fn t() {
//! let d = anteroom_tests::driven::Driven::start(None, "").await;
//! d.round().await;
//! d.advance(600).await;
//! # }
//! ```

use std::sync::Arc;

use anteroom::app::HandClock;
use anteroom::cluster::JobEvent;
use anteroom::cluster::clock::{Clock, ManualClock};
use anteroom::cluster::sim::SimulatedCluster;
use anteroom::store::lease::Fence;
use anteroom::watcher::{RoundReport, Watcher, WatcherError, sync};
use tokio::sync::{Mutex, broadcast};

use serde_json::{Value, json};

use crate::TestApp;
use crate::api::{call, job, settings};

/// Runs a scenario (an `async fn(Option<String>)` taking the database URL, `None` for SQLite)
/// on SQLite and on a throwaway PostgreSQL database (ignored without one, like `both!`).
#[macro_export]
macro_rules! both_driven {
    ($name:ident, $scenario:ident) => {
        mod $name {
            #[tokio::test]
            async fn on_sqlite() {
                super::$scenario(None).await;
            }

            #[tokio::test]
            #[ignore = "needs PostgreSQL"]
            async fn on_postgres() {
                let url = $crate::postgres::fresh_database(&$crate::postgres::server_url()).await;
                super::$scenario(Some(url)).await;
            }
        }
    };
}

/// Where the hand clock starts: a fixed instant, so runs do not depend on the day.
pub fn epoch() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339("2026-11-23T08:00:00Z")
        .expect("a valid instant")
        .to_utc()
}

/// A running app whose time, cluster and watcher move only when the test says so.
pub struct Driven {
    /// The app (its HTTP API serves as usual).
    pub app: TestApp,
    /// The clock everything reads.
    pub clock: HandClock,
    /// The simulated cluster.
    pub sim: Arc<SimulatedCluster>,
    /// The watcher (its lease is taken by the first round).
    pub watcher: Watcher,
    fence: Mutex<Option<Fence>>,
    events: Mutex<broadcast::Receiver<JobEvent>>,
    /// [`Driven::sync_events`] (and so [`Driven::settle`]) applies the cluster's events one by
    /// one ([`sync::apply`]) instead of together ([`sync::apply_all`], what the running status
    /// sync does): to compare the two. (The resync of `settle` applies them together either way.)
    pub one_by_one_sync: bool,
}

impl Driven {
    /// Starts on SQLite (`database_url` `None`) or the given database, with the simulated
    /// cluster's nodes from `nodes_toml` (the default cluster when empty). Jobs run for a day
    /// unless their command is `sleep N`; a deleted job's pods terminate for at most 30 s.
    pub async fn start(database_url: Option<String>, nodes_toml: &str) -> Driven {
        Self::start_configured(database_url, nodes_toml, |_| {}).await
    }

    /// [`Driven::start`], with `configure` applied to the settings last.
    pub async fn start_configured(
        database_url: Option<String>,
        nodes_toml: &str,
        configure: impl FnOnce(&mut anteroom::config::Config) + Send + 'static,
    ) -> Driven {
        let clock: HandClock = Arc::new(ManualClock::new(epoch()));
        let nodes = (!nodes_toml.is_empty()).then(|| {
            let file = tempfile::NamedTempFile::new().expect("temp file");
            std::fs::write(file.path(), nodes_toml).expect("nodes file");
            file.into_temp_path().keep().expect("kept nodes file")
        });
        let mut builder = TestApp::builder().hand_clock(clock.clone()).configure(move |c| {
            c.sim_nodes = nodes;
            c.sim_default_runtime_seconds = 86_400;
            c.sim_termination_grace_seconds = 30;
            configure(c);
        });
        if let Some(url) = database_url {
            builder = builder.database_url(url);
        }
        let app = builder.start().await;
        let sim = app.sim.clone().expect("the simulated cluster runs");
        let events = sim_events(&app);
        let watcher = Watcher::new(app.state.watcher_inputs());
        Driven {
            app,
            clock,
            sim,
            watcher,
            fence: Mutex::new(None),
            events: Mutex::new(events),
            one_by_one_sync: false,
        }
    }

    /// One round of the watcher, renewing (or taking) its lease first.
    pub async fn round(&self) -> RoundReport {
        self.try_round(&self.watcher).await.expect("the round runs")
    }

    /// One round of `watcher` (this app's, or a second one over the same store), renewing or
    /// taking its lease first; the error as it came.
    pub async fn try_round(&self, watcher: &Watcher) -> Result<RoundReport, WatcherError> {
        let fence = self.fence_of(watcher).await?;
        let Some(fence) = fence else {
            return Err(WatcherError::LeaseLost);
        };
        watcher.round(&fence).await
    }

    async fn fence_of(&self, watcher: &Watcher) -> Result<Option<Fence>, WatcherError> {
        let db = &self.app.state.db;
        let now = self.clock.now();
        let mut held = self.fence.lock().await;
        if let Some(f) = held.as_ref()
            && f.holder == watcher.lease.holder
            && watcher.lease.renew(db, f, now).await?
        {
            return Ok(Some(f.clone()));
        }
        let taken = watcher.lease.acquire(db, now).await?;
        if taken.is_some() {
            *held = taken.clone();
        }
        Ok(taken)
    }

    /// The lease term of this app's watcher (after its first round).
    pub async fn term(&self) -> i64 {
        self.fence.lock().await.as_ref().expect("a round took the lease").token
    }

    /// Moves time on by `seconds`, steps the simulated cluster there, and syncs what it
    /// reported back into the store.
    pub async fn advance(&self, seconds: i64) {
        self.clock.advance(chrono::Duration::seconds(seconds));
        self.settle().await;
    }

    /// Steps the simulated cluster at the current time and applies its events to the store,
    /// then a full resync (the status sync's work, done here so the test knows when it is
    /// over).
    pub async fn settle(&self) {
        self.sim.step().await.expect("the simulation steps");
        for applied in self.sync_events().await {
            applied.expect("status sync");
        }
        sync::resync(&self.app.state.db, self.sim.as_ref(), &self.app.state.signals)
            .await
            .expect("resync");
    }

    /// Moves time on by `seconds` and steps the simulated cluster there, leaving its events
    /// unapplied (a status sync that lags): the next [`Driven::sync_events`] applies them all.
    pub async fn step_cluster(&self, seconds: i64) {
        self.clock.advance(chrono::Duration::seconds(seconds));
        self.sim.step().await.expect("the simulation steps");
    }

    /// Applies the cluster's events received so far, without a resync; answers what each did
    /// (an error as its message).
    pub async fn sync_events(&self) -> Vec<Result<sync::Applied, String>> {
        let mut events = self.events.lock().await;
        let mut batch = Vec::new();
        loop {
            match events.try_recv() {
                Ok(event) => batch.push(event),
                Err(broadcast::error::TryRecvError::Empty) => break,
                Err(e) => panic!("the test missed cluster events: {e}"),
            }
        }
        let mut applied = Vec::new();
        if self.one_by_one_sync {
            for event in &batch {
                applied.push(sync::apply(&self.app.state.db, self.app.state.cluster.as_ref(), event).await);
            }
        } else {
            applied = sync::apply_all(&self.app.state.db, self.app.state.cluster.as_ref(), &batch).await;
        }
        applied.into_iter().map(|a| a.map_err(|e| e.to_string())).collect()
    }
}

fn sim_events(app: &TestApp) -> broadcast::Receiver<JobEvent> {
    use anteroom::cluster::Cluster;
    app.sim.as_ref().expect("the simulated cluster runs").subscribe()
}

// Helpers of the scenarios: jobs through the API, and the preemption set-up.

/// One node with 8 A100s (and a CPU node beside it).
pub const GPU_NODES: &str = r#"
[[node]]
name = "gpu-0"
cpu = "64"
memory = "512Gi"
accelerators = { "nvidia.com/a100" = "8" }

[[node]]
name = "cpu-0"
cpu = "64"
memory = "256Gi"
"#;

/// Submits; answers the job id and the answer.
pub async fn submit(d: &Driven, token: &str, body: Value) -> (i64, Value) {
    crate::api::submit_job(&d.app, token, body).await
}

/// A job's detail as its owner (or an admin) sees it.
pub async fn detail(d: &Driven, token: &str, id: i64) -> Value {
    let (status, body) = call(&d.app, "GET", &format!("/api/v1/jobs/{id}"), token, None).await;
    assert_eq!(status, 200, "{body}");
    body
}

pub async fn phase(d: &Driven, token: &str, id: i64) -> String {
    detail(d, token, id).await["phase"].as_str().unwrap().to_string()
}

pub fn kinds(detail: &Value) -> Vec<String> {
    detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect()
}

pub fn reason_codes(detail: &Value) -> Vec<String> {
    detail["prequeue"]["reasons"]
        .as_array()
        .map(|r| r.iter().map(|x| x["code"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// A custom job that runs `seconds` (or a day) asking for `resources`.
pub fn timed_job(name: &str, resources: Value, seconds: Option<u32>) -> Value {
    let mut body = job(name, resources);
    if let Some(s) = seconds {
        body["tasks"][0]["command"] = json!(["sleep", s.to_string()]);
    }
    body
}

/// A custom job of `gpus` A100s that runs `seconds` (`sleep`): runtimes the usage history must
/// then report exactly.
pub fn sleeping(name: &str, gpus: u32, seconds: u32, schedule: &str) -> Value {
    let mut body = gpu_job(name, "custom", gpus, schedule);
    body["tasks"][0]["command"] = json!(["sleep", seconds.to_string()]);
    body
}

/// A one-task job of `kind` asking for `gpus` A100s and 1 CPU.
pub fn gpu_job(name: &str, kind: &str, gpus: u32, schedule: &str) -> Value {
    let mut body = job(name, json!({"cpu": "1", "nvidia.com/a100": gpus.to_string()}));
    body["kind"] = json!(kind);
    body["scheduleType"] = json!(schedule);
    body
}

/// Three running backfill notebooks taking 1, 2 and 4 of the node's 8 GPUs, and a normal
/// 4-GPU job pending in the cluster (it does not fit), submitted after them. Answers
/// ([1, 2, 4]-GPU victims' ids, the normal job).
pub async fn node_with_three_elastic_jobs_and_a_waiting_normal_job(d: &Driven, normal: Value) -> ([i64; 3], i64) {
    node_with_three_elastic_jobs_in("default", d, normal).await
}

/// [`node_with_three_elastic_jobs_and_a_waiting_normal_job`], the notebooks (Eli's) in `queue`.
pub async fn node_with_three_elastic_jobs_in(queue: &str, d: &Driven, normal: Value) -> ([i64; 3], i64) {
    let admin = d.app.admin_token().await;
    let eli = d.app.user_token("eli").await;
    settings(
        &d.app,
        &admin,
        json!({"backfillEnabled": true, "normalJobWaitingToleranceSeconds": 60, "backfillMinRuntimeSeconds": 0}),
    )
    .await;
    let mut victims = [0; 3];
    for (i, gpus) in [1, 2, 4].into_iter().enumerate() {
        let mut notebook = gpu_job(&format!("nb{gpus}"), "jupyter", gpus, "backfill");
        notebook["queue"] = json!(queue);
        let (id, a) = submit(d, &eli, notebook).await;
        assert_eq!(a["admission"]["decision"], "activated", "{a}");
        victims[i] = id;
    }
    d.settle().await;
    let (id, a) = submit(d, &admin, normal).await;
    assert_eq!(a["admission"]["decision"], "activated", "{a}");
    d.settle().await;
    assert_eq!(phase(d, &admin, id).await, "Pending", "4 GPUs do not fit in the 1 free");
    (victims, id)
}

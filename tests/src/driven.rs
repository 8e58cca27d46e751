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

use crate::TestApp;

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
}

impl Driven {
    /// Starts on SQLite (`database_url` `None`) or the given database, with the simulated
    /// cluster's nodes from `nodes_toml` (the default cluster when empty). Jobs run for a day
    /// unless their command is `sleep N`; a deleted job's pods terminate for at most 30 s.
    pub async fn start(database_url: Option<String>, nodes_toml: &str) -> Driven {
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
        });
        if let Some(url) = database_url {
            builder = builder.database_url(url);
        }
        let app = builder.start().await;
        let sim = app.sim.clone().expect("the simulated cluster runs");
        let events = sim_events(&app);
        let watcher = Watcher::new(&app.state);
        Driven {
            app,
            clock,
            sim,
            watcher,
            fence: Mutex::new(None),
            events: Mutex::new(events),
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
        let mut events = self.events.lock().await;
        loop {
            match events.try_recv() {
                Ok(event) => {
                    sync::apply(&self.app.state.db, &event).await.expect("status sync");
                }
                Err(broadcast::error::TryRecvError::Empty) => break,
                Err(e) => panic!("the test missed cluster events: {e}"),
            }
        }
        sync::resync(&self.app.state.db, self.sim.as_ref(), &self.app.state.signals)
            .await
            .expect("resync");
    }
}

fn sim_events(app: &TestApp) -> broadcast::Receiver<JobEvent> {
    use anteroom::cluster::Cluster;
    app.sim.as_ref().expect("the simulated cluster runs").subscribe()
}

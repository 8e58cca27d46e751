//! The application state every handler receives. It lives in a module of its own, below the
//! router and the handlers, so that a handler never imports the module that builds the router
//! (which imports every handler): no import cycle between `http`, `app` and the features.

use std::sync::Arc;

use sea_orm::DatabaseConnection;

use crate::auth::throttle::LoginThrottle;
use crate::auth::token::TokenKeys;
use crate::cluster::Cluster;
use crate::cluster::clock::Clock;
use crate::config::Config;
use crate::settings::Settings;
use crate::signals::Signals;
use crate::users::password::PasswordWork;

/// Everything a handler needs; cheap to clone (pointers only), built once at start.
#[derive(Clone)]
pub struct AppState {
    /// The pool that writes (and reads what a write depends on). SQLite: one connection, so
    /// writes are serialised in the process; PostgreSQL: the whole pool.
    pub db: DatabaseConnection,
    /// The pool for reads that stand alone (lists, lookups, the per-request user reload,
    /// readiness). SQLite: [`crate::store::READ_CONNECTIONS`] read-only connections that read
    /// in parallel beside the writer (WAL); PostgreSQL: the same pool as `db`.
    pub db_read: DatabaseConnection,
    /// The validated configuration.
    pub config: Arc<Config>,
    /// Session token keys.
    pub tokens: Arc<TokenKeys>,
    /// The cluster jobs go to.
    pub cluster: Arc<dyn Cluster>,
    /// Failed-login counters, shared by every request of this process.
    pub login_throttle: Arc<LoginThrottle>,
    /// Password hashing, bounded to a few at a time so a login flood cannot exhaust memory.
    pub passwords: Arc<PasswordWork>,
    /// The prequeue settings, held in memory and refreshed on writes and every ticker interval.
    pub settings: Arc<Settings>,
    /// Wake-ups for the watcher and the event streams, and the shutdown notice.
    pub signals: Signals,
    /// The task that admits job submissions in batches (one transaction a batch).
    pub sequencer: crate::jobs::admit::Sequencer,
    /// The task that creates admitted submissions in the cluster, in groups.
    pub activator: crate::jobs::activator::Activator,
    /// Where "now" comes from for every job time the prequeue compares (submission,
    /// timeouts, locks, activation): the system clock, or a hand-moved one in tests that drive
    /// the simulated cluster and the watcher step by step.
    pub clock: Arc<dyn Clock>,
    /// The users of recent requests, so that each request need not read its user's row
    /// (`users::session_cache`); a write to a user must [`forget`] it.
    ///
    /// [`forget`]: crate::users::session_cache::SessionCache::forget
    pub session_users: Arc<crate::users::session_cache::SessionCache>,
    /// Open event streams and followed logs per user (`max_streams_per_user`).
    pub stream_slots: Arc<crate::slots::UserSlots>,
    /// Open notebook tunnels (WebSockets) per user (`max_notebook_tunnels_per_user`).
    pub notebook_tunnels: Arc<crate::slots::UserSlots>,
    /// Proxied notebook requests in flight per user, until their answer is sent
    /// (`max_notebook_requests_per_user`).
    pub notebook_requests: Arc<crate::slots::UserSlots>,
    /// Snapshot log reads in flight in this process, all users together: each holds up to
    /// the log answer's limit in memory.
    pub log_reads: Arc<tokio::sync::Semaphore>,
    /// Of those, per user (one user's burst cannot hold them all).
    pub log_reads_by_user: Arc<crate::slots::UserSlots>,
    /// Where notebooks are served (`notebook_origin`, or `http://j{job}.localhost:<port>`).
    pub notebook_origin: Arc<crate::notebooks::origin::NotebookOrigin>,
    /// Where the watcher publishes its forecast of the prequeue (positions in the active order,
    /// start estimates) and the API reads it.
    pub forecasts: Arc<crate::forecasts::Forecasts>,
    /// True when tests drive the watcher and the simulated cluster by hand: then neither the
    /// watcher loop nor the simulation's ticker runs.
    pub driven_by_hand: bool,
    /// SQLite file only: the background WAL checkpoint, stopped with the last clone of this
    /// state (`store::checkpoint`).
    pub checkpointer: Option<Arc<crate::store::checkpoint::Checkpointer>>,
}

impl AppState {
    /// The state of a server that listens on `bound`: notebook origins name that port (the
    /// laptop default `http://j{job}.localhost:<port>`, and the portal's address for links
    /// back), which is known only once the listener is bound (port 0 in tests).
    pub fn listening_on(&mut self, bound: std::net::SocketAddr) {
        self.notebook_origin = Arc::new(crate::notebooks::origin::NotebookOrigin::resolve(
            self.config.notebook_origin.as_ref(),
            self.config.public_url.as_ref().map(|u| u.origin.as_str()),
            bound,
        ));
    }

    /// What the prequeue watcher of this application uses of it.
    pub fn watcher_inputs(&self) -> crate::watcher::WatcherInputs {
        crate::watcher::WatcherInputs {
            db: self.db.clone(),
            db_read: self.db_read.clone(),
            cluster: self.cluster.clone(),
            settings: self.settings.clone(),
            signals: self.signals.clone(),
            clock: self.clock.clone(),
            job_retention_days: self.config.job_retention_days,
            webhook_network: crate::notifications::sender::NetworkRules {
                cluster_ranges: self.config.cluster_networks.clone(),
            },
            forecasts: self.forecasts.clone(),
            metrics_user_labels: self.config.metrics_user_labels,
        }
    }
}

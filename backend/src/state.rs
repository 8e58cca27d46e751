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
    /// Open event streams per user (`max_streams_per_user`).
    pub stream_slots: Arc<crate::jobs::stream::StreamSlots>,
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

//! Building and running the application: state, start-up steps, and the server loop.
//! Tests call [`prepare`] and [`serve`] exactly as `main` does.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::auth::throttle::LoginThrottle;
use crate::auth::token::TokenKeys;
use crate::cluster;
use crate::config::Config;
pub use crate::state::AppState;
use crate::users::password::PasswordWork;
use crate::users::{self, FirstAdmin};
use crate::{http, store};

/// The result of the start-up steps: the state, and what happened to the first admin (so
/// `main` can print a generated password once).
pub struct Prepared {
    /// The application state.
    pub state: AppState,
    /// Whether the first admin was created now, and with which password.
    pub first_admin: FirstAdmin,
    /// The simulated cluster, when it is the one configured (tests driven by hand step it).
    pub sim: Option<Arc<cluster::sim::SimulatedCluster>>,
}

/// A clock moved by hand, for tests that drive the watcher and the simulated cluster step by
/// step: with it, neither the watcher loop nor the simulation's ticker runs.
pub type HandClock = Arc<cluster::clock::ManualClock>;

pub use crate::users::ADMIN_PASSWORD_FILE;

/// The file in the data directory that keeps the generated token signing key.
pub const JWT_SECRET_FILE: &str = "jwt-secret";

/// Start-up: data dir, database, migrations, token keys, cluster, and the first admin last.
/// Every step that can fail on a bad setting runs before the admin is created: a generated
/// password is shown only at the start that creates the admin, so a start that failed after
/// creating it would lose the password for good.
pub async fn prepare(config: Config) -> anyhow::Result<Prepared> {
    prepare_with(config, None).await
}

/// [`prepare`], with time moved by hand when `hand_clock` is given (tests only).
pub async fn prepare_with(config: Config, hand_clock: Option<HandClock>) -> anyhow::Result<Prepared> {
    prepare_on(config, hand_clock, None).await
}

/// [`prepare_with`], talking to `cluster` when given instead of the configured one: tests run a
/// second replica over the same store and the same (simulated) cluster, as replicas in a
/// deployment share one Kubernetes API server.
pub async fn prepare_on(
    config: Config,
    hand_clock: Option<HandClock>,
    cluster: Option<cluster::Built>,
) -> anyhow::Result<Prepared> {
    let driven_by_hand = hand_clock.is_some();
    let clock: Arc<dyn cluster::clock::Clock> = match hand_clock {
        Some(c) => c,
        None => Arc::new(cluster::clock::SystemClock),
    };
    crate::files::create_private_dir(&config.data_dir)
        .with_context(|| format!("creating the data directory {}", config.data_dir.display()))?;
    let db = store::connect(&config.database_url)
        .await
        .with_context(|| "connecting to the database (check ANTEROOM_DATABASE_URL)")?;
    // Before the migration: its checks may count (`anteroom_job_counts_drift_total`).
    crate::http::install_metrics_recorder();
    store::migrate(&db).await.context("applying database migrations")?;
    let db_read = store::connect_read(&config.database_url, &db)
        .await
        .context("opening the database's read connections")?;
    let checkpointer = match store::sqlite_file(&config.database_url) {
        Some(_) => Some(Arc::new(
            store::checkpoint::Checkpointer::start(&config.database_url)
                .await
                .context("opening the database's checkpoint connection")?,
        )),
        None => None,
    };
    let secret = match &config.jwt_secret {
        Some(s) => s.expose().as_bytes().to_vec(),
        None => load_or_create_secret(&config.data_dir.join(JWT_SECRET_FILE))?,
    };
    let built = match cluster {
        Some(shared) => shared,
        None => cluster::from_config(&config, &db, clock.clone(), !driven_by_hand)
            .await
            .context("connecting to the cluster")?,
    };
    let tokens = Arc::new(TokenKeys::new(
        &secret,
        config.jwt_previous_secret.as_ref().map(|s| s.expose().as_bytes()),
    ));
    // Made now, off the request path: otherwise the first login for an unknown username would
    // pay for two hashes (this one and its own), which a stopwatch could tell apart.
    tokio::task::spawn_blocking(crate::auth::handlers::unknown_user_hash);
    let settings = Arc::new(
        crate::settings::Settings::load(&db)
            .await
            .context("reading the prequeue settings")?,
    );
    let sequencer = crate::jobs::admit::Sequencer::start(db.clone());
    let first_admin = users::ensure_first_admin(
        &db,
        config.admin_password.as_ref().map(|s| s.expose()),
        &config.data_dir.join(ADMIN_PASSWORD_FILE),
    )
    .await
    .context("creating the first admin")?;
    let activator = crate::jobs::activator::Activator::start(db.clone(), built.cluster.clone(), clock.clone());
    let notebook_origin = Arc::new(crate::notebooks::origin::NotebookOrigin::resolve(
        config.notebook_origin.as_ref(),
        config.public_url.as_ref().map(|u| u.origin.as_str()),
        config.listen,
    ));
    let signals = crate::signals::Signals::default();
    Ok(Prepared {
        state: AppState {
            db: db.clone(),
            db_read,
            config: Arc::new(config),
            tokens,
            cluster: built.cluster,
            login_throttle: Arc::new(LoginThrottle::default()),
            passwords: Arc::new(PasswordWork::for_this_machine()),
            settings,
            signals: signals.clone(),
            sequencer,
            activator,
            clock,
            session_users: Default::default(),
            stream_slots: Default::default(),
            notebook_tunnels: Default::default(),
            notebook_requests: Default::default(),
            log_reads: Arc::new(tokio::sync::Semaphore::new(
                crate::jobs::diagnosis::CONCURRENT_LOG_READS,
            )),
            log_reads_by_user: Default::default(),
            notebook_origin,
            forecasts: Arc::new(crate::forecasts::Forecasts::new(driven_by_hand, db.clone(), signals)),
            driven_by_hand,
            checkpointer,
        },
        first_admin,
        sim: built.sim,
    })
}

/// The shortest signing key accepted, in bytes (HS256 wants at least its 256-bit output).
const MIN_SECRET_BYTES: usize = 32;

/// Reads the generated signing key, or creates one (owner-only permissions). A key file that
/// exists but is too short or unreadable stops the start: replacing it silently would log
/// everyone out and hide that someone wrote a weak key there. Several replicas must share
/// `ANTEROOM_JWT_SECRET` instead: each would otherwise have its own key.
fn load_or_create_secret(path: &Path) -> anyhow::Result<Vec<u8>> {
    match std::fs::read_to_string(path) {
        Ok(existing) => {
            ensure_owner_only(path)?;
            let trimmed = existing.trim();
            anyhow::ensure!(
                trimmed.len() >= MIN_SECRET_BYTES,
                "the signing key file {} holds {} bytes; at least {MIN_SECRET_BYTES} are needed (delete the file to have a new key generated, which logs everyone out, or set ANTEROOM_JWT_SECRET)",
                path.display(),
                trimmed.len()
            );
            return Ok(trimmed.as_bytes().to_vec());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(anyhow::Error::new(e).context(format!("reading the signing key file {}", path.display()))),
    }
    use rand::Rng;
    let bytes: [u8; 32] = rand::rng().random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    crate::files::write_private(path, &hex).with_context(|| format!("writing {}", path.display()))?;
    tracing::warn!(
        path = %path.display(),
        "ANTEROOM_JWT_SECRET is unset: using a generated key kept in the data directory; set it when running more than one replica"
    );
    Ok(hex.into_bytes())
}

/// A signing key file that other users may read (or write) stops the start: whoever read it
/// can mint a session for any user. It is not quietly restricted instead: it may have been
/// read already, which the operator must hear of (and then rather replace the key).
fn ensure_owner_only(path: &Path) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .with_context(|| format!("reading the permissions of the signing key file {}", path.display()))?
            .permissions()
            .mode();
        anyhow::ensure!(
            mode & 0o077 == 0,
            "the signing key file {} is open to other users (mode {:o}); run `chmod 600 {}` (or delete it to have a new key generated, which logs everyone out)",
            path.display(),
            mode & 0o777,
            path.display()
        );
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Serves the app on `listener` until `shutdown` resolves, then finishes in-flight requests.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut state = state;
    // Notebook origins name the port the server really listens on (port 0 in tests).
    if let Ok(bound) = listener.local_addr() {
        state.listening_on(bound);
    }
    let refresher = {
        let (settings, db) = (state.settings.clone(), state.db_read.clone());
        tokio::spawn(async move { settings.refresh_periodically(&db, std::future::pending()).await })
    };
    // The queues the cluster lacks (made before `mirror_queues`, or while it was off) are created
    // in the background, retried until the apiserver answers; the simulated cluster has them.
    let missing_queues = tokio::spawn(crate::queues::cluster::create_missing_at_start(
        state.db.clone(),
        state.cluster.clone(),
    ));
    // PostgreSQL: wake-ups reach the other replicas (the leader's watcher, their streams).
    let replicas =
        crate::signals::replicas::start(&state.config.database_url, &state.db, &state.signals, &state.settings);
    // The watcher and its status sync run while the server serves; both end when it closes.
    // Tests that drive time by hand run rounds themselves.
    let watcher = if state.driven_by_hand {
        tokio::spawn(async {})
    } else {
        tokio::spawn(crate::watcher::Watcher::new(state.watcher_inputs()).run())
    };
    let closer = state.signals.clone();
    let signals = state.signals.clone();
    let shutdown = async move {
        shutdown.await;
        // Event streams end now; otherwise the graceful shutdown would wait for them for ever.
        signals.close();
    };
    // The peer address feeds the login throttle (`auth::throttle`); the server loop inserts it.
    let limits = state.config.http_limits;
    let served = http::server::serve(listener, http::router(state), limits, shutdown).await;
    refresher.abort();
    missing_queues.abort();
    // What the last requests raised still reaches the other replicas.
    if let Some(replicas) = replicas {
        replicas.finish().await;
    }
    // The watcher ends at its next wait; give a round in flight a moment to finish its step
    // (a claim left behind is repaired at the next start).
    closer.close();
    if tokio::time::timeout(std::time::Duration::from_secs(5), watcher)
        .await
        .is_err()
    {
        tracing::warn!("the prequeue watcher did not finish its round within 5 s");
    }
    served
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_signing_key_is_kept_owner_only_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JWT_SECRET_FILE);
        let made = load_or_create_secret(&path).unwrap();
        assert_eq!(load_or_create_secret(&path).unwrap(), made);
    }

    #[cfg(unix)]
    #[test]
    fn a_signing_key_file_open_to_group_or_others_stops_the_start() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JWT_SECRET_FILE);
        let key = "ab".repeat(32);
        std::fs::write(&path, &key).unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let error = load_or_create_secret(&path).unwrap_err().to_string();
            assert!(error.contains(&path.display().to_string()), "{mode:o}: {error}");
            assert!(error.contains("chmod 600"), "{mode:o}: {error}");
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(load_or_create_secret(&path).unwrap(), key.into_bytes());
    }
}

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
}

/// Start-up: data dir, database, migrations, first admin, token keys, cluster.
pub async fn prepare(config: Config) -> anyhow::Result<Prepared> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating the data directory {}", config.data_dir.display()))?;
    let db = store::connect(&config.database_url)
        .await
        .with_context(|| "connecting to the database (check ANTEROOM_DATABASE_URL)")?;
    store::migrate(&db).await.context("applying database migrations")?;
    let first_admin = users::ensure_first_admin(&db, config.admin_password.as_ref().map(|s| s.expose()))
        .await
        .context("creating the first admin")?;
    let secret = match &config.jwt_secret {
        Some(s) => s.expose().as_bytes().to_vec(),
        None => load_or_create_secret(&config.data_dir.join("jwt-secret"))?,
    };
    let cluster = cluster::from_config(&config, &db)
        .await
        .context("connecting to the cluster")?;
    let tokens = Arc::new(TokenKeys::new(
        &secret,
        config.jwt_previous_secret.as_ref().map(|s| s.expose().as_bytes()),
    ));
    Ok(Prepared {
        state: AppState {
            db,
            config: Arc::new(config),
            tokens,
            cluster,
            login_throttle: Arc::new(LoginThrottle::default()),
            passwords: Arc::new(PasswordWork::for_this_machine()),
        },
        first_admin,
    })
}

/// Reads the generated signing key, or creates one (owner-only permissions). Several replicas
/// must share `ANTEROOM_JWT_SECRET` instead: each would otherwise have its own key.
fn load_or_create_secret(path: &Path) -> anyhow::Result<Vec<u8>> {
    if let Ok(existing) = std::fs::read_to_string(path) {
        let trimmed = existing.trim();
        if trimmed.len() >= 32 {
            return Ok(trimmed.as_bytes().to_vec());
        }
    }
    use rand::Rng;
    let bytes: [u8; 32] = rand::rng().random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    write_private(path, &hex).with_context(|| format!("writing {}", path.display()))?;
    tracing::warn!(
        path = %path.display(),
        "ANTEROOM_JWT_SECRET is unset: using a generated key kept in the data directory; set it when running more than one replica"
    );
    Ok(hex.into_bytes())
}

fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)?.write_all(contents.as_bytes())
}

/// Serves the app on `listener` until `shutdown` resolves, then finishes in-flight requests.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // The peer address feeds the login throttle (`auth::throttle`).
    let router = http::router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    axum::serve(listener, router).with_graceful_shutdown(shutdown).await
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

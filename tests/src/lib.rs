//! The end-to-end harness: the real application on `127.0.0.1:0` with a fresh database per
//! test (SQLite by default, PostgreSQL when the test command provides a server), and headless
//! Chromium driven through chromedriver.
//!
//! ```no_run
//! # async fn t() {
//! let app = anteroom_tests::TestApp::builder().start().await;
//! let res = app.client.get(app.url("/healthz")).send().await.unwrap();
//! assert_eq!(res.status(), 200);
//! # }
//! ```

pub mod api;
pub mod browser;
pub mod driven;
pub mod locales;
pub mod postgres;

use std::net::SocketAddr;

use anteroom::app::{self, AppState};
use anteroom::config::{Config, Secret};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The admin password every test app starts with.
pub const ADMIN_PASSWORD: &str = "test-admin-password";

/// The password of every user [`TestApp::user_token`] creates.
pub const USER_PASSWORD: &str = "user-password-123";

/// True when running under CI, where what a test needs (PostgreSQL, Chromium, the built UI)
/// must be there. One rule in three places, kept the same: `is_ci` in `anteroom.sh`, `in_ci`
/// in xtask, and this.
pub fn in_ci() -> bool {
    means_ci(std::env::var("CI").ok().as_deref())
}

/// The rule: `CI` set to anything but empty, `false` or `0`.
pub fn means_ci(value: Option<&str>) -> bool {
    value.is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

#[cfg(test)]
mod tests {
    #[test]
    fn ci_is_any_value_but_empty_false_or_zero() {
        for v in ["true", "1", "yes", "github"] {
            assert!(super::means_ci(Some(v)), "{v}");
        }
        for v in [None, Some(""), Some("false"), Some("0")] {
            assert!(!super::means_ci(v), "{v:?}");
        }
    }
}

/// A running Anteroom.
pub struct TestApp {
    /// Where it listens.
    pub addr: SocketAddr,
    /// An HTTP client (no redirects followed, so tests see them).
    pub client: reqwest::Client,
    /// The application state, for tests that look behind the API.
    pub state: AppState,
    /// The simulated cluster, when it runs (tests driven by hand step it).
    pub sim: Option<std::sync::Arc<anteroom::cluster::sim::SimulatedCluster>>,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<std::io::Result<()>>>,
    _data_dir: TempDir,
}

/// A change to the settings before the start.
type ConfigChange = Box<dyn FnOnce(&mut Config) + Send>;

/// Options for [`TestApp`]; `start()` launches it.
#[derive(Default)]
pub struct TestAppBuilder {
    database_url: Option<String>,
    configure: Option<ConfigChange>,
    passwords: Option<anteroom::users::password::PasswordWork>,
    hand_clock: Option<app::HandClock>,
    cluster: Option<anteroom::cluster::Built>,
}

impl TestAppBuilder {
    /// A second replica of `first`: the same database (PostgreSQL, for several replicas) and
    /// the same cluster, as replicas of one deployment share one API server; its own pools,
    /// caches, signals and watcher.
    pub fn replica_of(mut self, first: &TestApp) -> Self {
        self.database_url = Some(first.state.config.database_url.clone());
        self.cluster = Some(anteroom::cluster::Built {
            cluster: first.state.cluster.clone(),
            sim: first.sim.clone(),
        });
        self
    }

    /// Use this database instead of a fresh SQLite file.
    pub fn database_url(mut self, url: impl Into<String>) -> Self {
        self.database_url = Some(url.into());
        self
    }

    /// Changes settings before the start (e.g. `trusted_proxies`).
    pub fn configure(mut self, f: impl FnOnce(&mut Config) + Send + 'static) -> Self {
        self.configure = Some(Box::new(f));
        self
    }

    /// Hash passwords with these limits instead of the machine's.
    pub fn password_work(mut self, work: anteroom::users::password::PasswordWork) -> Self {
        self.passwords = Some(work);
        self
    }

    /// Time moves only by hand on this clock: no watcher loop, no simulation ticker (see
    /// [`driven`]).
    pub fn hand_clock(mut self, clock: app::HandClock) -> Self {
        self.hand_clock = Some(clock);
        self
    }

    /// Starts the app: migrations, first admin, router, all as in production.
    pub async fn start(self) -> TestApp {
        let data_dir = tempfile::tempdir().expect("temp dir");
        let mut config = Config::for_data_dir(data_dir.path());
        if let Some(url) = self.database_url {
            config.database_url = url;
        }
        config.admin_password = Some(Secret::new(ADMIN_PASSWORD));
        config.jwt_secret = Some(Secret::new("test-secret-test-secret-test-secret"));
        if let Some(f) = self.configure {
            f(&mut config);
        }
        let mut prepared = app::prepare_on(config, self.hand_clock, self.cluster)
            .await
            .expect("the app prepares");
        if let Some(work) = self.passwords {
            prepared.state.passwords = std::sync::Arc::new(work);
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        prepared.state.listening_on(addr);
        let (tx, rx) = oneshot::channel::<()>();
        let state = prepared.state.clone();
        let sim = prepared.sim.clone();
        let server = tokio::spawn(app::serve(listener, prepared.state, async {
            let _ = rx.await;
        }));
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        TestApp {
            addr,
            client,
            state,
            sim,
            shutdown: Some(tx),
            server: Some(server),
            _data_dir: data_dir,
        }
    }
}

impl TestApp {
    /// A builder; `TestApp::builder().start().await` is the common case.
    pub fn builder() -> TestAppBuilder {
        TestAppBuilder::default()
    }

    /// The text of `/metrics` now.
    pub async fn metrics(&self) -> String {
        self.client
            .get(self.url("/metrics"))
            .send()
            .await
            .expect("GET /metrics")
            .text()
            .await
            .expect("the metrics' text")
    }

    /// Absolute URL of a path on this app.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// `GET path` (with the token, if any), which must answer JSON; its body.
    pub async fn get_json(&self, path: &str, token: Option<&str>) -> Value {
        let mut req = self.client.get(self.url(path));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        req.send().await.expect("request").json().await.expect("a JSON body")
    }

    /// Logs in and returns the bearer token.
    pub async fn login(&self, username: &str, password: &str) -> reqwest::Response {
        self.client
            .post(self.url("/api/v1/auth/login"))
            .json(&json!({"username": username, "password": password}))
            .send()
            .await
            .expect("request")
    }

    /// A token for the first admin.
    pub async fn admin_token(&self) -> String {
        self.token("admin", ADMIN_PASSWORD).await
    }

    /// Logs in, which must succeed, and returns the bearer token.
    pub async fn token(&self, username: &str, password: &str) -> String {
        let res = self.login(username, password).await;
        assert_eq!(res.status(), 200, "login of {username}");
        let body: Value = res.json().await.expect("json");
        body["token"].as_str().expect("token").to_string()
    }

    /// Stops the server gracefully and waits for it.
    pub async fn stop(mut self) {
        self.stop_server().await;
    }

    /// Stops the server gracefully and waits for it, keeping its data (and `state`) for the
    /// test to look at.
    pub async fn stop_server(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(handle) = self.server.take() {
            let _ = handle.await;
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

impl TestApp {
    /// Creates a user with the `user` role and returns a token for them.
    pub async fn user_token(&self, username: &str) -> String {
        anteroom::users::create(
            &self.state.db,
            username,
            username,
            USER_PASSWORD,
            anteroom_shared::api::Role::User,
        )
        .await
        .expect("create user");
        self.token(username, USER_PASSWORD).await
    }
}

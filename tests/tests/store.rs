//! The store on SQLite and on PostgreSQL: migrations, the first admin, concurrent starts.

use anteroom::app;
use anteroom::config::{Config, Secret};
use anteroom::users::FirstAdmin;
use anteroom_tests::{TestApp, postgres};

fn config_for(dir: &std::path::Path, url: Option<String>) -> Config {
    let mut c = Config::for_data_dir(dir);
    if let Some(url) = url {
        c.database_url = url;
    }
    c.jwt_secret = Some(Secret::new("store-test-secret-store-test-secret"));
    c
}

#[tokio::test]
async fn a_restart_reapplies_no_migration_and_keeps_the_first_admin() {
    let dir = tempfile::tempdir().unwrap();
    let first = app::prepare(config_for(dir.path(), None)).await.unwrap();
    let FirstAdmin::Generated(password) = &first.first_admin else {
        panic!("a fresh store generates the admin password");
    };
    assert!(password.len() >= 20);
    first.state.db.clone().close().await.unwrap();
    let second = app::prepare(config_for(dir.path(), None)).await.unwrap();
    assert_eq!(second.first_admin, FirstAdmin::Existed);
    assert!(anteroom::store::migrations_applied(&second.state.db).await.unwrap());
}

#[tokio::test]
async fn sqlite_runs_with_wal_and_foreign_keys_on() {
    use sea_orm::{ConnectionTrait, Statement};
    let dir = tempfile::tempdir().unwrap();
    let p = app::prepare(config_for(dir.path(), None)).await.unwrap();
    let db = &p.state.db;
    let row = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), "PRAGMA journal_mode"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.try_get_by_index::<String>(0).unwrap(), "wal");
    let row = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), "PRAGMA foreign_keys"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.try_get_by_index::<i32>(0).unwrap(), 1);
}

#[tokio::test]
#[ignore = "needs PostgreSQL"]
async fn on_postgres_the_app_migrates_and_the_admin_logs_in() {
    let server = postgres::server_url();
    let url = postgres::fresh_database(&server).await;
    let app = TestApp::builder().database_url(url).start().await;
    let token = app.admin_token().await;
    let res = app
        .client
        .get(app.url("/api/v1/auth/me"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
#[ignore = "needs PostgreSQL"]
async fn on_postgres_replicas_starting_together_do_not_race_on_the_schema() {
    let server = postgres::server_url();
    let url = postgres::fresh_database(&server).await;
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let starts = dirs
        .iter()
        .map(|d| app::prepare(config_for(d.path(), Some(url.clone()))))
        .collect::<Vec<_>>();
    let results = futures_join_all(starts).await;
    let mut created = 0;
    for r in results {
        let p = r.expect("every replica starts");
        if p.first_admin != FirstAdmin::Existed {
            created += 1;
        }
    }
    assert_eq!(created, 1, "exactly one replica created the admin, the others found it");
}

/// Polls several futures concurrently (a tiny join_all, to avoid a dependency).
async fn futures_join_all<F>(futs: Vec<F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}

/// Creates a user through the API; the status and the error code (if any).
async fn create_user(app: &TestApp, token: &str, username: &str) -> (u16, Option<String>, Option<String>) {
    let res = app
        .client
        .post(app.url("/api/v1/admin/users"))
        .bearer_auth(token)
        .json(&serde_json::json!({"username": username, "password": "a-long-password", "role": "user"}))
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let retry_after = res
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let body: serde_json::Value = res.json().await.unwrap_or_default();
    let code = body["error"]["code"].as_str().map(str::to_string);
    let code_and_retry = code.map(|c| format!("{c} retry-after={}", retry_after.unwrap_or_default()));
    (status, code_and_retry, body["username"].as_str().map(str::to_string))
}

/// Files made immutable (`chattr +i`, which stops root too, unlike a chmod) for as long as the
/// guard lives; made writable again on drop, also when the test fails.
struct Immutable(Vec<std::path::PathBuf>);

impl Immutable {
    fn set(paths: Vec<std::path::PathBuf>) -> Immutable {
        chattr("+i", &paths);
        Immutable(paths)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        chattr("-i", &self.0);
    }
}

fn chattr(flag: &str, paths: &[std::path::PathBuf]) {
    let out = std::process::Command::new("chattr")
        .arg(flag)
        .args(paths)
        .output()
        .expect("chattr (e2fsprogs) runs");
    assert!(
        out.status.success(),
        "chattr {flag} failed (needs root and a filesystem with the immutable flag, such as ext4): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The database file and its write-ahead log made immutable: a write fails inside SQLite
/// (SQLITE_IOERR_WRITE) exactly as on a failing or read-only disk, while reads go on. The
/// `-shm` file stays writable: it is memory-mapped, and SQLite itself needs it to read.
#[tokio::test]
#[ignore = "needs root with CAP_LINUX_IMMUTABLE (chattr +i)"]
async fn on_sqlite_a_write_to_an_unwritable_database_answers_503_and_the_next_write_after_the_fix_succeeds() {
    let app = TestApp::builder().start().await;
    let token = app.admin_token().await;
    assert_eq!(create_user(&app, &token, "before").await.0, 201);
    let db = app.state.config.data_dir.join("anteroom.db");
    let wal = app.state.config.data_dir.join("anteroom.db-wal");
    assert!(wal.exists(), "the database runs in WAL mode");
    {
        let _unwritable = Immutable::set(vec![db, wal]);
        let (status, code, _) = create_user(&app, &token, "during").await;
        assert_eq!(status, 503);
        assert_eq!(code.as_deref(), Some("database_unavailable retry-after=2"));
    }
    let (status, _, username) = create_user(&app, &token, "after").await;
    assert_eq!(status, 201, "the same process writes again once the file is writable");
    assert_eq!(username.as_deref(), Some("after"));
}

/// PostgreSQL stopped under a running app: requests answer 503 `database_unavailable`, and once
/// the server is back the same app serves again (its pool reconnects; no restart).
#[tokio::test]
#[ignore = "needs PostgreSQL"]
async fn on_postgres_a_stopped_server_answers_503_and_the_app_recovers_when_it_is_back() {
    let server = postgres::OwnServer::start();
    let url = postgres::fresh_database(&server.url()).await;
    let app = TestApp::builder().database_url(url).start().await;
    let token = app.admin_token().await;
    assert_eq!(create_user(&app, &token, "before").await.0, 201);

    server.stop();
    let (status, code, _) = create_user(&app, &token, "during").await;
    assert_eq!(status, 503);
    assert_eq!(code.as_deref(), Some("database_unavailable retry-after=2"));

    server.start_again();
    let (status, _, username) = create_user(&app, &token, "after").await;
    assert_eq!(status, 201, "the same process writes again once PostgreSQL is back");
    assert_eq!(username.as_deref(), Some("after"));
}

/// A step after the first admin's creation used to be able to fail (a bad `sim_nodes` file),
/// losing the generated password for good. The admin is now created last: the failed start
/// creates nothing, and the next good start creates the admin, reports the password and keeps
/// it, owner-only, in the data directory.
#[tokio::test]
async fn a_start_that_fails_on_a_bad_sim_nodes_file_creates_no_admin_and_the_next_start_reports_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = dir.path().join("nodes.toml");
    std::fs::write(&nodes, "this is not [valid toml").unwrap();
    let mut config = config_for(dir.path(), None);
    config.sim_nodes = Some(nodes);
    let err = app::prepare(config)
        .await
        .err()
        .expect("a bad sim_nodes file stops the start");
    assert!(format!("{err:#}").contains("cluster"), "{err:#}");
    let password_file = dir.path().join(app::ADMIN_PASSWORD_FILE);
    assert!(
        !password_file.exists(),
        "no password is kept for an admin that was not created"
    );

    let fixed = app::prepare(config_for(dir.path(), None)).await.unwrap();
    let FirstAdmin::Generated(password) = &fixed.first_admin else {
        panic!("the first good start creates the admin: {:?}", fixed.first_admin);
    };
    assert_eq!(std::fs::read_to_string(&password_file).unwrap().trim(), password);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&password_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let admin = anteroom::users::find_by_username(&fixed.state.db, "admin")
        .await
        .unwrap()
        .expect("the admin exists");
    assert_eq!(admin.role, "admin");
}

#[tokio::test]
async fn a_fresh_start_makes_the_data_directory_and_the_database_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let _p = app::prepare(config_for(&dir, None)).await.unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("anteroom.db")), 0o600);
}

#[tokio::test]
async fn a_signing_key_file_that_is_too_short_stops_the_start_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join(app::JWT_SECRET_FILE);
    std::fs::write(&key, "short-key\n").unwrap();
    let mut config = config_for(dir.path(), None);
    config.jwt_secret = None;
    let err = app::prepare(config).await.err().expect("a short key stops the start");
    let msg = format!("{err:#}");
    assert!(msg.contains(&key.display().to_string()), "{msg}");
    assert_eq!(
        std::fs::read_to_string(&key).unwrap(),
        "short-key\n",
        "the file is left as it was, not replaced"
    );
}

/// While a write transaction holds SQLite's only writer connection, the API's reads — the
/// per-request user reload, the users list, readiness — are answered from the read pool. Were
/// any of them on the writer, it would queue behind the write until the pool's timeout and
/// answer 503.
#[tokio::test]
async fn on_sqlite_the_apis_reads_are_answered_while_a_write_transaction_holds_the_writer() {
    let app = TestApp::builder().start().await;
    let token = app.admin_token().await;
    let write = anteroom::store::write_transaction(&app.state.db).await.unwrap();
    for path in ["/api/v1/auth/me", "/api/v1/admin/users", "/readyz"] {
        let res = app
            .client
            .get(app.url(path))
            .bearer_auth(&token)
            // A failure guard far above the pool's 10 s wait, not a timing assertion.
            .timeout(std::time::Duration::from_secs(60))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path} while the writer is busy");
    }
    drop(write);
}

/// SQLite: kept job counts that drifted from the rows (here, written by hand) are counted
/// again at the next start, and the start's check shows on `/metrics` — counted before the
/// router exists, so the recorder must be there first.
#[tokio::test]
async fn on_sqlite_a_start_counts_drifted_job_counts_again_and_says_so_on_metrics() {
    use sea_orm::ConnectionTrait;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("kept.db").display());
    // The store made without an app (no router, so no recorder yet in this process).
    let db = anteroom::store::connect(&url).await.unwrap();
    anteroom::store::migrate(&db).await.unwrap();
    db.execute_unprepared("INSERT INTO job_counts VALUES (4242, 'Prequeue', 3)")
        .await
        .unwrap();
    db.close().await.unwrap();
    let second = TestApp::builder().database_url(url).start().await;
    let kept = second
        .state
        .db
        .query_one_raw(sea_orm::Statement::from_string(
            sea_orm::DbBackend::Sqlite,
            "SELECT count(*) AS n FROM job_counts WHERE owner_id = 4242",
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get::<i64>("", "n")
        .unwrap();
    assert_eq!(kept, 0, "the count of no rows is gone");
    let text = second.metrics().await;
    assert!(
        text.lines()
            .any(|l| l.starts_with("anteroom_job_counts_drift_total") && !l.ends_with(" 0")),
        "{text}"
    );
}

/// PostgreSQL (migration 24: `+1`/`-1` rows summed): kept job counts that drifted from the rows
/// are counted again when a replica starts, and the folds keep the sums.
#[tokio::test]
#[ignore = "needs PostgreSQL"]
async fn on_postgres_a_start_counts_drifted_job_counts_again_and_a_fold_keeps_the_sums() {
    use sea_orm::ConnectionTrait;
    let url = postgres::fresh_database(&postgres::server_url()).await;
    // Time stands still: nothing moves the jobs between the counts read here.
    let clock = std::sync::Arc::new(anteroom::cluster::clock::ManualClock::new(
        anteroom_tests::driven::epoch(),
    ));
    let first = TestApp::builder()
        .database_url(url.clone())
        .hand_clock(clock.clone())
        .start()
        .await;
    let ann = first.user_token("ann").await;
    for name in ["one", "two", "three"] {
        anteroom_tests::api::submit_job(
            &first,
            &ann,
            anteroom_tests::api::job(name, serde_json::json!({"cpu": "1"})),
        )
        .await;
    }
    let db = &first.state.db;
    // (Kept pairs, rows of `job_counts`.)
    let kept_pairs = format!("({}) k", anteroom::store::KEPT_COUNTS);
    let kept = || async {
        (
            anteroom_tests::api::count(&first, &kept_pairs).await,
            anteroom_tests::api::count(&first, "job_counts").await,
        )
    };
    let (pairs, rows) = kept().await;
    assert!(
        rows > pairs,
        "{rows} rows for {pairs} pairs: one a change before a fold"
    );
    let folded = anteroom::store::fold_job_counts(db).await.unwrap();
    assert!(folded > 0);
    assert_eq!(kept().await, (pairs, pairs), "one row a pair after the fold");
    anteroom::store::check_kept_counts(db).await.unwrap();
    // A count written by hand, as a write without the triggers would leave it.
    db.execute_unprepared("INSERT INTO job_counts (owner_id, phase, n) VALUES (4242, 'Prequeue', 3)")
        .await
        .unwrap();
    // The process's counter (another test of this binary may have counted too).
    let drifted = |app| anteroom_tests::api::metric(app, "anteroom_job_counts_drift_total");
    let before = drifted(&first).await;
    let second = TestApp::builder().replica_of(&first).hand_clock(clock).start().await;
    let (after, _) = kept().await;
    assert_eq!(after, pairs, "the count of no rows is gone");
    assert!(drifted(&second).await > before, "the drift is counted");
}

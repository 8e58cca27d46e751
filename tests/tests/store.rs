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
async fn on_postgres_the_app_migrates_and_the_admin_logs_in() {
    let Some(server) = postgres::server_url() else { return };
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
async fn on_postgres_replicas_starting_together_do_not_race_on_the_schema() {
    let Some(server) = postgres::server_url() else { return };
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

//! PostgreSQL for store tests. The test command starts a throwaway server and exports
//! `ANTEROOM_TEST_POSTGRES_URL` (e.g. `postgres://postgres@127.0.0.1:PORT`); each test gets a
//! database of its own on it, so tests stay parallel-safe.

use sea_orm::ConnectionTrait;

/// The server URL, or `None` when none was provided. Under CI its absence is a failure: the
/// store must be proven on PostgreSQL there.
pub fn server_url() -> Option<String> {
    match std::env::var("ANTEROOM_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                !crate::in_ci(),
                "CI=true but ANTEROOM_TEST_POSTGRES_URL is unset: run the tests through ./anteroom.sh test"
            );
            eprintln!("skipping: no PostgreSQL (set ANTEROOM_TEST_POSTGRES_URL or run ./anteroom.sh test)");
            None
        }
    }
}

/// Creates an empty database with a unique name and returns its URL.
pub async fn fresh_database(server: &str) -> String {
    let name = format!("anteroom_test_{:016x}", rand::random::<u64>());
    let admin = anteroom::store::connect(&format!("{server}/postgres"))
        .await
        .expect("connect to postgres");
    admin
        .execute_unprepared(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create database");
    admin.close().await.ok();
    format!("{server}/{name}")
}

//! The store's own rules: parallel reads beside an open write, the read pool is read-only,
//! `BEGIN IMMEDIATE`, and which errors mean "unavailable".

use std::time::Duration;

use sea_orm::{ConnectOptions, ConnectionTrait, Database, DbBackend, DbErr, Statement};

use super::*;
use crate::users;

/// A failure guard, not a timing assertion: far above the 10 s a blocked read would wait for
/// the writer's connection, so a read that waits fails with the pool's error instead of here.
const GUARD: Duration = Duration::from_secs(60);

#[tokio::test]
async fn on_sqlite_a_read_proceeds_while_a_write_transaction_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let writer = test_database(dir.path()).await;
    let reader = connect_read(&test_url(dir.path()), &writer).await.unwrap();
    let txn = write_transaction(&writer).await.unwrap();
    txn.execute_unprepared(
        "INSERT INTO users (username, display_name, password_hash, role, created_at, updated_at) \
         VALUES ('pending', 'Pending', 'x', 'user', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
    )
    .await
    .unwrap();
    // The writer's only connection is inside `txn`: a read on it would queue behind the write.
    let read = tokio::time::timeout(GUARD, users::list(&reader, 0, 10))
        .await
        .expect("the read finished")
        .expect("the read succeeded while the write was open");
    assert_eq!(read.1, 0, "the uncommitted row is not visible to the reader");
    txn.commit().await.unwrap();
    let (_, total) = users::list(&reader, 0, 10).await.unwrap();
    assert_eq!(total, 1, "the committed row is visible to the next read");
}

#[tokio::test]
async fn on_sqlite_the_read_pool_refuses_writes_as_read_only_and_that_counts_as_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let writer = test_database(dir.path()).await;
    let reader = connect_read(&test_url(dir.path()), &writer).await.unwrap();
    let err = reader
        .execute_unprepared("DELETE FROM users")
        .await
        .expect_err("a read-only connection cannot write");
    assert!(
        err.to_string().contains("readonly"),
        "SQLite's own read-only error: {err}"
    );
    assert!(is_unavailable(&err), "SQLITE_READONLY means unavailable: {err}");
}

#[tokio::test]
async fn on_sqlite_a_write_transaction_holds_the_write_lock_from_its_begin() {
    let dir = tempfile::tempdir().unwrap();
    let writer = test_database(dir.path()).await;
    let txn = write_transaction(&writer).await.unwrap();
    // A second, independent writer that does not wait for the lock.
    let mut opts = ConnectOptions::new(test_url(dir.path()));
    opts.sqlx_logging(false)
        .max_connections(1)
        .map_sqlx_sqlite_opts(|o| o.busy_timeout(Duration::ZERO));
    let other = Database::connect(opts).await.unwrap();
    let err = other
        .execute_unprepared("DELETE FROM users")
        .await
        .expect_err("the lock is taken at BEGIN, before the transaction wrote anything");
    assert!(err.to_string().contains("locked"), "SQLITE_BUSY: {err}");
    assert!(
        is_unavailable(&err),
        "locked past the busy timeout means unavailable: {err}"
    );
    txn.rollback().await.unwrap();
    other.execute_unprepared("DELETE FROM users").await.unwrap();
}

#[tokio::test]
async fn on_sqlite_writes_share_one_connection_and_reads_have_several() {
    let dir = tempfile::tempdir().unwrap();
    let writer = test_database(dir.path()).await;
    let reader = connect_read(&test_url(dir.path()), &writer).await.unwrap();
    let max = |db: &DatabaseConnection| db.get_sqlite_connection_pool().options().get_max_connections();
    assert_eq!(
        max(&writer),
        1,
        "one writer: writes queue in the process, not on the file lock"
    );
    assert_eq!(max(&reader), READ_CONNECTIONS);
}

#[tokio::test]
async fn on_sqlite_no_pool_pings_before_use_and_the_writer_checkpoints_only_past_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    let writer = test_database(dir.path()).await;
    let reader = connect_read(&test_url(dir.path()), &writer).await.unwrap();
    for db in [&writer, &reader] {
        assert!(!db.get_sqlite_connection_pool().options().get_test_before_acquire());
    }
    let pragma = |name: &'static str| {
        let writer = writer.clone();
        async move {
            let row = writer
                .query_one_raw(Statement::from_string(DbBackend::Sqlite, format!("PRAGMA {name}")))
                .await
                .unwrap()
                .unwrap();
            row.try_get_by_index::<i64>(0).unwrap()
        }
    };
    assert_eq!(
        pragma("wal_autocheckpoint").await,
        i64::from(checkpoint::AUTOCHECKPOINT_PAGES)
    );
    assert_eq!(
        pragma("journal_size_limit").await,
        checkpoint::JOURNAL_SIZE_LIMIT as i64
    );
}

#[tokio::test]
async fn on_sqlite_the_background_checkpoint_copies_the_log_beside_an_open_write() {
    let dir = tempfile::tempdir().unwrap();
    let writer = test_database(dir.path()).await;
    writer
        .execute_unprepared(
            "CREATE TABLE filler (x BLOB); \
             INSERT INTO filler SELECT randomblob(4000) FROM (WITH RECURSIVE n(i) AS \
             (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) SELECT i FROM n)",
        )
        .await
        .unwrap();
    // The writer's cap is far away: the log holds all of it.
    let mut conn = checkpoint::open(&test_url(dir.path())).await.unwrap();
    // A write is open while the checkpoint runs: it neither waits for it nor fails.
    let txn = write_transaction(&writer).await.unwrap();
    txn.execute_unprepared("INSERT INTO filler VALUES (randomblob(10))")
        .await
        .unwrap();
    let done = tokio::time::timeout(GUARD, checkpoint::passive(&mut conn))
        .await
        .expect("the checkpoint did not wait for the writer")
        .unwrap();
    assert!(done.log_pages >= 200, "the inserts are in the log: {done:?}");
    assert_eq!(done.copied_pages, done.log_pages, "all of it copied: {done:?}");
    txn.commit().await.unwrap();
}

#[test]
fn sqlite_codes_that_mean_unavailable_are_told_from_the_ones_that_mean_a_bug() {
    // BUSY, BUSY_RECOVERY, LOCKED, READONLY, READONLY_DBMOVED, IOERR, IOERR_WRITE, FULL, CANTOPEN
    for code in [5, 261, 6, 8, 1032, 10, 778, 13, 14] {
        assert!(sqlite_unavailable(code), "{code}");
    }
    // ERROR, CONSTRAINT, CONSTRAINT_UNIQUE, CONSTRAINT_FOREIGNKEY, MISMATCH, CORRUPT
    for code in [1, 19, 2067, 787, 20, 11] {
        assert!(!sqlite_unavailable(code), "{code}");
    }
}

#[test]
fn postgres_states_that_mean_unavailable_are_told_from_the_ones_that_mean_a_bug() {
    for state in [
        "08000", "08003", "08006", "57P01", "57P02", "57P03", "53100", "53300", "25006",
    ] {
        assert!(postgres_unavailable(state), "{state}");
    }
    // unique violation, undefined table, syntax error, serialization failure, query canceled
    for state in ["23505", "42P01", "42601", "40001", "57014"] {
        assert!(!postgres_unavailable(state), "{state}");
    }
}

#[test]
fn pool_and_connection_errors_are_unavailable_and_others_are_not() {
    assert!(is_unavailable(&DbErr::ConnectionAcquire(
        sea_orm::error::ConnAcquireErr::Timeout
    )));
    assert!(is_unavailable(&DbErr::Conn(RuntimeErr::Internal(
        "Disconnected".into()
    ))));
    let io = DbErr::Exec(RuntimeErr::SqlxError(std::sync::Arc::new(sqlx::Error::Io(
        std::io::Error::from(std::io::ErrorKind::ConnectionReset),
    ))));
    assert!(is_unavailable(&io));
    assert!(!is_unavailable(&DbErr::RecordNotFound("x".into())));
    let decode = DbErr::Query(RuntimeErr::SqlxError(std::sync::Arc::new(sqlx::Error::RowNotFound)));
    assert!(!is_unavailable(&decode));
}

#[test]
fn the_file_behind_a_sqlite_url_is_found_and_memory_has_none() {
    assert_eq!(
        sqlite_file("sqlite://data/anteroom.db?mode=rwc"),
        Some(std::path::PathBuf::from("data/anteroom.db"))
    );
    assert_eq!(
        sqlite_file("sqlite:/tmp/a.db"),
        Some(std::path::PathBuf::from("/tmp/a.db"))
    );
    assert_eq!(sqlite_file("sqlite::memory:"), None);
    assert_eq!(sqlite_file("postgres://u@h/db"), None);
}

#[tokio::test]
async fn a_new_sqlite_database_file_is_not_readable_by_others() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = test_database(dir.path()).await;
    db.execute_unprepared("CREATE TABLE t (x)").await.unwrap();
    for name in ["anteroom.db", "anteroom.db-wal", "anteroom.db-shm"] {
        let mode = std::fs::metadata(dir.path().join(name)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}");
    }
}

/// The kept per-owner job counts are checked at start: counts that drifted from the rows are
/// counted again, and a missing trigger refuses to start.
#[tokio::test]
async fn on_sqlite_kept_job_counts_are_checked_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = test_database(dir.path()).await;
    let insert = |owner: i64, phase: &str| {
        format!(
            "INSERT INTO jobs (name, kind, queue, owner_id, owner_name, schedule_type, preemption_policy, phase, \
             tasks, resources, request_milli, explicit_nodes, single_node, nodes, submitted_at, updated_at, attempts) \
             VALUES ('j', 'custom', 'default', {owner}, 'u', 'normal', 'PreemptLowerPriority', '{phase}', '[]', '{{}}', '', '', 1, '[]', \
             '2027-01-01 00:00:00+00:00', '2027-01-01 00:00:00+00:00', 0)"
        )
    };
    for (owner, phase) in [(1, "Prequeue"), (1, "Prequeue"), (1, "Running"), (2, "Completed")] {
        db.execute_unprepared(&insert(owner, phase)).await.unwrap();
    }
    let counts = |db: DatabaseConnection| async move {
        db.query_all_raw(Statement::from_string(
            DbBackend::Sqlite,
            "SELECT owner_id, phase, n FROM job_counts WHERE n <> 0 ORDER BY owner_id, phase",
        ))
        .await
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.try_get::<i64>("", "owner_id").unwrap(),
                r.try_get::<String>("", "phase").unwrap(),
                r.try_get::<i64>("", "n").unwrap(),
            )
        })
        .collect::<Vec<_>>()
    };
    let kept = counts(db.clone()).await;
    assert_eq!(
        kept,
        [
            (1, "Prequeue".to_owned(), 2),
            (1, "Running".to_owned(), 1),
            (2, "Completed".to_owned(), 1)
        ]
    );
    check_kept_counts(&db).await.expect("counts that agree pass");
    // Drift: a wrong count, a missing one and one for no rows.
    db.execute_unprepared("UPDATE job_counts SET n = 5 WHERE owner_id = 1 AND phase = 'Prequeue'")
        .await
        .unwrap();
    db.execute_unprepared("DELETE FROM job_counts WHERE owner_id = 2")
        .await
        .unwrap();
    db.execute_unprepared("INSERT INTO job_counts VALUES (3, 'Failed', 2)")
        .await
        .unwrap();
    assert_ne!(counts(db.clone()).await, kept);
    check_kept_counts(&db).await.expect("drifted counts are counted again");
    assert_eq!(counts(db.clone()).await, kept);
    // A missing trigger refuses.
    db.execute_unprepared("DROP TRIGGER jobs_counted_on_delete")
        .await
        .unwrap();
    let refused = check_kept_counts(&db).await.expect_err("a missing trigger refuses");
    assert!(refused.to_string().contains("2 of 3"), "{refused}");
}

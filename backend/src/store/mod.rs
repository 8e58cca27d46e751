//! The store: sea-orm pools over SQLite (default) or PostgreSQL, the migrations applied at
//! start, write transactions that do the right thing on both, and the one rule that says which
//! database errors mean "the database is unavailable" (503) rather than "we have a bug" (500).
//!
//! SQLite allows one writer at a time but, in WAL mode, any number of readers beside it. So on
//! SQLite there are two pools: the writer (one connection: writes queue in the process instead
//! of fighting over the file lock) and [`READ_CONNECTIONS`] read-only connections, so reads
//! never wait behind a write or behind each other. PostgreSQL has one pool for both.

pub mod backup;
pub mod checkpoint;
pub mod compact;
pub mod lease;

use std::time::Duration;

use migration::{Migrator, MigratorTrait};
use sea_orm::sqlx;
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    FromQueryResult, RuntimeErr, SqliteTransactionMode, Statement, TransactionOptions, TransactionTrait,
};

/// Advisory lock key that serialises concurrent migrators on PostgreSQL ("anteroom" in ASCII).
const MIGRATION_LOCK_KEY: i64 = 0x616e_7465_726f_6f6d;

/// Read-only connections beside SQLite's single writer: enough for the request handlers of a
/// small machine to read in parallel, few enough that each keeps a warm page cache.
pub const READ_CONNECTIONS: u32 = 4;

/// How long a SQLite statement waits for the file lock, and a request for a pooled connection,
/// before the database counts as unavailable (503).
const WAIT: Duration = Duration::from_secs(10);

/// Opens the writer pool (on PostgreSQL the only pool). SQLite gets WAL (readers do not block
/// the writer), foreign keys (off by default in SQLite), a busy timeout (a second writer waits
/// instead of failing at once) and one connection, so writes are serialised in the process.
/// A SQLite database file (and its `-wal`/`-shm` companions, which SQLite creates with the
/// file's permissions) is made owner-only first: it holds password hashes.
pub async fn connect(url: &str) -> Result<DatabaseConnection, DbErr> {
    if let Some(path) = sqlite_file(url) {
        crate::files::create_private_file(&path)
            .map_err(|e| DbErr::Custom(format!("creating the database file {}: {e}", path.display())))?;
        for suffix in ["-wal", "-shm"] {
            let mut companion = path.clone().into_os_string();
            companion.push(suffix);
            crate::files::restrict_to_owner(std::path::Path::new(&companion))
                .map_err(|e| DbErr::Custom(format!("restricting {}: {e}", path.display())))?;
        }
    }
    let mut opts = ConnectOptions::new(url.to_owned());
    statements_logged_at_debug(&mut opts)
        .connect_timeout(WAIT)
        .acquire_timeout(WAIT);
    if is_sqlite(url) {
        // No ping before each use: the connection is a file, and the ping is a hop to sqlx's
        // SQLite thread on every statement batch. The checkpoint pragmas: [`checkpoint`].
        opts.max_connections(1)
            .test_before_acquire(false)
            .map_sqlx_sqlite_opts(|o| {
                o.journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                    .synchronous(sqlx::sqlite::SqliteSynchronous::Normal)
                    .foreign_keys(true)
                    .busy_timeout(WAIT)
                    .create_if_missing(true)
                    .pragma("wal_autocheckpoint", checkpoint::AUTOCHECKPOINT_PAGES.to_string())
                    .pragma("journal_size_limit", checkpoint::JOURNAL_SIZE_LIMIT.to_string())
            });
    } else {
        opts.max_connections(16).min_connections(1);
    }
    Database::connect(opts).await
}

/// Opens the pool for reads. SQLite (a file): [`READ_CONNECTIONS`] connections opened
/// read-only, so a write sent to them by mistake fails instead of racing the writer; call it
/// after [`migrate`], when the file exists and is in WAL mode. An in-memory SQLite database
/// exists only on its own connection, and PostgreSQL serves reads and writes from one pool:
/// both get the writer back.
pub async fn connect_read(url: &str, writer: &DatabaseConnection) -> Result<DatabaseConnection, DbErr> {
    if !is_sqlite(url) || url.contains(":memory:") || url.contains("mode=memory") {
        return Ok(writer.clone());
    }
    let mut opts = ConnectOptions::new(url.to_owned());
    statements_logged_at_debug(&mut opts)
        .connect_timeout(WAIT)
        .acquire_timeout(WAIT)
        .max_connections(READ_CONNECTIONS)
        .test_before_acquire(false)
        .map_sqlx_sqlite_opts(|o| {
            o.read_only(true)
                .create_if_missing(false)
                .foreign_keys(true)
                .busy_timeout(WAIT)
        });
    Database::connect(opts).await
}

/// Every statement is logged at DEBUG under `sqlx::query`, which the default filter
/// (`sqlx=warn`) leaves out at the cost of one level check; `ANTEROOM_LOG=info,sqlx::query=debug`
/// shows each statement with its time, which is how `docs/performance.md` counts the
/// statements of a request.
fn statements_logged_at_debug(opts: &mut ConnectOptions) -> &mut ConnectOptions {
    opts.sqlx_logging(true).sqlx_logging_level(log::LevelFilter::Debug)
}

fn is_sqlite(url: &str) -> bool {
    url.starts_with("sqlite:")
}

/// The file behind a SQLite URL (`sqlite://PATH?…` or `sqlite:PATH`); `None` for PostgreSQL
/// and in-memory databases.
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() || path.contains(":memory:") || url.contains("mode=memory") {
        return None;
    }
    Some(std::path::PathBuf::from(path))
}

/// Begins a transaction that reads and then writes, so what it read cannot change before it
/// writes. SQLite: `BEGIN IMMEDIATE` takes the write lock at once; a deferred transaction would
/// take it only at the first write, and could then fail with `SQLITE_BUSY` (no waiting helps a
/// reader that must upgrade) or act on what it read before another writer committed.
/// PostgreSQL: a plain transaction; callers that need more take an advisory lock in it.
pub async fn write_transaction(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    match db.get_database_backend() {
        DbBackend::Sqlite => {
            db.begin_with_options(TransactionOptions {
                sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
                ..TransactionOptions::default()
            })
            .await
        }
        _ => db.begin().await,
    }
}

/// Serialises the decisions on one queue tree (`spec/prequeue.md` §4 step 8): submissions
/// and the watcher's activations into any queue under `root` read usage, decide and write while
/// holding it, so two decisions cannot both slip under a shared limit. Queue writes take the
/// locks of every tree they change, so a decision never runs against a tree being rebuilt.
pub async fn lock_queue_tree(txn: &DatabaseTransaction, root: &str) -> Result<(), DbErr> {
    lock_named(txn, &format!("anteroom-queue-tree:{root}")).await
}

/// Holds a named lock until the transaction ends. PostgreSQL: a transaction-scoped advisory
/// lock keyed by the name's hash, which also holds across replicas. SQLite: nothing to do, the
/// caller's [`write_transaction`] already holds the one write lock of the database.
///
/// Names in use: `anteroom-queue-tree:<root>` ([`lock_queue_tree`]), `anteroom-queues` (queue
/// and quota writes), `anteroom-user:<id>` (one user's submissions across trees),
/// `anteroom-settings`, `anteroom-templates` (template writes, taken alone). Callers that take
/// several take the tree locks first, then the user lock; queue writes take `anteroom-queues`
/// first, then tree locks in name order.
pub async fn lock_named(txn: &DatabaseTransaction, name: &str) -> Result<(), DbErr> {
    if txn.get_database_backend() == DbBackend::Postgres {
        txn.execute_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            [name.into()],
        ))
        .await?;
    }
    Ok(())
}

/// True when `error` means the database cannot serve us right now — connection lost or
/// refused, pool exhausted, I/O error, locked past the busy timeout, read-only, disk full,
/// server shutting down — so the caller should answer 503 and retry later, not 500. The one
/// place this rule lives; [`crate::error::ApiError`] maps with it.
pub fn is_unavailable(error: &DbErr) -> bool {
    match error {
        DbErr::Conn(_) | DbErr::ConnectionAcquire(_) => true,
        DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e)) => sqlx_unavailable(e),
        _ => false,
    }
}

fn sqlx_unavailable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(e) => {
            if let Some(pg) = e.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                postgres_unavailable(pg.code())
            } else if e.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                e.code()
                    .and_then(|c| c.parse::<i32>().ok())
                    .is_some_and(sqlite_unavailable)
            } else {
                false
            }
        }
        _ => false,
    }
}

/// SQLite result codes (extended codes carry the primary code in their low byte) that say the
/// database cannot be used now, as opposed to a wrong statement or a constraint.
fn sqlite_unavailable(code: i32) -> bool {
    const BUSY: i32 = 5;
    const LOCKED: i32 = 6;
    const NOMEM: i32 = 7;
    const READONLY: i32 = 8;
    const IOERR: i32 = 10;
    const FULL: i32 = 13;
    const CANTOPEN: i32 = 14;
    const PROTOCOL: i32 = 15;
    matches!(
        code & 0xff,
        BUSY | LOCKED | NOMEM | READONLY | IOERR | FULL | CANTOPEN | PROTOCOL
    )
}

/// PostgreSQL SQLSTATEs that say the server cannot serve us now: class 08 (connection
/// exception), 53 (insufficient resources: disk full, out of memory, too many connections),
/// 57P01–57P03 (admin shutdown, crash shutdown, cannot connect now) and 25006 (read-only
/// transaction: a hot standby after a failover).
fn postgres_unavailable(sqlstate: &str) -> bool {
    sqlstate.starts_with("08")
        || sqlstate.starts_with("53")
        || matches!(sqlstate, "57P01" | "57P02" | "57P03" | "25006")
}

/// Applies every pending migration. On PostgreSQL the whole run happens in one transaction
/// holding an advisory lock, so replicas starting together do not race on the schema
/// (sea-orm-migration itself takes no lock); PostgreSQL's DDL is transactional, so a failed
/// run leaves nothing half-applied. SQLite serialises writers on its own.
pub async fn migrate(db: &DatabaseConnection) -> Result<(), DbErr> {
    match db.get_database_backend() {
        DbBackend::Postgres => {
            let txn = db.begin().await?;
            txn.execute_raw(Statement::from_string(
                DbBackend::Postgres,
                format!("SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"),
            ))
            .await?;
            Migrator::up(&txn, None).await?;
            txn.commit().await?;
            check_kept_counts(db).await
        }
        _ => {
            Migrator::up(db, None).await?;
            check_kept_counts(db).await
        }
    }
}

/// The triggers that keep `job_counts` (migration 23 on SQLite, 24 on PostgreSQL).
const COUNT_TRIGGERS: [&str; 3] = [
    "jobs_counted_on_insert",
    "jobs_counted_on_update",
    "jobs_counted_on_delete",
];

/// Each (owner, phase)'s kept count: one row on SQLite, the sum of its `+1`/`-1` rows on
/// PostgreSQL (migration 24); pairs at zero left out.
pub const KEPT_COUNTS: &str = "SELECT owner_id, phase, CAST(sum(n) AS BIGINT) AS n FROM job_counts \
    GROUP BY owner_id, phase HAVING sum(n) <> 0";

/// At start: the per-owner job counts that lists and submissions decide from (`job_counts`)
/// are kept by triggers, and equal a count of the rows. A missing trigger (a later migration
/// that rebuilt `jobs` and forgot them) refuses to start: the counts would drift silently.
/// Counts that differ from the rows (a write made without the triggers) are logged, counted in
/// `anteroom_job_counts_drift_total`, and replaced by the rows' count.
pub async fn check_kept_counts(db: &DatabaseConnection) -> Result<(), DbErr> {
    #[derive(FromQueryResult)]
    struct Found {
        n: i64,
    }
    let backend = db.get_database_backend();
    let names = COUNT_TRIGGERS.map(|t| format!("'{t}'")).join(", ");
    let triggers = match backend {
        DbBackend::Postgres => format!(
            "SELECT count(*) AS n FROM pg_trigger WHERE tgrelid = 'jobs'::regclass AND tgenabled <> 'D' AND tgname IN ({names})"
        ),
        _ => format!(
            "SELECT count(*) AS n FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'jobs' AND name IN ({names})"
        ),
    };
    let found = Found::find_by_statement(Statement::from_string(backend, triggers))
        .one(db)
        .await?
        .map_or(0, |f| f.n);
    if found != COUNT_TRIGGERS.len() as i64 {
        return Err(DbErr::Custom(format!(
            "the triggers that keep job_counts are missing ({found} of {}): a migration must recreate them",
            COUNT_TRIGGERS.len()
        )));
    }
    // Pairs whose kept count differs from the rows' (either side may be missing), in one
    // statement: one snapshot of both, whatever other replicas write meanwhile. Under the
    // counts' lock, which folds and other replicas' checks take too: a recount whose snapshot
    // missed a fold's (or another recount's) rows would delete too few and count everything
    // again on top.
    let txn = write_transaction(db).await?;
    lock_named(&txn, COUNTS_LOCK).await?;
    let rows = "SELECT owner_id, phase, count(*) AS n FROM jobs GROUP BY owner_id, phase";
    let differ = format!(
        "SELECT count(*) AS n FROM (SELECT * FROM ({KEPT_COUNTS} EXCEPT {rows}) a \
         UNION ALL SELECT * FROM ({rows} EXCEPT {KEPT_COUNTS}) b) d"
    );
    let drift = Found::find_by_statement(Statement::from_string(backend, differ))
        .one(&txn)
        .await?
        .map_or(0, |f| f.n);
    if drift > 0 {
        axum_prometheus::metrics::counter!("anteroom_job_counts_drift_total").increment(drift as u64);
        tracing::warn!(
            pairs = drift,
            "job_counts differed from the jobs it counts; counting the rows again"
        );
        let recount = "INSERT INTO job_counts (owner_id, phase, n) SELECT owner_id, phase, count(*) FROM jobs GROUP BY owner_id, phase";
        match backend {
            // One statement, one snapshot: a change committed by another replica after it
            // keeps its own `+1`/`-1` rows, and is not in the count either.
            DbBackend::Postgres => {
                txn.execute_unprepared(&format!("WITH gone AS (DELETE FROM job_counts) {recount}"))
                    .await?;
            }
            _ => {
                txn.execute_unprepared("DELETE FROM job_counts").await?;
                txn.execute_unprepared(recount).await?;
            }
        }
    }
    txn.commit().await
}

/// The lock a fold or a recount of `job_counts` holds (PostgreSQL; see [`check_kept_counts`]).
const COUNTS_LOCK: &str = "anteroom-job-counts";

/// PostgreSQL: folds each (owner, phase)'s `+1`/`-1` rows of `job_counts` into one (nothing to
/// do on SQLite, whose triggers update one row). One statement, so every reader sees the rows
/// before it or after it, both summing to the same counts; rows inserted meanwhile are left for
/// the next fold. It holds the counts' lock, so a recount never runs beside it. Answers how many
/// (owner, phase) pairs it folded.
pub async fn fold_job_counts(db: &DatabaseConnection) -> Result<u64, DbErr> {
    if db.get_database_backend() != DbBackend::Postgres {
        return Ok(0);
    }
    let txn = write_transaction(db).await?;
    lock_named(&txn, COUNTS_LOCK).await?;
    let fold = "WITH busy AS (SELECT owner_id, phase FROM job_counts GROUP BY owner_id, phase HAVING count(*) > 1), \
        gone AS (DELETE FROM job_counts c USING busy b WHERE c.owner_id = b.owner_id AND c.phase = b.phase \
                 RETURNING c.owner_id, c.phase, c.n) \
        INSERT INTO job_counts (owner_id, phase, n) SELECT owner_id, phase, sum(n) FROM gone \
        GROUP BY owner_id, phase HAVING sum(n) <> 0";
    let done = txn.execute_unprepared(fold).await?;
    txn.commit().await?;
    Ok(done.rows_affected())
}

/// True when no migration is pending (for `/readyz`).
pub async fn migrations_applied(db: &DatabaseConnection) -> Result<bool, DbErr> {
    Ok(Migrator::get_pending_migrations(db).await?.is_empty())
}

/// True when the database answers a trivial query.
pub async fn ping(db: &DatabaseConnection) -> bool {
    db.ping().await.is_ok()
}

/// A migrated SQLite database in `dir`, for the backend's own tests.
#[cfg(test)]
pub(crate) async fn test_database(dir: &std::path::Path) -> DatabaseConnection {
    let url = test_url(dir);
    let db = connect(&url).await.expect("open the test database");
    migrate(&db).await.expect("migrate the test database");
    db
}

/// A migrated database of its own on the PostgreSQL `server` (`ANTEROOM_TEST_POSTGRES_URL`),
/// for the backend's own tests that run on both stores.
#[cfg(test)]
pub(crate) async fn test_postgres_database(server: &str) -> DatabaseConnection {
    let name = format!("anteroom_unit_{:016x}", rand::random::<u64>());
    let admin = connect(&format!("{server}/postgres"))
        .await
        .expect("connect to postgres");
    admin
        .execute_unprepared(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create database");
    admin.close().await.ok();
    let db = connect(&format!("{server}/{name}")).await.expect("connect");
    migrate(&db).await.expect("migrate the test database");
    db
}

#[cfg(test)]
fn test_url(dir: &std::path::Path) -> String {
    format!("sqlite://{}?mode=rwc", dir.join("anteroom.db").display())
}

#[cfg(test)]
mod tests;

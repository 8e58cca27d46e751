//! The store: one sea-orm connection pool over SQLite (default) or PostgreSQL, and the
//! migrations applied at start.

use std::time::Duration;

use migration::{Migrator, MigratorTrait};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, DbErr, Statement, TransactionTrait,
};

/// Advisory lock key that serialises concurrent migrators on PostgreSQL ("anteroom" in ASCII).
const MIGRATION_LOCK_KEY: i64 = 0x616e_7465_726f_6f6d;

/// Opens the pool. SQLite gets WAL (readers do not block the writer), foreign keys (off by
/// default in SQLite) and a busy timeout (a second writer waits instead of failing at once).
pub async fn connect(url: &str) -> Result<DatabaseConnection, DbErr> {
    let mut opts = ConnectOptions::new(url.to_owned());
    opts.sqlx_logging(false)
        .connect_timeout(Duration::from_secs(10))
        .acquire_timeout(Duration::from_secs(10));
    if url.starts_with("sqlite:") {
        opts.map_sqlx_sqlite_opts(|o| {
            o.journal_mode(sea_orm::sqlx::sqlite::SqliteJournalMode::Wal)
                .synchronous(sea_orm::sqlx::sqlite::SqliteSynchronous::Normal)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(10))
                .create_if_missing(true)
        });
    } else {
        opts.max_connections(16).min_connections(1);
    }
    Database::connect(opts).await
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
            txn.commit().await
        }
        _ => Migrator::up(db, None).await,
    }
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
    let url = format!("sqlite://{}?mode=rwc", dir.join("anteroom.db").display());
    let db = connect(&url).await.expect("open the test database");
    migrate(&db).await.expect("migrate the test database");
    db
}

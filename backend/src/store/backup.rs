//! `anteroom backup <file>` and `anteroom restore <file>` for the SQLite store. A backup is taken
//! while the server runs: SQLite's `VACUUM INTO` writes one consistent, compacted copy of the
//! database as of one read transaction (WAL lets the server keep writing meanwhile). A restore
//! checks the copy (integrity, an Anteroom database, no migration newer than this binary knows)
//! and puts it in place of the configured database while no server runs; the next start applies
//! the migrations this binary has. PostgreSQL has its own tools (`pg_dump`, README).

use std::path::{Path, PathBuf};

use sea_orm::{ConnectionTrait, Database, DatabaseConnection, DbBackend, Statement};

/// Why a backup or a restore was refused; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The configured database is not a SQLite file.
    #[error(
        "backup and restore work on a SQLite database file; for PostgreSQL use pg_dump and pg_restore (README, \"Backups and upgrades\")"
    )]
    NotSqlite,
    /// The backup's destination exists already.
    #[error("{0} exists: a backup never overwrites a file")]
    Exists(PathBuf),
    /// There is no database to back up, or no backup to restore.
    #[error("{0} does not exist")]
    Missing(PathBuf),
    /// A server answers at the configured address: restoring under it would lose its writes.
    #[error("a server answers at {0}: stop it before restoring")]
    ServerRunning(std::net::SocketAddr),
    /// The file is not a sound Anteroom database.
    #[error("{0} is not a usable Anteroom backup: {1}")]
    NotABackup(PathBuf, String),
    /// The database or the file system failed.
    #[error("{0}")]
    Io(String),
}

/// What a backup wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupReport {
    /// The file written.
    pub file: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// Jobs in it (a figure to compare with the server's).
    pub jobs: i64,
}

fn io(e: impl std::fmt::Display) -> BackupError {
    BackupError::Io(e.to_string())
}

async fn open(path: &Path, read_only: bool) -> Result<DatabaseConnection, BackupError> {
    let mode = if read_only { "ro" } else { "rw" };
    Database::connect(format!("sqlite://{}?mode={mode}", path.display()))
        .await
        .map_err(io)
}

async fn one_i64(db: &DatabaseConnection, sql: &str) -> Result<i64, BackupError> {
    let row = db
        .query_one_raw(Statement::from_string(DbBackend::Sqlite, sql.to_owned()))
        .await
        .map_err(io)?
        .ok_or_else(|| BackupError::Io(format!("no answer to {sql}")))?;
    row.try_get_by_index::<i64>(0).map_err(io)
}

/// Checks that `path` holds a sound Anteroom database whose migrations this binary knows; the
/// number of its jobs.
async fn check_backup(path: &Path) -> Result<i64, BackupError> {
    let bad = |why: String| BackupError::NotABackup(path.to_owned(), why);
    let db = open(path, true).await.map_err(|e| bad(e.to_string()))?;
    let row = db
        .query_one_raw(Statement::from_string(
            DbBackend::Sqlite,
            "PRAGMA integrity_check".to_owned(),
        ))
        .await
        .map_err(|e| bad(e.to_string()))?;
    let verdict: String = row.and_then(|r| r.try_get_by_index(0).ok()).unwrap_or_default();
    if verdict != "ok" {
        return Err(bad(format!("integrity check: {verdict}")));
    }
    let known: Vec<String> = <migration::Migrator as migration::MigratorTrait>::migrations()
        .iter()
        .map(|m| m.name().to_owned())
        .collect();
    let applied = db
        .query_all_raw(Statement::from_string(
            DbBackend::Sqlite,
            "SELECT version FROM seaql_migrations".to_owned(),
        ))
        .await
        .map_err(|_| bad("it has no Anteroom migrations table".to_owned()))?;
    for row in applied {
        let version: String = row.try_get_by_index(0).map_err(|e| bad(e.to_string()))?;
        if !known.contains(&version) {
            return Err(bad(format!(
                "it was written by a newer Anteroom (migration {version} is unknown to this one)"
            )));
        }
    }
    let jobs = one_i64(&db, "SELECT count(*) FROM jobs")
        .await
        .map_err(|e| bad(e.to_string()))?;
    db.close().await.map_err(io)?;
    Ok(jobs)
}

/// Writes a consistent copy of the SQLite database at `database_url` to `to` (which must not
/// exist), readable by its owner only, and checks it.
pub async fn backup(database_url: &str, to: &Path) -> Result<BackupReport, BackupError> {
    let from = super::sqlite_file(database_url).ok_or(BackupError::NotSqlite)?;
    if !from.is_file() {
        return Err(BackupError::Missing(from));
    }
    if to.exists() {
        return Err(BackupError::Exists(to.to_owned()));
    }
    let db = open(&from, true).await?;
    db.execute_raw(Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "VACUUM INTO ?",
        [to.to_string_lossy().into_owned().into()],
    ))
    .await
    .map_err(io)?;
    db.close().await.map_err(io)?;
    crate::files::restrict_to_owner(to).map_err(io)?;
    let jobs = check_backup(to).await?;
    let bytes = std::fs::metadata(to).map_err(io)?.len();
    Ok(BackupReport {
        file: to.to_owned(),
        bytes,
        jobs,
    })
}

/// Puts the backup `from` in place of the SQLite database at `database_url` after checking it;
/// refused while a server answers at `listen`. The old database's write-ahead log goes with it
/// (it belongs to the file being replaced).
pub async fn restore(database_url: &str, from: &Path, listen: std::net::SocketAddr) -> Result<i64, BackupError> {
    let to = super::sqlite_file(database_url).ok_or(BackupError::NotSqlite)?;
    if !from.is_file() {
        return Err(BackupError::Missing(from.to_owned()));
    }
    // (a blocking probe: off the async threads, which may be the ones that serve)
    let answered = tokio::task::spawn_blocking(move || crate::healthcheck::check(listen).is_ok())
        .await
        .unwrap_or(false);
    if answered {
        return Err(BackupError::ServerRunning(listen));
    }
    let jobs = check_backup(from).await?;
    if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::files::create_private_dir(dir).map_err(io)?;
    }
    // Copied beside the target, then renamed over it: a crash leaves the old database or the
    // new one, never half of one.
    let mut partial = to.clone().into_os_string();
    partial.push(".restoring");
    let partial = PathBuf::from(partial);
    std::fs::copy(from, &partial).map_err(io)?;
    std::fs::File::open(&partial).and_then(|f| f.sync_all()).map_err(io)?;
    crate::files::restrict_to_owner(&partial).map_err(io)?;
    for suffix in ["-wal", "-shm"] {
        let mut companion = to.clone().into_os_string();
        companion.push(suffix);
        match std::fs::remove_file(&companion) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
    }
    std::fs::rename(&partial, &to).map_err(io)?;
    Ok(jobs)
}

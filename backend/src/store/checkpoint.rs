//! SQLite's WAL checkpoints, moved off the committing writer (issue 25, "the writer path").
//!
//! By default SQLite copies the write-ahead log back into the database file inside the commit
//! that crosses 1,000 pages: that one request pays for everyone's writes (a submission's commit
//! p99 was 18 ms, ~0.8 ms without it). Here a connection of its own runs a *passive*
//! checkpoint every [`EVERY`]: it copies what no reader still needs, beside the writer, never
//! waiting for a lock. The writer keeps an automatic checkpoint only as the cap
//! ([`AUTOCHECKPOINT_PAGES`]): if this task falls behind or stops, the log still cannot grow
//! past it.

use std::str::FromStr;
use std::time::Duration;

use sea_orm::sqlx::{self, Connection, Row};

/// How often the background checkpoint runs.
pub const EVERY: Duration = Duration::from_millis(500);

/// The writer's own automatic checkpoint, in pages (4 KiB each: 64 MiB of log): the cap
/// behind the background checkpoint, not the usual path.
pub const AUTOCHECKPOINT_PAGES: u32 = 16_384;

/// What the log file is truncated to when it is reset after a complete checkpoint, in bytes.
pub const JOURNAL_SIZE_LIMIT: u64 = 64 * 1024 * 1024;

/// One passive checkpoint's answer (`PRAGMA wal_checkpoint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpointed {
    /// Pages in the log.
    pub log_pages: i64,
    /// Of which copied into the database file.
    pub copied_pages: i64,
}

/// The running checkpoint task; it stops when this is dropped (with the last clone of the
/// app's state).
#[derive(Debug)]
pub struct Checkpointer {
    task: tokio::task::AbortHandle,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Checkpointer {
    /// Starts checkpointing the SQLite file behind `url` every [`EVERY`] on a connection of
    /// its own. A failed checkpoint is logged and tried again; the writer's cap still holds.
    pub async fn start(url: &str) -> Result<Checkpointer, sqlx::Error> {
        let mut conn = open(url).await?;
        let task = tokio::spawn(async move {
            let mut ticker = tokio::time::interval(EVERY);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                if let Err(e) = passive(&mut conn).await {
                    tracing::warn!(error = %e, "a background WAL checkpoint failed; trying again");
                }
            }
        });
        Ok(Checkpointer {
            task: task.abort_handle(),
        })
    }
}

/// A read-write connection to the existing file, that never waits for a lock: a passive
/// checkpoint takes none that a writer holds, and a busy one is simply tried again later.
pub async fn open(url: &str) -> Result<sqlx::SqliteConnection, sqlx::Error> {
    let opts = sqlx::sqlite::SqliteConnectOptions::from_str(url)?
        .create_if_missing(false)
        .busy_timeout(Duration::ZERO);
    sqlx::SqliteConnection::connect_with(&opts).await
}

/// Runs one passive checkpoint on `conn`.
pub async fn passive(conn: &mut sqlx::SqliteConnection) -> Result<Checkpointed, sqlx::Error> {
    let row = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
        .fetch_one(&mut *conn)
        .await?;
    Ok(Checkpointed {
        log_pages: row.try_get(1)?,
        copied_pages: row.try_get(2)?,
    })
}

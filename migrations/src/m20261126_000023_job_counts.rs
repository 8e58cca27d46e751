//! `job_counts`: how many jobs each owner has in each phase, kept by triggers on `jobs`, so a
//! list's total is a sum over a few rows instead of a `COUNT(*)` over every job the owner ever
//! had (page 50 of 100,000 jobs: `docs/performance.md`, "Jobs API").
//!
//! SQLite only. Its one writer makes the trigger's read-modify-write of a count row safe and
//! free of lock waits. On PostgreSQL several transactions would update the same count rows in
//! different orders (a submission, the status sync, retention), which can deadlock: there
//! migration 24 keeps them as rows that are only ever inserted.
//!
//! Every statement may run again (SQLite runs a migration's statements one by one): a start
//! that stopped half-way finishes it, and the counts are taken afresh.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

const TRIGGERS: [&str; 3] = [
    "jobs_counted_on_insert",
    "jobs_counted_on_update",
    "jobs_counted_on_delete",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if db.get_database_backend() != DbBackend::Sqlite {
            return Ok(());
        }
        db.execute_unprepared(
            "CREATE TABLE IF NOT EXISTS job_counts (owner_id INTEGER NOT NULL, phase TEXT NOT NULL, n INTEGER NOT NULL, \
             PRIMARY KEY (owner_id, phase)) WITHOUT ROWID",
        )
        .await?;
        db.execute_unprepared("DELETE FROM job_counts").await?;
        db.execute_unprepared(
            "INSERT INTO job_counts (owner_id, phase, n) SELECT owner_id, phase, count(*) FROM jobs \
             GROUP BY owner_id, phase",
        )
        .await?;
        let add = |row: &str| {
            format!(
                "INSERT INTO job_counts (owner_id, phase, n) VALUES ({row}.owner_id, {row}.phase, 1) \
                 ON CONFLICT (owner_id, phase) DO UPDATE SET n = n + 1;"
            )
        };
        let remove = |row: &str| {
            format!("UPDATE job_counts SET n = n - 1 WHERE owner_id = {row}.owner_id AND phase = {row}.phase;")
        };
        db.execute_unprepared(&format!(
            "CREATE TRIGGER IF NOT EXISTS jobs_counted_on_insert AFTER INSERT ON jobs BEGIN {} END",
            add("NEW")
        ))
        .await?;
        db.execute_unprepared(&format!(
            "CREATE TRIGGER IF NOT EXISTS jobs_counted_on_update AFTER UPDATE OF owner_id, phase ON jobs \
             WHEN OLD.owner_id IS NOT NEW.owner_id OR OLD.phase IS NOT NEW.phase BEGIN {} {} END",
            remove("OLD"),
            add("NEW")
        ))
        .await?;
        db.execute_unprepared(&format!(
            "CREATE TRIGGER IF NOT EXISTS jobs_counted_on_delete AFTER DELETE ON jobs BEGIN {} END",
            remove("OLD")
        ))
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if db.get_database_backend() != DbBackend::Sqlite {
            return Ok(());
        }
        for trigger in TRIGGERS {
            db.execute_unprepared(&format!("DROP TRIGGER IF EXISTS {trigger}"))
                .await?;
        }
        db.execute_unprepared("DROP TABLE IF EXISTS job_counts").await?;
        Ok(())
    }
}

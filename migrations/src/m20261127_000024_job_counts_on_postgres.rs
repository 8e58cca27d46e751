//! `job_counts` on PostgreSQL: how many jobs each owner has in each phase, for the list's
//! total and the submissions' per-owner limits, without counting an owner's rows each time
//! (a sweep of 20,000 jobs counted its own backlog at every batch: `docs/performance.md`).
//!
//! SQLite keeps one row per (owner, phase) and updates it (migration 23). PostgreSQL cannot:
//! several transactions (submissions on several replicas, the status sync, retention) would
//! update the same rows in different orders, wait on each other and could deadlock. Here the
//! triggers only ever *insert*: a change adds `+1` for the phase a job enters and `-1` for the
//! one it leaves, and a count is the sum of its rows. Inserts never wait on each other. The
//! leader folds each (owner, phase)'s rows into one now and then, in one statement, which
//! every reader sees either before or after (`store::fold_job_counts`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if db.get_database_backend() != DbBackend::Postgres {
            return Ok(());
        }
        for statement in [
            "CREATE TABLE job_counts (seq BIGSERIAL PRIMARY KEY, owner_id BIGINT NOT NULL, \
             phase TEXT NOT NULL, n BIGINT NOT NULL)",
            "CREATE INDEX job_counts_by_owner ON job_counts (owner_id, phase)",
            // Replicas of the previous version may still be writing: no job changes between
            // the count and the triggers (the migration's transaction holds this to its end).
            "LOCK TABLE jobs IN SHARE MODE",
            "INSERT INTO job_counts (owner_id, phase, n) SELECT owner_id, phase, count(*) FROM jobs \
             GROUP BY owner_id, phase",
            "CREATE FUNCTION anteroom_job_counted() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN \
               IF TG_OP <> 'INSERT' THEN \
                 INSERT INTO job_counts (owner_id, phase, n) VALUES (OLD.owner_id, OLD.phase, -1); \
               END IF; \
               IF TG_OP <> 'DELETE' THEN \
                 INSERT INTO job_counts (owner_id, phase, n) VALUES (NEW.owner_id, NEW.phase, 1); \
               END IF; \
               RETURN NULL; \
             END $$",
            "CREATE TRIGGER jobs_counted_on_insert AFTER INSERT ON jobs \
             FOR EACH ROW EXECUTE FUNCTION anteroom_job_counted()",
            "CREATE TRIGGER jobs_counted_on_update AFTER UPDATE OF owner_id, phase ON jobs FOR EACH ROW \
             WHEN (OLD.owner_id IS DISTINCT FROM NEW.owner_id OR OLD.phase IS DISTINCT FROM NEW.phase) \
             EXECUTE FUNCTION anteroom_job_counted()",
            "CREATE TRIGGER jobs_counted_on_delete AFTER DELETE ON jobs \
             FOR EACH ROW EXECUTE FUNCTION anteroom_job_counted()",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if db.get_database_backend() != DbBackend::Postgres {
            return Ok(());
        }
        for statement in [
            "DROP TRIGGER IF EXISTS jobs_counted_on_insert ON jobs",
            "DROP TRIGGER IF EXISTS jobs_counted_on_update ON jobs",
            "DROP TRIGGER IF EXISTS jobs_counted_on_delete ON jobs",
            "DROP FUNCTION IF EXISTS anteroom_job_counted()",
            "DROP TABLE IF EXISTS job_counts",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}

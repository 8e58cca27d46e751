//! `job_changes`: a log of which jobs changed, written by triggers on `jobs`, so the watcher
//! keeps every waiting and occupying job in memory and reads only the rows that changed since
//! its last round instead of every row every round (`backend/src/watcher/job_view.rs`).
//!
//! A row is added when a job is inserted, deleted, or updated in a column the scheduling core
//! reads (those of `jobs::SchedulingRow`). A column added to it later needs a *new* migration
//! that drops and recreates these triggers (this one has run on existing databases); the test
//! `tests/tests/job_view.rs` fails for a scheduling column whose change is not logged. The
//! reasons and other display columns are left out: the watcher writes them every round.
//!
//! - SQLite: `seq` (AUTOINCREMENT: never reused, even after the log is pruned) orders the
//!   changes as they commit, since there is one writer.
//! - PostgreSQL: `seq` is not commit-ordered (a transaction may commit after a later one), so
//!   each row also carries the writing transaction's id (`tx`, `txid_current()`); a reader
//!   takes every change of a transaction that may not have been finished at its last read.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum JobChanges {
    Table,
    Seq,
    JobId,
    Tx,
}

/// The columns whose change the watcher must see.
const SCHEDULING_COLUMNS: &str = "owner_id, queue, kind, schedule_type, phase, preemption_policy, submitted_at, \
     started_at, waiting_tolerance_seconds, request_milli, explicit_nodes, single_node, nodes, locked_until, \
     waiting_since, tolerations";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(JobChanges::Table)
                    .col(
                        ColumnDef::new(JobChanges::Seq)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(JobChanges::JobId).big_integer().not_null())
                    .col(ColumnDef::new(JobChanges::Tx).big_integer().null())
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        match db.get_database_backend() {
            DbBackend::Sqlite => {
                db.execute_unprepared(
                    "CREATE TRIGGER jobs_changed_on_insert AFTER INSERT ON jobs \
                     BEGIN INSERT INTO job_changes (job_id) VALUES (NEW.id); END",
                )
                .await?;
                db.execute_unprepared(&format!(
                    "CREATE TRIGGER jobs_changed_on_update AFTER UPDATE OF {SCHEDULING_COLUMNS} ON jobs \
                     BEGIN INSERT INTO job_changes (job_id) VALUES (NEW.id); END"
                ))
                .await?;
                db.execute_unprepared(
                    "CREATE TRIGGER jobs_changed_on_delete AFTER DELETE ON jobs \
                     BEGIN INSERT INTO job_changes (job_id) VALUES (OLD.id); END",
                )
                .await?;
            }
            _ => {
                db.execute_unprepared("CREATE INDEX job_changes_by_tx ON job_changes (tx)")
                    .await?;
                db.execute_unprepared(
                    "CREATE FUNCTION anteroom_job_changed() RETURNS trigger LANGUAGE plpgsql AS $$ \
                     BEGIN \
                       IF TG_OP = 'DELETE' THEN \
                         INSERT INTO job_changes (job_id, tx) VALUES (OLD.id, txid_current()); \
                       ELSE \
                         INSERT INTO job_changes (job_id, tx) VALUES (NEW.id, txid_current()); \
                       END IF; \
                       RETURN NULL; \
                     END $$",
                )
                .await?;
                db.execute_unprepared(&format!(
                    "CREATE TRIGGER jobs_changed AFTER INSERT OR DELETE OR UPDATE OF {SCHEDULING_COLUMNS} \
                     ON jobs FOR EACH ROW EXECUTE FUNCTION anteroom_job_changed()"
                ))
                .await?;
            }
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        match db.get_database_backend() {
            DbBackend::Sqlite => {
                for trigger in [
                    "jobs_changed_on_insert",
                    "jobs_changed_on_update",
                    "jobs_changed_on_delete",
                ] {
                    db.execute_unprepared(&format!("DROP TRIGGER IF EXISTS {trigger}"))
                        .await?;
                }
            }
            _ => {
                db.execute_unprepared("DROP TRIGGER IF EXISTS jobs_changed ON jobs")
                    .await?;
                db.execute_unprepared("DROP FUNCTION IF EXISTS anteroom_job_changed()")
                    .await?;
            }
        }
        manager
            .drop_table(Table::drop().table(JobChanges::Table).to_owned())
            .await
    }
}

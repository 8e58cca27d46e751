//! `usage_intervals`: what every job occupied and for how long (`spec/prequeue.md` §10 "Usage
//! history"), one row per run — from its start in the cluster to its end — kept beyond the
//! job's own retention (no foreign key: retention deletes jobs, not their history).
//!
//! Written by triggers on `jobs`, in the transaction that changes the job: every path that
//! starts or ends a job (status sync, preemption, reclaim, delete, requeue, a restart with a
//! new start) records its interval, and a process killed at any point either committed both
//! the phase and the interval or neither — no interval lost, none counted twice. An interval
//! opens when `started_at` is set (or changes: a new run, whose predecessor ends there; its
//! wait is then nil) and closes, at `finished_at` (else `updated_at`), when the job leaves the
//! cluster: a terminal phase, or back to the prequeue. A start that status sync briefly reports
//! as unknown (pods not yet in its cache after a restart) closes nothing, and the same start
//! reported again finds its run still open: `(job_id, started_at)` is unique, so a repeated
//! write of the same start adds nothing.
//!
//! A trigger that must change later needs a new migration that drops and recreates it (this
//! one has run on existing databases).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum UsageIntervals {
    Table,
    Id,
    JobId,
    OwnerId,
    OwnerName,
    Queue,
    Kind,
    ScheduleType,
    Resources,
    WaitingSince,
    StartedAt,
    EndedAt,
    EndPhase,
}

/// Phases in which a job no longer occupies the cluster (`JobPhase::is_terminal`), and
/// `Prequeue` (requeued).
const ENDED: &str = "('Completed', 'Failed', 'Aborted', 'Terminated', 'Deleted', 'Preempted', 'Prequeue')";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(UsageIntervals::Table)
                    .col(
                        ColumnDef::new(UsageIntervals::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(UsageIntervals::JobId).big_integer().not_null())
                    .col(ColumnDef::new(UsageIntervals::OwnerId).big_integer().not_null())
                    .col(ColumnDef::new(UsageIntervals::OwnerName).string().not_null())
                    .col(ColumnDef::new(UsageIntervals::Queue).string().not_null())
                    .col(ColumnDef::new(UsageIntervals::Kind).string().not_null())
                    .col(ColumnDef::new(UsageIntervals::ScheduleType).string().not_null())
                    .col(ColumnDef::new(UsageIntervals::Resources).text().not_null())
                    .col(
                        ColumnDef::new(UsageIntervals::WaitingSince)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(UsageIntervals::StartedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(UsageIntervals::EndedAt)
                            .timestamp_with_time_zone()
                            .null(),
                    )
                    .col(ColumnDef::new(UsageIntervals::EndPhase).string().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("usage_intervals_one_per_run")
                    .table(UsageIntervals::Table)
                    .col(UsageIntervals::JobId)
                    .col(UsageIntervals::StartedAt)
                    .unique()
                    .to_owned(),
            )
            .await?;
        // Reports by range (everyone's), by owner and range (a user's own), and runs still open.
        for (name, columns) in [
            ("usage_intervals_by_end", vec![UsageIntervals::EndedAt]),
            ("usage_intervals_by_start", vec![UsageIntervals::StartedAt]),
            (
                "usage_intervals_by_owner_end",
                vec![UsageIntervals::OwnerId, UsageIntervals::EndedAt],
            ),
        ] {
            let mut index = Index::create();
            index.name(name).table(UsageIntervals::Table);
            for column in columns {
                index.col(column);
            }
            manager.create_index(index.to_owned()).await?;
        }
        let db = manager.get_connection();
        match db.get_database_backend() {
            DbBackend::Sqlite => {
                db.execute_unprepared(&format!(
                    "CREATE TRIGGER usage_on_job_update AFTER UPDATE OF phase, started_at ON jobs \
                     BEGIN \
                       UPDATE usage_intervals SET ended_at = NEW.started_at, end_phase = 'Restarted' \
                         WHERE job_id = NEW.id AND ended_at IS NULL AND NEW.started_at IS NOT NULL \
                           AND started_at <> NEW.started_at; \
                       INSERT OR IGNORE INTO usage_intervals \
                         (job_id, owner_id, owner_name, queue, kind, schedule_type, resources, waiting_since, \
                          started_at) \
                         SELECT NEW.id, NEW.owner_id, NEW.owner_name, NEW.queue, NEW.kind, NEW.schedule_type, \
                                NEW.resources, \
                                CASE WHEN OLD.started_at IS NULL THEN COALESCE(NEW.waiting_since, NEW.submitted_at) \
                                     ELSE NEW.started_at END, \
                                NEW.started_at \
                         WHERE NEW.started_at IS NOT NULL \
                           AND (OLD.started_at IS NULL OR OLD.started_at <> NEW.started_at); \
                       UPDATE usage_intervals \
                         SET ended_at = COALESCE(NEW.finished_at, NEW.updated_at), end_phase = NEW.phase \
                         WHERE job_id = NEW.id AND ended_at IS NULL AND NEW.phase IN {ENDED}; \
                     END"
                ))
                .await?;
                db.execute_unprepared(
                    "CREATE TRIGGER usage_on_job_delete AFTER DELETE ON jobs \
                     BEGIN \
                       UPDATE usage_intervals SET ended_at = COALESCE(OLD.finished_at, OLD.updated_at), \
                         end_phase = 'Deleted' \
                         WHERE job_id = OLD.id AND ended_at IS NULL; \
                     END",
                )
                .await?;
            }
            _ => {
                db.execute_unprepared(&format!(
                    "CREATE FUNCTION anteroom_usage_of_job() RETURNS trigger LANGUAGE plpgsql AS $$ \
                     BEGIN \
                       IF TG_OP = 'DELETE' THEN \
                         UPDATE usage_intervals SET ended_at = COALESCE(OLD.finished_at, OLD.updated_at), \
                           end_phase = 'Deleted' \
                           WHERE job_id = OLD.id AND ended_at IS NULL; \
                         RETURN NULL; \
                       END IF; \
                       IF NEW.started_at IS NOT NULL AND OLD.started_at IS DISTINCT FROM NEW.started_at THEN \
                         UPDATE usage_intervals SET ended_at = NEW.started_at, end_phase = 'Restarted' \
                           WHERE job_id = NEW.id AND ended_at IS NULL AND started_at <> NEW.started_at; \
                         INSERT INTO usage_intervals \
                           (job_id, owner_id, owner_name, queue, kind, schedule_type, resources, waiting_since, \
                            started_at) \
                           VALUES (NEW.id, NEW.owner_id, NEW.owner_name, NEW.queue, NEW.kind, NEW.schedule_type, \
                                   NEW.resources, \
                                   CASE WHEN OLD.started_at IS NULL THEN COALESCE(NEW.waiting_since, NEW.submitted_at) \
                                        ELSE NEW.started_at END, \
                                   NEW.started_at) \
                           ON CONFLICT (job_id, started_at) DO NOTHING; \
                       END IF; \
                       IF NEW.phase IN {ENDED} THEN \
                         UPDATE usage_intervals \
                           SET ended_at = COALESCE(NEW.finished_at, NEW.updated_at), end_phase = NEW.phase \
                           WHERE job_id = NEW.id AND ended_at IS NULL; \
                       END IF; \
                       RETURN NULL; \
                     END $$"
                ))
                .await?;
                db.execute_unprepared(
                    "CREATE TRIGGER usage_of_job AFTER DELETE OR UPDATE OF phase, started_at ON jobs \
                     FOR EACH ROW EXECUTE FUNCTION anteroom_usage_of_job()",
                )
                .await?;
            }
        }
        // The runs of the jobs still stored: history from before this migration, as far as
        // retention kept it — after the triggers, so a run an older replica starts meanwhile is
        // recorded by one or the other (a run both saw is kept once).
        db.execute_unprepared(&format!(
            "INSERT INTO usage_intervals \
               (job_id, owner_id, owner_name, queue, kind, schedule_type, resources, waiting_since, started_at, ended_at, end_phase) \
             SELECT id, owner_id, owner_name, queue, kind, schedule_type, resources, \
                    COALESCE(waiting_since, submitted_at), started_at, \
                    CASE WHEN phase IN {ENDED} THEN COALESCE(finished_at, updated_at) END, \
                    CASE WHEN phase IN {ENDED} THEN phase END \
             FROM jobs WHERE started_at IS NOT NULL \
             ON CONFLICT (job_id, started_at) DO NOTHING"
        ))
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        match db.get_database_backend() {
            DbBackend::Sqlite => {
                for trigger in ["usage_on_job_update", "usage_on_job_delete"] {
                    db.execute_unprepared(&format!("DROP TRIGGER IF EXISTS {trigger}"))
                        .await?;
                }
            }
            _ => {
                db.execute_unprepared("DROP TRIGGER IF EXISTS usage_of_job ON jobs")
                    .await?;
                db.execute_unprepared("DROP FUNCTION IF EXISTS anteroom_usage_of_job()")
                    .await?;
            }
        }
        manager
            .drop_table(Table::drop().table(UsageIntervals::Table).to_owned())
            .await
    }
}

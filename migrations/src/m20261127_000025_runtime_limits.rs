//! Runtime limits and requeue after preemption (issue 27).
//!
//! - `jobs.max_runtime_seconds`: how long the job may run once started (the cluster ends it
//!   as `Failed`, `DeadlineExceeded`); NULL: no limit. Estimates of when waiting jobs start
//!   rest on it.
//! - `jobs.requeue`: a preempted job goes back to the prequeue instead of ending;
//!   `jobs.requeues`: how many times it did.
//! - `queues.default_runtime_seconds` / `queues.max_runtime_seconds`: the admin's default limit
//!   for jobs of the queue that name none, and the largest a job may ask for; NULL: none.
//! - `prequeue_config.requeue_by_default` / `max_requeues`: the admin's settings for requeue;
//!   `time_aware_backfill`: backfill that knows time.
//! - `preemptions.requeue`: decided when the victim was preempted — it goes back to the
//!   prequeue once its pods are gone.
//!
//! `max_runtime_seconds` is a scheduling column (the forecast reads it), so the change log's
//! update triggers of migration 22 are made again with it in their column list.

/// The columns whose change the watcher must see: migration 22's, and the runtime limit.
pub(crate) const SCHEDULING_COLUMNS: &str = "owner_id, queue, kind, schedule_type, phase, preemption_policy, submitted_at, \
     started_at, waiting_tolerance_seconds, request_milli, explicit_nodes, single_node, nodes, locked_until, \
     waiting_since, tolerations, max_runtime_seconds";

/// Migration 22's list, for `down`.
const SCHEDULING_COLUMNS_BEFORE: &str = "owner_id, queue, kind, schedule_type, phase, preemption_policy, \
     submitted_at, started_at, waiting_tolerance_seconds, request_milli, explicit_nodes, single_node, nodes, \
     locked_until, waiting_since, tolerations";

/// Makes the change log's update trigger again over `columns`.
pub(crate) async fn update_trigger(manager: &SchemaManager<'_>, columns: &str) -> Result<(), DbErr> {
    let db = manager.get_connection();
    match db.get_database_backend() {
        DbBackend::Sqlite => {
            db.execute_unprepared("DROP TRIGGER IF EXISTS jobs_changed_on_update")
                .await?;
            db.execute_unprepared(&format!(
                "CREATE TRIGGER jobs_changed_on_update AFTER UPDATE OF {columns} ON jobs \
                 BEGIN INSERT INTO job_changes (job_id) VALUES (NEW.id); END"
            ))
            .await?;
        }
        _ => {
            db.execute_unprepared("DROP TRIGGER IF EXISTS jobs_changed ON jobs")
                .await?;
            db.execute_unprepared(&format!(
                "CREATE TRIGGER jobs_changed AFTER INSERT OR DELETE OR UPDATE OF {columns} \
                 ON jobs FOR EACH ROW EXECUTE FUNCTION anteroom_job_changed()"
            ))
            .await?;
        }
    }
    Ok(())
}

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Jobs {
    Table,
    MaxRuntimeSeconds,
    Requeue,
    Requeues,
}

#[derive(DeriveIden)]
enum PrequeueConfig {
    Table,
    RequeueByDefault,
    MaxRequeues,
    TimeAwareBackfill,
}

#[derive(DeriveIden)]
enum Preemptions {
    Table,
    Requeue,
}

#[derive(DeriveIden)]
enum Queues {
    Table,
    DefaultRuntimeSeconds,
    MaxRuntimeSeconds,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite adds one column per ALTER.
        for column in [
            ColumnDef::new(Jobs::MaxRuntimeSeconds).big_integer().null().to_owned(),
            ColumnDef::new(Jobs::Requeue)
                .boolean()
                .not_null()
                .default(false)
                .to_owned(),
            ColumnDef::new(Jobs::Requeues)
                .integer()
                .not_null()
                .default(0)
                .to_owned(),
        ] {
            let mut column = column;
            manager
                .alter_table(Table::alter().table(Jobs::Table).add_column(&mut column).to_owned())
                .await?;
        }
        update_trigger(manager, SCHEDULING_COLUMNS).await?;
        for column in [
            ColumnDef::new(Queues::DefaultRuntimeSeconds)
                .big_integer()
                .null()
                .to_owned(),
            ColumnDef::new(Queues::MaxRuntimeSeconds)
                .big_integer()
                .null()
                .to_owned(),
        ] {
            let mut column = column;
            manager
                .alter_table(Table::alter().table(Queues::Table).add_column(&mut column).to_owned())
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Preemptions::Table)
                    .add_column(ColumnDef::new(Preemptions::Requeue).boolean().not_null().default(false))
                    .to_owned(),
            )
            .await?;
        for column in [
            ColumnDef::new(PrequeueConfig::RequeueByDefault)
                .boolean()
                .not_null()
                .default(false)
                .to_owned(),
            ColumnDef::new(PrequeueConfig::MaxRequeues)
                .big_integer()
                .not_null()
                .default(3)
                .to_owned(),
            ColumnDef::new(PrequeueConfig::TimeAwareBackfill)
                .boolean()
                .not_null()
                .default(false)
                .to_owned(),
        ] {
            let mut column = column;
            manager
                .alter_table(
                    Table::alter()
                        .table(PrequeueConfig::Table)
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        update_trigger(manager, SCHEDULING_COLUMNS_BEFORE).await?;
        for column in [Jobs::MaxRuntimeSeconds, Jobs::Requeue, Jobs::Requeues] {
            manager
                .alter_table(Table::alter().table(Jobs::Table).drop_column(column).to_owned())
                .await?;
        }
        for column in [Queues::DefaultRuntimeSeconds, Queues::MaxRuntimeSeconds] {
            manager
                .alter_table(Table::alter().table(Queues::Table).drop_column(column).to_owned())
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Preemptions::Table)
                    .drop_column(Preemptions::Requeue)
                    .to_owned(),
            )
            .await?;
        for column in [
            PrequeueConfig::RequeueByDefault,
            PrequeueConfig::MaxRequeues,
            PrequeueConfig::TimeAwareBackfill,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(PrequeueConfig::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}

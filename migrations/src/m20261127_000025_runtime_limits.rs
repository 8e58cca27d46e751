//! Runtime limits and requeue after preemption (issue 27).
//!
//! - `jobs.max_runtime_seconds`: how long the job may run once started (the cluster ends it
//!   as `Failed`, `DeadlineExceeded`); NULL: no limit. Estimates of when waiting jobs start
//!   rest on it.
//! - `jobs.requeue`: a preempted job goes back to the prequeue instead of ending;
//!   `jobs.requeues`: how many times it did.
//! - `queues.default_runtime_seconds` / `queues.max_runtime_seconds`: the admin's default limit
//!   for jobs of the queue that name none, and the largest a job may ask for; NULL: none.
//! - `prequeue_config.requeue_by_default` / `max_requeues`: the admin's settings for requeue.
//! - `preemptions.requeue`: decided when the victim was preempted — it goes back to the
//!   prequeue once its pods are gone.

use sea_orm_migration::prelude::*;

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
            .alter_table(Table::alter().table(Preemptions::Table).drop_column(Preemptions::Requeue).to_owned())
            .await?;
        for column in [PrequeueConfig::RequeueByDefault, PrequeueConfig::MaxRequeues] {
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

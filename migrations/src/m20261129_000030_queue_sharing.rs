//! Sharing between queues (`spec/prequeue.md` §9).
//!
//! - `queues.sharing`: the queue's sharing settings (guarantee, lending limit, weight, reclaim
//!   minimum runtime, priority range, preemption within the queue, per-job limit) as the JSON of
//!   `anteroom_shared::scheduling::QueueSharing`; NULL: the defaults, which share nothing — so
//!   every queue stored before this migration reads as it behaved.
//! - `jobs.priority`: the job's priority inside its queue (0 when priorities are off);
//!   `jobs.borrow_never`: the job waits for guaranteed room rather than borrowing
//!   (`borrow: "never"`); `jobs.borrowing`: admitted on borrowed room, so it may be reclaimed.
//!   Every job stored before has priority 0, may borrow and borrows nothing.
//! - `prequeue_config.reclaim_delay_seconds` (default 10): how long a job owed guaranteed room
//!   waits before borrowers are reclaimed for it.
//!
//! The three job columns are scheduling columns (the watcher's view reads them), so the change
//! log's update trigger is made again with them (as migration 25 did for the runtime limit).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Queues {
    Table,
    Sharing,
}

#[derive(DeriveIden)]
enum Jobs {
    Table,
    Priority,
    BorrowNever,
    Borrowing,
}

#[derive(DeriveIden)]
enum PrequeueConfig {
    Table,
    ReclaimDelaySeconds,
}

/// Migration 25's scheduling columns and the job's sharing columns.
fn scheduling_columns() -> String {
    format!(
        "{}, priority, borrow_never, borrowing",
        crate::m20261127_000025_runtime_limits::SCHEDULING_COLUMNS
    )
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Queues::Table)
                    .add_column(ColumnDef::new(Queues::Sharing).text().null())
                    .to_owned(),
            )
            .await?;
        // SQLite adds one column per ALTER.
        for column in [
            ColumnDef::new(Jobs::Priority)
                .integer()
                .not_null()
                .default(0)
                .to_owned(),
            ColumnDef::new(Jobs::BorrowNever)
                .boolean()
                .not_null()
                .default(false)
                .to_owned(),
            ColumnDef::new(Jobs::Borrowing)
                .boolean()
                .not_null()
                .default(false)
                .to_owned(),
        ] {
            let mut column = column;
            manager
                .alter_table(Table::alter().table(Jobs::Table).add_column(&mut column).to_owned())
                .await?;
        }
        crate::m20261127_000025_runtime_limits::update_trigger(manager, &scheduling_columns()).await?;
        manager
            .alter_table(
                Table::alter()
                    .table(PrequeueConfig::Table)
                    .add_column(
                        ColumnDef::new(PrequeueConfig::ReclaimDelaySeconds)
                            .big_integer()
                            .not_null()
                            .default(10),
                    )
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        crate::m20261127_000025_runtime_limits::update_trigger(
            manager,
            crate::m20261127_000025_runtime_limits::SCHEDULING_COLUMNS,
        )
        .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(PrequeueConfig::Table)
                    .drop_column(PrequeueConfig::ReclaimDelaySeconds)
                    .to_owned(),
            )
            .await?;
        // SQLite drops one column per ALTER too.
        for column in [Jobs::Borrowing, Jobs::BorrowNever, Jobs::Priority] {
            manager
                .alter_table(Table::alter().table(Jobs::Table).drop_column(column).to_owned())
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Queues::Table)
                    .drop_column(Queues::Sharing)
                    .to_owned(),
            )
            .await
    }
}

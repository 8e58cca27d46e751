//! `jobs.waiting_since` (`spec/prequeue.md` §1): when a job first waited for *shared* room (a
//! queue capacity, a blocker, or `Pending` in the cluster). A job's waiting tolerance counts
//! from it, no longer from submission, so a job parked behind its owner's own quota does not
//! time out — and block everyone — the moment something else holds it. `timeout_at` is now
//! `waiting_since + tolerance` (NULL while `waiting_since` is).
//!
//! Existing rows keep the clock they had: `waiting_since = submitted_at`, `timeout_at` as it
//! was. A job already held privately among them blocks nobody anyway (the private-hold rule is
//! checked at every decision).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Jobs {
    Table,
    WaitingSince,
    SubmittedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .add_column(ColumnDef::new(Jobs::WaitingSince).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::update()
                    .table(Jobs::Table)
                    .value(Jobs::WaitingSince, Expr::col(Jobs::SubmittedAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .drop_column(Jobs::WaitingSince)
                    .to_owned(),
            )
            .await
    }
}

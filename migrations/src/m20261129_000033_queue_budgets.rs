//! Budgets per queue (`spec/prequeue.md` §10): `queues.budget`, the JSON of
//! `anteroom_shared::scheduling::QueueBudget` (period, GPU-hours, whether a spent budget holds
//! the queue's normal jobs), NULL for none; and `queues.budget_hold`, the JSON of
//! `anteroom_shared::scheduling::BudgetHold` the watcher writes while a spent budget holds, NULL
//! otherwise. Every queue stored before has no budget and holds nothing.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Queues {
    Table,
    Budget,
    BudgetHold,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one at a time.
        for column in [Queues::Budget, Queues::BudgetHold] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Queues::Table)
                        .add_column(ColumnDef::new(column).text().null())
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [Queues::Budget, Queues::BudgetHold] {
            manager
                .alter_table(Table::alter().table(Queues::Table).drop_column(column).to_owned())
                .await?;
        }
        Ok(())
    }
}

//! The watcher's forecast in the store (issue 41): the leader writes each new board of the
//! prequeue (positions in the active order, start estimates) to this one row, and every replica
//! answers from it, so two replicas never give two positions for one job. `term` is the lease
//! term of the leader that wrote it: a deposed leader's late board cannot replace a newer one.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ForecastBoard {
    Table,
    Id,
    Term,
    Version,
    ComputedAt,
    Body,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ForecastBoard as F;
        manager
            .create_table(
                Table::create()
                    .table(F::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(F::Id).integer().not_null().primary_key())
                    .col(ColumnDef::new(F::Term).big_integer().not_null().default(0))
                    .col(ColumnDef::new(F::Version).big_integer().not_null().default(0))
                    .col(ColumnDef::new(F::ComputedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(F::Body).text().null())
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::insert()
                    .into_table(F::Table)
                    .columns([F::Id, F::Term, F::Version])
                    .values_panic([1.into(), 0i64.into(), 0i64.into()])
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(ForecastBoard::Table).to_owned())
            .await
    }
}

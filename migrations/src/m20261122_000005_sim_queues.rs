//! The queues the simulated cluster knows, so a job sent into a queue that does not exist there
//! (or is closed) is refused as Volcano's admission webhook would refuse it. Seeded with
//! `default`, open, as a fresh Volcano installation has it.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum SimQueues {
    Table,
    Name,
    Open,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(SimQueues::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(SimQueues::Name).string_len(253).not_null().primary_key())
                    .col(ColumnDef::new(SimQueues::Open).boolean().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::insert()
                    .into_table(SimQueues::Table)
                    .columns([SimQueues::Name, SimQueues::Open])
                    .values_panic(["default".into(), true.into()])
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(SimQueues::Table).to_owned())
            .await
    }
}

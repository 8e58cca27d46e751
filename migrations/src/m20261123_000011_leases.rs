//! Leases: which replica runs the watcher. A row per lease name with its holder, its expiry and
//! a fencing token that grows with every new holder, so a write carrying a stale token can be
//! refused (`spec/prequeue.md` §5).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Leases {
    Table,
    Name,
    Holder,
    Fence,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Leases::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(Leases::Name).string_len(64).not_null().primary_key())
                    .col(ColumnDef::new(Leases::Holder).string_len(128).not_null())
                    .col(ColumnDef::new(Leases::Fence).big_integer().not_null())
                    .col(ColumnDef::new(Leases::ExpiresAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(Leases::Table).to_owned()).await
    }
}

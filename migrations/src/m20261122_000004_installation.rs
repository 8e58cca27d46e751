//! The installation's identity: one row holding a UUID that the server generates the first
//! time it needs it. The kube adapter labels every object it creates with it, so another
//! installation — or this one after its database was reset, whose job ids start again at 1 —
//! never takes an `ar-<id>` in the cluster for its own.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Installation {
    Table,
    Id,
    Uuid,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Installation::Table)
                    .if_not_exists()
                    // Always 1: the primary key makes a second row impossible, so two replicas
                    // starting together cannot both insert an id.
                    .col(ColumnDef::new(Installation::Id).integer().not_null().primary_key())
                    .col(ColumnDef::new(Installation::Uuid).string_len(36).not_null())
                    .col(
                        ColumnDef::new(Installation::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Installation::Table).to_owned())
            .await
    }
}

//! Idempotency keys of `POST /api/v1/jobs`: per (user, key) the hash of the first body, the job
//! it created and the answer it got, kept 24 h so a client that timed out can retry safely.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    UserId,
    Key,
    RequestHash,
    JobId,
    Admission,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use IdempotencyKeys as K;
        manager
            .create_table(
                Table::create()
                    .table(K::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(K::UserId).big_integer().not_null())
                    .col(ColumnDef::new(K::Key).string_len(255).not_null())
                    .col(ColumnDef::new(K::RequestHash).string_len(64).not_null())
                    .col(ColumnDef::new(K::JobId).big_integer().not_null())
                    .col(ColumnDef::new(K::Admission).text().not_null())
                    .col(ColumnDef::new(K::CreatedAt).timestamp_with_time_zone().not_null())
                    .primary_key(Index::create().col(K::UserId).col(K::Key))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idempotency_keys_by_age")
                    .table(K::Table)
                    .col(K::CreatedAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(IdempotencyKeys::Table).to_owned())
            .await
    }
}

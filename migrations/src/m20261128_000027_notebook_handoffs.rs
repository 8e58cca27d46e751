//! One-time handoffs from the portal to a notebook's own origin (issue 40): the portal writes a
//! row when a viewer opens a notebook, the notebook origin deletes it when the browser arrives
//! with its code, a minute later at most. In the store, not in memory, so the portal and the
//! notebook origin may be answered by different replicas. Only the code's SHA-256 is kept.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum NotebookHandoffs {
    Table,
    Id,
    CodeHash,
    JobId,
    UserId,
    UserVersion,
    AsAdmin,
    SessionExpiresAt,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use NotebookHandoffs as H;
        manager
            .create_table(
                Table::create()
                    .table(H::Table)
                    .if_not_exists()
                    .col(
                        ColumnDef::new(H::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(H::CodeHash).string_len(64).not_null().unique_key())
                    .col(ColumnDef::new(H::JobId).big_integer().not_null())
                    .col(ColumnDef::new(H::UserId).big_integer().not_null())
                    .col(ColumnDef::new(H::UserVersion).big_integer().not_null())
                    .col(ColumnDef::new(H::AsAdmin).boolean().not_null().default(false))
                    .col(
                        ColumnDef::new(H::SessionExpiresAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(ColumnDef::new(H::ExpiresAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("notebook_handoffs_by_expiry")
                    .table(H::Table)
                    .col(H::ExpiresAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(NotebookHandoffs::Table).to_owned())
            .await
    }
}

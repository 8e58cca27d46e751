//! `volumes`: the admin's catalogue of data jobs may mount by name (a PersistentVolumeClaim or
//! an NFS export, a mount path, read-only or not, the queues that may use it), and
//! `jobs.volumes`: what a job mounts, resolved from the catalogue at submission (JSON, or
//! empty text for none).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Volumes {
    Table,
    Name,
    Spec,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Jobs {
    Table,
    Volumes,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Volumes::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(Volumes::Name).string_len(63).not_null().primary_key())
                    .col(ColumnDef::new(Volumes::Spec).text().not_null())
                    .col(ColumnDef::new(Volumes::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Volumes::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .add_column(ColumnDef::new(Jobs::Volumes).text().not_null().default(""))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(Jobs::Table).drop_column(Jobs::Volumes).to_owned())
            .await?;
        manager.drop_table(Table::drop().table(Volumes::Table).to_owned()).await
    }
}

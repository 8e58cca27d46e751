//! The simulated cluster's own tables: its nodes and its jobs (with their placed pods), so a
//! restart — even after `kill -9` — resumes the simulation where it was.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum SimNodes {
    Table,
    Name,
    Allocatable,
    Labels,
    Taints,
    Ready,
    Schedulable,
}

#[derive(DeriveIden)]
enum SimJobs {
    Table,
    JobId,
    Queue,
    Spec,
    Phase,
    CreatedAt,
    StartedAt,
    FinishesAt,
    GoneAt,
    Pods,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(SimNodes::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(SimNodes::Name).string_len(253).not_null().primary_key())
                    .col(ColumnDef::new(SimNodes::Allocatable).text().not_null())
                    .col(ColumnDef::new(SimNodes::Labels).text().not_null())
                    .col(ColumnDef::new(SimNodes::Taints).text().not_null())
                    .col(ColumnDef::new(SimNodes::Ready).boolean().not_null())
                    .col(ColumnDef::new(SimNodes::Schedulable).boolean().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(SimJobs::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(SimJobs::JobId).big_integer().not_null().primary_key())
                    .col(ColumnDef::new(SimJobs::Queue).string_len(253).not_null())
                    .col(ColumnDef::new(SimJobs::Spec).text().not_null())
                    .col(ColumnDef::new(SimJobs::Phase).string_len(16).not_null())
                    .col(ColumnDef::new(SimJobs::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(SimJobs::StartedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(SimJobs::FinishesAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(SimJobs::GoneAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(SimJobs::Pods).text().not_null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(SimJobs::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(SimNodes::Table).to_owned())
            .await
    }
}

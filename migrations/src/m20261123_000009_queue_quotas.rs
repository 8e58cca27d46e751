//! Queue quotas: per-user limits inside one queue (JSON map of quantity strings) and an
//! optional `maxActiveJobs`; at most one rule per queue, gone with its queue.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum QueueQuotas {
    Table,
    Id,
    Queue,
    Limits,
    MaxActiveJobs,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Queues {
    Table,
    Name,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(QueueQuotas::Table)
                    .if_not_exists()
                    .col(
                        ColumnDef::new(QueueQuotas::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(
                        ColumnDef::new(QueueQuotas::Queue)
                            .string_len(63)
                            .not_null()
                            .unique_key(),
                    )
                    .col(ColumnDef::new(QueueQuotas::Limits).text().not_null())
                    .col(ColumnDef::new(QueueQuotas::MaxActiveJobs).integer().null())
                    .col(
                        ColumnDef::new(QueueQuotas::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(QueueQuotas::UpdatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .from(QueueQuotas::Table, QueueQuotas::Queue)
                            .to(Queues::Table, Queues::Name)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(QueueQuotas::Table).to_owned())
            .await
    }
}

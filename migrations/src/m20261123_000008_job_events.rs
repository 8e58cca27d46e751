//! Job events: the timeline of every job (`spec/prequeue.md` §8) and the feed of the event
//! stream, whose `id` is the SSE event id (`Last-Event-ID` resumes after it). `owner_id` is
//! copied from the job so a user's stream reads one index, without a join.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum JobEvents {
    Table,
    Id,
    JobId,
    OwnerId,
    Kind,
    Message,
    Details,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Jobs {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(JobEvents::Table)
                    .if_not_exists()
                    .col(
                        ColumnDef::new(JobEvents::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(JobEvents::JobId).big_integer().not_null())
                    .col(ColumnDef::new(JobEvents::OwnerId).big_integer().not_null())
                    .col(ColumnDef::new(JobEvents::Kind).string_len(32).not_null())
                    .col(ColumnDef::new(JobEvents::Message).text().not_null())
                    .col(ColumnDef::new(JobEvents::Details).text().null())
                    .col(
                        ColumnDef::new(JobEvents::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .from(JobEvents::Table, JobEvents::JobId)
                            .to(Jobs::Table, Jobs::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("job_events_by_job")
                    .table(JobEvents::Table)
                    .col(JobEvents::JobId)
                    .col(JobEvents::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("job_events_by_owner")
                    .table(JobEvents::Table)
                    .col(JobEvents::OwnerId)
                    .col(JobEvents::Id)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(JobEvents::Table).to_owned())
            .await
    }
}

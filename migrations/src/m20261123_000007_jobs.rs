//! Jobs: every field of the API's `job` object (tasks and resources as JSON), plus typed
//! scheduling columns the watcher's snapshot scans without decoding JSON (`request_milli`:
//! `name=milli` pairs; `explicit_nodes`: comma-joined host names, empty = anywhere;
//! `timeout_at`: when a normal job starts to block others) and the claim, attempt and backoff
//! fields of the activation protocol (`spec/prequeue.md` §4 step 9, §5 step 5).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Jobs {
    Table,
    Id,
    Name,
    Kind,
    Queue,
    OwnerId,
    OwnerName,
    ScheduleType,
    PreemptionPolicy,
    Phase,
    WaitingToleranceSeconds,
    TimeoutAt,
    Tasks,
    Resources,
    RequestMilli,
    ExplicitNodes,
    SingleNode,
    Nodes,
    WaitReasons,
    SubmittedAt,
    ActivatedAt,
    StartedAt,
    FinishedAt,
    LockedUntil,
    UpdatedAt,
    ClaimedAt,
    Attempts,
    NextAttemptAt,
    LastError,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Jobs::Table)
                    .if_not_exists()
                    .col(
                        ColumnDef::new(Jobs::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(Jobs::Name).string_len(63).not_null())
                    .col(ColumnDef::new(Jobs::Kind).string_len(16).not_null())
                    .col(ColumnDef::new(Jobs::Queue).string_len(63).not_null())
                    .col(ColumnDef::new(Jobs::OwnerId).big_integer().not_null())
                    .col(ColumnDef::new(Jobs::OwnerName).string_len(64).not_null())
                    .col(ColumnDef::new(Jobs::ScheduleType).string_len(16).not_null())
                    .col(ColumnDef::new(Jobs::PreemptionPolicy).string_len(32).not_null())
                    .col(ColumnDef::new(Jobs::Phase).string_len(16).not_null())
                    .col(ColumnDef::new(Jobs::WaitingToleranceSeconds).big_integer().null())
                    .col(ColumnDef::new(Jobs::TimeoutAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(Jobs::Tasks).text().not_null())
                    .col(ColumnDef::new(Jobs::Resources).text().not_null())
                    .col(ColumnDef::new(Jobs::RequestMilli).text().not_null())
                    .col(ColumnDef::new(Jobs::ExplicitNodes).text().not_null())
                    .col(ColumnDef::new(Jobs::SingleNode).boolean().not_null())
                    .col(ColumnDef::new(Jobs::Nodes).text().not_null())
                    .col(ColumnDef::new(Jobs::WaitReasons).text().null())
                    .col(ColumnDef::new(Jobs::SubmittedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Jobs::ActivatedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(Jobs::StartedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(Jobs::FinishedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(Jobs::LockedUntil).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(Jobs::UpdatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Jobs::ClaimedAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(Jobs::Attempts).integer().not_null().default(0))
                    .col(ColumnDef::new(Jobs::NextAttemptAt).timestamp_with_time_zone().null())
                    .col(ColumnDef::new(Jobs::LastError).text().null())
                    .to_owned(),
            )
            .await?;
        // The watcher's snapshot and the prequeue walk: phase, then submission order.
        let indexes: [(&str, Vec<Jobs>); 5] = [
            ("jobs_by_phase", vec![Jobs::Phase, Jobs::SubmittedAt, Jobs::Id]),
            // Usage of one user in one queue; a user's prequeued count.
            (
                "jobs_by_owner_queue_phase",
                vec![Jobs::OwnerId, Jobs::Queue, Jobs::Phase],
            ),
            // A user's job list, newest first.
            ("jobs_by_owner", vec![Jobs::OwnerId, Jobs::Id]),
            // Positions and blockers inside one queue; a queue's unfinished jobs.
            (
                "jobs_by_queue_phase",
                vec![Jobs::Queue, Jobs::Phase, Jobs::SubmittedAt, Jobs::Id],
            ),
            // The timed-out jobs of a queue that may block a submission: a range, not a scan of
            // every waiting job.
            ("jobs_by_queue_timeout", vec![Jobs::Queue, Jobs::Phase, Jobs::TimeoutAt]),
        ];
        for (name, cols) in indexes {
            let mut index = Index::create();
            index.name(name).table(Jobs::Table);
            for col in cols {
                index.col(col);
            }
            manager.create_index(index.to_owned()).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(Jobs::Table).to_owned()).await
    }
}

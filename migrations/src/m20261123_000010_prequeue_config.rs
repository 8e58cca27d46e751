//! The prequeue settings of `spec/prequeue.md` §3: one row (`id = 1`), a typed column per
//! setting, seeded with the defaults. Writes are validated as a whole before they reach it.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum PrequeueConfig {
    Table,
    Id,
    BackfillEnabled,
    QueueQuotaEnabled,
    NormalJobWaitingToleranceSeconds,
    ActivateTickerIntervalSeconds,
    MaxTotalActivationsPerRound,
    PrequeueCandidateSize,
    BackfillMinRuntimeSeconds,
    MaxPrequeuedJobsPerUser,
    ActivationOrder,
    PreemptionGracePeriodSeconds,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use PrequeueConfig as C;
        manager
            .create_table(
                Table::create()
                    .table(C::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(C::Id).integer().not_null().primary_key())
                    .col(ColumnDef::new(C::BackfillEnabled).boolean().not_null())
                    .col(ColumnDef::new(C::QueueQuotaEnabled).boolean().not_null())
                    .col(
                        ColumnDef::new(C::NormalJobWaitingToleranceSeconds)
                            .big_integer()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(C::ActivateTickerIntervalSeconds)
                            .big_integer()
                            .not_null(),
                    )
                    .col(ColumnDef::new(C::MaxTotalActivationsPerRound).big_integer().not_null())
                    .col(ColumnDef::new(C::PrequeueCandidateSize).big_integer().not_null())
                    .col(ColumnDef::new(C::BackfillMinRuntimeSeconds).big_integer().not_null())
                    .col(ColumnDef::new(C::MaxPrequeuedJobsPerUser).big_integer().not_null())
                    .col(ColumnDef::new(C::ActivationOrder).string_len(16).not_null())
                    .col(ColumnDef::new(C::PreemptionGracePeriodSeconds).big_integer().not_null())
                    .col(ColumnDef::new(C::UpdatedAt).timestamp_with_time_zone().not_null())
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::insert()
                    .into_table(C::Table)
                    .columns([
                        C::Id,
                        C::BackfillEnabled,
                        C::QueueQuotaEnabled,
                        C::NormalJobWaitingToleranceSeconds,
                        C::ActivateTickerIntervalSeconds,
                        C::MaxTotalActivationsPerRound,
                        C::PrequeueCandidateSize,
                        C::BackfillMinRuntimeSeconds,
                        C::MaxPrequeuedJobsPerUser,
                        C::ActivationOrder,
                        C::PreemptionGracePeriodSeconds,
                        C::UpdatedAt,
                    ])
                    .values_panic([
                        1.into(),
                        false.into(),
                        false.into(),
                        300i64.into(),
                        5i64.into(),
                        500i64.into(),
                        10i64.into(),
                        0i64.into(),
                        100i64.into(),
                        "fcfs".into(),
                        30i64.into(),
                        Expr::current_timestamp(),
                    ])
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(PrequeueConfig::Table).to_owned())
            .await
    }
}

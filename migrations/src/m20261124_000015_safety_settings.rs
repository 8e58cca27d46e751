//! Three prequeue settings of the safety issue: `maxUnfinishedJobsPerUser` (a cap on what one
//! user holds even with quotas off), `defaultRequests` (the CPU and memory a task of each kind
//! gets when its body names none, as JSON: every task requests both above zero) and
//! `preemptionPlanWindowSeconds` (at most one preemption plan per job per window). Existing
//! installations get the defaults.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum PrequeueConfig {
    Table,
    MaxUnfinishedJobsPerUser,
    DefaultRequests,
    PreemptionPlanWindowSeconds,
}

/// `DefaultRequests::default()` as stored (the shared crate is not a dependency of migrations).
const DEFAULT_REQUESTS: &str = r#"{"jupyter":{"cpu":"2","memory":"8Gi"},"webide":{"cpu":"2","memory":"8Gi"},"custom":{"cpu":"1","memory":"4Gi"},"pytorch":{"cpu":"4","memory":"16Gi"},"tensorflow":{"cpu":"4","memory":"16Gi"}}"#;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use PrequeueConfig as C;
        // One column per statement: SQLite alters one column at a time.
        manager
            .alter_table(
                Table::alter()
                    .table(C::Table)
                    .add_column(
                        ColumnDef::new(C::MaxUnfinishedJobsPerUser)
                            .big_integer()
                            .not_null()
                            .default(1000),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(C::Table)
                    .add_column(
                        ColumnDef::new(C::DefaultRequests)
                            .text()
                            .not_null()
                            .default(DEFAULT_REQUESTS),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(C::Table)
                    .add_column(
                        ColumnDef::new(C::PreemptionPlanWindowSeconds)
                            .big_integer()
                            .not_null()
                            .default(0),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use PrequeueConfig as C;
        for column in [
            C::MaxUnfinishedJobsPerUser,
            C::DefaultRequests,
            C::PreemptionPlanWindowSeconds,
        ] {
            manager
                .alter_table(Table::alter().table(C::Table).drop_column(column).to_owned())
                .await?;
        }
        Ok(())
    }
}

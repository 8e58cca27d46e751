//! `jobs.cluster_preemptable`: what the cluster's own scheduler was last told about a job's
//! pods (`volcano.sh/preemptable`), so the watcher patches the pods only when that must change
//! (a lock set or lifted, a backfill job reaching `backfillMinRuntimeSeconds`), and a new
//! leader knows what was told before it.
//!
//! NULL means unknown (rows from before this column): the watcher tells the cluster once and
//! records it.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Jobs {
    Table,
    ClusterPreemptable,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .add_column(ColumnDef::new(Jobs::ClusterPreemptable).boolean().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .drop_column(Jobs::ClusterPreemptable)
                    .to_owned(),
            )
            .await
    }
}

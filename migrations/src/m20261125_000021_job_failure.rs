//! `jobs.failure`: why a failed job failed, in one line the list and the page show — the first
//! failing pod, its reason and exit code (JSON of `JobFailure`), as the cluster reported it.
//! NULL: it has not failed, or the cluster did not say why.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Jobs {
    Table,
    Failure,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .add_column(ColumnDef::new(Jobs::Failure).text().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(Jobs::Table).drop_column(Jobs::Failure).to_owned())
            .await
    }
}

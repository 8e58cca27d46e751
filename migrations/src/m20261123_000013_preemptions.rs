//! Preemptions the watcher executed: one row per victim, naming the job it made room for and
//! the node. Kept in the store so a restart (or a new leader) neither forgets a plan whose
//! victims still terminate — and plans again against their room — nor leaves a victim marked
//! `Preempted` but never deleted in the cluster (`spec/prequeue.md` §5 step 3).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Preemptions {
    Table,
    VictimId,
    BeneficiaryId,
    Node,
    GraceSeconds,
    CreatedAt,
    DeletedAt,
    GoneAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use Preemptions as P;
        manager
            .create_table(
                Table::create()
                    .table(P::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(P::VictimId).big_integer().not_null().primary_key())
                    .col(ColumnDef::new(P::BeneficiaryId).big_integer().not_null())
                    .col(ColumnDef::new(P::Node).string_len(253).not_null())
                    .col(ColumnDef::new(P::GraceSeconds).big_integer().not_null())
                    .col(ColumnDef::new(P::CreatedAt).timestamp_with_time_zone().not_null())
                    // When the cluster accepted the delete; NULL: (re)issue it.
                    .col(ColumnDef::new(P::DeletedAt).timestamp_with_time_zone().null())
                    // When the victim's pods were seen gone; NULL: still terminating.
                    .col(ColumnDef::new(P::GoneAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("preemptions_in_flight")
                    .table(P::Table)
                    .col(P::GoneAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Preemptions::Table).to_owned())
            .await
    }
}

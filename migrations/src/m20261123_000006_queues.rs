//! Queues and their members (`spec/prequeue.md` §1): a tree through `parent`, an optional
//! aggregate `capacity` (JSON map of quantity strings), and `default` seeded open to everyone.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Queues {
    Table,
    Name,
    DisplayName,
    Open,
    Parent,
    Capacity,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum QueueMembers {
    Table,
    Queue,
    UserId,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Queues::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(Queues::Name).string_len(63).not_null().primary_key())
                    .col(ColumnDef::new(Queues::DisplayName).string_len(128).not_null())
                    .col(ColumnDef::new(Queues::Open).boolean().not_null())
                    .col(ColumnDef::new(Queues::Parent).string_len(63).null())
                    .col(ColumnDef::new(Queues::Capacity).text().null())
                    .col(ColumnDef::new(Queues::CreatedAt).timestamp_with_time_zone().not_null())
                    .col(ColumnDef::new(Queues::UpdatedAt).timestamp_with_time_zone().not_null())
                    .foreign_key(
                        ForeignKey::create()
                            .from(Queues::Table, Queues::Parent)
                            .to(Queues::Table, Queues::Name)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(QueueMembers::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(QueueMembers::Queue).string_len(63).not_null())
                    .col(ColumnDef::new(QueueMembers::UserId).big_integer().not_null())
                    .primary_key(Index::create().col(QueueMembers::Queue).col(QueueMembers::UserId))
                    .foreign_key(
                        ForeignKey::create()
                            .from(QueueMembers::Table, QueueMembers::Queue)
                            .to(Queues::Table, Queues::Name)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .from(QueueMembers::Table, QueueMembers::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("queue_members_by_user")
                    .table(QueueMembers::Table)
                    .col(QueueMembers::UserId)
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::insert()
                    .into_table(Queues::Table)
                    .columns([
                        Queues::Name,
                        Queues::DisplayName,
                        Queues::Open,
                        Queues::CreatedAt,
                        Queues::UpdatedAt,
                    ])
                    .values_panic([
                        "default".into(),
                        "Default".into(),
                        true.into(),
                        Expr::current_timestamp(),
                        Expr::current_timestamp(),
                    ])
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(QueueMembers::Table).to_owned())
            .await?;
        manager.drop_table(Table::drop().table(Queues::Table).to_owned()).await
    }
}

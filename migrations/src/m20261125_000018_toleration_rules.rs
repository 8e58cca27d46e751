//! `toleration_rules`: admin rules that give jobs tolerations (per accelerator resource or per
//! queue), and `jobs.tolerations`, what a job got when it was submitted — the tolerations its
//! admission, the watcher's snapshot and its pods all use.
//!
//! One rule is seeded: jobs requesting any `nvidia.com/*` resource tolerate the
//! `nvidia.com/gpu` taint (`NoSchedule`), the taint GPU node pools commonly carry (and the
//! simulated cluster's GPU nodes do). Without it every GPU job would be refused as
//! `unschedulable` on such a cluster. Admins may change or delete it.
//!
//! `jobs.tolerations` is JSON, or empty text for none (most jobs): the watcher's packed read
//! stays short.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TolerationRules {
    Table,
    Id,
    Resource,
    Queue,
    Tolerations,
    Description,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Queues {
    Table,
    Name,
}

#[derive(DeriveIden)]
enum Jobs {
    Table,
    Tolerations,
}

/// The seeded rule's tolerations, in the API's (Kubernetes') form.
const GPU_POOL: &str = r#"[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]"#;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(TolerationRules::Table)
                    .if_not_exists()
                    .col(
                        ColumnDef::new(TolerationRules::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(TolerationRules::Resource).string_len(253).null())
                    .col(ColumnDef::new(TolerationRules::Queue).string_len(63).null())
                    .col(ColumnDef::new(TolerationRules::Tolerations).text().not_null())
                    .col(
                        ColumnDef::new(TolerationRules::Description)
                            .text()
                            .not_null()
                            .default(""),
                    )
                    .col(
                        ColumnDef::new(TolerationRules::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(TolerationRules::UpdatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    // A queue's rules go with the queue.
                    .foreign_key(
                        ForeignKey::create()
                            .from(TolerationRules::Table, TolerationRules::Queue)
                            .to(Queues::Table, Queues::Name)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::insert()
                    .into_table(TolerationRules::Table)
                    .columns([
                        TolerationRules::Resource,
                        TolerationRules::Tolerations,
                        TolerationRules::Description,
                        TolerationRules::CreatedAt,
                        TolerationRules::UpdatedAt,
                    ])
                    .values_panic([
                        "nvidia.com/*".into(),
                        GPU_POOL.into(),
                        "GPU node pools carry the nvidia.com/gpu taint".into(),
                        Expr::current_timestamp(),
                        Expr::current_timestamp(),
                    ])
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .add_column(ColumnDef::new(Jobs::Tolerations).text().not_null().default(""))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .drop_column(Jobs::Tolerations)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(TolerationRules::Table).to_owned())
            .await
    }
}

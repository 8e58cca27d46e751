//! `job_templates`: saved job bodies without a name — a user's own, and ones an admin published
//! for everyone, one of which per kind may be the default the submission form starts from.
//! `body` is the API's `TemplateBody` as JSON; `kind` is copied from it so the defaults are
//! found without decoding every body. The owner is kept by id (a deleted user's name may be
//! taken again, and must not inherit templates) and by name (shown without a join).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum JobTemplates {
    Table,
    Id,
    OwnerId,
    OwnerName,
    Name,
    Description,
    Body,
    Published,
    DefaultForKind,
    Kind,
    CreatedAt,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(JobTemplates::Table)
                    .if_not_exists()
                    .col(
                        ColumnDef::new(JobTemplates::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(JobTemplates::OwnerId).big_integer().not_null())
                    .col(ColumnDef::new(JobTemplates::OwnerName).string_len(64).not_null())
                    .col(ColumnDef::new(JobTemplates::Name).string_len(63).not_null())
                    .col(ColumnDef::new(JobTemplates::Description).text().not_null())
                    .col(ColumnDef::new(JobTemplates::Body).text().not_null())
                    .col(ColumnDef::new(JobTemplates::Published).boolean().not_null())
                    .col(ColumnDef::new(JobTemplates::DefaultForKind).boolean().not_null())
                    .col(ColumnDef::new(JobTemplates::Kind).string_len(16).not_null())
                    .col(
                        ColumnDef::new(JobTemplates::CreatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(JobTemplates::UpdatedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .to_owned(),
            )
            .await?;
        // A name once per owner; also the owner's list and count.
        manager
            .create_index(
                Index::create()
                    .name("job_templates_owner_name")
                    .table(JobTemplates::Table)
                    .col(JobTemplates::OwnerId)
                    .col(JobTemplates::Name)
                    .unique()
                    .to_owned(),
            )
            .await?;
        // At most one default per kind, whatever the service gets wrong (a partial index: both
        // SQLite and PostgreSQL have them).
        manager
            .create_index(
                Index::create()
                    .name("job_templates_default_per_kind")
                    .table(JobTemplates::Table)
                    .col(JobTemplates::Kind)
                    .unique()
                    .and_where(Expr::col(JobTemplates::DefaultForKind).eq(true))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(JobTemplates::Table).to_owned())
            .await
    }
}

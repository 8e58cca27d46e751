//! `jobs.cluster_uid`: a per-job value that Anteroom puts on the job's cluster object (label
//! `anteroom.io/job-uid`), so "already exists" under `ar-<id>` counts as this job only when the
//! uid matches. The name alone is not enough: a database restored from a backup or rolled back
//! numbers its new jobs from where the backup was, and its `ar-7` may name an object that the
//! lost timeline's job 7 created.
//!
//! New jobs get a random uid at submission. Existing rows get `legacy-<id>`, derived from the
//! id rather than random, so that restoring a backup taken before this migration (and migrating
//! it again) gives each of its jobs the same uid as before: a job of that backup that was
//! created in the cluster after the upgrade carries `legacy-<id>` there and is still its own.
//! Jobs created in the cluster before the upgrade have no uid label at all; such an object
//! still counts as the job's (Anteroom cannot tell, and refusing it would strand every job that
//! was mid-activation during the upgrade).
//!
//! The column stays nullable (SQLite cannot make an added column NOT NULL without a default);
//! Anteroom reads a NULL as `legacy-<id>`, the value this migration writes.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Jobs {
    Table,
    ClusterUid,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .add_column(ColumnDef::new(Jobs::ClusterUid).string_len(63).null())
                    .to_owned(),
            )
            .await?;
        // Portable between SQLite and PostgreSQL; must match `jobs::legacy_cluster_uid`.
        manager
            .exec_stmt(
                Query::update()
                    .table(Jobs::Table)
                    .value(Jobs::ClusterUid, Expr::cust("'legacy-' || CAST(id AS TEXT)"))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .drop_column(Jobs::ClusterUid)
                    .to_owned(),
            )
            .await
    }
}

//! Job pods with least privilege (issue 40): `queues.run_as_user` — the user id the queue's jobs
//! run as, never root (`runAsNonRoot` with that `runAsUser`); NULL: as each image says, root
//! included — and `jobs.run_as_user`, what the job's queue said when it was submitted (its pods
//! keep it, whatever the queue becomes).
//!
//! An installation in use keeps letting images run as root (NULL on every queue: its images may
//! need it, and an upgrade must not break them); a new one starts with every queue at user 1000,
//! as a queue created later gets unless its body says otherwise. "New" is read from the users
//! table: migrations run before the first start creates the first admin, so an installation
//! migrating with no user at all has never served anyone — whereas an empty `jobs` table could
//! be an old installation whose jobs were pruned.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::ConnectionTrait;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Queues {
    Table,
    RunAsUser,
}

#[derive(DeriveIden)]
enum Jobs {
    Table,
    RunAsUser,
}

/// The user id of a new installation's queues (`anteroom_shared::api::queues::DEFAULT_RUN_AS_USER`).
const NEW_INSTALL_RUN_AS_USER: i64 = 1000;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Queues::Table)
                    .add_column(ColumnDef::new(Queues::RunAsUser).big_integer().null())
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .add_column(ColumnDef::new(Jobs::RunAsUser).big_integer().null())
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        db.execute_unprepared(&format!(
            "UPDATE queues SET run_as_user = {NEW_INSTALL_RUN_AS_USER} WHERE NOT EXISTS (SELECT 1 FROM users)"
        ))
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .drop_column(Jobs::RunAsUser)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Queues::Table)
                    .drop_column(Queues::RunAsUser)
                    .to_owned(),
            )
            .await
    }
}

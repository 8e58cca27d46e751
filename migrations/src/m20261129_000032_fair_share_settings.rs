//! The settings of fair share over time (`spec/prequeue.md` §10): `usageHalfLifeSeconds`
//! (7 days), `backfillUsageWeight` (0.5, kept in thousandths) and `usageWeights` (JSON, `{}`:
//! derived from the cluster).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum PrequeueConfig {
    Table,
    UsageHalfLifeSeconds,
    BackfillUsageWeightMilli,
    UsageWeights,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one at a time.
        for column in [
            ColumnDef::new(PrequeueConfig::UsageHalfLifeSeconds)
                .big_integer()
                .not_null()
                .default(604_800)
                .to_owned(),
            ColumnDef::new(PrequeueConfig::BackfillUsageWeightMilli)
                .integer()
                .not_null()
                .default(500)
                .to_owned(),
            ColumnDef::new(PrequeueConfig::UsageWeights)
                .text()
                .not_null()
                .default("{}")
                .to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(PrequeueConfig::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            PrequeueConfig::UsageHalfLifeSeconds,
            PrequeueConfig::BackfillUsageWeightMilli,
            PrequeueConfig::UsageWeights,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(PrequeueConfig::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}

//! The `queue_quotas` table.

use sea_orm::entity::prelude::*;

/// A quota rule: per-user limits inside one queue.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "queue_quotas")]
pub struct Model {
    /// Database id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The queue (unique: one rule per queue).
    pub queue: String,
    /// Limits (JSON map of quantity strings).
    pub limits: String,
    /// Occupying normal jobs per user.
    pub max_active_jobs: Option<i32>,
    /// Created.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// None.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

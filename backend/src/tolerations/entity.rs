//! The `toleration_rules` table.

use sea_orm::entity::prelude::*;

/// An admin rule: jobs requesting `resource`, or in `queue` or below, get `tolerations`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "toleration_rules")]
pub struct Model {
    /// Database id (rules apply in id order).
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Accelerator resource or `domain/*`; exclusive with `queue`.
    pub resource: Option<String>,
    /// Queue (its rules go with it); exclusive with `resource`.
    pub queue: Option<String>,
    /// JSON array of tolerations.
    pub tolerations: String,
    /// Why the rule exists.
    pub description: String,
    /// Created.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// None.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

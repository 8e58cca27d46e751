//! The `volumes` table: the admin's catalogue.

use sea_orm::entity::prelude::*;

/// One catalogue entry; its JSON is the API's [`anteroom_shared::api::volumes::VolumeBody`].
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "volumes")]
pub struct Model {
    /// What jobs name it by.
    #[sea_orm(primary_key, auto_increment = false)]
    pub name: String,
    /// The whole entry as JSON (source, mount path, read-only, queues, description).
    pub spec: String,
    /// Created.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// None.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

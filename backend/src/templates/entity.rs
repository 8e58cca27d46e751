//! The `job_templates` table: saved job bodies without a name.

use sea_orm::entity::prelude::*;

/// One template; `body` is the API's [`anteroom_shared::api::templates::TemplateBody`] as JSON.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "job_templates")]
pub struct Model {
    /// Database id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Whose it is, by id: a later user of a deleted user's name inherits nothing.
    pub owner_id: i64,
    /// Whose it is, by username, for the API without a join.
    pub owner_name: String,
    /// Unique per owner.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The body as JSON.
    pub body: String,
    /// Shown to every user.
    pub published: bool,
    /// The form's default for jobs of `kind` (at most one per kind; a unique partial index).
    pub default_for_kind: bool,
    /// The body's kind, copied so the defaults are found without decoding bodies.
    pub kind: String,
    /// Created.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
}

/// None: the owner is kept by value (a template outlives nothing it points to).
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

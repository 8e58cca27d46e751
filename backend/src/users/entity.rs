//! The `users` table.

use sea_orm::entity::prelude::*;

/// One row of `users`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "users")]
pub struct Model {
    /// Database id; also the JWT subject.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Login name, unique.
    #[sea_orm(unique)]
    pub username: String,
    /// Name shown in the UI.
    pub display_name: String,
    /// Argon2id PHC string; never leaves the server.
    pub password_hash: String,
    /// `admin` or `user`.
    pub role: String,
    /// When the user was created.
    pub created_at: DateTimeUtc,
    /// Last change.
    pub updated_at: DateTimeUtc,
    /// Raised by a password change, a role change and a logout; a session token is valid only
    /// while it carries the current value.
    pub token_version: i64,
}

/// No relations yet: queue membership arrives with the queues table.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

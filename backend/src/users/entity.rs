//! The `users` table.

use sea_orm::entity::prelude::*;

/// One row of `users`. `Debug` hides the password hash (it is written by hand below).
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
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

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Destructured without `..`: a new column does not compile until it is placed here,
        // so nothing is left out, and nothing secret is added without a thought. A hash is
        // not a password, but an offline guesser needs nothing else.
        let Model {
            id,
            username,
            display_name,
            password_hash: _,
            role,
            created_at,
            updated_at,
            token_version,
        } = self;
        f.debug_struct("Model")
            .field("id", id)
            .field("username", username)
            .field("display_name", display_name)
            .field("password_hash", &"***")
            .field("role", role)
            .field("created_at", created_at)
            .field("updated_at", updated_at)
            .field("token_version", token_version)
            .finish()
    }
}

/// No relations yet: queue membership arrives with the queues table.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_of_a_user_row_hides_the_password_hash() {
        let hash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo";
        let row = Model {
            id: 7,
            username: "alice".into(),
            display_name: "Alice".into(),
            password_hash: hash.into(),
            role: "user".into(),
            created_at: chrono::DateTime::UNIX_EPOCH,
            updated_at: chrono::DateTime::UNIX_EPOCH,
            token_version: 3,
        };
        let shown = format!("{row:?}");
        assert!(!shown.contains("argon2"), "{shown}");
        assert!(
            shown.contains(r#"password_hash: "***""#) && shown.contains("alice"),
            "{shown}"
        );
        // The user the auth layers hand to handlers prints the row the same way.
        assert!(!format!("{:?}", crate::users::AuthUser(row)).contains("argon2"));
    }
}

//! Users: the first admin created at start, lookups for authentication, and the API view.

pub mod entity;

use anteroom_shared::api::{Role, User};
use chrono::Utc;
use rand::Rng;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveModelTrait, ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, Set};

use crate::auth::password;

/// The first admin's login name (spec/api.md).
pub const FIRST_ADMIN: &str = "admin";

/// The outcome of [`ensure_first_admin`].
#[derive(Debug, PartialEq, Eq)]
pub enum FirstAdmin {
    /// An admin already existed: nothing was done.
    Existed,
    /// Created with the configured password.
    Created,
    /// Created with this generated password, which is shown once and never stored in clear.
    Generated(String),
}

/// Creates the user `admin` on the first start. With no configured password one is generated,
/// so a fresh deployment is never left with a guessable default.
pub async fn ensure_first_admin(db: &DatabaseConnection, configured: Option<&str>) -> Result<FirstAdmin, DbErr> {
    let exists = entity::Entity::find()
        .filter(entity::Column::Username.eq(FIRST_ADMIN))
        .one(db)
        .await?
        .is_some();
    if exists {
        return Ok(FirstAdmin::Existed);
    }
    let (password, outcome) = match configured {
        Some(p) => (p.to_string(), FirstAdmin::Created),
        None => {
            let p = generate_password();
            (p.clone(), FirstAdmin::Generated(p))
        }
    };
    let hash = password::hash(&password).map_err(|e| DbErr::Custom(format!("hashing the admin password: {e}")))?;
    Ok(if insert_first_admin(db, hash).await? {
        outcome
    } else {
        FirstAdmin::Existed
    })
}

/// Inserts `admin` unless the username is taken; true when this call created it. Replicas
/// starting together all pass the existence check above: the unique username decides which
/// insert wins, and the others start normally instead of failing on the duplicate.
async fn insert_first_admin(db: &DatabaseConnection, password_hash: String) -> Result<bool, DbErr> {
    let now = Utc::now();
    let inserted = entity::Entity::insert(entity::ActiveModel {
        username: Set(FIRST_ADMIN.to_string()),
        display_name: Set("Administrator".to_string()),
        password_hash: Set(password_hash),
        role: Set("admin".to_string()),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    })
    .on_conflict(OnConflict::column(entity::Column::Username).do_nothing().to_owned())
    .exec_without_returning(db)
    .await?;
    Ok(inserted == 1)
}

/// Creates a user with an Argon2id hash of `password` (used by the admin users API and tests).
pub async fn create(
    db: &DatabaseConnection,
    username: &str,
    display_name: &str,
    password: &str,
    role: Role,
) -> Result<entity::Model, DbErr> {
    let hash = password::hash(password).map_err(|e| DbErr::Custom(format!("hashing a password: {e}")))?;
    let now = Utc::now();
    entity::ActiveModel {
        username: Set(username.to_string()),
        display_name: Set(display_name.to_string()),
        password_hash: Set(hash),
        role: Set(match role {
            Role::Admin => "admin",
            Role::User => "user",
        }
        .to_string()),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await
}

/// Finds a user by login name.
pub async fn find_by_username(db: &DatabaseConnection, username: &str) -> Result<Option<entity::Model>, DbErr> {
    entity::Entity::find()
        .filter(entity::Column::Username.eq(username))
        .one(db)
        .await
}

/// Finds a user by id.
pub async fn find_by_id(db: &DatabaseConnection, id: i64) -> Result<Option<entity::Model>, DbErr> {
    entity::Entity::find_by_id(id).one(db).await
}

/// The role column as the API's enum; anything unknown is treated as the least privilege.
pub fn role_of(model: &entity::Model) -> Role {
    match model.role.as_str() {
        "admin" => Role::Admin,
        _ => Role::User,
    }
}

/// The API view of a user. Every user may use the open `default` queue; membership of other
/// queues arrives with the queues table.
pub fn to_api(model: &entity::Model) -> User {
    User {
        id: model.id,
        username: model.username.clone(),
        display_name: model.display_name.clone(),
        role: role_of(model),
        queues: vec!["default".to_string()],
    }
}

/// 20 characters from an alphabet without look-alikes (0/O, 1/l/I): ~115 bits.
fn generate_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut rng = rand::rng();
    (0..20)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn db(dir: &std::path::Path) -> DatabaseConnection {
        let url = format!("sqlite://{}?mode=rwc", dir.join("anteroom.db").display());
        let db = crate::store::connect(&url).await.unwrap();
        crate::store::migrate(&db).await.unwrap();
        db
    }

    #[tokio::test]
    async fn a_second_first_admin_insert_reports_the_admin_existed_instead_of_failing() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path()).await;
        assert!(insert_first_admin(&db, "hash-1".into()).await.unwrap());
        assert!(!insert_first_admin(&db, "hash-2".into()).await.unwrap());
        let admin = find_by_username(&db, FIRST_ADMIN).await.unwrap().unwrap();
        assert_eq!(
            admin.password_hash, "hash-1",
            "the loser's hash never overwrites the winner's"
        );
    }

    #[tokio::test]
    async fn the_first_start_creates_the_admin_and_later_starts_leave_it_alone() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path()).await;
        assert_eq!(
            ensure_first_admin(&db, Some("first-password")).await.unwrap(),
            FirstAdmin::Created
        );
        assert_eq!(
            ensure_first_admin(&db, Some("other-password")).await.unwrap(),
            FirstAdmin::Existed
        );
        assert!(matches!(
            ensure_first_admin(&db, None).await.unwrap(),
            FirstAdmin::Existed
        ));
    }
}

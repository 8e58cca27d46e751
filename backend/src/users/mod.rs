//! Users: the first admin created at start, lookups for authentication, and the API view.

pub mod entity;
pub mod handlers;
pub mod password;
pub mod session_cache;

use anteroom_shared::api::{Role, User};
use chrono::Utc;
use rand::Rng;
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set, Statement,
};

use crate::field_rule::Rule;
use crate::store;

/// A user who proved on this request who they are (a valid token at the user's current token
/// version). The auth layers make one; it is declared here, beside the users it stands for, so
/// the users API needs nothing from `auth` (which needs the users).
#[derive(Clone, Debug)]
pub struct AuthUser(pub entity::Model);

impl AuthUser {
    /// The caller's role.
    pub fn role(&self) -> Role {
        role_of(&self.0)
    }

    /// True for admins.
    pub fn is_admin(&self) -> bool {
        self.role() == Role::Admin
    }
}

/// The file in the data directory that keeps a generated first-admin password (owner-only),
/// so `./anteroom.sh run` can show it again. It is removed when that password is changed
/// through the API: after that it would show a stale password, or keep a live one on disk.
pub const ADMIN_PASSWORD_FILE: &str = "admin-password";

/// Removes the kept first-admin password after `user`'s password changed, if `user` is the
/// first admin. A file that is already gone is fine.
pub fn forget_generated_password(data_dir: &std::path::Path, user: &entity::Model) -> std::io::Result<()> {
    if user.username != FIRST_ADMIN {
        return Ok(());
    }
    match std::fs::remove_file(data_dir.join(ADMIN_PASSWORD_FILE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

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
/// so a fresh deployment is never left with a guessable default; it is written to
/// `password_file` (owner-only, complete or not at all) *before* the admin is inserted, so a
/// password that was shown is never lost and a password that was kept is never wrong.
pub async fn ensure_first_admin(
    db: &DatabaseConnection,
    configured: Option<&str>,
    password_file: &std::path::Path,
) -> Result<FirstAdmin, DbErr> {
    // "First start" means no admin at all: a deleted `admin` account is not brought back (with
    // a configured password anyone may know) while other admins run the system.
    let exists = entity::Entity::find()
        .filter(entity::Column::Role.eq("admin"))
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
            crate::files::write_private(password_file, &format!("{p}\n")).map_err(|e| {
                DbErr::Custom(format!(
                    "keeping the generated admin password in {}: {e}",
                    password_file.display()
                ))
            })?;
            (p.clone(), FirstAdmin::Generated(p))
        }
    };
    let created = match password::hash(&password) {
        Ok(hash) => insert_first_admin(db, hash).await,
        Err(e) => Err(DbErr::Custom(format!("hashing the admin password: {e}"))),
    };
    if matches!(created, Ok(true)) {
        return Ok(outcome);
    }
    // The insert failed, or another replica created the admin first: the password kept above
    // is nobody's password, and must not be shown as the admin's.
    if matches!(outcome, FirstAdmin::Generated(_)) {
        let _ = std::fs::remove_file(password_file);
    }
    created.map(|_| FirstAdmin::Existed)
}

/// Inserts `admin` unless the username is taken; true when this call created it. Replicas
/// starting together all pass the existence check above: the unique username decides which
/// insert wins, and the others start normally instead of failing on the duplicate.
async fn insert_first_admin(db: &DatabaseConnection, password_hash: String) -> Result<bool, DbErr> {
    Ok(insert(db, FIRST_ADMIN, "Administrator", password_hash, Role::Admin)
        .await?
        .is_some())
}

/// Creates a user with an Argon2id hash of `password`, hashing on the calling thread (for
/// tests and tools; the API hashes off the async threads and calls [`insert`]).
pub async fn create(
    db: &DatabaseConnection,
    username: &str,
    display_name: &str,
    password: &str,
    role: Role,
) -> Result<entity::Model, DbErr> {
    let hash = password::hash(password).map_err(|e| DbErr::Custom(format!("hashing a password: {e}")))?;
    insert(db, username, display_name, hash, role)
        .await?
        .ok_or_else(|| DbErr::Custom(format!("the username {username} is taken")))
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

/// The API view of a user with the queues they may submit to ([`queue_names_of`]).
pub fn to_api(model: &entity::Model, queues: Vec<String>) -> User {
    User {
        id: model.id,
        username: model.username.clone(),
        display_name: model.display_name.clone(),
        role: role_of(model),
        queues,
    }
}

/// The API view of users, with their queues, in two queries whatever their number.
pub async fn to_api_all(db: &impl ConnectionTrait, models: &[entity::Model]) -> Result<Vec<User>, DbErr> {
    let mut queues = queue_names_of(db, models).await?;
    Ok(models
        .iter()
        .map(|m| to_api(m, queues.remove(&m.id).unwrap_or_default()))
        .collect())
}

/// The API view of one user.
pub async fn to_api_one(db: &impl ConnectionTrait, model: &entity::Model) -> Result<User, DbErr> {
    Ok(to_api_all(db, std::slice::from_ref(model)).await?.remove(0))
}

/// Per user: the queues they may submit to, by name — every queue for an admin, else the open
/// ones and those they are a member of. Reads the queue tables directly (the queues feature
/// builds on users, not the other way round).
pub async fn queue_names_of(
    db: &impl ConnectionTrait,
    models: &[entity::Model],
) -> Result<std::collections::HashMap<i64, Vec<String>>, DbErr> {
    use sea_orm::FromQueryResult;
    use sea_orm::sea_query::{Alias, Query};
    #[derive(FromQueryResult)]
    struct QueueRow {
        name: String,
        open: bool,
    }
    #[derive(FromQueryResult)]
    struct MemberRow {
        queue: String,
        user_id: i64,
    }
    let backend = db.get_database_backend();
    let all = QueueRow::find_by_statement(
        backend.build(
            Query::select()
                .columns([Alias::new("name"), Alias::new("open")])
                .from(Alias::new("queues"))
                .order_by(Alias::new("name"), sea_orm::Order::Asc),
        ),
    )
    .all(db)
    .await?;
    let ids: Vec<i64> = models.iter().map(|m| m.id).collect();
    let members = MemberRow::find_by_statement(
        backend.build(
            Query::select()
                .columns([Alias::new("queue"), Alias::new("user_id")])
                .from(Alias::new("queue_members"))
                .and_where(Expr::col(Alias::new("user_id")).is_in(ids)),
        ),
    )
    .all(db)
    .await?;
    Ok(models
        .iter()
        .map(|m| {
            let admin = role_of(m) == Role::Admin;
            let names = all
                .iter()
                .filter(|q| admin || q.open || members.iter().any(|r| r.user_id == m.id && r.queue == q.name))
                .map(|q| q.name.clone())
                .collect();
            (m.id, names)
        })
        .collect())
}

/// Advisory lock key that serialises changes to who is an admin on PostgreSQL ("admins").
/// Public so a test can hold it to force the interleaving the lock exists for.
pub const ADMINS_LOCK_KEY: i64 = 0x0000_6164_6d69_6e73;

/// The role column's value for a role.
fn role_column(role: Role) -> &'static str {
    match role {
        Role::Admin => "admin",
        Role::User => "user",
    }
}

/// One page of users in id order, and how many there are in all.
pub async fn list(db: &DatabaseConnection, offset: u64, limit: u64) -> Result<(Vec<entity::Model>, u64), DbErr> {
    let total = entity::Entity::find().count(db).await?;
    let items = entity::Entity::find()
        .order_by_asc(entity::Column::Id)
        .offset(offset)
        .limit(limit)
        .all(db)
        .await?;
    Ok((items, total))
}

/// Inserts a user whose password is already hashed; `None` when the username is taken (the
/// unique index decides, so two admins creating the same name at once get one user and one 409).
pub async fn insert(
    db: &DatabaseConnection,
    username: &str,
    display_name: &str,
    password_hash: String,
    role: Role,
) -> Result<Option<entity::Model>, DbErr> {
    let now = Utc::now();
    let inserted = entity::Entity::insert(entity::ActiveModel {
        username: Set(username.to_string()),
        display_name: Set(display_name.to_string()),
        password_hash: Set(password_hash),
        role: Set(role_column(role).to_string()),
        created_at: Set(now),
        updated_at: Set(now),
        token_version: Set(0),
        ..Default::default()
    })
    .on_conflict(OnConflict::column(entity::Column::Username).do_nothing().to_owned())
    .exec_without_returning(db)
    .await?;
    if inserted == 0 {
        return Ok(None);
    }
    find_by_username(db, username).await
}

/// What an admin may change on a user; `None` leaves a field alone.
#[derive(Debug, Default)]
pub struct UserChanges {
    /// New role.
    pub role: Option<Role>,
    /// New Argon2id hash.
    pub password_hash: Option<String>,
    /// New display name.
    pub display_name: Option<String>,
}

/// The outcome of [`update`] and [`delete`].
#[derive(Debug, PartialEq)]
pub enum AdminChange<T> {
    /// Done.
    Done(T),
    /// No user has this id.
    NotFound,
    /// Refused: afterwards no admin would be left to administer Anteroom.
    LastAdmin,
}

/// Applies `changes` to user `id`, refusing to demote the last admin.
pub async fn update(
    db: &DatabaseConnection,
    id: i64,
    changes: UserChanges,
) -> Result<AdminChange<entity::Model>, DbErr> {
    let demotes = changes.role == Some(Role::User);
    let mut query = entity::Entity::update_many()
        .col_expr(entity::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(entity::Column::Id.eq(id));
    // A new password or a new role ends every token issued before: the token version goes up
    // when the password is set, or when the role really changes (setting the same role again
    // logs nobody out).
    let mut ends_sessions = Expr::value(0i64);
    if let Some(role) = changes.role {
        query = query.col_expr(entity::Column::Role, Expr::value(role_column(role)));
        ends_sessions = Expr::case(entity::Column::Role.ne(role_column(role)), 1i64)
            .finally(0i64)
            .into();
    }
    if let Some(hash) = changes.password_hash {
        query = query.col_expr(entity::Column::PasswordHash, Expr::value(hash));
        ends_sessions = Expr::value(1i64);
    }
    query = query.col_expr(
        entity::Column::TokenVersion,
        Expr::col(entity::Column::TokenVersion).add(ends_sessions),
    );
    if let Some(name) = changes.display_name {
        query = query.col_expr(entity::Column::DisplayName, Expr::value(name));
    }
    let txn = begin_admin_change(db).await?;
    if query.exec(&txn).await?.rows_affected == 0 {
        return Ok(AdminChange::NotFound);
    }
    if demotes && admins(&txn).await? == 0 {
        txn.rollback().await?;
        return Ok(AdminChange::LastAdmin);
    }
    let model = entity::Entity::find_by_id(id).one(&txn).await?;
    txn.commit().await?;
    Ok(model.map_or(AdminChange::NotFound, AdminChange::Done))
}

/// Ends every session token of user `id` issued so far (logout). False when there is no such
/// user.
pub async fn end_sessions(db: &DatabaseConnection, id: i64) -> Result<bool, DbErr> {
    let result = entity::Entity::update_many()
        .col_expr(
            entity::Column::TokenVersion,
            Expr::col(entity::Column::TokenVersion).add(1i64),
        )
        .filter(entity::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(result.rows_affected == 1)
}

/// Deletes user `id` and their webhook subscriptions, refusing to delete the last admin. Their
/// tokens stop working at once, since every request reloads its user.
pub async fn delete(db: &DatabaseConnection, id: i64) -> Result<AdminChange<()>, DbErr> {
    let txn = begin_admin_change(db).await?;
    if entity::Entity::delete_by_id(id).exec(&txn).await?.rows_affected == 0 {
        return Ok(AdminChange::NotFound);
    }
    if admins(&txn).await? == 0 {
        txn.rollback().await?;
        return Ok(AdminChange::LastAdmin);
    }
    // Their webhooks go with them: nothing is sent for a user who is gone.
    crate::notifications::forget_owner(&txn, id).await?;
    txn.commit().await?;
    Ok(AdminChange::Done(()))
}

/// A transaction in which "is there still an admin?" cannot race with another change.
/// PostgreSQL: an advisory lock held to commit serialises these transactions (under read
/// committed, two demotions of two different admins would otherwise both see the other admin).
/// SQLite: `BEGIN IMMEDIATE` ([`store::write_transaction`]) takes the database's single write
/// lock before anything is read, so the count that follows sees every earlier change.
async fn begin_admin_change(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    let txn = store::write_transaction(db).await?;
    if db.get_database_backend() == DbBackend::Postgres {
        txn.execute_raw(Statement::from_string(
            DbBackend::Postgres,
            format!("SELECT pg_advisory_xact_lock({ADMINS_LOCK_KEY})"),
        ))
        .await?;
    }
    Ok(txn)
}

async fn admins(txn: &DatabaseTransaction) -> Result<u64, DbErr> {
    entity::Entity::find()
        .filter(entity::Column::Role.eq("admin"))
        .count(txn)
        .await
}

/// Why a username is refused, or `None` when it is fine: 1–64 of `a-z 0-9 . _ -`, starting
/// with a letter or digit. Lowercase only, so `Alice` and `alice` cannot be two people.
pub fn username_problem(username: &str) -> Option<Rule> {
    let valid_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-');
    if username.is_empty() || username.len() > 64 {
        Some(crate::field_rule::Rule::length_between(1, 64))
    } else if !username.chars().all(valid_char) {
        Some(Rule::fixed(
            "usernameCharacters",
            "may contain only lowercase letters, digits, '.', '_' and '-'",
        ))
    } else if !username.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        Some(Rule::fixed("usernameStart", "must start with a letter or a digit"))
    } else {
        None
    }
}

/// Why a password is refused, or `None`: 8 to 1024 characters (at least as long as the
/// configured admin password must be; the bound keeps one hash's input small).
pub fn password_problem(password: &str) -> Option<Rule> {
    let n = password.chars().count();
    if !(8..=1024).contains(&n) {
        Some(crate::field_rule::Rule::length_between(8, 1024))
    } else {
        None
    }
}

/// Why a display name is refused, or `None`: 1–128 characters, no control characters.
pub fn display_name_problem(name: &str) -> Option<Rule> {
    let n = name.chars().count();
    if n == 0 || n > 128 {
        Some(crate::field_rule::Rule::length_between(1, 128))
    } else if name.chars().any(char::is_control) {
        Some(Rule::fixed(
            "noControlCharacters",
            "must not contain control characters",
        ))
    } else {
        None
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

    #[tokio::test]
    async fn a_second_first_admin_insert_reports_the_admin_existed_instead_of_failing() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::store::test_database(dir.path()).await;
        assert!(insert_first_admin(&db, "hash-1".into()).await.unwrap());
        assert!(!insert_first_admin(&db, "hash-2".into()).await.unwrap());
        let admin = find_by_username(&db, FIRST_ADMIN).await.unwrap().unwrap();
        assert_eq!(
            admin.password_hash, "hash-1",
            "the loser's hash never overwrites the winner's"
        );
    }

    #[tokio::test]
    async fn a_generated_password_is_kept_only_when_this_start_created_the_admin() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::store::test_database(dir.path()).await;
        let file = dir.path().join("admin-password");
        // A replica that found no admin, then lost the insert to another one.
        assert!(insert_first_admin(&db, "winner".into()).await.unwrap());
        db.execute_unprepared("UPDATE users SET role = 'user'").await.unwrap();
        assert_eq!(ensure_first_admin(&db, None, &file).await.unwrap(), FirstAdmin::Existed);
        assert!(!file.exists(), "the loser's password is nobody's: not kept");
    }

    #[tokio::test]
    async fn the_first_start_creates_the_admin_and_later_starts_leave_it_alone() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::store::test_database(dir.path()).await;
        let file = dir.path().join("admin-password");
        assert_eq!(
            ensure_first_admin(&db, Some("first-password"), &file).await.unwrap(),
            FirstAdmin::Created
        );
        assert_eq!(
            ensure_first_admin(&db, Some("other-password"), &file).await.unwrap(),
            FirstAdmin::Existed
        );
        assert!(matches!(
            ensure_first_admin(&db, None, &file).await.unwrap(),
            FirstAdmin::Existed
        ));
        assert!(!file.exists(), "a configured password is never written down");
    }
}

//! Saved job templates (issue 24, point 6): a user's own job bodies without a name, and ones
//! admins publish for everyone; one published template per kind may be the default the
//! submission form starts from (`GET /api/v1/job-defaults`).
//!
//! Who may do what is one function, [`access`]: the owner writes their own unpublished
//! templates, an admin writes any, everyone reads the published ones, and nobody learns that
//! someone else's private template exists. Every write holds the `anteroom-templates` lock, so
//! a name stays unique per owner, an owner's count stays under [`MAX_TEMPLATES_PER_OWNER`] and a
//! kind keeps at most one default however writes interleave.
//!
//! - `validate.rs`: the write's own rules (the body's are a submission's).
//! - `handlers.rs`: the HTTP face.

pub mod entity;
pub mod handlers;
pub mod validate;

use std::str::FromStr;

use anteroom_shared::api::templates::{JobTemplate, KindDefault, TemplateBody, TemplateWrite};
use anteroom_shared::scheduling::{DefaultRequests, JobKind};
use chrono::Utc;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, Set,
};

use crate::users::AuthUser;

/// At most this many templates per owner: a picker, not a store of job history.
pub const MAX_TEMPLATES_PER_OWNER: u64 = 100;

/// The lock every template write holds (see [`crate::store::lock_named`]).
const LOCK: &str = "anteroom-templates";

/// What a template operation can fail on; the handlers map each to a status and a code.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// No such template, or one the caller may not see (`template_not_found`).
    #[error("no template with id {0}")]
    NotFound(i64),
    /// The owner has a template of that name (`template_exists`).
    #[error("a template named {0:?} exists")]
    Exists(String),
    /// The owner has [`MAX_TEMPLATES_PER_OWNER`] templates (`template_limit`).
    #[error("at most {MAX_TEMPLATES_PER_OWNER} templates per user: delete one first")]
    Limit,
    /// Seen but not the caller's to change, or publishing without the admin role (`forbidden`).
    #[error("{0}")]
    Forbidden(&'static str),
    /// Invalid fields: (field, problem).
    #[error("invalid template")]
    Invalid(Vec<(String, crate::field_rule::Rule)>),
    /// The write's `If-Match` no longer names the stored template (`precondition_failed`);
    /// carries the stored one's tag.
    #[error("the template changed since it was read")]
    Stale(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// Who is asking, as the rules need it.
#[derive(Clone, Copy, Debug)]
pub struct Caller<'a> {
    /// User id.
    pub id: i64,
    /// Username (a new template's owner).
    pub name: &'a str,
    /// Admins publish, and change any template.
    pub admin: bool,
}

impl<'a> From<&'a AuthUser> for Caller<'a> {
    fn from(user: &'a AuthUser) -> Self {
        Caller {
            id: user.0.id,
            name: &user.0.username,
            admin: user.is_admin(),
        }
    }
}

/// What a caller may do with one template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Nothing, not even know it exists (someone else's unpublished template).
    Hidden,
    /// Read and submit from it (a published template of someone else, or a non-admin's own
    /// once an admin published it: published ones are the admins' to change).
    Read,
    /// Read, change and delete.
    Write,
}

/// The one rule of who may see and change a template.
pub fn access(caller: Caller<'_>, owner_id: i64, published: bool) -> Access {
    if caller.admin || (owner_id == caller.id && !published) {
        Access::Write
    } else if published {
        Access::Read
    } else {
        Access::Hidden
    }
}

fn to_api(row: &entity::Model) -> Result<JobTemplate, DbErr> {
    let body: TemplateBody = serde_json::from_str(&row.body)
        .map_err(|e| DbErr::Custom(format!("template {}: unreadable body: {e}", row.id)))?;
    Ok(JobTemplate {
        id: row.id,
        name: row.name.clone(),
        description: row.description.clone(),
        owner: row.owner_name.clone(),
        published: row.published,
        default_for_kind: row.default_for_kind,
        body,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// The caller's own templates and every published one, by name then id (admins alike: others'
/// private templates are theirs to reach by id, not to browse).
pub async fn list(db: &impl ConnectionTrait, caller: Caller<'_>) -> Result<Vec<JobTemplate>, DbErr> {
    let rows = entity::Entity::find()
        .filter(
            Condition::any()
                .add(entity::Column::OwnerId.eq(caller.id))
                .add(entity::Column::Published.eq(true)),
        )
        .order_by_asc(entity::Column::Name)
        .order_by_asc(entity::Column::Id)
        .all(db)
        .await?;
    rows.iter().map(to_api).collect()
}

/// One template the caller may see.
pub async fn get(db: &impl ConnectionTrait, caller: Caller<'_>, id: i64) -> Result<JobTemplate, TemplateError> {
    let row = visible(db, caller, id).await?;
    Ok(to_api(&row)?)
}

/// The row of `id` when the caller may see it; 404 alike when it is missing or hidden.
async fn visible(db: &impl ConnectionTrait, caller: Caller<'_>, id: i64) -> Result<entity::Model, TemplateError> {
    match entity::Entity::find_by_id(id).one(db).await? {
        Some(row) if access(caller, row.owner_id, row.published) != Access::Hidden => Ok(row),
        _ => Err(TemplateError::NotFound(id)),
    }
}

/// The row of `id` when the caller may change it.
async fn writable(db: &impl ConnectionTrait, caller: Caller<'_>, id: i64) -> Result<entity::Model, TemplateError> {
    let row = visible(db, caller, id).await?;
    match access(caller, row.owner_id, row.published) {
        Access::Write => Ok(row),
        _ => Err(TemplateError::Forbidden(
            "a published template is the admins' to change",
        )),
    }
}

/// Creates a template owned by the caller (`id = None`) or replaces template `id` (its owner
/// stays). Checks the write's own rules, then the caller's right, then — under the lock — the
/// owner's names and count; setting `defaultForKind` takes it from the kind's other templates
/// in the same transaction.
pub async fn save(
    db: &DatabaseConnection,
    caller: Caller<'_>,
    write: &TemplateWrite,
    id: Option<i64>,
    defaults: &DefaultRequests,
    if_match: Option<&str>,
) -> Result<JobTemplate, TemplateError> {
    let problems = validate::problems(write, defaults);
    if !problems.is_empty() {
        return Err(TemplateError::Invalid(problems));
    }
    if (write.published || write.default_for_kind) && !caller.admin {
        return Err(TemplateError::Forbidden(
            "publishing a template, or making it a kind's default, needs the admin role",
        ));
    }
    let body = serde_json::to_string(&write.body).map_err(|e| DbErr::Custom(e.to_string()))?;
    let kind = write.body.kind.as_str();
    let txn = crate::store::write_transaction(db).await?;
    crate::store::lock_named(&txn, LOCK).await?;
    let existing = match id {
        Some(id) => Some(writable(&txn, caller, id).await?),
        None => None,
    };
    if let (Some(row), Some(if_match)) = (&existing, if_match) {
        let tag = crate::etag::of(&to_api(row)?);
        if !crate::etag::matches(if_match, &tag) {
            return Err(TemplateError::Stale(tag));
        }
    }
    let owner_id = existing.as_ref().map_or(caller.id, |row| row.owner_id);
    if existing.is_none() {
        let owned = entity::Entity::find()
            .filter(entity::Column::OwnerId.eq(owner_id))
            .count(&txn)
            .await?;
        if owned >= MAX_TEMPLATES_PER_OWNER {
            return Err(TemplateError::Limit);
        }
    }
    let mut same_name = entity::Entity::find()
        .filter(entity::Column::OwnerId.eq(owner_id))
        .filter(entity::Column::Name.eq(write.name.as_str()));
    if let Some(id) = id {
        same_name = same_name.filter(entity::Column::Id.ne(id));
    }
    if same_name.one(&txn).await?.is_some() {
        return Err(TemplateError::Exists(write.name.clone()));
    }
    if write.default_for_kind {
        // Before the write: the unique partial index allows one default per kind at any time.
        let mut others = entity::Entity::update_many()
            .col_expr(entity::Column::DefaultForKind, Expr::value(false))
            .filter(entity::Column::Kind.eq(kind))
            .filter(entity::Column::DefaultForKind.eq(true));
        if let Some(id) = id {
            others = others.filter(entity::Column::Id.ne(id));
        }
        others.exec(&txn).await?;
    }
    let now = Utc::now();
    let row = match existing {
        None => {
            entity::ActiveModel {
                owner_id: Set(caller.id),
                owner_name: Set(caller.name.to_owned()),
                name: Set(write.name.clone()),
                description: Set(write.description.clone()),
                body: Set(body),
                published: Set(write.published),
                default_for_kind: Set(write.default_for_kind),
                kind: Set(kind.to_owned()),
                created_at: Set(now),
                updated_at: Set(now),
                ..Default::default()
            }
            .insert(&txn)
            .await?
        }
        Some(row) => {
            let mut active: entity::ActiveModel = row.into();
            active.name = Set(write.name.clone());
            active.description = Set(write.description.clone());
            active.body = Set(body);
            active.published = Set(write.published);
            active.default_for_kind = Set(write.default_for_kind);
            active.kind = Set(kind.to_owned());
            active.updated_at = Set(now);
            active.update(&txn).await?
        }
    };
    txn.commit().await?;
    Ok(to_api(&row)?)
}

/// Deletes a template the caller may change (jobs submitted from it are not affected).
pub async fn delete(db: &DatabaseConnection, caller: Caller<'_>, id: i64) -> Result<(), TemplateError> {
    let txn = crate::store::write_transaction(db).await?;
    crate::store::lock_named(&txn, LOCK).await?;
    writable(&txn, caller, id).await?;
    entity::Entity::delete_by_id(id).exec(&txn).await?;
    txn.commit().await?;
    Ok(())
}

/// The published default of each kind that has one, in the kinds' order.
pub async fn defaults(db: &impl ConnectionTrait) -> Result<Vec<KindDefault>, DbErr> {
    let rows = entity::Entity::find()
        .filter(entity::Column::DefaultForKind.eq(true))
        .filter(entity::Column::Published.eq(true))
        .all(db)
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let kind =
            JobKind::from_str(&row.kind).map_err(|_| DbErr::Custom(format!("template {}: unreadable kind", row.id)))?;
        out.push(KindDefault {
            kind,
            template: to_api(row)?,
        });
    }
    out.sort_by_key(|d| d.kind);
    Ok(out)
}

#[cfg(test)]
mod tests;

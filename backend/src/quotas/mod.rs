//! Queue quotas (`spec/prequeue.md` §1): an admin rule per queue limiting what each user may
//! occupy there. Validated as a whole before it is stored (no negative limit, no
//! `maxActiveJobs: 0`, a known queue, one rule per queue).

pub mod entity;
pub mod handlers;

use anteroom_shared::api::queues::{QueueQuotaBody, QueueQuotaRule};
use anteroom_shared::scheduling::ResourceList;
use chrono::Utc;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder,
    Set,
};

use crate::field_rule::Rule;
use crate::prequeue::{QueueQuota, QuotaFieldError};
use crate::queues;

/// What a quota write can fail on.
#[derive(Debug, thiserror::Error)]
pub enum QuotaError {
    /// No rule with that id (`quota_not_found`).
    #[error("no queue quota with id {0}")]
    NotFound(i64),
    /// The queue already has a rule (`quota_exists`).
    #[error("queue {0:?} already has a quota rule")]
    Exists(String),
    /// The queue does not exist.
    #[error("no queue named {0:?}")]
    UnknownQueue(String),
    /// Invalid fields, all of them: (field, problem).
    #[error("invalid quota")]
    Invalid(Vec<(String, Rule)>),
    /// The write's `If-Match` no longer names the stored rule (`precondition_failed`); carries
    /// the stored one's tag.
    #[error("the queue quota changed since it was read")]
    Stale(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// A row as the API shows it.
pub fn to_api(row: &entity::Model) -> Result<QueueQuotaRule, DbErr> {
    Ok(QueueQuotaRule {
        id: row.id,
        queue: row.queue.clone(),
        limits: limits_of(row)?,
        max_active_jobs: row.max_active_jobs.and_then(|n| u32::try_from(n).ok()),
    })
}

fn limits_of(row: &entity::Model) -> Result<ResourceList, DbErr> {
    serde_json::from_str(&row.limits).map_err(|e| DbErr::Custom(format!("quota {}: unreadable limits: {e}", row.id)))
}

/// Every rule as the core sees it.
pub async fn all(db: &impl ConnectionTrait) -> Result<Vec<QueueQuota>, DbErr> {
    let rows = entity::Entity::find().order_by_asc(entity::Column::Id).all(db).await?;
    rows.iter()
        .map(|row| {
            Ok(QueueQuota {
                queue: row.queue.clone(),
                limits: limits_of(row)?,
                max_active_jobs: row.max_active_jobs.and_then(|n| u32::try_from(n).ok()),
            })
        })
        .collect()
}

/// One rule.
pub async fn get(db: &impl ConnectionTrait, id: i64) -> Result<QueueQuotaRule, QuotaError> {
    let row = entity::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or(QuotaError::NotFound(id))?;
    Ok(to_api(&row)?)
}

/// Every rule, by id.
pub async fn list(db: &impl ConnectionTrait) -> Result<Vec<QueueQuotaRule>, DbErr> {
    let rows = entity::Entity::find().order_by_asc(entity::Column::Id).all(db).await?;
    rows.iter().map(to_api).collect()
}

fn validate(body: &QueueQuotaBody) -> Result<(), QuotaError> {
    let rule = QueueQuota {
        queue: body.queue.clone(),
        limits: body.limits.clone(),
        max_active_jobs: body.max_active_jobs,
    };
    let mut problems: Vec<(String, Rule)> = Vec::new();
    for (name, _) in body.limits.iter() {
        if let Some(p) = queues::resource_name_problem(name) {
            problems.push((format!("limits.{name}"), p));
        }
    }
    if let Err(errors) = rule.validate() {
        problems.extend(
            errors
                .iter()
                .map(|e: &QuotaFieldError| (e.field().to_string(), rule_of(e))),
        );
    }
    if body.max_active_jobs.is_some_and(|n| n > i32::MAX as u32) {
        problems.push((
            "maxActiveJobs".into(),
            Rule::with(
                "between",
                format!("must be between 1 and {}", i32::MAX),
                serde_json::json!({ "min": 1, "max": i32::MAX }),
            ),
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(QuotaError::Invalid(problems))
    }
}

/// Creates (`id = None`) or replaces a rule; a replacement with `if_match` is made only on the
/// stored rule it names ([`crate::etag`]).
pub async fn save(
    db: &DatabaseConnection,
    body: &QueueQuotaBody,
    id: Option<i64>,
    if_match: Option<&str>,
) -> Result<QueueQuotaRule, QuotaError> {
    validate(body)?;
    let txn = crate::store::write_transaction(db).await?;
    // Queue and quota writes take turns (PostgreSQL), so two creates for one queue cannot both
    // pass the check below: the second sees the first and answers `quota_exists`.
    crate::store::lock_named(&txn, "anteroom-queues").await?;
    if queues::entity::queue::Entity::find_by_id(body.queue.clone())
        .one(&txn)
        .await?
        .is_none()
    {
        return Err(QuotaError::UnknownQueue(body.queue.clone()));
    }
    let existing = match id {
        Some(id) => Some(
            entity::Entity::find_by_id(id)
                .one(&txn)
                .await?
                .ok_or(QuotaError::NotFound(id))?,
        ),
        None => None,
    };
    if let (Some(row), Some(if_match)) = (&existing, if_match) {
        let tag = crate::etag::of(&to_api(row)?);
        if !crate::etag::matches(if_match, &tag) {
            return Err(QuotaError::Stale(tag));
        }
    }
    let clash = entity::Entity::find()
        .filter(entity::Column::Queue.eq(&body.queue))
        .one(&txn)
        .await?;
    if clash.is_some_and(|c| Some(c.id) != id) {
        return Err(QuotaError::Exists(body.queue.clone()));
    }
    let now = Utc::now();
    let limits = serde_json::to_string(&body.limits).map_err(|e| DbErr::Custom(e.to_string()))?;
    let max_active = body.max_active_jobs.map(|n| n as i32);
    let saved = match existing {
        Some(row) => {
            let mut active: entity::ActiveModel = row.into();
            active.queue = Set(body.queue.clone());
            active.limits = Set(limits);
            active.max_active_jobs = Set(max_active);
            active.updated_at = Set(now);
            active.update(&txn).await?
        }
        None => {
            entity::ActiveModel {
                queue: Set(body.queue.clone()),
                limits: Set(limits),
                max_active_jobs: Set(max_active),
                created_at: Set(now),
                updated_at: Set(now),
                ..Default::default()
            }
            .insert(&txn)
            .await?
        }
    };
    txn.commit().await?;
    Ok(to_api(&saved)?)
}

/// Deletes a rule.
pub async fn delete(db: &DatabaseConnection, id: i64) -> Result<(), QuotaError> {
    let result = entity::Entity::delete_by_id(id).exec(db).await?;
    if result.rows_affected == 0 {
        return Err(QuotaError::NotFound(id));
    }
    Ok(())
}

/// The core's refusal of a rule field, as the API says it.
fn rule_of(e: &QuotaFieldError) -> Rule {
    match e {
        QuotaFieldError::NegativeLimit { .. } => Rule::coded("negativeLimit", e.to_string()),
        QuotaFieldError::ZeroMaxActiveJobs => Rule::coded("atLeastOneOrNone", e.to_string()),
    }
}

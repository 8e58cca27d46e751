//! Toleration rules (issue: workloads, point 1): admins decide which jobs tolerate which node
//! taints, per accelerator resource (a job asking for `nvidia.com/a100` tolerates the A100
//! pool's taint) or per queue (a team's dedicated nodes). Users cannot add their own. A job's
//! tolerations are worked out once, at submission, from the rules of that moment and stored
//! with it: its admission, every watcher snapshot and its pods then use the same list, and a
//! rule changed later applies to jobs submitted after.

pub mod entity;
pub mod handlers;

use anteroom_shared::api::tolerations::{TolerationRule, TolerationRuleBody};
use anteroom_shared::scheduling::{Toleration, TolerationRuleSpec};
use chrono::Utc;
use sea_orm::{ActiveModelTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryOrder, Set};

use crate::queues;

/// What a rule write can fail on.
#[derive(Debug, thiserror::Error)]
pub enum TolerationRuleError {
    /// No rule with that id (`toleration_rule_not_found`).
    #[error("no toleration rule with id {0}")]
    NotFound(i64),
    /// The queue does not exist.
    #[error("no queue named {0:?}")]
    UnknownQueue(String),
    /// Invalid fields, all of them: (field, problem).
    #[error("invalid toleration rule")]
    Invalid(Vec<(String, String)>),
    /// The write's `If-Match` no longer names the stored rule (`precondition_failed`); carries
    /// the stored one's tag.
    #[error("the toleration rule changed since it was read")]
    Stale(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbErr),
}

fn tolerations_of(row: &entity::Model) -> Result<Vec<Toleration>, DbErr> {
    serde_json::from_str(&row.tolerations)
        .map_err(|e| DbErr::Custom(format!("toleration rule {}: unreadable tolerations: {e}", row.id)))
}

/// A row as the API shows it.
pub fn to_api(row: &entity::Model) -> Result<TolerationRule, DbErr> {
    Ok(TolerationRule {
        id: row.id,
        resource: row.resource.clone(),
        queue: row.queue.clone(),
        tolerations: tolerations_of(row)?,
        description: row.description.clone(),
    })
}

/// One rule.
pub async fn get(db: &impl ConnectionTrait, id: i64) -> Result<TolerationRule, TolerationRuleError> {
    let row = entity::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or(TolerationRuleError::NotFound(id))?;
    Ok(to_api(&row)?)
}

/// Every rule, by id.
pub async fn list(db: &impl ConnectionTrait) -> Result<Vec<TolerationRule>, DbErr> {
    let rows = entity::Entity::find().order_by_asc(entity::Column::Id).all(db).await?;
    rows.iter().map(to_api).collect()
}

/// Every rule as the core applies it, in id order.
pub async fn specs(db: &impl ConnectionTrait) -> Result<Vec<TolerationRuleSpec>, DbErr> {
    list(db)
        .await?
        .into_iter()
        .filter_map(|rule| {
            TolerationRuleBody {
                resource: rule.resource,
                queue: rule.queue,
                tolerations: rule.tolerations,
                description: String::new(),
            }
            .to_spec()
        })
        .map(Ok)
        .collect()
}

/// A job's stored tolerations (`jobs.tolerations`: JSON, or empty text for none).
pub fn encode(tolerations: &[Toleration]) -> Result<String, DbErr> {
    if tolerations.is_empty() {
        return Ok(String::new());
    }
    serde_json::to_string(tolerations).map_err(|e| DbErr::Custom(e.to_string()))
}

/// The inverse of [`encode`].
pub fn decode(text: &str) -> Result<Vec<Toleration>, serde_json::Error> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(text)
}

/// Creates (`id = None`) or replaces a rule; a replacement with `if_match` is made only on the
/// stored rule it names ([`crate::etag`]).
pub async fn save(
    db: &DatabaseConnection,
    body: &TolerationRuleBody,
    id: Option<i64>,
    if_match: Option<&str>,
) -> Result<TolerationRule, TolerationRuleError> {
    let problems = body.problems();
    if !problems.is_empty() {
        return Err(TolerationRuleError::Invalid(
            problems.into_iter().map(|(f, p)| (f, p.to_string())).collect(),
        ));
    }
    let txn = crate::store::write_transaction(db).await?;
    // Queue writes take turns with this one (PostgreSQL), so the queue cannot go between the
    // check and the insert.
    crate::store::lock_named(&txn, "anteroom-queues").await?;
    if let Some(queue) = &body.queue
        && queues::entity::queue::Entity::find_by_id(queue.clone())
            .one(&txn)
            .await?
            .is_none()
    {
        return Err(TolerationRuleError::UnknownQueue(queue.clone()));
    }
    let now = Utc::now();
    let tolerations = serde_json::to_string(&body.tolerations).map_err(|e| DbErr::Custom(e.to_string()))?;
    let saved = match id {
        Some(id) => {
            let row = entity::Entity::find_by_id(id)
                .one(&txn)
                .await?
                .ok_or(TolerationRuleError::NotFound(id))?;
            if let Some(if_match) = if_match {
                let tag = crate::etag::of(&to_api(&row)?);
                if !crate::etag::matches(if_match, &tag) {
                    return Err(TolerationRuleError::Stale(tag));
                }
            }
            let mut active: entity::ActiveModel = row.into();
            active.resource = Set(body.resource.clone());
            active.queue = Set(body.queue.clone());
            active.tolerations = Set(tolerations);
            active.description = Set(body.description.clone());
            active.updated_at = Set(now);
            active.update(&txn).await?
        }
        None => {
            entity::ActiveModel {
                resource: Set(body.resource.clone()),
                queue: Set(body.queue.clone()),
                tolerations: Set(tolerations),
                description: Set(body.description.clone()),
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
pub async fn delete(db: &DatabaseConnection, id: i64) -> Result<(), TolerationRuleError> {
    let result = entity::Entity::delete_by_id(id).exec(db).await?;
    if result.rows_affected == 0 {
        return Err(TolerationRuleError::NotFound(id));
    }
    Ok(())
}

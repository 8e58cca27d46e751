//! The volume catalogue (issue: workloads, point 2): admins offer data — a PersistentVolumeClaim
//! in the jobs namespace or an NFS export — under a name, a mount path and the queues that may
//! use it; a job names entries (`volumes` in its body). What it names is resolved when it is
//! submitted and kept with the job (`jobs.volumes`), so its pods mount what was checked, and a
//! catalogue change applies to jobs submitted after.

pub mod entity;
pub mod handlers;

use anteroom_shared::api::volumes::{Volume, VolumeBody, VolumeMount};
use chrono::Utc;
use sea_orm::{ActiveModelTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryOrder, Set};

use crate::queues::entity::queue;

/// At most this many volumes in one job.
pub const MAX_VOLUMES_PER_JOB: usize = 16;

/// What a catalogue write can fail on.
#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    /// No entry of that name (`volume_not_found`).
    #[error("no volume named {0:?}")]
    NotFound(String),
    /// An entry of that name exists (`volume_exists`).
    #[error("a volume named {0:?} exists")]
    Exists(String),
    /// A queue the entry names does not exist.
    #[error("no queue named {0:?}")]
    UnknownQueue(String),
    /// Invalid fields: (field, problem).
    #[error("invalid volume")]
    Invalid(Vec<(String, String)>),
    /// The write's `If-Match` no longer names the stored entry (`precondition_failed`); carries
    /// the stored one's tag.
    #[error("the volume changed since it was read")]
    Stale(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbErr),
}

fn to_api(row: &entity::Model) -> Result<Volume, DbErr> {
    serde_json::from_str(&row.spec).map_err(|e| DbErr::Custom(format!("volume {:?}: unreadable: {e}", row.name)))
}

/// One entry.
pub async fn get(db: &impl ConnectionTrait, name: &str) -> Result<Volume, VolumeError> {
    let row = entity::Entity::find_by_id(name.to_owned())
        .one(db)
        .await?
        .ok_or_else(|| VolumeError::NotFound(name.to_owned()))?;
    Ok(to_api(&row)?)
}

/// Every entry, by name.
pub async fn list(db: &impl ConnectionTrait) -> Result<Vec<Volume>, DbErr> {
    let rows = entity::Entity::find()
        .order_by_asc(entity::Column::Name)
        .all(db)
        .await?;
    rows.iter().map(to_api).collect()
}

/// Creates (`name = None`) or replaces the entry `name` (whose name cannot change); a
/// replacement with `if_match` is made only on the stored entry it names ([`crate::etag`]).
pub async fn save(
    db: &DatabaseConnection,
    body: &VolumeBody,
    name: Option<&str>,
    if_match: Option<&str>,
) -> Result<Volume, VolumeError> {
    let mut problems: Vec<(String, String)> = body.problems().into_iter().map(|(f, p)| (f, p.to_string())).collect();
    if name.is_some_and(|n| n != body.name) {
        problems.push((
            "name".into(),
            "a volume keeps its name (delete it and create another)".into(),
        ));
    }
    if !problems.is_empty() {
        return Err(VolumeError::Invalid(problems));
    }
    let txn = crate::store::write_transaction(db).await?;
    crate::store::lock_named(&txn, "anteroom-queues").await?;
    for queue in &body.queues {
        if queue::Entity::find_by_id(queue.clone()).one(&txn).await?.is_none() {
            return Err(VolumeError::UnknownQueue(queue.clone()));
        }
    }
    let existing = entity::Entity::find_by_id(body.name.clone()).one(&txn).await?;
    let now = Utc::now();
    let spec = serde_json::to_string(body).map_err(|e| DbErr::Custom(e.to_string()))?;
    match (name, existing) {
        (None, Some(_)) => return Err(VolumeError::Exists(body.name.clone())),
        (Some(n), None) => return Err(VolumeError::NotFound(n.to_owned())),
        (None, None) => {
            entity::ActiveModel {
                name: Set(body.name.clone()),
                spec: Set(spec),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(&txn)
            .await?;
        }
        (Some(_), Some(row)) => {
            if let Some(if_match) = if_match {
                let tag = crate::etag::of(&to_api(&row)?);
                if !crate::etag::matches(if_match, &tag) {
                    return Err(VolumeError::Stale(tag));
                }
            }
            let mut active: entity::ActiveModel = row.into();
            active.spec = Set(spec);
            active.updated_at = Set(now);
            active.update(&txn).await?;
        }
    }
    txn.commit().await?;
    Ok(body.clone())
}

/// Deletes an entry (jobs that mount it keep their mounts).
pub async fn delete(db: &DatabaseConnection, name: &str) -> Result<(), VolumeError> {
    let result = entity::Entity::delete_by_id(name.to_owned()).exec(db).await?;
    if result.rows_affected == 0 {
        return Err(VolumeError::NotFound(name.to_owned()));
    }
    Ok(())
}

/// Why a job's volumes cannot be mounted.
#[derive(Debug, PartialEq, Eq)]
pub enum MountProblem {
    /// Invalid picks: (field, problem) — unknown names, repeats, two at one path, too many.
    Invalid(Vec<(String, String)>),
    /// The volume is not offered to the job's queue.
    Forbidden(String),
}

/// The mounts of a job in the queue whose path to the root is `queue_path` that names
/// `picked`, against `catalogue`.
pub fn resolve(catalogue: &[Volume], queue_path: &[&str], picked: &[String]) -> Result<Vec<VolumeMount>, MountProblem> {
    let mut problems: Vec<(String, String)> = Vec::new();
    if picked.len() > MAX_VOLUMES_PER_JOB {
        problems.push(("volumes".into(), format!("at most {MAX_VOLUMES_PER_JOB} volumes")));
    }
    let mut mounts: Vec<VolumeMount> = Vec::new();
    for (i, name) in picked.iter().enumerate() {
        let Some(volume) = catalogue.iter().find(|v| &v.name == name) else {
            problems.push((format!("volumes[{i}]"), format!("no volume named {name:?}")));
            continue;
        };
        if picked[..i].contains(name) {
            problems.push((format!("volumes[{i}]"), "named twice".into()));
            continue;
        }
        if !volume.allows(queue_path) {
            return Err(MountProblem::Forbidden(name.clone()));
        }
        if mounts.iter().any(|m| m.mount_path == volume.mount_path) {
            problems.push((
                format!("volumes[{i}]"),
                format!("another volume is mounted at {}", volume.mount_path),
            ));
            continue;
        }
        mounts.push(volume.to_mount());
    }
    if problems.is_empty() {
        Ok(mounts)
    } else {
        Err(MountProblem::Invalid(problems))
    }
}

/// A job's stored mounts (`jobs.volumes`: JSON, or empty text for none).
pub fn encode(mounts: &[VolumeMount]) -> Result<String, DbErr> {
    if mounts.is_empty() {
        return Ok(String::new());
    }
    serde_json::to_string(mounts).map_err(|e| DbErr::Custom(e.to_string()))
}

/// The inverse of [`encode`].
pub fn decode(text: &str) -> Result<Vec<VolumeMount>, serde_json::Error> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(text)
}

#[cfg(test)]
mod tests;

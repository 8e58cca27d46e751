//! `Idempotency-Key` on `POST /api/v1/jobs`: the same key from the same user within 24 h
//! answers the first answer again and creates nothing; the same key with another body is
//! refused (`idempotency_key_reused`). The key row is written in the submission's own
//! transaction, so a job and its key exist together or not at all.
//! Spent keys are deleted by the watcher's leader, a batch at a time
//! ([`crate::watcher::retention`]).

use anteroom_shared::api::jobs::{Admission, JobBody};
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set};
use sha2::{Digest, Sha256};

use super::JobError;
use super::entity::idempotency_key as key_row;

/// How long a key is remembered.
pub fn retention() -> Duration {
    Duration::hours(24)
}

/// Checks the header's value: 1–255 visible ASCII characters (a UUID is typical).
pub fn check_key(key: &str) -> Result<&str, JobError> {
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(JobError::InvalidIdempotencyKey(
            "must be 1 to 255 visible ASCII characters",
        ));
    }
    Ok(key)
}

/// SHA-256 of the body as parsed (hex), so formatting and field order do not matter.
pub fn body_hash(body: &JobBody) -> String {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The key's row if it was used in the last 24 h.
pub async fn find(
    db: &impl ConnectionTrait,
    user: i64,
    key: &str,
    now: DateTime<Utc>,
) -> Result<Option<key_row::Model>, DbErr> {
    Ok(key_row::Entity::find_by_id((user, key.to_owned()))
        .one(db)
        .await?
        .filter(|row| row.created_at > now - retention()))
}

/// The first answer's admission, if the body is the same.
pub fn admission_of(first: &key_row::Model, hash: &str) -> Result<Admission, JobError> {
    if first.request_hash != hash {
        return Err(JobError::IdempotencyKeyReused);
    }
    serde_json::from_str(&first.admission)
        .map_err(|e| JobError::Db(DbErr::Custom(format!("unreadable stored admission: {e}"))))
}

/// Remembers a key with its job and admission, in the submission's transaction.
pub async fn insert(
    db: &impl ConnectionTrait,
    user: i64,
    key: &str,
    hash: &str,
    job_id: i64,
    admission: &Admission,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    // An expired use of the same key is not a reuse: it makes room for this one.
    key_row::Entity::delete_many()
        .filter(key_row::Column::UserId.eq(user))
        .filter(key_row::Column::Key.eq(key))
        .filter(key_row::Column::CreatedAt.lte(now - retention()))
        .exec(db)
        .await?;
    key_row::ActiveModel {
        user_id: Set(user),
        key: Set(key.to_owned()),
        request_hash: Set(hash.to_owned()),
        job_id: Set(job_id),
        admission: Set(serde_json::to_string(admission).map_err(|e| DbErr::Custom(e.to_string()))?),
        created_at: Set(now),
    }
    .insert(db)
    .await?;
    Ok(())
}

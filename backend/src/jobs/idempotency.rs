//! `Idempotency-Key` on `POST /api/v1/jobs`: the same key from the same user within 24 h
//! answers the first answer again and creates nothing; the same key with another body is
//! refused (`idempotency_key_reused`). The key row is written in the submission's own
//! transaction, so a job and its key exist together or not at all.

use anteroom_shared::api::jobs::{JobBody, SubmitResponse};
use chrono::{DateTime, Duration, Utc};
use sea_orm::sea_query::Expr;
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

/// The first answer again, if the body is the same.
pub fn replay(first: &key_row::Model, hash: &str) -> Result<SubmitResponse, JobError> {
    if first.request_hash != hash {
        return Err(JobError::IdempotencyKeyReused);
    }
    serde_json::from_str(&first.response)
        .map_err(|e| JobError::Db(DbErr::Custom(format!("unreadable stored answer: {e}"))))
}

/// Remembers a key with the answer known at commit time; [`store_response`] replaces it with
/// the final answer once activation has run. Expired keys are dropped on the way.
pub async fn insert(
    db: &impl ConnectionTrait,
    user: i64,
    key: &str,
    hash: &str,
    response: &SubmitResponse,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    key_row::Entity::delete_many()
        .filter(key_row::Column::CreatedAt.lte(now - retention()))
        .exec(db)
        .await?;
    key_row::ActiveModel {
        user_id: Set(user),
        key: Set(key.to_owned()),
        request_hash: Set(hash.to_owned()),
        job_id: Set(response.job.id),
        response: Set(serde_json::to_string(response).map_err(|e| DbErr::Custom(e.to_string()))?),
        created_at: Set(now),
    }
    .insert(db)
    .await?;
    Ok(())
}

/// Stores the final answer of a keyed submission.
pub async fn store_response(
    db: &impl ConnectionTrait,
    user: i64,
    key: &str,
    response: &SubmitResponse,
) -> Result<(), DbErr> {
    let text = serde_json::to_string(response).map_err(|e| DbErr::Custom(e.to_string()))?;
    key_row::Entity::update_many()
        .col_expr(key_row::Column::Response, Expr::value(text))
        .filter(key_row::Column::UserId.eq(user))
        .filter(key_row::Column::Key.eq(key))
        .exec(db)
        .await?;
    Ok(())
}

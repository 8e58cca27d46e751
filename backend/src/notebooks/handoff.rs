//! The one-time handoff from the portal to a notebook's origin: the portal stores a code's hash
//! with who may open which job (`POST /api/v1/jobs/{id}/notebook`), the notebook origin claims
//! it once (`GET /_anteroom/handoff?code=…`) and sets its own cookie. A code is 32 random bytes,
//! good for [`HANDOFF_LIFETIME`], and only its SHA-256 is stored; a claim deletes the row, and
//! only the claim that deleted it counts, so two browsers (or replicas) racing on one code get
//! one notebook session between them.

use chrono::{DateTime, Duration, Utc};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set};
use sha2::{Digest, Sha256};

/// How long a handoff link works: long enough for a browser to follow a redirect, too short to
/// be worth stealing from a screen or a log.
pub const HANDOFF_LIFETIME: Duration = Duration::seconds(60);

/// The `notebook_handoffs` table (migration 27).
pub mod entity {
    use sea_orm::entity::prelude::*;

    /// A handoff not yet claimed.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "notebook_handoffs")]
    pub struct Model {
        /// Id.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// SHA-256 of the code, hex.
        pub code_hash: String,
        /// The job whose notebook it opens.
        pub job_id: i64,
        /// The viewer.
        pub user_id: i64,
        /// The viewer's token version when it was made.
        pub user_version: i64,
        /// An admin's confirmed opening of someone else's notebook.
        pub as_admin: bool,
        /// When the portal session it came from expires: the notebook cookie dies with it.
        pub session_expires_at: DateTimeUtc,
        /// When the code stops working.
        pub expires_at: DateTimeUtc,
    }

    /// None.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// What a handoff carries over to the notebook origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handoff {
    /// The job.
    pub job_id: i64,
    /// The viewer.
    pub user_id: i64,
    /// The viewer's token version at the handoff.
    pub user_version: i64,
    /// Opened as an admin, confirmed.
    pub as_admin: bool,
    /// When the portal session expires.
    pub session_expires_at: DateTime<Utc>,
}

fn hash(code: &str) -> String {
    Sha256::digest(code.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Stores `handoff` under a new code, good until `now` + [`HANDOFF_LIFETIME`]; returns the code
/// and its expiry. Expired codes are removed on the way.
pub async fn create(
    db: &impl ConnectionTrait,
    handoff: Handoff,
    now: DateTime<Utc>,
) -> Result<(String, DateTime<Utc>), DbErr> {
    use rand::RngCore;
    entity::Entity::delete_many()
        .filter(entity::Column::ExpiresAt.lte(now))
        .exec(db)
        .await?;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let code: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let expires_at = now + HANDOFF_LIFETIME;
    entity::ActiveModel {
        code_hash: Set(hash(&code)),
        job_id: Set(handoff.job_id),
        user_id: Set(handoff.user_id),
        user_version: Set(handoff.user_version),
        as_admin: Set(handoff.as_admin),
        session_expires_at: Set(handoff.session_expires_at),
        expires_at: Set(expires_at),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok((code, expires_at))
}

/// Claims `code` for job `job_id` at `now`: the handoff when the code is known, unexpired, for
/// that job and not claimed before; `None` otherwise. A code is deleted by its claim whatever
/// the outcome, so it can never be tried twice.
pub async fn claim(
    db: &impl ConnectionTrait,
    code: &str,
    job_id: i64,
    now: DateTime<Utc>,
) -> Result<Option<Handoff>, DbErr> {
    if code.len() != 64 || !code.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let Some(row) = entity::Entity::find()
        .filter(entity::Column::CodeHash.eq(hash(code)))
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    // The delete is the claim: of two claims racing on one code only one deletes the row.
    let deleted = entity::Entity::delete_by_id(row.id).exec(db).await?.rows_affected;
    if deleted != 1 || row.expires_at <= now || row.job_id != job_id {
        return Ok(None);
    }
    Ok(Some(Handoff {
        job_id: row.job_id,
        user_id: row.user_id,
        user_version: row.user_version,
        as_admin: row.as_admin,
        session_expires_at: row.session_expires_at,
    }))
}

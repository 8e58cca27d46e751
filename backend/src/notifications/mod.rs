//! Notifications (issue 27): per-user webhook subscriptions told when a job starts, is
//! preempted, fails, finishes or has waited longer than the subscription says.
//!
//! Delivered at least once, in order per (subscription, job), through an **outbox**: what
//! happened is written to `webhook_deliveries` in the same transaction that records it (the
//! job's event, its status), so a crash can neither lose a notification nor send one for what
//! did not happen. The sender ([`sender`]) runs on the replica that holds the watcher's lease,
//! posts each due delivery signed with the subscription's secret ([`rules::signature`]), marks
//! it delivered on a 2xx, and otherwise tries again with backoff ([`rules::next_attempt`]) until
//! it gives up; a later delivery of the same (subscription, job) waits for the earlier one. A
//! crash after a post and before its mark sends it again: receivers drop repeats by the
//! `X-Anteroom-Delivery` id.
//!
//! Webhooks only go to host names and addresses the admins list ([`rules::Destination`],
//! checked when a subscription is made and again at each try; without a port, 80 and 443
//! only), and redirects are not followed, so a user cannot point the server at an arbitrary
//! address. The check is on addresses too: the name is resolved once, an address that is
//! loopback, link-local, private, CGNAT or the cluster's own is refused unless the admins
//! listed it exactly, and the connection goes to the checked address ([`rules::may_connect`],
//! [`sender`]). Deleting a user deletes their subscriptions and deliveries with them
//! ([`forget_owner`]).
//!
//! - `entity.rs`: the tables. `rules.rs`: allowlist, signature, backoff (pure).
//! - `sender.rs`: the sender. `handlers.rs`: the HTTP face.

pub mod entity;
pub mod handlers;
pub mod rules;
pub mod sender;

use anteroom_shared::api::notifications::NotifyOn;
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, Statement, Value};

/// Deletes the subscriptions of user `owner` and their deliveries, pending or sent: called in
/// the transaction that deletes the user, so nothing is sent for a user who is gone.
pub async fn forget_owner(db: &impl ConnectionTrait, owner: i64) -> Result<(), DbErr> {
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    entity::delivery::Entity::delete_many()
        .filter(entity::delivery::Column::OwnerId.eq(owner))
        .exec(db)
        .await?;
    entity::webhook::Entity::delete_many()
        .filter(entity::webhook::Column::OwnerId.eq(owner))
        .exec(db)
        .await?;
    Ok(())
}

/// `?` or `$n`: the `n`-th (1-based) placeholder of `backend`.
fn placeholder(backend: DbBackend, n: usize) -> String {
    match backend {
        DbBackend::Postgres => format!("${n}"),
        _ => "?".to_owned(),
    }
}

/// The `LIKE` pattern that finds `on` in a subscription's JSON array of events.
fn events_pattern(on: NotifyOn) -> String {
    format!("%\"{}\"%", on.as_str())
}

/// Outbox rows for what happened to `job_id` (owned by `owner_id`) at `at`, one per
/// subscription of the owner that asked for `on`; inside the caller's transaction.
pub async fn enqueue(
    txn: &impl ConnectionTrait,
    on: NotifyOn,
    job_id: i64,
    owner_id: i64,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    let p = |n| placeholder(backend, n);
    let sql = format!(
        "INSERT INTO webhook_deliveries (webhook_id, owner_id, job_id, event, created_at, attempts, next_attempt_at, given_up) \
         SELECT w.id, w.owner_id, {}, {}, {}, 0, NULL, {} FROM webhooks w WHERE w.owner_id = {} AND w.events LIKE {} ORDER BY w.id",
        p(1),
        p(2),
        p(3),
        p(4),
        p(5),
        p(6)
    );
    let values: Vec<Value> = vec![
        job_id.into(),
        on.as_str().into(),
        at.into(),
        false.into(),
        owner_id.into(),
        events_pattern(on).into(),
    ];
    txn.execute_raw(Statement::from_sql_and_values(backend, sql, values))
        .await?;
    Ok(())
}

/// [`enqueue`] for several jobs at once (status sync's batches), their owners read from
/// `jobs`.
pub async fn enqueue_jobs(
    txn: &impl ConnectionTrait,
    on: NotifyOn,
    job_ids: &[i64],
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    for chunk in job_ids.chunks(500) {
        let ids = chunk.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        let p = |n| placeholder(backend, n);
        // The ids are numbers written here, the rest bound.
        let sql = format!(
            "INSERT INTO webhook_deliveries (webhook_id, owner_id, job_id, event, created_at, attempts, next_attempt_at, given_up) \
             SELECT w.id, w.owner_id, j.id, {}, {}, 0, NULL, {} FROM jobs j JOIN webhooks w ON w.owner_id = j.owner_id \
             WHERE j.id IN ({ids}) AND w.events LIKE {} ORDER BY j.id, w.id",
            p(1),
            p(2),
            p(3),
            p(4)
        );
        let values: Vec<Value> = vec![on.as_str().into(), at.into(), false.into(), events_pattern(on).into()];
        txn.execute_raw(Statement::from_sql_and_values(backend, sql, values))
            .await?;
    }
    Ok(())
}

/// `waited` for every waiting job that has waited longer than a subscription of its owner
/// says (counted from its submission, which a requeued job keeps), once per (subscription,
/// job) — a unique index makes it once even when two senders run during a lease handover;
/// run by the watcher's leader.
pub async fn enqueue_waited(db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<u64, DbErr> {
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    let subscriptions = entity::webhook::Entity::find()
        .filter(entity::webhook::Column::WaitedSeconds.is_not_null())
        .filter(entity::webhook::Column::Events.like(events_pattern(NotifyOn::Waited)))
        .all(db)
        .await?;
    let backend = db.get_database_backend();
    let p = |n| placeholder(backend, n);
    let mut written = 0;
    for w in subscriptions {
        let Some(cutoff) = w
            .waited_seconds
            .and_then(chrono::Duration::try_seconds)
            .and_then(|d| now.checked_sub_signed(d))
        else {
            continue;
        };
        let sql = format!(
            "INSERT INTO webhook_deliveries (webhook_id, owner_id, job_id, event, created_at, attempts, next_attempt_at, given_up) \
             SELECT {}, {}, j.id, {}, {}, 0, NULL, {} FROM jobs j \
             WHERE j.owner_id = {} AND j.phase = 'Prequeue' AND j.submitted_at <= {} \
             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = {} AND d.job_id = j.id AND d.event = {}) \
             ORDER BY j.id ON CONFLICT DO NOTHING",
            p(1),
            p(2),
            p(3),
            p(4),
            p(5),
            p(6),
            p(7),
            p(8),
            p(9)
        );
        let values: Vec<Value> = vec![
            w.id.into(),
            w.owner_id.into(),
            NotifyOn::Waited.as_str().into(),
            now.into(),
            false.into(),
            w.owner_id.into(),
            cutoff.into(),
            w.id.into(),
            NotifyOn::Waited.as_str().into(),
        ];
        written += txn_rows(db, Statement::from_sql_and_values(backend, sql, values)).await?;
    }
    Ok(written)
}

async fn txn_rows(db: &impl ConnectionTrait, statement: Statement) -> Result<u64, DbErr> {
    Ok(db.execute_raw(statement).await?.rows_affected())
}

//! Job events: the timeline of each job (`spec/prequeue.md` §8) and the feed of the event
//! stream. Written in the same transaction as the change they describe, so the timeline and
//! the phase never disagree.

use anteroom_shared::api::jobs::JobEventItem;
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};

use super::entity::{event, job};

/// What happened to a job (the `kind` of an event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Accepted.
    Submitted,
    /// Parked in the prequeue, with its reasons.
    Prequeued,
    /// Created in the cluster.
    Activated,
    /// Its pods run (`Pending → Running` seen by status sync). Details: `nodes`.
    Started,
    /// A cluster create failed; it will be retried after a backoff.
    ActivationFailed,
    /// Gave up after too many failed creates, or the cluster reported a failure.
    Failed,
    /// Ended in the cluster (completed, aborted, terminated).
    Finished,
    /// Removed by its owner or an admin.
    Deleted,
    /// Removed by the watcher to make room for a timed-out normal job (named in the event).
    Preempted,
    /// Backfill jobs were preempted to make room for this timed-out job (named in the event).
    PreemptedFor,
    /// An admin lock set or changed.
    Locked,
    /// An admin lock removed.
    Unlocked,
    /// Back in the prequeue after a preemption, keeping its submission time.
    Requeued,
    /// Its requeue after a preemption refused: not admitted again (its queue closed to its
    /// owner, its request over a limit…); it stays `Preempted`. Details: `code`, `details`.
    RequeueRefused,
    /// Taken back for a job owed its queue's guarantee: it ran on borrowed room (§9); the
    /// event names the job and queue it made room for.
    Reclaimed,
    /// Borrowing jobs of other queues were reclaimed to give this job its queue's guarantee.
    ReclaimedFor,
}

impl EventKind {
    /// Every kind, in declaration order: for the check that each has its name in every
    /// language (`event.<kind>`, a key the web UI and `ar watch` build at run time, so no
    /// compile-time check sees it: `tests/tests/i18n_runtime_keys.rs`, which also checks that
    /// this list is as long as the match of [`EventKind::as_str`]).
    pub const ALL: [EventKind; 16] = [
        EventKind::Submitted,
        EventKind::Prequeued,
        EventKind::Activated,
        EventKind::Started,
        EventKind::ActivationFailed,
        EventKind::Failed,
        EventKind::Finished,
        EventKind::Deleted,
        EventKind::Preempted,
        EventKind::PreemptedFor,
        EventKind::Locked,
        EventKind::Unlocked,
        EventKind::Requeued,
        EventKind::RequeueRefused,
        EventKind::Reclaimed,
        EventKind::ReclaimedFor,
    ];

    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Submitted => "submitted",
            EventKind::Prequeued => "prequeued",
            EventKind::Activated => "activated",
            EventKind::Started => "started",
            EventKind::ActivationFailed => "activation_failed",
            EventKind::Failed => "failed",
            EventKind::Finished => "finished",
            EventKind::Deleted => "deleted",
            EventKind::Preempted => "preempted",
            EventKind::PreemptedFor => "preempted_for",
            EventKind::Locked => "locked",
            EventKind::Unlocked => "unlocked",
            EventKind::Requeued => "requeued",
            EventKind::RequeueRefused => "requeue_refused",
            EventKind::Reclaimed => "reclaimed",
            EventKind::ReclaimedFor => "reclaimed_for",
        }
    }
}

impl EventKind {
    /// The webhook notification this event is, if any (the outbox row is written with it, in
    /// the same transaction: `crate::notifications`).
    pub fn notification(self) -> Option<anteroom_shared::api::notifications::NotifyOn> {
        use anteroom_shared::api::notifications::NotifyOn;
        match self {
            EventKind::Failed => Some(NotifyOn::Failed),
            EventKind::Finished => Some(NotifyOn::Finished),
            EventKind::Preempted | EventKind::Reclaimed => Some(NotifyOn::Preempted),
            _ => None,
        }
    }
}

/// The key of an event's `details` that holds the cluster's own error text (a create's error,
/// Volcano's failure reason). It may name namespaces, nodes, admission webhooks or other
/// users' objects, so only admins read it: an owner gets the event's `details.code` and its
/// message, a sentence written by Anteroom.
pub const CLUSTER_ERROR_KEY: &str = "clusterError";

/// Who reads an event, which decides whether [`CLUSTER_ERROR_KEY`] is in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The job's owner (or anyone who is not an admin).
    Owner,
    /// An admin: everything, the cluster's own words included.
    Admin,
}

impl Audience {
    /// The audience `user` is.
    pub fn of(user: &crate::users::entity::Model) -> Self {
        match crate::users::role_of(user) {
            anteroom_shared::api::Role::Admin => Audience::Admin,
            anteroom_shared::api::Role::User => Audience::Owner,
        }
    }
}

/// Appends an event to `job`'s timeline (and, for what subscriptions are told about, its
/// webhook deliveries to the outbox).
pub async fn record(
    db: &impl ConnectionTrait,
    job: &job::Model,
    kind: EventKind,
    message: impl Into<String>,
    details: Option<serde_json::Value>,
    at: DateTime<Utc>,
) -> Result<event::Model, DbErr> {
    if let Some(on) = kind.notification() {
        crate::notifications::enqueue(db, on, job.id, job.owner_id, at).await?;
    }
    event::ActiveModel {
        job_id: Set(job.id),
        owner_id: Set(job.owner_id),
        kind: Set(kind.as_str().to_string()),
        message: Set(message.into()),
        details: Set(details.map(|d| d.to_string())),
        created_at: Set(at),
        ..Default::default()
    }
    .insert(db)
    .await
}

/// Appends several events to `job`'s timeline in one statement, in order.
pub async fn record_all(
    db: &impl ConnectionTrait,
    job: &job::Model,
    entries: Vec<(EventKind, String, Option<serde_json::Value>)>,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    let events = entries
        .into_iter()
        .map(|(kind, message, details)| NewEvent::of(job, kind, message, details, at))
        .collect();
    record_each(db, events).await
}

/// An event not yet written: what [`record_each`] appends.
#[derive(Debug, Clone)]
pub struct NewEvent {
    job_id: i64,
    owner_id: i64,
    kind: EventKind,
    message: String,
    details: Option<serde_json::Value>,
    at: DateTime<Utc>,
}

impl NewEvent {
    /// An event of `job` at `at`.
    pub fn of(
        job: &job::Model,
        kind: EventKind,
        message: impl Into<String>,
        details: Option<serde_json::Value>,
        at: DateTime<Utc>,
    ) -> Self {
        NewEvent {
            job_id: job.id,
            owner_id: job.owner_id,
            kind,
            message: message.into(),
            details,
            at,
        }
    }
}

/// Appends events, to one job's timeline or several, in one statement (a few for thousands),
/// in order: a batch of submissions or activations writes its events together instead of a
/// statement a job.
pub async fn record_each(db: &impl ConnectionTrait, events: Vec<NewEvent>) -> Result<(), DbErr> {
    for e in &events {
        if let Some(on) = e.kind.notification() {
            crate::notifications::enqueue(db, on, e.job_id, e.owner_id, e.at).await?;
        }
    }
    let mut rows: Vec<event::ActiveModel> = events
        .into_iter()
        .map(|e| event::ActiveModel {
            job_id: Set(e.job_id),
            owner_id: Set(e.owner_id),
            kind: Set(e.kind.as_str().to_string()),
            message: Set(e.message),
            details: Set(e.details.map(|d| d.to_string())),
            created_at: Set(e.at),
            ..Default::default()
        })
        .collect();
    // Six values a row: 500 rows stay far below any store's limit on bound values.
    while !rows.is_empty() {
        let rest = rows.split_off(rows.len().min(500));
        event::Entity::insert_many(std::mem::replace(&mut rows, rest))
            .exec_without_returning(db)
            .await?;
    }
    Ok(())
}

/// The API view of an event for `audience`.
pub fn to_api(row: &event::Model, audience: Audience) -> JobEventItem {
    let mut details: Option<serde_json::Value> = row.details.as_deref().and_then(|d| serde_json::from_str(d).ok());
    if audience != Audience::Admin
        && let Some(serde_json::Value::Object(map)) = &mut details
    {
        map.remove(CLUSTER_ERROR_KEY);
    }
    JobEventItem {
        id: row.id,
        job_id: row.job_id,
        kind: row.kind.clone(),
        message: row.message.clone(),
        details,
        owner: None,
        phase: None,
        created_at: row.created_at,
    }
}

/// A job's timeline for `audience`, oldest first.
pub async fn of_job(db: &impl ConnectionTrait, job_id: i64, audience: Audience) -> Result<Vec<JobEventItem>, DbErr> {
    let rows = event::Entity::find()
        .filter(event::Column::JobId.eq(job_id))
        .order_by_asc(event::Column::Id)
        .all(db)
        .await?;
    Ok(rows.iter().map(|row| to_api(row, audience)).collect())
}

/// Which events a stream carries.
#[derive(Debug, Clone, Copy, Default)]
pub struct FeedFilter {
    /// Only this owner's jobs (always set for users; optional for admins).
    pub owner: Option<i64>,
    /// Only this job.
    pub job: Option<i64>,
}

/// Events after `after`, oldest first, at most `limit`.
pub async fn after(
    db: &impl ConnectionTrait,
    after: i64,
    filter: FeedFilter,
    limit: u64,
) -> Result<Vec<event::Model>, DbErr> {
    let mut query = event::Entity::find().filter(event::Column::Id.gt(after));
    if let Some(owner) = filter.owner {
        query = query.filter(event::Column::OwnerId.eq(owner));
    }
    if let Some(job) = filter.job {
        query = query.filter(event::Column::JobId.eq(job));
    }
    query.order_by_asc(event::Column::Id).limit(limit).all(db).await
}

/// The id of the oldest event written at or after `since`, if any.
pub async fn first_since(db: &impl ConnectionTrait, since: DateTime<Utc>) -> Result<Option<i64>, DbErr> {
    Ok(event::Entity::find()
        .filter(event::Column::CreatedAt.gte(since))
        .order_by_asc(event::Column::Id)
        .one(db)
        .await?
        .map(|e| e.id))
}

/// The id of the newest event (0 when there is none): where a stream without
/// `Last-Event-ID` starts.
pub async fn latest_id(db: &impl ConnectionTrait) -> Result<i64, DbErr> {
    Ok(event::Entity::find()
        .order_by_desc(event::Column::Id)
        .one(db)
        .await?
        .map_or(0, |e| e.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed_create() -> event::Model {
        event::Model {
            id: 1,
            job_id: 7,
            owner_id: 3,
            kind: EventKind::ActivationFailed.as_str().into(),
            message: "creating it in the cluster failed (attempt 1 of 10); retrying later".into(),
            details: Some(
                serde_json::json!({
                    "code": "cluster_create_failed",
                    CLUSTER_ERROR_KEY: "admission webhook \"quota.example.org\" denied the request",
                    "attempts": 1,
                })
                .to_string(),
            ),
            created_at: DateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn an_owner_reads_the_code_of_a_cluster_error_but_not_its_text() {
        let seen = to_api(&failed_create(), Audience::Owner);
        let details = seen.details.unwrap();
        assert_eq!(details["code"], "cluster_create_failed");
        assert_eq!(details["attempts"], 1);
        assert!(details.get(CLUSTER_ERROR_KEY).is_none(), "{details}");
        assert!(!seen.message.contains("webhook"));
    }

    #[test]
    fn an_admin_reads_the_cluster_s_own_words() {
        let seen = to_api(&failed_create(), Audience::Admin);
        let details = seen.details.unwrap();
        assert!(
            details[CLUSTER_ERROR_KEY].as_str().unwrap().contains("webhook"),
            "{details}"
        );
        assert_eq!(details["code"], "cluster_create_failed");
    }
}

//! What a submission writes (`spec/prequeue.md` §4 step 8): its job row, its first events,
//! and — for a batch of submissions — the job rows numbered and inserted together.

use anteroom_shared::api::jobs::{JobBody, WaitReason};
use anteroom_shared::scheduling::{
    JobPhase, ResourceList, ScheduleType, TaskResources, Toleration, is_single_node, job_explicit_nodes,
};
use chrono::{DateTime, Utc};
use sea_orm::{
    ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, EntityTrait, FromQueryResult, NotSet, Set, Statement,
    TryIntoModel,
};

use super::entity::job;
use super::events::{self, EventKind};
use super::wait_reason;
use crate::prequeue::SubmitDecision;
use crate::store::compact;
use crate::users;

/// The job rows of a batch of submissions ([`super::admit::Sequencer`]), written together in
/// multi-row statements instead of one statement a submission. Each row gets its id when it
/// is decided, and the decisions after it see it under that id:
///
/// - SQLite: the next the table would give. The batch's transaction holds SQLite's only write
///   lock, and `jobs` never reuses an id (AUTOINCREMENT), so the ids are exactly those of
///   writing each row at once.
/// - PostgreSQL: taken from the table's sequence when the batch starts, one per submission;
///   those of refused submissions are left unused, as a refused insert leaves its id.
///
/// Anything that reads the jobs table before the end of the batch (a decision that falls back
/// to the store) writes them first ([`BatchRows::write`]).
pub(super) struct BatchRows {
    /// The ids still to give, in order (the first at the end).
    ids: Vec<i64>,
    unwritten: Vec<job::ActiveModel>,
    /// The rows written so far, as the store returned them, by id.
    written: std::collections::HashMap<i64, job::Model>,
}

#[derive(FromQueryResult)]
struct NextId {
    next: i64,
}

#[derive(FromQueryResult)]
struct SequenceId {
    id: i64,
}

/// Most rows one statement of [`BatchRows::write`] inserts (about 30 values a row).
const ROWS_PER_INSERT: usize = 100;

impl BatchRows {
    /// Ready to number up to `rows` rows, inside the batch's write transaction.
    pub(super) async fn start(txn: &DatabaseTransaction, rows: usize) -> Result<BatchRows, DbErr> {
        let mut ids: Vec<i64> = if txn.get_database_backend() == DbBackend::Postgres {
            let sql =
                format!("SELECT nextval(pg_get_serial_sequence('jobs', 'id')) AS id FROM generate_series(1, {rows})");
            SequenceId::find_by_statement(Statement::from_string(DbBackend::Postgres, sql))
                .all(txn)
                .await?
                .into_iter()
                .map(|r| r.id)
                .collect()
        } else {
            // After the largest id the table has given.
            let sql = "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'jobs'), 0), \
                       coalesce((SELECT max(id) FROM jobs), 0)) + 1 AS next";
            let next = NextId::find_by_statement(Statement::from_string(DbBackend::Sqlite, sql))
                .one(txn)
                .await?
                .map_or(1, |r| r.next);
            (next..).take(rows).collect()
        };
        ids.sort_unstable_by(|a, b| b.cmp(a));
        Ok(BatchRows {
            ids,
            unwritten: Vec::new(),
            written: std::collections::HashMap::new(),
        })
    }

    /// Numbers `row` and keeps it to write; the row as it will be stored.
    pub(super) fn add(&mut self, mut row: job::ActiveModel) -> Result<job::Model, DbErr> {
        let id = self
            .ids
            .pop()
            .ok_or_else(|| DbErr::Custom("more rows than the batch's submissions".into()))?;
        row.id = Set(id);
        let model = row.clone().try_into_model()?;
        self.unwritten.push(row);
        Ok(model)
    }

    /// Writes the rows kept so far.
    pub(super) async fn write(&mut self, txn: &DatabaseTransaction) -> Result<(), DbErr> {
        while !self.unwritten.is_empty() {
            let rest = self.unwritten.split_off(self.unwritten.len().min(ROWS_PER_INSERT));
            let rows = std::mem::replace(&mut self.unwritten, rest);
            let stored = job::Entity::insert_many(rows).exec_with_returning(txn).await?;
            self.written.extend(stored.into_iter().map(|row| (row.id, row)));
        }
        Ok(())
    }

    /// Row `id` as the store returned it, once written.
    pub(super) fn take_written(&mut self, id: i64) -> Option<job::Model> {
        self.written.remove(&id)
    }
}

/// Step 8: the row (`Prequeue`, or `Activating` = claimed for the activation that follows),
/// not yet written, with its wait reasons when prequeued ([`first_events`] turns them into its
/// first events).
pub(super) fn job_row(
    (user, body, (runtime_limit, run_as_user)): (&users::entity::Model, &JobBody, (Option<i64>, Option<i64>)),
    (tasks, request, tolerations, mounts): (
        &[TaskResources],
        &ResourceList,
        &[Toleration],
        &[anteroom_shared::api::volumes::VolumeMount],
    ),
    decision: &SubmitDecision,
    config: &anteroom_shared::scheduling::PrequeueConfig,
    now: DateTime<Utc>,
) -> Result<(job::ActiveModel, Option<Vec<WaitReason>>), DbErr> {
    let normal = body.schedule_type == ScheduleType::Normal;
    let tolerance = normal.then_some(config.normal_job_waiting_tolerance_seconds);
    let reasons = match decision {
        SubmitDecision::Prequeued { reasons } => Some(reasons.iter().map(wait_reason).collect::<Vec<_>>()),
        SubmitDecision::Activated { .. } => None,
    };
    let borrowing = matches!(decision, SubmitDecision::Activated { borrowed } if !borrowed.is_empty());
    let waiting_since = crate::prequeue::starts_waiting_clock(decision).then_some(now);
    let phase = if reasons.is_some() {
        JobPhase::Prequeue
    } else {
        JobPhase::Activating
    };
    let row = job::ActiveModel {
        name: Set(body.name.clone()),
        kind: Set(body.kind.as_str().to_string()),
        queue: Set(body.queue.clone()),
        owner_id: Set(user.id),
        owner_name: Set(user.username.clone()),
        schedule_type: Set(body.schedule_type.as_str().to_string()),
        preemption_policy: Set(body.preemption_policy.unwrap_or_default().as_str().to_string()),
        phase: Set(phase.as_str().to_string()),
        waiting_tolerance_seconds: Set(tolerance),
        // The waiting clock starts at activation, or now if shared room holds it
        // (`spec/prequeue.md` §1); a job held by its owner's own quota has none yet.
        waiting_since: Set(waiting_since),
        timeout_at: Set(super::timeout_at(waiting_since, tolerance)),
        tasks: Set(json(&body.tasks)?),
        resources: Set(json(request)?),
        request_milli: Set(compact::encode_request(request)),
        explicit_nodes: Set(compact::encode_nodes(&job_explicit_nodes(tasks))),
        single_node: Set(is_single_node(tasks)),
        nodes: Set("[]".to_string()),
        wait_reasons: Set(reasons.as_ref().map(json).transpose()?),
        submitted_at: Set(now),
        activated_at: Set(None),
        started_at: Set(None),
        finished_at: Set(None),
        locked_until: Set(None),
        updated_at: Set(now),
        claimed_at: Set((phase == JobPhase::Activating).then_some(now)),
        attempts: Set(0),
        next_attempt_at: Set(None),
        last_error: Set(None),
        // Random, so an `ar-<id>` left by another job of the same id (a restored or rolled-back
        // database) is never taken for this one's.
        cluster_uid: Set(Some(job::new_cluster_uid())),
        tolerations: Set(crate::tolerations::encode(tolerations)?),
        volumes: Set(crate::volumes::encode(mounts)?),
        cluster_preemptable: Set(None),
        failure: Set(None),
        max_runtime_seconds: Set(runtime_limit),
        // What its queue says now: its pods keep it, whatever the queue becomes.
        run_as_user: Set(run_as_user),
        requeue: Set(body.requeue.unwrap_or(config.requeue_by_default)),
        requeues: Set(0),
        priority: Set(body.priority.unwrap_or(0)),
        borrow_never: Set(body.borrow == Some(anteroom_shared::scheduling::BorrowPolicy::Never)),
        borrowing: Set(borrowing),
        id: NotSet,
    };
    Ok((row, reasons))
}

/// A new job's first events: `submitted`, and `prequeued` with its reasons.
pub(super) fn first_events(
    row: &job::Model,
    reasons: Option<Vec<WaitReason>>,
    now: DateTime<Utc>,
) -> Vec<events::NewEvent> {
    let mut first = vec![events::NewEvent::of(
        row,
        EventKind::Submitted,
        format!("submitted to queue {:?}", row.queue),
        Some(serde_json::json!({ "queue": row.queue })),
        now,
    )];
    if let Some(reasons) = reasons {
        let message = reasons
            .iter()
            .map(|r| r.message.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        first.push(events::NewEvent::of(
            row,
            EventKind::Prequeued,
            format!("waiting in the prequeue: {message}"),
            Some(serde_json::json!({ "reasons": reasons })),
            now,
        ));
    }
    first
}

pub(super) fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, DbErr> {
    serde_json::to_string(value).map_err(|e| DbErr::Custom(format!("serializing a job: {e}")))
}

//! Steps 2–8 of a submission under the queue tree's turn (`spec/prequeue.md` §4 step 8): the
//! access check again, the idempotency key, the decision and the writes, in a write
//! transaction.
//!
//! The [`Sequencer`]: one task admits every submission waiting at that moment, in arrival
//! order, in one transaction. Each sees the ones before it (they are in the same transaction),
//! so the decisions are exactly those of one-at-a-time — but the transaction's start, its
//! commit, the queue read and the hand-over of the connection are paid once per batch instead
//! of once per submission (see `docs/performance.md`). What the batch's decisions read (quota
//! rules, usage, blockers, the owners' counts, memberships) is read once for the batch and
//! kept up to date with its admissions (`batch_reads.rs`). What keeps anything else from
//! changing those figures meanwhile:
//!
//! - SQLite: the database has one writer, and the batch's transaction holds it from its start.
//! - PostgreSQL (several replicas, each with its own sequencer): the batch holds the advisory
//!   locks of every queue tree it submits into and of every owner it admits for, which every
//!   other decision in those trees (another replica's batch, the watcher's activations, queue
//!   writes) takes too. Jobs that end meanwhile only free room, as they did for a submission
//!   that read a moment earlier.

use anteroom_shared::api::jobs::{Admission, Decision, JobBody, WaitReason};
use anteroom_shared::scheduling::{
    JobPhase, ResourceList, ScheduleType, TaskResources, Toleration, TolerationRuleSpec, job_tolerations,
};
use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr, EntityTrait,
    PaginatorTrait, QueryFilter, QuerySelect,
};
use tokio::sync::{mpsc, oneshot};

use super::batch_reads::BatchReads;
use super::entity::{idempotency_key, job};
use super::events;
pub use super::pending::{OwnerCounts, Pending};
use super::submission_rows::{BatchRows, first_events, job_row};
use super::{JobError, SchedulingRow, idempotency, wait_reason};
use crate::prequeue::{NodeSnapshot, QueueSpec, QueueTree, Snapshot, Submission, SubmitDecision, decide_submission};
use crate::queues::{self, entity::queue};
use crate::{quotas, users};

/// What became of a submission under the lock.
#[derive(Debug)]
pub enum Admitted {
    /// Written: the row (`Prequeue` or `Activating`), the decision and the admission.
    New {
        /// The row (boxed: this enum travels through a channel).
        row: Box<job::Model>,
        /// The core's decision.
        decision: SubmitDecision,
        /// The decision as the API answers it.
        admission: Admission,
    },
    /// The key was used before: the first answer is to be replayed.
    Replay(idempotency_key::Model),
}

/// Where a decision's figures come from, and where its row and events go.
pub(super) enum Reads<'b> {
    /// The store, read for this submission alone, its row and events written at once: the
    /// reference the batch's decisions are tested against (`batch_reads::tests`).
    #[cfg(test)]
    Store,
    /// Read once for the batch and kept up to date with it ([`Sequencer`]); the rows and
    /// events are collected, and the batch writes them together.
    Batch {
        /// The batch's figures.
        figures: &'b mut BatchReads,
        /// The admin's toleration rules, read once for the batch.
        rules: &'b [TolerationRuleSpec],
        /// The events of the batch's submissions so far, in order.
        events: &'b mut Vec<events::NewEvent>,
        /// The batch's job rows, numbered and written together.
        rows: &'b mut BatchRows,
    },
}

/// Steps 2–8 for one submission inside `txn`, against the queue rows read in it.
pub(super) async fn admit_one(
    txn: &DatabaseTransaction,
    rows: &[queue::Model],
    (specs, tree): (&[QueueSpec], &QueueTree),
    p: &Pending,
    now: DateTime<Utc>,
    mut reads: Reads<'_>,
) -> Result<Admitted, JobError> {
    // Step 2 again under the lock: the queue may have been deleted, or the caller removed from
    // it, since the first check.
    match &reads {
        #[cfg(test)]
        Reads::Store => queues::usable_among(txn, rows, &p.user, &p.body.queue).await?,
        Reads::Batch { figures, .. } => figures.usable(rows, &p.user, &p.body.queue)?,
    }
    if let Some((key, _)) = &p.key
        && let Some(first) = idempotency::find(txn, p.user.id, key, now).await?
    {
        return Ok(Admitted::Replay(first));
    }
    let from_batch = match &mut reads {
        Reads::Batch { figures, .. } => {
            let read = figures.snapshot(p, specs, tree, now);
            figures.fallbacks += usize::from(read.is_none());
            read
        }
        #[cfg(test)]
        Reads::Store => None,
    };
    let (snapshot, prequeued) = match from_batch {
        Some(read) => read,
        None => {
            // Irrefutable outside tests, where `Reads::Store` does not exist.
            #[allow(irrefutable_let_patterns)]
            if let Reads::Batch { rows, .. } = &mut reads {
                // The store is read: it must hold the batch's rows so far.
                rows.write(txn).await?;
            }
            decision_snapshot(
                txn,
                p.config.clone(),
                p.nodes.clone(),
                specs,
                tree,
                p.user.id,
                &p.body.queue,
                now,
            )
            .await?
        }
    };
    let tolerations = match &reads {
        Reads::Batch { rules, .. } => tolerations_of(rules, tree, &p.body.queue, &p.request),
        #[cfg(test)]
        Reads::Store => tolerations_of(&crate::tolerations::specs(txn).await?, tree, &p.body.queue, &p.request),
    };
    let mounts = mounts_of(&p.catalogue, tree, &p.body)?;
    let runtime_limit = runtime_limit_in(rows, &p.body)?;
    let run_as_user = rows.iter().find(|r| r.name == p.body.queue).and_then(|r| r.run_as_user);
    let decision = decide_submission(
        &snapshot,
        tree,
        &submission(&p.user, &p.body, &p.tasks, &tolerations, prequeued),
        now,
    )?;
    let (new_row, reasons) = job_row(
        (&p.user, &p.body, (runtime_limit, run_as_user)),
        (&p.tasks, &p.request, &tolerations, &mounts),
        &decision,
        &p.config,
        now,
    )?;
    let row = match &mut reads {
        Reads::Batch {
            figures, events, rows, ..
        } => {
            let row = rows.add(new_row)?;
            figures.admitted(&row)?;
            events.extend(first_events(&row, reasons, now));
            row
        }
        #[cfg(test)]
        Reads::Store => {
            use sea_orm::ActiveModelTrait;
            let row = new_row.insert(txn).await?;
            events::record_each(txn, first_events(&row, reasons, now)).await?;
            row
        }
    };
    let (word, reasons) = admission_parts(&decision);
    let borrowed = match &decision {
        SubmitDecision::Activated { borrowed } => borrowed.clone(),
        SubmitDecision::Prequeued { .. } => Vec::new(),
    };
    let admission = Admission {
        decision: word,
        reasons,
        borrowing: !borrowed.is_empty(),
        borrowed,
    };
    if let Some((key, hash)) = &p.key {
        idempotency::insert(txn, p.user.id, key, hash, row.id, &admission, now).await?;
    }
    Ok(Admitted::New {
        row: Box::new(row),
        decision,
        admission,
    })
}

/// The runtime limit a submission gets in its queue ([`QueueBody::runtime_limit`]); a limit
/// above the queue's maximum is refused as the body's own fault (422), before anything is
/// written.
///
/// [`QueueBody::runtime_limit`]: anteroom_shared::api::queues::QueueBody::runtime_limit
fn runtime_limit_in(rows: &[queue::Model], body: &JobBody) -> Result<Option<i64>, JobError> {
    let row = rows.iter().find(|r| r.name == body.queue);
    let (default, max) = row.map_or((None, None), |r| (r.default_runtime_seconds, r.max_runtime_seconds));
    anteroom_shared::api::queues::QueueBody::runtime_limit(default, max, body.max_runtime_seconds).map_err(|max| {
        JobError::Invalid(vec![(
            "maxRuntimeSeconds".into(),
            crate::field_rule::Rule::with(
                "runtimeAboveQueueMax",
                format!("this queue allows at most {max} seconds"),
                serde_json::json!({ "max": max }),
            ),
        )])
    })
}

/// Most submissions admitted in one transaction.
const MAX_BATCH: usize = 64;

pub(super) type Reply = oneshot::Sender<Result<Admitted, JobError>>;

/// The admission task: submissions queue here and are admitted in batches.
#[derive(Debug, Clone)]
pub struct Sequencer {
    queue: mpsc::Sender<(Pending, Reply)>,
}

impl Sequencer {
    /// Starts the task on `db` (SQLite's writer, or PostgreSQL's pool). It ends when the last
    /// handle is dropped.
    pub fn start(db: DatabaseConnection) -> Sequencer {
        let (tx, rx) = mpsc::channel(4 * MAX_BATCH);
        tokio::spawn(run(db, rx));
        Sequencer { queue: tx }
    }

    /// Admits `p` in the next batch.
    pub async fn admit(&self, p: Pending) -> Result<Admitted, JobError> {
        let (reply, answer) = oneshot::channel();
        let closed = || JobError::Db(DbErr::Custom("the admission task has stopped".into()));
        self.queue.send((p, reply)).await.map_err(|_| closed())?;
        answer.await.map_err(|_| closed())?
    }
}

async fn run(db: DatabaseConnection, mut rx: mpsc::Receiver<(Pending, Reply)>) {
    use futures::FutureExt;
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        // A panic fails this batch (its transaction is dropped, so nothing of it is written),
        // not every submission after it.
        let results = match std::panic::AssertUnwindSafe(admit_batch(&db, &batch))
            .catch_unwind()
            .await
        {
            Ok((results, fallbacks)) => {
                if fallbacks > 0 {
                    tracing::debug!(fallbacks, "submissions of a batch read the store for their decision");
                }
                results
            }
            Err(_) => {
                tracing::error!(submissions = batch.len(), "admitting a batch of submissions panicked");
                batch
                    .iter()
                    .map(|_| Err(JobError::Db(DbErr::Custom("admitting the submission failed".into()))))
                    .collect()
            }
        };
        for ((_, reply), result) in batch.drain(..).zip(results) {
            let _ = reply.send(result);
        }
    }
}

/// Admits a batch in one transaction; a database error fails the whole batch (nothing of it
/// is committed), a refusal fails only its submission (a refusal writes nothing). With the
/// results, how many submissions read the store for their decision instead of the batch's
/// figures ([`BatchReads::snapshot`]).
pub(super) async fn admit_batch(
    db: &DatabaseConnection,
    batch: &[(Pending, Reply)],
) -> (Vec<Result<Admitted, JobError>>, usize) {
    let fail_all = |e: DbErr| -> (Vec<Result<Admitted, JobError>>, usize) {
        let message = e.to_string();
        let unavailable = crate::store::is_unavailable(&e);
        let failed = batch
            .iter()
            .map(|_| {
                Err(JobError::Db(if unavailable {
                    DbErr::Conn(sea_orm::RuntimeErr::Internal(message.clone()))
                } else {
                    DbErr::Custom(message.clone())
                }))
            })
            .collect();
        (failed, 0)
    };
    let (txn, rows, specs, tree) = match under_locks(db, batch).await {
        Ok(locked) => locked,
        Err(e) => return fail_all(e),
    };
    let live: Vec<&Pending> = batch
        .iter()
        .filter(|(_, reply)| !reply.is_closed())
        .map(|(p, _)| p)
        .collect();
    let now = live.first().map_or_else(Utc::now, |p| p.clock.now());
    let mut reads = match BatchReads::read(&txn, &rows, (&specs, &tree), &live, now).await {
        Ok(reads) => reads,
        Err(e) => return fail_all(e),
    };
    let rules = match crate::tolerations::specs(&txn).await {
        Ok(rules) => rules,
        Err(e) => return fail_all(e),
    };
    let mut events = Vec::new();
    let mut new_rows = match BatchRows::start(&txn, batch.len()).await {
        Ok(rows) => rows,
        Err(e) => return fail_all(e),
    };
    let mut results = Vec::with_capacity(batch.len());
    for (p, reply) in batch {
        if reply.is_closed() {
            // The client hung up before its turn: nothing is written for it.
            results.push(Err(JobError::Db(DbErr::Custom("the request was cancelled".into()))));
            continue;
        }
        let reads = Reads::Batch {
            figures: &mut reads,
            rules: &rules,
            events: &mut events,
            rows: &mut new_rows,
        };
        match admit_one(&txn, &rows, (&specs, &tree), p, p.clock.now(), reads).await {
            // Any database error ends the batch: SQLite may have rolled the transaction back
            // already, and nothing after it may run outside one.
            Err(JobError::Db(e)) | Err(JobError::Queue(crate::queues::QueueError::Db(e))) => return fail_all(e),
            other => results.push(other),
        }
    }
    // The rows first: the events refer to them.
    if let Err(e) = new_rows.write(&txn).await {
        return fail_all(e);
    }
    if let Err(e) = events::record_each(&txn, events).await {
        return fail_all(e);
    }
    // Each answer carries its row as the store returned it.
    for result in &mut results {
        if let Ok(Admitted::New { row, .. }) = result
            && let Some(stored) = new_rows.take_written(row.id)
        {
            **row = stored;
        }
    }
    match txn.commit().await {
        Ok(()) => (results, reads.fallbacks),
        Err(e) => fail_all(e),
    }
}

/// The batch's write transaction, with the queue rows and tree it decides against. On
/// PostgreSQL it first holds the locks of every queue tree the batch submits into, then of
/// every owner in it, the roots by name and the owners by id (the order every holder of several takes them,
/// so no two wait for each other), and reads the queues again under them: a queue write may
/// have moved a queue to another tree between the first read and the locks. Then it starts
/// over, at most three times.
async fn under_locks(
    db: &DatabaseConnection,
    batch: &[(Pending, Reply)],
) -> Result<(DatabaseTransaction, Vec<queue::Model>, Vec<QueueSpec>, QueueTree), DbErr> {
    let roots_of = |tree: &QueueTree| -> std::collections::BTreeSet<String> {
        batch
            .iter()
            .map(|(p, _)| tree.turn_of(&p.body.queue).to_owned())
            .collect()
    };
    for _ in 0..3 {
        let txn = crate::store::write_transaction(db).await?;
        let rows = queues::all(&txn).await?;
        let (specs, tree) = queues::tree_of(&rows)?;
        if txn.get_database_backend() != DbBackend::Postgres {
            return Ok((txn, rows, specs, tree));
        }
        let roots = roots_of(&tree);
        for root in &roots {
            crate::store::lock_queue_tree(&txn, root).await?;
        }
        let owners: std::collections::BTreeSet<i64> = batch.iter().map(|(p, _)| p.user.id).collect();
        for owner in owners {
            crate::store::lock_named(&txn, &format!("anteroom-user:{owner}")).await?;
        }
        let rows = queues::all(&txn).await?;
        let (specs, tree) = queues::tree_of(&rows)?;
        if roots_of(&tree) == roots {
            return Ok((txn, rows, specs, tree));
        }
    }
    Err(DbErr::Custom(
        "the queue trees kept changing during the submissions".into(),
    ))
}

/// Everything one decision reads (`spec/prequeue.md` §4 steps 5–7), in a constant number of
/// queries: the queue tree, the quota rules and usage of the submitted queue's whole tree (only
/// when quotas are on), the timed-out jobs of the queue that may block it (only when blocking
/// is on) and the caller's prequeued and unfinished jobs (each up to its per-user maximum, for
/// step 6).
#[allow(clippy::too_many_arguments)]
pub(super) async fn decision_snapshot(
    db: &impl ConnectionTrait,
    config: anteroom_shared::scheduling::PrequeueConfig,
    nodes: Vec<NodeSnapshot>,
    specs: &[crate::prequeue::QueueSpec],
    tree: &QueueTree,
    owner: i64,
    queue: &str,
    now: DateTime<Utc>,
) -> Result<(Snapshot, OwnerCounts), DbErr> {
    let (quota_rules, usage) = if config.queue_quota_enabled {
        let root = tree.turn_of(queue).to_owned();
        let family: Vec<String> = specs
            .iter()
            .filter(|s| tree.turn_of(&s.name) == root)
            .map(|s| s.name.clone())
            .collect();
        (
            quotas::all(db).await?,
            queues::usage::usage_rows(db, Some(&family), None).await?,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let mut rows: Vec<SchedulingRow> = Vec::new();
    if config.blocking_enabled() {
        rows = SchedulingRow::select()
            .filter(job::Column::Queue.eq(queue))
            .filter(job::Column::Phase.is_in([JobPhase::Prequeue.as_str(), JobPhase::Pending.as_str()]))
            .filter(job::Column::ScheduleType.eq(ScheduleType::Normal.as_str()))
            .filter(job::Column::TimeoutAt.lt(now))
            .into_model::<SchedulingRow>()
            .all(db)
            .await?;
    }
    // Step 6 only needs to know whether the caller has reached the maximum: count at most that
    // many, whatever the backlog.
    let limit = u64::try_from(config.max_prequeued_jobs_per_user.max(1)).unwrap_or(u64::MAX);
    let owner_prequeued = job::Entity::find()
        .select_only()
        .column(job::Column::Id)
        .filter(job::Column::OwnerId.eq(owner))
        .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
        .limit(limit)
        .count(db)
        .await?;
    // Likewise the unfinished jobs (`maxUnfinishedJobsPerUser`), at most that many.
    let terminal: Vec<&str> = JobPhase::ALL
        .iter()
        .filter(|p| p.is_terminal())
        .map(|p| p.as_str())
        .collect();
    let limit = u64::try_from(config.max_unfinished_jobs_per_user.max(1)).unwrap_or(u64::MAX);
    let owner_unfinished = job::Entity::find()
        .select_only()
        .column(job::Column::Id)
        .filter(job::Column::OwnerId.eq(owner))
        .filter(job::Column::Phase.is_not_in(terminal))
        .limit(limit)
        .count(db)
        .await?;
    let jobs = rows
        .iter()
        .map(SchedulingRow::to_snapshot)
        .collect::<Result<Vec<_>, _>>()?;
    let snapshot = Snapshot {
        config,
        queues: specs.to_vec(),
        quotas: quota_rules,
        jobs,
        usage,
        nodes,
        preemptions_in_flight: Vec::new(),
        recent_plans: Vec::new(),
        history: Default::default(),
    };
    Ok((
        snapshot,
        OwnerCounts {
            prequeued: owner_prequeued,
            unfinished: owner_unfinished,
        },
    ))
}

/// The tolerations of a job in `queue` requesting `request` under `rules`
/// ([`job_tolerations`]): its queue's path to the root counts, so a team's sub-queues share the
/// team's nodes.
pub(super) fn tolerations_of(
    rules: &[TolerationRuleSpec],
    tree: &QueueTree,
    queue: &str,
    request: &ResourceList,
) -> Vec<Toleration> {
    job_tolerations(rules, &tree.names_to_root(queue), request)
}

/// The volumes the body names, resolved against `catalogue` for its queue's path to the root
/// (a volume offered to a queue is offered to its sub-queues).
pub(super) fn mounts_of(
    catalogue: &[anteroom_shared::api::volumes::Volume],
    tree: &QueueTree,
    body: &JobBody,
) -> Result<Vec<anteroom_shared::api::volumes::VolumeMount>, JobError> {
    Ok(crate::volumes::resolve(
        catalogue,
        &tree.names_to_root(&body.queue),
        &body.volumes,
    )?)
}

pub(super) fn submission<'a>(
    user: &users::entity::Model,
    body: &'a JobBody,
    tasks: &'a [TaskResources],
    tolerations: &'a [Toleration],
    counts: OwnerCounts,
) -> Submission<'a> {
    Submission {
        owner: user.id,
        queue: &body.queue,
        kind: body.kind,
        schedule_type: body.schedule_type,
        preemption_policy: body.preemption_policy.unwrap_or_default(),
        tasks,
        tolerations,
        borrow: body.borrow.unwrap_or_default(),
        priority: body.priority.unwrap_or(0),
        owner_prequeued: Some(counts.prequeued),
        owner_unfinished: Some(counts.unfinished),
    }
}

pub(super) fn admission_parts(decision: &SubmitDecision) -> (Decision, Vec<WaitReason>) {
    match decision {
        SubmitDecision::Activated { .. } => (Decision::Activated, Vec::new()),
        SubmitDecision::Prequeued { reasons } => (Decision::Prequeued, reasons.iter().map(wait_reason).collect()),
    }
}

//! Requeue after preemption (issue 27): a preempted Elastic job that asked for it (`requeue`,
//! within the admin's `maxRequeues`) goes back to the prequeue once its pods are gone.
//!
//! The decision is taken when the job is preempted and stored with the preemption
//! (`preemptions.requeue`); the job stays `Preempted` while its pods use the grace period to
//! checkpoint. When status sync sees the pods gone, one transaction moves the job back to
//! `Prequeue` (compare-and-set on `Preempted`), keeping its submission time — so FCFS puts it
//! where it stood — clears what belonged to the run that ended, gives it a new cluster uid
//! (the next run is a new object), counts the requeue, writes a `requeued` event, and marks the
//! preemption gone. A crash before the commit leaves the preemption in flight: the next
//! status event or resync sees the pods gone again and does it then; after the commit the
//! compare-and-set finds nothing to do. The next run's containers get `ANTEROOM_PREEMPTED=1`
//! ([`crate::cluster::JobSpec::preempted_before`]).
//!
//! Back in the prequeue, the job is **admitted again like a new submission** (`spec/prequeue.md`
//! §6), in the same transaction: its owner must still be allowed its queue (the queue exists,
//! and is open or has them as a member), and its request alone must still pass what a
//! submission's does (backfill still enabled, a placement on the nodes, the queue's per-user
//! limits and capacities: [`crate::prequeue::check_request_alone`]). A refusal leaves it
//! `Preempted` for good, with a `requeue_refused` event giving the refusal's code and details
//! (the UI says it in the reader's language). The limits on how many jobs a user holds do not
//! apply: the job was counted all along.

use std::str::FromStr;

use anteroom_shared::api::jobs::TaskBody;
use anteroom_shared::scheduling::{JobKind, JobPhase, ScheduleType, TaskResources};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};
use serde_json::json;

use super::entity::preemption;
use crate::cluster::Cluster;
use crate::jobs::entity::job;
use crate::jobs::events::{self, EventKind};
use crate::prequeue::{NodeSnapshot, Snapshot, Submission, SubmitRejection};
use crate::queues::QueueError;

/// The preempted job `id`'s pods are gone: marks its preemption gone and, if it was to be
/// requeued, admits it again and sends it back to the prequeue or ends its requeue with the
/// refusal, in one transaction. Answers whether the job changed: requeued (then the watcher has
/// a new waiting job to consider) or refused (a new event to stream). The cluster's nodes are read first, outside the transaction, and
/// only for a job to be requeued.
pub async fn pods_gone(
    db: &DatabaseConnection,
    cluster: &dyn Cluster,
    id: i64,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let requeuing = preemption::Entity::find_by_id(id)
        .filter(preemption::Column::GoneAt.is_null())
        .one(db)
        .await?
        .is_some_and(|p| p.requeue);
    let nodes = if requeuing {
        // A status that cannot be stored now is listed again by the next resync.
        cluster
            .nodes()
            .await
            .map_err(|e| DbErr::Custom(format!("reading the cluster's nodes to requeue job {id}: {e}")))?
    } else {
        Vec::new()
    };
    let txn = crate::store::write_transaction(db).await?;
    let wanted = preemption::Entity::find_by_id(id)
        .filter(preemption::Column::GoneAt.is_null())
        .one(&txn)
        .await?
        .is_some_and(|p| p.requeue);
    preemption::Entity::update_many()
        .col_expr(preemption::Column::GoneAt, Expr::value(at))
        .filter(preemption::Column::VictimId.eq(id))
        .filter(preemption::Column::GoneAt.is_null())
        .exec(&txn)
        .await?;
    if wanted && !requeuing {
        // Requeued between the two reads (not by this path): no nodes were read for it.
        return Err(DbErr::Custom(format!(
            "job {id}: its preemption changed while it was read; tried again at the next resync"
        )));
    }
    let outcome = if wanted {
        requeue(&txn, id, &nodes, at).await?
    } else {
        Outcome::Unchanged
    };
    txn.commit().await?;
    match outcome {
        Outcome::Requeued => super::metrics::requeued(),
        Outcome::Refused(code) => super::metrics::requeue_refused(code),
        Outcome::Unchanged => {}
    }
    Ok(outcome != Outcome::Unchanged)
}

/// What a requeue did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Back in the prequeue.
    Requeued,
    /// Not admitted again, for this code: it stays `Preempted`.
    Refused(&'static str),
    /// No longer `Preempted` (deleted meanwhile, or requeued already).
    Unchanged,
}

/// `Preempted → Prequeue` for `id`, with its event, if it is admitted again; else its
/// `requeue_refused` event.
async fn requeue(
    txn: &sea_orm::DatabaseTransaction,
    id: i64,
    nodes: &[NodeSnapshot],
    at: DateTime<Utc>,
) -> Result<Outcome, DbErr> {
    let Some(row) = job::Entity::find_by_id(id)
        .filter(job::Column::Phase.eq(JobPhase::Preempted.as_str()))
        .one(txn)
        .await?
    else {
        return Ok(Outcome::Unchanged);
    };
    if let Some(refusal) = readmission_refusal(txn, &row, nodes).await? {
        events::record(
            txn,
            &row,
            EventKind::RequeueRefused,
            format!("not requeued: {}", refusal.message),
            Some(json!({ "code": refusal.code, "details": refusal.details })),
            at,
        )
        .await?;
        return Ok(Outcome::Refused(refusal.code));
    }
    let requeues = row.requeues.saturating_add(1);
    let updated = job::Entity::update_many()
        .col_expr(job::Column::Phase, Expr::value(JobPhase::Prequeue.as_str()))
        .col_expr(job::Column::Requeues, Expr::value(requeues))
        // Admitted again, it is told anew whether it borrows.
        .col_expr(job::Column::Borrowing, Expr::value(false))
        .col_expr(job::Column::FinishedAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(job::Column::ActivatedAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(job::Column::StartedAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(job::Column::ClaimedAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(job::Column::NextAttemptAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(job::Column::Attempts, Expr::value(0))
        .col_expr(job::Column::LastError, Expr::value(Option::<String>::None))
        .col_expr(job::Column::Failure, Expr::value(Option::<String>::None))
        .col_expr(job::Column::Nodes, Expr::value("[]"))
        .col_expr(job::Column::WaitReasons, Expr::value(Option::<String>::None))
        // An Elastic job never times out: no waiting clock.
        .col_expr(job::Column::WaitingSince, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(job::Column::TimeoutAt, Expr::value(Option::<DateTime<Utc>>::None))
        .col_expr(job::Column::ClusterPreemptable, Expr::value(Option::<bool>::None))
        .col_expr(job::Column::ClusterUid, Expr::value(Some(job::new_cluster_uid())))
        .col_expr(job::Column::UpdatedAt, Expr::value(at))
        .filter(job::Column::Id.eq(id))
        .filter(job::Column::Phase.eq(JobPhase::Preempted.as_str()))
        .exec(txn)
        .await?;
    if updated.rows_affected == 0 {
        return Ok(Outcome::Unchanged);
    }
    events::record(
        txn,
        &row,
        EventKind::Requeued,
        format!(
            "back in the prequeue after its preemption (requeue {requeues}), keeping its place from its submission at {}",
            row.submitted_at.to_rfc3339()
        ),
        Some(serde_json::json!({ "requeues": requeues, "submittedAt": row.submitted_at })),
        at,
    )
    .await?;
    Ok(Outcome::Requeued)
}

/// Why a requeued job is not admitted again.
#[derive(Debug)]
struct Refusal {
    /// The API error code a new submission would get (`queue_forbidden`,
    /// `quota_request_exceeds_limit`, …).
    code: &'static str,
    /// English text.
    message: String,
    /// The refusal's details, as a submission's error would carry them.
    details: serde_json::Value,
}

/// Admits the preempted job `row` again as a new submission would be (module documentation);
/// `None` when it is.
async fn readmission_refusal(
    db: &impl ConnectionTrait,
    row: &job::Model,
    nodes: &[NodeSnapshot],
) -> Result<Option<Refusal>, DbErr> {
    let corrupt = |what: &str| DbErr::Custom(format!("job {}: unreadable {what}", row.id));
    let owner = crate::users::entity::Entity::find_by_id(row.owner_id).one(db).await?;
    let Some(owner) = owner else {
        return Ok(Some(Refusal {
            code: "queue_forbidden",
            message: "its owner no longer exists".into(),
            details: serde_json::Value::Null,
        }));
    };
    match crate::queues::usable(db, &owner, &row.queue).await {
        Ok(_) => {}
        Err(QueueError::NotFound(queue)) => {
            return Ok(Some(Refusal {
                code: "queue_not_found",
                message: format!("queue {queue:?} no longer exists"),
                details: json!({ "queue": queue }),
            }));
        }
        Err(QueueError::Forbidden(queue)) => {
            return Ok(Some(Refusal {
                code: "queue_forbidden",
                message: format!("its owner may no longer use queue {queue:?}"),
                details: json!({ "queue": queue }),
            }));
        }
        Err(QueueError::Db(e)) => return Err(e),
        Err(e) => return Err(DbErr::Custom(e.to_string())),
    }
    // The queue's runtime maximum, which may have been lowered since (a submission asking for
    // more is refused, 422 on the field).
    let queue = crate::queues::entity::queue::Entity::find_by_id(row.queue.clone())
        .one(db)
        .await?;
    let (default, max) = queue.map_or((None, None), |q| (q.default_runtime_seconds, q.max_runtime_seconds));
    if let Err(max) = anteroom_shared::api::queues::QueueBody::runtime_limit(default, max, row.max_runtime_seconds) {
        return Ok(Some(Refusal {
            code: "validation_failed",
            message: format!(
                "its runtime limit is above queue {:?}'s maximum of {max} seconds",
                row.queue
            ),
            details: json!({ "fields": [{
                "field": "maxRuntimeSeconds",
                "code": "runtimeAboveQueueMax",
                "message": format!("this queue allows at most {max} seconds"),
                "params": { "max": max },
            }] }),
        }));
    }
    let tasks: Vec<TaskBody> = serde_json::from_str(&row.tasks).map_err(|_| corrupt("tasks"))?;
    let tasks: Vec<TaskResources> = tasks.iter().map(TaskBody::scheduling).collect();
    let tolerations = crate::tolerations::decode(&row.tolerations).map_err(|_| corrupt("tolerations"))?;
    let (queues, tree) = crate::queues::tree(db).await?;
    let snapshot = Snapshot {
        config: crate::settings::read(db).await?,
        queues,
        quotas: crate::quotas::all(db).await?,
        nodes: nodes.to_vec(),
        ..Snapshot::default()
    };
    let submission = Submission {
        owner: owner.id,
        queue: &row.queue,
        kind: JobKind::from_str(&row.kind).map_err(|_| corrupt("kind"))?,
        schedule_type: ScheduleType::from_str(&row.schedule_type).map_err(|_| corrupt("schedule type"))?,
        preemption_policy: row
            .preemption_policy
            .parse()
            .map_err(|_| corrupt("preemption policy"))?,
        tasks: &tasks,
        tolerations: &tolerations,
        borrow: if row.borrow_never {
            anteroom_shared::scheduling::BorrowPolicy::Never
        } else {
            anteroom_shared::scheduling::BorrowPolicy::IfIdle
        },
        priority: row.priority,
        owner_prequeued: Some(0),
        owner_unfinished: Some(0),
    };
    Ok(crate::prequeue::check_request_alone(&snapshot, &tree, &submission)
        .err()
        .map(|rejection: SubmitRejection| Refusal {
            code: rejection.code(),
            message: rejection.to_string(),
            details: rejection.details(),
        }))
}

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

use anteroom_shared::scheduling::JobPhase;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};

use super::entity::preemption;
use crate::jobs::entity::job;
use crate::jobs::events::{self, EventKind};

/// The preempted job `id`'s pods are gone: marks its preemption gone and, if it was to be
/// requeued, sends it back to the prequeue, in one transaction. Answers whether it was
/// requeued (then the watcher has a new waiting job to consider).
pub async fn pods_gone(db: &DatabaseConnection, id: i64, at: DateTime<Utc>) -> Result<bool, DbErr> {
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
    let requeued = wanted && requeue(&txn, id, at).await?;
    txn.commit().await?;
    if requeued {
        super::metrics::requeued();
    }
    Ok(requeued)
}

/// `Preempted → Prequeue` for `id`, with its event; `false` when it is no longer `Preempted`.
async fn requeue(txn: &sea_orm::DatabaseTransaction, id: i64, at: DateTime<Utc>) -> Result<bool, DbErr> {
    let Some(row) = job::Entity::find_by_id(id)
        .filter(job::Column::Phase.eq(JobPhase::Preempted.as_str()))
        .one(txn)
        .await?
    else {
        return Ok(false);
    };
    let requeues = row.requeues.saturating_add(1);
    let updated = job::Entity::update_many()
        .col_expr(job::Column::Phase, Expr::value(JobPhase::Prequeue.as_str()))
        .col_expr(job::Column::Requeues, Expr::value(requeues))
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
        return Ok(false);
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
    Ok(true)
}

//! Status sync (`spec/prequeue.md` §5, "Status sync"): the cluster's job phases, pod nodes,
//! start times and failure reasons flow back to the store. A job that finishes or vanishes
//! wakes the watcher, since its quota is free again.

use std::str::FromStr;

use anteroom_shared::api::pods::JobFailure;
use anteroom_shared::scheduling::JobPhase;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};

use crate::cluster::{JobEvent, JobStatus, is_same_job};
use crate::jobs::encode_failure;
use crate::jobs::entity::job;
use crate::jobs::events::{self, EventKind};
use crate::signals::Signals;

/// What applying one observation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Nothing to change (unknown job, same state, or the store already past it).
    Nothing,
    /// Phase or nodes updated.
    Updated,
    /// The job reached a terminal phase: quota was freed.
    Finished,
    /// The store has the job deleted or failed, the cluster still runs it (a create that
    /// completed after the delete, whose clean-up failed): delete it there.
    Orphan,
}

/// Applies one cluster event to the store.
pub async fn apply(db: &DatabaseConnection, event: &JobEvent) -> Result<Applied, DbErr> {
    match event {
        JobEvent::Status(status) => apply_status(db, status).await,
        JobEvent::Gone { job_id, observed_at } => apply_gone(db, *job_id, *observed_at).await,
    }
}

/// How old a claim must be before status sync records the creation the activation path has
/// not (see [`apply`]): far above the milliseconds that path takes, far below a minute.
pub const RECORD_CREATION_AFTER_SECONDS: i64 = 5;

/// Phases the cluster may move a job out of. `Prequeue` is not in the cluster; terminal
/// phases, `Deleted` and `Preempted` included, are final in the store.
fn syncable(phase: JobPhase) -> bool {
    !phase.is_terminal() && phase != JobPhase::Prequeue
}

async fn apply_status(db: &DatabaseConnection, status: &JobStatus) -> Result<Applied, DbErr> {
    let Some(row) = job::Entity::find_by_id(status.job_id).one(db).await? else {
        return Ok(Applied::Nothing);
    };
    // An `ar-<id>` with another uid is another job that had this id (a restored or rolled-back
    // database): it neither records this job as created nor moves its phase, and it is no
    // orphan of this job's to delete.
    if !is_same_job(&row.uid_in_cluster(), status.cluster_uid.as_deref()) {
        tracing::debug!(job.id = row.id, "status of an object with another job's uid ignored");
        return Ok(Applied::Nothing);
    }
    let Ok(current) = JobPhase::from_str(&row.phase) else {
        return Ok(Applied::Nothing);
    };
    if matches!(current, JobPhase::Deleted | JobPhase::Failed) && !status.phase.is_terminal() {
        return Ok(Applied::Orphan);
    }
    if !syncable(current) {
        return Ok(Applied::Nothing);
    }
    // An `Activating` job seen in the cluster was created. The activation path records that
    // itself (`Pending` and its event) within milliseconds — unless it died first: then the
    // job could run, finish and be purged from the cluster before the repair re-drives it,
    // and run twice. So a creation still unrecorded once its claim is a few seconds old is
    // recorded here, by compare-and-set (earlier, the activation path is left to do it, so
    // its answer and its event stay its own).
    if current == JobPhase::Activating {
        let unrecorded = row.claimed_at.is_none_or(|claimed| {
            status.observed_at - claimed >= chrono::Duration::seconds(RECORD_CREATION_AFTER_SECONDS)
        });
        if !unrecorded || !record_created(db, &row).await? {
            return Ok(Applied::Nothing);
        }
        let Some(row) = job::Entity::find_by_id(status.job_id).one(db).await? else {
            return Ok(Applied::Nothing);
        };
        return apply_status_to(db, status, row, JobPhase::Pending).await;
    }
    apply_status_to(db, status, row, current).await
}

/// `Activating → Pending` with its `activated` event, because the cluster has the job.
async fn record_created(db: &DatabaseConnection, row: &job::Model) -> Result<bool, DbErr> {
    let txn = crate::store::write_transaction(db).await?;
    let now = Utc::now();
    let updated = job::Entity::update_many()
        .col_expr(job::Column::Phase, Expr::value(JobPhase::Pending.as_str()))
        .col_expr(job::Column::ActivatedAt, Expr::value(now))
        .col_expr(job::Column::UpdatedAt, Expr::value(now))
        .col_expr(job::Column::NextAttemptAt, Expr::value(Option::<DateTime<Utc>>::None))
        .filter(job::Column::Id.eq(row.id))
        .filter(job::Column::Phase.eq(JobPhase::Activating.as_str()))
        .exec(&txn)
        .await?;
    if updated.rows_affected == 0 {
        return Ok(false);
    }
    events::record(
        &txn,
        row,
        EventKind::Activated,
        format!(
            "created in the cluster as {} (seen by status sync)",
            crate::cluster::cluster_name(row.id)
        ),
        None,
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(true)
}

async fn apply_status_to(
    db: &DatabaseConnection,
    status: &JobStatus,
    row: job::Model,
    current: JobPhase,
) -> Result<Applied, DbErr> {
    let nodes = serde_json::to_string(&status.nodes).map_err(|e| DbErr::Custom(e.to_string()))?;
    if current == status.phase && row.nodes == nodes && row.started_at == status.started_at {
        return Ok(Applied::Nothing);
    }
    let txn = crate::store::write_transaction(db).await?;
    let finished = status.phase.is_terminal();
    let mut update = job::Entity::update_many()
        .col_expr(job::Column::Phase, Expr::value(status.phase.as_str()))
        .col_expr(job::Column::Nodes, Expr::value(nodes))
        .col_expr(job::Column::StartedAt, Expr::value(status.started_at))
        .col_expr(job::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(job::Column::Id.eq(row.id))
        // Compare-and-set: a delete or another observation may have moved it meanwhile.
        .filter(job::Column::Phase.eq(current.as_str()));
    if finished {
        update = update.col_expr(job::Column::FinishedAt, Expr::value(status.observed_at));
        if let Some(failure) = &status.failure {
            update = update.col_expr(job::Column::LastError, Expr::value(failure.clone()));
        }
        if let Some(pod) = &status.failed_pod {
            update = update.col_expr(job::Column::Failure, Expr::value(Some(encode_failure(pod))));
        }
    }
    if update.exec(&txn).await?.rows_affected == 0 {
        return Ok(Applied::Nothing);
    }
    if status.phase == JobPhase::Failed {
        axum_prometheus::metrics::counter!("anteroom_prequeue_failed_total", "cause" => "cluster").increment(1);
    }
    if finished {
        // Volcano's words go to admins only (`events::CLUSTER_ERROR_KEY`); the owner gets a code.
        let (kind, message, details) = match (status.phase, &status.failure) {
            (JobPhase::Failed, why) => (
                EventKind::Failed,
                match &status.failed_pod {
                    Some(pod) => format!("failed in the cluster: {}", pod.one_line()),
                    None => "failed in the cluster".to_string(),
                },
                // The pod, reason word and exit code are structured and the owner's to read;
                // Volcano's free text stays with admins.
                Some(serde_json::json!({
                    "code": "cluster_failed",
                    (events::CLUSTER_ERROR_KEY): why,
                    "failure": status.failed_pod,
                })),
            ),
            (phase, _) => (EventKind::Finished, format!("finished: {phase}"), None),
        };
        events::record(&txn, &row, kind, message, details, Utc::now()).await?;
    }
    txn.commit().await?;
    Ok(if finished { Applied::Finished } else { Applied::Updated })
}

/// A job no longer in the cluster: if the store still has it occupying, it ended without the
/// store hearing how (deleted by hand in the cluster, or its terminal status was missed).
async fn apply_gone(db: &DatabaseConnection, id: i64, observed_at: DateTime<Utc>) -> Result<Applied, DbErr> {
    // A preempted job's pods are gone: the room reserved on its node is free for everyone.
    super::preempt::mark_gone(db, id, observed_at).await?;
    let Some(row) = job::Entity::find_by_id(id).one(db).await? else {
        return Ok(Applied::Nothing);
    };
    let Ok(current) = JobPhase::from_str(&row.phase) else {
        return Ok(Applied::Nothing);
    };
    // `Activating`: the create may still be in flight; the activation path and the repair
    // of stale claims decide, not a disappearance seen now.
    if !syncable(current) || current == JobPhase::Activating {
        return Ok(Applied::Nothing);
    }
    let txn = crate::store::write_transaction(db).await?;
    let updated = job::Entity::update_many()
        .col_expr(job::Column::Phase, Expr::value(JobPhase::Failed.as_str()))
        .col_expr(job::Column::FinishedAt, Expr::value(observed_at))
        .col_expr(job::Column::LastError, Expr::value("the job vanished from the cluster"))
        .col_expr(
            job::Column::Failure,
            Expr::value(Some(encode_failure(&JobFailure {
                pod: None,
                reason: "Vanished".to_owned(),
                exit_code: None,
            }))),
        )
        .col_expr(job::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(job::Column::Id.eq(id))
        .filter(job::Column::Phase.eq(current.as_str()))
        .exec(&txn)
        .await?;
    if updated.rows_affected == 0 {
        return Ok(Applied::Nothing);
    }
    events::record(
        &txn,
        &row,
        EventKind::Failed,
        "the job vanished from the cluster",
        None,
        Utc::now(),
    )
    .await?;
    txn.commit().await?;
    Ok(Applied::Finished)
}

/// How often the whole cluster is listed again even when the stream did not lag: a status
/// that arrived while its job was still `Activating` in the store (the create and its `Pending`
/// write race the cluster's first events) is otherwise not seen again until the job changes.
pub const RESYNC_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// Lists every job in the cluster and applies each status; preempted jobs absent from the
/// listing are marked gone. Used at start, after a lagged stream, every [`RESYNC_EVERY`], and
/// by tests that step the simulation by hand.
pub async fn resync(
    db: &DatabaseConnection,
    cluster: &dyn crate::cluster::Cluster,
    signals: &Signals,
) -> Result<(), crate::cluster::ClusterError> {
    let statuses = cluster.job_statuses().await?;
    let present: std::collections::HashSet<i64> = statuses.iter().map(|s| s.job_id).collect();
    let now = statuses.iter().map(|s| s.observed_at).max().unwrap_or_else(Utc::now);
    for status in statuses {
        note(db, cluster, signals, &JobEvent::Status(status)).await;
    }
    if let Err(e) = super::preempt::mark_absent_gone(db, &present, now).await {
        tracing::warn!(error = %e, "marking preempted jobs gone after a resync failed");
    }
    Ok(())
}

/// Follows the cluster's status stream until shutdown, resyncing ([`resync`]) at start, every
/// [`RESYNC_EVERY`] and whenever the stream lagged; wakes the watcher when a job finished.
pub async fn run(db: DatabaseConnection, cluster: std::sync::Arc<dyn crate::cluster::Cluster>, signals: Signals) {
    let mut events = cluster.subscribe();
    let mut resync_due = true;
    let mut next_resync = tokio::time::Instant::now();
    loop {
        if resync_due {
            next_resync = tokio::time::Instant::now() + RESYNC_EVERY;
            match resync(&db, cluster.as_ref(), &signals).await {
                Ok(()) => resync_due = false,
                Err(e) => {
                    tracing::warn!(error = %e, "listing the cluster's jobs for a status resync failed");
                    tokio::select! {
                        () = tokio::time::sleep(std::time::Duration::from_secs(5)) => continue,
                        () = signals.closed() => return,
                    }
                }
            }
        }
        tokio::select! {
            received = events.recv() => match received {
                Ok(event) => note(&db, cluster.as_ref(), &signals, &event).await,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "the status stream lagged; resyncing");
                    resync_due = true;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            () = tokio::time::sleep_until(next_resync) => resync_due = true,
            () = signals.closed() => return,
        }
    }
}

async fn note(db: &DatabaseConnection, cluster: &dyn crate::cluster::Cluster, signals: &Signals, event: &JobEvent) {
    match apply(db, event).await {
        Ok(Applied::Finished) => {
            signals.events_written();
            signals.wake_watcher();
        }
        Ok(Applied::Orphan) => {
            if let JobEvent::Status(status) = event {
                tracing::warn!(
                    job = status.job_id,
                    "the cluster runs a job the store has ended; deleting it"
                );
                // The object observed: its own uid (an unlabelled one is a legacy job's).
                let uid = status
                    .cluster_uid
                    .clone()
                    .unwrap_or_else(|| crate::jobs::entity::job::legacy_cluster_uid(status.job_id));
                if let Err(e) = cluster
                    .delete_job(status.job_id, &uid, crate::jobs::DELETE_GRACE_SECONDS)
                    .await
                {
                    tracing::warn!(job = status.job_id, error = %e, "deleting an orphaned job failed; the next resync retries");
                }
            }
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "storing a cluster status failed"),
    }
}

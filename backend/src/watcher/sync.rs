//! Status sync (`spec/prequeue.md` §5, "Status sync"): the cluster's job phases, pod nodes,
//! start times and failure reasons flow back to the store. A job that finishes or vanishes
//! wakes the watcher, since its quota is free again.

use std::str::FromStr;

use anteroom_shared::api::pods::JobFailure;
use anteroom_shared::scheduling::JobPhase;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};

use crate::cluster::{Cluster, JobEvent, JobStatus, is_same_job};
use crate::jobs::encode_failure;
use crate::jobs::entity::job;
use crate::jobs::events::{self, EventKind};
use anteroom_shared::api::notifications::NotifyOn;

pub use self::following::{RESYNC_EVERY, resync, run};

mod following;

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
    /// The job is still `Activating` in the store: the cluster's event came before the
    /// activation path's `Pending` write (they race). Kept by the caller and applied again
    /// once that write has committed (`following.rs`), not dropped until the next resync.
    Parked,
}

/// Applies one cluster event to the store. `cluster` is asked only for its nodes, when a
/// preempted job's requeue admits it again.
pub async fn apply(db: &DatabaseConnection, cluster: &dyn Cluster, event: &JobEvent) -> Result<Applied, DbErr> {
    match event {
        JobEvent::Status(status) => apply_status(db, status).await,
        JobEvent::Gone { job_id, observed_at } => apply_gone(db, cluster, *job_id, *observed_at).await,
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
        if !unrecorded {
            return Ok(Applied::Parked);
        }
        // Whoever records the creation (here, or the activation path in between), the row
        // has moved on: the status applies to it as it is now.
        record_created(db, &row).await?;
        let Some(row) = job::Entity::find_by_id(status.job_id).one(db).await? else {
            return Ok(Applied::Nothing);
        };
        return match JobPhase::from_str(&row.phase) {
            Ok(JobPhase::Activating) => Ok(Applied::Parked),
            Ok(now) if syncable(now) => apply_status_to(db, status, row, now).await,
            _ => Ok(Applied::Nothing),
        };
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
        Some(serde_json::json!({ "clusterName": crate::cluster::cluster_name(row.id) })),
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
    let Some(nodes) = changed_nodes(status, &row, current)? else {
        return Ok(Applied::Nothing);
    };
    let txn = crate::store::write_transaction(db).await?;
    let applied = write_status(&txn, status, &row, current, nodes).await?;
    if applied != Applied::Nothing {
        txn.commit().await?;
        if status.phase == JobPhase::Failed {
            count_failed();
        }
    }
    Ok(applied)
}

/// The job's nodes as stored (JSON) when `status` changes anything of the row, `None` when the
/// store has it already.
fn changed_nodes(status: &JobStatus, row: &job::Model, current: JobPhase) -> Result<Option<String>, DbErr> {
    let nodes = serde_json::to_string(&status.nodes).map_err(|e| DbErr::Custom(e.to_string()))?;
    Ok((current != status.phase || row.nodes != nodes || row.started_at != status.started_at).then_some(nodes))
}

/// Writes `status` over the row read as `current` (compare-and-set on the phase) with its
/// event when the job ended, inside the caller's transaction.
async fn write_status(
    txn: &impl sea_orm::ConnectionTrait,
    status: &JobStatus,
    row: &job::Model,
    current: JobPhase,
    nodes: String,
) -> Result<Applied, DbErr> {
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
    if update.exec(txn).await?.rows_affected == 0 {
        return Ok(Applied::Nothing);
    }
    if status.phase == JobPhase::Running && current != JobPhase::Running {
        crate::notifications::enqueue(txn, NotifyOn::Started, row.id, row.owner_id, status.observed_at).await?;
        events::record_each(txn, vec![started_event(row, status)]).await?;
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
            (phase, _) => (
                EventKind::Finished,
                format!("finished: {phase}"),
                Some(serde_json::json!({ "phase": phase })),
            ),
        };
        events::record(txn, row, kind, message, details, Utc::now()).await?;
    }
    Ok(if finished { Applied::Finished } else { Applied::Updated })
}

/// The `started` event of `row` whose pods `status` sees running: in the same write as its
/// phase, stamped with the cluster's time.
fn started_event(row: &job::Model, status: &JobStatus) -> events::NewEvent {
    let message = match status.nodes.as_slice() {
        [] => "its pods run".to_owned(),
        nodes => format!("its pods run on {}", nodes.join(", ")),
    };
    let details = serde_json::json!({ "nodes": status.nodes });
    events::NewEvent::of(row, EventKind::Started, message, Some(details), status.observed_at)
}

/// Most statuses one statement of [`write_statuses_together`] writes.
const WRITE_CHUNK: usize = 200;

/// Writes statuses that end nothing (phase, nodes, start), each over its row read as
/// `current` by compare-and-set on the phase as [`write_status`] does, in one statement a
/// chunk; the ids of the jobs written. Each job at most once.
async fn write_statuses_together(
    txn: &impl sea_orm::ConnectionTrait,
    statuses: &[&JobStatus],
    writes: &[(usize, job::Model, JobPhase, String)],
) -> Result<std::collections::HashSet<i64>, DbErr> {
    use sea_orm::sea_query::{CaseStatement, Condition, Query};
    let mut written = std::collections::HashSet::new();
    let now = Utc::now();
    for chunk in writes.chunks(WRITE_CHUNK) {
        let (mut phase, mut nodes, mut started) = (CaseStatement::new(), CaseStatement::new(), CaseStatement::new());
        let mut rows = Condition::any();
        for (k, _, current, node_list) in chunk {
            let status = statuses[*k];
            let this = job::Column::Id.eq(status.job_id);
            phase = phase.case(this.clone(), status.phase.as_str());
            nodes = nodes.case(this.clone(), node_list.as_str());
            started = started.case(this.clone(), Expr::value(status.started_at));
            // Compare-and-set: a delete or another observation may have moved it meanwhile.
            rows = rows.add(Condition::all().add(this).add(job::Column::Phase.eq(current.as_str())));
        }
        let update = Query::update()
            .table(job::Entity)
            .value(job::Column::Phase, phase.finally(Expr::col(job::Column::Phase)))
            .value(job::Column::Nodes, nodes.finally(Expr::col(job::Column::Nodes)))
            .value(
                job::Column::StartedAt,
                started.finally(Expr::col(job::Column::StartedAt)),
            )
            .value(job::Column::UpdatedAt, Expr::value(now))
            .and_where(job::Column::Id.is_in(chunk.iter().map(|(k, ..)| statuses[*k].job_id)))
            .cond_where(rows)
            .returning_col(job::Column::Id)
            .to_owned();
        let statement = txn.get_database_backend().build(&update);
        for row in txn.query_all_raw(statement).await? {
            written.insert(row.try_get_by_index::<i64>(0)?);
        }
    }
    // The `started` events and webhook deliveries of the jobs whose pods started, in the same
    // transaction, stamped with the cluster's time of each observation.
    let mut started: std::collections::BTreeMap<DateTime<Utc>, Vec<i64>> = std::collections::BTreeMap::new();
    let mut events = Vec::new();
    for (k, row, current, _) in writes {
        let status = statuses[*k];
        if status.phase == JobPhase::Running && *current != JobPhase::Running && written.contains(&status.job_id) {
            started.entry(status.observed_at).or_default().push(status.job_id);
            events.push(started_event(row, status));
        }
    }
    for (at, ids) in started {
        crate::notifications::enqueue_jobs(txn, NotifyOn::Started, &ids, at).await?;
    }
    events::record_each(txn, events).await?;
    Ok(written)
}

/// Most statuses read and written together.
const BATCH: usize = 500;

/// Applies cluster events in their order, as [`apply`] one by one would, but consecutive
/// statuses together: their rows in one read and their changes in one write transaction. One
/// transaction per status made status sync a large share of the writer's work when jobs start
/// by the hundred a second (issue 25), and a resync read every job of the cluster one by one.
///
/// One result per event. A run of statuses whose batch fails is applied again one by one, so
/// a status that cannot be stored fails alone, and the events after it are still applied.
pub async fn apply_all(
    db: &DatabaseConnection,
    cluster: &dyn Cluster,
    events: &[JobEvent],
) -> Vec<Result<Applied, DbErr>> {
    let mut out = Vec::with_capacity(events.len());
    let mut rest = events;
    while let Some(first) = rest.first() {
        if let JobEvent::Gone { .. } = first {
            out.push(apply(db, cluster, first).await);
            rest = &rest[1..];
            continue;
        }
        let run = rest
            .iter()
            .take(BATCH)
            .take_while(|e| matches!(e, JobEvent::Status(_)))
            .count();
        let statuses: Vec<&JobStatus> = rest[..run]
            .iter()
            .filter_map(|e| match e {
                JobEvent::Status(status) => Some(status),
                JobEvent::Gone { .. } => None,
            })
            .collect();
        match apply_statuses(db, &statuses).await {
            Ok(applied) => out.extend(applied.into_iter().map(Ok)),
            Err(e) => {
                tracing::warn!(error = %e, statuses = statuses.len(), "storing statuses together failed; one by one instead");
                for status in statuses {
                    out.push(apply_status(db, status).await);
                }
            }
        }
        rest = &rest[run..];
    }
    out
}

/// The statuses of [`apply_all`]: decided in order against their rows read at once (a row is
/// updated in memory by each status planned for it, so a job seen `Pending` then `Running` in
/// one batch is compared as the store will have it), then written in one transaction, each by
/// compare-and-set as [`apply`] does, each job's statuses in their order. On PostgreSQL the
/// transaction first locks every row it writes in id order, the order preemption locks its
/// victims in, so the two cannot deadlock.
///
/// A write whose compare-and-set misses (the row moved since it was read: a delete) and every
/// later status of that job are applied again one by one after the commit, reading the row as
/// it is then, as [`apply`] would have (an orphan is seen as one).
async fn apply_statuses(db: &DatabaseConnection, statuses: &[&JobStatus]) -> Result<Vec<Applied>, DbErr> {
    let ids: Vec<i64> = statuses
        .iter()
        .map(|s| s.job_id)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut rows: std::collections::HashMap<i64, job::Model> = job::Entity::find()
        .filter(job::Column::Id.is_in(ids))
        .all(db)
        .await?
        .into_iter()
        .map(|row| (row.id, row))
        .collect();
    let mut out = vec![Applied::Nothing; statuses.len()];
    let mut writes = Vec::new();
    for (k, status) in statuses.iter().enumerate() {
        let Some(row) = rows.get(&status.job_id) else {
            continue;
        };
        if !is_same_job(&row.uid_in_cluster(), status.cluster_uid.as_deref()) {
            continue;
        }
        let Ok(current) = JobPhase::from_str(&row.phase) else {
            continue;
        };
        if matches!(current, JobPhase::Deleted | JobPhase::Failed) && !status.phase.is_terminal() {
            out[k] = Applied::Orphan;
            continue;
        }
        if !syncable(current) {
            continue;
        }
        if current == JobPhase::Activating {
            // Rare (an activation that has not recorded its create): the one-by-one path, with
            // its own reads and transactions; then the row as it is now.
            out[k] = apply_status(db, status).await?;
            match job::Entity::find_by_id(status.job_id).one(db).await? {
                Some(now) => rows.insert(now.id, now),
                None => rows.remove(&status.job_id),
            };
            continue;
        }
        let Some(nodes) = changed_nodes(status, row, current)? else {
            continue;
        };
        writes.push((k, row.clone(), current, nodes.clone()));
        let row = rows.get_mut(&status.job_id).expect("read above");
        row.phase = status.phase.as_str().to_owned();
        row.nodes = nodes;
        row.started_at = status.started_at;
    }
    if writes.is_empty() {
        return Ok(out);
    }
    // Stable: a job's statuses keep their order.
    writes.sort_by_key(|(k, ..)| statuses[*k].job_id);
    let txn = crate::store::write_transaction(db).await?;
    if txn.get_database_backend() == sea_orm::DbBackend::Postgres {
        // The writes below go in rounds and an `UPDATE … IN` locks rows in the order it finds
        // them: take every row's lock first, in id order, as preemption does, so the two
        // cannot deadlock.
        let mut ids: Vec<i64> = writes.iter().map(|(k, ..)| statuses[*k].job_id).collect();
        ids.dedup();
        job::Entity::find()
            .select_only()
            .column(job::Column::Id)
            .filter(job::Column::Id.is_in(ids))
            .order_by_asc(job::Column::Id)
            .lock_exclusive()
            .into_tuple::<i64>()
            .all(&txn)
            .await?;
    }
    let mut missed = std::collections::HashSet::new();
    let mut again = Vec::new();
    // In rounds: each job's first write, then its second…, so a job's writes keep their order
    // and each round's job ids are distinct.
    let mut rest = writes;
    while !rest.is_empty() {
        let mut in_round = std::collections::HashSet::new();
        let (round, later): (Vec<_>, Vec<_>) = rest
            .into_iter()
            .partition(|(k, ..)| in_round.insert(statuses[*k].job_id));
        rest = later;
        let mut together = Vec::new();
        for (k, row, current, nodes) in round {
            let id = statuses[k].job_id;
            if missed.contains(&id) {
                again.push(k);
            } else if statuses[k].phase.is_terminal() {
                // An end writes its event too: one by one (jobs end far less often than
                // they start in a burst).
                out[k] = write_status(&txn, statuses[k], &row, current, nodes).await?;
                if out[k] == Applied::Nothing {
                    missed.insert(id);
                    again.push(k);
                }
            } else {
                together.push((k, row, current, nodes));
            }
        }
        let written = write_statuses_together(&txn, statuses, &together).await?;
        for (k, ..) in together {
            let id = statuses[k].job_id;
            if written.contains(&id) {
                out[k] = Applied::Updated;
            } else {
                missed.insert(id);
                again.push(k);
            }
        }
    }
    txn.commit().await?;
    for (k, status) in statuses.iter().enumerate() {
        if matches!(out[k], Applied::Updated | Applied::Finished) && status.phase == JobPhase::Failed {
            count_failed();
        }
    }
    again.sort_unstable();
    for k in again {
        // The batch is committed: a failure here is this status's alone (the next resync
        // lists it again).
        match apply_status(db, statuses[k]).await {
            Ok(applied) => out[k] = applied,
            Err(e) => tracing::warn!(job = statuses[k].job_id, error = %e, "storing a cluster status failed"),
        }
    }
    Ok(out)
}

/// A job the cluster failed, counted once its write committed.
fn count_failed() {
    axum_prometheus::metrics::counter!("anteroom_prequeue_failed_total", "cause" => "cluster").increment(1);
}

/// A job no longer in the cluster: if the store still has it occupying, it ended without the
/// store hearing how (deleted by hand in the cluster, or its terminal status was missed).
async fn apply_gone(
    db: &DatabaseConnection,
    cluster: &dyn Cluster,
    id: i64,
    observed_at: DateTime<Utc>,
) -> Result<Applied, DbErr> {
    // A preempted job's pods are gone: the room reserved on its node is free for everyone.
    if super::preempt::mark_gone(db, cluster, id, observed_at).await? {
        // Back in the prequeue (the watcher has a job to consider), or its requeue refused.
        return Ok(Applied::Finished);
    }
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
        Some(serde_json::json!({ "code": "vanished" })),
        Utc::now(),
    )
    .await?;
    txn.commit().await?;
    Ok(Applied::Finished)
}

#[cfg(test)]
mod tests;

//! Telling the cluster's own scheduler what the prequeue protects (`spec/prequeue.md` §4;
//! seed 002): a backfill job's pods carry `volcano.sh/preemptable`, `"false"` while the job is
//! locked or younger than `backfillMinRuntimeSeconds`, so Volcano's preempt and reclaim cannot
//! take what the prequeue itself would not. Each round compares what the cluster was last told
//! (`jobs.cluster_preemptable`) with [`cluster_may_evict`] and patches the pods of the jobs
//! whose answer changed: a lock set or lifted, a minimum runtime reached, a setting changed.
//!
//! What was told is recorded only after the cluster took it, under the fence: a failed patch is
//! tried again next round, and a new leader knows what its predecessor told.

use std::collections::HashMap;

use anteroom_shared::scheduling::{JobPhase, ScheduleType};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QuerySelect};

use super::{Watcher, WatcherError};
use crate::jobs::entity::job;
use crate::prequeue::{JobSnapshot, Snapshot, cluster_may_evict};
use crate::store::lease::Fence;

/// At most this many jobs' pods are patched in one round, so a setting that changes the answer
/// for thousands of jobs spreads its API calls over rounds instead of stalling one.
pub const MAX_PATCHES_PER_ROUND: usize = 64;

/// One job whose pods must be told something else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Which job.
    pub id: i64,
    /// Its cluster uid (only its own pods are patched).
    pub cluster_uid: String,
    /// What its pods must now say.
    pub preemptable: bool,
}

/// The running backfill jobs whose answer differs from what was told (or was never recorded),
/// in id order, at most [`MAX_PATCHES_PER_ROUND`]. `told` holds each such job's
/// `(id, uid, last told)`. A `Pending` job waits: its pods may not exist yet, and those Volcano
/// creates come from the template, which says `"false"` (created so,
/// [`crate::jobs::activation::job_spec`]).
pub fn changes(
    jobs: &[JobSnapshot],
    told: &[(i64, String, Option<bool>)],
    min_runtime_seconds: i64,
    now: DateTime<Utc>,
) -> Vec<Change> {
    let by_id: HashMap<i64, &JobSnapshot> = jobs.iter().map(|j| (j.id, j)).collect();
    let mut out: Vec<Change> = told
        .iter()
        .filter_map(|(id, uid, told)| {
            let job = by_id.get(id)?;
            if job.schedule_type != ScheduleType::Backfill || job.phase != JobPhase::Running {
                return None;
            }
            let preemptable = cluster_may_evict(job, min_runtime_seconds, now);
            (*told != Some(preemptable)).then(|| Change {
                id: *id,
                cluster_uid: uid.clone(),
                preemptable,
            })
        })
        .collect();
    out.sort_by_key(|c| c.id);
    out.truncate(MAX_PATCHES_PER_ROUND);
    out
}

/// Patches the pods of every job of [`changes`] and records what each was told; answers how
/// many. A patch the cluster refuses is logged and tried again next round.
pub(super) async fn tell(
    w: &Watcher,
    fence: &Fence,
    snapshot: &Snapshot,
    now: DateTime<Utc>,
) -> Result<usize, WatcherError> {
    let told: Vec<(i64, Option<String>, Option<bool>)> = job::Entity::find()
        .select_only()
        .column(job::Column::Id)
        .column(job::Column::ClusterUid)
        .column(job::Column::ClusterPreemptable)
        .filter(job::Column::ScheduleType.eq(ScheduleType::Backfill.as_str()))
        .filter(job::Column::Phase.eq(JobPhase::Running.as_str()))
        .into_tuple()
        .all(&w.db_read)
        .await?;
    let told: Vec<(i64, String, Option<bool>)> = told
        .into_iter()
        .map(|(id, uid, told)| (id, uid.unwrap_or_else(|| job::legacy_cluster_uid(id)), told))
        .collect();
    let mut done = 0;
    for change in changes(&snapshot.jobs, &told, snapshot.config.backfill_min_runtime_seconds, now) {
        if let Err(e) = w
            .cluster
            .set_preemptable(change.id, &change.cluster_uid, change.preemptable)
            .await
        {
            tracing::warn!(job.id = change.id, error = %e, "could not tell the cluster whether it may evict the job's pods");
            continue;
        }
        let Some((txn, _)) = w.writer(fence).begin().await? else {
            return Err(WatcherError::LeaseLost);
        };
        job::Entity::update_many()
            .col_expr(job::Column::ClusterPreemptable, Expr::value(change.preemptable))
            .filter(job::Column::Id.eq(change.id))
            .exec(&txn)
            .await?;
        txn.commit().await?;
        done += 1;
    }
    Ok(done)
}

#[cfg(test)]
mod tests;

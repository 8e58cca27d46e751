//! Choosing this round's reclaims (`spec/prequeue.md` §9); [`super::preempt`] carries them out.
//!
//! The core plans; the watcher gives it what the snapshot lacks: which waiting jobs nothing but
//! room holds (a round on the same snapshot says), and the tasks of the waiting gangs, read
//! from the store, so that no borrower is taken for a gang that could not be placed after.

use std::collections::HashSet;

use anteroom_shared::api::jobs::TaskBody;
use anteroom_shared::scheduling::{JobPhase, ScheduleType};
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect};

use crate::jobs::entity::job;
use crate::prequeue::Snapshot;
use crate::prequeue::sharing::{GangTasks, MAX_EXAMINED_PER_ROUND, ReclaimPlan, plan_reclaims};

/// The most waiting gangs whose tasks one round reads (oldest first): twice what a round
/// examines, since a gang that fits is not examined.
const GANGS_READ_PER_ROUND: usize = 2 * MAX_EXAMINED_PER_ROUND;

/// The most running jobs on several nodes whose tasks one round reads (newest first): a
/// victim beyond them frees no room reclaim can count on a node.
const VICTIMS_READ_PER_ROUND: usize = 500;

/// This round's reclaims (§9): planned only for jobs nothing but room holds — no blocker, no
/// private hold, not left over by the round limit — as a round on the same snapshot says, so
/// freed room goes to the job it was freed for; a gang only when its replicas can be placed
/// once its victims are gone. The round is prepared, and tasks read, only when a probe says
/// some job may be owed room at all.
pub(super) async fn reclaims(
    db: &impl ConnectionTrait,
    snapshot: &Snapshot,
    now: DateTime<Utc>,
) -> Result<Vec<ReclaimPlan>, DbErr> {
    if plan_reclaims(snapshot, now, None, None).is_empty() {
        return Ok(Vec::new());
    }
    let Ok(prepared) = crate::prequeue::PreparedRound::new(snapshot, now) else {
        return Ok(Vec::new());
    };
    let outcome = prepared.select();
    let allowed: HashSet<i64> = outcome
        .waiting
        .iter()
        .filter(|w| {
            let c = w.causes;
            c.blocked_by().is_none()
                && !c.held_privately()
                && !c.round_limit()
                && !c.backfill_disabled()
                && !c.borrowing_limit()
                && !c.budget_exhausted()
        })
        .map(|w| w.id)
        .collect();
    let gangs = gang_tasks(db, snapshot, now, &allowed).await?;
    Ok(plan_reclaims(snapshot, now, Some(&allowed), Some(&gangs)))
}

/// The tasks of the oldest waiting gangs reclaim may plan for, and of the jobs on several
/// nodes it may take (read only when some gang waits: for a job on one node, only victims on
/// that node count).
async fn gang_tasks(
    db: &impl ConnectionTrait,
    snapshot: &Snapshot,
    now: DateTime<Utc>,
    allowed: &HashSet<i64>,
) -> Result<GangTasks, DbErr> {
    let delay = Duration::seconds(snapshot.config.reclaim_delay_seconds.max(0));
    let mut gangs: Vec<(DateTime<Utc>, i64)> = snapshot
        .jobs
        .iter()
        .filter(|j| j.phase == JobPhase::Prequeue && j.schedule_type == ScheduleType::Normal && !j.single_node)
        .filter(|j| allowed.contains(&j.id))
        .filter(|j| j.waiting_since.is_some_and(|since| since + delay <= now))
        .map(|j| (j.submitted_at, j.id))
        .collect();
    gangs.sort_unstable();
    gangs.truncate(GANGS_READ_PER_ROUND);
    if gangs.is_empty() {
        return Ok(GangTasks::new());
    }
    // And the jobs on several nodes that may be taken: borrowers, and jobs of a queue that lets
    // a higher priority take its room (newest first, as victims are chosen).
    let lets_lower_go: std::collections::HashSet<&str> = snapshot
        .queues
        .iter()
        .filter(|q| q.sharing.preempt_within_queue == anteroom_shared::scheduling::PreemptWithinQueue::LowerPriority)
        .map(|q| q.name.as_str())
        .collect();
    let mut wide: Vec<(std::cmp::Reverse<Option<DateTime<Utc>>>, i64)> = snapshot
        .jobs
        .iter()
        .filter(|j| matches!(j.phase, JobPhase::Running | JobPhase::Pending) && !j.single_node)
        .filter(|j| j.schedule_type == ScheduleType::Normal)
        .filter(|j| j.sharing.borrowing || lets_lower_go.contains(j.queue.as_str()))
        .map(|j| (std::cmp::Reverse(j.started_at), j.id))
        .collect();
    wide.sort_unstable();
    wide.truncate(VICTIMS_READ_PER_ROUND);
    gangs.extend(wide.into_iter().map(|(_, id)| (now, id)));
    let rows: Vec<(i64, String)> = job::Entity::find()
        .select_only()
        .column(job::Column::Id)
        .column(job::Column::Tasks)
        .filter(job::Column::Id.is_in(gangs.iter().map(|(_, id)| *id)))
        .into_tuple()
        .all(db)
        .await?;
    let mut out = GangTasks::new();
    for (id, tasks) in rows {
        // A row whose tasks do not parse gets no plan (a missing gang is skipped), not a
        // failed round.
        let Ok(tasks) = serde_json::from_str::<Vec<TaskBody>>(&tasks) else {
            tracing::warn!(job = id, "stored tasks do not parse; no reclaim is planned for it");
            continue;
        };
        out.insert(id, tasks.iter().map(TaskBody::scheduling).collect());
    }
    Ok(out)
}

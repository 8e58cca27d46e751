//! Executing a preemption plan (`spec/prequeue.md` §5 step 3). The core chose the plan
//! ([`crate::prequeue::plan_preemption`]); here it happens, in an order that survives a crash:
//!
//! 1. One fenced transaction marks every victim `Preempted` (compare-and-set on `Running`:
//!    if any victim moved meanwhile the whole plan is dropped and planned again next round),
//!    writes a `preempted` event on each naming the beneficiary, a `preempted_for` event on the
//!    beneficiary, and stores the plan (a `preemptions` row per victim).
//! 2. The cluster deletes, with `preemptionGracePeriodSeconds` as the pods' grace; each
//!    accepted delete is recorded. A delete not recorded (failed, or the process died first)
//!    is issued again at the start of every round ([`finish_deletes`]): deletes are idempotent.
//! 3. Status sync marks each victim gone when its pods are ([`mark_gone`]). Until then the
//!    stored plan comes back into every snapshot ([`in_flight`]) so that neither the
//!    beneficiary nor any other job plans against that node's terminating room. A victim that
//!    asked to be requeued (within `maxRequeues`, decided in step 1) goes back to the
//!    prequeue then ([`super::requeue`]).

use std::collections::BTreeMap;

use anteroom_shared::scheduling::JobPhase;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};

use super::entity::preemption;
use super::{FaultPoint, Watcher, WatcherError};
use crate::jobs::entity::job;
use crate::jobs::events::{self, EventKind};
use crate::prequeue::snapshot::RecentPlan;
use crate::prequeue::{InFlightPreemption, PreemptionPlan};
use crate::store::lease::Fence;

/// Deletes re-issued per round at most.
const REDELETES_PER_ROUND: u64 = 100;

/// Stored plans whose victims still terminate, one entry per (beneficiary, node).
pub(super) async fn in_flight(db: &impl ConnectionTrait) -> Result<Vec<InFlightPreemption>, DbErr> {
    let rows = preemption::Entity::find()
        .filter(preemption::Column::GoneAt.is_null())
        .all(db)
        .await?;
    let mut grouped: BTreeMap<(i64, String), Vec<i64>> = BTreeMap::new();
    for row in rows {
        grouped
            .entry((row.beneficiary_id, row.node))
            .or_default()
            .push(row.victim_id);
    }
    Ok(grouped
        .into_iter()
        .map(|((beneficiary, node), mut victims)| {
            victims.sort_unstable();
            InFlightPreemption {
                beneficiary,
                node,
                terminating_victims: victims,
            }
        })
        .collect())
}

/// The last plan of every job preempted for (`preemptionPlanWindowSeconds`): one aggregate row
/// per beneficiary, whatever the number of victims.
pub(super) async fn recent_plans(db: &impl ConnectionTrait) -> Result<Vec<RecentPlan>, DbErr> {
    use sea_orm::QuerySelect;
    let rows: Vec<(i64, DateTime<Utc>)> = preemption::Entity::find()
        .select_only()
        .column(preemption::Column::BeneficiaryId)
        .column_as(preemption::Column::CreatedAt.max(), "planned_at")
        .group_by(preemption::Column::BeneficiaryId)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(beneficiary, planned_at)| RecentPlan {
            beneficiary,
            planned_at,
        })
        .collect())
}

/// Status sync: the victim `id`'s pods are gone, so its room is no longer reserved; a victim
/// to be requeued goes back to the prequeue ([`super::requeue`]). Answers whether it did.
pub async fn mark_gone(
    db: &DatabaseConnection,
    cluster: &dyn crate::cluster::Cluster,
    id: i64,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    super::requeue::pods_gone(db, cluster, id, at).await
}

/// Status sync after a full listing: every victim still terminating in the store but absent
/// from the cluster (`present`) is gone (its `Gone` event was missed) — once its delete was
/// accepted and its grace period has passed: a listing of job objects may miss a job whose
/// object went first while its pods still terminate, and their room is still reserved.
pub async fn mark_absent_gone(
    db: &DatabaseConnection,
    cluster: &dyn crate::cluster::Cluster,
    present: &std::collections::HashSet<i64>,
    at: DateTime<Utc>,
) -> Result<usize, DbErr> {
    let mut requeued = 0;
    let terminating = preemption::Entity::find()
        .filter(preemption::Column::GoneAt.is_null())
        .filter(preemption::Column::DeletedAt.is_not_null())
        .all(db)
        .await?;
    for row in terminating {
        let graced = row
            .deleted_at
            .is_some_and(|deleted| deleted + chrono::Duration::seconds(row.grace_seconds) <= at);
        if graced && !present.contains(&row.victim_id) {
            requeued += usize::from(mark_gone(db, cluster, row.victim_id, at).await?);
        }
    }
    Ok(requeued)
}

/// Executes `plan`: the victims preempted, in the store and then in the cluster. Returns the
/// victims, or nothing when the plan went stale before it could be written.
pub(super) async fn execute(w: &Watcher, fence: &Fence, plan: &PreemptionPlan) -> Result<Vec<i64>, WatcherError> {
    let taking = Taking {
        beneficiary: plan.beneficiary,
        victims: &plan.victims,
        node: &plan.node,
        why: Why::Preemption { deficit: &plan.deficit },
    };
    let (victims, _) = take(w, fence, &taking, &[]).await?;
    Ok(victims)
}

/// A reclaim carried out: its victims, and whether its beneficiary was activated.
#[derive(Debug, Default)]
pub(super) struct Reclaimed {
    /// The jobs preempted (empty when the plan went stale).
    pub victims: Vec<i64>,
    /// The beneficiary was claimed with them and created in the cluster.
    pub activated: bool,
}

/// Executes a reclaim (`spec/prequeue.md` §9): borrowing jobs preempted for a job owed its
/// queue's guarantee — or lower-priority jobs of a queue that allows it, for a job of that
/// queue — with the same crash-safe steps as a preemption. The beneficiary is claimed in the
/// same transaction, under the decision turn, so the room passes to it at once: no submission
/// or other claim can take it between the victims' release and its start (§9: "while victims
/// terminate, their room is the beneficiary's"). When it can no longer be claimed (its owner's
/// quota filled meanwhile), nothing is written and nobody is taken. `nodes`: the round's.
pub(super) async fn execute_reclaim(
    w: &Watcher,
    fence: &Fence,
    plan: &crate::prequeue::sharing::ReclaimPlan,
    nodes: &[crate::prequeue::NodeSnapshot],
) -> Result<Reclaimed, WatcherError> {
    let taking = Taking {
        beneficiary: plan.beneficiary,
        victims: &plan.victims,
        node: &plan.node,
        why: match plan.kind {
            crate::prequeue::sharing::TakeKind::Reclaim => Why::Reclaim { queue: &plan.queue },
            crate::prequeue::sharing::TakeKind::Priority => Why::Priority { queue: &plan.queue },
        },
    };
    let (victims, claimed) = take(w, fence, &taking, nodes).await?;
    let activated = match claimed {
        Some(claimed) => matches!(w.drive(&claimed, fence).await?, super::activate::Result::Activated),
        None => false,
    };
    Ok(Reclaimed { victims, activated })
}

/// Victims taken for a beneficiary, and why.
struct Taking<'a> {
    beneficiary: i64,
    victims: &'a [i64],
    node: &'a str,
    why: Why<'a>,
}

/// What the victims make room for.
enum Why<'a> {
    /// Elastic jobs for a normal job past its tolerance (`Pending` in the cluster).
    Preemption {
        deficit: &'a anteroom_shared::scheduling::ResourceList,
    },
    /// Borrowers for a job owed its queue's guarantee (still `Prequeue`).
    Reclaim { queue: &'a str },
    /// Lower-priority jobs of a queue that says `preemptWithinQueue: lowerPriority`, for a
    /// waiting job of that queue (still `Prequeue`).
    Priority { queue: &'a str },
}

/// The victims taken (none when the plan went stale) and, for a reclaim or a preemption by
/// priority, the beneficiary claimed in the same transaction.
type Taken = (Vec<i64>, Option<job::Model>);

async fn take(
    w: &Watcher,
    fence: &Fence,
    plan: &Taking<'_>,
    nodes: &[crate::prequeue::NodeSnapshot],
) -> Result<Taken, WatcherError> {
    if plan.victims.is_empty() {
        // Nothing to free (the core never plans this; a plan without victims must not write
        // a `preempted_for` event either).
        return Ok((Vec::new(), None));
    }
    let settings = w.settings.current();
    let grace = settings.preemption_grace_period_seconds.max(0);
    let Some((txn, now)) = w.writer(fence).begin().await? else {
        return Err(WatcherError::LeaseLost);
    };
    let waits_in = match plan.why {
        Why::Preemption { .. } => JobPhase::Pending,
        Why::Reclaim { .. } | Why::Priority { .. } => JobPhase::Prequeue,
    };
    let Some(beneficiary) = job::Entity::find_by_id(plan.beneficiary)
        .filter(job::Column::Phase.eq(waits_in.as_str()))
        .one(&txn)
        .await?
    else {
        return Ok((Vec::new(), None));
    };
    // A beneficiary still waiting is claimed below, under the decision turn of its queue,
    // taken before any row is written (the order every claim takes them in).
    let turn = match plan.why {
        Why::Preemption { .. } => None,
        Why::Reclaim { .. } | Why::Priority { .. } => {
            let (_, tree) = crate::queues::tree(&txn).await?;
            let root = tree.turn_of(&beneficiary.queue).to_owned();
            crate::store::lock_queue_tree(&txn, &root).await?;
            Some(root)
        }
    };
    // In id order: status sync writes its batches in id order too, so on PostgreSQL the two
    // lock rows in the same order and cannot deadlock.
    let victims = job::Entity::find()
        .filter(job::Column::Id.is_in(plan.victims.iter().copied()))
        .order_by_asc(job::Column::Id)
        .all(&txn)
        .await?;
    if victims.len() != plan.victims.len() {
        return Ok((Vec::new(), None));
    }
    for victim in &victims {
        let updated = job::Entity::update_many()
            .col_expr(job::Column::Phase, Expr::value(JobPhase::Preempted.as_str()))
            .col_expr(job::Column::FinishedAt, Expr::value(now))
            .col_expr(job::Column::UpdatedAt, Expr::value(now))
            .filter(job::Column::Id.eq(victim.id))
            // Elastic victims run; a reclaim may also take a borrower admitted but not placed.
            .filter(job::Column::Phase.is_in(match plan.why {
                Why::Preemption { .. } => vec![JobPhase::Running.as_str()],
                Why::Reclaim { .. } | Why::Priority { .. } => {
                    vec![JobPhase::Running.as_str(), JobPhase::Pending.as_str()]
                }
            }))
            // An admin may have locked it since the snapshot.
            .filter(
                sea_orm::Condition::any()
                    .add(job::Column::LockedUntil.is_null())
                    .add(job::Column::LockedUntil.lte(now)),
            )
            .exec(&txn)
            .await?;
        if updated.rows_affected == 0 {
            // It finished or was deleted since the snapshot: plan again next round.
            return Ok((Vec::new(), None));
        }
        let requeue = victim.requeue && i64::from(victim.requeues) < settings.max_requeues;
        let (kind, message, details) = match plan.why {
            Why::Preemption { .. } => (
                EventKind::Preempted,
                format!(
                    "preempted on node {} to make room for job {} ({}), which waited past its tolerance",
                    plan.node, beneficiary.id, beneficiary.name
                ),
                serde_json::json!({
                    "beneficiary": beneficiary.id,
                    "beneficiaryName": beneficiary.name,
                    "node": plan.node,
                    "graceSeconds": grace,
                    "requeue": requeue,
                }),
            ),
            Why::Priority { queue } => (
                EventKind::Preempted,
                format!(
                    "preempted to make room for job {} ({}), of a higher priority in queue {queue:?}",
                    beneficiary.id, beneficiary.name
                ),
                serde_json::json!({
                    "beneficiary": beneficiary.id,
                    "beneficiaryName": beneficiary.name,
                    "queue": queue,
                    "priority": beneficiary.priority,
                    "node": plan.node,
                    "graceSeconds": grace,
                    "requeue": requeue,
                }),
            ),
            Why::Reclaim { queue } => (
                EventKind::Reclaimed,
                format!(
                    "reclaimed for job {} ({}) of queue {queue:?}: queue {:?} borrowed room {queue:?} is guaranteed",
                    beneficiary.id, beneficiary.name, victim.queue
                ),
                serde_json::json!({
                    "beneficiary": beneficiary.id,
                    "beneficiaryName": beneficiary.name,
                    "queue": queue,
                    "node": plan.node,
                    "graceSeconds": grace,
                    "requeue": requeue,
                }),
            ),
        };
        events::record(&txn, victim, kind, message, Some(details), now).await?;
        // A requeued job preempted again replaces the row of its last preemption (long gone).
        preemption::Entity::insert(preemption::ActiveModel {
            victim_id: Set(victim.id),
            beneficiary_id: Set(beneficiary.id),
            node: Set(plan.node.to_owned()),
            grace_seconds: Set(grace),
            created_at: Set(now),
            deleted_at: Set(None),
            gone_at: Set(None),
            requeue: Set(requeue),
        })
        .on_conflict(
            sea_orm::sea_query::OnConflict::column(preemption::Column::VictimId)
                .update_columns([
                    preemption::Column::BeneficiaryId,
                    preemption::Column::Node,
                    preemption::Column::GraceSeconds,
                    preemption::Column::CreatedAt,
                    preemption::Column::DeletedAt,
                    preemption::Column::GoneAt,
                    preemption::Column::Requeue,
                ])
                .to_owned(),
        )
        .exec(&txn)
        .await?;
    }
    let names: Vec<String> = victims.iter().map(|v| format!("{} ({})", v.id, v.name)).collect();
    let (kind, message, details) = match plan.why {
        Why::Preemption { deficit } => (
            EventKind::PreemptedFor,
            format!(
                "{} elastic job(s) preempted on node {} to make room for this job: {}",
                victims.len(),
                plan.node,
                names.join(", ")
            ),
            serde_json::json!({
                "victims": plan.victims,
                "node": plan.node,
                "deficit": deficit,
            }),
        ),
        Why::Priority { queue } => (
            EventKind::PreemptedFor,
            format!(
                "{} job(s) of a lower priority in queue {queue:?} preempted to make room for this job: {}",
                victims.len(),
                names.join(", ")
            ),
            serde_json::json!({
                "victims": plan.victims,
                "queue": queue,
                "priority": true,
            }),
        ),
        Why::Reclaim { queue } => (
            EventKind::ReclaimedFor,
            format!(
                "{} borrowing job(s) reclaimed to give queue {queue:?} its guaranteed room: {}",
                victims.len(),
                names.join(", ")
            ),
            serde_json::json!({
                "victims": plan.victims,
                "queue": queue,
            }),
        ),
    };
    events::record(&txn, &beneficiary, kind, message, Some(details), now).await?;
    if let Why::Reclaim { .. } = plan.why {
        // The usage history (§10) says how their runs ended: its trigger wrote `Preempted`.
        crate::usage::entity::Entity::update_many()
            .col_expr(crate::usage::entity::Column::EndPhase, Expr::value("Reclaimed"))
            .filter(crate::usage::entity::Column::JobId.is_in(plan.victims.iter().copied()))
            .filter(crate::usage::entity::Column::EndPhase.eq(JobPhase::Preempted.as_str()))
            .filter(crate::usage::entity::Column::EndedAt.eq(now))
            .exec(&txn)
            .await?;
    }
    // The room passes to the beneficiary in this transaction: checked against the usage
    // without the victims, as any claim is.
    let claimed = match turn {
        None => None,
        Some(root) => {
            let row = crate::jobs::SchedulingRow::select()
                .filter(job::Column::Id.eq(beneficiary.id))
                .into_model::<crate::jobs::SchedulingRow>()
                .one(&txn)
                .await?;
            let mut check = super::activate::TurnCheck::read(&txn, &root, settings.clone(), nodes).await?;
            let claimed = match row {
                Some(row) => check.claim(&txn, &row, now).await?,
                None => None,
            };
            if claimed.is_none() {
                // It cannot start even with the room: nobody is taken for it (the transaction
                // is dropped, so nothing above is written).
                return Ok((Vec::new(), None));
            }
            claimed
        }
    };
    txn.commit().await?;
    // Counted once written, per victim's queue (the dashboard's "preemptions by victim queue").
    for victim in &victims {
        match plan.why {
            Why::Reclaim { .. } => super::metrics::reclaimed(&victim.queue),
            Why::Preemption { .. } | Why::Priority { .. } => super::metrics::preempted(&victim.queue),
        }
    }
    w.signals.events_written();
    w.fault(FaultPoint::MidPreemption)?;
    delete_in_cluster(w, fence, plan.victims, grace).await?;
    Ok((plan.victims.to_vec(), claimed))
}

/// Deletes stored plans' victims whose delete the cluster has not accepted yet (a failure, or
/// a crash between the store write and the delete).
pub(super) async fn finish_deletes(w: &Watcher, fence: &Fence) -> Result<(), WatcherError> {
    let pending = preemption::Entity::find()
        .filter(preemption::Column::DeletedAt.is_null())
        .order_by_asc(preemption::Column::CreatedAt)
        .limit(REDELETES_PER_ROUND)
        .all(&w.db)
        .await?;
    for row in pending {
        delete_in_cluster(w, fence, &[row.victim_id], row.grace_seconds).await?;
    }
    Ok(())
}

async fn delete_in_cluster(w: &Watcher, fence: &Fence, victims: &[i64], grace: i64) -> Result<(), WatcherError> {
    let grace = u32::try_from(grace.max(0)).unwrap_or(u32::MAX);
    let mut accepted = Vec::with_capacity(victims.len());
    let uids: std::collections::HashMap<i64, Option<String>> = job::Entity::find()
        .select_only()
        .column(job::Column::Id)
        .column(job::Column::ClusterUid)
        .filter(job::Column::Id.is_in(victims.iter().copied()))
        .into_tuple::<(i64, Option<String>)>()
        .all(&w.db)
        .await?
        .into_iter()
        .collect();
    for &id in victims {
        let uid = uids
            .get(&id)
            .cloned()
            .flatten()
            .unwrap_or_else(|| job::legacy_cluster_uid(id));
        match w.cluster.delete_job(id, &uid, grace).await {
            Ok(()) => accepted.push(id),
            Err(e) => tracing::warn!(job = id, error = %e, "deleting a preempted job failed; retrying next round"),
        }
    }
    if accepted.is_empty() {
        return Ok(());
    }
    let Some((txn, now)) = w.writer(fence).begin().await? else {
        return Err(WatcherError::LeaseLost);
    };
    preemption::Entity::update_many()
        .col_expr(preemption::Column::DeletedAt, Expr::value(now))
        .filter(preemption::Column::VictimId.is_in(accepted))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    Ok(())
}

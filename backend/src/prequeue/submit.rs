//! The submission decision (`spec/prequeue.md` §4 steps 3–7): refuse, prequeue with reasons, or
//! activate. Validation of the body (step 1) and queue access (step 2) happen before, in the
//! handler; writing (step 8) after, in the service.

use anteroom_shared::scheduling::reasons::BorrowedRoom;
use anteroom_shared::scheduling::{
    BorrowPolicy, JobKind, JobPhase, PreemptionPolicy, ResourceDomain, ResourceList, ScheduleType, TaskResourceError,
    TaskResources, domain_blocks, job_explicit_nodes, job_resources,
};
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::placement::{CapacityKind, PlacementError, place_gang};
use super::queue_tree::QueueTree;
use super::quota::QuotaView;
use super::reason::{BlockedByDetails, QueueCapacityDetails, Reason, ResourceCheck};
use super::snapshot::{JobSnapshot, Snapshot, Toleration, UserId};

/// A job being submitted, reduced to what the decision needs.
#[derive(Debug, Clone)]
pub struct Submission<'a> {
    /// The caller.
    pub owner: UserId,
    /// The target queue (access already checked).
    pub queue: &'a str,
    /// Kind.
    pub kind: JobKind,
    /// Normal or backfill.
    pub schedule_type: ScheduleType,
    /// Preemption policy (normal jobs).
    pub preemption_policy: PreemptionPolicy,
    /// Tasks with replicas, requests and explicit nodes.
    pub tasks: &'a [TaskResources],
    /// Pod tolerations.
    pub tolerations: &'a [Toleration],
    /// Whether it may borrow beyond its queue's guarantee (§9).
    pub borrow: BorrowPolicy,
    /// Its priority inside its queue (§9; 0 when the body names none).
    pub priority: i32,
    /// How many jobs the caller has in the prequeue, when the caller counted them (the store
    /// counts up to the maximum instead of loading them); `None`: counted from the snapshot's
    /// jobs.
    pub owner_prequeued: Option<u64>,
    /// How many unfinished jobs (any phase but a terminal one) the caller has, counted the
    /// same way; `None`: counted from the snapshot's jobs.
    pub owner_unfinished: Option<u64>,
}

/// What happens to an accepted submission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "decision")]
pub enum SubmitDecision {
    /// Create it in the cluster now.
    Activated {
        /// What it borrows beyond guarantees on its path (§9); empty: nothing.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        borrowed: Vec<BorrowedRoom>,
    },
    /// Park it in the prequeue for these reasons (never empty).
    Prequeued {
        /// Why it waits.
        reasons: Vec<Reason>,
    },
}

/// A refused submission; nothing is written. [`SubmitRejection::code`] is the API error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitRejection {
    /// Backfill for a kind other than jupyter/webide/custom (422).
    #[error("backfill is only supported for jupyter, webide and custom jobs, not {kind}")]
    BackfillKindUnsupported {
        /// The kind.
        kind: JobKind,
    },
    /// Backfill while `backfillEnabled` is false (409).
    #[error("backfill jobs are disabled")]
    BackfillDisabled,
    /// A task requests a negative quantity, or the job's resources leave the quantity range
    /// (422, naming `tasks[i].resources.<name>`).
    #[error("invalid resources: {0}")]
    InvalidResources(#[from] TaskResourceError),
    /// A task is pinned to a host the cluster does not have (422, naming
    /// `tasks[i].nodeNames[j]`). Such a job could never run there; refusing it also keeps the
    /// node names every later round indexes (blocker maps, overlaps) to the cluster's own.
    #[error("{field}: {node:?} is not a node of this cluster")]
    UnknownNode {
        /// `tasks[i].nodeNames[j]`.
        field: String,
        /// The unknown host name.
        node: String,
    },
    /// No placement on the nodes' allocatable capacity (422).
    #[error("unschedulable: {0}")]
    Unschedulable(PlacementError),
    /// The request alone exceeds the queue's per-user limit (422).
    #[error("the request exceeds the quota of queue {queue:?}")]
    QuotaRequestExceedsLimit {
        /// The queue.
        queue: String,
        /// Every resource the rule names, exceeded ones flagged.
        resources: Vec<ResourceCheck>,
    },
    /// The request alone exceeds the capacity of the queue or an ancestor (422).
    #[error("the request exceeds the capacity of queue {:?}", .0.queue)]
    RequestExceedsQueueCapacity(QueueCapacityDetails),
    /// The request alone exceeds the queue's per-job limit `maxPerJob` (422, §9).
    #[error("a job of queue {queue:?} may ask for at most its per-job limit")]
    RequestExceedsQueueJobLimit {
        /// The queue.
        queue: String,
        /// Every resource the limit names, exceeded ones flagged.
        resources: Vec<ResourceCheck>,
    },
    /// A priority outside the queue's `priorityRange` (422, §9).
    #[error("priority {priority} is outside queue {queue:?}'s range {min} to {max}")]
    PriorityOutOfRange {
        /// The queue.
        queue: String,
        /// The job's priority.
        priority: i32,
        /// The range's lowest.
        min: i32,
        /// The range's highest.
        max: i32,
    },
    /// The user has `maxUnfinishedJobsPerUser` unfinished jobs (429).
    #[error("you already have {unfinished} unfinished jobs (at most {limit}); wait for some to finish or delete some")]
    TooManyUnfinishedJobs {
        /// The user's unfinished jobs.
        unfinished: i64,
        /// The configured maximum.
        limit: i64,
    },
    /// The user has `maxPrequeuedJobsPerUser` jobs waiting (429).
    #[error("you already have {prequeued} prequeued jobs (at most {limit})")]
    PrequeueFull {
        /// Jobs the user has in the prequeue.
        prequeued: i64,
        /// The configured maximum.
        limit: i64,
    },
}

impl SubmitDecision {
    /// Activated without borrowing (what every decision is while nothing is guaranteed).
    pub fn activated() -> Self {
        SubmitDecision::Activated { borrowed: Vec::new() }
    }
}

impl SubmitRejection {
    /// The stable API error code (`spec/prequeue.md` §4).
    pub fn code(&self) -> &'static str {
        match self {
            SubmitRejection::BackfillKindUnsupported { .. } => "backfill_kind_unsupported",
            SubmitRejection::BackfillDisabled => "backfill_disabled",
            SubmitRejection::InvalidResources(_) | SubmitRejection::UnknownNode { .. } => "validation_failed",
            SubmitRejection::Unschedulable(_) => "unschedulable",
            SubmitRejection::QuotaRequestExceedsLimit { .. } => "quota_request_exceeds_limit",
            SubmitRejection::RequestExceedsQueueCapacity(_) => "request_exceeds_queue_capacity",
            SubmitRejection::RequestExceedsQueueJobLimit { .. } => "request_exceeds_queue_job_limit",
            SubmitRejection::PriorityOutOfRange { .. } => "priority_out_of_range",
            SubmitRejection::PrequeueFull { .. } => "prequeue_full",
            SubmitRejection::TooManyUnfinishedJobs { .. } => "too_many_unfinished_jobs",
        }
    }

    /// Details for the API error body.
    pub fn details(&self) -> serde_json::Value {
        match self {
            SubmitRejection::BackfillKindUnsupported { kind } => serde_json::json!({ "kind": kind }),
            SubmitRejection::BackfillDisabled => serde_json::Value::Null,
            SubmitRejection::InvalidResources(e) => {
                serde_json::json!({ "field": e.field(), "message": e.to_string() })
            }
            SubmitRejection::UnknownNode { field, node } => {
                serde_json::json!({ "field": field, "message": format!("{node:?} is not a node of this cluster") })
            }
            SubmitRejection::Unschedulable(e) => serde_json::to_value(e).unwrap_or_default(),
            SubmitRejection::QuotaRequestExceedsLimit { queue, resources } => {
                serde_json::json!({ "queue": queue, "resources": resources })
            }
            SubmitRejection::RequestExceedsQueueCapacity(d) => serde_json::to_value(d).unwrap_or_default(),
            SubmitRejection::RequestExceedsQueueJobLimit { queue, resources } => {
                serde_json::json!({ "queue": queue, "resources": resources })
            }
            SubmitRejection::PriorityOutOfRange {
                queue,
                priority,
                min,
                max,
            } => serde_json::json!({ "queue": queue, "priority": priority, "min": min, "max": max }),
            SubmitRejection::PrequeueFull { prequeued, limit } => {
                serde_json::json!({ "prequeued": prequeued, "limit": limit })
            }
            SubmitRejection::TooManyUnfinishedJobs { unfinished, limit } => {
                serde_json::json!({ "unfinished": unfinished, "limit": limit })
            }
        }
    }
}

/// Decides a submission against one snapshot (§4 steps 3–7, first failing step answers).
///
/// The snapshot needs the nodes, the queue tree, the quotas, usage of the caller and of the
/// queue's tree, and the `Prequeue`/`Pending` jobs of the target queue (blockers) plus the
/// caller's prequeued jobs (for `maxPrequeuedJobsPerUser`); other jobs are ignored. The caller
/// must serialise decisions per root queue (§4 step 8).
///
/// Time-aware backfill does not apply here: a submission behind a blocker is prequeued with
/// `blocked_by` whatever `timeAwareBackfill` says, since the rule needs a forecast of the
/// whole prequeue (`round/backfill.rs`); the next round lets it through if the rule allows.
pub fn decide_submission(
    snapshot: &Snapshot,
    tree: &QueueTree,
    job: &Submission<'_>,
    now: DateTime<Utc>,
) -> Result<SubmitDecision, SubmitRejection> {
    let config = &snapshot.config;
    let request = check_request_alone(snapshot, tree, job)?;
    let view = QuotaView::new(snapshot, tree);
    // Step 6: the caller holds too much already, unfinished jobs overall (even with quotas
    // off, one user cannot hold the whole cluster's job table), then the prequeue.
    let unfinished = match job.owner_unfinished {
        Some(n) => i64::try_from(n).unwrap_or(i64::MAX),
        None => snapshot
            .jobs
            .iter()
            .filter(|j| j.owner == job.owner && !j.phase.is_terminal())
            .count() as i64,
    };
    if unfinished >= config.max_unfinished_jobs_per_user {
        return Err(SubmitRejection::TooManyUnfinishedJobs {
            unfinished,
            limit: config.max_unfinished_jobs_per_user,
        });
    }
    // The caller's prequeue is full.
    let prequeued = match job.owner_prequeued {
        Some(n) => i64::try_from(n).unwrap_or(i64::MAX),
        None => snapshot
            .jobs
            .iter()
            .filter(|j| j.owner == job.owner && j.phase == JobPhase::Prequeue)
            .count() as i64,
    };
    if prequeued >= config.max_prequeued_jobs_per_user {
        return Err(SubmitRejection::PrequeueFull {
            prequeued,
            limit: config.max_prequeued_jobs_per_user,
        });
    }
    // Step 7: decide. Every applicable reason is reported, not only the first.
    let mut reasons = view.soft_reasons(job.owner, job.queue, job.schedule_type, &request, job.borrow);
    // A spent budget on its path holds a normal job until the period ends (§10).
    let budget_hold = super::round::budget_hold_on_path(snapshot, tree, job.queue, now);
    if job.schedule_type == ScheduleType::Normal
        && let Some(details) = budget_hold.clone()
    {
        reasons.insert(0, Reason::BudgetExhausted(details));
    }
    // Owed room: its clock starts now, so borrowers may be reclaimed for it after the delay.
    for reason in &mut reasons {
        if let Reason::Reclaiming(details) = reason {
            details.reclaim_at = now.checked_add_signed(chrono::Duration::seconds(config.reclaim_delay_seconds.max(0)));
        }
    }
    if config.blocking_enabled() {
        let domain = request.domain();
        let nodes = job_explicit_nodes(job.tasks);
        // A new job is never timed out itself, so both Pending and Prequeue blockers apply, but
        // not a Prequeue job held privately (§4 step 7).
        let held = budget_hold.is_some();
        if let Some(blocker) = oldest_blocker(&snapshot.jobs, &view, (job.queue, held), &domain, &nodes, now) {
            reasons.push(Reason::BlockedBy(BlockedByDetails {
                job_id: blocker.id,
                phase: blocker.phase,
                queue: blocker.queue.clone(),
                domain: blocker.resources.domain().to_string(),
            }));
        }
    }
    Ok(if reasons.is_empty() {
        let borrowed = match job.schedule_type {
            ScheduleType::Normal => view.sharing_verdict(job.queue, &request, job.borrow).borrowed,
            ScheduleType::Backfill => Vec::new(),
        };
        SubmitDecision::Activated { borrowed }
    } else {
        SubmitDecision::Prequeued { reasons }
    })
}

/// Steps 1 (the core's part), 3, 4 and 5: what the request alone must pass, whatever else waits
/// or runs — its quantities and node names, the backfill rules, a placement on the nodes'
/// allocatable capacity, and (normal jobs) the queue's per-user limits and the capacities on
/// its path. A submission's first checks, and a requeued job's again (§6: admitted like a new
/// submission). Needs the snapshot's config, nodes, queues and quotas only. Answers the request.
pub fn check_request_alone(
    snapshot: &Snapshot,
    tree: &QueueTree,
    job: &Submission<'_>,
) -> Result<ResourceList, SubmitRejection> {
    // Step 1, the core's part of it: what the request adds up to, and where it may run.
    let request = job_resources(job.tasks)?;
    check_node_names(job.tasks, &snapshot.nodes)?;
    // Step 3: backfill rules.
    if job.schedule_type == ScheduleType::Backfill {
        if !job.kind.may_backfill() {
            return Err(SubmitRejection::BackfillKindUnsupported { kind: job.kind });
        }
        if !snapshot.config.backfill_enabled {
            return Err(SubmitRejection::BackfillDisabled);
        }
    }
    // The queue's per-job rules (§9), whatever the schedule type.
    if let Some(spec) = snapshot.queues.iter().find(|q| q.name == job.queue) {
        let range = spec.sharing.priority_range;
        if !range.allows(job.priority) {
            return Err(SubmitRejection::PriorityOutOfRange {
                queue: job.queue.to_owned(),
                priority: job.priority,
                min: range.min,
                max: range.max,
            });
        }
        if let Some(limit) = &spec.sharing.max_per_job {
            let checks: Vec<ResourceCheck> = limit
                .iter()
                .map(|(name, max)| {
                    let asked = request.get(name);
                    ResourceCheck {
                        resource: name.to_owned(),
                        usage: anteroom_shared::scheduling::Quantity::from_units(0),
                        request: asked,
                        limit: max,
                        exceeded: asked > max,
                    }
                })
                .collect();
            if checks.iter().any(|c| c.exceeded) {
                return Err(SubmitRejection::RequestExceedsQueueJobLimit {
                    queue: job.queue.to_owned(),
                    resources: checks,
                });
            }
        }
    }
    // Step 4: admission on allocatable capacity.
    place_gang(job.tasks, job.tolerations, &snapshot.nodes, CapacityKind::Allocatable)
        .map_err(SubmitRejection::Unschedulable)?;
    // Step 5: hard limits (normal jobs, quotas on).
    if job.schedule_type == ScheduleType::Normal {
        let view = QuotaView::new(snapshot, tree);
        if let Some(resources) = view.request_over_limit(job.queue, &request) {
            return Err(SubmitRejection::QuotaRequestExceedsLimit {
                queue: job.queue.to_owned(),
                resources,
            });
        }
        if let Some(details) = view.request_over_capacity(job.queue, &request) {
            return Err(SubmitRejection::RequestExceedsQueueCapacity(details));
        }
    }
    Ok(request)
}

/// Every explicit node of every task must be a node of the cluster (the snapshot's nodes,
/// whatever their state: a cordoned node is still a node the job may wait for).
pub fn check_node_names(
    tasks: &[TaskResources],
    nodes: &[super::snapshot::NodeSnapshot],
) -> Result<(), SubmitRejection> {
    if tasks.iter().all(|t| t.node_names.is_empty()) {
        return Ok(());
    }
    let known: std::collections::HashSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    for (i, task) in tasks.iter().enumerate() {
        for (j, name) in task.node_names.iter().enumerate() {
            if !known.contains(name.as_str()) {
                return Err(SubmitRejection::UnknownNode {
                    field: format!("tasks[{i}].nodeNames[{j}]"),
                    node: name.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The oldest timed-out normal job (`Pending`, or `Prequeue` and not held privately nor by
/// the queue's spent budget, `held`) in `queue` whose domain blocks `domain` and whose
/// explicit nodes overlap `nodes`.
fn oldest_blocker<'j>(
    jobs: &'j [JobSnapshot],
    view: &QuotaView<'_>,
    (queue, held): (&str, bool),
    domain: &ResourceDomain,
    nodes: &anteroom_shared::scheduling::NodeSet,
    now: DateTime<Utc>,
) -> Option<&'j JobSnapshot> {
    let mut candidates: Vec<&JobSnapshot> = jobs
        .iter()
        .filter(|j| j.queue == queue && j.is_timed_out(now))
        .filter(|j| domain_blocks(&j.resources.domain(), domain) && j.explicit_nodes.overlaps(nodes))
        .collect();
    candidates.sort_unstable_by_key(|j| (j.submitted_at, j.id));
    // Oldest first; the private-hold check reads usage, so it runs only until one blocks.
    candidates
        .into_iter()
        .find(|j| j.phase == JobPhase::Pending || (!held && !view.holds_privately(j.owner, &j.queue, &j.resources)))
}

/// Whether a submitted job that `decision` prequeues waits for *shared* room (a queue's
/// capacity or a blocker) and is not held privately (its owner's quota or `maxActiveJobs`):
/// then its waiting clock (`waitingSince`) starts now. An activated job's clock starts too.
pub fn starts_waiting_clock(decision: &SubmitDecision) -> bool {
    match decision {
        SubmitDecision::Activated { .. } => true,
        SubmitDecision::Prequeued { reasons } => {
            // A borrower finding nothing lent is owed no room: its clock waits (§9).
            let private = reasons.iter().any(|r| {
                matches!(
                    r,
                    Reason::Quota(_)
                        | Reason::MaxActiveJobs(_)
                        | Reason::BorrowingLimit(_)
                        | Reason::BudgetExhausted(_)
                )
            });
            let shared = reasons.iter().any(|r| {
                matches!(
                    r,
                    Reason::QueueCapacity(_) | Reason::BlockedBy(_) | Reason::BorrowingLimit(_) | Reason::Reclaiming(_)
                )
            });
            shared && !private
        }
    }
}

/// The request of a submission, for previews that show it next to the decision.
pub fn submission_request(job: &Submission<'_>) -> Result<ResourceList, TaskResourceError> {
    job_resources(job.tasks)
}

#[cfg(test)]
mod tests;

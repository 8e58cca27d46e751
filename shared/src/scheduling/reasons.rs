//! The details of the reasons a job waits (`spec/prequeue.md` §8): the server's prequeue core
//! builds them and the API sends them as a reason's `details`; the web UI reads the same types
//! to draw each reason as bars, so a renamed field breaks both builds, not the page.

use serde::{Deserialize, Serialize};

use super::{JobPhase, Quantity};

/// One resource checked against a limit or capacity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceCheck {
    /// The resource name.
    pub resource: String,
    /// What is used now (occupying normal jobs, plus what this round already selected).
    pub usage: Quantity,
    /// What the job requests.
    pub request: Quantity,
    /// The limit (user quota) or capacity (queue).
    pub limit: Quantity,
    /// True when `usage + request > limit` (or `request > limit` for a hard check).
    pub exceeded: bool,
}

/// A user's quota in one queue holds the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaDetails {
    /// The queue whose rule applies.
    pub queue: String,
    /// The user the rule applies to.
    pub user: i64,
    /// Every resource the rule names (the exceeded ones flagged).
    pub resources: Vec<ResourceCheck>,
}

/// The user already has `maxActiveJobs` occupying jobs in the queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MaxActiveJobsDetails {
    /// The queue whose rule applies.
    pub queue: String,
    /// The user.
    pub user: i64,
    /// Occupying normal jobs (plus this round's selections).
    pub active: u32,
    /// The rule's maximum.
    pub limit: u32,
}

/// A queue's capacity (the job's queue or an ancestor) holds the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueCapacityDetails {
    /// The queue whose capacity is exceeded (possibly an ancestor of the job's queue).
    pub queue: String,
    /// The job's own queue.
    pub job_queue: String,
    /// Every resource the capacity names (the exceeded ones flagged); usage is all users'.
    pub resources: Vec<ResourceCheck>,
}

/// A timed-out normal job in the same queue competes for the same hardware.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockedByDetails {
    /// The blocking job.
    pub job_id: i64,
    /// Its phase (`Pending` or `Prequeue`).
    pub phase: JobPhase,
    /// The shared queue.
    pub queue: String,
    /// The blocker's resource domain.
    pub domain: String,
}

/// The job was eligible but the round's activation limit was reached before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoundLimitDetails {
    /// `min(prequeueCandidateSize, maxTotalActivationsPerRound)`.
    pub limit: usize,
}

/// A job that would borrow (use room beyond its queue's guarantee) finds no room lent: the
/// cluster's room is held by guarantees and other borrowers (§9, `borrowing_limit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BorrowingLimitDetails {
    /// The job's queue.
    pub job_queue: String,
    /// False when the job said `borrow: never`: it waits for guaranteed room by choice.
    pub may_borrow: bool,
    /// Per shared resource the job asks for: what guarantees kept and jobs hold of the
    /// cluster (`usage`), the request, and the cluster's room (`limit`).
    pub resources: Vec<ResourceCheck>,
}

/// A job within its queue's guarantee waits while the room owed to it is taken back from
/// borrowing jobs of other queues (§9, `reclaiming`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReclaimingDetails {
    /// The job's queue.
    pub job_queue: String,
    /// Per shared resource the job asks for, against the cluster's room (as
    /// [`BorrowingLimitDetails::resources`]).
    pub resources: Vec<ResourceCheck>,
    /// The borrowing jobs being reclaimed for it (terminating); empty until they are chosen.
    #[serde(default)]
    pub victims: Vec<i64>,
    /// When borrowers may be reclaimed for it: its wait began + `reclaimDelaySeconds`, or later
    /// when every borrower is locked or younger than the lender's minimum runtime until then;
    /// `null` once they are chosen, or when no time is known. A submission's answer gives the
    /// delay's end; the watcher's next round, which sees the borrowers, says the rest.
    #[serde(default)]
    pub reclaim_at: Option<chrono::DateTime<chrono::Utc>>,
    /// No job of another queue borrows the room: nothing can be taken back, and the room frees
    /// only as the jobs holding it end (they started before the guarantee, or do not borrow).
    #[serde(default)]
    pub nothing_to_take: bool,
}

/// Room a job uses beyond the guarantee of one queue on its path (§9): the submission's answer
/// lists one per queue that borrows with it admitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BorrowedRoom {
    /// The queue (the job's own or an ancestor) that goes beyond its guarantee.
    pub queue: String,
    /// How much of the job's request lies beyond that queue's guarantee.
    pub resources: super::ResourceList,
}

/// A queue's budget (the job's queue or an ancestor) is spent for this period and an admin
/// chose to hold its normal jobs until the next (`budget_exhausted`, §10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetExhaustedDetails {
    /// The queue whose budget is spent (possibly an ancestor of the job's queue).
    pub queue: String,
    /// The job's own queue.
    pub job_queue: String,
    /// GPU-hours its subtree had used when the budget was found spent.
    pub used_gpu_hours: super::GpuHours,
    /// The budget, GPU-hours per period.
    pub budget_gpu_hours: super::GpuHours,
    /// When the period ends and the hold lifts.
    pub resets_at: chrono::DateTime<chrono::Utc>,
}

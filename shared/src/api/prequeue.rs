//! The prequeue's public face: what the submit form needs to know, and the resource summary
//! of `spec/prequeue.md` §7.

use serde::{Deserialize, Serialize};

use crate::scheduling::{DefaultRequests, Quantity, ResourceList};

/// `GET /api/v1/prequeue/status`: drives the submit form.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PrequeueStatus {
    /// Backfill ("Elastic") submissions are allowed.
    pub backfill_enabled: bool,
    /// Queue quotas and capacities are enforced.
    pub queue_quota_enabled: bool,
    /// The CPU and memory a task gets when the body leaves them out, per kind (the form shows
    /// them as placeholders).
    pub default_requests: DefaultRequests,
    /// A preempted job goes back to the prequeue unless its body says otherwise (the form's
    /// requeue switch starts here).
    #[serde(default)]
    pub requeue_by_default: bool,
}

/// Jobs by where they stand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct JobCounts {
    /// `Running` (and the other occupying phases after it: restarting, completing…).
    pub running: u64,
    /// `Activating` or `Pending`.
    pub pending: u64,
    /// Waiting in the prequeue.
    pub prequeued: u64,
}

/// One resource of the caller's normal jobs in a queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResourceUsage {
    /// `cpu`, `memory`, an accelerator…
    pub resource: String,
    /// Occupying phases (what counts against the quota).
    pub used: Quantity,
    /// Of which running.
    pub running: Quantity,
    /// Of which activating or pending.
    pub pending: Quantity,
    /// Requested by prequeued jobs (not counted in `used`).
    pub prequeued: Quantity,
    /// The quota's limit, when quotas are on and the rule names the resource.
    pub limit: Option<Quantity>,
}

/// The caller's backfill jobs in the queue: never counted against quotas.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BackfillUsage {
    /// Backfill jobs by phase.
    pub jobs: JobCounts,
    /// What the occupying ones use.
    pub used: ResourceList,
}

/// A queue on the path to the root with a capacity: the team's share and its use (all users).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct QueueCapacityUse {
    /// The queue (the job's own or an ancestor).
    pub queue: String,
    /// Its capacity.
    pub capacity: ResourceList,
    /// What occupying normal jobs of every user in it and below use.
    pub used: ResourceList,
    /// While queues share (§9): its guarantee (what it names, or its sub-queues' sum), per
    /// guaranteed resource; empty otherwise.
    #[serde(default, skip_serializing_if = "ResourceList::is_empty")]
    pub guarantee: ResourceList,
    /// While queues share: what it and its sub-queues hold beyond the guarantee now.
    #[serde(default, skip_serializing_if = "ResourceList::is_empty")]
    pub borrowed: ResourceList,
    /// While queues share: its idle guarantee, lent to other queues now.
    #[serde(default, skip_serializing_if = "ResourceList::is_empty")]
    pub lent: ResourceList,
}

/// `GET /api/v1/me/resource-summary?queue=` (`spec/prequeue.md` §7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResourceSummary {
    /// The queue summarised.
    pub queue: String,
    /// Quotas are on.
    pub quota_enabled: bool,
    /// The caller's normal jobs by phase.
    pub jobs: JobCounts,
    /// Per resource (`cpu`, `memory`, each accelerator with usage or a limit).
    pub resources: Vec<ResourceUsage>,
    /// The caller's backfill jobs, apart.
    pub backfill: BackfillUsage,
    /// The queue and each ancestor that has a capacity or, while queues share, a guarantee,
    /// nearest first (`capacity` is empty for a level with a guarantee only).
    pub queues: Vec<QueueCapacityUse>,
}

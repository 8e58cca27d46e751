//! The prequeue: the pure scheduling core (no I/O, `now` passed in).
//!
//! Every decision Anteroom takes about a job lives here as a synchronous function of plain
//! data (`spec/prequeue.md` §4, §5): the service and the watcher load a [`Snapshot`], call the
//! core, and write the outcome. No async, no store, no cluster, no clock, so the rules can be
//! tested exhaustively and benchmarked at 100 000 jobs.
//!
//! - [`snapshot`]: the input structs (config, queues, quotas, jobs, usage, nodes).
//! - [`placement`]: gang placement on allocatable or free capacity (admission, simulation).
//! - [`queue_tree`]: queue tree validation and paths to the root.
//! - [`quota`]: per-user quota and per-queue capacity checks of one request.
//! - [`submit`]: the submission decision.
//! - [`round`]: a watcher round's selection (FCFS or fair share) and waiting reasons.
//! - [`preemption`]: the minimal preemption plan.
//! - [`sharing`]: guarantees, lending and borrowing between queues (§9), and reclaim plans.
//! - `forecast`: [`consideration_order`] and [`forecast()`], start estimates from runtime limits.
//! - [`gauges`]: what the metrics show of a round (per queue and the cluster's accelerators).
//! - [`reason`]: typed reasons, serialized as `{code, message, details}`.

mod fast_map;
mod forecast;
pub mod gauges;
pub mod history;
pub mod placement;
pub mod preemption;
pub mod queue_tree;
pub mod quota;
pub mod reason;
pub mod round;
pub mod sharing;
pub mod snapshot;
pub mod submit;

#[cfg(test)]
pub(crate) mod tests;

pub use forecast::{EstimateBasis, ForecastBounds, StartEstimate, consideration_order, forecast};
pub use placement::{Assignment, CapacityKind, PlacementError, PlacementFailure, node_accepts, place_gang};
pub use preemption::{
    PreemptionOutcome, PreemptionPlan, PreemptionSkip, cluster_may_evict, has_run_long_enough, is_eligible_victim,
    min_cover, plan_preemption,
};
pub use queue_tree::{CapacityExcess, QueueIdx, QueueTree, QueueTreeError};
pub use quota::{LimitCheck, QueueCapacityUsage, QuotaView};
pub use reason::{Reason, ResourceCheck};
pub use round::{PreparedRound, RoundError, RoundOutcome, WaitCauses, WaitingJob, budget_hold_on_path, select_round};
pub use snapshot::{
    ConfigFieldError, InFlightPreemption, JobId, JobSharing, JobSnapshot, NodeSnapshot, PrequeueConfig, QueueQuota,
    QueueSpec, QuotaFieldError, RecentPlan, Snapshot, Taint, TaintEffect, Toleration, TolerationOperator, UsageRow,
    UserId, usage_from_jobs,
};
pub use submit::{
    Submission, SubmitDecision, SubmitRejection, check_node_names, check_request_alone, decide_submission,
    starts_waiting_clock,
};

//! Scheduling vocabulary shared by server and client: quantities, resource lists,
//! resource domains and the enums of `spec/prequeue.md`.
//!
//! Pure data and arithmetic only (it also compiles to `wasm32-unknown-unknown`): the UI uses it
//! to validate forms and show usage against limits; the server's prequeue core builds on it.

mod budget;
mod config;
mod config_change;
mod enums;
mod quantity;
pub mod reasons;
mod resources;
mod sharing;
mod tolerations;

pub use budget::{BudgetHold, BudgetPeriod, GpuHours, QueueBudget, QueueBudgetBody};
pub use config::{
    ConfigFieldError, DefaultQuantity, DefaultRequests, POSITIVE_QUANTITY_MAX_LENGTH, POSITIVE_QUANTITY_PATTERN,
    PrequeueConfig, TaskDefaults, Weight, is_plain_positive_quantity,
};
pub use config_change::PrequeueConfigChange;
pub use enums::{ActivationOrder, JobKind, JobPhase, PreemptionPolicy, ScheduleType, UnknownVariant};
pub use quantity::{MAX_MILLI, Quantity, QuantityError, QuantityFormat};
pub use resources::{
    LimitComparison, NodeSet, ResourceDomain, ResourceError, ResourceList, TaskResourceError, TaskResources,
    domain_blocks, is_accelerator, is_single_node, job_explicit_nodes, job_resources, nodes_overlap,
    task_resource_field,
};
pub use sharing::{
    BorrowPolicy, MAX_PRIORITY, MAX_QUEUE_WEIGHT, MAX_RECLAIM_MIN_RUNTIME_SECONDS, PreemptWithinQueue, PriorityRange,
    QueueSharing,
};
pub use tolerations::{
    MAX_TOLERATIONS_PER_RULE, RuleTarget, Taint, TaintEffect, Toleration, TolerationOperator, TolerationRuleSpec,
    job_tolerations, resource_pattern_problem, toleration_problem,
};

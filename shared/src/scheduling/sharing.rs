//! A queue's sharing settings (`spec/prequeue.md` §9): what it is guaranteed, what it lends,
//! how it weighs against other borrowers, and the per-job rules inside it.
//!
//! Shared by the server (stored as one JSON column, read by the prequeue core) and the UI (the
//! queue form and the tree page draw guaranteed against borrowed room). Every field has a
//! default that means "no sharing", so a queue written before sharing existed reads as one
//! that guarantees nothing, lends everything it does not use and allows no priorities.

use serde::{Deserialize, Serialize};

use super::ResourceList;

/// The lowest and highest priority a job of the queue may ask for (`{0, 0}`: priorities off).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PriorityRange {
    /// The lowest allowed priority.
    pub min: i32,
    /// The highest allowed priority (≥ `min`).
    pub max: i32,
}

impl PriorityRange {
    /// Whether a job's priority is allowed here.
    pub fn allows(&self, priority: i32) -> bool {
        (self.min..=self.max).contains(&priority)
    }

    /// True when the queue allows more than one priority (the form shows the field).
    pub fn is_on(&self) -> bool {
        self.min != self.max
    }
}

/// Whether a higher-priority job may preempt lower-priority jobs of its own queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum PreemptWithinQueue {
    /// Never (default): priorities only order the line.
    #[default]
    Never,
    /// A waiting job preempts lower-priority running jobs of its queue, with reclaim's victim
    /// rules.
    LowerPriority,
}

/// How a normal job may use room beyond its queue's guarantee.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum BorrowPolicy {
    /// Borrow idle guaranteed room of other queues when the own guarantee is used (default);
    /// such a job may be reclaimed.
    #[default]
    IfIdle,
    /// Wait for guaranteed room instead: the job is never reclaimed.
    Never,
}

/// A queue's sharing settings. Absent fields keep their defaults, so every stored queue and
/// every body written by a client that does not know sharing reads as "no sharing".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct QueueSharing {
    /// The room the queue's subtree is entitled to whenever it asks (per resource); `null`:
    /// none, the queue may only borrow.
    pub guarantee: Option<ResourceList>,
    /// At most this much of the unused guarantee is lent to other subtrees; `null`: all of it.
    pub lending_limit: Option<ResourceList>,
    /// Borrowers share lent room in proportion to their weight (≥ 1).
    pub weight: u32,
    /// A job borrowing this queue's room is not reclaimed before it has run this long.
    pub reclaim_min_runtime_seconds: i64,
    /// The priorities its jobs may ask for.
    pub priority_range: PriorityRange,
    /// Whether a higher-priority job preempts lower-priority jobs of the queue.
    pub preempt_within_queue: PreemptWithinQueue,
    /// The most one job may ask for (per resource); `null`: no per-job limit.
    pub max_per_job: Option<ResourceList>,
}

impl Default for QueueSharing {
    fn default() -> Self {
        QueueSharing {
            guarantee: None,
            lending_limit: None,
            weight: 1,
            reclaim_min_runtime_seconds: 0,
            priority_range: PriorityRange::default(),
            preempt_within_queue: PreemptWithinQueue::Never,
            max_per_job: None,
        }
    }
}

/// The most seconds `reclaimMinRuntimeSeconds` may say (a year, as runtime limits).
pub const MAX_RECLAIM_MIN_RUNTIME_SECONDS: i64 = 31_536_000;

/// The largest weight a queue may have.
pub const MAX_QUEUE_WEIGHT: u32 = 1000;

/// The widest priority a job may name, either sign.
pub const MAX_PRIORITY: i32 = 1_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_object_reads_as_no_sharing() {
        let sharing: QueueSharing = serde_json::from_str("{}").expect("valid");
        assert_eq!(sharing, QueueSharing::default());
        assert_eq!(sharing.weight, 1);
        assert!(!sharing.priority_range.is_on());
        assert!(sharing.priority_range.allows(0) && !sharing.priority_range.allows(1));
    }

    #[test]
    fn the_wire_names_follow_the_spec() {
        let json = serde_json::to_value(QueueSharing {
            preempt_within_queue: PreemptWithinQueue::LowerPriority,
            ..QueueSharing::default()
        })
        .expect("serializes");
        assert_eq!(json["preemptWithinQueue"], "lowerPriority");
        assert_eq!(json["reclaimMinRuntimeSeconds"], 0);
        assert_eq!(serde_json::to_value(BorrowPolicy::IfIdle).expect("ok"), "ifIdle");
    }
}

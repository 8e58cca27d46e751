//! Queues and queue quotas (`spec/api.md`, "Queues" and "Prequeue and quotas").

use serde::{Deserialize, Serialize};

use crate::scheduling::{PreemptWithinQueue, PriorityRange, QueueSharing, ResourceList};

/// A queue as a user sees it: whether it is open, where it sits in the tree, the team's
/// capacity and what all users' normal jobs in it and below use now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Queue {
    /// Volcano queue name.
    pub name: String,
    /// Name shown in the UI.
    pub display_name: String,
    /// Open to every user (otherwise members only).
    pub open: bool,
    /// Parent queue; `null` for a root.
    pub parent: Option<String>,
    /// Limits on this queue and its descendants, all users together; `null` = unlimited.
    pub capacity: Option<ResourceList>,
    /// What occupying normal jobs in this queue and below use now (all users).
    pub used: ResourceList,
    /// While queues share (`spec/prequeue.md` §9, quotas on): what this queue and its
    /// sub-queues hold beyond their guarantee now, per guaranteed resource; empty otherwise.
    #[serde(default, skip_serializing_if = "ResourceList::is_empty")]
    pub borrowed: ResourceList,
    /// While queues share: the part of its guarantee this queue and its sub-queues neither use
    /// nor keep — idle room other queues may borrow now; empty otherwise. Like `used`, a
    /// parent's figure includes its children's: sums across levels count room twice.
    #[serde(default, skip_serializing_if = "ResourceList::is_empty")]
    pub lent: ResourceList,
    /// Jobs waiting in the prequeue in this queue itself (all users): how long the line is.
    #[serde(default)]
    pub waiting: u64,
    /// The runtime limit of its jobs that name none; `null`: none.
    #[serde(default)]
    pub default_runtime_seconds: Option<i64>,
    /// The largest runtime limit its jobs may ask for; `null`: any.
    #[serde(default)]
    pub max_runtime_seconds: Option<i64>,
    /// The user id its jobs' containers run as, never root; `null`: as each image says, root
    /// included.
    #[serde(default)]
    pub run_as_user: Option<i64>,
    /// Its sharing settings (`spec/prequeue.md` §9): guarantee, lending limit, weight, reclaim
    /// minimum runtime, priority range, preemption within the queue and per-job limit. Absent
    /// from an older server's answer: the defaults, which share nothing.
    #[serde(flatten)]
    pub sharing: QueueSharing,
}

/// A queue as an admin manages it: a [`Queue`] plus its members.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AdminQueue {
    /// Volcano queue name.
    pub name: String,
    /// Name shown in the UI.
    pub display_name: String,
    /// Open to every user.
    pub open: bool,
    /// Usernames allowed to submit when the queue is not open.
    pub members: Vec<String>,
    /// Parent queue; `null` for a root.
    pub parent: Option<String>,
    /// Aggregate capacity; `null` = unlimited.
    pub capacity: Option<ResourceList>,
    /// What occupying normal jobs in this queue and below use now (all users).
    pub used: ResourceList,
    /// While queues share (`spec/prequeue.md` §9, quotas on): what this queue and its
    /// sub-queues hold beyond their guarantee now, per guaranteed resource; empty otherwise.
    #[serde(default, skip_serializing_if = "ResourceList::is_empty")]
    pub borrowed: ResourceList,
    /// While queues share: the part of its guarantee this queue and its sub-queues neither use
    /// nor keep — idle room other queues may borrow now; empty otherwise. Like `used`, a
    /// parent's figure includes its children's: sums across levels count room twice.
    #[serde(default, skip_serializing_if = "ResourceList::is_empty")]
    pub lent: ResourceList,
    /// Jobs waiting in the prequeue in this queue itself (all users): how long the line is.
    #[serde(default)]
    pub waiting: u64,
    /// The runtime limit of its jobs that name none; `null`: none.
    #[serde(default)]
    pub default_runtime_seconds: Option<i64>,
    /// The largest runtime limit its jobs may ask for; `null`: any.
    #[serde(default)]
    pub max_runtime_seconds: Option<i64>,
    /// The user id its jobs' containers run as (`runAsNonRoot`, `runAsUser`): never root;
    /// `null`: as each image says, root included (for images that need it).
    #[serde(default)]
    pub run_as_user: Option<i64>,
    /// Its sharing settings (`spec/prequeue.md` §9), as [`Queue::sharing`].
    #[serde(flatten)]
    pub sharing: QueueSharing,
}

/// The user id a new queue's jobs run as when its body names none: a non-root user, so a new
/// queue is least-privilege unless an admin says its images need root.
pub const DEFAULT_RUN_AS_USER: i64 = 1000;

/// The largest user id a queue may name (Kubernetes' `runAsUser` is an int64, Linux's a u32
/// minus the overflow id).
pub const MAX_RUN_AS_USER: i64 = 2_147_483_647;

/// A field that tells "absent" (`None`) from `null` (`Some(None)`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// `POST /api/v1/admin/queues` and `PUT /api/v1/admin/queues/{name}` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueueBody {
    /// 1–63 of `a-z 0-9 -`, starting and ending with a letter or digit (a Kubernetes name);
    /// on PUT it must equal the name in the path (queues are not renamed).
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 63, pattern = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
    )]
    pub name: String,
    /// Name shown in the UI, at most 128 characters; the name when absent.
    #[serde(default)]
    pub display_name: Option<String>,
    /// Open to every user.
    pub open: bool,
    /// Usernames allowed to submit when the queue is not open.
    #[serde(default)]
    pub members: Vec<String>,
    /// Parent queue.
    #[serde(default)]
    pub parent: Option<String>,
    /// Aggregate capacity; a resource absent is unlimited.
    #[serde(default)]
    pub capacity: Option<ResourceList>,
    /// The runtime limit of its jobs that name none (60 – 31,536,000 seconds, at most
    /// `maxRuntimeSeconds`); `null`: none (or the maximum, when there is one). Absent: none for
    /// a new queue, what it had for a queue replaced (a client that does not know the field
    /// never resets it).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 60, maximum = 31_536_000))]
    pub default_runtime_seconds: Option<Option<i64>>,
    /// The largest runtime limit its jobs may ask for (60 – 31,536,000 seconds); `null`: any.
    /// Absent: any for a new queue, what it had for a queue replaced.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 60, maximum = 31_536_000))]
    pub max_runtime_seconds: Option<Option<i64>>,
    /// The user id its jobs' containers run as, never root (`runAsNonRoot` with this
    /// `runAsUser`, 1 – 2,147,483,647); `null`: as each image says, root included (for images
    /// that need it). Absent: a new queue gets 1000, a queue replaced keeps what it had.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1, maximum = 2_147_483_647))]
    pub run_as_user: Option<Option<i64>>,
    // Sharing (`spec/prequeue.md` §9). Each field added after the first clients: absent keeps
    // what the queue had (a new queue gets the default, which shares nothing), so a client that
    // does not know sharing never resets it.
    /// The room the queue's subtree is entitled to whenever it asks, per resource (quantities
    /// of zero or more; at most the queue's capacity, and the children's together at most the
    /// parent's); `null`: none, the queue may only borrow. Absent: none for a new queue, what
    /// it had for a queue replaced.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<ResourceList>))]
    pub guarantee: Option<Option<ResourceList>>,
    /// At most this much of the queue's unused guarantee is lent to other queues, per resource
    /// (zero or more); `null`: all of it. Absent: all of it for a new queue, what it had for a
    /// queue replaced.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<ResourceList>))]
    pub lending_limit: Option<Option<ResourceList>>,
    /// Borrowers share lent room in proportion to their weight (1 – 1,000). Absent: 1 for a
    /// new queue, what it had for a queue replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1000))]
    pub weight: Option<u32>,
    /// A job borrowing this queue's room is not reclaimed before it has run this long
    /// (0 – 31,536,000 seconds). Absent: 0 for a new queue, what it had for a queue replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 31_536_000))]
    pub reclaim_min_runtime_seconds: Option<i64>,
    /// The priorities its jobs may ask for (`min` ≤ `max`, each within ±1,000,000; `{0, 0}`:
    /// priorities off). Absent: off for a new queue, what it had for a queue replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_range: Option<PriorityRange>,
    /// Whether a higher-priority job preempts lower-priority jobs of the queue. Absent:
    /// `never` for a new queue, what it had for a queue replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempt_within_queue: Option<PreemptWithinQueue>,
    /// The most one job of the queue may ask for, per resource (zero or more); `null`: no
    /// per-job limit. Absent: none for a new queue, what it had for a queue replaced.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<ResourceList>))]
    pub max_per_job: Option<Option<ResourceList>>,
}

impl QueueBody {
    /// The sharing settings a write of this body leaves on the queue: each field the body
    /// names, and for each it leaves out what `existing` had (a new queue: the default).
    pub fn sharing_over(&self, existing: QueueSharing) -> QueueSharing {
        QueueSharing {
            guarantee: self.guarantee.clone().unwrap_or(existing.guarantee),
            lending_limit: self.lending_limit.clone().unwrap_or(existing.lending_limit),
            weight: self.weight.unwrap_or(existing.weight),
            reclaim_min_runtime_seconds: self
                .reclaim_min_runtime_seconds
                .unwrap_or(existing.reclaim_min_runtime_seconds),
            priority_range: self.priority_range.unwrap_or(existing.priority_range),
            preempt_within_queue: self.preempt_within_queue.unwrap_or(existing.preempt_within_queue),
            max_per_job: self.max_per_job.clone().unwrap_or(existing.max_per_job),
        }
    }

    /// The runtime limit of a job of this queue that asks for `asked`: what it asks, else the
    /// queue's default, else its maximum; `Err` with the maximum when it asks for more.
    pub fn runtime_limit(default: Option<i64>, max: Option<i64>, asked: Option<i64>) -> Result<Option<i64>, i64> {
        match (asked, max) {
            (Some(asked), Some(max)) if asked > max => Err(max),
            (Some(asked), _) => Ok(Some(asked)),
            (None, _) => Ok(default.or(max)),
        }
    }
}

/// A queue quota: per-user limits inside one queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct QueueQuotaRule {
    /// Database id.
    pub id: i64,
    /// The queue the rule applies to.
    pub queue: String,
    /// Limits for each user separately; a resource absent is unlimited.
    pub limits: ResourceList,
    /// Occupying normal jobs one user may have in the queue; `null` = unlimited.
    pub max_active_jobs: Option<u32>,
}

/// `GET /api/v1/admin/queue-usage`: what one user's occupying normal jobs in one queue use now
/// — the figure a quota rule's per-user limits are held against (the quota table shows it
/// beside each rule).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct QueueUserUse {
    /// The queue (its own jobs only, not its descendants': a rule is per queue).
    pub queue: String,
    /// The user's username.
    pub user: String,
    /// Σ requests of the user's occupying normal jobs there.
    pub used: ResourceList,
    /// How many such jobs (held against `maxActiveJobs`).
    pub active_jobs: u32,
}

/// `POST /api/v1/admin/queue-quotas` and `PUT /api/v1/admin/queue-quotas/{id}` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueueQuotaBody {
    /// The queue (must exist).
    pub queue: String,
    /// Limits for each user; quantities of zero or more.
    pub limits: ResourceList,
    /// At least 1; absent = unlimited.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub max_active_jobs: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::Quantity;

    fn body(json: serde_json::Value) -> QueueBody {
        serde_json::from_value(json).expect("a valid body")
    }

    #[test]
    fn sharing_left_out_is_kept_null_clears_and_named_replaces() {
        let gpus = |n| ResourceList::new().with("nvidia.com/a100", Quantity::from_units(n));
        let stored = QueueSharing {
            guarantee: Some(gpus(4)),
            lending_limit: Some(gpus(1)),
            weight: 3,
            reclaim_min_runtime_seconds: 600,
            priority_range: PriorityRange { min: -5, max: 5 },
            preempt_within_queue: PreemptWithinQueue::LowerPriority,
            max_per_job: Some(gpus(2)),
        };
        // A client that knows nothing of sharing.
        let old = body(serde_json::json!({"name": "team", "open": true}));
        assert_eq!(old.sharing_over(stored.clone()), stored);
        assert_eq!(old.sharing_over(QueueSharing::default()), QueueSharing::default());
        // `null` clears a list; a named field replaces; the rest is kept.
        let new = body(serde_json::json!({
            "name": "team", "open": true, "guarantee": null, "maxPerJob": {"nvidia.com/a100": "1"}, "weight": 7
        }));
        assert_eq!(
            new.sharing_over(stored.clone()),
            QueueSharing {
                guarantee: None,
                max_per_job: Some(gpus(1)),
                weight: 7,
                ..stored
            }
        );
        // And the body writes back what it read: absent stays absent, null stays null.
        let text = serde_json::to_value(&new).expect("serializes");
        assert!(text["guarantee"].is_null() && text.get("guarantee").is_some());
        assert!(text.get("lendingLimit").is_none());
    }
}

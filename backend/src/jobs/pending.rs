//! A submission on its way to admission: what passed the checks outside the lock (steps 1–2)
//! with everything the rest needs, and the owner's job counts steps 6 reads. Below both the
//! admission (`admit.rs`) and the batch's reads (`batch_reads.rs`), which hand these around.

use anteroom_shared::api::jobs::JobBody;
use anteroom_shared::scheduling::{PrequeueConfig, ResourceList, TaskResources};

use crate::prequeue::NodeSnapshot;
use crate::users;

/// A submission that passed steps 1–2 outside the lock, with everything the rest needs.
#[derive(Debug)]
pub struct Pending {
    /// The caller.
    pub user: users::entity::Model,
    /// The body.
    pub body: JobBody,
    /// Its tasks as the core sees them.
    pub tasks: Vec<TaskResources>,
    /// Σ replicas × requests.
    pub request: ResourceList,
    /// The cluster's nodes, read before the lock.
    pub nodes: Vec<NodeSnapshot>,
    /// The volume catalogue, read before the lock when the body names volumes.
    pub catalogue: Vec<anteroom_shared::api::volumes::Volume>,
    /// The idempotency key and the body's hash.
    pub key: Option<(String, String)>,
    /// The settings of this submission.
    pub config: PrequeueConfig,
    /// Where its submission time (and so its timeout) comes from.
    pub clock: std::sync::Arc<dyn crate::cluster::clock::Clock>,
}

/// The caller's jobs as steps 6 needs them, each counted up to its limit.
#[derive(Debug, Clone, Copy)]
pub struct OwnerCounts {
    /// Prequeued jobs.
    pub prequeued: u64,
    /// Jobs in any phase but a terminal one.
    pub unfinished: u64,
}

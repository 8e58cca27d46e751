//! Anteroom's queues as Volcano Queues (`mirror_queues`, `spec/prequeue.md` §9 "The cluster"):
//! every queue of the tree exists in Volcano with its parent, `capability` = its capacity, its
//! weight and `reclaimable: false`, so Volcano never reclaims on its own (Anteroom decides) and
//! a job sent around Anteroom still meets the tree's caps.
//!
//! Decisions:
//! - *Ownership by labels*: a mirrored queue carries [`MANAGED_BY_LABEL`] and this
//!   installation's [`INSTALLATION_LABEL`], as Anteroom's Jobs do. A Volcano queue of the same
//!   name without them — one an administrator made, Volcano's own `default` — or another
//!   installation's (queues are cluster-wide, installations may share a cluster) is never
//!   changed or deleted: the sync answers Ok because the queue exists, as without mirroring.
//! - *Parent*: a root of Anteroom's tree gets `root`, the name of Volcano's root of hierarchical
//!   queues (Volcano's webhook and controllers treat `""` and `root` alike).
//! - *Get, then create or replace*: the fake apiserver of the tests serves both, and a replace
//!   carries the `resourceVersion` read, so a change in between is a `409` and is read again
//!   rather than overwritten. Only Anteroom's fields (its labels, `parent`, `capability`,
//!   `weight`, `reclaimable`) are set on the object read; the rest — Volcano's defaults,
//!   `deserved`, an administrator's annotations — stays. An object already as wanted is not
//!   written: a second sync sends nothing.
//! - *No state*: `Open` is `status.state`, a subresource Volcano's controller sets (a new queue
//!   opens); Anteroom writes no status. A mirrored queue an administrator closed stays closed,
//!   and jobs for it are refused naming it.
//! - *Elastic jobs beside the tree*: they go to [`crate::cluster::ELASTIC_QUEUE`], a root
//!   queue without capability made at start with the others — Volcano would count them against
//!   their own queue's capability, which Anteroom never does (§1).
//! - *At start* ([`KubeApi::create_missing_queue`]) only missing queues are created; a stale
//!   one is brought up to date by the next write of its queue. Updating at start as well could
//!   race a queue write on another replica (which tells the cluster before it commits) and put
//!   the old values back.

use std::collections::BTreeMap;

use anteroom_shared::scheduling::ResourceList;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::{Resource, ResourceExt};

use super::api::{FIELD_MANAGER, KubeApi, is_not_found, map_error};
use super::crd::{VolcanoQueue, VolcanoQueueSpec};
use super::manifest::{INSTALLATION_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::cluster::{ClusterError, ClusterQueue};

/// Volcano's root of hierarchical queues: the parent of every root of Anteroom's tree.
pub const VOLCANO_ROOT_QUEUE: &str = "root";

/// The Volcano Queue that mirrors `queue` for `installation`: labelled as Anteroom's, with its
/// parent ([`VOLCANO_ROOT_QUEUE`] for a root), its capacity as `capability` (quantities as
/// strings; none when it has no capacity), its weight, and never reclaimable.
pub fn volcano_queue(queue: &ClusterQueue, installation: &str) -> VolcanoQueue {
    VolcanoQueue {
        metadata: ObjectMeta {
            name: Some(queue.name.clone()),
            labels: Some(BTreeMap::from([
                (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
                (INSTALLATION_LABEL.to_owned(), installation.to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        spec: VolcanoQueueSpec {
            weight: Some(i32::try_from(queue.weight).unwrap_or(i32::MAX)),
            capability: queue.capability.as_ref().filter(|c| !c.is_empty()).map(capability),
            reclaimable: Some(false),
            parent: Some(queue.parent.clone().unwrap_or_else(|| VOLCANO_ROOT_QUEUE.to_owned())),
            other: BTreeMap::new(),
        },
        status: None,
    }
}

/// A capacity as Volcano's `capability`. A zero stays: it is a cap of nothing, not no cap.
fn capability(capacity: &ResourceList) -> BTreeMap<String, K8sQuantity> {
    capacity
        .iter()
        .map(|(name, quantity)| (name.to_owned(), K8sQuantity(quantity.to_string())))
        .collect()
}

/// Whether `queue` is one this installation mirrors (its labels say so), and so Anteroom's to
/// change and delete.
pub fn is_mirrored(queue: &VolcanoQueue, installation: &str) -> bool {
    let labels = queue.labels();
    labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY_VALUE)
        && labels.get(INSTALLATION_LABEL).map(String::as_str) == Some(installation)
}

/// A Volcano queue as [`crate::cluster::Cluster::queues`] reports it: open when Volcano says
/// `Open`, `root` as no parent, a capability Anteroom cannot read as none.
pub fn cluster_queue(queue: &VolcanoQueue) -> ClusterQueue {
    let spec = &queue.spec;
    ClusterQueue {
        name: queue.name_any(),
        open: queue.status.as_ref().and_then(|s| s.state.as_deref()) == Some("Open"),
        parent: spec.parent.clone().filter(|p| !p.is_empty() && p != VOLCANO_ROOT_QUEUE),
        capability: spec
            .capability
            .as_ref()
            .and_then(|c| ResourceList::parse_map(c.iter().map(|(k, v)| (k.as_str(), v.0.as_str()))).ok()),
        weight: spec.weight.and_then(|w| u32::try_from(w).ok()).unwrap_or(1),
    }
}

/// What syncing one queue asks of the apiserver, given what it has.
#[derive(Debug, Clone, PartialEq)]
pub enum QueueChange {
    /// No Volcano queue of that name: create the mirror.
    Create,
    /// Ours but not as wanted: replace it with this (the object read, with Anteroom's fields set).
    Replace(Box<VolcanoQueue>),
    /// Ours and as wanted: nothing to send.
    UpToDate,
    /// Not ours (no labels of this installation): left as it is.
    NotOurs,
}

impl QueueChange {
    /// Whether nothing needs sending.
    pub fn is_up_to_date(&self) -> bool {
        matches!(self, QueueChange::UpToDate)
    }
}

/// What to do to make `existing` (`None`: there is none) the mirror `wanted` of this
/// `installation`.
pub fn change(wanted: &VolcanoQueue, existing: Option<&VolcanoQueue>, installation: &str) -> QueueChange {
    let Some(existing) = existing else {
        return QueueChange::Create;
    };
    if !is_mirrored(existing, installation) {
        return QueueChange::NotOurs;
    }
    let mut updated = existing.clone();
    let labels = updated.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.extend(wanted.labels().iter().map(|(k, v)| (k.clone(), v.clone())));
    updated.spec = VolcanoQueueSpec {
        other: existing.spec.other.clone(),
        ..wanted.spec.clone()
    };
    if updated.metadata.labels == existing.metadata.labels && updated.spec == existing.spec {
        return QueueChange::UpToDate;
    }
    // Status is a subresource: the apiserver ignores it in a replace, so it is not sent.
    updated.status = None;
    QueueChange::Replace(Box::new(updated))
}

/// What a sync did, for its log line and its tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mirrored {
    /// The Volcano queue was created.
    Created,
    /// The mirror was replaced with Anteroom's values.
    Updated,
    /// The mirror was already as wanted: nothing sent.
    UpToDate,
    /// A Volcano queue of that name that is not Anteroom's exists and was left alone.
    NotOurs,
}

impl KubeApi {
    fn queues(&self) -> Api<VolcanoQueue> {
        Api::all(self.client().clone())
    }

    fn write_params() -> PostParams {
        PostParams {
            dry_run: false,
            field_manager: Some(FIELD_MANAGER.to_owned()),
        }
    }

    /// The Volcano queue `name`, if it exists (a `404` about anything else — the Queue CRD not
    /// served — is an error, as for Jobs).
    pub async fn get_queue(&self, name: &str) -> Result<Option<VolcanoQueue>, ClusterError> {
        match self.queues().get(name).await {
            Ok(queue) => Ok(Some(queue)),
            Err(kube::Error::Api(status)) if is_not_found(&status, name) => Ok(None),
            Err(e) => Err(map_error(e)),
        }
    }

    /// Makes the Volcano queue `queue.name` the mirror of `queue`: read it, then create it,
    /// replace Anteroom's fields on it, or leave it (already as wanted, or not Anteroom's). A
    /// create or replace that meets a change made in between (`409`) reads again, once.
    pub async fn mirror_queue(&self, queue: &ClusterQueue) -> Result<Mirrored, ClusterError> {
        let installation = &self.settings().installation;
        let wanted = volcano_queue(queue, installation);
        for _ in 0..2 {
            let existing = self.get_queue(&queue.name).await?;
            let written = match change(&wanted, existing.as_ref(), installation) {
                QueueChange::UpToDate => return Ok(Mirrored::UpToDate),
                QueueChange::NotOurs => return Ok(Mirrored::NotOurs),
                QueueChange::Create => self
                    .queues()
                    .create(&Self::write_params(), &wanted)
                    .await
                    .map(|_| Mirrored::Created),
                QueueChange::Replace(updated) => self
                    .queues()
                    .replace(&queue.name, &Self::write_params(), &updated)
                    .await
                    .map(|_| Mirrored::Updated),
            };
            match written {
                Ok(done) => return Ok(done),
                // Created or changed by someone else since the read: read again.
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(e) => return Err(map_error(e)),
            }
        }
        Err(ClusterError::Unavailable(format!(
            "the Volcano queue `{}` kept changing while Anteroom mirrored it; retry",
            queue.name
        )))
    }

    /// Creates the mirror of `queue` when no Volcano queue of its name exists (one found after
    /// all — `409` — is left as it is); true when it created it.
    pub async fn create_missing_queue(&self, queue: &ClusterQueue) -> Result<bool, ClusterError> {
        let wanted = volcano_queue(queue, &self.settings().installation);
        match self.queues().create(&Self::write_params(), &wanted).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(e) => Err(map_error(e)),
        }
    }

    /// Deletes the Volcano queue `name` if it is a mirror of this installation; true when it
    /// did. One that is not Anteroom's is left alone, one that is not there is success. The
    /// delete carries the uid and version read, so a queue replaced or relabelled in between
    /// is not deleted (`409`: retry).
    pub async fn delete_mirrored_queue(&self, name: &str) -> Result<bool, ClusterError> {
        let Some(existing) = self.get_queue(name).await? else {
            return Ok(false);
        };
        if !is_mirrored(&existing, &self.settings().installation) {
            tracing::info!(
                queue = name,
                "not deleting the Volcano queue: it is not one Anteroom mirrors"
            );
            return Ok(false);
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: existing.meta().uid.clone(),
                resource_version: existing.meta().resource_version.clone(),
            }),
            ..DeleteParams::default()
        };
        match self.queues().delete(name, &params).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if is_not_found(&status, name) => Ok(false),
            Err(e) => Err(map_error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use anteroom_shared::scheduling::Quantity;

    use super::*;

    const INSTALLATION: &str = "inst-1";

    fn lab() -> ClusterQueue {
        ClusterQueue {
            capability: Some(ResourceList::new().with("nvidia.com/a100", Quantity::from_units(8))),
            ..ClusterQueue::new("lab", true)
        }
    }

    #[test]
    fn kube_a_root_queue_is_mirrored_under_volcanos_root_with_its_capacity_and_never_reclaimable() {
        let queue = serde_json::to_value(volcano_queue(&lab(), INSTALLATION)).expect("json");
        assert_eq!(
            queue,
            serde_json::json!({
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                "metadata": {"name": "lab", "labels": {"app.kubernetes.io/managed-by": "anteroom",
                                                       "anteroom.io/installation": INSTALLATION}},
                "spec": {"parent": "root", "capability": {"nvidia.com/a100": "8"}, "weight": 1,
                         "reclaimable": false}
            })
        );
        let child = ClusterQueue {
            parent: Some("lab".into()),
            weight: 3,
            capability: Some(ResourceList::new()),
            ..ClusterQueue::new("cv", true)
        };
        let child = volcano_queue(&child, INSTALLATION);
        assert_eq!(child.spec.parent.as_deref(), Some("lab"));
        assert_eq!(child.spec.weight, Some(3));
        assert_eq!(child.spec.capability, None, "an empty capacity caps nothing");
    }

    #[test]
    fn kube_only_a_mirror_of_this_installation_is_changed_and_only_when_it_differs() {
        let wanted = volcano_queue(&lab(), INSTALLATION);
        assert_eq!(change(&wanted, None, INSTALLATION), QueueChange::Create);
        assert_eq!(change(&wanted, Some(&wanted), INSTALLATION), QueueChange::UpToDate);
        let mut admins = wanted.clone();
        admins.metadata.labels = None;
        assert_eq!(change(&wanted, Some(&admins), INSTALLATION), QueueChange::NotOurs);
        assert_eq!(change(&wanted, Some(&wanted), "another"), QueueChange::NotOurs);
        // Volcano's defaults and an admin's fields stay; only Anteroom's are set.
        let mut read = wanted.clone();
        read.spec.weight = Some(5);
        read.spec.other.insert("preemptable".into(), true.into());
        read.metadata.resource_version = Some("7".into());
        let QueueChange::Replace(updated) = change(&wanted, Some(&read), INSTALLATION) else {
            panic!("a stale mirror is replaced");
        };
        assert_eq!(updated.spec.weight, Some(1));
        assert_eq!(updated.spec.other.get("preemptable"), Some(&true.into()));
        assert_eq!(
            updated.metadata.resource_version.as_deref(),
            Some("7"),
            "replaced as read"
        );
    }

    #[test]
    fn kube_a_volcano_queue_reads_back_as_the_queue_it_mirrors() {
        let child = ClusterQueue {
            parent: Some("lab".into()),
            weight: 3,
            ..lab()
        };
        for queue in [lab(), child] {
            let mut mirrored = volcano_queue(&queue, INSTALLATION);
            mirrored.status = Some(super::super::crd::VolcanoQueueStatus {
                state: Some("Open".into()),
            });
            assert_eq!(cluster_queue(&mirrored), queue);
        }
    }
}

//! The write half of the kube adapter: create and delete Volcano Jobs, delete their pods, cordon
//! nodes. Built from a plain [`kube::Client`], so tests hand it a mock service and assert every
//! request it sends (`tests::mock_api`).
//!
//! Every write is idempotent, as a retry after a crash or a timeout must be harmless:
//! - create: `409 AlreadyExists` is success when the existing object carries our labels —
//!   this installation's id and this job's id (it is this job from an earlier attempt) —,
//!   `Conflict` otherwise; with our labels but another job uid it is another job that had the
//!   same id (a restored or rolled-back database): `NameTakenByAnotherJob`, never adopted; an
//!   existing object that is being deleted is neither: the caller retries once it is gone;
//! - delete: `404 NotFound` *of that object* is success; a 404 about anything else (the Volcano
//!   CRD or the namespace missing) is not; an `ar-<id>` of another installation is not ours to
//!   delete.
//!
//! Errors are classified for the watcher ([`map_error`]): only an answer about the manifest
//! itself is the job's fault (`Rejected`); everything about the installation or the cluster —
//! credentials, RBAC, a missing CRD, an unreachable or overloaded apiserver — is `Unavailable`,
//! retried and never counted against the job.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy};
use kube::{Client, ResourceExt};

use kube::core::Status;

use super::crd::VolcanoJob;
use super::manifest::{
    self, INSTALLATION_LABEL, JOB_ID_LABEL, JOB_UID_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, ManifestSettings,
    PREEMPTABLE_KEY,
};
use crate::cluster::{ClusterError, JobSpec, cluster_name, is_same_job};
use crate::prequeue::JobId;

/// Field manager recorded in `managedFields`, so `kubectl get -o yaml` shows who wrote what.
pub const FIELD_MANAGER: &str = "anteroom";

/// The adapter's writes against one namespace.
#[derive(Clone)]
pub struct KubeApi {
    client: Client,
    settings: ManifestSettings,
}

impl KubeApi {
    /// Writes through `client` into `settings.namespace` (where Anteroom's Volcano Jobs live),
    /// manifests as `settings` say.
    pub fn new(client: Client, settings: ManifestSettings) -> Self {
        Self { client, settings }
    }

    /// The namespace of Anteroom's jobs.
    pub fn namespace(&self) -> &str {
        &self.settings.namespace
    }

    /// How manifests are written (namespace, installation id, priority classes, TTL).
    pub fn settings(&self) -> &ManifestSettings {
        &self.settings
    }

    /// The client, for the reflectors built on the same connection.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn jobs(&self) -> Api<VolcanoJob> {
        Api::namespaced(self.client.clone(), self.namespace())
    }

    /// Creates `ar-<id>`. `409` with our labels — this installation, this job id, and this
    /// job's uid or none (an object created before uids) — is success (an earlier attempt got
    /// through); `409` on an object of ours with another uid is
    /// [`ClusterError::NameTakenByAnotherJob`] (a job of a restored or rolled-back database
    /// reusing the id); `409` on anyone else's object is [`ClusterError::Conflict`]; `409` on an
    /// object being deleted is `Unavailable`: it is the predecessor on its way out (a job
    /// re-created after a preemption), and the next attempt, after it is gone, creates the new
    /// one.
    pub async fn create_job(&self, spec: &JobSpec) -> Result<(), ClusterError> {
        let manifest = manifest::volcano_job(spec, &self.settings);
        let namespace = self.namespace();
        let params = PostParams {
            dry_run: false,
            field_manager: Some(FIELD_MANAGER.to_owned()),
        };
        match self.jobs().create(&params, &manifest).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let name = spec.cluster_name();
                let existing = self.get_job(&name).await?;
                match existing {
                    Some(job) if job.metadata.deletion_timestamp.is_some() => Err(ClusterError::Unavailable(format!(
                        "{namespace}/{name} is still being deleted; retry once it is gone"
                    ))),
                    Some(job) if self.is_ours(&job, spec.id) => {
                        let found = job.labels().get(JOB_UID_LABEL);
                        if is_same_job(&spec.cluster_uid, found.map(String::as_str)) {
                            Ok(())
                        } else {
                            Err(ClusterError::NameTakenByAnotherJob {
                                object: format!("{namespace}/{name}"),
                                found: found.cloned().unwrap_or_default(),
                                expected: spec.cluster_uid.clone(),
                            })
                        }
                    }
                    Some(_) => Err(ClusterError::Conflict(format!("{namespace}/{name}"))),
                    // Deleted between our create and our check: the next attempt creates it.
                    None => Err(ClusterError::Unavailable(format!(
                        "{namespace}/{name} disappeared while checking who owns it; retry"
                    ))),
                }
            }
            Err(e) => Err(map_error(e)),
        }
    }

    /// Deletes `ar-<id>` with `propagationPolicy: Foreground` and the grace period, then each of
    /// `pods` (the job's pods the caller knows of) with the same grace period.
    ///
    /// Only our own `ar-<id>`: the object is read first, and one of another installation (or of
    /// this one before its database was reset) is left alone — for us the job is not there.
    /// The delete carries the uid read as a precondition, so an object replaced in between is
    /// not deleted either (`409`: retry).
    ///
    /// Foreground, not Background: the Volcano Job stays (with a deletion timestamp) until the
    /// garbage collector has removed its pods, so "the job is still listed" means "its pods may
    /// still hold capacity", and a re-created `ar-<id>` cannot meet pods of its predecessor.
    ///
    /// The pods are deleted directly because `gracePeriodSeconds` on the Job only applies to the
    /// Job object: the garbage collector deletes dependents with their own
    /// `terminationGracePeriodSeconds`. Deleting the pods with the preemption grace period gives
    /// them exactly that long to checkpoint (a later delete may shorten a pod's grace, never
    /// lengthen it). `404` on the job or a pod is success: it is already gone.
    pub async fn delete_job(
        &self,
        id: JobId,
        cluster_uid: &str,
        grace_seconds: u32,
        pods: &[String],
    ) -> Result<(), ClusterError> {
        let name = cluster_name(id);
        match self.get_job(&name).await? {
            Some(job)
                if self.is_ours(&job, id)
                    && is_same_job(cluster_uid, job.labels().get(JOB_UID_LABEL).map(String::as_str)) =>
            {
                let params = DeleteParams {
                    grace_period_seconds: Some(grace_seconds),
                    propagation_policy: Some(PropagationPolicy::Foreground),
                    preconditions: job.metadata.uid.clone().map(|uid| Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                ignore_not_found(self.jobs().delete(&name, &params).await, &name)?;
            }
            Some(_) => {
                tracing::warn!(
                    job.id = id,
                    object = %format!("{}/{name}", self.namespace()),
                    "not deleting an object of that name that another installation, or another job of this id, created"
                );
                // Its pods are that installation's too: leave them alone as well.
                return Ok(());
            }
            None => {}
        }
        let pod_api: Api<Pod> = Api::namespaced(self.client.clone(), self.namespace());
        let pod_params = DeleteParams {
            grace_period_seconds: Some(grace_seconds),
            ..DeleteParams::default()
        };
        for pod in pods {
            ignore_not_found(pod_api.delete(pod, &pod_params).await, pod)?;
        }
        Ok(())
    }

    /// Sets `volcano.sh/preemptable` (label and annotation, as the manifest writes it) on each
    /// of `pods` with a JSON merge patch; a pod already gone (`404`) is skipped.
    pub async fn set_pods_preemptable(&self, pods: &[String], preemptable: bool) -> Result<(), ClusterError> {
        let pod_api: Api<Pod> = Api::namespaced(self.client.clone(), self.namespace());
        let value = preemptable.to_string();
        let patch = serde_json::json!({
            "metadata": {
                "labels": { PREEMPTABLE_KEY: value },
                "annotations": { PREEMPTABLE_KEY: value },
            }
        });
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        for pod in pods {
            ignore_not_found(pod_api.patch(pod, &params, &Patch::Merge(&patch)).await, pod)?;
        }
        Ok(())
    }

    /// Cordons (`schedulable = false`) or uncordons a node with a JSON merge patch of
    /// `spec.unschedulable`, as `kubectl cordon` does. `404` about that node is
    /// [`ClusterError::NodeNotFound`].
    pub async fn set_node_schedulable(&self, node: &str, schedulable: bool) -> Result<(), ClusterError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let patch = serde_json::json!({ "spec": { "unschedulable": !schedulable } });
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        match nodes.patch(node, &params, &Patch::Merge(&patch)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if is_not_found(&status, node) => {
                Err(ClusterError::NodeNotFound(node.to_owned()))
            }
            Err(e) => Err(map_error(e)),
        }
    }

    /// `ar-<id>` if it exists. Not kube's `get_opt`: that reads any `NotFound` as "no such
    /// object", including the one about a Volcano API version that is not served.
    async fn get_job(&self, name: &str) -> Result<Option<VolcanoJob>, ClusterError> {
        match self.jobs().get(name).await {
            Ok(job) => Ok(Some(job)),
            Err(kube::Error::Api(status)) if is_not_found(&status, name) => Ok(None),
            Err(e) => Err(map_error(e)),
        }
    }

    /// Whether an existing `ar-<id>` is the object an earlier attempt of this installation
    /// created for this job. Without the installation label it is not: a reset database
    /// numbers its jobs from 1 again, and its `ar-7` is not the `ar-7` of before.
    fn is_ours(&self, job: &VolcanoJob, id: JobId) -> bool {
        let labels = job.labels();
        labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY_VALUE)
            && labels.get(INSTALLATION_LABEL) == Some(&self.settings.installation)
            && labels.get(JOB_ID_LABEL) == Some(&id.to_string())
    }
}

/// Whether a `404` says that the object `name` does not exist — not that the resource type
/// (a Volcano CRD not installed), the namespace or the API path is missing. The apiserver names
/// the missing object in `details.name`; a missing CRD answers a bare 404 (often not even a
/// `Status`) without it.
pub(super) fn is_not_found(status: &Status, name: &str) -> bool {
    status.code == 404 && status.reason == "NotFound" && status.details.as_ref().is_some_and(|d| d.name == name)
}

fn ignore_not_found<T>(result: Result<T, kube::Error>, name: &str) -> Result<(), ClusterError> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if is_not_found(&status, name) => Ok(()),
        Err(e) => Err(map_error(e)),
    }
}

/// Whether the apiserver refused the request on behalf of an admission webhook (Volcano's
/// validating webhook checks the queue, the tasks, the plugins). Webhooks may pick any 4xx code,
/// 403 included, so the message is what tells a denial from RBAC's 403.
fn is_webhook_denial(status: &Status) -> bool {
    status.message.contains("admission webhook") && status.message.contains("denied the request")
}

/// kube's error → the adapter's, for the watcher: is it the job's fault (`Rejected`: do not
/// retry the same manifest) or the cluster's (`Unavailable`: retry later, never counted against
/// the job)?
///
/// - `400 BadRequest`, `422 Invalid`, `413` (manifest too large) and an admission webhook's
///   denial (any code) are answers about the manifest: `Rejected`;
/// - `401`/`403` (credentials expired, RBAC missing), `404` (a Volcano CRD not installed, the
///   namespace missing — object-level 404s are handled by the callers before this), `405`,
///   `409`, `408`/`429`/5xx, and everything on the way (connection, TLS, auth refresh, a
///   proxy's page that is not JSON) are about the installation or the cluster: `Unavailable`;
/// - a request kube could not even build is a bug in the manifest: `Rejected`.
pub fn map_error(error: kube::Error) -> ClusterError {
    match error {
        kube::Error::Api(status) => {
            let text = format!("{} {}: {}", status.code, status.reason, status.message);
            match status.code {
                400 | 413 | 422 => ClusterError::Rejected(text),
                _ if is_webhook_denial(&status) => ClusterError::Rejected(text),
                _ => ClusterError::Unavailable(text),
            }
        }
        e @ (kube::Error::BuildRequest(_) | kube::Error::HttpError(_)) => ClusterError::Rejected(e.to_string()),
        other => ClusterError::Unavailable(other.to_string()),
    }
}

//! The write half of the kube adapter: create and delete Volcano Jobs, delete their pods, cordon
//! nodes. Built from a plain [`kube::Client`], so tests hand it a mock service and assert every
//! request it sends (`tests::mock_api`).
//!
//! Every write is idempotent, as a retry after a crash or a timeout must be harmless:
//! - create: `409 AlreadyExists` is success when the existing object carries our labels (it is
//!   this job from an earlier attempt), `Conflict` otherwise;
//! - delete: `404 NotFound` is success.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::{Client, ResourceExt};

use super::crd::VolcanoJob;
use super::manifest::{self, JOB_ID_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::cluster::{ClusterError, JobSpec, cluster_name};
use crate::prequeue::JobId;

/// Field manager recorded in `managedFields`, so `kubectl get -o yaml` shows who wrote what.
pub const FIELD_MANAGER: &str = "anteroom";

/// The adapter's writes against one namespace.
#[derive(Clone)]
pub struct KubeApi {
    client: Client,
    namespace: String,
}

impl KubeApi {
    /// Writes through `client` into `namespace` (where Anteroom's Volcano Jobs live).
    pub fn new(client: Client, namespace: impl Into<String>) -> Self {
        Self {
            client,
            namespace: namespace.into(),
        }
    }

    /// The namespace of Anteroom's jobs.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The client, for the reflectors built on the same connection.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn jobs(&self) -> Api<VolcanoJob> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Creates `ar-<id>`. `409` with our labels and the same job id is success (an earlier
    /// attempt got through); `409` on someone else's object is [`ClusterError::Conflict`].
    pub async fn create_job(&self, spec: &JobSpec) -> Result<(), ClusterError> {
        let manifest = manifest::volcano_job(spec, &self.namespace);
        let params = PostParams {
            dry_run: false,
            field_manager: Some(FIELD_MANAGER.to_owned()),
        };
        match self.jobs().create(&params, &manifest).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let name = spec.cluster_name();
                let existing = self.jobs().get_opt(&name).await.map_err(map_error)?;
                match existing {
                    Some(job) if is_ours(&job, spec.id) => Ok(()),
                    Some(_) => Err(ClusterError::Conflict(format!("{}/{name}", self.namespace))),
                    // Deleted between our create and our check: the next attempt creates it.
                    None => Err(ClusterError::Unavailable(format!(
                        "{}/{name} disappeared while checking who owns it; retry",
                        self.namespace
                    ))),
                }
            }
            Err(e) => Err(map_error(e)),
        }
    }

    /// Deletes `ar-<id>` with `propagationPolicy: Foreground` and the grace period, then each of
    /// `pods` (the job's pods the caller knows of) with the same grace period.
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
    pub async fn delete_job(&self, id: JobId, grace_seconds: u32, pods: &[String]) -> Result<(), ClusterError> {
        let params = DeleteParams {
            grace_period_seconds: Some(grace_seconds),
            propagation_policy: Some(PropagationPolicy::Foreground),
            ..DeleteParams::default()
        };
        ignore_not_found(self.jobs().delete(&cluster_name(id), &params).await)?;
        let pod_api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let pod_params = DeleteParams {
            grace_period_seconds: Some(grace_seconds),
            ..DeleteParams::default()
        };
        for pod in pods {
            ignore_not_found(pod_api.delete(pod, &pod_params).await)?;
        }
        Ok(())
    }

    /// Cordons (`schedulable = false`) or uncordons a node with a JSON merge patch of
    /// `spec.unschedulable`, as `kubectl cordon` does. `404` is [`ClusterError::NodeNotFound`].
    pub async fn set_node_schedulable(&self, node: &str, schedulable: bool) -> Result<(), ClusterError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let patch = serde_json::json!({ "spec": { "unschedulable": !schedulable } });
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        match nodes.patch(node, &params, &Patch::Merge(&patch)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Err(ClusterError::NodeNotFound(node.to_owned())),
            Err(e) => Err(map_error(e)),
        }
    }
}

/// Whether an existing `ar-<id>` is the object an earlier attempt created for this job.
fn is_ours(job: &VolcanoJob, id: JobId) -> bool {
    let labels = job.labels();
    labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY_VALUE)
        && labels.get(JOB_ID_LABEL) == Some(&id.to_string())
}

fn ignore_not_found<T>(result: Result<T, kube::Error>) -> Result<(), ClusterError> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(map_error(e)),
    }
}

/// kube's error → the adapter's: the apiserver's 5xx, throttling (429), timeouts and anything
/// on the way (connection, TLS, auth refresh) may pass — `Unavailable`; any other 4xx is an
/// answer about the request itself — `Rejected`; a request kube could not build or a response
/// it could not read will not improve on retry either — `Rejected`.
pub fn map_error(error: kube::Error) -> ClusterError {
    match error {
        kube::Error::Api(status) => {
            let text = format!("{} {}: {}", status.code, status.reason, status.message);
            match status.code {
                408 | 429 | 500.. => ClusterError::Unavailable(text),
                _ => ClusterError::Rejected(text),
            }
        }
        e @ (kube::Error::BuildRequest(_) | kube::Error::SerdeError(_) | kube::Error::HttpError(_)) => {
            ClusterError::Rejected(e.to_string())
        }
        other => ClusterError::Unavailable(other.to_string()),
    }
}

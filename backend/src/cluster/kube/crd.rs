//! Hand-written typed Volcano resources: `batch.volcano.sh/v1alpha1` `Job` and
//! `scheduling.volcano.sh/v1beta1` `Queue`.
//!
//! Written by hand because the kopium-generated crates on crates.io are built against kube 3.
//! Only the fields Anteroom writes or reads are typed; serde ignores the rest of what the
//! apiserver returns, so a newer Volcano with more fields still deserialises. The CRDs themselves
//! are installed by Volcano, never by Anteroom, so no JSON schema is generated
//! (`schema = "disabled"`) and the spec types need no `JsonSchema`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// The spec of a Volcano Job: a gang of tasks scheduled together by the `volcano` scheduler.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "batch.volcano.sh",
    version = "v1alpha1",
    kind = "Job",
    plural = "jobs",
    root = "VolcanoJob",
    namespaced,
    status = "VolcanoJobStatus",
    schema = "disabled",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct VolcanoJobSpec {
    /// Must be `volcano` for gang scheduling to apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
    /// Pods that must be placed together before any starts (the gang size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<i32>,
    /// The Volcano queue the job is charged to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// The tasks: each is `replicas` pods from one template.
    #[serde(default)]
    pub tasks: Vec<VolcanoTask>,
    /// Job-level lifecycle policies (event → action).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<Vec<LifecyclePolicy>>,
    /// Job plugins (`env`, `svc`, `pytorch`, …) with their arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins: Option<BTreeMap<String, Vec<String>>>,
    /// How often Volcano restarts the job before giving up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry: Option<i32>,
    /// Priority class of the job's PodGroup: Volcano orders and preempts jobs by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Seconds after the job finished before Volcano deletes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// One task of a Volcano Job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolcanoTask {
    /// Task name; Volcano derives pod names `<job>-<task>-<index>` from it.
    #[serde(default)]
    pub name: String,
    /// Pods of this task.
    #[serde(default)]
    pub replicas: i32,
    /// Task-level lifecycle policies (e.g. `TaskCompleted → CompleteJob` on a PyTorch master).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<Vec<LifecyclePolicy>>,
    /// The pod template.
    #[serde(default)]
    pub template: PodTemplateSpec,
}

/// A Volcano lifecycle policy: when `event` happens, take `action`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LifecyclePolicy {
    /// e.g. `PodEvicted`, `PodFailed`, `TaskCompleted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// e.g. `RestartJob`, `AbortJob`, `CompleteJob`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// What Volcano reports about a job; Anteroom reads the phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolcanoJobStatus {
    /// The current state (phase, reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<VolcanoJobState>,
    /// Pods pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<i32>,
    /// Pods running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<i32>,
    /// Pods succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub succeeded: Option<i32>,
    /// Pods failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<i32>,
    /// Pods terminating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminating: Option<i32>,
    /// Restarts so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<i32>,
}

/// `status.state` of a Volcano Job.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolcanoJobState {
    /// `Pending`, `Inqueue`, `Running`, `Completed`, … (see [`super::manifest::phase_of`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Machine-readable reason of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The spec of a Volcano Queue: cluster-scoped; Anteroom reads it to tell a missing queue apart
/// from a slow scheduler, and with `mirror_queues` writes the queues it mirrors
/// ([`super::queue_mirror`]).
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "scheduling.volcano.sh",
    version = "v1beta1",
    kind = "Queue",
    plural = "queues",
    root = "VolcanoQueue",
    status = "VolcanoQueueStatus",
    schema = "disabled",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct VolcanoQueueSpec {
    /// Share weight among sibling queues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
    /// Upper bound of what the queue's jobs may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<BTreeMap<String, Quantity>>,
    /// Whether other queues may reclaim this queue's unused share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaimable: Option<bool>,
    /// Parent queue (hierarchical queues).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The fields Anteroom does not set (`deserved`, `guarantee`, Volcano's defaults such as
    /// `preemptable`, an administrator's additions), kept as read so that replacing a mirrored
    /// queue changes only Anteroom's fields.
    #[serde(flatten, default)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// What Volcano reports about a queue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolcanoQueueStatus {
    /// `Open`, `Closed`, `Closing`, `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

#[cfg(test)]
mod tests {
    use kube::Resource;

    use super::*;

    #[test]
    fn kube_volcano_job_resource_points_at_the_batch_volcano_api() {
        assert_eq!(VolcanoJob::api_version(&()), "batch.volcano.sh/v1alpha1");
        assert_eq!(VolcanoJob::kind(&()), "Job");
        assert_eq!(VolcanoJob::plural(&()), "jobs");
        assert_eq!(
            VolcanoJob::url_path(&(), Some("ns")),
            "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs"
        );
    }

    #[test]
    fn kube_volcano_queue_resource_is_cluster_scoped() {
        assert_eq!(VolcanoQueue::api_version(&()), "scheduling.volcano.sh/v1beta1");
        assert_eq!(
            VolcanoQueue::url_path(&(), None),
            "/apis/scheduling.volcano.sh/v1beta1/queues"
        );
    }

    #[test]
    fn kube_volcano_job_status_from_the_apiserver_deserialises_ignoring_unknown_fields() {
        let json = serde_json::json!({
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "ar-1", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"minAvailable": 1, "queue": "default", "schedulerName": "volcano",
                     "tasks": [{"name": "main", "replicas": 1, "template": {"spec": {"containers": []}}}],
                     "somethingNew": true},
            "status": {"state": {"phase": "Running", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                       "running": 1, "minAvailable": 1, "taskStatusCount": {}}
        });
        let job: VolcanoJob = serde_json::from_value(json).expect("a Volcano job");
        let phase = job.status.and_then(|s| s.state).and_then(|s| s.phase);
        assert_eq!(phase.as_deref(), Some("Running"));
    }
}

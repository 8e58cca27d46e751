//! What the reflectors' Nodes, Pods and Volcano Jobs mean to Anteroom: node snapshots with free
//! capacity, a pod's effective request, a job's status. Pure functions over kube objects, so the
//! rules (terminating pods count, finished pods do not, init containers and overhead) are tested
//! without any apiserver.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use anteroom_shared::api::pods::JobFailure;
use anteroom_shared::scheduling::{JobPhase, Quantity, ResourceList};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateTerminated, ContainerStatus, Node, NodeSpec, NodeStatus, Pod, PodSpec,
    PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use super::crd::VolcanoJob;
use super::manifest::{INSTALLATION_LABEL, JOB_ID_LABEL, JOB_UID_LABEL, VOLCANO_JOB_NAME_LABEL, phase_of};
use crate::cluster::{JobStatus, job_id_of};
use crate::prequeue::{JobId, NodeSnapshot, Taint, TaintEffect};

/// Parses a Kubernetes resource map. A quantity Anteroom cannot represent (far beyond any real
/// node) is left out with a warning rather than failing the whole snapshot.
pub fn resource_list(map: Option<&BTreeMap<String, K8sQuantity>>) -> ResourceList {
    let mut list = ResourceList::new();
    for (name, quantity) in map.into_iter().flatten() {
        match Quantity::parse(&quantity.0) {
            Ok(q) => list.insert(name.clone(), q),
            Err(error) => {
                tracing::warn!(resource = %name, quantity = %quantity.0, %error, "unparsable quantity ignored");
            }
        }
    }
    list
}

fn max_assign(into: &mut ResourceList, other: &ResourceList) {
    for (name, q) in other.iter() {
        if q > into.get(name) {
            into.insert(name, q);
        }
    }
}

fn container_requests(c: &Container) -> ResourceList {
    resource_list(
        c.resources
            .as_ref()
            .and_then(|r: &ResourceRequirements| r.requests.as_ref()),
    )
}

/// The requests a pod holds on its node, as the kube-scheduler counts them: the app containers
/// plus sidecars (init containers with `restartPolicy: Always`), or a regular init container
/// with the sidecars started before it if that is larger; pod-level requests win for the
/// resources they name; plus the runtime overhead.
pub fn pod_requests(pod: &Pod) -> ResourceList {
    let Some(spec) = pod.spec.as_ref() else {
        return ResourceList::new();
    };
    let mut running = ResourceList::new();
    for c in &spec.containers {
        running.saturating_add_assign(&container_requests(c));
    }
    let mut sidecars = ResourceList::new();
    let mut init_peak = ResourceList::new();
    for c in spec.init_containers.iter().flatten() {
        let request = container_requests(c);
        if c.restart_policy.as_deref() == Some("Always") {
            sidecars.saturating_add_assign(&request);
        } else {
            let mut during = sidecars.clone();
            during.saturating_add_assign(&request);
            max_assign(&mut init_peak, &during);
        }
    }
    running.saturating_add_assign(&sidecars);
    max_assign(&mut running, &init_peak);
    let pod_level = resource_list(spec.resources.as_ref().and_then(|r| r.requests.as_ref()));
    for (name, q) in pod_level.iter() {
        running.insert(name, q);
    }
    running.saturating_add_assign(&resource_list(spec.overhead.as_ref()));
    running
}

/// The node a pod holds capacity on: bound, and not finished. A terminating pod (deletion
/// timestamp set) still holds it until it is gone — that is what makes "victims still
/// terminating" visible to the watcher.
pub fn occupied_node(pod: &Pod) -> Option<&str> {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return None;
    }
    pod.spec.as_ref()?.node_name.as_deref().filter(|n| !n.is_empty())
}

fn taint_effect(effect: &str) -> TaintEffect {
    match effect {
        "PreferNoSchedule" => TaintEffect::PreferNoSchedule,
        "NoExecute" => TaintEffect::NoExecute,
        // `NoSchedule`, and any effect a later Kubernetes adds: keeping pods off is the safe
        // reading for admission.
        _ => TaintEffect::NoSchedule,
    }
}

/// Snapshots of `nodes` with free capacity = allocatable − requests of the pods that occupy
/// each (clamped at zero: an over-committed node has nothing free, not a negative amount).
/// Sorted by name.
pub fn node_snapshots<'a>(
    nodes: impl IntoIterator<Item = &'a Node>,
    pods: impl IntoIterator<Item = &'a Pod>,
) -> Vec<NodeSnapshot> {
    let mut used: HashMap<&str, ResourceList> = HashMap::new();
    for pod in pods {
        if let Some(node) = occupied_node(pod) {
            used.entry(node).or_default().saturating_add_assign(&pod_requests(pod));
        }
    }
    let mut out: Vec<NodeSnapshot> = nodes
        .into_iter()
        .map(|node| {
            let name = node.name_any();
            let status = node.status.as_ref();
            let allocatable = resource_list(status.and_then(|s| s.allocatable.as_ref()));
            let free = allocatable.left_after(used.get(name.as_str()).unwrap_or(&ResourceList::new()));
            let ready = status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            let spec = node.spec.as_ref();
            NodeSnapshot {
                ready,
                schedulable: !spec.and_then(|s| s.unschedulable).unwrap_or(false),
                allocatable,
                free,
                labels: node.labels().iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                taints: spec
                    .and_then(|s| s.taints.as_ref())
                    .into_iter()
                    .flatten()
                    .map(|t| Taint {
                        key: t.key.clone(),
                        value: t.value.clone().filter(|v| !v.is_empty()),
                        effect: taint_effect(&t.effect),
                    })
                    .collect(),
                name,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The Volcano Job a pod of `namespace` belongs to (by Volcano's `volcano.sh/job-name` label),
/// if it is one of this installation's (`ar-<id>`; a pod labelled with another installation
/// is that one's).
pub fn pod_job(pod: &Pod, namespace: &str, installation: &str) -> Option<(JobId, String)> {
    if pod.namespace().as_deref() != Some(namespace) {
        return None;
    }
    let labels = pod.labels();
    let name = labels.get(VOLCANO_JOB_NAME_LABEL)?;
    let id = job_id_of(name)?;
    // Our own labels, copied from the template, must agree when present.
    if labels.get(JOB_ID_LABEL).is_some_and(|v| v != &id.to_string())
        || labels.get(INSTALLATION_LABEL).is_some_and(|v| v != installation)
    {
        return None;
    }
    Some((id, name.clone()))
}

/// The phase Anteroom reports for a Volcano Job: Volcano's phase word; a job being deleted that
/// Volcano still calls live is `Terminating`; no status yet (or a word Volcano added later) is
/// `Pending`, which keeps the job occupying rather than guessing it ended.
pub fn job_phase(job: &VolcanoJob) -> JobPhase {
    let word = job
        .status
        .as_ref()
        .and_then(|s| s.state.as_ref())
        .and_then(|s| s.phase.as_deref());
    let phase = match word {
        Some(w) => phase_of(w).unwrap_or_else(|| {
            tracing::warn!(job = %job.name_any(), phase = w, "unknown Volcano phase read as Pending");
            JobPhase::Pending
        }),
        None => JobPhase::Pending,
    };
    if job.metadata.deletion_timestamp.is_some() && !phase.is_terminal() {
        JobPhase::Terminating
    } else {
        phase
    }
}

/// The status of an Anteroom Volcano Job whose pods are `pods` (any order): phase, the
/// sorted, deduplicated names of the nodes they are bound to, the earliest start of its pods,
/// Volcano's reason when it failed and, then, its first failing pod (by name, so the answer does
/// not depend on the order of the cache; [`pod_failure`]), and the job uid it is labelled with
/// (status sync applies it only to the job with that uid). `None` for a job not named `ar-<id>`.
pub fn job_status<'a>(
    job: &VolcanoJob,
    pods: impl IntoIterator<Item = &'a Pod>,
    observed_at: DateTime<Utc>,
) -> Option<JobStatus> {
    let job_id = job_id_of(&job.name_any())?;
    let phase = job_phase(job);
    let mut nodes = Vec::new();
    let mut started_at: Option<DateTime<Utc>> = None;
    let mut failed: Option<(String, JobFailure)> = None;
    for pod in pods {
        if is_failed_phase(phase)
            && let Some(failure) = pod_failure(pod)
        {
            let name = pod.name_any();
            if failed.as_ref().is_none_or(|(first, _)| name < *first) {
                failed = Some((name, failure));
            }
        }
        if let Some(node) = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty())
        {
            nodes.push(node);
        }
        if let Some(at) = pod_started_at(pod) {
            started_at = Some(started_at.map_or(at, |s| s.min(at)));
        }
    }
    nodes.sort();
    nodes.dedup();
    Some(JobStatus {
        job_id,
        phase,
        nodes,
        observed_at,
        started_at,
        failure: failure_of(job, phase),
        cluster_uid: job.labels().get(JOB_UID_LABEL).cloned(),
        failed_pod: failed.map(|(_, failure)| failure),
    })
}

/// Whether Anteroom reports why a job in `phase` failed: it ended badly, or is on its way
/// there (`Aborting`). A job that completed, runs or waits has nothing to explain.
pub fn is_failed_phase(phase: JobPhase) -> bool {
    matches!(
        phase,
        JobPhase::Failed | JobPhase::Aborted | JobPhase::Aborting | JobPhase::Terminated
    )
}

/// Why one pod failed, if it did: its phase is `Failed` or one of its containers (an init
/// container included) exited non-zero. The reason is the pod's own (`Evicted`,
/// `DeadlineExceeded`: a cause, where the container's `Error` is only the symptom), else the
/// container's (`OOMKilled`, `Error`…), else `Error`; the exit code is that container's.
/// Reads only what [`slim_pod`] keeps, so it answers the same for a cached pod.
pub fn pod_failure(pod: &Pod) -> Option<JobFailure> {
    let status = pod.status.as_ref()?;
    let terminated = |statuses: &Option<Vec<ContainerStatus>>| -> Option<ContainerStateTerminated> {
        statuses
            .iter()
            .flatten()
            .filter_map(|c| c.state.as_ref()?.terminated.as_ref())
            .find(|t| t.exit_code != 0)
            .cloned()
    };
    let container = terminated(&status.container_statuses).or_else(|| terminated(&status.init_container_statuses));
    if container.is_none() && status.phase.as_deref() != Some("Failed") {
        return None;
    }
    let words = |s: Option<&String>| s.map(|s| s.trim()).filter(|s| !s.is_empty()).map(str::to_owned);
    let reason = words(status.reason.as_ref())
        .or_else(|| words(container.as_ref().and_then(|t| t.reason.as_ref())))
        .unwrap_or_else(|| "Error".to_owned());
    Some(JobFailure {
        pod: Some(pod.name_any()),
        reason,
        exit_code: container.map(|t| t.exit_code),
    })
}

fn chrono_of(time: &Time) -> Option<DateTime<Utc>> {
    let nanos = u32::try_from(time.0.subsec_nanosecond()).unwrap_or(0);
    DateTime::from_timestamp(time.0.as_second(), nanos)
}

/// When a pod started running: the earliest start of one of its containers (running, or
/// finished after running), else — for a pod the kubelet reports running or finished without
/// container states — the pod's `status.startTime`. A pending pod (pulling its image, even
/// though the kubelet has accepted it and set `startTime`) has not started.
pub fn pod_started_at(pod: &Pod) -> Option<DateTime<Utc>> {
    let status = pod.status.as_ref()?;
    let container_start = status
        .container_statuses
        .iter()
        .flatten()
        .filter_map(|c| {
            let state = c.state.as_ref()?;
            state
                .running
                .as_ref()
                .and_then(|r| r.started_at.as_ref())
                .or_else(|| state.terminated.as_ref().and_then(|t| t.started_at.as_ref()))
        })
        .filter_map(chrono_of)
        .min();
    container_start.or_else(|| {
        matches!(status.phase.as_deref(), Some("Running" | "Succeeded" | "Failed"))
            .then(|| status.start_time.as_ref().and_then(chrono_of))
            .flatten()
    })
}

/// Volcano's reason for a job that ended badly (`Failed`, `Aborted`, `Terminated`, or on its
/// way there): `reason: message` from `status.state`, either alone if the other is empty.
/// `None` for a job that runs or completed, or when Volcano gave no words.
pub fn failure_of(job: &VolcanoJob, phase: JobPhase) -> Option<String> {
    if !is_failed_phase(phase) {
        return None;
    }
    let state = job.status.as_ref()?.state.as_ref()?;
    let words = |s: &Option<String>| s.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
    match (words(&state.reason), words(&state.message)) {
        (Some(reason), Some(message)) => Some(format!("{reason}: {message}")),
        (one, other) => one.or(other),
    }
}

/// Keeps only what Anteroom reads from a pod (labels, deletion timestamp, node, requests,
/// phase, when it started, and why it failed), so a cluster-wide pod cache stays small. The
/// start is kept as `status.startTime` = [`pod_started_at`] of the full pod, so reading the
/// slim pod gives the same answer without its container states; of those only what
/// [`pod_failure`] reads is kept — `status.reason` and, per container that exited non-zero,
/// its name, reason and exit code — never a message, which can be long.
pub fn slim_pod(pod: &mut Pod) {
    pod.metadata.managed_fields = None;
    pod.metadata.annotations = None;
    pod.metadata.owner_references = None;
    if let Some(spec) = pod.spec.take() {
        let slim_container = |c: Container| Container {
            name: c.name,
            resources: c.resources.map(|r| ResourceRequirements {
                requests: r.requests,
                limits: None,
                claims: None,
            }),
            restart_policy: c.restart_policy,
            ..Container::default()
        };
        pod.spec = Some(PodSpec {
            node_name: spec.node_name,
            overhead: spec.overhead,
            resources: spec.resources,
            containers: spec.containers.into_iter().map(slim_container).collect(),
            init_containers: spec
                .init_containers
                .map(|cs| cs.into_iter().map(slim_container).collect()),
            ..PodSpec::default()
        });
    }
    let started_at = pod_started_at(pod);
    if let Some(status) = pod.status.take() {
        let slim_terminated = |statuses: Option<Vec<ContainerStatus>>| {
            let kept: Vec<ContainerStatus> = statuses
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    let t = c.state?.terminated?;
                    (t.exit_code != 0).then(|| ContainerStatus {
                        name: c.name,
                        state: Some(ContainerState {
                            terminated: Some(ContainerStateTerminated {
                                exit_code: t.exit_code,
                                reason: t.reason,
                                ..ContainerStateTerminated::default()
                            }),
                            ..ContainerState::default()
                        }),
                        ..ContainerStatus::default()
                    })
                })
                .collect();
            (!kept.is_empty()).then_some(kept)
        };
        pod.status = Some(PodStatus {
            phase: status.phase,
            reason: status.reason,
            container_statuses: slim_terminated(status.container_statuses),
            init_container_statuses: slim_terminated(status.init_container_statuses),
            start_time: started_at.and_then(|at| {
                k8s_openapi::jiff::Timestamp::new(at.timestamp(), i32::try_from(at.timestamp_subsec_nanos()).ok()?)
                    .ok()
                    .map(Time)
            }),
            ..PodStatus::default()
        });
    }
}

/// Keeps only what Anteroom reads from a node (labels, schedulability, taints, allocatable,
/// conditions).
pub fn slim_node(node: &mut Node) {
    node.metadata.managed_fields = None;
    node.metadata.annotations = None;
    if let Some(spec) = node.spec.take() {
        node.spec = Some(NodeSpec {
            unschedulable: spec.unschedulable,
            taints: spec.taints,
            ..NodeSpec::default()
        });
    }
    if let Some(status) = node.status.take() {
        node.status = Some(NodeStatus {
            allocatable: status.allocatable,
            conditions: status.conditions,
            ..NodeStatus::default()
        });
    }
}

/// Groups `pods` of `namespace` by the job of this installation they belong to.
pub fn pods_by_job(pods: &[Arc<Pod>], namespace: &str, installation: &str) -> HashMap<JobId, Vec<Arc<Pod>>> {
    let mut out: HashMap<JobId, Vec<Arc<Pod>>> = HashMap::new();
    for pod in pods {
        if let Some((id, _)) = pod_job(pod, namespace, installation) {
            out.entry(id).or_default().push(pod.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests;

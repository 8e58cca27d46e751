//! What the reflectors' Nodes, Pods and Volcano Jobs mean to Anteroom: node snapshots with free
//! capacity, a pod's effective request, a job's status. Pure functions over kube objects, so the
//! rules (terminating pods count, finished pods do not, init containers and overhead) are tested
//! without any apiserver.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use anteroom_shared::scheduling::{JobPhase, Quantity, ResourceList};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{
    Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use super::crd::VolcanoJob;
use super::manifest::{INSTALLATION_LABEL, JOB_ID_LABEL, VOLCANO_JOB_NAME_LABEL, phase_of};
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
            let used = used.get(name.as_str()).cloned().unwrap_or_default();
            let free = allocatable
                .iter()
                .map(|(res, have)| {
                    let left = have.milli().saturating_sub(used.get(res).milli()).max(0);
                    (
                        res.to_owned(),
                        Quantity::from_milli_saturating(left, have.format_kind()),
                    )
                })
                .collect();
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
/// and Volcano's reason when it failed. `None` for a job not named `ar-<id>`.
pub fn job_status<'a>(
    job: &VolcanoJob,
    pods: impl IntoIterator<Item = &'a Pod>,
    observed_at: DateTime<Utc>,
) -> Option<JobStatus> {
    let job_id = job_id_of(&job.name_any())?;
    let mut nodes = Vec::new();
    let mut started_at: Option<DateTime<Utc>> = None;
    for pod in pods {
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
    let phase = job_phase(job);
    Some(JobStatus {
        job_id,
        phase,
        nodes,
        observed_at,
        started_at,
        failure: failure_of(job, phase),
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
    if !matches!(
        phase,
        JobPhase::Failed | JobPhase::Aborted | JobPhase::Aborting | JobPhase::Terminated
    ) {
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
/// phase, and when it started), so a cluster-wide pod cache stays small. The start is kept as
/// `status.startTime` = [`pod_started_at`] of the full pod, so reading the slim pod gives the
/// same answer without its container statuses.
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
        pod.status = Some(PodStatus {
            phase: status.phase,
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
mod tests {
    use k8s_openapi::api::core::v1::{NodeCondition, Taint as K8sTaint};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    use super::*;
    use crate::cluster::kube::crd::{VolcanoJobSpec, VolcanoJobState, VolcanoJobStatus};

    fn q(s: &str) -> K8sQuantity {
        K8sQuantity(s.to_owned())
    }

    fn res(entries: &[(&str, &str)]) -> BTreeMap<String, K8sQuantity> {
        entries.iter().map(|(k, v)| ((*k).to_owned(), q(v))).collect()
    }

    fn container(name: &str, requests: &[(&str, &str)]) -> Container {
        Container {
            name: name.to_owned(),
            resources: Some(ResourceRequirements {
                requests: Some(res(requests)),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        }
    }

    fn pod(name: &str, node: Option<&str>, phase: &str, requests: &[(&str, &str)]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some("ns".to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(str::to_owned),
                containers: vec![container("main", requests)],
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.to_owned()),
                ..PodStatus::default()
            }),
        }
    }

    fn node(name: &str, allocatable: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(BTreeMap::from([("kubernetes.io/hostname".to_owned(), name.to_owned())])),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec::default()),
            status: Some(NodeStatus {
                allocatable: Some(res(allocatable)),
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".to_owned(),
                    status: "True".to_owned(),
                    ..NodeCondition::default()
                }]),
                ..NodeStatus::default()
            }),
        }
    }

    fn parse(entries: &[(&str, &str)]) -> ResourceList {
        ResourceList::parse_map(entries.iter().copied()).expect("quantities")
    }

    #[test]
    fn kube_free_capacity_counts_running_pending_and_terminating_pods_but_not_finished_ones() {
        let n = node("n1", &[("cpu", "16"), ("memory", "64Gi"), ("nvidia.com/a100", "8")]);
        let mut terminating = pod("t", Some("n1"), "Running", &[("cpu", "2"), ("nvidia.com/a100", "2")]);
        terminating.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
        let pods = [
            pod("r", Some("n1"), "Running", &[("cpu", "4"), ("memory", "8Gi")]),
            pod("p", Some("n1"), "Pending", &[("cpu", "1")]),
            terminating,
            pod("s", Some("n1"), "Succeeded", &[("cpu", "8")]),
            pod("f", Some("n1"), "Failed", &[("cpu", "8")]),
            pod("unbound", None, "Pending", &[("cpu", "8")]),
            pod("elsewhere", Some("n2"), "Running", &[("cpu", "8")]),
        ];
        let snapshots = node_snapshots([&n], pods.iter());
        assert_eq!(snapshots.len(), 1);
        assert_eq!(
            snapshots[0].free,
            parse(&[("cpu", "9"), ("memory", "56Gi"), ("nvidia.com/a100", "6")])
        );
        assert!(snapshots[0].ready && snapshots[0].schedulable);
    }

    #[test]
    fn kube_an_overcommitted_node_has_nothing_free_rather_than_a_negative_amount() {
        let n = node("n1", &[("cpu", "2")]);
        let pods = [pod("big", Some("n1"), "Running", &[("cpu", "3")])];
        assert_eq!(node_snapshots([&n], pods.iter())[0].free.get("cpu"), Quantity::ZERO);
    }

    #[test]
    fn kube_pod_requests_follow_the_scheduler_rules_for_init_containers_sidecars_and_overhead() {
        let mut p = pod("x", Some("n1"), "Running", &[("cpu", "1"), ("memory", "1Gi")]);
        let spec = p.spec.as_mut().expect("spec");
        let mut sidecar = container("proxy", &[("cpu", "500m")]);
        sidecar.restart_policy = Some("Always".to_owned());
        spec.init_containers = Some(vec![sidecar, container("migrate", &[("cpu", "1"), ("memory", "4Gi")])]);
        spec.overhead = Some(res(&[("cpu", "100m")]));
        // cpu: max(1 + 0.5, 0.5 + 1) + 0.1 = 1.6; memory: max(1Gi, 4Gi) = 4Gi.
        assert_eq!(pod_requests(&p), parse(&[("cpu", "1600m"), ("memory", "4Gi")]));
    }

    #[test]
    fn kube_node_conditions_cordon_and_taints_are_read() {
        let mut n = node("n1", &[("cpu", "1")]);
        let spec = n.spec.as_mut().expect("spec");
        spec.unschedulable = Some(true);
        spec.taints = Some(vec![K8sTaint {
            key: "dedicated".to_owned(),
            value: Some("ide".to_owned()),
            effect: "NoExecute".to_owned(),
            time_added: None,
        }]);
        n.status.as_mut().expect("status").conditions = Some(vec![NodeCondition {
            type_: "Ready".to_owned(),
            status: "Unknown".to_owned(),
            ..NodeCondition::default()
        }]);
        let s = &node_snapshots([&n], [])[0];
        assert!(!s.ready && !s.schedulable);
        assert_eq!(
            s.taints,
            vec![Taint {
                key: "dedicated".to_owned(),
                value: Some("ide".to_owned()),
                effect: TaintEffect::NoExecute
            }]
        );
    }

    fn volcano(name: &str, phase: Option<&str>) -> VolcanoJob {
        let mut job = VolcanoJob::new(name, VolcanoJobSpec::default());
        job.status = phase.map(|p| VolcanoJobStatus {
            state: Some(VolcanoJobState {
                phase: Some(p.to_owned()),
                ..VolcanoJobState::default()
            }),
            ..VolcanoJobStatus::default()
        });
        job
    }

    #[test]
    fn kube_job_status_lists_each_node_once_and_reads_a_missing_status_as_pending() {
        let now = Utc::now();
        let pods = [
            pod("a", Some("n2"), "Running", &[]),
            pod("b", Some("n1"), "Running", &[]),
            pod("c", Some("n2"), "Running", &[]),
            pod("d", None, "Pending", &[]),
        ];
        let status = job_status(&volcano("ar-7", Some("Running")), pods.iter(), now).expect("ours");
        assert_eq!(status.job_id, 7);
        assert_eq!(status.phase, JobPhase::Running);
        assert_eq!(status.nodes, vec!["n1".to_owned(), "n2".to_owned()]);
        let fresh = job_status(&volcano("ar-8", None), [], now).expect("ours");
        assert_eq!(fresh.phase, JobPhase::Pending);
        assert!(job_status(&volcano("someone-else", None), [], now).is_none());
    }

    #[test]
    fn kube_a_job_being_deleted_reads_as_terminating_until_volcano_calls_it_finished() {
        let mut job = volcano("ar-9", Some("Running"));
        job.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
        assert_eq!(job_phase(&job), JobPhase::Terminating);
        let mut done = volcano("ar-9", Some("Completed"));
        done.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
        assert_eq!(job_phase(&done), JobPhase::Completed);
    }

    #[test]
    fn kube_pods_belong_to_a_job_by_volcano_label_in_our_namespace_only() {
        let mut p = pod("ar-5-main-0", Some("n1"), "Running", &[]);
        p.metadata.labels = Some(BTreeMap::from([(VOLCANO_JOB_NAME_LABEL.to_owned(), "ar-5".to_owned())]));
        assert_eq!(pod_job(&p, "ns", "inst-a"), Some((5, "ar-5".to_owned())));
        assert_eq!(pod_job(&p, "other", "inst-a"), None);
        p.metadata.labels = Some(BTreeMap::from([(
            VOLCANO_JOB_NAME_LABEL.to_owned(),
            "train".to_owned(),
        )]));
        assert_eq!(pod_job(&p, "ns", "inst-a"), None);
    }

    #[test]
    fn kube_a_pod_labelled_with_another_installation_is_not_ours() {
        let mut p = pod("ar-5-main-0", Some("n1"), "Running", &[]);
        p.metadata.labels = Some(BTreeMap::from([
            (VOLCANO_JOB_NAME_LABEL.to_owned(), "ar-5".to_owned()),
            (INSTALLATION_LABEL.to_owned(), "inst-b".to_owned()),
        ]));
        assert_eq!(pod_job(&p, "ns", "inst-a"), None);
        assert_eq!(pod_job(&p, "ns", "inst-b"), Some((5, "ar-5".to_owned())));
    }

    fn at(rfc3339: &str) -> Time {
        Time(rfc3339.parse().expect("timestamp"))
    }

    fn utc(rfc3339: &str) -> DateTime<Utc> {
        rfc3339.parse().expect("timestamp")
    }

    fn started_pod(name: &str, phase: &str, start_time: &str, running_since: Option<&str>) -> Pod {
        use k8s_openapi::api::core::v1::{ContainerState, ContainerStateRunning, ContainerStatus};
        let mut p = pod(name, Some("n1"), phase, &[]);
        let status = p.status.as_mut().expect("status");
        status.start_time = Some(at(start_time));
        status.container_statuses = running_since.map(|since| {
            vec![ContainerStatus {
                name: "main".to_owned(),
                state: Some(ContainerState {
                    running: Some(ContainerStateRunning {
                        started_at: Some(at(since)),
                    }),
                    ..ContainerState::default()
                }),
                ..ContainerStatus::default()
            }]
        });
        p
    }

    #[test]
    fn kube_a_job_started_when_its_first_container_started_running_not_when_a_pod_was_accepted() {
        let pods = [
            // Accepted first, but still pulling its image: not started.
            started_pod("a", "Pending", "2026-11-22T10:00:00Z", None),
            started_pod("b", "Running", "2026-11-22T10:01:00Z", Some("2026-11-22T10:03:00Z")),
            started_pod("c", "Running", "2026-11-22T10:01:30Z", Some("2026-11-22T10:02:00Z")),
        ];
        let status = job_status(&volcano("ar-3", Some("Running")), pods.iter(), Utc::now()).expect("ours");
        assert_eq!(status.started_at, Some(utc("2026-11-22T10:02:00Z")));
        // Running without container states (as some kubelets report early): the pod's start.
        let bare = started_pod("d", "Running", "2026-11-22T10:05:00Z", None);
        assert_eq!(pod_started_at(&bare), Some(utc("2026-11-22T10:05:00Z")));
        let none = job_status(&volcano("ar-3", Some("Pending")), [&pods[0]], Utc::now()).expect("ours");
        assert_eq!(none.started_at, None);
    }

    #[test]
    fn kube_slimmed_pods_keep_when_they_started() {
        let mut running = started_pod("b", "Running", "2026-11-22T10:01:00Z", Some("2026-11-22T10:03:00Z"));
        slim_pod(&mut running);
        assert!(running.status.as_ref().expect("status").container_statuses.is_none());
        assert_eq!(pod_started_at(&running), Some(utc("2026-11-22T10:03:00Z")));
        let mut pending = started_pod("a", "Pending", "2026-11-22T10:00:00Z", None);
        slim_pod(&mut pending);
        assert_eq!(pod_started_at(&pending), None);
    }

    #[test]
    fn kube_a_failed_job_reports_volcanos_reason_and_message_and_a_completed_one_none() {
        let mut failed = volcano("ar-4", Some("Failed"));
        let state = failed.status.as_mut().and_then(|s| s.state.as_mut()).expect("state");
        state.reason = Some("PodFailed".to_owned());
        state.message = Some("pod ar-4-main-0 exited with 137".to_owned());
        let status = job_status(&failed, [], Utc::now()).expect("ours");
        assert_eq!(
            status.failure.as_deref(),
            Some("PodFailed: pod ar-4-main-0 exited with 137")
        );
        let mut aborted = volcano("ar-4", Some("Aborted"));
        aborted
            .status
            .as_mut()
            .and_then(|s| s.state.as_mut())
            .expect("state")
            .message = Some("aborted by user".to_owned());
        assert_eq!(
            failure_of(&aborted, job_phase(&aborted)).as_deref(),
            Some("aborted by user")
        );
        let mut completed = volcano("ar-4", Some("Completed"));
        completed
            .status
            .as_mut()
            .and_then(|s| s.state.as_mut())
            .expect("state")
            .reason = Some("Completed".to_owned());
        assert_eq!(job_status(&completed, [], Utc::now()).expect("ours").failure, None);
        assert_eq!(
            job_status(&volcano("ar-4", Some("Failed")), [], Utc::now())
                .expect("ours")
                .failure,
            None
        );
    }

    #[test]
    fn kube_slimmed_pods_keep_what_capacity_and_status_need() {
        let mut p = pod("x", Some("n1"), "Running", &[("cpu", "2")]);
        p.metadata.annotations = Some(BTreeMap::from([("big".to_owned(), "x".repeat(1000))]));
        p.spec.as_mut().expect("spec").containers[0].image = Some("huge".to_owned());
        let before = pod_requests(&p);
        slim_pod(&mut p);
        assert_eq!(pod_requests(&p), before);
        assert_eq!(occupied_node(&p), Some("n1"));
        assert!(p.metadata.annotations.is_none());
        assert!(p.spec.as_ref().expect("spec").containers[0].image.is_none());
    }
}

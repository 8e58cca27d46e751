//! Tests of `state`.

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
fn kube_job_status_carries_the_job_uid_label_of_the_object_and_none_without_it() {
    let now = Utc::now();
    let mut job = volcano("ar-7", Some("Running"));
    assert_eq!(job_status(&job, [], now).expect("ours").cluster_uid, None);
    job.metadata.labels = Some([(JOB_UID_LABEL.to_owned(), "0f1e2d3c".to_owned())].into());
    let status = job_status(&job, [], now).expect("ours");
    assert_eq!(status.cluster_uid.as_deref(), Some("0f1e2d3c"));
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

/// A pod of `phase` with `status.reason` `reason` whose containers ended as `ended` (reason,
/// exit code).
fn ended_pod(name: &str, phase: &str, reason: Option<&str>, ended: &[(&str, i32)]) -> Pod {
    let mut p = pod(name, Some("n1"), phase, &[]);
    let status = p.status.as_mut().expect("status");
    status.reason = reason.map(str::to_owned);
    status.container_statuses = Some(
        ended
            .iter()
            .map(|(why, code)| ContainerStatus {
                name: "main".to_owned(),
                state: Some(ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        reason: Some((*why).to_owned()),
                        exit_code: *code,
                        message: Some("a long message from the runtime".to_owned()),
                        started_at: Some(at("2026-11-22T10:00:00Z")),
                        finished_at: Some(at("2026-11-22T10:05:00Z")),
                        ..ContainerStateTerminated::default()
                    }),
                    ..ContainerState::default()
                }),
                ..ContainerStatus::default()
            })
            .collect(),
    );
    p
}

fn failure(pod: &str, reason: &str, exit_code: Option<i32>) -> Option<JobFailure> {
    Some(JobFailure {
        pod: Some(pod.to_owned()),
        reason: reason.to_owned(),
        exit_code,
    })
}

#[test]
fn kube_a_failed_job_names_its_first_failing_pod_by_name_with_the_reason_and_exit_code() {
    let pods = [
        ended_pod("ar-4-worker-2", "Failed", None, &[("Error", 1)]),
        ended_pod("ar-4-worker-1", "Failed", None, &[("OOMKilled", 137)]),
        ended_pod("ar-4-master-0", "Succeeded", None, &[("Completed", 0)]),
        pod("ar-4-worker-0", Some("n1"), "Running", &[]),
    ];
    for phase in ["Failed", "Aborted", "Aborting", "Terminated"] {
        let status = job_status(&volcano("ar-4", Some(phase)), pods.iter(), Utc::now()).expect("ours");
        assert_eq!(
            status.failed_pod,
            failure("ar-4-worker-1", "OOMKilled", Some(137)),
            "{phase}"
        );
        // The same whatever order the cache gives.
        let status = job_status(&volcano("ar-4", Some(phase)), pods.iter().rev(), Utc::now()).expect("ours");
        assert_eq!(
            status.failed_pod,
            failure("ar-4-worker-1", "OOMKilled", Some(137)),
            "{phase}"
        );
    }
    // A job that completed, runs or waits explains nothing, even with a pod that failed.
    for phase in ["Completed", "Running", "Pending", "Restarting"] {
        let status = job_status(&volcano("ar-4", Some(phase)), pods.iter(), Utc::now()).expect("ours");
        assert_eq!(status.failed_pod, None, "{phase}");
    }
    // Failed, but no pod says why (they are gone, or all ended well).
    let status = job_status(&volcano("ar-4", Some("Failed")), pods[2..].iter(), Utc::now()).expect("ours");
    assert_eq!(status.failed_pod, None);
}

#[test]
fn kube_a_pods_own_reason_comes_before_its_containers_and_error_is_the_last_resort() {
    let evicted = ended_pod("ar-4-main-0", "Failed", Some("Evicted"), &[("Error", 137)]);
    assert_eq!(pod_failure(&evicted), failure("ar-4-main-0", "Evicted", Some(137)));
    let deadline = ended_pod("ar-4-main-0", "Failed", Some("DeadlineExceeded"), &[]);
    assert_eq!(pod_failure(&deadline), failure("ar-4-main-0", "DeadlineExceeded", None));
    let wordless = ended_pod("ar-4-main-0", "Failed", None, &[("", 3)]);
    assert_eq!(pod_failure(&wordless), failure("ar-4-main-0", "Error", Some(3)));
    // A container that exited non-zero fails the pod's story even while the kubelet restarts
    // it (a running pod with `OnFailure`).
    let restarted = ended_pod("ar-4-main-0", "Running", None, &[("Error", 2)]);
    assert_eq!(pod_failure(&restarted), failure("ar-4-main-0", "Error", Some(2)));
    assert_eq!(
        pod_failure(&ended_pod("ar-4-main-0", "Succeeded", None, &[("Completed", 0)])),
        None
    );
}

#[test]
fn kube_slimmed_pods_keep_why_they_failed_and_no_more() {
    let mut p = ended_pod("ar-4-main-0", "Failed", None, &[("OOMKilled", 137), ("Completed", 0)]);
    let status = p.status.as_mut().expect("status");
    status.message = Some("x".repeat(1000));
    let mut init = status.container_statuses.clone().expect("containers");
    init.truncate(1);
    init[0].name = "setup".to_owned();
    init[0]
        .state
        .as_mut()
        .and_then(|s| s.terminated.as_mut())
        .expect("terminated")
        .exit_code = 0;
    status.init_container_statuses = Some(init);
    let before = pod_failure(&p);
    let started = pod_started_at(&p);
    slim_pod(&mut p);
    assert_eq!(pod_failure(&p), before);
    assert_eq!(pod_started_at(&p), started);
    let status = p.status.as_ref().expect("status");
    assert_eq!(status.message, None);
    assert_eq!(
        status.init_container_statuses, None,
        "an init container that succeeded says nothing"
    );
    let kept: &[ContainerStatus] = status.container_statuses.as_deref().expect("the failed container");
    assert_eq!(kept.len(), 1);
    let terminated = kept[0]
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .expect("terminated");
    assert_eq!(
        (terminated.reason.as_deref(), terminated.exit_code),
        (Some("OOMKilled"), 137)
    );
    assert_eq!(
        (terminated.message.as_ref(), terminated.started_at.as_ref()),
        (None, None)
    );
    // Evicted: the pod's own word is kept.
    let mut evicted = ended_pod("ar-4-main-0", "Failed", Some("Evicted"), &[]);
    slim_pod(&mut evicted);
    assert_eq!(pod_failure(&evicted), failure("ar-4-main-0", "Evicted", None));
}

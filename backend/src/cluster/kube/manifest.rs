//! Anteroom's job → a Volcano Job manifest, and Volcano's phase words → [`JobPhase`]: pure
//! functions, snapshot-tested per kind, so what lands in the cluster is reviewed as a diff.
//!
//! Decisions:
//! - one Volcano task per task, `minAvailable` = Σ replicas (gang: all pods or none),
//!   `schedulerName: volcano`, the job's queue;
//! - requests = limits for every resource (accelerators must have them equal anyway; equal CPU
//!   and memory make the pods `Guaranteed`, so what the prequeue counted is what the node gives);
//! - `restartPolicy`: `OnFailure` for jupyter/webide (a crashed notebook server comes back on the
//!   same node, keeping its place), `Never` for batch kinds (a failed run is reported as failed,
//!   not hidden by in-place restarts that a distributed job could not survive anyway);
//! - PyTorch gets Volcano's `pytorch` plugin (MASTER_ADDR, WORLD_SIZE, RANK, headless service)
//!   and completes when its master completes; TensorFlow gets `env` + `svc` (task index, host
//!   files) and completes when its workers complete (parameter servers never exit); a custom job
//!   with several pods gets `env` + `svc` so its pods can find each other; gang jobs restart as a
//!   whole when a pod is evicted;
//! - explicit nodes become a *required* node affinity on `kubernetes.io/hostname In [...]`, the
//!   rule the prequeue assumed when it admitted the job;
//! - labels select (`app.kubernetes.io/managed-by=anteroom`, `anteroom.io/job-id`, kind,
//!   schedule type — also on the pods); free text (owner, tolerance, policy) goes into
//!   annotations, since label values cannot hold every username.

use std::collections::BTreeMap;

use anteroom_shared::scheduling::{JobKind, JobPhase, ResourceList};
use k8s_openapi::api::core::v1::{
    Affinity, Container, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodSpec,
    PodTemplateSpec, ResourceRequirements, Toleration as K8sToleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::crd::{LifecyclePolicy, VolcanoJob, VolcanoJobSpec, VolcanoTask};
use crate::cluster::JobSpec;
use crate::prequeue::{TaintEffect, Toleration, TolerationOperator};

/// Label on everything Anteroom creates; the job watch selects on it, and an existing object
/// without it is not Anteroom's (create answers `Conflict`).
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY_VALUE: &str = "anteroom";
/// Label with the database id of the job (on the Volcano Job and on its pods).
pub const JOB_ID_LABEL: &str = "anteroom.io/job-id";
/// Label with the job kind, for `kubectl get -l`.
pub const KIND_LABEL: &str = "anteroom.io/kind";
/// Label and annotation with the schedule type (`normal` / `backfill`).
pub const SCHEDULE_TYPE_KEY: &str = "anteroom.io/schedule-type";
/// Annotation: seconds a normal job may wait before it blocks others.
pub const WAITING_TOLERANCE_ANNOTATION: &str = "anteroom.io/waiting-tolerance-seconds";
/// Annotation: `PreemptLowerPriority` or `Never`.
pub const PREEMPTION_POLICY_ANNOTATION: &str = "anteroom.io/preemption-policy";
/// Annotation: the owner's username (free text, so not a label).
pub const OWNER_ANNOTATION: &str = "anteroom.io/owner";
/// Label Volcano puts on every pod of a job, with the job's name.
pub const VOLCANO_JOB_NAME_LABEL: &str = "volcano.sh/job-name";
/// The node label explicit nodes are matched against.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// The scheduler that gang-schedules Volcano Jobs.
pub const SCHEDULER_NAME: &str = "volcano";

/// The selector of the job watch: only Anteroom's Volcano Jobs.
pub fn managed_selector() -> String {
    format!("{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}")
}

/// The Volcano Job for `spec` in `namespace`.
pub fn volcano_job(spec: &JobSpec, namespace: &str) -> VolcanoJob {
    let name = spec.cluster_name();
    let labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
        (JOB_ID_LABEL.to_owned(), spec.id.to_string()),
        (KIND_LABEL.to_owned(), spec.kind.as_str().to_owned()),
        (SCHEDULE_TYPE_KEY.to_owned(), spec.schedule_type.as_str().to_owned()),
    ]);
    let mut annotations = BTreeMap::from([
        (SCHEDULE_TYPE_KEY.to_owned(), spec.schedule_type.as_str().to_owned()),
        (
            PREEMPTION_POLICY_ANNOTATION.to_owned(),
            spec.preemption_policy.as_str().to_owned(),
        ),
        (OWNER_ANNOTATION.to_owned(), spec.owner.clone()),
    ]);
    if let Some(seconds) = spec.waiting_tolerance_seconds {
        annotations.insert(WAITING_TOLERANCE_ANNOTATION.to_owned(), seconds.to_string());
    }
    let restart_policy = match spec.kind {
        JobKind::Jupyter | JobKind::Webide => "OnFailure",
        JobKind::Custom | JobKind::Pytorch | JobKind::Tensorflow => "Never",
    };
    let gang_size = spec.min_available();
    let tasks = spec
        .tasks
        .iter()
        .map(|task| VolcanoTask {
            name: task.name.clone(),
            replicas: clamp_i32(task.replicas),
            policies: task_policies(spec.kind, &task.name),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels.clone()),
                    annotations: Some(annotations.clone()),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some(restart_policy.to_owned()),
                    scheduler_name: Some(SCHEDULER_NAME.to_owned()),
                    containers: vec![Container {
                        name: task.name.clone(),
                        image: Some(task.image.clone()),
                        command: (!task.command.is_empty()).then(|| task.command.clone()),
                        resources: Some(requirements(&task.resources)),
                        ..Container::default()
                    }],
                    affinity: hostname_affinity(&task.node_names),
                    tolerations: (!task.tolerations.is_empty())
                        .then(|| task.tolerations.iter().map(toleration).collect()),
                    ..PodSpec::default()
                }),
            },
        })
        .collect();
    VolcanoJob {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: VolcanoJobSpec {
            scheduler_name: Some(SCHEDULER_NAME.to_owned()),
            min_available: Some(clamp_i32(gang_size)),
            queue: Some(spec.queue.clone()),
            tasks,
            policies: job_policies(spec.kind),
            plugins: plugins(spec.kind, gang_size),
            max_retry: None,
        },
        status: None,
    }
}

/// Volcano's phase word → Anteroom's phase; `None` for a word Volcano may add later (the
/// caller keeps the job occupying rather than guessing it finished).
pub fn phase_of(volcano_phase: &str) -> Option<JobPhase> {
    Some(match volcano_phase {
        // `Inqueue`: admitted by the queue, pods not yet placed — still pending to a user.
        "Pending" | "Inqueue" => JobPhase::Pending,
        "Running" => JobPhase::Running,
        "Restarting" => JobPhase::Restarting,
        "Completing" => JobPhase::Completing,
        "Completed" => JobPhase::Completed,
        "Aborting" => JobPhase::Aborting,
        "Aborted" => JobPhase::Aborted,
        "Terminating" => JobPhase::Terminating,
        "Terminated" => JobPhase::Terminated,
        "Failed" => JobPhase::Failed,
        _ => return None,
    })
}

fn clamp_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn policy(event: &str, action: &str) -> LifecyclePolicy {
    LifecyclePolicy {
        event: Some(event.to_owned()),
        action: Some(action.to_owned()),
    }
}

/// Gang jobs cannot carry on without an evicted member: restart them as a whole.
fn job_policies(kind: JobKind) -> Option<Vec<LifecyclePolicy>> {
    match kind {
        JobKind::Pytorch | JobKind::Tensorflow => Some(vec![policy("PodEvicted", "RestartJob")]),
        JobKind::Jupyter | JobKind::Webide | JobKind::Custom => None,
    }
}

/// The task whose completion ends the job: PyTorch's master, TensorFlow's workers.
fn task_policies(kind: JobKind, task: &str) -> Option<Vec<LifecyclePolicy>> {
    let ends_job = matches!(
        (kind, task),
        (JobKind::Pytorch, "master") | (JobKind::Tensorflow, "worker")
    );
    ends_job.then(|| vec![policy("TaskCompleted", "CompleteJob")])
}

fn plugins(kind: JobKind, gang_size: u32) -> Option<BTreeMap<String, Vec<String>>> {
    let discovery = || BTreeMap::from([("env".to_owned(), Vec::new()), ("svc".to_owned(), Vec::new())]);
    match kind {
        JobKind::Pytorch => Some(BTreeMap::from([(
            "pytorch".to_owned(),
            vec![
                "--master=master".to_owned(),
                "--worker=worker".to_owned(),
                "--port=23456".to_owned(),
            ],
        )])),
        JobKind::Tensorflow => Some(discovery()),
        JobKind::Custom if gang_size > 1 => Some(discovery()),
        JobKind::Custom | JobKind::Jupyter | JobKind::Webide => None,
    }
}

/// Requests = limits; zero quantities are left out (a zero limit on an accelerator would only
/// clutter the manifest).
fn requirements(resources: &ResourceList) -> ResourceRequirements {
    let list: BTreeMap<String, K8sQuantity> = resources
        .iter()
        .filter(|(_, q)| !q.is_zero())
        .map(|(name, q)| (name.to_owned(), K8sQuantity(q.to_string())))
        .collect();
    ResourceRequirements {
        requests: Some(list.clone()),
        limits: Some(list),
        claims: None,
    }
}

fn hostname_affinity(node_names: &[String]) -> Option<Affinity> {
    if node_names.is_empty() {
        return None;
    }
    let mut values = node_names.to_vec();
    values.sort();
    values.dedup();
    Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(vec![NodeSelectorRequirement {
                        key: HOSTNAME_LABEL.to_owned(),
                        operator: "In".to_owned(),
                        values: Some(values),
                    }]),
                    match_fields: None,
                }],
            }),
            preferred_during_scheduling_ignored_during_execution: None,
        }),
        pod_affinity: None,
        pod_anti_affinity: None,
    })
}

/// Kubernetes' spelling of a taint effect.
pub fn effect_name(effect: TaintEffect) -> &'static str {
    match effect {
        TaintEffect::NoSchedule => "NoSchedule",
        TaintEffect::PreferNoSchedule => "PreferNoSchedule",
        TaintEffect::NoExecute => "NoExecute",
    }
}

fn toleration(t: &Toleration) -> K8sToleration {
    K8sToleration {
        key: t.key.clone(),
        operator: Some(
            match t.operator {
                TolerationOperator::Equal => "Equal",
                TolerationOperator::Exists => "Exists",
            }
            .to_owned(),
        ),
        value: t.value.clone(),
        effect: t.effect.map(|e| effect_name(e).to_owned()),
        toleration_seconds: None,
    }
}

#[cfg(test)]
mod tests {
    use anteroom_shared::scheduling::{JobKind, PreemptionPolicy, Quantity, ScheduleType};

    use super::*;
    use crate::cluster::TaskSpec;

    fn resources(entries: &[(&str, &str)]) -> ResourceList {
        ResourceList::parse_map(entries.iter().copied()).expect("valid quantities")
    }

    fn task(name: &str, replicas: u32, res: &[(&str, &str)]) -> TaskSpec {
        TaskSpec {
            name: name.to_owned(),
            replicas,
            image: "registry.example/ml/train:1.4".to_owned(),
            command: vec!["python".to_owned(), "train.py".to_owned()],
            resources: resources(res),
            node_names: Vec::new(),
            tolerations: Vec::new(),
        }
    }

    fn job(id: i64, kind: JobKind, tasks: Vec<TaskSpec>) -> JobSpec {
        JobSpec {
            id,
            kind,
            queue: "nlp".to_owned(),
            owner: "ada.lovelace@example.org".to_owned(),
            schedule_type: ScheduleType::Normal,
            waiting_tolerance_seconds: Some(300),
            preemption_policy: PreemptionPolicy::PreemptLowerPriority,
            termination_grace_seconds: None,
            tasks,
        }
    }

    #[test]
    fn kube_manifest_of_a_jupyter_job() {
        let mut t = task("main", 1, &[("cpu", "4"), ("memory", "16Gi"), ("nvidia.com/a100", "1")]);
        t.image = "jupyter/scipy-notebook:2026-01".to_owned();
        t.command = Vec::new();
        t.node_names = vec!["gpu-a100-1".to_owned(), "gpu-a100-0".to_owned()];
        let mut spec = job(41, JobKind::Jupyter, vec![t]);
        spec.schedule_type = ScheduleType::Backfill;
        spec.waiting_tolerance_seconds = None;
        insta::assert_yaml_snapshot!(volcano_job(&spec, "anteroom"));
    }

    #[test]
    fn kube_manifest_of_a_webide_job() {
        let mut t = task("main", 1, &[("cpu", "2"), ("memory", "4Gi")]);
        t.image = "codercom/code-server:4".to_owned();
        t.command = Vec::new();
        t.tolerations = vec![Toleration {
            key: Some("dedicated".to_owned()),
            operator: TolerationOperator::Equal,
            value: Some("ide".to_owned()),
            effect: Some(TaintEffect::NoSchedule),
        }];
        insta::assert_yaml_snapshot!(volcano_job(&job(42, JobKind::Webide, vec![t]), "anteroom"));
    }

    #[test]
    fn kube_manifest_of_a_custom_job() {
        let mut t = task(
            "main",
            2,
            &[("cpu", "500m"), ("memory", "1Gi"), ("nvidia.com/v100", "0")],
        );
        t.command = vec!["sleep".to_owned(), "600".to_owned()];
        t.tolerations = vec![Toleration {
            key: None,
            operator: TolerationOperator::Exists,
            value: None,
            effect: None,
        }];
        let mut spec = job(43, JobKind::Custom, vec![t]);
        spec.preemption_policy = PreemptionPolicy::Never;
        insta::assert_yaml_snapshot!(volcano_job(&spec, "anteroom"));
    }

    #[test]
    fn kube_manifest_of_a_pytorch_job() {
        let gpu = [("cpu", "8"), ("memory", "64Gi"), ("nvidia.com/a100", "4")];
        let spec = job(
            44,
            JobKind::Pytorch,
            vec![task("master", 1, &gpu), task("worker", 3, &gpu)],
        );
        let manifest = volcano_job(&spec, "anteroom");
        assert_eq!(manifest.spec.min_available, Some(4));
        insta::assert_yaml_snapshot!(manifest);
    }

    #[test]
    fn kube_manifest_of_a_tensorflow_job() {
        let mut worker = task(
            "worker",
            2,
            &[("cpu", "4"), ("memory", "8Gi"), ("nvidia.com/v100", "1")],
        );
        worker.node_names = vec!["gpu-v100-0".to_owned()];
        let spec = job(
            45,
            JobKind::Tensorflow,
            vec![task("ps", 1, &[("cpu", "2"), ("memory", "4Gi")]), worker],
        );
        insta::assert_yaml_snapshot!(volcano_job(&spec, "anteroom"));
    }

    #[test]
    fn kube_manifest_requests_equal_limits_for_every_task() {
        let spec = job(
            46,
            JobKind::Tensorflow,
            vec![
                task("ps", 1, &[("cpu", "2")]),
                task("worker", 2, &[("nvidia.com/a100", "2")]),
            ],
        );
        for t in volcano_job(&spec, "ns").spec.tasks {
            let pod = t.template.spec.expect("pod spec");
            let res = pod.containers[0].resources.clone().expect("resources");
            assert_eq!(res.requests, res.limits);
        }
        assert_eq!(Quantity::parse("2").expect("q").to_string(), "2");
    }

    #[test]
    fn kube_volcano_phases_map_to_anteroom_phases() {
        let cases = [
            ("Pending", JobPhase::Pending),
            ("Inqueue", JobPhase::Pending),
            ("Aborting", JobPhase::Aborting),
            ("Aborted", JobPhase::Aborted),
            ("Running", JobPhase::Running),
            ("Restarting", JobPhase::Restarting),
            ("Completing", JobPhase::Completing),
            ("Completed", JobPhase::Completed),
            ("Terminating", JobPhase::Terminating),
            ("Terminated", JobPhase::Terminated),
            ("Failed", JobPhase::Failed),
        ];
        for (word, phase) in cases {
            assert_eq!(phase_of(word), Some(phase), "{word}");
        }
        assert_eq!(phase_of("Hibernating"), None);
    }
}

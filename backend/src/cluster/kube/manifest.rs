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
//! - PyTorch gets Volcano's `pytorch` plugin (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK) *and*
//!   `svc`: MASTER_ADDR is the master pod's DNS name under the job's headless service, which only
//!   `svc` creates (newer Volcano turns it on by itself, older does not — saying so costs
//!   nothing); it completes when its master completes. TensorFlow gets the `tensorflow` plugin
//!   (TF_CONFIG with every ps and worker address) plus `svc` for the same reason, and `env` for
//!   the task index; it completes when its workers complete (parameter servers never exit); a
//!   custom job with several pods gets `env` + `svc` so its pods can find each other; gang jobs
//!   restart as a whole when a pod is evicted;
//! - Volcano may preempt backfill pods only, and only those the prequeue could preempt too
//!   (`volcano.sh/preemptable: "true"` on their pods; `"false"` on normal ones — Anteroom never
//!   lets a normal job be preempted — and on a backfill job while it is locked or younger than
//!   `backfillMinRuntimeSeconds`: the watcher patches the pods when that changes); each schedule
//!   type may get a `priorityClassName` (settings), on the job (its PodGroup) and on its pods,
//!   and a normal job whose policy is `Never` a class of its own (one with `preemptionPolicy:
//!   Never`), so the cluster does not preempt for it what Anteroom would not;
//! - a notebook (jupyter, webide) gets Volcano's `svc` plugin — its pod has a DNS name under
//!   the job's headless service, where Anteroom's proxy reaches it (`crate::notebooks`) — and
//!   `ANTEROOM_BASE_URL=/jobs/<id>/open/`; Jupyter also `NOTEBOOK_ARGS` (read by the Jupyter
//!   Docker Stacks' start script: that base URL, no token, no password — only Anteroom reaches
//!   the pod, `deploy/base/65-networkpolicy-notebooks.yaml`), unless the task sets its own;
//! - a task with shared memory (`TaskBody::effective_shm`: a quarter of the memory for PyTorch
//!   and TensorFlow by default) mounts a memory-backed `emptyDir` (`sizeLimit` that size, part
//!   of its memory) at `/dev/shm`, as the seed's Volcano example does;
//! - a container that asks for no NVIDIA device gets `NVIDIA_VISIBLE_DEVICES=void`, so a CPU
//!   job on a GPU node does not see the node's GPUs through a CUDA image's default `all`; and
//!   every container gets the NVIDIA runtime's other controls set to what a training job needs
//!   ([`NVIDIA_SAFE_ENV`]), so an image cannot widen what the GPU runtime grants (graphics and
//!   display capabilities, MIG configuration, IMEX channels);
//! - job pods run with least privilege (Kubernetes' Pod Security Standards, `restricted` where
//!   the queue allows it): no service account token is mounted (`automountServiceAccountToken:
//!   false`: a job has no business with the apiserver, and a token in every pod is a token in
//!   every user's hands); every container drops every Linux capability (`drop: [ALL]`), may not
//!   gain privileges (`allowPrivilegeEscalation: false`: no setuid `sudo`) and runs under the
//!   runtime's default seccomp profile; and when the job's queue says so (`runAsUser`, the
//!   default of new queues) the pod runs as that user id and never as root (`runAsNonRoot`);
//!   `imagePullPolicy` is the setting's, or Kubernetes' default when unset;
//! - the pods' `terminationGracePeriodSeconds` is the job's preemption grace period, so a pod
//!   the kubelet ends (eviction, Volcano preemption) gets the same time to checkpoint as one
//!   Anteroom deletes; `ttlSecondsAfterFinished` (setting) lets Volcano remove finished jobs;
//! - every object carries the installation id (`anteroom.io/installation`): another Anteroom,
//!   or this one after its database was reset, has other ids and never takes an `ar-<id>` of
//!   ours for its own; and the job's uid (`anteroom.io/job-uid`): this installation with a
//!   database restored or rolled back has the same installation id but reuses job ids, and its
//!   new job 7 must not take the `ar-7` of the job 7 it forgot for its own;
//! - explicit nodes become a *required* node affinity on `kubernetes.io/hostname In [...]`, the
//!   rule the prequeue assumed when it admitted the job;
//! - labels select (`app.kubernetes.io/managed-by=anteroom`, `anteroom.io/job-id`, kind,
//!   schedule type — also on the pods); free text (owner, tolerance, policy) goes into
//!   annotations, since label values cannot hold every username.

use std::collections::BTreeMap;

use anteroom_shared::scheduling::{JobKind, JobPhase, ResourceList};
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, Container, EmptyDirVolumeSource, EnvVar, NFSVolumeSource, NodeAffinity, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, PersistentVolumeClaimVolumeSource, PodSecurityContext, PodSpec,
    PodTemplateSpec, ResourceRequirements, SeccompProfile, SecurityContext, Toleration as K8sToleration, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::crd::{LifecyclePolicy, VolcanoJob, VolcanoJobSpec, VolcanoTask};
pub use super::settings::ManifestSettings;
use anteroom_shared::api::volumes::VolumeSource;

use crate::cluster::{JobSpec, TaskSpec};
use crate::prequeue::{TaintEffect, Toleration, TolerationOperator};

pub use super::labels::{INSTALLATION_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE};
/// Label with the database id of the job (on the Volcano Job and on its pods).
pub const JOB_ID_LABEL: &str = "anteroom.io/job-id";
/// Label with the job's uid ([`JobSpec::cluster_uid`], on the Volcano Job and on its pods):
/// a restored or rolled-back database keeps the installation id but reuses job ids, so only
/// the uid tells its job 7 from the `ar-7` of the job 7 it lost.
pub const JOB_UID_LABEL: &str = "anteroom.io/job-uid";
/// Label and annotation Volcano reads on a pod to decide whether its preempt/reclaim actions
/// may evict it.
pub const PREEMPTABLE_KEY: &str = "volcano.sh/preemptable";
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

/// The Volcano Job for `spec`, written as `settings` say.
pub fn volcano_job(spec: &JobSpec, settings: &ManifestSettings) -> VolcanoJob {
    let name = spec.cluster_name();
    let labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
        (INSTALLATION_LABEL.to_owned(), settings.installation.clone()),
        (JOB_ID_LABEL.to_owned(), spec.id.to_string()),
        (JOB_UID_LABEL.to_owned(), spec.cluster_uid.clone()),
        (KIND_LABEL.to_owned(), spec.kind.as_str().to_owned()),
        (SCHEDULE_TYPE_KEY.to_owned(), spec.schedule_type.as_str().to_owned()),
    ]);
    // What the watcher decided at creation (a locked or young backfill job, and every normal
    // job, is not Volcano's to evict); it patches the pods when that changes.
    let preemptable = spec.preemptable.to_string();
    let mut pod_labels = labels.clone();
    pod_labels.insert(PREEMPTABLE_KEY.to_owned(), preemptable.clone());
    let priority_class = settings.priority_class(spec.schedule_type, spec.preemption_policy);
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
    let mut pod_annotations = annotations.clone();
    pod_annotations.insert(PREEMPTABLE_KEY.to_owned(), preemptable);
    let tasks = spec
        .tasks
        .iter()
        .map(|task| VolcanoTask {
            name: task.name.clone(),
            replicas: clamp_i32(task.replicas),
            policies: task_policies(spec.kind, &task.name),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels.clone()),
                    annotations: Some(pod_annotations.clone()),
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
                        env: container_env(spec, task),
                        volume_mounts: volume_mounts(task),
                        image_pull_policy: settings.image_pull_policy.map(|p| p.as_str().to_owned()),
                        security_context: Some(container_security()),
                        ..Container::default()
                    }],
                    security_context: Some(pod_security(spec.run_as_user)),
                    volumes: pod_volumes(task),
                    automount_service_account_token: Some(false),
                    affinity: hostname_affinity(&task.node_names),
                    tolerations: (!task.tolerations.is_empty())
                        .then(|| task.tolerations.iter().map(toleration).collect()),
                    priority_class_name: priority_class.clone(),
                    termination_grace_period_seconds: spec.termination_grace_seconds.map(i64::from),
                    // The runtime limit, counted by the kubelet from the pod's start; it ends
                    // the pod `Failed`, reason `DeadlineExceeded`.
                    active_deadline_seconds: spec
                        .active_deadline_seconds
                        .map(|s| i64::try_from(s).unwrap_or(i64::MAX)),
                    ..PodSpec::default()
                }),
            },
        })
        .collect();
    VolcanoJob {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(settings.namespace.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: VolcanoJobSpec {
            scheduler_name: Some(SCHEDULER_NAME.to_owned()),
            min_available: Some(clamp_i32(gang_size)),
            queue: Some(
                crate::cluster::cluster_queue_of(&spec.queue, spec.schedule_type, settings.mirror_queues).to_owned(),
            ),
            tasks,
            policies: job_policies(spec.kind),
            plugins: plugins(spec.kind, gang_size),
            max_retry: None,
            priority_class_name: priority_class,
            ttl_seconds_after_finished: settings.ttl_seconds_after_finished.map(clamp_i32),
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

/// Volcano job plugins per kind (see the module doc for why each is there).
fn plugins(kind: JobKind, gang_size: u32) -> Option<BTreeMap<String, Vec<String>>> {
    let args = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    let mut plugins = BTreeMap::new();
    match kind {
        JobKind::Pytorch => {
            plugins.insert(
                "pytorch".to_owned(),
                args(&["--master=master", "--worker=worker", "--port=23456"]),
            );
            plugins.insert("svc".to_owned(), Vec::new());
        }
        JobKind::Tensorflow => {
            plugins.insert(
                "tensorflow".to_owned(),
                args(&["--ps=ps", "--worker=worker", "--port=2222"]),
            );
            plugins.insert("svc".to_owned(), Vec::new());
            plugins.insert("env".to_owned(), Vec::new());
        }
        JobKind::Custom if gang_size > 1 => {
            plugins.insert("svc".to_owned(), Vec::new());
            plugins.insert("env".to_owned(), Vec::new());
        }
        JobKind::Jupyter | JobKind::Webide => {
            // The headless service gives the notebook pod the DNS name the proxy reaches it at.
            plugins.insert("svc".to_owned(), Vec::new());
        }
        JobKind::Custom => return None,
    }
    Some(plugins)
}

/// What every container may do: no Linux capability, no privilege gained after start (no
/// setuid), the runtime's default seccomp profile.
fn container_security() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            add: None,
        }),
        seccomp_profile: Some(runtime_default_seccomp()),
        ..SecurityContext::default()
    }
}

fn runtime_default_seccomp() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".to_owned(),
        localhost_profile: None,
    }
}

/// Who the pod runs as: `run_as_user` and never root when the queue says so; else as the
/// image says. The default seccomp profile either way.
fn pod_security(run_as_user: Option<i64>) -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: run_as_user.map(|_| true),
        run_as_user,
        seccomp_profile: Some(runtime_default_seccomp()),
        ..PodSecurityContext::default()
    }
}

/// The NVIDIA container runtime's controls an image could set to widen what a container gets,
/// set by Anteroom to what a training job needs: the compute and utility (`nvidia-smi`) parts
/// of the driver only (not graphics, video or display), no MIG configuration or monitoring, no
/// IMEX channels, and none of the host devices the toolkit injects on an image's word
/// (InfiniBand through `NVIDIA_MOFED`, GPUDirect Storage, NVSwitch, GDRCopy: `enabled` in an
/// image would win over the node's configuration). Which GPUs a container sees stays the
/// device plugin's (or `void`); RDMA devices come from their own device plugin, as resources.
pub const NVIDIA_SAFE_ENV: [(&str, &str); 8] = [
    ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
    ("NVIDIA_MIG_CONFIG_DEVICES", ""),
    ("NVIDIA_MIG_MONITOR_DEVICES", ""),
    ("NVIDIA_IMEX_CHANNELS", ""),
    ("NVIDIA_MOFED", "disabled"),
    ("NVIDIA_GDS", "disabled"),
    ("NVIDIA_NVSWITCH", "disabled"),
    ("NVIDIA_GDRCOPY", "disabled"),
];

/// `NVIDIA_VISIBLE_DEVICES=void` for a container that asks for no `nvidia.com/*` device: with
/// the NVIDIA container runtime as a node's default and a CUDA image (which sets the variable
/// to `all`), such a container would otherwise see every GPU of its node, outside any quota.
/// The device plugin sets the variable itself for containers that do get GPUs. Then
/// [`NVIDIA_SAFE_ENV`], for every container.
/// The body's variables come first, in its order (validation refuses the names Anteroom sets).
fn container_env(spec: &JobSpec, task: &TaskSpec) -> Option<Vec<EnvVar>> {
    let plain = |name: &str, value: String| EnvVar {
        name: name.to_owned(),
        value: Some(value),
        ..EnvVar::default()
    };
    let mut env: Vec<EnvVar> = Vec::new();
    if matches!(spec.kind, JobKind::Jupyter | JobKind::Webide) {
        // Reached only through Anteroom's proxy at this path (`notebooks`), which checks who
        // opens it: the server runs under that base URL and without a token of its own.
        let base = crate::notebooks::base_path(spec.id);
        env.push(plain("ANTEROOM_BASE_URL", base.clone()));
        if spec.kind == JobKind::Jupyter && !task.env.iter().any(|v| v.name == "NOTEBOOK_ARGS") {
            env.push(plain(
                "NOTEBOOK_ARGS",
                format!("--ServerApp.base_url={base} --IdentityProvider.token= --ServerApp.password="),
            ));
        }
    }
    env.extend(task.env.iter().map(|v| plain(&v.name, v.value.clone())));
    if spec.preempted_before {
        env.push(plain("ANTEROOM_PREEMPTED", "1".to_owned()));
    }
    let asks_for_gpus = task
        .resources
        .iter()
        .any(|(name, quantity)| name.starts_with(NVIDIA_RESOURCE_PREFIX) && quantity.milli() > 0);
    if !asks_for_gpus {
        env.push(plain("NVIDIA_VISIBLE_DEVICES", "void".to_owned()));
    }
    env.extend(
        NVIDIA_SAFE_ENV
            .iter()
            .map(|(name, value)| plain(name, (*value).to_owned())),
    );
    Some(env)
}

/// The pod's volumes: `/dev/shm` when the task has it, then the catalogue's, each named
/// `vol-<catalogue name>` (the catalogue's names are DNS labels; the prefix keeps them apart
/// from `shm`).
fn pod_volumes(task: &TaskSpec) -> Option<Vec<Volume>> {
    let mut out: Vec<Volume> = Vec::new();
    if let Some(size) = task.shm {
        out.push(Volume {
            name: SHM_VOLUME.to_owned(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: Some("Memory".to_owned()),
                size_limit: Some(K8sQuantity(size.to_string())),
            }),
            ..Volume::default()
        });
    }
    for mount in &task.volumes {
        let mut volume = Volume {
            name: format!("vol-{}", mount.name),
            ..Volume::default()
        };
        match &mount.source {
            VolumeSource::Pvc { claim_name } => {
                volume.persistent_volume_claim = Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim_name.clone(),
                    read_only: mount.read_only.then_some(true),
                });
            }
            VolumeSource::Nfs { server, path } => {
                volume.nfs = Some(NFSVolumeSource {
                    server: server.clone(),
                    path: path.clone(),
                    read_only: mount.read_only.then_some(true),
                });
            }
        }
        out.push(volume);
    }
    (!out.is_empty()).then_some(out)
}

/// Where the container mounts [`pod_volumes`].
fn volume_mounts(task: &TaskSpec) -> Option<Vec<VolumeMount>> {
    let mut out: Vec<VolumeMount> = Vec::new();
    if task.shm.is_some() {
        out.push(VolumeMount {
            name: SHM_VOLUME.to_owned(),
            mount_path: "/dev/shm".to_owned(),
            ..VolumeMount::default()
        });
    }
    for mount in &task.volumes {
        out.push(VolumeMount {
            name: format!("vol-{}", mount.name),
            mount_path: mount.mount_path.clone(),
            read_only: mount.read_only.then_some(true),
            ..VolumeMount::default()
        });
    }
    (!out.is_empty()).then_some(out)
}

/// The memory-backed `/dev/shm` volume of a task that has one (as the seed's Volcano example
/// names it). Its size is part of the container's memory, which a tmpfs counts against.
const SHM_VOLUME: &str = "shm";

/// Extended resources of NVIDIA's device plugin (`nvidia.com/gpu`, `nvidia.com/a100`, MIG
/// slices such as `nvidia.com/mig-1g.10gb`).
const NVIDIA_RESOURCE_PREFIX: &str = "nvidia.com/";

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
mod crd_tests;
#[cfg(test)]
mod tests;

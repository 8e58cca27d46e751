//! Tests of `manifest`.

use anteroom_shared::scheduling::{JobKind, PreemptionPolicy, Quantity, ResourceList, ScheduleType};

use super::*;
use crate::cluster::TaskSpec;
use crate::config::ImagePullPolicy;

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
        env: Vec::new(),
        shm: None,
        volumes: Vec::new(),
    }
}

fn job(id: i64, kind: JobKind, tasks: Vec<TaskSpec>) -> JobSpec {
    JobSpec {
        id,
        // Deterministic, so the snapshots are stable; a real one is random.
        cluster_uid: format!("9d0c5e7a1b2f4c3d8e6f{id:012x}"),
        kind,
        queue: "nlp".to_owned(),
        owner: "ada.lovelace@example.org".to_owned(),
        schedule_type: ScheduleType::Normal,
        waiting_tolerance_seconds: Some(300),
        preemption_policy: PreemptionPolicy::PreemptLowerPriority,
        tasks,
        preemptable: false,
        termination_grace_seconds: Some(120),
        active_deadline_seconds: None,
        preempted_before: false,
        run_as_user: None,
    }
}

const INSTALLATION: &str = "5f0c3a2e-8d7b-4c1a-9e6f-0b1d2c3e4f5a";

/// The settings of the snapshots: a backfill and a never priority class, no normal class, a
/// pull policy and a TTL.
pub(super) fn settings() -> ManifestSettings {
    ManifestSettings {
        priority_class_backfill: Some("anteroom-backfill".to_owned()),
        priority_class_never: Some("anteroom-never".to_owned()),
        image_pull_policy: Some(ImagePullPolicy::IfNotPresent),
        ttl_seconds_after_finished: Some(3600),
        ..ManifestSettings::new("anteroom-jobs", INSTALLATION)
    }
}

/// A job of every kind, with every task its kind allows.
pub(super) fn every_kind() -> Vec<JobSpec> {
    let r = [("cpu", "1"), ("memory", "1Gi")];
    vec![
        job(1, JobKind::Jupyter, vec![task("main", 1, &r)]),
        job(2, JobKind::Webide, vec![task("main", 1, &r)]),
        job(3, JobKind::Custom, vec![task("main", 2, &r)]),
        job(4, JobKind::Pytorch, vec![task("master", 1, &r), task("worker", 2, &r)]),
        job(5, JobKind::Tensorflow, vec![task("ps", 1, &r), task("worker", 2, &r)]),
    ]
}

#[test]
fn kube_manifest_of_a_jupyter_job() {
    let mut t = task("main", 1, &[("cpu", "4"), ("memory", "16Gi"), ("nvidia.com/a100", "1")]);
    t.image = "jupyter/scipy-notebook:2026-01".to_owned();
    t.command = Vec::new();
    t.node_names = vec!["gpu-a100-1".to_owned(), "gpu-a100-0".to_owned()];
    let mut spec = job(41, JobKind::Jupyter, vec![t]);
    spec.schedule_type = ScheduleType::Backfill;
    // Unlocked, no minimum runtime: the cluster's to evict from the start.
    spec.preemptable = true;
    spec.waiting_tolerance_seconds = None;
    insta::assert_yaml_snapshot!(volcano_job(&spec, &settings()));
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
    insta::assert_yaml_snapshot!(volcano_job(&job(42, JobKind::Webide, vec![t]), &settings()));
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
    insta::assert_yaml_snapshot!(volcano_job(&spec, &settings()));
}

#[test]
fn kube_manifest_of_a_pytorch_job() {
    let gpu = [("cpu", "8"), ("memory", "64Gi"), ("nvidia.com/a100", "4")];
    let mut spec = job(
        44,
        JobKind::Pytorch,
        vec![task("master", 1, &gpu), task("worker", 3, &gpu)],
    );
    // A quarter of the memory, the default for PyTorch (`TaskBody::effective_shm`), a dataset
    // from the catalogue read-only, checkpoints on NFS, and an environment variable.
    for t in &mut spec.tasks {
        t.shm = Some(Quantity::parse("16Gi").expect("a quantity"));
        t.volumes = vec![
            anteroom_shared::api::volumes::VolumeMount {
                name: "imagenet".into(),
                source: anteroom_shared::api::volumes::VolumeSource::Pvc {
                    claim_name: "imagenet-ro".into(),
                },
                mount_path: "/data/imagenet".into(),
                read_only: true,
            },
            anteroom_shared::api::volumes::VolumeMount {
                name: "checkpoints".into(),
                source: anteroom_shared::api::volumes::VolumeSource::Nfs {
                    server: "nfs.example.org".into(),
                    path: "/export/ckpt".into(),
                },
                mount_path: "/ckpt".into(),
                read_only: false,
            },
        ];
        t.env = vec![anteroom_shared::api::jobs::EnvVar {
            name: "NCCL_DEBUG".into(),
            value: "INFO".into(),
        }];
    }
    let manifest = volcano_job(&spec, &settings());
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
    insta::assert_yaml_snapshot!(volcano_job(&spec, &settings()));
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
    for t in volcano_job(&spec, &settings()).spec.tasks {
        let pod = t.template.spec.expect("pod spec");
        let res = pod.containers[0].resources.clone().expect("resources");
        assert_eq!(res.requests, res.limits);
    }
    assert_eq!(Quantity::parse("2").expect("q").to_string(), "2");
}

fn plugin_names(job: &VolcanoJob) -> Vec<&str> {
    job.spec.plugins.iter().flatten().map(|(k, _)| k.as_str()).collect()
}

#[test]
fn kube_pytorch_gets_the_svc_plugin_its_master_addr_needs_and_tensorflow_its_own_plugin_for_tf_config() {
    let gpu = [("cpu", "1")];
    let pytorch = volcano_job(
        &job(
            1,
            JobKind::Pytorch,
            vec![task("master", 1, &gpu), task("worker", 1, &gpu)],
        ),
        &settings(),
    );
    assert_eq!(plugin_names(&pytorch), ["pytorch", "svc"]);
    let tensorflow = volcano_job(
        &job(
            2,
            JobKind::Tensorflow,
            vec![task("ps", 1, &gpu), task("worker", 2, &gpu)],
        ),
        &settings(),
    );
    assert_eq!(plugin_names(&tensorflow), ["env", "svc", "tensorflow"]);
    let args = &tensorflow.spec.plugins.as_ref().expect("plugins")["tensorflow"];
    assert_eq!(args, &["--ps=ps", "--worker=worker", "--port=2222"]);
}

#[test]
fn kube_pods_are_preemptable_for_volcano_as_the_spec_says_and_each_type_gets_its_priority_class() {
    let settings = ManifestSettings {
        priority_class_normal: Some("anteroom-normal".to_owned()),
        ..settings()
    };
    for (schedule_type, told, preemptable, class) in [
        (ScheduleType::Backfill, true, "true", "anteroom-backfill"),
        // Locked or younger than the minimum runtime when created.
        (ScheduleType::Backfill, false, "false", "anteroom-backfill"),
        (ScheduleType::Normal, false, "false", "anteroom-normal"),
    ] {
        let mut spec = job(3, JobKind::Custom, vec![task("main", 1, &[("cpu", "1")])]);
        spec.schedule_type = schedule_type;
        spec.preemptable = told;
        let manifest = volcano_job(&spec, &settings);
        assert_eq!(manifest.spec.priority_class_name.as_deref(), Some(class));
        let template = &manifest.spec.tasks[0].template;
        let meta = template.metadata.as_ref().expect("pod metadata");
        for map in [&meta.labels, &meta.annotations] {
            assert_eq!(
                map.as_ref().and_then(|m| m.get(PREEMPTABLE_KEY)).map(String::as_str),
                Some(preemptable),
                "{schedule_type:?}"
            );
        }
        let pod = template.spec.as_ref().expect("pod spec");
        assert_eq!(pod.priority_class_name.as_deref(), Some(class));
        // The job object itself is not a pod: Volcano reads the key on pods only.
        assert!(
            !manifest
                .metadata
                .labels
                .as_ref()
                .expect("labels")
                .contains_key(PREEMPTABLE_KEY)
        );
    }
    let plain = volcano_job(
        &job(3, JobKind::Custom, vec![task("main", 1, &[("cpu", "1")])]),
        &ManifestSettings::new("ns", INSTALLATION),
    );
    assert_eq!(plain.spec.priority_class_name, None);
    assert_eq!(plain.spec.ttl_seconds_after_finished, None);
    assert_eq!(
        plain.spec.tasks[0]
            .template
            .spec
            .as_ref()
            .expect("pod")
            .priority_class_name,
        None
    );
}

#[test]
fn kube_a_never_job_gets_the_never_priority_class_and_falls_back_to_the_normal_one() {
    let both = ManifestSettings {
        priority_class_normal: Some("anteroom-normal".to_owned()),
        ..settings()
    };
    let only_normal = ManifestSettings {
        priority_class_never: None,
        ..both.clone()
    };
    for (settings, schedule_type, policy, class) in [
        (
            &both,
            ScheduleType::Normal,
            PreemptionPolicy::Never,
            Some("anteroom-never"),
        ),
        (
            &both,
            ScheduleType::Normal,
            PreemptionPolicy::PreemptLowerPriority,
            Some("anteroom-normal"),
        ),
        (
            &both,
            ScheduleType::Backfill,
            PreemptionPolicy::Never,
            Some("anteroom-backfill"),
        ),
        (
            &only_normal,
            ScheduleType::Normal,
            PreemptionPolicy::Never,
            Some("anteroom-normal"),
        ),
        (
            &ManifestSettings::new("ns", INSTALLATION),
            ScheduleType::Normal,
            PreemptionPolicy::Never,
            None,
        ),
    ] {
        let mut spec = job(5, JobKind::Custom, vec![task("main", 1, &[("cpu", "1")])]);
        spec.schedule_type = schedule_type;
        spec.preemption_policy = policy;
        let manifest = volcano_job(&spec, settings);
        let case = format!("{schedule_type:?} {policy:?} with {settings:?}");
        // The PodGroup's class is the job's: Volcano orders and preempts by it.
        assert_eq!(manifest.spec.priority_class_name.as_deref(), class, "{case}");
        let pod = manifest.spec.tasks[0].template.spec.as_ref().expect("pod spec");
        assert_eq!(pod.priority_class_name.as_deref(), class, "{case}");
    }
}

#[test]
fn kube_job_pods_mount_no_service_account_token_and_cannot_gain_privileges() {
    for spec in every_kind() {
        for task in volcano_job(&spec, &settings()).spec.tasks {
            let pod = task.template.spec.expect("pod spec");
            assert_eq!(pod.automount_service_account_token, Some(false), "{:?}", spec.kind);
            assert!(!pod.containers.is_empty());
            for container in &pod.containers {
                let security = container.security_context.as_ref().expect("securityContext");
                assert_eq!(security.allow_privilege_escalation, Some(false), "{:?}", spec.kind);
            }
        }
    }
}

#[test]
fn kube_every_container_gets_the_image_pull_policy_and_none_leaves_kubernetes_default() {
    for (policy, word) in [
        (ImagePullPolicy::Always, "Always"),
        (ImagePullPolicy::IfNotPresent, "IfNotPresent"),
        (ImagePullPolicy::Never, "Never"),
    ] {
        let settings = ManifestSettings {
            image_pull_policy: Some(policy),
            ..settings()
        };
        for spec in every_kind() {
            for task in volcano_job(&spec, &settings).spec.tasks {
                for container in task.template.spec.expect("pod spec").containers {
                    assert_eq!(container.image_pull_policy.as_deref(), Some(word), "{:?}", spec.kind);
                }
            }
        }
    }
    let unset = ManifestSettings::new("ns", INSTALLATION);
    for spec in every_kind() {
        for task in volcano_job(&spec, &unset).spec.tasks {
            for container in task.template.spec.expect("pod spec").containers {
                assert_eq!(container.image_pull_policy, None);
            }
        }
    }
}

#[test]
fn kube_pods_get_the_preemption_grace_period_and_the_job_its_ttl_and_installation() {
    let mut spec = job(4, JobKind::Custom, vec![task("main", 1, &[("cpu", "1")])]);
    let manifest = volcano_job(&spec, &settings());
    let pod = manifest.spec.tasks[0].template.spec.clone().expect("pod spec");
    assert_eq!(pod.termination_grace_period_seconds, Some(120));
    assert_eq!(manifest.spec.ttl_seconds_after_finished, Some(3600));
    assert_eq!(
        manifest
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(INSTALLATION_LABEL))
            .map(String::as_str),
        Some(INSTALLATION)
    );
    let pod_labels = manifest.spec.tasks[0]
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone());
    assert_eq!(
        pod_labels
            .as_ref()
            .and_then(|l| l.get(INSTALLATION_LABEL))
            .map(String::as_str),
        Some(INSTALLATION)
    );
    spec.termination_grace_seconds = None;
    let pod = volcano_job(&spec, &settings()).spec.tasks[0]
        .template
        .spec
        .clone()
        .expect("pod spec");
    assert_eq!(pod.termination_grace_period_seconds, None);
    assert_eq!(
        settings().selector(),
        format!("app.kubernetes.io/managed-by=anteroom,anteroom.io/installation={INSTALLATION}")
    );
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

/// The variables Anteroom sets on every container, after the body's (and `void` devices).
fn safe_nvidia_env() -> Vec<(String, Option<String>)> {
    super::NVIDIA_SAFE_ENV
        .iter()
        .map(|(n, v)| ((*n).to_owned(), Some((*v).to_owned())))
        .collect()
}

#[test]
fn kube_a_container_without_gpus_is_told_to_see_none_and_no_image_widens_what_the_gpu_runtime_grants() {
    let settings = settings();
    let cpu = volcano_job(
        &job(
            5,
            JobKind::Custom,
            vec![task("main", 1, &[("cpu", "2"), ("memory", "4Gi")])],
        ),
        &settings,
    );
    let env = |job: &VolcanoJob| {
        job.spec.tasks[0].template.spec.as_ref().expect("pod spec").containers[0]
            .env
            .clone()
    };
    let pairs = |env: Vec<k8s_openapi::api::core::v1::EnvVar>| -> Vec<(String, Option<String>)> {
        env.into_iter().map(|v| (v.name, v.value)).collect()
    };
    let cpu_env = pairs(env(&cpu).expect("an env"));
    let mut expected = vec![("NVIDIA_VISIBLE_DEVICES".to_owned(), Some("void".to_owned()))];
    expected.extend(safe_nvidia_env());
    assert_eq!(cpu_env, expected);
    assert!(
        cpu_env.contains(&(
            "NVIDIA_DRIVER_CAPABILITIES".to_owned(),
            Some("compute,utility".to_owned())
        )),
        "an image's `all` never reaches the runtime: {cpu_env:?}"
    );
    // A container with NVIDIA devices is left to the device plugin, which names them; its
    // capabilities are still set.
    let gpu = volcano_job(
        &job(
            6,
            JobKind::Custom,
            vec![task("main", 1, &[("cpu", "2"), ("nvidia.com/a100", "1")])],
        ),
        &settings,
    );
    assert_eq!(pairs(env(&gpu).expect("an env")), safe_nvidia_env());
    // The body's variables come first, in its order.
    let mut t = task("main", 1, &[("cpu", "2"), ("nvidia.com/a100", "1")]);
    t.env = vec![
        anteroom_shared::api::jobs::EnvVar {
            name: "NCCL_DEBUG".into(),
            value: "INFO".into(),
        },
        anteroom_shared::api::jobs::EnvVar {
            name: "EMPTY".into(),
            value: String::new(),
        },
    ];
    let with_env = volcano_job(&job(7, JobKind::Custom, vec![t.clone()]), &settings);
    let names: Vec<(String, Option<String>)> = env(&with_env)
        .expect("an env")
        .into_iter()
        .map(|v| (v.name, v.value))
        .collect();
    let mut expected = vec![
        ("NCCL_DEBUG".to_owned(), Some("INFO".to_owned())),
        ("EMPTY".to_owned(), Some(String::new())),
    ];
    expected.extend(safe_nvidia_env());
    assert_eq!(names, expected);
    t.resources = ResourceList::parse_map([("cpu", "2")]).expect("a list");
    let cpu_with_env = volcano_job(&job(8, JobKind::Custom, vec![t]), &settings);
    let names: Vec<String> = env(&cpu_with_env)
        .expect("an env")
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(names[2], "NVIDIA_VISIBLE_DEVICES", "{names:?}");
}

#[test]
fn kube_every_container_drops_every_capability_and_a_queue_s_user_makes_the_pod_non_root() {
    let settings = settings();
    let mut spec = job(
        10,
        JobKind::Jupyter,
        vec![task("main", 1, &[("cpu", "1"), ("memory", "2Gi")])],
    );
    let pod = |spec: &JobSpec| {
        volcano_job(spec, &settings).spec.tasks[0]
            .template
            .spec
            .clone()
            .expect("pod spec")
    };
    let root_allowed = pod(&spec);
    let container = root_allowed.containers[0].security_context.clone().expect("a context");
    assert_eq!(container.allow_privilege_escalation, Some(false));
    assert_eq!(
        container.capabilities.and_then(|c| c.drop),
        Some(vec!["ALL".to_owned()])
    );
    assert_eq!(
        container.seccomp_profile.map(|p| p.type_),
        Some("RuntimeDefault".to_owned())
    );
    let pod_context = root_allowed.security_context.clone().expect("a pod context");
    assert_eq!(pod_context.run_as_non_root, None, "the queue lets images run as root");
    assert_eq!(pod_context.run_as_user, None);
    assert_eq!(
        pod_context.seccomp_profile.map(|p| p.type_),
        Some("RuntimeDefault".to_owned())
    );
    spec.run_as_user = Some(1000);
    let non_root = pod(&spec).security_context.expect("a pod context");
    assert_eq!(non_root.run_as_non_root, Some(true));
    assert_eq!(non_root.run_as_user, Some(1000));
}

#[test]
fn a_runtime_limit_is_the_pods_active_deadline_and_a_requeued_run_knows_it_was_preempted() {
    let settings = settings();
    let mut spec = job(
        9,
        JobKind::Custom,
        vec![task("main", 2, &[("cpu", "1"), ("nvidia.com/a100", "1")])],
    );
    let pod = |spec: &JobSpec| {
        volcano_job(spec, &settings).spec.tasks[0]
            .template
            .spec
            .clone()
            .expect("pod spec")
    };
    let plain = pod(&spec);
    assert_eq!(plain.active_deadline_seconds, None);
    assert!(
        !plain.containers[0]
            .env
            .iter()
            .flatten()
            .any(|v| v.name.starts_with("ANTEROOM_")),
        "nothing of Anteroom's set for a first run"
    );
    spec.active_deadline_seconds = Some(7200);
    spec.preempted_before = true;
    let limited = pod(&spec);
    assert_eq!(limited.active_deadline_seconds, Some(7200));
    let env = limited.containers[0].env.clone().expect("an env");
    assert!(
        env.iter()
            .any(|v| v.name == "ANTEROOM_PREEMPTED" && v.value.as_deref() == Some("1")),
        "{env:?}"
    );
}

mod elastic;

//! The body's own rules: every limit at its edge, and the field each problem names.

use super::*;
use anteroom_shared::scheduling::ResourceList;

fn task(name: &str, replicas: u32) -> TaskBody {
    TaskBody {
        name: name.into(),
        replicas,
        image: "busybox".into(),
        command: vec!["true".into()],
        resources: ResourceList::parse_map([("cpu", "1"), ("memory", "1Gi")]).unwrap(),
        node_names: vec![],
        env: vec![],
        shm_size: None,
    }
}

#[test]
fn shared_memory_is_part_of_the_memory_and_a_quarter_of_it_by_default_for_training_kinds() {
    let q = |s: &str| anteroom_shared::scheduling::Quantity::parse(s).unwrap();
    let mut t = task("main", 1);
    t.resources = ResourceList::parse_map([("cpu", "8"), ("memory", "256Gi")]).unwrap();
    // The seed's Volcano example: 256Gi of memory, 64Gi of /dev/shm.
    assert_eq!(t.effective_shm(JobKind::Pytorch), Some(q("64Gi")));
    assert_eq!(t.effective_shm(JobKind::Tensorflow), Some(q("64Gi")));
    assert_eq!(t.effective_shm(JobKind::Custom), None, "opt-in for the others");
    t.shm_size = Some(q("0"));
    assert_eq!(t.effective_shm(JobKind::Pytorch), None, "0 opts out");
    t.shm_size = Some(q("8Gi"));
    assert_eq!(t.effective_shm(JobKind::Jupyter), Some(q("8Gi")));
    let mut b = body(JobKind::Custom, vec![t.clone()]);
    assert!(problems(&b).is_empty(), "{:?}", problems(&b));
    b.tasks[0].shm_size = Some(q("257Gi"));
    assert_eq!(fields(&b), ["tasks[0].shmSize"]);
    b.tasks[0].shm_size = Some(q("-1"));
    assert_eq!(fields(&b), ["tasks[0].shmSize"]);
}

#[test]
fn environment_names_and_sizes_are_checked_and_anterooms_own_names_refused() {
    use anteroom_shared::api::jobs::EnvVar;
    let var = |name: &str, value: &str| EnvVar {
        name: name.into(),
        value: value.into(),
    };
    let good = [
        var("NCCL_DEBUG", "INFO"),
        var("_x.y-z", ""),
        var("PYTHONUNBUFFERED", "1"),
    ];
    assert!(env_problems(0, &good).is_empty());
    let bad = [
        var("", "x"),
        var("1ABC", "x"),
        var("HAS SPACE", "x"),
        var("ANTEROOM_PREEMPTED", "0"),
        var("NVIDIA_MOFED", "enabled"),
        var("NCCL_DEBUG", "INFO"),
        var("NCCL_DEBUG", "WARN"),
        var("BIG", &"v".repeat(MAX_ENV_VALUE_BYTES + 1)),
        var("NUL", "a\0b"),
    ];
    let fields: Vec<String> = env_problems(2, &bad).into_iter().map(|(f, _)| f).collect();
    assert_eq!(
        fields,
        [
            "tasks[2].env[0].name",
            "tasks[2].env[1].name",
            "tasks[2].env[2].name",
            "tasks[2].env[3].name",
            "tasks[2].env[4].name",
            "tasks[2].env[6].name",
            "tasks[2].env[7].value",
            "tasks[2].env[8].value",
        ]
    );
    let many: Vec<EnvVar> = (0..=MAX_ENV_VARS).map(|i| var(&format!("V{i}"), "")).collect();
    assert_eq!(env_problems(0, &many)[0].0, "tasks[0].env");
    let heavy: Vec<EnvVar> = (0..9).map(|i| var(&format!("V{i}"), &"v".repeat(4000))).collect();
    let rule = &env_problems(0, &heavy)[0].1;
    assert_eq!(rule.message, "at most 32 KiB of names and values in all");
    assert_eq!(
        (rule.code, rule.params.clone()),
        ("envTooLarge", Some(json!({ "kib": 32 })))
    );
}

fn body(kind: JobKind, tasks: Vec<TaskBody>) -> JobBody {
    JobBody {
        volumes: vec![],
        name: "job".into(),
        kind,
        queue: "default".into(),
        schedule_type: ScheduleType::Normal,
        preemption_policy: None,
        tasks,
        max_runtime_seconds: None,
        requeue: None,
        priority: None,
        borrow: None,
    }
}

fn fields(body: &JobBody) -> Vec<String> {
    problems(body).into_iter().map(|(f, _)| f).collect()
}

#[test]
fn each_kind_accepts_its_layout_and_refuses_others() {
    assert!(fields(&body(JobKind::Jupyter, vec![task("main", 1)])).is_empty());
    assert_eq!(fields(&body(JobKind::Webide, vec![task("main", 2)])), ["tasks"]);
    assert!(fields(&body(JobKind::Custom, vec![task("main", 8)])).is_empty());
    assert_eq!(
        fields(&body(JobKind::Custom, vec![task("a", 1), task("b", 1)])),
        ["tasks"]
    );
    assert!(fields(&body(JobKind::Pytorch, vec![task("master", 1), task("worker", 4)])).is_empty());
    assert!(fields(&body(JobKind::Pytorch, vec![task("master", 1)])).is_empty());
    assert_eq!(fields(&body(JobKind::Pytorch, vec![task("master", 2)])), ["tasks"]);
    assert_eq!(fields(&body(JobKind::Pytorch, vec![task("worker", 2)])), ["tasks"]);
    assert!(fields(&body(JobKind::Tensorflow, vec![task("ps", 2), task("worker", 3)])).is_empty());
    assert_eq!(fields(&body(JobKind::Tensorflow, vec![task("worker", 3)])), ["tasks"]);
}

#[test]
fn absurd_input_is_named_field_by_field() {
    let mut t = task("Main_Task", 1001);
    t.image = "x".repeat(513);
    t.command = vec!["a".into(); 257];
    t.node_names = vec!["not a host".into()];
    t.resources = ResourceList::parse_map([("bad name!", "1")]).unwrap();
    let mut b = body(JobKind::Custom, vec![t]);
    b.name = "-bad".into();
    let got = fields(&b);
    for want in [
        "name",
        "tasks",
        "tasks[0].name",
        "tasks[0].replicas",
        "tasks[0].image",
        "tasks[0].command",
        "tasks[0].resources.bad name!",
        "tasks[0].nodeNames[0]",
    ] {
        assert!(got.iter().any(|f| f == want), "{want} missing from {got:?}");
    }
}

#[test]
fn every_task_asks_for_cpu_and_memory_and_defaults_fill_in_what_is_left_out() {
    let mut empty = task("main", 1000);
    empty.resources = ResourceList::new();
    let b = body(JobKind::Custom, vec![empty.clone()]);
    assert_eq!(fields(&b), ["tasks[0].resources.cpu", "tasks[0].resources.memory"]);
    let defaults = DefaultRequests::default();
    let filled = with_default_requests(&b, &defaults);
    assert!(fields(&filled).is_empty());
    assert_eq!(filled.tasks[0].resources.get("cpu"), defaults.custom.cpu.value());
    assert_eq!(filled.tasks[0].resources.get("memory"), defaults.custom.memory.value());
    // Per kind: a PyTorch task gets the PyTorch defaults.
    let mut master = empty.clone();
    master.name = "master".into();
    master.replicas = 1;
    let torch = with_default_requests(&body(JobKind::Pytorch, vec![master]), &defaults);
    assert_eq!(torch.tasks[0].resources.get("memory"), defaults.pytorch.memory.value());
    // A zero the body names is not replaced: it is refused.
    let mut zero = empty;
    zero.resources = ResourceList::parse_map([("cpu", "0"), ("memory", "0")]).unwrap();
    let zero = with_default_requests(&body(JobKind::Custom, vec![zero]), &defaults);
    assert_eq!(fields(&zero), ["tasks[0].resources.cpu", "tasks[0].resources.memory"]);
    // What the body names stays as it is.
    let own = with_default_requests(&body(JobKind::Custom, vec![task("main", 1)]), &defaults);
    assert_eq!(own.tasks[0].resources.get("memory").to_string(), "1Gi");
}

#[test]
fn more_than_64_tasks_or_none_are_refused() {
    let many: Vec<TaskBody> = (0..65).map(|i| task(&format!("t{i}"), 1)).collect();
    assert_eq!(fields(&body(JobKind::Custom, many)), ["tasks"]);
    assert_eq!(fields(&body(JobKind::Custom, vec![])), ["tasks"]);
}

#[test]
fn only_images_under_an_allowed_prefix_pass_and_an_empty_list_allows_any() {
    let mut master = task("master", 1);
    master.image = "registry.example.org/ml/train:1".into();
    let mut worker = task("worker", 2);
    worker.image = "registry.example.org.evil.com/ml/train:1".into();
    let b = body(JobKind::Pytorch, vec![master, worker]);
    assert!(image_problems(&b, &[]).is_empty());
    let allowed = ["registry.example.org/".to_owned(), "docker.io/pytorch/".to_owned()];
    let got = image_problems(&b, &allowed);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "tasks[1].image");
    assert!(
        got[0].1.message.contains("registry.example.org/, docker.io/pytorch/"),
        "{got:?}"
    );
    assert!(matches!(
        check_images(&b, &allowed),
        Err(crate::jobs::JobError::ImageNotAllowed(p)) if p == got
    ));
    // A prefix, not a substring: an allowed path inside another registry's is not allowed.
    let mut inside = task("main", 1);
    inside.image = "mirror.example/registry.example.org/ml/train:1".into();
    let b = body(JobKind::Custom, vec![inside]);
    assert_eq!(fields_of(image_problems(&b, &allowed)), ["tasks[0].image"]);
    // No normalisation: the reference as written must start with a prefix.
    let mut plain = task("main", 1);
    plain.image = "pytorch/pytorch:2.4".into();
    let b = body(JobKind::Custom, vec![plain]);
    assert_eq!(fields_of(image_problems(&b, &allowed)), ["tasks[0].image"]);
    let mut listed = task("main", 1);
    listed.image = "docker.io/pytorch/pytorch:2.4".into();
    assert!(check_images(&body(JobKind::Custom, vec![listed]), &allowed).is_ok());
}

fn fields_of(problems: Vec<Problem>) -> Vec<String> {
    problems.into_iter().map(|(f, _)| f).collect()
}

#[test]
fn a_backfill_job_may_not_name_a_preemption_policy() {
    let mut b = body(JobKind::Custom, vec![task("main", 1)]);
    b.schedule_type = ScheduleType::Backfill;
    b.preemption_policy = Some(anteroom_shared::scheduling::PreemptionPolicy::Never);
    assert_eq!(fields(&b), ["preemptionPolicy"]);
}

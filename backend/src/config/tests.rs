use super::*;
use std::collections::HashMap;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |k| map.get(k).cloned()
}

fn no_file() -> CliOverrides {
    // Tests run in backend/, which holds no anteroom.toml; the file layer has its own tests.
    CliOverrides::default()
}

#[test]
fn defaults_give_sqlite_in_the_data_dir_and_the_simulated_cluster() {
    let c = Config::load(&no_file(), &env_of(&[])).unwrap();
    assert_eq!(c.listen, "127.0.0.1:8080".parse().unwrap());
    assert_eq!(c.cluster, ClusterKind::Sim);
    assert_eq!(c.database_url, "sqlite://data/anteroom.db?mode=rwc");
    assert!(c.jwt_secret.is_none());
}

#[test]
fn environment_overrides_defaults_and_cli_overrides_environment() {
    let env = env_of(&[("ANTEROOM_LISTEN", "0.0.0.0:9000"), ("ANTEROOM_CLUSTER", "kube")]);
    let c = Config::load(&no_file(), &env).unwrap();
    assert_eq!(c.listen, "0.0.0.0:9000".parse().unwrap());
    assert_eq!(c.cluster, ClusterKind::Kube);
    let cli = CliOverrides {
        listen: Some("127.0.0.1:7000".into()),
        ..CliOverrides::default()
    };
    let c = Config::load(&cli, &env).unwrap();
    assert_eq!(c.listen, "127.0.0.1:7000".parse().unwrap());
}

#[test]
fn a_bad_value_names_the_setting_and_where_it_came_from() {
    let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_LISTEN", "nonsense")])).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("`listen`"), "{msg}");
    assert!(msg.contains("ANTEROOM_LISTEN"), "{msg}");
    let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_CLUSTER", "nomad")])).unwrap_err();
    assert!(err.to_string().contains("`cluster`"));
    let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_DATABASE_URL", "mysql://x")])).unwrap_err();
    assert!(err.to_string().contains("`database_url`"));
    let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_JWT_SECRET", "short")])).unwrap_err();
    assert!(err.to_string().contains("at least 32 bytes"));
}

#[test]
fn kube_priority_classes_and_ttl_are_optional_and_validated() {
    let c = Config::load(&no_file(), &env_of(&[])).unwrap();
    assert_eq!(
        (
            c.kube_priority_class_normal,
            c.kube_priority_class_backfill,
            c.kube_ttl_seconds_after_finished
        ),
        (None, None, None)
    );
    let env = env_of(&[
        ("ANTEROOM_KUBE_PRIORITY_CLASS_NORMAL", ""),
        ("ANTEROOM_KUBE_PRIORITY_CLASS_BACKFILL", "anteroom-backfill"),
        ("ANTEROOM_KUBE_TTL_SECONDS_AFTER_FINISHED", "3600"),
    ]);
    let c = Config::load(&no_file(), &env).unwrap();
    assert_eq!(c.kube_priority_class_normal, None, "empty means none");
    assert_eq!(c.kube_priority_class_backfill.as_deref(), Some("anteroom-backfill"));
    assert_eq!(c.kube_ttl_seconds_after_finished, Some(3600));
    let err = Config::load(
        &no_file(),
        &env_of(&[("ANTEROOM_KUBE_PRIORITY_CLASS_NORMAL", "High_Priority")]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("`kube_priority_class_normal`") && err.contains("PriorityClass"),
        "{err}"
    );
    let err = Config::load(
        &no_file(),
        &env_of(&[("ANTEROOM_KUBE_TTL_SECONDS_AFTER_FINISHED", "-1")]),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("`kube_ttl_seconds_after_finished`"), "{err}");
}

#[test]
fn queues_are_mirrored_unless_turned_off_in_the_environment_or_the_file() {
    assert!(Config::load(&no_file(), &env_of(&[])).unwrap().mirror_queues);
    let off = env_of(&[("ANTEROOM_MIRROR_QUEUES", "false")]);
    assert!(!Config::load(&no_file(), &off).unwrap().mirror_queues);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("anteroom.toml");
    std::fs::write(&path, "mirror_queues = false\n").unwrap();
    let cli = CliOverrides {
        config_file: Some(path),
        ..CliOverrides::default()
    };
    assert!(
        !Config::load(&cli, &env_of(&[])).unwrap().mirror_queues,
        "a TOML boolean"
    );
    let on = env_of(&[("ANTEROOM_MIRROR_QUEUES", "TRUE")]);
    assert!(
        Config::load(&cli, &on).unwrap().mirror_queues,
        "the environment wins over the file"
    );
    let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_MIRROR_QUEUES", "yes")]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`mirror_queues`") && err.contains("ANTEROOM_MIRROR_QUEUES") && err.contains("true, false"),
        "{err}"
    );
}

#[test]
fn the_never_priority_class_is_optional_and_validated_like_the_others() {
    let c = Config::load(&no_file(), &env_of(&[])).unwrap();
    assert_eq!(c.kube_priority_class_never, None);
    let env = env_of(&[("ANTEROOM_KUBE_PRIORITY_CLASS_NEVER", "anteroom-never")]);
    let c = Config::load(&no_file(), &env).unwrap();
    assert_eq!(c.kube_priority_class_never.as_deref(), Some("anteroom-never"));
    let err = Config::load(
        &no_file(),
        &env_of(&[("ANTEROOM_KUBE_PRIORITY_CLASS_NEVER", "No Preempt")]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("`kube_priority_class_never`") && err.contains("ANTEROOM_KUBE_PRIORITY_CLASS_NEVER"),
        "{err}"
    );
}

#[test]
fn jobs_go_to_anteroom_jobs_unless_set_and_the_old_namespace_setting_still_works_with_a_warning() {
    let c = Config::load(&no_file(), &env_of(&[])).unwrap();
    assert_eq!(c.jobs_namespace, "anteroom-jobs");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let c = Config::load(&no_file(), &env_of(&[("ANTEROOM_JOBS_NAMESPACE", "gpu-jobs")])).unwrap();
    assert_eq!(c.jobs_namespace, "gpu-jobs");
    assert!(c.warnings.is_empty());
    // The deprecated name: read while the new one is unset, with a warning naming both.
    let c = Config::load(&no_file(), &env_of(&[("ANTEROOM_NAMESPACE", "legacy")])).unwrap();
    assert_eq!(c.jobs_namespace, "legacy");
    assert_eq!(c.warnings.len(), 1);
    assert!(
        c.warnings[0].contains("`namespace`")
            && c.warnings[0].contains("ANTEROOM_NAMESPACE")
            && c.warnings[0].contains("`jobs_namespace`"),
        "{:?}",
        c.warnings
    );
    // Both set: the new name wins, and the old one is said to be ignored.
    let c = Config::load(
        &no_file(),
        &env_of(&[
            ("ANTEROOM_NAMESPACE", "legacy"),
            ("ANTEROOM_JOBS_NAMESPACE", "gpu-jobs"),
        ]),
    )
    .unwrap();
    assert_eq!(c.jobs_namespace, "gpu-jobs");
    assert!(c.warnings[0].contains("ignored"), "{:?}", c.warnings);
    // A bad value names the setting it came from.
    let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_NAMESPACE", "Bad_NS")]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`namespace`") && err.contains("ANTEROOM_NAMESPACE"),
        "{err}"
    );
    let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_JOBS_NAMESPACE", "-x")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`jobs_namespace`"), "{err}");
    // In the file too.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("anteroom.toml");
    std::fs::write(&path, "namespace = \"from-file\"\n").unwrap();
    let cli = CliOverrides {
        config_file: Some(path),
        ..CliOverrides::default()
    };
    let c = Config::load(&cli, &env_of(&[])).unwrap();
    assert_eq!(c.jobs_namespace, "from-file");
    assert_eq!(c.warnings.len(), 1);
}

#[test]
fn image_pull_policy_and_allowed_images_are_optional_and_validated() {
    let c = Config::load(&no_file(), &env_of(&[])).unwrap();
    assert_eq!(c.image_pull_policy, None);
    assert!(c.allowed_images.is_empty());
    for (word, policy) in [
        ("Always", ImagePullPolicy::Always),
        ("IfNotPresent", ImagePullPolicy::IfNotPresent),
        ("Never", ImagePullPolicy::Never),
    ] {
        let c = Config::load(&no_file(), &env_of(&[("ANTEROOM_IMAGE_PULL_POLICY", word)])).unwrap();
        assert_eq!(c.image_pull_policy, Some(policy));
        assert_eq!(policy.as_str(), word);
    }
    let c = Config::load(&no_file(), &env_of(&[("ANTEROOM_IMAGE_PULL_POLICY", "")])).unwrap();
    assert_eq!(c.image_pull_policy, None, "empty means Kubernetes' default");
    let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_IMAGE_PULL_POLICY", "always")]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`image_pull_policy`") && err.contains("IfNotPresent"),
        "{err}"
    );

    let env = env_of(&[(
        "ANTEROOM_ALLOWED_IMAGES",
        " registry.example.org/ , docker.io/pytorch/,",
    )]);
    let c = Config::load(&no_file(), &env).unwrap();
    assert_eq!(c.allowed_images, ["registry.example.org/", "docker.io/pytorch/"]);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_ALLOWED_IMAGES", "a/ b/")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`allowed_images`") && err.contains("`a/ b/`"), "{err}");
    // A host without its slash admits look-alike hosts: allowed, but warned about.
    let c = Config::load(
        &no_file(),
        &env_of(&[("ANTEROOM_ALLOWED_IMAGES", "registry.example.org")]),
    )
    .unwrap();
    assert_eq!(c.warnings.len(), 1);
    assert!(c.warnings[0].contains("registry.example.org/"), "{:?}", c.warnings);
}

#[test]
fn job_retention_defaults_to_90_days_0_keeps_for_ever_and_a_bad_value_is_named() {
    let c = Config::load(&no_file(), &env_of(&[])).unwrap();
    assert_eq!(c.job_retention_days, 90);
    let c = Config::load(&no_file(), &env_of(&[("ANTEROOM_JOB_RETENTION_DAYS", "0")])).unwrap();
    assert_eq!(c.job_retention_days, 0);
    for bad in ["-1", "ninety", "36501"] {
        let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_JOB_RETENTION_DAYS", bad)]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`job_retention_days`") && err.contains("ANTEROOM_JOB_RETENTION_DAYS"),
            "{err}"
        );
    }
}

#[test]
fn the_file_layer_sits_between_defaults_and_environment() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("anteroom.toml");
    std::fs::write(&path, "listen = \"127.0.0.1:8181\"\ncluster = \"kube\"\n").unwrap();
    let cli = CliOverrides {
        config_file: Some(path.clone()),
        ..CliOverrides::default()
    };
    let c = Config::load(&cli, &env_of(&[("ANTEROOM_CLUSTER", "sim")])).unwrap();
    assert_eq!(c.listen, "127.0.0.1:8181".parse().unwrap());
    assert_eq!(c.cluster, ClusterKind::Sim);
}

#[test]
fn an_unknown_key_in_the_file_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("anteroom.toml");
    std::fs::write(&path, "lisen = \"127.0.0.1:8181\"\n").unwrap();
    let cli = CliOverrides {
        config_file: Some(path),
        ..CliOverrides::default()
    };
    let err = Config::load(&cli, &env_of(&[])).unwrap_err();
    assert!(err.to_string().contains("`lisen`"), "{err}");
}

#[test]
fn secrets_can_come_from_a_file_and_never_print() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret");
    std::fs::write(&path, "0123456789abcdef0123456789abcdef\n").unwrap();
    let env = env_of(&[("ANTEROOM_JWT_SECRET_FILE", path.to_str().unwrap())]);
    let c = Config::load(&no_file(), &env).unwrap();
    assert_eq!(
        c.jwt_secret.as_ref().unwrap().expose(),
        "0123456789abcdef0123456789abcdef"
    );
    assert!(!format!("{c:?}").contains("0123456789"));
}

#[test]
fn the_database_url_and_its_password_never_print() {
    let env = env_of(&[(
        "ANTEROOM_DATABASE_URL",
        "postgres://anteroom:hunter2-db-pass@db.internal/anteroom",
    )]);
    let c = Config::load(&no_file(), &env).unwrap();
    let shown = format!("{c:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(!shown.contains("db.internal"), "{shown}");
    assert!(shown.contains("database_url: postgres:***"), "{shown}");
}

#[test]
fn notebooks_get_their_own_origin_and_a_setting_that_cannot_work_is_refused_or_warned_of() {
    let c = Config::load(&no_file(), &env_of(&[])).unwrap();
    assert_eq!(
        c.notebook_origin, None,
        "the laptop default, resolved once the port is bound"
    );
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let c = Config::load(
        &no_file(),
        &env_of(&[
            ("ANTEROOM_PUBLIC_URL", "https://anteroom.example.org"),
            ("ANTEROOM_NOTEBOOK_ORIGIN", "https://{job}.nb.example.org"),
        ]),
    )
    .unwrap();
    assert_eq!(c.notebook_origin.unwrap().origin(3), "https://3.nb.example.org");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    // Notebooks in the clear beside a portal on TLS: refused, naming the setting.
    let err = Config::load(
        &no_file(),
        &env_of(&[
            ("ANTEROOM_PUBLIC_URL", "https://anteroom.example.org"),
            ("ANTEROOM_NOTEBOOK_ORIGIN", "http://{job}.nb.example.org"),
        ]),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("`notebook_origin`") && err.contains("https"), "{err}");
    // A notebook host that would be the portal's: refused.
    let err = Config::load(
        &no_file(),
        &env_of(&[
            ("ANTEROOM_PUBLIC_URL", "https://7.nb.example.org"),
            ("ANTEROOM_NOTEBOOK_ORIGIN", "https://{job}.nb.example.org"),
        ]),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("matches public_url"), "{err}");
    // A portal others reach by name, with notebooks left at localhost: a warning at start.
    let c = Config::load(
        &no_file(),
        &env_of(&[("ANTEROOM_PUBLIC_URL", "https://anteroom.example.org")]),
    )
    .unwrap();
    assert!(
        c.warnings.iter().any(|w| w.contains("notebook_origin is unset")),
        "{:?}",
        c.warnings
    );
    let c = Config::load(&no_file(), &env_of(&[("ANTEROOM_PUBLIC_URL", "http://127.0.0.1:8080")])).unwrap();
    assert!(c.warnings.is_empty(), "a laptop: {:?}", c.warnings);
    // Both over http on a real domain: warned of.
    let c = Config::load(
        &no_file(),
        &env_of(&[
            ("ANTEROOM_PUBLIC_URL", "http://anteroom.corp.internal"),
            ("ANTEROOM_NOTEBOOK_ORIGIN", "http://{job}.nb.corp.internal"),
        ]),
    )
    .unwrap();
    assert!(c.warnings.iter().any(|w| w.contains("use https")), "{:?}", c.warnings);
    let err = Config::load(
        &no_file(),
        &env_of(&[("ANTEROOM_NOTEBOOK_ORIGIN", "https://nb.example.org")]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("{job}"), "{err}");
}

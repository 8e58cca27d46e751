//! The read half against an axum fake of the apiserver on `127.0.0.1:0`, driven by a real
//! `kube::Client`: lists and `?watch=true` streams (newline-delimited watch events from the
//! requested `resourceVersion` on, bookmarks when asked for) for nodes, pods, Anteroom's Volcano
//! Jobs and Volcano Queues, so kube-runtime's watchers and reflectors run exactly as against a
//! cluster. Each test has its own server and its own adapter: parallel-safe.

mod diagnosis;
mod queue_mirror;
pub(super) mod server;

use std::time::Duration;

use anteroom_shared::scheduling::JobPhase;
use serde_json::json;
use tokio::sync::broadcast;

use self::server::{
    FakeApiServer, INSTALLATION, Kind, NS, job_pod, node, pod, queue, resources, settings, volcano_job,
};
use crate::cluster::kube::KubeCluster;
use crate::cluster::{Cluster, ClusterError, ClusterQueue, JobEvent, JobSpec, JobStatus, TaskSpec};

/// Polls `check` every 20 ms until it returns `Some`, for at most 10 s.
pub(super) async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(value) = check().await {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// The next event on `events` that `pick` accepts, within 10 s.
async fn next_event<T>(events: &mut broadcast::Receiver<JobEvent>, mut pick: impl FnMut(&JobEvent) -> Option<T>) -> T {
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let event = events.recv().await.expect("event stream open");
            if let Some(value) = pick(&event) {
                return value;
            }
        }
    })
    .await;
    found.expect("timed out waiting for a job event")
}

fn status_of(event: &JobEvent, id: i64) -> Option<JobStatus> {
    match event {
        JobEvent::Status(s) if s.job_id == id => Some(s.clone()),
        _ => None,
    }
}

// ---- tests ----

#[tokio::test]
async fn kube_nodes_report_free_capacity_from_the_pod_cache_counting_terminating_pods_but_not_finished_ones() {
    let fake = FakeApiServer::start().await;
    fake.apply(
        Kind::Nodes,
        node(
            "gpu-0",
            json!({"cpu": "16", "memory": "64Gi", "nvidia.com/a100": "8"}),
            false,
        ),
    );
    fake.apply(Kind::Nodes, node("cpu-0", json!({"cpu": "8", "memory": "32Gi"}), true));
    fake.apply(
        Kind::Pods,
        pod(
            "other-team",
            "web",
            Some("gpu-0"),
            "Running",
            json!({"cpu": "4", "memory": "8Gi"}),
        ),
    );
    let mut terminating = pod(NS, "victim", Some("gpu-0"), "Running", json!({"nvidia.com/a100": "2"}));
    terminating["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    fake.apply(Kind::Pods, terminating);
    fake.apply(
        Kind::Pods,
        pod("other-team", "done", Some("gpu-0"), "Succeeded", json!({"cpu": "8"})),
    );
    fake.apply(
        Kind::Pods,
        pod("other-team", "broken", Some("cpu-0"), "Failed", json!({"cpu": "8"})),
    );
    fake.apply(
        Kind::Pods,
        pod("other-team", "waiting", None, "Pending", json!({"cpu": "8"})),
    );

    let cluster = KubeCluster::start(fake.client(), settings());
    let nodes = cluster.nodes().await.expect("nodes");
    assert_eq!(
        nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(),
        ["cpu-0", "gpu-0"]
    );
    let (cpu, gpu) = (&nodes[0], &nodes[1]);
    assert_eq!(
        gpu.free,
        resources(&[("cpu", "12"), ("memory", "56Gi"), ("nvidia.com/a100", "6")])
    );
    assert_eq!(
        gpu.allocatable,
        resources(&[("cpu", "16"), ("memory", "64Gi"), ("nvidia.com/a100", "8")])
    );
    assert!(gpu.ready && gpu.schedulable);
    assert_eq!(cpu.free, cpu.allocatable);
    assert!(!cpu.schedulable);

    // A pod bound later arrives through the pod watch, not a new list.
    let lists_before = fake
        .requests()
        .iter()
        .filter(|r| r.starts_with("GET /api/v1/pods?") && !r.contains("watch=true"))
        .count();
    fake.apply(
        Kind::Pods,
        pod("other-team", "late", Some("gpu-0"), "Pending", json!({"cpu": "2"})),
    );
    eventually("the new pod to take capacity", || async {
        let nodes = cluster.nodes().await.expect("nodes");
        (nodes[1].free.get("cpu") == resources(&[("cpu", "10")]).get("cpu")).then_some(())
    })
    .await;
    let lists_after = fake
        .requests()
        .iter()
        .filter(|r| r.starts_with("GET /api/v1/pods?") && !r.contains("watch=true"))
        .count();
    assert_eq!(lists_before, lists_after, "nodes() must not list pods per call");
    let names = cluster.resource_names().await.expect("resource names");
    assert!(names.iter().any(|r| r.name == "nvidia.com/a100" && r.accelerator));
}

#[tokio::test]
async fn kube_job_statuses_and_events_follow_the_job_watch_and_its_pods_until_the_job_is_gone() {
    let fake = FakeApiServer::start().await;
    fake.apply(Kind::Nodes, node("gpu-0", json!({"cpu": "16"}), false));
    fake.apply(Kind::Queues, queue("default", "Open"));
    fake.apply(Kind::Jobs, volcano_job(7, Some("Pending")));
    // Not Anteroom's: no managed-by label, so the label-selected watch never sees it.
    fake.apply(
        Kind::Jobs,
        json!({"metadata": {"name": "ar-99", "namespace": NS}, "spec": {"tasks": []},
               "status": {"state": {"phase": "Running"}}}),
    );
    // Another installation's job in the same namespace: not ours either.
    let mut foreign = volcano_job(98, Some("Running"));
    foreign["metadata"]["labels"]["anteroom.io/installation"] = json!("another-installation");
    fake.apply(Kind::Jobs, foreign);

    let cluster = KubeCluster::start(fake.client(), settings());
    let mut events = cluster.subscribe();
    let statuses = cluster.job_statuses().await.expect("statuses");
    assert_eq!(statuses.len(), 1, "{statuses:?}");
    assert_eq!((statuses[0].job_id, statuses[0].phase), (7, JobPhase::Pending));
    assert!(statuses[0].nodes.is_empty());
    assert!(
        fake.requests().iter().any(
            |r| r.starts_with("GET /apis/batch.volcano.sh/v1alpha1/namespaces/team-ns/jobs?")
                && r.contains(&format!(
                    "labelSelector=app.kubernetes.io%2Fmanaged-by%3Danteroom%2Canteroom.io%2Finstallation%3D{INSTALLATION}"
                ))
        ),
        "{:?}",
        fake.requests()
    );

    // Volcano binds the pod: the job's nodes change.
    fake.apply(Kind::Pods, job_pod(7, 0, Some("gpu-0")));
    let bound = next_event(&mut events, |e| status_of(e, 7).filter(|s| !s.nodes.is_empty())).await;
    assert_eq!(bound.nodes, ["gpu-0"]);

    // Volcano reports Running through the job watch.
    fake.apply(Kind::Jobs, volcano_job(7, Some("Running")));
    let running = next_event(&mut events, |e| {
        status_of(e, 7).filter(|s| s.phase == JobPhase::Running)
    })
    .await;
    assert_eq!(running.nodes, ["gpu-0"]);
    let statuses = cluster.job_statuses().await.expect("statuses");
    assert_eq!(
        (statuses[0].phase, statuses[0].nodes.clone()),
        (JobPhase::Running, vec!["gpu-0".to_owned()])
    );

    // Deleted: gone only once its last pod is gone too.
    fake.delete(Kind::Jobs, NS, "ar-7");
    fake.apply(Kind::Pods, job_pod(7, 1, None));
    fake.delete(Kind::Pods, NS, "ar-7-main-0");
    fake.delete(Kind::Pods, NS, "ar-7-main-1");
    let mut seen = Vec::new();
    let gone = next_event(&mut events, |e| {
        seen.push(e.clone());
        match e {
            JobEvent::Gone { job_id, .. } => Some(*job_id),
            JobEvent::Status(_) => None,
        }
    })
    .await;
    assert_eq!(gone, 7);
    eventually("the job to leave the job list", || async {
        cluster.job_statuses().await.expect("statuses").is_empty().then_some(())
    })
    .await;
}

#[tokio::test]
async fn kube_a_job_for_a_queue_volcano_does_not_have_is_refused_before_any_write() {
    let fake = FakeApiServer::start().await;
    fake.apply(Kind::Queues, queue("default", "Open"));
    fake.apply(Kind::Queues, queue("frozen", "Closed"));
    let cluster = KubeCluster::start(fake.client(), settings());
    eventually("readiness", || async { cluster.is_reachable().await.then_some(()) }).await;

    let mut spec = JobSpec {
        id: 3,
        cluster_uid: "uid-3".to_owned(),
        kind: anteroom_shared::scheduling::JobKind::Custom,
        queue: "nlp".to_owned(),
        owner: "ada".to_owned(),
        schedule_type: anteroom_shared::scheduling::ScheduleType::Normal,
        waiting_tolerance_seconds: None,
        preemption_policy: anteroom_shared::scheduling::PreemptionPolicy::Never,
        preemptable: false,
        termination_grace_seconds: None,
        active_deadline_seconds: None,
        preempted_before: false,
        run_as_user: None,
        tasks: vec![TaskSpec {
            name: "main".to_owned(),
            replicas: 1,
            image: "busybox".to_owned(),
            command: Vec::new(),
            resources: resources(&[("cpu", "1")]),
            node_names: Vec::new(),
            tolerations: Vec::new(),
            env: Vec::new(),
            shm: None,
            volumes: Vec::new(),
        }],
    };
    let missing = cluster.create_job(&spec).await;
    spec.queue = "frozen".to_owned();
    let closed = cluster.create_job(&spec).await;
    // First what reached the apiserver: a create sent and refused there would be "refused"
    // too, but not "before any write".
    assert!(
        fake.requests().iter().all(|r| !r.starts_with("POST ")),
        "no create was sent: {:?}",
        fake.requests()
    );
    assert!(
        matches!(missing, Err(ClusterError::Rejected(ref m)) if m.contains("`nlp` does not exist")),
        "{missing:?}"
    );
    assert!(
        matches!(closed, Err(ClusterError::Rejected(ref m)) if m.contains("closed")),
        "{closed:?}"
    );
}

#[tokio::test]
async fn kube_an_elastic_job_goes_to_the_uncapped_queue_which_is_made_when_missing() {
    // The queue `nlp` is at its capability in Volcano. An Elastic job of nlp is sent to the
    // Elastic jobs' queue instead; that queue is Anteroom's and is made first when missing.
    let fake = FakeApiServer::start().await;
    fake.apply(Kind::Queues, queue("nlp", "Open"));
    let cluster = KubeCluster::start(fake.client(), settings());
    eventually("readiness", || async { cluster.is_reachable().await.then_some(()) }).await;
    let spec = JobSpec {
        id: 5,
        cluster_uid: "uid-5".to_owned(),
        kind: anteroom_shared::scheduling::JobKind::Jupyter,
        queue: "nlp".to_owned(),
        owner: "ada".to_owned(),
        schedule_type: anteroom_shared::scheduling::ScheduleType::Backfill,
        waiting_tolerance_seconds: None,
        preemption_policy: anteroom_shared::scheduling::PreemptionPolicy::Never,
        preemptable: true,
        termination_grace_seconds: None,
        active_deadline_seconds: None,
        preempted_before: false,
        run_as_user: None,
        tasks: Vec::new(),
    };
    let _ = cluster.create_job(&spec).await;
    let posts: Vec<(String, serde_json::Value)> = fake.sent();
    let what: Vec<&str> = posts.iter().map(|(w, _)| w.as_str()).collect();
    assert_eq!(what[0], "POST anteroom-elastic", "{what:?}");
    assert_eq!(
        fake.queue_object("anteroom-elastic").expect("made")["spec"]["parent"],
        "root"
    );
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.starts_with("POST /apis/batch.volcano.sh/")),
        "the job was created: {:?}",
        fake.requests()
    );
}

#[tokio::test]
async fn kube_the_fake_apiserver_records_writes_it_does_not_serve() {
    // The check above is only worth something if a create would be seen: send one.
    let fake = FakeApiServer::start().await;
    let api = crate::cluster::kube::KubeApi::new(fake.client(), settings());
    let spec = JobSpec {
        id: 4,
        cluster_uid: "uid-4".to_owned(),
        kind: anteroom_shared::scheduling::JobKind::Custom,
        queue: "default".to_owned(),
        owner: "ada".to_owned(),
        schedule_type: anteroom_shared::scheduling::ScheduleType::Normal,
        waiting_tolerance_seconds: None,
        preemption_policy: anteroom_shared::scheduling::PreemptionPolicy::Never,
        preemptable: false,
        termination_grace_seconds: None,
        active_deadline_seconds: None,
        preempted_before: false,
        run_as_user: None,
        tasks: Vec::new(),
    };
    let _ = api.create_job(&spec).await;
    assert_eq!(
        fake.requests(),
        ["POST /apis/batch.volcano.sh/v1alpha1/namespaces/team-ns/jobs?&fieldManager=anteroom"]
    );
}

#[tokio::test]
async fn kube_queues_come_from_the_volcano_queue_cache_and_without_mirroring_only_existing_ones_sync() {
    let fake = FakeApiServer::start().await;
    fake.apply(Kind::Queues, queue("nlp", "Open"));
    fake.apply(Kind::Queues, queue("frozen", "Closed"));
    fake.apply(Kind::Queues, queue("default", "Open"));
    let without_mirroring = crate::cluster::kube::manifest::ManifestSettings {
        mirror_queues: false,
        ..settings()
    };
    let cluster = KubeCluster::start(fake.client(), without_mirroring);
    let queues = cluster.queues().await.expect("queues");
    let open = |name: &str, open: bool| ClusterQueue::new(name, open);
    assert_eq!(
        queues,
        [open("default", true), open("frozen", false), open("nlp", true)]
    );
    cluster.sync_queue(&open("nlp", true)).await.expect("Volcano has nlp");
    let missing = cluster.sync_queue(&open("vision", true)).await;
    assert!(
        matches!(missing, Err(ClusterError::Rejected(ref m)) if m.contains("`vision` does not exist")),
        "{missing:?}"
    );
    // Later queues arrive through the watch; without mirroring Anteroom never writes one.
    fake.apply(Kind::Queues, queue("vision", "Open"));
    eventually("the new queue", || async {
        cluster.sync_queue(&open("vision", true)).await.ok()
    })
    .await;
    assert!(
        fake.requests().iter().all(|r| r.starts_with("GET ")),
        "{:?}",
        fake.requests()
    );
}

#[tokio::test]
async fn kube_a_job_keeps_its_start_after_its_pods_leave_the_cache_and_reports_its_failure() {
    let fake = FakeApiServer::start().await;
    fake.apply(Kind::Jobs, volcano_job(7, Some("Running")));
    let mut running = job_pod(7, 0, Some("gpu-0"));
    running["status"] = json!({"phase": "Running", "startTime": "2026-11-22T09:59:00Z",
        "containerStatuses": [{"name": "main", "image": "busybox", "imageID": "", "ready": true, "restartCount": 0,
                               "state": {"running": {"startedAt": "2026-11-22T10:00:00Z"}}}]});
    fake.apply(Kind::Pods, running);
    let cluster = KubeCluster::start(fake.client(), settings());
    let mut events = cluster.subscribe();
    let started: chrono::DateTime<chrono::Utc> = "2026-11-22T10:00:00Z".parse().expect("time");
    eventually("the start", || async {
        let statuses = cluster.job_statuses().await.expect("statuses");
        (statuses.first()?.started_at == Some(started)).then_some(())
    })
    .await;

    // The pod is deleted, Volcano reports the job failed: the start stays, the reason comes.
    fake.delete(Kind::Pods, NS, "ar-7-main-0");
    let mut failed = volcano_job(7, None);
    failed["status"] =
        json!({"state": {"phase": "Failed", "reason": "PodFailed", "message": "ar-7-main-0 was OOMKilled"}});
    fake.apply(Kind::Jobs, failed);
    let event = next_event(&mut events, |e| status_of(e, 7).filter(|s| s.phase == JobPhase::Failed)).await;
    assert_eq!(event.started_at, Some(started));
    assert_eq!(event.failure.as_deref(), Some("PodFailed: ar-7-main-0 was OOMKilled"));
    let statuses = cluster.job_statuses().await.expect("statuses");
    assert_eq!(statuses[0].started_at, Some(started));
}

#[tokio::test]
async fn kube_readiness_needs_synced_caches_and_an_answering_apiserver() {
    let fake = FakeApiServer::start().await;
    let cluster = KubeCluster::start(fake.client(), settings());
    eventually("readiness", || async { cluster.is_reachable().await.then_some(()) }).await;
    assert!(fake.requests().iter().any(|r| r == "GET /version"));

    // Nothing answers on a closed port: not reachable, and reads say why instead of "empty".
    let dead_uri: http::Uri = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", listener.local_addr().expect("addr"))
            .parse()
            .expect("uri")
    };
    let dead = KubeCluster::start_with_sync_wait(
        kube::Client::try_from(kube::Config::new(dead_uri)).expect("client"),
        settings(),
        Duration::from_millis(200),
    );
    assert!(!dead.is_reachable().await);
    // Not merely "not synced yet": the read fails, and says it is the connection.
    let error = eventually("the connection error", || async {
        match dead.nodes().await {
            Err(ClusterError::Unavailable(m)) if m.contains("not synced yet:") => Some(m),
            Err(ClusterError::Unavailable(_)) => None,
            other => panic!("a dead apiserver answered {other:?}"),
        }
    })
    .await;
    assert!(error.to_lowercase().contains("connect"), "{error}");
}

#[tokio::test]
async fn kube_readiness_fails_when_the_apiserver_stops_answering_even_with_synced_caches() {
    let fake = FakeApiServer::start().await;
    let cluster = KubeCluster::start(fake.client(), settings());
    eventually("readiness", || async { cluster.is_reachable().await.then_some(()) }).await;
    fake.go_down();
    // The caches stay synced (a watch keeps its stream), so only the read of /version can tell.
    assert!(!cluster.is_reachable().await);
    assert!(fake.requests().iter().filter(|r| r.as_str() == "GET /version").count() >= 2);
}

#[tokio::test]
async fn kube_dropping_the_adapter_stops_its_watches() {
    let fake = FakeApiServer::start().await;
    let cluster = KubeCluster::start(fake.client(), settings());
    eventually("four open watches", || async {
        (fake.open_watches() == 4).then_some(())
    })
    .await;
    drop(cluster);
    eventually("every watch to close", || async {
        (fake.open_watches() == 0).then_some(())
    })
    .await;
}

#[tokio::test]
async fn kube_a_cluster_without_the_volcano_crds_is_unavailable_not_empty() {
    let fake = FakeApiServer::start().await;
    fake.without_volcano();
    fake.apply(Kind::Nodes, node("gpu-0", json!({"cpu": "16"}), false));
    let cluster = KubeCluster::start_with_sync_wait(fake.client(), settings(), Duration::from_millis(200));
    // The core caches sync: nodes answer.
    eventually("the nodes", || async { cluster.nodes().await.ok() }).await;
    // The Volcano ones never do, and the reads say why instead of reporting no jobs or queues.
    let unavailable = |result: Result<usize, ClusterError>| match result {
        Err(ClusterError::Unavailable(m)) if m.contains("404") => Some(m),
        Err(ClusterError::Unavailable(_)) => None,
        other => panic!("without Volcano: {other:?}"),
    };
    eventually("the queue read to fail with the 404", || async {
        unavailable(cluster.queues().await.map(|q| q.len()))
    })
    .await;
    eventually("the job read to fail with the 404", || async {
        unavailable(cluster.job_statuses().await.map(|s| s.len()))
    })
    .await;
    assert!(!cluster.is_reachable().await);
}

//! The status sync step by step, without any server: watcher events are applied to the stores
//! by hand, exactly as the reflectors do, so "no event yet" can be asserted deterministically.

use std::sync::Mutex;

use anteroom_shared::scheduling::JobPhase;
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::watcher::Event;
use tokio::sync::broadcast::{self, error::TryRecvError};

use crate::cluster::JobEvent;
use crate::cluster::kube::crd::{VolcanoJob, VolcanoJobSpec, VolcanoJobState, VolcanoJobStatus};
use crate::cluster::kube::{StatusSync, SyncInner};

const NS: &str = "team-ns";

struct Harness {
    jobs: Writer<VolcanoJob>,
    pods: Writer<Pod>,
    sync: StatusSync,
    events: broadcast::Receiver<JobEvent>,
}

impl Harness {
    fn new() -> Self {
        let (job_store, jobs) = reflector::store::<VolcanoJob>();
        let (pod_store, pods) = reflector::store::<Pod>();
        let (sender, events) = broadcast::channel(16);
        let sync = StatusSync {
            namespace: NS.to_owned(),
            installation: "inst".to_owned(),
            jobs: job_store,
            pods: pod_store,
            sender,
            inner: Mutex::new(SyncInner::default()),
        };
        Self {
            jobs,
            pods,
            sync,
            events,
        }
    }

    fn job(&mut self, event: Event<VolcanoJob>) {
        self.jobs.apply_watcher_event(&event);
        self.sync.on_job_event(&event);
    }

    fn pod(&mut self, event: Event<Pod>) {
        self.pods.apply_watcher_event(&event);
        self.sync.on_pod_event(&event);
    }

    fn next(&mut self) -> Option<JobEvent> {
        match self.events.try_recv() {
            Ok(event) => Some(event),
            Err(TryRecvError::Empty) => None,
            Err(other) => panic!("event stream: {other}"),
        }
    }
}

fn job(id: i64, phase: &str) -> VolcanoJob {
    let mut job = VolcanoJob::new(&format!("ar-{id}"), VolcanoJobSpec::default());
    job.metadata.namespace = Some(NS.to_owned());
    job.status = Some(VolcanoJobStatus {
        state: Some(VolcanoJobState {
            phase: Some(phase.to_owned()),
            ..VolcanoJobState::default()
        }),
        ..VolcanoJobStatus::default()
    });
    job
}

fn pod(id: i64, index: u32, node: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("ar-{id}-main-{index}")),
            namespace: Some(NS.to_owned()),
            labels: Some([("volcano.sh/job-name".to_owned(), format!("ar-{id}"))].into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: node.map(str::to_owned),
            ..PodSpec::default()
        }),
        status: None,
    }
}

fn status(event: Option<JobEvent>) -> (i64, JobPhase, Vec<String>) {
    match event {
        Some(JobEvent::Status(s)) => (s.job_id, s.phase, s.nodes),
        other => panic!("expected a status, got {other:?}"),
    }
}

#[test]
fn kube_status_sync_reports_changes_once_and_gone_only_after_the_last_pod() {
    let mut h = Harness::new();
    h.job(Event::Init);
    h.job(Event::InitDone);
    h.pod(Event::Init);
    h.pod(Event::InitDone);
    assert!(h.next().is_none());

    h.job(Event::Apply(job(7, "Pending")));
    assert_eq!(status(h.next()), (7, JobPhase::Pending, vec![]));
    h.pod(Event::Apply(pod(7, 0, Some("gpu-1"))));
    assert_eq!(status(h.next()), (7, JobPhase::Pending, vec!["gpu-1".to_owned()]));
    // Same phase and nodes (e.g. a pod status update): nothing to report.
    h.pod(Event::Apply(pod(7, 0, Some("gpu-1"))));
    h.job(Event::Apply(job(7, "Pending")));
    assert!(h.next().is_none());
    h.job(Event::Apply(job(7, "Running")));
    assert_eq!(status(h.next()), (7, JobPhase::Running, vec!["gpu-1".to_owned()]));

    // The job object is deleted while its pod still terminates: not gone yet.
    h.job(Event::Delete(job(7, "Running")));
    assert!(h.next().is_none());
    h.pod(Event::Delete(pod(7, 0, Some("gpu-1"))));
    assert!(matches!(h.next(), Some(JobEvent::Gone { job_id: 7, .. })));
    assert!(h.next().is_none());
}

#[test]
fn kube_status_sync_reports_a_job_missing_from_a_relist_as_gone() {
    let mut h = Harness::new();
    h.pod(Event::Init);
    h.pod(Event::InitDone);
    h.job(Event::Init);
    h.job(Event::InitApply(job(1, "Running")));
    h.job(Event::InitApply(job(2, "Running")));
    h.job(Event::InitDone);
    let mut first: Vec<i64> = [h.next(), h.next()].into_iter().map(|e| status(e).0).collect();
    first.sort();
    assert_eq!(first, [1, 2]);

    // The watch broke and re-listed: job 2 was deleted meanwhile (no Delete event seen).
    h.job(Event::Init);
    h.job(Event::InitApply(job(1, "Running")));
    h.job(Event::InitDone);
    assert!(matches!(h.next(), Some(JobEvent::Gone { job_id: 2, .. })));
    assert!(h.next().is_none());
}

#[test]
fn kube_status_sync_ignores_pods_of_other_namespaces_and_other_jobs() {
    let mut h = Harness::new();
    h.pod(Event::InitDone);
    h.job(Event::InitDone);
    h.job(Event::Apply(job(5, "Running")));
    assert_eq!(status(h.next()), (5, JobPhase::Running, vec![]));
    let mut elsewhere = pod(5, 0, Some("gpu-0"));
    elsewhere.metadata.namespace = Some("other".to_owned());
    h.pod(Event::Apply(elsewhere));
    let mut foreign = pod(5, 1, Some("gpu-0"));
    foreign.metadata.labels = Some([("volcano.sh/job-name".to_owned(), "train".to_owned())].into());
    h.pod(Event::Apply(foreign));
    assert!(h.next().is_none());
}

fn started(event: Option<JobEvent>) -> crate::cluster::JobStatus {
    match event {
        Some(JobEvent::Status(s)) => s,
        other => panic!("expected a status, got {other:?}"),
    }
}

#[test]
fn kube_status_sync_keeps_a_jobs_start_after_its_pods_are_gone_and_reports_why_it_failed() {
    use k8s_openapi::api::core::v1::PodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    let mut h = Harness::new();
    h.job(Event::InitDone);
    h.pod(Event::InitDone);
    h.job(Event::Apply(job(7, "Running")));
    assert_eq!(started(h.next()).started_at, None);

    let at: chrono::DateTime<chrono::Utc> = "2026-11-22T10:00:00Z".parse().expect("time");
    let mut running = pod(7, 0, Some("gpu-1"));
    running.status = Some(PodStatus {
        phase: Some("Running".to_owned()),
        start_time: Some(Time("2026-11-22T10:00:00Z".parse().expect("timestamp"))),
        ..PodStatus::default()
    });
    h.pod(Event::Apply(running.clone()));
    let with_pod = started(h.next());
    assert_eq!(
        (with_pod.started_at, with_pod.nodes),
        (Some(at), vec!["gpu-1".to_owned()])
    );

    // The pod is gone (deleted, trimmed from the cache): the nodes go, the start stays.
    h.pod(Event::Delete(running));
    let without_pod = started(h.next());
    assert_eq!((without_pod.started_at, without_pod.nodes), (Some(at), vec![]));

    // Volcano gives up: the reason is reported, still with the start.
    let mut failed = job(7, "Failed");
    let state = failed.status.as_mut().and_then(|s| s.state.as_mut()).expect("state");
    state.reason = Some("PodFailed".to_owned());
    state.message = Some("ar-7-main-0 exited with code 1".to_owned());
    h.job(Event::Apply(failed.clone()));
    let failure = started(h.next());
    assert_eq!(failure.phase, JobPhase::Failed);
    assert_eq!(failure.started_at, Some(at));
    assert_eq!(
        failure.failure.as_deref(),
        Some("PodFailed: ar-7-main-0 exited with code 1")
    );
    // Only the message changes: that is news too.
    failed
        .status
        .as_mut()
        .and_then(|s| s.state.as_mut())
        .expect("state")
        .message = Some("exited with code 2".to_owned());
    h.job(Event::Apply(failed));
    assert_eq!(
        started(h.next()).failure.as_deref(),
        Some("PodFailed: exited with code 2")
    );
    assert!(h.next().is_none());
}

#[test]
fn kube_status_sync_reports_the_failing_pod_that_arrives_after_the_failed_phase_and_keeps_it_once_its_pods_are_gone() {
    use anteroom_shared::api::pods::JobFailure;
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateTerminated, ContainerStatus, PodStatus};

    let mut h = Harness::new();
    h.job(Event::InitDone);
    h.pod(Event::InitDone);
    h.job(Event::Apply(job(7, "Running")));
    let running = pod(7, 0, Some("gpu-1"));
    h.pod(Event::Apply(running.clone()));
    assert_eq!(started(h.next()).failed_pod, None);
    assert_eq!(started(h.next()).nodes, ["gpu-1"]);

    // The job watch is faster than the pod watch: Volcano's Failed comes first, without a pod
    // that says why yet.
    h.job(Event::Apply(job(7, "Failed")));
    let failed = started(h.next());
    assert_eq!((failed.phase, failed.failed_pod), (JobPhase::Failed, None));

    // Then the pod's terminated container: news, though phase and nodes did not change.
    let mut oom = running;
    oom.status = Some(PodStatus {
        phase: Some("Failed".to_owned()),
        container_statuses: Some(vec![ContainerStatus {
            name: "main".to_owned(),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    reason: Some("OOMKilled".to_owned()),
                    exit_code: 137,
                    ..ContainerStateTerminated::default()
                }),
                ..ContainerState::default()
            }),
            ..ContainerStatus::default()
        }]),
        ..PodStatus::default()
    });
    let failed_pod = oom.clone();
    h.pod(Event::Apply(oom.clone()));
    let why = Some(JobFailure {
        pod: Some("ar-7-main-0".to_owned()),
        reason: "OOMKilled".to_owned(),
        exit_code: Some(137),
    });
    assert_eq!(started(h.next()).failed_pod, why);

    // Its pod is deleted (a foreground delete removes pods before the job): why it failed stays.
    h.pod(Event::Delete(oom));
    let without_pod = started(h.next());
    assert_eq!(
        (without_pod.nodes.clone(), without_pod.failed_pod.clone()),
        (vec![], why.clone())
    );
    // A resync (`job_statuses`) computes the status from the caches, where no pod says why
    // any more, and says the same.
    let resync = crate::cluster::JobStatus {
        failed_pod: None,
        ..without_pod
    };
    assert_eq!(h.sync.remember_start(resync).failed_pod, why);
    h.job(Event::Delete(job(7, "Failed")));
    assert!(matches!(h.next(), Some(JobEvent::Gone { job_id: 7, .. })));

    // A job of the same id created again, failed before it was seen running, and without a pod
    // that says why: not the old reason.
    h.job(Event::Apply(job(7, "Failed")));
    assert_eq!(started(h.next()).failed_pod, None);
    // Seen running again (re-created before its predecessor was seen gone): the old reason is
    // forgotten too.
    h.pod(Event::Apply(failed_pod.clone()));
    assert_eq!(started(h.next()).failed_pod, why);
    h.pod(Event::Delete(failed_pod));
    assert_eq!(started(h.next()).failed_pod, why);
    h.job(Event::Apply(job(7, "Running")));
    assert_eq!(started(h.next()).failed_pod, None);
    h.job(Event::Apply(job(7, "Failed")));
    assert_eq!(started(h.next()).failed_pod, None);
    assert!(h.next().is_none());
}

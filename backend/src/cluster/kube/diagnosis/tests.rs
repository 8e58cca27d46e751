//! Tests of `diagnosis`'s pure half: a pod as the page shows it, events folded, a log's end.

use serde_json::{Value, json};

use super::*;

fn pod(name: &str, status: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "team-ns",
                     "labels": {"volcano.sh/job-name": "ar-7"},
                     "annotations": {"volcano.sh/task-spec": "worker", "volcano.sh/task-index": "1"}},
        "spec": {"nodeName": "gpu-1", "containers": [{"name": "worker"}]},
        "status": status,
    }))
    .expect("a pod")
}

fn container(state: Value, restarts: i32) -> Value {
    json!({"name": "worker", "image": "img", "imageID": "", "ready": false, "restartCount": restarts, "state": state})
}

fn utc(rfc3339: &str) -> DateTime<Utc> {
    rfc3339.parse().expect("timestamp")
}

#[test]
fn kube_a_pod_pulling_a_missing_image_reads_as_image_pull_back_off_with_the_kubelets_message() {
    let view = pod_view(
        &pod(
            "ar-7-worker-1",
            json!({"phase": "Pending", "containerStatuses": [container(
                json!({"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"nope:1\""}}), 0)]}),
        ),
        7,
    );
    assert_eq!(
        view,
        PodView {
            name: "ar-7-worker-1".to_owned(),
            task: "worker".to_owned(),
            replica: 1,
            node: Some("gpu-1".to_owned()),
            phase: "Pending".to_owned(),
            reason: Some("ImagePullBackOff".to_owned()),
            message: Some("Back-off pulling image \"nope:1\"".to_owned()),
            cause: None,
            exit_code: None,
            restarts: 0,
            started_at: None,
            finished_at: None,
        }
    );
}

#[test]
fn kube_an_oom_killed_container_gives_its_reason_exit_code_times_and_restarts() {
    let view = pod_view(
        &pod(
            "ar-7-worker-1",
            json!({"phase": "Failed", "containerStatuses": [container(
                json!({"terminated": {"reason": "OOMKilled", "exitCode": 137,
                                      "startedAt": "2026-11-22T10:00:00Z", "finishedAt": "2026-11-22T10:05:00Z"}}), 2)]}),
        ),
        7,
    );
    assert_eq!(view.phase, "Failed");
    assert_eq!(
        (view.reason.as_deref(), view.message.as_deref(), view.exit_code),
        (Some("OOMKilled"), None, Some(137))
    );
    assert_eq!(view.restarts, 2);
    assert_eq!(view.started_at, Some(utc("2026-11-22T10:00:00Z")));
    assert_eq!(view.finished_at, Some(utc("2026-11-22T10:05:00Z")));
}

#[test]
fn kube_a_crash_looping_container_says_so_and_gives_the_exit_code_of_its_last_run() {
    let mut looping = container(
        json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}}),
        3,
    );
    looping["lastState"] = json!({"terminated": {"reason": "Error", "exitCode": 2}});
    let view = pod_view(
        &pod(
            "ar-7-worker-1",
            json!({"phase": "Running", "containerStatuses": [looping]}),
        ),
        7,
    );
    assert_eq!(view.reason.as_deref(), Some("CrashLoopBackOff"));
    assert_eq!(view.exit_code, Some(2));
    assert_eq!(view.restarts, 3);
    assert_eq!(view.finished_at, None);
}

#[test]
fn kube_an_evicted_pod_gives_the_pods_reason_before_its_containers_symptom() {
    let view = pod_view(
        &pod(
            "ar-7-worker-1",
            json!({"phase": "Failed", "reason": "Evicted",
                   "message": "The node was low on resource: memory.",
                   "containerStatuses": [container(json!({"terminated": {"reason": "Error", "exitCode": 137}}), 0)]}),
        ),
        7,
    );
    assert_eq!(
        (view.reason.as_deref(), view.message.as_deref(), view.exit_code),
        (
            Some("Evicted"),
            Some("The node was low on resource: memory."),
            Some(137)
        )
    );
}

#[test]
fn kube_an_unschedulable_pod_gives_the_schedulers_reason_and_message() {
    let mut p = pod(
        "ar-7-worker-1",
        json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/3 nodes are available: 3 Insufficient nvidia.com/a100."}]}),
    );
    p.spec.as_mut().expect("spec").node_name = None;
    let view = pod_view(&p, 7);
    assert_eq!(view.node, None);
    assert_eq!(
        (view.reason.as_deref(), view.message.as_deref()),
        (
            Some("Unschedulable"),
            Some("0/3 nodes are available: 3 Insufficient nvidia.com/a100.")
        )
    );
    // Scheduled since: the condition is True, nothing to explain.
    let scheduled = pod(
        "ar-7-worker-1",
        json!({"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}],
               "containerStatuses": [container(json!({"running": {"startedAt": "2026-11-22T10:00:00Z"}}), 0)]}),
    );
    let view = pod_view(&scheduled, 7);
    assert_eq!((view.reason, view.message), (None, None));
    assert_eq!(view.started_at, Some(utc("2026-11-22T10:00:00Z")));
}

#[test]
fn kube_a_deleted_pod_still_running_reads_as_terminating() {
    let mut p = pod(
        "ar-7-worker-1",
        json!({"phase": "Running",
               "containerStatuses": [container(json!({"running": {"startedAt": "2026-11-22T10:00:00Z"}}), 0)]}),
    );
    assert_eq!(pod_view(&p, 7).reason, None);
    p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2026-11-22T10:09:00Z".parse().expect("timestamp"),
    ));
    assert_eq!(pod_view(&p, 7).reason.as_deref(), Some("Terminating"));
}

#[test]
fn kube_a_pod_waiting_for_its_init_container_gives_the_init_containers_reason() {
    let mut init = container(
        json!({"waiting": {"reason": "ErrImagePull", "message": "not found"}}),
        0,
    );
    init["name"] = json!("fetch");
    let view = pod_view(
        &pod(
            "ar-7-worker-1",
            json!({"phase": "Pending", "initContainerStatuses": [init],
                   "containerStatuses": [container(json!({"waiting": {"reason": "PodInitializing"}}), 0)]}),
        ),
        7,
    );
    assert_eq!(
        (view.reason.as_deref(), view.message.as_deref()),
        (Some("ErrImagePull"), Some("not found"))
    );
}

#[test]
fn kube_task_and_replica_come_from_volcanos_keys_else_from_the_pod_name() {
    let mut p = pod("ar-7-ps-3", json!({"phase": "Running"}));
    p.metadata.annotations = None;
    let view = pod_view(&p, 7);
    assert_eq!((view.task.as_str(), view.replica), ("ps", 3));
    // A task name with dashes, and Volcano's label over the name.
    let mut p = pod("ar-7-data-loader-0", json!({"phase": "Running"}));
    p.metadata.annotations = None;
    assert_eq!(pod_view(&p, 7).task, "data-loader");
    p.metadata.labels = Some([(TASK_SPEC_KEY.to_owned(), "loader".to_owned())].into());
    assert_eq!(pod_view(&p, 7).task, "loader");
}

#[test]
fn kube_pods_sort_by_the_jobs_task_order_then_replica() {
    let view = |task: &str, replica: u32| {
        let mut p = pod(&format!("ar-7-{task}-{replica}"), json!({"phase": "Running"}));
        p.metadata.annotations = None;
        pod_view(&p, 7)
    };
    let mut pods = vec![
        view("worker", 10),
        view("worker", 2),
        view("master", 0),
        view("extra", 0),
    ];
    sort_pods(&mut pods, &["master".to_owned(), "worker".to_owned()]);
    let names: Vec<&str> = pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["ar-7-master-0", "ar-7-worker-2", "ar-7-worker-10", "ar-7-extra-0"]
    );
    // Unknown order (the job is not in the cache): by task name.
    sort_pods(&mut pods, &[]);
    let names: Vec<&str> = pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["ar-7-extra-0", "ar-7-master-0", "ar-7-worker-2", "ar-7-worker-10"]
    );
}

fn event(object: &str, reason: &str, message: &str, count: u32, first: &str, last: &str) -> ClusterEventView {
    ClusterEventView {
        object: object.to_owned(),
        event_type: "Warning".to_owned(),
        reason: reason.to_owned(),
        message: Some(message.to_owned()),
        cause: None,
        count,
        first_at: Some(utc(first)),
        last_at: Some(utc(last)),
    }
}

#[test]
fn kube_events_fold_repeats_and_keep_the_latest_hundred_oldest_first() {
    let folded = fold_events([
        event(
            "Pod/a",
            "FailedScheduling",
            "0/3",
            4,
            "2026-11-22T10:02:00Z",
            "2026-11-22T10:09:00Z",
        ),
        event(
            "Pod/a",
            "Scheduled",
            "ok",
            1,
            "2026-11-22T10:10:00Z",
            "2026-11-22T10:10:00Z",
        ),
        // The same event from two lists (old Volcano's PodGroup named as the job), or recorded
        // twice: one line.
        event(
            "Pod/a",
            "FailedScheduling",
            "0/3",
            3,
            "2026-11-22T10:00:00Z",
            "2026-11-22T10:05:00Z",
        ),
        event(
            "PodGroup/ar-7-u",
            "Unschedulable",
            "gang",
            1,
            "2026-11-22T10:01:00Z",
            "2026-11-22T10:01:00Z",
        ),
    ]);
    assert_eq!(
        folded,
        [
            event(
                "PodGroup/ar-7-u",
                "Unschedulable",
                "gang",
                1,
                "2026-11-22T10:01:00Z",
                "2026-11-22T10:01:00Z"
            ),
            event(
                "Pod/a",
                "FailedScheduling",
                "0/3",
                7,
                "2026-11-22T10:00:00Z",
                "2026-11-22T10:09:00Z"
            ),
            event(
                "Pod/a",
                "Scheduled",
                "ok",
                1,
                "2026-11-22T10:10:00Z",
                "2026-11-22T10:10:00Z"
            ),
        ]
    );
    let many = (0..130).map(|i| {
        let at = format!("2026-11-22T10:{:02}:{:02}Z", i / 60, i % 60);
        event("Pod/a", "Pulled", &format!("line {i}"), 1, &at, &at)
    });
    let kept = fold_events(many);
    assert_eq!(kept.len(), MAX_EVENTS);
    assert_eq!(kept[0].message.as_deref(), Some("line 30"));
    assert_eq!(kept[MAX_EVENTS - 1].message.as_deref(), Some("line 129"));
}

#[test]
fn kube_an_event_reads_its_counts_and_times_from_either_events_api() {
    let core: Event = serde_json::from_value(json!({
        "metadata": {"name": "e1", "namespace": "team-ns"},
        "involvedObject": {"kind": "Pod", "name": "ar-7-main-0"},
        "type": "Warning", "reason": "BackOff", "message": "Back-off restarting failed container",
        "count": 5, "firstTimestamp": "2026-11-22T10:00:00Z", "lastTimestamp": "2026-11-22T10:04:00Z"
    }))
    .expect("event");
    assert_eq!(
        event_view(&core, "Pod"),
        ClusterEventView {
            object: "Pod/ar-7-main-0".to_owned(),
            event_type: "Warning".to_owned(),
            reason: "BackOff".to_owned(),
            message: Some("Back-off restarting failed container".to_owned()),
            cause: None,
            count: 5,
            first_at: Some(utc("2026-11-22T10:00:00Z")),
            last_at: Some(utc("2026-11-22T10:04:00Z")),
        }
    );
    // Written through events.k8s.io (the scheduler does): eventTime and a series.
    let series: Event = serde_json::from_value(json!({
        "metadata": {"name": "e2", "namespace": "team-ns"},
        "involvedObject": {"name": "ar-7-main-0"},
        "type": "Warning", "reason": "FailedScheduling", "message": "0/3 nodes are available",
        "eventTime": "2026-11-22T10:00:00.000000Z",
        "series": {"count": 9, "lastObservedTime": "2026-11-22T10:08:00.000000Z"}
    }))
    .expect("event");
    let view = event_view(&series, "Pod");
    assert_eq!(view.object, "Pod/ar-7-main-0");
    assert_eq!(
        (view.count, view.first_at, view.last_at),
        (9, Some(utc("2026-11-22T10:00:00Z")), Some(utc("2026-11-22T10:08:00Z")))
    );
}

#[test]
fn kube_a_logs_end_is_kept_in_whole_lines() {
    let log = b"one\ntwo\nthree\n".to_vec();
    assert_eq!(keep_end(log.clone(), 100, false), log);
    // 9 bytes: "o\nthree\n" cut inside "two", which is dropped.
    assert_eq!(keep_end(log.clone(), 9, false), b"three\n");
    // Trimmed while reading already: the first line may be partial even if it now fits.
    assert_eq!(keep_end(b"wo\nthree\n".to_vec(), 100, true), b"three\n");
    // One line longer than the limit: its end, from a whole character.
    assert_eq!(keep_end("ééé".as_bytes().to_vec(), 3, false), "é".as_bytes());
    assert!(keep_end(log, 0, false).is_empty());
}

#[test]
fn kube_only_pod_names_of_the_job_reach_a_request_path() {
    assert!(is_pod_name_of(7, "ar-7-main-0"));
    assert!(!is_pod_name_of(7, "ar-70-main-0"));
    assert!(!is_pod_name_of(7, "ar-8-main-0"));
    assert!(!is_pod_name_of(7, "ar-7-../../secrets/x"));
    assert!(!is_pod_name_of(7, "ar-7-main-0?follow=true"));
    assert!(!is_pod_name_of(7, "ar-7-Main-0"));
    assert_eq!(pod_group_name("ar-7", "0d6f"), "ar-7-0d6f");
}

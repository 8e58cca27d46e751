//! What a job's page reads, against the mocked apiserver: its pods (one list) and their events
//! (one list per object), a pod's log after checking the pod is the job's, a followed log —
//! every request asserted, and another job's pod never read.

use futures::StreamExt;

use super::*;
use crate::cluster::LogRequest;
use crate::cluster::kube::diagnosis::KnownJob;

const PODS: &str = "/api/v1/namespaces/team-ns/pods";
const EVENTS: &str = "/api/v1/namespaces/team-ns/events";

/// The list of job 7's pods: this installation and this job id.
fn pods_list() -> String {
    format!("{PODS}?&labelSelector=anteroom.io%2Finstallation%3D{INSTALLATION}%2Canteroom.io%2Fjob-id%3D7")
}

fn events_of(name: &str) -> String {
    format!("{EVENTS}?&fieldSelector=involvedObject.name%3D{name}")
}

/// Pod `index` of `task` of job 7 as Volcano creates it (labels, annotations, its container
/// named as the task), of the job with `uid`, with `status`.
fn job_pod(task: &str, index: u32, uid: &str, status: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("ar-7-{task}-{index}"), "namespace": "team-ns", "uid": format!("pod-{task}-{index}"),
            "labels": {"volcano.sh/job-name": "ar-7", "anteroom.io/job-id": "7",
                       "anteroom.io/installation": INSTALLATION, "anteroom.io/job-uid": uid,
                       "volcano.sh/task-spec": task},
            "annotations": {"volcano.sh/task-spec": task, "volcano.sh/task-index": index.to_string(),
                            "scheduling.k8s.io/group-name": "ar-7-vc-uid-7"}
        },
        "spec": {"nodeName": "gpu-1", "containers": [{"name": task}]},
        "status": status
    })
}

fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": format!("{kind}List"), "metadata": {"resourceVersion": "10"}, "items": items})
}

fn k8s_event(kind: &str, name: &str, kind_type: &str, reason: &str, message: &str, count: i32, last: &str) -> Value {
    json!({
        "metadata": {"name": format!("{name}.{reason}.{count}"), "namespace": "team-ns"},
        "involvedObject": {"kind": kind, "name": name, "namespace": "team-ns"},
        "type": kind_type, "reason": reason, "message": message, "count": count,
        "firstTimestamp": "2026-11-22T10:00:00Z", "lastTimestamp": last
    })
}

/// Job 7's uid (`spec(7).cluster_uid`).
const UID: &str = "00000000000000000000000000000007";

fn known() -> KnownJob {
    KnownJob {
        uid: Some("vc-uid-7".to_owned()),
        tasks: vec!["master".to_owned(), "worker".to_owned()],
    }
}

#[test]
fn kube_the_uid_of_these_tests_is_job_7s() {
    assert_eq!(spec(7).cluster_uid, UID);
}

#[tokio::test]
async fn kube_pods_are_one_list_then_the_events_of_each_pod_of_the_volcano_job_and_of_its_podgroup() {
    let (api, mut handle) = mock_api();
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &pods_list()).await;
        let pulling = json!({"phase": "Pending", "containerStatuses": [{"name": "worker", "image": "nope:1",
            "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"nope:1\""}}}]});
        let running = json!({"phase": "Running", "containerStatuses": [{"name": "master", "image": "img",
            "imageID": "", "ready": true, "restartCount": 1,
            "state": {"running": {"startedAt": "2026-11-22T10:01:00Z"}}}]});
        respond(
            send,
            200,
            list(
                "Pod",
                vec![
                    job_pod("worker", 0, UID, pulling),
                    job_pod("master", 0, UID, running),
                    // Same id and installation, another uid: the lost job 7 of a restored
                    // database. Not this job's.
                    job_pod(
                        "worker",
                        1,
                        "4b1e0f6a9c2d4e8f8a7b6c5d4e3f2a1b",
                        json!({"phase": "Running"}),
                    ),
                ],
            ),
        );
        // Pods by task order of the Volcano Job (master, then worker), then the Job, then its
        // PodGroup (named after the Job's uid; the pods' group-name annotation says the same).
        let (_, _, send) = expect(&mut handle, Method::GET, &events_of("ar-7-master-0")).await;
        respond(
            send,
            200,
            list(
                "Event",
                vec![k8s_event(
                    "Pod",
                    "ar-7-master-0",
                    "Normal",
                    "Scheduled",
                    "Successfully assigned team-ns/ar-7-master-0 to gpu-1",
                    1,
                    "2026-11-22T10:00:30Z",
                )],
            ),
        );
        let (_, _, send) = expect(&mut handle, Method::GET, &events_of("ar-7-worker-0")).await;
        let back_off = |count, last| {
            k8s_event(
                "Pod",
                "ar-7-worker-0",
                "Warning",
                "BackOff",
                "Back-off pulling image \"nope:1\"",
                count,
                last,
            )
        };
        respond(
            send,
            200,
            list(
                "Event",
                vec![back_off(3, "2026-11-22T10:05:00Z"), back_off(2, "2026-11-22T10:06:00Z")],
            ),
        );
        let (_, _, send) = expect(&mut handle, Method::GET, &events_of("ar-7")).await;
        respond(
            send,
            200,
            list(
                "Event",
                vec![
                    k8s_event(
                        "Job",
                        "ar-7",
                        "Normal",
                        "ExecuteAction",
                        "Start job",
                        1,
                        "2026-11-22T10:00:01Z",
                    ),
                    // Volcano's svc plugin names the job's Service as the job: not about it.
                    k8s_event("Service", "ar-7", "Normal", "Created", "svc", 1, "2026-11-22T10:00:02Z"),
                ],
            ),
        );
        let (_, _, send) = expect(&mut handle, Method::GET, &events_of("ar-7-vc-uid-7")).await;
        respond(
            send,
            200,
            list(
                "Event",
                vec![k8s_event(
                    "PodGroup",
                    "ar-7-vc-uid-7",
                    "Warning",
                    "Unschedulable",
                    "1/2 tasks in gang unschedulable",
                    4,
                    "2026-11-22T10:00:20Z",
                )],
            ),
        );
    };
    let known = known();
    let (result, ()) = tokio::join!(api.job_pods(7, UID, Some(&known)), server);
    assert_no_more_requests(api, handle).await;
    let pods = result.expect("pods");
    let names: Vec<(&str, &str, u32, Option<&str>)> = pods
        .pods
        .iter()
        .map(|p| (p.name.as_str(), p.task.as_str(), p.replica, p.reason.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("ar-7-master-0", "master", 0, None),
            ("ar-7-worker-0", "worker", 0, Some("ImagePullBackOff"))
        ]
    );
    assert_eq!(pods.pods[0].restarts, 1);
    let events: Vec<(&str, &str, u32)> = pods
        .events
        .iter()
        .map(|e| (e.object.as_str(), e.reason.as_str(), e.count))
        .collect();
    assert_eq!(
        events,
        [
            ("Job/ar-7", "ExecuteAction", 1),
            ("PodGroup/ar-7-vc-uid-7", "Unschedulable", 4),
            ("Pod/ar-7-master-0", "Scheduled", 1),
            ("Pod/ar-7-worker-0", "BackOff", 5),
        ]
    );
    let back_off = &pods.events[3];
    assert_eq!(back_off.event_type, "Warning");
    assert_eq!(back_off.last_at, Some("2026-11-22T10:06:00Z".parse().expect("time")));
}

#[tokio::test]
async fn kube_pods_read_the_events_of_the_first_twenty_pods_only() {
    let (api, mut handle) = mock_api();
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &pods_list()).await;
        let mut workers: Vec<Value> = (0..22)
            .map(|i| job_pod("worker", i, UID, json!({"phase": "Running"})))
            .collect();
        workers.reverse();
        respond(send, 200, list("Pod", workers));
        // By replica, not by name: worker-2 before worker-10.
        for i in 0..20 {
            let (_, _, send) = expect(&mut handle, Method::GET, &events_of(&format!("ar-7-worker-{i}"))).await;
            respond(send, 200, list("Event", Vec::new()));
        }
        // The cache knows the job but not its uid (never the case with a real apiserver): the
        // PodGroup is still the one the pods name.
        let (_, _, send) = expect(&mut handle, Method::GET, &events_of("ar-7")).await;
        respond(send, 200, list("Event", Vec::new()));
        let (_, _, send) = expect(&mut handle, Method::GET, &events_of("ar-7-vc-uid-7")).await;
        respond(send, 200, list("Event", Vec::new()));
    };
    let known = KnownJob {
        uid: None,
        tasks: vec!["worker".to_owned()],
    };
    let (result, ()) = tokio::join!(api.job_pods(7, UID, Some(&known)), server);
    assert_no_more_requests(api, handle).await;
    let pods = result.expect("pods");
    assert_eq!(pods.pods.len(), 22);
    assert!(pods.events.is_empty());
}

#[tokio::test]
async fn kube_pods_of_a_job_that_is_not_in_the_cluster_are_none_and_read_no_events() {
    let (api, mut handle) = mock_api();
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &pods_list()).await;
        respond(
            send,
            200,
            list(
                "Pod",
                vec![job_pod(
                    "worker",
                    0,
                    "4b1e0f6a9c2d4e8f8a7b6c5d4e3f2a1b",
                    json!({"phase": "Running"}),
                )],
            ),
        );
    };
    let (result, ()) = tokio::join!(api.job_pods(7, UID, None), server);
    assert_no_more_requests(api, handle).await;
    assert_eq!(result.expect("pods"), anteroom_shared::api::pods::JobPods::default());
}

#[tokio::test]
async fn kube_pods_refused_by_rbac_are_unavailable_not_an_empty_job() {
    let (api, mut handle) = mock_api();
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &pods_list()).await;
        respond(send, 403, status(403, "Forbidden"));
    };
    let known = known();
    let (result, ()) = tokio::join!(api.job_pods(7, UID, Some(&known)), server);
    assert_no_more_requests(api, handle).await;
    assert!(
        matches!(result, Err(ClusterError::Unavailable(ref m)) if m.contains("403")),
        "{result:?}"
    );
}

fn log_request(pod: &str, tail_lines: Option<u32>, limit_bytes: u64) -> LogRequest {
    LogRequest {
        pod: pod.to_owned(),
        tail_lines,
        limit_bytes,
    }
}

#[tokio::test]
async fn kube_a_log_is_read_after_checking_the_pod_is_the_jobs_within_its_byte_limit() {
    let (api, mut handle) = mock_api();
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-0")).await;
        respond(send, 200, job_pod("worker", 0, UID, json!({"phase": "Running"})));
        // The container named as the task; the tail and the byte limit both asked of the
        // apiserver, so it never sends more than the limit.
        let (_, _, send) = expect(
            &mut handle,
            Method::GET,
            &format!("{PODS}/ar-7-worker-0/log?&container=worker&limitBytes=100&tailLines=100"),
        )
        .await;
        respond_text(send, 200, "epoch 1\nepoch 2\nepoch 3\n");
    };
    let request = log_request("ar-7-worker-0", Some(100), 100);
    let (result, ()) = tokio::join!(api.pod_log(7, UID, &request), server);
    assert_no_more_requests(api, handle).await;
    assert_eq!(result.expect("log"), "epoch 1\nepoch 2\nepoch 3\n");
}

#[tokio::test]
async fn kube_a_tail_longer_than_the_byte_limit_is_asked_again_with_fewer_lines_so_its_end_is_kept() {
    let (api, mut handle) = mock_api();
    let server = async {
        // 100 lines asked, the limit reached after two whole lines: not the end.
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-0")).await;
        respond(send, 200, job_pod("worker", 0, UID, json!({"phase": "Running"})));
        let (_, _, send) = expect(
            &mut handle,
            Method::GET,
            &format!("{PODS}/ar-7-worker-0/log?&container=worker&limitBytes=17&tailLines=100"),
        )
        .await;
        respond_text(send, 200, "epoch 1\nepoch 2\ne");
        // Half the lines it held: one, which fits, so it ends the log.
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-0")).await;
        respond(send, 200, job_pod("worker", 0, UID, json!({"phase": "Running"})));
        let (_, _, send) = expect(
            &mut handle,
            Method::GET,
            &format!("{PODS}/ar-7-worker-0/log?&container=worker&limitBytes=17&tailLines=1"),
        )
        .await;
        respond_text(send, 200, "epoch 3\n");
    };
    let request = log_request("ar-7-worker-0", Some(100), 17);
    let (result, ()) = tokio::join!(api.pod_log(7, UID, &request), server);
    assert_no_more_requests(api, handle).await;
    assert_eq!(result.expect("log"), "epoch 3\n");
}

#[tokio::test]
async fn kube_a_tail_whose_lines_do_not_fit_is_read_once_more_without_the_limit_keeping_its_end() {
    let (api, mut handle) = mock_api();
    let server = async {
        // A progress bar: no newline in the first 20 bytes the limit lets through.
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-0")).await;
        respond(send, 200, job_pod("worker", 0, UID, json!({"phase": "Running"})));
        let (_, _, send) = expect(
            &mut handle,
            Method::GET,
            &format!("{PODS}/ar-7-worker-0/log?&container=worker&limitBytes=20&tailLines=100"),
        )
        .await;
        respond_text(send, 200, "10%\r20%\r30%\r40%\r100%");
        // The same tail without the limit: only its end is kept.
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-0")).await;
        respond(send, 200, job_pod("worker", 0, UID, json!({"phase": "Running"})));
        let (_, _, send) = expect(
            &mut handle,
            Method::GET,
            &format!("{PODS}/ar-7-worker-0/log?&container=worker&tailLines=100"),
        )
        .await;
        respond_text(send, 200, "10%\r20%\r30%\r40%\r100%\nTraceback: boom\n");
    };
    let request = log_request("ar-7-worker-0", Some(100), 20);
    let (result, ()) = tokio::join!(api.pod_log(7, UID, &request), server);
    assert_no_more_requests(api, handle).await;
    assert_eq!(result.expect("log"), "Traceback: boom\n", "the end, in whole lines");
}

#[tokio::test]
async fn kube_a_downloaded_log_is_streamed_whole_without_a_byte_limit() {
    let (api, mut handle) = mock_api();
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-0")).await;
        respond(send, 200, job_pod("worker", 0, UID, json!({"phase": "Running"})));
        let (_, _, send) = expect(
            &mut handle,
            Method::GET,
            &format!("{PODS}/ar-7-worker-0/log?&container=worker"),
        )
        .await;
        respond_text(send, 200, "epoch 1\nepoch 2\nepoch 3\n");
    };
    let request = log_request("ar-7-worker-0", None, u64::MAX);
    let requests = async {
        let stream = api.pod_log_stream(7, UID, &request).await.expect("a stream");
        let chunks: Vec<_> = stream.collect().await;
        chunks
            .into_iter()
            .map(|c| c.expect("a chunk"))
            .fold(Vec::new(), |mut all, c| {
                all.extend_from_slice(&c);
                all
            })
    };
    let (all, ()) = tokio::join!(requests, server);
    assert_no_more_requests(api, handle).await;
    assert_eq!(all, b"epoch 1\nepoch 2\nepoch 3\n");
}

#[tokio::test]
async fn kube_the_log_of_another_jobs_pod_is_not_found_and_never_read() {
    let (api, mut handle) = mock_api();
    let server = async {
        // Another job's pod of the same name (another uid).
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-0")).await;
        respond(
            send,
            200,
            job_pod(
                "worker",
                0,
                "4b1e0f6a9c2d4e8f8a7b6c5d4e3f2a1b",
                json!({"phase": "Running"}),
            ),
        );
        // Another installation's.
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-0")).await;
        let mut foreign = job_pod("worker", 0, UID, json!({"phase": "Running"}));
        foreign["metadata"]["labels"]["anteroom.io/installation"] = json!("another-installation");
        respond(send, 200, foreign);
        // Not there.
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-9")).await;
        respond(send, 404, not_found("pods", "ar-7-worker-9"));
    };
    let requests = async {
        let other_uid = api.pod_log(7, UID, &log_request("ar-7-worker-0", None, 1024)).await;
        let other_installation = api
            .follow_pod_log(7, UID, &log_request("ar-7-worker-0", None, 1024))
            .await
            .map(|_| ());
        let missing = api.pod_log(7, UID, &log_request("ar-7-worker-9", None, 1024)).await;
        [other_uid.map(|_| ()), other_installation, missing.map(|_| ())]
    };
    let (results, ()) = tokio::join!(requests, server);
    for result in results {
        assert!(matches!(result, Err(ClusterError::PodNotFound(_))), "{result:?}");
    }
    // Names that are not the job's pods are refused before any request: the name would go
    // into the request path.
    for name in [
        "ar-8-worker-0",
        "ar-7-x/../../secrets/token",
        "ar-7-worker-0?follow=true",
    ] {
        let request = log_request(name, None, 1024);
        let result = tokio::select! {
            result = api.pod_log(7, UID, &request) => result,
            Some((sent, _)) = handle.next_request() => panic!("{name}: sent {} {}", sent.method(), sent.uri()),
        };
        assert!(
            matches!(result, Err(ClusterError::PodNotFound(_))),
            "{name}: {result:?}"
        );
        let result = tokio::select! {
            result = api.follow_pod_log(7, UID, &request) => result.map(|_| ()),
            Some((sent, _)) = handle.next_request() => panic!("{name}: sent {} {}", sent.method(), sent.uri()),
        };
        assert!(
            matches!(result, Err(ClusterError::PodNotFound(_))),
            "{name}: {result:?}"
        );
    }
    assert_no_more_requests(api, handle).await;
}

#[tokio::test]
async fn kube_a_container_that_has_not_started_has_an_empty_log() {
    let (api, mut handle) = mock_api();
    let waiting = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "container \"worker\" in pod \"ar-7-worker-0\" is waiting to start: ContainerCreating",
        "reason": "BadRequest", "code": 400
    });
    let server = async {
        for follow in [false, true] {
            let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-0")).await;
            respond(send, 200, job_pod("worker", 0, UID, json!({"phase": "Pending"})));
            let query = if follow {
                "container=worker&follow=true&limitBytes=1024"
            } else {
                "container=worker&limitBytes=1024"
            };
            let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-0/log?&{query}")).await;
            respond(send, 400, waiting.clone());
        }
    };
    let request = log_request("ar-7-worker-0", None, 1024);
    let requests = async {
        let log = api.pod_log(7, UID, &request).await;
        let followed = match api.follow_pod_log(7, UID, &request).await {
            Ok(stream) => Ok(stream.collect::<Vec<_>>().await.len()),
            Err(e) => Err(e),
        };
        (log, followed)
    };
    let ((log, followed), ()) = tokio::join!(requests, server);
    assert_no_more_requests(api, handle).await;
    assert_eq!(log.expect("an empty log"), "");
    assert_eq!(followed.expect("an empty stream"), 0);
}

#[tokio::test]
async fn kube_a_followed_log_asks_to_follow_within_the_byte_limit_and_stops_at_it() {
    let (api, mut handle) = mock_api();
    let server = async {
        let (_, _, send) = expect(&mut handle, Method::GET, &format!("{PODS}/ar-7-worker-0")).await;
        respond(send, 200, job_pod("worker", 0, UID, json!({"phase": "Running"})));
        let (_, _, send) = expect(
            &mut handle,
            Method::GET,
            &format!("{PODS}/ar-7-worker-0/log?&container=worker&follow=true&limitBytes=10&tailLines=5"),
        )
        .await;
        // The kubelet may send slightly more than the limit: the stream does not.
        respond_text(send, 200, "step 1\nstep 2\n");
    };
    let request = log_request("ar-7-worker-0", Some(5), 10);
    let followed = async {
        let stream = api.follow_pod_log(7, UID, &request).await.expect("a stream");
        let chunks: Vec<_> = stream.collect().await;
        chunks
            .into_iter()
            .map(|c| c.expect("a chunk"))
            .flat_map(|c| c.to_vec())
            .collect::<Vec<u8>>()
    };
    let (bytes, ()) = tokio::join!(followed, server);
    assert_no_more_requests(api, handle).await;
    assert_eq!(bytes, b"step 1\nste");
}

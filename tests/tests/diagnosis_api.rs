//! Why a job waits in the cluster or failed, over real HTTP (issue 24, points 4 and 5): its
//! pods with their reasons and exit codes, the cluster's events, the one-line failure, and its
//! logs — whole, tailed, downloaded and followed — for its owner and admins only.

use anteroom_tests::api::{call, code};
use anteroom_tests::both_driven;
use anteroom_tests::driven::*;
use serde_json::{Value, json};

/// `GET path` as text: status, content type, content disposition and body.
async fn text(d: &Driven, token: &str, path: &str) -> (u16, String, Option<String>, String) {
    let res = d
        .app
        .client
        .get(d.app.url(path))
        .bearer_auth(token)
        .send()
        .await
        .expect("request");
    let header = |name: &str| res.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
    let (status, kind, disposition) = (
        res.status().as_u16(),
        header("content-type"),
        header("content-disposition"),
    );
    (status, kind.unwrap_or_default(), disposition, res.text().await.unwrap())
}

fn failing_job(name: &str) -> Value {
    let mut body = timed_job(name, json!({"cpu": "1", "memory": "1Gi"}), None);
    body["tasks"][0]["command"] = json!(["sh", "-c", "exit 3"]);
    body
}

async fn a_failed_job_says_why_in_one_line_with_its_pods_events_and_log(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let ann = d.app.user_token("ann").await;
    let bob = d.app.user_token("bob").await;
    let admin = d.app.admin_token().await;
    let (id, answer) = submit(&d, &ann, failing_job("crash")).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    d.settle().await;
    d.advance(1).await;

    let job = detail(&d, &ann, id).await;
    assert_eq!(job["phase"], "Failed", "{job}");
    let pod = format!("ar-{id}-main-0");
    assert_eq!(job["failure"], json!({"pod": pod, "reason": "Error", "exitCode": 3}));
    // The list says it too, and the timeline's last event carries the same structured line.
    let list = d.app.get_json("/api/v1/jobs", Some(&ann)).await;
    let listed = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == id)
        .unwrap()
        .clone();
    assert_eq!(listed["failure"]["exitCode"], 3, "{listed}");
    let last = job["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "failed");
    assert_eq!(last["details"]["failure"]["reason"], "Error", "{last}");

    let (status, pods) = call(&d.app, "GET", &format!("/api/v1/jobs/{id}/pods"), &ann, None).await;
    assert_eq!(status, 200, "{pods}");
    assert_eq!(pods["pods"][0]["name"], pod);
    assert_eq!(pods["pods"][0]["phase"], "Failed");
    assert_eq!(pods["pods"][0]["exitCode"], 3);
    assert!(pods["pods"][0]["node"].is_string(), "{pods}");
    let reasons: Vec<&str> = pods["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["Scheduled", "Started", "Failed"], "{pods}");

    let (status, kind, _, log) = text(&d, &ann, &format!("/api/v1/jobs/{id}/logs")).await;
    assert_eq!(status, 200, "{log}");
    assert!(kind.starts_with("text/plain"), "{kind}");
    assert!(log.contains("command: sh -c exit 3"), "{log}");
    assert!(log.ends_with("exited with code 3\n"), "{log}");
    let (_, _, disposition, whole) = text(&d, &admin, &format!("/api/v1/jobs/{id}/logs?download=true")).await;
    assert_eq!(
        disposition.as_deref(),
        Some(format!("attachment; filename=\"{pod}.log\"").as_str())
    );
    assert_eq!(whole, log, "an admin reads the same log");
    let (_, _, _, tail) = text(&d, &ann, &format!("/api/v1/jobs/{id}/logs?tailLines=1")).await;
    assert_eq!(tail.lines().count(), 1, "{tail}");

    // Another user learns nothing, not even that the job exists.
    for path in [format!("/api/v1/jobs/{id}/pods"), format!("/api/v1/jobs/{id}/logs")] {
        let (status, body) = call(&d.app, "GET", &path, &bob, None).await;
        assert_eq!((status.as_u16(), code(&body)), (404, "job_not_found"), "{path}: {body}");
    }
}
both_driven!(failure, a_failed_job_says_why_in_one_line_with_its_pods_events_and_log);

async fn a_job_pending_in_the_cluster_shows_the_scheduler_s_reason(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let ann = d.app.user_token("ann").await;
    let (first, _) = submit(&d, &ann, gpu_job("all-gpus", "custom", 8, "normal")).await;
    let (second, answer) = submit(&d, &ann, gpu_job("more-gpus", "custom", 8, "normal")).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    d.settle().await;
    assert_eq!(phase(&d, &ann, first).await, "Running");
    assert_eq!(phase(&d, &ann, second).await, "Pending");

    let pods = d.app.get_json(&format!("/api/v1/jobs/{second}/pods"), Some(&ann)).await;
    let pod = &pods["pods"][0];
    assert_eq!(pod["phase"], "Pending", "{pods}");
    assert_eq!(pod["reason"], "Unschedulable");
    assert_eq!(pod["node"], Value::Null);
    // The cluster's own words (they may name other teams' nodes and taints) go to admins
    // only; the owner reads the reason.
    assert_eq!(pod["message"], Value::Null, "{pods}");
    assert_eq!(pods["events"][0]["reason"], "FailedScheduling", "{pods}");
    assert_eq!(pods["events"][0]["type"], "Warning");
    assert_eq!(pods["events"][0]["message"], Value::Null, "{pods}");
    let admin = d.app.admin_token().await;
    let seen_by_admin = d
        .app
        .get_json(&format!("/api/v1/jobs/{second}/pods"), Some(&admin))
        .await;
    assert_eq!(
        seen_by_admin["pods"][0]["message"],
        "0/2 nodes are available: 2 Insufficient nvidia.com/a100."
    );
    assert!(seen_by_admin["events"][0]["message"].is_string(), "{seen_by_admin}");
    // The message read into a cause the UI says in the reader's language: the owner gets it
    // too (counts and resources, no node's taints), the admin beside the message.
    let cause = serde_json::json!({"code": "noNodeAvailable", "params": {"total": "2"},
        "refusals": [{"count": 2, "why": "insufficient", "resource": "nvidia.com/a100"}]});
    assert_eq!(pods["pods"][0]["cause"], cause, "{pods}");
    assert_eq!(seen_by_admin["pods"][0]["cause"], cause, "{seen_by_admin}");
    assert_eq!(pods["events"][0]["cause"]["code"], "noNodeAvailable", "{pods}");
    // A pod not placed yet exists and has written nothing.
    let (status, _, _, log) = text(&d, &ann, &format!("/api/v1/jobs/{second}/logs")).await;
    assert_eq!((status, log.as_str()), (200, ""));
}
both_driven!(pending, a_job_pending_in_the_cluster_shows_the_scheduler_s_reason);

async fn logs_of_what_is_not_there_are_refused_clearly(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let ann = d.app.user_token("ann").await;
    // Held by the prequeue: not in the cluster, so no pods and no logs.
    let admin = d.app.admin_token().await;
    anteroom_tests::api::settings(&d.app, &admin, json!({"queueQuotaEnabled": true})).await;
    anteroom_tests::api::quota(&d.app, &admin, "default", json!({"cpu": "2"})).await;
    let (_, _) = submit(&d, &ann, timed_job("first", json!({"cpu": "2"}), None)).await;
    let (held, answer) = submit(&d, &ann, timed_job("held", json!({"cpu": "2"}), None)).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    let pods = d.app.get_json(&format!("/api/v1/jobs/{held}/pods"), Some(&ann)).await;
    assert_eq!(pods, json!({"pods": [], "events": []}));
    let (status, body) = call(&d.app, "GET", &format!("/api/v1/jobs/{held}/logs"), &ann, None).await;
    assert_eq!((status.as_u16(), code(&body)), (404, "pod_not_found"), "{body}");

    d.settle().await;
    let id = held - 1;
    assert_eq!(phase(&d, &ann, id).await, "Running");
    for (query, status, want) in [
        ("task=nope", 404, "pod_not_found"),
        ("replica=1", 404, "pod_not_found"),
        ("tailLines=0", 422, "validation_failed"),
        ("tailLines=100001", 422, "validation_failed"),
        ("tailLines=ten", 422, "validation_failed"),
        ("colour=blue", 422, "validation_failed"),
    ] {
        let (got, body) = call(&d.app, "GET", &format!("/api/v1/jobs/{id}/logs?{query}"), &ann, None).await;
        assert_eq!((got.as_u16(), code(&body)), (status, want), "{query}: {body}");
    }
}
both_driven!(refusals, logs_of_what_is_not_there_are_refused_clearly);

/// Submits a job of `name` that runs `seconds`, lets the cluster place it, and opens its
/// followed log (200 asserted).
async fn follow_new_job(d: &Driven, token: &str, name: &str, seconds: u32) -> reqwest::Response {
    let (id, _) = submit(d, token, timed_job(name, json!({"cpu": "1"}), Some(seconds))).await;
    d.settle().await;
    let res = d
        .app
        .client
        .get(d.app.url(&format!("/api/v1/jobs/{id}/logs?follow=true")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res
}

#[tokio::test]
async fn a_followed_log_carries_new_lines_as_they_are_written_and_ends_with_the_pod() {
    let d = Driven::start(None, "").await;
    let ann = d.app.user_token("ann").await;
    let mut res = follow_new_job(&d, &ann, "follow", 30).await;
    let mut seen = String::new();
    let mut read_until = async |want: &str, seen: &mut String| {
        while !seen.contains(want) {
            let chunk = tokio::time::timeout(std::time::Duration::from_secs(20), res.chunk())
                .await
                .expect("a chunk within 20 s")
                .unwrap();
            match chunk {
                Some(bytes) => seen.push_str(std::str::from_utf8(&bytes).unwrap()),
                None => panic!("the log ended before {want:?}: {seen}"),
            }
        }
    };
    read_until("command: sleep 30", &mut seen).await;
    assert!(!seen.contains("running for"), "nothing written yet: {seen}");
    // Time passes in the cluster: the open answer carries what the pod wrote since.
    d.advance(15).await;
    read_until("running for 10s", &mut seen).await;
    d.advance(20).await;
    read_until("exited with code 0", &mut seen).await;
    // The pod ended: so does the answer.
    let end = tokio::time::timeout(std::time::Duration::from_secs(20), res.chunk())
        .await
        .expect("the end within 20 s")
        .unwrap();
    assert!(end.is_none(), "nothing after the exit: {end:?}");
    assert_eq!(seen.matches("started on node").count(), 1, "no line sent twice: {seen}");
}

#[tokio::test]
async fn a_followed_log_ends_when_its_reader_logs_out() {
    let d = Driven::start(None, "").await;
    let ann = d.app.user_token("ann").await;
    let mut res = follow_new_job(&d, &ann, "long", 3600).await;
    let first = res.chunk().await.unwrap().expect("the log so far");
    assert!(std::str::from_utf8(&first).unwrap().contains("started on node"));
    let (status, _) = call(&d.app, "POST", "/api/v1/auth/logout", &ann, Some(json!({}))).await;
    assert!(status.is_success(), "{status}");
    // Checked every 5 s: the answer ends, though the pod runs on.
    let end = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            match res.chunk().await {
                Ok(Some(_)) => continue,
                other => return other,
            }
        }
    })
    .await
    .expect("the stream ends within 20 s");
    assert!(matches!(end, Ok(None)), "{end:?}");
}

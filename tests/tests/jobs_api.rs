//! The jobs API over HTTP against the simulated cluster: submission (activation, prequeue with
//! reasons, every refusal), preview, detail, delete, lock, idempotent submits,
//! concurrency against quotas and capacities, and authorization. Each scenario runs on SQLite
//! and on PostgreSQL (`both!`). The lists' filters, search, sort and bulk actions are in
//! `job_lists_api.rs`.

use std::time::Duration;

use anteroom_tests::api::*;
use anteroom_tests::{TestApp, both};
use serde_json::{Value, json};

async fn a_job_that_fits_is_activated_and_shows_its_timeline(app: TestApp) {
    let alice = app.user_token("alice").await;
    let (status, body) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &alice,
        Some(job("train", json!({"cpu": "4", "memory": "8Gi"}))),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["admission"]["decision"], "activated");
    assert_eq!(body["admission"]["reasons"], json!([]));
    assert_eq!(body["job"]["phase"], "Pending");
    assert_eq!(body["job"]["owner"], "alice");
    assert_eq!(body["job"]["scheduleType"], "normal");
    assert_eq!(body["job"]["waitingToleranceSeconds"], 300);
    assert_eq!(body["job"]["resources"], json!({"cpu": "4", "memory": "8Gi"}));
    assert!(body["job"]["activatedAt"].is_string());
    let id = body["job"]["id"].as_i64().unwrap();
    let (status, detail) = call(&app, "GET", &format!("/api/v1/jobs/{id}"), &alice, None).await;
    assert_eq!(status, 200);
    let kinds: Vec<&str> = detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    // (and `started` once its pods run, which the simulated cluster may do at once)
    assert!(
        matches!(
            kinds.as_slice(),
            ["submitted", "activated"] | ["submitted", "activated", "started"]
        ),
        "{kinds:?}"
    );
    // What the UI says in each language comes from these, not from the English message.
    assert_eq!(detail["events"][0]["details"], json!({"queue": "default"}));
    assert_eq!(
        detail["events"][1]["details"],
        json!({"clusterName": format!("ar-{id}")})
    );
    assert_eq!(detail["prequeue"], Value::Null);
    let statuses = app.state.cluster.job_statuses().await.unwrap();
    assert!(statuses.iter().any(|s| s.job_id == id), "the job exists in the cluster");
}
both!(activation, a_job_that_fits_is_activated_and_shows_its_timeline);

async fn over_quota_a_job_is_prequeued_with_its_reason_and_position(app: TestApp) {
    let admin = app.admin_token().await;
    let bob = app.user_token("bob").await;
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&app, &admin, "default", json!({"nvidia.com/a100": "2"})).await;
    let gpu = json!({"cpu": "4", "nvidia.com/a100": "2"});
    let (_, first) = call(&app, "POST", "/api/v1/jobs", &bob, Some(job("one", gpu.clone()))).await;
    assert_eq!(first["admission"]["decision"], "activated");
    let (status, second) = call(&app, "POST", "/api/v1/jobs", &bob, Some(job("two", gpu.clone()))).await;
    assert_eq!(status, 201);
    assert_eq!(second["admission"]["decision"], "prequeued");
    assert_eq!(second["job"]["phase"], "Prequeue");
    let reason = &second["admission"]["reasons"][0];
    assert_eq!(reason["code"], "quota");
    let a100 = reason["details"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "nvidia.com/a100")
        .unwrap();
    assert_eq!(
        (a100["usage"].as_str(), a100["request"].as_str(), a100["limit"].as_str()),
        (Some("2"), Some("2"), Some("2"))
    );
    let (_, third) = call(&app, "POST", "/api/v1/jobs", &bob, Some(job("three", gpu))).await;
    let id = third["job"]["id"].as_i64().unwrap();
    let (_, detail) = call(&app, "GET", &format!("/api/v1/jobs/{id}"), &bob, None).await;
    assert_eq!(detail["prequeue"]["position"], 2);
    assert_eq!(detail["prequeue"]["reasons"][0]["code"], "quota");
    let kinds: Vec<&str> = detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["submitted", "prequeued"]);
    // Nothing of a prequeued job reaches the cluster.
    let statuses = app.state.cluster.job_statuses().await.unwrap();
    assert!(!statuses.iter().any(|s| s.job_id == id));
    // The admin sees both waiting jobs in order.
    let (_, list) = call(&app, "GET", "/api/v1/admin/prequeue", &admin, None).await;
    assert_eq!(list["total"], 2);
    assert_eq!(list["items"][1]["position"], 2);
    assert_eq!(list["items"][1]["job"]["id"], id);
    // The summary shows the quota, the usage and what waits.
    let (_, summary) = call(&app, "GET", "/api/v1/me/resource-summary?queue=default", &bob, None).await;
    // The first job is pending or, once the simulated cluster started it, running.
    let started = summary["jobs"]["running"].as_u64().unwrap();
    assert_eq!(started + summary["jobs"]["pending"].as_u64().unwrap(), 1, "{summary}");
    assert_eq!(summary["jobs"]["prequeued"], 2);
    let a100 = summary["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "nvidia.com/a100")
        .unwrap();
    assert_eq!(a100["used"], "2");
    assert_eq!(a100["prequeued"], "4");
    assert_eq!(a100["limit"], "2");
    // The limit check says the same.
    let (_, check) = call(
        &app,
        "POST",
        "/api/v1/me/resource-limit-check",
        &bob,
        Some(json!({"queue": "default", "resources": {"nvidia.com/a100": "1"}})),
    )
    .await;
    assert_eq!(check["enabled"], true);
    assert_eq!(check["exceeded"], true);
}
both!(quota_hold, over_quota_a_job_is_prequeued_with_its_reason_and_position);

async fn delete_removes_a_job_from_the_prequeue_or_the_cluster_once(app: TestApp) {
    let admin = app.admin_token().await;
    let frank = app.user_token("frank").await;
    let grace = app.user_token("grace").await;
    let (_, running) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &frank,
        Some(job("r", json!({"cpu": "1"}))),
    )
    .await;
    let id = running["job"]["id"].as_i64().unwrap();
    // Another user sees nothing, for every verb.
    for (method, path) in [
        ("GET", format!("/api/v1/jobs/{id}")),
        ("DELETE", format!("/api/v1/jobs/{id}")),
    ] {
        let (status, body) = call(&app, method, &path, &grace, None).await;
        assert_eq!((status.as_u16(), code(&body)), (404, "job_not_found"), "{method}");
    }
    let (status, _) = call(&app, "DELETE", &format!("/api/v1/jobs/{id}"), &frank, None).await;
    assert_eq!(status, 204);
    let (status, body) = call(&app, "DELETE", &format!("/api/v1/jobs/{id}"), &frank, None).await;
    assert_eq!((status.as_u16(), code(&body)), (409, "already_finished"));
    let (_, detail) = call(&app, "GET", &format!("/api/v1/jobs/{id}"), &admin, None).await;
    assert_eq!(detail["phase"], "Deleted");
    assert!(detail["finishedAt"].is_string());
    // The lock: admins only, and not on a finished job.
    let (_, other) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &frank,
        Some(job("s", json!({"cpu": "1"}))),
    )
    .await;
    let other = other["job"]["id"].as_i64().unwrap();
    let (status, body) = call(
        &app,
        "PUT",
        &format!("/api/v1/admin/jobs/{other}/lock"),
        &admin,
        Some(json!({"until": "2099-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["lockedUntil"], "2099-01-01T00:00:00Z");
    let (status, _) = call(
        &app,
        "PUT",
        &format!("/api/v1/admin/jobs/{other}/lock"),
        &frank,
        Some(json!({"until": null})),
    )
    .await;
    assert_eq!(status, 403);
    let (status, body) = call(
        &app,
        "PUT",
        &format!("/api/v1/admin/jobs/{id}/lock"),
        &admin,
        Some(json!({"until": null})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (409, "already_finished"));
    let (status, body) = call(
        &app,
        "PUT",
        "/api/v1/admin/jobs/999999/lock",
        &admin,
        Some(json!({"until": null})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (404, "job_not_found"));
    // Lists filter by phase and, for admins, by user.
    let (_, deleted) = call(&app, "GET", "/api/v1/jobs?phase=Deleted", &frank, None).await;
    assert_eq!(deleted["total"], 1);
    // The other job is Pending or, once the simulated cluster started it, Running.
    let (_, both) = call(
        &app,
        "GET",
        "/api/v1/jobs?phase=Deleted&phase=Pending&phase=Running",
        &frank,
        None,
    )
    .await;
    assert_eq!(both["total"], 2);
    let (_, by_user) = call(&app, "GET", "/api/v1/admin/jobs?user=grace", &admin, None).await;
    assert_eq!(by_user["total"], 0);
    let (status, bad) = call(&app, "GET", "/api/v1/jobs?phase=Sleeping", &frank, None).await;
    assert_eq!((status.as_u16(), code(&bad)), (422, "validation_failed"));
}
both!(
    delete_and_lock,
    delete_removes_a_job_from_the_prequeue_or_the_cluster_once
);

async fn a_prequeued_job_deleted_never_reaches_the_cluster(app: TestApp) {
    let admin = app.admin_token().await;
    let heidi = app.user_token("heidi").await;
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&app, &admin, "default", json!({"cpu": "1"})).await;
    call(
        &app,
        "POST",
        "/api/v1/jobs",
        &heidi,
        Some(job("a", json!({"cpu": "1"}))),
    )
    .await;
    let (_, waiting) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &heidi,
        Some(job("b", json!({"cpu": "1"}))),
    )
    .await;
    let id = waiting["job"]["id"].as_i64().unwrap();
    let (status, _) = call(&app, "DELETE", &format!("/api/v1/jobs/{id}"), &heidi, None).await;
    assert_eq!(status, 204);
    let (_, detail) = call(&app, "GET", &format!("/api/v1/jobs/{id}"), &heidi, None).await;
    assert_eq!(detail["phase"], "Deleted");
    assert_eq!(detail["prequeue"], Value::Null);
    assert!(
        !app.state
            .cluster
            .job_statuses()
            .await
            .unwrap()
            .iter()
            .any(|s| s.job_id == id)
    );
}
both!(delete_prequeued, a_prequeued_job_deleted_never_reaches_the_cluster);

async fn preview_decides_without_writing(app: TestApp) {
    let admin = app.admin_token().await;
    let lee = app.user_token("lee").await;
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&app, &admin, "default", json!({"cpu": "2"})).await;
    let (status, preview) = call(
        &app,
        "POST",
        "/api/v1/jobs/preview",
        &lee,
        Some(job("p", json!({"cpu": "2"}))),
    )
    .await;
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["decision"], "activated");
    assert_eq!(preview["quota"]["enabled"], true);
    call(
        &app,
        "POST",
        "/api/v1/jobs",
        &lee,
        Some(job("real", json!({"cpu": "2"}))),
    )
    .await;
    let (_, preview) = call(
        &app,
        "POST",
        "/api/v1/jobs/preview",
        &lee,
        Some(job("p", json!({"cpu": "1"}))),
    )
    .await;
    assert_eq!(preview["decision"], "prequeued");
    assert_eq!(preview["reasons"][0]["code"], "quota");
    assert_eq!(preview["quota"]["exceeded"], true);
    let (status, body) = call(
        &app,
        "POST",
        "/api/v1/jobs/preview",
        &lee,
        Some(job("p", json!({"cpu": "3"}))),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (422, "quota_request_exceeds_limit"));
    let (_, list) = call(&app, "GET", "/api/v1/jobs", &lee, None).await;
    assert_eq!(list["total"], 1);
    let (_, me) = call(&app, "GET", "/api/v1/auth/me", &lee, None).await;
    assert_eq!(me["queues"], json!(["default"]));
}
both!(preview, preview_decides_without_writing);

async fn another_users_job_is_404_for_every_operation_on_it(app: TestApp) {
    let owner = app.user_token("olga").await;
    let stranger = app.user_token("piet").await;
    let (_, created) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &owner,
        Some(job("mine", json!({"cpu": "1"}))),
    )
    .await;
    let id = created["job"]["id"].as_i64().unwrap();
    let spec = app.get_json("/api/openapi.json", None).await;
    let mut checked = Vec::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        if !path.starts_with("/api/v1/jobs/{id}") {
            continue;
        }
        for method in item.as_object().unwrap().keys() {
            let concrete = path.replace("{id}", &id.to_string());
            let (status, body) = call(&app, &method.to_uppercase(), &concrete, &stranger, Some(json!({}))).await;
            assert_eq!(
                (status.as_u16(), code(&body)),
                (404, "job_not_found"),
                "{method} {path}"
            );
            checked.push(format!("{method} {path}"));
        }
    }
    checked.sort();
    assert_eq!(
        checked,
        [
            "delete /api/v1/jobs/{id}",
            "get /api/v1/jobs/{id}",
            "get /api/v1/jobs/{id}/ahead",
            "get /api/v1/jobs/{id}/logs",
            "get /api/v1/jobs/{id}/pods",
            "post /api/v1/jobs/{id}/notebook",
            "post /api/v1/jobs/{id}/resubmit",
        ]
    );
    let (_, still) = call(&app, "GET", &format!("/api/v1/jobs/{id}"), &owner, None).await;
    assert!(
        matches!(still["phase"].as_str(), Some("Pending" | "Running")),
        "the stranger changed nothing: {still}"
    );
}
both!(authorization, another_users_job_is_404_for_every_operation_on_it);

async fn a_cluster_that_refuses_the_create_leaves_the_job_activating_and_answers_201(app: TestApp) {
    let admin = app.admin_token().await;
    let rita = app.user_token("rita").await;
    let (status, _) = call(
        &app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "gone", "open": true})),
    )
    .await;
    assert_eq!(status, 201);
    // The cluster forgets the queue behind Anteroom's back: its creates are refused.
    app.state.cluster.remove_queue("gone").await.unwrap();
    let mut body = job("doomed", json!({"cpu": "1"}));
    body["queue"] = json!("gone");
    let (status, answer) = call(&app, "POST", "/api/v1/jobs", &rita, Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["admission"]["decision"], "activated");
    assert_eq!(answer["job"]["phase"], "Activating", "left for the watcher to retry");
    let id = job_id(&answer);
    let (_, detail) = call(&app, "GET", &format!("/api/v1/jobs/{id}"), &rita, None).await;
    let kinds: Vec<&str> = detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["submitted", "activation_failed"]);
    assert_eq!(detail["events"][1]["details"]["attempts"], 1);
    // The owner gets a code and a sentence; the cluster's own words go to admins only.
    let seen = &detail["events"][1];
    assert_eq!(seen["details"]["code"], "cluster_create_failed", "{seen}");
    assert!(seen["details"].get("clusterError").is_none(), "{seen}");
    assert!(!seen.to_string().contains("`gone`"), "the cluster's text: {seen}");
    let (_, as_admin) = call(&app, "GET", &format!("/api/v1/jobs/{id}"), &admin, None).await;
    let raw = as_admin["events"][1]["details"]["clusterError"]
        .as_str()
        .unwrap_or_default();
    assert!(raw.contains("`gone`"), "{as_admin}");
    // The cluster has the queue again: after its backoff (2 s) the watcher's repair creates
    // the job. Polled, not timed (the ticker is 5 s).
    app.state
        .cluster
        .sync_queue(&anteroom::cluster::ClusterQueue::new("gone", true))
        .await
        .unwrap();
    let mut phase = String::new();
    for _ in 0..100 {
        let (_, detail) = call(&app, "GET", &format!("/api/v1/jobs/{id}"), &rita, None).await;
        phase = detail["phase"].as_str().unwrap().to_string();
        if phase != "Activating" {
            let kinds: Vec<&str> = detail["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["kind"].as_str().unwrap())
                .collect();
            // (and `started` once its pods run)
            assert_eq!(kinds[..3], ["submitted", "activation_failed", "activated"], "{kinds:?}");
            assert!(kinds[3..].iter().all(|k| *k == "started"), "{kinds:?}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(matches!(phase.as_str(), "Pending" | "Running"), "repaired: {phase}");
}
both!(
    cluster_refusal,
    a_cluster_that_refuses_the_create_leaves_the_job_activating_and_answers_201
);

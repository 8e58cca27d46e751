//! The jobs API over HTTP against the simulated cluster: submission (activation, prequeue with
//! reasons, every refusal), preview, lists, detail, delete, lock, idempotent submits,
//! concurrency against quotas and capacities, and authorization. Each scenario runs on SQLite
//! and on PostgreSQL (`both!`).

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
    assert_eq!(kinds, ["submitted", "activated"]);
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
            "get /api/v1/jobs/{id}/logs",
            "get /api/v1/jobs/{id}/pods",
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
        .sync_queue(&anteroom::cluster::ClusterQueue {
            name: "gone".into(),
            open: true,
        })
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
            assert_eq!(kinds, ["submitted", "activation_failed", "activated"]);
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

#[tokio::test]
async fn a_repeated_list_filter_takes_at_most_32_values() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let uma = app.user_token("uma").await;
    let query = |name: &str, value: &str, n: usize| vec![format!("{name}={value}"); n].join("&");
    for (name, value) in [
        ("phase", "Running"),
        ("scheduleType", "normal"),
        ("kind", "custom"),
        ("queue", "default"),
        ("user", "uma"),
    ] {
        let path = format!("/api/v1/admin/jobs?{}", query(name, value, 32));
        let (status, body) = call(&app, "GET", &path, &admin, None).await;
        assert_eq!(status, 200, "{name} ×32: {body}");
        let path = format!("/api/v1/admin/jobs?{}", query(name, value, 33));
        let (status, body) = call(&app, "GET", &path, &admin, None).await;
        assert_eq!((status.as_u16(), code(&body)), (422, "validation_failed"), "{name} ×33");
        let fields = body["error"]["details"]["fields"].as_array().unwrap();
        assert_eq!(fields.len(), 1, "{body}");
        assert_eq!(fields[0]["field"], name, "{body}");
    }
    // A user's own list too, and a cap is per filter: 32 of each is fine.
    let path = format!("/api/v1/jobs?{}", query("phase", "Running", 33));
    let (status, body) = call(&app, "GET", &path, &uma, None).await;
    assert_eq!((status.as_u16(), code(&body)), (422, "validation_failed"));
    assert_eq!(body["error"]["details"]["fields"][0]["field"], "phase");
    let path = format!(
        "/api/v1/jobs?{}&{}",
        query("phase", "Running", 32),
        query("queue", "default", 32)
    );
    let (status, body) = call(&app, "GET", &path, &uma, None).await;
    assert_eq!(status, 200, "{body}");
}

async fn a_list_is_searched_and_sorted_and_its_jobs_deleted_and_locked_together(app: TestApp) {
    let admin = app.admin_token().await;
    let vic = app.user_token("vic").await;
    let wyn = app.user_token("wyn").await;
    let mut ids = std::collections::BTreeMap::new();
    for name in ["beta-train", "alpha-eval", "gamma-train", "delta-x"] {
        let (id, _) = submit_job(&app, &vic, job(name, json!({"cpu": "1"}))).await;
        ids.insert(name, id);
    }
    let (other, _) = submit_job(&app, &wyn, job("train-of-wyn", json!({"cpu": "1"}))).await;
    let names = |list: &Value| -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let list = |query: &'static str| {
        let (app, vic) = (&app, &vic);
        async move {
            let (status, body) = call(app, "GET", &format!("/api/v1/jobs?{query}"), vic, None).await;
            assert_eq!(status, 200, "{query}: {body}");
            body
        }
    };
    // Newest first by default; by name either way; by name inside a search.
    assert_eq!(
        names(&list("").await),
        ["delta-x", "gamma-train", "alpha-eval", "beta-train"]
    );
    assert_eq!(
        names(&list("sort=name").await),
        ["alpha-eval", "beta-train", "delta-x", "gamma-train"]
    );
    assert_eq!(
        names(&list("sort=-name").await),
        ["gamma-train", "delta-x", "beta-train", "alpha-eval"]
    );
    assert_eq!(
        names(&list("sort=submittedAt").await),
        ["beta-train", "alpha-eval", "gamma-train", "delta-x"]
    );
    let found = list("q=TRAIN&sort=name").await;
    assert_eq!(
        names(&found),
        ["beta-train", "gamma-train"],
        "another user's job is not searched"
    );
    assert_eq!(found["total"], 2);
    // Pages of a sorted list follow on without a gap or a repeat.
    let first = names(&list("sort=name&pageSize=3&page=1").await);
    let second = names(&list("sort=name&pageSize=3&page=2").await);
    assert_eq!([first, second].concat(), names(&list("sort=name").await));
    // `%` and `_` are letters to look for, not wildcards.
    for literal in ["q=%25", "q=_", "q=%5C"] {
        let none = list(literal).await;
        assert_eq!(none["total"], 0, "{literal}: {none}");
    }
    assert_eq!(list("q=%20%20").await["total"], 4, "a blank search is no search");
    // An admin finds everyone's; a sort by owner groups them.
    let (_, everyone) = call(&app, "GET", "/api/v1/admin/jobs?q=train&sort=-owner", &admin, None).await;
    assert_eq!(names(&everyone), ["train-of-wyn", "gamma-train", "beta-train"]);
    // One order on both stores: bytes, not a locale's collation (which puts `zz1` first).
    for name in ["zz1", "zz-2"] {
        submit_job(&app, &wyn, job(name, json!({"cpu": "1"}))).await;
    }
    let (_, zz) = call(&app, "GET", "/api/v1/admin/jobs?q=zz&sort=name", &admin, None).await;
    assert_eq!(names(&zz), ["zz-2", "zz1"]);
    for (query, field) in [
        ("sort=id", "sort"),
        ("sort=--name", "sort"),
        ("sort=", "sort"),
        (
            "q=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "q",
        ),
    ] {
        let (status, body) = call(&app, "GET", &format!("/api/v1/jobs?{query}"), &vic, None).await;
        assert_eq!((status.as_u16(), code(&body)), (422, "validation_failed"), "{query}");
        assert_eq!(body["error"]["details"]["fields"][0]["field"], field, "{body}");
    }

    // Deleted together: each of the caller's, and a refusal for each other id.
    let bulk = json!({"ids": [ids["beta-train"], other, ids["alpha-eval"], 999_999_999]});
    let (status, answer) = call(&app, "POST", "/api/v1/jobs/delete", &vic, Some(bulk)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["done"], json!([ids["beta-train"], ids["alpha-eval"]]));
    let failed = answer["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 2, "{answer}");
    assert_eq!(
        (failed[0]["id"].as_i64(), failed[0]["code"].as_str()),
        (Some(other), Some("job_not_found"))
    );
    assert_eq!(failed[1]["code"], "job_not_found");
    let (_, theirs) = call(&app, "GET", &format!("/api/v1/jobs/{other}"), &wyn, None).await;
    assert!(!theirs["phase"].as_str().unwrap().contains("Deleted"), "{theirs}");
    let (_, again) = call(
        &app,
        "POST",
        "/api/v1/jobs/delete",
        &vic,
        Some(json!({"ids": [ids["beta-train"]]})),
    )
    .await;
    assert_eq!(again["done"], json!([]));
    assert_eq!(again["failed"][0]["code"], "already_finished");
    let phases = list("phase=Deleted&sort=name").await;
    assert_eq!(names(&phases), ["alpha-eval", "beta-train"]);
    for bad in [
        json!({"ids": []}),
        json!({"ids": (1..=501).collect::<Vec<i64>>()}),
        json!({"ids": [1], "extra": true}),
    ] {
        let (status, body) = call(&app, "POST", "/api/v1/jobs/delete", &vic, Some(bad.clone())).await;
        assert_eq!(status, 422, "{bad}: {body}");
    }
    assert_eq!(
        list("phase=Deleted").await["total"],
        2,
        "a refused request deleted nothing"
    );

    // Locked and unlocked together, by admins only.
    let pair = json!([ids["gamma-train"], ids["delta-x"]]);
    let (status, _) = call(
        &app,
        "PUT",
        "/api/v1/admin/jobs/lock",
        &vic,
        Some(json!({"ids": pair, "until": "2099-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(status, 403);
    // An id named twice counts once.
    let (status, answer) = call(
        &app,
        "PUT",
        "/api/v1/admin/jobs/lock",
        &admin,
        Some(
            json!({"ids": [ids["gamma-train"], ids["delta-x"], ids["gamma-train"], ids["alpha-eval"]],
            "until": "2099-01-01T00:00:00Z"}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["done"], pair);
    assert_eq!(answer["failed"].as_array().unwrap().len(), 1, "{answer}");
    assert_eq!(
        answer["failed"][0]["code"], "already_finished",
        "a deleted job cannot be locked"
    );
    let locked = list("sort=name&phase=Running&phase=Pending").await;
    assert!(
        locked["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|j| j["lockedUntil"] == "2099-01-01T00:00:00Z"),
        "{locked}"
    );
    let (_, answer) = call(
        &app,
        "PUT",
        "/api/v1/admin/jobs/lock",
        &admin,
        Some(json!({"ids": pair, "until": null})),
    )
    .await;
    assert_eq!(answer["done"], pair);
    let unlocked = list("sort=name&phase=Running&phase=Pending").await;
    assert!(
        unlocked["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|j| j["lockedUntil"].is_null()),
        "{unlocked}"
    );
}
both!(
    search_sort_bulk,
    a_list_is_searched_and_sorted_and_its_jobs_deleted_and_locked_together
);

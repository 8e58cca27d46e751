//! The jobs API over HTTP against the simulated cluster: queues, quotas, prequeue settings,
//! submission (activate, prequeue, every refusal), preview, lists, detail, delete, lock,
//! idempotent submits, the resource summary and the event stream. Each scenario runs on
//! SQLite and on PostgreSQL (`both!`).

use std::time::Duration;

use anteroom_tests::{TestApp, postgres};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Runs a scenario on SQLite and, as an ignored test run by `./anteroom.sh test`, on PostgreSQL.
macro_rules! both {
    ($name:ident, $scenario:ident) => {
        mod $name {
            use super::*;

            #[tokio::test]
            async fn on_sqlite() {
                $scenario(TestApp::builder().start().await).await;
            }

            #[tokio::test]
            #[ignore = "needs PostgreSQL"]
            async fn on_postgres() {
                let url = postgres::fresh_database(&postgres::server_url()).await;
                $scenario(TestApp::builder().database_url(url).start().await).await;
            }
        }
    };
}

async fn call(app: &TestApp, method: &str, path: &str, token: &str, body: Option<Value>) -> (StatusCode, Value) {
    let mut req = app
        .client
        .request(method.parse().unwrap(), app.url(path))
        .bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.expect("request");
    let status = res.status();
    let text = res.text().await.expect("body");
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).expect("JSON")
    };
    (status, value)
}

fn job(name: &str, resources: Value) -> Value {
    json!({
        "name": name,
        "kind": "custom",
        "queue": "default",
        "tasks": [{"name": "main", "replicas": 1, "image": "busybox", "command": ["sleep", "3600"], "resources": resources}]
    })
}

async fn settings(app: &TestApp, admin: &str, change: Value) {
    let (_, mut config) = call(app, "GET", "/api/v1/admin/prequeue-config", admin, None).await;
    for (k, v) in change.as_object().unwrap() {
        config[k] = v.clone();
    }
    let (status, body) = call(app, "PUT", "/api/v1/admin/prequeue-config", admin, Some(config)).await;
    assert_eq!(status, 200, "{body}");
}

async fn quota(app: &TestApp, admin: &str, queue: &str, limits: Value) -> Value {
    let (status, body) = call(
        app,
        "POST",
        "/api/v1/admin/queue-quotas",
        admin,
        Some(json!({"queue": queue, "limits": limits})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

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

async fn every_refusal_answers_its_code_and_writes_nothing(app: TestApp) {
    let admin = app.admin_token().await;
    let carol = app.user_token("carol").await;
    let cases: Vec<(Value, u16, &str)> = vec![
        (job("Bad_Name", json!({"cpu": "1"})), 422, "validation_failed"),
        (job("neg", json!({"cpu": "-1"})), 422, "validation_failed"),
        (job("huge", json!({"cpu": "100000"})), 422, "unschedulable"),
        (
            {
                let mut j = job("q", json!({"cpu": "1"}));
                j["queue"] = json!("nope");
                j
            },
            404,
            "queue_not_found",
        ),
        (
            {
                let mut j = job("bf", json!({"cpu": "1"}));
                j["scheduleType"] = json!("backfill");
                j
            },
            409,
            "backfill_disabled",
        ),
        (
            {
                let mut j = job("pin", json!({"cpu": "1"}));
                j["tasks"][0]["nodeNames"] = json!(["ghost"]);
                j
            },
            422,
            "validation_failed",
        ),
        (
            {
                let mut j = job("tf", json!({"cpu": "1"}));
                j["kind"] = json!("tensorflow");
                j["scheduleType"] = json!("backfill");
                j["tasks"] = json!([{"name": "ps", "replicas": 1, "image": "x", "resources": {}}, {"name": "worker", "replicas": 1, "image": "x", "resources": {}}]);
                j
            },
            422,
            "backfill_kind_unsupported",
        ),
        (
            {
                let mut j = job("many", json!({"cpu": "1"}));
                j["tasks"][0]["replicas"] = json!(1001);
                j
            },
            422,
            "validation_failed",
        ),
        (
            {
                let mut j = job("extra", json!({"cpu": "1"}));
                j["surprise"] = json!(1);
                j
            },
            422,
            "validation_failed",
        ),
    ];
    for (body, status, want) in cases {
        let (got, answer) = call(&app, "POST", "/api/v1/jobs", &carol, Some(body.clone())).await;
        assert_eq!((got.as_u16(), code(&answer)), (status, want), "{body}: {answer}");
    }
    // The offending field is named.
    let (_, answer) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &carol,
        Some(job("neg", json!({"cpu": "-1"}))),
    )
    .await;
    assert_eq!(
        answer["error"]["details"]["fields"][0]["field"],
        "tasks[0].resources.cpu"
    );
    // A private queue.
    let (status, _) = call(
        &app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "private", "open": false})),
    )
    .await;
    assert_eq!(status, 201);
    let mut private = job("p", json!({"cpu": "1"}));
    private["queue"] = json!("private");
    let (status, answer) = call(&app, "POST", "/api/v1/jobs", &carol, Some(private)).await;
    assert_eq!((status.as_u16(), code(&answer)), (403, "queue_forbidden"));
    let (status, answer) = call(&app, "GET", "/api/v1/me/resource-summary?queue=private", &carol, None).await;
    assert_eq!((status.as_u16(), code(&answer)), (403, "queue_forbidden"));
    let (status, answer) = call(
        &app,
        "POST",
        "/api/v1/me/resource-limit-check",
        &carol,
        Some(json!({"queue": "private", "resources": {"cpu": "1"}})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&answer)), (403, "queue_forbidden"));
    let (status, answer) = call(
        &app,
        "POST",
        "/api/v1/me/resource-limit-check",
        &carol,
        Some(json!({"queue": "default", "resources": {"cpu": "-1"}})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&answer)), (422, "validation_failed"));
    // A member may use it; the queue list shows it to members only.
    let (status, _) = call(
        &app,
        "PUT",
        "/api/v1/admin/queues/private",
        &admin,
        Some(json!({"name": "private", "open": false, "members": ["carol"]})),
    )
    .await;
    assert_eq!(status, 200);
    let (_, mine) = call(&app, "GET", "/api/v1/queues", &carol, None).await;
    let names: Vec<&str> = mine
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "private"]);
    let (_, me) = call(&app, "GET", "/api/v1/auth/me", &carol, None).await;
    assert_eq!(me["queues"], json!(["default", "private"]));
    let (status, _) = call(
        &app,
        "PUT",
        "/api/v1/admin/queues/private",
        &admin,
        Some(json!({"name": "private", "open": false, "members": []})),
    )
    .await;
    assert_eq!(status, 200);
    // Hard quota.
    settings(
        &app,
        &admin,
        json!({"queueQuotaEnabled": true, "maxPrequeuedJobsPerUser": 1}),
    )
    .await;
    quota(&app, &admin, "default", json!({"cpu": "8"})).await;
    let (status, answer) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &carol,
        Some(job("big", json!({"cpu": "9"}))),
    )
    .await;
    assert_eq!(
        (status.as_u16(), code(&answer)),
        (422, "quota_request_exceeds_limit"),
        "{answer}"
    );
    // The prequeue cap.
    call(
        &app,
        "POST",
        "/api/v1/jobs",
        &carol,
        Some(job("a", json!({"cpu": "8"}))),
    )
    .await;
    let (_, waiting) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &carol,
        Some(job("b", json!({"cpu": "8"}))),
    )
    .await;
    assert_eq!(waiting["admission"]["decision"], "prequeued");
    let (status, answer) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &carol,
        Some(job("c", json!({"cpu": "8"}))),
    )
    .await;
    assert_eq!((status.as_u16(), code(&answer)), (429, "prequeue_full"));
    let (_, list) = call(&app, "GET", "/api/v1/jobs", &carol, None).await;
    assert_eq!(list["total"], 2, "only the two accepted jobs were written: {list}");
    assert_eq!(count(&app, "jobs").await, 2);
    assert_eq!(
        count(&app, "job_events").await,
        4,
        "a: submitted, activated; b: submitted, prequeued"
    );
    // Step 1 comes before step 2: a bad quantity in an unknown queue is 422, not 404.
    let mut both = job("neg", json!({"cpu": "-1"}));
    both["queue"] = json!("nope");
    let (status, answer) = call(&app, "POST", "/api/v1/jobs", &carol, Some(both)).await;
    assert_eq!((status.as_u16(), code(&answer)), (422, "validation_failed"));
}

async fn count(app: &TestApp, table: &str) -> i64 {
    use sea_orm::{ConnectionTrait, Statement};
    let db = &app.state.db;
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            format!("SELECT COUNT(*) AS n FROM {table}"),
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get::<i64>("", "n").unwrap()
}

both!(refusals, every_refusal_answers_its_code_and_writes_nothing);

async fn a_sub_queue_capacity_holds_jobs_of_every_user_below_it(app: TestApp) {
    let admin = app.admin_token().await;
    let dave = app.user_token("dave").await;
    let erin = app.user_token("erin").await;
    for (name, parent, capacity) in [
        ("nlp", None, json!({"nvidia.com/a100": "4"})),
        ("nlp-llm", Some("nlp"), json!({"nvidia.com/a100": "4"})),
        ("nlp-mt", Some("nlp"), json!({"nvidia.com/a100": "2"})),
    ] {
        let (status, body) = call(
            &app,
            "POST",
            "/api/v1/admin/queues",
            &admin,
            Some(json!({"name": name, "open": true, "parent": parent, "capacity": capacity})),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    // Tree errors.
    let (status, body) = call(
        &app,
        "PUT",
        "/api/v1/admin/queues/nlp",
        &admin,
        Some(json!({"name": "nlp", "open": true, "parent": "nlp-llm"})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (422, "queue_cycle"));
    let (status, body) = call(
        &app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "x", "open": true, "parent": "nlp", "capacity": {"nvidia.com/a100": "5"}})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (422, "capacity_exceeds_parent"));
    let (status, body) = call(
        &app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "y", "open": true, "parent": "ghost"})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (422, "parent_not_found"));
    let (status, body) = call(&app, "DELETE", "/api/v1/admin/queues/nlp", &admin, None).await;
    assert_eq!((status.as_u16(), code(&body)), (409, "queue_has_children"));
    let (status, body) = call(
        &app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "nlp", "open": true})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (409, "queue_exists"));
    let (status, body) = call(
        &app,
        "PUT",
        "/api/v1/admin/queues/ghost",
        &admin,
        Some(json!({"name": "ghost", "open": true})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (404, "queue_not_found"));
    let (status, body) = call(&app, "DELETE", "/api/v1/admin/queues/ghost", &admin, None).await;
    assert_eq!((status.as_u16(), code(&body)), (404, "queue_not_found"));
    let (status, body) = call(
        &app,
        "PUT",
        "/api/v1/admin/queues/nlp",
        &admin,
        Some(json!({"name": "other", "open": true})),
    )
    .await;
    assert_eq!(
        (status.as_u16(), code(&body)),
        (422, "validation_failed"),
        "queues are not renamed"
    );
    let (status, body) = call(
        &app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "members", "open": false, "members": ["nobody"]})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (422, "validation_failed"));
    assert_eq!(body["error"]["details"]["fields"][0]["field"], "members[0]");
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    let mut a = job("a", json!({"nvidia.com/a100": "3"}));
    a["queue"] = json!("nlp-llm");
    let (_, first) = call(&app, "POST", "/api/v1/jobs", &dave, Some(a)).await;
    assert_eq!(first["admission"]["decision"], "activated", "{first}");
    let mut b = job("b", json!({"nvidia.com/a100": "2"}));
    b["queue"] = json!("nlp-mt");
    let (_, second) = call(&app, "POST", "/api/v1/jobs", &erin, Some(b)).await;
    assert_eq!(second["admission"]["decision"], "prequeued", "{second}");
    let reason = &second["admission"]["reasons"][0];
    assert_eq!(reason["code"], "queue_capacity");
    assert_eq!(reason["details"]["queue"], "nlp");
    // The user's queue list shows capacity and usage at every level.
    let (_, queues) = call(&app, "GET", "/api/v1/queues", &erin, None).await;
    let nlp = queues.as_array().unwrap().iter().find(|q| q["name"] == "nlp").unwrap();
    assert_eq!(nlp["used"]["nvidia.com/a100"], "3");
    // The summary names the ancestor that holds the job.
    let (_, summary) = call(&app, "GET", "/api/v1/me/resource-summary?queue=nlp-mt", &erin, None).await;
    let levels: Vec<&str> = summary["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["queue"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["nlp-mt", "nlp"]);
    // A queue with unfinished jobs stays.
    let (status, body) = call(&app, "DELETE", "/api/v1/admin/queues/nlp-llm", &admin, None).await;
    assert_eq!((status.as_u16(), code(&body)), (409, "queue_in_use"));
}
both!(queue_tree, a_sub_queue_capacity_holds_jobs_of_every_user_below_it);

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

async fn the_same_idempotency_key_answers_the_first_answer_and_creates_nothing(app: TestApp) {
    let ivan = app.user_token("ivan").await;
    let submit = |key: &'static str, body: Value| {
        let req = app
            .client
            .post(app.url("/api/v1/jobs"))
            .bearer_auth(&ivan)
            .header("Idempotency-Key", key)
            .json(&body);
        async move {
            let res = req.send().await.unwrap();
            (res.status(), res.json::<Value>().await.unwrap())
        }
    };
    let body = job("once", json!({"cpu": "1"}));
    let (s1, first) = submit("key-1", body.clone()).await;
    let (s2, second) = submit("key-1", body.clone()).await;
    assert_eq!((s1, s2), (StatusCode::CREATED, StatusCode::CREATED));
    // The same job (as it stands now: the cluster may have started it) and the same admission.
    assert_eq!(job_id(&second), job_id(&first));
    assert_eq!(second["admission"], first["admission"]);
    assert_eq!(second["job"]["submittedAt"], first["job"]["submittedAt"]);
    let (s3, reused) = submit("key-1", job("other", json!({"cpu": "1"}))).await;
    assert_eq!((s3.as_u16(), code(&reused)), (422, "idempotency_key_reused"));
    let (_, list) = call(&app, "GET", "/api/v1/jobs", &ivan, None).await;
    assert_eq!(list["total"], 1);
    // Concurrent retries with one key create one job.
    let futures: Vec<_> = (0..8)
        .map(|_| submit("key-2", job("race", json!({"cpu": "1"}))))
        .collect();
    let answers = futures::future::join_all(futures).await;
    let ids: std::collections::BTreeSet<i64> = answers
        .iter()
        .map(|(s, a)| {
            assert_eq!(*s, StatusCode::CREATED, "{a}");
            a["job"]["id"].as_i64().unwrap()
        })
        .collect();
    assert_eq!(ids.len(), 1);
    let (_, list) = call(&app, "GET", "/api/v1/jobs", &ivan, None).await;
    assert_eq!(list["total"], 2);
    // A key last used more than 24 h ago is free again, even with another body.
    execute(
        &app,
        "UPDATE idempotency_keys SET created_at = '2000-01-01 00:00:00+00:00'",
    )
    .await;
    let (status, again) = submit("key-1", job("later", json!({"cpu": "1"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{again}");
    assert_ne!(job_id(&again), job_id(&first));
    let (_, list) = call(&app, "GET", "/api/v1/jobs", &ivan, None).await;
    assert_eq!(list["total"], 3);
}

async fn execute(app: &TestApp, sql: &str) {
    use sea_orm::ConnectionTrait;
    app.state.db.execute_unprepared(sql).await.unwrap();
}
both!(
    idempotency,
    the_same_idempotency_key_answers_the_first_answer_and_creates_nothing
);

async fn concurrent_submissions_never_exceed_a_quota_or_a_shared_capacity(app: TestApp) {
    let admin = app.admin_token().await;
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&app, &admin, "default", json!({"cpu": "4"})).await;
    let judy = app.user_token("judy").await;
    let futures: Vec<_> = (0..12)
        .map(|i| {
            call(
                &app,
                "POST",
                "/api/v1/jobs",
                &judy,
                Some(job(&format!("j{i}"), json!({"cpu": "1"}))),
            )
        })
        .collect();
    let answers = futures::future::join_all(futures).await;
    let activated = answers
        .iter()
        .filter(|(_, a)| a["admission"]["decision"] == "activated")
        .count();
    assert_eq!(activated, 4, "exactly the quota's worth is activated");
    // Sibling queues under one capped parent, different users.
    for (name, parent, capacity) in [
        ("team", None, Some(json!({"cpu": "6"}))),
        ("team-a", Some("team"), None),
        ("team-b", Some("team"), None),
    ] {
        let (status, body) = call(
            &app,
            "POST",
            "/api/v1/admin/queues",
            &admin,
            Some(json!({"name": name, "open": true, "parent": parent, "capacity": capacity})),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let app = &app;
    let mut tokens = Vec::new();
    for i in 0..6 {
        tokens.push(app.user_token(&format!("member{i}")).await);
    }
    let futures: Vec<_> = tokens
        .iter()
        .enumerate()
        .flat_map(|(i, t)| {
            (0..2).map(move |k| {
                let mut j = job(&format!("m{i}-{k}"), json!({"cpu": "1"}));
                j["queue"] = json!(if i % 2 == 0 { "team-a" } else { "team-b" });
                (t.clone(), j)
            })
        })
        .map(|(t, j)| async move { call(app, "POST", "/api/v1/jobs", &t, Some(j)).await })
        .collect();
    let answers = futures::future::join_all(futures).await;
    let activated = answers
        .iter()
        .filter(|(_, a)| a["admission"]["decision"] == "activated")
        .count();
    assert_eq!(activated, 6, "exactly the parent's capacity is activated");
}
both!(
    concurrency,
    concurrent_submissions_never_exceed_a_quota_or_a_shared_capacity
);

async fn settings_are_validated_as_a_whole_and_applied_at_once(app: TestApp) {
    let admin = app.admin_token().await;
    let kim = app.user_token("kim").await;
    let (_, config) = call(&app, "GET", "/api/v1/admin/prequeue-config", &admin, None).await;
    assert_eq!(config["activationOrder"], "fcfs");
    assert_eq!(config["preemptionGracePeriodSeconds"], 30);
    let mut bad = config.clone();
    bad["normalJobWaitingToleranceSeconds"] = json!(0);
    bad["prequeueCandidateSize"] = json!(-5);
    let (status, body) = call(&app, "PUT", "/api/v1/admin/prequeue-config", &admin, Some(bad)).await;
    assert_eq!(status, 422);
    let fields: Vec<&str> = body["error"]["details"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["normalJobWaitingToleranceSeconds", "prequeueCandidateSize"]);
    let (_, unchanged) = call(&app, "GET", "/api/v1/admin/prequeue-config", &admin, None).await;
    assert_eq!(unchanged, config);
    let mut partial = config.clone();
    partial.as_object_mut().unwrap().remove("activationOrder");
    let (status, _) = call(&app, "PUT", "/api/v1/admin/prequeue-config", &admin, Some(partial)).await;
    assert_eq!(status, 422, "PUT takes every field");
    let (_, status_before) = call(&app, "GET", "/api/v1/prequeue/status", &kim, None).await;
    assert_eq!(
        status_before,
        json!({"backfillEnabled": false, "queueQuotaEnabled": false})
    );
    settings(
        &app,
        &admin,
        json!({"backfillEnabled": true, "activationOrder": "fairShare"}),
    )
    .await;
    let (_, status_after) = call(&app, "GET", "/api/v1/prequeue/status", &kim, None).await;
    assert_eq!(status_after["backfillEnabled"], true);
    let mut backfill = job("elastic", json!({"cpu": "1"}));
    backfill["scheduleType"] = json!("backfill");
    let (status, body) = call(&app, "POST", "/api/v1/jobs", &kim, Some(backfill)).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["job"]["scheduleType"], "backfill");
    assert_eq!(body["job"]["waitingToleranceSeconds"], Value::Null);
    // Quotas: one rule per queue, validated.
    quota(&app, &admin, "default", json!({"cpu": "2"})).await;
    let (status, body) = call(
        &app,
        "POST",
        "/api/v1/admin/queue-quotas",
        &admin,
        Some(json!({"queue": "default", "limits": {"cpu": "1"}})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (409, "quota_exists"));
    let (status, body) = call(
        &app,
        "POST",
        "/api/v1/admin/queue-quotas",
        &admin,
        Some(json!({"queue": "nope", "limits": {"cpu": "1"}})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (404, "queue_not_found"));
    let (status, body) = call(
        &app,
        "PUT",
        "/api/v1/admin/queue-quotas/999",
        &admin,
        Some(json!({"queue": "default", "limits": {"cpu": "1"}})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (404, "quota_not_found"));
    let (_, rules) = call(&app, "GET", "/api/v1/admin/queue-quotas", &admin, None).await;
    let id = rules[0]["id"].as_i64().unwrap();
    let (status, body) = call(
        &app,
        "PUT",
        &format!("/api/v1/admin/queue-quotas/{id}"),
        &admin,
        Some(json!({"queue": "default", "limits": {"cpu": "-1"}, "maxActiveJobs": 0})),
    )
    .await;
    assert_eq!(status, 422);
    let fields: Vec<&str> = body["error"]["details"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["limits.cpu", "maxActiveJobs"]);
    let (status, _) = call(
        &app,
        "DELETE",
        &format!("/api/v1/admin/queue-quotas/{id}"),
        &admin,
        None,
    )
    .await;
    assert_eq!(status, 204);
}
both!(
    settings_and_quotas,
    settings_are_validated_as_a_whole_and_applied_at_once
);

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

/// Reads SSE events from a stream until `want` events with an id above `after` arrived (a
/// PostgreSQL stream resumed after `after` may first repeat unsettled events: clients dedupe).
async fn read_events_after(res: reqwest::Response, want: usize, after: i64) -> Vec<(i64, Value)> {
    let mut res = res;
    let mut text = String::new();
    let mut events = Vec::new();
    while events.len() < want {
        let chunk = tokio::time::timeout(Duration::from_secs(20), res.chunk())
            .await
            .expect("an event within 20 s")
            .expect("bytes")
            .expect("the stream stays open");
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let id = block
                .lines()
                .find_map(|l| l.strip_prefix("id:"))
                .map(|v| v.trim().parse::<i64>().unwrap());
            let data = block
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .map(|v| serde_json::from_str(v.trim()).unwrap());
            if let (Some(id), Some(data)) = (id, data)
                && id > after
                && !events.iter().any(|(seen, _)| *seen == id)
            {
                events.push((id, data));
            }
        }
    }
    events
}

async fn the_event_stream_resumes_after_a_reconnect_without_losing_an_event(app: TestApp) {
    let mia = app.user_token("mia").await;
    let noah = app.user_token("noah").await;
    let open = |last: Option<i64>| {
        let mut req = app.client.get(app.url("/api/v1/jobs/events/stream")).bearer_auth(&mia);
        if let Some(last) = last {
            req = req.header("Last-Event-ID", last.to_string());
        }
        req.send()
    };
    let res = open(None).await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let (_, one) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &mia,
        Some(job("one", json!({"cpu": "1"}))),
    )
    .await;
    let (_, theirs) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &noah,
        Some(job("not-mine", json!({"cpu": "1"}))),
    )
    .await;
    let (_, two) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &mia,
        Some(job("two", json!({"cpu": "1"}))),
    )
    .await;
    let (one, theirs, two) = (job_id(&one), job_id(&theirs), job_id(&two));
    // Noah's events were written between Mia's: a leak would show them third and fourth.
    let first = read_events_after(res, 4, 0).await;
    let jobs: Vec<i64> = first.iter().map(|(_, e)| e["jobId"].as_i64().unwrap()).collect();
    assert_eq!(jobs, [one, one, two, two], "only the caller's events, in order");
    assert!(!jobs.contains(&theirs));
    assert_eq!(
        first
            .iter()
            .map(|(_, e)| e["kind"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["submitted", "activated", "submitted", "activated"]
    );
    let last = first[1].0;
    // Reconnect after the second event: what followed it arrives again, then what came later.
    call(
        &app,
        "POST",
        "/api/v1/jobs",
        &mia,
        Some(job("three", json!({"cpu": "1"}))),
    )
    .await;
    let res = open(Some(last)).await.unwrap();
    let resumed = read_events_after(res, 4, last).await;
    assert!(resumed.iter().all(|(id, _)| *id > last));
    assert_eq!(resumed[0].0, first[2].0, "resumes right after Last-Event-ID");
    assert_eq!(resumed[1].0, first[3].0);
    assert!(resumed[2..].iter().all(|(_, e)| e["jobId"].as_i64() != Some(two)));
}

fn job_id(answer: &Value) -> i64 {
    answer["job"]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("no job in {answer}"))
}

async fn a_session_that_ends_ends_its_stream(app: TestApp) {
    let quinn = app.user_token("quinn").await;
    let mut res = app
        .client
        .get(app.url("/api/v1/jobs/events/stream"))
        .bearer_auth(&quinn)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let (status, _) = call(&app, "POST", "/api/v1/auth/logout", &quinn, None).await;
    assert_eq!(status, 204);
    // The stream ends within its re-authorization period (5 s) and a poll; heartbeats are 15 s
    // apart, so an open stream would still be silent at 12 s.
    let end = tokio::time::timeout(Duration::from_secs(12), async {
        while let Ok(Some(_)) = res.chunk().await {}
    })
    .await;
    assert!(end.is_ok(), "the stream of a logged-out session ended");
}
both!(stream_ends_with_session, a_session_that_ends_ends_its_stream);

both!(
    event_stream,
    the_event_stream_resumes_after_a_reconnect_without_losing_an_event
);

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
    assert_eq!(checked, ["delete /api/v1/jobs/{id}", "get /api/v1/jobs/{id}"]);
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

async fn the_default_queue_stays_an_open_root(app: TestApp) {
    let admin = app.admin_token().await;
    for body in [
        json!({"name": "default", "open": false}),
        json!({"name": "default", "open": true, "parent": "other"}),
    ] {
        let (status, answer) = call(&app, "PUT", "/api/v1/admin/queues/default", &admin, Some(body)).await;
        assert_eq!((status.as_u16(), code(&answer)), (422, "validation_failed"), "{answer}");
    }
    let (status, answer) = call(&app, "DELETE", "/api/v1/admin/queues/default", &admin, None).await;
    assert_eq!((status.as_u16(), code(&answer)), (409, "queue_protected"));
    let (status, answer) = call(
        &app,
        "PUT",
        "/api/v1/admin/queues/default",
        &admin,
        Some(json!({"name": "default", "displayName": "Everyone", "open": true})),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["displayName"], "Everyone");
}
both!(default_queue, the_default_queue_stays_an_open_root);

async fn a_held_job_starts_when_the_job_holding_its_quota_finishes(app: TestApp) {
    let admin = app.admin_token().await;
    let sara = app.user_token("sara").await;
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&app, &admin, "default", json!({"cpu": "2"})).await;
    let mut short = job("short", json!({"cpu": "2"}));
    short["tasks"][0]["command"] = json!(["sleep", "1"]);
    let (_, first) = call(&app, "POST", "/api/v1/jobs", &sara, Some(short)).await;
    assert_eq!(first["admission"]["decision"], "activated");
    let (_, held) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &sara,
        Some(job("held", json!({"cpu": "2"}))),
    )
    .await;
    assert_eq!(held["admission"]["decision"], "prequeued");
    let (first, held) = (job_id(&first), job_id(&held));
    // The simulated cluster runs the first job for 1 s; its end is synced back, frees the
    // quota and wakes the watcher, which activates the held job. Polled, not timed.
    let mut phases = (String::new(), String::new());
    for _ in 0..100 {
        let (_, a) = call(&app, "GET", &format!("/api/v1/jobs/{first}"), &sara, None).await;
        let (_, b) = call(&app, "GET", &format!("/api/v1/jobs/{held}"), &sara, None).await;
        phases = (
            a["phase"].as_str().unwrap().to_string(),
            b["phase"].as_str().unwrap().to_string(),
        );
        if phases.1 != "Prequeue" {
            let kinds: Vec<&str> = b["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["kind"].as_str().unwrap())
                .collect();
            assert_eq!(kinds, ["submitted", "prequeued", "activated"]);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(phases.0, "Completed", "the first job's end was synced back");
    assert_ne!(
        phases.1, "Prequeue",
        "the held job was activated once the quota allowed"
    );
}
both!(
    watcher_activation,
    a_held_job_starts_when_the_job_holding_its_quota_finishes
);

/// The metrics recorder is one per process: this test proves something under `cargo nextest`
/// (a process per test, as `./anteroom.sh test` runs it), where no other app records.
#[tokio::test]
async fn the_watcher_reports_its_rounds_and_the_prequeue_length_on_metrics() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let tina = app.user_token("tina").await;
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    quota(&app, &admin, "default", json!({"cpu": "1"})).await;
    call(&app, "POST", "/api/v1/jobs", &tina, Some(job("a", json!({"cpu": "1"})))).await;
    call(&app, "POST", "/api/v1/jobs", &tina, Some(job("b", json!({"cpu": "1"})))).await;
    // The prequeued submission wakes the watcher; its round records the metrics. Polled.
    let mut text = String::new();
    for _ in 0..50 {
        text = app
            .client
            .get(app.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if text.contains("anteroom_prequeue_round_seconds")
            && text.contains("anteroom_prequeue_jobs{queue=\"default\"}")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(text.contains("anteroom_prequeue_round_seconds"), "{text}");
    assert!(text.contains("anteroom_prequeue_jobs{queue=\"default\"}"), "{text}");
    assert!(text.contains("anteroom_prequeue_activations_total"), "{text}");
}

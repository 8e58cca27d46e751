//! What admins set over HTTP: the queue tree (capacities, members, tree errors, `default`),
//! queue quotas and the prequeue settings. Each scenario runs on SQLite and on PostgreSQL.

use anteroom_tests::api::*;
use anteroom_tests::{TestApp, both};
use serde_json::{Value, json};

async fn a_sub_queue_capacity_holds_jobs_of_every_user_below_it(app: TestApp) {
    let admin = app.admin_token().await;
    let dave = app.user_token("dave").await;
    let erin = app.user_token("erin").await;
    for (name, parent, capacity) in [
        ("nlp", None, json!({"nvidia.com/a100": "4"})),
        ("nlp-llm", Some("nlp"), json!({"nvidia.com/a100": "4"})),
        ("nlp-mt", Some("nlp"), json!({"nvidia.com/a100": "2"})),
    ] {
        queue(
            &app,
            &admin,
            json!({"name": name, "open": true, "parent": parent, "capacity": capacity}),
        )
        .await;
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
    // …and how long each line is: erin's job waits in nlp-mt itself, none in nlp.
    let waiting =
        |name: &str| queues.as_array().unwrap().iter().find(|q| q["name"] == name).unwrap()["waiting"].clone();
    assert_eq!(
        (waiting("nlp-mt"), waiting("nlp"), waiting("nlp-llm")),
        (json!(1), json!(0), json!(0))
    );
    // What each user uses in each queue, for the quota table: admins only.
    let (status, usage) = call(&app, "GET", "/api/v1/admin/queue-usage", &admin, None).await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(
        usage,
        // (the CPU and memory are the kind's default requests, added at submission)
        json!([{"queue": "nlp-llm", "user": "dave", "used": {"cpu": "1", "memory": "4Gi", "nvidia.com/a100": "3"}, "activeJobs": 1}])
    );
    let (status, body) = call(&app, "GET", "/api/v1/admin/queue-usage", &erin, None).await;
    assert_eq!((status.as_u16(), code(&body)), (403, "forbidden"));
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
    // A client of the spec's first table (ten fields) saves, and every setting it does not
    // know keeps its stored value, never a default.
    settings(
        &app,
        &admin,
        json!({"maxUnfinishedJobsPerUser": 77, "requeueByDefault": true, "maxRequeues": 5, "timeAwareBackfill": true,
               "preemptionPlanWindowSeconds": 600}),
    )
    .await;
    let (_, newer) = call(&app, "GET", "/api/v1/admin/prequeue-config", &admin, None).await;
    let ten = json!({
        "backfillEnabled": false, "queueQuotaEnabled": false, "normalJobWaitingToleranceSeconds": 240,
        "activateTickerIntervalSeconds": 5, "maxTotalActivationsPerRound": 500, "prequeueCandidateSize": 10,
        "backfillMinRuntimeSeconds": 0, "maxPrequeuedJobsPerUser": 100, "activationOrder": "fcfs",
        "preemptionGracePeriodSeconds": 30
    });
    let (status, body) = call(&app, "PUT", "/api/v1/admin/prequeue-config", &admin, Some(ten)).await;
    assert_eq!(status, 200, "the spec's ten fields alone save: {body}");
    let mut expected = newer.clone();
    expected["normalJobWaitingToleranceSeconds"] = json!(240);
    assert_eq!(body, expected, "only what the body named changed");
    for kept in [
        "maxUnfinishedJobsPerUser",
        "requeueByDefault",
        "maxRequeues",
        "timeAwareBackfill",
        "preemptionPlanWindowSeconds",
        "defaultRequests",
    ] {
        assert_eq!(body[kept], newer[kept], "{kept}");
    }
    // Two admins: each read a version; the second to save on an old one is refused, and nothing
    // of it is stored.
    const CONFIG: &str = "/api/v1/admin/prequeue-config";
    let (first_tag, _) = read_tagged(&app, CONFIG, &admin).await;
    let (second_tag, _) = read_tagged(&app, CONFIG, &admin).await;
    assert_eq!(first_tag, second_tag, "the same settings, the same version");
    let (status, new_tag, _) = put_if(
        &app,
        CONFIG,
        &admin,
        Some(&first_tag),
        json!({"prequeueCandidateSize": 11}),
    )
    .await;
    assert_eq!(status, 200);
    assert_ne!(new_tag.as_deref(), Some(first_tag.as_str()), "a new version");
    let (status, _, body) = put_if(
        &app,
        CONFIG,
        &admin,
        Some(&second_tag),
        json!({"prequeueCandidateSize": 12}),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (412, "precondition_failed"), "{body}");
    let (now, after) = read_tagged(&app, CONFIG, &admin).await;
    assert_eq!(Some(now), new_tag, "the refused change stored nothing");
    assert_eq!(after["prequeueCandidateSize"], 11);
    let (status, _, _) = put_if(&app, CONFIG, &admin, Some("*"), json!({"prequeueCandidateSize": 10})).await;
    assert_eq!(status, 200, "If-Match: * takes whatever is stored");
    let (_, status_before) = call(&app, "GET", "/api/v1/prequeue/status", &kim, None).await;
    assert_eq!(
        (&status_before["backfillEnabled"], &status_before["queueQuotaEnabled"]),
        (&json!(false), &json!(false))
    );
    assert_eq!(
        status_before["defaultRequests"]["custom"],
        json!({"cpu": "1", "memory": "4Gi"})
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

//! What a submission may not do, over HTTP: every refusal with its code and nothing written,
//! concurrent submissions never slipping under a quota or a shared capacity, and idempotent
//! retries. Each scenario runs on SQLite and on PostgreSQL (`both!`).

use anteroom_tests::api::*;
use anteroom_tests::{TestApp, both};
use reqwest::StatusCode;
use serde_json::{Value, json};

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
    // Each field says what is wrong as a code, with the values its text names.
    let mut bad = job("Upper", json!({"cpu": "1"}));
    bad["tasks"][0]["replicas"] = json!(0);
    bad["queue"] = json!("");
    let (_, answer) = call(&app, "POST", "/api/v1/jobs", &carol, Some(bad)).await;
    let fields: Vec<(String, String, serde_json::Value)> = answer["error"]["details"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["field"].as_str().unwrap().to_owned(),
                f["code"].as_str().unwrap().to_owned(),
                f["params"].clone(),
            )
        })
        .collect();
    assert_eq!(
        fields,
        [
            ("name".into(), "nameCharacters".into(), serde_json::Value::Null),
            ("queue".into(), "lengthBetween".into(), json!({"min": 1, "max": 63})),
            (
                "tasks[0].replicas".into(),
                "between".into(),
                json!({"min": 1, "max": 1000})
            ),
        ],
        "{answer}"
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
        count(&app, "job_events").await - count_where(&app, "job_events", "kind = 'started'").await,
        4,
        "a: submitted, activated (and started once its pods run); b: submitted, prequeued"
    );
    // Step 1 comes before step 2: a bad quantity in an unknown queue is 422, not 404.
    let mut both = job("neg", json!({"cpu": "-1"}));
    both["queue"] = json!("nope");
    let (status, answer) = call(&app, "POST", "/api/v1/jobs", &carol, Some(both)).await;
    assert_eq!((status.as_u16(), code(&answer)), (422, "validation_failed"));
}
both!(refusals, every_refusal_answers_its_code_and_writes_nothing);

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
            let replayed = res
                .headers()
                .get("idempotent-replayed")
                .map(|v| v.to_str().unwrap().to_owned());
            (res.status(), res.json::<Value>().await.unwrap(), replayed)
        }
    };
    let body = job("once", json!({"cpu": "1"}));
    let (s1, first, r1) = submit("key-1", body.clone()).await;
    let (s2, second, r2) = submit("key-1", body.clone()).await;
    assert_eq!((s1, s2), (StatusCode::CREATED, StatusCode::CREATED));
    // The repeat says it is one (`Idempotent-Replayed`), the first does not.
    assert_eq!((r1, r2.as_deref()), (None, Some("true")));
    // The same job (as it stands now: the cluster may have started it) and the same admission.
    assert_eq!(job_id(&second), job_id(&first));
    assert_eq!(second["admission"], first["admission"]);
    assert_eq!(second["job"]["submittedAt"], first["job"]["submittedAt"]);
    let (s3, reused, _) = submit("key-1", job("other", json!({"cpu": "1"}))).await;
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
        .map(|(s, a, _)| {
            assert_eq!(*s, StatusCode::CREATED, "{a}");
            a["job"]["id"].as_i64().unwrap()
        })
        .collect();
    assert_eq!(ids.len(), 1);
    let created = answers.iter().filter(|(_, _, replayed)| replayed.is_none()).count();
    assert_eq!(
        created, 1,
        "one of the racing retries created the job, the others say they repeat it"
    );
    let (_, list) = call(&app, "GET", "/api/v1/jobs", &ivan, None).await;
    assert_eq!(list["total"], 2);
    // A key last used more than 24 h ago is free again, even with another body.
    execute(
        &app,
        "UPDATE idempotency_keys SET created_at = '2000-01-01 00:00:00+00:00'",
    )
    .await;
    let (status, again, _) = submit("key-1", job("later", json!({"cpu": "1"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{again}");
    assert_ne!(job_id(&again), job_id(&first));
    let (_, list) = call(&app, "GET", "/api/v1/jobs", &ivan, None).await;
    assert_eq!(list["total"], 3);
}
both!(
    concurrency,
    concurrent_submissions_never_exceed_a_quota_or_a_shared_capacity
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
        queue(
            &app,
            &admin,
            json!({"name": name, "open": true, "parent": parent, "capacity": capacity}),
        )
        .await;
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
    idempotency,
    the_same_idempotency_key_answers_the_first_answer_and_creates_nothing
);

/// `allowed_images`: a task whose image starts with none of the prefixes is refused, by a submit
/// and by a preview alike, with `image_not_allowed` naming that task's image; nothing is
/// written. An image under a prefix passes; without the setting every image does.
#[tokio::test]
async fn an_image_outside_the_allowed_prefixes_is_refused_naming_the_task_and_nothing_is_written() {
    let allowed = vec!["registry.example.org/".to_owned(), "docker.io/pytorch/".to_owned()];
    let app = TestApp::builder()
        .configure(move |c| c.allowed_images = allowed)
        .start()
        .await;
    let dave = app.user_token("dave").await;
    let task =
        |name: &str, image: &str| json!({"name": name, "replicas": 1, "image": image, "resources": {"cpu": "1"}});
    let body = json!({
        "name": "train",
        "kind": "pytorch",
        "queue": "default",
        "tasks": [
            task("master", "registry.example.org/ml/train:1"),
            task("worker", "registry.example.org.evil.com/ml/train:1"),
        ],
    });
    for path in ["/api/v1/jobs", "/api/v1/jobs/preview"] {
        let (status, answer) = call(&app, "POST", path, &dave, Some(body.clone())).await;
        assert_eq!(
            (status.as_u16(), code(&answer)),
            (422, "image_not_allowed"),
            "{path}: {answer}"
        );
        let fields = &answer["error"]["details"]["fields"];
        assert_eq!(fields.as_array().map(Vec::len), Some(1), "{path}: {answer}");
        assert_eq!(fields[0]["field"], "tasks[1].image", "{path}: {answer}");
        assert!(
            fields[0]["message"]
                .as_str()
                .is_some_and(|m| m.contains("registry.example.org/, docker.io/pytorch/")),
            "{path}: {answer}"
        );
        // And as a code with its values, for a client to say in its own language.
        assert_eq!(fields[0]["code"], "imageNotAllowed", "{path}: {answer}");
        assert_eq!(
            fields[0]["params"]["prefixes"], "registry.example.org/, docker.io/pytorch/",
            "{path}: {answer}"
        );
    }
    // The helper's `busybox` is under no prefix either.
    let (status, answer) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &dave,
        Some(job("plain", json!({"cpu": "1"}))),
    )
    .await;
    assert_eq!((status.as_u16(), code(&answer)), (422, "image_not_allowed"), "{answer}");
    assert_eq!(answer["error"]["details"]["fields"][0]["field"], "tasks[0].image");
    assert_eq!(count(&app, "jobs").await, 0, "a refused job is not written");
    assert_eq!(count(&app, "job_events").await, 0);

    let mut fixed = body.clone();
    fixed["tasks"][1]["image"] = json!("docker.io/pytorch/pytorch:2.4");
    let (status, answer) = call(&app, "POST", "/api/v1/jobs/preview", &dave, Some(fixed.clone())).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    submit_job(&app, &dave, fixed).await;

    // No setting: any image.
    let open = TestApp::builder().start().await;
    let erin = open.user_token("erin").await;
    submit_job(&open, &erin, body).await;
}

//! `ar` on waiting and failed jobs (issue 41, point 4), against the real server: `ar ls` in one
//! request with each job's standing and failure, `ar why`, `ar again`, `ar templates`,
//! `ar submit --template`, `ar pods`, and the default idempotency key (the body and a
//! ten-minute window).

use std::time::Duration;

use anteroom_tests::{TestApp, USER_PASSWORD};
use serde_json::Value;

mod common;

use common::{JOB, jobs_total, user};

/// Requests of one job's endpoints (`/api/v1/jobs/{id}…`) the server counted so far.
async fn per_job_requests(app: &TestApp) -> f64 {
    app.metrics()
        .await
        .lines()
        .filter(|l| l.starts_with("axum_http_requests_total{") && l.contains("endpoint=\"/api/v1/jobs/{id}"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn the_default_key_is_the_body_and_a_ten_minute_window_not_the_file() {
    let app = TestApp::builder().start().await;
    let ar = user(&app, "dee").await;
    let job = ar.file("job.yaml", JOB);
    let at = |time: &str| format!("2026-11-20T{time}Z");
    let first = ar
        .run_at(&at("10:00:00"), &["submit", "-f", &job, "--json"])
        .await
        .ok()
        .json();
    // A retry after a lost answer, minutes later in the same window: the first job.
    let retry = ar
        .run_at(&at("10:04:00"), &["submit", "-f", &job, "--json"])
        .await
        .ok()
        .json();
    assert_eq!(
        (retry["job"]["id"].clone(), retry["replayed"].clone()),
        (first["job"]["id"].clone(), Value::Bool(true))
    );
    // The same unchanged file submitted again later, on purpose: a new job, not the old answer.
    let later = ar
        .run_at(&at("10:11:00"), &["submit", "-f", &job, "--json"])
        .await
        .ok()
        .json();
    assert_ne!(later["job"]["id"], first["job"]["id"], "{later}");
    assert_eq!(later["replayed"], false);
    assert_eq!(jobs_total(&ar).await, 2);
}

#[tokio::test]
async fn ls_and_why_show_standing_and_failure_and_again_templates_and_pods_work() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    anteroom_tests::api::settings(&app, &admin, serde_json::json!({"queueQuotaEnabled": true})).await;
    anteroom_tests::api::queue(
        &app,
        &admin,
        serde_json::json!({"name": "lab", "open": true, "capacity": {"cpu": "2"}}),
    )
    .await;
    let ar = user(&app, "eve").await;
    let lab = |name: &str, limit: u32| {
        let path = ar.file(
            &format!("{name}.yaml"),
            &JOB.replace("queue: default", "queue: lab")
                .replace("cpu: '1'", "cpu: '2'"),
        );
        (path, format!("name={name}"), format!("maxRuntimeSeconds={limit}"))
    };
    let (file, name, limit) = lab("fills", 600);
    let fills = ar
        .run(&["submit", "-f", &file, "--set", &name, "--set", &limit, "-q"])
        .await
        .ok()
        .stdout
        .trim()
        .to_owned();
    let (file, name, limit) = lab("waits", 600);
    let waits = ar
        .run(&["submit", "-f", &file, "--set", &name, "--set", &limit, "-q"])
        .await
        .ok()
        .stdout
        .trim()
        .to_owned();
    let failing = ar.file(
        "failing.yaml",
        &JOB.replace("command: [sleep, '3600']", "command: [exit, '3']")
            .replace("name: resnet", "name: broken"),
    );
    let broken = ar
        .run(&["submit", "-f", &failing, "-q"])
        .await
        .ok()
        .stdout
        .trim()
        .to_owned();
    for _ in 0..100 {
        let list = ar.run(&["ls", "--json"]).await.ok().json();
        let phase_of = |id: &str| {
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|j| j["id"].as_i64().is_some_and(|n| n.to_string() == id))
                .map(|j| j["phase"].clone())
        };
        if phase_of(&broken) == Some(Value::from("Failed")) && phase_of(&fills) == Some(Value::from("Running")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // One request for the whole table: no job's own page is read. (The counter moves with
    // one job's page read: `ar why` reads one.)
    let before = per_job_requests(&app).await;
    ar.run(&["why", &waits]).await.ok();
    let after_why = per_job_requests(&app).await;
    assert!(
        after_why > before,
        "the counter counts a job's page read: {before} → {after_why}"
    );
    let before = after_why;
    let table = ar.run(&["ls"]).await.ok().stdout;
    assert_eq!(per_job_requests(&app).await, before, "ar ls read job pages one by one");
    let header = table.lines().next().unwrap();
    for column in ["POS", "AHEAD", "START", "REASON"] {
        assert!(header.contains(column), "{table}");
    }
    let row = |id: &str| {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("{id}: {table}"))
            .to_owned()
    };
    let waiting = row(&waits);
    assert!(
        waiting.contains("#1") && waiting.contains("queue_capacity"),
        "{waiting}"
    );
    assert!(
        waiting.contains(" in "),
        "a start estimate from the running job's limit: {waiting}"
    );
    assert!(
        row(&broken).contains("broken-main-0") || row(&broken).contains("Error, exit code 3"),
        "{table}"
    );
    assert!(row(&broken).contains("exit code 3"), "the failure's reason: {table}");

    let why = ar.run(&["why", &waits]).await.ok().stdout;
    assert!(why.contains("Position 1 in queue lab (0 ahead)"), "{why}");
    assert!(why.contains("Likely start:"), "{why}");
    let why = ar.run(&["why", &broken]).await.ok().stdout;
    assert!(why.contains("Failed: ") && why.contains("exit code 3"), "{why}");

    // Run the failed job again with its command changed: a new job, its body as asked.
    // (At a fixed time: the same command again is the same job only within one window.)
    let at = "2026-11-28T10:01:00Z";
    let again = ar
        .run_at(at, &["again", &broken, "--set", "tasks.0.command=[sleep, '60']", "-q"])
        .await
        .ok()
        .stdout
        .trim()
        .to_owned();
    assert_ne!(again, broken);
    let new = ar.run(&["ls", "--json"]).await.ok().json();
    let new = new["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"].as_i64().is_some_and(|n| n.to_string() == again))
        .unwrap()
        .clone();
    assert_eq!(new["tasks"][0]["command"], serde_json::json!(["sleep", "60"]), "{new}");
    assert_eq!(new["name"], "broken-r2");
    // The same command again at once: the same new job.
    let repeat = ar
        .run_at(at, &["again", &broken, "--set", "tasks.0.command=[sleep, '60']", "-q"])
        .await
        .ok();
    assert_eq!(repeat.stdout.trim(), again, "{repeat:?}");

    // Templates: listed, and submitted by name.
    let (status, _) = anteroom_tests::api::call(
        &app,
        "POST",
        "/api/v1/templates",
        &app.token("eve", USER_PASSWORD).await,
        Some(serde_json::json!({"name": "small", "description": "one CPU",
            "body": {"kind": "custom", "queue": "default", "tasks": [{"name": "main", "replicas": 1,
                "image": "busybox", "command": ["sleep", "30"], "resources": {"cpu": "1", "memory": "1Gi"}}]}})),
    )
    .await;
    assert_eq!(status, 201);
    let listed = ar.run(&["templates"]).await.ok().stdout;
    assert!(listed.contains("small") && listed.contains("one CPU"), "{listed}");
    let from = ar.run(&["submit", "--template", "small", "--json"]).await.ok().json();
    assert_eq!(
        (
            from["job"]["name"].as_str(),
            from["job"]["tasks"][0]["command"][1].as_str()
        ),
        (Some("small"), Some("30"))
    );
    let unknown = ar.run(&["submit", "--template", "nothing"]).await;
    assert_eq!(unknown.code, 2, "{unknown:?}");

    // Pods of the running job.
    let pods = ar.run(&["pods", &fills]).await.ok().stdout;
    assert!(
        pods.starts_with("POD") && pods.contains(&format!("ar-{fills}-main-0")),
        "{pods}"
    );
}

//! `anteroom backup` and `anteroom restore` (SQLite): a backup taken while the server runs and
//! keeps writing, restored into another data directory, gives the same API answers; a restore
//! is refused while a server runs, over a file that is not an Anteroom database, and a backup
//! never overwrites a file.

use anteroom::store::backup::{BackupError, backup, restore};
use anteroom_tests::TestApp;
use anteroom_tests::api::{call, job, quota, submit_job};
use serde_json::{Value, json};

/// What must read back the same: users, queues, quota rules, templates, and every job as
/// submitted (its phase aside: the restored server's simulated cluster starts empty).
async fn answers(app: &TestApp, admin: &str) -> Value {
    let get = |path: &'static str| async move { call(app, "GET", path, admin, None).await.1 };
    let mut jobs = get("/api/v1/admin/jobs?pageSize=100").await["items"].clone();
    for j in jobs.as_array_mut().unwrap() {
        let j = j.as_object_mut().unwrap();
        for moving in [
            "phase",
            "activatedAt",
            "startedAt",
            "finishedAt",
            "nodes",
            "failure",
            "waitingSince",
        ] {
            j.remove(moving);
        }
    }
    let mut queues = get("/api/v1/admin/queues").await;
    for q in queues.as_array_mut().unwrap() {
        // Usage and the line follow the (new, empty) cluster.
        q.as_object_mut().unwrap().remove("used");
        q.as_object_mut().unwrap().remove("waiting");
    }
    json!({
        "users": get("/api/v1/admin/users").await["items"],
        "queues": queues,
        "quotas": get("/api/v1/admin/queue-quotas").await,
        "templates": get("/api/v1/templates").await,
        "settings": get("/api/v1/admin/prequeue-config").await,
        "jobs": jobs,
    })
}

#[tokio::test]
async fn a_backup_taken_while_serving_restores_to_the_same_api_answers() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    app.user_token("ann").await;
    let (status, _) = call(
        &app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "team-a", "open": true})),
    )
    .await;
    assert_eq!(status, 201);
    quota(&app, &admin, "default", json!({"cpu": "4"})).await;
    let (status, _) = call(
        &app,
        "POST",
        "/api/v1/templates",
        &admin,
        Some(
            json!({"name": "t", "body": {"kind": "custom", "tasks": [{"name": "main", "replicas": 1,
            "image": "busybox", "resources": {"cpu": "1", "memory": "1Gi"}}]}}),
        ),
    )
    .await;
    assert_eq!(status, 201);
    for i in 0..6 {
        submit_job(
            &app,
            &admin,
            job(&format!("job-{i}"), json!({"cpu": "1", "memory": "1Gi"})),
        )
        .await;
    }
    let before = answers(&app, &admin).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("anteroom.backup");

    // Taken while the server serves and writes: submissions run beside it.
    let url = app.state.config.database_url.clone();
    let writes = async {
        for i in 0..5 {
            submit_job(
                &app,
                &admin,
                job(&format!("during-{i}"), json!({"cpu": "100m", "memory": "64Mi"})),
            )
            .await;
        }
    };
    let (report, ()) = tokio::join!(backup(&url, &file), writes);
    let report = report.expect("the backup");
    assert!(report.bytes > 0 && (6..=11).contains(&report.jobs), "{report:?}");
    assert!(
        matches!(backup(&url, &file).await, Err(BackupError::Exists(_))),
        "never overwritten"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o077,
            0,
            "owner-only"
        );
    }

    // Not under a running server.
    assert!(matches!(
        restore(&url, &file, app.addr).await,
        Err(BackupError::ServerRunning(_))
    ));

    // Into another data directory, started from it.
    let target = tempfile::tempdir().unwrap();
    let restored_url = format!("sqlite://{}?mode=rwc", target.path().join("anteroom.db").display());
    let nobody: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
    let jobs = restore(&restored_url, &file, nobody).await.expect("the restore");
    assert_eq!(jobs, report.jobs);
    let restored = TestApp::builder().database_url(restored_url).start().await;
    let token = restored.admin_token().await;
    let mut after = answers(&restored, &token).await;
    // The jobs submitted while the backup ran may or may not be in it; the rest are.
    let taken = report.jobs as usize;
    let before_jobs = before["jobs"].as_array().unwrap().clone();
    let after_jobs: Vec<Value> = after["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .take(before_jobs.len())
        .rev()
        .cloned()
        .collect();
    assert_eq!(after["jobs"].as_array().unwrap().len(), taken);
    after["jobs"] = Value::Array(after_jobs);
    assert_eq!(after, before, "the restored server answers as the original did");
    restored.stop().await;
    app.stop().await;
}

#[tokio::test]
async fn a_file_that_is_not_an_anteroom_database_is_not_restored_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, b"not a database at all, just text").unwrap();
    let target = dir.path().join("anteroom.db");
    std::fs::write(&target, b"the database in place").unwrap();
    let url = format!("sqlite://{}?mode=rwc", target.display());
    let nobody: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
    assert!(matches!(
        restore(&url, &junk, nobody).await,
        Err(BackupError::NotABackup(..))
    ));
    assert_eq!(std::fs::read(&target).unwrap(), b"the database in place");
    assert!(matches!(
        restore("postgres://x@localhost/db", &junk, nobody).await,
        Err(BackupError::NotSqlite)
    ));
    assert!(matches!(
        restore(&url, &dir.path().join("missing"), nobody).await,
        Err(BackupError::Missing(_))
    ));
}

//! An old database upgrades with its data: a SQLite database at the first set of migrations that
//! had jobs (1–13, the state of 2026-11-23), filled with rows as Anteroom wrote them then (every
//! table the API shows: users, a queue with a capacity and a member, a quota rule, the
//! settings, a waiting and a finished job with their events), is migrated to today's schema by
//! a server starting on it, and every row reads back through today's API.

use anteroom_tests::TestApp;
use anteroom_tests::api::call;
use migration::{Migrator, MigratorTrait};
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use serde_json::json;

/// The migrations of the first release with jobs.
const FIRST_JOBS_RELEASE: u32 = 13;
const OLD_PASSWORD: &str = "an-old-password-1";

#[tokio::test]
async fn a_database_of_the_first_release_with_jobs_upgrades_and_every_row_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("old.db").display());
    let db = anteroom::store::connect(&url).await.unwrap();
    Migrator::up(&db, Some(FIRST_JOBS_RELEASE)).await.unwrap();
    let hash = anteroom::users::password::hash(OLD_PASSWORD).unwrap();
    let at = "2026-11-23 10:00:00+00:00";
    let rows = [
        format!(
            "INSERT INTO users (id, username, display_name, password_hash, role, created_at, updated_at, token_version) VALUES \
             (1, 'admin', 'Administrator', '{hash}', 'admin', '{at}', '{at}', 0), \
             (2, 'ann', 'Ann Researcher', '{hash}', 'user', '{at}', '{at}', 0)"
        ),
        format!(
            "INSERT INTO queues (name, display_name, open, parent, capacity, created_at, updated_at) VALUES \
             ('team-a', 'Team A', 0, NULL, '{{\"cpu\":\"8\",\"nvidia.com/a100\":\"2\"}}', '{at}', '{at}')"
        ),
        "INSERT INTO queue_members (queue, user_id) VALUES ('team-a', 2)".to_owned(),
        format!(
            "INSERT INTO queue_quotas (queue, limits, max_active_jobs, created_at, updated_at) VALUES \
             ('team-a', '{{\"cpu\":\"4\",\"nvidia.com/a100\":\"1\"}}', 3, '{at}', '{at}')"
        ),
        format!(
            "UPDATE prequeue_config SET backfill_enabled = 1, queue_quota_enabled = 1, \
             normal_job_waiting_tolerance_seconds = 600, activation_order = 'fairShare', updated_at = '{at}' WHERE id = 1"
        ),
        // A job that waits (its quota holds it) and one that completed, as the jobs API of that
        // day stored them: JSON tasks and resources, the compact request and node columns.
        format!(
            "INSERT INTO jobs (id, name, kind, queue, owner_id, owner_name, schedule_type, preemption_policy, phase, \
             waiting_tolerance_seconds, timeout_at, tasks, resources, request_milli, explicit_nodes, single_node, nodes, \
             wait_reasons, submitted_at, activated_at, started_at, finished_at, locked_until, updated_at) VALUES \
             (1, 'waiting-one', 'custom', 'team-a', 2, 'ann', 'normal', 'PreemptLowerPriority', 'Prequeue', 600, NULL, \
              '[{{\"name\":\"main\",\"replicas\":1,\"image\":\"busybox\",\"command\":[\"sleep\",\"60\"],\"resources\":{{\"cpu\":\"5\",\"memory\":\"1Gi\"}}}}]', \
              '{{\"cpu\":\"5\",\"memory\":\"1Gi\"}}', 'cpu=5000,memory=1073741824000', '', 1, '[]', \
              '[{{\"code\":\"quota\",\"message\":\"your quota in queue team-a would be exceeded\",\"details\":null}}]', \
              '{at}', NULL, NULL, NULL, NULL, '{at}'), \
             (2, 'done-one', 'pytorch', 'default', 1, 'admin', 'normal', 'Never', 'Completed', 600, NULL, \
              '[{{\"name\":\"master\",\"replicas\":1,\"image\":\"pytorch/pytorch\",\"resources\":{{\"cpu\":\"2\",\"memory\":\"4Gi\"}},\"nodeNames\":[\"gpu-a100-0\"]}}, \
                {{\"name\":\"worker\",\"replicas\":2,\"image\":\"pytorch/pytorch\",\"resources\":{{\"cpu\":\"2\",\"memory\":\"4Gi\"}}}}]', \
              '{{\"cpu\":\"6\",\"memory\":\"12Gi\"}}', 'cpu=6000,memory=12884901888000', 'gpu-a100-0', 0, '[\"gpu-a100-0\"]', NULL, \
              '{at}', '{at}', '{at}', '{at}', NULL, '{at}')"
        ),
        format!(
            "INSERT INTO job_events (job_id, owner_id, kind, message, details, created_at) VALUES \
             (1, 2, 'submitted', 'submitted to queue team-a', NULL, '{at}'), \
             (2, 1, 'submitted', 'submitted to queue default', NULL, '{at}'), \
             (2, 1, 'activated', 'created in the cluster', NULL, '{at}')"
        ),
    ];
    for sql in rows {
        db.execute_raw(Statement::from_string(DbBackend::Sqlite, sql.clone()))
            .await
            .unwrap_or_else(|e| panic!("{e}: {sql}"));
    }
    db.close().await.unwrap();

    // Today's server on it: it applies every later migration as it starts.
    let app = TestApp::builder().database_url(url).start().await;
    let admin = app.token("admin", OLD_PASSWORD).await;
    let ann = app.token("ann", OLD_PASSWORD).await;
    let get = |path: String, token: String| {
        let app = &app;
        async move {
            let (status, body) = call(app, "GET", &path, &token, None).await;
            assert_eq!(status, 200, "{path}: {body}");
            body
        }
    };
    let users = get("/api/v1/admin/users".into(), admin.clone()).await;
    let names: Vec<(&str, &str, &str)> = users["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["username"].as_str().unwrap(),
                u["displayName"].as_str().unwrap(),
                u["role"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [("admin", "Administrator", "admin"), ("ann", "Ann Researcher", "user")]
    );

    let queues = get("/api/v1/admin/queues".into(), admin.clone()).await;
    let team = queues
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "team-a")
        .unwrap();
    assert_eq!(team["displayName"], "Team A");
    assert_eq!(team["open"], false);
    assert_eq!(team["members"], json!(["ann"]));
    assert_eq!(team["capacity"], json!({"cpu": "8", "nvidia.com/a100": "2"}));
    assert_eq!(team["waiting"], 1);

    let quotas = get("/api/v1/admin/queue-quotas".into(), admin.clone()).await;
    assert_eq!(quotas[0]["queue"], "team-a");
    assert_eq!(quotas[0]["limits"], json!({"cpu": "4", "nvidia.com/a100": "1"}));
    assert_eq!(quotas[0]["maxActiveJobs"], 3);

    let settings = get("/api/v1/admin/prequeue-config".into(), admin.clone()).await;
    assert_eq!(settings["backfillEnabled"], true);
    assert_eq!(settings["queueQuotaEnabled"], true);
    assert_eq!(settings["normalJobWaitingToleranceSeconds"], 600);
    assert_eq!(settings["activationOrder"], "fairShare");

    // Ann's waiting job, with its reason and events; the admin's finished one.
    let waiting = get("/api/v1/jobs/1".into(), ann.clone()).await;
    assert_eq!(waiting["name"], "waiting-one", "{waiting}");
    assert_eq!(waiting["queue"], "team-a");
    assert_eq!(waiting["phase"], "Prequeue");
    assert_eq!(waiting["resources"], json!({"cpu": "5", "memory": "1Gi"}));
    assert_eq!(waiting["tasks"][0]["command"], json!(["sleep", "60"]));
    assert_eq!(waiting["submittedAt"], "2026-11-23T10:00:00Z");
    assert_eq!(
        waiting["events"][0]["message"], "submitted to queue team-a",
        "{waiting}"
    );
    // Today's watcher has looked at it already: its reason is today's, with figures.
    assert_eq!(waiting["prequeue"]["reasons"][0]["code"], "quota", "{waiting}");
    let done = get("/api/v1/jobs/2".into(), admin.clone()).await;
    assert_eq!(done["phase"], "Completed", "{done}");
    assert_eq!(done["kind"], "pytorch");
    assert_eq!(done["preemptionPolicy"], "Never");
    assert_eq!(done["nodes"], json!(["gpu-a100-0"]));
    assert_eq!(done["tasks"][1]["replicas"], 2);
    assert_eq!(done["tasks"][0]["nodeNames"], json!(["gpu-a100-0"]));
    assert_eq!(done["events"].as_array().map(Vec::len), Some(2), "{done}");
    let all = get("/api/v1/admin/jobs".into(), admin.clone()).await;
    assert_eq!(all["total"], 2, "{all}");
    app.stop().await;
}

//! On SQLite the job list is written as JSON by SQLite itself (`jobs::list_json`, issue 25): it
//! must say exactly what the rows read and turned into [`Job`]s say (`jobs::list`), for jobs
//! in every state a list shows — waiting with reasons, running on nodes, finished, failed
//! with a failing pod, deleted, locked, elastic, with tolerations, mounts, environment and
//! shared memory — under every filter and on every page.

use anteroom::jobs::{self, JobFilter};
use anteroom_shared::api::Page;
use anteroom_shared::api::jobs::Job;
use anteroom_shared::api::jobs::{JobSort, JobSortField};
use anteroom_shared::scheduling::{JobKind, JobPhase, ScheduleType};
use anteroom_tests::api::{call, quota, settings, submit_job};
use anteroom_tests::driven::{Driven, gpu_job, timed_job};
use serde_json::json;

/// Both ways, compared as API values (times as instants, so `…+00:00` stored and `…Z`
/// written are the same time).
async fn assert_same(d: &Driven, filter: &JobFilter, page: u64, page_size: u64) -> usize {
    let db = &d.app.state.db_read;
    let (items, total) = jobs::list(db, filter, (page - 1) * page_size, page_size).await.unwrap();
    let json = jobs::list_json(db, filter, page, page_size)
        .await
        .unwrap()
        .expect("SQLite writes the list itself");
    let written: Page<Job> = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(written.total, total, "{filter:?}");
    assert_eq!((written.page, written.page_size), (page, page_size));
    assert_eq!(written.items, items, "{filter:?} page {page} of {page_size}");
    // And as JSON, key for key: a field the serialiser writes and SQLite does not (or `null`
    // for an absent one, or an instant written another way) shows here.
    let as_written: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        as_written["items"],
        serde_json::to_value(&items).unwrap(),
        "{filter:?} page {page} of {page_size}"
    );
    items.len()
}

#[tokio::test]
async fn the_list_sqlite_writes_says_what_the_rows_say() {
    let d = Driven::start(None, "").await;
    // Times with a fraction of a second, to the nanosecond.
    d.clock.advance(chrono::Duration::nanoseconds(1_234_567_891));
    let admin = d.app.admin_token().await;
    let ann = d.app.user_token("ann").await;
    let bob = d.app.user_token("bob").await;
    settings(
        &d.app,
        &admin,
        json!({"queueQuotaEnabled": true, "backfillEnabled": true}),
    )
    .await;
    quota(&d.app, &admin, "default", json!({"cpu": "4"})).await;
    let volume = json!({"name": "scratch", "source": {"nfs": {"server": "10.0.0.5", "path": "/export/scratch"}},
        "mountPath": "/scratch", "readOnly": true});
    let (status, answer) = call(&d.app, "POST", "/api/v1/admin/volumes", &admin, Some(volume)).await;
    assert_eq!(status, 201, "{answer}");

    // Runs and completes; runs on; fails with an exit code; waits on the quota (reasons).
    let (done, _) = submit_job(&d.app, &ann, timed_job("done", json!({"cpu": "1"}), Some(10))).await;
    let (running, _) = submit_job(&d.app, &ann, timed_job("running", json!({"cpu": "1"}), None)).await;
    let mut failing = timed_job("failing", json!({"cpu": "1"}), None);
    failing["tasks"][0]["command"] = json!(["exit", "3"]);
    submit_job(&d.app, &ann, failing).await;
    submit_job(&d.app, &ann, timed_job("waiting", json!({"cpu": "3"}), None)).await;
    // A GPU notebook (the seeded rule gives it tolerations), elastic.
    submit_job(&d.app, &bob, gpu_job("notebook", "jupyter", 1, "backfill")).await;
    // Mounts, environment, shared memory, pinned to a node.
    let mut rich = timed_job("rich", json!({"cpu": "1", "memory": "2Gi"}), None);
    rich["volumes"] = json!(["scratch"]);
    rich["tasks"][0]["env"] = json!([{"name": "MODE", "value": "a \"quoted\" value, with ünïcode"}]);
    rich["tasks"][0]["shmSize"] = json!("1Gi");
    rich["tasks"][0]["nodeNames"] = json!(["cpu-0"]);
    submit_job(&d.app, &bob, rich).await;
    // Deleted while waiting.
    let (gone, _) = submit_job(&d.app, &bob, timed_job("gone", json!({"cpu": "4"}), None)).await;
    call(&d.app, "DELETE", &format!("/api/v1/jobs/{gone}"), &bob, None).await;
    // Locked.
    let (status, _) = call(
        &d.app,
        "PUT",
        &format!("/api/v1/admin/jobs/{running}/lock"),
        &admin,
        Some(json!({"until": "2099-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(status, 200);
    d.round().await;
    d.advance(20).await;
    d.round().await;
    d.advance(20).await;
    let (_, detail) = call(&d.app, "GET", &format!("/api/v1/jobs/{done}"), &ann, None).await;
    assert_eq!(detail["phase"], "Completed", "{detail}");
    // The end is told with its phase, for the timeline to say in each language.
    let last = detail["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["kind"].as_str(), &last["details"]),
        (Some("finished"), &json!({"phase": "Completed"}))
    );

    let (_, me) = call(&d.app, "GET", "/api/v1/auth/me", &ann, None).await;
    let ann_id = me["id"].as_i64().unwrap();
    let mut seen = 0;
    for (owner, names) in [
        (None, Vec::new()),
        (Some(ann_id), Vec::new()),
        (None, vec!["bob".to_owned()]),
    ] {
        for phases in [
            vec![],
            vec![JobPhase::Prequeue],
            vec![JobPhase::Running, JobPhase::Failed],
        ] {
            for (schedule_types, kinds) in [
                (vec![], vec![]),
                (vec![ScheduleType::Backfill], vec![]),
                (vec![], vec![JobKind::Custom]),
            ] {
                let filter = JobFilter {
                    owner,
                    users: names.clone(),
                    phases: phases.clone(),
                    schedule_types,
                    kinds,
                    queues: vec!["default".to_owned()],
                    ..JobFilter::default()
                };
                for (page, size) in [(1, 50), (1, 2), (2, 2), (9, 2)] {
                    seen += assert_same(&d, &filter, page, size).await;
                }
                let no_queue = JobFilter {
                    queues: Vec::new(),
                    ..filter
                };
                seen += assert_same(&d, &no_queue, 1, 500).await;
            }
        }
    }
    assert!(seen > 50, "the filters saw {seen} jobs in all");

    // Every order, with and without a search, across page boundaries.
    let mut sorted = 0;
    for field in JobSortField::ALL {
        for descending in [false, true] {
            for (owner, search) in [
                (None, None),
                (Some(ann_id), None),
                (None, Some("In")),
                (None, Some("%")),
            ] {
                let filter = JobFilter {
                    owner,
                    name_contains: search.map(str::to_owned),
                    sort: JobSort { field, descending },
                    ..JobFilter::default()
                };
                for (page, size) in [(1, 3), (2, 3), (3, 3), (1, 50)] {
                    sorted += assert_same(&d, &filter, page, size).await;
                }
            }
        }
    }
    assert!(sorted > 100, "the orders saw {sorted} jobs in all");
}

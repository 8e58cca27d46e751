//! The job lists over HTTP: filters of several values (and their cap), search by name, sort,
//! pages, and the bulk delete and lock of selected jobs. On SQLite and on PostgreSQL
//! (`both!`).

use anteroom_tests::api::*;
use anteroom_tests::{TestApp, both};
use serde_json::{Value, json};

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

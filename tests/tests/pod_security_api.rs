//! Job pods with least privilege (issue 40): a queue says which user id its jobs run as, never
//! root (`runAsUser`; `null` lets images run as root). New installations and new queues run as
//! user 1000; a queue replaced by a client that does not know the field keeps what it had; the
//! job carries its queue's choice into the cluster.

use anteroom_tests::api::{call, code, count};
use anteroom_tests::both_driven;
use anteroom_tests::driven::*;
use serde_json::{Value, json};

async fn queue_of(d: &Driven, admin: &str, name: &str) -> Value {
    let (status, body) = call(&d.app, "GET", "/api/v1/admin/queues", admin, None).await;
    assert_eq!(status, 200, "{body}");
    let list = body
        .as_array()
        .or_else(|| body["items"].as_array())
        .expect("a list")
        .clone();
    list.into_iter().find(|q| q["name"] == name).expect("the queue")
}

async fn a_queue_s_user_is_non_root_by_default_kept_when_left_out_and_reaches_the_cluster(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    // A new installation: its default queue runs jobs as user 1000.
    assert_eq!(queue_of(&d, &admin, "default").await["runAsUser"], 1000);

    // A queue made without the field runs as 1000; one that says null lets images be root.
    let (status, body) = call(
        &d.app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "team", "open": true})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["runAsUser"], 1000, "{body}");
    let (status, body) = call(
        &d.app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "legacy", "open": true, "runAsUser": null})),
    )
    .await;
    assert_eq!(
        (status.as_u16(), body["runAsUser"].clone()),
        (201, Value::Null),
        "{body}"
    );
    // Replaced by a client that does not know the field: kept. Named: changed.
    let (status, body) = call(
        &d.app,
        "PUT",
        "/api/v1/admin/queues/legacy",
        &admin,
        Some(json!({"name": "legacy", "open": true, "displayName": "Legacy images"})),
    )
    .await;
    assert_eq!(
        (status.as_u16(), body["runAsUser"].clone()),
        (200, Value::Null),
        "{body}"
    );
    let (status, body) = call(
        &d.app,
        "PUT",
        "/api/v1/admin/queues/team",
        &admin,
        Some(json!({"name": "team", "open": true, "runAsUser": 2000})),
    )
    .await;
    assert_eq!(
        (status.as_u16(), body["runAsUser"].clone()),
        (200, json!(2000)),
        "{body}"
    );
    // Root by number, or no number: refused on the field, nothing changed.
    for bad in [json!(0), json!(-1), json!(2_147_483_648_i64), json!("1000")] {
        let (status, body) = call(
            &d.app,
            "PUT",
            "/api/v1/admin/queues/team",
            &admin,
            Some(json!({"name": "team", "open": true, "runAsUser": bad})),
        )
        .await;
        assert_eq!(
            (status.as_u16(), code(&body)),
            (422, "validation_failed"),
            "{bad}: {body}"
        );
        assert_eq!(
            body["error"]["details"]["fields"][0]["field"], "runAsUser",
            "{bad}: {body}"
        );
    }
    assert_eq!(queue_of(&d, &admin, "team").await["runAsUser"], 2000);
    // Users see it on the queues they may use.
    let ann = d.app.user_token("ann").await;
    let (_, queues) = call(&d.app, "GET", "/api/v1/queues", &ann, None).await;
    let team = queues.as_array().unwrap().iter().find(|q| q["name"] == "team").unwrap();
    assert_eq!(team["runAsUser"], 2000);

    // A job takes its queue's user into the cluster, and keeps it whatever the queue becomes.
    let mut body = timed_job("train", json!({"cpu": "1"}), None);
    body["queue"] = json!("team");
    let (id, _) = submit(&d, &ann, body).await;
    let mut root = timed_job("old-image", json!({"cpu": "1"}), None);
    root["queue"] = json!("legacy");
    let (legacy, _) = submit(&d, &ann, root).await;
    d.settle().await;
    let spec = d.sim.spec_of(id).await.unwrap().expect("in the cluster");
    assert_eq!(spec.run_as_user, Some(2000));
    assert_eq!(
        d.sim
            .spec_of(legacy)
            .await
            .unwrap()
            .expect("in the cluster")
            .run_as_user,
        None
    );
    call(
        &d.app,
        "PUT",
        "/api/v1/admin/queues/team",
        &admin,
        Some(json!({"name": "team", "open": true, "runAsUser": 3000})),
    )
    .await;
    assert_eq!(
        count(&d.app, &format!("jobs WHERE id = {id} AND run_as_user = 2000")).await,
        1
    );
}
both_driven!(
    run_as_user,
    a_queue_s_user_is_non_root_by_default_kept_when_left_out_and_reaches_the_cluster
);

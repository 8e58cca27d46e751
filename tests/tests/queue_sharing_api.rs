//! A queue's sharing settings over HTTP (`spec/prequeue.md` §9, `spec/api.md` "Queues"):
//! guarantee, lending limit, weight, reclaim minimum runtime, priority range, preemption within
//! the queue and per-job limit are stored and read back by admins and users; a client that does
//! not send them never resets them; guarantees beyond a parent's or a capacity, and fields out
//! of range, are refused with nothing stored. Each scenario runs on SQLite and on PostgreSQL.

use anteroom_tests::api::*;
use anteroom_tests::{TestApp, both};
use serde_json::{Value, json};

/// Every sharing field, none at its default.
fn every_sharing_field() -> Value {
    json!({
        "guarantee": {"nvidia.com/a100": "4", "cpu": "16"},
        "lendingLimit": {"nvidia.com/a100": "2"},
        "weight": 3,
        "reclaimMinRuntimeSeconds": 600,
        "priorityRange": {"min": -10, "max": 10},
        "preemptWithinQueue": "lowerPriority",
        "maxPerJob": {"nvidia.com/a100": "2"},
    })
}

/// What a queue that never named sharing reads as.
fn no_sharing() -> Value {
    json!({
        "guarantee": null,
        "lendingLimit": null,
        "weight": 1,
        "reclaimMinRuntimeSeconds": 0,
        "priorityRange": {"min": 0, "max": 0},
        "preemptWithinQueue": "never",
        "maxPerJob": null,
    })
}

/// `base` with the fields of `more` added (both objects).
fn with(base: Value, more: &Value) -> Value {
    let mut out = base;
    for (k, v) in more.as_object().expect("an object") {
        out[k] = v.clone();
    }
    out
}

/// The sharing fields of a queue as answered.
fn sharing_of(queue: &Value) -> Value {
    let mut out = json!({});
    for key in no_sharing().as_object().unwrap().keys() {
        out[key] = queue
            .get(key)
            .cloned()
            .unwrap_or_else(|| panic!("{key} missing from {queue}"));
    }
    out
}

/// Every queue as an admin reads it, by name, without what moves on its own (usage, line).
async fn admin_queues(app: &TestApp, admin: &str) -> Vec<Value> {
    let (status, body) = call(app, "GET", "/api/v1/admin/queues", admin, None).await;
    assert_eq!(status, 200, "{body}");
    let mut list = body.as_array().expect("a list").clone();
    for q in &mut list {
        let q = q.as_object_mut().unwrap();
        q.remove("used");
        q.remove("waiting");
    }
    list
}

async fn admin_queue(app: &TestApp, admin: &str, name: &str) -> Value {
    admin_queues(app, admin)
        .await
        .into_iter()
        .find(|q| q["name"] == name)
        .unwrap_or_else(|| panic!("no queue {name}"))
}

async fn a_queue_s_sharing_settings_read_back_as_written_to_admins_and_to_users(app: TestApp) {
    let admin = app.admin_token().await;
    let ann = app.user_token("ann").await;
    let created = queue(
        &app,
        &admin,
        with(
            json!({"name": "nlp", "open": true, "capacity": {"nvidia.com/a100": "8", "cpu": "64"}}),
            &every_sharing_field(),
        ),
    )
    .await;
    assert_eq!(sharing_of(&created), every_sharing_field(), "{created}");
    // The admin's list, the admin's one queue, and the user's list all say the same.
    assert_eq!(
        sharing_of(&admin_queue(&app, &admin, "nlp").await),
        every_sharing_field()
    );
    let (status, one) = call(&app, "GET", "/api/v1/admin/queues/nlp", &admin, None).await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(sharing_of(&one), every_sharing_field(), "{one}");
    let (status, usable) = call(&app, "GET", "/api/v1/queues", &ann, None).await;
    assert_eq!(status, 200, "{usable}");
    let nlp = usable
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "nlp")
        .expect("nlp is open to ann");
    assert_eq!(sharing_of(nlp), every_sharing_field(), "{nlp}");

    // A queue that names none, and `default` (stored before sharing existed: a NULL column),
    // read as sharing nothing.
    queue(&app, &admin, json!({"name": "plain", "open": true})).await;
    for name in ["plain", "default"] {
        assert_eq!(
            sharing_of(&admin_queue(&app, &admin, name).await),
            no_sharing(),
            "{name}"
        );
    }
    assert_eq!(count_where(&app, "queues", "sharing IS NULL").await, 2);
}
both!(
    sharing_reads_back,
    a_queue_s_sharing_settings_read_back_as_written_to_admins_and_to_users
);

async fn a_put_that_leaves_sharing_out_keeps_it_and_null_clears_a_list(app: TestApp) {
    let admin = app.admin_token().await;
    queue(
        &app,
        &admin,
        with(
            json!({"name": "nlp", "open": true, "capacity": {"nvidia.com/a100": "8", "cpu": "64"}}),
            &every_sharing_field(),
        ),
    )
    .await;
    let put = |body: Value| {
        let app = &app;
        let admin = &admin;
        async move {
            let (status, answer) = call(app, "PUT", "/api/v1/admin/queues/nlp", admin, Some(body)).await;
            assert_eq!(status, 200, "{answer}");
            answer
        }
    };
    // A client written before sharing: it sends what it knows, and nothing of sharing is lost.
    let answer =
        put(json!({"name": "nlp", "open": false, "displayName": "NLP", "capacity": {"nvidia.com/a100": "6"}})).await;
    assert_eq!(sharing_of(&answer), every_sharing_field(), "{answer}");
    assert_eq!(answer["displayName"], "NLP");
    assert_eq!(
        sharing_of(&admin_queue(&app, &admin, "nlp").await),
        every_sharing_field()
    );
    // `null` clears the guarantee; a named field changes; everything else stays.
    let answer = put(json!({"name": "nlp", "open": true, "guarantee": null, "weight": 5})).await;
    let expected = with(every_sharing_field(), &json!({"guarantee": null, "weight": 5}));
    assert_eq!(sharing_of(&answer), expected, "{answer}");
    assert_eq!(sharing_of(&admin_queue(&app, &admin, "nlp").await), expected);
    // The other two lists clear the same way.
    let answer = put(json!({"name": "nlp", "open": true, "lendingLimit": null, "maxPerJob": null})).await;
    let expected = with(expected, &json!({"lendingLimit": null, "maxPerJob": null}));
    assert_eq!(sharing_of(&answer), expected, "{answer}");
}
both!(
    sharing_left_out_is_kept,
    a_put_that_leaves_sharing_out_keeps_it_and_null_clears_a_list
);

async fn guarantees_beyond_a_parent_s_guarantee_or_a_capacity_are_refused_and_nothing_changes(app: TestApp) {
    let admin = app.admin_token().await;
    let gpus = |n: &str| json!({"nvidia.com/a100": n});
    queue(
        &app,
        &admin,
        json!({"name": "nlp", "open": true, "guarantee": gpus("6")}),
    )
    .await;
    queue(
        &app,
        &admin,
        json!({"name": "nlp-a", "open": true, "parent": "nlp", "guarantee": gpus("4")}),
    )
    .await;
    let before = admin_queues(&app, &admin).await;
    let refused = |method: &'static str, path: &'static str, body: Value, want: &'static str| {
        let app = &app;
        let admin = &admin;
        let before = &before;
        async move {
            let (status, answer) = call(app, method, path, admin, Some(body.clone())).await;
            assert_eq!((status.as_u16(), code(&answer)), (422, want), "{body}: {answer}");
            assert_eq!(&admin_queues(app, admin).await, before, "{body} changed something");
        }
    };
    // Children guaranteed 4 + 4 under a parent guaranteeing 6: the second is refused.
    refused(
        "POST",
        "/api/v1/admin/queues",
        json!({"name": "nlp-b", "open": true, "parent": "nlp", "guarantee": gpus("4")}),
        "guarantee_exceeds_parent",
    )
    .await;
    // The same sum reached by raising a child, or by lowering the parent.
    refused(
        "PUT",
        "/api/v1/admin/queues/nlp-a",
        json!({"name": "nlp-a", "open": true, "parent": "nlp", "guarantee": gpus("7")}),
        "guarantee_exceeds_parent",
    )
    .await;
    refused(
        "PUT",
        "/api/v1/admin/queues/nlp",
        json!({"name": "nlp", "open": true, "guarantee": gpus("3")}),
        "guarantee_exceeds_parent",
    )
    .await;
    // A guarantee above the queue's own capacity: on create, and by lowering the capacity of a
    // queue that keeps its guarantee (left out of the body).
    refused(
        "POST",
        "/api/v1/admin/queues",
        json!({"name": "solo", "open": true, "capacity": gpus("4"), "guarantee": gpus("8")}),
        "guarantee_exceeds_capacity",
    )
    .await;
    refused(
        "PUT",
        "/api/v1/admin/queues/nlp-a",
        json!({"name": "nlp-a", "open": true, "parent": "nlp", "capacity": gpus("2")}),
        "guarantee_exceeds_capacity",
    )
    .await;
    // Within both: accepted.
    queue(
        &app,
        &admin,
        json!({"name": "nlp-b", "open": true, "parent": "nlp", "guarantee": gpus("2")}),
    )
    .await;
}
both!(
    guarantees_are_held_to_the_tree,
    guarantees_beyond_a_parent_s_guarantee_or_a_capacity_are_refused_and_nothing_changes
);

async fn sharing_fields_out_of_range_are_refused_naming_the_field_and_nothing_is_stored(app: TestApp) {
    let admin = app.admin_token().await;
    queue(
        &app,
        &admin,
        with(json!({"name": "nlp", "open": true}), &every_sharing_field()),
    )
    .await;
    let before = admin_queues(&app, &admin).await;
    for (bad, field) in [
        (
            json!({"guarantee": {"nvidia.com/a100": "-1"}}),
            "guarantee.nvidia.com/a100",
        ),
        (json!({"lendingLimit": {"cpu": "-500m"}}), "lendingLimit.cpu"),
        (
            json!({"maxPerJob": {"nvidia.com/a100": "-2"}}),
            "maxPerJob.nvidia.com/a100",
        ),
        (json!({"guarantee": {"Not A Name!": "1"}}), "guarantee.Not A Name!"),
        (json!({"weight": 0}), "weight"),
        (json!({"weight": 1001}), "weight"),
        (json!({"reclaimMinRuntimeSeconds": -1}), "reclaimMinRuntimeSeconds"),
        (
            json!({"reclaimMinRuntimeSeconds": 31_536_001}),
            "reclaimMinRuntimeSeconds",
        ),
        (json!({"priorityRange": {"min": 2, "max": 1}}), "priorityRange"),
        (
            json!({"priorityRange": {"min": -1_000_001, "max": 0}}),
            "priorityRange.min",
        ),
        (
            json!({"priorityRange": {"min": 0, "max": 1_000_001}}),
            "priorityRange.max",
        ),
    ] {
        for (method, path, name) in [
            ("POST", "/api/v1/admin/queues", "fresh"),
            ("PUT", "/api/v1/admin/queues/nlp", "nlp"),
        ] {
            let body = with(json!({"name": name, "open": true}), &bad);
            let (status, answer) = call(&app, method, path, &admin, Some(body)).await;
            assert_eq!(
                (status.as_u16(), code(&answer)),
                (422, "validation_failed"),
                "{method} {bad}: {answer}"
            );
            assert_eq!(
                answer["error"]["details"]["fields"][0]["field"], field,
                "{method} {bad}: {answer}"
            );
            assert_eq!(
                admin_queues(&app, &admin).await,
                before,
                "{method} {bad} changed something"
            );
        }
    }
}
both!(
    sharing_fields_are_checked,
    sharing_fields_out_of_range_are_refused_naming_the_field_and_nothing_is_stored
);

async fn the_elastic_jobs_cluster_queue_name_is_not_a_queue_name(app: TestApp) {
    let admin = app.admin_token().await;
    let before = admin_queues(&app, &admin).await;
    let body = json!({"name": "anteroom-elastic", "open": true});
    let (status, answer) = call(&app, "POST", "/api/v1/admin/queues", &admin, Some(body)).await;
    assert_eq!((status.as_u16(), code(&answer)), (422, "validation_failed"), "{answer}");
    let field = &answer["error"]["details"]["fields"][0];
    assert_eq!(
        (field["field"].as_str(), field["code"].as_str()),
        (Some("name"), Some("queueNameReserved")),
        "{answer}"
    );
    assert_eq!(admin_queues(&app, &admin).await, before);
}
both!(
    elastic_queue_name_reserved,
    the_elastic_jobs_cluster_queue_name_is_not_a_queue_name
);

/// What the cluster was told about queue `name` (`spec/prequeue.md` §9 "The cluster"), as JSON.
async fn told_to_the_cluster(app: &TestApp, name: &str) -> Value {
    let queues = app.state.cluster.queues().await.expect("the cluster's queues");
    let told = queues
        .into_iter()
        .find(|q| q.name == name)
        .unwrap_or_else(|| panic!("the cluster has no queue {name}"));
    serde_json::to_value(told).expect("json")
}

async fn a_queue_write_tells_the_cluster_its_parent_capacity_and_weight_as_they_are_stored(app: TestApp) {
    let admin = app.admin_token().await;
    let gpus = |n: &str| json!({"nvidia.com/a100": n});
    queue(
        &app,
        &admin,
        json!({"name": "lab", "open": true, "capacity": gpus("8")}),
    )
    .await;
    queue(
        &app,
        &admin,
        json!({"name": "cv", "open": false, "parent": "lab", "weight": 3}),
    )
    .await;
    assert_eq!(
        told_to_the_cluster(&app, "lab").await,
        json!({"name": "lab", "open": true, "parent": null, "capability": gpus("8"), "weight": 1})
    );
    // Open to jobs in the cluster, whoever may use it in Anteroom.
    assert_eq!(
        told_to_the_cluster(&app, "cv").await,
        json!({"name": "cv", "open": true, "parent": "lab", "capability": null, "weight": 3})
    );
    // A write that leaves the weight out keeps it, in the store and in the cluster.
    let (status, answer) = call(
        &app,
        "PUT",
        "/api/v1/admin/queues/cv",
        &admin,
        Some(json!({"name": "cv", "open": false, "parent": "lab", "capacity": gpus("2")})),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        told_to_the_cluster(&app, "cv").await,
        json!({"name": "cv", "open": true, "parent": "lab", "capability": gpus("2"), "weight": 3})
    );
}
both!(
    the_cluster_is_told_the_tree,
    a_queue_write_tells_the_cluster_its_parent_capacity_and_weight_as_they_are_stored
);

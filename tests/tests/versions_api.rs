//! Versions of what admins and owners edit as a whole, over real HTTP on both stores (issue 41,
//! point 1; the prequeue settings are in `prequeue_admin_api.rs`): a read answers an `ETag`, a
//! write on it answers the next one, a write on an older one is refused (412
//! `precondition_failed`) and stores nothing, two writes on one version let exactly one through,
//! and a client that sends no `If-Match` keeps working.

use anteroom_tests::TestApp;
use anteroom_tests::api::{call, code, job, put_if, queue, quota, read_tagged};
use anteroom_tests::both;
use serde_json::{Value, json};

/// The checks every versioned resource passes: `path` is read, changed with `first` on its
/// version, then `second` on the same (old) version is refused and leaves `first` stored; two
/// writes at once on one version (`second` and `third`, different bodies): one stored, one
/// refused; no `If-Match`: stored.
async fn versions_hold(
    app: &TestApp,
    token: &str,
    path: &str,
    [first, second, third]: [Value; 3],
    shown: fn(&Value) -> Value,
) {
    let (old, before) = read_tagged(app, path, token).await;
    let (again, _) = read_tagged(app, path, token).await;
    assert_eq!(old, again, "{path}: the same object, the same version");
    let (status, new, saved) = put_if(app, path, token, Some(&old), first.clone()).await;
    assert_eq!(status, 200, "{path}: {saved}");
    let new = new.unwrap_or_else(|| panic!("{path}: a write answers the new version"));
    assert_ne!(new, old, "{path}: a write moves the version");
    let (now, stored) = read_tagged(app, path, token).await;
    assert_eq!(now, new, "{path}: the version answered is the one read next");
    assert_ne!(shown(&stored), shown(&before), "{path}: the write changed something");

    let (status, _, refused) = put_if(app, path, token, Some(&old), second.clone()).await;
    assert_eq!(
        (status.as_u16(), code(&refused)),
        (412, "precondition_failed"),
        "{path}: {refused}"
    );
    assert_eq!(
        refused["error"]["details"]["etag"],
        json!(new),
        "{path}: the refusal names the version now"
    );
    let (after, unchanged) = read_tagged(app, path, token).await;
    assert_eq!(
        (after, shown(&unchanged)),
        (new.clone(), shown(&stored)),
        "{path}: nothing stored"
    );

    // Two admins saving at once on the same version: the writes take turns, the second sees
    // the first's version.
    let (a, b) = tokio::join!(
        put_if(app, path, token, Some(&new), second.clone()),
        put_if(app, path, token, Some(&new), third),
    );
    let mut statuses = [a.0.as_u16(), b.0.as_u16()];
    statuses.sort_unstable();
    assert_eq!(
        statuses,
        [200, 412],
        "{path}: one of two writes on one version: {} / {}",
        a.2,
        b.2
    );

    let (status, _, body) = put_if(app, path, token, None, second).await;
    assert_eq!(status, 200, "{path}: a client without If-Match still saves: {body}");
    // RFC 9110: If-Match compares strongly (a weak tag never matches) and takes a list.
    let (current, _) = read_tagged(app, path, token).await;
    let (status, _, body) = put_if(app, path, token, Some(&format!("W/{current}")), first.clone()).await;
    assert_eq!(status, 412, "{path}: a weak tag does not match: {body}");
    let (status, _, body) = put_if(app, path, token, Some(&format!("\"old\", {current}")), first).await;
    assert_eq!(status, 200, "{path}: one tag of the list is the version: {body}");
}

async fn templates_queues_and_destinations_are_versioned(app: TestApp) {
    let admin = app.admin_token().await;
    let kim = app.user_token("kim").await;
    let body = json!({"kind": "jupyter", "queue": "default",
        "tasks": [{"name": "main", "replicas": 1, "image": "jupyter/base", "command": ["sleep", "3600"],
            "resources": {"cpu": "1", "memory": "1Gi"}}]});
    let (status, template) = call(
        &app,
        "POST",
        "/api/v1/templates",
        &kim,
        Some(json!({"name": "nb", "description": "one", "body": body})),
    )
    .await;
    assert_eq!(status, 201, "{template}");
    let path = format!("/api/v1/templates/{}", template["id"]);
    let with = |description: &str| json!({"name": "nb", "description": description, "body": body});
    versions_hold(
        &app,
        &kim,
        &path,
        [with("two"), with("three"), with("four")],
        |t: &Value| t["description"].clone(),
    )
    .await;

    queue(&app, &admin, json!({"name": "team", "open": true})).await;
    let team = |display: &str| json!({"name": "team", "displayName": display, "open": true});
    versions_hold(
        &app,
        &admin,
        "/api/v1/admin/queues/team",
        [team("Team A"), team("Team B"), team("Team C")],
        |q| q["displayName"].clone(),
    )
    .await;
    // A queue's version follows its writes, not its usage: a job starting in it moves `used`
    // and keeps the version an admin's form was opened on.
    let (tag, idle) = read_tagged(&app, "/api/v1/admin/queues/team", &admin).await;
    let mut work = job("work", json!({"cpu": "2"}));
    work["queue"] = json!("team");
    let (status, answer) = call(&app, "POST", "/api/v1/jobs", &kim, Some(work)).await;
    assert_eq!(
        (status.as_u16(), &answer["admission"]["decision"]),
        (201, &json!("activated")),
        "{answer}"
    );
    let (still, busy) = read_tagged(&app, "/api/v1/admin/queues/team", &admin).await;
    assert_ne!(busy["used"], idle["used"], "the job counts in the queue's usage");
    assert_eq!(still, tag, "usage is not a change of the queue");
    let (status, _) = call(&app, "GET", "/api/v1/admin/queues/nowhere", &admin, None).await;
    assert_eq!(status, 404);
    let (status, _) = call(&app, "GET", "/api/v1/admin/queues/team", &kim, None).await;
    assert_eq!(status, 403, "a queue's members are for admins");

    let hosts = |h: &str| json!({"hosts": [h]});
    versions_hold(
        &app,
        &admin,
        "/api/v1/admin/webhook-destinations",
        [
            hosts("hooks.example.com"),
            hosts("chat.example.com"),
            hosts("mail.example.com"),
        ],
        |d| d["hosts"].clone(),
    )
    .await;
}
both!(
    templates_queues_and_destinations,
    templates_queues_and_destinations_are_versioned
);

async fn quotas_tolerations_and_volumes_are_versioned(app: TestApp) {
    let admin = app.admin_token().await;
    let kim = app.user_token("kim").await;

    let rule = quota(&app, &admin, "default", json!({"cpu": "4"})).await;
    let quota_path = format!("/api/v1/admin/queue-quotas/{}", rule["id"]);
    let cpu = |n: &str| json!({"queue": "default", "limits": {"cpu": n}});
    versions_hold(&app, &admin, &quota_path, [cpu("6"), cpu("8"), cpu("10")], |q| {
        q["limits"].clone()
    })
    .await;

    let gpu = json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"});
    let (status, rule) = call(
        &app,
        "POST",
        "/api/v1/admin/toleration-rules",
        &admin,
        Some(json!({"resource": "nvidia.com/a100", "tolerations": [gpu], "description": "one"})),
    )
    .await;
    assert_eq!(status, 201, "{rule}");
    let rule_path = format!("/api/v1/admin/toleration-rules/{}", rule["id"]);
    let why = |d: &str| json!({"resource": "nvidia.com/a100", "tolerations": [gpu], "description": d});
    versions_hold(&app, &admin, &rule_path, [why("two"), why("three"), why("four")], |r| {
        r["description"].clone()
    })
    .await;

    let data = |d: &str| {
        json!({"name": "data", "source": {"pvc": {"claimName": "data"}}, "mountPath": "/data",
            "readOnly": true, "description": d})
    };
    let (status, volume) = call(&app, "POST", "/api/v1/admin/volumes", &admin, Some(data("one"))).await;
    assert_eq!(status, 201, "{volume}");
    versions_hold(
        &app,
        &admin,
        "/api/v1/admin/volumes/data",
        [data("two"), data("three"), data("four")],
        |v| v["description"].clone(),
    )
    .await;

    for (path, missing) in [
        ("/api/v1/admin/queue-quotas/999999", "quota_not_found"),
        ("/api/v1/admin/toleration-rules/999999", "toleration_rule_not_found"),
        ("/api/v1/admin/volumes/nowhere", "volume_not_found"),
    ] {
        let (status, body) = call(&app, "GET", path, &admin, None).await;
        assert_eq!((status.as_u16(), code(&body)), (404, missing), "{path}: {body}");
    }
    for path in [&quota_path, &rule_path, "/api/v1/admin/volumes/data"] {
        let (status, _) = call(&app, "GET", path, &kim, None).await;
        assert_eq!(status, 403, "{path} is for admins");
    }
}
both!(
    quotas_tolerations_and_volumes,
    quotas_tolerations_and_volumes_are_versioned
);

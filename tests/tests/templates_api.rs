//! Saved job templates and the kinds' defaults over real HTTP on both stores (issue 24, point
//! 6): a user keeps their own, admins publish for everyone and mark one default per kind;
//! nobody learns of another's private template, nobody but an admin changes a published one,
//! and a template's body submits as a job.

use anteroom_shared::api::templates::{JobTemplate, TemplateBody};
use anteroom_tests::TestApp;
use anteroom_tests::api::{call, code, count};
use anteroom_tests::both;
use serde_json::{Value, json};

const TEMPLATES: &str = "/api/v1/templates";

/// A one-task notebook body (no name: a template's).
fn notebook(image: &str) -> Value {
    json!({"kind": "jupyter", "queue": "default",
        "tasks": [{"name": "main", "replicas": 1, "image": image, "command": ["sleep", "3600"],
            "resources": {"cpu": "1", "memory": "1Gi"}}]})
}

/// A template write of `body` under `name`.
fn write(name: &str, body: Value) -> Value {
    json!({"name": name, "description": "for tests", "body": body})
}

/// Creates a template and answers it; panics unless 201.
async fn create(app: &TestApp, token: &str, write: Value) -> Value {
    let (status, answer) = call(app, "POST", TEMPLATES, token, Some(write)).await;
    assert_eq!(status, 201, "{answer}");
    answer
}

/// The body of a template (or of a write) as the API's type, its defaults spelled out.
fn body_of(template: &Value) -> TemplateBody {
    serde_json::from_value(template["body"].clone()).unwrap_or_else(|e| panic!("{e}: {template}"))
}

fn id_of(template: &Value) -> i64 {
    template["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("no template in {template}"))
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

fn at(id: i64) -> String {
    format!("{TEMPLATES}/{id}")
}

async fn templates_are_created_listed_read_replaced_and_deleted_by_their_owner(app: TestApp) {
    let ann = app.user_token("ann").await;
    let small = create(&app, &ann, write("small", notebook("jupyter/base"))).await;
    assert_eq!(
        (
            small["owner"].as_str(),
            small["published"].as_bool(),
            small["defaultForKind"].as_bool()
        ),
        (Some("ann"), Some(false), Some(false)),
        "{small}"
    );
    assert_eq!(
        body_of(&small),
        body_of(&json!({"body": notebook("jupyter/base")})),
        "kept as written"
    );
    let big = create(&app, &ann, write("big", notebook("jupyter/scipy"))).await;
    let (status, list) = call(&app, "GET", TEMPLATES, &ann, None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(names(&list), ["big", "small"], "by name");

    let mut change = write("small-gpu", notebook("jupyter/pytorch"));
    change["description"] = json!("now with torch");
    let (status, replaced) = call(&app, "PUT", &at(id_of(&small)), &ann, Some(change)).await;
    assert_eq!(status, 200, "{replaced}");
    let (status, read) = call(&app, "GET", &at(id_of(&small)), &ann, None).await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(read, replaced);
    assert_eq!(
        (
            read["name"].as_str(),
            read["description"].as_str(),
            read["body"]["tasks"][0]["image"].as_str()
        ),
        (Some("small-gpu"), Some("now with torch"), Some("jupyter/pytorch"))
    );
    assert_eq!(read["createdAt"], small["createdAt"]);

    let (status, _) = call(&app, "DELETE", &at(id_of(&big)), &ann, None).await;
    assert_eq!(status, 204);
    let (status, gone) = call(&app, "GET", &at(id_of(&big)), &ann, None).await;
    assert_eq!((status.as_u16(), code(&gone)), (404, "template_not_found"));
    let (status, gone) = call(&app, "DELETE", &at(id_of(&big)), &ann, None).await;
    assert_eq!((status.as_u16(), code(&gone)), (404, "template_not_found"));
    let (_, list) = call(&app, "GET", TEMPLATES, &ann, None).await;
    assert_eq!(names(&list), ["small-gpu"]);
}
both!(
    crud,
    templates_are_created_listed_read_replaced_and_deleted_by_their_owner
);

async fn another_user_never_sees_a_private_template_and_cannot_change_a_published_one(app: TestApp) {
    let admin = app.admin_token().await;
    let ann = app.user_token("ann").await;
    let bob = app.user_token("bob").await;
    let private = id_of(&create(&app, &ann, write("mine", notebook("jupyter/base"))).await);
    let mut shared = write("team-notebook", notebook("jupyter/scipy"));
    shared["published"] = json!(true);
    let shared = id_of(&create(&app, &admin, shared).await);

    // Someone else's private template: the same 404 as one that does not exist.
    for (method, body) in [
        ("GET", None),
        ("PUT", Some(write("taken", notebook("busybox")))),
        ("DELETE", None),
    ] {
        let (status, answer) = call(&app, method, &at(private), &bob, body).await;
        assert_eq!(
            (status.as_u16(), code(&answer)),
            (404, "template_not_found"),
            "{method}: {answer}"
        );
    }
    let (_, list) = call(&app, "GET", TEMPLATES, &bob, None).await;
    assert_eq!(names(&list), ["team-notebook"], "published ones only");
    let (_, list) = call(&app, "GET", TEMPLATES, &ann, None).await;
    assert_eq!(names(&list), ["mine", "team-notebook"]);

    // A published one: read, never changed, by a user.
    let (status, read) = call(&app, "GET", &at(shared), &bob, None).await;
    assert_eq!(
        (status.as_u16(), read["owner"].as_str()),
        (200, Some("admin")),
        "{read}"
    );
    for (method, body) in [("PUT", Some(write("mine-now", notebook("busybox")))), ("DELETE", None)] {
        let (status, answer) = call(&app, method, &at(shared), &bob, body).await;
        assert_eq!(
            (status.as_u16(), code(&answer)),
            (403, "forbidden"),
            "{method}: {answer}"
        );
    }
    let (_, after) = call(&app, "GET", &at(shared), &admin, None).await;
    assert_eq!(after, read, "unchanged");

    // An admin lists the same (their own and the published ones) but may change any.
    let (_, list) = call(&app, "GET", TEMPLATES, &admin, None).await;
    assert_eq!(names(&list), ["team-notebook"]);
    let (status, changed) = call(
        &app,
        "PUT",
        &at(private),
        &admin,
        Some(write("mine", notebook("busybox"))),
    )
    .await;
    assert_eq!(
        (status.as_u16(), changed["owner"].as_str()),
        (200, Some("ann")),
        "the owner stays: {changed}"
    );
    // Once an admin published it, it is the admins' to change, its owner's included.
    let mut publish = write("mine", notebook("busybox"));
    publish["published"] = json!(true);
    let (status, _) = call(&app, "PUT", &at(private), &admin, Some(publish)).await;
    assert_eq!(status, 200);
    for (method, body) in [("PUT", Some(write("mine", notebook("other")))), ("DELETE", None)] {
        let (status, answer) = call(&app, method, &at(private), &ann, body).await;
        assert_eq!(
            (status.as_u16(), code(&answer)),
            (403, "forbidden"),
            "{method} by the owner: {answer}"
        );
    }
    let (status, _) = call(&app, "DELETE", &at(private), &admin, None).await;
    assert_eq!(status, 204);
}
both!(
    visibility,
    another_user_never_sees_a_private_template_and_cannot_change_a_published_one
);

async fn only_admins_publish_and_a_name_is_unique_per_owner(app: TestApp) {
    let admin = app.admin_token().await;
    let ann = app.user_token("ann").await;
    let bob = app.user_token("bob").await;
    let own = id_of(&create(&app, &ann, write("notebook", notebook("jupyter/base"))).await);
    for flag in ["published", "defaultForKind"] {
        let mut publish = write("public", notebook("jupyter/base"));
        publish["published"] = json!(true);
        publish[flag] = json!(true);
        let (status, answer) = call(&app, "POST", TEMPLATES, &ann, Some(publish.clone())).await;
        assert_eq!((status.as_u16(), code(&answer)), (403, "forbidden"), "{flag}: {answer}");
        let (status, answer) = call(&app, "PUT", &at(own), &ann, Some(publish)).await;
        assert_eq!((status.as_u16(), code(&answer)), (403, "forbidden"), "{flag}: {answer}");
    }
    let (_, read) = call(&app, "GET", &at(own), &ann, None).await;
    assert_eq!(read["published"], false, "{read}");
    assert_eq!(count(&app, "job_templates").await, 1, "nothing written");

    let (status, answer) = call(&app, "POST", TEMPLATES, &ann, Some(write("notebook", notebook("x")))).await;
    assert_eq!((status.as_u16(), code(&answer)), (409, "template_exists"), "{answer}");
    let other = id_of(&create(&app, &ann, write("other", notebook("jupyter/base"))).await);
    let (status, answer) = call(&app, "PUT", &at(other), &ann, Some(write("notebook", notebook("x")))).await;
    assert_eq!(
        (status.as_u16(), code(&answer)),
        (409, "template_exists"),
        "a rename onto another: {answer}"
    );
    let (status, _) = call(&app, "PUT", &at(own), &ann, Some(write("notebook", notebook("y")))).await;
    assert_eq!(status, 200, "keeping its own name is no clash");
    // Another owner may use the name.
    create(&app, &bob, write("notebook", notebook("jupyter/base"))).await;
    let mut published = write("notebook", notebook("jupyter/base"));
    published["published"] = json!(true);
    create(&app, &admin, published).await;
    // An admin renaming someone's template meets that owner's names, not the admin's own.
    create(&app, &admin, write("admins-own", notebook("jupyter/base"))).await;
    let (status, answer) = call(&app, "PUT", &at(other), &admin, Some(write("notebook", notebook("x")))).await;
    assert_eq!((status.as_u16(), code(&answer)), (409, "template_exists"), "{answer}");
    let (status, answer) = call(
        &app,
        "PUT",
        &at(other),
        &admin,
        Some(write("admins-own", notebook("x"))),
    )
    .await;
    assert_eq!(
        (status.as_u16(), answer["owner"].as_str()),
        (200, Some("ann")),
        "{answer}"
    );
}
both!(publishing_and_names, only_admins_publish_and_a_name_is_unique_per_owner);

async fn an_owner_keeps_at_most_a_hundred_templates(app: TestApp) {
    let ann = app.user_token("ann").await;
    for i in 0..100 {
        create(&app, &ann, write(&format!("t{i}"), notebook("busybox"))).await;
    }
    let (status, answer) = call(&app, "POST", TEMPLATES, &ann, Some(write("t100", notebook("busybox")))).await;
    assert_eq!((status.as_u16(), code(&answer)), (409, "template_limit"), "{answer}");
    assert_eq!(count(&app, "job_templates").await, 100);
    // The limit is the owner's: another user still saves theirs.
    let bob = app.user_token("bob").await;
    create(&app, &bob, write("t100", notebook("busybox"))).await;
}
both!(limit, an_owner_keeps_at_most_a_hundred_templates);

async fn an_invalid_body_is_refused_naming_the_field_and_nothing_is_written(app: TestApp) {
    let ann = app.user_token("ann").await;
    let kept = create(&app, &ann, write("kept", notebook("jupyter/base"))).await;
    let mut zero_cpu = notebook("jupyter/base");
    zero_cpu["tasks"][0]["resources"]["cpu"] = json!("0");
    let mut two_replicas = notebook("jupyter/base");
    two_replicas["tasks"][0]["replicas"] = json!(2);
    let mut default_unpublished = write("fine", notebook("jupyter/base"));
    default_unpublished["defaultForKind"] = json!(true);
    let mut named = notebook("jupyter/base");
    named["name"] = json!("a-job-name");
    for (body, field) in [
        (write("zero", zero_cpu), "body.tasks[0].resources.cpu"),
        (write("layout", two_replicas), "body.tasks"),
        (write("Not A Name", notebook("jupyter/base")), "name"),
        (default_unpublished, "defaultForKind"),
        (write("named", named), "body.name"),
    ] {
        for (method, path) in [("POST", TEMPLATES.to_owned()), ("PUT", at(id_of(&kept)))] {
            let (status, refused) = call(&app, method, &path, &ann, Some(body.clone())).await;
            assert_eq!(
                (status.as_u16(), code(&refused)),
                (422, "validation_failed"),
                "{method} {body}: {refused}"
            );
            assert_eq!(
                refused["error"]["details"]["fields"][0]["field"], field,
                "{method}: {refused}"
            );
        }
    }
    assert_eq!(count(&app, "job_templates").await, 1, "nothing written");
    let (_, read) = call(&app, "GET", &at(id_of(&kept)), &ann, None).await;
    assert_eq!(read, kept, "unchanged");
}
both!(
    invalid,
    an_invalid_body_is_refused_naming_the_field_and_nothing_is_written
);

async fn a_kind_has_at_most_one_default_and_the_form_starts_from_it(app: TestApp) {
    let admin = app.admin_token().await;
    let ann = app.user_token("ann").await;
    let (status, none) = call(&app, "GET", "/api/v1/job-defaults", &ann, None).await;
    assert_eq!((status.as_u16(), none), (200, json!([])));
    let default = |name: &str, body: Value| {
        let mut w = write(name, body);
        w["published"] = json!(true);
        w["defaultForKind"] = json!(true);
        w
    };
    let first = id_of(&create(&app, &admin, default("notebook-small", notebook("jupyter/base"))).await);
    let torch = json!({"kind": "pytorch", "tasks": [
        {"name": "master", "replicas": 1, "image": "pytorch/pytorch", "resources": {"cpu": "4", "memory": "16Gi"}}]});
    create(&app, &admin, default("torch", torch)).await;
    let second = id_of(&create(&app, &admin, default("notebook-gpu", notebook("jupyter/pytorch"))).await);

    let (_, defaults) = call(&app, "GET", "/api/v1/job-defaults", &ann, None).await;
    let pairs: Vec<(&str, &str)> = defaults
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["kind"].as_str().unwrap(), d["template"]["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        pairs,
        [("jupyter", "notebook-gpu"), ("pytorch", "torch")],
        "the later default took the kind: {defaults}"
    );
    let (_, earlier) = call(&app, "GET", &at(first), &admin, None).await;
    assert_eq!(earlier["defaultForKind"], false, "{earlier}");

    // Taking it back by a replace clears the other one in the same write.
    let (status, _) = call(
        &app,
        "PUT",
        &at(first),
        &admin,
        Some(default("notebook-small", notebook("jupyter/base"))),
    )
    .await;
    assert_eq!(status, 200);
    let (_, later) = call(&app, "GET", &at(second), &admin, None).await;
    assert_eq!(later["defaultForKind"], false, "{later}");
    let (_, defaults) = call(&app, "GET", "/api/v1/job-defaults", &ann, None).await;
    assert_eq!(defaults[0]["template"]["id"], first, "{defaults}");
    assert_eq!(defaults.as_array().unwrap().len(), 2, "{defaults}");
    // The store itself keeps one default per kind, whatever a write forgets.
    use sea_orm::ConnectionTrait;
    let doubled = app
        .state
        .db
        .execute_unprepared("UPDATE job_templates SET default_for_kind = TRUE")
        .await;
    assert!(doubled.is_err(), "two defaults of one kind were stored");
}
both!(
    kind_defaults,
    a_kind_has_at_most_one_default_and_the_form_starts_from_it
);

async fn a_templates_body_submits_as_a_job(app: TestApp) {
    let ann = app.user_token("ann").await;
    // CPU and memory left out: the submission fills in the kind's defaults, as it would here.
    let mut body = json!({"kind": "custom", "tasks": [{"name": "main", "replicas": 2, "image": "busybox",
        "command": ["sleep", "60"], "resources": {}, "env": [{"name": "MODE", "value": "eval"}]}]});
    let saved = create(&app, &ann, write("eval", body.clone())).await;
    let (_, read) = call(&app, "GET", &at(id_of(&saved)), &ann, None).await;
    let template: JobTemplate = serde_json::from_value(read).expect("a template");
    let job = template.body.into_job_body("eval-run-1");
    let (status, answer) = call(&app, "POST", "/api/v1/jobs", &ann, Some(json!(job))).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        (
            answer["job"]["name"].as_str(),
            answer["job"]["tasks"][0]["replicas"].as_u64()
        ),
        (Some("eval-run-1"), Some(2)),
        "{answer}"
    );
    // And a job body saves as a template, its name left behind.
    body["name"] = json!("eval-run-2");
    let from_job: TemplateBody = serde_json::from_value::<anteroom_shared::api::jobs::JobBody>(body)
        .expect("a job body")
        .into();
    create(&app, &ann, write("from-job", json!(from_job))).await;
}
both!(submits, a_templates_body_submits_as_a_job);

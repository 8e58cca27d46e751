use anteroom_shared::api::templates::TemplateWrite;
use anteroom_shared::scheduling::DefaultRequests;

use super::*;

const ANN: Caller<'static> = Caller {
    id: 2,
    name: "ann",
    admin: false,
};
const ADMIN: Caller<'static> = Caller {
    id: 1,
    name: "admin",
    admin: true,
};

#[test]
fn owners_write_their_private_templates_admins_any_and_others_see_only_published_ones() {
    let bob = 3;
    assert_eq!(access(ANN, ANN.id, false), Access::Write);
    assert_eq!(
        access(ANN, bob, false),
        Access::Hidden,
        "never reveal another's private one"
    );
    assert_eq!(access(ANN, bob, true), Access::Read);
    assert_eq!(
        access(ANN, ANN.id, true),
        Access::Read,
        "a published template is the admins' to change, even the owner's"
    );
    for (owner, published) in [(bob, false), (bob, true), (ADMIN.id, false), (ANN.id, true)] {
        assert_eq!(access(ADMIN, owner, published), Access::Write);
    }
}

fn write(body: serde_json::Value) -> TemplateWrite {
    serde_json::from_value(serde_json::json!({"name": "small", "body": body})).expect("a write")
}

fn fields(write: &TemplateWrite) -> Vec<String> {
    validate::problems(write, &DefaultRequests::default())
        .into_iter()
        .map(|(f, _)| f)
        .collect()
}

fn notebook() -> serde_json::Value {
    serde_json::json!({"kind": "jupyter", "tasks": [{"name": "main", "replicas": 1, "image": "jupyter/base", "resources": {}}]})
}

#[test]
fn a_body_passes_a_submissions_rules_with_the_kinds_default_requests_filled_in() {
    assert!(
        fields(&write(notebook())).is_empty(),
        "cpu and memory are the kind's defaults"
    );
    let mut body = notebook();
    body["tasks"][0]["replicas"] = serde_json::json!(2);
    body["tasks"][0]["image"] = serde_json::json!("has space");
    body["volumes"] = serde_json::json!(["data", "data"]);
    assert_eq!(
        fields(&write(body)),
        ["body.tasks[0].image", "body.tasks", "body.volumes[1]"]
    );
    let mut negative = notebook();
    negative["tasks"][0]["resources"] = serde_json::json!({"cpu": "-1", "memory": "1Gi"});
    assert_eq!(fields(&write(negative)), ["body.tasks[0].resources.cpu"]);
    // Requests each fine whose sum leaves the quantity range: the core's check, named here.
    let huge = serde_json::json!({"kind": "custom", "tasks": [{"name": "main", "replicas": 2, "image": "busybox",
        "resources": {"cpu": "1e33", "memory": "1Gi"}}]});
    assert_eq!(fields(&write(huge)), ["body.tasks[0].resources.cpu"]);
    let mut torch = serde_json::json!({"kind": "pytorch", "scheduleType": "backfill",
        "tasks": [{"name": "master", "replicas": 1, "image": "pytorch/pytorch", "resources": {}}]});
    assert_eq!(fields(&write(torch.clone())), ["body.scheduleType"]);
    torch["scheduleType"] = serde_json::json!("normal");
    assert!(fields(&write(torch)).is_empty());
}

#[test]
fn a_template_is_named_like_a_job_and_only_a_published_one_is_a_kinds_default() {
    let mut w = write(notebook());
    w.name = "Small Notebook".into();
    w.description = "x".repeat(1025);
    w.default_for_kind = true;
    assert_eq!(fields(&w), ["name", "description", "defaultForKind"]);
    w.name = "small-notebook".into();
    w.description = "é".repeat(1024);
    w.published = true;
    assert!(fields(&w).is_empty(), "{:?}", fields(&w));
}

//! Toleration rules over real HTTP on both stores (issue 24, point 1): a GPU job is admitted
//! and placed on the simulated cluster's tainted GPU pool through the seeded rule, and refused
//! without it; a queue's rule opens a team's dedicated nodes to it and its sub-queues only;
//! the rules' admin API refuses what Kubernetes would not take.

use anteroom::prequeue::{TaintEffect, Toleration, TolerationOperator};
use anteroom_tests::api::{call, code};
use anteroom_tests::both_driven;
use anteroom_tests::driven::*;
use serde_json::{Value, json};

const RULES: &str = "/api/v1/admin/toleration-rules";

/// The toleration of the seeded rule: the `nvidia.com/gpu` taint of GPU pools.
fn gpu_pool() -> Toleration {
    Toleration {
        key: Some("nvidia.com/gpu".into()),
        operator: TolerationOperator::Exists,
        value: None,
        effect: Some(TaintEffect::NoSchedule),
    }
}

/// The tolerations the simulated cluster's pods of `id` got.
async fn pod_tolerations(d: &Driven, id: i64) -> Vec<Toleration> {
    let spec = d.sim.spec_of(id).await.unwrap().expect("in the cluster");
    spec.tasks[0].tolerations.clone()
}

async fn a_gpu_job_runs_on_the_tainted_gpu_pool_through_the_seeded_rule(db: Option<String>) {
    // The default simulated cluster: its GPU nodes carry nvidia.com/gpu=present:NoSchedule.
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let (status, rules) = call(&d.app, "GET", RULES, &admin, None).await;
    assert_eq!(status, 200, "{rules}");
    assert_eq!(rules.as_array().unwrap().len(), 1, "{rules}");
    assert_eq!(rules[0]["resource"], "nvidia.com/*");
    let seeded = rules[0]["id"].as_i64().unwrap();

    let (gpu, answer) = submit(&d, &admin, gpu_job("train", "custom", 2, "normal")).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    d.settle().await;
    let job = detail(&d, &admin, gpu).await;
    assert_eq!(job["phase"], "Running", "{job}");
    assert!(job["nodes"][0].as_str().unwrap().starts_with("gpu-a100-"), "{job}");
    assert_eq!(pod_tolerations(&d, gpu).await, [gpu_pool()]);
    // A CPU job tolerates nothing and lands on the untainted node.
    let (cpu, _) = submit(&d, &admin, timed_job("cpu", json!({"cpu": "2", "memory": "1Gi"}), None)).await;
    d.settle().await;
    assert_eq!(detail(&d, &admin, cpu).await["nodes"], json!(["cpu-0"]));
    assert!(pod_tolerations(&d, cpu).await.is_empty());

    // Without the rule, no node takes a GPU job: refused, nothing written.
    let (status, _) = call(&d.app, "DELETE", &format!("{RULES}/{seeded}"), &admin, None).await;
    assert_eq!(status, 204);
    let (status, refused) = call(
        &d.app,
        "POST",
        "/api/v1/jobs",
        &admin,
        Some(gpu_job("again", "custom", 1, "normal")),
    )
    .await;
    assert_eq!((status.as_u16(), code(&refused)), (422, "unschedulable"), "{refused}");
    // The job admitted under the rule keeps what it got.
    assert_eq!(pod_tolerations(&d, gpu).await, [gpu_pool()]);
    d.round().await;
    assert_eq!(detail(&d, &admin, gpu).await["phase"], "Running");
}
both_driven!(gpu_pool, a_gpu_job_runs_on_the_tainted_gpu_pool_through_the_seeded_rule);

async fn a_waiting_job_keeps_the_tolerations_it_was_admitted_with_through_the_watcher(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    anteroom_tests::api::settings(&d.app, &admin, json!({"queueQuotaEnabled": true})).await;
    anteroom_tests::api::quota(&d.app, &admin, "default", json!({"nvidia.com/a100": "1"})).await;
    let (first, _) = submit(&d, &admin, gpu_job("first", "custom", 1, "normal")).await;
    let (held, answer) = submit(&d, &admin, gpu_job("held", "custom", 1, "normal")).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    // The API shows what its pods will carry.
    assert_eq!(
        detail(&d, &admin, held).await["tolerations"],
        json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    );
    d.settle().await;
    // The rule goes while the job waits: what it was admitted with still holds when the
    // watcher places it (the round's snapshot) and creates it (its pods).
    let (_, rules) = call(&d.app, "GET", RULES, &admin, None).await;
    let seeded = rules[0]["id"].as_i64().unwrap();
    let (status, _) = call(&d.app, "DELETE", &format!("{RULES}/{seeded}"), &admin, None).await;
    assert_eq!(status, 204);
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{first}"), &admin, None).await;
    assert_eq!(status, 204);
    d.advance(31).await;
    let report = d.round().await;
    assert_eq!(report.activated, [held], "{report:?}");
    d.settle().await;
    let job = detail(&d, &admin, held).await;
    assert_eq!(job["phase"], "Running", "{job}");
    assert!(job["nodes"][0].as_str().unwrap().starts_with("gpu-a100-"), "{job}");
    assert_eq!(pod_tolerations(&d, held).await, [gpu_pool()]);
}
both_driven!(
    kept_through_the_watcher,
    a_waiting_job_keeps_the_tolerations_it_was_admitted_with_through_the_watcher
);

/// A team's node (tainted `dedicated=vision`) big enough for 32 CPUs, and a small shared one.
const TEAM_NODES: &str = r#"
[[node]]
name = "vision-0"
cpu = "64"
memory = "256Gi"
taints = [{ key = "dedicated", value = "vision", effect = "NoSchedule" }]

[[node]]
name = "shared-0"
cpu = "8"
memory = "64Gi"
"#;

fn big_job(name: &str, queue: &str) -> Value {
    let mut body = timed_job(name, json!({"cpu": "32", "memory": "8Gi"}), None);
    body["queue"] = json!(queue);
    body
}

async fn a_queue_rule_opens_a_teams_nodes_to_its_queue_and_sub_queues_only(db: Option<String>) {
    let d = Driven::start(db, TEAM_NODES).await;
    let admin = d.app.admin_token().await;
    for body in [
        json!({"name": "vision", "open": true, "members": ["admin"]}),
        json!({"name": "vision-interns", "open": true, "parent": "vision", "members": ["admin"]}),
        json!({"name": "nlp", "open": true, "members": ["admin"]}),
    ] {
        let (status, answer) = call(&d.app, "POST", "/api/v1/admin/queues", &admin, Some(body)).await;
        assert_eq!(status, 201, "{answer}");
    }
    // Before the rule, the team's node takes nobody.
    let (status, refused) = call(&d.app, "POST", "/api/v1/jobs", &admin, Some(big_job("early", "vision"))).await;
    assert_eq!((status.as_u16(), code(&refused)), (422, "unschedulable"), "{refused}");

    let dedicated = json!({"key": "dedicated", "operator": "Equal", "value": "vision", "effect": "NoSchedule"});
    let (status, rule) = call(
        &d.app,
        "POST",
        RULES,
        &admin,
        Some(json!({"queue": "vision", "tolerations": [dedicated], "description": "the vision team's nodes"})),
    )
    .await;
    assert_eq!(status, 201, "{rule}");
    assert_eq!(rule["queue"], "vision");
    assert_eq!(rule["tolerations"][0], dedicated);

    for queue in ["vision", "vision-interns"] {
        let (id, answer) = submit(&d, &admin, big_job(&format!("in-{queue}"), queue)).await;
        assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
        d.settle().await;
        assert_eq!(detail(&d, &admin, id).await["nodes"], json!(["vision-0"]), "{queue}");
        assert_eq!(pod_tolerations(&d, id).await[0].value.as_deref(), Some("vision"));
    }
    let (status, refused) = call(&d.app, "POST", "/api/v1/jobs", &admin, Some(big_job("other", "nlp"))).await;
    assert_eq!((status.as_u16(), code(&refused)), (422, "unschedulable"), "{refused}");
}
both_driven!(
    team_nodes,
    a_queue_rule_opens_a_teams_nodes_to_its_queue_and_sub_queues_only
);

async fn the_rules_api_refuses_what_kubernetes_would_not_take_and_users(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let user = d.app.user_token("ann").await;
    let gpu = json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"});
    let (status, _) = call(&d.app, "GET", RULES, &user, None).await;
    assert_eq!(status, 403);
    let (status, _) = call(
        &d.app,
        "POST",
        RULES,
        &user,
        Some(json!({"resource": "nvidia.com/a100", "tolerations": [gpu]})),
    )
    .await;
    assert_eq!(status, 403);
    let cases = [
        (
            json!({"resource": "nvidia.com/a100", "queue": "default", "tolerations": [gpu]}),
            "queue",
        ),
        (json!({"tolerations": [gpu]}), "resource"),
        (json!({"resource": "cpu", "tolerations": [gpu]}), "resource"),
        (json!({"resource": "nvidia.com/a100", "tolerations": []}), "tolerations"),
        (
            json!({"resource": "nvidia.com/a100", "tolerations": [{"key": "Bad Key", "operator": "Exists"}]}),
            "tolerations[0]",
        ),
        (
            json!({"resource": "nvidia.com/a100", "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}),
            "tolerations[0]",
        ),
        (
            json!({"resource": "nvidia.com/a100", "tolerations": [{"operator": "Equal", "value": "v"}]}),
            "tolerations[0]",
        ),
        // Every taint (the control plane's, every team's): Kubernetes would take it, a rule not.
        (
            json!({"resource": "nvidia.com/a100", "tolerations": [{"operator": "Exists"}]}),
            "tolerations[0]",
        ),
    ];
    for (body, field) in cases {
        let (status, answer) = call(&d.app, "POST", RULES, &admin, Some(body.clone())).await;
        assert_eq!(status, 422, "{body} → {answer}");
        let fields: Vec<&str> = answer["error"]["details"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["field"].as_str().unwrap())
            .collect();
        assert!(fields.contains(&field), "{body} → {answer}");
    }
    let (status, answer) = call(
        &d.app,
        "POST",
        RULES,
        &admin,
        Some(json!({"queue": "nowhere", "tolerations": [gpu]})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&answer)), (404, "queue_not_found"), "{answer}");
    let (status, answer) = call(
        &d.app,
        "PUT",
        &format!("{RULES}/999"),
        &admin,
        Some(json!({"resource": "nvidia.com/v100", "tolerations": [gpu]})),
    )
    .await;
    assert_eq!(
        (status.as_u16(), code(&answer)),
        (404, "toleration_rule_not_found"),
        "{answer}"
    );
    // Nothing was written by any of these.
    let (_, rules) = call(&d.app, "GET", RULES, &admin, None).await;
    assert_eq!(rules.as_array().unwrap().len(), 1, "only the seeded rule: {rules}");
    // A replace keeps the id and changes what applies.
    let id = rules[0]["id"].as_i64().unwrap();
    let (status, replaced) = call(
        &d.app,
        "PUT",
        &format!("{RULES}/{id}"),
        &admin,
        Some(json!({"resource": "nvidia.com/v100", "tolerations": [gpu], "description": "V100 only"})),
    )
    .await;
    assert_eq!(status, 200, "{replaced}");
    assert_eq!(
        (replaced["id"].as_i64(), replaced["resource"].as_str()),
        (Some(id), Some("nvidia.com/v100"))
    );
    let (status, refused) = call(
        &d.app,
        "POST",
        "/api/v1/jobs",
        &admin,
        Some(gpu_job("a100", "custom", 1, "normal")),
    )
    .await;
    assert_eq!(
        (status.as_u16(), code(&refused)),
        (422, "unschedulable"),
        "an A100 job no longer tolerates the pool"
    );
    // A queue's rules go with the queue.
    let (status, _) = call(
        &d.app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "tmp", "open": true})),
    )
    .await;
    assert_eq!(status, 201);
    let (status, _) = call(
        &d.app,
        "POST",
        RULES,
        &admin,
        Some(json!({"queue": "tmp", "tolerations": [gpu]})),
    )
    .await;
    assert_eq!(status, 201);
    let (status, body) = call(&d.app, "DELETE", "/api/v1/admin/queues/tmp", &admin, None).await;
    assert_eq!(status, 204, "{body}");
    let (_, rules) = call(&d.app, "GET", RULES, &admin, None).await;
    assert_eq!(rules.as_array().unwrap().len(), 1, "{rules}");
}
both_driven!(
    rules_api,
    the_rules_api_refuses_what_kubernetes_would_not_take_and_users
);

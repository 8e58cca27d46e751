//! What a job's pods get beyond its resources, over real HTTP (issue 24, point 2): the
//! environment of each task, validated, kept with the job and handed to the cluster.

use anteroom_tests::api::{call, code, count};
use anteroom_tests::both_driven;
use anteroom_tests::driven::*;
use serde_json::json;

async fn a_tasks_environment_reaches_its_pods_and_bad_names_are_refused(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let mut body = timed_job("env", json!({"cpu": "1", "memory": "1Gi"}), None);
    body["tasks"][0]["env"] = json!([{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "EMPTY"}]);
    let (id, answer) = submit(&d, &admin, body.clone()).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    d.settle().await;
    let spec = d.sim.spec_of(id).await.unwrap().expect("in the cluster");
    let env: Vec<(String, String)> = spec.tasks[0]
        .env
        .iter()
        .map(|v| (v.name.clone(), v.value.clone()))
        .collect();
    assert_eq!(
        env,
        [
            ("NCCL_DEBUG".to_owned(), "INFO".to_owned()),
            ("EMPTY".to_owned(), String::new())
        ]
    );

    for (vars, field) in [
        (json!([{"name": "1BAD", "value": "x"}]), "tasks[0].env[0].name"),
        (
            json!([{"name": "ANTEROOM_PREEMPTED", "value": "1"}]),
            "tasks[0].env[0].name",
        ),
        (
            json!([{"name": "A", "value": "x".repeat(5000)}]),
            "tasks[0].env[0].value",
        ),
    ] {
        let before = count(&d.app, "jobs").await;
        body["name"] = json!("env-bad");
        body["tasks"][0]["env"] = vars.clone();
        let (status, refused) = call(&d.app, "POST", "/api/v1/jobs", &admin, Some(body.clone())).await;
        assert_eq!(
            (status.as_u16(), code(&refused)),
            (422, "validation_failed"),
            "{vars}: {refused}"
        );
        assert_eq!(refused["error"]["details"]["fields"][0]["field"], field, "{refused}");
        assert_eq!(count(&d.app, "jobs").await, before, "nothing written");
    }
    // A secret reference is not a value: the body's form has no place for it.
    body["tasks"][0]["env"] = json!([{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]);
    let (status, refused) = call(&d.app, "POST", "/api/v1/jobs", &admin, Some(body)).await;
    assert_eq!(status, 422, "{refused}");
}
both_driven!(
    environment,
    a_tasks_environment_reaches_its_pods_and_bad_names_are_refused
);

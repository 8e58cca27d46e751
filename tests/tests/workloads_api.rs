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

async fn training_jobs_get_shared_memory_by_default_and_others_when_they_ask(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let task = |name: &str, shm: Option<&str>| {
        let mut t = json!({"name": name, "replicas": 1, "image": "pytorch/pytorch", "command": ["sleep", "60"],
            "resources": {"cpu": "2", "memory": "8Gi"}});
        if let Some(size) = shm {
            t["shmSize"] = json!(size);
        }
        t
    };
    let shm_of = |id: i64| {
        let sim = d.sim.clone();
        async move {
            let spec = sim.spec_of(id).await.unwrap().expect("in the cluster");
            spec.tasks
                .iter()
                .map(|t| t.shm.map(|q| q.to_string()))
                .collect::<Vec<_>>()
        }
    };
    let torch = json!({"name": "torch", "kind": "pytorch", "tasks": [task("master", None), task("worker", Some("0"))]});
    let (id, answer) = submit(&d, &admin, torch).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    // A quarter of 8Gi for the master; the worker opted out.
    assert_eq!(shm_of(id).await, [Some("2Gi".to_owned()), None]);
    let custom = json!({"name": "custom", "kind": "custom", "tasks": [task("main", Some("1Gi"))]});
    let (id, _) = submit(&d, &admin, custom).await;
    assert_eq!(shm_of(id).await, [Some("1Gi".to_owned())]);
    let plain = json!({"name": "plain", "kind": "custom", "tasks": [task("main", None)]});
    let (id, _) = submit(&d, &admin, plain).await;
    assert_eq!(shm_of(id).await, [None], "opt-in for the other kinds");
    let too_big = json!({"name": "big", "kind": "custom", "tasks": [task("main", Some("9Gi"))]});
    let (status, refused) = call(&d.app, "POST", "/api/v1/jobs", &admin, Some(too_big)).await;
    assert_eq!(
        (status.as_u16(), code(&refused)),
        (422, "validation_failed"),
        "{refused}"
    );
    assert_eq!(refused["error"]["details"]["fields"][0]["field"], "tasks[0].shmSize");
}
both_driven!(
    shared_memory,
    training_jobs_get_shared_memory_by_default_and_others_when_they_ask
);

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

async fn a_job_mounts_catalogue_volumes_its_queue_is_offered_and_no_others(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let admin = d.app.admin_token().await;
    let ann = d.app.user_token("ann").await;
    for body in [
        json!({"name": "vision", "open": true, "members": ["ann"]}),
        json!({"name": "vision-interns", "open": true, "parent": "vision", "members": ["ann"]}),
    ] {
        let (status, answer) = call(&d.app, "POST", "/api/v1/admin/queues", &admin, Some(body)).await;
        assert_eq!(status, 201, "{answer}");
    }
    let imagenet = json!({"name": "imagenet", "source": {"pvc": {"claimName": "imagenet-ro"}},
        "mountPath": "/data/imagenet", "readOnly": true, "queues": ["vision"], "description": "ImageNet 2012"});
    let scratch = json!({"name": "scratch", "source": {"nfs": {"server": "10.0.0.5", "path": "/export/scratch"}},
        "mountPath": "/scratch"});
    for body in [&imagenet, &scratch] {
        let (status, answer) = call(&d.app, "POST", "/api/v1/admin/volumes", &admin, Some(body.clone())).await;
        assert_eq!(status, 201, "{answer}");
    }
    // The catalogue refuses what it cannot mount, a second entry of a name, a rename.
    let (status, answer) = call(&d.app, "POST", "/api/v1/admin/volumes", &admin, Some(imagenet.clone())).await;
    assert_eq!((status.as_u16(), code(&answer)), (409, "volume_exists"));
    let mut bad = imagenet.clone();
    bad["name"] = json!("etc");
    bad["mountPath"] = json!("/proc/x");
    let (status, answer) = call(&d.app, "POST", "/api/v1/admin/volumes", &admin, Some(bad)).await;
    assert_eq!(
        (
            status.as_u16(),
            answer["error"]["details"]["fields"][0]["field"].as_str()
        ),
        (422, Some("mountPath"))
    );
    let mut renamed = imagenet.clone();
    renamed["name"] = json!("imagenet2");
    let (status, _) = call(&d.app, "PUT", "/api/v1/admin/volumes/imagenet", &admin, Some(renamed)).await;
    assert_eq!(status, 422);
    let (status, _) = call(&d.app, "GET", "/api/v1/admin/volumes", &ann, None).await;
    assert_eq!(status, 403);

    // Users see what their queue is offered, without sources.
    let (status, choices) = call(&d.app, "GET", "/api/v1/volumes?queue=vision-interns", &ann, None).await;
    assert_eq!(status, 200, "{choices}");
    let names: Vec<&str> = choices
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["imagenet", "scratch"]);
    assert!(choices[0].get("source").is_none(), "{choices}");
    let (_, choices) = call(&d.app, "GET", "/api/v1/volumes", &ann, None).await;
    assert_eq!(
        choices.as_array().unwrap().len(),
        1,
        "default is offered the open volume only: {choices}"
    );

    let mut body = timed_job("train", json!({"cpu": "1", "memory": "1Gi"}), None);
    body["volumes"] = json!(["imagenet", "scratch"]);
    let before = count(&d.app, "jobs").await;
    let (status, refused) = call(&d.app, "POST", "/api/v1/jobs", &ann, Some(body.clone())).await;
    assert_eq!(
        (status.as_u16(), code(&refused)),
        (403, "volume_forbidden"),
        "{refused}"
    );
    body["volumes"] = json!(["nope"]);
    let (status, refused) = call(&d.app, "POST", "/api/v1/jobs", &ann, Some(body.clone())).await;
    assert_eq!(
        (
            status.as_u16(),
            refused["error"]["details"]["fields"][0]["field"].as_str()
        ),
        (422, Some("volumes[0]"))
    );
    assert_eq!(count(&d.app, "jobs").await, before, "nothing written");

    body["queue"] = json!("vision-interns");
    body["volumes"] = json!(["imagenet", "scratch"]);
    let (id, answer) = submit(&d, &ann, body).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    // The catalogue changes later; the job keeps what it was admitted with.
    let (status, _) = call(&d.app, "DELETE", "/api/v1/admin/volumes/scratch", &admin, None).await;
    assert_eq!(status, 204);
    let (status, answer) = call(&d.app, "DELETE", "/api/v1/admin/volumes/scratch", &admin, None).await;
    assert_eq!((status.as_u16(), code(&answer)), (404, "volume_not_found"));
    d.settle().await;
    let spec = d.sim.spec_of(id).await.unwrap().expect("in the cluster");
    let mounts: Vec<(&str, &str, bool)> = spec.tasks[0]
        .volumes
        .iter()
        .map(|m| (m.name.as_str(), m.mount_path.as_str(), m.read_only))
        .collect();
    assert_eq!(
        mounts,
        [("imagenet", "/data/imagenet", true), ("scratch", "/scratch", false)]
    );
    // The API shows them, without their sources.
    let job = detail(&d, &ann, id).await;
    assert_eq!(job["volumes"][0]["mountPath"], "/data/imagenet", "{job}");
    assert!(job["volumes"][0].get("source").is_none(), "{job}");
    // A queue a volume is offered to stays until the volume no longer names it: a queue made
    // later under its name must not inherit another team's data.
    let (status, answer) = call(
        &d.app,
        "POST",
        "/api/v1/admin/queues",
        &admin,
        Some(json!({"name": "tmp", "open": true})),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let mut tmp = imagenet.clone();
    tmp["name"] = json!("tmp-data");
    tmp["queues"] = json!(["tmp"]);
    let (status, _) = call(&d.app, "POST", "/api/v1/admin/volumes", &admin, Some(tmp)).await;
    assert_eq!(status, 201);
    let (status, answer) = call(&d.app, "DELETE", "/api/v1/admin/queues/tmp", &admin, None).await;
    assert_eq!((status.as_u16(), code(&answer)), (409, "queue_in_use"), "{answer}");
    assert_eq!(answer["error"]["details"]["volumes"], json!(["tmp-data"]));
    let (status, _) = call(&d.app, "DELETE", "/api/v1/admin/volumes/tmp-data", &admin, None).await;
    assert_eq!(status, 204);
    let (status, _) = call(&d.app, "DELETE", "/api/v1/admin/queues/tmp", &admin, None).await;
    assert_eq!(status, 204);
}
both_driven!(
    volumes,
    a_job_mounts_catalogue_volumes_its_queue_is_offered_and_no_others
);

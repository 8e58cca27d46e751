//! Running a job again (issue 24, point 6): `POST /api/v1/jobs/{id}/resubmit` makes a new job
//! from the old one's body under the next run name, with optional changes, through the same
//! checks as a submission.

use anteroom_tests::api::{call, code, count};
use anteroom_tests::both_driven;
use anteroom_tests::driven::*;
use serde_json::json;

async fn a_job_runs_again_as_it_was_or_with_changes_and_only_for_who_may_see_it(db: Option<String>) {
    let d = Driven::start(db, "").await;
    let ann = d.app.user_token("ann").await;
    let bob = d.app.user_token("bob").await;
    let mut body = timed_job("train", json!({"cpu": "1", "memory": "2Gi"}), Some(60));
    body["tasks"][0]["env"] = json!([{"name": "SEED", "value": "7"}]);
    let (first, _) = submit(&d, &ann, body).await;

    let again = |id: i64, token: String, changes: serde_json::Value| {
        let app = &d.app;
        async move {
            call(
                app,
                "POST",
                &format!("/api/v1/jobs/{id}/resubmit"),
                &token,
                Some(changes),
            )
            .await
        }
    };
    let (status, answer) = again(first, ann.clone(), json!({})).await;
    assert_eq!(status, 201, "{answer}");
    let second = answer["job"]["id"].as_i64().unwrap();
    assert_ne!(second, first, "a new job");
    assert_eq!(answer["job"]["name"], "train-r2");
    assert_eq!(answer["job"]["owner"], "ann");
    assert_eq!(
        answer["job"]["tasks"][0]["env"],
        json!([{"name": "SEED", "value": "7"}])
    );
    assert_eq!(answer["job"]["tasks"][0]["command"], json!(["sleep", "60"]));
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");

    // The run of a run gets the next number; changes replace what they name.
    let (_, answer) = again(second, ann.clone(), json!({})).await;
    assert_eq!(answer["job"]["name"], "train-r3");
    let mut task = answer["job"]["tasks"][0].clone();
    task["resources"] = json!({"cpu": "2", "memory": "4Gi"});
    let (status, answer) = again(first, ann.clone(), json!({"name": "bigger", "tasks": [task]})).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["job"]["name"], "bigger");
    assert_eq!(answer["job"]["resources"]["cpu"], "2");

    // Changes are checked as a submission is, and a refusal writes nothing.
    let before = count(&d.app, "jobs").await;
    let (status, refused) = again(first, ann.clone(), json!({"tasks": []})).await;
    assert_eq!(
        (status.as_u16(), code(&refused)),
        (422, "validation_failed"),
        "{refused}"
    );
    let (status, refused) = again(first, ann.clone(), json!({"priority": 9})).await;
    assert_eq!(
        (status.as_u16(), code(&refused)),
        (422, "validation_failed"),
        "{refused}"
    );
    // Another user's job is not there for bob.
    let (status, refused) = again(first, bob.clone(), json!({})).await;
    assert_eq!((status.as_u16(), code(&refused)), (404, "job_not_found"), "{refused}");
    assert_eq!(count(&d.app, "jobs").await, before, "nothing written");

    // A retried run again with the same key is one job.
    for _ in 0..2 {
        let res = d
            .app
            .client
            .post(d.app.url(&format!("/api/v1/jobs/{first}/resubmit")))
            .bearer_auth(&ann)
            .header("Idempotency-Key", "rerun-1")
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
    }
    assert_eq!(count(&d.app, "jobs").await, before + 1, "one job for one key");
}
both_driven!(
    resubmit,
    a_job_runs_again_as_it_was_or_with_changes_and_only_for_who_may_see_it
);

//! A requeue admits again (issue 41, point 3; `spec/prequeue.md` §6): a preempted job that
//! asked to come back is admitted like a new submission when its pods are gone. Its queue closed
//! to its owner or deleted, or backfill switched off, since the preemption: the job stays
//! `Preempted`, its timeline says why with the code a submission would get, and it never reaches
//! the prequeue again.

use anteroom_tests::api::{call, metric, queue, settings};
use anteroom_tests::both_driven;
use anteroom_tests::driven::{Driven, GPU_NODES, detail, gpu_job, kinds, node_with_three_elastic_jobs_in, phase};
use serde_json::{Value, json};

/// The preempted notebook of `queue` whose requeue is refused once `change` ran, with the
/// refusal's code `expected`.
async fn refused_after(
    db: Option<String>,
    queue_name: &str,
    change: fn(&Driven, String) -> futures::future::BoxFuture<'_, ()>,
    expected: &str,
) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    settings(&d.app, &admin, json!({"requeueByDefault": true})).await;
    if queue_name != "default" {
        // Its jobs get an hour's runtime limit (one test lowers the queue's maximum below it).
        queue(
            &d.app,
            &admin,
            json!({"name": queue_name, "open": true, "defaultRuntimeSeconds": 3600}),
        )
        .await;
    }
    let (victims, _) = node_with_three_elastic_jobs_in(queue_name, &d, gpu_job("train", "custom", 4, "normal")).await;
    let nb4 = victims[2];
    d.advance(61).await;
    assert_eq!(d.round().await.preempted, [nb4]);
    assert_eq!(phase(&d, &admin, nb4).await, "Preempted");
    let requeued_before = metric(&d.app, "anteroom_prequeue_requeued_total").await;
    change(&d, admin.clone()).await;
    // Its pods gone: the requeue admits it again, and refuses it.
    d.advance(31).await;
    let ended = detail(&d, &admin, nb4).await;
    assert_eq!(
        (ended["phase"].as_str(), ended["requeues"].as_i64()),
        (Some("Preempted"), Some(0)),
        "{ended}"
    );
    let last: &Value = ended["events"].as_array().unwrap().last().unwrap();
    assert_eq!(
        (last["kind"].as_str(), last["details"]["code"].as_str()),
        (Some("requeue_refused"), Some(expected)),
        "{last}"
    );
    assert!(!kinds(&ended).contains(&"requeued".to_owned()), "{ended}");
    assert_eq!(
        metric(&d.app, "anteroom_prequeue_requeued_total").await,
        requeued_before
    );
    // Its owner reads why (the event is theirs too), and a round does not bring it back.
    let eli = d.app.token("eli", anteroom_tests::USER_PASSWORD).await;
    let seen = detail(&d, &eli, nb4).await;
    assert_eq!(kinds(&seen).last().map(String::as_str), Some("requeue_refused"));
    d.round().await;
    assert_eq!(phase(&d, &admin, nb4).await, "Preempted");
    // Preempted for good: a delete is refused as for any finished job.
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{nb4}"), &eli, None).await;
    assert_eq!(status, 409);
}

async fn a_queue_closed_to_its_owner_since_does_not_requeue(db: Option<String>) {
    refused_after(
        db,
        "team",
        |d, admin| {
            Box::pin(async move {
                let (status, body) = call(
                    &d.app,
                    "PUT",
                    "/api/v1/admin/queues/team",
                    &admin,
                    Some(json!({"name": "team", "open": false, "members": []})),
                )
                .await;
                assert_eq!(status, 200, "{body}");
            })
        },
        "queue_forbidden",
    )
    .await;
}
both_driven!(queue_closed, a_queue_closed_to_its_owner_since_does_not_requeue);

async fn a_queue_deleted_since_does_not_requeue(db: Option<String>) {
    refused_after(
        db,
        "team",
        |d, admin| {
            Box::pin(async move {
                // Its other jobs deleted first: a queue with unfinished jobs stays.
                let (_, running) = call(
                    &d.app,
                    "GET",
                    "/api/v1/admin/jobs?queue=team&phase=Running",
                    &admin,
                    None,
                )
                .await;
                for job in running["items"].as_array().unwrap() {
                    let (status, _) =
                        call(&d.app, "DELETE", &format!("/api/v1/jobs/{}", job["id"]), &admin, None).await;
                    assert_eq!(status, 204);
                }
                let (status, body) = call(&d.app, "DELETE", "/api/v1/admin/queues/team", &admin, None).await;
                assert_eq!(status, 204, "{body}");
            })
        },
        "queue_not_found",
    )
    .await;
}
both_driven!(queue_deleted, a_queue_deleted_since_does_not_requeue);

async fn a_backfill_job_is_not_requeued_once_backfill_is_off(db: Option<String>) {
    refused_after(
        db,
        "default",
        |d, admin| Box::pin(async move { settings(&d.app, &admin, json!({"backfillEnabled": false})).await }),
        "backfill_disabled",
    )
    .await;
}
both_driven!(backfill_off, a_backfill_job_is_not_requeued_once_backfill_is_off);

async fn a_queue_whose_runtime_maximum_was_lowered_since_does_not_requeue(db: Option<String>) {
    refused_after(
        db,
        "team",
        |d, admin| {
            Box::pin(async move {
                let (status, body) = call(
                    &d.app,
                    "PUT",
                    "/api/v1/admin/queues/team",
                    &admin,
                    Some(json!({"name": "team", "open": true, "members": [],
                        "defaultRuntimeSeconds": 600, "maxRuntimeSeconds": 600})),
                )
                .await;
                assert_eq!(status, 200, "{body}");
            })
        },
        "validation_failed",
    )
    .await;
}
both_driven!(
    runtime_lowered,
    a_queue_whose_runtime_maximum_was_lowered_since_does_not_requeue
);

//! Budgets per queue end to end (`spec/prequeue.md` §10, `GET/PUT/DELETE
//! /api/v1/admin/queues/{name}/budget`): a lab's monthly GPU-hours measured from the usage
//! history to the second; once spent, with the hold chosen, its normal jobs (and its
//! sub-queues') wait with `budget_exhausted` naming the queue, the use and when it renews,
//! Elastic jobs still run; raising the budget releases them at once, and so does a new month.

use anteroom_tests::api::{call, code, queue, settings};
use anteroom_tests::both_driven;
use anteroom_tests::driven::{Driven, GPU_NODES, detail, gpu_job, phase, reason_codes, submit};
use serde_json::{Value, json};

fn in_queue(name: &str, queue: &str, gpus: u32, seconds: Option<u32>, schedule: &str) -> Value {
    let mut body = gpu_job(name, "custom", gpus, schedule);
    body["queue"] = json!(queue);
    if let Some(s) = seconds {
        body["tasks"][0]["command"] = json!(["sleep", s.to_string()]);
    }
    body
}

async fn a_spent_budget_holds_normal_jobs_until_raised_or_renewed(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    let nina = d.app.user_token("nina").await;
    settings(&d.app, &admin, json!({"backfillEnabled": true})).await;
    queue(&d.app, &admin, json!({"name": "lab", "open": true})).await;
    queue(
        &d.app,
        &admin,
        json!({"name": "lab-nlp", "open": true, "parent": "lab"}),
    )
    .await;

    // Bad budgets change nothing; a queue without one answers 404.
    let path = "/api/v1/admin/queues/lab/budget";
    let (status, body) = call(&d.app, "GET", path, &admin, None).await;
    assert_eq!((status.as_u16(), code(&body)), (404, "budget_not_found"), "{body}");
    for bad in [
        json!({"period": "day", "gpuHours": 1}),
        json!({"period": "month", "gpuHours": -1}),
        json!({"period": "month"}),
        json!({"period": "month", "gpuHours": "many"}),
    ] {
        let (status, body) = call(&d.app, "PUT", path, &admin, Some(bad.clone())).await;
        assert_eq!(status, 422, "{bad}: {body}");
    }
    let (status, _) = call(&d.app, "GET", path, &admin, None).await;
    assert_eq!(status, 404, "nothing stored");
    let (status, body) = call(
        &d.app,
        "PUT",
        "/api/v1/admin/queues/nope/budget",
        &admin,
        Some(json!({"period": "month", "gpuHours": 1})),
    )
    .await;
    assert_eq!((status.as_u16(), code(&body)), (404, "queue_not_found"), "{body}");
    let (status, _) = call(
        &d.app,
        "PUT",
        path,
        &nina,
        Some(json!({"period": "month", "gpuHours": 1})),
    )
    .await;
    assert_eq!(status, 403, "admins only");

    // One GPU-hour a month, held when spent.
    let (status, set) = call(
        &d.app,
        "PUT",
        path,
        &admin,
        Some(json!({"period": "month", "gpuHours": 1, "holdWhenExhausted": true})),
    )
    .await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(set["usedGpuHours"], 0.0);
    assert_eq!(set["periodStart"], "2026-11-01T00:00:00Z");
    assert_eq!(set["periodEnd"], "2026-12-01T00:00:00Z");
    assert_eq!(
        (set["exhausted"].clone(), set["holding"].clone()),
        (json!(false), json!(false))
    );

    // A bad body changes nothing of a stored budget either; one without the hold keeps it.
    let (status, _) = call(
        &d.app,
        "PUT",
        path,
        &admin,
        Some(json!({"period": "month", "gpuHours": -5})),
    )
    .await;
    assert_eq!(status, 422);
    let (_, kept) = call(&d.app, "GET", path, &admin, None).await;
    assert_eq!(
        (kept["gpuHours"].clone(), kept["holdWhenExhausted"].clone()),
        (json!(1.0), json!(true)),
        "{kept}"
    );
    let (_, kept) = call(
        &d.app,
        "PUT",
        path,
        &admin,
        Some(json!({"period": "month", "gpuHours": 1})),
    )
    .await;
    assert_eq!(
        kept["holdWhenExhausted"], true,
        "a client that does not send the hold keeps it: {kept}"
    );

    // Two GPUs for 30 minutes in the sub-queue spend it exactly; an Elastic GPU does not.
    let (first, answer) = submit(&d, &nina, in_queue("first", "lab-nlp", 2, Some(1800), "normal")).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    submit(&d, &nina, in_queue("spare", "lab", 1, Some(600), "backfill")).await;
    d.settle().await;
    d.advance(1800).await;
    d.settle().await;
    assert_eq!(phase(&d, &nina, first).await, "Completed");
    d.round().await;
    let (_, now) = call(&d.app, "GET", path, &admin, None).await;
    assert_eq!(now["usedGpuHours"], 1.0, "{now}");
    assert!(now["backfillGpuHours"].as_f64().unwrap() > 0.0, "{now}");
    assert_eq!(
        (now["exhausted"].clone(), now["holding"].clone()),
        (json!(true), json!(true)),
        "{now}"
    );

    // Held: a normal job of the sub-queue waits and says why; an Elastic job still runs.
    let (held, answer) = submit(&d, &nina, in_queue("second", "lab-nlp", 1, None, "normal")).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    let reason = &answer["admission"]["reasons"][0];
    assert_eq!(reason["code"], "budget_exhausted", "{answer}");
    assert_eq!(reason["details"]["queue"], "lab");
    assert_eq!(reason["details"]["jobQueue"], "lab-nlp");
    assert_eq!(reason["details"]["usedGpuHours"], 1.0);
    assert_eq!(reason["details"]["budgetGpuHours"], 1.0);
    assert_eq!(reason["details"]["resetsAt"], "2026-12-01T00:00:00Z");
    let (_, answer) = submit(&d, &nina, in_queue("elastic", "lab", 1, None, "backfill")).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    // Rounds keep it, with the reason, and no estimate.
    d.advance(60).await;
    let report = d.round().await;
    assert!(!report.activated.contains(&held), "{report:?}");
    let seen = detail(&d, &nina, held).await;
    assert_eq!(reason_codes(&seen), ["budget_exhausted"], "{seen}");
    // Another queue is not affected.
    let (_, answer) = submit(&d, &nina, in_queue("elsewhere", "default", 1, None, "normal")).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");

    // The list of budgets shows it.
    let (_, all) = call(&d.app, "GET", "/api/v1/admin/budgets", &admin, None).await;
    assert_eq!(all.as_array().map(Vec::len), Some(1), "{all}");
    assert_eq!(all[0]["queue"], "lab");

    // Raising the budget releases it at the next round (the write measures at once).
    let (_, raised) = call(
        &d.app,
        "PUT",
        path,
        &admin,
        Some(json!({"period": "month", "gpuHours": 10, "holdWhenExhausted": true})),
    )
    .await;
    assert_eq!(raised["holding"], false, "{raised}");
    let report = d.round().await;
    assert!(report.activated.contains(&held), "{report:?}");

    // Spent again, then a new month: held, then released without anyone acting.
    let (_, _) = call(
        &d.app,
        "PUT",
        path,
        &admin,
        Some(json!({"period": "month", "gpuHours": 1, "holdWhenExhausted": true})),
    )
    .await;
    let (next, answer) = submit(&d, &nina, in_queue("third", "lab", 1, None, "normal")).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    // The lab's running job ends, so December starts unspent; Monday 23 November 08:00 + 8
    // days: 1 December, 08:00.
    let (status, _) = call(&d.app, "DELETE", &format!("/api/v1/jobs/{held}"), &nina, None).await;
    assert_eq!(status, 204);
    d.advance(8 * 86_400).await;
    d.settle().await;
    let report = d.round().await;
    assert!(report.activated.contains(&next), "a new month: {report:?}");

    // Removed: no budget, no hold.
    let (status, _) = call(&d.app, "DELETE", path, &admin, None).await;
    assert_eq!(status, 204);
    let (status, _) = call(&d.app, "GET", path, &admin, None).await;
    assert_eq!(status, 404);
}
both_driven!(spent_budget, a_spent_budget_holds_normal_jobs_until_raised_or_renewed);

async fn a_budget_without_the_hold_is_only_shown(db: Option<String>) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    let nina = d.app.user_token("nina").await;
    queue(&d.app, &admin, json!({"name": "lab", "open": true})).await;
    let path = "/api/v1/admin/queues/lab/budget";
    let (status, _) = call(
        &d.app,
        "PUT",
        path,
        &admin,
        Some(json!({"period": "week", "gpuHours": 0.5})),
    )
    .await;
    assert_eq!(status, 200);
    submit(&d, &nina, in_queue("first", "lab", 1, Some(3600), "normal")).await;
    d.settle().await;
    d.advance(3600).await;
    d.settle().await;
    d.round().await;
    let (_, now) = call(&d.app, "GET", path, &admin, None).await;
    assert_eq!(
        (now["usedGpuHours"].clone(), now["exhausted"].clone()),
        (json!(1.0), json!(true)),
        "{now}"
    );
    assert_eq!(now["holding"], false, "{now}");
    assert_eq!(now["periodStart"], "2026-11-23T00:00:00Z", "the ISO week");
    let (_, answer) = submit(&d, &nina, in_queue("second", "lab", 1, None, "normal")).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
}
both_driven!(shown_only, a_budget_without_the_hold_is_only_shown);

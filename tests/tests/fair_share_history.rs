//! Fair share over time end to end (`spec/prequeue.md` §10): after a simulated week in which
//! nina kept the lab's 4 GPUs busy for three days and carl used one for an hour, both wait for
//! the lab again; carl's job, submitted after nina's, starts first under `fairShareHistory` —
//! and nina's would under plain DRF, which forgets the week. Both see why in their fair share.

use anteroom_tests::api::{call, queue, settings};
use anteroom_tests::both_driven;
use anteroom_tests::driven::{Driven, GPU_NODES, gpu_job, phase, submit};
use serde_json::{Value, json};

fn lab_job(name: &str, gpus: u32, seconds: u32) -> Value {
    let mut body = gpu_job(name, "custom", gpus, "normal");
    body["queue"] = json!("lab");
    body["tasks"][0]["command"] = json!(["sleep", seconds.to_string()]);
    body
}

/// Runs the week under `order`; answers (nina's job, carl's job, which started first, the
/// app, nina's and carl's tokens).
async fn after_a_week(db: Option<String>, order: &str) -> (Driven, i64, i64, String, String) {
    let d = Driven::start(db, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    settings(
        &d.app,
        &admin,
        json!({"queueQuotaEnabled": true, "activationOrder": order}),
    )
    .await;
    queue(
        &d.app,
        &admin,
        json!({"name": "lab", "open": true, "capacity": {"nvidia.com/a100": "4"}}),
    )
    .await;
    let nina = d.app.user_token("nina").await;
    let carl = d.app.user_token("carl").await;
    let ida = d.app.user_token("ida").await;
    // The week: nina's 4 GPUs for three days, then carl's one GPU for an hour.
    submit(&d, &nina, lab_job("epochs", 4, 3 * 86_400)).await;
    d.settle().await;
    for _ in 0..72 {
        d.advance(3600).await;
        d.round().await;
    }
    submit(&d, &carl, lab_job("probe", 1, 3600)).await;
    d.settle().await;
    for _ in 0..95 {
        d.advance(3600).await;
        d.round().await;
    }
    // Day 7: ida fills the lab for an hour; nina, then carl, ask for all of it.
    submit(&d, &ida, lab_job("blocker", 4, 3600)).await;
    d.settle().await;
    d.advance(60).await;
    let (first, answer) = submit(&d, &nina, lab_job("next-nina", 4, 3600)).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    d.advance(60).await;
    let (second, answer) = submit(&d, &carl, lab_job("next-carl", 4, 3600)).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    // The blocker ends; one round decides who gets the lab.
    d.advance(3600).await;
    d.round().await;
    (d, first, second, nina, carl)
}

async fn the_heavier_users_next_job_goes_after_the_lighter_users(db: Option<String>) {
    let (d, nina_job, carl_job, nina, carl) = after_a_week(db, "fairShareHistory").await;
    assert_ne!(
        phase(&d, &carl, carl_job).await,
        "Prequeue",
        "carl used less: his job starts"
    );
    assert_eq!(
        phase(&d, &nina, nina_job).await,
        "Prequeue",
        "nina's waits though older"
    );
    // Both see why: nina's factor is the lower, and her GPU-hours drive it.
    let (_, nina_share) = call(&d.app, "GET", "/api/v1/me/fair-share", &nina, None).await;
    let (_, carl_share) = call(&d.app, "GET", "/api/v1/me/fair-share", &carl, None).await;
    let factor = |v: &Value| v["queues"][0]["factor"].as_f64().expect("a factor");
    assert_eq!(nina_share["inEffect"], true, "{nina_share}");
    assert_eq!(nina_share["queues"][0]["queue"], "lab", "{nina_share}");
    assert!(
        factor(&nina_share) < factor(&carl_share),
        "{nina_share} vs {carl_share}"
    );
    let drivers = &nina_share["queues"][0]["drivers"];
    assert!(
        drivers["nvidia.com/a100"].as_f64().expect("GPUs") > drivers["cpu"].as_f64().unwrap_or(0.0),
        "{drivers}"
    );
}
both_driven!(
    heavier_goes_after,
    the_heavier_users_next_job_goes_after_the_lighter_users
);

async fn plain_drf_forgets_the_week(db: Option<String>) {
    let (d, nina_job, carl_job, nina, carl) = after_a_week(db, "fairShare").await;
    assert_ne!(phase(&d, &nina, nina_job).await, "Prequeue", "the older job starts");
    assert_eq!(phase(&d, &carl, carl_job).await, "Prequeue");
}
both_driven!(drf_forgets, plain_drf_forgets_the_week);

//! Budgets in the web UI (`/admin/queues`, §10; headless Chromium on the running app, the
//! simulated cluster driven by hand): the admin sets a lab's monthly GPU-hours through the form,
//! the lab spends them, and the budgets' table shows the use against the budget exactly as the
//! API measures it, that its normal jobs are held, and when it renews; the held job's page says
//! why; the section reads in zh, ja and ko without English left, in light and dark, and axe
//! finds nothing serious.

use anteroom_tests::ADMIN_PASSWORD;
use anteroom_tests::api::{call, queue};
use anteroom_tests::browser::{Browser, LATIN_ALLOWED, require_ui};
use anteroom_tests::driven::{Driven, GPU_NODES, gpu_job, submit};
use serde_json::json;

/// Seeded words besides [`LATIN_ALLOWED`]: the queue, the node names, the job, the unit.
const SEEDED: &[&str] = &["lab", "gpu", "cpu", "held", "GPU"];

async fn shows(b: &Browser, css: &str, text: &str) {
    let condition = format!("document.querySelector({css:?})?.textContent.includes({text:?})");
    if let Err(e) = b.wait_until(&format!("{css} shows {text:?}"), &condition).await {
        panic!("{e}; it shows {:?}", b.text(css).await);
    }
}

async fn language(b: &Browser, lang: &str) {
    b.select("#lang-select", lang).await;
    b.wait_until(
        "the language applies",
        &format!("document.documentElement.lang === '{lang}'"),
    )
    .await
    .unwrap();
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_an_admin_sets_a_budget_and_sees_it_spent_and_holding() {
    require_ui();
    let d = Driven::start(None, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    queue(&d.app, &admin, json!({"name": "lab", "open": true})).await;
    let b = Browser::start("en-US,en").await;
    b.login(&d.app.url(""), "admin", ADMIN_PASSWORD).await;
    b.client.goto(&d.app.url("/admin/queues")).await.unwrap();
    b.wait_for("[data-testid=budgets]").await.unwrap();

    // The form: a bad amount is marked on its field and nothing is stored.
    b.click("[data-testid=add-budget]").await;
    b.wait_for("[data-testid=budget-form]").await.unwrap();
    b.select("#budget-queue", "lab").await;
    b.fill("#budget-hours", "2000000000").await;
    b.click("[data-testid=save-budget]").await;
    shows(&b, "#budget-hours-error", "GPU-hours").await;
    let (status, _) = call(&d.app, "GET", "/api/v1/admin/queues/lab/budget", &admin, None).await;
    assert_eq!(status, 404, "nothing stored");
    // One GPU-hour a month, held when spent.
    b.fill("#budget-hours", "1").await;
    b.click("[data-testid=budget-hold]").await;
    b.click("[data-testid=save-budget]").await;
    b.wait_for("[data-testid=budget-row][data-queue=lab]").await.unwrap();
    let (status, stored) = call(&d.app, "GET", "/api/v1/admin/queues/lab/budget", &admin, None).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(
        (stored["gpuHours"].clone(), stored["holdWhenExhausted"].clone()),
        (json!(1.0), json!(true))
    );

    // Two GPUs for 45 minutes: 1.5 GPU-hours, over the budget; the next job is held.
    let nina = d.app.user_token("nina").await;
    let mut body = gpu_job("spend", "custom", 2, "normal");
    body["queue"] = json!("lab");
    body["tasks"][0]["command"] = json!(["sleep", "2700"]);
    submit(&d, &nina, body).await;
    d.settle().await;
    d.advance(2700).await;
    d.settle().await;
    d.round().await;
    let mut body = gpu_job("held", "custom", 1, "normal");
    body["queue"] = json!("lab");
    let (held, answer) = submit(&d, &nina, body).await;
    assert_eq!(
        answer["admission"]["reasons"][0]["code"], "budget_exhausted",
        "{answer}"
    );

    b.client.goto(&d.app.url("/admin/queues")).await.unwrap();
    let row = "[data-testid=budget-row][data-queue=lab]";
    // The figures the API measured, exactly.
    let (_, measured) = call(&d.app, "GET", "/api/v1/admin/queues/lab/budget", &admin, None).await;
    assert_eq!(measured["usedGpuHours"], 1.5, "{measured}");
    shows(&b, &format!("{row} [data-testid=budget-used]"), "1.5 of 1 GPU-hours").await;
    assert_eq!(
        b.text(&format!("{row} [data-testid=budget-used]")).await.trim(),
        "1.5 of 1 GPU-hours"
    );
    shows(&b, &format!("{row} [data-testid=budget-status]"), "normal jobs wait").await;
    // The bar is over its limit: a red part.
    let over: f64 = b
        .client
        .execute(
            &format!("return document.querySelector('{row} [data-part=over]').getBoundingClientRect().width"),
            vec![],
        )
        .await
        .unwrap()
        .as_f64()
        .unwrap();
    assert!(over > 0.0, "the part past the budget is drawn");
    b.assert_clean("admin queues with a budget").await;
    for lang in ["zh", "ja", "ko"] {
        language(&b, lang).await;
        let allowed: Vec<&str> = LATIN_ALLOWED.iter().chain(SEEDED).copied().collect();
        let stray = b.latin_words(&allowed).await;
        assert!(stray.is_empty(), "budgets in {lang}: {stray:?}");
    }
    language(&b, "en").await;
    // Dark mode: still clean.
    b.client
        .execute("document.documentElement.classList.add('dark')", vec![])
        .await
        .unwrap();
    b.assert_clean("admin queues with a budget, dark").await;

    // The held job's page says why, with the figures.
    b.client.goto(&d.app.url(&format!("/jobs/{held}"))).await.unwrap();
    shows(&b, "main", "has used 1.5 of its 1 GPU-hours").await;
    b.close().await;
}

//! A job's page in every state it can be in — Pending in the cluster (the scheduler's summary),
//! running, failed, preempted and requeued — shows no English in Chinese, Japanese or Korean
//! (issue 41, point 8): the pods table, the cluster's events and causes, the failure line and
//! the timeline, read by an admin (who also sees the cluster's own messages, marked as
//! English data) on a cluster whose clock the test drives.

use anteroom_tests::api::{call, settings};
use anteroom_tests::browser::{Browser, LATIN_ALLOWED, require_ui};
use anteroom_tests::driven::{
    Driven, GPU_NODES, gpu_job, node_with_three_elastic_jobs_and_a_waiting_normal_job, phase, submit,
};
use serde_json::json;

/// What this test seeds besides [`LATIN_ALLOWED`]: its job names, Eli (the notebooks' owner)
/// and the nodes' names.
const SEEDED: &[&str] = &["train", "crash", "nb1", "nb3", "nb4", "more", "eli", "gpu", "cpu"];

/// Each page of `jobs` in zh, ja and ko: loaded, clean, no stray English; `shows` must be on
/// each (the part of the page this state is about).
async fn translated(b: &Browser, d: &Driven, jobs: &[(&str, i64, &str)]) {
    let allowed: Vec<&str> = LATIN_ALLOWED.iter().chain(SEEDED).copied().collect();
    for lang in ["zh", "ja", "ko"] {
        b.select("#lang-select", lang).await;
        b.wait_until(
            "the language is applied",
            &format!("document.documentElement.lang === '{lang}'"),
        )
        .await
        .unwrap();
        for (state, id, shows) in jobs {
            b.client.goto(&d.app.url(&format!("/jobs/{id}"))).await.unwrap();
            b.wait_for("[data-testid=job-detail]").await.unwrap();
            b.wait_for(shows)
                .await
                .unwrap_or_else(|e| panic!("{state} job in {lang}: {e}"));
            b.wait_until(
                &format!("the {state} job's page in {lang} loads"),
                "!document.querySelector('[data-testid=loading]')",
            )
            .await
            .unwrap();
            let page = format!("/jobs/{{id}} ({state}) in {lang}");
            b.assert_clean(&page).await;
            let stray = b.latin_words(&allowed).await;
            if !stray.is_empty() {
                // Where they are, for the one who reads the failure.
                let js = format!(
                    "const w = {stray:?}; const out = []; \
                     const t = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT); \
                     for (let n = t.nextNode(); n; n = t.nextNode()) \
                       if (w.some(x => n.textContent.includes(x))) out.push(n.parentElement.outerHTML.slice(0, 300)); \
                     return out;"
                );
                let at = b.client.execute(&js, vec![]).await;
                panic!("{page} shows untranslated words: {stray:?}, in {at:?}");
            }
        }
    }
    b.select("#lang-select", "en").await;
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_a_job_page_in_every_state_shows_no_english_in_zh_ja_ko() {
    require_ui();
    let d = Driven::start(None, GPU_NODES).await;
    let admin = d.app.admin_token().await;
    let (victims, train) =
        node_with_three_elastic_jobs_and_a_waiting_normal_job(&d, gpu_job("train", "custom", 4, "normal")).await;
    let [nb1, _, nb4] = victims;
    let mut crash = anteroom_tests::api::job("crash", json!({"cpu": "1"}));
    crash["tasks"][0]["command"] = json!(["exit", "3"]);
    let (crash, _) = submit(&d, &admin, crash).await;
    d.advance(1).await;
    d.advance(1).await;
    assert_eq!(phase(&d, &admin, train).await, "Pending");
    assert_eq!(phase(&d, &admin, crash).await, "Failed");
    assert_eq!(phase(&d, &admin, nb1).await, "Running");

    let b = Browser::start("en-US,en").await;
    b.login(&d.app.url(""), "admin", anteroom_tests::ADMIN_PASSWORD).await;
    // Pending in the cluster: the scheduler's summary, said as a cause.
    translated(
        &b,
        &d,
        &[
            ("pending", train, "[data-testid=cluster-cause]"),
            ("running", nb1, "[data-testid=pod-row][data-phase=Running]"),
            ("failed", crash, "[data-testid=failure-line]"),
        ],
    )
    .await;

    // Preempted for good (the notebooks asked for no requeue)...
    d.advance(61).await;
    assert_eq!(d.round().await.preempted, [nb4]);
    d.advance(31).await;
    assert_eq!(phase(&d, &admin, nb4).await, "Preempted");
    // ...and one that asked to come back (the new default), preempted in turn and requeued.
    settings(&d.app, &admin, json!({"requeueByDefault": true})).await;
    let eli = d.app.token("eli", anteroom_tests::USER_PASSWORD).await;
    let (nb3, answer) = submit(&d, &eli, gpu_job("nb3", "jupyter", 1, "backfill")).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    d.advance(1).await;
    let (more, answer) = submit(&d, &admin, gpu_job("more", "custom", 4, "normal")).await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    d.advance(61).await;
    let report = d.round().await;
    assert!(report.preempted.contains(&nb3), "{:?}", report.preempted);
    d.advance(31).await;
    let (_, requeued) = call(&d.app, "GET", &format!("/api/v1/jobs/{nb3}"), &admin, None).await;
    let kinds: Vec<&str> = requeued["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"requeued"), "{requeued}");
    translated(
        &b,
        &d,
        &[
            ("preempted", nb4, "[data-testid=job-detail][data-phase=Preempted]"),
            ("requeued", nb3, "[data-testid=timeline-event][data-kind=requeued]"),
            ("started after the preemption", more, "[data-testid=pods-panel]"),
        ],
    )
    .await;
    b.close().await;
}

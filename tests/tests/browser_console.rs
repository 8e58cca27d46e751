//! The UI as a console (issue 42), in headless Chromium on the running app: one header row in
//! every language and a usable layout at 768 px; bars whose widths tell the truth where the old
//! ones lied; the job list's reason, Open and actions by phase; the capacity view; the admin
//! overviews (queue tree, quota table, prequeue page); Korean line breaking; no false
//! scrollbars.

use anteroom_tests::api::{call, job, quota, settings, submit_job};
use anteroom_tests::browser::{Browser, require_ui};
use anteroom_tests::{ADMIN_PASSWORD, TestApp};
use serde_json::{Value, json};

/// The parts of the bar matching `css`, in percent of its track: `{used, added, over, tick,
/// level}` (`tick` is the middle of the limit's mark; `null` without one).
async fn bar(b: &Browser, css: &str) -> Value {
    b.wait_for(css).await.unwrap_or_else(|e| panic!("{e}"));
    let script = format!(
        "const bar = document.querySelector({css:?}); const r = bar.getBoundingClientRect(); \
         const part = p => {{ const e = bar.querySelector(`[data-part=${{p}}]`); return e ? e.getBoundingClientRect().width / r.width * 100 : null; }}; \
         const t = bar.querySelector('[data-part=tick]'); \
         const tick = t ? (t.getBoundingClientRect().left + t.getBoundingClientRect().width / 2 - r.left) / r.width * 100 : null; \
         return {{used: part('used'), added: part('added'), over: part('over'), tick, level: bar.dataset.level}};"
    );
    b.client.execute(&script, vec![]).await.unwrap()
}

/// `value` (a number in `v[key]`) is `want` within half a percent of the bar.
fn near(v: &Value, key: &str, want: f64) {
    let got = v[key].as_f64().unwrap_or_else(|| panic!("{key} missing: {v}"));
    assert!((got - want).abs() < 0.5, "{key}: {got} is not {want}: {v}");
}

async fn running(app: &TestApp, token: &str, id: i64) {
    for _ in 0..300 {
        let job = app.get_json(&format!("/api/v1/jobs/{id}"), Some(token)).await;
        if job["phase"] == "Running" {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("job {id} did not start");
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_bars_tell_the_truth_and_the_list_says_why_and_opens_notebooks() {
    require_ui();
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    // 5 cores each; an A100 limit the jobs below never ask for.
    quota(&app, &admin, "default", json!({"cpu": "5", "nvidia.com/a100": "1"})).await;
    let (a, _) = submit_job(&app, &admin, job("three", json!({"cpu": "3", "memory": "1Gi"}))).await;
    let (nb, _) = submit_job(
        &app,
        &admin,
        json!({"name": "lab", "kind": "jupyter", "tasks": [{"name": "main", "replicas": 1,
            "image": "quay.io/jupyter/base-notebook", "resources": {"cpu": "1", "memory": "1Gi"}}]}),
    )
    .await;
    running(&app, &admin, a).await;
    running(&app, &admin, nb).await;
    // 4 used + 2 asked against 5: over by one.
    let (held, answer) = submit_job(&app, &admin, job("two-more", json!({"cpu": "2", "memory": "1Gi"}))).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    let (gone, _) = submit_job(&app, &admin, job("gone", json!({"cpu": "100m", "memory": "64Mi"}))).await;
    let (status, _) = call(&app, "DELETE", &format!("/api/v1/jobs/{gone}"), &admin, None).await;
    assert!(status.is_success(), "{status}");

    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "admin", ADMIN_PASSWORD).await;

    // The reason's bar: the limit's tick at 5 of 6, the one core over it red — not both asked.
    b.client.goto(&app.url(&format!("/jobs/{held}"))).await.unwrap();
    let cpu = bar(
        &b,
        "[data-testid=reason-bar][data-resource=cpu] [data-testid=usage-bar]",
    )
    .await;
    near(&cpu, "used", 400.0 / 6.0);
    near(&cpu, "added", 100.0 / 6.0);
    near(&cpu, "over", 100.0 / 6.0);
    near(&cpu, "tick", 500.0 / 6.0);
    assert_eq!(cpu["level"], "over", "{cpu}");
    // A resource the job does not ask for is not drawn ("a100: 0 used + 0 for this job").
    assert_eq!(
        b.client
            .execute("return document.querySelectorAll(\"[data-testid=reason-bar][data-resource='nvidia.com/a100']\").length", vec![])
            .await
            .unwrap(),
        json!(0)
    );
    b.assert_clean("a waiting job's page").await;

    // The summary: CPU against its limit (4 of 5: near it, the tick at the end); memory, which
    // has no limit, against the cluster's memory — a sliver, not the full bar the largest raw
    // number (bytes) used to give it.
    b.client.goto(&app.url("/jobs")).await.unwrap();
    let cpu = bar(
        &b,
        "[data-testid=summary-resource][data-resource=cpu] [data-testid=usage-bar]",
    )
    .await;
    near(&cpu, "used", 80.0);
    near(&cpu, "over", 0.0);
    near(&cpu, "tick", 100.0);
    assert_eq!(cpu["level"], "near", "{cpu}");
    let memory = "[data-testid=summary-resource][data-resource=memory] [data-testid=usage-bar]";
    // Once the cluster's total is known (before, the bar stays empty rather than guess).
    b.wait_for(&format!("{memory}[data-scale=capacity]")).await.unwrap();
    let memory = bar(&b, memory).await;
    assert!(memory["used"].as_f64().unwrap() < 1.0, "{memory}");
    assert!(memory["tick"].is_null(), "{memory}");

    // The list: the waiting job's place and short reason under its phase; Open on the running
    // notebook's row only; no Delete on the deleted row, Run again instead.
    b.wait_for_text(
        &format!("[data-job-id='{held}'] [data-testid=job-reason]"),
        "#1 in line · Its owner's quota",
    )
    .await
    .unwrap();
    b.wait_for(&format!("[data-job-id='{nb}'] [data-testid=open-notebook]"))
        .await
        .unwrap();
    let count = |css: String| {
        let b = &b;
        async move {
            b.client
                .execute(&format!("return document.querySelectorAll({css:?}).length"), vec![])
                .await
                .unwrap()
        }
    };
    assert_eq!(count("[data-testid=open-notebook]".into()).await, json!(1));
    assert_eq!(
        count(format!("[data-job-id='{gone}'] [data-testid=delete-job]")).await,
        json!(0)
    );
    assert_eq!(
        count(format!("[data-job-id='{gone}'] [data-testid=run-again]")).await,
        json!(1)
    );
    assert_eq!(
        count(format!("[data-job-id='{a}'] [data-testid=delete-job]")).await,
        json!(1)
    );
    // A short table has no scrollbar of its own: the hidden time tooltips no longer overflow it.
    let frame = "document.querySelector('[data-testid=jobs-table]').parentElement";
    assert_eq!(
        b.client
            .execute(
                &format!(
                    "const f = {frame}; return [f.scrollHeight <= f.clientHeight, f.scrollWidth <= f.clientWidth]"
                ),
                vec![]
            )
            .await
            .unwrap(),
        json!([true, true])
    );
    b.assert_clean("/jobs").await;

    // The capacity view: free and total A100s, the queue's line.
    b.client.goto(&app.url("/cluster")).await.unwrap();
    b.wait_for_text(
        "[data-testid=capacity-row][data-resource='nvidia.com/a100'] [data-testid=capacity-total]",
        "16",
    )
    .await
    .unwrap();
    assert_eq!(
        b.text("[data-testid=capacity-row][data-resource='nvidia.com/a100'] [data-testid=capacity-free]")
            .await,
        "16"
    );
    b.wait_for_text(
        "[data-testid=capacity-queue][data-queue=default] [data-testid=queue-waiting]",
        "1",
    )
    .await
    .unwrap();
    b.assert_clean("/cluster").await;
    b.screenshot("capacity-en").await;

    // The admin's overviews: the queue tree with its line and who may use it; the quota table
    // with the user closest to each limit.
    b.client.goto(&app.url("/admin/queues")).await.unwrap();
    b.wait_for_text(
        "[data-testid=queue-row][data-queue=default] [data-testid=queue-waiting]",
        "1",
    )
    .await
    .unwrap();
    assert_eq!(
        b.text("[data-testid=queue-row][data-queue=default] [data-testid=queue-access]")
            .await,
        "Everyone"
    );
    b.client.goto(&app.url("/admin/quotas")).await.unwrap();
    b.wait_until(
        "the user closest to the CPU limit",
        "/^admin: 4 of 5$/.test(document.querySelector(\"[data-testid=quota-row][data-queue=default] [data-testid=quota-limit][data-resource=cpu] [data-testid=quota-words]\")?.textContent.trim())",
    )
    .await
    .unwrap();
    let top = bar(
        &b,
        "[data-testid=quota-row][data-queue=default] [data-testid=quota-limit][data-resource=cpu] [data-testid=usage-bar]",
    )
    .await;
    near(&top, "used", 80.0);
    assert_eq!(top["level"], "near", "{top}");
    b.assert_clean("/admin/quotas").await;
    b.close().await;
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_one_header_row_in_every_language_korean_breaks_between_words_and_768_px_works() {
    require_ui();
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    for i in 0..2 {
        submit_job(
            &app,
            &admin,
            job(&format!("row-{i}"), json!({"cpu": "1", "memory": "1Gi"})),
        )
        .await;
    }
    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "admin", ADMIN_PASSWORD).await;
    b.client.goto(&app.url("/jobs")).await.unwrap();
    b.wait_for("[data-testid=jobs-table]").await.unwrap();
    for lang in ["en", "zh", "ja", "ko"] {
        b.select("#lang-select", lang).await;
        b.wait_until(
            "the language applies",
            &format!("document.documentElement.lang === '{lang}'"),
        )
        .await
        .unwrap();
        // Close the menu again (a click elsewhere), as a person would.
        b.click("[data-testid=page-title]").await;
        let layout = b
            .client
            .execute(
                "const bar = document.querySelector('[data-testid=top-bar]'); const h = bar.getBoundingClientRect().height; \
                 const mids = [...bar.children].filter(c => c.getClientRects().length).map(c => c.getBoundingClientRect().top + c.getBoundingClientRect().height / 2); \
                 const fits = bar.scrollWidth <= bar.clientWidth && Math.max(...mids) - Math.min(...mids) <= 2; \
                 const frame = document.querySelector('[data-testid=jobs-table]').parentElement; \
                 const groups = document.querySelectorAll('[data-testid=sidebar] [data-testid=nav-group]').length; \
                 return {h, fits, groups, sideways: frame.scrollWidth > frame.clientWidth, page: document.documentElement.scrollWidth > innerWidth, \
                   thWrap: [...document.querySelectorAll('th')].every(t => getComputedStyle(t).whiteSpace === 'nowrap'), \
                   wordBreak: getComputedStyle(document.body).wordBreak};",
                vec![],
            )
            .await
            .unwrap();
        assert!(
            layout["h"].as_f64().unwrap() <= 56.0,
            "{lang}: the header is one row: {layout}"
        );
        assert_eq!(
            layout["groups"], 4,
            "{lang}: Work, Scheduling, Cluster, People: {layout}"
        );
        assert_eq!(
            layout["sideways"], false,
            "{lang}: the job table scrolls sideways: {layout}"
        );
        assert_eq!(layout["page"], false, "{lang}: the page scrolls sideways: {layout}");
        assert_eq!(
            layout["thWrap"], true,
            "{lang}: a column heading may break mid-word: {layout}"
        );
        let keep = match lang {
            "ko" => "keep-all",
            "ja" => "auto-phrase",
            _ => "normal",
        };
        assert_eq!(layout["wordBreak"], keep, "{lang}: {layout}");
        b.screenshot(&format!("header-{lang}")).await;
    }
    // A Korean sentence in a narrow box wraps between words: each line ends where a word does.
    let lines = b
        .client
        .execute(
            "const p = document.querySelector('[data-testid=page-description]'); p.style.width = '9em'; \
             const text = p.firstChild; const words = text.textContent.split(' '); \
             const range = document.createRange(); let at = 0; const tops = []; \
             for (const w of words) { range.setStart(text, at); range.setEnd(text, at + w.length); \
               tops.push(new Set([...range.getClientRects()].map(r => Math.round(r.top))).size); at += w.length + 1; } \
             p.style.width = ''; return tops;",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        lines.as_array().unwrap().iter().all(|n| n == 1),
        "a Korean word is split across lines: {lines}"
    );

    // 768 px: the sidebar folds behind the menu button; the header stays one row; a link in
    // the opened menu goes there and folds it again.
    b.client.set_window_size(768, 900).await.unwrap();
    b.select("#lang-select", "en").await;
    b.click("[data-testid=page-title]").await;
    b.wait_until(
        "the sidebar is folded",
        "getComputedStyle(document.querySelector('[data-testid=sidebar]')).display === 'none'",
    )
    .await
    .unwrap();
    let h = b
        .client
        .execute(
            "return document.querySelector('[data-testid=top-bar]').getBoundingClientRect().height",
            vec![],
        )
        .await
        .unwrap();
    assert!(h.as_f64().unwrap() <= 56.0, "{h}");
    b.click("[data-testid=menu-button]").await;
    b.click("[data-testid=sidebar] a[href='/cluster']").await;
    b.wait_until(
        "the capacity page shows and the menu folds",
        "location.pathname === '/cluster' && getComputedStyle(document.querySelector('[data-testid=sidebar]')).display === 'none'",
    )
    .await
    .unwrap();
    b.assert_clean("/cluster at 768 px").await;
    b.screenshot("narrow-768-en").await;
    b.close().await;
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_the_prequeue_page_puts_the_line_first_and_says_when_settings_are_unsaved() {
    require_ui();
    let app = TestApp::builder().start().await;
    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "admin", ADMIN_PASSWORD).await;
    b.client.goto(&app.url("/admin/prequeue")).await.unwrap();
    b.wait_for("#normalJobWaitingToleranceSeconds").await.unwrap();
    // The waiting list comes before the settings.
    assert_eq!(
        b.client
            .execute(
                "const list = document.querySelector('#prequeued-title'); const form = document.querySelector('[data-testid=settings-form]'); \
                 return !!(list.compareDocumentPosition(form) & Node.DOCUMENT_POSITION_FOLLOWING);",
                vec![]
            )
            .await
            .unwrap(),
        json!(true)
    );
    // 300 s reads as five minutes; nothing is unsaved yet.
    b.wait_until(
        "the duration in words",
        "document.querySelector('#normalJobWaitingToleranceSeconds-human').textContent.includes('5 min')",
    )
    .await
    .unwrap();
    assert_eq!(
        b.client
            .execute(
                "return document.querySelector('[data-testid=save-bar]').dataset.dirty",
                vec![]
            )
            .await
            .unwrap(),
        json!("false")
    );
    b.fill("#normalJobWaitingToleranceSeconds", "7200").await;
    b.wait_for_text("#normalJobWaitingToleranceSeconds-human", "= 2 hr")
        .await
        .unwrap();
    b.wait_for("[data-testid=unsaved]").await.unwrap();
    // The Save bar stays in view at the bottom of the window while the settings scroll.
    let in_view = b
        .client
        .execute(
            "window.scrollTo(0, 0); const r = document.querySelector('[data-testid=save-settings]').getBoundingClientRect(); \
             return r.bottom <= innerHeight && r.top >= 0;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(in_view, json!(true));
    b.click("[data-testid=discard-settings]").await;
    b.wait_until(
        "the saved value is back",
        "document.querySelector('#normalJobWaitingToleranceSeconds').value === '300' && !document.querySelector('[data-testid=unsaved]')",
    )
    .await
    .unwrap();
    b.assert_clean("/admin/prequeue").await;
    b.close().await;
}

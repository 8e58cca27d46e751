//! A researcher in the web UI (headless Chromium, the running app, the simulated cluster):
//! submits normal and Elastic jobs, sees their badges and the summary, sees why a job the quota
//! holds waits and watches it start without a reload; and what happens to a page whose session
//! ends elsewhere.

use anteroom_tests::api::{call, quota, settings};
use anteroom_tests::browser::{Browser, require_ui};
use anteroom_tests::{TestApp, USER_PASSWORD};
use serde_json::json;

/// Fills the submit form for a one-task custom job.
async fn fill_custom_job(b: &Browser, name: &str, cpu: &str) {
    b.wait_for("#kind-custom").await.unwrap();
    b.click("#kind-custom").await;
    b.fill("#job-name", name).await;
    b.fill("#task0-image", "busybox").await;
    b.fill("#task0-command", "sleep 3600").await;
    b.fill("#task0-resources\\.cpu", cpu).await;
    b.fill("#task0-resources\\.memory", "1Gi").await;
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_a_user_submits_normal_and_elastic_jobs_and_sees_a_held_job_start_without_a_reload() {
    require_ui();
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let alice = app.user_token("alice").await;
    settings(
        &app,
        &admin,
        json!({"backfillEnabled": true, "queueQuotaEnabled": true}),
    )
    .await;
    quota(&app, &admin, "default", json!({"cpu": "3"})).await;

    let b = Browser::start("en-US,en").await;
    // Not logged in: sent to the login page, then back where they wanted to go.
    b.client.goto(&app.url("/jobs/new")).await.unwrap();
    b.wait_for_text("[data-testid=page-title]", "Log in").await.unwrap();
    b.fill("#login-username", "alice").await;
    b.fill("#login-password", USER_PASSWORD).await;
    b.click("[data-testid=login-submit]").await;
    b.wait_for_text("[data-testid=page-title]", "New job").await.unwrap();
    // A user sees no admin navigation.
    assert!(
        b.client
            .find(fantoccini::Locator::Css("a[href='/admin/prequeue']"))
            .await
            .is_err(),
        "admin links are hidden from users"
    );

    // A normal job: the preview says it starts now; submitted, the toast says so.
    fill_custom_job(&b, "train-a", "2").await;
    b.wait_until(
        "the preview says the job starts now",
        "document.querySelector('[data-testid=preview-decision]')?.dataset.decision === 'activated'",
    )
    .await
    .unwrap();
    b.assert_clean("/jobs/new").await;
    b.click("[data-testid=submit-job]").await;
    b.wait_for_text(
        "[data-testid=toast-text]",
        "Job train-a submitted and sent to the cluster.",
    )
    .await
    .unwrap();
    b.wait_for_text("[data-testid=page-title]", "train-a").await.unwrap();

    // An Elastic job: the schedule type is offered (backfill is on). Its command is written as
    // in a shell: the quoted part stays one word.
    b.client.goto(&app.url("/jobs/new")).await.unwrap();
    fill_custom_job(&b, "elastic-b", "1").await;
    b.fill("#task0-command", "echo 'unfinished").await;
    b.click("[data-testid=submit-job]").await;
    b.wait_for_text(
        "#task0-command-error",
        "⚠ A quote is not closed, or the line ends with a backslash.",
    )
    .await
    .unwrap();
    b.fill("#task0-command", r#"bash -c "sleep 3600 && echo 'done'""#).await;
    b.click("#schedule-backfill").await;
    b.click("[data-testid=submit-job]").await;
    b.wait_for_text("[data-testid=page-title]", "elastic-b").await.unwrap();
    let (_, mine) = call(&app, "GET", "/api/v1/jobs?scheduleType=backfill", &alice, None).await;
    assert_eq!(
        mine["items"][0]["tasks"][0]["command"],
        json!(["bash", "-c", "sleep 3600 && echo 'done'"]),
        "{mine}"
    );

    // Both in the list with the right badges; the summary counts the normal job.
    b.click("a[href='/jobs']").await;
    b.wait_for_text("[data-testid=page-title]", "My jobs").await.unwrap();
    b.wait_until(
        "both jobs are listed with their schedule-type badges",
        "document.querySelector('[data-name=train-a] [data-testid=schedule-badge]')?.dataset.value === 'normal' && \
         document.querySelector('[data-name=elastic-b] [data-testid=schedule-badge]')?.dataset.value === 'backfill'",
    )
    .await
    .unwrap();
    assert_eq!(
        b.text("[data-name=elastic-b] [data-testid=schedule-badge]").await,
        "Elastic"
    );
    b.wait_until(
        "the summary shows the normal job's 2 cpus against the limit of 3",
        "document.querySelector('[data-testid=summary-resource][data-resource=cpu] [data-testid=summary-value]')?.textContent.trim() === '2 / 3'",
    )
    .await
    .unwrap();
    b.assert_clean("/jobs").await;
    b.screenshot("user-jobs-en").await;
    // The schedule-type filter asks the API for Elastic jobs only.
    b.toggle_filter("filter-schedule", "backfill").await;
    b.wait_until(
        "only the Elastic job is listed",
        "document.querySelectorAll('[data-testid=job-row]').length === 1 && !!document.querySelector('[data-name=elastic-b]')",
    )
    .await
    .unwrap();
    b.toggle_filter("filter-schedule", "backfill").await;
    b.wait_for("[data-name=train-a]").await.unwrap();

    // A job the quota holds: the preview says why, with the bar of the quota over its limit.
    b.client.goto(&app.url("/jobs/new")).await.unwrap();
    // PyTorch cannot be Elastic: the choice is disabled, with the reason.
    b.click("#kind-pytorch").await;
    b.wait_until(
        "Elastic is disabled for PyTorch, with the reason",
        "document.querySelector('#schedule-backfill')?.disabled === true && !!document.querySelector('[data-testid=backfill-unavailable]')",
    )
    .await
    .unwrap();
    fill_custom_job(&b, "held-c", "2").await;
    b.click("#never-preempt").await;
    b.wait_until(
        "the preview says it will wait, because of the quota",
        "document.querySelector('[data-testid=preview-decision]')?.dataset.decision === 'prequeued' && \
         document.querySelector('[data-testid=preview] [data-testid=reason][data-code=quota] [data-testid=reason-bar][data-resource=cpu]')?.dataset.exceeded === 'true'",
    )
    .await
    .unwrap();
    b.screenshot("user-preview-held-en").await;
    b.click("[data-testid=submit-job]").await;
    b.wait_for_text(
        "[data-testid=toast-text]",
        "Job held-c submitted; it waits in the prequeue.",
    )
    .await
    .unwrap();
    let (_, mine) = call(&app, "GET", "/api/v1/jobs", &alice, None).await;
    let held = mine["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == "held-c")
        .unwrap();
    assert_eq!(held["preemptionPolicy"], "Never", "the never-preempt option was sent");
    // Its page: position and the reason, as words and as a bar.
    b.wait_for_text("[data-testid=position]", "Position 1 in the prequeue")
        .await
        .unwrap();
    let reason = b
        .text("[data-testid=reason][data-code=quota] [data-testid=reason-text]")
        .await;
    assert_eq!(reason, "Your quota in queue default would be exceeded.");
    assert!(
        b.text("[data-testid=reason-bar][data-resource=cpu]")
            .await
            .contains("2 used + 2 for this job, limit 3"),
        "{}",
        b.text("[data-testid=reason-bar][data-resource=cpu]").await
    );
    b.assert_clean("/jobs/{id} waiting").await;
    b.screenshot("user-job-waiting-en").await;

    // The earlier job is deleted elsewhere (the API); the page shows the held job start, live.
    let (_, list) = call(&app, "GET", "/api/v1/jobs", &alice, None).await;
    let train = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == "train-a")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let (status, _) = call(&app, "DELETE", &format!("/api/v1/jobs/{train}"), &alice, None).await;
    assert_eq!(status, 204);
    b.wait_until(
        "the held job leaves the prequeue without a reload",
        "['Activating', 'Pending', 'Running'].includes(document.querySelector('[data-testid=job-detail]')?.dataset.phase)",
    )
    .await
    .unwrap();
    assert!(
        b.client
            .find(fantoccini::Locator::Css("[data-testid=prequeue-standing]"))
            .await
            .is_err()
    );
    let errors = b.console_errors().await;
    assert!(errors.is_empty(), "console errors: {errors:?}");

    // Delete from the list, after confirming.
    b.client.goto(&app.url("/jobs")).await.unwrap();
    b.click("[data-name=elastic-b] [data-testid=delete-job]").await;
    b.wait_for("[data-testid=confirm-dialog]").await.unwrap();
    b.assert_clean("confirm dialog").await;
    // Focus starts on Cancel and Tab stays inside the dialog.
    let focused = "document.activeElement?.dataset.testid";
    b.wait_until("focus starts on Cancel", &format!("{focused} === 'confirm-no'"))
        .await
        .unwrap();
    for expected in ["confirm-yes", "confirm-no"] {
        b.client
            .active_element()
            .await
            .unwrap()
            .send_keys("\u{e004}")
            .await
            .unwrap();
        b.wait_until("Tab stays in the dialog", &format!("{focused} === '{expected}'"))
            .await
            .unwrap();
    }
    // Escape cancels: nothing is deleted and focus goes back to the button.
    b.client
        .active_element()
        .await
        .unwrap()
        .send_keys("\u{e00c}")
        .await
        .unwrap();
    b.wait_until(
        "Escape closes the dialog and focus returns to the delete button",
        "!document.querySelector('[data-testid=confirm-dialog]') && document.activeElement?.dataset.testid === 'delete-job'",
    )
    .await
    .unwrap();
    let (_, mine) = call(&app, "GET", "/api/v1/jobs", &alice, None).await;
    let elastic = mine["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == "elastic-b")
        .unwrap();
    assert_ne!(elastic["phase"], "Deleted", "cancel deleted nothing");
    b.click("[data-name=elastic-b] [data-testid=delete-job]").await;
    b.click("[data-testid=confirm-yes]").await;
    b.wait_until(
        "the deleted job shows as Deleted",
        "document.querySelector('[data-name=elastic-b] [data-testid=phase-badge]')?.dataset.value === 'Deleted'",
    )
    .await
    .unwrap();

    // Admin pages are refused to users, in words.
    b.client.goto(&app.url("/admin/quotas")).await.unwrap();
    b.wait_for_text("[data-testid=page-title]", "Administrators only")
        .await
        .unwrap();

    // Logout ends the session: the guarded page sends to the login page again.
    b.click("[data-testid=logout]").await;
    b.wait_for_text("[data-testid=page-title]", "Log in").await.unwrap();
    b.client.goto(&app.url("/jobs")).await.unwrap();
    b.wait_for_text("[data-testid=page-title]", "Log in").await.unwrap();
    let errors = b.console_errors().await;
    assert!(errors.is_empty(), "console errors: {errors:?}");

    // A session ended elsewhere (a logout through the API ends all of alice's sessions): the
    // next call the page makes answers 401, and the page goes to the login page.
    b.login(&app.url(""), "alice", USER_PASSWORD).await;
    b.client.goto(&app.url("/jobs")).await.unwrap();
    b.wait_for_text("[data-testid=page-title]", "My jobs").await.unwrap();
    // (The UI's logout above ended the earlier API token too: log in afresh.)
    let elsewhere = app.token("alice", USER_PASSWORD).await;
    let (status, _) = call(&app, "POST", "/api/v1/auth/logout", &elsewhere, None).await;
    assert_eq!(status, 204);
    // The page's event stream may notice first (the server ends it at logout) and go to the
    // login page before the click: either way the page must end there. So the click is made
    // only while the link is still on the page, and never fails for its absence.
    b.client
        .execute("document.querySelector(\"nav a[href='/jobs/new']\")?.click()", vec![])
        .await
        .unwrap();
    b.wait_for_text("[data-testid=page-title]", "Log in").await.unwrap();
    let errors = b.console_errors().await;
    b.close().await;
    assert!(
        errors.iter().all(|e| e.contains("401")),
        "only the refused calls: {errors:?}"
    );
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_an_idle_page_whose_session_ends_elsewhere_goes_to_login_through_its_stream() {
    require_ui();
    let app = TestApp::builder().start().await;
    app.user_token("carol").await;
    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "carol", USER_PASSWORD).await;
    // A page that polls nothing (`/jobs` refreshes its summary every 10 s, which would find
    // the ended session by itself).
    b.client.goto(&app.url("/jobs/new")).await.unwrap();
    b.wait_for_text("[data-testid=page-title]", "New job").await.unwrap();
    // Give the stream time to open, then end every session of carol's elsewhere.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let elsewhere = app.token("carol", USER_PASSWORD).await;
    let (status, _) = call(&app, "POST", "/api/v1/auth/logout", &elsewhere, None).await;
    assert_eq!(status, 204);
    // Nobody touches the page: the server ends the stream (it re-checks the session every
    // 5 s), the browser's reconnect is refused with 401, and the page asks who the session is
    // and goes to the login page — within about 15 s.
    let mut outcome = Err(String::new());
    for _ in 0..3 {
        outcome = b
            .wait_until(
                "the idle page goes to the login page",
                "location.pathname === '/login' && !document.querySelector('[data-testid=whoami]')",
            )
            .await;
        if outcome.is_ok() {
            break;
        }
    }
    outcome.unwrap();
    let errors = b.console_errors().await;
    b.close().await;
    assert!(
        errors.iter().all(|e| e.contains("401")),
        "only the refused stream: {errors:?}"
    );
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_a_job_waiting_for_shared_room_shows_how_long_until_its_tolerance_runs_out() {
    require_ui();
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let dana = app.user_token("dana").await;
    settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    // The queue's capacity (shared by everyone) is full: dana's job waits for shared room, so
    // its waiting clock runs (a job held only by its owner's quota has none).
    let (status, answer) = call(
        &app,
        "PUT",
        "/api/v1/admin/queues/default",
        &admin,
        Some(json!({"name": "default", "open": true, "capacity": {"cpu": "2"}})),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    anteroom_tests::api::submit_job(&app, &admin, anteroom_tests::api::job("first", json!({"cpu": "2"}))).await;
    let (waiting, answer) =
        anteroom_tests::api::submit_job(&app, &dana, anteroom_tests::api::job("second", json!({"cpu": "2"}))).await;
    assert_eq!(answer["admission"]["decision"], "prequeued", "{answer}");
    assert!(answer["job"]["waitingSince"].is_string(), "{answer}");

    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "dana", USER_PASSWORD).await;
    b.client.goto(&app.url(&format!("/jobs/{waiting}"))).await.unwrap();
    b.wait_until(
        "the tolerance left shows",
        "/then it goes first and may preempt Elastic jobs\\./.test(document.querySelector('[data-testid=tolerance-left]')?.textContent || '')",
    )
    .await
    .unwrap();
    let left = b.text("[data-testid=tolerance-left]").await;
    assert!(
        left.starts_with("5 min") || left.starts_with("4"),
        "the default tolerance is 300 s: {left:?}"
    );
    b.assert_clean("the job page of a waiting job").await;
    b.close().await;
}

/// A refusal the form cannot foresee (a node the cluster does not have) reads in the user's
/// language: the field by its label, what is wrong from the API's code and values, never the
/// API's path or English text.
#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_a_refused_field_is_named_by_its_label_in_the_users_language() {
    require_ui();
    let app = TestApp::builder().start().await;
    app.user_token("alice").await;
    let b = Browser::start("zh-CN,zh").await;
    b.login(&app.url(""), "alice", USER_PASSWORD).await;
    b.client.goto(&app.url("/jobs/new")).await.unwrap();
    fill_custom_job(&b, "pinned", "1").await;
    b.fill("#task0-nodeNames", "gpu-99").await;
    b.wait_for_text(
        "[data-testid=preview-error] li[data-field='tasks[0].nodeNames[0]']",
        "容器 · 指定节点：gpu-99 不是此集群的节点。",
    )
    .await
    .unwrap();
    // (Not `assert_clean`: Chromium logs the 422 itself as a console error.)
    let violations = b.axe_violations().await;
    assert!(violations.is_empty(), "{violations:?}");
    b.close().await;
}

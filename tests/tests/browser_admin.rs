//! An admin in the web UI (headless Chromium, the running app, the simulated cluster): saves
//! prequeue settings, a quota and a sub-queue and sees them applied; locks a job; cordons a
//! node; adds a toleration rule for a queue.

use anteroom_tests::api::{call, submit_job};
use anteroom_tests::browser::{Browser, require_ui};
use anteroom_tests::{ADMIN_PASSWORD, TestApp};
use serde_json::json;

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_an_admin_saves_prequeue_settings_a_quota_and_a_sub_queue_and_sees_them_applied() {
    require_ui();
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "admin", ADMIN_PASSWORD).await;

    // Prequeue settings: an invalid value is marked before any request, then a valid save.
    b.client.goto(&app.url("/admin/prequeue")).await.unwrap();
    b.wait_for("#normalJobWaitingToleranceSeconds").await.unwrap();
    b.fill("#normalJobWaitingToleranceSeconds", "0").await;
    b.wait_until(
        "the field is marked invalid",
        "document.querySelector('#normalJobWaitingToleranceSeconds').getAttribute('aria-invalid') === 'true'",
    )
    .await
    .unwrap();
    b.click("[data-testid=save-settings]").await;
    b.wait_for_text("[data-testid=toast-text]", "Some fields need fixing first.")
        .await
        .unwrap();
    let (_, config) = call(&app, "GET", "/api/v1/admin/prequeue-config", &admin, None).await;
    assert_eq!(config["normalJobWaitingToleranceSeconds"], 300, "nothing was saved");
    // Fair share over time: a bad list of weights is marked too.
    b.fill("#normalJobWaitingToleranceSeconds", "600").await;
    b.fill("#usageWeights", "cpu=lots").await;
    b.wait_until(
        "the bad weights are marked",
        "document.querySelector('#usageWeights').getAttribute('aria-invalid') === 'true'",
    )
    .await
    .unwrap();
    b.fill("#usageWeights", "nvidia.com/a100=2, cpu=0.25").await;
    b.fill("#backfillUsageWeight", "0.25").await;
    b.click("#backfillEnabled").await;
    b.select("#activationOrder", "fairShare").await;
    b.click("[data-testid=save-settings]").await;
    b.wait_for_text(
        "[data-testid=toast][data-tone=success] [data-testid=toast-text]",
        "Prequeue settings saved.",
    )
    .await
    .unwrap();
    let (_, config) = call(&app, "GET", "/api/v1/admin/prequeue-config", &admin, None).await;
    assert_eq!(config["normalJobWaitingToleranceSeconds"], 600);
    assert_eq!(config["backfillEnabled"], true);
    assert_eq!(config["activationOrder"], "fairShare");
    assert_eq!(config["backfillUsageWeight"], 0.25);
    assert_eq!(config["usageWeights"], json!({"cpu": 0.25, "nvidia.com/a100": 2.0}));
    b.assert_clean("/admin/prequeue").await;
    // Reloaded, the page shows what was saved (a select's value included).
    b.client.goto(&app.url("/admin/prequeue")).await.unwrap();
    b.wait_until(
        "the saved settings show after a reload",
        "document.querySelector('#activationOrder')?.value === 'fairShare' && \
         document.querySelector('#normalJobWaitingToleranceSeconds')?.value === '600' && \
         document.querySelector('#backfillEnabled')?.checked === true",
    )
    .await
    .unwrap();

    // A quota rule with an accelerator row; a bad quantity is marked first.
    b.client.goto(&app.url("/admin/quotas")).await.unwrap();
    b.click("[data-testid=add-quota]").await;
    b.fill("#quota-new-cpu", "lots").await;
    b.wait_until(
        "the bad quantity is marked",
        "document.querySelector('#quota-new-cpu').getAttribute('aria-invalid') === 'true'",
    )
    .await
    .unwrap();
    b.fill("#quota-new-cpu", "8").await;
    b.fill("#quota-new-memory", "64Gi").await;
    b.click("[data-testid=add-accelerator]").await;
    b.wait_until(
        "the accelerator models are offered",
        "document.querySelectorAll('[data-testid=accelerator-row] select option').length > 1",
    )
    .await
    .unwrap();
    b.select("[data-testid=accelerator-row] select", "nvidia.com/a100")
        .await;
    b.fill("[data-testid=accelerator-row] input", "2").await;
    b.click("[data-testid=save-quota]").await;
    b.wait_for_text(
        "[data-testid=toast][data-tone=success] [data-testid=toast-text]",
        "Quota rule of default saved.",
    )
    .await
    .unwrap();
    let (_, rules) = call(&app, "GET", "/api/v1/admin/queue-quotas", &admin, None).await;
    assert_eq!(
        rules[0]["limits"],
        json!({"cpu": "8", "memory": "64Gi", "nvidia.com/a100": "2"}),
        "{rules}"
    );
    b.assert_clean("/admin/quotas").await;

    // A queue with a capacity, then a sub-queue whose capacity is above its parent's: the
    // tree error is shown on the field; lowered, it saves and shows under its parent.
    b.client.goto(&app.url("/admin/queues")).await.unwrap();
    b.click("[data-testid=add-queue]").await;
    b.fill("#queue-name", "team-a").await;
    b.click("[data-testid=add-capacity]").await;
    b.fill("[data-testid=capacity-row] input[id$=amount]", "8").await;
    b.click("[data-testid=save-queue]").await;
    b.wait_for_text(
        "[data-testid=toast][data-tone=success] [data-testid=toast-text]",
        "Queue team-a saved.",
    )
    .await
    .unwrap();
    b.wait_for("[data-testid=queue-row][data-queue=team-a] [data-testid=capacity-bar][data-resource=cpu]")
        .await
        .unwrap();
    b.click("[data-testid=add-queue]").await;
    b.fill("#queue-name", "team-a-sub").await;
    b.select("#queue-parent", "team-a").await;
    b.click("[data-testid=add-capacity]").await;
    b.fill("[data-testid=capacity-row] input[id$=amount]", "16").await;
    b.click("[data-testid=save-queue]").await;
    b.wait_until(
        "the capacity error is shown on its field",
        "document.querySelector('#queue-capacity-error')?.textContent.trim().length > 0",
    )
    .await
    .unwrap();
    // The refused save is the one failed load the browser logs.
    let refused = b.console_errors().await;
    assert!(
        refused.len() == 1 && refused[0].contains("/api/v1/admin/queues") && refused[0].contains("422"),
        "{refused:?}"
    );
    assert!(
        b.text("#queue-capacity-error").await.contains("parent"),
        "{}",
        b.text("#queue-capacity-error").await
    );
    b.fill("[data-testid=capacity-row] input[id$=amount]", "4").await;
    b.click("[data-testid=save-queue]").await;
    b.wait_for_text(
        "[data-testid=toast][data-tone=success] [data-testid=toast-text]",
        "Queue team-a-sub saved.",
    )
    .await
    .unwrap();
    b.wait_until(
        "the sub-queue shows under its parent",
        "document.querySelector('[data-testid=queue-row][data-queue=team-a-sub]')?.dataset.depth === '1'",
    )
    .await
    .unwrap();
    // A real tree: the sub-queue sits in a list inside its parent's item.
    b.wait_until(
        "the sub-queue is nested in its parent's list item",
        "document.querySelector('[data-queue=team-a-sub]').parentElement.closest('li').parentElement.closest('li')?.querySelector(':scope > [data-testid=queue-row]')?.dataset.queue === 'team-a'",
    )
    .await
    .unwrap();
    let (_, queues) = call(&app, "GET", "/api/v1/admin/queues", &admin, None).await;
    let sub = queues
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "team-a-sub")
        .unwrap();
    assert_eq!(sub["parent"], "team-a");
    assert_eq!(sub["capacity"], json!({"cpu": "4"}));
    b.assert_clean("/admin/queues").await;

    // A job locked against preemption from the admin list, then unlocked.
    let body = anteroom_tests::api::job("lockable", json!({"cpu": "1", "memory": "1Gi"}));
    let (lockable, _) = submit_job(&app, &admin, body).await;
    b.client.goto(&app.url("/admin/jobs")).await.unwrap();
    b.click("[data-name=lockable] [data-testid=lock-job]").await;
    b.wait_for("[data-name=lockable] [data-testid=locked]").await.unwrap();
    let (_, detail) = call(&app, "GET", &format!("/api/v1/jobs/{lockable}"), &admin, None).await;
    assert!(detail["lockedUntil"].is_string(), "{detail}");
    b.assert_clean("/admin/jobs").await;
    b.click("[data-name=lockable] [data-testid=lock-job]").await;
    b.wait_until(
        "the lock is gone",
        "!document.querySelector('[data-name=lockable] [data-testid=locked]')",
    )
    .await
    .unwrap();
    let (_, detail) = call(&app, "GET", &format!("/api/v1/jobs/{lockable}"), &admin, None).await;
    assert!(detail["lockedUntil"].is_null(), "{detail}");

    // The cluster page shows each node's taints (what toleration rules are written for) and
    // toggles a node's schedulable flag.
    b.client.goto(&app.url("/admin/cluster")).await.unwrap();
    b.wait_for_text(
        "[data-node=gpu-a100-0] [data-testid=node-taint]",
        "nvidia.com/gpu=present:NoSchedule",
    )
    .await
    .unwrap();
    b.wait_for_text("[data-node=cpu-0] [data-testid=node-no-taints]", "No taints")
        .await
        .unwrap();
    // Cordoning asks first: declined, nothing changes and the switch stays on.
    b.click("[data-testid=node] [data-testid=schedulable-toggle]").await;
    b.wait_until(
        "the cordon is asked first",
        "document.querySelector('[data-testid=confirm-dialog]')?.textContent.includes('No new job will start on it')",
    )
    .await
    .unwrap();
    b.click("[data-testid=confirm-no]").await;
    b.wait_until(
        "the switch is still on",
        "document.querySelector('[data-testid=node] [data-testid=schedulable-toggle]').checked",
    )
    .await
    .unwrap();
    let (_, nodes) = call(&app, "GET", "/api/v1/cluster/nodes", &admin, None).await;
    assert!(
        nodes.as_array().unwrap().iter().all(|n| n["schedulable"] == true),
        "{nodes}"
    );
    b.click("[data-testid=node] [data-testid=schedulable-toggle]").await;
    b.click("[data-testid=confirm-yes]").await;
    b.wait_for("[data-testid=toast][data-tone=success] [data-testid=toast-text]")
        .await
        .unwrap();
    let (_, nodes) = call(&app, "GET", "/api/v1/cluster/nodes", &admin, None).await;
    assert!(
        nodes.as_array().unwrap().iter().any(|n| n["schedulable"] == false),
        "{nodes}"
    );
    // A request that fails leaves the switch as the server has it (off), not as clicked.
    let toggle = "[data-testid=node] [data-testid=schedulable-toggle]";
    b.wait_until(
        "the switch shows the cordon",
        &format!("!document.querySelector('{toggle}').checked && !document.querySelector('{toggle}').disabled"),
    )
    .await
    .unwrap();
    b.client
        .execute(
            // (the client passes a Request: its method is on the first argument)
            "const f = window.fetch; window.fetch = (u, o) => (((o && o.method) || (u && u.method)) === 'PUT') ? Promise.reject(new TypeError('offline')) : f(u, o);",
            vec![],
        )
        .await
        .unwrap();
    b.click(toggle).await;
    b.wait_for("[data-testid=toast][data-tone=error]").await.unwrap();
    b.wait_until(
        "the switch went back to off",
        &format!("!document.querySelector('{toggle}').checked && !document.querySelector('{toggle}').disabled"),
    )
    .await
    .unwrap();
    let (_, nodes) = call(&app, "GET", "/api/v1/cluster/nodes", &admin, None).await;
    assert!(
        nodes.as_array().unwrap().iter().any(|n| n["schedulable"] == false),
        "nothing changed on the server: {nodes}"
    );
    // The failure is announced at once (role=alert) and stays past the six seconds a success
    // stays, until dismissed.
    let error = "[role=alert] [data-testid=toast][data-tone=error]";
    b.wait_for(error).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(6500)).await;
    b.wait_for(error).await.expect("the failure is still shown");
    b.click(&format!("{error} button")).await;
    b.wait_until(
        "the failure is dismissed",
        &format!("!document.querySelector('{error}')"),
    )
    .await
    .unwrap();
    b.assert_clean("/admin/cluster").await;
    b.close().await;
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_an_admin_sees_the_seeded_toleration_rule_and_adds_one_for_a_queue() {
    require_ui();
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "admin", ADMIN_PASSWORD).await;
    b.client.goto(&app.url("/admin/tolerations")).await.unwrap();
    // The rule the migration seeds: GPU jobs tolerate the nvidia.com/gpu taint, which the
    // nodes' taints beside the rules show as covered.
    b.wait_for("[data-testid=toleration-rule-row][data-kind=resource][data-target='nvidia.com/*']")
        .await
        .unwrap();
    b.wait_for("[data-testid=taint-row][data-taint='nvidia.com/gpu=present:NoSchedule'][data-tolerated=true]")
        .await
        .unwrap();
    b.assert_clean("/admin/tolerations").await;

    // A queue rule; an invalid key is marked on its field and nothing is sent.
    b.click("[data-testid=add-toleration-rule]").await;
    let card = "[data-testid=toleration-card][data-rule=new]";
    b.select("#tol-new-kind", "queue").await;
    b.wait_until(
        "the queues are offered",
        "[...document.querySelectorAll('#tol-new-queue option')].some(o => o.value === 'default')",
    )
    .await
    .unwrap();
    b.select("#tol-new-queue", "default").await;
    let row = format!("{card} [data-testid=toleration-row]");
    b.fill(&format!("{row} input[id$='-key']"), "Bad Key").await;
    b.wait_until(
        "the bad key is marked",
        &format!("document.querySelector(\"{row} input[id$='-key']\").getAttribute('aria-invalid') === 'true'"),
    )
    .await
    .unwrap();
    assert!(
        b.text(&format!("{row} [data-testid=field-error]"))
            .await
            .contains("Enter a key such as"),
        "{}",
        b.text(&format!("{row} [data-testid=field-error]")).await
    );
    b.click(&format!("{card} [data-testid=save-toleration-rule]")).await;
    b.wait_for_text("[data-testid=toast-text]", "Some fields need fixing first.")
        .await
        .unwrap();
    let (_, rules) = call(&app, "GET", "/api/v1/admin/toleration-rules", &admin, None).await;
    assert_eq!(rules.as_array().unwrap().len(), 1, "nothing was saved: {rules}");
    // No request was made, so none was refused either (a 422 would be logged as a failed load).
    let errors = b.console_errors().await;
    assert!(errors.is_empty(), "console errors: {errors:?}");

    b.fill(&format!("{row} input[id$='-key']"), "dedicated").await;
    b.select(&format!("{row} select[id$='-operator']"), "Equal").await;
    b.fill(&format!("{row} input[id$='-value']"), "ml").await;
    b.select(&format!("{row} select[id$='-effect']"), "NoSchedule").await;
    b.fill("#tol-new-description", "The ML team's dedicated nodes").await;
    b.wait_until(
        "the key is no longer marked",
        &format!("document.querySelector(\"{row} input[id$='-key']\").getAttribute('aria-invalid') === 'false'"),
    )
    .await
    .unwrap();
    b.click(&format!("{card} [data-testid=save-toleration-rule]")).await;
    b.wait_for_text(
        "[data-testid=toast][data-tone=success] [data-testid=toast-text]",
        "Toleration rule for queue default saved.",
    )
    .await
    .unwrap();
    let (_, rules) = call(&app, "GET", "/api/v1/admin/toleration-rules", &admin, None).await;
    let saved = rules
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["queue"] == "default")
        .unwrap_or_else(|| panic!("{rules}"));
    assert_eq!(saved["resource"], serde_json::Value::Null, "{saved}");
    assert_eq!(
        saved["tolerations"],
        json!([{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]),
        "{saved}"
    );
    assert_eq!(saved["description"], "The ML team's dedicated nodes");
    b.assert_clean("/admin/tolerations").await;

    // Reloaded, the page shows both rules, the new one as it was saved.
    b.client.goto(&app.url("/admin/tolerations")).await.unwrap();
    let id = saved["id"].as_i64().unwrap();
    b.click(&format!(
        "[data-testid=toleration-rule-row][data-rule='{id}'] [data-testid=edit-toleration-rule]"
    ))
    .await;
    b.wait_until(
        "the saved rule shows after a reload",
        &format!(
            "(() => {{ const c = document.querySelector('[data-testid=toleration-card][data-rule=\"{id}\"]'); \
             return c && c.dataset.kind === 'queue' && document.querySelector('#tol{id}-queue')?.value === 'default' && \
             c.querySelector(\"input[id$='-key']\")?.value === 'dedicated' && \
             c.querySelector(\"select[id$='-operator']\")?.value === 'Equal' && \
             c.querySelector(\"input[id$='-value']\")?.value === 'ml' && \
             c.querySelector(\"select[id$='-effect']\")?.value === 'NoSchedule'; }})()"
        ),
    )
    .await
    .unwrap();
    b.wait_for("[data-testid=toleration-rule-row][data-kind=resource][data-target='nvidia.com/*']")
        .await
        .unwrap();
    b.assert_clean("/admin/tolerations").await;
    b.close().await;
}

/// The admin prequeue list is paged, the page in the URL: no cap, Back returns to the page
/// before, and a page past the end (jobs activated since) shows the last one instead.
#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_the_admin_prequeue_list_pages_every_waiting_job() {
    require_ui();
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    anteroom_tests::api::settings(&app, &admin, json!({"queueQuotaEnabled": true})).await;
    anteroom_tests::api::quota(&app, &admin, "default", json!({"cpu": "1"})).await;
    // One runs, 54 wait: 50 on the first page, 4 on the second.
    anteroom_tests::api::submit_jobs(&app, &admin, 55, json!({"cpu": "1", "memory": "64Mi"})).await;
    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "admin", ADMIN_PASSWORD).await;
    b.client.goto(&app.url("/admin/prequeue")).await.unwrap();
    let rows = "document.querySelectorAll('[data-testid=prequeued-row]').length";
    b.wait_until("the first page", &format!("{rows} === 50")).await.unwrap();
    b.wait_for_text("[data-testid=page-of]", "Page 1 of 2 · 54 jobs")
        .await
        .unwrap();
    b.click("[data-testid=pager] button:last-child").await;
    b.wait_until("the second page", &format!("{rows} === 4")).await.unwrap();
    assert_eq!(b.path().await, "/admin/prequeue?page=2");
    b.assert_clean("/admin/prequeue?page=2").await;
    b.client.back().await.unwrap();
    b.wait_until("Back shows the first page again", &format!("{rows} === 50"))
        .await
        .unwrap();
    assert_eq!(b.path().await, "/admin/prequeue");
    b.client.goto(&app.url("/admin/prequeue?page=9")).await.unwrap();
    b.wait_until("a page past the end shows the last one", &format!("{rows} === 4"))
        .await
        .unwrap();
    assert_eq!(b.path().await, "/admin/prequeue?page=2");
    b.close().await;
}

//! A researcher's job page in the web UI (headless Chromium, the running app, the simulated
//! cluster): a failed job says why in one line with its pods and log, a log follows live, "Run
//! again" makes the next run, and a notebook opens on its own origin through Anteroom's proxy
//! (against a stub notebook server).

use anteroom_tests::api::submit_job;
use anteroom_tests::browser::{Browser, require_ui};
use anteroom_tests::{TestApp, USER_PASSWORD};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A stub notebook server: every request gets the same small page.
async fn stub_notebook() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body = "<!doctype html><html lang=\"en\"><head><title>Stub lab</title></head>\
                            <body><main><h1 id=\"stub\">Stub notebook</h1></main></body></html>";
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    base
}

/// Waits until the element matching `css` contains `text`.
async fn shows(b: &Browser, css: &str, text: &str) {
    let condition = format!(
        "document.querySelector({css:?})?.textContent.includes({text:?})",
        css = css,
        text = text
    );
    b.wait_until(&format!("{css} shows {text:?}"), &condition)
        .await
        .unwrap();
}

fn job(name: &str, kind: &str, command: &[&str]) -> serde_json::Value {
    json!({"name": name, "kind": kind, "tasks": [{"name": "main", "replicas": 1, "image": "busybox",
        "command": command, "resources": {"cpu": "1", "memory": "1Gi"}}]})
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_a_job_page_says_why_it_failed_follows_a_log_runs_again_and_opens_a_notebook() {
    require_ui();
    let upstream = stub_notebook().await;
    let app = TestApp::builder()
        .configure(move |c| c.sim_notebook_upstream = Some(upstream))
        .start()
        .await;
    let alice = app.user_token("alice").await;
    let (failed, _) = submit_job(&app, &alice, job("crash", "custom", &["exit", "3"])).await;
    let (follow, _) = submit_job(&app, &alice, job("steps", "custom", &["sleep", "60"])).await;
    let (lab, _) = submit_job(&app, &alice, job("lab", "jupyter", &[])).await;
    let (short, _) = submit_job(&app, &alice, job("short", "custom", &["sleep", "25"])).await;

    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "alice", USER_PASSWORD).await;

    // A failed job: the one line, its pod with the exit code, the cluster's event, its log.
    b.client.goto(&app.url(&format!("/jobs/{failed}"))).await.unwrap();
    let line = format!("Why it failed: Error, exit code 3 in ar-{failed}-main-0");
    b.wait_for_text("[data-testid=failure-line]", &line).await.unwrap();
    b.wait_for("[data-testid=pod-row][data-phase=Failed]").await.unwrap();
    b.wait_for("[data-testid=cluster-event][data-reason=Failed]")
        .await
        .unwrap();
    shows(&b, "[data-testid=log]", "exited with code 3").await;
    b.assert_clean("/jobs/{id} (failed)").await;

    // Run again: the next run's page.
    b.click("[data-testid=run-again]").await;
    b.wait_for_text("[data-testid=page-title]", "crash-r2").await.unwrap();

    // A log followed live: the lines the pod writes appear without a reload, then its exit.
    b.client.goto(&app.url(&format!("/jobs/{follow}"))).await.unwrap();
    shows(&b, "[data-testid=log]", "command: sleep 60").await;
    let lines = "Number(document.querySelector('[data-testid=log]').dataset.lines)";
    let read: u64 = b
        .client
        .execute(&format!("return {lines};"), vec![])
        .await
        .unwrap()
        .as_u64()
        .unwrap();
    // Not followed, the log stays as it was read; followed, it grows (a line every 10 s).
    b.click("[data-testid=log-follow]").await;
    b.wait_until(
        "the followed log shows a new line, at its end",
        &format!(
            "{lines} > {read} && (() => {{ const l = document.querySelector('[data-testid=log]'); \
             return l.scrollTop + l.clientHeight >= l.scrollHeight - 16; }})()"
        ),
    )
    .await
    .unwrap();
    b.wait_for("[data-testid=log-state][data-state=following]")
        .await
        .unwrap();

    // Followed to its end: the stream ends with the pod, the job's page is drawn again as it
    // completes (the stream taken up again where it was), and every line shows once, none lost.
    b.client.goto(&app.url(&format!("/jobs/{short}"))).await.unwrap();
    shows(&b, "[data-testid=log]", "command: sleep 25").await;
    b.click("[data-testid=log-follow]").await;
    let ended = "document.querySelector('[data-testid=log-state]')?.dataset.state === 'ended'";
    let mut waited = b.wait_until("the followed log ends with the pod", ended).await;
    for _ in 0..2 {
        if waited.is_ok() {
            break;
        }
        waited = b.wait_until("the followed log ends with the pod", ended).await;
    }
    waited.unwrap();
    let (status, whole) = anteroom_tests::api::call_text(&app, &format!("/api/v1/jobs/{short}/logs"), &alice).await;
    assert_eq!(status, 200, "{whole}");
    let shown: u64 = b
        .client
        .execute(&format!("return {lines};"), vec![])
        .await
        .unwrap()
        .as_u64()
        .unwrap();
    assert_eq!(shown, whole.lines().count() as u64, "every line once: {whole}");
    assert!(whole.contains("exited with code 0"), "{whole}");
    shows(&b, "[data-testid=log]", "exited with code 0").await;
    assert!(
        b.client
            .find(fantoccini::Locator::Css("[data-testid=log-gap]"))
            .await
            .is_err(),
        "no gap when nothing was missed"
    );

    // A running notebook: Open hands over to the notebook's own origin in a new tab.
    b.client.goto(&app.url(&format!("/jobs/{lab}"))).await.unwrap();
    b.wait_for("[data-testid=open-notebook]").await.unwrap();
    b.assert_clean("/jobs/{id} (notebook)").await;
    let portal_tab = b.client.window().await.unwrap();
    b.click("[data-testid=open-notebook]").await;
    let notebook_tab = b.new_tab_besides(&portal_tab).await;
    b.client.switch_to_window(notebook_tab).await.unwrap();
    b.wait_for_text("#stub", "Stub notebook").await.unwrap();
    let at = b.client.current_url().await.unwrap();
    assert_eq!(
        at.as_str(),
        format!("http://j{lab}.localhost:{}/jobs/{lab}/open/", app.addr.port()),
        "the notebook's own origin, the handoff's code gone from the address"
    );
    b.close().await;
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_an_admin_offers_a_volume_and_a_researcher_mounts_it_with_env_and_shared_memory() {
    require_ui();
    let app = TestApp::builder().start().await;
    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "admin", anteroom_tests::ADMIN_PASSWORD).await;
    b.client.goto(&app.url("/admin/volumes")).await.unwrap();
    b.wait_for("[data-testid=empty]").await.unwrap();
    b.click("[data-testid=add-volume]").await;
    b.fill("#vol-new-name", "datasets").await;
    b.fill("#vol-new-mount", "/data").await;
    b.fill("#vol-new-claim", "datasets-pvc").await;
    b.click("[data-testid=save-volume]").await;
    b.wait_for("[data-testid=volume-row][data-name=datasets]")
        .await
        .unwrap();
    b.assert_clean("/admin/volumes").await;
    // Edited from its row, in the side panel.
    b.click("[data-testid=volume-row][data-name=datasets] [data-testid=edit-volume]")
        .await;
    b.wait_for("[data-testid=volume-card][data-name=datasets]")
        .await
        .unwrap();
    // The server's refusal is marked on its field: a mount path under /proc.
    b.fill("#vol-datasets-mount", "/proc/x").await;
    b.click("[data-testid=save-volume]").await;
    b.wait_for("#vol-datasets-mount[aria-invalid=true]").await.unwrap();
    // That 422 is in the console log, as it should be: read it away before the next check.
    let refused = b.console_errors().await;
    assert!(refused.iter().all(|e| e.contains("422")), "{refused:?}");

    // The submit form offers it; env and shared memory go with the job.
    b.client.goto(&app.url("/jobs/new")).await.unwrap();
    b.wait_for("#kind-custom").await.unwrap();
    b.click("#kind-custom").await;
    b.fill("#job-name", "with-data").await;
    b.fill("#task0-image", "busybox").await;
    b.fill("#task0-command", "sleep 600").await;
    b.fill("#task0-resources\\.cpu", "1").await;
    b.fill("#task0-resources\\.memory", "4Gi").await;
    b.fill("#task0-shmSize", "1Gi").await;
    b.fill("#task0-env", "SEED=7\nDATA_DIR=/data").await;
    b.click("#volume-datasets").await;
    b.assert_clean("/jobs/new (volumes, env)").await;
    // Saved as a template before it is submitted.
    b.click("[data-testid=save-template]").await;
    b.wait_for_text("[data-testid=toast-text]", "Template with-data saved.")
        .await
        .unwrap();
    b.click("[data-testid=submit-job]").await;
    b.wait_for_text("[data-testid=page-title]", "with-data").await.unwrap();
    let admin = app.admin_token().await;
    let jobs = app.get_json("/api/v1/admin/jobs", Some(&admin)).await;
    let job = jobs["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == "with-data")
        .unwrap()
        .clone();
    assert_eq!(job["volumes"][0]["name"], "datasets", "{job}");
    assert_eq!(
        job["tasks"][0]["env"],
        json!([{"name": "SEED", "value": "7"}, {"name": "DATA_DIR", "value": "/data"}])
    );
    assert_eq!(job["tasks"][0]["shmSize"], "1Gi");

    // A new form starts from the template: every field as it was saved.
    b.client.goto(&app.url("/jobs/new")).await.unwrap();
    let picker = b.wait_for("[data-testid=template-picker]").await.unwrap();
    let option = picker
        .find(fantoccini::Locator::XPath("option[text()='with-data']"))
        .await
        .unwrap();
    option.click().await.unwrap();
    b.wait_until(
        "the template fills the form",
        "document.querySelector('#task0-image').value === 'busybox' && \
         document.querySelector('#task0-env').value === 'SEED=7\\nDATA_DIR=/data' && \
         document.querySelector('#task0-shmSize').value === '1Gi' && \
         document.querySelector('#volume-datasets').checked",
    )
    .await
    .unwrap();
    b.close().await;
}

/// A private template of `token`'s owner, through the API; answers its id.
async fn template(app: &TestApp, token: &str, name: &str, image: &str, memory: &str) -> i64 {
    let body = json!({"name": name, "body": {"kind": "custom", "tasks": [{"name": "main", "replicas": 1,
        "image": image, "command": ["sleep", "60"], "resources": {"cpu": "2", "memory": memory}}]}});
    let (status, answer) = anteroom_tests::api::call(app, "POST", "/api/v1/templates", token, Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    answer["id"].as_i64().unwrap()
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_an_admin_publishes_a_template_as_a_kinds_default_and_a_researcher_starts_from_hers() {
    require_ui();
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let alice = app.user_token("alice").await;
    // Hers starts from the same image as the kind's default-to-be: the default must not
    // replace what the template filled in.
    let mine = template(&app, &alice, "mine", "team/base:2", "5Gi").await;
    template(&app, &admin, "shared", "team/base:2", "3Gi").await;

    // The admin sees their own template (not alice's private one), publishes it and makes it
    // the default of its kind.
    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "admin", anteroom_tests::ADMIN_PASSWORD).await;
    b.click("nav a[href='/templates']").await;
    b.wait_for("[data-testid=template-row][data-name=shared]")
        .await
        .unwrap();
    assert!(
        b.client
            .find_all(fantoccini::Locator::Css("[data-testid=template-row][data-name=mine]"))
            .await
            .unwrap()
            .is_empty()
    );
    b.wait_for_text(
        "[data-testid=kind-default][data-kind=custom]",
        "None: the form starts blank",
    )
    .await
    .unwrap();
    b.assert_clean("/templates (admin)").await;
    b.click("[data-testid=template-row][data-name=shared] [data-testid=toggle-published]")
        .await;
    b.wait_for("[data-testid=template-row][data-name=shared] [data-testid=template-published]")
        .await
        .unwrap();
    b.click("[data-testid=template-row][data-name=shared] [data-testid=toggle-default]")
        .await;
    b.wait_for_text("[data-testid=kind-default][data-kind=custom]", "shared")
        .await
        .unwrap();
    b.wait_for("[data-testid=template-row][data-name=shared] [data-testid=template-default]")
        .await
        .unwrap();
    let defaults = app.get_json("/api/v1/job-defaults", Some(&alice)).await;
    assert_eq!(defaults[0]["template"]["name"], "shared", "{defaults}");
    b.click("[data-testid=logout]").await;

    // Alice sees both; she may delete only her own, and publishes nothing.
    b.login(&app.url(""), "alice", USER_PASSWORD).await;
    b.client.goto(&app.url("/templates")).await.unwrap();
    b.wait_for("[data-testid=template-row][data-name=mine] [data-testid=delete-template]")
        .await
        .unwrap();
    b.wait_for("[data-testid=template-row][data-name=shared] [data-testid=template-published]")
        .await
        .unwrap();
    let client = &b.client;
    let none =
        |css: &'static str| async move { client.find_all(fantoccini::Locator::Css(css)).await.unwrap().is_empty() };
    assert!(none("[data-testid=template-row][data-name=shared] [data-testid=delete-template]").await);
    assert!(none("[data-testid=toggle-published]").await);
    assert!(none("[data-testid=kind-defaults]").await);
    b.assert_clean("/templates (user)").await;

    // "Use" opens the form filled from it.
    b.click("[data-testid=template-row][data-name=mine] [data-testid=use-template]")
        .await;
    b.wait_until(
        "the form starts from the template",
        &format!(
            "location.search === '?template={mine}' && document.querySelector('#task0-image')?.value === 'team/base:2' && \
             document.querySelector('#task0-resources\\\\.memory').value === '5Gi' && \
             document.querySelector('[data-testid=template-picker]').value === '{mine}'"
        ),
    )
    .await
    .unwrap();

    // Deleted after confirming: gone from the page and from the API.
    b.client.goto(&app.url("/templates")).await.unwrap();
    b.click("[data-testid=template-row][data-name=mine] [data-testid=delete-template]")
        .await;
    b.click("[data-testid=confirm-yes]").await;
    b.wait_until(
        "the row is gone",
        "!document.querySelector('[data-testid=template-row][data-name=mine]')",
    )
    .await
    .unwrap();
    let (status, _) = anteroom_tests::api::call(&app, "GET", &format!("/api/v1/templates/{mine}"), &alice, None).await;
    assert_eq!(status, 404);
    b.close().await;
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_a_long_log_keeps_only_the_lines_in_view_in_the_page_and_reaches_its_end() {
    use anteroom_tests::driven::{Driven, submit, timed_job};
    require_ui();
    let d = Driven::start(None, "").await;
    let alice = d.app.user_token("alice").await;
    let (id, answer) = submit(
        &d,
        &alice,
        timed_job("long", json!({"cpu": "1", "memory": "1Gi"}), Some(86_000)),
    )
    .await;
    assert_eq!(answer["admission"]["decision"], "activated", "{answer}");
    d.settle().await;
    // Two hours of a line every 10 s.
    d.advance(7_200).await;

    let b = Browser::start("en-US,en").await;
    b.login(&d.app.url(""), "alice", USER_PASSWORD).await;
    b.client.goto(&d.app.url(&format!("/jobs/{id}"))).await.unwrap();
    b.wait_until(
        "the log is read",
        "Number(document.querySelector('[data-testid=log]')?.dataset.lines) > 700",
    )
    .await
    .unwrap();
    let rendered = "document.querySelectorAll('[data-testid=log] [data-line]').length";
    let count: u64 = b
        .client
        .execute(&format!("return {rendered};"), vec![])
        .await
        .unwrap()
        .as_u64()
        .unwrap();
    assert!((1..=100).contains(&count), "{count} lines in the page");
    b.wait_for("[data-testid=log] [data-line='1']").await.unwrap();
    // Its end, reached by scrolling: the last line is there, the first no longer.
    b.client
        .execute(
            "const l = document.querySelector('[data-testid=log]'); l.scrollTop = l.scrollHeight;",
            vec![],
        )
        .await
        .unwrap();
    b.wait_until(
        "the last line is rendered",
        "(() => { const l = document.querySelector('[data-testid=log]'); \
          return !!l.querySelector(`[data-line='${l.dataset.lines}']`) && !l.querySelector(\"[data-line='1']\"); })()",
    )
    .await
    .unwrap();
    let count: u64 = b
        .client
        .execute(&format!("return {rendered};"), vec![])
        .await
        .unwrap()
        .as_u64()
        .unwrap();
    assert!((1..=100).contains(&count), "{count} lines in the page");
    b.assert_clean("/jobs/{id} (long log)").await;
    b.close().await;
}

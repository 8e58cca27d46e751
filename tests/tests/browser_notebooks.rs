//! A notebook's page is user code (issue 40): in real Chromium, a notebook whose page tries to
//! use the portal session of whoever opens it — create an admin, delete its owner's other job,
//! read the caller, open event streams (by script and by frames), post a form — achieves
//! nothing, whether its owner or an admin (after confirming) opens it.
//!
//! The portal and the notebook origins are siblings of one site here, the case where
//! `SameSite=Strict` does not help: the portal at `http://portal.anteroom.example.com:<port>`,
//! notebooks at `http://<job>.nb.anteroom.example.com:<port>` (Chromium maps both names to the
//! test server; under a registered suffix, `.com`, so that the browser counts them as one site:
//! names under an unknown suffix such as `.test` would each be a site of their own), so the
//! browser does send the portal's cookie with the notebook page's requests; the server must
//! refuse them. Chromium treats both origins as secure, as https ones are in a deployment:
//! only then does it send the fetch metadata the server decides by. The server's own count of
//! refusals is checked, so a request that merely failed in the browser (CORS) proves nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anteroom_tests::api::{call, submit_job};
use anteroom_tests::browser::{Browser, require_ui};
use anteroom_tests::{ADMIN_PASSWORD, TestApp, USER_PASSWORD};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The page every request to the stub notebook gets: it attacks the portal at `PORTAL` and its
/// owner's job `VICTIM`, then shows what it got in `#result` and titles itself `done`.
const EVIL_PAGE: &str = r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Lab</title></head>
<body><main><h1 id="stub">Stub notebook</h1><pre id="result"></pre>
<iframe name="sink" title="sink"></iframe>
<form id="csrf" method="post" action="PORTAL/api/v1/admin/users" enctype="text/plain" target="sink">
<input type="hidden" name='{"username":"mallory4","password":"mallory-password","role":"admin","x":"' value='"}'>
</form>
<script>
(async () => {
  const portal = "PORTAL";
  const out = {};
  const run = async (name, f) => {
    try { const r = await f(); out[name] = r.type + ":" + r.status; }
    catch (e) { out[name] = "refused:" + e.name; }
  };
  const admin = (name) => JSON.stringify({username: name, password: "mallory-password", role: "admin"});
  await run("createSimple", () => fetch(portal + "/api/v1/admin/users",
    {method: "POST", mode: "no-cors", credentials: "include", headers: {"content-type": "text/plain"}, body: admin("mallory")}));
  await run("createJson", () => fetch(portal + "/api/v1/admin/users",
    {method: "POST", credentials: "include", headers: {"content-type": "application/json"}, body: admin("mallory2")}));
  await run("deleteJob", () => fetch(portal + "/api/v1/jobs/VICTIM", {method: "DELETE", credentials: "include"}));
  await run("me", () => fetch(portal + "/api/v1/auth/me", {mode: "no-cors", credentials: "include"}));
  await run("hereCreate", () => fetch("/api/v1/admin/users",
    {method: "POST", headers: {"content-type": "application/json"}, body: admin("mallory3")}));
  await run("hereDelete", () => fetch("/api/v1/jobs/VICTIM", {method: "DELETE"}));
  out.stream = await new Promise((resolve) => {
    const es = new EventSource(portal + "/api/v1/jobs/events/stream", {withCredentials: true});
    es.onopen = () => { es.close(); resolve("open"); };
    es.onerror = () => { es.close(); resolve("error"); };
    setTimeout(() => { es.close(); resolve("timeout"); }, 5000);
  });
  // Frames of the portal's event stream: each would hold one of the viewer's stream slots.
  for (let i = 0; i < 8; i++) {
    const frame = document.createElement("iframe");
    frame.title = "stream " + i;
    frame.src = portal + "/api/v1/jobs/events/stream";
    document.body.appendChild(frame);
  }
  await new Promise((resolve) => setTimeout(resolve, 1500));
  out.form = await new Promise((resolve) => {
    document.querySelector("iframe").onload = () => resolve("answered");
    document.getElementById("csrf").submit();
    setTimeout(() => resolve("timeout"), 5000);
  });
  document.getElementById("result").textContent = JSON.stringify(out);
  document.title = "done";
})();
</script></main></body></html>"#;

/// A stub notebook server answering every request with [`EVIL_PAGE`] as `page` holds it.
async fn evil_notebook(page: Arc<Mutex<String>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let page = page.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body = page.lock().unwrap().clone();
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    base
}

/// Waits until job `id` runs (the simulated cluster places it within seconds).
async fn running(app: &TestApp, token: &str, id: i64) {
    let mut job = Value::Null;
    for _ in 0..300 {
        job = app.get_json(&format!("/api/v1/jobs/{id}"), Some(token)).await;
        if job["phase"] == "Running" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("job {id} did not start: {job}");
}

/// Opens job `lab`'s notebook from its page in the portal (confirming when asked), lets its
/// page run, and returns what the page says it got.
/// What the server refused as coming from another origin so far.
async fn refusals(app: &TestApp) -> f64 {
    app.metrics()
        .await
        .lines()
        .filter(|l| l.starts_with("anteroom_cross_site_refusals_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn open_and_let_it_run(b: &Browser, portal: &str, lab: i64, confirm: bool) -> Value {
    b.client.goto(&format!("{portal}/jobs/{lab}")).await.unwrap();
    b.wait_for("[data-testid=open-notebook]").await.unwrap();
    let portal_tab = b.client.window().await.unwrap();
    b.click("[data-testid=open-notebook]").await;
    if confirm {
        b.wait_for("[data-testid=confirm-yes]").await.unwrap();
        b.click("[data-testid=confirm-yes]").await;
    }
    let tab = b.new_tab_besides(&portal_tab).await;
    b.client.switch_to_window(tab).await.unwrap();
    b.wait_for_text("#stub", "Stub notebook").await.unwrap();
    let at = b.client.current_url().await.unwrap();
    assert_eq!(
        at.host_str(),
        Some(format!("{lab}.nb.anteroom.example.com").as_str()),
        "{at}"
    );
    b.wait_until("the notebook's script finished", "document.title === 'done'")
        .await
        .unwrap();
    let result: Value = serde_json::from_str(&b.text("#result").await).unwrap();
    b.client.close_window().await.unwrap();
    b.client.switch_to_window(portal_tab).await.unwrap();
    result
}

/// No account was made, Ann's job `precious` runs on, and no stream holds a slot of the
/// viewer's (a stream the server answered would hold one until its next heartbeat, 15 s, well
/// after the page finished): what `who`'s notebook page tried (`result`) did nothing.
async fn nothing_happened(app: &TestApp, admin: &str, precious: i64, (who, id): (&str, i64), result: &Value) {
    // The portal's own tab holds its live stream; the page's frames and script would add up to
    // eight more.
    let open = app.state.stream_slots.open_for(id);
    assert!(
        open <= 1,
        "{who}'s session holds {open} streams: the notebook's page took some ({result})"
    );
    let users = app.get_json("/api/v1/admin/users", Some(admin)).await;
    let names: Vec<&str> = users
        .as_array()
        .or_else(|| users["items"].as_array())
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with("mallory")),
        "{who}'s session created an account: {names:?} ({result})"
    );
    let (_, job) = call(app, "GET", &format!("/api/v1/jobs/{precious}"), admin, None).await;
    assert_eq!(job["phase"], "Running", "{who}: {job} ({result})");
    assert_ne!(result["stream"], "open", "{who}: {result}");
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_a_notebook_s_script_gets_nothing_from_the_session_of_its_owner_or_of_an_admin() {
    require_ui();
    let page = Arc::new(Mutex::new(String::new()));
    let upstream = evil_notebook(page.clone()).await;
    let app = TestApp::builder()
        .configure(move |c| {
            c.sim_notebook_upstream = Some(upstream);
            c.notebook_origin = Some(
                anteroom::notebooks::origin::NotebookOrigin::parse("http://{job}.nb.anteroom.example.com:{port}")
                    .unwrap(),
            );
        })
        .start()
        .await;
    let port = app.addr.port();
    let portal = format!("http://portal.anteroom.example.com:{port}");
    let ann = app.user_token("ann").await;
    let admin = app.admin_token().await;
    let id_of = |me: Value| me["id"].as_i64().unwrap();
    let ann_id = id_of(app.get_json("/api/v1/auth/me", Some(&ann)).await);
    let admin_id = id_of(app.get_json("/api/v1/auth/me", Some(&admin)).await);
    let (precious, _) = submit_job(
        &app,
        &ann,
        json!({"name": "precious", "kind": "custom", "tasks": [{"name": "main", "replicas": 1,
            "image": "busybox", "command": ["sleep", "86400"], "resources": {"cpu": "1", "memory": "1Gi"}}]}),
    )
    .await;
    let (lab, _) = submit_job(
        &app,
        &ann,
        json!({"name": "lab", "kind": "jupyter", "tasks": [{"name": "main", "replicas": 1,
            "image": "quay.io/jupyter/base-notebook", "resources": {"cpu": "1", "memory": "2Gi"}}]}),
    )
    .await;
    running(&app, &ann, lab).await;
    *page.lock().unwrap() = EVIL_PAGE
        .replace("PORTAL", &portal)
        .replace("VICTIM", &precious.to_string());

    // Browsers send fetch metadata (`Sec-Fetch-Site`, what the server decides by) only to
    // secure origins: https, or these two as if they were.
    let secure =
        format!("--unsafely-treat-insecure-origin-as-secure={portal},http://{lab}.nb.anteroom.example.com:{port}");
    let b = Browser::start_with(
        "en-US,en",
        &["--host-resolver-rules=MAP *.anteroom.example.com 127.0.0.1", &secure],
    )
    .await;
    // Its owner opens it.
    // Every request the page makes to the portal with the session is refused by the server
    // itself: the two posts, the stream, the eight frames and the read (the preflighted
    // requests never leave the browser).
    const REFUSED_AT_LEAST: f64 = 12.0;
    b.login(&portal, "ann", USER_PASSWORD).await;
    let before = refusals(&app).await;
    let result = open_and_let_it_run(&b, &portal, lab, false).await;
    let refused = refusals(&app).await - before;
    assert!(refused >= REFUSED_AT_LEAST, "{refused} refused ({result})");
    nothing_happened(&app, &admin, precious, ("ann", ann_id), &result).await;

    // An admin helping Ann opens it as an admin, after the warning.
    b.client.goto(&format!("{portal}/jobs")).await.unwrap();
    b.click("[data-testid=logout]").await;
    b.wait_for("#login-username").await.unwrap();
    b.login(&portal, "admin", ADMIN_PASSWORD).await;
    let before = refusals(&app).await;
    let result = open_and_let_it_run(&b, &portal, lab, true).await;
    let refused = refusals(&app).await - before;
    assert!(refused >= REFUSED_AT_LEAST, "{refused} refused ({result})");
    nothing_happened(&app, &admin, precious, ("the admin", admin_id), &result).await;
    b.close().await;
}

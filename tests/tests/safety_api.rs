//! The safety rules over real HTTP (issue 23): cross-site writes refused, JSON bodies only,
//! the cookie and headers over https, slow and numerous clients bounded, no request of
//! nothing, a cap on unfinished jobs.

use std::time::Duration;

use anteroom::config::PublicUrl;
use anteroom_tests::api::{call, code, count, job, settings, submit_job};
use anteroom_tests::{ADMIN_PASSWORD, TestApp};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Logs in as the admin and returns the session cookie's `name=value`.
async fn session_cookie(app: &TestApp) -> String {
    let res = app.login("admin", ADMIN_PASSWORD).await;
    assert_eq!(res.status(), 200);
    let set = res.headers()["set-cookie"].to_str().unwrap().to_string();
    set.split(';').next().unwrap().to_string()
}

/// `POST /api/v1/admin/users` with the cookie and these extra headers and body.
async fn create_user_by_cookie(
    app: &TestApp,
    cookie: &str,
    username: &str,
    headers: &[(&str, String)],
    content_type: &str,
) -> (u16, Value) {
    let mut req = app
        .client
        .post(app.url("/api/v1/admin/users"))
        .header("cookie", cookie)
        .header("content-type", content_type)
        .body(json!({"username": username, "password": "a-long-password", "role": "admin"}).to_string());
    for (name, value) in headers {
        req = req.header(*name, value);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn user_exists(app: &TestApp, token: &str, username: &str) -> bool {
    let (_, users) = call(app, "GET", "/api/v1/admin/users?pageSize=500", token, None).await;
    let items = users["items"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| users.as_array().cloned().unwrap_or_default());
    items.iter().any(|u| u["username"] == username)
}

#[tokio::test]
async fn a_foreign_page_cannot_write_with_the_admins_cookie_and_the_ui_s_own_origin_can() {
    let app = TestApp::builder().start().await;
    let cookie = session_cookie(&app).await;
    let token = app.admin_token().await;
    let own = format!("http://{}", app.addr);
    // The attack of the issue: a text/plain form post from a sibling origin.
    let (status, body) = create_user_by_cookie(
        &app,
        &cookie,
        "evil1",
        &[("origin", "https://evil.example".into())],
        "text/plain",
    )
    .await;
    assert_eq!((status, code(&body)), (403, "cross_site_request"), "{body}");
    // Same-site but another origin, as fetch metadata says it; and with no browser header at
    // all (a cookie alone is never enough to write).
    for headers in [
        vec![("sec-fetch-site", "same-site".to_string()), ("origin", own.clone())],
        vec![("sec-fetch-site", "cross-site".to_string())],
        vec![("origin", format!("http://127.0.0.1:{}", app.addr.port() + 1))],
        vec![],
    ] {
        let (status, body) = create_user_by_cookie(&app, &cookie, "evil2", &headers, "application/json").await;
        assert_eq!(
            (status, code(&body)),
            (403, "cross_site_request"),
            "{headers:?}: {body}"
        );
    }
    // Behind a basic-auth proxy the browser adds `Authorization: Basic` by itself: no exemption.
    let (status, body) = create_user_by_cookie(
        &app,
        &cookie,
        "evil3",
        &[
            ("authorization", "Basic YTpi".into()),
            ("origin", "https://evil.example".into()),
        ],
        "application/json",
    )
    .await;
    assert_eq!((status, code(&body)), (403, "cross_site_request"), "{body}");
    assert!(!user_exists(&app, &token, "evil1").await && !user_exists(&app, &token, "evil2").await);
    // The UI's own pages: fetch metadata, or an Origin equal to the server's.
    let (status, body) = create_user_by_cookie(
        &app,
        &cookie,
        "friend1",
        &[("sec-fetch-site", "same-origin".into())],
        "application/json",
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = create_user_by_cookie(&app, &cookie, "friend2", &[("origin", own)], "application/json").await;
    assert_eq!(status, 201, "{body}");
    // Reads with the cookie from another origin are refused too (a sibling host's page must
    // get nothing from the session); from the UI's own pages, and for a person's navigation,
    // they are answered.
    for (site, mode, status) in [
        ("cross-site", "cors", 403),
        ("same-site", "no-cors", 403),
        ("same-origin", "cors", 200),
        ("cross-site", "navigate", 200),
    ] {
        let dest = if mode == "navigate" { "document" } else { "empty" };
        let res = app
            .client
            .get(app.url("/api/v1/auth/me"))
            .header("cookie", &cookie)
            .header("sec-fetch-site", site)
            .header("sec-fetch-mode", mode)
            .header("sec-fetch-dest", dest)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), status, "{site} {mode}");
    }
}

#[tokio::test]
async fn a_body_that_is_not_json_is_415_and_bearer_clients_are_not_asked_where_they_come_from() {
    let app = TestApp::builder().start().await;
    let token = app.admin_token().await;
    let before = count(&app, "users").await;
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let res = app
            .client
            .post(app.url("/api/v1/admin/users"))
            .bearer_auth(&token)
            .header("content-type", content_type)
            .body(json!({"username": "plain", "password": "a-long-password", "role": "user"}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 415, "{content_type}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(code(&body), "unsupported_media_type");
    }
    let res = app
        .client
        .post(app.url("/api/v1/admin/users"))
        .bearer_auth(&token)
        .body(json!({"username": "plain", "password": "a-long-password", "role": "user"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415, "no content type at all");
    assert_eq!(count(&app, "users").await, before, "nothing was created");
    // A bearer client from anywhere writes as before.
    let res = app
        .client
        .post(app.url("/api/v1/admin/users"))
        .bearer_auth(&token)
        .header("origin", "https://evil.example")
        .header("sec-fetch-site", "cross-site")
        .json(&json!({"username": "scripted", "password": "a-long-password", "role": "user"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
}

#[tokio::test]
async fn a_foreign_page_cannot_log_a_browser_in_but_a_script_can() {
    let app = TestApp::builder().start().await;
    let login = |headers: Vec<(&'static str, &'static str)>| {
        let mut req = app
            .client
            .post(app.url("/api/v1/auth/login"))
            .json(&json!({"username": "admin", "password": ADMIN_PASSWORD}));
        for (name, value) in headers {
            req = req.header(name, value);
        }
        req.send()
    };
    for headers in [
        vec![("origin", "https://evil.example")],
        vec![("sec-fetch-site", "cross-site")],
        vec![("sec-fetch-site", "same-site")],
    ] {
        let res = login(headers.clone()).await.unwrap();
        assert_eq!(res.status(), 403, "{headers:?}");
        assert!(res.headers().get("set-cookie").is_none());
    }
    assert_eq!(
        login(vec![]).await.unwrap().status(),
        200,
        "a script sends no browser header"
    );
    assert_eq!(
        login(vec![("sec-fetch-site", "same-origin")]).await.unwrap().status(),
        200
    );
}

#[tokio::test]
async fn over_https_the_cookie_is_host_prefixed_and_secure_answers_carry_hsts_and_the_origin_is_the_public_one() {
    let app = TestApp::builder()
        .configure(|c| c.public_url = Some(PublicUrl::parse("https://anteroom.example.org/").unwrap()))
        .start()
        .await;
    let res = app.login("admin", ADMIN_PASSWORD).await;
    assert_eq!(res.status(), 200);
    assert!(res.headers().contains_key("strict-transport-security"));
    let set = res.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(set.starts_with("__Host-anteroom_session="), "{set}");
    for attribute in ["Secure", "HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(attribute), "{attribute} missing in {set}");
    }
    assert!(!set.contains("Domain"), "{set}");
    let cookie = set.split(';').next().unwrap().to_string();
    let token = cookie.split_once('=').unwrap().1.to_string();
    // The plain name is not read any more (a sibling could have planted it).
    let me = app
        .client
        .get(app.url("/api/v1/auth/me"))
        .header("cookie", format!("anteroom_session={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 401);
    // Behind the proxy the Host is the upstream's: the public origin is what counts.
    let (status, body) = create_user_by_cookie(
        &app,
        &cookie,
        "proxied",
        &[("origin", "https://anteroom.example.org".into())],
        "application/json",
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, _) = create_user_by_cookie(
        &app,
        &cookie,
        "sibling",
        &[("origin", format!("http://{}", app.addr))],
        "application/json",
    )
    .await;
    assert_eq!(status, 403, "the Host's origin is not the public one");
    let page = app.client.get(app.url("/jobs")).send().await.unwrap();
    assert!(page.headers().contains_key("strict-transport-security"));
}

#[tokio::test]
async fn ui_pages_forbid_foreign_form_targets_powerful_features_and_openers() {
    let app = TestApp::builder().start().await;
    let page = app.client.get(app.url("/jobs")).send().await.unwrap();
    let h = page.headers();
    assert!(
        h["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("form-action 'self'")
    );
    assert!(h["permissions-policy"].to_str().unwrap().contains("camera=()"));
    assert_eq!(h["cross-origin-opener-policy"], "same-origin");
    assert!(!h.contains_key("strict-transport-security"), "plain http: no HSTS");
    let api = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert!(
        !api.headers().contains_key("permissions-policy"),
        "JSON answers are not pages"
    );
}

/// Opens a connection that sends half a request header and then nothing.
async fn half_header(app: &TestApp) -> tokio::net::TcpStream {
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .unwrap();
    stream
}

/// Reads until the server closes the connection (end of file or a reset); false if it stays
/// open until `deadline`.
async fn closed_by_server(mut stream: tokio::net::TcpStream, deadline: tokio::time::Instant) -> bool {
    let mut buf = [0_u8; 1024];
    tokio::time::timeout_at(deadline, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

#[tokio::test]
async fn half_sent_headers_are_closed_after_the_header_timeout_while_others_are_answered() {
    let app = TestApp::builder()
        .configure(|c| c.http_limits.header_read_timeout = Duration::from_secs(1))
        .start()
        .await;
    let mut slow = Vec::new();
    for _ in 0..50 {
        slow.push(half_header(&app).await);
    }
    // Meanwhile the server answers everyone else.
    for _ in 0..5 {
        let res = app.client.get(app.url("/healthz")).send().await.unwrap();
        assert_eq!(res.status(), 200);
    }
    // Every dribbling connection is closed by the server — by the 1 s setting, so long before
    // hyper's own 30 s default would (15 s leaves a slow machine fourteen seconds to spare).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    for stream in slow {
        assert!(
            closed_by_server(stream, deadline).await,
            "a half-sent header was kept open past the header timeout"
        );
    }
}

/// The open-connections gauge on `/metrics`.
async fn open_connections(app: &TestApp) -> f64 {
    let text = app.metrics().await;
    text.lines()
        .find_map(|l| l.strip_prefix(anteroom::http::server::OPEN_CONNECTIONS))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn open_connections_are_capped_and_the_ones_waiting_are_served_when_room_frees() {
    let app = TestApp::builder()
        .configure(|c| {
            c.http_limits.max_connections = 4;
            c.http_limits.header_read_timeout = Duration::from_secs(2);
        })
        .start()
        .await;
    // Ten connections that send nothing: at most four are taken in at a time.
    let mut idle = Vec::new();
    for _ in 0..10 {
        idle.push(tokio::net::TcpStream::connect(app.addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut seen_max = 0.0_f64;
    // A real request waits for a slot (the idle ones time out), and is then answered; the
    // gauge, read on a connection of its own, never shows more than the cap.
    let res = tokio::time::timeout(Duration::from_secs(60), app.client.get(app.url("/healthz")).send())
        .await
        .expect("answered once slots free")
        .unwrap();
    assert_eq!(res.status(), 200);
    for _ in 0..5 {
        seen_max = seen_max.max(open_connections(&app).await);
    }
    assert!(seen_max <= 4.0, "{seen_max} connections open with a cap of 4");
    drop(idle);
}

#[tokio::test]
async fn a_user_gets_at_most_the_configured_number_of_event_streams() {
    let app = TestApp::builder()
        .configure(|c| c.http_limits.max_streams_per_user = 2)
        .start()
        .await;
    let alice = app.user_token("alice").await;
    let bob = app.user_token("bob").await;
    let open = |token: String| {
        app.client
            .get(app.url("/api/v1/jobs/events/stream"))
            .bearer_auth(token)
            .send()
    };
    let first = open(alice.clone()).await.unwrap();
    let second = open(alice.clone()).await.unwrap();
    assert_eq!((first.status().as_u16(), second.status().as_u16()), (200, 200));
    let third = open(alice.clone()).await.unwrap();
    assert_eq!(third.status(), 429);
    assert!(third.headers().contains_key("retry-after"));
    let body: Value = third.json().await.unwrap();
    assert_eq!(code(&body), "too_many_streams");
    // Another user is not affected.
    assert_eq!(open(bob).await.unwrap().status(), 200);
    // A closed stream gives its slot back.
    drop(first);
    let again = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let res = open(alice.clone()).await.unwrap();
            if res.status() == 200 {
                return res;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the slot of a closed stream comes back");
    assert_eq!(again.status(), 200);
    drop(second);
}

#[tokio::test]
async fn a_task_without_cpu_or_memory_gets_the_kind_s_defaults_and_zero_is_refused() {
    let app = TestApp::builder().start().await;
    let token = app.user_token("alice").await;
    let status = app.get_json("/api/v1/prequeue/status", Some(&token)).await;
    assert_eq!(
        status["defaultRequests"]["custom"],
        json!({"cpu": "1", "memory": "4Gi"})
    );
    let (_, answer) = submit_job(&app, &token, job("empty", json!({}))).await;
    assert_eq!(answer["job"]["resources"]["cpu"], "1");
    assert_eq!(answer["job"]["resources"]["memory"], "4Gi");
    assert_eq!(
        answer["job"]["tasks"][0]["resources"]["memory"], "4Gi",
        "stored as the pod gets it"
    );
    // What the body names is kept.
    let (_, answer) = submit_job(&app, &token, job("own", json!({"cpu": "2", "memory": "1Gi"}))).await;
    assert_eq!(answer["job"]["resources"]["memory"], "1Gi");
    // A named zero is refused, naming the field; the preview says the same.
    let before = count(&app, "jobs").await;
    for path in ["/api/v1/jobs", "/api/v1/jobs/preview"] {
        let (status, body) = call(
            &app,
            "POST",
            path,
            &token,
            Some(job("zero", json!({"cpu": "0", "memory": "0"}))),
        )
        .await;
        assert_eq!(status, 422, "{path}: {body}");
        let fields = body["error"]["details"]["fields"].to_string();
        assert!(
            fields.contains("tasks[0].resources.cpu") && fields.contains("tasks[0].resources.memory"),
            "{body}"
        );
    }
    assert_eq!(count(&app, "jobs").await, before, "nothing written");
    // The admin's defaults apply from the next submission.
    let admin = app.admin_token().await;
    settings(
        &app,
        &admin,
        json!({"defaultRequests": {
            "jupyter": {"cpu": "2", "memory": "8Gi"}, "webide": {"cpu": "2", "memory": "8Gi"},
            "custom": {"cpu": "500m", "memory": "1Gi"},
            "pytorch": {"cpu": "4", "memory": "16Gi"}, "tensorflow": {"cpu": "4", "memory": "16Gi"}}}),
    )
    .await;
    let (_, answer) = submit_job(&app, &token, job("after", json!({}))).await;
    assert_eq!(answer["job"]["resources"]["cpu"], "500m");
    // A default of zero cannot be saved.
    let (_, mut config) = call(&app, "GET", "/api/v1/admin/prequeue-config", &admin, None).await;
    config["defaultRequests"]["custom"]["memory"] = json!("0");
    let (status, body) = call(&app, "PUT", "/api/v1/admin/prequeue-config", &admin, Some(config)).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("defaultRequests.custom.memory"), "{body}");
}

#[tokio::test]
async fn a_user_s_unfinished_jobs_are_capped_even_with_quotas_off() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    settings(&app, &admin, json!({"maxUnfinishedJobsPerUser": 2})).await;
    let token = app.user_token("alice").await;
    let (first, _) = submit_job(&app, &token, job("a", json!({"cpu": "1"}))).await;
    submit_job(&app, &token, job("b", json!({"cpu": "1"}))).await;
    let (status, body) = call(
        &app,
        "POST",
        "/api/v1/jobs",
        &token,
        Some(job("c", json!({"cpu": "1"}))),
    )
    .await;
    assert_eq!(
        (status.as_u16(), code(&body)),
        (429, "too_many_unfinished_jobs"),
        "{body}"
    );
    assert_eq!(body["error"]["details"]["limit"], 2);
    // Another user is not held by alice's count.
    let bob = app.user_token("bob").await;
    submit_job(&app, &bob, job("b1", json!({"cpu": "1"}))).await;
    // A finished job no longer counts.
    let (status, _) = call(&app, "DELETE", &format!("/api/v1/jobs/{first}"), &token, None).await;
    assert_eq!(status, 204);
    submit_job(&app, &token, job("c", json!({"cpu": "1"}))).await;
}

#[tokio::test]
async fn a_submission_whose_body_never_comes_is_answered_503_after_the_request_timeout() {
    let app = TestApp::builder()
        .configure(|c| c.http_limits.request_timeout = Duration::from_secs(1))
        .start()
        .await;
    let token = app.admin_token().await;
    let mut stream = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let head = format!(
        "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"name\":"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // The rest of the body never comes; the submission's own deadline reads it (the generic
    // one skips this route), so the answer comes long before hyper or the client would give up.
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(15), async {
        let mut buf = [0_u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buf[..n]);
                    if answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.ends_with(b"}") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer to a body that never came");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("\"timeout\""), "{text}");
    assert_eq!(count(&app, "jobs").await, 0);
}

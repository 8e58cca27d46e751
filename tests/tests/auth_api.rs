//! Authentication and authorisation over the real HTTP API: bounded password hashing under a
//! login flood, the throttle behind trusted proxies, sessions that end with what they stood
//! for, admin routes guarded by where they are mounted, and the security headers.

use anteroom::users::password::PasswordWork;
use anteroom_tests::{ADMIN_PASSWORD, TestApp};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

/// An app whose client addresses come from `X-Forwarded-For` (the test client is the proxy).
fn behind_a_proxy() -> anteroom_tests::TestAppBuilder {
    TestApp::builder().configure(|c| c.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()])
}

async fn login_from(app: &TestApp, client: &str, username: &str, password: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/v1/auth/login"))
        .header("x-forwarded-for", client)
        .json(&json!({"username": username, "password": password}))
        .send()
        .await
        .expect("request")
}

async fn get(app: &TestApp, token: &str, path: &str) -> u16 {
    app.client
        .get(app.url(path))
        .bearer_auth(token)
        .send()
        .await
        .expect("request")
        .status()
        .as_u16()
}

async fn patch_user(app: &TestApp, admin: &str, id: i64, body: Value) -> u16 {
    app.client
        .patch(app.url(&format!("/api/v1/admin/users/{id}")))
        .bearer_auth(admin)
        .json(&body)
        .send()
        .await
        .expect("request")
        .status()
        .as_u16()
}

async fn id_of(app: &TestApp, token: &str) -> i64 {
    let me = app.get_json("/api/v1/auth/me", Some(token)).await;
    me["id"].as_i64().expect("id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_logins_with_invented_usernames_never_hash_more_than_the_slots_allow() {
    // Each attempt from its own address, so the throttle lets every one reach the hasher.
    let app = behind_a_proxy()
        .password_work(PasswordWork::new(2, Duration::from_millis(200)))
        .start()
        .await;
    let attempts = (0..200).map(|i| {
        let client = format!("10.{}.{}.1", i / 250, i % 250);
        let app = &app;
        async move {
            let res = login_from(app, &client, &format!("invented-{i}"), "guess").await;
            let retry_after = res.headers().get("retry-after").cloned();
            let status = res.status().as_u16();
            let body: Value = res.json().await.unwrap();
            (status, body["error"]["code"].as_str().map(str::to_owned), retry_after)
        }
    });
    let results = futures::future::join_all(attempts).await;
    for (status, code, retry_after) in &results {
        match status {
            401 => assert_eq!(code.as_deref(), Some("invalid_credentials")),
            503 => {
                assert_eq!(code.as_deref(), Some("busy"));
                assert!(retry_after.is_some(), "a busy answer says when to come back");
            }
            other => panic!("unexpected {other} {code:?}"),
        }
    }
    // The two slots are free when the flood starts: at least two attempts were checked.
    assert!(
        results.iter().filter(|r| r.0 == 401).count() >= 2,
        "attempts were really checked"
    );
    // Exactly the slots: more would break the bound, fewer would mean the logins did not go
    // through the bounded hasher at all.
    assert_eq!(
        app.state.passwords.peak_running(),
        2,
        "hashes running at once with 2 slots"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legitimate_user_logs_in_during_and_after_a_flood_of_invented_usernames() {
    // A patient hasher, so this test measures the throttle, not the machine's speed.
    let app = behind_a_proxy()
        .password_work(PasswordWork::new(2, Duration::from_secs(120)))
        .start()
        .await;
    let flood = (0..100).map(|i| {
        let app = &app;
        async move {
            login_from(app, "203.0.113.66", &format!("invented-{i}"), "guess")
                .await
                .status()
                .as_u16()
        }
    });
    let legit = async {
        login_from(&app, "198.51.100.7", "admin", ADMIN_PASSWORD)
            .await
            .status()
            .as_u16()
    };
    let (flood, legit_during) = tokio::join!(futures::future::join_all(flood), legit);
    assert_eq!(legit_during, 200, "the admin logged in during the flood");
    let checked = flood.iter().filter(|&&s| s == 401).count();
    let refused = flood.iter().filter(|&&s| s == 429).count();
    assert_eq!(
        checked,
        anteroom::auth::throttle::MAX_ADDRESS_FAILURES,
        "the flooding address got its per-address allowance of hashes and no more: {flood:?}"
    );
    assert_eq!(checked + refused, 100, "{flood:?}");
    let after = login_from(&app, "198.51.100.7", "admin", ADMIN_PASSWORD).await;
    assert_eq!(after.status(), 200, "and after it");
    let flooder = login_from(&app, "203.0.113.66", "admin", ADMIN_PASSWORD).await;
    assert_eq!(
        flooder.status(),
        429,
        "the flooding address stays cut off, whatever username"
    );
}

#[tokio::test]
async fn x_forwarded_for_from_an_untrusted_peer_does_not_reset_the_throttle() {
    let app = TestApp::builder().start().await;
    for i in 0..anteroom::auth::throttle::MAX_FAILURES {
        let res = login_from(&app, &format!("192.0.2.{i}"), "admin", "wrong-password").await;
        assert_eq!(res.status(), 401);
    }
    let res = login_from(&app, "192.0.2.200", "admin", ADMIN_PASSWORD).await;
    assert_eq!(res.status(), 429, "the header is the client's own words: ignored");
}

#[tokio::test]
async fn a_login_username_counts_for_the_throttle_as_its_first_64_characters() {
    use anteroom::auth::throttle::{MAX_FAILURES, MAX_LOGIN_USERNAME_CHARS};
    let app = TestApp::builder().start().await;
    let long = "a".repeat(MAX_LOGIN_USERNAME_CHARS);
    // Different tails past the 64th character are one name: they cannot dodge the limit.
    for i in 0..MAX_FAILURES {
        let res = app.login(&format!("{long}{i}"), "wrong-password").await;
        assert_eq!(res.status(), 401, "attempt {i}");
    }
    let res = app.login(&format!("{long}-another-tail"), "wrong-password").await;
    assert_eq!(res.status(), 429);
    // A different name within the 64 is another key.
    let res = app.login(&format!("b{long}"), "wrong-password").await;
    assert_eq!(res.status(), 401);
}

#[tokio::test]
async fn a_password_change_ends_every_session_issued_before_it() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let ivy = app.user_token("ivy").await;
    let ivy_other_device = app.token("ivy", anteroom_tests::USER_PASSWORD).await;
    let id = id_of(&app, &ivy).await;
    assert_eq!(
        patch_user(&app, &admin, id, json!({"password": "a-new-password"})).await,
        200
    );
    assert_eq!(get(&app, &ivy, "/api/v1/auth/me").await, 401);
    assert_eq!(get(&app, &ivy_other_device, "/api/v1/auth/me").await, 401);
    let fresh = app.token("ivy", "a-new-password").await;
    assert_eq!(get(&app, &fresh, "/api/v1/auth/me").await, 200);
    assert_eq!(
        get(&app, &admin, "/api/v1/auth/me").await,
        200,
        "nobody else is logged out"
    );
}

#[tokio::test]
async fn a_role_change_ends_the_sessions_and_setting_the_same_role_does_not() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let jo = app.user_token("jo").await;
    let id = id_of(&app, &jo).await;
    assert_eq!(patch_user(&app, &admin, id, json!({"role": "user"})).await, 200);
    assert_eq!(
        get(&app, &jo, "/api/v1/auth/me").await,
        200,
        "the same role again changes nothing"
    );
    assert_eq!(patch_user(&app, &admin, id, json!({"displayName": "Jo"})).await, 200);
    assert_eq!(
        get(&app, &jo, "/api/v1/auth/me").await,
        200,
        "a display name is not a session matter"
    );
    assert_eq!(patch_user(&app, &admin, id, json!({"role": "admin"})).await, 200);
    assert_eq!(get(&app, &jo, "/api/v1/auth/me").await, 401, "promoted: log in again");
    let promoted = app.token("jo", anteroom_tests::USER_PASSWORD).await;
    assert_eq!(get(&app, &promoted, "/api/v1/admin/users").await, 200);
}

#[tokio::test]
async fn logout_ends_all_of_the_callers_sessions_and_nobody_elses() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let kim = app.user_token("kim").await;
    let kim_phone = app.token("kim", anteroom_tests::USER_PASSWORD).await;
    let res = app
        .client
        .post(app.url("/api/v1/auth/logout"))
        .bearer_auth(&kim)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    assert_eq!(get(&app, &kim, "/api/v1/auth/me").await, 401);
    assert_eq!(get(&app, &kim_phone, "/api/v1/auth/me").await, 401);
    assert_eq!(get(&app, &admin, "/api/v1/auth/me").await, 200);
    let again = app.token("kim", anteroom_tests::USER_PASSWORD).await;
    assert_eq!(get(&app, &again, "/api/v1/auth/me").await, 200, "a new login works");
}

/// Every operation of the served OpenAPI document, with its path parameters filled in.
async fn operations(app: &TestApp) -> Vec<(Method, String, bool)> {
    let spec = app.get_json("/api/openapi.json", None).await;
    let mut ops = Vec::new();
    for (path, item) in spec["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().unwrap() {
            let Ok(method) = method.to_uppercase().parse::<Method>() else {
                continue;
            };
            let public = op
                .get("security")
                .is_none_or(|s| s.as_array().is_some_and(Vec::is_empty));
            let concrete = path
                .split('/')
                .map(|seg| if seg.starts_with('{') { "1" } else { seg })
                .collect::<Vec<_>>()
                .join("/");
            ops.push((method, concrete, public));
        }
    }
    ops
}

#[tokio::test]
async fn every_operation_not_marked_public_answers_401_without_a_token() {
    let app = TestApp::builder().start().await;
    let ops = operations(&app).await;
    let mut public: Vec<String> = ops.iter().filter(|o| o.2).map(|(m, p, _)| format!("{m} {p}")).collect();
    public.sort();
    assert_eq!(
        public,
        [
            "GET /api/v1/auth/session",
            "GET /healthz",
            "GET /metrics",
            "GET /readyz",
            "POST /api/v1/auth/login"
        ],
        "the public operations are exactly these"
    );
    let mut checked = 0;
    for (method, path, _) in ops.iter().filter(|o| !o.2) {
        let res = app
            .client
            .request(method.clone(), app.url(path))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401, "{method} {path}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], "unauthorized", "{method} {path}");
        checked += 1;
    }
    assert!(checked >= 7, "only {checked} operations checked");
}

#[tokio::test]
async fn every_admin_operation_answers_403_to_a_user_token_before_its_handler_runs() {
    let app = TestApp::builder().start().await;
    let user = app.user_token("lee").await;
    let admin_ops: Vec<_> = operations(&app)
        .await
        .into_iter()
        .filter(|(_, p, _)| p.starts_with("/api/v1/admin/"))
        .collect();
    assert!(admin_ops.len() >= 5, "{admin_ops:?}");
    for (method, path, public) in admin_ops {
        assert!(!public, "{method} {path} is an admin operation marked public");
        // An empty body: a handler reached would answer 422, not 403.
        let res = app
            .client
            .request(method.clone(), app.url(&path))
            .bearer_auth(&user)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{method} {path}");
    }
    let admin = app.admin_token().await;
    assert_eq!(
        get(&app, &admin, "/api/v1/admin/users").await,
        200,
        "and an admin gets in"
    );
}

#[tokio::test]
async fn every_answer_carries_nosniff_and_no_referrer_and_pages_a_strict_policy() {
    let app = TestApp::builder().start().await;
    for path in [
        "/healthz",
        "/api/v1/auth/me",
        "/api/nope",
        "/",
        "/jobs",
        "/api/docs/",
        "/api/openapi.json",
    ] {
        let res = app.client.get(app.url(path)).send().await.unwrap();
        let h = res.headers();
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(
            !csp.contains("unsafe-inline") || path.starts_with("/api/docs"),
            "{path}: {csp}"
        );
    }
    let page = app.client.get(app.url("/jobs")).send().await.unwrap();
    assert_eq!(
        page.headers()["content-security-policy"],
        anteroom::http::security::UI_POLICY,
        "the UI page gets the UI's policy"
    );
    let html = page.text().await.unwrap();
    assert!(
        !html.contains("<script>") && !html.contains("<script type=\"module\">\n"),
        "no inline script: {html}"
    );
}

#[tokio::test]
async fn login_sets_an_httponly_strict_session_cookie_that_authenticates_and_logout_clears() {
    let app = TestApp::builder().start().await;
    let res = app.login("admin", ADMIN_PASSWORD).await;
    assert_eq!(res.status(), 200);
    let set: Vec<String> = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let token = res.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(set.len(), 1, "{set:?}");
    let cookie = &set[0];
    assert!(cookie.starts_with(&format!("anteroom_session={token};")), "{cookie}");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age="] {
        assert!(cookie.contains(attribute), "{attribute} missing in {cookie}");
    }
    let me = |cookie: String| {
        app.client
            .get(app.url("/api/v1/auth/me"))
            .header("cookie", cookie)
            .send()
    };
    // The cookie alone authenticates (the browser sends no Authorization header) ...
    let res = me(format!("theme=dark; anteroom_session={token}")).await.unwrap();
    assert_eq!(res.status(), 200);
    // ... a wrong one does not, nor an empty one.
    assert_eq!(me("anteroom_session=nonsense".into()).await.unwrap().status(), 401);
    assert_eq!(me("anteroom_session=".into()).await.unwrap().status(), 401);
    // The bearer header, when present, is what counts.
    let res = app
        .client
        .get(app.url("/api/v1/auth/me"))
        .header("cookie", format!("anteroom_session={token}"))
        .bearer_auth("not-a-token")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    // Logout by cookie ends the session and clears the cookie.
    let res = app
        .client
        .post(app.url("/api/v1/auth/logout"))
        .header("cookie", format!("anteroom_session={token}"))
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    let cleared = res.headers().get("set-cookie").unwrap().to_str().unwrap().to_string();
    assert!(
        cleared.starts_with("anteroom_session=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    assert_eq!(me(format!("anteroom_session={token}")).await.unwrap().status(), 401);
}

#[tokio::test]
async fn the_session_endpoint_names_the_cookies_user_or_nobody_without_a_401() {
    let app = TestApp::builder().start().await;
    // The session the cookie names: always a 200, whoever asks.
    let session = |cookie: Option<String>| {
        let mut req = app.client.get(app.url("/api/v1/auth/session"));
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        async move {
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), 200);
            res.json::<Value>().await.unwrap()
        }
    };
    assert_eq!(session(None).await, serde_json::json!({"user": null}));
    assert!(session(Some("anteroom_session=nonsense".into())).await["user"].is_null());

    let token = app.admin_token().await;
    let body = session(Some(format!("anteroom_session={token}"))).await;
    assert_eq!(body["user"]["username"], "admin");
    assert_eq!(body["user"]["role"], "admin");
    // After logout the same cookie is nobody again.
    let res = app
        .client
        .post(app.url("/api/v1/auth/logout"))
        .header("cookie", format!("anteroom_session={token}"))
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    let body = session(Some(format!("anteroom_session={token}"))).await;
    assert!(body["user"].is_null(), "{body}");
}

//! The HTTP surface through the real router on a real port with a fresh SQLite file.

use anteroom_tests::{ADMIN_PASSWORD, TestApp};
use serde_json::Value;

#[tokio::test]
async fn healthz_answers_ok_and_readyz_reports_every_dependency_ready() {
    let app = TestApp::builder().start().await;
    let res = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let res = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(
        body,
        serde_json::json!({"ready": true, "database": true, "migrations": true, "cluster": true})
    );
    app.stop().await;
}

#[tokio::test]
async fn the_openapi_document_is_3_1_and_names_the_auth_paths() {
    let app = TestApp::builder().start().await;
    let spec = app.get_json("/api/openapi.json", None).await;
    assert!(
        spec["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        spec["openapi"]
    );
    assert!(spec["paths"]["/api/v1/auth/login"]["post"].is_object());
    assert!(spec["paths"]["/api/v1/auth/me"]["get"].is_object());
    assert!(spec["components"]["schemas"]["ErrorBody"].is_object());
    assert!(spec["components"]["securitySchemes"]["bearer"].is_object());
}

#[tokio::test]
async fn the_committed_openapi_json_matches_the_code() {
    // Routes and spec cannot drift: regenerate with `cargo run -p anteroom -- openapi > openapi.json`.
    let spec = anteroom::http::openapi_document();
    let generated = spec.to_pretty_json().unwrap();
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../openapi.json")).unwrap();
    assert_eq!(
        generated.trim(),
        committed.trim(),
        "openapi.json is stale: run `cargo run -p anteroom -- openapi > openapi.json`"
    );
}

#[tokio::test]
async fn the_api_docs_page_is_served_by_the_binary() {
    let app = TestApp::builder().start().await;
    let res = app.client.get(app.url("/api/docs/")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let html = res.text().await.unwrap();
    assert!(html.contains("swagger"), "{html}");
    assert!(!html.contains("cdn"), "the docs page must not load from a CDN");
}

#[tokio::test]
async fn an_unknown_api_path_gets_the_json_404_never_the_page() {
    let app = TestApp::builder().start().await;
    for path in ["/api/nope", "/api/v1/jobs/unknown/deeper", "/api"] {
        let res = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(res.status(), 404, "{path}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], "not_found", "{path}");
    }
}

#[tokio::test]
async fn every_page_path_gets_index_html_and_a_missing_asset_gets_a_404() {
    let app = TestApp::builder().start().await;
    for path in ["/", "/jobs", "/jobs/new", "/jobs/17", "/admin/queues", "/anything/else"] {
        let res = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(res.status(), 200, "{path}");
        assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
        assert_eq!(res.headers()["cache-control"], "no-cache");
    }
    let res = app.client.get(app.url("/pkg/0000/missing.wasm")).send().await.unwrap();
    assert_eq!(res.status(), 404);
}

#[tokio::test]
async fn embedded_assets_have_their_content_types_gzip_and_long_caching() {
    let app = TestApp::builder().start().await;
    let index = app.client.get(app.url("/")).send().await.unwrap().text().await.unwrap();
    let Some(start) = index.find("/pkg/") else {
        // Built without the UI (plain `cargo test`): nothing more to check here. Under CI the
        // UI is built first, so this must not happen there.
        assert!(!anteroom::http::assets::ui_built());
        assert!(
            !anteroom_tests::in_ci(),
            "CI, but the web UI is not embedded: run the tests through ./anteroom.sh test"
        );
        return;
    };
    let hash_len = index[start + 5..].find('/').unwrap();
    let dir = &index[start..start + 5 + hash_len];
    let res = app
        .client
        .get(app.url(&format!("{dir}/anteroom_web_bg.wasm")))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/wasm");
    assert_eq!(res.headers()["content-encoding"], "gzip");
    assert_eq!(res.headers()["cache-control"], "public, max-age=31536000, immutable");
    let res = app
        .client
        .get(app.url(&format!("{dir}/anteroom_web.js")))
        .send()
        .await
        .unwrap();
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(
        res.headers().get("content-encoding").is_none(),
        "no gzip unless asked for"
    );
}

#[tokio::test]
async fn the_first_admin_logs_in_and_sees_who_they_are() {
    let app = TestApp::builder().start().await;
    let token = app.admin_token().await;
    let res = app
        .client
        .get(app.url("/api/v1/auth/me"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let me: Value = res.json().await.unwrap();
    assert_eq!(me["username"], "admin");
    assert_eq!(me["role"], "admin");
    assert_eq!(me["displayName"], "Administrator");
}

#[tokio::test]
async fn a_wrong_password_or_unknown_user_is_401_invalid_credentials() {
    let app = TestApp::builder().start().await;
    for (u, p) in [("admin", "wrong-password"), ("nobody", "whatever")] {
        let res = app.login(u, p).await;
        assert_eq!(res.status(), 401);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_credentials");
    }
}

#[tokio::test]
async fn five_wrong_passwords_make_the_next_login_429_even_with_the_right_password() {
    let app = TestApp::builder().start().await;
    let me = app.user_token("carol").await;
    for _ in 0..anteroom::auth::throttle::MAX_FAILURES {
        assert_eq!(app.login("admin", "wrong-password").await.status(), 401);
    }
    let res = app.login("admin", ADMIN_PASSWORD).await;
    assert_eq!(res.status(), 429);
    let retry_after: u64 = res.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_many_attempts");
    assert_eq!(body["error"]["details"]["retryAfterSeconds"], retry_after);
    assert!(
        (1..=300).contains(&retry_after),
        "within the 5-minute window: {retry_after}"
    );
    // Another username from the same address, and tokens already issued, are unaffected.
    assert_eq!(app.login("carol", anteroom_tests::USER_PASSWORD).await.status(), 200);
    let res = app
        .client
        .get(app.url("/api/v1/auth/me"))
        .bearer_auth(&me)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn wrong_passwords_sent_all_at_once_get_no_more_tries_than_sent_one_by_one() {
    let app = TestApp::builder().start().await;
    let max = anteroom::auth::throttle::MAX_FAILURES;
    let attempts = (0..3 * max).map(|_| app.login("admin", "wrong-password"));
    let statuses: Vec<u16> = futures::future::join_all(attempts)
        .await
        .iter()
        .map(|r| r.status().as_u16())
        .collect();
    assert_eq!(statuses.iter().filter(|&&s| s == 401).count(), max, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 2 * max, "{statuses:?}");
}

#[tokio::test]
async fn a_successful_login_clears_the_earlier_failures() {
    let app = TestApp::builder().start().await;
    let max = anteroom::auth::throttle::MAX_FAILURES;
    for _ in 0..max - 1 {
        assert_eq!(app.login("admin", "wrong-password").await.status(), 401);
    }
    assert_eq!(app.login("admin", ADMIN_PASSWORD).await.status(), 200);
    for _ in 0..max - 1 {
        assert_eq!(app.login("admin", "wrong-password").await.status(), 401);
    }
    assert_eq!(app.login("admin", ADMIN_PASSWORD).await.status(), 200);
}

#[tokio::test]
async fn a_json_array_is_not_accepted_in_place_of_an_object_body() {
    let app = TestApp::builder().start().await;
    // serde's derived structs would read this as {username, password} in field order.
    let res = app
        .client
        .post(app.url("/api/v1/auth/login"))
        .json(&serde_json::json!(["admin", ADMIN_PASSWORD]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 422);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["details"]["fields"][0]["field"], "body");
}

#[tokio::test]
async fn me_without_or_with_a_bad_token_is_401_in_the_json_shape() {
    let app = TestApp::builder().start().await;
    let res = app.client.get(app.url("/api/v1/auth/me")).send().await.unwrap();
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
    let res = app
        .client
        .get(app.url("/api/v1/auth/me"))
        .bearer_auth("not.a.token")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
}

#[tokio::test]
async fn malformed_bodies_get_422_naming_the_field_and_unknown_fields_are_refused() {
    let app = TestApp::builder().start().await;
    let cases: [(&str, &str); 4] = [
        ("{not json", "body"),
        (r#"{"username": 5, "password": "x"}"#, "username"),
        (r#"{"username": "admin"}"#, "body"),
        (r#"{"username": "a", "password": "b", "extra": true}"#, "extra"),
    ];
    for (body, field) in cases {
        let res = app
            .client
            .post(app.url("/api/v1/auth/login"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 422, "{body}");
        let json: Value = res.json().await.unwrap();
        assert_eq!(json["error"]["code"], "validation_failed", "{body}");
        assert_eq!(json["error"]["details"]["fields"][0]["field"], field, "{body}");
    }
}

#[tokio::test]
async fn a_body_over_one_mebibyte_is_413() {
    let app = TestApp::builder().start().await;
    let big = format!(r#"{{"username":"{}","password":"x"}}"#, "a".repeat(1024 * 1024 + 1));
    let res = app
        .client
        .post(app.url("/api/v1/auth/login"))
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 413);
    let json: Value = res.json().await.unwrap();
    assert_eq!(json["error"]["code"], "payload_too_large");
}

#[tokio::test]
async fn a_wrong_method_on_an_api_path_is_a_json_405() {
    let app = TestApp::builder().start().await;
    let res = app.client.delete(app.url("/api/v1/auth/login")).send().await.unwrap();
    assert_eq!(res.status(), 405);
    let json: Value = res.json().await.unwrap();
    assert_eq!(json["error"]["code"], "method_not_allowed");
}

#[tokio::test]
async fn metrics_are_prometheus_text_and_count_requests() {
    let app = TestApp::builder().start().await;
    app.client.get(app.url("/healthz")).send().await.unwrap();
    let res = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = res.text().await.unwrap();
    assert!(text.contains("axum_http_requests_total"), "{text}");
}

#[tokio::test]
async fn unmatched_paths_do_not_create_a_metric_series_each() {
    let app = TestApp::builder().start().await;
    for path in ["/some/page/a1b2c3", "/api/v1/unknown-zzz9", "/pkg/deadbeef/x.wasm"] {
        app.client.get(app.url(path)).send().await.unwrap();
    }
    let text = app.metrics().await;
    for raw in ["a1b2c3", "unknown-zzz9", "deadbeef"] {
        assert!(!text.contains(raw), "{raw} leaked into a metric label");
    }
    assert!(text.contains("endpoint=\"/api/{unmatched}\""), "{text}");
}

#[tokio::test]
async fn the_healthcheck_subcommand_reports_a_running_server_healthy_and_a_closed_port_not() {
    let app = TestApp::builder().start().await;
    let addr = app.addr;
    let ok = tokio::task::spawn_blocking(move || anteroom::healthcheck::check(addr))
        .await
        .unwrap();
    assert_eq!(ok, Ok(()));
    app.stop().await;
    let down = tokio::task::spawn_blocking(move || anteroom::healthcheck::check(addr))
        .await
        .unwrap();
    assert!(down.is_err());
}

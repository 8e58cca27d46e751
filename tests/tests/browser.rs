//! The web UI in headless Chromium: the shell renders, the language switch works and is
//! remembered, deep links render their page, the API docs load offline, no console errors.

use anteroom_tests::TestApp;
use anteroom_tests::browser::{Browser, require_ui};
use fantoccini::Locator;

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_the_shell_renders_and_the_language_switch_changes_the_text_and_survives_a_reload() {
    require_ui();
    let app = TestApp::builder().start().await;
    let b = Browser::start("en-US,en").await;
    b.login(&app.url(""), "admin", anteroom_tests::ADMIN_PASSWORD).await;
    b.client.goto(&app.url("/jobs")).await.unwrap();
    b.wait_for_text("[data-testid=page-title]", "My jobs").await.unwrap();
    b.wait_for_text("[data-testid=brand]", "Anteroom").await.unwrap();

    b.select("#lang-select", "ja").await;
    b.wait_for_text("[data-testid=page-title]", "マイジョブ").await.unwrap();
    let lang = b
        .client
        .execute("return document.documentElement.lang", vec![])
        .await
        .unwrap();
    assert_eq!(lang, "ja");

    b.client.refresh().await.unwrap();
    b.wait_for_text("[data-testid=page-title]", "マイジョブ").await.unwrap();
    b.wait_until(
        "the switcher shows the saved language",
        "document.querySelector('#lang-select').value === 'ja'",
    )
    .await
    .unwrap();

    b.select("#lang-select", "zh").await;
    b.wait_for_text("[data-testid=page-title]", "我的作业").await.unwrap();
    b.select("#lang-select", "ko").await;
    b.wait_for_text("[data-testid=page-title]", "내 작업").await.unwrap();

    let errors = b.console_errors().await;
    b.close().await;
    assert!(errors.is_empty(), "console errors: {errors:?}");
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_the_first_visit_follows_the_browsers_language() {
    require_ui();
    let app = TestApp::builder().start().await;
    let b = Browser::start("ko-KR,ko").await;
    // Not logged in: the guard sends the visitor to the login page, in their language.
    b.client.goto(&app.url("/jobs/new")).await.unwrap();
    b.wait_for_text("[data-testid=page-title]", "로그인").await.unwrap();
    b.wait_until(
        "the page it came from is kept",
        "location.search === '?next=%2Fjobs%2Fnew'",
    )
    .await
    .unwrap();
    let lang = b
        .client
        .execute("return document.documentElement.lang", vec![])
        .await
        .unwrap();
    assert_eq!(lang, "ko");
    let errors = b.console_errors().await;
    b.close().await;
    assert!(errors.is_empty(), "console errors: {errors:?}");
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_deep_links_render_their_page_on_load() {
    require_ui();
    let app = TestApp::builder().start().await;
    let b = Browser::start("en").await;
    b.login(&app.url(""), "admin", anteroom_tests::ADMIN_PASSWORD).await;
    let pages = [
        // Logged in already: the login page goes on to the jobs.
        ("/login", "My jobs"),
        ("/jobs", "My jobs"),
        ("/jobs/new", "New job"),
        ("/jobs/42", "Job details"),
        ("/admin/prequeue", "Prequeue"),
        ("/admin/quotas", "Queue quotas"),
        ("/admin/jobs", "All jobs"),
        ("/admin/cluster", "Nodes"),
        ("/admin/queues", "Queues"),
        ("/admin/users", "Users"),
        ("/cluster", "Cluster capacity"),
        ("/no/such/page", "Page not found"),
    ];
    for (path, title) in pages {
        b.client.goto(&app.url(path)).await.unwrap();
        b.wait_for_text("[data-testid=page-title]", title)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    // A job that does not exist says so, in words.
    b.client.goto(&app.url("/jobs/42")).await.unwrap();
    b.wait_for_text("[data-testid=error]", "This job does not exist, or it is not yours.")
        .await
        .unwrap();
    // Client-side navigation through the header works too.
    b.client
        .find(Locator::Css("a[href='/admin/queues']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.wait_for_text("[data-testid=page-title]", "Queues").await.unwrap();
    assert!(
        b.client
            .current_url()
            .await
            .unwrap()
            .as_str()
            .ends_with("/admin/queues")
    );
    let errors = b.console_errors().await;
    b.close().await;
    // The one failed load is the deliberate 404 of job 42.
    let errors: Vec<_> = errors.iter().filter(|e| !e.contains("/api/v1/jobs/42")).collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_the_api_docs_render_with_no_request_to_another_host() {
    let app = TestApp::builder().start().await;
    let b = Browser::start("en").await;
    b.client.goto(&app.url("/api/docs/")).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        if let Ok(el) = b.client.find(Locator::Css(".swagger-ui .info .title")).await
            && el.text().await.unwrap_or_default().contains("Anteroom API")
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the Swagger UI did not render the spec"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let origin = app.url("");
    let resources = b
        .client
        .execute(
            "return performance.getEntriesByType('resource').map(e => e.name).concat([location.href])",
            vec![],
        )
        .await
        .unwrap();
    let names: Vec<String> = serde_json::from_value(resources).unwrap();
    assert!(names.len() > 2, "{names:?}");
    for n in &names {
        assert!(
            n.starts_with(&origin) || n.starts_with("data:"),
            "request to another host: {n}"
        );
    }
    let errors = b.console_errors().await;
    b.close().await;
    assert!(errors.is_empty(), "console errors: {errors:?}");
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_the_ui_runs_under_its_content_security_policy_and_a_violation_shows_as_a_console_error() {
    require_ui();
    let app = TestApp::builder().start().await;
    let b = Browser::start("en-US,en").await;
    b.client.goto(&app.url("/jobs")).await.unwrap();
    // The WASM client booted from its file under the policy (no inline script allowed); not
    // logged in, it shows the login page.
    b.wait_for_text("[data-testid=page-title]", "Log in").await.unwrap();
    let clean = b.console_errors().await;
    // Now break the policy on purpose: an image from another origin (another port on loopback,
    // refused by the browser before any request is made).
    b.client
        .execute(
            "const i = document.createElement('img'); i.src = 'http://127.0.0.1:9/x.png'; document.body.appendChild(i);",
            vec![],
        )
        .await
        .unwrap();
    let mut violation = Vec::new();
    for _ in 0..50 {
        violation = b.console_errors().await;
        if !violation.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    b.close().await;
    assert!(clean.is_empty(), "console errors under the policy: {clean:?}");
    assert!(
        violation.iter().any(|m| m.contains("Content Security Policy")),
        "the violation reached the console log the other tests check: {violation:?}"
    );
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_login_refuses_a_wrong_password_in_the_users_language_then_logs_in_with_an_httponly_cookie() {
    require_ui();
    let app = TestApp::builder().start().await;
    let b = Browser::start("ja-JP,ja").await;
    b.client.goto(&app.url("/login")).await.unwrap();
    b.wait_for_text("[data-testid=page-title]", "ログイン").await.unwrap();
    let field = |css: &'static str| {
        let client = b.client.clone();
        async move { client.find(Locator::Css(css)).await.unwrap() }
    };
    field("#login-username").await.send_keys("admin").await.unwrap();
    field("#login-password")
        .await
        .send_keys("wrong-password")
        .await
        .unwrap();
    field("[data-testid=login-submit]").await.click().await.unwrap();
    // The API's code, translated: not its English message.
    b.wait_for_text("[data-testid=login-error]", "ユーザー名またはパスワードが違います。")
        .await
        .unwrap();
    let password = field("#login-password").await;
    password.clear().await.unwrap();
    password.send_keys(anteroom_tests::ADMIN_PASSWORD).await.unwrap();
    field("[data-testid=login-submit]").await.click().await.unwrap();
    b.wait_for_text("[data-testid=page-title]", "マイジョブ").await.unwrap();
    // The session is a cookie no script can read.
    let cookies = b.client.get_all_cookies().await.unwrap();
    let session = cookies
        .iter()
        .find(|c| c.name() == "anteroom_session")
        .expect("the session cookie is set");
    assert_eq!(session.http_only(), Some(true));
    assert_eq!(format!("{:?}", session.same_site()), "Some(Strict)");
    let visible = b.client.execute("return document.cookie", vec![]).await.unwrap();
    assert!(
        !visible.as_str().unwrap_or_default().contains("anteroom_session"),
        "{visible}"
    );
    let token_in_storage = b
        .client
        .execute(
            "return Object.keys(localStorage).filter(k => localStorage.getItem(k).includes('.ey'))",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(token_in_storage, serde_json::json!([]), "no token in localStorage");
    let errors = b.console_errors().await;
    b.close().await;
    // The refused login's 401 is logged by Chromium as a failed load; nothing else may be.
    let unexpected: Vec<_> = errors.iter().filter(|e| !e.contains("401")).collect();
    assert!(unexpected.is_empty(), "console errors: {errors:?}");
}

#[tokio::test]
#[ignore = "needs Chromium"]
async fn browser_login_goes_back_to_the_page_asked_for_and_never_to_another_site() {
    require_ui();
    let app = TestApp::builder().start().await;
    let b = Browser::start("en").await;
    let base = app.url("");
    let cases = [
        ("/admin/quotas?x=1#top", "/admin/quotas?x=1#top"),
        // Each of these is another host once the browser resolves it.
        ("//evil.example/x", "/jobs"),
        ("/.//evil.example", "/jobs"),
        ("/x/..//evil.example", "/jobs"),
        ("/\t/evil.example", "/jobs"),
        ("/\\evil.example", "/jobs"),
        ("https://evil.example/", "/jobs"),
        ("/login", "/jobs"),
    ];
    // The first case logs in through the form; the others find the session and go on at once,
    // by the same rule.
    for (i, (next, expected)) in cases.into_iter().enumerate() {
        let query: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
        b.client.goto(&format!("{base}/login?next={query}")).await.unwrap();
        if i == 0 {
            b.fill("#login-username", "admin").await;
            b.fill("#login-password", anteroom_tests::ADMIN_PASSWORD).await;
            b.click("[data-testid=login-submit]").await;
        }
        b.wait_until(
            &format!("after login with next={next:?}"),
            &format!(
                "location.origin === {:?} && location.pathname + location.search + location.hash === {expected:?} && !!document.querySelector('[data-testid=whoami]')",
                base
            ),
        )
        .await
        .unwrap();
    }
    let errors = b.console_errors().await;
    b.close().await;
    assert!(errors.is_empty(), "console errors: {errors:?}");
}

//! Notebooks on origins of their own (issue 40): the portal hands its owner (or an admin who
//! confirms) over to `http://j<id>.localhost:<port>` with a one-time code; that origin sets a
//! notebook-only cookie and reverse-proxies HTTP and WebSocket to the notebook. The portal's
//! session never reaches the notebook origin, the notebook cookie never reaches the portal, and
//! neither can be set by the notebook. The notebook here is a stub on 127.0.0.1 that echoes what
//! it was sent (the simulated cluster's `sim_notebook_upstream` points at it).

mod notebook_stub;

use anteroom_tests::api::{call, code};
use anteroom_tests::driven::*;
use notebook_stub::*;
use serde_json::{Value, json};

#[tokio::test]
async fn a_notebook_opens_on_its_own_origin_through_a_one_time_handoff_and_no_credential_crosses() {
    let World {
        d,
        ann,
        bob,
        admin,
        id,
        seen,
    } = world(|_| {}).await;

    // The owner's handoff: a link to the job's own origin, good once.
    let (status, answer) = handoff(&d, &ann, id, json!({})).await;
    assert_eq!(status, 201, "{answer}");
    let url = answer["url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("http://{}/_anteroom/handoff?code=", host(&d, id))),
        "{url}"
    );
    assert_eq!(answer["origin"], format!("http://{}", host(&d, id)));
    let (status, cookies, location, _) = arrive(&d, id, &url).await;
    assert_eq!(status, 303);
    assert_eq!(location.as_deref(), Some(format!("/jobs/{id}/open/").as_str()));
    assert_eq!(cookies.len(), 1, "{cookies:?}");
    let set = &cookies[0];
    for attribute in ["anteroom_notebook=", "; Path=/", "; HttpOnly", "; SameSite=Lax"] {
        assert!(set.contains(attribute), "{set}");
    }
    assert!(!set.to_lowercase().contains("domain"), "host-only: {set}");
    let cookie = set.split(';').next().unwrap().to_owned();
    // Used once: the same link again, or another origin's, opens nothing.
    let (status, cookies, _, page) = arrive(&d, id, &url).await;
    assert_eq!(status, 403, "{page}");
    assert!(cookies.is_empty());
    assert!(page.contains("notebook_link_expired"), "{page}");
    let (_, second) = handoff(&d, &ann, id, json!({})).await;
    let elsewhere = second["url"]
        .as_str()
        .unwrap()
        .replace(&format!("j{id}."), &format!("j{}.", id + 1));
    let (status, _, _, _) = arrive(&d, id + 1, &elsewhere).await;
    assert_eq!(status, 403, "a code opens only the origin of its job");

    // Through the notebook origin, with the notebook's own cookie.
    let (status, cookies, body) = get_notebook(&d, id, &cookie, &format!("/jobs/{id}/open/lab?x=1")).await;
    assert_eq!(status, 200, "{body}");
    let echo: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(echo["requestLine"], format!("get /jobs/{id}/open/lab?x=1 http/1.1"));
    let sent = sent_headers(&body);
    assert!(sent.contains(&"cookie: _xsrf=abc".to_owned()), "{sent:?}");
    assert!(
        !sent.iter().any(|h| h.contains("anteroom_")),
        "no credential of Anteroom's reaches the notebook: {sent:?}"
    );
    assert!(sent.contains(&format!("host: {}", host(&d, id))), "{sent:?}");
    assert_eq!(
        cookies,
        ["_xsrf=notebook"],
        "a notebook sets none of Anteroom's cookies"
    );

    // Another origin's page (a sibling notebook) gets nothing with the viewer's notebook cookie;
    // a person's navigation does.
    for (method, mode, dest, status) in [
        ("GET", "cors", "empty", 403),
        ("GET", "no-cors", "image", 403),
        ("GET", "navigate", "iframe", 403),
        ("POST", "navigate", "document", 403),
        ("GET", "navigate", "document", 200),
    ] {
        let res = notebook_client(&d, id)
            .request(
                method.parse().unwrap(),
                format!("http://{}/jobs/{id}/open/", host(&d, id)),
            )
            .header("cookie", cookie.clone())
            .header("sec-fetch-site", "same-site")
            .header("sec-fetch-mode", mode)
            .header("sec-fetch-dest", dest)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), status, "{method} {mode} {dest}");
    }
    // The portal's session is no key to a notebook origin (cookie or bearer) ...
    for (name, value) in [
        ("cookie", format!("anteroom_session={ann}")),
        ("authorization", format!("Bearer {ann}")),
    ] {
        let res = notebook_client(&d, id)
            .get(format!("http://{}/jobs/{id}/open/", host(&d, id)))
            .header(name, value)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401, "{name}");
    }
    // ... nor is the notebook cookie to the portal, nor to another notebook's origin.
    let res = d
        .app
        .client
        .get(d.app.url("/api/v1/auth/me"))
        .header("cookie", cookie.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let (status, _, _) = get_notebook(&d, id + 1, &cookie, &format!("/jobs/{}/open/", id + 1)).await;
    assert_eq!(status, 401);
    // Nothing of the portal is served on a notebook origin.
    for path in [
        "/api/v1/auth/me",
        "/jobs",
        "/pkg/anteroom_web.js",
        &format!("/jobs/{}/open/", id + 1),
    ] {
        let (status, _, _) = get_notebook(&d, id, &cookie, path).await;
        assert_eq!(status, 404, "{path}");
    }
    // The portal itself serves no notebook: its old address leads to the job's page.
    let res = d
        .app
        .client
        .get(d.app.url(&format!("/jobs/{id}/open/lab")))
        .header("cookie", format!("anteroom_session={ann}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()["location"], format!("/jobs/{id}"));

    // Another user: the job does not exist for them. An admin must say they open it as one.
    let (status, answer) = handoff(&d, &bob, id, json!({"asAdmin": true})).await;
    assert_eq!((status, code(&answer)), (404, "job_not_found"));
    let (status, answer) = handoff(&d, &admin, id, json!({})).await;
    assert_eq!(
        (status, code(&answer)),
        (403, "admin_confirmation_required"),
        "{answer}"
    );
    assert_eq!(answer["error"]["details"]["owner"], "ann");
    let admin_cookie = open_as(&d, &admin, id, true).await;
    let (status, _, _) = get_notebook(&d, id, &admin_cookie, &format!("/jobs/{id}/open/")).await;
    assert_eq!(status, 200);
    let before = seen.lock().unwrap().len();

    // A logout ends the notebook session with the portal's.
    let (status, _) = call(&d.app, "POST", "/api/v1/auth/logout", &ann, None).await;
    assert_eq!(status, 204);
    let (status, _, body) = get_notebook(&d, id, &cookie, &format!("/jobs/{id}/open/")).await;
    assert_eq!(status, 401, "{body}");
    // An admin demoted loses what they opened as an admin.
    anteroom::users::create(
        &d.app.state.db,
        "root2",
        "root2",
        "root2-password",
        anteroom_shared::api::Role::Admin,
    )
    .await
    .unwrap();
    let root2 = d.app.token("root2", "root2-password").await;
    let admin_id = d.app.get_json("/api/v1/auth/me", Some(&admin)).await["id"]
        .as_i64()
        .unwrap();
    let (status, body) = call(
        &d.app,
        "PATCH",
        &format!("/api/v1/admin/users/{admin_id}"),
        &root2,
        Some(json!({"role": "user"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = get_notebook(&d, id, &admin_cookie, &format!("/jobs/{id}/open/")).await;
    assert_eq!(status, 401, "a role change ends the session");
    assert_eq!(
        seen.lock().unwrap().len(),
        before,
        "refused requests never reached the notebook"
    );
}

#[tokio::test]
async fn only_running_notebooks_open_and_a_simulated_one_says_so_in_the_viewer_s_language() {
    let d = Driven::start(None, "").await;
    let ann = d.app.user_token("ann").await;
    let (id, _) = submit(&d, &ann, notebook("ide", "webide")).await;
    // Created in the cluster, not placed yet.
    let (status, answer) = handoff(&d, &ann, id, json!({})).await;
    assert_eq!((status, code(&answer)), (409, "notebook_not_running"), "{answer}");
    d.settle().await;
    let cookie = open_as(&d, &ann, id, false).await;
    let res = notebook_client(&d, id)
        .get(format!("http://{}/jobs/{id}/open/", host(&d, id)))
        .header("Cookie", cookie.clone())
        .header("Accept-Language", "ja,en;q=0.5")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'none'"),
        "Anteroom's own page on a notebook origin runs nothing"
    );
    let page = res.text().await.unwrap();
    assert!(page.contains("<html lang=\"ja\">"), "{page}");
    assert!(page.contains("シミュレーション"), "{page}");
    assert!(page.contains("ide"), "names the job: {page}");
    assert!(
        !page.contains("ANTEROOM_SIM_NOTEBOOK_UPSTREAM"),
        "the setting is for admins: {page}"
    );
    // Without a notebook cookie, a person gets a page that leads back to the portal.
    let res = notebook_client(&d, id)
        .get(format!("http://{}/jobs/{id}/open/tree", host(&d, id)))
        .header("Accept", "text/html")
        .header("Sec-Fetch-Dest", "document")
        .header("Accept-Language", "ja")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let page = res.text().await.unwrap();
    assert!(
        page.contains(&format!("href=\"http://127.0.0.1:{}/jobs/{id}\"", d.app.addr.port())),
        "{page}"
    );
    // `/` of a notebook origin is its notebook.
    let res = notebook_client(&d, id)
        .get(format!("http://{}/", host(&d, id)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["location"], format!("/jobs/{id}/open/"));
    // A batch job is no notebook.
    let (batch, _) = submit(&d, &ann, timed_job("batch", json!({"cpu": "1"}), None)).await;
    let (status, answer) = handoff(&d, &ann, batch, json!({})).await;
    assert_eq!((status, code(&answer)), (404, "not_a_notebook"), "{answer}");
}

#[tokio::test]
async fn a_sibling_origin_gets_nothing_from_the_portal_session_but_a_navigation() {
    let World { d, ann, admin, id, .. } = world(|_| {}).await;
    let get = |path: &str, site: &'static str, mode: &'static str, dest: &'static str| {
        d.app
            .client
            .get(d.app.url(path))
            .header("cookie", format!("anteroom_session={ann}"))
            .header("sec-fetch-site", site)
            .header("sec-fetch-mode", mode)
            .header("sec-fetch-dest", dest)
            .send()
    };
    // The event stream, a list, the caller: refused from a sibling or another site, a frame
    // included (a page could hold as many as it likes).
    let ann_id = d.app.get_json("/api/v1/auth/me", Some(&ann)).await["id"]
        .as_i64()
        .unwrap();
    for path in ["/api/v1/jobs/events/stream", "/api/v1/jobs", "/api/v1/auth/me"] {
        for (site, mode, dest) in [
            ("same-site", "cors", "empty"),
            ("cross-site", "cors", "empty"),
            ("same-site", "navigate", "iframe"),
        ] {
            let res = get(path, site, mode, dest).await.unwrap();
            assert_eq!(res.status(), 403, "{path} {site} {dest}");
            let body: Value = res.json().await.unwrap();
            assert_eq!(code(&body), "cross_site_request");
        }
    }
    assert_eq!(d.app.state.stream_slots.open_for(ann_id), 0, "no stream slot was taken");
    // From the portal's own pages, and a person following a link from elsewhere: answered.
    assert_eq!(
        get("/api/v1/jobs", "same-origin", "cors", "empty")
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        get("/jobs", "same-site", "navigate", "document")
            .await
            .unwrap()
            .status(),
        200
    );
    // A bearer token carries no ambient authority: not affected.
    let res = d
        .app
        .client
        .get(d.app.url("/api/v1/jobs"))
        .bearer_auth(&ann)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);

    // An admin cannot make another user's notebook their own by running it again.
    let (status, body) = call(
        &d.app,
        "POST",
        &format!("/api/v1/jobs/{id}/resubmit"),
        &admin,
        Some(json!({})),
    )
    .await;
    assert_eq!(
        (status.as_u16(), code(&body)),
        (403, "interactive_job_of_another_user"),
        "{body}"
    );
    let (status, body) = call(
        &d.app,
        "POST",
        &format!("/api/v1/jobs/{id}/resubmit"),
        &ann,
        Some(json!({})),
    )
    .await;
    assert_eq!(status.as_u16(), 201, "its owner can: {body}");
}

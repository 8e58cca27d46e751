//! The admin users API over real HTTP: create, list, change, delete, and the last-admin rule,
//! also under concurrent requests on PostgreSQL.

use anteroom_tests::{ADMIN_PASSWORD, TestApp, postgres};
use reqwest::Method;
use serde_json::{Value, json};

/// Sends `body` (if any) as `token` and returns the status and the JSON answer (Null if none).
async fn call(app: &TestApp, token: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = app.client.request(method, app.url(path)).bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap()
    };
    (status, json)
}

async fn patch(app: &TestApp, token: &str, path: &str, body: Value) -> (u16, Value) {
    call(app, token, Method::PATCH, path, Some(body)).await
}

async fn create(app: &TestApp, token: &str, username: &str, role: &str) -> Value {
    let body = json!({"username": username, "password": "password-123", "role": role});
    let (status, user) = call(app, token, Method::POST, "/api/v1/admin/users", Some(body)).await;
    assert_eq!(status, 201, "{user}");
    user
}

async fn total_users(app: &TestApp, token: &str) -> u64 {
    let (status, page) = call(app, token, Method::GET, "/api/v1/admin/users", None).await;
    assert_eq!(status, 200);
    page["total"].as_u64().unwrap()
}

#[tokio::test]
async fn an_admin_creates_a_user_who_then_logs_in_and_is_listed() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let body = json!({"username": "dana", "password": "dana-password", "displayName": "Dana S.", "role": "user"});
    let (status, user) = call(&app, &admin, Method::POST, "/api/v1/admin/users", Some(body)).await;
    assert_eq!(status, 201);
    assert_eq!(user["username"], "dana");
    assert_eq!(user["displayName"], "Dana S.");
    assert_eq!(user["role"], "user");
    assert!(user.get("passwordHash").is_none());
    assert_eq!(app.login("dana", "dana-password").await.status(), 200);

    let (status, page) = call(&app, &admin, Method::GET, "/api/v1/admin/users", None).await;
    assert_eq!(status, 200);
    assert_eq!(page["total"], 2);
    assert_eq!(page["page"], 1);
    assert_eq!(page["pageSize"], 50);
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "dana"]);
}

#[tokio::test]
async fn the_list_pages_in_id_order_and_refuses_page_sizes_over_500() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    for name in ["u1", "u2", "u3"] {
        create(&app, &admin, name, "user").await;
    }
    let (status, page) = call(&app, &admin, Method::GET, "/api/v1/admin/users?page=2&pageSize=2", None).await;
    assert_eq!(status, 200);
    assert_eq!(page["total"], 4);
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["u2", "u3"]);
    let (status, page) = call(&app, &admin, Method::GET, "/api/v1/admin/users?page=9", None).await;
    assert_eq!(
        (status, page["items"].as_array().unwrap().len()),
        (200, 0),
        "past the end is empty"
    );
    let (status, err) = call(&app, &admin, Method::GET, "/api/v1/admin/users?pageSize=501", None).await;
    assert_eq!(status, 422);
    assert_eq!(err["error"]["details"]["fields"][0]["field"], "pageSize");
    let huge = "/api/v1/admin/users?page=9223372036854775808";
    let (status, err) = call(&app, &admin, Method::GET, huge, None).await;
    assert_eq!(
        (status, err["error"]["details"]["fields"][0]["field"].as_str()),
        (422, Some("page"))
    );
}

#[tokio::test]
async fn users_may_not_use_the_admin_users_api_and_strangers_are_401() {
    let app = TestApp::builder().start().await;
    let bob = app.user_token("bob").await;
    let cases = [
        (Method::GET, "/api/v1/admin/users", None),
        (
            Method::POST,
            "/api/v1/admin/users",
            Some(json!({"username": "eve", "password": "password-123", "role": "admin"})),
        ),
        (Method::PATCH, "/api/v1/admin/users/2", Some(json!({"role": "admin"}))),
        (Method::DELETE, "/api/v1/admin/users/1", None),
    ];
    for (method, path, body) in cases {
        let (status, err) = call(&app, &bob, method.clone(), path, body.clone()).await;
        assert_eq!(
            (status, err["error"]["code"].as_str()),
            (403, Some("forbidden")),
            "{method} {path}"
        );
        let (status, _) = call(&app, "not-a-token", method.clone(), path, body).await;
        assert_eq!(status, 401, "{method} {path}");
    }
    let admin = app.admin_token().await;
    assert_eq!(total_users(&app, &admin).await, 2, "nobody was created");
    let (_, me) = call(&app, &bob, Method::GET, "/api/v1/auth/me", None).await;
    assert_eq!(me["role"], "user", "bob did not promote himself");
}

#[tokio::test]
async fn bad_usernames_passwords_and_display_names_are_422_by_field_and_create_nothing() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let cases = [
        (
            json!({"username": "Alice", "password": "password-123", "role": "user"}),
            "username",
        ),
        (
            json!({"username": "", "password": "password-123", "role": "user"}),
            "username",
        ),
        (
            json!({"username": "-dash", "password": "password-123", "role": "user"}),
            "username",
        ),
        (
            json!({"username": "a".repeat(65), "password": "password-123", "role": "user"}),
            "username",
        ),
        (
            json!({"username": "has space", "password": "password-123", "role": "user"}),
            "username",
        ),
        (
            json!({"username": "ok", "password": "short", "role": "user"}),
            "password",
        ),
        (
            json!({"username": "ok", "password": "p".repeat(1025), "role": "user"}),
            "password",
        ),
        (
            json!({"username": "ok", "password": "password-123", "displayName": "", "role": "user"}),
            "displayName",
        ),
        (
            json!({"username": "ok", "password": "password-123", "displayName": "a\u{7}b", "role": "user"}),
            "displayName",
        ),
        (
            json!({"username": "ok", "password": "password-123", "role": "root"}),
            "role",
        ),
        (
            json!({"username": "ok", "password": "password-123", "role": "user", "extra": 1}),
            "extra",
        ),
    ];
    for (body, field) in cases {
        let (status, err) = call(&app, &admin, Method::POST, "/api/v1/admin/users", Some(body.clone())).await;
        assert_eq!(status, 422, "{body}");
        let fields = err["error"]["details"]["fields"].as_array().unwrap();
        assert!(
            fields.iter().any(|f| f["field"].as_str().unwrap().contains(field)),
            "{body}: {err}"
        );
    }
    assert_eq!(total_users(&app, &admin).await, 1);
}

#[tokio::test]
async fn a_taken_username_is_409_and_the_first_account_is_untouched() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    create(&app, &admin, "erin", "user").await;
    let body = json!({"username": "erin", "password": "other-password", "role": "admin"});
    let (status, err) = call(&app, &admin, Method::POST, "/api/v1/admin/users", Some(body)).await;
    assert_eq!((status, err["error"]["code"].as_str()), (409, Some("username_taken")));
    assert_eq!(app.login("erin", "password-123").await.status(), 200);
    assert_eq!(app.login("erin", "other-password").await.status(), 401);
}

#[tokio::test]
async fn patch_changes_only_the_fields_given() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let user = create(&app, &admin, "frank", "user").await;
    let path = format!("/api/v1/admin/users/{}", user["id"]);

    let (status, changed) = patch(&app, &admin, &path, json!({"displayName": "Frank F."})).await;
    assert_eq!(status, 200);
    assert_eq!(
        (changed["displayName"].as_str(), changed["role"].as_str()),
        (Some("Frank F."), Some("user"))
    );

    let (status, changed) = patch(&app, &admin, &path, json!({"role": "admin"})).await;
    assert_eq!((status, changed["role"].as_str()), (200, Some("admin")));
    assert_eq!(changed["displayName"], "Frank F.");

    let (status, _) = patch(&app, &admin, &path, json!({"password": "new-password"})).await;
    assert_eq!(status, 200);
    assert_eq!(app.login("frank", "password-123").await.status(), 401);
    assert_eq!(app.login("frank", "new-password").await.status(), 200);

    let (status, err) = patch(&app, &admin, &path, json!({"password": "short"})).await;
    assert_eq!(
        (status, err["error"]["details"]["fields"][0]["field"].as_str()),
        (422, Some("password"))
    );
    assert_eq!(
        app.login("frank", "new-password").await.status(),
        200,
        "a refused change changes nothing"
    );

    let (status, err) = patch(&app, &admin, "/api/v1/admin/users/999", json!({})).await;
    assert_eq!((status, err["error"]["code"].as_str()), (404, Some("user_not_found")));
    let (status, _) = patch(&app, &admin, "/api/v1/admin/users/abc", json!({})).await;
    assert_eq!(status, 422);
}

#[tokio::test]
async fn the_last_admin_can_be_neither_demoted_nor_deleted_until_there_is_another() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let (_, me) = call(&app, &admin, Method::GET, "/api/v1/auth/me", None).await;
    let me_path = format!("/api/v1/admin/users/{}", me["id"]);

    let (status, err) = patch(&app, &admin, &me_path, json!({"role": "user"})).await;
    assert_eq!((status, err["error"]["code"].as_str()), (409, Some("last_admin")));
    let (status, err) = call(&app, &admin, Method::DELETE, &me_path, None).await;
    assert_eq!((status, err["error"]["code"].as_str()), (409, Some("last_admin")));
    let (status, me_again) = call(&app, &admin, Method::GET, "/api/v1/auth/me", None).await;
    assert_eq!(
        (status, me_again["role"].as_str()),
        (200, Some("admin")),
        "nothing changed"
    );

    create(&app, &admin, "grace", "admin").await;
    let (status, demoted) = patch(&app, &admin, &me_path, json!({"role": "user"})).await;
    assert_eq!((status, demoted["role"].as_str()), (200, Some("user")));
    let (status, _) = call(&app, &admin, Method::GET, "/api/v1/admin/users", None).await;
    assert_eq!(status, 401, "the role change ended the demoted admin's session");
    let as_user = app.token("admin", ADMIN_PASSWORD).await;
    let (status, _) = call(&app, &as_user, Method::GET, "/api/v1/admin/users", None).await;
    assert_eq!(status, 403, "logged in again, they are a user");
}

#[tokio::test]
async fn changing_the_first_admins_password_removes_the_kept_generated_password() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let kept = app.state.config.data_dir.join(anteroom::users::ADMIN_PASSWORD_FILE);
    std::fs::write(&kept, "generated-at-first-start").unwrap();
    let bob = create(&app, &admin, "bob", "user").await;
    let path = format!("/api/v1/admin/users/{}", bob["id"]);
    assert_eq!(
        patch(&app, &admin, &path, json!({"password": "another-one-1"})).await.0,
        200
    );
    assert!(kept.exists(), "another user's new password leaves it");
    let me = format!("/api/v1/admin/users/{}", id_of(&app, &admin).await);
    assert_eq!(patch(&app, &admin, &me, json!({"displayName": "Root"})).await.0, 200);
    assert!(kept.exists(), "a change that is not the password leaves it");
    assert_eq!(
        patch(&app, &admin, &me, json!({"password": "a-new-admin-password"}))
            .await
            .0,
        200
    );
    assert!(!kept.exists(), "the admin's new password removes the stale one");
}

#[tokio::test]
async fn a_deleted_users_token_stops_working_at_once() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    let hank = app.user_token("hank").await;
    let (_, me) = call(&app, &hank, Method::GET, "/api/v1/auth/me", None).await;
    let path = format!("/api/v1/admin/users/{}", me["id"]);
    let (status, body) = call(&app, &admin, Method::DELETE, &path, None).await;
    assert_eq!((status, body), (204, Value::Null));
    let (status, _) = call(&app, &hank, Method::GET, "/api/v1/auth/me", None).await;
    assert_eq!(status, 401);
    let (status, err) = call(&app, &admin, Method::DELETE, &path, None).await;
    assert_eq!((status, err["error"]["code"].as_str()), (404, Some("user_not_found")));
    assert_eq!(app.login("hank", anteroom_tests::USER_PASSWORD).await.status(), 401);
}

#[tokio::test]
async fn a_restart_does_not_bring_back_a_deleted_admin_account_while_another_admin_exists() {
    let app = TestApp::builder().start().await;
    let admin = app.admin_token().await;
    create(&app, &admin, "ivy", "admin").await;
    let (_, me) = call(&app, &admin, Method::GET, "/api/v1/auth/me", None).await;
    let (status, _) = call(
        &app,
        &admin,
        Method::DELETE,
        &format!("/api/v1/admin/users/{}", me["id"]),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let password_file = app.state.config.data_dir.join(anteroom::app::ADMIN_PASSWORD_FILE);
    let outcome = anteroom::users::ensure_first_admin(&app.state.db, Some(ADMIN_PASSWORD), &password_file)
        .await
        .unwrap();
    assert_eq!(outcome, anteroom::users::FirstAdmin::Existed);
    assert_eq!(app.login("admin", ADMIN_PASSWORD).await.status(), 401);
}

/// Six admins each demote the next one, all at the same moment, several times over. Whatever
/// the order, every demotion that goes through leaves an admin behind: at least one admin
/// remains, and the successes are exactly the admins lost.
async fn concurrent_demotions_always_leave_an_admin(app: &TestApp) {
    const ADMINS: usize = 6;
    for round in 0..5 {
        // A role change ends the sessions of whom it changes: the root admin, demoted and
        // restored in the last round, logs in afresh.
        let root = app.admin_token().await;
        // The root admin plus five fresh admins, each with a token.
        let mut admins = vec![(root.clone(), id_of(app, &root).await)];
        for i in 1..ADMINS {
            let name = format!("r{round}-admin{i}");
            let user = create(app, &root, &name, "admin").await;
            let token = app.token(&name, "password-123").await;
            admins.push((token, user["id"].as_i64().unwrap()));
        }
        let paths: Vec<String> = (0..ADMINS)
            .map(|i| format!("/api/v1/admin/users/{}", admins[(i + 1) % ADMINS].1))
            .collect();
        let demotions = (0..ADMINS).map(|i| patch(app, &admins[i].0, &paths[i], json!({"role": "user"})));
        let results = futures::future::join_all(demotions).await;
        let succeeded = results.iter().filter(|(status, _)| *status == 200).count();
        for (status, body) in &results {
            // 401: the caller was demoted (which ended their session) before their own request.
            assert!(matches!(status, 200 | 401 | 409), "round {round}: {status} {body}");
        }
        let left = admin_names(app).await.len();
        assert!(left >= 1, "round {round}: no admin left after {results:?}");
        assert_eq!(succeeded, ADMINS - left, "round {round}: {results:?}");
        // Make the root admin an admin again and retire this round's admins.
        let keeper = admin_token_of_any(app).await;
        let root_path = format!("/api/v1/admin/users/{}", admins[0].1);
        assert_eq!(patch(app, &keeper, &root_path, json!({"role": "admin"})).await.0, 200);
        let root_again = app.admin_token().await;
        for (_, id) in &admins[1..] {
            let path = format!("/api/v1/admin/users/{id}");
            assert_eq!(call(app, &root_again, Method::DELETE, &path, None).await.0, 204);
        }
        assert_eq!(admin_names(app).await, ["admin"], "round {round}");
    }
}

async fn id_of(app: &TestApp, token: &str) -> i64 {
    let (_, me) = call(app, token, Method::GET, "/api/v1/auth/me", None).await;
    me["id"].as_i64().unwrap()
}

async fn admin_names(app: &TestApp) -> Vec<String> {
    let (users, _) = anteroom::users::list(&app.state.db, 0, 1000).await.unwrap();
    users
        .into_iter()
        .filter(|u| u.role == "admin")
        .map(|u| u.username)
        .collect()
}

/// A token of one of the current admins.
async fn admin_token_of_any(app: &TestApp) -> String {
    let name = admin_names(app).await.into_iter().next().expect("an admin");
    let password = if name == "admin" {
        ADMIN_PASSWORD
    } else {
        "password-123"
    };
    app.token(&name, password).await
}

#[tokio::test]
async fn on_sqlite_concurrent_demotions_always_leave_an_admin() {
    let app = TestApp::builder().start().await;
    concurrent_demotions_always_leave_an_admin(&app).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL"]
async fn on_postgres_concurrent_demotions_always_leave_an_admin() {
    let server = postgres::server_url();
    let url = postgres::fresh_database(&server).await;
    let app = TestApp::builder().database_url(url).start().await;
    concurrent_demotions_always_leave_an_admin(&app).await;
}

/// The interleaving the PostgreSQL lock exists for, forced: a demotion of admin A is in flight
/// (lock held, row written, not committed) when admin B's demotion arrives. B's demotion must
/// wait for A's to commit and then see that B is the last admin. Without the lock it would
/// count A as still an admin (read committed) and leave none.
#[tokio::test]
#[ignore = "needs PostgreSQL"]
async fn on_postgres_a_demotion_waits_for_one_in_flight_and_then_sees_it() {
    use sea_orm::{ConnectionTrait, DbBackend, Statement, TransactionTrait};
    let server = postgres::server_url();
    let url = postgres::fresh_database(&server).await;
    let app = TestApp::builder().database_url(url).start().await;
    let root = app.admin_token().await;
    let a = id_of(&app, &root).await;
    let b = create(&app, &root, "bea", "admin").await["id"].as_i64().unwrap();

    let in_flight = app.state.db.begin().await.unwrap();
    in_flight
        .execute_raw(Statement::from_string(
            DbBackend::Postgres,
            format!("SELECT pg_advisory_xact_lock({})", anteroom::users::ADMINS_LOCK_KEY),
        ))
        .await
        .unwrap();
    in_flight
        .execute_raw(Statement::from_string(
            DbBackend::Postgres,
            format!("UPDATE users SET role = 'user' WHERE id = {a}"),
        ))
        .await
        .unwrap();

    let db = app.state.db.clone();
    let second = tokio::spawn(async move {
        let changes = anteroom::users::UserChanges {
            role: Some(anteroom_shared::api::Role::User),
            ..Default::default()
        };
        anteroom::users::update(&db, b, changes).await.unwrap()
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !second.is_finished(),
        "the second demotion waits for the first to finish"
    );
    in_flight.commit().await.unwrap();
    let outcome = second.await.unwrap();
    assert_eq!(outcome, anteroom::users::AdminChange::LastAdmin);
    assert_eq!(admin_names(&app).await, ["bea"]);
}

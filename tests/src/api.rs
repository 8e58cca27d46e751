//! Helpers of the API tests: one call with a token, job bodies, settings and quota set-up,
//! SSE reading, and `both!`, which runs a scenario on SQLite and on PostgreSQL.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::TestApp;

/// Runs a scenario on SQLite and, as an ignored test run by `./anteroom.sh test`, on PostgreSQL.
#[macro_export]
macro_rules! both {
    ($name:ident, $scenario:ident) => {
        mod $name {
            use super::*;

            #[tokio::test]
            async fn on_sqlite() {
                $scenario($crate::TestApp::builder().start().await).await;
            }

            #[tokio::test]
            #[ignore = "needs PostgreSQL"]
            async fn on_postgres() {
                let url = $crate::postgres::fresh_database(&$crate::postgres::server_url()).await;
                $scenario($crate::TestApp::builder().database_url(url).start().await).await;
            }
        }
    };
}

/// Sends `method path` with the token and an optional JSON body; the status and the JSON answer
/// (`null` when empty).
pub async fn call(app: &TestApp, method: &str, path: &str, token: &str, body: Option<Value>) -> (StatusCode, Value) {
    let mut req = app
        .client
        .request(method.parse().unwrap(), app.url(path))
        .bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.expect("request");
    let status = res.status();
    let text = res.text().await.expect("body");
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).expect("JSON")
    };
    (status, value)
}

/// `GET path` with the token, the answer as it came.
async fn get(app: &TestApp, path: &str, token: &str) -> reqwest::Response {
    app.client
        .get(app.url(path))
        .bearer_auth(token)
        .send()
        .await
        .expect("request")
}

/// `GET path` with the token: the status and the answer as text (a log, say).
pub async fn call_text(app: &TestApp, path: &str, token: &str) -> (StatusCode, String) {
    let res = get(app, path, token).await;
    (res.status(), res.text().await.expect("body"))
}

/// `GET path`: the `ETag` (panics without one) and the JSON answer; panics unless 200.
pub async fn read_tagged(app: &TestApp, path: &str, token: &str) -> (String, Value) {
    let res = get(app, path, token).await;
    assert_eq!(res.status(), 200, "GET {path}");
    let etag = res
        .headers()
        .get("etag")
        .unwrap_or_else(|| panic!("GET {path} has no ETag"));
    let etag = etag.to_str().expect("ASCII").to_owned();
    (etag, res.json().await.expect("JSON"))
}

/// `PUT path` of `body` with `If-Match: if_match` (none when `None`): the status, the answer's
/// `ETag` if any, and its JSON.
pub async fn put_if(
    app: &TestApp,
    path: &str,
    token: &str,
    if_match: Option<&str>,
    body: Value,
) -> (StatusCode, Option<String>, Value) {
    let mut req = app.client.put(app.url(path)).bearer_auth(token).json(&body);
    if let Some(tag) = if_match {
        req = req.header("if-match", tag);
    }
    let res = req.send().await.expect("request");
    let status = res.status();
    let etag = res.headers().get("etag").map(|v| v.to_str().expect("ASCII").to_owned());
    (status, etag, res.json().await.expect("JSON"))
}

/// A one-task custom job into `default` asking for `resources`.
pub fn job(name: &str, resources: Value) -> Value {
    json!({
        "name": name,
        "kind": "custom",
        "queue": "default",
        "tasks": [{"name": "main", "replicas": 1, "image": "busybox", "command": ["sleep", "3600"], "resources": resources}]
    })
}

/// Submits `body` as the holder of `token`; must be accepted (201). The job's id and the answer.
pub async fn submit_job(app: &TestApp, token: &str, body: Value) -> (i64, Value) {
    let (status, answer) = call(app, "POST", "/api/v1/jobs", token, Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    (job_id(&answer), answer)
}

/// Submits `n` one-task jobs `job-0` … `job-{n-1}` asking for `resources`; all must be accepted.
pub async fn submit_jobs(app: &TestApp, token: &str, n: usize, resources: Value) {
    for i in 0..n {
        submit_job(app, token, job(&format!("job-{i}"), resources.clone())).await;
    }
}

/// Changes some prequeue settings (the rest as they are); must succeed.
pub async fn settings(app: &TestApp, admin: &str, change: Value) {
    // A change names only what it changes (spec/prequeue.md §3: the rest keeps its value).
    let (status, body) = call(app, "PUT", "/api/v1/admin/prequeue-config", admin, Some(change)).await;
    assert_eq!(status, 200, "{body}");
}

/// Creates the quota rule of `queue`; must succeed.
pub async fn quota(app: &TestApp, admin: &str, queue: &str, limits: Value) -> Value {
    let (status, body) = call(
        app,
        "POST",
        "/api/v1/admin/queue-quotas",
        admin,
        Some(json!({"queue": queue, "limits": limits})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body
}

/// Creates a queue (`body` as `POST /api/v1/admin/queues` takes it); must succeed.
pub async fn queue(app: &TestApp, admin: &str, body: Value) -> Value {
    let (status, answer) = call(app, "POST", "/api/v1/admin/queues", admin, Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    answer
}

/// A metric's value now: the sum of its series (all label sets), 0 when it has none.
pub async fn metric(app: &TestApp, name: &str) -> f64 {
    let plain = format!("{name} ");
    let labelled = format!("{name}{{");
    app.metrics()
        .await
        .lines()
        .filter(|l| l.starts_with(&plain) || l.starts_with(&labelled))
        .filter_map(|l| {
            l.rsplit_once(' ')
                .map(|(_, n)| n.trim().parse::<f64>().expect("a number"))
        })
        .sum()
}

/// The error code of an answer (empty when it is not an error).
pub fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

/// Rows of a table (or of a subquery, with its alias, or `table WHERE …`), read behind the API.
pub async fn count(app: &TestApp, table: &str) -> i64 {
    count_rows(app, table).await
}

/// The rows of `table` that `condition` (SQL) selects.
pub async fn count_where(app: &TestApp, table: &str, condition: &str) -> i64 {
    count_rows(app, &format!("{table} WHERE {condition}")).await
}

async fn count_rows(app: &TestApp, from: &str) -> i64 {
    use sea_orm::{ConnectionTrait, Statement};
    let db = &app.state.db;
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            format!("SELECT COUNT(*) AS n FROM {from}"),
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get::<i64>("", "n").unwrap()
}

/// Runs SQL behind the API (to age rows, say).
pub async fn execute(app: &TestApp, sql: &str) {
    use sea_orm::ConnectionTrait;
    app.state.db.execute_unprepared(sql).await.unwrap();
}

/// The job id of a submit answer.
pub fn job_id(answer: &Value) -> i64 {
    answer["job"]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("no job in {answer}"))
}

/// Reads SSE events from a stream until `want` events with an id above `after` arrived (a
/// PostgreSQL stream resumed after `after` may first repeat unsettled events: clients dedupe).
pub async fn read_events_after(res: reqwest::Response, want: usize, after: i64) -> Vec<(i64, Value)> {
    read_events_after_where(res, want, after, |_| true).await
}

/// [`read_events_after`], counting and keeping only the events `keep` accepts (a test of
/// submissions ignores the `started` events the simulated cluster adds as it runs them).
pub async fn read_events_after_where(
    res: reqwest::Response,
    want: usize,
    after: i64,
    keep: impl Fn(&Value) -> bool,
) -> Vec<(i64, Value)> {
    let mut res = res;
    let mut text = String::new();
    let mut events = Vec::new();
    while events.len() < want {
        let chunk = tokio::time::timeout(Duration::from_secs(20), res.chunk())
            .await
            .expect("an event within 20 s")
            .expect("bytes")
            .expect("the stream stays open");
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let id = block
                .lines()
                .find_map(|l| l.strip_prefix("id:"))
                .map(|v| v.trim().parse::<i64>().unwrap());
            let data = block
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .map(|v| serde_json::from_str(v.trim()).unwrap());
            if let (Some(id), Some(data)) = (id, data)
                && id > after
                && keep(&data)
                && !events.iter().any(|(seen, _)| *seen == id)
            {
                events.push((id, data));
            }
        }
    }
    events
}

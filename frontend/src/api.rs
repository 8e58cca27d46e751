//! The one typed client of the REST API, over the `shared` crate's DTOs — the types the
//! backend serialises, so a renamed field breaks the build here too. Calls go to the same
//! origin; the browser sends the session cookie that login set (`HttpOnly`: this code never
//! sees the token, and nothing is kept in `localStorage`).

use std::cell::RefCell;

use anteroom_shared::api::jobs::{Job, JobBody, JobDetail, LockBody, PrequeuedJob, Preview, SubmitResponse};
use anteroom_shared::api::prequeue::{PrequeueStatus, ResourceSummary};
use anteroom_shared::api::queues::{AdminQueue, Queue, QueueBody, QueueQuotaBody, QueueQuotaRule};
use anteroom_shared::api::tolerations::{TolerationRule, TolerationRuleBody};
use anteroom_shared::api::{
    ClusterNode, ClusterResource, CreateUser, ErrorBody, LoginRequest, LoginResponse, Page, Session, SetSchedulable,
    UpdateUser, User,
};
use gloo_net::http::{Request, RequestBuilder, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use self::job_filter::{JobFilter, PAGE_SIZE, page_from};
pub use self::versions::{
    Versioned, admin_queue, prequeue_config, replace_queue, replace_quota, replace_toleration_rule, replace_volume,
    save_prequeue_config, template, update_template,
};

mod job_filter;
mod versions;

/// Why a call failed: the API's stable `code`, English `message` and `details` (the fields a
/// 422 names); `network` (translated like the API's codes, under `error.network`) when no
/// answer came at all.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiFailure {
    /// Stable code (the UI shows the translation of `error.<code>`).
    pub code: String,
    /// English text, the fallback.
    pub message: String,
    /// The API's details, e.g. `{"fields": [{"field", "message"}]}` of a 422.
    pub details: Option<serde_json::Value>,
}

impl ApiFailure {
    fn network(message: impl ToString) -> Self {
        ApiFailure {
            code: "network".into(),
            message: message.to_string(),
            details: None,
        }
    }
}

thread_local! {
    /// Called when an answer says the session is gone (401), so the app can go to `/login`.
    static ON_UNAUTHORIZED: RefCell<Option<Box<dyn Fn()>>> = const { RefCell::new(None) };
}

/// Registers what to do when a call answers 401 (the session expired or was ended elsewhere).
pub fn on_unauthorized(hook: impl Fn() + 'static) {
    ON_UNAUTHORIZED.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
}

async fn failure(res: Response) -> ApiFailure {
    let status = res.status();
    if status == 401 {
        ON_UNAUTHORIZED.with(|h| {
            if let Some(hook) = h.borrow().as_ref() {
                hook();
            }
        });
    }
    match res.json::<ErrorBody>().await {
        Ok(body) => ApiFailure {
            code: body.error.code,
            message: body.error.message,
            details: body.error.details,
        },
        Err(_) => ApiFailure {
            code: "internal".into(),
            message: format!("HTTP {status}"),
            details: None,
        },
    }
}

/// The body of a successful answer, or the API's error.
async fn answer<R: DeserializeOwned>(res: Response) -> Result<R, ApiFailure> {
    if res.ok() {
        return res.json::<R>().await.map_err(ApiFailure::network);
    }
    Err(failure(res).await)
}

/// A successful answer without a body (204), or the API's error.
async fn done(res: Response) -> Result<(), ApiFailure> {
    if res.ok() {
        return Ok(());
    }
    Err(failure(res).await)
}

async fn send(request: RequestBuilder) -> Result<Response, ApiFailure> {
    request.send().await.map_err(ApiFailure::network)
}

async fn send_json<B: Serialize>(request: RequestBuilder, body: &B) -> Result<Response, ApiFailure> {
    request
        .json(body)
        .map_err(ApiFailure::network)?
        .send()
        .await
        .map_err(ApiFailure::network)
}

/// `GET path`.
pub async fn get<R: DeserializeOwned>(path: &str) -> Result<R, ApiFailure> {
    answer(send(Request::get(path)).await?).await
}

/// `POST path` with a JSON body.
pub async fn post<B: Serialize, R: DeserializeOwned>(path: &str, body: &B) -> Result<R, ApiFailure> {
    answer(send_json(Request::post(path), body).await?).await
}

/// `PUT path` with a JSON body.
pub async fn put<B: Serialize, R: DeserializeOwned>(path: &str, body: &B) -> Result<R, ApiFailure> {
    answer(send_json(Request::put(path), body).await?).await
}

/// `DELETE path` (204).
pub async fn delete(path: &str) -> Result<(), ApiFailure> {
    done(send(Request::delete(path)).await?).await
}

/// Percent-encodes a query value or path segment (queue and node names are DNS labels, but a
/// user name may hold anything).
pub fn encode(value: &str) -> String {
    String::from(js_sys::encode_uri_component(value))
}

/// `POST /api/v1/auth/login`: on success the browser holds the session cookie.
pub async fn login(username: &str, password: &str) -> Result<LoginResponse, ApiFailure> {
    post(
        "/api/v1/auth/login",
        &LoginRequest {
            username: username.to_owned(),
            password: password.to_owned(),
        },
    )
    .await
}

/// `GET /api/v1/auth/session`: the session's user, or nobody (never a 401).
pub async fn session() -> Result<Option<User>, ApiFailure> {
    get::<Session>("/api/v1/auth/session").await.map(|s| s.user)
}

/// `POST /api/v1/auth/logout`: ends the caller's sessions and clears the cookie.
pub async fn logout() -> Result<(), ApiFailure> {
    done(send(Request::post("/api/v1/auth/logout")).await?).await
}

/// `GET /api/v1/jobs`: the caller's jobs, newest first.
pub async fn my_jobs(filter: &JobFilter, page: u64) -> Result<Page<Job>, ApiFailure> {
    get(&format!("/api/v1/jobs{}", filter.query(page))).await
}

/// `GET /api/v1/admin/jobs`: everyone's jobs, newest first.
pub async fn all_jobs(filter: &JobFilter, page: u64) -> Result<Page<Job>, ApiFailure> {
    get(&format!("/api/v1/admin/jobs{}", filter.query(page))).await
}

/// `GET /api/v1/jobs/{id}`.
pub async fn job(id: i64) -> Result<JobDetail, ApiFailure> {
    get(&format!("/api/v1/jobs/{id}")).await
}

/// `GET /api/v1/jobs/{id}/ahead?limit=`: the jobs the prequeue considers before job `id`.
pub async fn jobs_ahead(id: i64, limit: u32) -> Result<anteroom_shared::api::jobs::JobsAhead, ApiFailure> {
    get(&format!("/api/v1/jobs/{id}/ahead?limit={limit}")).await
}

/// `GET /api/v1/volumes?queue=`: the catalogue volumes a job in `queue` may mount.
pub async fn volumes_of(queue: &str) -> Result<Vec<anteroom_shared::api::volumes::VolumeChoice>, ApiFailure> {
    get(&format!("/api/v1/volumes?queue={}", encode(queue))).await
}

/// `GET /api/v1/admin/volumes`: the whole catalogue.
pub async fn admin_volumes() -> Result<Vec<anteroom_shared::api::volumes::Volume>, ApiFailure> {
    get("/api/v1/admin/volumes").await
}

/// `POST` (new) or `PUT` (the name it had) a catalogue volume.
pub async fn save_volume(
    existing: Option<&str>,
    body: &anteroom_shared::api::volumes::VolumeBody,
) -> Result<anteroom_shared::api::volumes::Volume, ApiFailure> {
    match existing {
        Some(name) => put(&format!("/api/v1/admin/volumes/{}", encode(name)), body).await,
        None => post("/api/v1/admin/volumes", body).await,
    }
}

/// `DELETE /api/v1/admin/volumes/{name}`.
pub async fn delete_volume(name: &str) -> Result<(), ApiFailure> {
    delete(&format!("/api/v1/admin/volumes/{}", encode(name))).await
}

/// `GET /api/v1/templates`: the caller's templates and every published one.
pub async fn templates() -> Result<Vec<anteroom_shared::api::templates::JobTemplate>, ApiFailure> {
    get("/api/v1/templates").await
}

/// `POST /api/v1/templates`: a private template of the caller's.
pub async fn save_template(
    body: &anteroom_shared::api::templates::TemplateWrite,
) -> Result<anteroom_shared::api::templates::JobTemplate, ApiFailure> {
    post("/api/v1/templates", body).await
}

/// `DELETE /api/v1/templates/{id}`.
pub async fn delete_template(id: i64) -> Result<(), ApiFailure> {
    delete(&format!("/api/v1/templates/{id}")).await
}

/// `GET /api/v1/job-defaults`: the admins' starting point per kind.
pub async fn job_defaults() -> Result<Vec<anteroom_shared::api::templates::KindDefault>, ApiFailure> {
    get("/api/v1/job-defaults").await
}

/// `GET /api/v1/jobs/{id}/pods`.
pub async fn job_pods(id: i64) -> Result<anteroom_shared::api::pods::JobPods, ApiFailure> {
    get(&format!("/api/v1/jobs/{id}/pods")).await
}

/// Where the log of a pod of job `id` is read (`download`: as a file).
pub fn job_log_path(id: i64, task: &str, replica: u32, tail_lines: Option<u32>, download: bool) -> String {
    let mut path = format!("/api/v1/jobs/{id}/logs?task={}&replica={replica}", encode(task));
    if let Some(tail) = tail_lines {
        path.push_str(&format!("&tailLines={tail}"));
    }
    if download {
        path.push_str("&download=true");
    }
    path
}

/// `GET /api/v1/jobs/{id}/logs` as text: the last `tail_lines` lines of a pod's log.
pub async fn job_log(id: i64, task: &str, replica: u32, tail_lines: u32) -> Result<String, ApiFailure> {
    let res = send(Request::get(&job_log_path(id, task, replica, Some(tail_lines), false))).await?;
    if res.ok() {
        return res.text().await.map_err(ApiFailure::network);
    }
    Err(failure(res).await)
}

/// `GET /api/v1/jobs/{id}/logs?follow=true`: the last `tail_lines` lines of a pod's log, then
/// what it writes next, handed to `chunk` as the bytes arrive, until the pod's log ends (`Ok`),
/// the connection drops (`network`) or `abort` fires. One of the viewer's stream slots while
/// it is open.
pub async fn follow_job_log(
    id: i64,
    task: &str,
    replica: u32,
    tail_lines: u32,
    abort: &web_sys::AbortSignal,
    mut chunk: impl FnMut(&[u8]),
) -> Result<(), ApiFailure> {
    use wasm_bindgen::JsCast;
    let path = format!(
        "{}&follow=true",
        job_log_path(id, task, replica, Some(tail_lines), false)
    );
    let res = send(Request::get(&path).abort_signal(Some(abort))).await?;
    if !res.ok() {
        return Err(failure(res).await);
    }
    let Some(body) = res.body() else { return Ok(()) };
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    loop {
        let read = wasm_bindgen_futures::JsFuture::from(reader.read())
            .await
            .map_err(|e| ApiFailure::network(format!("{e:?}")))?;
        let field = |name: &str| js_sys::Reflect::get(&read, &name.into()).unwrap_or(wasm_bindgen::JsValue::UNDEFINED);
        if field("done").is_truthy() {
            return Ok(());
        }
        chunk(&js_sys::Uint8Array::new(&field("value")).to_vec());
    }
}

/// `POST /api/v1/jobs/{id}/resubmit` with no changes: the job again, under its next run name.
/// Idempotent like [`submit`]: a click again after a lost answer gets the first run, not a
/// second one.
pub async fn resubmit(id: i64) -> Result<SubmitResponse, ApiFailure> {
    let key = idempotency_key(&format!("resubmit {id}"));
    let request = Request::post(&format!("/api/v1/jobs/{id}/resubmit")).header("Idempotency-Key", &key);
    accepted(answer(send_json(request, &anteroom_shared::api::jobs::ResubmitBody::default()).await?).await)
}

/// `POST /api/v1/jobs/{id}/notebook`: a one-time link that opens the notebook on its own
/// origin (`as_admin`: an admin opening another user's, after the warning).
pub async fn open_notebook(
    id: i64,
    as_admin: bool,
) -> Result<anteroom_shared::api::notebooks::NotebookHandoff, ApiFailure> {
    let body = anteroom_shared::api::notebooks::OpenNotebook { as_admin };
    answer(send_json(Request::post(&format!("/api/v1/jobs/{id}/notebook")), &body).await?).await
}

/// `DELETE /api/v1/jobs/{id}`.
pub async fn delete_job(id: i64) -> Result<(), ApiFailure> {
    delete(&format!("/api/v1/jobs/{id}")).await
}

/// `POST /api/v1/jobs` with an `Idempotency-Key`: the same body sent again after a failure (a
/// retry after a timeout or a lost answer) gets the first answer instead of a second job.
pub async fn submit(body: &JobBody) -> Result<SubmitResponse, ApiFailure> {
    let key = idempotency_key(&serde_json::to_string(body).unwrap_or_default());
    let request = Request::post("/api/v1/jobs").header("Idempotency-Key", &key);
    accepted(answer(send_json(request, body).await?).await)
}

/// Passes a submission's answer on; an accepted one makes the next submission, even of the
/// same body, a new job.
fn accepted(answer: Result<SubmitResponse, ApiFailure>) -> Result<SubmitResponse, ApiFailure> {
    if answer.is_ok() {
        SUBMIT_NONCE.with(|n| n.set(fresh_nonce()));
    }
    answer
}

thread_local! {
    /// Changes after every accepted submission (and on every page load).
    static SUBMIT_NONCE: std::cell::Cell<u64> = std::cell::Cell::new(fresh_nonce());
}

fn fresh_nonce() -> u64 {
    (js_sys::Math::random() * 9_007_199_254_740_992.0) as u64
}

/// `ui-<nonce>-<hash of what is sent>`: stable for one request until a submission is accepted.
fn idempotency_key(text: &str) -> String {
    // FNV-1a: a key, not a secret; collisions matter only within one nonce.
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let nonce = SUBMIT_NONCE.with(std::cell::Cell::get);
    format!("ui-{nonce:x}-{hash:016x}")
}

/// `POST /api/v1/jobs/preview`: the decision a submit would get now; nothing is written.
pub async fn preview(body: &JobBody) -> Result<Preview, ApiFailure> {
    post("/api/v1/jobs/preview", body).await
}

/// `POST /api/v1/jobs/delete`: several jobs at once.
pub async fn delete_jobs(ids: Vec<i64>) -> Result<anteroom_shared::api::jobs::BulkResult, ApiFailure> {
    post(
        "/api/v1/jobs/delete",
        &anteroom_shared::api::jobs::BulkDeleteBody { ids },
    )
    .await
}

/// `PUT /api/v1/admin/jobs/lock`: lock (or unlock, `None`) several jobs at once.
pub async fn lock_jobs(
    ids: Vec<i64>,
    until: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<anteroom_shared::api::jobs::BulkResult, ApiFailure> {
    put(
        "/api/v1/admin/jobs/lock",
        &anteroom_shared::api::jobs::BulkLockBody { ids, until },
    )
    .await
}

/// `PUT /api/v1/admin/jobs/{id}/lock`.
pub async fn lock_job(id: i64, until: Option<chrono::DateTime<chrono::Utc>>) -> Result<Job, ApiFailure> {
    put(&format!("/api/v1/admin/jobs/{id}/lock"), &LockBody { until }).await
}

/// `GET /api/v1/queues`: the queues the caller may use.
pub async fn queues() -> Result<Vec<Queue>, ApiFailure> {
    get("/api/v1/queues").await
}

/// `GET /api/v1/prequeue/status`.
pub async fn prequeue_status() -> Result<PrequeueStatus, ApiFailure> {
    get("/api/v1/prequeue/status").await
}

/// `GET /api/v1/me/resource-summary?queue=`.
pub async fn resource_summary(queue: &str) -> Result<ResourceSummary, ApiFailure> {
    get(&format!("/api/v1/me/resource-summary?queue={}", encode(queue))).await
}

/// `GET /api/v1/usage?{query}`: what jobs used per period, queue and user (`query` without
/// its `?`, as [`usage_csv_path`] takes it too).
pub async fn usage(query: &str) -> Result<anteroom_shared::api::usage::UsageReport, ApiFailure> {
    get(&format!("/api/v1/usage?{query}")).await
}

/// Where the same report is downloaded as CSV: a plain link, which sends the session cookie
/// but cannot set `Accept`, so the form is named in the query.
pub fn usage_csv_path(query: &str) -> String {
    format!("/api/v1/usage?{query}&format=csv")
}

/// `GET /api/v1/me/fair-share`: the caller's fair share over time, per queue.
pub async fn my_fair_share() -> Result<anteroom_shared::api::usage::FairShare, ApiFailure> {
    get("/api/v1/me/fair-share").await
}

/// `GET /api/v1/cluster/nodes`.
pub async fn nodes() -> Result<Vec<ClusterNode>, ApiFailure> {
    get("/api/v1/cluster/nodes").await
}

/// `GET /api/v1/cluster/resources`.
pub async fn cluster_resources() -> Result<Vec<ClusterResource>, ApiFailure> {
    get("/api/v1/cluster/resources").await
}

/// `PUT /api/v1/admin/nodes/{name}/schedulable`.
pub async fn set_schedulable(name: &str, schedulable: bool) -> Result<ClusterNode, ApiFailure> {
    put(
        &format!("/api/v1/admin/nodes/{}/schedulable", encode(name)),
        &SetSchedulable { schedulable },
    )
    .await
}

/// `GET /api/v1/admin/prequeue`: page `page` of the prequeued jobs, oldest first, with their
/// positions in their queues and their reasons.
pub async fn prequeued(page: u64) -> Result<Page<PrequeuedJob>, ApiFailure> {
    get(&format!("/api/v1/admin/prequeue?page={page}&pageSize={PAGE_SIZE}")).await
}

/// `GET /api/v1/admin/queue-quotas`.
pub async fn quotas() -> Result<Vec<QueueQuotaRule>, ApiFailure> {
    get("/api/v1/admin/queue-quotas").await
}

/// `GET /api/v1/admin/queue-usage`: what each user uses in each queue now.
pub async fn queue_usage() -> Result<Vec<anteroom_shared::api::queues::QueueUserUse>, ApiFailure> {
    get("/api/v1/admin/queue-usage").await
}

/// `POST` (no id) or `PUT` (an id) a quota rule.
pub async fn save_quota(id: Option<i64>, body: &QueueQuotaBody) -> Result<QueueQuotaRule, ApiFailure> {
    match id {
        Some(id) => put(&format!("/api/v1/admin/queue-quotas/{id}"), body).await,
        None => post("/api/v1/admin/queue-quotas", body).await,
    }
}

/// `DELETE /api/v1/admin/queue-quotas/{id}`.
pub async fn delete_quota(id: i64) -> Result<(), ApiFailure> {
    delete(&format!("/api/v1/admin/queue-quotas/{id}")).await
}

/// `GET /api/v1/admin/toleration-rules`: every rule, in the order they apply.
pub async fn toleration_rules() -> Result<Vec<TolerationRule>, ApiFailure> {
    get("/api/v1/admin/toleration-rules").await
}

/// `POST` (no id) or `PUT` (an id) a toleration rule.
pub async fn save_toleration_rule(id: Option<i64>, body: &TolerationRuleBody) -> Result<TolerationRule, ApiFailure> {
    match id {
        Some(id) => put(&format!("/api/v1/admin/toleration-rules/{id}"), body).await,
        None => post("/api/v1/admin/toleration-rules", body).await,
    }
}

/// `DELETE /api/v1/admin/toleration-rules/{id}`.
pub async fn delete_toleration_rule(id: i64) -> Result<(), ApiFailure> {
    delete(&format!("/api/v1/admin/toleration-rules/{id}")).await
}

/// `GET /api/v1/admin/queues`.
pub async fn admin_queues() -> Result<Vec<AdminQueue>, ApiFailure> {
    get("/api/v1/admin/queues").await
}

/// `POST /api/v1/admin/queues`: a new queue.
pub async fn create_queue(body: &QueueBody) -> Result<AdminQueue, ApiFailure> {
    post("/api/v1/admin/queues", body).await
}

/// `DELETE /api/v1/admin/queues/{name}`.
pub async fn delete_queue(name: &str) -> Result<(), ApiFailure> {
    delete(&format!("/api/v1/admin/queues/{}", encode(name))).await
}

/// `GET /api/v1/admin/users`.
pub async fn users() -> Result<Page<User>, ApiFailure> {
    get("/api/v1/admin/users?page=1&pageSize=500").await
}

/// `POST /api/v1/admin/users`.
pub async fn create_user(body: &CreateUser) -> Result<User, ApiFailure> {
    post("/api/v1/admin/users", body).await
}

/// `PATCH /api/v1/admin/users/{id}`.
pub async fn update_user(id: i64, body: &UpdateUser) -> Result<User, ApiFailure> {
    let request = Request::patch(&format!("/api/v1/admin/users/{id}"));
    answer(send_json(request, body).await?).await
}

/// `DELETE /api/v1/admin/users/{id}`.
pub async fn delete_user(id: i64) -> Result<(), ApiFailure> {
    delete(&format!("/api/v1/admin/users/{id}")).await
}

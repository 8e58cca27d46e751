//! Changes made on a copy read earlier: each carries the object's version (`ETag`) in
//! `If-Match`, so a change made on an old copy is refused (412 `precondition_failed`, "changed
//! by someone else, reload") instead of overwriting someone else's.
//!
//! A form opened on a list's row checks, when saved, that the object still is that row: it reads
//! the object's version, and refuses at once when the object changed since the list was read;
//! the server checks the version again in the write itself.

use anteroom_shared::api::queues::{AdminQueue, QueueBody};
use anteroom_shared::api::templates::{JobTemplate, TemplateWrite};
use anteroom_shared::scheduling::{PrequeueConfig, PrequeueConfigChange};
use gloo_net::http::{Request, Response};
use serde::de::DeserializeOwned;

use super::{ApiFailure, answer, encode, send, send_json};

/// An object with its version (`ETag`).
#[derive(Clone, Debug, PartialEq)]
pub struct Versioned<T> {
    /// The object.
    pub value: T,
    /// Its `ETag`, when the server sent one.
    pub etag: Option<String>,
}

/// The body and `ETag` of a successful answer, or the API's error.
async fn versioned<R: DeserializeOwned>(res: Response) -> Result<Versioned<R>, ApiFailure> {
    let etag = res.headers().get("etag");
    Ok(Versioned {
        value: answer(res).await?,
        etag,
    })
}

/// The failure the server answers to a change made on an old copy.
fn stale() -> ApiFailure {
    ApiFailure {
        code: "precondition_failed".into(),
        message: "this was changed by someone else since you read it: reload and redo your change".into(),
        details: None,
    }
}

/// The version of the object at `path` if it `still` is the copy a change was made on.
async fn version_if<T: DeserializeOwned>(
    path: &str,
    still: impl FnOnce(&T) -> bool,
) -> Result<Option<String>, ApiFailure> {
    let now: Versioned<T> = versioned(send(Request::get(path)).await?).await?;
    if still(&now.value) { Ok(now.etag) } else { Err(stale()) }
}

/// `PUT path` of `body` with `If-Match: etag` (when known).
async fn put_if<B: serde::Serialize, R: DeserializeOwned>(
    path: &str,
    etag: Option<&str>,
    body: &B,
) -> Result<Versioned<R>, ApiFailure> {
    let mut request = Request::put(path);
    if let Some(etag) = etag {
        request = request.header("If-Match", etag);
    }
    versioned(send_json(request, body).await?).await
}

/// `GET /api/v1/admin/prequeue-config`, with the settings' version.
pub async fn prequeue_config() -> Result<Versioned<PrequeueConfig>, ApiFailure> {
    versioned(send(Request::get("/api/v1/admin/prequeue-config")).await?).await
}

/// `PUT /api/v1/admin/prequeue-config` of every setting, on the settings of version `etag`.
pub async fn save_prequeue_config(
    config: &PrequeueConfig,
    etag: Option<&str>,
) -> Result<Versioned<PrequeueConfig>, ApiFailure> {
    let change = PrequeueConfigChange::from(config.clone());
    put_if("/api/v1/admin/prequeue-config", etag, &change).await
}

/// `GET /api/v1/templates/{id}`, with its version.
pub async fn template(id: i64) -> Result<Versioned<JobTemplate>, ApiFailure> {
    versioned(send(Request::get(&format!("/api/v1/templates/{id}"))).await?).await
}

/// `PUT /api/v1/templates/{id}`: the whole template again (publishing, the kind's default),
/// made on `shown`; refused when the template is no longer `shown`.
pub async fn update_template(shown: &JobTemplate, write: &TemplateWrite) -> Result<JobTemplate, ApiFailure> {
    let path = format!("/api/v1/templates/{}", shown.id);
    let etag = version_if(&path, |now: &JobTemplate| now == shown).await?;
    Ok(put_if(&path, etag.as_deref(), write).await?.value)
}

/// `GET /api/v1/admin/queues/{name}`, with its version.
pub async fn admin_queue(name: &str) -> Result<Versioned<AdminQueue>, ApiFailure> {
    versioned(send(Request::get(&format!("/api/v1/admin/queues/{}", encode(name)))).await?).await
}

/// `PUT /api/v1/admin/queues/{name}` of a change made on `shown` (a row of the queue list);
/// refused when the queue's definition is no longer `shown`'s (its usage and line may have moved).
pub async fn replace_queue(shown: &AdminQueue, body: &QueueBody) -> Result<AdminQueue, ApiFailure> {
    let path = format!("/api/v1/admin/queues/{}", encode(&shown.name));
    let same_definition = |now: &AdminQueue| {
        AdminQueue {
            used: now.used.clone(),
            waiting: now.waiting,
            borrowed: now.borrowed.clone(),
            lent: now.lent.clone(),
            ..shown.clone()
        } == *now
    };
    let etag = version_if(&path, same_definition).await?;
    Ok(put_if(&path, etag.as_deref(), body).await?.value)
}

/// `PUT /api/v1/admin/queue-quotas/{id}` of a change made on `shown` (a row of the quota
/// table); refused when the rule is no longer `shown`.
pub async fn replace_quota(
    shown: &anteroom_shared::api::queues::QueueQuotaRule,
    body: &anteroom_shared::api::queues::QueueQuotaBody,
) -> Result<anteroom_shared::api::queues::QueueQuotaRule, ApiFailure> {
    let path = format!("/api/v1/admin/queue-quotas/{}", shown.id);
    let etag = version_if(&path, |now: &anteroom_shared::api::queues::QueueQuotaRule| now == shown).await?;
    Ok(put_if(&path, etag.as_deref(), body).await?.value)
}

/// `PUT /api/v1/admin/toleration-rules/{id}` of a change made on `shown`; refused when the
/// rule is no longer `shown`.
pub async fn replace_toleration_rule(
    shown: &anteroom_shared::api::tolerations::TolerationRule,
    body: &anteroom_shared::api::tolerations::TolerationRuleBody,
) -> Result<anteroom_shared::api::tolerations::TolerationRule, ApiFailure> {
    let path = format!("/api/v1/admin/toleration-rules/{}", shown.id);
    let etag = version_if(&path, |now: &anteroom_shared::api::tolerations::TolerationRule| {
        now == shown
    })
    .await?;
    Ok(put_if(&path, etag.as_deref(), body).await?.value)
}

/// `PUT /api/v1/admin/volumes/{name}` of a change made on `shown`; refused when the volume is
/// no longer `shown`.
pub async fn replace_volume(
    shown: &anteroom_shared::api::volumes::Volume,
    body: &anteroom_shared::api::volumes::VolumeBody,
) -> Result<anteroom_shared::api::volumes::Volume, ApiFailure> {
    let path = format!("/api/v1/admin/volumes/{}", encode(&shown.name));
    let etag = version_if(&path, |now: &anteroom_shared::api::volumes::Volume| now == shown).await?;
    Ok(put_if(&path, etag.as_deref(), body).await?.value)
}

//! A job's pods, cluster events and logs over HTTP (`GET /api/v1/jobs/{id}/pods`,
//! `GET /api/v1/jobs/{id}/logs`): what its owner needs when it sits in `Pending` or fails. Only
//! its owner and admins see them (anyone else: 404, as for the job itself).

use anteroom_shared::api::ErrorBody;
use anteroom_shared::api::pods::{JobPods, pod_name};
use anteroom_shared::scheduling::JobPhase;
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures::StreamExt;
use serde::Deserialize;

use super::{JobError, phase_of, reads};
use crate::auth::AuthUser;
use crate::cluster::{ClusterError, LogRequest};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;

/// The most a log answer read at once carries (the end of a longer tail), and what one followed
/// log sends before it ends (the client reconnects with `tailLines` for more). A download is
/// streamed whole instead, never held.
pub const LOG_LIMIT_BYTES: u64 = 8 * 1024 * 1024;

/// The lines a log read at once (not followed, not downloaded) shows when `tailLines` is not
/// given: the cluster is asked for these and at most [`LOG_LIMIT_BYTES`], never the whole log.
pub const DEFAULT_TAIL_LINES: u32 = 10_000;

/// Log reads held in memory at once in this process, all users together — from the read to the
/// answer's last byte sent: each holds up to [`LOG_LIMIT_BYTES`], so a burst of reads of a
/// chatty job's log (or of answers nobody reads) costs a bounded amount of memory; the rest
/// wait their turn (within the request's deadline).
pub const CONCURRENT_LOG_READS: usize = 4;

/// Of those, what one user may hold at once (429 `too_many_log_reads` beyond): one user's
/// burst cannot keep everyone else's logs waiting.
pub const LOG_READS_PER_USER: usize = 2;

/// The pieces a log read at once is sent in: the server's write buffer takes a few at a time,
/// and the read keeps its place until the last has gone.
const LOG_CHUNK_BYTES: usize = 64 * 1024;

/// The most lines `tailLines` asks for.
pub const MAX_TAIL_LINES: u32 = 100_000;

/// Which log, and how.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    /// The task (default: the job's first task).
    task: Option<String>,
    /// The replica of the task, from 0 (default 0).
    replica: Option<u32>,
    /// Only the last lines (1–100,000); absent: the last 10,000 (a download: the whole log). A
    /// read that is not followed nor downloaded carries at most the last 8 MiB of them.
    #[param(minimum = 1, maximum = 100000)]
    tail_lines: Option<u32>,
    /// Keep the answer open and send what the pod writes next, until it ends (at most 8 MiB).
    #[serde(default)]
    follow: bool,
    /// Answer as a file to save (`Content-Disposition: attachment`): the whole log (or its last
    /// `tailLines`), streamed as the cluster sends it, whatever its size.
    #[serde(default)]
    download: bool,
}

/// Whether a job in `phase` may have been created in the cluster (so it may have pods).
fn may_be_in_cluster(phase: JobPhase) -> bool {
    !matches!(phase, JobPhase::Prequeue)
}

/// The job's pods (node, phase, reason such as ImagePullBackOff or OOMKilled, exit code,
/// restarts) and the cluster's events about them and its PodGroup (reason such as
/// FailedScheduling). The cluster's messages ("0/5 nodes are available: 5 Insufficient
/// nvidia.com/a100, 2 node(s) had untolerated taint {team: nlp}") only for admins: they name
/// other teams' nodes and objects. A job not in the cluster has none.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/pods",
    tag = "jobs",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Job id")),
    responses(
        (status = 200, description = "Its pods and their events", body = JobPods),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 404, description = "`job_not_found`", body = ErrorBody),
        (status = 422, description = "`validation_failed`: the id is not a number", body = ErrorBody),
    )
)]
pub async fn job_pods(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Json<JobPods>> {
    let row = reads::visible(&state.db_read, &user, id).await?;
    if !may_be_in_cluster(phase_of(&row)?) {
        return Ok(Json(JobPods::default()));
    }
    let pods = state
        .cluster
        .pods(row.id, &row.uid_in_cluster())
        .await
        .map_err(JobError::Cluster)?
        .with_causes();
    // The cluster's own words go to admins only, as the timeline's cluster errors do.
    Ok(Json(match super::events::Audience::of(&user) {
        super::events::Audience::Admin => pods,
        super::events::Audience::Owner => pods.for_owner(),
    }))
}

/// The log of one pod of the job as plain text: its last `tailLines` (default 10,000; at most
/// the last 8 MiB of them); with `follow=true` the answer stays open and carries what the pod
/// writes next until it ends; with `download=true` it comes as a file, the whole log streamed.
/// Every read holds one of the caller's stream slots while it runs; reads held in memory also
/// wait for one of a few places shared by everyone.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/logs",
    tag = "jobs",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "Job id"), LogQuery),
    responses(
        (status = 200, description = "The log", content_type = "text/plain", body = String),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 404, description = "`job_not_found`; `pod_not_found`: the job has no such task or replica, or the pod is not in the cluster (not created yet, or gone)", body = ErrorBody),
        (status = 422, description = "`validation_failed`: a bad parameter", body = ErrorBody),
        (status = 429, description = "`too_many_streams`: as many streams open as the server allows (every log read counts as one while it runs); `too_many_log_reads`: two logs of the caller's are being read at once already", body = ErrorBody),
    )
)]
pub async fn job_logs(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiPath(id): ApiPath<i64>,
    headers: axum::http::HeaderMap,
    ApiQuery(query): ApiQuery<LogQuery>,
) -> ApiResult<Response> {
    if let Some(tail) = query.tail_lines
        && !(1..=MAX_TAIL_LINES).contains(&tail)
    {
        return Err(ApiError::validation(vec![FieldError::new(
            "tailLines",
            format!("must be 1–{MAX_TAIL_LINES}"),
        )]));
    }
    let row = reads::visible(&state.db_read, &user, id).await?;
    let job = super::to_api(&row)?;
    let task = match &query.task {
        Some(name) => job.tasks.iter().find(|t| &t.name == name),
        None => job.tasks.first(),
    };
    let replica = query.replica.unwrap_or(0);
    let pod = match task {
        Some(task) if replica < task.replicas => pod_name(id, &task.name, replica),
        _ => {
            let task = query.task.clone().unwrap_or_default();
            return Err(ApiError::not_found(
                "pod_not_found",
                format!("job {id} has no replica {replica} of a task {task:?}"),
            )
            .with_details(serde_json::json!({ "task": task, "replica": replica })));
        }
    };
    if !may_be_in_cluster(job.phase) {
        return Err(pod_not_in_cluster(&pod));
    }
    // Every read is one of the caller's streams while it runs: one user's reads in parallel
    // are bounded however the server is configured.
    let slot = super::stream::stream_slot(&state, &user)?;
    let uid = row.uid_in_cluster();
    let streamed = if query.follow {
        let request = LogRequest {
            pod: pod.clone(),
            tail_lines: query.tail_lines,
            limit_bytes: LOG_LIMIT_BYTES,
        };
        Some(
            state
                .cluster
                .follow_logs(id, &uid, &request)
                .await
                .map_err(|e| cluster_error(e, &pod))?,
        )
    } else if query.download {
        let request = LogRequest {
            pod: pod.clone(),
            tail_lines: query.tail_lines,
            limit_bytes: u64::MAX,
        };
        Some(
            state
                .cluster
                .log_stream(id, &uid, &request)
                .await
                .map_err(|e| cluster_error(e, &pod))?,
        )
    } else {
        None
    };
    let mut response = match streamed {
        Some(stream) => {
            let watch = FollowWatch {
                inner: stream,
                state: state.clone(),
                headers,
                id,
                check_at: tokio::time::Instant::now() + REAUTHORIZE,
                _slot: slot,
            };
            let mut response = Response::new(Body::from_stream(watch.into_stream()));
            // Never buffered by the compressing layer: a followed line must reach the reader
            // at once, and a download must not be held whole.
            response
                .headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("identity"));
            response
        }
        None => {
            let request = LogRequest {
                pod: pod.clone(),
                tail_lines: Some(query.tail_lines.unwrap_or(DEFAULT_TAIL_LINES)),
                limit_bytes: LOG_LIMIT_BYTES,
            };
            let mine = state
                .log_reads_by_user
                .try_take(user.id, LOG_READS_PER_USER)
                .ok_or_else(too_many_log_reads)?;
            let held = read_at_once(&state.log_reads, state.cluster.as_ref(), id, &uid, &request)
                .await
                .map_err(|e| cluster_error(e, &pod))?;
            // The place, the user's share and the stream slot go with the answer's last byte:
            // an answer its client does not read still counts (until the server cuts it).
            Response::new(held.into_body((slot, mine)))
        }
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if query.download {
        let disposition = format!("attachment; filename=\"{pod}.log\"");
        if let Ok(value) = HeaderValue::from_str(&disposition) {
            headers.insert(header::CONTENT_DISPOSITION, value);
        }
    }
    Ok(response)
}

/// A log read whole into memory (`request` bounds it), once one of the process's
/// [`CONCURRENT_LOG_READS`] places in `reads` is free: the memory all such reads hold together
/// is bounded, however many arrive at once.
pub async fn read_at_once(
    reads: &std::sync::Arc<tokio::sync::Semaphore>,
    cluster: &dyn crate::cluster::Cluster,
    id: i64,
    cluster_uid: &str,
    request: &LogRequest,
) -> Result<HeldLog, ClusterError> {
    let place = reads
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| ClusterError::Unavailable("the server is shutting down".into()))?;
    Ok(HeldLog {
        text: cluster.logs(id, cluster_uid, request).await?,
        place,
    })
}

/// A log read at once, holding its place among the [`CONCURRENT_LOG_READS`] until it is sent
/// (or dropped).
pub struct HeldLog {
    /// The log.
    pub text: String,
    place: tokio::sync::OwnedSemaphorePermit,
}

impl HeldLog {
    /// The answer's body: the log in [`LOG_CHUNK_BYTES`] pieces, keeping its place and
    /// `guards` until the last piece is taken (or the answer dropped).
    fn into_body<G: Send + 'static>(self, guards: G) -> Body {
        let bytes = axum::body::Bytes::from(self.text);
        // The stream's state holds the place and the guards: they go when it ends or is dropped.
        Body::from_stream(
            futures::stream::unfold((bytes, self.place, guards), |(mut rest, place, guards)| async move {
                if rest.is_empty() {
                    return None;
                }
                let piece = rest.split_to(rest.len().min(LOG_CHUNK_BYTES));
                Some((Ok::<_, std::io::Error>(piece), (rest, place, guards)))
            })
            .fuse(),
        )
    }
}

/// 429 `too_many_log_reads`: the caller already has [`LOG_READS_PER_USER`] logs being read.
fn too_many_log_reads() -> ApiError {
    let mut e = ApiError::new(
        axum::http::StatusCode::TOO_MANY_REQUESTS,
        "too_many_log_reads",
        format!("you already have {LOG_READS_PER_USER} logs being read; wait for one to finish"),
    )
    .with_details(serde_json::json!({ "limit": LOG_READS_PER_USER }));
    e.retry_after_seconds = Some(1);
    e
}

/// How often a followed log checks that its reader may still read it.
const REAUTHORIZE: std::time::Duration = std::time::Duration::from_secs(5);

/// A followed or downloaded log on its way to the reader: it holds one of the reader's stream
/// slots, ends when the server shuts down, and checks every [`REAUTHORIZE`] that the reader may still read
/// the job (a logout, a role change or a deletion ends it), as the event stream does.
struct FollowWatch {
    inner: crate::cluster::LogStream,
    state: AppState,
    headers: axum::http::HeaderMap,
    id: i64,
    /// When to check the reader again.
    check_at: tokio::time::Instant,
    _slot: crate::slots::Slot,
}

impl FollowWatch {
    fn into_stream(self) -> impl futures::Stream<Item = Result<axum::body::Bytes, std::io::Error>> {
        futures::stream::unfold(self, |mut watch| async move {
            loop {
                let signals = watch.state.signals.clone();
                tokio::select! {
                    chunk = watch.inner.next() => {
                        return chunk.map(|c| (c.map_err(std::io::Error::other), watch));
                    }
                    () = signals.closed() => return None,
                    () = tokio::time::sleep_until(watch.check_at) => {
                        watch.check_at = tokio::time::Instant::now() + REAUTHORIZE;
                        let (state, headers) = (watch.state.clone(), watch.headers.clone());
                        if !still_allowed(state, headers, watch.id).await {
                            return None;
                        }
                    }
                }
            }
        })
    }
}

/// Whether the caller of `headers` may still read job `id`.
async fn still_allowed(state: AppState, headers: axum::http::HeaderMap, id: i64) -> bool {
    match crate::auth::authenticate(&headers, &state).await {
        Ok(AuthUser(user)) => reads::visible(&state.db_read, &user, id).await.is_ok(),
        Err(_) => false,
    }
}

/// 404 `pod_not_found` for a pod the cluster does not have (yet, or any more).
fn pod_not_in_cluster(pod: &str) -> ApiError {
    ApiError::not_found(
        "pod_not_found",
        format!("{pod} is not in the cluster: the job has not been created there yet, or it is gone"),
    )
    .with_details(serde_json::json!({ "pod": pod }))
}

fn cluster_error(e: ClusterError, pod: &str) -> ApiError {
    match e {
        ClusterError::PodNotFound(_) => pod_not_in_cluster(pod),
        other => JobError::Cluster(other).into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_log_read_at_once_keeps_its_place_and_guards_until_its_last_piece_is_taken() {
        let places = std::sync::Arc::new(tokio::sync::Semaphore::new(1));
        let held = HeldLog {
            text: "x".repeat(3 * LOG_CHUNK_BYTES + 10),
            place: places.clone().acquire_owned().await.unwrap(),
        };
        let guard = std::sync::Arc::new(());
        let mut body = held.into_body(guard.clone()).into_data_stream();
        let mut taken = 0;
        while let Some(piece) = body.next().await {
            assert_eq!(places.available_permits(), 0, "held while pieces remain");
            assert_eq!(std::sync::Arc::strong_count(&guard), 2);
            taken += piece.unwrap().len();
        }
        assert_eq!(taken, 3 * LOG_CHUNK_BYTES + 10);
        // A layer that polls once more after the end (the compressing one does) gets the end.
        assert!(body.next().await.is_none());
        assert_eq!(places.available_permits(), 1, "given back with the last piece");
        assert_eq!(std::sync::Arc::strong_count(&guard), 1);
        // An answer dropped unread gives its place back too.
        let held = HeldLog {
            text: "y".repeat(10),
            place: places.clone().acquire_owned().await.unwrap(),
        };
        drop(held.into_body(()));
        assert_eq!(places.available_permits(), 1);
    }
}

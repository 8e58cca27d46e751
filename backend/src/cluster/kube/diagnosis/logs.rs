//! A pod's log, read at once (its end, bounded) or as a stream (followed, or downloaded whole):
//! only for a pod that is the job's, checked by a GET first (see the module's doc).

use axum::body::Bytes;
use futures::StreamExt;
use futures::io::{AsyncBufRead, AsyncBufReadExt};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::LogParams;

use super::super::api::{KubeApi, is_not_found, map_error};
use super::super::manifest::JOB_UID_LABEL;
use super::super::state;
use super::{TASK_SPEC_KEY, is_pod_name_of, label_or_annotation};
use crate::cluster::{ClusterError, LogRequest, LogStream, is_same_job};
use crate::prequeue::JobId;

/// The end of a log: the last `limit` bytes of `text` starting at a line when it was cut (or,
/// for one line longer than that, at a character).
pub fn keep_end(mut text: Vec<u8>, limit: usize, mut cut: bool) -> Vec<u8> {
    if text.len() > limit {
        text.drain(..text.len() - limit);
        cut = true;
    }
    if cut {
        match text.iter().position(|b| *b == b'\n') {
            Some(newline) => {
                text.drain(..=newline);
            }
            None => {
                let continuation = text.iter().take_while(|b| (**b & 0xC0) == 0x80).count();
                text.drain(..continuation);
            }
        }
    }
    text
}

/// Whether the apiserver refused a log because the container has not started yet (`container
/// "main" in pod "…" is waiting to start: ContainerCreating`) or the pod has no node yet.
fn not_started(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 400
        && (status.message.contains("is waiting to start") || status.message.contains("does not have a host assigned")))
}

fn read_error(pod: &str, error: &std::io::Error) -> ClusterError {
    ClusterError::Unavailable(format!("reading the log of {pod}: {error}"))
}

impl KubeApi {
    /// Pod `name` if it is one of `ar-<id>`'s with `cluster_uid`; [`ClusterError::PodNotFound`]
    /// otherwise (not there, another job's, another installation's, or not a pod name of it).
    async fn job_pod(&self, id: JobId, cluster_uid: &str, name: &str) -> Result<Pod, ClusterError> {
        let not_found = || ClusterError::PodNotFound(name.to_owned());
        if !is_pod_name_of(id, name) {
            return Err(not_found());
        }
        let pod = match self.pod_api().get(name).await {
            Ok(pod) => pod,
            Err(kube::Error::Api(status)) if is_not_found(&status, name) => return Err(not_found()),
            Err(e) => return Err(map_error(e)),
        };
        let ours = state::pod_job(&pod, self.namespace(), &self.settings().installation)
            .is_some_and(|(job, _)| job == id)
            && is_same_job(cluster_uid, pod.labels().get(JOB_UID_LABEL).map(String::as_str));
        if ours { Ok(pod) } else { Err(not_found()) }
    }

    /// The container whose log is read: the one named as the task (Anteroom's manifest names
    /// it so), else the first — a webhook may have injected a sidecar, and then the apiserver
    /// refuses a log request that names none.
    fn log_params(pod: &Pod, request: &LogRequest, follow: bool) -> LogParams {
        let limit_bytes =
            (request.limit_bytes != u64::MAX).then(|| i64::try_from(request.limit_bytes).unwrap_or(i64::MAX));
        let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
        let task = label_or_annotation(pod, TASK_SPEC_KEY);
        let container = containers
            .iter()
            .find(|c| Some(c.name.as_str()) == task)
            .or(containers.first())
            .map(|c| c.name.clone());
        LogParams {
            container,
            follow,
            limit_bytes,
            tail_lines: request.tail_lines.map(i64::from),
            ..LogParams::default()
        }
    }

    /// Opens the log of the job's pod; `None` when its container has not started.
    async fn open_log(
        &self,
        id: JobId,
        cluster_uid: &str,
        request: &LogRequest,
        follow: bool,
    ) -> Result<Option<impl AsyncBufRead + Send + 'static>, ClusterError> {
        let pod = self.job_pod(id, cluster_uid, &request.pod).await?;
        match self
            .pod_api()
            .log_stream(&request.pod, &Self::log_params(&pod, request, follow))
            .await
        {
            Ok(reader) => Ok(Some(reader)),
            Err(e) if not_started(&e) => Ok(None),
            Err(kube::Error::Api(status)) if is_not_found(&status, &request.pod) => {
                Err(ClusterError::PodNotFound(request.pod.clone()))
            }
            Err(e) => Err(map_error(e)),
        }
    }

    /// The log of one of the job's pods as it is now: its last `tail_lines` lines, at most
    /// `limit_bytes` of its end (whole lines), invalid UTF-8 replaced. Empty while the
    /// container has not started. Never holds more than `limit_bytes` (and a chunk) at once.
    pub async fn pod_log(&self, id: JobId, cluster_uid: &str, request: &LogRequest) -> Result<String, ClusterError> {
        let limit = usize::try_from(request.limit_bytes).unwrap_or(usize::MAX);
        let mut asked = request.clone();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let Some(reader) = self.open_log(id, cluster_uid, &asked, false).await? else {
                return Ok(String::new());
            };
            let (kept, cut) = read_bounded(Box::pin(reader), limit, &asked.pod).await?;
            // Read without a byte limit (the last try), or shorter than the limit: the
            // apiserver sent the whole tail, its end included.
            if asked.limit_bytes == u64::MAX || kept.len() < limit {
                let text = keep_end(kept, limit, cut);
                return Ok(
                    String::from_utf8(text).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
                );
            }
            // The tail did not fit, and the limit kept its beginning. Fewer lines, so that their
            // end does; when halving cannot help (long lines, a progress bar's line without a
            // newline) or the tries are spent, the tail without the apiserver's limit, of which
            // only the end is kept as it streams by.
            let lines = kept.iter().filter(|b| **b == b'\n').count();
            match asked.tail_lines {
                Some(tail) if lines > 1 && attempts < MAX_LOG_ATTEMPTS => {
                    asked.tail_lines = Some(tail.min(u32::try_from(lines / 2).unwrap_or(u32::MAX)).max(1));
                }
                _ => asked.limit_bytes = u64::MAX,
            }
        }
    }

    /// The log of one of the job's pods, then what it writes next, as chunks until the
    /// apiserver ends it (the container ended, or `limit_bytes` were sent) or the stream is
    /// dropped. Empty while the container has not started.
    pub async fn follow_pod_log(
        &self,
        id: JobId,
        cluster_uid: &str,
        request: &LogRequest,
    ) -> Result<LogStream, ClusterError> {
        self.stream_pod_log(id, cluster_uid, request, true).await
    }

    /// The log of one of the job's pods as it is now, as chunks as the apiserver sends them (a
    /// download): never held whole. Empty while the container has not started.
    pub async fn pod_log_stream(
        &self,
        id: JobId,
        cluster_uid: &str,
        request: &LogRequest,
    ) -> Result<LogStream, ClusterError> {
        self.stream_pod_log(id, cluster_uid, request, false).await
    }

    async fn stream_pod_log(
        &self,
        id: JobId,
        cluster_uid: &str,
        request: &LogRequest,
        follow: bool,
    ) -> Result<LogStream, ClusterError> {
        let Some(reader) = self.open_log(id, cluster_uid, request, follow).await? else {
            return Ok(futures::stream::empty().boxed());
        };
        let pod = request.pod.clone();
        let left = request.limit_bytes;
        let stream = futures::stream::unfold(Some((Box::pin(reader), left)), move |state| {
            let pod = pod.clone();
            async move {
                let (mut reader, left) = state?;
                if left == 0 {
                    return None;
                }
                match reader.fill_buf().await {
                    Ok([]) => None,
                    Ok(chunk) => {
                        let len = chunk.len();
                        let n = len.min(usize::try_from(left).unwrap_or(usize::MAX));
                        let bytes = Bytes::copy_from_slice(&chunk[..n]);
                        reader.consume_unpin(len);
                        Some((Ok(bytes), Some((reader, left - n as u64))))
                    }
                    Err(e) => Some((Err(read_error(&pod, &e)), None)),
                }
            }
        });
        Ok(stream.boxed())
    }
}

/// Times a snapshot log is asked for with fewer lines before its beginning is kept.
const MAX_LOG_ATTEMPTS: u32 = 4;

/// Reads `reader` to its end keeping at most `limit` bytes of its end (plus a chunk): the
/// bytes, and whether anything was dropped from their front.
async fn read_bounded(
    mut reader: std::pin::Pin<Box<impl AsyncBufRead + Send>>,
    limit: usize,
    pod: &str,
) -> Result<(Vec<u8>, bool), ClusterError> {
    let mut kept: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        let chunk = reader.fill_buf().await.map_err(|e| read_error(pod, &e))?;
        if chunk.is_empty() {
            return Ok((kept, cut));
        }
        let n = chunk.len();
        kept.extend_from_slice(chunk);
        reader.consume_unpin(n);
        // The apiserver keeps to `limitBytes`; a kubelet that sends more is trimmed as it comes.
        if kept.len() > limit.saturating_add(64 * 1024) {
            kept.drain(..kept.len() - limit);
            cut = true;
        }
    }
}

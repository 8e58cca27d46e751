//! What the cluster says about one job: its pods with their states, the Kubernetes events about
//! them, its PodGroup and its Volcano Job, and a pod's log — read on demand (a person opened the
//! job's page), never cached: the reflectors' pod cache is slimmed to what capacity and status
//! need, and events are not watched at all.
//!
//! Decisions:
//! - the pods are one LIST in the jobs namespace selected by this installation and the job id,
//!   then kept only when they are the job's by Volcano's label ([`state::pod_job`]) and by uid
//!   ([`is_same_job`]): an `ar-7` of a restored database's lost job 7 is not shown as this one;
//! - a pod's reason is the first that explains it: the pod's own (`Evicted`, `DeadlineExceeded`
//!   — a cause, where a container's `Error` would only be the symptom), a container waiting
//!   (`ImagePullBackOff`, `CrashLoopBackOff`), a container that ended (`OOMKilled`, `Error`,
//!   `Completed`), the scheduler's `PodScheduled=False` (`Unschedulable`), a delete in progress
//!   (`Terminating`); the message is the one that came with it;
//! - events are read per object (`fieldSelector=involvedObject.name=…`, one LIST each, four at
//!   a time): the first [`MAX_EVENT_PODS`] pods, the Volcano Job, and its PodGroup, which Volcano names
//!   `<job>-<job uid>` (older Volcano: the job's name, which the Job's query then finds too —
//!   events are attributed by their `involvedObject.kind`). Repeats are folded (same object,
//!   reason and message: counts summed, first and last times merged) and the latest
//!   [`MAX_EVENTS`] kept, oldest first;
//! - a log is read only for a pod that is the job's (a GET checks labels and uid first), and
//!   only for a name that is a valid pod name of `ar-<id>`: the name goes into the request path;
//! - a snapshot log keeps its end (the trait's promise) and never holds more than `limit_bytes`
//!   (and a chunk): `tailLines` and `limitBytes` both go to the apiserver, but `limitBytes`
//!   keeps the *beginning* of the tail, so a tail that does not fit (the answer is
//!   `limit_bytes` long) is asked again with half the lines it held, a few times at most; when
//!   that cannot help (lines longer than the limit, a progress bar without newlines), the tail
//!   is read once more without `limitBytes`, keeping only its end as it streams by (whole
//!   lines); a followed log is bounded by `limitBytes` at the apiserver and again
//!   here (the kubelet may send slightly more); a download (`limit_bytes` = `u64::MAX`) is
//!   streamed as it comes, never held;
//! - a container that has not started has no log yet: an empty one, not an error.

use std::collections::BTreeMap;

use anteroom_shared::api::pods::{ClusterEventView, JobPods, PodView};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::api::{KubeApi, map_error};
use super::manifest::{INSTALLATION_LABEL, JOB_ID_LABEL, JOB_UID_LABEL};
use super::state;
use crate::cluster::{ClusterError, cluster_name, is_same_job};
use crate::prequeue::JobId;

/// Label and annotation Volcano puts on a pod with its task's name.
pub const TASK_SPEC_KEY: &str = "volcano.sh/task-spec";
/// Label and annotation Volcano puts on a pod with its index in the task.
pub const TASK_INDEX_KEY: &str = "volcano.sh/task-index";
/// Annotation Volcano puts on a pod with its PodGroup's name.
pub const GROUP_NAME_ANNOTATION: &str = "scheduling.k8s.io/group-name";
/// Pods whose events are read: a job of 500 workers would otherwise cost 500 requests, and
/// the first pods say what the others would (they share a template).
pub const MAX_EVENT_PODS: usize = 20;
/// Events answered, the latest kept.
pub const MAX_EVENTS: usize = 100;

/// How many event LISTs one pods request has in flight at once.
const EVENT_LISTS_AT_ONCE: usize = 4;

/// What the adapter's Volcano Job cache knows of the job, when it has it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownJob {
    /// The Volcano Job's `metadata.uid`, which names its PodGroup.
    pub uid: Option<String>,
    /// Its task names in the spec's order, which orders its pods.
    pub tasks: Vec<String>,
}

/// The PodGroup Volcano creates for the Volcano Job `job` with `metadata.uid` `uid`.
pub fn pod_group_name(job: &str, uid: &str) -> String {
    format!("{job}-{uid}")
}

/// Whether `name` can be a pod of `ar-<id>` (`ar-<id>-<task>-<index>`, a DNS subdomain): it goes
/// into a request path, so nothing else is ever sent.
pub fn is_pod_name_of(id: JobId, name: &str) -> bool {
    anteroom_shared::names::is_dns_subdomain(name) && name.starts_with(&format!("{}-", cluster_name(id)))
}

fn label_or_annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.labels()
        .get(key)
        .or_else(|| pod.annotations().get(key))
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// The task and replica of a pod of `ar-<id>`: Volcano's labels (or annotations), else its
/// name `ar-<id>-<task>-<index>`.
fn task_and_replica(pod: &Pod, id: JobId) -> (String, u32) {
    let name = pod.name_any();
    let rest = name.strip_prefix(&format!("{}-", cluster_name(id))).unwrap_or(&name);
    let (name_task, name_index) = match rest.rsplit_once('-') {
        Some((task, index)) if index.parse::<u32>().is_ok() => (task, index.parse().ok()),
        _ => (rest, None),
    };
    let task = label_or_annotation(pod, TASK_SPEC_KEY).unwrap_or(name_task).to_owned();
    let replica = label_or_annotation(pod, TASK_INDEX_KEY)
        .and_then(|v| v.parse().ok())
        .or(name_index)
        .unwrap_or(0);
    (task, replica)
}

fn chrono_of(at: &Timestamp) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(at.as_second(), u32::try_from(at.subsec_nanosecond()).unwrap_or(0))
}

fn words(s: Option<&String>) -> Option<String> {
    s.map(|s| s.trim()).filter(|s| !s.is_empty()).map(str::to_owned)
}

/// One pod as the job's page shows it.
pub fn pod_view(pod: &Pod, id: JobId) -> PodView {
    let (task, replica) = task_and_replica(pod, id);
    let status = pod.status.as_ref();
    let containers: &[ContainerStatus] = status.and_then(|s| s.container_statuses.as_deref()).unwrap_or_default();
    let init: &[ContainerStatus] = status
        .and_then(|s| s.init_container_statuses.as_deref())
        .unwrap_or_default();
    // (reason, message) from each source, in the order they explain the pod.
    let mut sources: Vec<(Option<String>, Option<String>)> = Vec::new();
    sources.push((
        words(status.and_then(|s| s.reason.as_ref())),
        words(status.and_then(|s| s.message.as_ref())),
    ));
    let waiting = |c: &ContainerStatus| {
        let w = c.state.as_ref()?.waiting.as_ref()?;
        // Waiting for the init containers: theirs is the reason.
        (w.reason.as_deref() != Some("PodInitializing")).then(|| (words(w.reason.as_ref()), words(w.message.as_ref())))
    };
    sources.extend(containers.iter().filter_map(waiting));
    sources.extend(init.iter().filter_map(waiting));
    sources.extend(containers.iter().filter_map(|c| {
        let t = c.state.as_ref()?.terminated.as_ref()?;
        Some((words(t.reason.as_ref()), words(t.message.as_ref())))
    }));
    // A finished init container is only a reason when it failed.
    sources.extend(init.iter().filter_map(|c| {
        let t = c.state.as_ref()?.terminated.as_ref().filter(|t| t.exit_code != 0)?;
        Some((words(t.reason.as_ref()), words(t.message.as_ref())))
    }));
    sources.extend(
        status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.type_ == "PodScheduled" && c.status == "False")
            .map(|c| (words(c.reason.as_ref()), words(c.message.as_ref()))),
    );
    // Deleted, its containers still running (`kubectl get` says the same).
    if pod.metadata.deletion_timestamp.is_some() {
        sources.push((Some("Terminating".to_owned()), None));
    }
    let (reason, message) = match sources.iter().find(|(reason, _)| reason.is_some()) {
        Some((reason, message)) => (reason.clone(), message.clone()),
        None => (None, sources.iter().find_map(|(_, message)| message.clone())),
    };
    let exit_code = containers
        .iter()
        .find_map(|c| c.state.as_ref()?.terminated.as_ref().map(|t| t.exit_code))
        .or_else(|| {
            containers
                .iter()
                .find_map(|c| c.last_state.as_ref()?.terminated.as_ref().map(|t| t.exit_code))
        });
    let started_at = containers
        .iter()
        .filter_map(|c| {
            let state = c.state.as_ref()?;
            state
                .running
                .as_ref()
                .and_then(|r| r.started_at.as_ref())
                .or_else(|| state.terminated.as_ref().and_then(|t| t.started_at.as_ref()))
        })
        .filter_map(|t| chrono_of(&t.0))
        .min();
    // Ended once every container has: a pod whose sidecar still runs has not finished.
    let finished: Vec<_> = containers
        .iter()
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref())
        .collect();
    let finished_at = (!containers.is_empty() && finished.len() == containers.len())
        .then(|| {
            finished
                .iter()
                .filter_map(|t| t.finished_at.as_ref().and_then(|t| chrono_of(&t.0)))
                .max()
        })
        .flatten();
    PodView {
        name: pod.name_any(),
        task,
        replica,
        node: pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty()),
        phase: status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Pending".to_owned()),
        reason,
        message,
        cause: None,
        exit_code,
        restarts: containers
            .iter()
            .chain(init)
            .map(|c| u32::try_from(c.restart_count).unwrap_or(0))
            .fold(0u32, u32::saturating_add),
        started_at,
        finished_at,
    }
}

/// Sorts pod views by task — in `tasks` order (the Volcano Job's spec), tasks it does not name
/// after those, by name — then replica.
pub fn sort_pods(pods: &mut [PodView], tasks: &[String]) {
    let order = |task: &str| tasks.iter().position(|t| t == task).unwrap_or(usize::MAX);
    pods.sort_by(|a, b| {
        (order(&a.task), &a.task, a.replica, &a.name).cmp(&(order(&b.task), &b.task, b.replica, &b.name))
    });
}

/// One event as the page shows it; `kind` names the object when the event does not.
fn event_view(event: &Event, kind: &str) -> ClusterEventView {
    let object = &event.involved_object;
    let first = event
        .first_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .and_then(|t| chrono_of(&t));
    // Events recorded through `events.k8s.io` count their repeats in `series`.
    let series = event.series.as_ref();
    let last = series
        .and_then(|s| s.last_observed_time.as_ref().map(|t| t.0))
        .or_else(|| event.last_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .and_then(|t| chrono_of(&t))
        .or(first);
    let count = event
        .count
        .unwrap_or(0)
        .max(series.and_then(|s| s.count).unwrap_or(0))
        .max(1);
    ClusterEventView {
        object: format!(
            "{}/{}",
            object.kind.as_deref().filter(|k| !k.is_empty()).unwrap_or(kind),
            object.name.as_deref().unwrap_or_default()
        ),
        event_type: event.type_.clone().unwrap_or_else(|| "Normal".to_owned()),
        reason: event.reason.clone().unwrap_or_default(),
        message: event.message.clone().filter(|m| !m.is_empty()),
        cause: None,
        count: u32::try_from(count).unwrap_or(1),
        first_at: first,
        last_at: last,
    }
}

/// Folds repeats (same object, reason and message: counts summed, the earliest first and the
/// latest last time, the type of the latest) and keeps the latest [`MAX_EVENTS`], oldest first.
pub fn fold_events(events: impl IntoIterator<Item = ClusterEventView>) -> Vec<ClusterEventView> {
    let mut folded: BTreeMap<(String, String, Option<String>), ClusterEventView> = BTreeMap::new();
    for event in events {
        let key = (event.object.clone(), event.reason.clone(), event.message.clone());
        match folded.get_mut(&key) {
            None => {
                folded.insert(key, event);
            }
            Some(seen) => {
                seen.count = seen.count.saturating_add(event.count);
                if event.last_at > seen.last_at {
                    seen.event_type = event.event_type;
                }
                seen.first_at = match (seen.first_at, event.first_at) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                seen.last_at = seen.last_at.max(event.last_at);
            }
        }
    }
    let mut out: Vec<ClusterEventView> = folded.into_values().collect();
    out.sort_by(|a, b| {
        (a.last_at, a.first_at, &a.object, &a.reason).cmp(&(b.last_at, b.first_at, &b.object, &b.reason))
    });
    let excess = out.len().saturating_sub(MAX_EVENTS);
    out.drain(..excess);
    out
}

impl KubeApi {
    fn pod_api(&self) -> Api<Pod> {
        Api::namespaced(self.client().clone(), self.namespace())
    }

    /// The pods of `ar-<id>` with `cluster_uid`, by task (in `job`'s order when known) then
    /// replica, and the events of the first [`MAX_EVENT_PODS`] of them, of the Volcano Job and
    /// of its PodGroup when `job` (the cache's Volcano Job, if it is this job's) is known.
    /// Nothing more is read about a job that is neither known nor has pods: it is not in the
    /// cluster, and there is no object to ask about.
    pub async fn job_pods(
        &self,
        id: JobId,
        cluster_uid: &str,
        job: Option<&KnownJob>,
    ) -> Result<JobPods, ClusterError> {
        let namespace = self.namespace();
        let installation = &self.settings().installation;
        let params = ListParams::default().labels(&format!("{INSTALLATION_LABEL}={installation},{JOB_ID_LABEL}={id}"));
        let listed = self.pod_api().list(&params).await.map_err(map_error)?;
        let pods: Vec<&Pod> = listed
            .items
            .iter()
            .filter(|pod| state::pod_job(pod, namespace, installation).is_some_and(|(job, _)| job == id))
            .filter(|pod| is_same_job(cluster_uid, pod.labels().get(JOB_UID_LABEL).map(String::as_str)))
            .collect();
        let mut views: Vec<PodView> = pods.iter().map(|pod| pod_view(pod, id)).collect();
        sort_pods(&mut views, job.map(|j| j.tasks.as_slice()).unwrap_or_default());

        // (name, the kinds of object its events may be about), each name once.
        let mut objects: Vec<(String, &[&str])> = views
            .iter()
            .take(MAX_EVENT_PODS)
            .map(|v| (v.name.clone(), &["Pod"][..]))
            .collect();
        let name = cluster_name(id);
        let mut groups: Vec<String> = Vec::new();
        if let Some(job) = job {
            // Older Volcano names the PodGroup as the job: the one query finds both.
            objects.push((name.clone(), &["Job", "PodGroup"][..]));
            groups.extend(job.uid.as_deref().map(|uid| pod_group_name(&name, uid)));
        }
        groups.extend(
            pods.iter()
                .filter_map(|pod| pod.annotations().get(GROUP_NAME_ANNOTATION).cloned()),
        );
        for group in groups {
            if !objects.iter().any(|(n, _)| *n == group) {
                objects.push((group, &["PodGroup"][..]));
            }
        }
        let events: Api<Event> = Api::namespaced(self.client().clone(), namespace);
        // Up to [`MAX_EVENT_PODS`] + 3 LISTs: a few at a time, so the page waits for the
        // slowest of a handful rather than the sum of them all.
        let selectors: Vec<String> = objects
            .iter()
            .map(|(object, _)| format!("involvedObject.name={object}"))
            .collect();
        let lists: Vec<Result<_, ClusterError>> = futures::stream::iter(selectors)
            .map(|selector| {
                let events = events.clone();
                async move {
                    events
                        .list(&ListParams::default().fields(&selector))
                        .await
                        .map_err(map_error)
                }
            })
            .buffered(EVENT_LISTS_AT_ONCE)
            .collect()
            .await;
        let mut views_of_events = Vec::new();
        for ((_, kinds), list) in objects.iter().zip(lists) {
            let list = list?;
            views_of_events.extend(
                list.items
                    .iter()
                    .filter(|e| {
                        e.involved_object
                            .kind
                            .as_deref()
                            .is_none_or(|kind| kinds.contains(&kind))
                    })
                    .map(|e| event_view(e, kinds[0])),
            );
        }
        Ok(JobPods {
            pods: views,
            events: fold_events(views_of_events),
        })
    }
}

mod logs;
pub use logs::keep_end;

#[cfg(test)]
mod tests;

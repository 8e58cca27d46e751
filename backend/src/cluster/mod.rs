//! The cluster Anteroom admits jobs into, behind a trait so the embedded simulated cluster
//! (the default) and the kube/Volcano adapter are interchangeable for the API, the watcher and
//! the tests.
//!
//! Contract every implementation keeps:
//! - a job exists in the cluster under the deterministic name [`cluster_name`] (`ar-<id>`), so
//!   creating it again after a crash is harmless: "already exists" (ours) is success;
//! - "ours" includes the job's uid ([`JobSpec::cluster_uid`]): an object of that name with
//!   another uid belongs to another job that had the same id (a restored or rolled-back
//!   database reuses ids) and is neither adopted by a create
//!   ([`ClusterError::NameTakenByAnotherJob`]) nor reported as the job by status sync
//!   ([`is_same_job`] on [`JobStatus::cluster_uid`]);
//! - deleting a job that is not there is success;
//! - a node's free capacity is its allocatable minus the requests of pods that have not
//!   finished — terminating pods still count, so "victims still terminating" is visible;
//! - job status changes are broadcast as they are observed, and [`Cluster::job_statuses`] lists
//!   them all for a resync (after a restart or a lagging receiver).

pub mod clock;
pub mod handlers;
pub mod installation;
pub mod kube;
pub mod sim;

use std::sync::Arc;

use anteroom_shared::api::pods::{JobFailure, JobPods};
use anteroom_shared::scheduling::{JobKind, JobPhase, PreemptionPolicy, ResourceList, ScheduleType, is_accelerator};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::prequeue::{JobId, NodeSnapshot, Toleration};

/// The name of a job's object in the cluster: deterministic, so retries are idempotent.
pub fn cluster_name(id: JobId) -> String {
    format!("ar-{id}")
}

/// How the uid of a job that existed before uids begins (`legacy-<id>`, written by the
/// migration that added them).
pub const LEGACY_UID_PREFIX: &str = "legacy-";

/// Whether a cluster object that carries the uid `object_uid` is the job whose uid is `job_uid`.
/// An object without a uid was created before Anteroom wrote uids, so only by a job that
/// existed then — one with a [`LEGACY_UID_PREFIX`] uid — and counts as such a job's (it cannot
/// be told apart further). A job submitted since has a random uid and its object always
/// carries it: an unlabelled `ar-<id>` is never its own (a database rolled back past the
/// upgrade reuses ids).
pub fn is_same_job(job_uid: &str, object_uid: Option<&str>) -> bool {
    match object_uid {
        Some(uid) => uid == job_uid,
        None => job_uid.starts_with(LEGACY_UID_PREFIX),
    }
}

/// The job id in a cluster object name made by [`cluster_name`].
pub fn job_id_of(name: &str) -> Option<JobId> {
    name.strip_prefix("ar-")?.parse().ok().filter(|id: &JobId| *id > 0)
}

/// What Anteroom asks the cluster to run: one Volcano Job with a task per task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    /// Database id; the cluster name is `ar-<id>`.
    pub id: JobId,
    /// The job's uid (`jobs.cluster_uid`), put on the object so that an `ar-<id>` of another
    /// job with the same id is told apart. Empty only in specs the simulated cluster stored
    /// before uids existed.
    #[serde(default)]
    pub cluster_uid: String,
    /// Kind (decides labels, and in the simulated cluster how long it runs).
    pub kind: JobKind,
    /// Volcano queue.
    pub queue: String,
    /// Owner's username, for labels and people reading `kubectl get`.
    pub owner: String,
    /// Normal or backfill.
    pub schedule_type: ScheduleType,
    /// Copied at submission for normal jobs.
    pub waiting_tolerance_seconds: Option<i64>,
    /// Whether it may cause preemption.
    pub preemption_policy: PreemptionPolicy,
    /// The tasks; `minAvailable` is the sum of their replicas (gang).
    pub tasks: Vec<TaskSpec>,
    /// Whether the cluster's own scheduler may evict its pods when they are created
    /// (`volcano.sh/preemptable`, [`crate::prequeue::cluster_may_evict`]); the watcher changes
    /// it later with [`Cluster::set_preemptable`]. Specs stored without it read as `false`.
    #[serde(default)]
    pub preemptable: bool,
    /// The pods' `terminationGracePeriodSeconds`: how long a preempted pod may take to exit.
    /// The simulated cluster only stores it; a delete's `grace_seconds` still rules there.
    #[serde(default)]
    pub termination_grace_seconds: Option<u32>,
    /// The job's runtime limit: its pods' `activeDeadlineSeconds`; the simulated cluster ends
    /// the job `Failed` (`DeadlineExceeded`) that long after it started. `None`: no limit.
    #[serde(default)]
    pub active_deadline_seconds: Option<u64>,
    /// A preemption sent this job back to the prequeue before: its containers get
    /// `ANTEROOM_PREEMPTED=1`, so a training script knows to resume from its checkpoint.
    #[serde(default)]
    pub preempted_before: bool,
    /// The user id its containers run as, never root (`runAsNonRoot` with this `runAsUser`);
    /// `None`: as its images say (its queue allows root).
    #[serde(default)]
    pub run_as_user: Option<i64>,
}

impl JobSpec {
    /// `ar-<id>`.
    pub fn cluster_name(&self) -> String {
        cluster_name(self.id)
    }

    /// Σ replicas: all pods must start together.
    pub fn min_available(&self) -> u32 {
        self.tasks.iter().map(|t| t.replicas).sum()
    }
}

/// One task of a job: `replicas` identical pods.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSpec {
    /// Task name (`main`, `master`, `worker`, `ps`).
    pub name: String,
    /// Pods of this task.
    pub replicas: u32,
    /// Container image.
    pub image: String,
    /// Container command.
    pub command: Vec<String>,
    /// Requests (= limits) of one pod.
    pub resources: ResourceList,
    /// Host names the pods are pinned to; empty = anywhere.
    #[serde(default)]
    pub node_names: Vec<String>,
    /// Tolerations of the pods.
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
    /// Environment of the container, as the body gave it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<anteroom_shared::api::jobs::EnvVar>,
    /// Size of the memory-backed `/dev/shm` (`TaskBody::effective_shm`); `None`: the
    /// runtime's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm: Option<anteroom_shared::scheduling::Quantity>,
    /// Volumes of the catalogue the pods mount (the job's, the same in every task).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<anteroom_shared::api::volumes::VolumeMount>,
}

/// A job's state as the cluster reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    /// Which job.
    pub job_id: JobId,
    /// Volcano's phase, in Anteroom's words.
    pub phase: JobPhase,
    /// Nodes its pods are on (sorted, deduplicated).
    pub nodes: Vec<String>,
    /// When this was observed.
    pub observed_at: DateTime<Utc>,
    /// When the job's pods started running (`None` while none has), so the watcher can count
    /// minimum runtimes from the cluster's clock rather than from when it happened to look.
    /// The simulated cluster keeps it in its database across restarts.
    pub started_at: Option<DateTime<Utc>>,
    /// Why the job failed (Volcano's `status.state.reason`/`message`), so a person reading the
    /// job sees the cluster's own words; `None` unless it failed.
    pub failure: Option<String>,
    /// The uid the object carries ([`JobSpec::cluster_uid`]); `None` for an object created
    /// before uids. Status sync applies the status only to the job with that uid
    /// ([`is_same_job`]).
    #[serde(default)]
    pub cluster_uid: Option<String>,
    /// The first failing pod, its reason and exit code, once the job failed: the one line a
    /// person reads first. `None` while it has not failed, or when no pod says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_pod: Option<JobFailure>,
}

/// A Volcano queue as the cluster knows it, so Anteroom can check that its own queues exist
/// there before sending jobs into them, and what the cluster needs to enforce the tree itself
/// (`spec/prequeue.md` §9 "The cluster": a job sent around Anteroom still meets the caps).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueue {
    /// Queue name (Anteroom's queue name is the Volcano queue name).
    pub name: String,
    /// Whether it accepts new jobs (Volcano refuses jobs into a closed queue).
    pub open: bool,
    /// The parent queue; `None`: a root of Anteroom's tree.
    #[serde(default)]
    pub parent: Option<String>,
    /// The queue's capacity, the hard cap of its subtree; `None`: no cap of its own.
    #[serde(default)]
    pub capability: Option<ResourceList>,
    /// Its sharing weight among siblings (`QueueSharing::weight`, ≥ 1).
    #[serde(default = "default_weight")]
    pub weight: u32,
}

fn default_weight() -> u32 {
    1
}

/// The cluster queue every Elastic (backfill) job runs in while Anteroom's queues are mirrored
/// (`mirror_queues`): a root queue without a `capability`. Anteroom never counts Elastic jobs
/// against a queue's capacity (§1) — they use idle room and are preempted first — but Volcano
/// counts every pod of a queue against its `capability`, so an Elastic job sent into its
/// mirrored queue while that queue is at capacity would stay `Pending` in the cluster for ever.
/// They run beside the capped tree instead; Anteroom's rules keep them in line. An Anteroom
/// queue may not take this name (422 on `name`).
pub const ELASTIC_QUEUE: &str = "anteroom-elastic";

/// The cluster queue a job of `queue` and `schedule_type` is sent to: its own, or
/// [`ELASTIC_QUEUE`] for an Elastic job while queues are mirrored.
pub fn cluster_queue_of(queue: &str, schedule_type: ScheduleType, mirror_queues: bool) -> &str {
    if mirror_queues && schedule_type == ScheduleType::Backfill {
        ELASTIC_QUEUE
    } else {
        queue
    }
}

impl ClusterQueue {
    /// A root queue without a capacity, of weight 1 (the defaults of a queue written without
    /// them): what the seeded `default` queue is, and what tests that care only whether a queue
    /// exists and is open use.
    pub fn new(name: impl Into<String>, open: bool) -> Self {
        Self {
            name: name.into(),
            open,
            parent: None,
            capability: None,
            weight: default_weight(),
        }
    }
}

/// What the status stream carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum JobEvent {
    /// A job's phase or nodes changed.
    Status(JobStatus),
    /// A job is no longer in the cluster (deleted and its pods gone).
    Gone {
        /// Which job.
        job_id: JobId,
        /// When this was observed.
        observed_at: DateTime<Utc>,
    },
}

/// Where a notebook answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotebookTarget {
    /// An HTTP server at this base (`http://host:port`, no path): requests keep their path.
    Http(String),
    /// Nothing answers: the simulated cluster runs no real server (and no upstream is set).
    Simulated,
}

/// The port a notebook server of `kind` listens on in its pod: Jupyter's 8888, code-server's
/// 8080 (the images' defaults).
pub fn notebook_port(kind: JobKind) -> u16 {
    match kind {
        JobKind::Webide => 8080,
        _ => 8888,
    }
}

/// Which pod's log, and how much of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRequest {
    /// The pod's name ([`anteroom_shared::api::pods::pod_name`]).
    pub pod: String,
    /// Only the last lines; `None`: the whole log.
    pub tail_lines: Option<u32>,
    /// At most this many bytes (the end of the log is kept).
    pub limit_bytes: u64,
}

/// A followed log: chunks of text as the pod writes them.
pub type LogStream = futures::stream::BoxStream<'static, Result<axum::body::Bytes, ClusterError>>;

/// A resource some node offers, for forms and the quota editor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceName {
    /// e.g. `cpu`, `memory`, `nvidia.com/a100`.
    pub name: String,
    /// Names with `/` are accelerators.
    pub accelerator: bool,
}

/// What can go wrong talking to a cluster; the variant names are metric labels.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The cluster did not answer or answered 5xx: retry later.
    #[error("the cluster is unavailable: {0}")]
    Unavailable(String),
    /// The cluster refused the request as invalid: retrying the same request will not help.
    #[error("the cluster rejected the request: {0}")]
    Rejected(String),
    /// An object of that name exists but is not Anteroom's.
    #[error("{0} exists in the cluster but was not created by Anteroom")]
    Conflict(String),
    /// An object of that name exists, created by this Anteroom for another job that had the
    /// same id: a database restored from a backup or rolled back numbers new jobs again from
    /// where it was. The uids differ, so it is not adopted.
    ///
    /// Not transient, but the activation path retries it like any failed create (with backoff)
    /// and fails the job after `MAX_ATTEMPTS`: that the name frees up meanwhile (an admin
    /// deletes the stray object) is the only way it can succeed, and failing the job is better
    /// than taking someone else's running job for this one.
    #[error(
        "{object} exists in the cluster but belongs to another job with the same id (its uid is {found}, this \
         job's is {expected}): the database was restored or rolled back; the object is not adopted"
    )]
    NameTakenByAnotherJob {
        /// `namespace/ar-<id>` (or `ar-<id>` in the simulated cluster).
        object: String,
        /// The uid the existing object carries.
        found: String,
        /// This job's uid.
        expected: String,
    },
    /// No such node.
    #[error("no node named {0}")]
    NodeNotFound(String),
    /// The job has no such pod in the cluster (not created yet, gone, or a task or replica it
    /// does not have).
    #[error("no pod named {0}")]
    PodNotFound(String),
    /// The local store behind the simulated cluster failed.
    #[error("the simulated cluster's store failed: {0}")]
    Store(#[from] sea_orm::DbErr),
    /// Configuration (kubeconfig, node file) is unusable.
    #[error("cluster configuration: {0}")]
    Config(String),
}

impl ClusterError {
    /// Stable label for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            ClusterError::Unavailable(_) => "unavailable",
            ClusterError::Rejected(_) => "rejected",
            ClusterError::Conflict(_) => "conflict",
            ClusterError::NameTakenByAnotherJob { .. } => "name_taken_by_another_job",
            ClusterError::NodeNotFound(_) => "node_not_found",
            ClusterError::PodNotFound(_) => "pod_not_found",
            ClusterError::Store(_) => "store",
            ClusterError::Config(_) => "config",
        }
    }

    /// Whether a retry may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, ClusterError::Unavailable(_) | ClusterError::Store(_))
    }
}

/// How many creates of one [`Cluster::create_jobs`] call are in flight at once by default.
pub const CONCURRENT_CREATES: usize = 8;

/// How long one create of [`Cluster::create_jobs`] may take by default before it counts as
/// unavailable. A create that hangs (an API server that accepted the connection and never
/// answers) would otherwise hold its whole group's answers — the submitters' HTTP responses —
/// until the client library's own read timeout, minutes later. The create may still land:
/// creates are idempotent, so the retry adopts it.
pub const CREATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// `create` bounded by `limit`: its own answer, or [`ClusterError::Unavailable`] once `limit`
/// has passed.
pub async fn bounded_create(
    create: impl std::future::Future<Output = Result<(), ClusterError>>,
    limit: std::time::Duration,
) -> Result<(), ClusterError> {
    tokio::time::timeout(limit, create).await.unwrap_or_else(|_| {
        Err(ClusterError::Unavailable(format!(
            "the create did not answer within {} s",
            limit.as_secs()
        )))
    })
}

/// What the rest of Anteroom needs from a cluster.
#[async_trait]
pub trait Cluster: Send + Sync + 'static {
    /// `sim` or `kube`, for logs and metrics.
    fn kind(&self) -> &'static str;

    /// Every node with allocatable and free capacity, labels, taints, readiness and
    /// schedulability.
    async fn nodes(&self) -> Result<Vec<NodeSnapshot>, ClusterError>;

    /// The resource names the nodes offer (non-zero allocatable), accelerators flagged, sorted.
    async fn resource_names(&self) -> Result<Vec<ResourceName>, ClusterError> {
        Ok(resource_names_of(&self.nodes().await?))
    }

    /// Creates the job under `ar-<id>`; succeeds if it already exists and is ours.
    async fn create_job(&self, spec: &JobSpec) -> Result<(), ClusterError>;

    /// Creates several jobs, each as [`Cluster::create_job`] would, answering each in order.
    /// A cluster that commits its own writes (the simulated one) commits them together; by
    /// default they go out a few at a time, as independent requests, each bounded by
    /// [`CREATE_TIMEOUT`].
    async fn create_jobs(&self, specs: &[JobSpec]) -> Vec<Result<(), ClusterError>> {
        use futures::StreamExt;
        // The futures made first: a closure inside the stream trips async-trait's lifetimes.
        let creates: Vec<_> = specs
            .iter()
            .map(|spec| bounded_create(self.create_job(spec), CREATE_TIMEOUT))
            .collect();
        futures::stream::iter(creates)
            .buffered(CONCURRENT_CREATES)
            .collect()
            .await
    }

    /// Deletes the job whose uid is `cluster_uid`, giving its pods `grace_seconds` to exit;
    /// succeeds if it is not there. An `ar-<id>` of another job with the same id (another uid,
    /// [`is_same_job`]) is left alone.
    async fn delete_job(&self, id: JobId, cluster_uid: &str, grace_seconds: u32) -> Result<(), ClusterError>;

    /// Tells the cluster's own scheduler whether it may evict the job's pods
    /// (`volcano.sh/preemptable` on each pod), so Volcano's preempt and reclaim never take what
    /// the prequeue protects (a lock, the backfill minimum runtime). Only the pods of the job
    /// with `cluster_uid` are changed; a job that is not there is a success (nothing to tell).
    async fn set_preemptable(&self, id: JobId, cluster_uid: &str, preemptable: bool) -> Result<(), ClusterError>;

    /// Cordons (`false`) or uncordons (`true`) a node.
    async fn set_node_schedulable(&self, node: &str, schedulable: bool) -> Result<(), ClusterError>;

    /// The current status of every Anteroom job in the cluster (for a full resync).
    async fn job_statuses(&self) -> Result<Vec<JobStatus>, ClusterError>;

    /// Status changes as they happen. A lagging receiver loses events and should resync with
    /// [`Cluster::job_statuses`].
    fn subscribe(&self) -> broadcast::Receiver<JobEvent>;

    /// Whether the cluster answers (drives `/readyz`).
    async fn is_reachable(&self) -> bool;

    /// The job's pods with their states, and the latest cluster events about them and its
    /// PodGroup: what a person needs to see why it is Pending or why it failed. Only the job
    /// with `cluster_uid` ([`is_same_job`]); a job that is not in the cluster has none.
    async fn pods(&self, id: JobId, cluster_uid: &str) -> Result<JobPods, ClusterError>;

    /// The log of one of the job's pods as it is now: its last `tail_lines` lines (all when
    /// `None`), at most `limit_bytes` (the end is kept). [`ClusterError::PodNotFound`] when the
    /// job of that uid has no such pod.
    async fn logs(&self, id: JobId, cluster_uid: &str, request: &LogRequest) -> Result<String, ClusterError>;

    /// The log of one of the job's pods as it is now, as a stream (a download): its last
    /// `tail_lines` lines (all when `None`), never held whole. By default the log read at once
    /// (a cluster that holds its logs in memory anyway, the simulated one).
    async fn log_stream(&self, id: JobId, cluster_uid: &str, request: &LogRequest) -> Result<LogStream, ClusterError> {
        use futures::StreamExt;
        let text = self.logs(id, cluster_uid, request).await?;
        Ok(futures::stream::once(async move { Ok(axum::body::Bytes::from(text)) }).boxed())
    }

    /// The log of one of the job's pods, then what it writes next, until the pod ends or the
    /// stream is dropped: `tail_lines` as in [`Cluster::logs`], and `limit_bytes` bounds what
    /// the whole stream carries.
    async fn follow_logs(&self, id: JobId, cluster_uid: &str, request: &LogRequest) -> Result<LogStream, ClusterError>;

    /// Where the running notebook server (jupyter, webide) of job `id` answers HTTP, for the
    /// proxy at `/jobs/{id}/open/`: its first pod `task`-0 on the notebook's port.
    fn notebook_target(&self, id: JobId, kind: JobKind, task: &str) -> NotebookTarget;

    /// The queues the cluster knows, so the watcher can tell "queue missing or closed in the
    /// cluster" from "job rejected" before it creates anything.
    async fn queues(&self) -> Result<Vec<ClusterQueue>, ClusterError>;

    /// Anteroom's queue `name` should exist in the cluster as `queue` says: the simulated
    /// cluster records it (created/opened/closed, with its parent, capability and weight); the
    /// kube adapter with `mirror_queues` creates or updates the Volcano Queue it mirrors it as,
    /// and otherwise — or when an administrator's unlabelled Volcano queue has that name —
    /// answers Ok only if Volcano has it.
    async fn sync_queue(&self, queue: &ClusterQueue) -> Result<(), ClusterError>;

    /// Every Anteroom queue, parents before children, at start: the ones the cluster lacks are
    /// created (the kube adapter with `mirror_queues`: queues made before mirroring or while it
    /// was off). Existing ones are left to the next write of their queue, which updates them:
    /// an update from here could race a write on another replica and put old values back. By
    /// default nothing: the simulated cluster stores its queues with its state, and the kube
    /// adapter without mirroring writes no queue.
    async fn create_missing_queues(&self, queues: &[ClusterQueue]) -> Result<(), ClusterError> {
        let _ = queues;
        Ok(())
    }

    /// Anteroom's queue `name` was deleted: the simulated cluster forgets it (jobs already in it
    /// run on, new ones are refused); the kube adapter with `mirror_queues` deletes the Volcano
    /// Queue if it is one Anteroom mirrors (labelled), never an administrator's. By default
    /// nothing.
    async fn remove_queue(&self, name: &str) -> Result<(), ClusterError> {
        let _ = name;
        Ok(())
    }
}

/// The sorted, deduplicated names of resources with non-zero allocatable on some node.
pub fn resource_names_of(nodes: &[NodeSnapshot]) -> Vec<ResourceName> {
    let mut names: Vec<String> = nodes
        .iter()
        .flat_map(|n| {
            n.allocatable
                .iter()
                .filter(|(_, q)| q.is_positive())
                .map(|(k, _)| k.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| ResourceName {
            accelerator: is_accelerator(&name),
            name,
        })
        .collect()
}

/// The configured cluster, and the simulated one itself when that is what runs (tests that
/// drive time by hand step it).
pub struct Built {
    /// The cluster jobs go to.
    pub cluster: Arc<dyn Cluster>,
    /// The simulation, when `cluster` is it.
    pub sim: Option<Arc<sim::SimulatedCluster>>,
}

/// Builds the configured cluster. The simulated one keeps its state in `db`, reads time from
/// `clock`, and (unless `ticking` is false, for tests that step it by hand) runs a background
/// task that advances it until it is dropped.
pub async fn from_config(
    config: &crate::config::Config,
    db: &sea_orm::DatabaseConnection,
    clock: Arc<dyn clock::Clock>,
    ticking: bool,
) -> Result<Built, ClusterError> {
    match config.cluster {
        crate::config::ClusterKind::Sim => {
            let settings = sim::SimSettings::from_config(config)?;
            let sim = sim::SimulatedCluster::open(db.clone(), settings, clock).await?;
            if ticking {
                sim.spawn_ticker();
            }
            let cluster: Arc<dyn Cluster> = sim.clone();
            Ok(Built {
                cluster,
                sim: Some(sim),
            })
        }
        crate::config::ClusterKind::Kube => {
            let installation = installation::installation_id(db).await?;
            Ok(Built {
                cluster: kube::KubeCluster::connect(config, installation).await?,
                sim: None,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_create_that_never_answers_is_unavailable_once_its_time_is_up() {
        let limit = Duration::from_secs(15);
        let started = tokio::time::Instant::now();
        let hung = bounded_create(std::future::pending(), limit).await;
        assert!(matches!(hung, Err(ClusterError::Unavailable(_))), "{hung:?}");
        assert!(hung.unwrap_err().is_transient(), "retried later, not failed for good");
        assert_eq!(started.elapsed(), limit, "given up when its time was up, not before");
        // An answer in time is the answer, a refusal included.
        assert!(bounded_create(async { Ok(()) }, limit).await.is_ok());
        let refused = bounded_create(async { Err(ClusterError::Rejected("no".into())) }, limit).await;
        assert!(matches!(refused, Err(ClusterError::Rejected(_))));
    }
}

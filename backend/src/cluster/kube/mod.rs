//! The kube/Volcano adapter (`ANTEROOM_CLUSTER=kube`): Anteroom's jobs become
//! `batch.volcano.sh/v1alpha1` Jobs named `ar-<id>` in `ANTEROOM_NAMESPACE`.
//!
//! - Reads never list per call: kube-runtime reflectors keep Nodes, Pods (all namespaces — every
//!   pod on a node takes capacity), Anteroom's Volcano Jobs (label
//!   `app.kubernetes.io/managed-by=anteroom`) and Volcano Queues in memory, fed by watches. A
//!   call that arrives before a cache has synced waits briefly, then answers `Unavailable`
//!   rather than an empty cluster (an empty job list would read as "every job vanished").
//! - Writes go through [`KubeApi`], which can be built from any [`kube::Client`] — the tests
//!   give it a mock service and assert the exact requests.
//! - Status sync: every change of one of our Volcano Jobs or of their pods recomputes that job's
//!   status and broadcasts it when phase or nodes changed; a job is `Gone` once its object and
//!   its last pod have disappeared.
//! - The watch tasks belong to the [`KubeCluster`]: dropping it aborts them.
//!
//! What the adapter sends is [`API_REQUESTS`] (its tests check every request they see against
//! it, and one test drives every code path to see every row); [`REQUIRED_PERMISSIONS`] and
//! `deploy/20-rbac.yaml` grant exactly that (`backend/tests/deploy_rbac.rs` compares them).

pub mod api;
pub mod crd;
pub mod manifest;
pub mod state;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anteroom_shared::scheduling::JobPhase;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;
use tokio::task::AbortHandle;

pub use self::api::KubeApi;
use self::crd::{VolcanoJob, VolcanoQueue};
use super::{Cluster, ClusterError, ClusterQueue, JobEvent, JobSpec, JobStatus, cluster_name, job_id_of};
use crate::prequeue::{JobId, NodeSnapshot};

/// Where a permission applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PermissionScope {
    /// Cluster-wide (a `ClusterRole`): nodes, queues, and pods of every namespace.
    Cluster,
    /// In `ANTEROOM_NAMESPACE` only (a `Role` there).
    Namespace,
}

/// One RBAC rule the adapter needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permission {
    /// API group (`""` for the core group).
    pub api_group: &'static str,
    /// Resource (plural, as in RBAC rules).
    pub resource: &'static str,
    /// Verbs, sorted.
    pub verbs: &'static [&'static str],
    /// ClusterRole or namespaced Role.
    pub scope: PermissionScope,
    /// What the adapter does with it.
    pub why: &'static str,
}

/// Everything the adapter does in the cluster, as RBAC rules — the list the code's
/// documentation, `deploy/20-rbac.yaml` and the tests that compare them share. It is not
/// written from memory: `backend/tests/deploy_rbac.rs` checks it grants exactly the requests of
/// [`API_REQUESTS`], and the adapter's tests check that table against the requests the adapter
/// really sends.
///
/// Least privilege: reads that must see the whole cluster (nodes, queues, every pod's requests)
/// are cluster-wide; writes are namespaced wherever the object is (jobs, pods), so Anteroom
/// cannot touch other tenants' workloads. The one cluster-wide write is cordoning a node
/// (`patch nodes`), an admin action of the API. Nothing is granted for a feature not built yet
/// (the watcher's leader lease lives in the database).
pub const REQUIRED_PERMISSIONS: &[Permission] = &[
    Permission {
        api_group: "",
        resource: "nodes",
        verbs: &["list", "patch", "watch"],
        scope: PermissionScope::Cluster,
        why: "node reflector (capacity, labels, taints, readiness); cordon/uncordon",
    },
    Permission {
        api_group: "",
        resource: "pods",
        verbs: &["list", "watch"],
        scope: PermissionScope::Cluster,
        why: "pod reflector over all namespaces: every bound pod takes node capacity",
    },
    Permission {
        api_group: "scheduling.volcano.sh",
        resource: "queues",
        verbs: &["list", "watch"],
        scope: PermissionScope::Cluster,
        why: "queue reflector: refuse a job whose Volcano queue does not exist or is closed",
    },
    Permission {
        api_group: "batch.volcano.sh",
        resource: "jobs",
        verbs: &["create", "delete", "get", "list", "watch"],
        scope: PermissionScope::Namespace,
        why: "create/delete ar-<id>; get to check it is ours (after 409, before delete); watch for status",
    },
    Permission {
        api_group: "",
        resource: "pods",
        verbs: &["delete"],
        scope: PermissionScope::Namespace,
        why: "give a deleted job's pods exactly the preemption grace period",
    },
];

/// One kind of request the adapter sends: an RBAC verb on a resource, where, and which code
/// path sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ApiRequest {
    /// RBAC verb (`get`, `list`, `watch`, `create`, `patch`, `delete`).
    pub verb: &'static str,
    /// API group (`""` for the core group).
    pub api_group: &'static str,
    /// Resource (plural).
    pub resource: &'static str,
    /// Cluster-wide path (`/api/v1/pods`) or namespaced (`/api/v1/namespaces/<ns>/pods/…`).
    pub scope: PermissionScope,
    /// The code that sends it.
    pub sent_by: &'static str,
}

const fn request(
    verb: &'static str,
    api_group: &'static str,
    resource: &'static str,
    scope: PermissionScope,
    sent_by: &'static str,
) -> ApiRequest {
    ApiRequest {
        verb,
        api_group,
        resource,
        scope,
        sent_by,
    }
}

/// Every kind of request the adapter sends, one row per (verb, resource, scope). The adapter's
/// tests hold it to the truth from both sides: every request a mock or fake-apiserver test sees
/// must be a row here, and one test drives every code path and must see every row. RBAC is
/// derived from it (`backend/tests/deploy_rbac.rs`), so a new request without a grant — or a
/// grant without a request — fails a test.
pub const API_REQUESTS: &[ApiRequest] = &[
    request("list", "", "nodes", PermissionScope::Cluster, "node reflector"),
    request("watch", "", "nodes", PermissionScope::Cluster, "node reflector"),
    request(
        "patch",
        "",
        "nodes",
        PermissionScope::Cluster,
        "KubeApi::set_node_schedulable",
    ),
    request("list", "", "pods", PermissionScope::Cluster, "pod reflector"),
    request("watch", "", "pods", PermissionScope::Cluster, "pod reflector"),
    request("delete", "", "pods", PermissionScope::Namespace, "KubeApi::delete_job"),
    request(
        "list",
        "scheduling.volcano.sh",
        "queues",
        PermissionScope::Cluster,
        "queue reflector",
    ),
    request(
        "watch",
        "scheduling.volcano.sh",
        "queues",
        PermissionScope::Cluster,
        "queue reflector",
    ),
    request(
        "create",
        "batch.volcano.sh",
        "jobs",
        PermissionScope::Namespace,
        "KubeApi::create_job",
    ),
    request(
        "get",
        "batch.volcano.sh",
        "jobs",
        PermissionScope::Namespace,
        "KubeApi::create_job after 409; KubeApi::delete_job before deleting",
    ),
    request(
        "delete",
        "batch.volcano.sh",
        "jobs",
        PermissionScope::Namespace,
        "KubeApi::delete_job",
    ),
    request(
        "list",
        "batch.volcano.sh",
        "jobs",
        PermissionScope::Namespace,
        "job reflector",
    ),
    request(
        "watch",
        "batch.volcano.sh",
        "jobs",
        PermissionScope::Namespace,
        "job reflector",
    ),
];

/// How long a read waits for a cache that has not synced yet before answering `Unavailable`.
const SYNC_WAIT: Duration = Duration::from_secs(10);
/// How long `/readyz` waits for the apiserver's `/version`.
const REACHABLE_TIMEOUT: Duration = Duration::from_secs(3);
/// Status events buffered per subscriber; a slower one lags and resyncs.
const EVENT_BUFFER: usize = 1024;

/// A Kubernetes cluster with Volcano, reached through kube.
pub struct KubeCluster {
    api: KubeApi,
    nodes: Store<Node>,
    pods: Store<Pod>,
    jobs: Store<VolcanoJob>,
    queues: Store<VolcanoQueue>,
    sync: Arc<StatusSync>,
    health: Arc<Health>,
    tasks: Vec<AbortHandle>,
    sync_wait: Duration,
}

impl Drop for KubeCluster {
    /// The watch tasks serve only this adapter: stop them with it.
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl KubeCluster {
    /// Connects with the kubeconfig (`KUBECONFIG` or `~/.kube/config`) or, inside a pod, the
    /// service account; Anteroom's jobs go to `config.namespace` (`ANTEROOM_NAMESPACE`).
    /// An unreachable apiserver does not stop the start: `/readyz` reports it until it answers.
    /// `installation` is this installation's id (kept in the database), which labels
    /// everything the adapter creates.
    pub async fn connect(
        config: &crate::config::Config,
        installation: String,
    ) -> Result<Arc<dyn Cluster>, ClusterError> {
        let kube_config = kube::Config::infer().await.map_err(|e| {
            ClusterError::Config(format!(
                "no usable kubeconfig or in-cluster service account ({e}); set KUBECONFIG or run in a pod"
            ))
        })?;
        let client = Client::try_from(kube_config)
            .map_err(|e| ClusterError::Config(format!("building the Kubernetes client: {e}")))?;
        match tokio::time::timeout(REACHABLE_TIMEOUT, client.apiserver_version()).await {
            Ok(Ok(info)) => tracing::info!(
                version = %info.git_version,
                namespace = %config.namespace,
                "connected to the Kubernetes apiserver"
            ),
            Ok(Err(error)) => tracing::warn!(%error, "the Kubernetes apiserver did not answer yet"),
            Err(_) => tracing::warn!("the Kubernetes apiserver did not answer within 3 s yet"),
        }
        let settings = manifest::ManifestSettings::from_config(config, installation);
        let cluster: Arc<dyn Cluster> = Self::start(client, settings);
        Ok(cluster)
    }

    /// Starts the reflectors and the status sync on `client` (the tests pass a client of a
    /// fake apiserver). Must be called inside a tokio runtime.
    pub fn start(client: Client, settings: manifest::ManifestSettings) -> Arc<Self> {
        Self::start_with_sync_wait(client, settings, SYNC_WAIT)
    }

    /// [`KubeCluster::start`] with another wait for unsynced caches (tests of a dead apiserver
    /// need not wait the full [`SYNC_WAIT`]).
    pub(crate) fn start_with_sync_wait(
        client: Client,
        settings: manifest::ManifestSettings,
        sync_wait: Duration,
    ) -> Arc<Self> {
        let namespace = settings.namespace.clone();
        let namespace = namespace.as_str();
        let selector = settings.selector();
        let api = KubeApi::new(client.clone(), settings);
        let health = Arc::new(Health::default());
        let (nodes, nodes_writer) = reflector::store::<Node>();
        let (pods, pods_writer) = reflector::store::<Pod>();
        let (jobs, jobs_writer) = reflector::store::<VolcanoJob>();
        let (queues, queues_writer) = reflector::store::<VolcanoQueue>();
        let (sender, _) = broadcast::channel(EVENT_BUFFER);
        let sync = Arc::new(StatusSync {
            namespace: namespace.to_owned(),
            installation: api.settings().installation.clone(),
            jobs: jobs.clone(),
            pods: pods.clone(),
            sender,
            inner: Mutex::new(SyncInner::default()),
        });
        let tasks = vec![
            spawn_reflector(
                "nodes",
                Api::<Node>::all(client.clone()),
                watcher::Config::default(),
                nodes_writer,
                state::slim_node,
                health.clone(),
                |_| {},
            ),
            spawn_reflector(
                "pods",
                Api::<Pod>::all(client.clone()),
                watcher::Config::default(),
                pods_writer,
                state::slim_pod,
                health.clone(),
                {
                    let sync = sync.clone();
                    move |event| sync.on_pod_event(event)
                },
            ),
            spawn_reflector(
                "jobs",
                Api::<VolcanoJob>::namespaced(client.clone(), namespace),
                watcher::Config::default().labels(&selector),
                jobs_writer,
                |job: &mut VolcanoJob| job.metadata.managed_fields = None,
                health.clone(),
                {
                    let sync = sync.clone();
                    move |event| sync.on_job_event(event)
                },
            ),
            spawn_reflector(
                "queues",
                Api::<VolcanoQueue>::all(client),
                watcher::Config::default(),
                queues_writer,
                |queue: &mut VolcanoQueue| queue.metadata.managed_fields = None,
                health.clone(),
                |_| {},
            ),
        ];
        Arc::new(Self {
            api,
            nodes,
            pods,
            jobs,
            queues,
            sync,
            health,
            tasks,
            sync_wait,
        })
    }

    /// Waits (up to [`SYNC_WAIT`]) for a cache's first full list; the error says why the
    /// watch has not listed yet (the last error it met), so "unsynced" and "the apiserver
    /// refuses us" read differently.
    async fn synced<K>(&self, store: &Store<K>, what: &'static str) -> Result<(), ClusterError>
    where
        K: Resource + Clone + 'static,
        K::DynamicType: Eq + Hash + Clone,
    {
        match tokio::time::timeout(self.sync_wait, store.wait_until_ready()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(ClusterError::Unavailable(format!("the {what} watch has stopped"))),
            Err(_) => Err(ClusterError::Unavailable(format!(
                "the {what} cache has not synced yet{}",
                self.health.describe(what)
            ))),
        }
    }

    /// Names of the pods of `ar-<id>` that still need a delete with `grace_seconds`: not
    /// already deleting with at most that grace period.
    fn pods_to_delete(&self, id: JobId, grace_seconds: u32) -> Vec<String> {
        let namespace = self.api.namespace();
        let mut names: Vec<String> = self
            .pods
            .state()
            .iter()
            .filter(|pod| {
                state::pod_job(pod, namespace, self.sync.installation.as_str()).is_some_and(|(job, _)| job == id)
            })
            .filter(|pod| {
                pod.metadata
                    .deletion_grace_period_seconds
                    .is_none_or(|g| g > i64::from(grace_seconds))
            })
            .map(|pod| pod.name_any())
            .collect();
        names.sort();
        names
    }
}

#[async_trait]
impl Cluster for KubeCluster {
    fn kind(&self) -> &'static str {
        "kube"
    }

    async fn nodes(&self) -> Result<Vec<NodeSnapshot>, ClusterError> {
        self.synced(&self.nodes, "nodes").await?;
        self.synced(&self.pods, "pods").await?;
        let nodes = self.nodes.state();
        let pods = self.pods.state();
        Ok(state::node_snapshots(
            nodes.iter().map(|n| n.as_ref()),
            pods.iter().map(|p| p.as_ref()),
        ))
    }

    async fn create_job(&self, spec: &JobSpec) -> Result<(), ClusterError> {
        // A missing or closed queue would leave the job pending forever (or be refused by
        // Volcano's webhook with a less helpful message): say so, naming the queue.
        if self.queues.wait_until_ready().now_or_never().is_some_and(|r| r.is_ok()) {
            match self.queues.get(&ObjectRef::new(&spec.queue)) {
                None => {
                    return Err(ClusterError::Rejected(format!(
                        "the Volcano queue `{}` does not exist in the cluster",
                        spec.queue
                    )));
                }
                Some(queue) => {
                    let state = queue.status.as_ref().and_then(|s| s.state.as_deref());
                    if matches!(state, Some("Closed" | "Closing")) {
                        return Err(ClusterError::Rejected(format!(
                            "the Volcano queue `{}` is {}",
                            spec.queue,
                            state.unwrap_or_default().to_lowercase()
                        )));
                    }
                }
            }
        }
        self.api.create_job(spec).await
    }

    async fn delete_job(&self, id: JobId, grace_seconds: u32) -> Result<(), ClusterError> {
        // Without a synced pod cache the job is still deleted; its pods then get their own
        // grace period from the garbage collector.
        let pods = match self.pods.wait_until_ready().now_or_never() {
            Some(Ok(())) => self.pods_to_delete(id, grace_seconds),
            _ => Vec::new(),
        };
        self.api.delete_job(id, grace_seconds, &pods).await
    }

    async fn set_node_schedulable(&self, node: &str, schedulable: bool) -> Result<(), ClusterError> {
        self.api.set_node_schedulable(node, schedulable).await
    }

    async fn job_statuses(&self) -> Result<Vec<JobStatus>, ClusterError> {
        self.synced(&self.jobs, "jobs").await?;
        self.synced(&self.pods, "pods").await?;
        let pods = state::pods_by_job(&self.pods.state(), self.api.namespace(), &self.sync.installation);
        let now = Utc::now();
        let mut statuses: Vec<JobStatus> = self
            .jobs
            .state()
            .iter()
            .filter_map(|job| {
                let id = job_id_of(&job.name_any())?;
                let own = pods.get(&id).map(Vec::as_slice).unwrap_or_default();
                let status = state::job_status(job, own.iter().map(|p| p.as_ref()), now)?;
                Some(self.sync.remember_start(status))
            })
            .collect();
        statuses.sort_by_key(|s| s.job_id);
        Ok(statuses)
    }

    fn subscribe(&self) -> broadcast::Receiver<JobEvent> {
        self.sync.sender.subscribe()
    }

    async fn is_reachable(&self) -> bool {
        let synced = [
            self.nodes.wait_until_ready().now_or_never(),
            self.pods.wait_until_ready().now_or_never(),
            self.jobs.wait_until_ready().now_or_never(),
            self.queues.wait_until_ready().now_or_never(),
        ]
        .iter()
        .all(|r| matches!(r, Some(Ok(()))));
        synced
            && matches!(
                tokio::time::timeout(REACHABLE_TIMEOUT, self.api.client().apiserver_version()).await,
                Ok(Ok(_))
            )
    }

    async fn queues(&self) -> Result<Vec<ClusterQueue>, ClusterError> {
        self.synced(&self.queues, "queues").await?;
        let mut queues: Vec<ClusterQueue> = self
            .queues
            .state()
            .iter()
            .map(|queue| ClusterQueue {
                name: queue.name_any(),
                open: queue.status.as_ref().and_then(|s| s.state.as_deref()) == Some("Open"),
            })
            .collect();
        queues.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(queues)
    }

    /// Volcano queues are an administrator's: Anteroom neither creates nor changes them (its
    /// RBAC cannot), it only confirms the queue is there.
    async fn sync_queue(&self, queue: &ClusterQueue) -> Result<(), ClusterError> {
        self.synced(&self.queues, "queues").await?;
        if self.queues.get(&ObjectRef::new(&queue.name)).is_some() {
            Ok(())
        } else {
            Err(ClusterError::Rejected(format!(
                "the Volcano queue `{}` does not exist in the cluster; an administrator creates it",
                queue.name
            )))
        }
    }
}

/// Runs one reflector: watch (with kube's default backoff on errors) → slim each object →
/// store, then `on_event` with the event (after the store has applied it).
fn spawn_reflector<K, S, F>(
    what: &'static str,
    api: Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    slim: S,
    health: Arc<Health>,
    on_event: F,
) -> AbortHandle
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Send + Sync,
    S: FnMut(&mut K) + Send + 'static,
    F: Fn(&watcher::Event<K>) + Send + 'static,
{
    let stream = reflector::reflector(writer, watcher(api, config).modify(slim).default_backoff());
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    health.ok(what);
                    on_event(&event);
                }
                Err(error) => {
                    let text = error.to_string();
                    if health.error(what, &text) {
                        tracing::warn!(watch = what, error = %text, "kube watch failed; retrying with backoff");
                    } else {
                        tracing::debug!(watch = what, error = %text, "kube watch failed again");
                    }
                }
            }
        }
    })
    .abort_handle()
}

/// The last error of each watch, for messages that say why a cache is not ready.
#[derive(Default)]
struct Health {
    errors: Mutex<HashMap<&'static str, String>>,
}

impl Health {
    fn ok(&self, what: &'static str) {
        if let Ok(mut errors) = self.errors.lock() {
            errors.remove(what);
        }
    }

    /// Records an error; true when it differs from the previous one (worth a warning).
    fn error(&self, what: &'static str, text: &str) -> bool {
        match self.errors.lock() {
            Ok(mut errors) => errors.insert(what, text.to_owned()).as_deref() != Some(text),
            Err(_) => true,
        }
    }

    fn describe(&self, what: &'static str) -> String {
        self.errors
            .lock()
            .ok()
            .and_then(|errors| errors.get(what).map(|e| format!(": {e}")))
            .unwrap_or_default()
    }
}

/// Turns cache changes into [`JobEvent`]s: what was last reported per job, and which pods
/// belong to which job (so a pod event does not scan every pod of the cluster).
struct StatusSync {
    namespace: String,
    installation: String,
    jobs: Store<VolcanoJob>,
    pods: Store<Pod>,
    sender: broadcast::Sender<JobEvent>,
    inner: Mutex<SyncInner>,
}

/// What was last reported of a job: a change in any of it is an event.
type Reported = (JobPhase, Vec<String>, Option<DateTime<Utc>>, Option<String>);

#[derive(Default)]
struct SyncInner {
    reported: HashMap<JobId, Reported>,
    pods_of: HashMap<JobId, BTreeSet<String>>,
    /// The earliest start seen per job. Pods leave the cache when they are deleted (a finished
    /// job's, or after a restart of Volcano's controller), but when the job started does not
    /// change: it is kept until the job is gone.
    started: HashMap<JobId, DateTime<Utc>>,
}

impl SyncInner {
    /// `status` with its start merged with the earliest start seen before (and remembered).
    fn merge_start(&mut self, mut status: JobStatus) -> JobStatus {
        let earliest = match (self.started.get(&status.job_id).copied(), status.started_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at) = earliest {
            self.started.insert(status.job_id, at);
        }
        status.started_at = earliest;
        status
    }
}

impl StatusSync {
    /// `status` with the earliest start this sync has seen for the job.
    fn remember_start(&self, status: JobStatus) -> JobStatus {
        match self.inner.lock() {
            Ok(mut inner) => inner.merge_start(status),
            Err(_) => status,
        }
    }

    fn on_job_event(&self, event: &watcher::Event<VolcanoJob>) {
        let Ok(mut inner) = self.inner.lock() else { return };
        match event {
            watcher::Event::Apply(job) | watcher::Event::Delete(job) => {
                if let Some(id) = job_id_of(&job.name_any()) {
                    self.refresh(&mut inner, id);
                }
            }
            watcher::Event::InitDone => self.refresh_all(&mut inner),
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
        }
    }

    fn on_pod_event(&self, event: &watcher::Event<Pod>) {
        let Ok(mut inner) = self.inner.lock() else { return };
        match event {
            watcher::Event::Apply(pod) => {
                if let Some((id, _)) = state::pod_job(pod, &self.namespace, &self.installation) {
                    inner.pods_of.entry(id).or_default().insert(pod.name_any());
                    self.refresh(&mut inner, id);
                }
            }
            watcher::Event::Delete(pod) => {
                if let Some((id, _)) = state::pod_job(pod, &self.namespace, &self.installation) {
                    if let Some(names) = inner.pods_of.get_mut(&id) {
                        names.remove(&pod.name_any());
                        if names.is_empty() {
                            inner.pods_of.remove(&id);
                        }
                    }
                    self.refresh(&mut inner, id);
                }
            }
            watcher::Event::InitDone => {
                inner.pods_of.clear();
                for pod in self.pods.state() {
                    if let Some((id, _)) = state::pod_job(&pod, &self.namespace, &self.installation) {
                        inner.pods_of.entry(id).or_default().insert(pod.name_any());
                    }
                }
                self.refresh_all(&mut inner);
            }
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
        }
    }

    fn refresh_all(&self, inner: &mut SyncInner) {
        let mut ids: BTreeSet<JobId> = inner.reported.keys().copied().collect();
        ids.extend(self.jobs.state().iter().filter_map(|j| job_id_of(&j.name_any())));
        for id in ids {
            self.refresh(inner, id);
        }
    }

    /// Recomputes one job's status from the caches and broadcasts what changed. Sending fails
    /// only when nobody subscribes, which is fine.
    fn refresh(&self, inner: &mut SyncInner, id: JobId) {
        let pods: Vec<Arc<Pod>> = inner
            .pods_of
            .get(&id)
            .into_iter()
            .flatten()
            .filter_map(|name| self.pods.get(&ObjectRef::new(name).within(&self.namespace)))
            .collect();
        let job = self
            .jobs
            .get(&ObjectRef::new(&cluster_name(id)).within(&self.namespace));
        match job {
            Some(job) => {
                let Some(status) = state::job_status(&job, pods.iter().map(|p| p.as_ref()), Utc::now()) else {
                    return;
                };
                let status = inner.merge_start(status);
                let key = (
                    status.phase,
                    status.nodes.clone(),
                    status.started_at,
                    status.failure.clone(),
                );
                if inner.reported.get(&id) != Some(&key) {
                    inner.reported.insert(id, key);
                    let _ = self.sender.send(JobEvent::Status(status));
                }
            }
            // Gone once the object and its last pod have disappeared — and only if we ever
            // reported it.
            None if pods.is_empty() && inner.reported.remove(&id).is_some() => {
                inner.started.remove(&id);
                let _ = self.sender.send(JobEvent::Gone {
                    job_id: id,
                    observed_at: Utc::now(),
                });
            }
            // Deleted, but pods still hold capacity: `Gone` comes with the last pod.
            None => {}
        }
    }
}

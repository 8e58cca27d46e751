//! The kube/Volcano adapter (`ANTEROOM_CLUSTER=kube`): Anteroom's jobs become
//! `batch.volcano.sh/v1alpha1` Jobs named `ar-<id>` in `ANTEROOM_JOBS_NAMESPACE`.
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
//! - Queues (`mirror_queues`, on by default): every Anteroom queue is kept as a Volcano Queue
//!   labelled as Anteroom's ([`queue_mirror`]); an administrator's queue is never touched.
//! - The watch tasks belong to the [`KubeCluster`]: dropping it aborts them.
//! - What a person reads about one job — its pods, their events, a log — is read on demand
//!   ([`diagnosis`]): neither events nor full pods are worth a cluster-wide cache.
//!
//! What the adapter sends is [`API_REQUESTS`] (its tests check every request they see against
//! it, and one test drives every code path to see every row); [`REQUIRED_PERMISSIONS`] and
//! `deploy/base/20-rbac.yaml` grant exactly that (`backend/tests/deploy_rbac.rs` compares them).

pub mod api;
pub mod crd;
pub mod diagnosis;
pub mod labels;
pub mod manifest;
pub mod permissions;
pub mod queue_mirror;
pub mod settings;
pub mod state;
mod status_sync;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
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
use self::manifest::{JOB_UID_LABEL, PREEMPTABLE_KEY};
pub use self::permissions::{API_REQUESTS, ApiRequest, Permission, PermissionScope, REQUIRED_PERMISSIONS};
use self::status_sync::{StatusSync, SyncInner};
use super::{
    Cluster, ClusterError, ClusterQueue, JobEvent, JobSpec, JobStatus, LogRequest, LogStream, cluster_name,
    is_same_job, job_id_of,
};
use crate::cluster::NotebookTarget;
use crate::prequeue::{JobId, NodeSnapshot};
use anteroom_shared::api::pods::JobPods;
use anteroom_shared::scheduling::JobKind;

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
    /// service account; Anteroom's jobs go to `config.jobs_namespace` (`ANTEROOM_JOBS_NAMESPACE`).
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
                jobs_namespace = %config.jobs_namespace,
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
    /// The pods in the cache of the job with `cluster_uid` ([`is_same_job`]): how many, and
    /// those whose `volcano.sh/preemptable` label is not already `preemptable`, by name.
    fn pods_to_mark(&self, id: JobId, cluster_uid: &str, preemptable: bool) -> (usize, Vec<String>) {
        let namespace = self.api.namespace();
        let value = preemptable.to_string();
        let pods: Vec<_> = self
            .pods
            .state()
            .into_iter()
            .filter(|pod| {
                state::pod_job(pod, namespace, self.sync.installation.as_str()).is_some_and(|(job, _)| job == id)
            })
            .filter(|pod| is_same_job(cluster_uid, pod.labels().get(JOB_UID_LABEL).map(String::as_str)))
            .collect();
        let mut names: Vec<String> = pods
            .iter()
            .filter(|pod| pod.labels().get(PREEMPTABLE_KEY) != Some(&value))
            .map(|pod| pod.name_any())
            .collect();
        names.sort();
        (pods.len(), names)
    }

    fn pods_to_delete(&self, id: JobId, cluster_uid: &str, grace_seconds: u32) -> Vec<String> {
        let namespace = self.api.namespace();
        let mut names: Vec<String> = self
            .pods
            .state()
            .iter()
            .filter(|pod| {
                state::pod_job(pod, namespace, self.sync.installation.as_str()).is_some_and(|(job, _)| job == id)
            })
            .filter(|pod| is_same_job(cluster_uid, pod.labels().get(JOB_UID_LABEL).map(String::as_str)))
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
        // Volcano's webhook with a less helpful message): say so, naming the queue. An Elastic
        // job's own queue is checked too (closed: refused, as any job of it), though it runs in
        // the Elastic jobs' queue while queues are mirrored.
        let mirror = self.api.settings().mirror_queues;
        let target = crate::cluster::cluster_queue_of(&spec.queue, spec.schedule_type, mirror);
        if self.queues.wait_until_ready().now_or_never().is_some_and(|r| r.is_ok()) {
            let Some(own) = self.queues.get(&ObjectRef::new(&spec.queue)) else {
                return Err(ClusterError::Rejected(format!(
                    "the Volcano queue `{}` does not exist in the cluster",
                    spec.queue
                )));
            };
            let state = own.status.as_ref().and_then(|s| s.state.as_deref());
            if matches!(state, Some("Closed" | "Closing")) {
                return Err(ClusterError::Rejected(format!(
                    "the Volcano queue `{}` is {}",
                    spec.queue,
                    state.unwrap_or_default().to_lowercase()
                )));
            }
            // The Elastic jobs' queue is Anteroom's to make (deleted by hand: made again).
            if target != spec.queue && self.queues.get(&ObjectRef::new(target)).is_none() {
                self.api
                    .create_missing_queue(&ClusterQueue::new(crate::cluster::ELASTIC_QUEUE, true))
                    .await?;
            }
        }
        self.api.create_job(spec).await
    }

    async fn delete_job(&self, id: JobId, cluster_uid: &str, grace_seconds: u32) -> Result<(), ClusterError> {
        // Without a synced pod cache the job is still deleted; its pods then get their own
        // grace period from the garbage collector.
        let pods = match self.pods.wait_until_ready().now_or_never() {
            Some(Ok(())) => self.pods_to_delete(id, cluster_uid, grace_seconds),
            _ => Vec::new(),
        };
        self.api.delete_job(id, cluster_uid, grace_seconds, &pods).await
    }

    async fn set_preemptable(&self, id: JobId, cluster_uid: &str, preemptable: bool) -> Result<(), ClusterError> {
        // Without a synced pod cache nothing is known to patch: unavailable, so the watcher
        // asks again next round rather than recording what was never told.
        self.synced(&self.pods, "pods").await?;
        let (known, pods) = self.pods_to_mark(id, cluster_uid, preemptable);
        if known == 0 && preemptable {
            // Opening pods not seen yet would be recorded as done while nothing was: ask again
            // next round. (Protecting none is done: new pods come from a template that says so.)
            return Err(ClusterError::Unavailable(format!(
                "no pod of job {id} is in the pod cache yet"
            )));
        }
        self.api.set_pods_preemptable(&pods, preemptable).await
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

    /// Pods and events are read from the apiserver ([`KubeApi::job_pods`]); the Volcano Job
    /// cache only says, when the job is there and this one (uid), which uid names its PodGroup
    /// and in which order its tasks come. Waiting for that cache rather than reading it
    /// unsynced: an unsynced cache would silently drop the Job's and PodGroup's events.
    async fn pods(&self, id: JobId, cluster_uid: &str) -> Result<JobPods, ClusterError> {
        self.synced(&self.jobs, "jobs").await?;
        let known = self
            .jobs
            .get(&ObjectRef::new(&cluster_name(id)).within(self.api.namespace()))
            .filter(|job| is_same_job(cluster_uid, job.labels().get(JOB_UID_LABEL).map(String::as_str)))
            .map(|job| diagnosis::KnownJob {
                uid: job.metadata.uid.clone(),
                tasks: job.spec.tasks.iter().map(|t| t.name.clone()).collect(),
            });
        self.api.job_pods(id, cluster_uid, known.as_ref()).await
    }

    async fn logs(&self, id: JobId, cluster_uid: &str, request: &LogRequest) -> Result<String, ClusterError> {
        self.api.pod_log(id, cluster_uid, request).await
    }

    async fn follow_logs(&self, id: JobId, cluster_uid: &str, request: &LogRequest) -> Result<LogStream, ClusterError> {
        self.api.follow_pod_log(id, cluster_uid, request).await
    }

    async fn log_stream(&self, id: JobId, cluster_uid: &str, request: &LogRequest) -> Result<LogStream, ClusterError> {
        self.api.pod_log_stream(id, cluster_uid, request).await
    }

    /// The notebook pod's name under the job's headless service (Volcano's `svc` plugin, which
    /// the manifest turns on for notebooks): `ar-<id>-<task>-0.ar-<id>.<namespace>.svc`.
    fn notebook_target(&self, id: JobId, kind: JobKind, task: &str) -> NotebookTarget {
        let job = crate::cluster::cluster_name(id);
        NotebookTarget::Http(format!(
            "http://{job}-{task}-0.{job}.{}.svc:{}",
            self.api.namespace(),
            crate::cluster::notebook_port(kind)
        ))
    }

    async fn queues(&self) -> Result<Vec<ClusterQueue>, ClusterError> {
        self.synced(&self.queues, "queues").await?;
        let mut queues: Vec<ClusterQueue> = self
            .queues
            .state()
            .iter()
            .map(|queue| queue_mirror::cluster_queue(queue))
            .collect();
        queues.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(queues)
    }

    /// With `mirror_queues`, the Volcano Queue mirroring `queue` is created or brought up to
    /// date ([`KubeApi::mirror_queue`]; nothing is sent when the cache already shows it as
    /// wanted), and a Volcano queue of that name that is not Anteroom's is left as it is.
    /// Without, Volcano queues are an administrator's: Anteroom only confirms the queue is there.
    async fn sync_queue(&self, queue: &ClusterQueue) -> Result<(), ClusterError> {
        if self.api.settings().mirror_queues {
            let installation = &self.api.settings().installation;
            let wanted = queue_mirror::volcano_queue(queue, installation);
            let cached = match self.queues.wait_until_ready().now_or_never() {
                Some(Ok(())) => self.queues.get(&ObjectRef::new(&queue.name)),
                _ => None,
            };
            if cached.is_some_and(|c| queue_mirror::change(&wanted, Some(&c), installation).is_up_to_date()) {
                return Ok(());
            }
            let done = self.api.mirror_queue(queue).await?;
            if done == queue_mirror::Mirrored::NotOurs {
                tracing::info!(
                    queue = %queue.name,
                    "a Volcano queue of this name exists without Anteroom's labels: left as it is, not mirrored"
                );
            }
            return Ok(());
        }
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

    /// With `mirror_queues`, creates the mirrors of the queues the queue cache does not have,
    /// parents first; every queue is tried, and the first failure is the answer (the caller
    /// tries again later).
    async fn create_missing_queues(&self, queues: &[ClusterQueue]) -> Result<(), ClusterError> {
        if !self.api.settings().mirror_queues {
            return Ok(());
        }
        self.synced(&self.queues, "queues").await?;
        let mut first_error = None;
        let elastic = ClusterQueue::new(crate::cluster::ELASTIC_QUEUE, true);
        for queue in queues.iter().chain(std::iter::once(&elastic)) {
            if self.queues.get(&ObjectRef::new(&queue.name)).is_some() {
                continue;
            }
            match self.api.create_missing_queue(queue).await {
                Ok(true) => tracing::info!(queue = %queue.name, "created the Volcano queue mirroring this queue"),
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(queue = %queue.name, %error, "could not create the Volcano queue mirroring this queue");
                    first_error.get_or_insert(error);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// With `mirror_queues`, deletes the Volcano queue if it is a mirror of this installation
    /// ([`KubeApi::delete_mirrored_queue`]); never an administrator's.
    async fn remove_queue(&self, name: &str) -> Result<(), ClusterError> {
        if self.api.settings().mirror_queues {
            self.api.delete_mirrored_queue(name).await?;
        }
        Ok(())
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

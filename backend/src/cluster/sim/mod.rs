//! The embedded simulated cluster (`ANTEROOM_CLUSTER=sim`, the default): Volcano-like enough
//! for the watcher's decisions to matter (see [`state`] for the rules), with its state in the
//! same database as everything else, so a restart — even `kill -9` — resumes it.
//!
//! Every operation runs under one lock: it reads the clock, changes the in-memory [`SimState`]
//! in place, writes what changed to the store in one transaction, and only after the commit do
//! the events go out (still under the lock, so they go out in the order the changes were made)
//! and the nodes' free capacity is published for [`Cluster::nodes`]. From the moment a change
//! starts until its commit, memory is "in doubt": a failed write, a panic in the rules or a
//! caller that drops the future mid-write leaves it so, and the next operation reloads it from
//! the store first, so memory never drifts from the database in either direction. (Changing a
//! copy instead cost a copy of every job's entry per change: issue 25.)
//!
//! [`Cluster::nodes`] — read by every submission — does not take the lock: it reads the copy
//! published after the last commit, so it never waits behind a write, and never shows one
//! that may not have committed.
//!
//! The background ticker runs each step as a task of its own: a step that fails or panics is
//! logged and the ticker carries on.

pub mod diagnosis;
pub mod nodes;
pub mod runtime;
pub mod state;
pub mod store;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sea_orm::DatabaseConnection;
use tokio::sync::{Mutex, MutexGuard, Notify, broadcast};

use self::state::{Changes, SimState, Timing};
use super::clock::Clock;
use super::{Cluster, ClusterError, ClusterQueue, JobEvent, JobSpec, JobStatus, LogRequest, LogStream, NotebookTarget};
use crate::prequeue::{JobId, NodeSnapshot};
use anteroom_shared::api::pods::JobPods;
use anteroom_shared::scheduling::JobKind;
use axum::body::Bytes;
use futures::StreamExt;

/// How often the background task advances the simulation when nothing wakes it.
const TICK: Duration = Duration::from_millis(250);

/// The longest the ticker waits after failing steps (it doubles from [`TICK`] up to this), so a
/// store that is down is retried without flooding the log.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// How often a followed simulated log is looked at again.
const FOLLOW_POLL: Duration = Duration::from_secs(1);

/// Where a followed log is.
struct FollowState {
    cluster: Arc<SimulatedCluster>,
    id: JobId,
    cluster_uid: String,
    pod: String,
    /// The next line to send.
    next: u64,
    /// Bytes it may still send.
    left: u64,
    /// The pod wrote its last line.
    ended: bool,
}

/// Settings of the simulation (from `ANTEROOM_SIM_*`).
#[derive(Debug, Clone)]
pub struct SimSettings {
    /// Node file; `None` for the default cluster.
    pub nodes_file: Option<PathBuf>,
    /// Runtimes and termination grace.
    pub timing: Timing,
    /// Where notebooks answer (`sim_notebook_upstream`); `None`: a page saying so.
    pub notebook_upstream: Option<String>,
}

impl SimSettings {
    /// From the server configuration.
    pub fn from_config(config: &crate::config::Config) -> Result<Self, ClusterError> {
        Ok(SimSettings {
            nodes_file: config.sim_nodes.clone(),
            timing: Timing {
                default_runtime_seconds: config.sim_default_runtime_seconds,
                termination_grace_seconds: config.sim_termination_grace_seconds,
                finished_retention_seconds: config.sim_finished_retention_seconds,
            },
            notebook_upstream: config.sim_notebook_upstream.clone(),
        })
    }
}

/// The simulated cluster.
pub struct SimulatedCluster {
    db: DatabaseConnection,
    inner: Mutex<Inner>,
    /// The nodes as of the last commit (see the module's doc).
    published_nodes: std::sync::RwLock<Arc<Vec<NodeSnapshot>>>,
    timing: Timing,
    clock: Arc<dyn Clock>,
    events: broadcast::Sender<JobEvent>,
    wake: Arc<Notify>,
    /// Itself, for streams that outlive a call (a followed log).
    self_ref: Weak<SimulatedCluster>,
    /// Where its notebooks answer (`sim_notebook_upstream`).
    notebook_upstream: Option<String>,
    /// Tests: how long a create's answer waits after the job exists (milliseconds), so the
    /// cluster's events about it come before the caller hears it was created.
    create_answer_delay_ms: std::sync::atomic::AtomicU64,
}

/// What the lock guards.
struct Inner {
    /// The state: the committed one unless `in_doubt`.
    state: SimState,
    /// A write was interrupted after it may have committed: reload before trusting `state`.
    in_doubt: bool,
}

impl SimulatedCluster {
    /// Opens the simulation stored in `db` (migrations applied), bringing its nodes in line with
    /// the settings: nodes are added, updated or removed; a cordon survives a restart.
    pub async fn open(
        db: DatabaseConnection,
        settings: SimSettings,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, ClusterError> {
        let wanted = nodes::load(settings.nodes_file.as_deref())?;
        let mut state = store::load(&db, settings.timing.default_runtime_seconds).await?;
        let mut changes = Changes::default();
        store::reconcile_nodes(&mut state, wanted, &mut changes);
        store::save(&db, &state, &changes).await?;
        let nodes = Arc::new(state.node_snapshots());
        Ok(Arc::new_cyclic(|self_ref| Self {
            db,
            published_nodes: std::sync::RwLock::new(nodes),
            inner: Mutex::new(Inner { state, in_doubt: false }),
            timing: settings.timing,
            clock,
            events: broadcast::channel(4096).0,
            wake: Arc::new(Notify::new()),
            self_ref: self_ref.clone(),
            notebook_upstream: settings.notebook_upstream,
            create_answer_delay_ms: std::sync::atomic::AtomicU64::new(0),
        }))
    }

    /// Tests: a create answers `by` after the job exists, as a slow API server's answer would,
    /// so the cluster's first events about it come before the activation path's `Pending`
    /// write (the race status sync must survive).
    #[doc(hidden)]
    pub fn delay_create_answers(&self, by: std::time::Duration) {
        let millis = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.create_answer_delay_ms
            .store(millis, std::sync::atomic::Ordering::Relaxed);
    }

    /// Starts the background task that advances the simulation every 250 ms, and at once after
    /// a create or delete. It ends when the cluster is dropped.
    ///
    /// Each step runs as a task of its own, so a step that panics is a logged error, not the
    /// end of the ticker (which would freeze the simulation until a restart, and again after it
    /// if the cause is in the stored state). Failing steps back off up to `MAX_BACKOFF`.
    pub fn spawn_ticker(self: &Arc<Self>) {
        let weak: Weak<Self> = Arc::downgrade(self);
        let wake = self.wake.clone();
        tokio::spawn(async move {
            let mut wait = TICK;
            loop {
                let notified = wake.notified();
                let Some(sim) = weak.upgrade() else { break };
                match tokio::spawn(async move { sim.step().await }).await {
                    Ok(Ok(())) => wait = TICK,
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, retry_ms = wait.as_millis() as u64, "simulated cluster step failed");
                        wait = (wait * 2).min(MAX_BACKOFF);
                    }
                    Err(e) if e.is_panic() => {
                        tracing::error!(error = %e, retry_ms = wait.as_millis() as u64, "simulated cluster step panicked");
                        wait = (wait * 2).min(MAX_BACKOFF);
                    }
                    // Cancelled: the runtime is shutting down.
                    Err(_) => break,
                }
                tokio::select! {
                    _ = notified => {}
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        });
    }

    /// What the cluster was asked to run for a job still in it, as it stands now (what its pods
    /// would carry): for tests, and for pages that show what a job got.
    pub async fn spec_of(&self, id: JobId) -> Result<Option<JobSpec>, ClusterError> {
        Ok(self.lock().await?.state.jobs.get(&id).map(|job| job.spec.clone()))
    }

    /// Job `id` as the cluster has it — in memory while it runs, from its row once it ended
    /// (until purged) — with the nodes and the instant it was read at; `None` when the cluster
    /// has no job of that id and uid.
    async fn job_view(
        &self,
        id: JobId,
        cluster_uid: &str,
    ) -> Result<Option<(state::SimJob, Vec<NodeSnapshot>, DateTime<Utc>)>, ClusterError> {
        let inner = self.lock().await?;
        let now = self.clock.now();
        let nodes = inner.state.node_snapshots();
        let job = match (inner.state.jobs.get(&id), inner.state.finished.contains_key(&id)) {
            (Some(job), _) => Some(state::SimJob::clone(job)),
            // Read under the lock, so the row is not half-way through a change.
            (None, true) => store::load_job(&self.db, id).await?,
            (None, false) => None,
        };
        Ok(job
            .filter(|job| super::is_same_job(cluster_uid, job.uid()))
            .map(|job| (job, nodes, now)))
    }

    /// The log of `pod` of job `id` at the clock's now; `None` while the pod waits to be
    /// placed (it exists, and has written nothing yet).
    async fn pod_log(
        &self,
        id: JobId,
        cluster_uid: &str,
        pod: &str,
    ) -> Result<(Option<diagnosis::PodLog>, DateTime<Utc>), ClusterError> {
        let not_found = || ClusterError::PodNotFound(pod.to_owned());
        let (job, _, now) = self.job_view(id, cluster_uid).await?.ok_or_else(not_found)?;
        if job.phase == state::SimPhase::Pending {
            let exists = job
                .spec
                .tasks
                .iter()
                .any(|t| (0..t.replicas).any(|r| anteroom_shared::api::pods::pod_name(id, &t.name, r) == pod));
            return if exists { Ok((None, now)) } else { Err(not_found()) };
        }
        let log = diagnosis::PodLog::of(&job, pod, self.timing.default_runtime_seconds).ok_or_else(not_found)?;
        Ok((Some(log), now))
    }

    /// Advances the simulation to the clock's now (tests call this directly).
    pub async fn step(&self) -> Result<(), ClusterError> {
        let timing = self.timing;
        self.apply(|state, now, changes| state.step(now, timing, changes)).await
    }

    /// The lock, with a state that is the committed one: reloaded from the store if a write
    /// was interrupted after it may have committed.
    async fn lock(&self) -> Result<MutexGuard<'_, Inner>, ClusterError> {
        let mut inner = self.inner.lock().await;
        if inner.in_doubt {
            inner.state = store::load(&self.db, self.timing.default_runtime_seconds).await?;
            inner.in_doubt = false;
            self.publish_nodes(&inner.state);
            tracing::info!("simulated cluster reloaded from its store after an interrupted write");
        }
        Ok(inner)
    }

    /// Makes `state`'s nodes what [`Cluster::nodes`] answers.
    fn publish_nodes(&self, state: &SimState) {
        let nodes = Arc::new(state.node_snapshots());
        *self
            .published_nodes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = nodes;
    }

    /// Runs one change under the lock with the clock read there: in place, persisted, and only
    /// then published and announced. Until the commit the state is in doubt, so a panic, a
    /// failed write or a dropped future makes the next operation reload it.
    async fn apply<T>(
        &self,
        f: impl FnOnce(&mut SimState, DateTime<Utc>, &mut Changes) -> T,
    ) -> Result<T, ClusterError> {
        let mut inner = self.lock().await?;
        // Read under the lock: a change that waited for it must not be dated before the change
        // that held it.
        let now = self.clock.now();
        let mut changes = Changes::default();
        inner.in_doubt = true;
        let out = f(&mut inner.state, now, &mut changes);
        if changes.is_empty() {
            // Nothing to persist: memory differs from the store at most in what is not stored
            // (a step's `placement_settled`). A change that announces without persisting would
            // be a bug in the rules.
            debug_assert!(changes.events.is_empty(), "events without changes: {changes:?}");
            inner.in_doubt = false;
            return Ok(out);
        }
        // If this future is dropped (or the commit fails) from here on, whether the database
        // has the change is unknown: `in_doubt` stays, and the next operation reloads.
        store::save(&self.db, &inner.state, &changes).await?;
        inner.in_doubt = false;
        self.publish_nodes(&inner.state);
        for event in changes.events {
            // No receiver is fine: status sync resyncs from `job_statuses`.
            let _ = self.events.send(event);
        }
        Ok(out)
    }
}

#[async_trait]
impl Cluster for SimulatedCluster {
    fn kind(&self) -> &'static str {
        "sim"
    }

    /// The copy published after the last commit: no lock, no wait behind a write.
    async fn nodes(&self) -> Result<Vec<NodeSnapshot>, ClusterError> {
        let nodes = self
            .published_nodes
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        Ok(Vec::clone(&nodes))
    }

    async fn create_job(&self, spec: &JobSpec) -> Result<(), ClusterError> {
        self.create_jobs(std::slice::from_ref(spec))
            .await
            .pop()
            .expect("one answer per spec")
    }

    /// All of them in one change, so in one transaction of the store: creates that arrive
    /// together (the submissions of a busy minute) commit together instead of one after the
    /// other under the lock.
    async fn create_jobs(&self, specs: &[JobSpec]) -> Vec<Result<(), ClusterError>> {
        let created = self
            .apply(|state, now, changes| {
                specs
                    .iter()
                    .map(|spec| state.create(spec, now, changes))
                    .collect::<Vec<_>>()
            })
            .await;
        let created = match created {
            Ok(created) => created,
            // One failed write fails them all; the error is told to each.
            Err(e) => {
                let message = e.to_string();
                return specs
                    .iter()
                    .map(|_| Err(ClusterError::Unavailable(message.clone())))
                    .collect();
            }
        };
        self.wake.notify_one();
        let delay = self.create_answer_delay_ms.load(std::sync::atomic::Ordering::Relaxed);
        if delay > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
        }
        specs
            .iter()
            .zip(created)
            .map(|(spec, created)| match created.map_err(ClusterError::Rejected)? {
                state::Created::NameTaken { found } => Err(ClusterError::NameTakenByAnotherJob {
                    object: spec.cluster_name(),
                    found,
                    expected: spec.cluster_uid.clone(),
                }),
                state::Created::New | state::Created::AlreadyExists => Ok(()),
            })
            .collect()
    }

    async fn delete_job(&self, id: JobId, cluster_uid: &str, grace_seconds: u32) -> Result<(), ClusterError> {
        let timing = self.timing;
        self.apply(|state, now, changes| state.delete(id, cluster_uid, grace_seconds, now, timing, changes))
            .await?;
        self.wake.notify_one();
        Ok(())
    }

    async fn set_preemptable(&self, id: JobId, cluster_uid: &str, preemptable: bool) -> Result<(), ClusterError> {
        self.apply(|state, _, changes| state.set_preemptable(id, cluster_uid, preemptable, changes))
            .await
    }

    async fn set_node_schedulable(&self, node: &str, schedulable: bool) -> Result<(), ClusterError> {
        let found = self
            .apply(|state, _, changes| state.set_schedulable(node, schedulable, changes))
            .await?;
        if !found {
            return Err(ClusterError::NodeNotFound(node.to_string()));
        }
        self.wake.notify_one();
        Ok(())
    }

    /// Finished jobs are listed until the retention purge takes them out of the cluster.
    async fn job_statuses(&self) -> Result<Vec<JobStatus>, ClusterError> {
        let inner = self.lock().await?;
        let now = self.clock.now();
        Ok(inner.state.statuses(now))
    }

    fn subscribe(&self) -> broadcast::Receiver<JobEvent> {
        self.events.subscribe()
    }

    async fn is_reachable(&self) -> bool {
        true
    }

    async fn pods(&self, id: JobId, cluster_uid: &str) -> Result<JobPods, ClusterError> {
        let Some((job, nodes, now)) = self.job_view(id, cluster_uid).await? else {
            return Ok(JobPods::default());
        };
        let runtime = self.timing.default_runtime_seconds;
        Ok(JobPods {
            pods: diagnosis::pods(&job, &nodes, now, runtime),
            events: diagnosis::events(&job, &nodes, now, runtime),
        })
    }

    async fn logs(&self, id: JobId, cluster_uid: &str, request: &LogRequest) -> Result<String, ClusterError> {
        let (log, now) = self.pod_log(id, cluster_uid, &request.pod).await?;
        Ok(log
            .map(|log| log.text(0, now, request.tail_lines, request.limit_bytes))
            .unwrap_or_default())
    }

    /// Polls the job once a second and sends the lines written since, until the pod ended or
    /// `limit_bytes` were sent; a pod still waiting to be placed is waited for.
    async fn follow_logs(&self, id: JobId, cluster_uid: &str, request: &LogRequest) -> Result<LogStream, ClusterError> {
        let (log, now) = self.pod_log(id, cluster_uid, &request.pod).await?;
        let first = log
            .as_ref()
            .map(|log| log.text(0, now, request.tail_lines, request.limit_bytes))
            .unwrap_or_default();
        let sent = first.len() as u64;
        let next = log.as_ref().map_or(0, |log| log.line_count(now));
        let cluster = self
            .self_ref
            .upgrade()
            .ok_or_else(|| ClusterError::Unavailable("shutting down".into()))?;
        let follow = FollowState {
            cluster,
            id,
            cluster_uid: cluster_uid.to_owned(),
            pod: request.pod.clone(),
            next,
            left: request.limit_bytes.saturating_sub(sent),
            ended: log.is_some_and(|log| log.ended(now)),
        };
        let first = futures::stream::once(async move { Ok(Bytes::from(first)) });
        let rest = futures::stream::unfold(follow, |mut f| async move {
            loop {
                if f.ended || f.left == 0 {
                    return None;
                }
                tokio::time::sleep(FOLLOW_POLL).await;
                let (log, now) = match f.cluster.pod_log(f.id, &f.cluster_uid, &f.pod).await {
                    Ok((Some(log), now)) => (log, now),
                    // Not placed yet: nothing written, keep waiting.
                    Ok((None, _)) => continue,
                    // Gone (deleted and purged): the log ends.
                    Err(ClusterError::PodNotFound(_)) => return None,
                    Err(e) => return Some((Err(e), FollowState { ended: true, ..f })),
                };
                let count = log.line_count(now);
                let (text, next) = log.next_lines(f.next, now, f.left);
                if next < count {
                    // The next line does not fit in what is left: this chunk is the last.
                    f.left = 0;
                }
                f.ended = log.ended(now) && next == count;
                f.next = next;
                if text.is_empty() {
                    continue;
                }
                f.left = f.left.saturating_sub(text.len() as u64);
                return Some((Ok(Bytes::from(text)), f));
            }
        });
        Ok(Box::pin(first.chain(rest)))
    }

    /// The upstream the settings name (`sim_notebook_upstream`), else [`NotebookTarget::Simulated`].
    fn notebook_target(&self, _id: JobId, _kind: JobKind, _task: &str) -> NotebookTarget {
        match &self.notebook_upstream {
            Some(base) => NotebookTarget::Http(base.clone()),
            None => NotebookTarget::Simulated,
        }
    }

    async fn queues(&self) -> Result<Vec<ClusterQueue>, ClusterError> {
        Ok(self.lock().await?.state.cluster_queues())
    }

    async fn sync_queue(&self, queue: &ClusterQueue) -> Result<(), ClusterError> {
        self.apply(|state, _, changes| state.sync_queue(queue, changes)).await?;
        // An opened queue may let pending jobs start.
        self.wake.notify_one();
        Ok(())
    }

    /// At start: the simulated cluster keeps only each queue's name and state, so the tree
    /// (parents, capabilities, weights) it honours is told again, as it stands.
    async fn create_missing_queues(&self, queues: &[ClusterQueue]) -> Result<(), ClusterError> {
        for queue in queues {
            self.sync_queue(queue).await?;
        }
        Ok(())
    }

    async fn remove_queue(&self, name: &str) -> Result<(), ClusterError> {
        self.apply(|state, _, changes| state.remove_queue(name, changes)).await
    }
}

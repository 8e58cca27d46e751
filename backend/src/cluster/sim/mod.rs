//! The embedded simulated cluster (`ANTEROOM_CLUSTER=sim`, the default): Volcano-like enough
//! for the watcher's decisions to matter (see [`state`] for the rules), with its state in the
//! same database as everything else, so a restart — even `kill -9` — resumes it.
//!
//! Every operation applies to the in-memory [`SimState`] under one lock and is written through
//! to the store in one transaction before it returns; events are broadcast after the commit. If
//! a write fails, the state is reloaded from the store, so memory never runs ahead of it.

pub mod nodes;
pub mod state;
pub mod store;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use sea_orm::DatabaseConnection;
use tokio::sync::{Mutex, Notify, broadcast};

use self::state::{Changes, SimState, Timing};
use super::clock::Clock;
use super::{Cluster, ClusterError, ClusterQueue, JobEvent, JobSpec, JobStatus};
use crate::prequeue::{JobId, NodeSnapshot};

/// How often the background task advances the simulation when nothing wakes it.
const TICK: Duration = Duration::from_millis(250);

/// Settings of the simulation (from `ANTEROOM_SIM_*`).
#[derive(Debug, Clone)]
pub struct SimSettings {
    /// Node file; `None` for the default cluster.
    pub nodes_file: Option<PathBuf>,
    /// Runtimes and termination grace.
    pub timing: Timing,
}

impl SimSettings {
    /// From the server configuration.
    pub fn from_config(config: &crate::config::Config) -> Result<Self, ClusterError> {
        Ok(SimSettings {
            nodes_file: config.sim_nodes.clone(),
            timing: Timing {
                default_runtime_seconds: config.sim_default_runtime_seconds,
                termination_grace_seconds: config.sim_termination_grace_seconds,
            },
        })
    }
}

/// The simulated cluster.
pub struct SimulatedCluster {
    db: DatabaseConnection,
    state: Mutex<SimState>,
    timing: Timing,
    clock: Arc<dyn Clock>,
    events: broadcast::Sender<JobEvent>,
    wake: Arc<Notify>,
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
        let mut state = store::load(&db).await?;
        let mut changes = Changes::default();
        store::reconcile_nodes(&mut state, wanted, &mut changes);
        store::save(&db, &state, &changes).await?;
        Ok(Arc::new(Self {
            db,
            state: Mutex::new(state),
            timing: settings.timing,
            clock,
            events: broadcast::channel(4096).0,
            wake: Arc::new(Notify::new()),
        }))
    }

    /// Starts the background task that advances the simulation every 250 ms, and at once after
    /// a create or delete. It ends when the cluster is dropped.
    pub fn spawn_ticker(self: &Arc<Self>) {
        let weak: Weak<Self> = Arc::downgrade(self);
        let wake = self.wake.clone();
        tokio::spawn(async move {
            loop {
                let notified = wake.notified();
                let Some(sim) = weak.upgrade() else { break };
                if let Err(e) = sim.step().await {
                    tracing::warn!(error = %e, "simulated cluster step failed");
                }
                drop(sim);
                tokio::select! {
                    _ = notified => {}
                    _ = tokio::time::sleep(TICK) => {}
                }
            }
        });
    }

    /// Advances the simulation to the clock's now (tests call this directly).
    pub async fn step(&self) -> Result<(), ClusterError> {
        let now = self.clock.now();
        self.apply(|state, changes| state.step(now, self.timing, changes)).await
    }

    /// Runs one mutation under the lock, persists it, then announces it.
    async fn apply<T>(&self, f: impl FnOnce(&mut SimState, &mut Changes) -> T) -> Result<T, ClusterError> {
        let mut state = self.state.lock().await;
        let mut changes = Changes::default();
        let out = f(&mut state, &mut changes);
        if let Err(e) = store::save(&self.db, &state, &changes).await {
            // Memory must not run ahead of the store: go back to what was committed.
            match store::load(&self.db).await {
                Ok(reloaded) => *state = reloaded,
                Err(reload) => tracing::error!(error = %reload, "reloading the simulated cluster failed"),
            }
            return Err(e.into());
        }
        drop(state);
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

    async fn nodes(&self) -> Result<Vec<NodeSnapshot>, ClusterError> {
        Ok(self.state.lock().await.node_snapshots())
    }

    async fn create_job(&self, spec: &JobSpec) -> Result<(), ClusterError> {
        let now = self.clock.now();
        self.apply(|state, changes| state.create(spec, now, changes)).await?;
        self.wake.notify_one();
        Ok(())
    }

    async fn delete_job(&self, id: JobId, grace_seconds: u32) -> Result<(), ClusterError> {
        let now = self.clock.now();
        let timing = self.timing;
        self.apply(|state, changes| state.delete(id, grace_seconds, now, timing, changes))
            .await?;
        self.wake.notify_one();
        Ok(())
    }

    async fn set_node_schedulable(&self, node: &str, schedulable: bool) -> Result<(), ClusterError> {
        let found = self
            .apply(|state, changes| state.set_schedulable(node, schedulable, changes))
            .await?;
        if !found {
            return Err(ClusterError::NodeNotFound(node.to_string()));
        }
        self.wake.notify_one();
        Ok(())
    }

    async fn job_statuses(&self) -> Result<Vec<JobStatus>, ClusterError> {
        let now = self.clock.now();
        Ok(self.state.lock().await.jobs.values().map(|j| j.status(now)).collect())
    }

    fn subscribe(&self) -> broadcast::Receiver<JobEvent> {
        self.events.subscribe()
    }

    async fn is_reachable(&self) -> bool {
        true
    }

    // Minimal placeholders so the trait compiles here; the simulated cluster's own queues are
    // built on the sim branch.
    async fn queues(&self) -> Result<Vec<ClusterQueue>, ClusterError> {
        Ok(vec![ClusterQueue {
            name: "default".to_owned(),
            open: true,
        }])
    }

    async fn sync_queue(&self, _queue: &ClusterQueue) -> Result<(), ClusterError> {
        Ok(())
    }
}

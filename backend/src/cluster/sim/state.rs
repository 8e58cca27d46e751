//! The simulation itself, pure: nodes, jobs and their pods, and what happens when time passes.
//! No I/O and no clock — `now` is an argument — so every rule is unit-tested in microseconds;
//! [`super::SimulatedCluster`] persists the changes each call reports.
//!
//! Volcano-like rules:
//! - a job is created `Pending`; its pods are placed all together or not at all (gang), best
//!   fit, on the nodes' *free* capacity, honouring readiness, cordons, taints and pinned nodes;
//! - pending jobs are considered in creation order, first-in-first-out per queue: when the head
//!   of a queue cannot be placed, the later jobs of that queue wait behind it (other queues go
//!   on);
//! - a placed job is `Running`; a task whose command is `["sleep", "<seconds>"]` runs that long,
//!   other batch jobs run the default runtime, jupyter and webide run until deleted; the job
//!   `Completed` when its longest task ends, and its pods' capacity is free again;
//! - deleting a running job makes it `Terminating`: its pods keep their capacity for the
//!   termination grace, then the job is gone. A pending or completed job is gone at once.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anteroom_shared::scheduling::{JobKind, JobPhase, ResourceList, TaskResources};
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::cluster::{JobEvent, JobSpec, JobStatus};
use crate::prequeue::{CapacityKind, JobId, NodeSnapshot, Taint, Toleration, place_gang};

/// A simulated node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SimNode {
    /// Host name.
    pub name: String,
    /// What pods may request in total.
    pub allocatable: ResourceList,
    /// Node labels.
    pub labels: BTreeMap<String, String>,
    /// Node taints.
    pub taints: Vec<Taint>,
    /// `Ready=True`.
    pub ready: bool,
    /// Not cordoned.
    pub schedulable: bool,
}

/// Where a job is in the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SimPhase {
    /// Waiting for room for the whole gang.
    Pending,
    /// Pods placed and running.
    Running,
    /// Every task ended; pods gone.
    Completed,
    /// Deleted; pods still hold their capacity until the grace ends.
    Terminating,
}

impl SimPhase {
    /// The phase Anteroom sees.
    pub fn job_phase(self) -> JobPhase {
        match self {
            SimPhase::Pending => JobPhase::Pending,
            SimPhase::Running => JobPhase::Running,
            SimPhase::Completed => JobPhase::Completed,
            SimPhase::Terminating => JobPhase::Terminating,
        }
    }

    /// Name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            SimPhase::Pending => "Pending",
            SimPhase::Running => "Running",
            SimPhase::Completed => "Completed",
            SimPhase::Terminating => "Terminating",
        }
    }

    /// Inverse of [`SimPhase::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "Pending" => SimPhase::Pending,
            "Running" => SimPhase::Running,
            "Completed" => SimPhase::Completed,
            "Terminating" => SimPhase::Terminating,
            _ => return None,
        })
    }
}

/// One placed pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SimPod {
    /// Task name.
    pub task: String,
    /// Replica index.
    pub replica: u32,
    /// Node it runs on.
    pub node: String,
    /// What it holds there.
    pub requests: ResourceList,
}

/// A simulated Volcano job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SimJob {
    /// What was asked for.
    pub spec: JobSpec,
    /// Where it is.
    pub phase: SimPhase,
    /// Creation time: FIFO order (ties by job id).
    pub created_at: DateTime<Utc>,
    /// When its pods were placed.
    pub started_at: Option<DateTime<Utc>>,
    /// When it completes; `None` runs until deleted.
    pub finishes_at: Option<DateTime<Utc>>,
    /// When a terminating job's pods are gone.
    pub gone_at: Option<DateTime<Utc>>,
    /// Placed pods (empty unless running or terminating).
    pub pods: Vec<SimPod>,
}

impl SimJob {
    /// The status Anteroom sees.
    pub fn status(&self, now: DateTime<Utc>) -> JobStatus {
        let nodes: BTreeSet<&str> = self.pods.iter().map(|p| p.node.as_str()).collect();
        JobStatus {
            job_id: self.spec.id,
            phase: self.phase.job_phase(),
            nodes: nodes.into_iter().map(str::to_string).collect(),
            observed_at: now,
            started_at: None,
            failure: None,
        }
    }
}

/// Timing of the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Runtime of a batch task whose command is not `sleep N`.
    pub default_runtime_seconds: u64,
    /// How long deleted pods keep their capacity (at most the grace the delete asks for).
    pub termination_grace_seconds: u64,
}

/// What an operation changed, for the store and the status stream.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Changes {
    /// Jobs created or modified (persist these rows).
    pub upserted: BTreeSet<JobId>,
    /// Jobs that left the cluster (delete these rows).
    pub removed: BTreeSet<JobId>,
    /// Nodes modified.
    pub nodes: BTreeSet<String>,
    /// Events to broadcast once persisted.
    pub events: Vec<JobEvent>,
}

impl Changes {
    /// Nothing to persist or announce.
    pub fn is_empty(&self) -> bool {
        self.upserted.is_empty() && self.removed.is_empty() && self.nodes.is_empty()
    }
}

/// Outcome of a create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// A new job.
    New,
    /// It existed already (a retried create): nothing changed.
    AlreadyExists,
}

/// The whole simulated cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimState {
    /// Nodes by name.
    pub nodes: BTreeMap<String, SimNode>,
    /// Jobs by id.
    pub jobs: BTreeMap<JobId, SimJob>,
}

impl SimState {
    /// Nodes with their free capacity: allocatable minus the pods of running and terminating
    /// jobs.
    pub fn node_snapshots(&self) -> Vec<NodeSnapshot> {
        let mut used: HashMap<&str, ResourceList> = HashMap::new();
        for job in self.jobs.values() {
            if matches!(job.phase, SimPhase::Running | SimPhase::Terminating) {
                for pod in &job.pods {
                    let entry = used.entry(pod.node.as_str()).or_default();
                    *entry = add(entry, &pod.requests);
                }
            }
        }
        self.nodes
            .values()
            .map(|n| {
                let free = match used.get(n.name.as_str()) {
                    Some(u) => sub(&n.allocatable, u),
                    None => n.allocatable.clone(),
                };
                NodeSnapshot {
                    name: n.name.clone(),
                    ready: n.ready,
                    schedulable: n.schedulable,
                    allocatable: n.allocatable.clone(),
                    free,
                    labels: n.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    taints: n.taints.clone(),
                }
            })
            .collect()
    }

    /// Adds a job as `Pending`; a second create of the same id changes nothing.
    pub fn create(&mut self, spec: &JobSpec, now: DateTime<Utc>, changes: &mut Changes) -> Created {
        if self.jobs.contains_key(&spec.id) {
            return Created::AlreadyExists;
        }
        let job = SimJob {
            spec: spec.clone(),
            phase: SimPhase::Pending,
            created_at: now,
            started_at: None,
            finishes_at: None,
            gone_at: None,
            pods: Vec::new(),
        };
        changes.events.push(JobEvent::Status(job.status(now)));
        self.jobs.insert(spec.id, job);
        changes.upserted.insert(spec.id);
        Created::New
    }

    /// Deletes a job: running pods terminate for `min(grace, timing grace)`; anything without
    /// pods is gone at once. Deleting a job that is not there changes nothing.
    pub fn delete(&mut self, id: JobId, grace_seconds: u32, now: DateTime<Utc>, timing: Timing, changes: &mut Changes) {
        let Some(job) = self.jobs.get_mut(&id) else { return };
        match job.phase {
            SimPhase::Pending | SimPhase::Completed => self.remove(id, now, changes),
            SimPhase::Running => {
                let grace = u64::from(grace_seconds).min(timing.termination_grace_seconds);
                job.phase = SimPhase::Terminating;
                job.gone_at = Some(now + seconds(grace));
                job.finishes_at = None;
                changes.upserted.insert(id);
                changes.events.push(JobEvent::Status(job.status(now)));
            }
            // Already on its way out: the first delete's grace stands.
            SimPhase::Terminating => {}
        }
    }

    /// Takes a job out of the cluster: its row is deleted rather than written, and watchers
    /// hear that it is gone.
    fn remove(&mut self, id: JobId, now: DateTime<Utc>, changes: &mut Changes) {
        self.jobs.remove(&id);
        changes.upserted.remove(&id);
        changes.removed.insert(id);
        changes.events.push(JobEvent::Gone {
            job_id: id,
            observed_at: now,
        });
    }

    /// Cordons or uncordons a node; `false` if there is no such node.
    pub fn set_schedulable(&mut self, node: &str, schedulable: bool, changes: &mut Changes) -> bool {
        match self.nodes.get_mut(node) {
            Some(n) => {
                if n.schedulable != schedulable {
                    n.schedulable = schedulable;
                    changes.nodes.insert(node.to_string());
                }
                true
            }
            None => false,
        }
    }

    /// Advances the simulation to `now`: terminations end, jobs complete, pending jobs are
    /// placed.
    pub fn step(&mut self, now: DateTime<Utc>, timing: Timing, changes: &mut Changes) {
        // 1. Terminating jobs whose grace ended leave the cluster.
        let gone: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| j.phase == SimPhase::Terminating && j.gone_at.is_some_and(|t| t <= now))
            .map(|j| j.spec.id)
            .collect();
        for id in gone {
            self.remove(id, now, changes);
        }

        // 2. Running jobs whose time is up complete; their pods' capacity is free again.
        for job in self.jobs.values_mut() {
            if job.phase == SimPhase::Running && job.finishes_at.is_some_and(|t| t <= now) {
                job.phase = SimPhase::Completed;
                job.pods.clear();
                changes.upserted.insert(job.spec.id);
                changes.events.push(JobEvent::Status(job.status(now)));
            }
        }

        // 3. Pending jobs in creation order, FIFO per queue.
        let mut pending: Vec<(DateTime<Utc>, JobId)> = self
            .jobs
            .values()
            .filter(|j| j.phase == SimPhase::Pending)
            .map(|j| (j.created_at, j.spec.id))
            .collect();
        if pending.is_empty() {
            return;
        }
        pending.sort();
        let mut nodes = self.node_snapshots();
        let mut blocked_queues: BTreeSet<String> = BTreeSet::new();
        for (_, id) in pending {
            let job = self.jobs.get(&id).expect("listed above");
            if blocked_queues.contains(&job.spec.queue) {
                continue;
            }
            let Some(pods) = place(&job.spec, &nodes) else {
                blocked_queues.insert(job.spec.queue.clone());
                continue;
            };
            for pod in &pods {
                if let Some(node) = nodes.iter_mut().find(|n| n.name == pod.node) {
                    node.free = sub(&node.free, &pod.requests);
                }
            }
            let job = self.jobs.get_mut(&id).expect("listed above");
            job.phase = SimPhase::Running;
            job.started_at = Some(now);
            job.finishes_at = runtime_seconds(&job.spec, timing.default_runtime_seconds).map(|s| now + seconds(s));
            job.pods = pods;
            changes.upserted.insert(id);
            changes.events.push(JobEvent::Status(job.status(now)));
        }
    }
}

/// Gang placement on free capacity, with the core's best-fit rule. `None` when the whole gang
/// does not fit now.
fn place(spec: &JobSpec, nodes: &[NodeSnapshot]) -> Option<Vec<SimPod>> {
    let tasks: Vec<TaskResources> = spec
        .tasks
        .iter()
        .map(|t| TaskResources {
            name: t.name.clone(),
            replicas: t.replicas,
            requests: t.resources.clone(),
            node_names: t.node_names.clone(),
        })
        .collect();
    // Pods of one job share their tolerations in practice; the union is what any pod tolerates.
    let mut tolerations: Vec<Toleration> = Vec::new();
    for t in &spec.tasks {
        for tol in &t.tolerations {
            if !tolerations.contains(tol) {
                tolerations.push(tol.clone());
            }
        }
    }
    let assignments = place_gang(&tasks, &tolerations, nodes, CapacityKind::Free).ok()?;
    let requests: HashMap<&str, &ResourceList> = spec.tasks.iter().map(|t| (t.name.as_str(), &t.resources)).collect();
    Some(
        assignments
            .into_iter()
            .map(|a| SimPod {
                requests: requests.get(a.task.as_str()).map(|r| (*r).clone()).unwrap_or_default(),
                task: a.task,
                replica: a.replica,
                node: a.node,
            })
            .collect(),
    )
}

/// How long a job runs once placed: jupyter and webide until deleted; otherwise its longest
/// task, where a task `["sleep", "N"]` takes N seconds and any other the default runtime.
pub fn runtime_seconds(spec: &JobSpec, default_runtime_seconds: u64) -> Option<u64> {
    if matches!(spec.kind, JobKind::Jupyter | JobKind::Webide) {
        return None;
    }
    spec.tasks
        .iter()
        .map(|t| match t.command.as_slice() {
            [cmd, secs] if cmd == "sleep" => secs
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| s.ceil() as u64)
                .unwrap_or(default_runtime_seconds),
            _ => default_runtime_seconds,
        })
        .max()
        .or(Some(default_runtime_seconds))
}

fn seconds(s: u64) -> Duration {
    Duration::seconds(i64::try_from(s).unwrap_or(i64::MAX / 1000).min(i64::MAX / 1000))
}

// Sums of requests stay far below the i128 milli-unit range (10^36); overflow cannot happen with
// quantities that parsed, so the fallbacks below are never taken in practice.
fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    a.checked_add(b).unwrap_or_else(|_| a.clone())
}

fn sub(a: &ResourceList, b: &ResourceList) -> ResourceList {
    a.checked_sub(b).unwrap_or_else(|_| a.clone())
}

#[cfg(test)]
pub(crate) mod tests;

//! The simulation itself, pure: nodes, jobs and their pods, and what happens when time passes.
//! No I/O and no clock — `now` is an argument — so every rule is unit-tested in microseconds;
//! [`super::SimulatedCluster`] persists the changes each call reports.
//!
//! Volcano-like rules:
//! - a job is created `Pending`; its pods are placed all together or not at all (gang), best
//!   fit, on the nodes' *free* capacity, honouring readiness, cordons, taints and pinned nodes;
//! - a job is created only into a queue the cluster knows and that is open (Volcano's admission
//!   webhook refuses the others); the simulated cluster learns Anteroom's queues through
//!   [`SimState::sync_queue`] and starts with `default` open;
//! - pending jobs are tried in creation order (ties by id), like Volcano's `allocate` action: a
//!   job that does not fit now is skipped and the smaller jobs behind it, in its queue or any
//!   other, still start — so starvation of big jobs shows here as it does in Volcano, and the
//!   prequeue's blocking is what fights it;
//! - each pod tolerates only its own task's taints;
//! - a placed job is `Running`; a task whose command is `["sleep", "<seconds>"]` runs that long
//!   (at most [`MAX_RUNTIME_SECONDS`](super::runtime::MAX_RUNTIME_SECONDS)), other batch jobs run the default runtime, jupyter and
//!   webide run until deleted; the job is `Completed` when its longest task ends, and its pods'
//!   capacity is free again;
//! - a completed job leaves memory at once (only a [`FinishedJob`] summary stays, for
//!   [`SimState::statuses`]) and leaves the cluster, like Volcano's `ttlSecondsAfterFinished`,
//!   after the finished-retention period;
//! - deleting a running job makes it `Terminating`: its pods keep their capacity for the
//!   termination grace, then the job is gone; a later delete may shorten that grace, never
//!   lengthen it. A pending or completed job is gone at once;
//! - a node's free capacity is never negative, even when a node file shrank a node under
//!   running pods.
//!
//! No time arithmetic here can panic: every sum of a time and a duration is checked.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use anteroom_shared::scheduling::{ResourceList, ScheduleType};
use chrono::{DateTime, Utc};

use super::runtime::{after, runtime_seconds};
use crate::cluster::{ClusterQueue, JobEvent, JobSpec, JobStatus, is_same_job};
use crate::prequeue::{JobId, NodeSnapshot};

mod model;
mod placement;
mod usage;

pub use model::{DEADLINE_EXCEEDED, FinishedJob, SimJob, SimNode, SimPhase, SimPod};
use placement::place;
pub use usage::NodeUsage;

/// Timing of the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Runtime of a batch task whose command is not `sleep N`.
    pub default_runtime_seconds: u64,
    /// How long deleted pods keep their capacity (at most the grace the delete asks for).
    pub termination_grace_seconds: u64,
    /// How long a completed job stays in the cluster (and its table) before it is gone.
    pub finished_retention_seconds: u64,
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
    /// Queues created, opened, closed or removed.
    pub queues: BTreeSet<String>,
    /// Events to broadcast once persisted, in the order the changes were made.
    pub events: Vec<JobEvent>,
}

impl Changes {
    /// Nothing to persist or announce.
    pub fn is_empty(&self) -> bool {
        self.upserted.is_empty() && self.removed.is_empty() && self.nodes.is_empty() && self.queues.is_empty()
    }
}

/// Outcome of a create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// A new job.
    New,
    /// It existed already (a retried create): nothing changed.
    AlreadyExists,
    /// A job of that id exists with another uid — another job that had the same id (a restored
    /// or rolled-back database) —: nothing changed, and the create is refused.
    NameTaken {
        /// The uid of the job already there.
        found: String,
    },
}

/// The whole simulated cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimState {
    /// Nodes by name.
    pub nodes: BTreeMap<String, SimNode>,
    /// Jobs that have not finished (pending, running, terminating), by id. Each behind an `Arc`
    /// (changed through `Arc::make_mut`), so a state's clone (tests) copies a pointer per job.
    pub jobs: BTreeMap<JobId, Arc<SimJob>>,
    /// Completed jobs not yet past their retention, by id.
    pub finished: BTreeMap<JobId, FinishedJob>,
    /// The queues the cluster knows, by name. Only the name and whether it is open are stored
    /// (`sim_queues`); parent, capability and weight are kept in memory as the last sync said
    /// (a reload reads them as a root of weight 1 without a cap, until the server's start tells
    /// the tree again). Placement honours the capabilities as Volcano's capacity plugin does.
    pub queues: BTreeMap<String, ClusterQueue>,
    /// True when the last placement pass placed all it could and nothing that could let a
    /// pending job fit (a new job, freed capacity, a node change) has happened since: a step
    /// then skips the pass, so thousands of pending jobs that cannot fit do not cost every
    /// tick. `false` (the default, and after a load) runs the pass.
    pub placement_settled: bool,
    /// Jobs created since the last placement pass while it was settled, in creation order: a
    /// create frees nothing, so the pending jobs before them would still not fit, and the next
    /// pass tries only these (at thousands of pending jobs, a pass over all of them for each
    /// create was most of a busy simulated cluster's work).
    pub created_since_pass: Vec<JobId>,
    /// No job ends its termination, completes or passes its retention before this instant:
    /// until then a step skips looking at every job for what is due (at thousands of jobs,
    /// those passes were most of a busy step). Lowered by every change that sets such a time;
    /// `None` (the default, and after a load): unknown, the next step looks.
    pub next_due: Option<DateTime<Utc>>,
    /// What running and terminating jobs hold on each node, kept by every change that starts
    /// or ends a job's pods (equal to [`NodeUsage::of_jobs`] at all times; a state built by
    /// filling `jobs` directly calls [`SimState::recount_usage`]).
    pub usage: NodeUsage,
}

impl SimState {
    /// The status of every job still in the cluster, finished ones included until they are
    /// purged.
    pub fn statuses(&self, now: DateTime<Utc>) -> Vec<JobStatus> {
        let mut out: Vec<JobStatus> = self.jobs.values().map(|j| j.status(now)).collect();
        out.extend(self.finished.iter().map(|(id, f)| f.status(*id)));
        out.sort_by_key(|s| s.job_id);
        out
    }

    /// The queues, by name.
    pub fn cluster_queues(&self) -> Vec<ClusterQueue> {
        self.queues.values().cloned().collect()
    }

    /// Records Anteroom's queue: created, opened or closed, or its parent, capability or weight
    /// changed.
    pub fn sync_queue(&mut self, queue: &ClusterQueue, changes: &mut Changes) {
        if self.queues.get(&queue.name) != Some(queue) {
            self.queues.insert(queue.name.clone(), queue.clone());
            changes.queues.insert(queue.name.clone());
        }
    }

    /// Forgets a queue: jobs already in it run on (Volcano would not have let the queue go
    /// while it held jobs; the simulation does not police that), new ones are refused.
    pub fn remove_queue(&mut self, name: &str, changes: &mut Changes) {
        if self.queues.remove(name).is_some() {
            changes.queues.insert(name.to_string());
        }
    }

    /// Sums the usage from the jobs again: after filling `jobs` directly (loading the store).
    pub fn recount_usage(&mut self) {
        self.usage = NodeUsage::of_jobs(&self.jobs);
    }

    /// Nodes with their free capacity: allocatable minus the pods of running and terminating
    /// jobs, never below zero (a node file may shrink a node under running pods). Costs the
    /// nodes, not the jobs: the usage is kept as jobs come and go.
    pub fn node_snapshots(&self) -> Vec<NodeSnapshot> {
        debug_assert_eq!(
            self.usage,
            NodeUsage::of_jobs(&self.jobs),
            "node usage drifted from the jobs"
        );
        self.nodes
            .values()
            .map(|n| {
                let free = self.usage.free_on(&n.name, &n.allocatable);
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

    /// Adds a job as `Pending`; a second create of the same id changes nothing (even if its
    /// queue has closed since: the job is there, which is what a retried create wants to know),
    /// and is [`Created::NameTaken`] when the job there has another uid ([`is_same_job`]).
    /// A new job into a queue the cluster does not know, or a closed one, is refused with a
    /// message naming the queue, as Volcano's admission webhook would.
    pub fn create(&mut self, spec: &JobSpec, now: DateTime<Utc>, changes: &mut Changes) -> Result<Created, String> {
        let existing = match (self.jobs.get(&spec.id), self.finished.get(&spec.id)) {
            (Some(job), _) => Some(job.uid()),
            (None, Some(finished)) => Some(finished.cluster_uid.as_deref()),
            (None, None) => None,
        };
        if let Some(found) = existing {
            return Ok(if is_same_job(&spec.cluster_uid, found) {
                Created::AlreadyExists
            } else {
                Created::NameTaken {
                    found: found.unwrap_or_default().to_owned(),
                }
            });
        }
        match self.queues.get(&spec.queue) {
            None => return Err(format!("the queue `{}` does not exist in the cluster", spec.queue)),
            Some(queue) if !queue.open => return Err(format!("the queue `{}` is closed", spec.queue)),
            Some(_) => {}
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
        self.jobs.insert(spec.id, Arc::new(job));
        if self.placement_settled {
            self.created_since_pass.push(spec.id);
        }
        changes.upserted.insert(spec.id);
        Ok(Created::New)
    }

    /// Deletes a job: running pods terminate for `min(grace, timing grace)`; anything without
    /// pods is gone at once. A second delete of a terminating job may shorten its grace (as
    /// `kubectl delete --grace-period` does), never lengthen it. Deleting a job that is not
    /// there changes nothing.
    pub fn delete(
        &mut self,
        id: JobId,
        cluster_uid: &str,
        grace_seconds: u32,
        now: DateTime<Utc>,
        timing: Timing,
        changes: &mut Changes,
    ) {
        if let Some(finished) = self.finished.get(&id) {
            if is_same_job(cluster_uid, finished.cluster_uid.as_deref()) {
                self.remove(id, now, changes);
            }
            return;
        }
        // Another job's `ar-<id>` (same id, another uid) is left alone.
        let Some(job) = self
            .jobs
            .get_mut(&id)
            .filter(|job| is_same_job(cluster_uid, job.uid()))
            .map(Arc::make_mut)
        else {
            return;
        };
        let grace = u64::from(grace_seconds).min(timing.termination_grace_seconds);
        // Past the end of time (it cannot happen with a real clock) the pods go at once.
        let gone_at = after(now, grace).unwrap_or(now);
        match job.phase {
            SimPhase::Pending | SimPhase::Completed | SimPhase::Failed => self.remove(id, now, changes),
            SimPhase::Running => {
                job.phase = SimPhase::Terminating;
                job.gone_at = Some(gone_at);
                job.finishes_at = None;
                changes.upserted.insert(id);
                changes.events.push(JobEvent::Status(job.status(now)));
                self.due_by(gone_at);
            }
            SimPhase::Terminating => {
                if job.gone_at.is_none_or(|t| gone_at < t) {
                    // Same phase and nodes: nothing to announce, only the end moves closer.
                    job.gone_at = Some(gone_at);
                    changes.upserted.insert(id);
                    self.due_by(gone_at);
                }
            }
        }
    }

    /// Takes a job out of the cluster: its row is deleted rather than written, and watchers
    /// hear that it is gone.
    fn remove(&mut self, id: JobId, now: DateTime<Utc>, changes: &mut Changes) {
        if let Some(job) = self.jobs.remove(&id) {
            self.usage.release(&job);
        }
        self.finished.remove(&id);
        self.placement_settled = false;
        changes.upserted.remove(&id);
        changes.removed.insert(id);
        changes.events.push(JobEvent::Gone {
            job_id: id,
            observed_at: now,
        });
    }

    /// Records what the cluster's own scheduler was told about a job's pods; only the job of
    /// that uid (a job stored before uids matches any), and only a change is persisted.
    pub fn set_preemptable(&mut self, id: JobId, cluster_uid: &str, preemptable: bool, changes: &mut Changes) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.spec.preemptable == preemptable || !is_same_job(cluster_uid, job.uid()) {
            return;
        }
        Arc::make_mut(job).spec.preemptable = preemptable;
        changes.upserted.insert(id);
    }

    /// Cordons or uncordons a node; `false` if there is no such node.
    pub fn set_schedulable(&mut self, node: &str, schedulable: bool, changes: &mut Changes) -> bool {
        match self.nodes.get_mut(node) {
            Some(n) => {
                if n.schedulable != schedulable {
                    n.schedulable = schedulable;
                    self.placement_settled = false;
                    changes.nodes.insert(node.to_string());
                }
                true
            }
            None => false,
        }
    }

    /// Something will be due at `at`: [`SimState::next_due`] is at most that.
    fn due_by(&mut self, at: DateTime<Utc>) {
        self.next_due = self.next_due.map(|due| due.min(at));
    }

    /// The earliest instant at which a termination ends, a job completes or a finished job
    /// passes its retention; `None` when nothing is timed.
    fn earliest_due(&self, timing: Timing) -> Option<DateTime<Utc>> {
        let jobs = self.jobs.values().filter_map(|j| match j.phase {
            SimPhase::Terminating => j.gone_at,
            SimPhase::Running => j.finishes_at,
            _ => None,
        });
        let retained = self
            .finished
            .values()
            .filter_map(|f| after(f.finished_at, timing.finished_retention_seconds));
        jobs.chain(retained).min()
    }

    /// Advances the simulation to `now`: terminations end, jobs complete, pending jobs are
    /// placed.
    pub fn step(&mut self, now: DateTime<Utc>, timing: Timing, changes: &mut Changes) {
        if self.next_due.is_some_and(|due| due > now) {
            debug_assert!(
                self.earliest_due(timing).is_none_or(|t| t > now),
                "a job was due before the kept next_due"
            );
        } else {
            self.end_what_is_due(now, timing, changes);
            // Nothing left is due before this; placements below lower it.
            self.next_due = Some(self.earliest_due(timing).unwrap_or(DateTime::<Utc>::MAX_UTC));
        }
        self.place_pending(now, timing, changes);
    }

    /// Steps 1–3 of [`SimState::step`]: what is due by `now` ends.
    fn end_what_is_due(&mut self, now: DateTime<Utc>, timing: Timing, changes: &mut Changes) {
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

        // 2. Running jobs whose time is up complete; their pods' capacity is free again, and the
        //    job leaves memory but for its summary.
        let done: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| j.phase == SimPhase::Running && j.finishes_at.is_some_and(|t| t <= now))
            .map(|j| j.spec.id)
            .collect();
        for id in done {
            let job = self.jobs.remove(&id).expect("listed above");
            self.usage.release(&job);
            let finished = FinishedJob {
                started_at: job.started_at,
                finished_at: job.finishes_at.unwrap_or(now),
                cluster_uid: job.uid().map(str::to_owned),
                failure: job.failure(timing.default_runtime_seconds),
            };
            changes.upserted.insert(id);
            changes.events.push(JobEvent::Status(finished.status(id)));
            self.finished.insert(id, finished);
            self.placement_settled = false;
        }

        // 3. Completed jobs past their retention leave the cluster (and the table). A retention
        //    too long to add to a date keeps them.
        let expired: Vec<JobId> = self
            .finished
            .iter()
            .filter(|(_, f)| after(f.finished_at, timing.finished_retention_seconds).is_some_and(|t| t <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            self.remove(id, now, changes);
        }
    }

    /// Step 4 of [`SimState::step`]: pending jobs in creation order; one that does not fit is
    /// skipped, not waited for.
    /// A queue and its ancestors, as the cluster's queues name their parents (a `root` parent or
    /// an unknown one ends the path; a cycle is cut).
    fn queue_path(&self, queue: &str) -> Vec<String> {
        let mut path = vec![queue.to_owned()];
        let mut at = queue;
        while let Some(parent) = self.queues.get(at).and_then(|q| q.parent.as_deref()) {
            if parent == "root" || path.iter().any(|p| p == parent) || !self.queues.contains_key(parent) {
                break;
            }
            path.push(parent.to_owned());
            at = parent;
        }
        path
    }

    /// What the pods of running and terminating jobs request, per queue and every ancestor.
    fn held_by_queue(&self) -> BTreeMap<String, ResourceList> {
        let mut held: BTreeMap<String, ResourceList> = BTreeMap::new();
        // Elastic jobs run beside the capped tree (`crate::cluster::ELASTIC_QUEUE`).
        for job in self
            .jobs
            .values()
            .filter(|j| !j.pods.is_empty() && j.spec.schedule_type != ScheduleType::Backfill)
        {
            let mut request = ResourceList::new();
            for pod in &job.pods {
                request.saturating_add_assign(&pod.requests);
            }
            for q in self.queue_path(&job.spec.queue) {
                held.entry(q).or_default().saturating_add_assign(&request);
            }
        }
        held
    }

    fn place_pending(&mut self, now: DateTime<Utc>, timing: Timing, changes: &mut Changes) {
        let created = std::mem::take(&mut self.created_since_pass);
        let mut pending: Vec<(DateTime<Utc>, JobId)> = if self.placement_settled {
            created
                .into_iter()
                .filter_map(|id| self.jobs.get(&id).filter(|j| j.phase == SimPhase::Pending))
                .map(|j| (j.created_at, j.spec.id))
                .collect()
        } else {
            self.jobs
                .values()
                .filter(|j| j.phase == SimPhase::Pending)
                .map(|j| (j.created_at, j.spec.id))
                .collect()
        };
        self.placement_settled = true;
        if pending.is_empty() {
            return;
        }
        pending.sort();
        let mut nodes = self.node_snapshots();
        // Volcano's capacity rule on the mirrored tree (§9): what runs in a queue and below it
        // stays within the `capability` of every queue on its path; a job that would pass one
        // stays Pending, as its PodGroup would stay `Inqueue`.
        let mut held = self.held_by_queue();
        // The shapes that did not fit in this pass. Free capacity only shrinks during a pass, so
        // a job shaped like one of them is not tried again until the next pass: a full cluster
        // with thousands of pending jobs of a few shapes costs a placement a shape, not a job
        // (issue 25: retrying each was the largest cost of a busy simulated cluster).
        let mut did_not_fit = std::collections::HashSet::new();
        for (_, id) in pending {
            let job = self.jobs.get(&id).expect("listed above");
            let shape = placement_shape(&job.spec);
            if did_not_fit.contains(&shape) {
                continue;
            }
            let request = spec_request(&job.spec);
            // Elastic jobs run beside the capped tree, as with Volcano and mirrored queues
            // (`crate::cluster::ELASTIC_QUEUE`): no capability holds them.
            let path = if job.spec.schedule_type == ScheduleType::Backfill {
                Vec::new()
            } else {
                self.queue_path(&job.spec.queue)
            };
            let over_capability = path.iter().any(|q| {
                self.queues
                    .get(q)
                    .and_then(|c| c.capability.as_ref())
                    .is_some_and(|cap| {
                        let mut after = held.get(q).cloned().unwrap_or_default();
                        after.saturating_add_assign(&request);
                        after.exceeds(cap)
                    })
            });
            if over_capability {
                continue;
            }
            let Some(pods) = place(&job.spec, &nodes) else {
                did_not_fit.insert(shape);
                continue;
            };
            for q in &path {
                held.entry(q.clone()).or_default().saturating_add_assign(&request);
            }
            for pod in &pods {
                if let Some(node) = nodes.iter_mut().find(|n| n.name == pod.node) {
                    node.free = node.free.left_after(&pod.requests);
                }
            }
            let job = Arc::make_mut(self.jobs.get_mut(&id).expect("listed above"));
            job.phase = SimPhase::Running;
            job.started_at = Some(now);
            // Past the end of time (not with a real clock) the job runs until deleted.
            job.finishes_at = runtime_seconds(&job.spec, timing.default_runtime_seconds).and_then(|s| after(now, s));
            job.pods = pods;
            self.usage.hold(job);
            changes.upserted.insert(id);
            changes.events.push(JobEvent::Status(job.status(now)));
            if let Some(ends) = job.finishes_at {
                self.due_by(ends);
            }
        }
    }
}

/// What decides where a job's pods may go, hashed: each task's replicas, requests, pinned nodes
/// and tolerations. Two jobs of one shape fit or not alike on the same free capacity (a hash
/// collision between two shapes at worst delays a job to the next pass).
fn placement_shape(spec: &JobSpec) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for task in &spec.tasks {
        task.replicas.hash(&mut hasher);
        task.resources.hash(&mut hasher);
        task.node_names.hash(&mut hasher);
        task.tolerations.hash(&mut hasher);
    }
    hasher.finish()
}

#[cfg(test)]
pub(crate) mod tests;

/// All a job's pods request together.
fn spec_request(spec: &JobSpec) -> ResourceList {
    let mut total = ResourceList::new();
    for task in &spec.tasks {
        for _ in 0..task.replicas {
            total.saturating_add_assign(&task.resources);
        }
    }
    total
}

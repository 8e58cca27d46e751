//! Status sync: turns changes of the caches (our Volcano Jobs and their pods) into the
//! [`JobEvent`]s the rest of Anteroom consumes — a job's phase, nodes, start and failure as
//! Volcano reports them (with its first failing pod), and `Gone` once its object and its last
//! pod have left.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use anteroom_shared::api::pods::JobFailure;
use anteroom_shared::scheduling::JobPhase;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use tokio::sync::broadcast;

use super::crd::VolcanoJob;
use super::state;
use crate::cluster::{JobEvent, JobStatus, cluster_name, job_id_of};
use crate::prequeue::JobId;

/// Turns cache changes into [`JobEvent`]s: what was last reported per job, and which pods
/// belong to which job (so a pod event does not scan every pod of the cluster).
pub(super) struct StatusSync {
    pub(super) namespace: String,
    pub(super) installation: String,
    pub(super) jobs: Store<VolcanoJob>,
    pub(super) pods: Store<Pod>,
    pub(super) sender: broadcast::Sender<JobEvent>,
    pub(super) inner: Mutex<SyncInner>,
}

/// What was last reported of a job: a change in any of it is an event. The failing pod is part
/// of it: the pod watch and the job watch are separate streams, so Volcano's `Failed` may
/// arrive before the pod's terminated container that says why.
type Reported = (
    JobPhase,
    Vec<String>,
    Option<DateTime<Utc>>,
    Option<String>,
    Option<JobFailure>,
);

#[derive(Default)]
pub(super) struct SyncInner {
    reported: HashMap<JobId, Reported>,
    pods_of: HashMap<JobId, BTreeSet<String>>,
    /// The earliest start seen per job. Pods leave the cache when they are deleted (a finished
    /// job's, or after a restart of Volcano's controller), but when the job started does not
    /// change: it is kept until the job is gone.
    started: HashMap<JobId, DateTime<Utc>>,
    /// The failing pod last seen per failed job: a failed job's pods may be deleted before the
    /// job (a foreground delete removes them first), and why it failed does not change with
    /// that. Forgotten when the job is gone or reads as not failed (re-created).
    failed_pod: HashMap<JobId, JobFailure>,
}

impl SyncInner {
    /// `status` with its start merged with the earliest start seen before (and remembered), and
    /// — failed without a failing pod in the cache any more — the one seen before.
    fn merge_start(&mut self, mut status: JobStatus) -> JobStatus {
        let earliest = match (self.started.get(&status.job_id).copied(), status.started_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at) = earliest {
            self.started.insert(status.job_id, at);
        }
        status.started_at = earliest;
        if !state::is_failed_phase(status.phase) {
            self.failed_pod.remove(&status.job_id);
        } else if let Some(failure) = &status.failed_pod {
            self.failed_pod.insert(status.job_id, failure.clone());
        } else {
            status.failed_pod = self.failed_pod.get(&status.job_id).cloned();
        }
        status
    }
}

impl StatusSync {
    /// `status` with the earliest start this sync has seen for the job, and the failing pod it
    /// last saw while the job failed.
    pub(super) fn remember_start(&self, status: JobStatus) -> JobStatus {
        match self.inner.lock() {
            Ok(mut inner) => inner.merge_start(status),
            Err(_) => status,
        }
    }

    pub(super) fn on_job_event(&self, event: &watcher::Event<VolcanoJob>) {
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

    pub(super) fn on_pod_event(&self, event: &watcher::Event<Pod>) {
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
                    status.failed_pod.clone(),
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
                inner.failed_pod.remove(&id);
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

//! The simulation's objects: nodes, jobs and their pods, and the summary a completed job
//! leaves behind — what [`super::SimState`] holds and the store persists.

use anteroom_shared::api::pods::{JobFailure, pod_name};
use anteroom_shared::scheduling::{JobPhase, ResourceList};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::sim::runtime::{Failing, job_outcome};

/// Kubernetes' reason for a pod ended by its `activeDeadlineSeconds`.
pub const DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
use crate::cluster::{JobSpec, JobStatus};
use crate::prequeue::{JobId, Taint};

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
    /// A task exited with an error, which ended the job; pods gone.
    Failed,
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
            SimPhase::Failed => JobPhase::Failed,
            SimPhase::Terminating => JobPhase::Terminating,
        }
    }

    /// Name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            SimPhase::Pending => "Pending",
            SimPhase::Running => "Running",
            SimPhase::Completed => "Completed",
            SimPhase::Failed => "Failed",
            SimPhase::Terminating => "Terminating",
        }
    }

    /// Inverse of [`SimPhase::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "Pending" => SimPhase::Pending,
            "Running" => SimPhase::Running,
            "Completed" => SimPhase::Completed,
            "Failed" => SimPhase::Failed,
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
            started_at: self.started_at,
            // Only a finished job fails ([`FinishedJob`]); a create the simulation refuses
            // never becomes a job.
            failure: None,
            cluster_uid: self.uid().map(str::to_owned),
            failed_pod: None,
        }
    }

    /// Why it fails, when it does ([`job_outcome`]): its failing task's first pod, `Error`
    /// and the exit code; or its first pod and `DeadlineExceeded` past its runtime limit.
    pub fn failure(&self, default_runtime_seconds: u64) -> Option<JobFailure> {
        let (_, failing) = job_outcome(&self.spec, default_runtime_seconds);
        match failing? {
            Failing::Task { index, code } => Some(JobFailure {
                pod: Some(pod_name(self.spec.id, &self.spec.tasks[index].name, 0)),
                reason: "Error".to_owned(),
                exit_code: Some(code),
            }),
            Failing::Deadline => Some(JobFailure {
                pod: self.spec.tasks.first().map(|t| pod_name(self.spec.id, &t.name, 0)),
                reason: DEADLINE_EXCEEDED.to_owned(),
                exit_code: None,
            }),
        }
    }

    /// The uid it was created with; `None` for a job stored before uids existed.
    pub fn uid(&self) -> Option<&str> {
        Some(self.spec.cluster_uid.as_str()).filter(|uid| !uid.is_empty())
    }
}

/// What stays in memory of a completed job until it leaves the cluster: enough for its status,
/// without its spec and pods, so memory does not grow with every job that ever ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishedJob {
    /// When its pods started.
    pub started_at: Option<DateTime<Utc>>,
    /// When it completed; the retention period counts from here.
    pub finished_at: DateTime<Utc>,
    /// Its uid ([`SimJob::uid`]): a create of its id with another uid is refused until it is
    /// purged.
    pub cluster_uid: Option<String>,
    /// Why it failed; `None`: it completed.
    pub failure: Option<JobFailure>,
}

impl FinishedJob {
    /// The status Anteroom sees: `Completed` (or `Failed`, with why), on no node, observed when
    /// it ended — the simulated cluster knows that to the instant, and the job's `finishedAt`
    /// (and the usage it recorded, §10) is then exact whenever the watcher looks.
    pub fn status(&self, job_id: JobId) -> JobStatus {
        JobStatus {
            job_id,
            phase: if self.failure.is_some() {
                JobPhase::Failed
            } else {
                JobPhase::Completed
            },
            nodes: Vec::new(),
            observed_at: self.finished_at,
            started_at: self.started_at,
            failure: self.failure.as_ref().map(|f| format!("PodFailed: {}", f.one_line())),
            cluster_uid: self.cluster_uid.clone(),
            failed_pod: self.failure.clone(),
        }
    }
}

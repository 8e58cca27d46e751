//! What the cluster says about a job's pods (`GET /api/v1/jobs/{id}/pods`) and why a job
//! failed, in one line: the answers to "why is it Pending", "why did it die" that Anteroom's own
//! timeline cannot give.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use self::cause::{CauseCode, ClusterCause, NodeRefusal, RefusalKind};

mod cause;

/// One pod of a job, as the cluster reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PodView {
    /// The pod's name (`ar-<id>-<task>-<replica>`).
    pub name: String,
    /// Its task.
    pub task: String,
    /// Its replica index in the task.
    pub replica: u32,
    /// The node it was placed on; `null` while unplaced.
    pub node: Option<String>,
    /// Kubernetes' pod phase: `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    pub phase: String,
    /// Why it is in that state, in Kubernetes' words when it has one: `ImagePullBackOff`,
    /// `CrashLoopBackOff`, `OOMKilled`, `Error`, `Evicted`, `Unschedulable`…
    pub reason: Option<String>,
    /// The cluster's message for that reason, when it gave one — to admins only: it may name
    /// other teams' nodes, taints and quota objects. Owners read the reason (the UI says it in
    /// their language).
    pub message: Option<String>,
    /// What `message` says, as a code and parameters the UI says in the reader's language
    /// (owners get it too: counts, resources and the taints every user reads on the nodes);
    /// absent when the message is not one Anteroom knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<ClusterCause>,
    /// The exit code of its container's last run, once it ended.
    pub exit_code: Option<i32>,
    /// How many times its container was restarted.
    pub restarts: u32,
    /// When its container started.
    pub started_at: Option<DateTime<Utc>>,
    /// When its container ended.
    pub finished_at: Option<DateTime<Utc>>,
}

/// One Kubernetes event about a job's pods or its PodGroup (de-duplicated: `count` times
/// between `firstAt` and `lastAt`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterEventView {
    /// What it is about: `Pod/<name>` or `PodGroup/<name>`.
    pub object: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Kubernetes' reason word (`FailedScheduling`, `Scheduled`, `Pulling`, `BackOff`…).
    pub reason: String,
    /// The cluster's own message (e.g. `0/5 nodes are available: insufficient nvidia.com/a100`)
    /// — to admins only: it may name other teams' nodes, taints and quota objects; `null` for
    /// the job's owner, who reads the reason (the UI says it in their language).
    #[serde(default)]
    pub message: Option<String>,
    /// What `message` says, as a code and parameters (see [`PodView::cause`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<ClusterCause>,
    /// How many times it happened.
    pub count: u32,
    /// First seen.
    pub first_at: Option<DateTime<Utc>>,
    /// Last seen.
    pub last_at: Option<DateTime<Utc>>,
}

impl JobPods {
    /// What the job's owner is shown: the reasons, never the cluster's own words (the same rule
    /// as the timeline's cluster errors).
    pub fn for_owner(mut self) -> Self {
        for pod in &mut self.pods {
            pod.message = None;
        }
        for event in &mut self.events {
            event.message = None;
        }
        self
    }

    /// Each message read into its cause ([`ClusterCause::of_message`]), whichever cluster wrote
    /// it: done once where the answer is made, before [`JobPods::for_owner`] drops the messages.
    pub fn with_causes(mut self) -> Self {
        for pod in &mut self.pods {
            pod.cause = pod.message.as_deref().and_then(ClusterCause::of_message);
        }
        for event in &mut self.events {
            event.cause = event.message.as_deref().and_then(ClusterCause::of_message);
        }
        self
    }
}

/// `GET /api/v1/jobs/{id}/pods` answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct JobPods {
    /// Its pods, by task then replica; empty while it is not in the cluster.
    pub pods: Vec<PodView>,
    /// The latest events of its pods and PodGroup, oldest first (at most 100).
    pub events: Vec<ClusterEventView>,
}

/// Why a job failed, in one line: its first failing pod, the reason and the exit code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct JobFailure {
    /// The pod (`ar-<id>-<task>-<replica>`); `null` when the cluster named none.
    pub pod: Option<String>,
    /// Kubernetes' reason word (`OOMKilled`, `Error`, `DeadlineExceeded`, `ImagePullBackOff`…).
    pub reason: String,
    /// The container's exit code, when it exited.
    pub exit_code: Option<i32>,
}

impl JobFailure {
    /// `main-0: OOMKilled (exit code 137)`, the line lists and pages show (the UI renders the
    /// same parts in its own language).
    pub fn one_line(&self) -> String {
        let pod = self.pod.as_deref().map(|p| format!("{p}: ")).unwrap_or_default();
        match self.exit_code {
            Some(code) => format!("{pod}{} (exit code {code})", self.reason),
            None => format!("{pod}{}", self.reason),
        }
    }
}

/// A pod's name from its job id, task and replica (Volcano's `<job>-<task>-<index>`).
pub fn pod_name(job_id: i64, task: &str, replica: u32) -> String {
    format!("ar-{job_id}-{task}-{replica}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_reads_as_one_line() {
        let f = JobFailure {
            pod: Some("ar-7-main-0".into()),
            reason: "OOMKilled".into(),
            exit_code: Some(137),
        };
        assert_eq!(f.one_line(), "ar-7-main-0: OOMKilled (exit code 137)");
        let f = JobFailure {
            pod: None,
            reason: "DeadlineExceeded".into(),
            exit_code: None,
        };
        assert_eq!(f.one_line(), "DeadlineExceeded");
        assert_eq!(pod_name(7, "worker", 3), "ar-7-worker-3");
    }
}

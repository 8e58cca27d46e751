//! The kube adapter's settings, from the server's configuration: where Anteroom's Volcano Jobs
//! go and how their manifests are written ([`super::manifest`]), and whether its queues are
//! mirrored as Volcano Queues ([`super::queue_mirror`]).

use anteroom_shared::scheduling::{PreemptionPolicy, ScheduleType};

use super::labels::{INSTALLATION_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::config::ImagePullPolicy;

/// Where and how this installation writes its objects in the cluster: everything a Job
/// manifest depends on besides the job itself, and whether it mirrors its queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestSettings {
    /// Namespace of the jobs (`ANTEROOM_JOBS_NAMESPACE`).
    pub namespace: String,
    /// This installation's id (kept in the database), put in [`INSTALLATION_LABEL`].
    pub installation: String,
    /// `priorityClassName` of normal jobs' pods and PodGroups; `None`: the cluster default.
    pub priority_class_normal: Option<String>,
    /// `priorityClassName` of backfill jobs' pods and PodGroups; `None`: the cluster default.
    pub priority_class_backfill: Option<String>,
    /// `priorityClassName` of normal jobs whose preemption policy is `Never`; `None`: the
    /// normal class.
    pub priority_class_never: Option<String>,
    /// `imagePullPolicy` of every container; `None`: Kubernetes' default.
    pub image_pull_policy: Option<ImagePullPolicy>,
    /// Volcano's `ttlSecondsAfterFinished`: finished jobs are removed after this long;
    /// `None`: kept until Anteroom deletes them.
    pub ttl_seconds_after_finished: Option<u32>,
    /// Keep every Anteroom queue as a Volcano Queue (`mirror_queues`, [`super::queue_mirror`]);
    /// `false`: administrators create them and syncing a queue only checks it exists.
    pub mirror_queues: bool,
}

impl ManifestSettings {
    /// Settings with no priority classes and no TTL, mirroring queues (the setting's default):
    /// what tests and a minimal setup use.
    pub fn new(namespace: impl Into<String>, installation: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            installation: installation.into(),
            priority_class_normal: None,
            priority_class_backfill: None,
            priority_class_never: None,
            image_pull_policy: None,
            ttl_seconds_after_finished: None,
            mirror_queues: true,
        }
    }

    /// From the server's configuration and the installation id kept in the database.
    pub fn from_config(config: &crate::config::Config, installation: impl Into<String>) -> Self {
        Self {
            namespace: config.jobs_namespace.clone(),
            installation: installation.into(),
            priority_class_normal: config.kube_priority_class_normal.clone(),
            priority_class_backfill: config.kube_priority_class_backfill.clone(),
            priority_class_never: config.kube_priority_class_never.clone(),
            image_pull_policy: config.image_pull_policy,
            ttl_seconds_after_finished: config.kube_ttl_seconds_after_finished,
            mirror_queues: config.mirror_queues,
        }
    }

    /// The selector of the job watch: only this installation's Volcano Jobs, so another
    /// Anteroom's `ar-<id>` in the same namespace is never reported as one of ours.
    pub fn selector(&self) -> String {
        format!(
            "{MANAGED_BY_LABEL}={MANAGED_BY_VALUE},{INSTALLATION_LABEL}={}",
            self.installation
        )
    }

    /// The `priorityClassName` of a job of this type and preemption policy.
    pub(super) fn priority_class(&self, schedule_type: ScheduleType, policy: PreemptionPolicy) -> Option<String> {
        match (schedule_type, policy) {
            (ScheduleType::Normal, PreemptionPolicy::Never) => self
                .priority_class_never
                .clone()
                .or_else(|| self.priority_class_normal.clone()),
            (ScheduleType::Normal, PreemptionPolicy::PreemptLowerPriority) => self.priority_class_normal.clone(),
            (ScheduleType::Backfill, _) => self.priority_class_backfill.clone(),
        }
    }
}

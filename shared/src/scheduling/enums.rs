//! The vocabulary enums of `spec/prequeue.md` and `spec/api.md`, with their exact serde names.
//! Each also converts to and from its wire string (`as_str` / `FromStr`) so the store can keep
//! them in text columns under the same names the API uses.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A string that names no variant of the enum it was parsed into.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a valid {kind}")]
pub struct UnknownVariant {
    /// Which enum was being parsed (`"schedule type"`, `"job phase"`, …).
    pub kind: &'static str,
    /// The rejected text.
    pub value: String,
}

/// Declares `as_str`, `ALL`, `Display` and `FromStr` from one table of variant ↔ wire name, so
/// the serde names and the text forms cannot drift apart.
macro_rules! wire_names {
    ($ty:ident, $kind:literal, { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The wire name (the same as the serde name).
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = UnknownVariant;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok($ty::$variant),)+
                    _ => Err(UnknownVariant { kind: $kind, value: s.to_owned() }),
                }
            }
        }
    };
}

/// Whether a job competes under quotas (`normal`) or runs on idle capacity and may be preempted
/// (`backfill`, shown to users as "Elastic").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum ScheduleType {
    /// Counted against quotas and capacities; may wait, time out and block.
    #[default]
    Normal,
    /// Never counted against quotas; may be preempted for a timed-out normal job.
    Backfill,
}

wire_names!(ScheduleType, "schedule type", { Normal => "normal", Backfill => "backfill" });

/// The kind of a job, which fixes its task layout (`spec/prequeue.md` §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum JobKind {
    /// A notebook: one task, one replica.
    Jupyter,
    /// A web IDE: one task, one replica.
    Webide,
    /// One task, any replicas.
    Custom,
    /// `master` ×1 + `worker` ×n.
    Pytorch,
    /// `ps` ×n + `worker` ×m.
    Tensorflow,
}

wire_names!(JobKind, "job kind", {
    Jupyter => "jupyter",
    Webide => "webide",
    Custom => "custom",
    Pytorch => "pytorch",
    Tensorflow => "tensorflow",
});

impl JobKind {
    /// Only jupyter, webide and custom jobs may be backfill (and so only they are ever
    /// preemption victims): distributed training cannot lose a pod and carry on.
    pub fn may_backfill(self) -> bool {
        matches!(self, JobKind::Jupyter | JobKind::Webide | JobKind::Custom)
    }
}

/// The life-cycle phase of a job (`spec/prequeue.md` §2), serialized as the PascalCase word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum JobPhase {
    /// Waiting in Anteroom's prequeue; not in the cluster, occupies nothing.
    Prequeue,
    /// Claimed for activation; the cluster create is in flight (users see Pending).
    Activating,
    /// Created in the cluster, not yet running.
    Pending,
    /// Running.
    Running,
    /// Finished successfully.
    Completed,
    /// Finished with an error.
    Failed,
    /// Being aborted by Volcano.
    Aborting,
    /// Aborted by Volcano.
    Aborted,
    /// Being restarted by Volcano.
    Restarting,
    /// Finishing.
    Completing,
    /// Being terminated.
    Terminating,
    /// Terminated.
    Terminated,
    /// Removed by its owner or an admin.
    Deleted,
    /// A backfill job removed to make room for a normal job.
    Preempted,
}

wire_names!(JobPhase, "job phase", {
    Prequeue => "Prequeue",
    Activating => "Activating",
    Pending => "Pending",
    Running => "Running",
    Completed => "Completed",
    Failed => "Failed",
    Aborting => "Aborting",
    Aborted => "Aborted",
    Restarting => "Restarting",
    Completing => "Completing",
    Terminating => "Terminating",
    Terminated => "Terminated",
    Deleted => "Deleted",
    Preempted => "Preempted",
});

impl JobPhase {
    /// Phases whose jobs hold cluster resources and so count against quotas and capacities.
    /// `Prequeue` does not occupy: the job is not in the cluster yet.
    pub fn is_occupying(self) -> bool {
        matches!(
            self,
            JobPhase::Activating
                | JobPhase::Pending
                | JobPhase::Running
                | JobPhase::Restarting
                | JobPhase::Completing
                | JobPhase::Aborting
                | JobPhase::Terminating
        )
    }

    /// Phases a job never leaves: deleting it again answers `already_finished`.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobPhase::Completed
                | JobPhase::Failed
                | JobPhase::Aborted
                | JobPhase::Terminated
                | JobPhase::Deleted
                | JobPhase::Preempted
        )
    }
}

/// Whether a timed-out normal job may cause backfill jobs to be preempted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum PreemptionPolicy {
    /// The default: may preempt backfill jobs once timed out.
    #[default]
    PreemptLowerPriority,
    /// Waits, times out and blocks like any normal job, but never preempts.
    Never,
}

wire_names!(PreemptionPolicy, "preemption policy", {
    PreemptLowerPriority => "PreemptLowerPriority",
    Never => "Never",
});

/// How a round orders the prequeued jobs it activates (`spec/prequeue.md` §5 step 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum ActivationOrder {
    /// First come, first served: (submittedAt, id).
    #[default]
    Fcfs,
    /// Lowest dominant share per (queue, owner) first; each owner's jobs stay FCFS.
    FairShare,
    /// Fair share over time (§10): the dominant share now plus the pair's decayed past usage
    /// as a share of everyone's; with no history, the same order as `fairShare`.
    FairShareHistory,
}

impl ActivationOrder {
    /// Whether the order walks (queue, owner) pairs by share (`fairShare`, `fairShareHistory`).
    pub fn is_fair_share(self) -> bool {
        matches!(self, ActivationOrder::FairShare | ActivationOrder::FairShareHistory)
    }
}

wire_names!(ActivationOrder, "activation order", {
    Fcfs => "fcfs",
    FairShare => "fairShare",
    FairShareHistory => "fairShareHistory",
});

#[cfg(test)]
mod tests {
    use super::*;

    fn json<T: Serialize>(value: T) -> String {
        serde_json::to_string(&value).expect("serializes")
    }

    #[test]
    fn enums_serialize_with_the_names_of_the_api() {
        assert_eq!(json(ScheduleType::Backfill), "\"backfill\"");
        assert_eq!(json(JobKind::Webide), "\"webide\"");
        assert_eq!(json(JobKind::Tensorflow), "\"tensorflow\"");
        assert_eq!(json(JobPhase::Prequeue), "\"Prequeue\"");
        assert_eq!(json(JobPhase::Preempted), "\"Preempted\"");
        assert_eq!(json(PreemptionPolicy::PreemptLowerPriority), "\"PreemptLowerPriority\"");
        assert_eq!(json(ActivationOrder::FairShare), "\"fairShare\"");
        assert_eq!(json(ActivationOrder::Fcfs), "\"fcfs\"");
    }

    #[test]
    fn wire_names_and_serde_names_agree_for_every_variant() {
        fn check<T>(all: &[T])
        where
            T: Serialize + FromStr<Err = UnknownVariant> + fmt::Display + PartialEq + fmt::Debug + Copy,
        {
            for v in all {
                assert_eq!(json(*v), format!("\"{v}\""));
                assert_eq!(v.to_string().parse::<T>().expect("round trip"), *v);
            }
        }
        check(ScheduleType::ALL);
        check(JobKind::ALL);
        check(JobPhase::ALL);
        check(PreemptionPolicy::ALL);
        check(ActivationOrder::ALL);
        assert_eq!(JobPhase::ALL.len(), 14);
    }

    #[test]
    fn unknown_names_are_rejected_with_the_value_named() {
        let err = "Queued".parse::<JobPhase>().expect_err("unknown");
        assert_eq!(err.to_string(), "\"Queued\" is not a valid job phase");
        assert!(serde_json::from_str::<ScheduleType>("\"Normal\"").is_err());
    }

    #[test]
    fn prequeue_does_not_occupy_but_activating_does() {
        assert!(!JobPhase::Prequeue.is_occupying());
        for p in [
            JobPhase::Activating,
            JobPhase::Pending,
            JobPhase::Running,
            JobPhase::Restarting,
            JobPhase::Completing,
            JobPhase::Aborting,
            JobPhase::Terminating,
        ] {
            assert!(p.is_occupying(), "{p}");
            assert!(!p.is_terminal(), "{p}");
        }
    }

    #[test]
    fn finished_phases_are_terminal_and_occupy_nothing() {
        for p in [
            JobPhase::Completed,
            JobPhase::Failed,
            JobPhase::Aborted,
            JobPhase::Terminated,
            JobPhase::Deleted,
            JobPhase::Preempted,
        ] {
            assert!(p.is_terminal(), "{p}");
            assert!(!p.is_occupying(), "{p}");
        }
        assert!(!JobPhase::Prequeue.is_terminal());
    }

    #[test]
    fn only_single_task_kinds_may_backfill() {
        assert!(JobKind::Jupyter.may_backfill());
        assert!(JobKind::Webide.may_backfill());
        assert!(JobKind::Custom.may_backfill());
        assert!(!JobKind::Pytorch.may_backfill());
        assert!(!JobKind::Tensorflow.may_backfill());
    }

    #[test]
    fn defaults_are_normal_preempting_and_fcfs() {
        assert_eq!(ScheduleType::default(), ScheduleType::Normal);
        assert_eq!(PreemptionPolicy::default(), PreemptionPolicy::PreemptLowerPriority);
        assert_eq!(ActivationOrder::default(), ActivationOrder::Fcfs);
    }
}

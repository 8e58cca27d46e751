//! The plain input of every decision: one consistent snapshot of configuration, queues, quotas,
//! jobs, usage and nodes (`spec/prequeue.md` §5 step 1).
//!
//! The store fills a [`Snapshot`] from a constant number of queries (one per field); the watcher
//! passes it to [`select_round`](super::round::select_round) and
//! [`plan_preemption`](super::preemption::plan_preemption), the submit handler to
//! [`decide_submission`](super::submit::decide_submission), and the simulated cluster reuses
//! [`NodeSnapshot`] and the placement functions. Nothing here does I/O or reads a clock.

use std::collections::HashMap;

use anteroom_shared::scheduling::{
    BorrowPolicy, JobKind, JobPhase, NodeSet, PreemptionPolicy, Quantity, QueueSharing, ResourceList, ScheduleType,
};
pub use anteroom_shared::scheduling::{
    ConfigFieldError, PrequeueConfig, Taint, TaintEffect, Toleration, TolerationOperator,
};
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// Database id of a job.
pub type JobId = i64;
/// Database id of a user (the owner of a job).
pub type UserId = i64;

/// A queue of the tree: a Volcano queue name, its parent and its capacity (`spec/prequeue.md`
/// §1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueSpec {
    /// Queue name.
    pub name: String,
    /// Parent queue; `None` for a root such as `default`.
    #[serde(default)]
    pub parent: Option<String>,
    /// Limits on the normal jobs of this queue and all its descendants, all users together;
    /// `None` or an absent resource = unlimited.
    #[serde(default)]
    pub capacity: Option<ResourceList>,
    /// Guarantee, lending, weight and per-job rules (§9); the default shares nothing.
    #[serde(default)]
    pub sharing: QueueSharing,
    /// Set while its budget is spent and an admin chose to hold its normal jobs (§10); the
    /// hold lifts at `until` whatever is stored.
    #[serde(default)]
    pub budget_hold: Option<anteroom_shared::scheduling::BudgetHold>,
}

impl QueueSpec {
    /// Its budget hold, if it holds at `now`.
    pub fn holding_budget(&self, now: DateTime<Utc>) -> Option<&anteroom_shared::scheduling::BudgetHold> {
        self.budget_hold.as_ref().filter(|h| h.until > now)
    }
}

/// An admin quota rule on one queue: limits for each user separately inside that queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueQuota {
    /// The queue the rule applies to.
    pub queue: String,
    /// Per-user limits; an absent resource is unlimited.
    pub limits: ResourceList,
    /// Per-user maximum of occupying normal jobs in the queue.
    #[serde(default)]
    pub max_active_jobs: Option<u32>,
}

/// One invalid field of a [`QueueQuota`] write, named as the API names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum QuotaFieldError {
    /// A limit below zero: usage is never negative, so it would refuse every job, and any sum
    /// against it would read as room given back.
    #[error("{field}: {value} is negative; a limit must be zero or more")]
    NegativeLimit {
        /// `limits.<resource>`.
        field: String,
        /// The rejected limit.
        value: Quantity,
    },
    /// `maxActiveJobs: 0`: a job under the rule could never start, yet it would wait in the
    /// prequeue for ever. Absent means unlimited.
    #[error("maxActiveJobs: must be at least 1 (omit it for no limit)")]
    ZeroMaxActiveJobs,
}

impl QuotaFieldError {
    /// The offending API field.
    pub fn field(&self) -> &str {
        match self {
            QuotaFieldError::NegativeLimit { field, .. } => field,
            QuotaFieldError::ZeroMaxActiveJobs => "maxActiveJobs",
        }
    }
}

impl QueueQuota {
    /// Validates an admin write of a rule as a whole, listing every offending field so the
    /// API answers one 422 and nothing a job could never pass reaches the database.
    pub fn validate(&self) -> Result<(), Vec<QuotaFieldError>> {
        let mut errors: Vec<QuotaFieldError> = self
            .limits
            .iter()
            .filter(|(_, value)| value.milli() < 0)
            .map(|(name, value)| QuotaFieldError::NegativeLimit {
                field: format!("limits.{name}"),
                value,
            })
            .collect();
        if self.max_active_jobs == Some(0) {
            errors.push(QuotaFieldError::ZeroMaxActiveJobs);
        }
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }
}

/// The scheduling fields of one job (`Prequeue`, `Activating`, `Pending` or `Running`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSnapshot {
    /// Database id; ties in submission order are broken by it.
    pub id: JobId,
    /// Owner.
    pub owner: UserId,
    /// Queue name.
    pub queue: String,
    /// Kind.
    pub kind: JobKind,
    /// Normal or backfill.
    pub schedule_type: ScheduleType,
    /// Current phase.
    pub phase: JobPhase,
    /// Whether it may cause preemption once timed out.
    #[serde(default)]
    pub preemption_policy: PreemptionPolicy,
    /// Start of the waiting clock (time spent in the prequeue counts).
    pub submitted_at: DateTime<Utc>,
    /// When its pods started running (backfill minimum runtime); `None` if not yet.
    #[serde(default)]
    pub started_at: Option<DateTime<Utc>>,
    /// Waiting tolerance copied at submission; `None` for backfill and legacy jobs.
    #[serde(default)]
    pub waiting_tolerance_seconds: Option<i64>,
    /// When it first waited for shared room (`spec/prequeue.md` §1): the tolerance counts from
    /// here. `None` while it has only been held by its owner's own quota (then it never times
    /// out).
    #[serde(default)]
    pub waiting_since: Option<DateTime<Utc>>,
    /// Σ replicas × requests.
    pub resources: ResourceList,
    /// Host names it is pinned to.
    #[serde(default)]
    pub explicit_nodes: NodeSet,
    /// Exactly one task with one replica.
    pub single_node: bool,
    /// Nodes its pods run on (victim location for preemption).
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Locked jobs are never preempted while `locked_until > now`.
    #[serde(default)]
    pub locked_until: Option<DateTime<Utc>>,
    /// Tolerations of its pods, for placement on tainted nodes.
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
    /// How long it may run once started (the cluster ends it then); `None`: no limit, so
    /// nothing that waits for its room can be given a start estimate.
    #[serde(default)]
    pub max_runtime_seconds: Option<i64>,
    /// Its priority in its queue, whether it may borrow, and whether it borrows now (§9).
    #[serde(default)]
    pub sharing: JobSharing,
}

/// A job's part in sharing between queues (`spec/prequeue.md` §9).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSharing {
    /// Priority inside its queue (higher first; 0 unless the queue allows a range).
    #[serde(default)]
    pub priority: i32,
    /// Whether it may use room beyond its queue's guarantee.
    #[serde(default)]
    pub borrow: BorrowPolicy,
    /// It was admitted beyond its queue's guarantee (it may be reclaimed).
    #[serde(default)]
    pub borrowing: bool,
}

impl JobSnapshot {
    /// A normal job with a waiting tolerance whose `waitingSince + tolerance < now` while it is
    /// still `Prequeue` or `Pending` (`spec/prequeue.md` §1); never while `waitingSince` is
    /// unset.
    pub fn is_timed_out(&self, now: DateTime<Utc>) -> bool {
        matches!(self.phase, JobPhase::Prequeue | JobPhase::Pending)
            && self.schedule_type == ScheduleType::Normal
            && self.waiting_since.is_some_and(|since| {
                self.waiting_tolerance_seconds
                    .is_some_and(|t| deadline(since, t).is_some_and(|d| d < now))
            })
    }

    /// True while an admin lock protects it from preemption.
    pub fn is_locked(&self, now: DateTime<Utc>) -> bool {
        self.locked_until.is_some_and(|until| until > now)
    }
}

/// `start + seconds`, or `None` when the sum leaves chrono's range (then never reached).
pub(crate) fn deadline(start: DateTime<Utc>, seconds: i64) -> Option<DateTime<Utc>> {
    Duration::try_seconds(seconds).and_then(|d| start.checked_add_signed(d))
}

/// What one user occupies in one queue: normal jobs in occupying phases only (backfill never
/// counts). Queue capacities sum these rows over all users and descendants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRow {
    /// The user.
    pub owner: UserId,
    /// The queue.
    pub queue: String,
    /// Σ resources of the occupying normal jobs.
    pub resources: ResourceList,
    /// Number of occupying normal jobs (for `maxActiveJobs`).
    pub active_jobs: u32,
}

/// A node as the core sees it: capacity, what is free now, and whether pods may land there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSnapshot {
    /// Host name (`kubernetes.io/hostname`).
    pub name: String,
    /// `Ready=True`.
    pub ready: bool,
    /// Not cordoned.
    pub schedulable: bool,
    /// Allocatable capacity.
    pub allocatable: ResourceList,
    /// Allocatable minus the requests of pods not yet finished (terminating pods still count).
    pub free: ResourceList,
    /// Node labels.
    #[serde(default)]
    pub labels: HashMap<String, String>,
    /// Node taints.
    #[serde(default)]
    pub taints: Vec<Taint>,
}

/// A preemption executed earlier whose victims are still terminating: "these victims are
/// terminating on `node` for `beneficiary`" (`spec/prequeue.md` §5 step 3).
///
/// While any victim is listed, the room the victims will free on `node` is the beneficiary's:
/// the beneficiary gets no second plan and no other job plans preemption on that node (so no
/// one counts the terminating victims, which run there, as its own). Without this a younger timed-out job would see
/// the same node short of room (terminating pods still count against `free`), plan victims of
/// its own there, and take the room the first plan freed — the beneficiary would then be
/// planned for again: the reference's over-preemption in a new form.
///
/// The watcher builds one per (beneficiary, node) from the store: the jobs it marked
/// `Preempted` for that beneficiary (the preemption event names it) on that node whose pods
/// still exist in the cluster. [`PreemptionPlan::in_flight`](super::PreemptionPlan::in_flight)
/// gives the entry of a plan just executed. An entry whose victims are all gone is ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InFlightPreemption {
    /// The normal job the victims made room for.
    pub beneficiary: JobId,
    /// The node the victims run on, whose terminating room is reserved for the beneficiary.
    pub node: String,
    /// Victims whose pods still exist.
    pub terminating_victims: Vec<JobId>,
}

impl InFlightPreemption {
    /// True while some victim is still terminating (only then does the entry reserve room).
    pub fn is_active(&self) -> bool {
        !self.terminating_victims.is_empty()
    }
}

/// The last preemption plan executed for a job (`spec/prequeue.md` §5 step 3, issue 23): a
/// beneficiary gets no new plan within `preemptionPlanWindowSeconds` (or its tolerance) of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentPlan {
    /// The job the plan made room for.
    pub beneficiary: JobId,
    /// When the plan was executed.
    pub planned_at: DateTime<Utc>,
}

/// Everything one decision needs, loaded at once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Current configuration.
    pub config: PrequeueConfig,
    /// Every queue (the tree).
    pub queues: Vec<QueueSpec>,
    /// Every quota rule.
    pub quotas: Vec<QueueQuota>,
    /// Every `Prequeue`, `Activating`, `Pending` and `Running` job (other phases are ignored).
    pub jobs: Vec<JobSnapshot>,
    /// Usage per (user, queue).
    pub usage: Vec<UsageRow>,
    /// Every node.
    pub nodes: Vec<NodeSnapshot>,
    /// Preemptions whose victims are still terminating.
    #[serde(default)]
    pub preemptions_in_flight: Vec<InFlightPreemption>,
    /// The last plan of each job preempted for.
    #[serde(default)]
    pub recent_plans: Vec<RecentPlan>,
    /// Decayed past usage per (queue, owner) (§10), which `fairShareHistory` orders by; empty
    /// under the other orders. Shared: a round's copies of the snapshot do not copy it.
    #[serde(skip)]
    pub history: std::sync::Arc<super::history::History>,
}

/// Usage rows computed from jobs: the occupying normal jobs, summed per (owner, queue), in
/// (owner, queue) order. The store may compute the same rows itself; tests and benchmarks use
/// this. Sums saturate rather than fail (a saturated usage exceeds every limit, which is the
/// safe reading).
pub fn usage_from_jobs<'a, I>(jobs: I) -> Vec<UsageRow>
where
    I: IntoIterator<Item = &'a JobSnapshot>,
{
    let mut rows: std::collections::BTreeMap<(UserId, &str), UsageRow> = std::collections::BTreeMap::new();
    for job in jobs {
        if job.schedule_type != ScheduleType::Normal || !job.phase.is_occupying() {
            continue;
        }
        let row = rows.entry((job.owner, job.queue.as_str())).or_insert_with(|| UsageRow {
            owner: job.owner,
            queue: job.queue.clone(),
            resources: ResourceList::new(),
            active_jobs: 0,
        });
        row.resources.saturating_add_assign(&job.resources);
        row.active_jobs = row.active_jobs.saturating_add(1);
    }
    rows.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prequeue::tests::fixtures::{JobBuilder, t0};

    #[test]
    fn default_config_matches_the_spec_table() {
        let c = PrequeueConfig::default();
        assert!(!c.backfill_enabled && !c.queue_quota_enabled);
        assert_eq!(c.normal_job_waiting_tolerance_seconds, 300);
        assert_eq!(c.round_limit(), 10);
        assert_eq!(c.max_prequeued_jobs_per_user, 100);
        assert_eq!(c.activation_order, anteroom_shared::scheduling::ActivationOrder::Fcfs);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn config_validation_names_every_offending_field() {
        let c = PrequeueConfig {
            normal_job_waiting_tolerance_seconds: 0,
            backfill_min_runtime_seconds: -1,
            prequeue_candidate_size: 0,
            ..PrequeueConfig::default()
        };
        let errors = c.validate().expect_err("invalid");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_ref()).collect();
        assert_eq!(
            fields,
            [
                "normalJobWaitingToleranceSeconds",
                "prequeueCandidateSize",
                "backfillMinRuntimeSeconds"
            ]
        );
    }

    #[test]
    fn config_refuses_default_requests_of_zero_and_keeps_them_as_written() {
        let c = PrequeueConfig {
            max_unfinished_jobs_per_user: 0,
            ..PrequeueConfig::default()
        };
        let fields: Vec<String> = c
            .validate()
            .expect_err("invalid")
            .iter()
            .map(|e| e.field.to_string())
            .collect();
        assert_eq!(fields, ["maxUnfinishedJobsPerUser"]);
        // The defaults round-trip with the API's field names, as written.
        let mut json = serde_json::to_value(PrequeueConfig::default()).expect("serializes");
        assert_eq!(json["defaultRequests"]["custom"]["memory"], "4Gi");
        assert_eq!(json["maxUnfinishedJobsPerUser"], 1000);
        json["defaultRequests"]["pytorch"]["memory"] = "1.1Ti".into();
        let back: PrequeueConfig = serde_json::from_value(json.clone()).expect("a valid default");
        assert_eq!(serde_json::to_value(&back).expect("serializes"), json);
        // Zero, a sign, an exponent or a number instead of a string: refused when read.
        for bad in [
            serde_json::json!("0"),
            serde_json::json!("0Gi"),
            serde_json::json!("-1"),
            serde_json::json!("1e3"),
            serde_json::json!(""),
            serde_json::json!(2),
        ] {
            json["defaultRequests"]["jupyter"]["cpu"] = bad.clone();
            assert!(serde_json::from_value::<PrequeueConfig>(json.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn config_refuses_a_round_limit_of_zero_in_either_field() {
        for (c, field) in [
            (
                PrequeueConfig {
                    max_total_activations_per_round: 0,
                    ..PrequeueConfig::default()
                },
                "maxTotalActivationsPerRound",
            ),
            (
                PrequeueConfig {
                    prequeue_candidate_size: 0,
                    ..PrequeueConfig::default()
                },
                "prequeueCandidateSize",
            ),
        ] {
            let errors = c.validate().expect_err("a round limit of 0");
            assert_eq!(errors.iter().map(|e| e.field.as_ref()).collect::<Vec<_>>(), [field]);
            // Should such a value reach the store anyway, a round still selects one job.
            assert_eq!(c.round_limit(), 1);
        }
    }

    #[test]
    fn a_quota_rule_refuses_max_active_jobs_of_zero_and_negative_limits() {
        let rule = QueueQuota {
            queue: "default".into(),
            limits: crate::prequeue::tests::fixtures::rl(&[("cpu", "-1"), ("memory", "0"), ("nvidia.com/a100", "-2")]),
            max_active_jobs: Some(0),
        };
        let errors = rule.validate().expect_err("invalid");
        assert_eq!(
            errors.iter().map(QuotaFieldError::field).collect::<Vec<_>>(),
            ["limits.cpu", "limits.nvidia.com/a100", "maxActiveJobs"]
        );
        assert_eq!(
            errors[0],
            QuotaFieldError::NegativeLimit {
                field: "limits.cpu".into(),
                value: Quantity::from_units(-1),
            }
        );
        let fine = QueueQuota {
            max_active_jobs: Some(1),
            limits: crate::prequeue::tests::fixtures::rl(&[("cpu", "0")]),
            ..rule.clone()
        };
        assert_eq!(fine.validate(), Ok(()));
        let unlimited = QueueQuota {
            max_active_jobs: None,
            ..fine
        };
        assert_eq!(unlimited.validate(), Ok(()));
    }

    #[test]
    fn config_serializes_with_the_api_field_names() {
        let json = serde_json::to_value(PrequeueConfig::default()).expect("serializes");
        assert_eq!(json["activationOrder"], "fcfs");
        assert_eq!(json["prequeueCandidateSize"], 10);
        assert!(serde_json::from_str::<PrequeueConfig>(r#"{"bogus": 1}"#).is_err());
    }

    #[test]
    fn a_normal_job_times_out_only_after_its_tolerance() {
        // Submitted at t0 + 1 s: the deadline is t0 + 301 s, and only strictly after it counts.
        let job = JobBuilder::normal(1).tolerance(300).phase(JobPhase::Pending).build();
        assert!(!job.is_timed_out(t0() + Duration::seconds(301)));
        assert!(job.is_timed_out(t0() + Duration::seconds(302)));
        let running = JobBuilder::normal(2).tolerance(300).phase(JobPhase::Running).build();
        assert!(!running.is_timed_out(t0() + Duration::days(1)));
        let backfill = JobBuilder::backfill(3).phase(JobPhase::Pending).build();
        assert!(!backfill.is_timed_out(t0() + Duration::days(1)));
        let huge = JobBuilder::normal(4).tolerance(i64::MAX).build();
        assert!(!huge.is_timed_out(t0() + Duration::days(1)));
    }

    #[test]
    fn tolerations_follow_kubernetes_matching() {
        let taint = Taint {
            key: "gpu".into(),
            value: Some("a100".into()),
            effect: TaintEffect::NoSchedule,
        };
        let exists_all = Toleration {
            operator: TolerationOperator::Exists,
            ..Toleration::default()
        };
        let equal = Toleration {
            key: Some("gpu".into()),
            value: Some("a100".into()),
            ..Toleration::default()
        };
        let wrong_value = Toleration {
            key: Some("gpu".into()),
            value: Some("h100".into()),
            ..Toleration::default()
        };
        let wrong_effect = Toleration {
            effect: Some(TaintEffect::NoExecute),
            ..equal.clone()
        };
        assert!(exists_all.tolerates(&taint));
        assert!(equal.tolerates(&taint));
        assert!(!wrong_value.tolerates(&taint));
        assert!(!wrong_effect.tolerates(&taint));
    }

    #[test]
    fn usage_counts_occupying_normal_jobs_only() {
        let jobs = vec![
            JobBuilder::normal(1).owner(7).cpu("2").phase(JobPhase::Running).build(),
            JobBuilder::normal(2)
                .owner(7)
                .cpu("1")
                .phase(JobPhase::Activating)
                .build(),
            JobBuilder::normal(3)
                .owner(7)
                .cpu("4")
                .phase(JobPhase::Prequeue)
                .build(),
            JobBuilder::backfill(4)
                .owner(7)
                .cpu("8")
                .phase(JobPhase::Running)
                .build(),
        ];
        let usage = usage_from_jobs(&jobs);
        assert_eq!(usage.len(), 1);
        assert_eq!(usage[0].resources.get("cpu").to_string(), "3");
        assert_eq!(usage[0].active_jobs, 2);
    }

    #[test]
    fn usage_rows_keep_no_zero_valued_resources() {
        let jobs = vec![
            JobBuilder::normal(1)
                .cpu("1")
                .res("v.io/r0", "0")
                .phase(JobPhase::Running)
                .build(),
        ];
        let usage = usage_from_jobs(&jobs);
        assert_eq!(usage[0].resources.iter().map(|(n, _)| n).collect::<Vec<_>>(), ["cpu"]);
    }
}

//! Why a job waits: typed reasons with details, serialized as the API's reason objects
//! `{code, message, details}` (`spec/api.md`, `spec/prequeue.md` §8).

use std::fmt;

pub use anteroom_shared::scheduling::reasons::{
    BlockedByDetails, BorrowingLimitDetails, BudgetExhaustedDetails, MaxActiveJobsDetails, QueueCapacityDetails,
    QuotaDetails, ReclaimingDetails, ResourceCheck, RoundLimitDetails,
};
use serde::de::Error as _;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a job waits in the prequeue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// `quota`: the user's usage + request exceeds a limit of the queue's rule.
    Quota(QuotaDetails),
    /// `max_active_jobs`: the user has the maximum of occupying jobs in the queue.
    MaxActiveJobs(MaxActiveJobsDetails),
    /// `queue_capacity`: the queue's or an ancestor's usage (all users) + request exceeds its
    /// capacity.
    QueueCapacity(QueueCapacityDetails),
    /// `blocked_by`: a timed-out normal job in the same queue goes first.
    BlockedBy(BlockedByDetails),
    /// `backfill_disabled`: backfill jobs are held while backfill is disabled.
    BackfillDisabled,
    /// `round_limit`: eligible, waiting for the next round.
    RoundLimit(RoundLimitDetails),
    /// `borrowing_limit`: it would borrow beyond its queue's guarantee and no room is lent.
    BorrowingLimit(BorrowingLimitDetails),
    /// `reclaiming`: within its guarantee; the room owed to it is taken back from borrowers.
    Reclaiming(ReclaimingDetails),
    /// `budget_exhausted`: its queue's (or an ancestor's) budget is spent for the period and
    /// an admin chose to hold normal jobs until the next (§10).
    BudgetExhausted(BudgetExhaustedDetails),
}

impl Reason {
    /// The stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Reason::Quota(_) => "quota",
            Reason::MaxActiveJobs(_) => "max_active_jobs",
            Reason::QueueCapacity(_) => "queue_capacity",
            Reason::BlockedBy(_) => "blocked_by",
            Reason::BackfillDisabled => "backfill_disabled",
            Reason::RoundLimit(_) => "round_limit",
            Reason::BorrowingLimit(_) => "borrowing_limit",
            Reason::Reclaiming(_) => "reclaiming",
            Reason::BudgetExhausted(_) => "budget_exhausted",
        }
    }

    /// A human message in English (the UI translates by code and details).
    pub fn message(&self) -> String {
        self.to_string()
    }
}

/// Lists the exceeded resources as `cpu 9 > 8`, for messages.
fn exceeded_list(resources: &[ResourceCheck]) -> String {
    let parts: Vec<String> = resources
        .iter()
        .filter(|r| r.exceeded)
        .map(|r| format!("{} {} + {} > {}", r.resource, r.usage, r.request, r.limit))
        .collect();
    parts.join(", ")
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Quota(d) => write!(
                f,
                "your quota in queue {:?} would be exceeded (used + requested > limit): {}",
                d.queue,
                exceeded_list(&d.resources)
            ),
            Reason::MaxActiveJobs(d) => write!(
                f,
                "you already have {} active jobs in queue {:?} (at most {})",
                d.active, d.queue, d.limit
            ),
            Reason::QueueCapacity(d) => write!(
                f,
                "the capacity of queue {:?} would be exceeded (all users): {}",
                d.queue,
                exceeded_list(&d.resources)
            ),
            Reason::BlockedBy(d) => write!(
                f,
                "job {} ({}) has waited past its tolerance in queue {:?} and goes first",
                d.job_id, d.phase, d.queue
            ),
            Reason::BackfillDisabled => f.write_str("backfill jobs are held while backfill is disabled"),
            Reason::RoundLimit(d) => write!(
                f,
                "waiting for the next activation round (at most {} jobs per round)",
                d.limit
            ),
            Reason::BorrowingLimit(d) if !d.may_borrow => write!(
                f,
                "it waits for room guaranteed to queue {:?} (it does not borrow): {}",
                d.job_queue,
                exceeded_list(&d.resources)
            ),
            Reason::BorrowingLimit(d) => write!(
                f,
                "queue {:?} has used its guarantee and no idle room is lent now: {}",
                d.job_queue,
                exceeded_list(&d.resources)
            ),
            Reason::Reclaiming(d) if d.nothing_to_take => write!(
                f,
                "room guaranteed to queue {:?} is held by jobs that do not borrow it: nothing can be taken back, and it frees as they end: {}",
                d.job_queue,
                exceeded_list(&d.resources)
            ),
            Reason::Reclaiming(d) if d.victims.is_empty() => write!(
                f,
                "room guaranteed to queue {:?} is used by borrowers and will be taken back{}: {}",
                d.job_queue,
                d.reclaim_at
                    .map(|at| format!(" from {}", at.to_rfc3339()))
                    .unwrap_or_default(),
                exceeded_list(&d.resources)
            ),
            Reason::Reclaiming(d) => write!(
                f,
                "room guaranteed to queue {:?} is being taken back from {} borrowing job(s): {:?}",
                d.job_queue,
                d.victims.len(),
                d.victims
            ),
            Reason::BudgetExhausted(d) => write!(
                f,
                "queue {:?} has used {} of its {} GPU-hours for this period; its normal jobs are held until {}",
                d.queue,
                d.used_gpu_hours.hours(),
                d.budget_gpu_hours.hours(),
                d.resets_at.to_rfc3339()
            ),
        }
    }
}

impl Serialize for Reason {
    /// `{code, message, details}`; `details` is `null` for reasons without any.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Reason", 3)?;
        s.serialize_field("code", self.code())?;
        s.serialize_field("message", &self.message())?;
        match self {
            Reason::Quota(d) => s.serialize_field("details", d)?,
            Reason::MaxActiveJobs(d) => s.serialize_field("details", d)?,
            Reason::QueueCapacity(d) => s.serialize_field("details", d)?,
            Reason::BlockedBy(d) => s.serialize_field("details", d)?,
            Reason::BackfillDisabled => s.serialize_field("details", &None::<()>)?,
            Reason::RoundLimit(d) => s.serialize_field("details", d)?,
            Reason::BorrowingLimit(d) => s.serialize_field("details", d)?,
            Reason::Reclaiming(d) => s.serialize_field("details", d)?,
            Reason::BudgetExhausted(d) => s.serialize_field("details", d)?,
        }
        s.end()
    }
}

impl<'de> Deserialize<'de> for Reason {
    /// Reads back what [`Serialize`] wrote (events store reasons as JSON); the message is
    /// recomputed from the details.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            code: String,
            #[serde(default)]
            details: serde_json::Value,
        }
        let wire = Wire::deserialize(deserializer)?;
        let details = wire.details;
        let parsed = match wire.code.as_str() {
            "quota" => serde_json::from_value(details).map(Reason::Quota),
            "max_active_jobs" => serde_json::from_value(details).map(Reason::MaxActiveJobs),
            "queue_capacity" => serde_json::from_value(details).map(Reason::QueueCapacity),
            "blocked_by" => serde_json::from_value(details).map(Reason::BlockedBy),
            "backfill_disabled" => Ok(Reason::BackfillDisabled),
            "round_limit" => serde_json::from_value(details).map(Reason::RoundLimit),
            "borrowing_limit" => serde_json::from_value(details).map(Reason::BorrowingLimit),
            "reclaiming" => serde_json::from_value(details).map(Reason::Reclaiming),
            "budget_exhausted" => serde_json::from_value(details).map(Reason::BudgetExhausted),
            other => return Err(D::Error::custom(format!("unknown reason code {other:?}"))),
        };
        parsed.map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anteroom_shared::scheduling::Quantity;

    #[test]
    fn reasons_serialize_as_code_message_and_camel_case_details() {
        let reason = Reason::QueueCapacity(QueueCapacityDetails {
            queue: "root".into(),
            job_queue: "sub-1".into(),
            resources: vec![ResourceCheck {
                resource: "cpu".into(),
                usage: Quantity::from_units(2),
                request: Quantity::from_units(2),
                limit: Quantity::from_units(2),
                exceeded: true,
            }],
        });
        let json = serde_json::to_value(&reason).expect("serializes");
        assert_eq!(json["code"], "queue_capacity");
        assert_eq!(json["details"]["queue"], "root");
        assert_eq!(json["details"]["jobQueue"], "sub-1");
        assert_eq!(json["details"]["resources"][0]["usage"], "2");
        assert!(json["message"].as_str().expect("text").contains("cpu 2 + 2 > 2"));
        let back: Reason = serde_json::from_value(json).expect("reads back");
        assert_eq!(back, reason);
    }

    #[test]
    fn reasons_without_details_serialize_null_details() {
        let json = serde_json::to_value(Reason::BackfillDisabled).expect("serializes");
        assert_eq!(json["code"], "backfill_disabled");
        assert!(json["details"].is_null());
        let back: Reason = serde_json::from_value(json).expect("reads back");
        assert_eq!(back, Reason::BackfillDisabled);
        assert!(serde_json::from_str::<Reason>(r#"{"code":"nope"}"#).is_err());
    }

    #[test]
    fn a_spent_budget_serializes_hours_as_numbers_and_reads_back() {
        let reason = Reason::BudgetExhausted(BudgetExhaustedDetails {
            queue: "lab".into(),
            job_queue: "lab/nlp".into(),
            used_gpu_hours: anteroom_shared::scheduling::GpuHours::saturating(100.25),
            budget_gpu_hours: anteroom_shared::scheduling::GpuHours::saturating(100.0),
            resets_at: "2026-12-01T00:00:00Z".parse().expect("time"),
        });
        let json = serde_json::to_value(&reason).expect("serializes");
        assert_eq!(json["code"], "budget_exhausted");
        assert_eq!(json["details"]["usedGpuHours"], 100.25);
        assert_eq!(json["details"]["budgetGpuHours"], 100.0);
        assert_eq!(json["details"]["resetsAt"], "2026-12-01T00:00:00Z");
        assert!(
            json["message"]
                .as_str()
                .expect("text")
                .contains("100.25 of its 100 GPU-hours")
        );
        let back: Reason = serde_json::from_value(json).expect("reads back");
        assert_eq!(back, reason);
    }
}

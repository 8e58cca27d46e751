//! The scheduling columns of a job as the store hands them over ([`SchedulingRow`]), and the
//! core's view made from them: what submissions and the watcher's snapshot read instead of
//! whole rows.

use std::str::FromStr;

use anteroom_shared::scheduling::{BorrowPolicy, JobKind, JobPhase, PreemptionPolicy, ScheduleType};
use chrono::{DateTime, Utc};
use sea_orm::{DbErr, EntityTrait, FromQueryResult, QuerySelect};

use super::entity::job;
use crate::prequeue::{JobSharing, JobSnapshot};
use crate::store::compact;

/// The scheduling columns of a job: what the core needs, without the JSON of its tasks and
/// resources. The submit path and the watcher's snapshot read jobs through this.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct SchedulingRow {
    /// Id.
    pub id: i64,
    /// Owner.
    pub owner_id: i64,
    /// Queue.
    pub queue: String,
    /// Kind word.
    pub kind: String,
    /// Schedule type word.
    pub schedule_type: String,
    /// Phase word.
    pub phase: String,
    /// Policy word.
    pub preemption_policy: String,
    /// Submission time.
    pub submitted_at: DateTime<Utc>,
    /// Pods started.
    pub started_at: Option<DateTime<Utc>>,
    /// Waiting tolerance.
    pub waiting_tolerance_seconds: Option<i64>,
    /// `name=milli` pairs.
    pub request_milli: String,
    /// Comma-joined host names.
    pub explicit_nodes: String,
    /// One task, one replica.
    pub single_node: bool,
    /// Pod nodes (JSON array).
    pub nodes: String,
    /// Admin lock.
    pub locked_until: Option<DateTime<Utc>>,
    /// When it first waited for shared room.
    pub waiting_since: Option<DateTime<Utc>>,
    /// Tolerations (JSON, or empty text for none).
    pub tolerations: String,
    /// Runtime limit.
    pub max_runtime_seconds: Option<i64>,
    /// Priority inside its queue.
    pub priority: i32,
    /// Waits for guaranteed room rather than borrowing.
    pub borrow_never: bool,
    /// Admitted beyond its queue's guarantee.
    pub borrowing: bool,
}

impl SchedulingRow {
    /// A select of these columns from `jobs`; filter it, then `.into_model::<SchedulingRow>()`.
    pub fn select() -> sea_orm::Select<job::Entity> {
        use job::Column as C;
        job::Entity::find().select_only().columns([
            C::Id,
            C::OwnerId,
            C::Queue,
            C::Kind,
            C::ScheduleType,
            C::Phase,
            C::PreemptionPolicy,
            C::SubmittedAt,
            C::StartedAt,
            C::WaitingToleranceSeconds,
            C::RequestMilli,
            C::ExplicitNodes,
            C::SingleNode,
            C::Nodes,
            C::LockedUntil,
            C::WaitingSince,
            C::Tolerations,
            C::MaxRuntimeSeconds,
            C::Priority,
            C::BorrowNever,
            C::Borrowing,
        ])
    }

    /// The scheduling columns of a whole row (one just written, say).
    pub fn of(row: &job::Model) -> SchedulingRow {
        SchedulingRow {
            id: row.id,
            owner_id: row.owner_id,
            queue: row.queue.clone(),
            kind: row.kind.clone(),
            schedule_type: row.schedule_type.clone(),
            phase: row.phase.clone(),
            preemption_policy: row.preemption_policy.clone(),
            submitted_at: row.submitted_at,
            started_at: row.started_at,
            waiting_tolerance_seconds: row.waiting_tolerance_seconds,
            request_milli: row.request_milli.clone(),
            explicit_nodes: row.explicit_nodes.clone(),
            single_node: row.single_node,
            nodes: row.nodes.clone(),
            locked_until: row.locked_until,
            waiting_since: row.waiting_since,
            tolerations: row.tolerations.clone(),
            max_runtime_seconds: row.max_runtime_seconds,
            priority: row.priority,
            borrow_never: row.borrow_never,
            borrowing: row.borrowing,
        }
    }

    /// The core's view of the job.
    pub fn to_snapshot(&self) -> Result<JobSnapshot, DbErr> {
        let corrupt = |what: &str| DbErr::Custom(format!("job {}: unreadable {what}", self.id));
        Ok(JobSnapshot {
            id: self.id,
            owner: self.owner_id,
            queue: self.queue.clone(),
            kind: JobKind::from_str(&self.kind).map_err(|_| corrupt("kind"))?,
            schedule_type: ScheduleType::from_str(&self.schedule_type).map_err(|_| corrupt("schedule type"))?,
            phase: JobPhase::from_str(&self.phase).map_err(|_| corrupt("phase"))?,
            preemption_policy: PreemptionPolicy::from_str(&self.preemption_policy).map_err(|_| corrupt("policy"))?,
            submitted_at: self.submitted_at,
            started_at: self.started_at,
            waiting_tolerance_seconds: self.waiting_tolerance_seconds,
            waiting_since: self.waiting_since,
            resources: compact::decode_request(&self.request_milli).map_err(|_| corrupt("request"))?,
            explicit_nodes: compact::decode_nodes(&self.explicit_nodes),
            single_node: self.single_node,
            nodes: if self.nodes == "[]" {
                Vec::new()
            } else {
                serde_json::from_str(&self.nodes).map_err(|_| corrupt("nodes"))?
            },
            locked_until: self.locked_until,
            tolerations: crate::tolerations::decode(&self.tolerations).map_err(|_| corrupt("tolerations"))?,
            max_runtime_seconds: self.max_runtime_seconds,
            sharing: JobSharing {
                priority: self.priority,
                borrow: if self.borrow_never {
                    BorrowPolicy::Never
                } else {
                    BorrowPolicy::IfIdle
                },
                borrowing: self.borrowing,
            },
        })
    }
}

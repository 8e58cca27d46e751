//! The `prequeue_config` table: one row, `id = 1`.

use sea_orm::entity::prelude::*;

/// The prequeue settings row.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "prequeue_config")]
pub struct Model {
    /// Always 1.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: i32,
    /// `backfillEnabled`.
    pub backfill_enabled: bool,
    /// `queueQuotaEnabled`.
    pub queue_quota_enabled: bool,
    /// `normalJobWaitingToleranceSeconds`.
    pub normal_job_waiting_tolerance_seconds: i64,
    /// `activateTickerIntervalSeconds`.
    pub activate_ticker_interval_seconds: i64,
    /// `maxTotalActivationsPerRound`.
    pub max_total_activations_per_round: i64,
    /// `prequeueCandidateSize`.
    pub prequeue_candidate_size: i64,
    /// `backfillMinRuntimeSeconds`.
    pub backfill_min_runtime_seconds: i64,
    /// `maxPrequeuedJobsPerUser`.
    pub max_prequeued_jobs_per_user: i64,
    /// `fcfs` or `fairShare`.
    pub activation_order: String,
    /// `preemptionGracePeriodSeconds`.
    pub preemption_grace_period_seconds: i64,
    /// `maxUnfinishedJobsPerUser`.
    pub max_unfinished_jobs_per_user: i64,
    /// `defaultRequests`, as JSON.
    pub default_requests: String,
    /// `preemptionPlanWindowSeconds`.
    pub preemption_plan_window_seconds: i64,
    /// `requeueByDefault`.
    pub requeue_by_default: bool,
    /// `maxRequeues`.
    pub max_requeues: i64,
    /// `timeAwareBackfill`.
    pub time_aware_backfill: bool,
    /// `reclaimDelaySeconds`.
    pub reclaim_delay_seconds: i64,
    /// `usageHalfLifeSeconds`.
    pub usage_half_life_seconds: i64,
    /// `backfillUsageWeight`, in thousandths.
    pub backfill_usage_weight_milli: i32,
    /// `usageWeights`, as JSON (`{}`: derived).
    pub usage_weights: String,
    /// Last write.
    pub updated_at: DateTimeUtc,
}

/// None.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

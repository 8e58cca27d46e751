//! The `usage_intervals` table: one row per run of a job, written by triggers on `jobs`
//! (migration `m20261129_000031_usage_intervals`), kept after the job is gone.

use sea_orm::entity::prelude::*;

/// One run: what a job occupied from its start in the cluster to its end.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "usage_intervals")]
pub struct Model {
    /// Database id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The job (which retention may have deleted since).
    pub job_id: i64,
    /// Its owner, by id.
    pub owner_id: i64,
    /// Its owner, by username as it was.
    pub owner_name: String,
    /// Its queue.
    pub queue: String,
    /// Its kind.
    pub kind: String,
    /// `normal` or `backfill`.
    pub schedule_type: String,
    /// What it requested, all tasks together (the job's `resources` JSON).
    pub resources: String,
    /// When the wait that ended with this run began.
    pub waiting_since: DateTimeUtc,
    /// When the run began in the cluster.
    pub started_at: DateTimeUtc,
    /// When it ended; `None` while it runs.
    pub ended_at: Option<DateTimeUtc>,
    /// The phase it ended in (`Completed`, `Preempted`, `Reclaimed`, `Restarted`, ...).
    pub end_phase: Option<String>,
}

/// None: the job is kept by value (an interval outlives its job).
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

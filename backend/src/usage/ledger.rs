//! The decayed usage the watcher orders by under `fairShareHistory` (`spec/prequeue.md` §10),
//! kept in memory: the store's history is read at most every [`REREAD_SECONDS`] (and when the
//! half-life or the weights change), not every round. In between, finished runs are valued at
//! the ledger's instant and decayed as time passes, running runs are valued from the round's
//! snapshot, and a run that ended since the last read is counted until the round that saw it
//! end — its exact end replaces that at the next read.

use std::collections::{HashMap, HashSet};

use anteroom_shared::scheduling::{PrequeueConfig, ScheduleType};
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};

use super::entity;
use crate::prequeue::history::{History, UsageWeights, decay, decayed_run};
use crate::prequeue::snapshot::{JobId, JobSnapshot, NodeSnapshot, UserId};

/// How often the store's history is read again, at most.
pub const REREAD_SECONDS: i64 = 600;

/// Half-lives after which a run counts less than a millionth (2^-20) and is not read.
const HALF_LIVES_KEPT: i64 = 20;

type Pair = (String, UserId);

/// The half-life, the named weights (thousandths) and the Elastic weight (thousandths).
type Basis = (i64, Vec<(String, u32)>, u32);

/// Decayed usage per (queue, owner), kept between rounds.
#[derive(Debug, Default)]
pub struct UsageLedger {
    /// Finished runs' decayed usage per pair, valued at `valued_at`.
    finished: HashMap<Pair, f64>,
    valued_at: Option<DateTime<Utc>>,
    /// The settings `finished` was computed with (half-life, named weights, Elastic weight);
    /// weights derived from the nodes are picked up at the next read, not on every change.
    basis: Option<Basis>,
    /// Runs running at the last round: pair, units an hour, start.
    running: HashMap<JobId, (Pair, f64, DateTime<Utc>)>,
}

/// Runs that may still count at `now`: ended after the horizon (all, without decay).
fn horizon(now: DateTime<Utc>, half_life_seconds: i64) -> Option<DateTime<Utc>> {
    (half_life_seconds > 0)
        .then(|| now.checked_sub_signed(Duration::seconds(half_life_seconds.saturating_mul(HALF_LIVES_KEPT))))
        .flatten()
}

/// A run as the ledger reads it.
#[derive(Debug, Clone)]
pub struct LedgerRun {
    /// Its job.
    pub job_id: JobId,
    /// Its queue.
    pub queue: String,
    /// Its owner.
    pub owner: UserId,
    /// Normal or Elastic.
    pub schedule_type: ScheduleType,
    /// What it requested.
    pub resources: anteroom_shared::scheduling::ResourceList,
    /// When it began.
    pub started_at: DateTime<Utc>,
    /// When it ended; `None`: it runs.
    pub ended_at: Option<DateTime<Utc>>,
}

/// Which runs may still count at `now`: running, or ended within the horizon (all without
/// decay).
fn in_horizon(half_life_seconds: i64, now: DateTime<Utc>) -> sea_orm::Condition {
    match horizon(now, half_life_seconds) {
        Some(since) => sea_orm::Condition::any()
            .add(entity::Column::EndedAt.is_null())
            .add(entity::Column::EndedAt.gte(since)),
        None => sea_orm::Condition::all(),
    }
}

/// The runs that may still count at `now` (of `owner` only, when named). A row whose columns
/// do not parse is left out.
pub async fn runs_in_horizon(
    db: &impl ConnectionTrait,
    half_life_seconds: i64,
    now: DateTime<Utc>,
    owner: Option<UserId>,
) -> Result<Vec<LedgerRun>, DbErr> {
    let mut query = entity::Entity::find().filter(in_horizon(half_life_seconds, now));
    if let Some(owner) = owner {
        query = query.filter(entity::Column::OwnerId.eq(owner));
    }
    Ok(query
        .all(db)
        .await?
        .into_iter()
        .filter_map(|row| {
            Some(LedgerRun {
                job_id: row.job_id,
                resources: serde_json::from_str(&row.resources).ok()?,
                schedule_type: row.schedule_type.parse().ok()?,
                queue: row.queue,
                owner: row.owner_id,
                started_at: row.started_at,
                ended_at: row.ended_at,
            })
        })
        .collect())
}

/// How many users have runs that may still count, per queue (one aggregate query).
pub async fn users_per_queue(
    db: &impl ConnectionTrait,
    half_life_seconds: i64,
    now: DateTime<Utc>,
) -> Result<HashMap<String, u64>, DbErr> {
    use sea_orm::sea_query::Expr;
    use sea_orm::{ExprTrait as _, QuerySelect};
    let rows: Vec<(String, i64)> = entity::Entity::find()
        .select_only()
        .column(entity::Column::Queue)
        .column_as(Expr::col(entity::Column::OwnerId).count_distinct(), "users")
        .filter(in_horizon(half_life_seconds, now))
        .group_by(entity::Column::Queue)
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(queue, n)| (queue, u64::try_from(n).unwrap_or(0)))
        .collect())
}

/// Every pair's decayed usage at `now` from its finished runs in the store — but a run the
/// round's snapshot still sees running (the store moved on between the two reads) is left to
/// the snapshot, so it is not counted twice.
async fn finished_from_store(
    db: &impl ConnectionTrait,
    weights: &UsageWeights,
    half_life_seconds: i64,
    now: DateTime<Utc>,
    running: &HashSet<(JobId, DateTime<Utc>)>,
) -> Result<HashMap<Pair, f64>, DbErr> {
    let mut out: HashMap<Pair, f64> = HashMap::new();
    for run in runs_in_horizon(db, half_life_seconds, now, None).await? {
        let Some(end) = run.ended_at else {
            continue;
        };
        if running.contains(&(run.job_id, run.started_at)) {
            continue;
        }
        let per_hour = weights.per_hour(&run.resources, run.schedule_type);
        *out.entry((run.queue, run.owner)).or_default() +=
            decayed_run(per_hour, run.started_at, end, now, half_life_seconds);
    }
    Ok(out)
}

impl UsageLedger {
    /// The decayed usage at `now` of every pair, for the round on `jobs` (the snapshot's).
    pub async fn history(
        &mut self,
        db: &impl ConnectionTrait,
        config: &PrequeueConfig,
        jobs: &[JobSnapshot],
        nodes: &[NodeSnapshot],
        now: DateTime<Utc>,
    ) -> Result<History, DbErr> {
        let weights = UsageWeights::new(config, nodes.iter().map(|n| &n.allocatable));
        let half = config.usage_half_life_seconds;
        let basis = Some((
            half,
            config
                .usage_weights
                .iter()
                .map(|(name, w)| (name.clone(), w.thousandths()))
                .collect(),
            config.backfill_usage_weight.thousandths(),
        ));
        let due = self
            .valued_at
            .is_none_or(|at| now - at >= Duration::seconds(REREAD_SECONDS) || now < at);
        if due || self.basis != basis {
            let running: HashSet<(JobId, DateTime<Utc>)> = jobs
                .iter()
                .filter(|j| is_running(j))
                .filter_map(|j| Some((j.id, j.started_at?)))
                .collect();
            self.finished = finished_from_store(db, &weights, half, now, &running).await?;
            self.valued_at = Some(now);
            self.basis = basis;
            self.running.clear();
        }
        let valued_at = self.valued_at.unwrap_or(now);
        let aged = decay((now - valued_at).num_milliseconds() as f64 / 1000.0, half);
        // Runs that ended since the last round: until now, valued at the ledger's instant.
        let still: HashSet<JobId> = jobs.iter().filter(|j| is_running(j)).map(|j| j.id).collect();
        for (id, (pair, per_hour, started)) in &self.running {
            if !still.contains(id) && aged > 0.0 {
                *self.finished.entry(pair.clone()).or_default() +=
                    decayed_run(*per_hour, *started, now, now, half) / aged;
            }
        }
        self.running = jobs
            .iter()
            .filter(|j| is_running(j))
            .filter_map(|j| {
                let started = j.started_at?;
                Some((
                    j.id,
                    (
                        (j.queue.clone(), j.owner),
                        weights.per_hour(&j.resources, j.schedule_type),
                        started,
                    ),
                ))
            })
            .collect();
        let finished = self.finished.iter().map(|(pair, v)| (pair.clone(), v * aged));
        let running = self
            .running
            .values()
            .map(|(pair, per_hour, started)| (pair.clone(), decayed_run(*per_hour, *started, now, now, half)));
        Ok(History::from_pairs(finished.chain(running)))
    }
}

/// A run in progress: occupying the cluster since a known start.
fn is_running(job: &JobSnapshot) -> bool {
    job.phase.is_occupying() && job.started_at.is_some()
}

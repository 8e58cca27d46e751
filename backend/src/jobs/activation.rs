//! The one activation path (`spec/prequeue.md` §4 step 9, §5 step 5), used by the submit
//! handler and by the watcher: claim (`Prequeue → Activating`, compare-and-set on the phase, in
//! a short transaction), create in the cluster under `ar-<id>` outside any transaction, then
//! `Pending` with an `activated` event.
//!
//! Every step survives a crash: a job left `Activating` is re-driven by the watcher ("already
//! exists" with our label is success), and a job deleted while its create was in flight is
//! removed from the cluster again by whoever loses the race (see [`activate_claimed`]).

use std::str::FromStr;

use anteroom_shared::api::jobs::TaskBody;
use anteroom_shared::scheduling::{JobKind, JobPhase, PreemptionPolicy, ScheduleType};
use chrono::{DateTime, Duration, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait, QueryFilter};

use super::entity::job;
use super::events::{self, EventKind};
use crate::cluster::clock::Clock;
use crate::cluster::{Cluster, JobSpec, TaskSpec};
use crate::store::lease::Fence;

/// How a caller writes: on which connection, with which clock, and — the watcher — carrying
/// its lease's fence, so that a replica that lost the lease writes nothing more.
#[derive(Clone, Copy)]
pub struct Writer<'a> {
    /// The writer connection.
    pub db: &'a DatabaseConnection,
    /// Where "now" comes from.
    pub clock: &'a dyn Clock,
    /// The watcher's fence; `None` for the API (which holds no lease).
    pub fence: Option<&'a Fence>,
}

impl Writer<'_> {
    /// A write transaction with `now` read inside it (an event's time is close to its commit,
    /// which the event stream's settle window relies on). `None` when the fence no longer
    /// holds: the caller writes nothing.
    pub async fn begin(&self) -> Result<Option<(DatabaseTransaction, DateTime<Utc>)>, DbErr> {
        let txn = crate::store::write_transaction(self.db).await?;
        let now = self.clock.now();
        if let Some(fence) = self.fence
            && !fence.holds(&txn, now).await?
        {
            return Ok(None);
        }
        Ok(Some((txn, now)))
    }
}

/// Failed creates after which a job is `Failed` for good.
pub const MAX_ATTEMPTS: i32 = 10;

/// How long after the `attempts`-th failure the next try may happen: 2^attempts seconds,
/// at most five minutes.
pub fn backoff(attempts: i32) -> Duration {
    let exponent = attempts.clamp(0, 9) as u32;
    Duration::seconds((1_i64 << exponent).min(300))
}

/// What became of a claimed job.
#[derive(Debug)]
pub enum ActivationOutcome {
    /// Created in the cluster and now `Pending`.
    Activated(job::Model),
    /// The create failed; the job stays `Activating` until `next_attempt_at` (or became
    /// `Failed` after [`MAX_ATTEMPTS`]).
    CreateFailed {
        /// The cluster's error.
        error: String,
        /// The job as stored now.
        job: job::Model,
    },
    /// The job left our claim while its create was in flight: deleted (the cluster object
    /// was removed again), or recorded by another driver (a repair, status sync).
    Superseded,
    /// The watcher lost its lease before recording the outcome: nothing was written; the job
    /// stays `Activating` for the next holder's repair ("already exists" counts as created).
    LeaseLost,
}

/// Claims a prequeued job for activation: `Prequeue → Activating` only if it is still
/// prequeued. `None` when someone else got there first (a delete, another watcher).
///
/// Its waiting clock starts now unless it already runs (`spec/prequeue.md` §1: set at
/// activation, or when it first waited for shared room): `waiting` is the job's
/// `(waitingSince, tolerance)` as read for the decision.
pub async fn claim(
    db: &impl ConnectionTrait,
    id: i64,
    waiting: (Option<DateTime<Utc>>, Option<i64>),
    borrowing: bool,
    now: DateTime<Utc>,
) -> Result<Option<job::Model>, DbErr> {
    let since = waiting.0.unwrap_or(now);
    let updated = job::Entity::update_many()
        .col_expr(job::Column::Phase, Expr::value(JobPhase::Activating.as_str()))
        .col_expr(job::Column::Borrowing, Expr::value(borrowing))
        .col_expr(job::Column::WaitingSince, Expr::value(since))
        .col_expr(
            job::Column::TimeoutAt,
            Expr::value(super::timeout_at(Some(since), waiting.1)),
        )
        .col_expr(job::Column::ClaimedAt, Expr::value(now))
        .col_expr(job::Column::UpdatedAt, Expr::value(now))
        .col_expr(job::Column::WaitReasons, Expr::value(Option::<String>::None))
        .filter(job::Column::Id.eq(id))
        .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
        .exec(db)
        .await?;
    if updated.rows_affected == 0 {
        return Ok(None);
    }
    job::Entity::find_by_id(id).one(db).await
}

/// What the prequeue settings decide about a job's cluster object when it is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterTerms {
    /// `preemptionGracePeriodSeconds`: a backfill job's pods get this long to exit.
    pub preemption_grace_seconds: i64,
}

impl ClusterTerms {
    /// The terms of the current settings.
    pub fn of(config: &anteroom_shared::scheduling::PrequeueConfig) -> Self {
        ClusterTerms {
            preemption_grace_seconds: config.preemption_grace_period_seconds,
        }
    }
}

/// What the cluster is asked to run for a stored job.
///
/// Its pods start as not the cluster's to evict (`volcano.sh/preemptable: "false"`), whatever
/// the job: a pod Volcano creates later from the template (the job's first pods once its
/// PodGroup is admitted, a gang restart) must never be less protected than the prequeue
/// wants. The watcher opens a running backfill job's pods when the prequeue itself could
/// preempt it ([`crate::prequeue::cluster_may_evict`]).
pub fn job_spec(row: &job::Model, terms: ClusterTerms) -> Result<JobSpec, DbErr> {
    let corrupt = |what: &str| DbErr::Custom(format!("job {}: unreadable {what}", row.id));
    let tasks: Vec<TaskBody> = serde_json::from_str(&row.tasks).map_err(|_| corrupt("tasks"))?;
    let schedule_type = ScheduleType::from_str(&row.schedule_type).map_err(|_| corrupt("schedule type"))?;
    let kind = JobKind::from_str(&row.kind).map_err(|_| corrupt("kind"))?;
    // Every pod of the job tolerates what the job was given at submission.
    let tolerations = crate::tolerations::decode(&row.tolerations).map_err(|_| corrupt("tolerations"))?;
    let volumes = crate::volumes::decode(&row.volumes).map_err(|_| corrupt("volumes"))?;
    Ok(JobSpec {
        id: row.id,
        cluster_uid: row.uid_in_cluster(),
        kind: JobKind::from_str(&row.kind).map_err(|_| corrupt("kind"))?,
        queue: row.queue.clone(),
        owner: row.owner_name.clone(),
        schedule_type,
        waiting_tolerance_seconds: row.waiting_tolerance_seconds,
        preemption_policy: PreemptionPolicy::from_str(&row.preemption_policy).map_err(|_| corrupt("policy"))?,
        tasks: tasks
            .into_iter()
            .map(|t| TaskSpec {
                shm: t.effective_shm(kind),
                volumes: volumes.clone(),
                name: t.name,
                replicas: t.replicas,
                image: t.image,
                command: t.command,
                resources: t.resources,
                node_names: t.node_names,
                tolerations: tolerations.clone(),
                env: t.env,
            })
            .collect(),
        preemptable: false,
        // Only a backfill job can be preempted; its pods get the admin's grace period.
        termination_grace_seconds: (schedule_type == ScheduleType::Backfill)
            .then(|| u32::try_from(terms.preemption_grace_seconds.max(0)).unwrap_or(u32::MAX)),
        active_deadline_seconds: row.max_runtime_seconds.and_then(|s| u64::try_from(s).ok()),
        preempted_before: row.requeues > 0,
        run_as_user: row.run_as_user,
    })
}

/// Creates a claimed (`Activating`) job in the cluster and records the outcome.
///
/// The create runs outside any transaction. Then `Activating → Pending` by compare-and-set:
/// if the job is no longer `Activating`, it was deleted while the create was in flight, and the
/// object just created is deleted again (the delete that won the race found nothing to delete
/// in the cluster yet). A failed create counts an attempt, sets the backoff and writes an
/// `activation_failed` event; the [`MAX_ATTEMPTS`]-th makes the job `Failed`.
pub async fn activate_claimed(
    w: Writer<'_>,
    cluster: &dyn Cluster,
    claimed: &job::Model,
    terms: ClusterTerms,
) -> Result<ActivationOutcome, DbErr> {
    match create(cluster, claimed, terms).await? {
        Ok(preemptable) => record_created(w, cluster, claimed, preemptable).await,
        Err(error) => record_failure(w, claimed, &error).await,
    }
}

/// The cluster create of a claimed job, outside any transaction: `Err(message)` when the
/// cluster refused it ("already exists" with our label is success, so a re-drive after a
/// crash does not double the job). `Ok(preemptable)`: what its pods were told
/// ([`JobSpec::preemptable`]), for [`record_created`].
pub async fn create(
    cluster: &dyn Cluster,
    claimed: &job::Model,
    terms: ClusterTerms,
) -> Result<Result<bool, String>, DbErr> {
    let spec = job_spec(claimed, terms)?;
    Ok(cluster
        .create_job(&spec)
        .await
        .map(|()| spec.preemptable)
        .map_err(|e| e.to_string()))
}

/// After a successful create: `Activating → Pending` with an `activated` event, by
/// compare-and-set; a job deleted meanwhile is removed from the cluster again.
pub async fn record_created(
    w: Writer<'_>,
    cluster: &dyn Cluster,
    claimed: &job::Model,
    preemptable: bool,
) -> Result<ActivationOutcome, DbErr> {
    let Some((txn, now)) = w.begin().await? else {
        return Ok(ActivationOutcome::LeaseLost);
    };
    let updated = job::Entity::update_many()
        .col_expr(job::Column::Phase, Expr::value(JobPhase::Pending.as_str()))
        .col_expr(job::Column::ClusterPreemptable, Expr::value(preemptable))
        .col_expr(job::Column::ActivatedAt, Expr::value(now))
        .col_expr(job::Column::UpdatedAt, Expr::value(now))
        .col_expr(job::Column::NextAttemptAt, Expr::value(Option::<DateTime<Utc>>::None))
        .filter(job::Column::Id.eq(claimed.id))
        .filter(job::Column::Phase.eq(JobPhase::Activating.as_str()))
        // Our claim still: a repair that re-claimed it (this create took over a minute) or
        // status sync may have recorded it already.
        .filter(same_claim(claimed))
        // The row as written, in the same statement (`RETURNING`).
        .exec_with_returning(&txn)
        .await?;
    let Some(row) = updated.into_iter().next() else {
        let now_phase = job::Entity::find_by_id(claimed.id)
            .one(&txn)
            .await?
            .and_then(|r| JobPhase::from_str(&r.phase).ok());
        drop(txn);
        // Deleted (or given up) meanwhile: the delete found nothing in the cluster yet, so
        // remove what we made. Recorded by another driver: it is theirs, leave it.
        if now_phase.is_none_or(|p| p.is_terminal())
            && let Err(e) = cluster.delete_job(claimed.id, &claimed.uid_in_cluster(), 0).await
        {
            tracing::warn!(job = claimed.id, error = %e, "removing a job created after it was deleted failed; the next status resync removes it");
        }
        return Ok(ActivationOutcome::Superseded);
    };
    events::record(
        &txn,
        &row,
        EventKind::Activated,
        format!("created in the cluster as {}", crate::cluster::cluster_name(row.id)),
        Some(serde_json::json!({ "clusterName": crate::cluster::cluster_name(row.id) })),
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(ActivationOutcome::Activated(row))
}

/// [`activate_claimed`] for several claimed jobs at once: their creates in one call to the
/// cluster ([`Cluster::create_jobs`], one transaction in the simulated cluster), the created ones
/// recorded `Pending` together ([`record_created_all`]). Each job's outcome, in order; a failed
/// create is recorded for its job alone, as [`activate_claimed`] does.
pub async fn activate_claimed_all(
    w: Writer<'_>,
    cluster: &dyn Cluster,
    claimed: &[job::Model],
    terms: ClusterTerms,
) -> Vec<Result<ActivationOutcome, DbErr>> {
    let mut outcomes: Vec<Option<Result<ActivationOutcome, DbErr>>> = Vec::with_capacity(claimed.len());
    let mut specs = Vec::with_capacity(claimed.len());
    let mut of_spec = Vec::with_capacity(claimed.len());
    for (i, row) in claimed.iter().enumerate() {
        match job_spec(row, terms) {
            Ok(spec) => {
                specs.push(spec);
                of_spec.push(i);
                outcomes.push(None);
            }
            Err(e) => outcomes.push(Some(Err(e))),
        }
    }
    let results = cluster.create_jobs(&specs).await;
    let mut created: Vec<(job::Model, bool)> = Vec::with_capacity(specs.len());
    let mut of_created = Vec::with_capacity(specs.len());
    for (n, result) in results.into_iter().enumerate() {
        let i = of_spec[n];
        match result {
            Ok(()) => {
                created.push((claimed[i].clone(), specs[n].preemptable));
                of_created.push(i);
            }
            Err(e) => {
                let message = e.to_string();
                outcomes[i] = Some(record_failure(w, &claimed[i], &message).await);
            }
        }
    }
    match record_created_all(w, cluster, &created).await {
        Ok(recorded) => {
            for (n, outcome) in recorded.into_iter().enumerate() {
                outcomes[of_created[n]] = Some(Ok(outcome));
            }
        }
        Err(e) => {
            let message = e.to_string();
            for i in of_created {
                outcomes[i] = Some(Err(DbErr::Custom(message.clone())));
            }
        }
    }
    outcomes
        .into_iter()
        .map(|o| o.expect("every claimed job has an outcome"))
        .collect()
}

/// Most jobs one statement of [`record_created_all`] marks.
const RECORD_CHUNK: usize = 200;

/// [`record_created`] for several created jobs in one transaction: `Activating → Pending` by
/// compare-and-set on the phase and each job's own claim, in one statement a chunk, and their
/// `activated` events in one more. Each job's outcome, in order: one whose claim no longer
/// holds is [`ActivationOutcome::Superseded`] (and removed from the cluster again when it was
/// deleted meanwhile, as [`record_created`] does).
pub async fn record_created_all(
    w: Writer<'_>,
    cluster: &dyn Cluster,
    created: &[(job::Model, bool)],
) -> Result<Vec<ActivationOutcome>, DbErr> {
    if created.is_empty() {
        return Ok(Vec::new());
    }
    let Some((txn, now)) = w.begin().await? else {
        return Ok(created.iter().map(|_| ActivationOutcome::LeaseLost).collect());
    };
    let mut recorded: std::collections::HashMap<i64, job::Model> = std::collections::HashMap::new();
    for preemptable in [false, true] {
        let group: Vec<&job::Model> = created
            .iter()
            .filter(|(_, p)| *p == preemptable)
            .map(|(row, _)| row)
            .collect();
        for chunk in group.chunks(RECORD_CHUNK) {
            let claims = chunk.iter().fold(sea_orm::Condition::any(), |any, row| {
                any.add(same_claim(row).add(job::Column::Id.eq(row.id)))
            });
            let rows = job::Entity::update_many()
                .col_expr(job::Column::Phase, Expr::value(JobPhase::Pending.as_str()))
                .col_expr(job::Column::ClusterPreemptable, Expr::value(preemptable))
                .col_expr(job::Column::ActivatedAt, Expr::value(now))
                .col_expr(job::Column::UpdatedAt, Expr::value(now))
                .col_expr(job::Column::NextAttemptAt, Expr::value(Option::<DateTime<Utc>>::None))
                .filter(job::Column::Id.is_in(chunk.iter().map(|row| row.id)))
                .filter(job::Column::Phase.eq(JobPhase::Activating.as_str()))
                .filter(claims)
                .exec_with_returning(&txn)
                .await?;
            recorded.extend(rows.into_iter().map(|row| (row.id, row)));
        }
    }
    let activated: Vec<events::NewEvent> = created
        .iter()
        .filter_map(|(row, _)| recorded.get(&row.id))
        .map(|row| {
            let message = format!("created in the cluster as {}", crate::cluster::cluster_name(row.id));
            let details = serde_json::json!({ "clusterName": crate::cluster::cluster_name(row.id) });
            events::NewEvent::of(row, EventKind::Activated, message, Some(details), now)
        })
        .collect();
    events::record_each(&txn, activated).await?;
    // The ones whose claim did not hold: deleted (or given up) meanwhile, or recorded by
    // another driver.
    let missed: Vec<i64> = created
        .iter()
        .map(|(row, _)| row.id)
        .filter(|id| !recorded.contains_key(id))
        .collect();
    let phases: std::collections::HashMap<i64, Option<JobPhase>> = if missed.is_empty() {
        Default::default()
    } else {
        job::Entity::find()
            .filter(job::Column::Id.is_in(missed.iter().copied()))
            .all(&txn)
            .await?
            .into_iter()
            .map(|row| (row.id, JobPhase::from_str(&row.phase).ok()))
            .collect()
    };
    txn.commit().await?;
    let mut outcomes = Vec::with_capacity(created.len());
    for (claimed, _) in created {
        if let Some(row) = recorded.remove(&claimed.id) {
            outcomes.push(ActivationOutcome::Activated(row));
            continue;
        }
        // As in [`record_created`]: a job deleted meanwhile found nothing in the cluster to
        // delete yet, so remove what was made; one recorded by another driver is theirs.
        let now_phase = phases.get(&claimed.id).copied().flatten();
        if now_phase.is_none_or(|p| p.is_terminal())
            && let Err(e) = cluster.delete_job(claimed.id, &claimed.uid_in_cluster(), 0).await
        {
            tracing::warn!(job = claimed.id, error = %e, "removing a job created after it was deleted failed; the next status resync removes it");
        }
        outcomes.push(ActivationOutcome::Superseded);
    }
    Ok(outcomes)
}

/// The claim a driver holds: its claim time (a re-claim by the repair moves it).
fn same_claim(claimed: &job::Model) -> sea_orm::Condition {
    match claimed.claimed_at {
        Some(at) => sea_orm::Condition::all().add(job::Column::ClaimedAt.eq(at)),
        None => sea_orm::Condition::all().add(job::Column::ClaimedAt.is_null()),
    }
}

/// The `details.code` of the events of a failed create (`activation_failed`, and `failed` when
/// it gave up).
pub const CREATE_FAILED: &str = "cluster_create_failed";

/// After a failed create: one more attempt with its backoff and an `activation_failed` event,
/// or `Failed` after [`MAX_ATTEMPTS`].
pub async fn record_failure(w: Writer<'_>, claimed: &job::Model, error: &str) -> Result<ActivationOutcome, DbErr> {
    let attempts = claimed.attempts.saturating_add(1);
    let gave_up = attempts >= MAX_ATTEMPTS;
    let Some((txn, now)) = w.begin().await? else {
        return Ok(ActivationOutcome::LeaseLost);
    };
    let mut update = job::Entity::update_many()
        .col_expr(job::Column::Attempts, Expr::value(attempts))
        .col_expr(job::Column::LastError, Expr::value(error))
        .col_expr(job::Column::UpdatedAt, Expr::value(now))
        .filter(job::Column::Id.eq(claimed.id))
        .filter(job::Column::Phase.eq(JobPhase::Activating.as_str()))
        .filter(same_claim(claimed));
    update = if gave_up {
        update
            .col_expr(job::Column::Phase, Expr::value(JobPhase::Failed.as_str()))
            .col_expr(job::Column::FinishedAt, Expr::value(now))
            .col_expr(
                job::Column::Failure,
                Expr::value(Some(super::encode_failure(&anteroom_shared::api::pods::JobFailure {
                    pod: None,
                    reason: "CreateFailed".to_owned(),
                    exit_code: None,
                }))),
            )
    } else {
        update.col_expr(job::Column::NextAttemptAt, Expr::value(now + backoff(attempts)))
    };
    if update.exec(&txn).await?.rows_affected == 0 {
        return Ok(ActivationOutcome::Superseded);
    }
    let row = job::Entity::find_by_id(claimed.id)
        .one(&txn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("job {}", claimed.id)))?;
    // The cluster's words stay out of the message: only admins read them (`CLUSTER_ERROR_KEY`).
    let details = serde_json::json!({
        "code": CREATE_FAILED,
        (events::CLUSTER_ERROR_KEY): error,
        "attempts": attempts,
        "maxAttempts": MAX_ATTEMPTS,
    });
    if gave_up {
        events::record(
            &txn,
            &row,
            EventKind::Failed,
            format!("gave up after {attempts} failed creates in the cluster"),
            Some(details),
            now,
        )
        .await?;
    } else {
        events::record(
            &txn,
            &row,
            EventKind::ActivationFailed,
            format!("creating it in the cluster failed (attempt {attempts} of {MAX_ATTEMPTS}); retrying later"),
            Some(details),
            now,
        )
        .await?;
    }
    txn.commit().await?;
    tracing::warn!(job = claimed.id, attempts, error, "cluster create failed");
    Ok(ActivationOutcome::CreateFailed {
        error: error.to_string(),
        job: row,
    })
}

//! Jobs (`spec/prequeue.md` §4, §6, §8; `spec/api.md` "Jobs"): submission and its preview,
//! lists, detail with the timeline and the prequeue standing, delete and the admin lock.
//!
//! Every decision is the pure core's ([`crate::prequeue::decide_submission`]); this service
//! loads its inputs, serialises decisions per queue tree, writes the outcome in one
//! transaction, and drives activation through [`activation`], the path the watcher uses too.
//!
//! - `validate.rs`: step 1, the body's own rules.
//! - `admit.rs`: steps 2–8 under the queue tree's turn (batched on SQLite).
//! - `batch_reads.rs`: what a batch of submissions decides from, read once per batch (SQLite).
//! - `activation.rs`: claim, create in the cluster, `Pending` — the one activation path.
//! - `events.rs`: the timeline and the stream's feed.
//! - `idempotency.rs`: `Idempotency-Key` on submit.
//! - `reads.rs`: lists, one job with its timeline and standing, the admin's prequeue list.
//! - `summary.rs`: the resource summary and the limit check.
//! - `ahead.rs`: what is ahead of a waiting job, from the watcher's forecast.
//! - `delete.rs`: a user's or admin's delete (which also cancels a pending requeue).
//! - `handlers.rs`, `stream.rs`: the HTTP face (REST and Server-Sent Events).

pub mod activation;
pub mod activator;
pub mod admit;
pub mod ahead;
mod batch_reads;
mod bulk;
mod context;
mod delete;
pub mod diagnosis;
pub mod entity;
pub mod events;
pub mod handlers;
pub mod idempotency;
mod list_query;
pub mod packed;
pub mod pending;
mod reads;
mod scheduling_row;
pub mod stream;
mod submission_rows;
pub mod summary;
pub mod validate;

pub use delete::delete;
pub use reads::{JOB_JSON_FIELDS, JobFilter, attach_standings, detail, list, list_json, position, prequeued, visible};
pub use scheduling_row::SchedulingRow;

use std::str::FromStr;

use anteroom_shared::api::jobs::{
    Job, JobBody, JobDetail, JobEventItem, PrequeueStanding, PrequeuedJob, Preview, SubmitResponse, WaitReason,
};
use anteroom_shared::scheduling::{JobKind, JobPhase, PreemptionPolicy, ScheduleType, TaskResources};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, FromQueryResult, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, Statement,
};

use self::activation::ActivationOutcome;
use self::admit::{admission_parts, decision_snapshot, submission};
use self::entity::job;
use self::events::EventKind;
use crate::cluster::{Cluster, ClusterError};
use crate::prequeue::{NodeSnapshot, Reason, SubmitDecision, SubmitRejection, decide_submission};
use crate::queues::{self, QueueError};
use crate::settings::Settings;
use crate::signals::Signals;
use crate::users;

/// How long a user's or admin's delete gives the pods to exit (Kubernetes' default).
pub const DELETE_GRACE_SECONDS: u32 = 30;

/// What the jobs service works with; the handlers build it from the application state.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// The writer.
    pub db: &'a DatabaseConnection,
    /// Reads that stand alone.
    pub db_read: &'a DatabaseConnection,
    /// Where jobs run.
    pub cluster: &'a std::sync::Arc<dyn Cluster>,
    /// The prequeue settings.
    pub settings: &'a Settings,
    /// Wake-ups for the watcher and the event streams.
    pub signals: &'a Signals,
    /// The task that admits submissions in batches.
    pub sequencer: &'a admit::Sequencer,
    /// The task that activates admitted submissions in groups.
    pub activator: &'a activator::Activator,
    /// Where "now" comes from for job times (submission, delete, lock, activation).
    pub clock: &'a std::sync::Arc<dyn crate::cluster::clock::Clock>,
    /// Image prefixes a task may use (`allowed_images`); empty: any.
    pub allowed_images: &'a [String],
    /// `request_timeout_seconds`: how long a submission may take before its admission (then
    /// 503 `timeout`, nothing written) and how long it waits for the cluster after it (then
    /// 201 with the job as stored; the watcher finishes the activation).
    pub request_timeout: std::time::Duration,
}

/// What a jobs operation can fail on; the handlers map each to a status and a stable code.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The body breaks its own rules (step 1): every (field, problem).
    #[error("invalid job")]
    Invalid(Vec<validate::Problem>),
    /// A task's image is under none of the allowed prefixes (step 1): every (field, problem).
    #[error("image not allowed")]
    ImageNotAllowed(Vec<validate::Problem>),
    /// The queue is unknown or not the caller's (step 2).
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The core refused it (steps 3–6).
    #[error(transparent)]
    Rejected(#[from] SubmitRejection),
    /// No such job, or not the caller's.
    #[error("no job with id {0}")]
    NotFound(i64),
    /// The job already reached a terminal phase.
    #[error("job {0} already finished ({1})")]
    AlreadyFinished(i64, JobPhase),
    /// The `Idempotency-Key` was used with another body.
    #[error("this Idempotency-Key was used with a different request body")]
    IdempotencyKeyReused,
    /// The `Idempotency-Key` header is unusable.
    #[error("Idempotency-Key: {0}")]
    InvalidIdempotencyKey(&'static str),
    /// The cluster did not answer.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbErr),
    /// A submission's checks before its admission ran out of time; nothing was written.
    #[error("the submission could not be checked in time; nothing was written")]
    Timeout,
    /// A volume the body names is not offered to its queue.
    #[error("the volume {0:?} is not offered to this queue")]
    VolumeForbidden(String),
}

impl From<crate::volumes::MountProblem> for JobError {
    fn from(p: crate::volumes::MountProblem) -> Self {
        match p {
            crate::volumes::MountProblem::Invalid(problems) => {
                JobError::Invalid(problems.into_iter().map(|(field, p)| (field, p.into())).collect())
            }
            crate::volumes::MountProblem::Forbidden(name) => JobError::VolumeForbidden(name),
        }
    }
}

fn corrupt(row: &job::Model, what: &str) -> DbErr {
    DbErr::Custom(format!("job {}: unreadable {what}", row.id))
}

/// A stored phase word as a phase.
pub fn phase_of(row: &job::Model) -> Result<JobPhase, DbErr> {
    JobPhase::from_str(&row.phase).map_err(|_| corrupt(row, "phase"))
}

/// `waitingSince + tolerance`: when a job starts to block others (the `timeout_at` column);
/// `None` while either is unset or the sum leaves the calendar.
pub fn timeout_at(waiting_since: Option<DateTime<Utc>>, tolerance: Option<i64>) -> Option<DateTime<Utc>> {
    let (since, seconds) = (waiting_since?, tolerance?);
    chrono::Duration::try_seconds(seconds).and_then(|d| since.checked_add_signed(d))
}

/// `jobs.failure` as stored: the one line of why a job failed, as JSON.
pub fn encode_failure(failure: &anteroom_shared::api::pods::JobFailure) -> String {
    serde_json::to_string(failure).expect("a failure serialises")
}

/// The API view of a job.
pub fn to_api(row: &job::Model) -> Result<Job, DbErr> {
    Ok(Job {
        id: row.id,
        name: row.name.clone(),
        kind: JobKind::from_str(&row.kind).map_err(|_| corrupt(row, "kind"))?,
        queue: row.queue.clone(),
        owner: row.owner_name.clone(),
        schedule_type: ScheduleType::from_str(&row.schedule_type).map_err(|_| corrupt(row, "schedule type"))?,
        preemption_policy: PreemptionPolicy::from_str(&row.preemption_policy).map_err(|_| corrupt(row, "policy"))?,
        waiting_tolerance_seconds: row.waiting_tolerance_seconds,
        phase: phase_of(row)?,
        tasks: serde_json::from_str(&row.tasks).map_err(|_| corrupt(row, "tasks"))?,
        resources: serde_json::from_str(&row.resources).map_err(|_| corrupt(row, "resources"))?,
        nodes: serde_json::from_str(&row.nodes).map_err(|_| corrupt(row, "nodes"))?,
        submitted_at: row.submitted_at,
        activated_at: row.activated_at,
        started_at: row.started_at,
        finished_at: row.finished_at,
        locked_until: row.locked_until,
        waiting_since: row.waiting_since,
        tolerations: crate::tolerations::decode(&row.tolerations).map_err(|_| corrupt(row, "tolerations"))?,
        volumes: crate::volumes::decode(&row.volumes)
            .map_err(|_| corrupt(row, "volumes"))?
            .into_iter()
            .map(|m| anteroom_shared::api::volumes::VolumeChoice {
                name: m.name,
                mount_path: m.mount_path,
                read_only: m.read_only,
                description: String::new(),
            })
            .collect(),
        failure: row
            .failure
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|_| corrupt(row, "failure"))?,
        max_runtime_seconds: row.max_runtime_seconds,
        requeue: row.requeue,
        requeues: u32::try_from(row.requeues).unwrap_or(0),
        priority: row.priority,
        borrow: if row.borrow_never {
            anteroom_shared::scheduling::BorrowPolicy::Never
        } else {
            anteroom_shared::scheduling::BorrowPolicy::IfIdle
        },
        borrowing: row.borrowing,
        prequeue: None,
    })
}

/// The tasks as the core sees them.
fn task_resources(body: &JobBody) -> Vec<TaskResources> {
    body.tasks
        .iter()
        .map(anteroom_shared::api::jobs::TaskBody::scheduling)
        .collect()
}

/// A core reason as the API's.
pub fn wait_reason(reason: &Reason) -> WaitReason {
    let value = serde_json::to_value(reason).unwrap_or_default();
    WaitReason {
        code: reason.code().to_string(),
        message: reason.message(),
        details: value.get("details").cloned().filter(|d| !d.is_null()),
    }
}

/// Steps 1–2: the body's rules (its own fields, then its quantities and node names, which need
/// the cluster's nodes), then, when `check_queue`, the caller's right to the queue. Answers
/// what the decision needs of what it read.
async fn check_body_and_queue(
    ctx: Context<'_>,
    user: &users::entity::Model,
    body: &JobBody,
    tasks: &[TaskResources],
    check_queue: bool,
) -> Result<Checked, JobError> {
    let problems = validate::problems(body);
    if !problems.is_empty() {
        return Err(JobError::Invalid(problems));
    }
    validate::check_images(body, ctx.allowed_images)?;
    anteroom_shared::scheduling::job_resources(tasks).map_err(SubmitRejection::from)?;
    // Outside any transaction: the cluster may be slow, and the simulated one reads the store.
    let nodes = ctx.cluster.nodes().await?;
    crate::prequeue::check_node_names(tasks, &nodes)?;
    // A submission has it checked under the lock, from its batch's queue rows; a preview,
    // which takes no turn, checks it here.
    if check_queue {
        queues::usable(ctx.db_read, user, &body.queue).await?;
    }
    let catalogue = if body.volumes.is_empty() {
        Vec::new()
    } else {
        crate::volumes::list(ctx.db_read).await?
    };
    Ok(Checked { nodes, catalogue })
}

/// What steps 1–2 read for the decision: the cluster's nodes and (when the body names volumes)
/// the volume catalogue.
struct Checked {
    nodes: Vec<NodeSnapshot>,
    catalogue: Vec<anteroom_shared::api::volumes::Volume>,
}

/// `POST /api/v1/jobs/preview`: steps 1–7 against the current state, nothing written.
pub async fn preview(ctx: Context<'_>, user: &users::entity::Model, body: &JobBody) -> Result<Preview, JobError> {
    let config = ctx.settings.current();
    let body = &validate::with_default_requests(body, &config.default_requests);
    let tasks = task_resources(body);
    let Checked { nodes, catalogue } = check_body_and_queue(ctx, user, body, &tasks, true).await?;
    let rules = crate::tolerations::specs(ctx.db_read).await?;
    let now = ctx.clock.now();
    let (specs, tree) = queues::tree(ctx.db_read).await?;
    admit::mounts_of(&catalogue, &tree, body)?;
    let (snapshot, prequeued) =
        decision_snapshot(ctx.db_read, config, nodes, &specs, &tree, user.id, &body.queue, now).await?;
    let request = anteroom_shared::scheduling::job_resources(&tasks).map_err(SubmitRejection::from)?;
    let tolerations = admit::tolerations_of(&rules, &tree, &body.queue, &request);
    let decision = decide_submission(
        &snapshot,
        &tree,
        &submission(user, body, &tasks, &tolerations, prequeued),
        now,
    )?;
    let check = crate::prequeue::QuotaView::new(&snapshot, &tree).limit_check(user.id, &body.queue, &request);
    let (decision, reasons) = admission_parts(&decision);
    Ok(Preview {
        decision,
        reasons,
        quota: summary::limit_check_to_api(check),
    })
}

/// `POST /api/v1/jobs`: steps 1–10 of `spec/prequeue.md` §4. Nothing is written when a step
/// refuses; steps 5–8 hold the queue tree's turn (and the caller's, for the per-user prequeue
/// cap across trees); activation runs after the commit, outside any transaction. With an
/// idempotency key, a repeat of the same body answers the first answer (the same job, as it
/// stands now, with the first admission).
pub async fn submit(
    ctx: Context<'_>,
    user: &users::entity::Model,
    body: &JobBody,
    key: Option<&str>,
) -> Result<Submitted, JobError> {
    let key = key.map(idempotency::check_key).transpose()?;
    let hash = idempotency::body_hash(body);
    let config = ctx.settings.current();
    // The hash above is of the body as sent: a retry matches it whatever the defaults are now.
    let body = &validate::with_default_requests(body, &config.default_requests);
    let tasks = task_resources(body);
    // Before the admission nothing is written, so running out of time can answer 503 (the
    // generic request deadline skips this route: past the admission, the job exists and the
    // answer must say so).
    let checked = tokio::time::timeout(ctx.request_timeout, async {
        if let Some(key) = key
            && let Some(first) = idempotency::find(ctx.db_read, user.id, key, Utc::now()).await?
        {
            return Ok(Err(first));
        }
        // Under the batched admission the queue is checked first under the lock, from the
        // batch's queue rows (`admit::admit_one`): checking it before would only cost a read.
        check_body_and_queue(ctx, user, body, &tasks, false).await.map(Ok)
    })
    .await
    .map_err(|_| JobError::Timeout)??;
    let Checked { nodes, catalogue } = match checked {
        Ok(checked) => checked,
        Err(first) => return replay(ctx, &first, &hash).await.map(Submitted::replayed),
    };
    let request = anteroom_shared::scheduling::job_resources(&tasks).map_err(SubmitRejection::from)?;
    let pending = admit::Pending {
        user: user.clone(),
        body: body.clone(),
        tasks,
        request,
        nodes,
        catalogue,
        key: key.map(|k| (k.to_owned(), hash.clone())),
        config: config.clone(),
        clock: ctx.clock.clone(),
    };
    let admitted = ctx.sequencer.admit(pending).await;
    let (row, decision, admission) = match admitted {
        Ok(admit::Admitted::New {
            row,
            decision,
            admission,
        }) => (*row, decision, admission),
        Ok(admit::Admitted::Replay(first)) => return replay(ctx, &first, &hash).await.map(Submitted::replayed),
        Err(JobError::Db(e)) if key.is_some() => {
            // The batch failed: if the same key was committed meanwhile (its first use, in
            // an earlier batch or on another replica), the first answer is replayed.
            if let Some(key) = key
                && let Some(first) = idempotency::find(ctx.db, user.id, key, Utc::now()).await?
            {
                return replay(ctx, &first, &hash).await.map(Submitted::replayed);
            }
            return Err(JobError::Db(e));
        }
        Err(e) => return Err(e),
    };
    ctx.signals.events_written();
    // From here on the job exists: whatever fails answers 201 with the job as stored (§4 step
    // 9); a job left `Activating` is the watcher's to finish.
    let row = match decision {
        SubmitDecision::Activated { .. } => {
            // The activation task owns it (with the other jobs admitted meanwhile): a client that
            // hangs up now does not leave its job half-activated.
            let terms = activation::ClusterTerms::of(&config);
            let activated = ctx.activator.activate(row.clone(), terms);
            // A slow or hung cluster: answer with the job as stored (`Activating`); the task
            // goes on, and the watcher repairs the job if it never finishes.
            let Ok(outcome) = tokio::time::timeout(ctx.request_timeout, activated).await else {
                tracing::warn!(
                    job = row.id,
                    "the cluster create is taking long; answering with the job as stored"
                );
                let row = current(ctx.db, row).await;
                ctx.signals.events_written();
                return Ok(Submitted::new(SubmitResponse {
                    job: to_api(&row)?,
                    admission,
                }));
            };
            match outcome {
                Ok(ActivationOutcome::Activated(activated)) => {
                    // Admitted at once: an activation that waited nothing, on the same metrics
                    // as the watcher's.
                    crate::watcher::metrics_activated(&activated.queue, &activated.schedule_type, 0.0);
                    activated
                }
                Ok(ActivationOutcome::CreateFailed { job, .. }) => job,
                Ok(ActivationOutcome::Superseded | ActivationOutcome::LeaseLost) => current(ctx.db, row).await,
                Err(e) => {
                    tracing::error!(job = row.id, error = %e, "recording an activation failed; the watcher will repair it");
                    row
                }
            }
        }
        SubmitDecision::Prequeued { .. } => {
            ctx.signals.wake_watcher();
            row
        }
    };
    ctx.signals.events_written();
    Ok(Submitted::new(SubmitResponse {
        job: to_api(&row)?,
        admission,
    }))
}

/// A submission's answer, and whether it repeats the answer to an `Idempotency-Key` seen
/// before: the HTTP layer says so (`Idempotent-Replayed: true`) so a client can tell its user
/// that nothing new was created.
pub struct Submitted {
    /// The answer.
    pub response: SubmitResponse,
    /// True when no job was created: the key's first answer, again.
    pub replayed: bool,
}

impl Submitted {
    fn new(response: SubmitResponse) -> Self {
        Self {
            response,
            replayed: false,
        }
    }

    fn replayed(response: SubmitResponse) -> Self {
        Self {
            response,
            replayed: true,
        }
    }
}

/// The row as stored now, or `row` if it cannot be read.
async fn current(db: &DatabaseConnection, row: job::Model) -> job::Model {
    match job::Entity::find_by_id(row.id).one(db).await {
        Ok(Some(now)) => now,
        _ => row,
    }
}

/// The answer to a repeated idempotency key: the same job as it stands now, with the first
/// admission; or `idempotency_key_reused` for another body.
async fn replay(
    ctx: Context<'_>,
    first: &entity::idempotency_key::Model,
    hash: &str,
) -> Result<SubmitResponse, JobError> {
    let admission = idempotency::admission_of(first, hash)?;
    let row = job::Entity::find_by_id(first.job_id)
        .one(ctx.db)
        .await?
        .ok_or(JobError::NotFound(first.job_id))?;
    Ok(SubmitResponse {
        job: to_api(&row)?,
        admission,
    })
}

/// `PUT /api/v1/admin/jobs/{id}/lock`: a locked job is never preempted before `until`;
/// `None` unlocks.
pub async fn lock(
    ctx: Context<'_>,
    admin: &users::entity::Model,
    id: i64,
    until: Option<DateTime<Utc>>,
) -> Result<Job, JobError> {
    let txn = crate::store::write_transaction(ctx.db).await?;
    visible(&txn, admin, id).await?;
    let now = ctx.clock.now();
    let terminal: Vec<&str> = JobPhase::ALL
        .iter()
        .filter(|p| p.is_terminal())
        .map(|p| p.as_str())
        .collect();
    // Compare-and-set against a delete or a finish committing meanwhile.
    let updated = job::Entity::update_many()
        .col_expr(job::Column::LockedUntil, Expr::value(until))
        .col_expr(job::Column::UpdatedAt, Expr::value(now))
        .filter(job::Column::Id.eq(id))
        .filter(job::Column::Phase.is_not_in(terminal))
        .exec(&txn)
        .await?;
    let row = job::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or(JobError::NotFound(id))?;
    if updated.rows_affected == 0 {
        return Err(JobError::AlreadyFinished(id, phase_of(&row)?));
    }
    let (kind, message) = match until {
        Some(until) => (
            EventKind::Locked,
            format!(
                "locked against preemption until {} by {}",
                until.to_rfc3339(),
                admin.username
            ),
        ),
        None => (EventKind::Unlocked, format!("unlocked by {}", admin.username)),
    };
    events::record(
        &txn,
        &row,
        kind,
        message,
        Some(serde_json::json!({ "until": until, "by": admin.username })),
        now,
    )
    .await?;
    txn.commit().await?;
    ctx.signals.events_written();
    // The watcher tells the cluster's own scheduler at once (`volcano.sh/preemptable`).
    ctx.signals.wake_watcher();
    Ok(to_api(&row)?)
}

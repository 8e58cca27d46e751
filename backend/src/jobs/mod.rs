//! Jobs (`spec/prequeue.md` §4, §6, §8; `spec/api.md` "Jobs"): submission and its preview,
//! lists, detail with the timeline and the prequeue standing, delete and the admin lock.
//!
//! Every decision is the pure core's ([`crate::prequeue::decide_submission`]); this service
//! loads its inputs, serialises decisions per queue tree, writes the outcome in one
//! transaction, and drives activation through [`activation`], the path the watcher uses too.
//!
//! - `validate.rs`: step 1, the body's own rules.
//! - `activation.rs`: claim, create in the cluster, `Pending` — the one activation path.
//! - `events.rs`: the timeline and the stream's feed.
//! - `idempotency.rs`: `Idempotency-Key` on submit.
//! - `summary.rs`: the resource summary and the limit check.
//! - `handlers.rs`, `stream.rs`: the HTTP face (REST and Server-Sent Events).

pub mod activation;
pub mod admit;
pub mod entity;
pub mod events;
pub mod handlers;
pub mod idempotency;
pub mod stream;
pub mod summary;
pub mod validate;

use std::str::FromStr;

use anteroom_shared::api::jobs::{
    Decision, Job, JobBody, JobDetail, JobEventItem, PrequeueStanding, PrequeuedJob, Preview, SubmitResponse,
    WaitReason,
};
use anteroom_shared::scheduling::{
    JobKind, JobPhase, PreemptionPolicy, ResourceList, ScheduleType, TaskResources, is_single_node, job_explicit_nodes,
};
use chrono::{DateTime, Duration, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, FromQueryResult,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set, Statement,
};

use self::activation::ActivationOutcome;
use self::entity::job;
use self::events::EventKind;
use crate::cluster::{Cluster, ClusterError};
use crate::prequeue::{
    JobSnapshot, NodeSnapshot, QueueTree, Reason, Snapshot, Submission, SubmitDecision, SubmitRejection,
    decide_submission,
};
use crate::queues::{self, QueueError};
use crate::settings::Settings;
use crate::signals::Signals;
use crate::store::compact;
use crate::{quotas, users};

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
    /// SQLite: the task that admits submissions in batches; PostgreSQL: `None` (each
    /// submission takes its queue tree's lock in a transaction of its own).
    pub sequencer: Option<&'a admit::Sequencer>,
}

/// What a jobs operation can fail on; the handlers map each to a status and a stable code.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The body breaks its own rules (step 1): every (field, problem).
    #[error("invalid job")]
    Invalid(Vec<validate::Problem>),
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
}

fn corrupt(row: &job::Model, what: &str) -> DbErr {
    DbErr::Custom(format!("job {}: unreadable {what}", row.id))
}

/// A stored phase word as a phase.
pub fn phase_of(row: &job::Model) -> Result<JobPhase, DbErr> {
    JobPhase::from_str(&row.phase).map_err(|_| corrupt(row, "phase"))
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
    })
}

/// The scheduling columns of a job: what the core needs, without the JSON of its tasks and
/// resources. The submit path and the watcher's snapshot read jobs through this.
#[derive(Debug, Clone, FromQueryResult)]
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
        ])
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
            resources: compact::decode_request(&self.request_milli).map_err(|_| corrupt("request"))?,
            explicit_nodes: compact::decode_nodes(&self.explicit_nodes),
            single_node: self.single_node,
            nodes: if self.nodes == "[]" {
                Vec::new()
            } else {
                serde_json::from_str(&self.nodes).map_err(|_| corrupt("nodes"))?
            },
            locked_until: self.locked_until,
            tolerations: Vec::new(),
        })
    }
}

/// The tasks as the core sees them.
fn task_resources(body: &JobBody) -> Vec<TaskResources> {
    body.tasks
        .iter()
        .map(|t| TaskResources {
            name: t.name.clone(),
            replicas: t.replicas,
            requests: t.resources.clone(),
            node_names: t.node_names.clone(),
        })
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

/// Everything one decision reads (`spec/prequeue.md` §4 steps 5–7), in a constant number of
/// queries: the queue tree, the quota rules and usage of the submitted queue's whole tree (only
/// when quotas are on), the timed-out jobs of the queue that may block it (only when blocking
/// is on) and the caller's prequeued jobs (up to the per-user maximum, for step 6).
#[allow(clippy::too_many_arguments)]
async fn decision_snapshot(
    db: &impl ConnectionTrait,
    config: anteroom_shared::scheduling::PrequeueConfig,
    nodes: Vec<NodeSnapshot>,
    specs: &[crate::prequeue::QueueSpec],
    tree: &QueueTree,
    owner: i64,
    queue: &str,
    now: DateTime<Utc>,
) -> Result<(Snapshot, u64), DbErr> {
    let (quota_rules, usage) = if config.queue_quota_enabled {
        let root = tree.root_of(queue).to_owned();
        let family: Vec<String> = specs
            .iter()
            .filter(|s| tree.root_of(&s.name) == root)
            .map(|s| s.name.clone())
            .collect();
        (
            quotas::all(db).await?,
            queues::usage::usage_rows(db, Some(&family), None).await?,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let mut rows: Vec<SchedulingRow> = Vec::new();
    if config.blocking_enabled() {
        rows = SchedulingRow::select()
            .filter(job::Column::Queue.eq(queue))
            .filter(job::Column::Phase.is_in([JobPhase::Prequeue.as_str(), JobPhase::Pending.as_str()]))
            .filter(job::Column::ScheduleType.eq(ScheduleType::Normal.as_str()))
            .filter(job::Column::TimeoutAt.lt(now))
            .into_model::<SchedulingRow>()
            .all(db)
            .await?;
    }
    // Step 6 only needs to know whether the caller has reached the maximum: count at most that
    // many, whatever the backlog.
    let limit = u64::try_from(config.max_prequeued_jobs_per_user.max(1)).unwrap_or(u64::MAX);
    let owner_prequeued = job::Entity::find()
        .select_only()
        .column(job::Column::Id)
        .filter(job::Column::OwnerId.eq(owner))
        .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
        .limit(limit)
        .count(db)
        .await?;
    let jobs = rows
        .iter()
        .map(SchedulingRow::to_snapshot)
        .collect::<Result<Vec<_>, _>>()?;
    let snapshot = Snapshot {
        config,
        queues: specs.to_vec(),
        quotas: quota_rules,
        jobs,
        usage,
        nodes,
        preemptions_in_flight: Vec::new(),
    };
    Ok((snapshot, owner_prequeued))
}

/// Steps 1–2: the body's rules (its own fields, then its quantities and node names, which need
/// the cluster's nodes), then the caller's right to the queue. Answers the nodes for the
/// decision.
async fn check_body_and_queue(
    ctx: Context<'_>,
    user: &users::entity::Model,
    body: &JobBody,
    tasks: &[TaskResources],
) -> Result<Vec<NodeSnapshot>, JobError> {
    let problems = validate::problems(body);
    if !problems.is_empty() {
        return Err(JobError::Invalid(problems));
    }
    anteroom_shared::scheduling::job_resources(tasks).map_err(SubmitRejection::from)?;
    // Outside any transaction: the cluster may be slow, and the simulated one reads the store.
    let nodes = ctx.cluster.nodes().await?;
    crate::prequeue::check_node_names(tasks, &nodes)?;
    queues::usable(ctx.db_read, user, &body.queue).await?;
    Ok(nodes)
}

fn submission<'a>(
    user: &users::entity::Model,
    body: &'a JobBody,
    tasks: &'a [TaskResources],
    owner_prequeued: u64,
) -> Submission<'a> {
    Submission {
        owner: user.id,
        queue: &body.queue,
        kind: body.kind,
        schedule_type: body.schedule_type,
        preemption_policy: body.preemption_policy.unwrap_or_default(),
        tasks,
        tolerations: &[],
        owner_prequeued: Some(owner_prequeued),
    }
}

/// `POST /api/v1/jobs/preview`: steps 1–7 against the current state, nothing written.
pub async fn preview(ctx: Context<'_>, user: &users::entity::Model, body: &JobBody) -> Result<Preview, JobError> {
    let tasks = task_resources(body);
    let nodes = check_body_and_queue(ctx, user, body, &tasks).await?;
    let now = Utc::now();
    let config = ctx.settings.current();
    let (specs, tree) = queues::tree(ctx.db_read).await?;
    let (snapshot, prequeued) =
        decision_snapshot(ctx.db_read, config, nodes, &specs, &tree, user.id, &body.queue, now).await?;
    let decision = decide_submission(&snapshot, &tree, &submission(user, body, &tasks, prequeued), now)?;
    let request = anteroom_shared::scheduling::job_resources(&tasks).map_err(SubmitRejection::from)?;
    let check = crate::prequeue::QuotaView::new(&snapshot, &tree).limit_check(user.id, &body.queue, &request);
    let (decision, reasons) = admission_parts(&decision);
    Ok(Preview {
        decision,
        reasons,
        quota: summary::limit_check_to_api(check),
    })
}

fn admission_parts(decision: &SubmitDecision) -> (Decision, Vec<WaitReason>) {
    match decision {
        SubmitDecision::Activated => (Decision::Activated, Vec::new()),
        SubmitDecision::Prequeued { reasons } => (Decision::Prequeued, reasons.iter().map(wait_reason).collect()),
    }
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
) -> Result<SubmitResponse, JobError> {
    let key = key.map(idempotency::check_key).transpose()?;
    let hash = idempotency::body_hash(body);
    if let Some(key) = key
        && let Some(first) = idempotency::find(ctx.db_read, user.id, key, Utc::now()).await?
    {
        return replay(ctx, &first, &hash).await;
    }
    let tasks = task_resources(body);
    let nodes = check_body_and_queue(ctx, user, body, &tasks).await?;
    let config = ctx.settings.current();
    let request = anteroom_shared::scheduling::job_resources(&tasks).map_err(SubmitRejection::from)?;
    let pending = admit::Pending {
        user: user.clone(),
        body: body.clone(),
        tasks,
        request,
        nodes,
        key: key.map(|k| (k.to_owned(), hash.clone())),
        config: config.clone(),
    };
    let admitted = match ctx.sequencer {
        Some(sequencer) => sequencer.admit(pending).await,
        None => admit::admit_alone(ctx.db, &pending).await,
    };
    let (row, decision, admission) = match admitted {
        Ok(admit::Admitted::New {
            row,
            decision,
            admission,
        }) => (*row, decision, admission),
        Ok(admit::Admitted::Replay(first)) => return replay(ctx, &first, &hash).await,
        Err(JobError::Db(e)) if key.is_some() => {
            // The same key committed meanwhile by a request into another queue tree
            // (PostgreSQL): the unique key refused ours.
            if let Some(key) = key
                && let Some(first) = idempotency::find(ctx.db, user.id, key, Utc::now()).await?
            {
                return replay(ctx, &first, &hash).await;
            }
            return Err(JobError::Db(e));
        }
        Err(e) => return Err(e),
    };
    ctx.signals.events_written();
    if key.is_some() {
        idempotency::forget_expired(ctx.db, Utc::now()).await;
    }
    // From here on the job exists: whatever fails answers 201 with the job as stored (§4 step
    // 9); a job left `Activating` is the watcher's to finish.
    let row = match decision {
        SubmitDecision::Activated => {
            // Detached: a client that hangs up now must not leave its job half-activated.
            let (db, cluster, claimed) = (ctx.db.clone(), ctx.cluster.clone(), row.clone());
            let grace = config.preemption_grace_period_seconds;
            let outcome =
                tokio::spawn(async move { activation::activate_claimed(&db, cluster.as_ref(), &claimed, grace).await })
                    .await
                    .map_err(|e| DbErr::Custom(format!("activation task: {e}")));
            match outcome {
                Ok(Ok(ActivationOutcome::Activated(activated))) => activated,
                Ok(Ok(ActivationOutcome::CreateFailed { job, .. })) => job,
                Ok(Ok(ActivationOutcome::Superseded)) => current(ctx.db, row).await,
                Ok(Err(e)) | Err(e) => {
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
    Ok(SubmitResponse {
        job: to_api(&row)?,
        admission,
    })
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

/// Step 8: the row (`Prequeue`, or `Activating` = claimed for the activation that follows) and
/// its first events.
#[allow(clippy::too_many_arguments)]
async fn insert_job(
    txn: &impl ConnectionTrait,
    user: &users::entity::Model,
    body: &JobBody,
    tasks: &[TaskResources],
    request: &ResourceList,
    decision: &SubmitDecision,
    config: &anteroom_shared::scheduling::PrequeueConfig,
    now: DateTime<Utc>,
) -> Result<job::Model, DbErr> {
    let normal = body.schedule_type == ScheduleType::Normal;
    let tolerance = normal.then_some(config.normal_job_waiting_tolerance_seconds);
    let reasons = match decision {
        SubmitDecision::Prequeued { reasons } => Some(reasons.iter().map(wait_reason).collect::<Vec<_>>()),
        SubmitDecision::Activated => None,
    };
    let phase = if reasons.is_some() {
        JobPhase::Prequeue
    } else {
        JobPhase::Activating
    };
    let row = job::ActiveModel {
        name: Set(body.name.clone()),
        kind: Set(body.kind.as_str().to_string()),
        queue: Set(body.queue.clone()),
        owner_id: Set(user.id),
        owner_name: Set(user.username.clone()),
        schedule_type: Set(body.schedule_type.as_str().to_string()),
        preemption_policy: Set(body.preemption_policy.unwrap_or_default().as_str().to_string()),
        phase: Set(phase.as_str().to_string()),
        waiting_tolerance_seconds: Set(tolerance),
        timeout_at: Set(tolerance
            .and_then(Duration::try_seconds)
            .and_then(|d| now.checked_add_signed(d))),
        tasks: Set(json(&body.tasks)?),
        resources: Set(json(request)?),
        request_milli: Set(compact::encode_request(request)),
        explicit_nodes: Set(compact::encode_nodes(&job_explicit_nodes(tasks))),
        single_node: Set(is_single_node(tasks)),
        nodes: Set("[]".to_string()),
        wait_reasons: Set(reasons.as_ref().map(json).transpose()?),
        submitted_at: Set(now),
        activated_at: Set(None),
        started_at: Set(None),
        finished_at: Set(None),
        locked_until: Set(None),
        updated_at: Set(now),
        claimed_at: Set((phase == JobPhase::Activating).then_some(now)),
        attempts: Set(0),
        next_attempt_at: Set(None),
        last_error: Set(None),
        ..Default::default()
    }
    .insert(txn)
    .await?;
    let mut first = vec![(
        EventKind::Submitted,
        format!("submitted to queue {:?}", row.queue),
        None,
    )];
    if let Some(reasons) = reasons {
        let message = reasons
            .iter()
            .map(|r| r.message.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        first.push((
            EventKind::Prequeued,
            format!("waiting in the prequeue: {message}"),
            Some(serde_json::json!({ "reasons": reasons })),
        ));
    }
    events::record_all(txn, &row, first, now).await?;
    Ok(row)
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, DbErr> {
    serde_json::to_string(value).map_err(|e| DbErr::Custom(format!("serializing a job: {e}")))
}

/// Which jobs a list shows.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// Only this owner's (users see only their own).
    pub owner: Option<i64>,
    /// Only these owners, by username (admins).
    pub users: Vec<String>,
    /// Any of these phases.
    pub phases: Vec<JobPhase>,
    /// Any of these schedule types.
    pub schedule_types: Vec<ScheduleType>,
    /// Any of these kinds.
    pub kinds: Vec<JobKind>,
    /// Any of these queues.
    pub queues: Vec<String>,
}

/// One page of jobs, newest first, and how many match.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &JobFilter,
    offset: u64,
    limit: u64,
) -> Result<(Vec<Job>, u64), DbErr> {
    let mut query = job::Entity::find();
    if let Some(owner) = filter.owner {
        query = query.filter(job::Column::OwnerId.eq(owner));
    }
    if !filter.users.is_empty() {
        query = query.filter(job::Column::OwnerName.is_in(filter.users.iter().map(String::as_str)));
    }
    if !filter.phases.is_empty() {
        query = query.filter(job::Column::Phase.is_in(filter.phases.iter().map(|p| p.as_str())));
    }
    if !filter.schedule_types.is_empty() {
        query = query.filter(job::Column::ScheduleType.is_in(filter.schedule_types.iter().map(|s| s.as_str())));
    }
    if !filter.kinds.is_empty() {
        query = query.filter(job::Column::Kind.is_in(filter.kinds.iter().map(|k| k.as_str())));
    }
    if !filter.queues.is_empty() {
        query = query.filter(job::Column::Queue.is_in(filter.queues.iter().map(String::as_str)));
    }
    let total = query.clone().count(db).await?;
    let rows = query
        .order_by_desc(job::Column::Id)
        .offset(offset)
        .limit(limit)
        .all(db)
        .await?;
    let jobs = rows.iter().map(to_api).collect::<Result<Vec<_>, _>>()?;
    Ok((jobs, total))
}

/// The job `id` if `actor` may see it: its owner or an admin. Anyone else gets `NotFound`, as
/// if it did not exist.
pub async fn visible(db: &impl ConnectionTrait, actor: &users::entity::Model, id: i64) -> Result<job::Model, JobError> {
    let row = job::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or(JobError::NotFound(id))?;
    let admin = users::role_of(actor) == anteroom_shared::api::Role::Admin;
    if row.owner_id != actor.id && !admin {
        return Err(JobError::NotFound(id));
    }
    Ok(row)
}

/// 1-based position of a prequeued job among the prequeued jobs of its queue, in
/// (submittedAt, id) order.
pub async fn position(db: &impl ConnectionTrait, row: &job::Model) -> Result<u64, DbErr> {
    let before = job::Entity::find()
        .filter(job::Column::Queue.eq(&row.queue))
        .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
        .filter(
            Condition::any().add(job::Column::SubmittedAt.lt(row.submitted_at)).add(
                Condition::all()
                    .add(job::Column::SubmittedAt.eq(row.submitted_at))
                    .add(job::Column::Id.lt(row.id)),
            ),
        )
        .count(db)
        .await?;
    Ok(before + 1)
}

fn stored_reasons(row: &job::Model) -> Vec<WaitReason> {
    row.wait_reasons
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
        .unwrap_or_default()
}

/// `GET /api/v1/jobs/{id}`: the job, its timeline and, while prequeued, where it stands.
pub async fn detail(db: &impl ConnectionTrait, actor: &users::entity::Model, id: i64) -> Result<JobDetail, JobError> {
    let row = visible(db, actor, id).await?;
    let events: Vec<JobEventItem> = events::of_job(db, id).await?;
    let prequeue = if phase_of(&row)? == JobPhase::Prequeue {
        Some(PrequeueStanding {
            position: position(db, &row).await?,
            reasons: stored_reasons(&row),
        })
    } else {
        None
    };
    Ok(JobDetail {
        job: to_api(&row)?,
        events,
        prequeue,
    })
}

/// `DELETE /api/v1/jobs/{id}` (`spec/prequeue.md` §6). A prequeued job becomes `Deleted` by
/// compare-and-set; if the watcher claimed it meanwhile, it is deleted in the cluster like any
/// other. Any other unfinished job is deleted in the cluster first (a cluster that does not
/// answer leaves it untouched: 503), then marked `Deleted` by compare-and-set on the phase
/// read; a phase that moved on is read again.
pub async fn delete(ctx: Context<'_>, actor: &users::entity::Model, id: i64) -> Result<(), JobError> {
    let mut row = visible(ctx.db, actor, id).await?;
    // Each pass either finishes or observes a phase change; phases only move forward.
    for _ in 0..8 {
        let phase = phase_of(&row)?;
        if phase.is_terminal() {
            return Err(JobError::AlreadyFinished(id, phase));
        }
        if phase != JobPhase::Prequeue {
            ctx.cluster.delete_job(id, DELETE_GRACE_SECONDS).await?;
        }
        let txn = crate::store::write_transaction(ctx.db).await?;
        // Taken inside the transaction: an event's time is close to its commit (the event
        // stream's settle window relies on it).
        let now = Utc::now();
        let updated = job::Entity::update_many()
            .col_expr(job::Column::Phase, Expr::value(JobPhase::Deleted.as_str()))
            .col_expr(job::Column::FinishedAt, Expr::value(now))
            .col_expr(job::Column::UpdatedAt, Expr::value(now))
            .col_expr(job::Column::WaitReasons, Expr::value(Option::<String>::None))
            .filter(job::Column::Id.eq(id))
            .filter(job::Column::Phase.eq(phase.as_str()))
            .exec(&txn)
            .await?;
        if updated.rows_affected == 1 {
            events::record(
                &txn,
                &row,
                EventKind::Deleted,
                format!("deleted by {}", actor.username),
                Some(serde_json::json!({ "by": actor.username, "phase": phase })),
                now,
            )
            .await?;
            txn.commit().await?;
            ctx.signals.events_written();
            ctx.signals.wake_watcher();
            return Ok(());
        }
        drop(txn);
        row = job::Entity::find_by_id(id)
            .one(ctx.db)
            .await?
            .ok_or(JobError::NotFound(id))?;
    }
    Err(JobError::Db(DbErr::Custom(format!(
        "job {id} kept changing phase during its delete"
    ))))
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
    let now = Utc::now();
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
    Ok(to_api(&row)?)
}

/// `GET /api/v1/admin/prequeue`: every prequeued job in (submittedAt, id) order with its
/// position in its queue and its reasons, one page at a time.
pub async fn prequeued(db: &impl ConnectionTrait, offset: u64, limit: u64) -> Result<(Vec<PrequeuedJob>, u64), DbErr> {
    #[derive(FromQueryResult)]
    struct Ranked {
        id: i64,
        position: i64,
    }
    let total = job::Entity::find()
        .filter(job::Column::Phase.eq(JobPhase::Prequeue.as_str()))
        .count(db)
        .await?;
    // Window functions: SQLite ≥ 3.25 and PostgreSQL both have ROW_NUMBER; the bounds are
    // validated integers, the phase a constant.
    let sql = format!(
        "SELECT id, position FROM (SELECT id, submitted_at, ROW_NUMBER() OVER (PARTITION BY queue ORDER BY submitted_at, id) AS position FROM jobs WHERE phase = 'Prequeue') ranked ORDER BY submitted_at, id LIMIT {limit} OFFSET {offset}"
    );
    let ranked = Ranked::find_by_statement(Statement::from_string(db.get_database_backend(), sql))
        .all(db)
        .await?;
    let rows = job::Entity::find()
        .filter(job::Column::Id.is_in(ranked.iter().map(|r| r.id)))
        .all(db)
        .await?;
    let mut out = Vec::with_capacity(ranked.len());
    for r in ranked {
        // A job activated between the two queries is left out of this page.
        if let Some(row) = rows.iter().find(|row| row.id == r.id) {
            out.push(PrequeuedJob {
                job: to_api(row)?,
                position: u64::try_from(r.position).unwrap_or(0),
                reasons: stored_reasons(row),
            });
        }
    }
    Ok((out, total))
}

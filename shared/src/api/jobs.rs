//! Jobs (`spec/api.md`, "Jobs"): the submission body, the job object, admission decisions,
//! reasons, events and the lock.

mod lists;
use chrono::{DateTime, Utc};
pub use lists::{BulkDeleteBody, BulkFailure, BulkLockBody, BulkResult, JobSort, JobSortField, MAX_BULK_JOBS};
use serde::{Deserialize, Serialize};

use crate::scheduling::{JobKind, JobPhase, PreemptionPolicy, Quantity, QuantityFormat, ResourceList, ScheduleType};

/// The queue a job goes to when the body names none.
pub const DEFAULT_QUEUE: &str = "default";

fn default_queue() -> String {
    DEFAULT_QUEUE.to_string()
}

/// One task of a job: `replicas` identical pods.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskBody {
    /// A Kubernetes name (1–63 of `a-z 0-9 -`); `main`, or `master`/`worker`/`ps` by kind.
    pub name: String,
    /// Pods of this task, 1–1,000.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1000))]
    pub replicas: u32,
    /// Container image, 1–512 characters.
    pub image: String,
    /// Container command: at most 256 arguments, 64 KiB in all.
    #[serde(default)]
    pub command: Vec<String>,
    /// Requests of one pod, as quantity strings.
    pub resources: ResourceList,
    /// Host names the pods may run on; empty = anywhere. Each must be a node of the cluster.
    #[serde(default)]
    pub node_names: Vec<String>,
    /// Environment of the container: at most 64 variables, names of `[A-Za-z_][A-Za-z0-9_.-]*`
    /// (1–128), values up to 4 KiB, 32 KiB in all; plain values only (no secret references).
    /// `ANTEROOM_*` (Anteroom's) and `NVIDIA_*` (the NVIDIA container toolkit's device controls)
    /// are refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Size of a memory-backed `/dev/shm`, part of the task's memory (not added to it): PyTorch's
    /// and TensorFlow's data loaders need more than the runtime's 64 MiB. Absent: a quarter of
    /// the memory for `pytorch` and `tensorflow` tasks, none for the others; `"0"`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm_size: Option<Quantity>,
}

impl TaskBody {
    /// What the scheduler needs of this task (placement, sums), without the container.
    pub fn scheduling(&self) -> crate::scheduling::TaskResources {
        crate::scheduling::TaskResources {
            name: self.name.clone(),
            replicas: self.replicas,
            requests: self.resources.clone(),
            node_names: self.node_names.clone(),
        }
    }

    /// The `/dev/shm` this task gets in a job of `kind` ([`TaskBody::shm_size`]): `None` for none.
    pub fn effective_shm(&self, kind: JobKind) -> Option<Quantity> {
        match self.shm_size {
            Some(size) => size.is_positive().then_some(size),
            None if matches!(kind, JobKind::Pytorch | JobKind::Tensorflow) => {
                let memory = self.resources.get("memory");
                let quarter = memory.milli() / 4;
                // Whole bytes (milli-bytes mean nothing to a tmpfs), in binary units.
                let bytes = quarter / 1000;
                (bytes > 0).then(|| Quantity::from_milli_saturating(bytes * 1000, QuantityFormat::BinarySi))
            }
            None => None,
        }
    }
}

/// One environment variable of a task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnvVar {
    /// Variable name.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 128))]
    pub name: String,
    /// Its value (may be empty).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 4096))]
    pub value: String,
}

/// `POST /api/v1/jobs` and `POST /api/v1/jobs/preview` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobBody {
    /// A Kubernetes name: 1–63 of `a-z 0-9 -`, starting and ending with a letter or digit.
    pub name: String,
    /// Fixes the task layout.
    pub kind: JobKind,
    /// A queue the caller may use (`default` when absent).
    #[serde(default = "default_queue")]
    pub queue: String,
    /// `normal` (default) or `backfill`.
    #[serde(default)]
    pub schedule_type: ScheduleType,
    /// Normal jobs only; `PreemptLowerPriority` when absent.
    #[serde(default)]
    pub preemption_policy: Option<PreemptionPolicy>,
    /// 1–64 tasks.
    pub tasks: Vec<TaskBody>,
    /// Volumes of the admin's catalogue to mount in every pod, by name (at most 16): each must
    /// be offered to the job's queue (403 `volume_forbidden`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<String>,
    /// How long it may run once started, 60 – 31,536,000 seconds (a year); the cluster then
    /// ends it `Failed` (`DeadlineExceeded`). Absent: the queue's default limit, else its
    /// maximum, else none. Above the queue's maximum: 422. Start estimates of waiting jobs rest
    /// on these limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 60, maximum = 31_536_000))]
    pub max_runtime_seconds: Option<i64>,
    /// A preemption sends it back to the prequeue, keeping its submission time, instead of
    /// ending it (at most `maxRequeues` times). Absent: the admin's `requeueByDefault`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue: Option<bool>,
    /// Its priority inside its queue: within the queue's `priorityRange` (422
    /// `priority_out_of_range` outside it); higher goes first. Absent: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// `ifIdle` (absent): beyond its queue's guarantee it borrows idle room of other queues
    /// and may be reclaimed; `never`: it waits for guaranteed room instead (`spec/prequeue.md`
    /// §9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borrow: Option<crate::scheduling::BorrowPolicy>,
}

/// The shortest runtime limit a job may ask for: the cluster's pods need time to start at all.
pub const MIN_RUNTIME_LIMIT_SECONDS: i64 = 60;
/// The longest runtime limit a job or a queue may name: a year.
pub const MAX_RUNTIME_LIMIT_SECONDS: i64 = 31_536_000;

/// `POST /api/v1/jobs/{id}/resubmit` body: what to change from the job's own body; `{}` runs
/// it again as it was, under a new name (`-r2`, `-r3`… [`next_run_name`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResubmitBody {
    /// Another name (default: the old one with the next run suffix).
    #[serde(default)]
    pub name: Option<String>,
    /// Another queue.
    #[serde(default)]
    pub queue: Option<String>,
    /// Another schedule type.
    #[serde(default)]
    pub schedule_type: Option<ScheduleType>,
    /// Another preemption policy (normal jobs only).
    #[serde(default)]
    pub preemption_policy: Option<PreemptionPolicy>,
    /// Other tasks (all of them).
    #[serde(default)]
    pub tasks: Option<Vec<TaskBody>>,
    /// Other catalogue volumes.
    #[serde(default)]
    pub volumes: Option<Vec<String>>,
}

impl ResubmitBody {
    /// The body of a new run of `job`: its own body with these changes.
    pub fn apply_to(&self, job: &Job) -> JobBody {
        let mut body = job.to_body();
        body.name = self.name.clone().unwrap_or_else(|| next_run_name(&job.name));
        if let Some(queue) = &self.queue {
            body.queue.clone_from(queue);
        }
        if let Some(schedule_type) = self.schedule_type {
            body.schedule_type = schedule_type;
            if schedule_type == ScheduleType::Backfill {
                body.preemption_policy = None;
            }
        }
        if self.preemption_policy.is_some() {
            body.preemption_policy = self.preemption_policy;
        }
        if let Some(tasks) = &self.tasks {
            body.tasks.clone_from(tasks);
        }
        if let Some(volumes) = &self.volumes {
            body.volumes.clone_from(volumes);
        }
        body
    }
}

/// The name of the next run of a job named `name`: `train` → `train-r2`, `train-r2` →
/// `train-r3`; cut so that it stays a valid name of at most 63 characters.
pub fn next_run_name(name: &str) -> String {
    let (base, run) = match name.rsplit_once("-r") {
        Some((base, n)) if !base.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            (base, n.parse::<u64>().map_or(2, |n| n.saturating_add(1)))
        }
        _ => (name, 2),
    };
    let suffix = format!("-r{run}");
    let room = 63usize.saturating_sub(suffix.len());
    let mut base: String = base.chars().take(room).collect();
    while base.ends_with('-') {
        base.pop();
    }
    if base.is_empty() {
        base.push_str("job");
    }
    base + &suffix
}

/// A job (`spec/api.md`, the `job` object).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// Database id; the cluster object is `ar-<id>`.
    pub id: i64,
    /// Name given at submission.
    pub name: String,
    /// Kind.
    pub kind: JobKind,
    /// Queue.
    pub queue: String,
    /// Owner's username.
    pub owner: String,
    /// Normal or backfill ("Elastic").
    pub schedule_type: ScheduleType,
    /// Whether it may cause preemption once timed out.
    pub preemption_policy: PreemptionPolicy,
    /// Copied at submission for normal jobs; `null` for backfill.
    pub waiting_tolerance_seconds: Option<i64>,
    /// Current phase (`Activating` is shown to people as Pending).
    pub phase: JobPhase,
    /// The tasks as submitted.
    pub tasks: Vec<TaskBody>,
    /// Σ replicas × requests.
    pub resources: ResourceList,
    /// Nodes its pods run on.
    pub nodes: Vec<String>,
    /// When it was submitted (its waiting clock starts here).
    pub submitted_at: DateTime<Utc>,
    /// When it was created in the cluster.
    pub activated_at: Option<DateTime<Utc>>,
    /// When its pods started running.
    pub started_at: Option<DateTime<Utc>>,
    /// When it reached a terminal phase.
    pub finished_at: Option<DateTime<Utc>>,
    /// An admin lock: never preempted before this.
    pub locked_until: Option<DateTime<Utc>>,
    /// When it first waited for shared room (a queue's capacity, a blocker, or `Pending` in
    /// the cluster); its waiting tolerance counts from here. `null` while only its owner's own
    /// quota has held it (`spec/prequeue.md` §1).
    #[serde(default)]
    pub waiting_since: Option<DateTime<Utc>>,
    /// The tolerations its pods carry, from the admin's rules when it was submitted.
    #[serde(default)]
    pub tolerations: Vec<crate::scheduling::Toleration>,
    /// The catalogue volumes its pods mount (where, read-only or not; the sources stay with
    /// the admins), as resolved when it was submitted.
    #[serde(default)]
    pub volumes: Vec<crate::api::volumes::VolumeChoice>,
    /// Why it failed, in one line: the first failing pod, Kubernetes' reason and the exit code
    /// (`Vanished` when it disappeared from the cluster, `CreateFailed` when it could not be
    /// created there); `null` unless it failed and that is known.
    #[serde(default)]
    pub failure: Option<crate::api::pods::JobFailure>,
    /// How long it may run once started; `null`: no limit.
    #[serde(default)]
    pub max_runtime_seconds: Option<i64>,
    /// A preemption sends it back to the prequeue.
    #[serde(default)]
    pub requeue: bool,
    /// How many times a preemption sent it back.
    #[serde(default)]
    pub requeues: u32,
    /// Its priority inside its queue.
    #[serde(default)]
    pub priority: i32,
    /// Whether it may borrow beyond its queue's guarantee.
    #[serde(default)]
    pub borrow: crate::scheduling::BorrowPolicy,
    /// Admitted on room beyond its queue's guarantee: it may be reclaimed when the lender asks
    /// for its room back (§9).
    #[serde(default)]
    pub borrowing: bool,
    /// While it waits, where it stands (position, reasons, estimate) — in lists asked with
    /// `standing=true` only (a job's own page has it beside the job); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prequeue: Option<PrequeueStanding>,
}

impl Job {
    /// The body that submits this job again as it was (same name): its kind, queue, schedule
    /// type, policy (normal jobs), tasks and catalogue volumes by name. Tolerations are not
    /// part of a body — they follow from the admin's rules at the next submission.
    pub fn to_body(&self) -> JobBody {
        JobBody {
            name: self.name.clone(),
            kind: self.kind,
            queue: self.queue.clone(),
            schedule_type: self.schedule_type,
            preemption_policy: (self.schedule_type == ScheduleType::Normal).then_some(self.preemption_policy),
            tasks: self.tasks.clone(),
            volumes: self.volumes.iter().map(|v| v.name.clone()).collect(),
            max_runtime_seconds: self.max_runtime_seconds,
            requeue: Some(self.requeue),
            priority: (self.priority != 0).then_some(self.priority),
            borrow: (self.borrow != crate::scheduling::BorrowPolicy::IfIdle).then_some(self.borrow),
        }
    }
}

/// Why a job waits: a stable `code` (`quota`, `queue_capacity`, `blocked_by`,
/// `backfill_disabled`, `max_active_jobs`, `round_limit`), an English message and details.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WaitReason {
    /// Stable code; the UI translates by it.
    pub code: String,
    /// English text.
    pub message: String,
    /// Structured context (resources with usage, request and limit; the blocking job…).
    #[serde(default)]
    pub details: Option<serde_json::Value>,
}

/// What the prequeue decided about a submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum Decision {
    /// Sent to the cluster now.
    Activated,
    /// Waiting in the prequeue for the reasons given.
    Prequeued,
}

/// The decision with its reasons (empty when activated).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    /// Activated or prequeued.
    pub decision: Decision,
    /// Why it waits.
    pub reasons: Vec<WaitReason>,
    /// Activated on room beyond a guarantee on its path (§9): it may be reclaimed.
    #[serde(default)]
    pub borrowing: bool,
    /// What it borrows, per queue on its path that goes beyond its guarantee.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub borrowed: Vec<crate::scheduling::reasons::BorrowedRoom>,
}

/// The header of a `POST /api/v1/jobs` answer that repeats the first answer to its
/// `Idempotency-Key` (value `true`): nothing was created this time.
pub const IDEMPOTENT_REPLAYED_HEADER: &str = "idempotent-replayed";

/// `POST /api/v1/jobs` answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SubmitResponse {
    /// The job as written.
    pub job: Job,
    /// What happened to it.
    pub admission: Admission,
}

/// One resource of a limit check: current usage, the request, the limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LimitDetail {
    /// Resource name.
    pub resource: String,
    /// The caller's occupying normal jobs in the queue.
    pub used: crate::scheduling::Quantity,
    /// What is asked for.
    pub request: crate::scheduling::Quantity,
    /// The quota's limit.
    pub limit: crate::scheduling::Quantity,
    /// `used + request > limit`.
    pub exceeded: bool,
}

/// The caller's quota against a request (`POST /api/v1/me/resource-limit-check`, and inside a
/// preview).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LimitCheck {
    /// Quotas are on and the queue has a rule.
    pub enabled: bool,
    /// Some resource would go over its limit.
    pub exceeded: bool,
    /// Every resource the rule names.
    pub details: Vec<LimitDetail>,
}

/// `POST /api/v1/me/resource-limit-check` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitCheckBody {
    /// A queue the caller may use.
    pub queue: String,
    /// The request to check.
    pub resources: ResourceList,
}

/// `POST /api/v1/jobs/preview` answer: what a submission would do now; nothing is written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// Activated or prequeued.
    pub decision: Decision,
    /// Why it would wait.
    pub reasons: Vec<WaitReason>,
    /// The caller's quota against this request.
    pub quota: LimitCheck,
}

/// One entry of a job's timeline, and of the event stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct JobEventItem {
    /// Increasing id; the stream's `id:` (resume with `Last-Event-ID`).
    pub id: i64,
    /// The job.
    pub job_id: i64,
    /// `submitted`, `prequeued`, `activated`, `activation_failed`, `failed`, `finished`,
    /// `deleted`, `preempted` (this job made room for the one named in `details`),
    /// `preempted_for` (jobs were preempted for this one), `locked`, `unlocked`.
    pub kind: String,
    /// English text, written by Anteroom (never the cluster's own words).
    pub message: String,
    /// Structured context, from which the UI says the event in each language: `submitted`
    /// `{queue}`, `prequeued` `{reasons}`, `activated` `{clusterName}`, `activation_failed`
    /// `{attempts, maxAttempts}`, `failed` `{code}` (`cluster_failed` with `failure`,
    /// `cluster_create_failed` with `attempts`, `vanished`), `finished` `{phase}`, `deleted`
    /// `{by, phase}`, `locked`/`unlocked` `{by, until}`, `preempted` `{beneficiary,
    /// beneficiaryName, node, graceSeconds}`, `preempted_for` `{victims, node, deficit}` (events
    /// written by older versions may lack some). An event caused by the cluster also has, for
    /// admins only, `clusterError`: the cluster's own text.
    #[serde(default)]
    pub details: Option<serde_json::Value>,
    /// The job's owner (username), on the event stream only: a list filtered by owner
    /// refetches for that owner's events alone. Absent in a job's timeline (the job says it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The job's phase when the stream sent the event, on the event stream only (a later
    /// change may already show): a list filtered by phase refetches for the jobs entering or
    /// leaving its phases alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<crate::scheduling::JobPhase>,
    /// When it happened.
    pub created_at: DateTime<Utc>,
}

/// Where a prequeued job stands: its position in its queue and why it waits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PrequeueStanding {
    /// 1-based, among the prequeued jobs of its queue in the order the active activation
    /// order considers them (FCFS: (submittedAt, id); fair share: the DRF walk).
    pub position: u64,
    /// Why it waits (as last decided).
    pub reasons: Vec<WaitReason>,
    /// When it is likely to start, if every running job ran until its runtime limit and the
    /// jobs ahead started in order; `null` when unknown ([`PrequeueStanding::basis`]).
    #[serde(default)]
    pub estimated_start_at: Option<DateTime<Utc>>,
    /// What the estimate rests on; `null` while no forecast covers the job yet (it was just
    /// submitted, or this replica does not run the watcher).
    #[serde(default)]
    pub basis: Option<EstimateBasis>,
}

/// What a start estimate rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum EstimateBasis {
    /// Every job it waits for has a runtime limit: an estimate from those limits, the jobs
    /// ahead, quotas, capacities and the cluster's total room (not node placement, pinning,
    /// blocking or preemption).
    Limits,
    /// It waits for a job without a runtime limit (or for longer than the forecast looks
    /// ahead): no estimate.
    Unknown,
}

/// `GET /api/v1/jobs/{id}/ahead`: the waiting jobs of its queue that the prequeue considers
/// before it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct JobsAhead {
    /// The job asked about.
    pub job_id: i64,
    /// The activation order the forecast followed.
    pub order: crate::scheduling::ActivationOrder,
    /// Its 1-based position: the jobs ahead plus one.
    pub position: u64,
    /// Jobs ahead in all (`items` holds the first `limit`).
    pub total: u64,
    /// The jobs ahead, the next to be considered first.
    pub items: Vec<AheadJob>,
    /// When the forecast was computed.
    pub computed_at: DateTime<Utc>,
}

/// One job ahead. Another user's job (unless the reader is an admin) shows only its
/// resources, submission time, wait reasons and estimate: `id`, `name` and `owner` are `null`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AheadJob {
    /// Its id (`null`: another user's job).
    pub id: Option<i64>,
    /// Its name (`null`: another user's job).
    pub name: Option<String>,
    /// Its owner (`null`: another user's job).
    pub owner: Option<String>,
    /// The reader's own job.
    pub mine: bool,
    /// Σ replicas × requests.
    pub resources: ResourceList,
    /// When it was submitted.
    pub submitted_at: DateTime<Utc>,
    /// Why it waits (as last decided).
    pub reasons: Vec<WaitReason>,
    /// Its own start estimate.
    pub estimated_start_at: Option<DateTime<Utc>>,
    /// What that rests on.
    pub basis: EstimateBasis,
}

/// `GET /api/v1/jobs/{id}` answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct JobDetail {
    /// The job.
    #[serde(flatten)]
    pub job: Job,
    /// Its timeline, oldest first.
    pub events: Vec<JobEventItem>,
    /// Present while it is prequeued.
    pub prequeue: Option<PrequeueStanding>,
}

/// A prequeued job in the admin's list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PrequeuedJob {
    /// The job.
    pub job: Job,
    /// 1-based position in its queue.
    pub position: u64,
    /// Why it waits.
    pub reasons: Vec<WaitReason>,
}

/// `PUT /api/v1/admin/jobs/{id}/lock` body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LockBody {
    /// Never preempted before this; `null` unlocks.
    pub until: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests;

//! The `jobs`, `job_events` and `idempotency_keys` tables.

/// One row of `jobs`: the API's job plus the compact scheduling columns and the activation
/// protocol's bookkeeping.
pub mod job {
    use sea_orm::entity::prelude::*;

    /// A job.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "jobs")]
    pub struct Model {
        /// Database id; the cluster name is `ar-<id>`.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// Name given at submission.
        pub name: String,
        /// `jupyter`, `webide`, `custom`, `pytorch`, `tensorflow`.
        pub kind: String,
        /// Queue name.
        pub queue: String,
        /// Owner's user id.
        pub owner_id: i64,
        /// Owner's username (kept if the account is deleted).
        pub owner_name: String,
        /// `normal` or `backfill`.
        pub schedule_type: String,
        /// `PreemptLowerPriority` or `Never`.
        pub preemption_policy: String,
        /// The phase word (`Prequeue`, `Activating`, …).
        pub phase: String,
        /// Copied at submission for normal jobs.
        pub waiting_tolerance_seconds: Option<i64>,
        /// `waiting_since + waiting_tolerance_seconds`: from then on the job blocks others;
        /// NULL while `waiting_since` is.
        pub timeout_at: Option<DateTimeUtc>,
        /// The tasks as submitted (JSON).
        pub tasks: String,
        /// Σ replicas × requests (JSON map of quantity strings).
        pub resources: String,
        /// The same as `name=milli` pairs ([`crate::store::compact`]).
        pub request_milli: String,
        /// Explicit nodes, comma-joined; empty = anywhere.
        pub explicit_nodes: String,
        /// One task with one replica.
        pub single_node: bool,
        /// Nodes its pods run on (JSON array).
        pub nodes: String,
        /// Why it waits, as last decided (JSON array of reasons); `None` unless prequeued.
        pub wait_reasons: Option<String>,
        /// Submission time.
        pub submitted_at: DateTimeUtc,
        /// Created in the cluster.
        pub activated_at: Option<DateTimeUtc>,
        /// Pods started running.
        pub started_at: Option<DateTimeUtc>,
        /// Reached a terminal phase.
        pub finished_at: Option<DateTimeUtc>,
        /// Admin lock against preemption.
        pub locked_until: Option<DateTimeUtc>,
        /// When it first waited for shared room (`spec/prequeue.md` §1); NULL while it has only
        /// been held by its owner's own quota.
        pub waiting_since: Option<DateTimeUtc>,
        /// Last change.
        pub updated_at: DateTimeUtc,
        /// When it was claimed for activation (`Activating`).
        pub claimed_at: Option<DateTimeUtc>,
        /// Failed cluster creates so far.
        pub attempts: i32,
        /// Not retried before this (exponential backoff).
        pub next_attempt_at: Option<DateTimeUtc>,
        /// The last create error, or the cluster's failure reason.
        pub last_error: Option<String>,
    }

    /// Events hang off jobs; declared on the event side.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// One row of `job_events`: an entry of a job's timeline and of the event stream.
pub mod event {
    use sea_orm::entity::prelude::*;

    /// A job event.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "job_events")]
    pub struct Model {
        /// Increasing id: the stream's event id.
        #[sea_orm(primary_key)]
        pub id: i64,
        /// The job.
        pub job_id: i64,
        /// The job's owner (copied, so a user's stream needs no join).
        pub owner_id: i64,
        /// `submitted`, `prequeued`, `activated`, …
        pub kind: String,
        /// English text.
        pub message: String,
        /// JSON details.
        pub details: Option<String>,
        /// When it happened.
        pub created_at: DateTimeUtc,
    }

    /// No navigation needed: events are read by job id.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// One row of `idempotency_keys`.
pub mod idempotency_key {
    use sea_orm::entity::prelude::*;

    /// The first answer to a (user, key).
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "idempotency_keys")]
    pub struct Model {
        /// The caller.
        #[sea_orm(primary_key, auto_increment = false)]
        pub user_id: i64,
        /// The client's key.
        #[sea_orm(primary_key, auto_increment = false)]
        pub key: String,
        /// SHA-256 of the first body, hex.
        pub request_hash: String,
        /// The job it created.
        pub job_id: i64,
        /// The first answer's admission (JSON): a repeat answers the same job with it.
        pub admission: String,
        /// When the key was first used; ignored after 24 h.
        pub created_at: DateTimeUtc,
    }

    /// None.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

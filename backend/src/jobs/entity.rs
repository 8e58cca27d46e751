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
        /// The uid label of its cluster object ([`new_cluster_uid`]), which tells this job's
        /// `ar-<id>` from another's after a restored or rolled-back database reused the id.
        /// NULL only in rows written without it; read through [`Model::uid_in_cluster`].
        pub cluster_uid: Option<String>,
        /// What the cluster's own scheduler was last told about its pods
        /// (`volcano.sh/preemptable`): the watcher patches them when the lock or the
        /// backfill minimum runtime changes the answer. NULL: not known (older rows).
        pub cluster_preemptable: Option<bool>,
        /// Its tolerations, worked out from the admin's rules at submission (JSON, or empty
        /// text for none): admission, the watcher and its pods use this same list.
        pub tolerations: String,
        /// What its pods mount, resolved from the volume catalogue at submission (JSON, or
        /// empty text for none).
        pub volumes: String,
        /// Why it failed, in one line (JSON of `JobFailure`): the first failing pod, its
        /// reason and exit code; NULL unless the cluster said why.
        pub failure: Option<String>,
        /// How long it may run once started; the cluster ends it `Failed`
        /// (`DeadlineExceeded`) after that. NULL: no limit.
        pub max_runtime_seconds: Option<i64>,
        /// A preemption sends it back to the prequeue (keeping its submission time) instead of
        /// ending it, up to the setting's number of times.
        pub requeue: bool,
        /// How many times a preemption sent it back.
        pub requeues: i32,
        /// The user id its containers run as, never root (its queue's at submission); NULL:
        /// as its images say, root included.
        pub run_as_user: Option<i64>,
        /// Its priority inside its queue (`spec/prequeue.md` §9); 0 unless the queue allows a
        /// range.
        pub priority: i32,
        /// It waits for guaranteed room rather than borrowing (`borrow: "never"`).
        pub borrow_never: bool,
        /// Admitted beyond its queue's guarantee: it may be reclaimed. Set at activation.
        pub borrowing: bool,
    }

    impl Model {
        /// The uid its cluster object carries: the stored one, or for a row without one the
        /// `legacy-<id>` that the migration gave every row that existed before uids.
        pub fn uid_in_cluster(&self) -> String {
            self.cluster_uid.clone().unwrap_or_else(|| legacy_cluster_uid(self.id))
        }
    }

    /// A fresh uid for a new job: 32 lowercase hex digits (a UUID v4 without dashes), a valid
    /// Kubernetes label value.
    pub fn new_cluster_uid() -> String {
        uuid::Uuid::new_v4().simple().to_string()
    }

    /// The uid of a job that existed before uids (`m20261125_000016_job_cluster_uid` writes the
    /// same): derived from the id, so a backup from before that migration, restored and
    /// migrated again, gives its jobs the uids they had.
    pub fn legacy_cluster_uid(id: i64) -> String {
        format!("{}{id}", crate::cluster::LEGACY_UID_PREFIX)
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

#[cfg(test)]
mod tests {
    use migration::{Migrator, MigratorTrait};
    use sea_orm::{ConnectionTrait, EntityTrait};

    use super::job;

    /// Jobs stored before `jobs.cluster_uid` existed get `legacy-<id>` from the migration, the
    /// same value a row without a uid reads as; new rows get a random one.
    #[tokio::test]
    async fn rows_from_before_cluster_uids_get_uids_derived_from_their_ids() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("anteroom.db").display());
        let db = crate::store::connect(&url).await.unwrap();
        let before = Migrator::migrations()
            .iter()
            .position(|m| m.name() == "m20261125_000016_job_cluster_uid")
            .expect("the migration is registered");
        Migrator::up(&db, Some(u32::try_from(before).unwrap())).await.unwrap();
        let insert = "INSERT INTO jobs (name, kind, queue, owner_id, owner_name, schedule_type, \
            preemption_policy, phase, tasks, resources, request_milli, explicit_nodes, single_node, nodes, \
            submitted_at, updated_at, attempts) VALUES ('old', 'custom', 'default', 1, 'ada', 'normal', \
            'Never', 'Pending', '[]', '{}', '', '', true, '[]', '2026-11-01 00:00:00+00:00', \
            '2026-11-01 00:00:00+00:00', 0)";
        for _ in 0..2 {
            db.execute_unprepared(insert).await.unwrap();
        }
        Migrator::up(&db, None).await.unwrap();
        db.execute_unprepared(insert).await.unwrap();

        let rows = job::Entity::find().all(&db).await.unwrap();
        let uids: Vec<(Option<&str>, String)> = rows
            .iter()
            .map(|r| (r.cluster_uid.as_deref(), r.uid_in_cluster()))
            .collect();
        assert_eq!(
            uids,
            [
                (Some("legacy-1"), "legacy-1".to_owned()),
                (Some("legacy-2"), "legacy-2".to_owned()),
                (None, "legacy-3".to_owned()),
            ]
        );
        let fresh = job::new_cluster_uid();
        assert_eq!(fresh.len(), 32);
        assert!(
            fresh.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{fresh}"
        );
        assert_ne!(fresh, job::new_cluster_uid());
    }

    /// An installation upgraded in use keeps letting images run as root (they may need it), even
    /// with every job pruned; one that never had a user starts with every queue at user 1000
    /// (migration 28).
    #[tokio::test]
    async fn an_upgrade_keeps_root_where_the_installation_was_used_and_a_new_one_runs_as_user_1000() {
        use crate::queues::entity::queue;
        let run_as = |in_use: bool, with_a_job: bool| async move {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("sqlite://{}?mode=rwc", dir.path().join("anteroom.db").display());
            let db = crate::store::connect(&url).await.unwrap();
            let before = Migrator::migrations()
                .iter()
                .position(|m| m.name() == "m20261128_000028_run_as_user")
                .expect("the migration is registered");
            Migrator::up(&db, Some(u32::try_from(before).unwrap())).await.unwrap();
            db.execute_unprepared(
                "INSERT INTO queues (name, display_name, open, created_at, updated_at) VALUES \
                 ('team', 'team', true, '2026-11-01 00:00:00+00:00', '2026-11-01 00:00:00+00:00')",
            )
            .await
            .unwrap();
            if in_use {
                // Used, its jobs all pruned since: a user, no job.
                db.execute_unprepared(
                    "INSERT INTO users (username, display_name, password_hash, role, created_at, updated_at) \
                     VALUES ('ada', 'Ada', 'x', 'admin', '2026-11-01 00:00:00+00:00', '2026-11-01 00:00:00+00:00')",
                )
                .await
                .unwrap();
            }
            if with_a_job {
                db.execute_unprepared(
                    "INSERT INTO jobs (name, kind, queue, owner_id, owner_name, schedule_type, \
                     preemption_policy, phase, tasks, resources, request_milli, explicit_nodes, single_node, nodes, \
                     submitted_at, updated_at, attempts) VALUES ('old', 'custom', 'default', 1, 'ada', 'normal', \
                     'Never', 'Completed', '[]', '{}', '', '', true, '[]', '2026-11-01 00:00:00+00:00', \
                     '2026-11-01 00:00:00+00:00', 0)",
                )
                .await
                .unwrap();
            }
            Migrator::up(&db, None).await.unwrap();
            let mut users: Vec<(String, Option<i64>)> = queue::Entity::find()
                .all(&db)
                .await
                .unwrap()
                .into_iter()
                .map(|q| (q.name, q.run_as_user))
                .collect();
            users.sort();
            let jobs: Vec<Option<i64>> = job::Entity::find()
                .all(&db)
                .await
                .unwrap()
                .into_iter()
                .map(|j| j.run_as_user)
                .collect();
            (users, jobs)
        };
        assert_eq!(
            run_as(true, true).await,
            (
                vec![("default".to_owned(), None), ("team".to_owned(), None)],
                vec![None]
            )
        );
        assert_eq!(
            run_as(true, false).await,
            (vec![("default".to_owned(), None), ("team".to_owned(), None)], vec![]),
            "used, every job pruned"
        );
        assert_eq!(
            run_as(false, false).await,
            (
                vec![("default".to_owned(), Some(1000)), ("team".to_owned(), Some(1000))],
                vec![]
            )
        );
    }
}

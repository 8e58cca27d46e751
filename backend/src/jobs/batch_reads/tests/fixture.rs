//! The world the batch tests decide in: a store of queues (two trees, one closed with a closed
//! sub-queue), users, quota rules and stored jobs; submissions as the handler hands them over;
//! the reference (each submission reading the store at its turn); and the harness that runs a
//! batch both ways on two copies of a store (SQLite, or PostgreSQL) and compares.

use std::sync::Arc;

use anteroom_shared::api::jobs::JobBody;
use anteroom_shared::scheduling::{JobPhase, PrequeueConfig};
use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;
use sea_orm::{ActiveModelTrait, DatabaseConnection, Set};
use tokio::sync::oneshot;

use super::super::super::admit::{Admitted, Pending, Reads, admit_batch, admit_one};
use super::super::super::entity::job;
use crate::cluster::clock::ManualClock;
use crate::prequeue::tests::fixtures::{node, rl};
use crate::queues::{self, entity::member, entity::queue};
use crate::store::compact;
use crate::users;

pub(super) fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2027-03-01T12:00:00Z")
        .expect("a valid instant")
        .to_utc()
}

/// `(name, parent, open)`: two trees, one closed with a closed sub-queue.
pub(super) const QUEUES: [(&str, Option<&str>, bool); 3] = [
    ("q-open", None, true),
    ("q-team", None, false),
    ("q-team-a", Some("q-team"), false),
];
/// User ids; the last is an admin.
pub(super) const USERS: [i64; 4] = [101, 102, 103, 104];
pub(super) const PHASES: [JobPhase; 7] = [
    JobPhase::Prequeue,
    JobPhase::Pending,
    JobPhase::Running,
    JobPhase::Activating,
    JobPhase::Completed,
    JobPhase::Failed,
    JobPhase::Deleted,
];

#[derive(Debug, Clone)]
pub(super) struct StoredJob {
    pub(super) owner: usize,
    pub(super) queue: usize,
    pub(super) phase: usize,
    pub(super) normal: bool,
    pub(super) cpu: u32,
    /// Seconds before `now()` it started waiting, and its tolerance.
    pub(super) waiting: Option<(i64, i64)>,
}

#[derive(Debug, Clone)]
pub(super) struct Submitted {
    pub(super) owner: usize,
    pub(super) queue: usize,
    pub(super) normal: bool,
    pub(super) cpu: u32,
    pub(super) quotas: bool,
    pub(super) backfill: bool,
    pub(super) max_prequeued: i64,
    pub(super) max_unfinished: i64,
    pub(super) tolerance: i64,
    /// Milliseconds after the previous submission's time.
    pub(super) later_ms: i64,
}

pub(super) fn stored_job() -> impl Strategy<Value = StoredJob> {
    (
        0..USERS.len(),
        0..QUEUES.len(),
        0..PHASES.len(),
        any::<bool>(),
        1u32..4,
        proptest::option::of((0i64..120, prop_oneof![Just(0i64), Just(30), Just(60)])),
    )
        .prop_map(|(owner, queue, phase, normal, cpu, waiting)| StoredJob {
            owner,
            queue,
            phase,
            normal,
            cpu,
            waiting,
        })
}

pub(super) fn submitted() -> impl Strategy<Value = Submitted> {
    (
        (0..USERS.len(), 0..QUEUES.len(), prop::bool::weighted(0.8), 1u32..5),
        (
            any::<bool>(),
            any::<bool>(),
            prop_oneof![1i64..4, Just(100)],
            prop_oneof![1i64..5, Just(100)],
        ),
        (
            prop_oneof![Just(0i64), Just(1)],
            prop_oneof![8 => 0i64..1500, 1 => Just(61_000)],
        ),
    )
        .prop_map(
            |(
                (owner, queue, normal, cpu),
                (quotas, backfill, max_prequeued, max_unfinished),
                (tolerance, later_ms),
            )| {
                Submitted {
                    owner,
                    queue,
                    normal,
                    cpu,
                    quotas,
                    backfill,
                    max_prequeued,
                    max_unfinished,
                    tolerance,
                    later_ms,
                }
            },
        )
}

pub(super) fn user(i: usize) -> users::entity::Model {
    users::entity::Model {
        id: USERS[i],
        username: format!("u{}", USERS[i]),
        display_name: format!("u{}", USERS[i]),
        password_hash: String::new(),
        role: if i == USERS.len() - 1 { "admin" } else { "user" }.into(),
        created_at: now(),
        updated_at: now(),
        token_version: 0,
    }
}

/// The admin's limits: per-user cpu in `q-open` and `q-team`, `q-team`'s `maxActiveJobs`, and
/// the cpu all of `q-team`'s tree may use together.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) open_cpu: u32,
    pub(super) team_cpu: u32,
    pub(super) team_jobs: Option<i32>,
    pub(super) team_capacity: Option<u32>,
}

pub(super) async fn seed(db: &DatabaseConnection, jobs: &[StoredJob], limits: Limits) {
    let Limits {
        open_cpu,
        team_cpu,
        team_jobs,
        team_capacity,
    } = limits;
    for i in 0..USERS.len() {
        users::entity::ActiveModel::from(user(i))
            .insert(db)
            .await
            .expect("user");
    }
    for (name, parent, open) in QUEUES {
        queue::ActiveModel {
            name: Set(name.into()),
            display_name: Set(name.into()),
            open: Set(open),
            parent: Set(parent.map(Into::into)),
            capacity: Set(team_capacity
                .filter(|_| name == "q-team")
                .map(|cpu| format!("{{\"cpu\":\"{cpu}\"}}"))),
            default_runtime_seconds: Set(None),
            max_runtime_seconds: Set(None),
            run_as_user: Set(None),
            sharing: Set(None),
            created_at: Set(now()),
            updated_at: Set(now()),
            ..Default::default()
        }
        .insert(db)
        .await
        .expect("queue");
    }
    for (queue, user) in [("q-team", USERS[0]), ("q-team-a", USERS[1])] {
        member::ActiveModel {
            queue: Set(queue.into()),
            user_id: Set(user),
        }
        .insert(db)
        .await
        .expect("member");
    }
    for (queue, cpu, jobs) in [("q-open", open_cpu, None), ("q-team", team_cpu, team_jobs)] {
        crate::quotas::entity::ActiveModel {
            queue: Set(queue.into()),
            limits: Set(format!("{{\"cpu\":\"{cpu}\"}}")),
            max_active_jobs: Set(jobs),
            created_at: Set(now()),
            updated_at: Set(now()),
            ..Default::default()
        }
        .insert(db)
        .await
        .expect("quota");
    }
    for (i, j) in jobs.iter().enumerate() {
        let waiting_since = j.waiting.map(|(ago, _)| now() - Duration::seconds(ago));
        let tolerance = j.waiting.map(|(_, t)| t);
        job::ActiveModel {
            name: Set(format!("stored-{i}")),
            kind: Set("custom".into()),
            queue: Set(QUEUES[j.queue].0.into()),
            owner_id: Set(USERS[j.owner]),
            owner_name: Set(format!("u{}", USERS[j.owner])),
            schedule_type: Set(if j.normal { "normal" } else { "backfill" }.into()),
            preemption_policy: Set("PreemptLowerPriority".into()),
            phase: Set(PHASES[j.phase].as_str().into()),
            waiting_tolerance_seconds: Set(tolerance),
            waiting_since: Set(waiting_since),
            timeout_at: Set(crate::jobs::timeout_at(waiting_since, tolerance)),
            tasks: Set("[]".into()),
            resources: Set("{}".into()),
            request_milli: Set(compact::encode_request(&rl(&[("cpu", &j.cpu.to_string())]))),
            explicit_nodes: Set(String::new()),
            single_node: Set(true),
            nodes: Set("[]".into()),
            submitted_at: Set(now() - Duration::seconds(600 - i as i64)),
            updated_at: Set(now()),
            attempts: Set(0),
            ..Default::default()
        }
        .insert(db)
        .await
        .expect("job");
    }
}

pub(super) fn pending(s: &Submitted, at: DateTime<Utc>) -> Pending {
    let body: JobBody = serde_json::from_value(serde_json::json!({
        "name": "sub",
        "kind": "custom",
        "queue": QUEUES[s.queue].0,
        "scheduleType": if s.normal { "normal" } else { "backfill" },
        "tasks": [{"name": "main", "replicas": 1, "image": "busybox",
                   "resources": {"cpu": s.cpu.to_string(), "memory": "1Gi"}}],
    }))
    .expect("a valid body");
    let tasks = super::super::super::task_resources(&body);
    let request = anteroom_shared::scheduling::job_resources(&tasks).expect("resources");
    let config = PrequeueConfig {
        queue_quota_enabled: s.quotas,
        backfill_enabled: s.backfill,
        max_prequeued_jobs_per_user: s.max_prequeued,
        max_unfinished_jobs_per_user: s.max_unfinished,
        normal_job_waiting_tolerance_seconds: s.tolerance,
        ..PrequeueConfig::default()
    };
    Pending {
        user: user(s.owner),
        body,
        tasks,
        request,
        nodes: vec![
            node("n1", &[("cpu", "6"), ("memory", "64Gi")]),
            node("n2", &[("cpu", "4"), ("memory", "64Gi")]),
        ],
        catalogue: Vec::new(),
        key: None,
        config,
        clock: Arc::new(ManualClock::new(at)),
    }
}

/// What a submission came to, comparable across two stores (the cluster uid is random; on
/// PostgreSQL, `ids` false, so is the id: a batch takes one from the sequence per submission,
/// and a refused one leaves a gap the one-at-a-time store does not).
pub(super) fn outcome(result: Result<Admitted, crate::jobs::JobError>, ids: bool) -> String {
    match result {
        Ok(Admitted::New {
            mut row,
            decision,
            admission,
        }) => {
            row.cluster_uid = None;
            if !ids {
                row.id = 0;
            }
            format!("{row:?} {decision:?} {admission:?}")
        }
        Ok(Admitted::Replay(first)) => format!("replay {first:?}"),
        Err(e) => format!("refused: {e}"),
    }
}

/// The reference: each submission reads the store at its turn, in one transaction.
pub(super) async fn one_at_a_time(db: &DatabaseConnection, batch: &[Pending], ids: bool) -> Vec<String> {
    let txn = crate::store::write_transaction(db).await.expect("begin");
    let rows = queues::all(&txn).await.expect("queues");
    let (specs, tree) = queues::tree_of(&rows).expect("tree");
    let mut outcomes = Vec::new();
    for p in batch {
        outcomes.push(outcome(
            admit_one(&txn, &rows, (&specs, &tree), p, p.clock.now(), Reads::Store).await,
            ids,
        ));
    }
    txn.commit().await.expect("commit");
    outcomes
}

/// Runs `batch` both ways on two copies of the store and compares; the batched outcomes, and
/// how many of them read the store instead of the batch's figures.
pub(super) fn check(stored: Vec<StoredJob>, batch: Vec<Submitted>, limits: Limits) -> (Vec<String>, usize) {
    check_tampered(stored, batch, limits, None)
}

/// [`check`], with `tamper` (SQL) run on the batched store after the seed.
pub(super) fn check_tampered(
    stored: Vec<StoredJob>,
    batch: Vec<Submitted>,
    limits: Limits,
    tamper: Option<&str>,
) -> (Vec<String>, usize) {
    check_on(None, stored, batch, limits, tamper)
}

/// A fresh, migrated store: SQLite in `dir`, or a new database on the PostgreSQL `server`.
pub(super) async fn fresh_store(dir: &std::path::Path, server: Option<&str>) -> DatabaseConnection {
    match server {
        None => crate::store::test_database(dir).await,
        Some(server) => crate::store::test_postgres_database(server).await,
    }
}

/// [`check_tampered`] on SQLite (`postgres` `None`) or on two fresh databases of that server.
pub(super) fn check_on(
    postgres: Option<&str>,
    stored: Vec<StoredJob>,
    batch: Vec<Submitted>,
    limits: Limits,
    tamper: Option<&str>,
) -> (Vec<String>, usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (batched, reference) = (
            fresh_store(dir_a.path(), postgres).await,
            fresh_store(dir_b.path(), postgres).await,
        );
        let ids = postgres.is_none();
        seed(&batched, &stored, limits).await;
        seed(&reference, &stored, limits).await;
        if let Some(sql) = tamper {
            sea_orm::ConnectionTrait::execute_unprepared(&batched, sql)
                .await
                .expect("tamper");
        }
        let mut at = now();
        let mut pendings = Vec::new();
        for s in &batch {
            at += Duration::milliseconds(s.later_ms);
            pendings.push(pending(s, at));
        }
        let mut receivers = Vec::new();
        let mut with_replies = Vec::new();
        for p in pendings.clone_all() {
            let (reply, answer) = oneshot::channel();
            receivers.push(answer);
            with_replies.push((p, reply));
        }
        let (results, fallbacks) = admit_batch(&batched, &with_replies).await;
        let got: Vec<String> = results.into_iter().map(|r| outcome(r, ids)).collect();
        let want = one_at_a_time(&reference, &pendings, ids).await;
        assert_eq!(got, want);
        drop(receivers);
        (got, fallbacks)
    })
}

/// A copy of each pending submission (`Pending` holds a clock behind an `Arc`).
pub(super) trait CloneAll {
    fn clone_all(&self) -> Vec<Pending>;
}

impl CloneAll for Vec<Pending> {
    fn clone_all(&self) -> Vec<Pending> {
        self.iter()
            .map(|p| Pending {
                user: p.user.clone(),
                body: p.body.clone(),
                tasks: p.tasks.clone(),
                request: p.request.clone(),
                nodes: p.nodes.clone(),
                catalogue: p.catalogue.clone(),
                key: p.key.clone(),
                config: p.config.clone(),
                clock: Arc::new(ManualClock::new(p.clock.now())),
            })
            .collect()
    }
}

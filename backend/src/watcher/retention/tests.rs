//! Pruning on a fresh SQLite file (the same scenarios run on PostgreSQL too in
//! `tests/tests/retention.rs`): what goes, what stays whatever its times, batches, keys, and the
//! fence.

use std::collections::BTreeSet;

use anteroom_shared::scheduling::JobPhase;
use chrono::{DateTime, Duration, Utc};
use sea_orm::{ActiveModelTrait, ConnectionTrait, DatabaseConnection, EntityTrait, Set, TransactionTrait};

use super::*;
use crate::cluster::clock::ManualClock;
use crate::store::lease::Lease;

/// "Now" of every test.
fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2027-03-01T12:00:00Z")
        .expect("a valid instant")
        .to_utc()
}

const DAYS: i64 = 90;

fn retention() -> Option<Duration> {
    job_retention(DAYS as u32)
}

/// The writer of a replica that holds no lease (the API's kind), at `now()`.
fn writer<'a>(db: &'a DatabaseConnection, clock: &'a ManualClock) -> Writer<'a> {
    Writer { db, clock, fence: None }
}

/// A job row in `phase`, submitted and finished when given, with two events.
async fn add_job(
    db: &impl ConnectionTrait,
    phase: JobPhase,
    submitted: DateTime<Utc>,
    finished: Option<DateTime<Utc>>,
) -> i64 {
    let row = job::ActiveModel {
        name: Set(format!("j-{}", phase.as_str().to_lowercase())),
        kind: Set("custom".into()),
        queue: Set("default".into()),
        owner_id: Set(1),
        owner_name: Set("alice".into()),
        schedule_type: Set("normal".into()),
        preemption_policy: Set("PreemptLowerPriority".into()),
        phase: Set(phase.as_str().into()),
        waiting_tolerance_seconds: Set(None),
        timeout_at: Set(None),
        tasks: Set("[]".into()),
        resources: Set("{}".into()),
        request_milli: Set(String::new()),
        explicit_nodes: Set(String::new()),
        single_node: Set(true),
        nodes: Set("[]".into()),
        wait_reasons: Set(None),
        submitted_at: Set(submitted),
        activated_at: Set(None),
        started_at: Set(None),
        finished_at: Set(finished),
        locked_until: Set(None),
        updated_at: Set(finished.unwrap_or(submitted)),
        claimed_at: Set(None),
        attempts: Set(0),
        next_attempt_at: Set(None),
        last_error: Set(None),
        ..Default::default()
    }
    .insert(db)
    .await
    .expect("a job row");
    for kind in ["submitted", "completed"] {
        event::ActiveModel {
            job_id: Set(row.id),
            owner_id: Set(1),
            kind: Set(kind.into()),
            message: Set(kind.into()),
            details: Set(None),
            created_at: Set(submitted),
            ..Default::default()
        }
        .insert(db)
        .await
        .expect("an event row");
    }
    row.id
}

async fn job_ids(db: &DatabaseConnection) -> BTreeSet<i64> {
    job::Entity::find()
        .all(db)
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect()
}

async fn event_job_ids(db: &DatabaseConnection) -> BTreeSet<i64> {
    event::Entity::find()
        .all(db)
        .await
        .unwrap()
        .iter()
        .map(|e| e.job_id)
        .collect()
}

/// Prunes until a transaction comes back not full; the sum.
async fn prune_all(w: Writer<'_>, job_retention: Option<Duration>) -> PruneCounts {
    let mut total = PruneCounts::default();
    loop {
        let counts = prune_once(w, job_retention).await.unwrap().expect("no fence to lose");
        total += counts;
        if !counts.more {
            return total;
        }
    }
}

#[tokio::test]
async fn finished_jobs_past_the_retention_go_with_their_events_and_recent_ones_stay() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::store::test_database(dir.path()).await;
    let clock = ManualClock::new(now());
    let long_ago = now() - Duration::days(DAYS + 30);
    let old = add_job(
        &db,
        JobPhase::Completed,
        long_ago,
        Some(now() - Duration::days(DAYS + 1)),
    )
    .await;
    let old_deleted = add_job(
        &db,
        JobPhase::Deleted,
        long_ago,
        Some(now() - Duration::days(DAYS) - Duration::seconds(1)),
    )
    .await;
    let recent = add_job(&db, JobPhase::Failed, long_ago, Some(now() - Duration::days(DAYS - 1))).await;
    let running = add_job(&db, JobPhase::Running, long_ago, None).await;

    let counts = prune_once(writer(&db, &clock), retention()).await.unwrap().unwrap();

    assert_eq!(
        (counts.jobs, counts.events, counts.more),
        (2, 4, false),
        "two old finished jobs with two events each"
    );
    assert_eq!(job_ids(&db).await, BTreeSet::from([recent, running]));
    assert_eq!(
        event_job_ids(&db).await,
        BTreeSet::from([recent, running]),
        "the pruned jobs' events went with them, the others' stayed"
    );
    assert!(!job_ids(&db).await.contains(&old) && !job_ids(&db).await.contains(&old_deleted));
}

/// The rule restated independently: a job goes exactly when its phase is terminal and it
/// finished before the cutoff. Every phase, with every kind of `finished_at` (none, ancient,
/// just past the cutoff, just inside it, in the future), all submitted long ago: nothing
/// outside a terminal phase goes, not even one that carries an ancient `finished_at`.
#[tokio::test]
async fn no_job_outside_a_terminal_phase_is_ever_pruned_whatever_its_times() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::store::test_database(dir.path()).await;
    let clock = ManualClock::new(now());
    let cutoff = now() - Duration::days(DAYS);
    let submitted = now() - Duration::days(10 * DAYS);
    let finishes = [
        None,
        Some(now() - Duration::days(5 * DAYS)),
        Some(cutoff - Duration::seconds(1)),
        Some(cutoff),
        Some(cutoff + Duration::seconds(1)),
        Some(now() + Duration::days(1)),
    ];
    let mut expected_left = BTreeSet::new();
    let mut expected_gone = 0;
    for phase in JobPhase::ALL {
        for finished in finishes {
            let id = add_job(&db, *phase, submitted, finished).await;
            let goes = phase.is_terminal() && finished.is_some_and(|f| f < cutoff);
            if goes {
                expected_gone += 1;
            } else {
                expected_left.insert(id);
            }
        }
    }
    assert!(expected_gone > 0, "the set-up prunes something");

    let counts = prune_all(writer(&db, &clock), retention()).await;

    assert_eq!(counts.jobs, expected_gone);
    assert_eq!(job_ids(&db).await, expected_left);
    assert_eq!(event_job_ids(&db).await, expected_left);
    for left in job::Entity::find().all(&db).await.unwrap() {
        let phase: JobPhase = left.phase.parse().unwrap();
        if !phase.is_terminal() {
            continue;
        }
        assert!(
            left.finished_at.is_none_or(|f| f >= cutoff),
            "a finished job past the retention was left: {left:?}"
        );
    }
}

#[tokio::test]
async fn a_backlog_larger_than_a_batch_goes_over_several_calls() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::store::test_database(dir.path()).await;
    let clock = ManualClock::new(now());
    let old = now() - Duration::days(DAYS + 1);
    let total = 2 * BATCH + 7;
    let txn = db.begin().await.unwrap();
    for _ in 0..total {
        add_job(&txn, JobPhase::Completed, old, Some(old)).await;
    }
    txn.commit().await.unwrap();
    let keeper = add_job(&db, JobPhase::Pending, old, Some(old)).await;

    let mut batches = Vec::new();
    loop {
        let counts = prune_once(writer(&db, &clock), retention()).await.unwrap().unwrap();
        batches.push((counts.jobs, counts.events, counts.more));
        if !counts.more {
            break;
        }
    }

    assert_eq!(
        batches,
        vec![(BATCH, 2 * BATCH, true), (BATCH, 2 * BATCH, true), (7, 14, false)],
        "at most a batch a transaction, and `more` until the backlog is gone"
    );
    assert_eq!(job_ids(&db).await, BTreeSet::from([keeper]));
}

async fn add_key(db: &impl ConnectionTrait, user: i64, name: &str, job_id: i64, created: DateTime<Utc>) {
    idempotency_key::ActiveModel {
        user_id: Set(user),
        key: Set(name.into()),
        request_hash: Set("0".repeat(64)),
        job_id: Set(job_id),
        admission: Set("{}".into()),
        created_at: Set(created),
    }
    .insert(db)
    .await
    .expect("a key row");
}

async fn key_names(db: &DatabaseConnection) -> BTreeSet<String> {
    idempotency_key::Entity::find()
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|k| format!("{}/{}", k.user_id, k.key))
        .collect()
}

/// Keys go by their own age, 24 h, whatever became of their job, even when finished jobs are
/// kept for ever (`job_retention_days = 0`); a fresh key of a job that exists stays.
#[tokio::test]
async fn idempotency_keys_go_after_24_hours_and_fresh_ones_stay() {
    assert_eq!(job_retention(0), None, "0 keeps finished jobs for ever");
    let dir = tempfile::tempdir().unwrap();
    let db = crate::store::test_database(dir.path()).await;
    let clock = ManualClock::new(now());
    let day = Duration::hours(24);
    let ancient = now() - Duration::days(DAYS + 1);
    let old_job = add_job(&db, JobPhase::Completed, ancient, Some(ancient)).await;
    let young_job = add_job(&db, JobPhase::Running, now() - Duration::hours(1), None).await;
    add_key(&db, 1, "long-spent", old_job, ancient).await;
    add_key(&db, 1, "just-spent", young_job, now() - day - Duration::seconds(1)).await;
    add_key(&db, 2, "at-24h", young_job, now() - day).await;
    add_key(&db, 1, "fresh", young_job, now() - day + Duration::seconds(1)).await;
    add_key(&db, 2, "new", young_job, now() - Duration::minutes(1)).await;

    let counts = prune_once(writer(&db, &clock), job_retention(0))
        .await
        .unwrap()
        .unwrap();

    assert_eq!((counts.idempotency_keys, counts.jobs), (3, 0));
    assert_eq!(key_names(&db).await, BTreeSet::from(["1/fresh".into(), "2/new".into()]));
    assert_eq!(
        job_ids(&db).await,
        BTreeSet::from([old_job, young_job]),
        "with retention 0 even an ancient finished job stays"
    );
    // The key that stays is still answered by the submission's lookup, the one that went was not.
    assert!(
        crate::jobs::idempotency::find(&db, 1, "fresh", now())
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        crate::jobs::idempotency::find(&db, 2, "at-24h", now())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn spent_keys_go_a_batch_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::store::test_database(dir.path()).await;
    let clock = ManualClock::new(now());
    let spent = now() - Duration::hours(25);
    let txn = db.begin().await.unwrap();
    for i in 0..BATCH + 3 {
        add_key(&txn, 1, &format!("k{i}"), 1, spent + Duration::seconds(i as i64)).await;
    }
    txn.commit().await.unwrap();
    let first = prune_once(writer(&db, &clock), None).await.unwrap().unwrap();
    let second = prune_once(writer(&db, &clock), None).await.unwrap().unwrap();
    assert_eq!(
        (first.idempotency_keys, first.more, second.idempotency_keys, second.more),
        (BATCH, true, 3, false)
    );
    assert!(key_names(&db).await.is_empty());
}

/// A victim whose removal the watcher still drives (delete not accepted, or pods not gone)
/// keeps its row, whatever its age; a finished preemption's record goes with its victim.
#[tokio::test]
async fn a_victim_whose_preemption_is_under_way_stays_and_a_finished_ones_record_goes() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::store::test_database(dir.path()).await;
    let clock = ManualClock::new(now());
    let old = now() - Duration::days(DAYS + 1);
    let beneficiary = add_job(&db, JobPhase::Completed, old, Some(old)).await;
    let mut victims = Vec::new();
    for (deleted, gone) in [(None, None), (Some(old), None), (Some(old), Some(old))] {
        let victim = add_job(&db, JobPhase::Preempted, old, Some(old)).await;
        preemption::ActiveModel {
            victim_id: Set(victim),
            beneficiary_id: Set(beneficiary),
            node: Set("gpu-0".into()),
            grace_seconds: Set(30),
            created_at: Set(old),
            deleted_at: Set(deleted),
            gone_at: Set(gone),
            requeue: Set(false),
        }
        .insert(&db)
        .await
        .unwrap();
        victims.push(victim);
    }

    let counts = prune_all(writer(&db, &clock), retention()).await;

    assert_eq!((counts.jobs, counts.preemptions), (2, 1));
    assert_eq!(job_ids(&db).await, BTreeSet::from([victims[0], victims[1]]));
    let records: BTreeSet<i64> = preemption::Entity::find()
        .all(&db)
        .await
        .unwrap()
        .iter()
        .map(|p| p.victim_id)
        .collect();
    assert_eq!(records, BTreeSet::from([victims[0], victims[1]]));
}

/// A replica whose lease was taken over prunes nothing: the fence is checked in the
/// transaction that would delete.
#[tokio::test]
async fn a_replica_that_lost_the_lease_prunes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::store::test_database(dir.path()).await;
    let old = now() - Duration::days(DAYS + 1);
    let id = add_job(&db, JobPhase::Completed, old, Some(old)).await;
    let ttl = Duration::seconds(15);
    let first = Lease::for_this_process("retention-test", ttl);
    let second = Lease::for_this_process("retention-test", ttl);
    let lost = first.acquire(&db, now()).await.unwrap().expect("the lease is free");
    let later = now() + Duration::seconds(20);
    let held = second
        .acquire(&db, later)
        .await
        .unwrap()
        .expect("the first lease expired");
    let clock = ManualClock::new(later);

    let stale = Writer {
        db: &db,
        clock: &clock,
        fence: Some(&lost),
    };
    assert_eq!(prune_once(stale, retention()).await.unwrap(), None);
    assert_eq!(job_ids(&db).await, BTreeSet::from([id]), "nothing was deleted");

    let leader = Writer {
        db: &db,
        clock: &clock,
        fence: Some(&held),
    };
    let counts = prune_once(leader, retention()).await.unwrap().expect("the fence holds");
    assert_eq!(counts.jobs, 1);
    assert!(job_ids(&db).await.is_empty());
}

/// The newest job and event pruned: the next ones still get higher ids, so a stream resumed
/// after a pruned event id misses nothing, and a new job never takes an old job's cluster name.
#[tokio::test]
async fn ids_are_not_reused_after_the_newest_rows_are_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::store::test_database(dir.path()).await;
    let clock = ManualClock::new(now());
    let old = now() - Duration::days(DAYS + 1);
    let first = add_job(&db, JobPhase::Running, old, None).await;
    let newest = add_job(&db, JobPhase::Completed, old, Some(old)).await;
    let newest_event = event::Entity::find()
        .all(&db)
        .await
        .unwrap()
        .iter()
        .map(|e| e.id)
        .max()
        .unwrap();

    let counts = prune_once(writer(&db, &clock), retention()).await.unwrap().unwrap();
    assert_eq!(counts.jobs, 1);

    let next = add_job(&db, JobPhase::Prequeue, now(), None).await;
    assert!(next > newest && newest > first, "job ids {first} {newest} {next}");
    let next_events: Vec<i64> = event::Entity::find()
        .all(&db)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.job_id == next)
        .map(|e| e.id)
        .collect();
    assert!(
        next_events.iter().all(|id| *id > newest_event),
        "new event ids {next_events:?} above the pruned {newest_event}"
    );
}

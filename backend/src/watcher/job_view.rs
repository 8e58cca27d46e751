//! The watcher's memory of every waiting and occupying job, refreshed each round from the rows
//! that changed instead of re-read whole (issue 25; `docs/performance.md`, "The watcher's
//! round"): at 100,000 waiting jobs, reading every row was most of a round.
//!
//! The store stays the truth. Triggers on `jobs` log which job changed in `job_changes`
//! (migration 22), inside the writing transaction, so no write path can forget to. A refresh
//! runs in one read transaction: it takes a *mark*, reads the ids logged since the last mark,
//! and reads those jobs' current rows — a job no longer waiting or occupying leaves the view.
//! Everything in that transaction's snapshot is then reflected, so the view equals a full read
//! at that snapshot:
//!
//! - SQLite has one writer, so changes commit in `seq` order: the mark is the largest `seq`
//!   the snapshot sees, and the next refresh reads what lies above it.
//! - PostgreSQL's `seq` is not commit order. The mark is the oldest transaction still running
//!   when the snapshot was taken (`txid_snapshot_xmin`): every transaction below it has ended.
//!   A refresh reads every change of a transaction at or above the previous mark that its
//!   snapshot sees (some twice, which costs a re-read, never a miss).
//!
//! The view is built whole when first used, when the lease term changes (another leader may
//! have pruned the log), and every [`FULL_READ_EVERY`]: then the refreshed view is compared
//! with a full read in the same transaction, and any difference is counted
//! (`anteroom_job_view_drift_total`) and logged before the full read replaces it. The log is
//! pruned by the leader, under its fence, below the last mark.
//!
//! A round borrows the jobs ([`JobView::lend`]) instead of copying them — at 100,000 jobs
//! the copy was half of the round — and gives them back when it ends
//! ([`JobView::give_back`]), whatever it decided (it only reads them). Jobs never given back
//! (a panic, a future dropped) leave the view empty and marked lent: the next refresh reads
//! the store whole. Only the loan being returned is taken back (its number), so an older
//! loan cannot overwrite a newer view.
//!
//! On PostgreSQL a transaction left open anywhere on the server holds the mark still, and
//! every refresh re-reads every change since; past half of the view a
//! refresh reads whole instead, which is never slower.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use axum_prometheus::metrics;
use sea_orm::{
    AccessMode, ConnectionTrait, DatabaseConnection, DbBackend, DbErr, FromQueryResult, IsolationLevel, Statement,
    TransactionTrait,
};

use crate::jobs::packed::Among;
use crate::prequeue::{JobId, JobSnapshot};

/// How often the view is compared with (and replaced by) a full read.
pub const FULL_READ_EVERY: Duration = Duration::from_secs(300);

/// Log entries consumed before the leader prunes them.
const PRUNE_AFTER: u64 = 20_000;

/// Changed jobs, as a share of the view (and at least [`MIN_CHANGED_FOR_WHOLE`]), past which a
/// refresh reads whole: re-reading that many rows by id costs about as much.
const MAX_CHANGED_SHARE: usize = 2;
/// See [`MAX_CHANGED_SHARE`].
const MIN_CHANGED_FOR_WHOLE: usize = 5_000;

/// Where the last refresh stopped reading the change log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// SQLite: the largest `seq` read.
    Seq(i64),
    /// PostgreSQL: the oldest transaction running at the last snapshot.
    Tx(i64),
}

/// What one refresh did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refreshed {
    /// The view was read whole.
    pub full: bool,
    /// Jobs re-read because they changed.
    pub changed: usize,
    /// Jobs on which the refreshed view and the full read disagreed (0 unless `full` after an
    /// incremental view existed).
    pub drift: usize,
}

/// The jobs of one round's snapshot, kept between rounds.
#[derive(Debug, Default)]
pub struct JobView {
    /// In id order, without repeats.
    jobs: Vec<JobSnapshot>,
    /// The jobs are with a round ([`JobView::lend`]).
    lent: bool,
    /// The number of the last loan.
    loans: u64,
    mark: Option<Mark>,
    /// The lease term the view was built under.
    term: Option<i64>,
    built: Option<Instant>,
    consumed: u64,
}

#[derive(FromQueryResult)]
struct MarkRow {
    mark: Option<i64>,
}

#[derive(FromQueryResult)]
struct IdRow {
    job_id: i64,
}

impl JobView {
    /// A copy of the jobs, in id order (tests).
    pub fn jobs(&self) -> Vec<JobSnapshot> {
        self.jobs.clone()
    }

    /// Hands the jobs, in id order, to a round, with the loan's number, which gives them back
    /// when it ends ([`JobView::give_back`]); until then the view holds none, and a refresh
    /// reads whole.
    pub fn lend(&mut self) -> (Vec<JobSnapshot>, u64) {
        self.lent = true;
        self.loans += 1;
        (std::mem::take(&mut self.jobs), self.loans)
    }

    /// Takes back what loan `loan` of [`JobView::lend`] handed out (unchanged: the round only
    /// reads them). Anything else — a loan after which the view was read whole or lent again —
    /// is dropped.
    pub fn give_back(&mut self, jobs: Vec<JobSnapshot>, loan: u64) {
        if self.lent && loan == self.loans {
            self.jobs = jobs;
            self.lent = false;
        }
    }

    /// How many jobs it holds.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Forgets everything: the next refresh reads the store whole.
    pub fn reset(&mut self) {
        *self = JobView {
            loans: self.loans,
            ..JobView::default()
        };
    }

    /// Brings the view up to date with `db` for a round under lease term `term`: the changed
    /// rows, or everything (see the module's doc for when).
    pub async fn refresh(
        &mut self,
        db: &DatabaseConnection,
        phases: &[&str],
        term: i64,
        full_every: Duration,
    ) -> Result<Refreshed, DbErr> {
        let backend = db.get_database_backend();
        let txn = match backend {
            DbBackend::Postgres => {
                db.begin_with_config(Some(IsolationLevel::RepeatableRead), Some(AccessMode::ReadOnly))
                    .await?
            }
            _ => db.begin().await?,
        };
        // First statement: on PostgreSQL it fixes the transaction's snapshot, and its xmin.
        let mark = read_mark(&txn, backend).await?;
        let stale = self.term != Some(term) || self.mark.is_none() || self.lent;
        let due = self.built.is_none_or(|b| b.elapsed() >= full_every);
        let mut refreshed = Refreshed::default();
        let mut whole_anyway = false;
        if !stale {
            match self.apply_changes(&txn, phases, mark).await? {
                Some(changed) => refreshed.changed = changed,
                None => whole_anyway = true,
            }
        }
        if stale || due || whole_anyway {
            let whole = read_all(&txn, phases).await?;
            if !stale && !whole_anyway {
                refreshed.drift = drift(&self.jobs, &whole);
                if refreshed.drift > 0 {
                    metrics::counter!("anteroom_job_view_drift_total").increment(refreshed.drift as u64);
                    tracing::warn!(
                        jobs = refreshed.drift,
                        "the watcher's job view differed from the store; the store's rows replace it"
                    );
                }
            }
            self.jobs = whole.into_values().collect();
            self.lent = false;
            self.term = Some(term);
            self.built = Some(Instant::now());
            refreshed.full = true;
        }
        txn.commit().await?;
        self.mark = Some(mark);
        Ok(refreshed)
    }

    /// Re-reads the jobs logged between the last mark and `mark`: how many, or `None` when
    /// so many changed that reading whole is cheaper (the view is then left as it was).
    async fn apply_changes(
        &mut self,
        txn: &impl ConnectionTrait,
        phases: &[&str],
        mark: Mark,
    ) -> Result<Option<usize>, DbErr> {
        let among = match (self.mark, mark) {
            (Some(Mark::Seq(after)), Mark::Seq(up_to)) => Among::LoggedBetween { after, up_to },
            (Some(Mark::Tx(from)), Mark::Tx(_)) => Among::LoggedSinceTx(from),
            _ => return Err(DbErr::Custom("the change log's mark changed kind".into())),
        };
        let ids = among.changed_ids_sql().expect("a range of the log");
        let changed: Vec<i64> = IdRow::find_by_statement(Statement::from_string(txn.get_database_backend(), ids))
            .all(txn)
            .await?
            .into_iter()
            .map(|r| r.job_id)
            .collect();
        if changed.is_empty() {
            return Ok(Some(0));
        }
        if changed.len() > MIN_CHANGED_FOR_WHOLE.max(self.jobs.len() / MAX_CHANGED_SHARE) {
            self.consumed += changed.len() as u64;
            return Ok(None);
        }
        let rows = crate::jobs::packed::scheduling_rows_among(txn, phases, among).await?;
        let mut fresh = BTreeMap::new();
        for row in &rows {
            let job = row.to_snapshot()?;
            fresh.insert(job.id, job);
        }
        merge(&mut self.jobs, &changed, fresh);
        self.consumed += changed.len() as u64;
        Ok(Some(changed.len()))
    }

    /// Deletes the log below the last mark once enough of it was read, in `txn` (the leader's
    /// fenced write: a deposed leader prunes nothing).
    pub async fn prune(&mut self, txn: &impl ConnectionTrait) -> Result<u64, DbErr> {
        if self.consumed < PRUNE_AFTER {
            return Ok(0);
        }
        // At most this many rows a call, so a log that grew large while nobody pruned it
        // (a long standby, a burst) is deleted over several rounds, never in one long write.
        const BATCH: u64 = 50_000;
        let backend = txn.get_database_backend();
        let sql = match self.mark {
            Some(Mark::Seq(to)) => format!(
                "DELETE FROM job_changes WHERE seq IN (SELECT seq FROM job_changes WHERE seq <= {to} ORDER BY seq LIMIT {BATCH})"
            ),
            Some(Mark::Tx(from)) => format!(
                "DELETE FROM job_changes WHERE seq IN (SELECT seq FROM job_changes WHERE tx < {from} LIMIT {BATCH})"
            ),
            None => return Ok(0),
        };
        let done = txn.execute_raw(Statement::from_string(backend, sql)).await?;
        if done.rows_affected() < BATCH {
            self.consumed = 0;
        }
        Ok(done.rows_affected())
    }

    /// Whether the log has enough read entries to prune.
    pub fn wants_pruning(&self) -> bool {
        self.consumed >= PRUNE_AFTER
    }
}

async fn read_mark(txn: &impl ConnectionTrait, backend: DbBackend) -> Result<Mark, DbErr> {
    let sql = match backend {
        DbBackend::Postgres => "SELECT txid_snapshot_xmin(txid_current_snapshot()) AS mark",
        _ => "SELECT max(seq) AS mark FROM job_changes",
    };
    let row = MarkRow::find_by_statement(Statement::from_string(backend, sql))
        .one(txn)
        .await?;
    let value = row.and_then(|r| r.mark).unwrap_or(0);
    Ok(match backend {
        DbBackend::Postgres => Mark::Tx(value),
        _ => Mark::Seq(value),
    })
}

async fn read_all(txn: &impl ConnectionTrait, phases: &[&str]) -> Result<BTreeMap<JobId, JobSnapshot>, DbErr> {
    crate::jobs::packed::scheduling_rows(txn, phases)
        .await?
        .iter()
        .map(|row| row.to_snapshot().map(|job| (job.id, job)))
        .collect()
}

/// Replaces, in `jobs` (in id order), every job in `changed` by its row in `fresh` (a job
/// with no row left the phases read, and leaves the view), keeping the order. A job changed
/// in place costs a search; only arrivals and departures move the others, once.
fn merge(jobs: &mut Vec<JobSnapshot>, changed: &[JobId], mut fresh: BTreeMap<JobId, JobSnapshot>) {
    let mut gone = HashSet::new();
    for id in changed {
        if let Ok(at) = jobs.binary_search_by_key(id, |j| j.id) {
            match fresh.remove(id) {
                Some(job) => jobs[at] = job,
                None => {
                    gone.insert(*id);
                }
            }
        }
    }
    if !gone.is_empty() {
        jobs.retain(|j| !gone.contains(&j.id));
    }
    if fresh.is_empty() {
        return;
    }
    let in_order = jobs
        .last()
        .is_none_or(|last| fresh.keys().next().is_some_and(|first| *first > last.id));
    jobs.extend(fresh.into_values());
    if !in_order {
        // Two sorted runs: the stable sort merges them in one pass.
        jobs.sort_by_key(|j| j.id);
    }
}

/// Jobs present on one side only, or different on both.
fn drift(view: &[JobSnapshot], store: &BTreeMap<JobId, JobSnapshot>) -> usize {
    let differing = view.iter().filter(|job| store.get(&job.id) != Some(job)).count();
    let seen: HashSet<JobId> = view.iter().map(|j| j.id).collect();
    let missing = store.keys().filter(|id| !seen.contains(id)).count();
    differing + missing
}

/// Tests: what a refresh did, the view after it, and a full read of the store. (Compare them
/// only while nothing writes: the full read is a later snapshot.)
#[doc(hidden)]
pub async fn refreshed_and_whole(
    view: &mut JobView,
    db: &DatabaseConnection,
    phases: &[&str],
    term: i64,
) -> Result<(Refreshed, Vec<JobSnapshot>, Vec<JobSnapshot>), DbErr> {
    let refreshed = view.refresh(db, phases, term, Duration::MAX).await?;
    let whole = read_all(db, phases).await?;
    Ok((refreshed, view.jobs(), whole.into_values().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: JobId, queue: &str) -> JobSnapshot {
        JobSnapshot {
            id,
            owner: 1,
            queue: queue.to_owned(),
            kind: anteroom_shared::scheduling::JobKind::Custom,
            schedule_type: anteroom_shared::scheduling::ScheduleType::Normal,
            phase: anteroom_shared::scheduling::JobPhase::Prequeue,
            preemption_policy: Default::default(),
            submitted_at: chrono::DateTime::UNIX_EPOCH,
            started_at: None,
            waiting_tolerance_seconds: None,
            waiting_since: None,
            resources: Default::default(),
            explicit_nodes: Default::default(),
            single_node: true,
            nodes: Vec::new(),
            locked_until: None,
            tolerations: Vec::new(),
            max_runtime_seconds: None,
            sharing: Default::default(),
        }
    }

    #[test]
    fn drift_counts_jobs_missing_extra_or_different() {
        let a: BTreeMap<_, _> = [(1, job(1, "a")), (2, job(2, "a")), (3, job(3, "a"))].into();
        let view: Vec<_> = a.values().cloned().collect();
        assert_eq!(drift(&view, &a), 0);
        let mut b = a.clone();
        b.remove(&1); // the view has one the store has not
        b.insert(4, job(4, "a")); // and misses one
        b.insert(2, job(2, "b")); // and one differs
        assert_eq!(drift(&view, &b), 3);
    }

    #[test]
    fn a_lent_view_reads_whole_at_its_next_refresh_unless_given_back() {
        let mut view = JobView {
            jobs: vec![job(1, "a")],
            mark: Some(Mark::Seq(3)),
            term: Some(1),
            ..JobView::default()
        };
        let (lent, loan) = view.lend();
        assert_eq!(lent.len(), 1);
        assert!(view.is_empty() && view.lent, "lent: nothing left to read from");
        view.give_back(lent, loan);
        assert_eq!(view.len(), 1);
        assert!(!view.lent);
        // Giving back what was not lent (a full read replaced it meanwhile) changes nothing.
        view.give_back(vec![job(9, "z")], loan);
        assert_eq!(view.jobs()[0].id, 1);
        // Nor does an older loan given back after a newer one was made.
        let (_older, older) = view.lend();
        let (newer, newest) = view.lend();
        view.give_back(vec![job(9, "z")], older);
        assert!(view.lent, "the older loan is not taken back");
        view.give_back(newer, newest);
        assert!(!view.lent);
    }

    proptest::proptest! {
        /// Merging the changed rows gives what a map keyed by id gives: each changed job
        /// replaced by its fresh row or gone, new ones added, all in id order.
        #[test]
        fn merging_changes_equals_replacing_them_in_a_map(
            before in proptest::collection::btree_set(0i64..60, 0..40),
            changed in proptest::collection::btree_set(0i64..80, 0..40),
            kept in proptest::collection::vec(proptest::bool::ANY, 80),
        ) {
            let mut model: BTreeMap<JobId, JobSnapshot> = before.iter().map(|id| (*id, job(*id, "old"))).collect();
            let mut jobs: Vec<JobSnapshot> = model.values().cloned().collect();
            let fresh: BTreeMap<JobId, JobSnapshot> = changed
                .iter()
                .filter(|id| kept[**id as usize])
                .map(|id| (*id, job(*id, "new")))
                .collect();
            for id in &changed {
                model.remove(id);
            }
            model.extend(fresh.clone());
            let changed: Vec<JobId> = changed.into_iter().collect();
            merge(&mut jobs, &changed, fresh);
            let expected: Vec<JobSnapshot> = model.into_values().collect();
            proptest::prop_assert_eq!(jobs, expected);
        }
    }

    const PHASES: &[&str] = &["Prequeue", "Activating", "Pending", "Running"];

    /// `count` waiting jobs named `{prefix}1`, `{prefix}2`…, in one statement.
    async fn insert_jobs(db: &DatabaseConnection, prefix: &str, count: usize) {
        db.execute_unprepared(&format!(
            "INSERT INTO jobs (name, kind, queue, owner_id, owner_name, schedule_type, preemption_policy, phase, \
             tasks, resources, request_milli, explicit_nodes, single_node, nodes, submitted_at, updated_at, attempts) \
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {count}) \
             SELECT '{prefix}' || i, 'custom', 'default', 1, 'ada', 'normal', 'Never', 'Prequeue', '[]', '{{}}', '', '', \
             true, '[]', '2026-11-01 00:00:00+00:00', '2026-11-01 00:00:00+00:00', 0 FROM n"
        ))
        .await
        .unwrap();
    }

    async fn insert_job(db: &DatabaseConnection, name: &str) {
        insert_jobs(db, name, 1).await;
    }

    async fn whole(db: &DatabaseConnection) -> Vec<JobSnapshot> {
        read_all(db, PHASES).await.unwrap().into_values().collect()
    }

    #[tokio::test]
    async fn jobs_lent_and_never_given_back_make_the_next_refresh_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::store::test_database(dir.path()).await;
        insert_job(&db, "a").await;
        let mut view = JobView::default();
        assert!(view.refresh(&db, PHASES, 1, Duration::MAX).await.unwrap().full);
        assert!(!view.refresh(&db, PHASES, 1, Duration::MAX).await.unwrap().full);
        drop(view.lend()); // a round that never gave them back
        insert_job(&db, "b").await;
        let refreshed = view.refresh(&db, PHASES, 1, Duration::MAX).await.unwrap();
        assert!(refreshed.full, "{refreshed:?}");
        assert_eq!(view.jobs(), whole(&db).await);
        assert_eq!(view.len(), 2);
    }

    #[tokio::test]
    async fn pruning_deletes_only_what_was_read_and_the_view_goes_on_from_there() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::store::test_database(dir.path()).await;
        for name in ["a", "b", "c"] {
            insert_job(&db, name).await;
        }
        let mut view = JobView::default();
        view.refresh(&db, PHASES, 1, Duration::MAX).await.unwrap();
        insert_job(&db, "d").await;
        assert_eq!(view.refresh(&db, PHASES, 1, Duration::MAX).await.unwrap().changed, 1);
        assert!(!view.wants_pruning());
        view.consumed = PRUNE_AFTER;
        // A change after the last refresh: not read yet, so not pruned.
        insert_job(&db, "e").await;
        let txn = db.begin().await.unwrap();
        assert_eq!(view.prune(&txn).await.unwrap(), 4, "the four changes read");
        txn.commit().await.unwrap();
        assert!(!view.wants_pruning());
        let refreshed = view.refresh(&db, PHASES, 1, Duration::MAX).await.unwrap();
        assert_eq!(
            (refreshed.full, refreshed.changed),
            (false, 1),
            "the unread change is still there"
        );
        assert_eq!(view.jobs(), whole(&db).await);
        assert_eq!(view.len(), 5);
    }

    #[tokio::test]
    async fn a_refresh_with_more_changes_than_the_cap_reads_whole() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::store::test_database(dir.path()).await;
        insert_job(&db, "a").await;
        let mut view = JobView::default();
        view.refresh(&db, PHASES, 1, Duration::MAX).await.unwrap();
        let many = MIN_CHANGED_FOR_WHOLE + 1;
        insert_jobs(&db, "j", many).await;
        let refreshed = view.refresh(&db, PHASES, 1, Duration::MAX).await.unwrap();
        assert!(refreshed.full, "{refreshed:?}");
        assert_eq!(refreshed.drift, 0, "not a drift: {refreshed:?}");
        assert_eq!(view.len(), many + 1);
        assert_eq!(view.jobs(), whole(&db).await);
    }
}

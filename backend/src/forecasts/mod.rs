//! The forecast board (issue 27): for every waiting job, its place in the order the prequeue
//! considers jobs and when it is likely to start, computed by the leader's watcher from the
//! state it holds in memory, written to the store ([`stored`]) and read from there by every
//! replica's API, so every replica gives the same answer (`spec/prequeue.md` §8).
//!
//! The watcher hands each round's snapshot to [`Forecasts::refresh`]. A forecast simulates
//! the whole prequeue ([`crate::prequeue::forecast`]), so it is not run every round: at most
//! every [`MIN_INTERVAL`], and never more often than ten times its own last duration, so it
//! takes at most a tenth of a core whatever the prequeue's size — except that a round with
//! waiting jobs the board lacks (just submitted, or requeued) forecasts as soon as that cost
//! bound allows, so a new job's standing exists within a second of its submission on a
//! prequeue of ordinary size. It runs on the blocking pool on a copy of the snapshot (the
//! round's jobs are lent and go back when the round ends), and only one at a time; a round that
//! comes while one runs leaves its snapshot for the next. Tests that drive the watcher by hand
//! compute it inline, every round, so what a round decided is on the board when the round
//! returns.
//!
//! A replica that loses the lease clears its own board and stops writing; the stored board
//! stays until the next leader writes one (a write carries the lease term, so a deposed
//! leader's cannot come after the new one's).
//!
//! The estimates are measured against what happens: the first estimate with a basis each job
//! got is remembered, and when the watcher activates the job the activation is counted as
//! within or past that estimate (`anteroom_estimate_outcomes_total`).

pub mod stored;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anteroom_shared::api::jobs::EstimateBasis;
use anteroom_shared::scheduling::{ActivationOrder, JobPhase};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr};

use self::stored::StoredBoard;
use crate::prequeue::{self, ForecastBounds, JobId, Snapshot};
use crate::signals::Signals;

/// The shortest time between two forecasts.
pub const MIN_INTERVAL: Duration = Duration::from_secs(2);

/// How long a reader waits for the forecast to cover a job just submitted before answering
/// without it: the forecast normally follows the submission within a second; past this the
/// leader is gone or the prequeue is huge.
pub const STANDING_WAIT: Duration = Duration::from_secs(3);

/// Slack allowed before an activation counts as later than its estimate: rounds run on a
/// ticker, so a job due at `t` is activated a round after.
pub const ESTIMATE_SLACK_SECONDS: i64 = 60;

/// One waiting job on the board: where it stands (what it is comes from its row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its queue.
    pub queue: String,
    /// 0-based place among its queue's waiting jobs in consideration order.
    pub rank: usize,
    /// When it is likely to start; `None`: unknown.
    pub estimated_start_at: Option<DateTime<Utc>>,
    /// What that rests on.
    pub basis: EstimateBasis,
}

/// One forecast of the whole prequeue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    /// The instant it simulated from.
    pub computed_at: DateTime<Utc>,
    /// The activation order it followed.
    pub order: ActivationOrder,
    /// Per queue: its waiting jobs in consideration order.
    pub queues: HashMap<String, Vec<JobId>>,
    /// Every waiting job.
    pub jobs: HashMap<JobId, Entry>,
}

impl Board {
    /// The forecast of `snapshot` at `now`.
    pub fn build(snapshot: &Snapshot, now: DateTime<Utc>, bounds: ForecastBounds) -> Board {
        let by_id: HashMap<JobId, &prequeue::JobSnapshot> = snapshot
            .jobs
            .iter()
            .filter(|j| j.phase == JobPhase::Prequeue)
            .map(|j| (j.id, j))
            .collect();
        let mut queues: HashMap<String, Vec<JobId>> = HashMap::new();
        let mut jobs = HashMap::with_capacity(by_id.len());
        for estimate in prequeue::forecast(snapshot, now, bounds) {
            let Some(job) = by_id.get(&estimate.id) else { continue };
            let in_queue = queues.entry(job.queue.clone()).or_default();
            jobs.insert(
                job.id,
                Entry {
                    queue: job.queue.clone(),
                    rank: in_queue.len(),
                    estimated_start_at: estimate.start,
                    basis: match estimate.basis {
                        prequeue::EstimateBasis::Limits => EstimateBasis::Limits,
                        prequeue::EstimateBasis::Unknown => EstimateBasis::Unknown,
                    },
                },
            );
            in_queue.push(job.id);
        }
        Board {
            computed_at: now,
            order: snapshot.config.activation_order,
            queues,
            jobs,
        }
    }

    /// The jobs ahead of `id` in its queue, the next to be considered first; `None` when the
    /// board does not hold `id`.
    pub fn ahead_of(&self, id: JobId) -> Option<&[JobId]> {
        let entry = self.jobs.get(&id)?;
        let queue = self.queues.get(&entry.queue)?;
        Some(&queue[..entry.rank])
    }
}

/// The board and what keeps it fresh; shared by the watcher (writes) and the API (reads).
#[derive(Debug)]
pub struct Forecasts {
    /// The leader's latest board (the watcher's own reads: time-aware backfill).
    published: RwLock<Option<Arc<Board>>>,
    /// Compute every round, inline (tests that drive the watcher by hand).
    inline: bool,
    /// A forecast is being computed.
    busy: AtomicBool,
    /// Bumped by [`Forecasts::clear`]: a forecast started before it is not published (the
    /// replica lost the lease while it ran).
    generation: AtomicU64,
    /// When the last one started, and how long it took.
    last: Mutex<Option<(Instant, Duration)>>,
    /// A round's snapshot with jobs the board lacks, left while a forecast ran: the next one.
    pending: Mutex<Option<Request>>,
    /// Per waiting job: the first estimate it got with a basis.
    first_estimates: Mutex<HashMap<JobId, DateTime<Utc>>>,
    bounds: ForecastBounds,
    /// Where boards are written, and read by every replica.
    store: StoredBoard,
    db: DatabaseConnection,
    signals: Signals,
}

/// What one forecast is computed on.
#[derive(Debug)]
struct Request {
    snapshot: Snapshot,
    now: DateTime<Utc>,
    /// The lease term of the round that asked (the write carries it).
    term: i64,
    generation: u64,
}

impl Forecasts {
    /// An empty board written to `db`; `inline` computes every round in the round itself.
    /// A board written is told through `signals` (waiting readers, here and on the other
    /// replicas).
    pub fn new(inline: bool, db: DatabaseConnection, signals: Signals) -> Self {
        Forecasts {
            published: RwLock::new(None),
            inline,
            busy: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            last: Mutex::new(None),
            pending: Mutex::new(None),
            first_estimates: Mutex::new(HashMap::new()),
            bounds: ForecastBounds::default(),
            store: StoredBoard::default(),
            db,
            signals,
        }
    }

    /// This replica's latest board, if it leads (the watcher's own reads). The API answers
    /// from [`Forecasts::current`] instead, the same on every replica.
    pub fn board(&self) -> Option<Arc<Board>> {
        self.published.read().expect("the board's lock").clone()
    }

    /// The board in the store: what every replica answers from; `None` before any leader
    /// wrote one.
    pub async fn current(&self, db: &impl ConnectionTrait) -> Result<Option<Arc<Board>>, DbErr> {
        self.store.read(db).await
    }

    /// The board in the store once it covers job `id` (a job just submitted waits for the
    /// forecast its submission woke), waiting at most `within`; the latest board otherwise.
    pub async fn covering(
        &self,
        db: &impl ConnectionTrait,
        id: JobId,
        within: Duration,
    ) -> Result<Option<Arc<Board>>, DbErr> {
        // Driven by hand, a forecast exists only after a round the test runs: nothing to wait for.
        let within = if self.inline { Duration::ZERO } else { within };
        let deadline = tokio::time::Instant::now() + within;
        loop {
            // Registered before the read, so a board written between the two is not missed.
            let written = self.signals.forecast();
            let written = written.notified();
            tokio::pin!(written);
            written.as_mut().enable();
            let board = self.current(db).await?;
            if board.as_ref().is_some_and(|b| b.jobs.contains_key(&id)) || tokio::time::Instant::now() >= deadline {
                return Ok(board);
            }
            // A notification is a hint: read again every quarter second whatever happens.
            let wake = deadline.min(tokio::time::Instant::now() + Duration::from_millis(250));
            let _ = tokio::time::timeout_at(wake, written).await;
        }
    }

    /// Forgets the board: this replica no longer runs rounds, so it would only grow stale.
    pub fn clear(&self) {
        let mut published = self.published.write().expect("the board's lock");
        self.generation.fetch_add(1, Ordering::AcqRel);
        *published = None;
        drop(published);
        self.pending.lock().expect("the pending lock").take();
        self.store.forget_written();
        self.first_estimates.lock().expect("the estimates' lock").clear();
    }

    /// After a round of lease term `term` on `snapshot` at `now` that activated `activated`:
    /// forecasts again if one is due (module documentation), on a copy of the snapshot in which
    /// those jobs occupy.
    pub async fn refresh(self: &Arc<Self>, snapshot: &Snapshot, activated: &[JobId], now: DateTime<Utc>, term: i64) {
        let lacking = self.lacks_a_waiting_job(snapshot, activated);
        if !self.inline && !self.due(lacking) {
            return;
        }
        let mut snapshot = snapshot.clone();
        if !activated.is_empty() {
            let activated: std::collections::HashSet<JobId> = activated.iter().copied().collect();
            for job in snapshot.jobs.iter_mut().filter(|j| activated.contains(&j.id)) {
                job.phase = JobPhase::Activating;
            }
        }
        let request = Request {
            snapshot,
            now,
            term,
            generation: self.generation.load(Ordering::Acquire),
        };
        if self.inline {
            let started = Instant::now();
            let board = Board::build(&request.snapshot, now, self.bounds);
            self.publish(board, started, &request).await;
            return;
        }
        if self.busy.swap(true, Ordering::AcqRel) {
            if lacking {
                *self.pending.lock().expect("the pending lock") = Some(request);
            }
            return;
        }
        tokio::spawn(Arc::clone(self).forecast_from(request));
    }

    /// Computes and publishes forecasts, from `request` and then from each snapshot left while
    /// the previous one ran; holds [`Forecasts::busy`] and frees it when done (a panic
    /// included).
    async fn forecast_from(self: Arc<Self>, mut request: Request) {
        /// Frees the next forecast whatever happens to this one.
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        loop {
            {
                let _done = Done(&self.busy);
                loop {
                    let started = Instant::now();
                    let bounds = self.bounds;
                    let (built, back) = match tokio::task::spawn_blocking(move || {
                        let board = Board::build(&request.snapshot, request.now, bounds);
                        (board, request)
                    })
                    .await
                    {
                        Ok(done) => done,
                        Err(e) => {
                            tracing::error!(error = %e, "a forecast failed");
                            return;
                        }
                    };
                    self.publish(built, started, &back).await;
                    let Some(next) = self.pending.lock().expect("the pending lock").take() else {
                        break;
                    };
                    // Within the cost bound: ten times the last forecast's duration apart.
                    let took = started.elapsed();
                    tokio::time::sleep((took * 10).saturating_sub(took)).await;
                    request = next;
                }
            }
            // A snapshot left between the last look and `busy` freed would wait for the next
            // round: take it now, unless another forecast started meanwhile (it is newer).
            let left = self.pending.lock().expect("the pending lock").take();
            match left {
                Some(left) if !self.busy.swap(true, Ordering::AcqRel) => request = left,
                _ => return,
            }
        }
    }

    /// Whether `snapshot` has a waiting job (not among `activated`) that the latest board lacks.
    fn lacks_a_waiting_job(&self, snapshot: &Snapshot, activated: &[JobId]) -> bool {
        let board = self.board();
        snapshot
            .jobs
            .iter()
            .filter(|j| j.phase == JobPhase::Prequeue && !activated.contains(&j.id))
            .any(|j| board.as_ref().is_none_or(|b| !b.jobs.contains_key(&j.id)))
    }

    /// Whether a forecast may start now: ten times the last one's duration after it started,
    /// and [`MIN_INTERVAL`] too unless the board `lacks` a waiting job.
    fn due(&self, lacks: bool) -> bool {
        match *self.last.lock().expect("the timing's lock") {
            None => true,
            Some((started, took)) => {
                let floor = if lacks { Duration::ZERO } else { MIN_INTERVAL };
                started.elapsed() >= floor.max(took * 10)
            }
        }
    }

    /// Makes `board` the current one — written to the store, then this replica's — unless the
    /// board was cleared since its forecast began (the request's generation).
    async fn publish(&self, board: Board, started: Instant, request: &Request) {
        let cleared = || self.generation.load(Ordering::Acquire) != request.generation;
        if cleared() {
            return;
        }
        let board = Arc::new(board);
        match self.store.write(&self.db, request.term, &board).await {
            Ok(true) => self.signals.forecast_written(),
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "writing the forecast failed; the replicas answer from the last one"),
        }
        let mut published = self.published.write().expect("the board's lock");
        if cleared() {
            return;
        }
        *self.last.lock().expect("the timing's lock") = Some((started, started.elapsed()));
        {
            let mut first = self.first_estimates.lock().expect("the estimates' lock");
            first.retain(|id, _| board.jobs.contains_key(id));
            for (id, entry) in &board.jobs {
                if let Some(at) = entry.estimated_start_at {
                    first.entry(*id).or_insert(at);
                }
            }
        }
        *published = Some(board);
    }

    /// The watcher activated `ids` at `now`: each one that had an estimate counts as within
    /// it (allowing [`ESTIMATE_SLACK_SECONDS`]) or past it.
    pub fn observe_activated(&self, ids: &[JobId], now: DateTime<Utc>) {
        let mut first = self.first_estimates.lock().expect("the estimates' lock");
        for id in ids {
            if let Some(estimate) = first.remove(id) {
                let within = now <= estimate + chrono::Duration::seconds(ESTIMATE_SLACK_SECONDS);
                axum_prometheus::metrics::counter!(
                    "anteroom_estimate_outcomes_total",
                    "outcome" => if within { "within" } else { "late" }
                )
                .increment(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prequeue::tests::fixtures::{JobBuilder, t0};

    #[test]
    fn the_board_ranks_each_queue_and_lists_what_is_ahead() {
        let snapshot = Snapshot {
            jobs: vec![
                JobBuilder::normal(1).build(),
                JobBuilder::normal(2).queue("other").build(),
                JobBuilder::normal(3).build(),
                JobBuilder::normal(4).running_on("n1").build(),
            ],
            ..Snapshot::default()
        };
        let board = Board::build(&snapshot, t0(), ForecastBounds::default());
        assert_eq!(board.jobs.len(), 3, "only waiting jobs");
        assert_eq!(board.ahead_of(1), Some(&[][..]));
        assert_eq!(board.ahead_of(3), Some(&[1][..]));
        assert_eq!(board.ahead_of(2), Some(&[][..]));
        assert_eq!(board.ahead_of(4), None);
        assert_eq!(board.jobs[&3].rank, 1);
    }

    #[tokio::test]
    async fn an_activation_counts_within_or_past_its_first_estimate() {
        // A store without the table: its writes fail (logged) and the board is still this
        // replica's.
        let db = sea_orm::Database::connect("sqlite::memory:").await.unwrap();
        let forecasts = Arc::new(Forecasts::new(true, db, Signals::default()));
        let snapshot = Snapshot {
            jobs: vec![JobBuilder::normal(1).build()],
            ..Snapshot::default()
        };
        forecasts.refresh(&snapshot, &[], t0(), 1).await;
        let first = forecasts.first_estimates.lock().unwrap().get(&1).copied();
        assert_eq!(first, Some(t0()), "it fits now");
        // A later forecast does not move the first estimate.
        forecasts
            .refresh(&snapshot, &[], t0() + chrono::Duration::seconds(500), 1)
            .await;
        assert_eq!(forecasts.first_estimates.lock().unwrap().get(&1).copied(), Some(t0()));
        forecasts.observe_activated(&[1], t0() + chrono::Duration::seconds(30));
        assert!(forecasts.first_estimates.lock().unwrap().is_empty(), "counted once");
        forecasts.clear();
        assert!(forecasts.board().is_none());
        // A forecast begun before a clear is not published after it.
        let request = Request {
            snapshot: snapshot.clone(),
            now: t0(),
            term: 1,
            generation: forecasts.generation.load(Ordering::Acquire),
        };
        forecasts.clear();
        forecasts
            .publish(
                Board::build(&snapshot, t0(), ForecastBounds::default()),
                Instant::now(),
                &request,
            )
            .await;
        assert!(forecasts.board().is_none(), "stale: dropped");
    }

    #[tokio::test]
    async fn a_round_during_a_forecast_leaves_its_new_jobs_for_the_next() {
        let db = sea_orm::Database::connect("sqlite::memory:").await.unwrap();
        let forecasts = Arc::new(Forecasts::new(false, db, Signals::default()));
        let with_job = Snapshot {
            jobs: vec![JobBuilder::normal(1).build()],
            ..Snapshot::default()
        };
        // A forecast of an older snapshot runs when the round with job 1 ends.
        forecasts.busy.store(true, Ordering::Release);
        forecasts.refresh(&with_job, &[], t0(), 1).await;
        assert!(forecasts.board().is_none(), "not computed beside the running one");
        let running = Request {
            snapshot: Snapshot::default(),
            now: t0(),
            term: 1,
            generation: forecasts.generation.load(Ordering::Acquire),
        };
        Arc::clone(&forecasts).forecast_from(running).await;
        let board = forecasts.board().expect("a board");
        assert!(board.jobs.contains_key(&1), "the snapshot left was forecast next");
        assert!(!forecasts.busy.load(Ordering::Acquire), "and the next forecast is free");
    }
}

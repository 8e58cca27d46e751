//! The forecast board (issue 27): for every waiting job, its place in the order the prequeue
//! considers jobs and when it is likely to start, computed by the watcher from the state it
//! holds in memory and read by the API without touching the database.
//!
//! The watcher hands each round's snapshot to [`Forecasts::refresh`]. A forecast simulates
//! the whole prequeue ([`crate::prequeue::forecast`]), so it is not run every round: at most
//! every [`MIN_INTERVAL`], and never more often than ten times its own last duration, so it
//! takes at most a tenth of a core whatever the prequeue's size. It runs on the blocking pool
//! on a copy of the snapshot (the round's jobs are lent and go back when the round ends), and
//! only one at a time. Tests that drive the watcher by hand compute it inline, every round, so
//! what a round decided is on the board when the round returns.
//!
//! Only the replica holding the watcher's lease has a board; the others answer that no
//! forecast is available ([`Forecasts::board`] is `None`), and a replica that loses the lease
//! clears its own.
//!
//! The estimates are measured against what happens: the first estimate with a basis each job
//! got is remembered, and when the watcher activates the job the activation is counted as
//! within or past that estimate (`anteroom_estimate_outcomes_total`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anteroom_shared::api::jobs::EstimateBasis;
use anteroom_shared::scheduling::{ActivationOrder, JobPhase, ResourceList};
use chrono::{DateTime, Utc};

use crate::prequeue::{self, ForecastBounds, JobId, Snapshot, UserId};

/// The shortest time between two forecasts.
pub const MIN_INTERVAL: Duration = Duration::from_secs(2);

/// Slack allowed before an activation counts as later than its estimate: rounds run on a
/// ticker, so a job due at `t` is activated a round after.
pub const ESTIMATE_SLACK_SECONDS: i64 = 60;

/// One waiting job on the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its queue.
    pub queue: String,
    /// 0-based place among its queue's waiting jobs in consideration order.
    pub rank: usize,
    /// Its owner.
    pub owner: UserId,
    /// What it asks for.
    pub resources: ResourceList,
    /// When it was submitted.
    pub submitted_at: DateTime<Utc>,
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
                    owner: job.owner,
                    resources: job.resources.clone(),
                    submitted_at: job.submitted_at,
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
    /// Per waiting job: the first estimate it got with a basis.
    first_estimates: Mutex<HashMap<JobId, DateTime<Utc>>>,
    bounds: ForecastBounds,
}

impl Forecasts {
    /// An empty board; `inline` computes every round in the round itself.
    pub fn new(inline: bool) -> Self {
        Forecasts {
            published: RwLock::new(None),
            inline,
            busy: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            last: Mutex::new(None),
            first_estimates: Mutex::new(HashMap::new()),
            bounds: ForecastBounds::default(),
        }
    }

    /// The current board; `None` when this replica has none (it does not hold the lease, or
    /// no round has run yet).
    pub fn board(&self) -> Option<Arc<Board>> {
        self.published.read().expect("the board's lock").clone()
    }

    /// Forgets the board: this replica no longer runs rounds, so it would only grow stale.
    pub fn clear(&self) {
        let mut published = self.published.write().expect("the board's lock");
        self.generation.fetch_add(1, Ordering::AcqRel);
        *published = None;
        drop(published);
        self.first_estimates.lock().expect("the estimates' lock").clear();
    }

    /// After a round on `snapshot` at `now` that activated `activated`: forecasts again if one
    /// is due (module documentation), on a copy of the snapshot in which those jobs occupy.
    pub fn refresh(self: &Arc<Self>, snapshot: &Snapshot, activated: &[JobId], now: DateTime<Utc>) {
        if !self.inline && (!self.due() || self.busy.swap(true, Ordering::AcqRel)) {
            return;
        }
        let mut snapshot = snapshot.clone();
        if !activated.is_empty() {
            let activated: std::collections::HashSet<JobId> = activated.iter().copied().collect();
            for job in snapshot.jobs.iter_mut().filter(|j| activated.contains(&j.id)) {
                job.phase = JobPhase::Activating;
            }
        }
        let generation = self.generation.load(Ordering::Acquire);
        if self.inline {
            let started = Instant::now();
            self.publish(Board::build(&snapshot, now, self.bounds), started, generation);
            return;
        }
        let me = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            /// Frees the next forecast whatever happens to this one (a panic included).
            struct Done<'a>(&'a AtomicBool);
            impl Drop for Done<'_> {
                fn drop(&mut self) {
                    self.0.store(false, Ordering::Release);
                }
            }
            let _done = Done(&me.busy);
            let started = Instant::now();
            let board = Board::build(&snapshot, now, me.bounds);
            me.publish(board, started, generation);
        });
    }

    fn due(&self) -> bool {
        match *self.last.lock().expect("the timing's lock") {
            None => true,
            Some((started, took)) => started.elapsed() >= MIN_INTERVAL.max(took * 10),
        }
    }

    /// Makes `board` the current one, unless the board was cleared since its forecast began
    /// (`generation`).
    fn publish(&self, board: Board, started: Instant, generation: u64) {
        let mut published = self.published.write().expect("the board's lock");
        if self.generation.load(Ordering::Acquire) != generation {
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
        *published = Some(Arc::new(board));
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

    #[test]
    fn an_activation_counts_within_or_past_its_first_estimate() {
        let forecasts = Arc::new(Forecasts::new(true));
        let snapshot = Snapshot {
            jobs: vec![JobBuilder::normal(1).build()],
            ..Snapshot::default()
        };
        forecasts.refresh(&snapshot, &[], t0());
        let first = forecasts.first_estimates.lock().unwrap().get(&1).copied();
        assert_eq!(first, Some(t0()), "it fits now");
        // A later forecast does not move the first estimate.
        forecasts.refresh(&snapshot, &[], t0() + chrono::Duration::seconds(500));
        assert_eq!(forecasts.first_estimates.lock().unwrap().get(&1).copied(), Some(t0()));
        forecasts.observe_activated(&[1], t0() + chrono::Duration::seconds(30));
        assert!(forecasts.first_estimates.lock().unwrap().is_empty(), "counted once");
        forecasts.clear();
        assert!(forecasts.board().is_none());
        // A forecast begun before a clear is not published after it.
        let before = forecasts.generation.load(Ordering::Acquire);
        forecasts.clear();
        forecasts.publish(
            Board::build(&snapshot, t0(), ForecastBounds::default()),
            Instant::now(),
            before,
        );
        assert!(forecasts.board().is_none(), "stale: dropped");
    }
}

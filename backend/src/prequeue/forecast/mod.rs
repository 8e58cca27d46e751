//! Start estimates for prequeued jobs from the runtime limits of the jobs ahead of them: "if
//! every job ran until its limit, when would mine start?" (pure: `now` is passed in).
//!
//! [`consideration_order`] lists every `Prequeue` job in the order the configured activation
//! order would consider them if every job it considered started: FCFS by (submittedAt, id), or
//! the fair-share (DRF) walk of the round with the same shares, denominators and ties, taking
//! each popped pair's oldest job whatever holds it. The jobs of a queue before a job in this
//! list are the jobs "ahead of" it.
//!
//! [`forecast`] is an event simulation of that order against the state in memory:
//!
//! - An occupying job (`Activating`, `Pending`, `Running`) ends at `startedAt` (or `now` when
//!   it has not started) plus its `maxRuntimeSeconds`; one whose end is at or before `now` is
//!   released at `now`, before the first walk (it is overdue and about to go); one without a
//!   limit never ends.
//! - At each time `t`, first `now`, the still-waiting jobs are walked once in consideration
//!   order, and every job that fits starts at `t` and occupies from then on, ending at
//!   `t + limit` (or never). A job fits when: it is not a backfill job while backfill is
//!   disabled; with quotas on and for a normal job, its owner's rule in its queue (usage +
//!   request ≤ limit on every resource the rule names, and fewer occupying normal jobs than
//!   `maxActiveJobs`) and the capacity of its queue and every ancestor (all users' normal jobs
//!   in the queue and below + request ≤ capacity) hold, exactly the round's rules; and, for
//!   every job, the cluster room covers it: on every resource the job requests (> 0) and some
//!   ready, schedulable node names, Σ allocatable − Σ requests of every occupying job (normal
//!   and backfill) ≥ request.
//! - Then `t` moves to the next end strictly after it, every job ending by then is released,
//!   and the walk runs again. The simulation stops when nothing waits, no known end remains,
//!   [`ForecastBounds::max_steps`] end times were processed, or the next end is past
//!   `now + `[`ForecastBounds::horizon`]. A job started at `t` is estimated at `t`
//!   ([`EstimateBasis::Limits`]); a job never started has no estimate
//!   ([`EstimateBasis::Unknown`]).
//!
//! Simplifications, each deliberate (an estimate, not a promise):
//!
//! - **Blockers** are ignored: a timed-out job holds nobody back here, and nothing times out.
//! - **Round limits** are ignored: every job that fits at `t` starts at `t`; so is the watcher's
//!   ticker (a job starts the instant room frees, not at the next round).
//! - **Node pinning and placement** are ignored: the room is the cluster's sum, not any single
//!   node's, so a job is placed where no gang or single node could take it, and a job pinned
//!   to a full node starts as soon as the cluster has room.
//! - **Preemption** is ignored: no backfill job is ended early for a timed-out normal job.
//! - **Jobs end at their limit**, never earlier (an upper bound of each run).
//! - **Usage comes from the jobs**, not from the usage rows (a job's usage must be released at
//!   its end); it equals the rows the store computes from the same jobs
//!   ([`usage_from_jobs`](super::usage_from_jobs)). The fair-share order reads the rows, as the
//!   round does, and is computed once, at `now`: it is not re-ranked as jobs start and end.
//! - A negative `maxRuntimeSeconds` counts as zero (the job ends when it starts; such a job is
//!   released at once and the walk at `t` runs again), and requests are taken as non-negative,
//!   as submission makes them.
//! - Sums of milli-quantities are exact in `i128` and saturate beyond it (over 10^35 units of
//!   one resource), as everywhere in the core.
//!
//! Cost, for W waiting jobs, R occupying jobs, S ≤ `max_steps` processed end times, C columns
//! (resources compared, a handful) and G groups (distinct sets of capped queues on the waiting
//! jobs' paths, plus one): interning O((W + R)·C) with no string work after it; the order
//! O(W log W) (FCFS sort, or the DRF walk's heap); the end-time heap O((R + W) log(R + W)).
//! A walk runs only at `now` and after a release (nothing else can make a waiting job fit),
//! and does not scan the waiting jobs: each group keeps them under a min-demand tree
//! (`tree.rs`), so a walk costs O((G + k)·C·log W) for the k jobs the trees offer (those that
//! start, those parked on their owner's rule until the owner's usage falls, and candidates
//! that stopped fitting during the walk). The trees prune per column, so a walk may descend
//! into subtrees where no single job fits every column; its worst case is the plain scan,
//! O(W·C). Measured in release (`tests/bench.rs`, 100 000 waiting and 2 000 running jobs,
//! quotas and capacities on three levels, default bounds): 65–90 ms under FCFS and 150–230 ms
//! under fair share, of which 50–100 ms is the fair-share order; the first version, which
//! scanned every waiting job at every step, took 1.2 s on the same data.

mod sim;
#[cfg(test)]
pub(crate) mod tests;
mod tree;

use anteroom_shared::scheduling::JobPhase;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::round::PreparedRound;
use super::snapshot::{JobId, Snapshot};

/// Where an estimate comes from, so a client can say "by the runtime limits" or "unknown".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EstimateBasis {
    /// The job starts in the simulation where every job runs until its runtime limit.
    Limits,
    /// The job does not start in the simulation: it waits for a job without a limit, for room
    /// that never comes, or past the bounds.
    Unknown,
}

/// The estimated start of one prequeued job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartEstimate {
    /// The job.
    pub id: JobId,
    /// When it would start if every job ran until its limit; `None` when unknown.
    pub start: Option<DateTime<Utc>>,
    /// [`EstimateBasis::Limits`] with a start, [`EstimateBasis::Unknown`] without.
    pub basis: EstimateBasis,
}

/// How far [`forecast`] simulates: it runs after watcher rounds over the whole prequeue, so its
/// cost must stay bounded whatever the limits are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForecastBounds {
    /// Most distinct end times processed (each may start jobs).
    pub max_steps: usize,
    /// No end time later than `now + horizon` is processed.
    pub horizon: Duration,
}

impl Default for ForecastBounds {
    /// 2 000 steps and 30 days: beyond either an estimate says little.
    fn default() -> Self {
        ForecastBounds {
            max_steps: 2_000,
            horizon: Duration::days(30),
        }
    }
}

/// Every `Prequeue` job in the order the configured activation order would consider them if
/// every job it considered started (see the module documentation); "ahead of a job" is the
/// jobs of its queue before it here.
pub fn consideration_order(snapshot: &Snapshot) -> Vec<JobId> {
    order_indices(snapshot)
        .into_iter()
        .map(|j| snapshot.jobs[j as usize].id)
        .collect()
}

/// The start estimate of every `Prequeue` job, in [`consideration_order`], from an event
/// simulation in which every job runs until its runtime limit (see the module documentation
/// for the rules and what they leave out).
pub fn forecast(snapshot: &Snapshot, now: DateTime<Utc>, bounds: ForecastBounds) -> Vec<StartEstimate> {
    let order = order_indices(snapshot);
    let starts = sim::simulate(snapshot, &order, now, bounds);
    order
        .iter()
        .zip(starts)
        .map(|(&j, start)| StartEstimate {
            id: snapshot.jobs[j as usize].id,
            start,
            basis: if start.is_some() {
                EstimateBasis::Limits
            } else {
                EstimateBasis::Unknown
            },
        })
        .collect()
}

/// Per job of `snapshot.jobs`: whether it is a `Prequeue` job that starts at `now` in the
/// forecast, in its first walk (before any release but the overdue jobs'). Costs the
/// interning and the order of [`forecast`] and one walk, not its event steps.
///
/// Time-aware backfill ([`PreparedRound`]) lets a blocked job through only if it is one of
/// these: the forecast already starts it now, so starting it (with any others of them) changes
/// no estimate under the forecast's model.
pub(crate) fn starts_in_first_walk(snapshot: &Snapshot, now: DateTime<Utc>) -> Vec<bool> {
    let order = order_indices(snapshot);
    let mut by_job = vec![false; snapshot.jobs.len()];
    for (&j, started) in order.iter().zip(sim::first_walk(snapshot, &order, now)) {
        by_job[j as usize] = started;
    }
    by_job
}

/// [`consideration_order`] as indices into `snapshot.jobs`.
///
/// Fair share reuses the round's own walk ([`PreparedRound`]); it is prepared at the earliest
/// time there is, so no job is timed out and no blocker index is built (eligibility is not
/// read). Should the round refuse the snapshot (more than 65 535 resource names in quota
/// limits and capacities), the order falls back to FCFS rather than giving no estimate.
fn order_indices(snapshot: &Snapshot) -> Vec<u32> {
    if snapshot.config.activation_order.is_fair_share()
        && let Ok(prepared) = PreparedRound::new(snapshot, DateTime::<Utc>::MIN_UTC)
    {
        return prepared.fair_share_order();
    }
    let mut order: Vec<u32> = (0..snapshot.jobs.len() as u32)
        .filter(|&j| snapshot.jobs[j as usize].phase == JobPhase::Prequeue)
        .collect();
    order.sort_unstable_by_key(|&j| {
        let job = &snapshot.jobs[j as usize];
        (job.submitted_at, job.id)
    });
    // As the round: within a queue, higher priorities first.
    crate::prequeue::sharing::priority::within_queues(
        &mut order,
        |&j| snapshot.jobs[j as usize].queue.as_str(),
        |&j| snapshot.jobs[j as usize].sharing.priority,
    );
    order
}

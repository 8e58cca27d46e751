//! Round selection (`spec/prequeue.md` §5 step 4): which prequeued jobs a watcher round
//! activates, and why every other prequeued job keeps waiting.
//!
//! Built for 100 000 prequeued jobs per round: [`PreparedRound::new`] interns resource names,
//! resource domains, queues and (owner, queue) pairs once per snapshot into small indexed
//! vectors, so the walk and the per-job checks touch no string and allocate nothing.
//!
//! Only resources some rule can compare get a dense index (a *column*): those named by quota
//! limits and queue capacities and, for fair share, those the nodes have. Admins and the cluster
//! choose these names, users do not; a request entry for any other resource cannot change a
//! check and is not stored, and zero quantities are skipped everywhere. So what a user writes
//! in a request can neither fail a round nor inflate its vectors: resource domains, which do
//! depend on the request's names, are interned from the names themselves, without a cap.
//!
//! Every accumulation only grows during a round (selections add usage, nothing is released),
//! so a job found ineligible stays ineligible for the rest of the round; that is what lets the
//! fair-share walk skip a job for good and lets the final "why is it waiting" pass run once,
//! linearly, against the end state.
//!
//! The files, in the order a round runs:
//!
//! - `prepare.rs`: [`PreparedRound::new`], interning the snapshot once: queues and their paths,
//!   the compared resources (columns), (owner, queue) pairs, the candidates with their demand
//!   entries and domains, usage, quota rules and fair-share denominators.
//! - `intern.rs`: the interners it uses (resource names into columns, resource domains into
//!   ids) and the small hasher of its maps.
//! - `blockers.rs`: the timed-out jobs that block others, indexed by queue, domain and node.
//! - `causes.rs`: [`WaitCauses`], the rules that hold a job (backfill, quota, `maxActiveJobs`,
//!   capacity, blocker), and the final pass giving every waiting job its position and causes.
//! - `backfill.rs`: time-aware backfill, the rule that lets a job held only by blockers
//!   through when it delays none of them (`timeAwareBackfill`), with its safety argument.
//! - `sharing.rs`: guarantees and the cluster's room beyond them (§9), when some queue
//!   guarantees something.
//! - `select.rs`: [`PreparedRound::select`], the FCFS walk (jobs within their guarantee first
//!   while queues share), and counting what a selection uses.
//! - `fair_share.rs`: the fair-share (DRF) walk over a heap of (owner, queue) pairs, and the
//!   same walk without eligibility that orders the start forecast.
//! - `explain.rs`: [`PreparedRound::explain`], compact causes into full
//!   [`Reason`](super::reason::Reason)s against the round's end state.
//! - `tests.rs`: the unit tests (scenarios and property tests are in `prequeue/tests/`).

mod backfill;
mod blockers;
mod causes;
mod explain;
pub use explain::budget_hold_on_path;
mod fair_share;
mod intern;
mod prepare;
mod select;
mod sharing;
#[cfg(test)]
mod tests;

use std::sync::OnceLock;

use chrono::{DateTime, Utc};

use self::blockers::BlockerIndex;
use super::snapshot::{JobId, JobSnapshot, Snapshot, UserId};

pub use self::causes::WaitCauses;

/// Why a snapshot cannot be prepared for a round. Only the admin's rules can cause it, never a
/// job: requests add no column (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoundError {
    /// Compared resources are indexed by `u16`; quota limits and queue capacities naming more
    /// distinct resources than that are refused rather than mis-compared.
    #[error("quota limits and queue capacities name more than {max} distinct resources")]
    TooManyResourceNames {
        /// The most supported.
        max: usize,
    },
}

/// The most columns (compared resources) a round supports: indices are `u16`.
const MAX_COLUMNS: usize = u16::MAX as usize;

/// A snapshot interned for one round. Build it once per round, call [`select`](Self::select),
/// then [`explain`](Self::explain) the waiting jobs whose reasons are to be shown.
#[derive(Debug)]
pub struct PreparedRound<'s> {
    snapshot: &'s Snapshot,
    resources: usize,
    res_names: Vec<&'s str>,
    queue_names: Vec<&'s str>,
    /// Per queue: itself and its ancestors.
    paths: Vec<Vec<u32>>,
    /// Per queue: (resource, capacity) for every resource its capacity names.
    capacity: Vec<Vec<(u16, i128)>>,
    /// Per queue: index of its quota rule in `snapshot.quotas` when quotas are on.
    quota_rule: Vec<Option<u32>>,
    /// Per queue: (resource, limit) for every resource its rule names.
    quota_limits: Vec<Vec<(u16, i128)>>,
    /// Per queue: its rule's `maxActiveJobs`.
    max_active: Vec<Option<u32>>,
    /// Per queue × resource: the fair-share denominator (capacity, else the allocatable total
    /// of every node; 0 = none).
    share_denominator: Vec<i128>,
    /// Per queue: its weight (§9; fair share divides its dominant shares by it).
    weights: Vec<u32>,
    /// Per pair, with `fairShareHistory`: its part of everyone's decayed past usage (§10), in
    /// the unit of shares; empty otherwise.
    history_share: Vec<i128>,
    pair_owner: Vec<UserId>,
    pair_queue: Vec<u32>,
    initial: State,
    /// Prequeued jobs in (submittedAt, id) order.
    cands: Vec<Cand>,
    /// Resource index and milli value of each non-zero request entry of the candidates
    /// (two arrays: 18 bytes an entry instead of 32 for an aligned tuple).
    demand_res: Vec<u16>,
    /// Values that fit `i64` (every realistic request); [`BIG`] marks one to read exactly from
    /// the job, keeping the arrays small without giving up exactness.
    demand_val: Vec<i64>,
    pending_blockers: BlockerIndex<'s>,
    prequeue_blockers: BlockerIndex<'s>,
    /// Per queue: its spent budget holds normal jobs now (§10).
    budget_held: Vec<bool>,
    /// Guarantees and shared demands (§9); `None` unless queues share with quotas on.
    sharing: Option<self::sharing::RoundSharing>,
    blocking: bool,
    quotas_on: bool,
    /// The round's time (time-aware backfill ends a job at `now + limit`).
    now: DateTime<Utc>,
    /// `timeAwareBackfill` with blocking on: `backfill.rs` may let blocked jobs through, and
    /// `prequeue_blockers` keeps earliest starts.
    time_aware: bool,
    /// Per job of the snapshot: started at `now` by the forecast's first walk; computed at
    /// most once, when time-aware backfill first needs it.
    starts_now: OnceLock<Vec<bool>>,
}

impl PreparedRound<'_> {
    /// Number of prequeued jobs in the snapshot.
    pub fn prequeued(&self) -> usize {
        self.cands.len()
    }

    /// The queue on `q`'s path to the root (itself first) whose spent budget holds normal
    /// jobs now, if any.
    fn budget_holder(&self, q: usize) -> Option<u32> {
        self.paths[q]
            .iter()
            .copied()
            .find(|&a| self.budget_held.get(a as usize) == Some(&true))
    }
}

/// Prepares and selects in one call, for callers that only need the compact outcome.
pub fn select_round(snapshot: &Snapshot, now: DateTime<Utc>) -> Result<RoundOutcome, RoundError> {
    Ok(PreparedRound::new(snapshot, now)?.select())
}

/// The result of one round's selection.
#[derive(Debug, Clone)]
pub struct RoundOutcome {
    /// Jobs to activate, in the order they were selected.
    pub selected: Vec<JobId>,
    /// Eligible jobs were left over because of the limit: run another round at once.
    pub more_work: bool,
    /// Every other prequeued job, in (submittedAt, id) order.
    pub waiting: Vec<WaitingJob>,
    state: State,
}

/// A prequeued job left waiting after the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitingJob {
    /// The job.
    pub id: JobId,
    /// 1-based position among the jobs still waiting in its queue, in (submittedAt, id) order.
    pub position: u32,
    /// Why it waits.
    pub causes: WaitCauses,
    cand: u32,
}

/// Accumulations at the end of the round (usage plus this round's selections).
#[derive(Debug, Clone)]
struct State {
    /// Per pair × resource: the owner's normal usage in the queue + selected normal jobs; what
    /// the quota checks and the fair-share order both read.
    pair_used: Vec<i128>,
    /// Per pair: occupying normal jobs + selected normal jobs.
    pair_active: Vec<u32>,
    /// Per queue × resource: all users' normal usage in the queue and below + selections.
    queue_used: Vec<i128>,
    /// What normal jobs hold of guarantees and the cluster's room (§9); `None` unless queues
    /// share.
    sharing: Option<crate::prequeue::sharing::SharingState>,
}

/// One prequeued job, interned (kept small: the reasons pass streams over all of them).
#[derive(Debug, Clone, Copy)]
struct Cand {
    key: SubmitKey,
    job: u32,
    pair: u32,
    queue: u32,
    demand_start: u32,
    demand_len: u32,
    /// Interned resource domain; 0 is `cpu-only`.
    domain: u32,
    backfill: bool,
    timed_out: bool,
    /// Has explicit nodes (only then is the job itself read for the overlap check).
    pinned: bool,
    /// It said `borrow: never` (§9).
    borrow_never: bool,
}

/// Marker in `demand_val` for a request beyond `i64` milli-units (read from the job instead).
const BIG: i64 = i64::MIN;

/// (submittedAt seconds, nanoseconds, id): the total order of submission.
type SubmitKey = (i64, u32, JobId);

fn submit_key(job: &JobSnapshot) -> SubmitKey {
    (
        job.submitted_at.timestamp(),
        job.submitted_at.timestamp_subsec_nanos(),
        job.id,
    )
}

//! Time-aware backfill (issue 27 point 4, Slurm's backfill rule, `timeAwareBackfill`): a job
//! held *only* by `blocked_by` may start anyway when it delays none of its blockers.
//!
//! # The rule
//!
//! With `timeAwareBackfill` on, a prequeued job `J` whose only cause is a blocker is let
//! through (selected by either walk, and given no `blocked_by` by the final pass) when:
//!
//! 1. `J` has a runtime limit, so it ends by `end = now + maxRuntimeSeconds` (negative as 0);
//! 2. no timed-out `Pending` job holds it: those already count as occupying in the forecast and
//!    get no start estimate, so nothing backfills past them;
//! 3. *every* timed-out `Prequeue` job that would hold it (its queue, a blocking domain,
//!    overlapping nodes, not held privately; not only the oldest, which `blocked_by` names)
//!    has an estimated start in the round's input, and `end ≤` the earliest of them (Slurm's
//!    rule: `J` is gone when the first of them is expected to start);
//! 4. `J` starts at `now` in the forecast of this very snapshot, in its first walk
//!    ([`starts_in_first_walk`]).
//!
//! "The jobs `J` would otherwise delay" are thus every blocker of 2 and 3; and 4 makes sure
//! it delays no other job either, under the forecast's model.
//!
//! # Why it is safe, and why Slurm's rule alone is not
//!
//! The estimates come from a greedy list simulation (`forecast`). Starting a job early in
//! such a simulation can delay others *indirectly*: `J` takes room that a job ahead of a
//! blocker would have used at once; that job starts later, ends later, and runs into the
//! blocker's start — though `J` itself ended long before. And removing `J` from the waiting
//! jobs can do the same (Graham's list-scheduling anomalies). So rule 3 alone does not
//! protect a blocker in the model; `tests/backfill_props.rs` shows a counterexample as soon
//! as rule 4 is dropped.
//!
//! Rule 4 is the strengthening. Claim: starting any set `S` of jobs that the forecast starts
//! in its first walk at `now` before that walk leaves every start of the forecast unchanged.
//! Proof: in the walk, a job `X` sees the usage of the jobs started before it plus that of the
//! members of `S` after it. If `X` started in the original walk, every such member started
//! after `X` there too, so each check it passed (room on the resources it requests, the
//! capacities on its path, its owner's rule and `maxActiveJobs`: all "sum of what started so
//! far + own request ≤ limit") bounds `X`'s usage plus theirs, and `X` still fits. If `X` did
//! not, it sees at least the usage it failed against and fails again (or stays parked on its
//! rule). So the walk starts the same jobs, the state after it is the same, and so is every
//! later step: each blocker starts at its estimate.
//!
//! The assumption is the forecast's model (sum room, jobs ending at their limit, no
//! preemption) with its consideration order as computed at `now`: under fair share the next
//! forecast counts `J` in its owner's share and may re-rank, which one forecast does not do
//! (the property test keeps the order). Within that model rule 4 alone is enough: the
//! estimates already assume `J` runs from `now`. Rule 3 is Slurm's margin where the model is
//! optimistic (the cluster's sum room instead of single nodes, an estimate from an older
//! forecast): `J` has left before the first of its blockers is expected to start. The other
//! jobs the round selects are not the rule's: they are not blocked, and are selected with the
//! setting off as well.
//!
//! # Cost
//!
//! With the setting off nothing here runs and the round allocates nothing more. With it on,
//! rules 1–3 are a few lookups per blocked job (the blocker index keeps earliest starts), and
//! rule 4 runs the forecast's interning, order and first walk once per round, only when some
//! job passes 1–3 (no event steps). Measured in release (`forecast/tests/bench.rs`, 100 000
//! waiting jobs, 50 timed out): the round takes 60 ms off and 135 ms on under FCFS, 35–50 ms
//! off and 305–350 ms on under fair share (the DRF order dominates). That is above the
//! round's budget; the cheaper alternative is to read rule 4 from the watcher's board (`J`'s
//! own estimate is the board's `now`), exact only when the board comes from the same snapshot.
//!
//! Submissions ([`decide_submission`](crate::prequeue::decide_submission)) keep holding a job
//! behind a blocker: rule 4 needs that forecast, too dear per submission; the next round, a
//! few seconds later, lets the job through if the rule allows.

use super::blockers::UNKNOWN_START;
use super::{Cand, PreparedRound};
use crate::prequeue::forecast::starts_in_first_walk;
use crate::prequeue::snapshot::deadline;

impl PreparedRound<'_> {
    /// Whether time-aware backfill lets `cand`, held only by a blocker, through (rules 1–4 of
    /// the module documentation). False whenever the setting is off.
    pub(super) fn backfills(&self, cand: &Cand) -> bool {
        if !self.time_aware || cand.timed_out {
            // A timed-out job is held by Pending blockers only, which have no estimate.
            return false;
        }
        let job = &self.snapshot.jobs[cand.job as usize];
        let Some(limit) = job.max_runtime_seconds else {
            return false;
        };
        let nodes = &job.explicit_nodes;
        if self
            .pending_blockers
            .oldest_for(cand.queue, cand.domain, nodes)
            .is_some()
        {
            return false;
        }
        let Some(earliest) = self
            .prequeue_blockers
            .earliest_start_for(cand.queue, cand.domain, nodes)
        else {
            return false;
        };
        let Some(end) = deadline(self.now, limit.max(0)) else {
            return false;
        };
        if earliest == UNKNOWN_START || end > earliest {
            return false;
        }
        self.starts_now
            .get_or_init(|| starts_in_first_walk(self.snapshot, self.now))
            .get(cand.job as usize)
            .copied()
            .unwrap_or(false)
    }
}

//! Why a prequeued job is held: its compact [`WaitCauses`] against the round's accumulations,
//! which the walks read as a yes/no and the final pass records for every job left waiting,
//! with its position in its queue.

use anteroom_shared::scheduling::NodeSet;

use super::{Cand, PreparedRound, RoundOutcome, State, WaitingJob};
use crate::prequeue::snapshot::{JobId, JobSnapshot};

/// Cause bits of [`WaitCauses`].
const QUOTA: u16 = 1;
const MAX_ACTIVE: u16 = 1 << 1;
const CAPACITY: u16 = 1 << 2;
const BLOCKED: u16 = 1 << 3;
const BACKFILL_DISABLED: u16 = 1 << 4;
const ROUND_LIMIT: u16 = 1 << 5;
const BORROWING_LIMIT: u16 = 1 << 6;
const RECLAIMING: u16 = 1 << 7;
const BUDGET: u16 = 1 << 8;

/// Why a job was not selected, in compact form (two bytes of flags plus the blocker); expand it
/// into [`Reason`](crate::prequeue::Reason)s with [`PreparedRound::explain`] only for the jobs
/// whose reasons are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WaitCauses {
    bits: u16,
    /// Index into `snapshot.jobs` of the oldest blocker (meaningful with the `BLOCKED` bit).
    pub(super) blocker_index: u32,
    /// Id of the oldest blocker (meaningful with the `BLOCKED` bit).
    blocker_id: JobId,
}

impl WaitCauses {
    /// The user's quota (usage + request > limit) holds it.
    pub fn quota(&self) -> bool {
        self.bits & QUOTA != 0
    }
    /// The user has `maxActiveJobs` occupying jobs in the queue.
    pub fn max_active_jobs(&self) -> bool {
        self.bits & MAX_ACTIVE != 0
    }
    /// The capacity of its queue or an ancestor holds it.
    pub fn queue_capacity(&self) -> bool {
        self.bits & CAPACITY != 0
    }
    /// The timed-out job that blocks it.
    pub fn blocked_by(&self) -> Option<JobId> {
        (self.bits & BLOCKED != 0).then_some(self.blocker_id)
    }
    /// A backfill job held while backfill is disabled.
    pub fn backfill_disabled(&self) -> bool {
        self.bits & BACKFILL_DISABLED != 0
    }
    /// Eligible, but the round's limit was reached first.
    pub fn round_limit(&self) -> bool {
        self.bits & ROUND_LIMIT != 0
    }
    /// It would borrow and no room is lent, or it will not borrow (§9 `borrowing_limit`).
    pub fn borrowing_limit(&self) -> bool {
        self.bits & BORROWING_LIMIT != 0
    }
    /// Within its guarantee, and the room owed to it is held by borrowers (§9 `reclaiming`).
    pub fn reclaiming(&self) -> bool {
        self.bits & RECLAIMING != 0
    }
    /// Its queue's (or an ancestor's) spent budget holds it (§10 `budget_exhausted`).
    pub fn budget_exhausted(&self) -> bool {
        self.bits & BUDGET != 0
    }
    pub(super) fn is_empty(&self) -> bool {
        self.bits == 0
    }
    /// Held by its owner's own quota or `maxActiveJobs`: nothing other users do can help it
    /// (`spec/prequeue.md` §1).
    pub fn held_privately(&self) -> bool {
        self.bits & (QUOTA | MAX_ACTIVE) != 0
    }
    /// Waits for shared room (a queue's capacity or a blocker) and is not held privately:
    /// the condition that starts its waiting clock (`waitingSince`).
    pub fn waits_for_shared_room(&self) -> bool {
        // A borrower that finds nothing lent waits for other queues' idle room, which no one
        // owes it: its clock does not start, so it never times out to block or preempt.
        !self.held_privately() && self.bits & BORROWING_LIMIT == 0 && self.bits & (CAPACITY | BLOCKED | RECLAIMING) != 0
    }
}

impl PreparedRound<'_> {
    /// The waiting jobs of `outcome` whose waiting clock starts now: they wait for shared room
    /// (and are not held privately), and have no `waitingSince` yet.
    pub fn clocks_to_start<'o>(&'o self, outcome: &'o RoundOutcome) -> impl Iterator<Item = &'o JobSnapshot> + 'o {
        outcome
            .waiting
            .iter()
            .filter(|w| w.causes.waits_for_shared_room())
            .map(|w| &self.snapshot.jobs[self.cands[w.cand as usize].job as usize])
            .filter(|job| job.waiting_since.is_none())
    }
}

impl PreparedRound<'_> {
    /// The causes that hold `cand` *privately* (`spec/prequeue.md` §1): its owner's quota
    /// (usage + already selected for the same user and queue + this job > limit) and
    /// `maxActiveJobs`. Bits [`QUOTA`] and [`MAX_ACTIVE`]; 0 for backfill or with quotas off.
    pub(super) fn private_causes(&self, cand: &Cand, st: &State) -> u16 {
        if cand.backfill || !self.quotas_on {
            return 0;
        }
        let (q, p) = (cand.queue as usize, cand.pair as usize);
        let used = &st.pair_used[p * self.resources..(p + 1) * self.resources];
        let mut bits = 0;
        if self.quota_limits[q]
            .iter()
            .any(|&(r, limit)| used[r as usize].saturating_add(self.demand_on(cand, r)) > limit)
        {
            bits |= QUOTA;
        }
        if self.max_active[q].is_some_and(|max| st.pair_active[p] >= max) {
            bits |= MAX_ACTIVE;
        }
        bits
    }

    /// The causes that hold `cand` given the accumulations in `st`; with `first_only` it stops
    /// at the first one (the walk only needs a yes/no).
    pub(super) fn causes(&self, cand: &Cand, st: &State, first_only: bool) -> WaitCauses {
        let mut causes = WaitCauses::default();
        // Backfill jobs are held while backfill is disabled [differs: the reference lets them
        // through]; nothing else applies to them then.
        if cand.backfill && !self.snapshot.config.backfill_enabled {
            causes.bits |= BACKFILL_DISABLED;
            return causes;
        }
        let q = cand.queue as usize;
        // A spent budget holds the queue's normal jobs until the period ends, whatever else
        // holds them: nothing other jobs do can change it.
        if !cand.backfill && self.budget_holder(q).is_some() {
            causes.bits |= BUDGET;
            return causes;
        }
        if !cand.backfill && self.quotas_on {
            causes.bits |= self.private_causes(cand, st);
            if first_only && causes.bits != 0 {
                return causes;
            }
            // The queue's and every ancestor's capacity, all users, this round included.
            let over_capacity = self.paths[q].iter().any(|&a| {
                let used = &st.queue_used[a as usize * self.resources..(a as usize + 1) * self.resources];
                self.capacity[a as usize]
                    .iter()
                    .any(|&(r, cap)| used[r as usize].saturating_add(self.demand_on(cand, r)) > cap)
            });
            if over_capacity {
                causes.bits |= CAPACITY;
                if first_only {
                    return causes;
                }
            }
            if let Some(assessment) = self.sharing_of(cand, st) {
                if !assessment.fits && assessment.owed() {
                    causes.bits |= RECLAIMING;
                } else if !assessment.fits || (assessment.borrowing && cand.borrow_never) {
                    causes.bits |= BORROWING_LIMIT;
                }
                if first_only && causes.bits != 0 {
                    return causes;
                }
            }
        }
        if self.blocking {
            let any = NodeSet::Any;
            let nodes = if cand.pinned {
                &self.snapshot.jobs[cand.job as usize].explicit_nodes
            } else {
                &any
            };
            // Timed-out Pending jobs block everyone; timed-out Prequeue jobs not held privately
            // block only jobs that are not timed out themselves (timed-out peers go in
            // submission order).
            let mut blocker = self.pending_blockers.oldest_for(cand.queue, cand.domain, nodes);
            if blocker.is_none() && !cand.timed_out {
                blocker = self.prequeue_blockers.oldest_for(cand.queue, cand.domain, nodes);
            }
            if let Some((key, j)) = blocker {
                // Time-aware backfill (`backfill.rs`) only for a job nothing else holds; the
                // walks and this pass both read it here, so they agree.
                if causes.bits == 0 && self.time_aware && self.backfills(cand) {
                    return causes;
                }
                causes.bits |= BLOCKED;
                causes.blocker_id = key.2;
                causes.blocker_index = j;
            }
        }
        causes
    }

    /// One linear pass: positions per queue and the causes of every job left waiting, against
    /// the end state of the round. The flag is `more_work`: some job is held only by the limit.
    pub(super) fn waiting(&self, is_selected: &[bool], selected: usize, st: &State) -> (Vec<WaitingJob>, bool) {
        let mut position = vec![0_u32; self.queue_names.len()];
        let mut waiting = Vec::with_capacity(self.cands.len() - selected);
        let mut more_work = false;
        for (ci, cand) in self.cands.iter().enumerate() {
            if is_selected[ci] {
                continue;
            }
            let slot = &mut position[cand.queue as usize];
            *slot += 1;
            let mut causes = self.causes(cand, st, false);
            if causes.is_empty() {
                causes.bits |= ROUND_LIMIT;
                more_work = true;
            }
            waiting.push(WaitingJob {
                id: cand.key.2,
                position: *slot,
                causes,
                cand: ci as u32,
            });
        }
        (waiting, more_work)
    }
}

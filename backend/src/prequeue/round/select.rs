//! [`PreparedRound::select`]: the walk of one round, FCFS here or fair share in
//! `fair_share.rs`, and [`apply`](PreparedRound::apply), which counts each selection so that
//! later checks in the same round see it.

use anteroom_shared::scheduling::ActivationOrder;

use super::{Cand, PreparedRound, RoundOutcome, State};

impl PreparedRound<'_> {
    /// Selects this round's activations and explains every job left waiting.
    pub fn select(&self) -> RoundOutcome {
        let limit = self.snapshot.config.round_limit();
        let mut st = self.initial.clone();
        let mut is_selected = vec![false; self.cands.len()];
        let mut selected = Vec::with_capacity(limit.min(self.cands.len()));
        match self.snapshot.config.activation_order {
            ActivationOrder::Fcfs => {
                // While queues share, jobs within their guarantee go first: room a borrower
                // took in the same round would only be reclaimed from it again (§9).
                if self.sharing.is_some() {
                    self.walk_fcfs(limit, &mut st, &mut is_selected, &mut selected, true);
                }
                self.walk_fcfs(limit, &mut st, &mut is_selected, &mut selected, false);
            }
            ActivationOrder::FairShare | ActivationOrder::FairShareHistory => {
                if self.sharing.is_some() {
                    self.walk_fair_share(limit, &mut st, &mut is_selected, &mut selected, true);
                }
                self.walk_fair_share(limit, &mut st, &mut is_selected, &mut selected, false);
            }
        }

        let (waiting, more_work) = self.waiting(&is_selected, selected.len(), &st);
        RoundOutcome {
            selected: selected.iter().map(|&ci| self.cands[ci].key.2).collect(),
            more_work,
            waiting,
            state: st,
        }
    }

    /// One FCFS pass over the jobs not selected yet; with `guaranteed_only`, jobs that would
    /// borrow are passed over (not held: the next pass considers them).
    fn walk_fcfs(
        &self,
        limit: usize,
        st: &mut State,
        is_selected: &mut [bool],
        selected: &mut Vec<usize>,
        guaranteed_only: bool,
    ) {
        for (ci, cand) in self.cands.iter().enumerate() {
            if selected.len() >= limit {
                break;
            }
            if is_selected[ci] || (guaranteed_only && (cand.backfill || self.would_borrow(cand, st))) {
                continue;
            }
            if self.causes(cand, st, true).is_empty() {
                self.apply(cand, st);
                is_selected[ci] = true;
                selected.push(ci);
            }
        }
    }

    /// Counts a selected normal job against the owner's quota and fair share and every queue
    /// of the path. A backfill job counts nowhere: it is never limited by quotas or capacities
    /// (§1), and it is not owner usage for fair share either — running backfill jobs are not in
    /// the usage rows, so counting this round's would only skew the order for one round.
    pub(super) fn apply(&self, cand: &Cand, st: &mut State) {
        if cand.backfill {
            return;
        }
        let p = cand.pair as usize;
        let q = cand.queue as usize;
        for (r, v) in self.demand_of(cand) {
            let r = r as usize;
            let slot = &mut st.pair_used[p * self.resources + r];
            *slot = slot.saturating_add(v);
            for &a in &self.paths[q] {
                let slot = &mut st.queue_used[a as usize * self.resources + r];
                *slot = slot.saturating_add(v);
            }
        }
        st.pair_active[p] = st.pair_active[p].saturating_add(1);
        self.apply_sharing(cand, st);
    }
}

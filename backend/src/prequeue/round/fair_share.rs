//! Fair share (DRF, `spec/prequeue.md` §5 step 4): the walk that selects from the (owner,
//! queue) pair with the lowest dominant share, the share itself, in exact fixed point, and the
//! same walk without eligibility that orders every prequeued job for the start forecast.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{PreparedRound, State, SubmitKey};

/// Fixed-point unit of dominant shares (10^-12): shares closer than that tie and fall back to
/// the pair's oldest job, which keeps the order exact and deterministic without floats.
pub(super) const SHARE_UNIT: i128 = 1_000_000_000_000;

impl PreparedRound<'_> {
    /// The dominant share of a pair: max over resources of the owner's normal usage in the
    /// queue (this round's selections included) divided by the queue's capacity or, where the
    /// capacity names none, the cluster's allocatable total; with `fairShareHistory` plus the
    /// pair's part of everyone's decayed past usage — then divided by the queue's weight (§9:
    /// a queue of weight 2 is served as if it used half as much).
    fn share(&self, pair: usize, st: &State) -> i128 {
        let q = self.pair_queue[pair] as usize;
        let used = &st.pair_used[pair * self.resources..(pair + 1) * self.resources];
        let denominators = &self.share_denominator[q * self.resources..(q + 1) * self.resources];
        let dominant = used
            .iter()
            .zip(denominators)
            .filter(|(_, d)| **d > 0)
            .map(|(u, d)| u.max(&0).saturating_mul(SHARE_UNIT) / d)
            .max()
            .unwrap_or(0);
        // Fair share over time adds the pair's part of the decayed past (§10).
        let dominant = dominant.saturating_add(self.history_share.get(pair).copied().unwrap_or(0));
        // Weights are part of sharing: without a guarantee anywhere the order is today's.
        if self.sharing.is_some() {
            dominant / i128::from(self.weights[q].max(1))
        } else {
            dominant
        }
    }

    /// Fair share (DRF): repeatedly take the (queue, owner) pair with the lowest dominant
    /// share, ties to the pair's oldest job, and select that pair's oldest eligible job.
    ///
    /// A heap holds one entry per pair keyed by (share, oldest remaining job). Entries go
    /// stale in one way only — the pair's head became ineligible because capacity was used by
    /// others — and both parts of the key only grow, so a popped entry is re-checked and
    /// re-pushed with its new head: the minimum popped is always the true minimum.
    ///
    /// With `guaranteed_only` (the first pass while queues share, §9), a pair whose next job
    /// would borrow leaves the walk: jobs within their guarantee go first.
    pub(super) fn walk_fair_share(
        &self,
        limit: usize,
        st: &mut State,
        is_selected: &mut [bool],
        selected: &mut Vec<usize>,
        guaranteed_only: bool,
    ) {
        let (start, by_pair) = self.group_by_pair();
        let pairs = self.pair_owner.len();
        let mut cursor: Vec<u32> = start[..pairs].to_vec();
        let mut heap = self.pair_heap(&start, &by_pair, st);
        while selected.len() < limit {
            let Some(Reverse((share, key, p))) = heap.pop() else {
                break;
            };
            let p = p as usize;
            let end = start[p + 1];
            // Skip the pair's jobs that are ineligible now; they stay ineligible this round.
            while cursor[p] < end {
                let ci = by_pair[cursor[p] as usize] as usize;
                if !is_selected[ci] && self.causes(&self.cands[ci], st, true).is_empty() {
                    break;
                }
                cursor[p] += 1;
            }
            if cursor[p] == end {
                continue;
            }
            let ci = by_pair[cursor[p] as usize] as usize;
            let cand = &self.cands[ci];
            if guaranteed_only && (cand.backfill || self.would_borrow(cand, st)) {
                continue;
            }
            if cand.key != key {
                heap.push(Reverse((share, cand.key, p as u32)));
                continue;
            }
            self.apply(cand, st);
            is_selected[ci] = true;
            selected.push(ci);
            cursor[p] += 1;
            if cursor[p] < end {
                let head = self.cands[by_pair[cursor[p] as usize] as usize].key;
                heap.push(Reverse((self.share(p, st), head, p as u32)));
            }
        }
    }

    /// Candidates grouped by pair, submission order kept within a pair (counting sort): the
    /// candidates of pair `p` are `by_pair[start[p]..start[p + 1]]`. Returns `(start, by_pair)`.
    fn group_by_pair(&self) -> (Vec<u32>, Vec<u32>) {
        let pairs = self.pair_owner.len();
        let mut start = vec![0_u32; pairs + 1];
        for cand in &self.cands {
            start[cand.pair as usize + 1] += 1;
        }
        for p in 0..pairs {
            start[p + 1] += start[p];
        }
        let mut fill = start.clone();
        let mut by_pair = vec![0_u32; self.cands.len()];
        for (ci, cand) in self.cands.iter().enumerate() {
            let slot = &mut fill[cand.pair as usize];
            by_pair[*slot as usize] = ci as u32;
            *slot += 1;
        }
        (start, by_pair)
    }

    /// The walk's heap at its start: one entry per pair with candidates, keyed by (share,
    /// oldest job).
    fn pair_heap(&self, start: &[u32], by_pair: &[u32], st: &State) -> BinaryHeap<Reverse<(i128, SubmitKey, u32)>> {
        let pairs = self.pair_owner.len();
        let mut heap = BinaryHeap::with_capacity(pairs);
        for p in 0..pairs {
            if start[p] < start[p + 1] {
                let head = self.cands[by_pair[start[p] as usize] as usize].key;
                heap.push(Reverse((self.share(p, st), head, p as u32)));
            }
        }
        heap
    }

    /// Every prequeued job (as its index in `snapshot.jobs`) in the order the fair-share walk
    /// would take them if every one were eligible and the round had no limit: the same heap
    /// and shares as [`walk_fair_share`](Self::walk_fair_share), but each popped pair's
    /// oldest remaining job is taken (a normal one counted in the pair's usage) before the
    /// pair goes back. The start forecast ([`consideration_order`](crate::prequeue::consideration_order)) reads "ahead
    /// of a job" from it, so it must not drift from the walk: it shares the walk's parts.
    pub(crate) fn fair_share_order(&self) -> Vec<u32> {
        let (start, by_pair) = self.group_by_pair();
        let mut st = self.initial.clone();
        let mut cursor: Vec<u32> = start[..self.pair_owner.len()].to_vec();
        let mut heap = self.pair_heap(&start, &by_pair, &st);
        let mut order = Vec::with_capacity(self.cands.len());
        while let Some(Reverse((_, _, p))) = heap.pop() {
            let p = p as usize;
            let cand = &self.cands[by_pair[cursor[p] as usize] as usize];
            self.apply(cand, &mut st);
            order.push(cand.job);
            cursor[p] += 1;
            if cursor[p] < start[p + 1] {
                let head = self.cands[by_pair[cursor[p] as usize] as usize].key;
                heap.push(Reverse((self.share(p, &st), head, p as u32)));
            }
        }
        order
    }
}

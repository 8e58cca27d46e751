//! The event simulation behind [`forecast`](super::forecast): the snapshot interned once into
//! dense columns and indices (`intern.rs`, as the round does), then a walk of the waiting jobs
//! at `now` and after every release, with integer checks only.
//!
//! A walk does not visit every waiting job. The waiting jobs are split into groups that are
//! checked against the same capacities (normal jobs by the capped queues on their path;
//! backfill jobs, and every job with quotas off, in the group checked against the room only),
//! each in consideration order under a [`FitTree`]. A walk merges the groups by position in
//! the order, asking each tree only for its next job whose demand is within the group's slack
//! (room left, and capacity left on its path) on every column. A job the tree offers is checked
//! exactly; one held by its owner's rule is *parked* (taken out of its tree) until a job of
//! the same (owner, queue) pair is released, since until then its rule's usage only grows. So
//! a walk costs about (groups + jobs started or parked) tree descents, not W checks.

mod intern;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use chrono::{DateTime, Utc};

use super::ForecastBounds;
use super::tree::{FitTree, clamp};
use crate::prequeue::snapshot::{Snapshot, deadline};

/// `SimJob::pair` of a job no quota rule applies to (quotas off, backfill, or no rule).
const NO_PAIR: u32 = u32::MAX;
/// `SimJob::limit` of a job without a runtime limit.
const NO_LIMIT: i64 = -1;

/// One job as checks and releases read it.
#[derive(Debug, Clone, Copy)]
struct SimJob {
    /// Runtime limit in seconds (≥ 0), or [`NO_LIMIT`].
    limit: i64,
    /// Index of its estimate (its position in the consideration order); 0 for a job
    /// occupying at the start (never read).
    slot: u32,
    /// (owner, queue) pair whose rule applies to it, or [`NO_PAIR`].
    pair: u32,
    queue: u32,
    demand_start: u32,
    demand_len: u32,
    backfill: bool,
}

/// Waiting jobs checked against the same capacities, in consideration order.
#[derive(Debug)]
struct Group {
    jobs: Vec<SimJob>,
    /// Their demands per column (the room's and the capacities'), for pruning.
    tree: FitTree,
    /// (slot in `queue_used`, column, capacity) of every capacity on their path.
    checks: Vec<(u32, u32, i128)>,
}

/// The interned snapshot, the simulated accumulations and the pending ends.
#[derive(Debug)]
struct Sim {
    columns: usize,
    quotas_on: bool,
    /// Per column: Σ allocatable of ready, schedulable nodes; `i128::MAX` (never exceeded) for
    /// a column no such node names.
    room: Vec<i128>,
    /// Per column: Σ requests of every occupying job, normal and backfill.
    room_used: Vec<i128>,
    /// Per queue: (column, limit) of its quota rule.
    quota_limits: Vec<Vec<(u32, i128)>>,
    /// Per queue: its rule's `maxActiveJobs`.
    max_active: Vec<Option<u32>>,
    /// Per queue: the queues of its path (itself first) that have a capacity.
    capped_path: Vec<Vec<u32>>,
    /// Per pair × column: the owner's occupying normal jobs in the queue.
    pair_used: Vec<i128>,
    /// Per pair: the owner's occupying normal jobs in the queue, counted.
    pair_active: Vec<u32>,
    /// Per queue × column: all users' occupying normal jobs in the queue and below it.
    queue_used: Vec<i128>,
    demand_col: Vec<u32>,
    demand_val: Vec<i128>,
    groups: Vec<Group>,
    /// Per pair: the (group, position) of its jobs parked on its rule.
    parked: Vec<Vec<(u32, u32)>>,
    /// Waiting jobs not started yet.
    waiting: usize,
    /// Jobs with a known end (occupying at the start or started), and the heap of their ends
    /// as (end, index into `ending`). A job without a limit is counted once and forgotten.
    ending: Vec<SimJob>,
    ends: BinaryHeap<Reverse<(DateTime<Utc>, u32)>>,
}

/// The estimated start of each job of `order` (indices into `snapshot.jobs` of its `Prequeue`
/// jobs), by its position in `order`.
pub(super) fn simulate(
    snapshot: &Snapshot,
    order: &[u32],
    now: DateTime<Utc>,
    bounds: ForecastBounds,
) -> Vec<Option<DateTime<Utc>>> {
    let (mut sim, occupying) = Sim::new(snapshot, order, now);
    for (job, base) in occupying {
        // Overdue (or ending right now): released at `now`, before the first walk.
        if end_of(base, job.limit).is_none_or(|end| end > now) {
            sim.occupy(job, base);
        }
    }
    let mut starts = vec![None; order.len()];
    let horizon_end = now.checked_add_signed(bounds.horizon);
    let mut t = now;
    let mut steps = 0_usize;
    loop {
        sim.walk(t, &mut starts);
        if sim.waiting == 0 {
            break;
        }
        // Nothing but a release can make a waiting job fit: jump to the next end.
        let Some(&Reverse((next, _))) = sim.ends.peek() else {
            break;
        };
        // `next == t` only for a job just started with a limit of zero: release it and walk
        // again at `t` (each job is released once, so this ends).
        if next > t {
            if steps >= bounds.max_steps || horizon_end.is_some_and(|h| next > h) {
                break;
            }
            steps += 1;
            t = next;
        }
        while let Some(&Reverse((end, e))) = sim.ends.peek()
            && end <= t
        {
            sim.ends.pop();
            sim.release(e);
        }
    }
    starts
}

/// Which jobs of `order` start in the first walk at `now` (by position in `order`): the walk
/// [`simulate`] begins with, after the overdue jobs are released, and nothing after it.
///
/// Time-aware backfill reads it (`round/backfill.rs`): starting any subset of these jobs at
/// `now` leaves that walk, and so the whole simulation, as it was.
pub(super) fn first_walk(snapshot: &Snapshot, order: &[u32], now: DateTime<Utc>) -> Vec<bool> {
    let (mut sim, occupying) = Sim::new(snapshot, order, now);
    for (job, base) in occupying {
        if end_of(base, job.limit).is_none_or(|end| end > now) {
            sim.occupy(job, base);
        }
    }
    let mut starts = vec![None; order.len()];
    sim.walk(now, &mut starts);
    starts.iter().map(Option::is_some).collect()
}

/// `start + limit`, or `None` without a limit or past chrono's range (then it never ends).
fn end_of(start: DateTime<Utc>, limit: i64) -> Option<DateTime<Utc>> {
    if limit == NO_LIMIT {
        None
    } else {
        deadline(start, limit)
    }
}

impl Sim {
    /// One walk at `t`: every waiting job that fits, in consideration order, starts at `t`.
    ///
    /// The groups are merged by position in the order through a heap holding each group's
    /// next candidate. A candidate may have stopped fitting since its tree offered it (jobs
    /// started before it in the order used room); it is then checked, fails, and its group is
    /// asked again. No job is passed over wrongly: slack only shrinks during a walk, so a job
    /// its tree skipped would have failed at its turn.
    fn walk(&mut self, t: DateTime<Utc>, starts: &mut [Option<DateTime<Utc>>]) {
        let mut slack = vec![0_i64; self.columns + 1];
        let mut next: BinaryHeap<Reverse<(u32, u32, u32)>> = BinaryHeap::with_capacity(self.groups.len());
        for g in 0..self.groups.len() {
            self.push_candidate(g, 0, &mut slack, &mut next);
        }
        while let Some(Reverse((_, g, pos))) = next.pop() {
            let (g, pos) = (g as usize, pos as usize);
            let job = self.groups[g].jobs[pos];
            if !self.rule_allows(&job) {
                self.groups[g].tree.set_live(pos, false);
                self.parked[job.pair as usize].push((g as u32, pos as u32));
            } else if self.room_and_capacity_allow(&job, g) {
                self.groups[g].tree.set_live(pos, false);
                self.waiting -= 1;
                starts[job.slot as usize] = Some(t);
                self.occupy(job, t);
            }
            self.push_candidate(g, pos + 1, &mut slack, &mut next);
        }
    }

    /// Pushes group `g`'s first job at or after `from` that may fit now, if any.
    fn push_candidate(
        &self,
        g: usize,
        from: usize,
        slack: &mut [i64],
        next: &mut BinaryHeap<Reverse<(u32, u32, u32)>>,
    ) {
        let group = &self.groups[g];
        // Column 0 is the tree's liveness column. Room: what is left, never below zero (a job
        // asking nothing of a resource passes an over-committed room); capacity: what is left,
        // possibly below zero (then even a job asking nothing of it fails, as in the round).
        slack[0] = 0;
        for (c, s) in slack[1..].iter_mut().enumerate() {
            *s = if self.room[c] == i128::MAX {
                i64::MAX
            } else {
                clamp(self.room[c].saturating_sub(self.room_used[c]).max(0))
            };
        }
        for &(at, c, cap) in &group.checks {
            let left = clamp(cap.saturating_sub(self.queue_used[at as usize]));
            let s = &mut slack[c as usize + 1];
            *s = (*s).min(left);
        }
        if let Some(pos) = group.tree.first_fit(from, slack) {
            next.push(Reverse((group.jobs[pos].slot, g as u32, pos as u32)));
        }
    }

    /// The owner's rule in the job's queue (usage + request ≤ limit on every resource it
    /// names, fewer occupying jobs than `maxActiveJobs`); true when no rule applies.
    fn rule_allows(&self, job: &SimJob) -> bool {
        if job.pair == NO_PAIR {
            return true;
        }
        let (q, p) = (job.queue as usize, job.pair as usize);
        if self.max_active[q].is_some_and(|max| self.pair_active[p] >= max) {
            return false;
        }
        let used = &self.pair_used[p * self.columns..(p + 1) * self.columns];
        !self.quota_limits[q]
            .iter()
            .any(|&(c, limit)| used[c as usize].saturating_add(self.demand_on(job, c)) > limit)
    }

    /// The room on every resource the job requests, and every capacity of its group (none
    /// for a backfill job or with quotas off).
    fn room_and_capacity_allow(&self, job: &SimJob, g: usize) -> bool {
        let range = job.demand_start as usize..(job.demand_start + job.demand_len) as usize;
        for (&c, &v) in self.demand_col[range.clone()].iter().zip(&self.demand_val[range]) {
            if v > 0 && self.room_used[c as usize].saturating_add(v) > self.room[c as usize] {
                return false;
            }
        }
        !self.groups[g]
            .checks
            .iter()
            .any(|&(at, c, cap)| self.queue_used[at as usize].saturating_add(self.demand_on(job, c)) > cap)
    }

    /// The job's request on column `c` (0 when it names none).
    fn demand_on(&self, job: &SimJob, c: u32) -> i128 {
        let start = job.demand_start as usize;
        let cols = &self.demand_col[start..start + job.demand_len as usize];
        cols.iter()
            .position(|&x| x == c)
            .map_or(0, |i| self.demand_val[start + i])
    }

    /// Counts `job` as occupying from `from`, with its end if it has one.
    fn occupy(&mut self, job: SimJob, from: DateTime<Utc>) {
        self.apply(&job, true);
        if let Some(end) = end_of(from, job.limit) {
            self.ends.push(Reverse((end, self.ending.len() as u32)));
            self.ending.push(job);
        }
    }

    /// Releases `ending[e]`, and brings back the jobs parked on its pair's rule: its usage
    /// fell, so they may fit again.
    fn release(&mut self, e: u32) {
        let job = self.ending[e as usize];
        self.apply(&job, false);
        if job.pair != NO_PAIR {
            for (g, pos) in std::mem::take(&mut self.parked[job.pair as usize]) {
                self.groups[g as usize].tree.set_live(pos as usize, true);
            }
        }
    }

    /// Counts `job` as occupying (`add`) or releases it: the room, and for a normal job with
    /// quotas on its pair and every capped queue of its path.
    fn apply(&mut self, job: &SimJob, add: bool) {
        let step = |slot: &mut i128, v: i128| {
            *slot = if add {
                slot.saturating_add(v)
            } else {
                slot.saturating_sub(v)
            };
        };
        let range = job.demand_start as usize..(job.demand_start + job.demand_len) as usize;
        for i in range.clone() {
            step(&mut self.room_used[self.demand_col[i] as usize], self.demand_val[i]);
        }
        if job.backfill || !self.quotas_on {
            return;
        }
        if job.pair != NO_PAIR {
            let p = job.pair as usize;
            for i in range.clone() {
                step(
                    &mut self.pair_used[p * self.columns + self.demand_col[i] as usize],
                    self.demand_val[i],
                );
            }
            let active = &mut self.pair_active[p];
            *active = if add {
                active.saturating_add(1)
            } else {
                active.saturating_sub(1)
            };
        }
        for &a in &self.capped_path[job.queue as usize] {
            for i in range.clone() {
                step(
                    &mut self.queue_used[a as usize * self.columns + self.demand_col[i] as usize],
                    self.demand_val[i],
                );
            }
        }
    }
}

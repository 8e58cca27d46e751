//! The preemption plan (`spec/prequeue.md` §5 step 3): which running backfill jobs to remove so
//! that the oldest timed-out normal job can start.
//!
//! Per feasible node the deficit (request − free) must be covered by the **smallest** set of
//! eligible victims on that node; among sets of that size the earliest-submitted one wins
//! (lexicographic over victims in submission order), then the node name. The reference's search
//! appended siblings to its working set and returned extra victims (`reference` §10.1.1); this
//! is a proper k-combination search, tried for k = lower bound, lower bound + 1, …, pruned
//! whenever the chosen victims plus the best that the remaining slots could add fall short.
//!
//! Bound: a node with more than [`MAX_EXACT_POOL`] useful victims falls back to a greedy cover
//! (largest share of the remaining deficit first, then redundant victims dropped), and so does
//! every search once the searches of one [`plan_preemption`] call — all nodes, all candidates —
//! have spent [`SEARCH_STEP_BUDGET`] steps together. A budget per search would not bound the
//! round: it would be spent again on every node. The plan says when a fallback was involved
//! (`exact: false`). Victims that contribute nothing to the deficit are removed first: they are
//! never in a minimal set.
//!
//! Plans in flight ([`InFlightPreemption`]): while a plan's victims terminate, the room they
//! will free is its beneficiary's. The beneficiary gets no second plan, and no other job plans
//! on that node at all until the victims are gone ([`PreemptionSkip::RoomReserved`] when that
//! leaves it without a plan). The whole node, not only the terminating part of it: `free`
//! still counts terminating pods as used, so a deficit computed on that node now would be
//! wrong by whatever the victims free beyond the beneficiary's need once they are gone.

use anteroom_shared::scheduling::{JobPhase, PreemptionPolicy, ResourceList, ScheduleType};
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::fast_map::FastMap;
use super::placement::node_accepts;
use super::snapshot::{InFlightPreemption, JobId, JobSnapshot, Snapshot, deadline};

/// Largest pool of useful victims on one node searched exactly.
pub const MAX_EXACT_POOL: usize = 24;
/// Search steps (partial combinations visited) of one preemption step, over every node and
/// every candidate, before the remaining searches fall back to greedy; [`min_cover`] alone gets
/// the same budget.
pub const SEARCH_STEP_BUDGET: u64 = 2_000_000;

/// A plan to execute: delete `victims` on `node` so `beneficiary` fits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionPlan {
    /// The timed-out normal job that gets the room.
    pub beneficiary: JobId,
    /// Where.
    pub node: String,
    /// Backfill jobs to preempt, in submission order.
    pub victims: Vec<JobId>,
    /// What was missing on the node (request − free).
    pub deficit: ResourceList,
    /// False when the greedy fallback produced it or stood in for the search of some node
    /// (then a smaller plan may exist).
    pub exact: bool,
}

impl PreemptionPlan {
    /// The in-flight entry of this plan once executed: its victims terminate on its node for
    /// its beneficiary. The watcher feeds it back into the next snapshots until the victims
    /// are gone, so neither the beneficiary nor anyone else plans against that room again.
    pub fn in_flight(&self) -> InFlightPreemption {
        InFlightPreemption {
            beneficiary: self.beneficiary,
            node: self.node.clone(),
            terminating_victims: self.victims.clone(),
        }
    }
}

/// Why a timed-out pending job got no plan this round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "reason")]
pub enum PreemptionSkip {
    /// `preemptionPolicy = Never`.
    PolicyNever,
    /// It already fits on this node's free capacity: it waits for something other than room.
    FitsOnNode {
        /// A node with room.
        node: String,
    },
    /// Victims preempted for it earlier are still terminating.
    VictimsTerminating,
    /// It had a plan within the window (`preemptionPlanWindowSeconds`, else its tolerance),
    /// whose victims are gone, and it still does not fit: the room went to someone else (a
    /// *miss*), and deleting more Elastic jobs for it now would likely feed that someone again.
    RecentPlan {
        /// When its last plan was executed.
        planned_at: DateTime<Utc>,
    },
    /// No plan elsewhere, and a feasible node's terminating room is reserved for another job
    /// whose victims are still terminating there.
    RoomReserved {
        /// The first such node (name order).
        node: String,
        /// The job the room is reserved for.
        beneficiary: JobId,
    },
    /// No feasible node, or no set of eligible victims covers a deficit.
    NoPlan,
}

/// The preemption step's result: at most one plan (the round executes it and ends its
/// preemption step), plus why older candidates got none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionOutcome {
    /// The plan to execute, if any.
    pub plan: Option<PreemptionPlan>,
    /// Candidates considered before the plan was found, with why they got none.
    pub skipped: Vec<(JobId, PreemptionSkip)>,
    /// Search steps spent, over every node and candidate: what [`SEARCH_STEP_BUDGET`] bounds,
    /// counted where they are spent so a test can check the bound without a clock.
    pub search_steps: u64,
}

/// Whether a job may be preempted now: running, backfill, jupyter/webide/custom, unlocked,
/// single-node, on exactly one node, and running for at least `backfillMinRuntimeSeconds`.
///
/// The boundary, the one rule of spec and code: a job that has run for **exactly** the minimum
/// may be preempted (`started_at + minimum <= now`); one second less protects it. A minimum of
/// 0 protects nobody.
///
/// The runtime counts from `started_at` only. Without it the runtime is unknown, and the
/// submission time is no stand-in: a backfill job that waited an hour in the prequeue and
/// started a second ago would look an hour old. So a job without a start time is protected
/// while a minimum runtime is set; with none (0) its age does not matter.
pub fn is_eligible_victim(job: &JobSnapshot, min_runtime_seconds: i64, now: DateTime<Utc>) -> bool {
    job.phase == JobPhase::Running
        && job.kind.may_backfill()
        && job.single_node
        && victim_node(job).is_some()
        && cluster_may_evict(job, min_runtime_seconds, now)
}

/// What the cluster's own scheduler is told about the job's pods (`volcano.sh/preemptable`):
/// whether Volcano's preempt and reclaim may evict them. Only a backfill job, unlocked, that
/// has run for `backfillMinRuntimeSeconds` — what the prequeue itself protects (a lock, the
/// minimum runtime, every normal job) Volcano must not take either. It does not ask for one
/// node or one pod: Volcano can evict what the prequeue cannot plan for.
pub fn cluster_may_evict(job: &JobSnapshot, min_runtime_seconds: i64, now: DateTime<Utc>) -> bool {
    job.schedule_type == ScheduleType::Backfill
        && !job.is_locked(now)
        && has_run_long_enough(job.started_at, min_runtime_seconds, now)
}

/// The minimum runtime rule of [`is_eligible_victim`]: with a minimum, only a job whose start
/// time is known and at least that long ago.
pub fn has_run_long_enough(started_at: Option<DateTime<Utc>>, min_runtime_seconds: i64, now: DateTime<Utc>) -> bool {
    min_runtime_seconds <= 0
        || started_at
            .and_then(|started| deadline(started, min_runtime_seconds))
            .is_some_and(|d| d <= now)
}

/// The one node a job runs on, if it runs on exactly one (ignoring empty and repeated names).
fn victim_node(job: &JobSnapshot) -> Option<&str> {
    let mut names = job.nodes.iter().map(String::as_str).filter(|n| !n.is_empty());
    let first = names.next()?;
    names.all(|n| n == first).then_some(first)
}

/// The time of `job`'s last plan if it lies within the plan window before `now` (the window is
/// `preemptionPlanWindowSeconds`, or the job's waiting tolerance when that is 0).
pub fn recent_plan_within_window(snapshot: &Snapshot, job: &JobSnapshot, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let window = match snapshot.config.preemption_plan_window_seconds {
        0 => job.waiting_tolerance_seconds.unwrap_or(0),
        seconds => seconds,
    };
    snapshot
        .recent_plans
        .iter()
        .filter(|p| p.beneficiary == job.id)
        .map(|p| p.planned_at)
        .max()
        .filter(|&at| super::snapshot::deadline(at, window).is_none_or(|until| until > now))
}

/// Plans one preemption for the oldest timed-out, single-node, `Pending` normal job that needs
/// and can get one. Does nothing while blocking and preemption are off.
pub fn plan_preemption(snapshot: &Snapshot, now: DateTime<Utc>) -> PreemptionOutcome {
    let mut outcome = PreemptionOutcome {
        plan: None,
        skipped: Vec::new(),
        search_steps: 0,
    };
    if !snapshot.config.blocking_enabled() {
        return outcome;
    }
    let mut beneficiaries: Vec<&JobSnapshot> = snapshot
        .jobs
        .iter()
        .filter(|j| j.phase == JobPhase::Pending && j.single_node && j.is_timed_out(now))
        .collect();
    beneficiaries.sort_by_key(|j| (j.submitted_at, j.id));
    if beneficiaries.is_empty() {
        return outcome;
    }
    // Plans in flight: their nodes' terminating room is reserved for their beneficiaries (their
    // victims run there, so no one else can count them either). Several entries on one node
    // (only possible from an inconsistent store) name the smallest beneficiary id, so the
    // answer does not depend on their order.
    let in_flight: Vec<&InFlightPreemption> = snapshot
        .preemptions_in_flight
        .iter()
        .filter(|p| p.is_active())
        .collect();
    let mut reserved: FastMap<&str, JobId> = FastMap::default();
    for p in &in_flight {
        let holder = reserved.entry(p.node.as_str()).or_insert(p.beneficiary);
        *holder = (*holder).min(p.beneficiary);
    }
    // Victims grouped by node, each group in submission order.
    let mut pools: FastMap<&str, Vec<&JobSnapshot>> = FastMap::default();
    for job in &snapshot.jobs {
        if is_eligible_victim(job, snapshot.config.backfill_min_runtime_seconds, now)
            && let Some(node) = victim_node(job)
        {
            pools.entry(node).or_default().push(job);
        }
    }
    for pool in pools.values_mut() {
        pool.sort_by_key(|j| (j.submitted_at, j.id));
    }
    let mut nodes: Vec<_> = snapshot.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    let mut budget = SEARCH_STEP_BUDGET;

    for job in beneficiaries {
        if job.preemption_policy == PreemptionPolicy::Never {
            outcome.skipped.push((job.id, PreemptionSkip::PolicyNever));
            continue;
        }
        if in_flight.iter().any(|p| p.beneficiary == job.id) {
            outcome.skipped.push((job.id, PreemptionSkip::VictimsTerminating));
            continue;
        }
        let feasible: Vec<_> = nodes
            .iter()
            .filter(|n| node_accepts(n, &job.explicit_nodes, &job.tolerations) && n.allocatable.covers(&job.resources))
            .collect();
        if let Some(node) = feasible.iter().find(|n| n.free.covers(&job.resources)) {
            outcome.skipped.push((
                job.id,
                PreemptionSkip::FitsOnNode {
                    node: node.name.clone(),
                },
            ));
            continue;
        }
        // Its victims are gone and it still does not fit: the room went to someone else.
        if let Some(planned_at) = recent_plan_within_window(snapshot, job, now) {
            outcome
                .skipped
                .push((job.id, PreemptionSkip::RecentPlan { planned_at }));
            continue;
        }
        let mut best: Option<PreemptionPlan> = None;
        // Whether every node was searched exhaustively: only then is the best plan minimal.
        let mut exact = true;
        // The first feasible node passed over because its room is another job's.
        let mut passed_over: Option<(&str, JobId)> = None;
        for node in feasible {
            // Any in-flight plan here is another job's: this job's own would have skipped it.
            if let Some(&holder) = reserved.get(node.name.as_str()) {
                passed_over.get_or_insert((node.name.as_str(), holder));
                continue;
            }
            let Some(pool) = pools.get(node.name.as_str()) else {
                continue;
            };
            let deficit = node.free.deficit(&job.resources);
            let names: Vec<&str> = deficit.iter().map(|(n, _)| n).collect();
            let need: Vec<i128> = deficit.iter().map(|(_, q)| q.milli()).collect();
            let vectors: Vec<Vec<i128>> = pool
                .iter()
                .map(|v| names.iter().map(|n| v.resources.get(n).milli().max(0)).collect())
                .collect();
            // Nodes come in name order, so a later node must need strictly fewer victims.
            let max_size = best
                .as_ref()
                .map_or(vectors.len(), |b| b.victims.len().saturating_sub(1));
            if max_size == 0 {
                break;
            }
            let before = budget;
            let (cover, exhaustive) = bounded_cover(&vectors, &need, max_size, &mut budget);
            outcome.search_steps += before - budget;
            exact &= exhaustive;
            if let Some(indices) = cover {
                best = Some(PreemptionPlan {
                    beneficiary: job.id,
                    node: node.name.clone(),
                    victims: indices.iter().map(|&i| pool[i].id).collect(),
                    deficit,
                    exact,
                });
            }
        }
        match best {
            Some(mut plan) => {
                plan.exact = exact;
                outcome.plan = Some(plan);
                return outcome;
            }
            None => {
                let skip = match passed_over {
                    Some((node, beneficiary)) => PreemptionSkip::RoomReserved {
                        node: node.to_owned(),
                        beneficiary,
                    },
                    None => PreemptionSkip::NoPlan,
                };
                outcome.skipped.push((job.id, skip));
            }
        }
    }
    outcome
}

/// A covering set: indices into the pool in increasing order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cover {
    /// Chosen pool indices (pool order = submission order).
    pub indices: Vec<usize>,
    /// True when the search was exhaustive (the set is a minimum).
    pub exact: bool,
}

/// The smallest set of pool entries (each a vector over the deficit's resources) whose sum
/// covers `need`, with at most `max_size` entries; among minimum sets the lexicographically
/// first by index. `None` when no set of at most `max_size` entries covers it.
pub fn min_cover(pool: &[Vec<i128>], need: &[i128], max_size: usize) -> Option<Cover> {
    let mut budget = SEARCH_STEP_BUDGET;
    let (indices, exact) = bounded_cover(pool, need, max_size, &mut budget);
    indices.map(|indices| Cover { indices, exact })
}

/// [`min_cover`] drawing its search steps from `budget` (what is left of it is left there).
/// The flag is false when the answer — a cover or none — came from the greedy fallback, so a
/// smaller cover than the one returned, or one within `max_size` when none was, may exist.
fn bounded_cover(pool: &[Vec<i128>], need: &[i128], max_size: usize, budget: &mut u64) -> (Option<Vec<usize>>, bool) {
    if need.iter().all(|n| *n <= 0) {
        return (Some(Vec::new()), true);
    }
    // Entries adding nothing to a needed resource are never in a minimal cover.
    let useful: Vec<usize> = (0..pool.len())
        .filter(|&i| pool[i].iter().zip(need).any(|(v, n)| *n > 0 && *v > 0))
        .collect();
    let resources = need.len();
    // Infeasible even with every useful entry?
    for r in 0..resources {
        let total = useful.iter().fold(0_i128, |acc, &i| acc.saturating_add(pool[i][r]));
        if total < need[r] {
            return (None, true);
        }
    }
    // Lower bound on the size: per resource, the fewest entries (largest first) reaching need.
    let mut lower = 1;
    for r in 0..resources {
        if need[r] <= 0 {
            continue;
        }
        let mut values: Vec<i128> = useful.iter().map(|&i| pool[i][r]).collect();
        values.sort_unstable_by(|a, b| b.cmp(a));
        let mut sum = 0_i128;
        let mut count = 0;
        for v in values {
            if sum >= need[r] {
                break;
            }
            sum = sum.saturating_add(v);
            count += 1;
        }
        lower = lower.max(count);
    }
    let max_size = max_size.min(useful.len());
    if lower > max_size {
        return (None, true);
    }
    if useful.len() <= MAX_EXACT_POOL {
        let vectors: Vec<&[i128]> = useful.iter().map(|&i| pool[i].as_slice()).collect();
        let mut search = Search::new(&vectors, need, *budget);
        let mut result = None;
        let mut exhaustive = true;
        for k in lower..=max_size {
            match search.first_of_size(k) {
                SearchResult::Found(chosen) => {
                    result = Some(chosen.into_iter().map(|i| useful[i]).collect());
                    break;
                }
                SearchResult::NotFound => {}
                SearchResult::OutOfBudget => {
                    exhaustive = false;
                    break;
                }
            }
        }
        *budget = budget.saturating_sub(search.steps);
        if exhaustive {
            // Found the minimum, or exhausted every size up to max_size: none that small exists.
            return (result, true);
        }
    }
    let greedy = greedy_cover(pool, &useful, need).filter(|c| c.len() <= max_size);
    (greedy, false)
}

enum SearchResult {
    Found(Vec<usize>),
    NotFound,
    OutOfBudget,
}

/// Depth-first k-combination search in lexicographic order with two prunes per step: the
/// partial sum plus the whole remaining suffix, and plus `slots ×` the suffix maximum, must
/// reach the need on every resource.
struct Search<'a> {
    pool: &'a [&'a [i128]],
    need: &'a [i128],
    /// `suffix_sum[i][r] = Σ_{j ≥ i} pool[j][r]`
    suffix_sum: Vec<Vec<i128>>,
    /// `suffix_max[i][r] = max_{j ≥ i} pool[j][r]`
    suffix_max: Vec<Vec<i128>>,
    /// Steps taken so far (over every size tried).
    steps: u64,
    /// Steps allowed.
    limit: u64,
}

impl<'a> Search<'a> {
    fn new(pool: &'a [&'a [i128]], need: &'a [i128], limit: u64) -> Self {
        let n = pool.len();
        let r = need.len();
        let mut suffix_sum = vec![vec![0_i128; r]; n + 1];
        let mut suffix_max = vec![vec![0_i128; r]; n + 1];
        for i in (0..n).rev() {
            for k in 0..r {
                suffix_sum[i][k] = suffix_sum[i + 1][k].saturating_add(pool[i][k]);
                suffix_max[i][k] = suffix_max[i + 1][k].max(pool[i][k]);
            }
        }
        Search {
            pool,
            need,
            suffix_sum,
            suffix_max,
            steps: 0,
            limit,
        }
    }

    fn first_of_size(&mut self, k: usize) -> SearchResult {
        let mut chosen = Vec::with_capacity(k);
        let mut sum = vec![0_i128; self.need.len()];
        match self.extend(0, k, &mut chosen, &mut sum) {
            Some(true) => SearchResult::Found(chosen),
            Some(false) => SearchResult::NotFound,
            None => SearchResult::OutOfBudget,
        }
    }

    /// Tries to complete `chosen` with `slots` more entries from index `from` on. `Some(true)`
    /// = found (left in `chosen`), `Some(false)` = none, `None` = budget exhausted.
    fn extend(&mut self, from: usize, slots: usize, chosen: &mut Vec<usize>, sum: &mut [i128]) -> Option<bool> {
        if slots == 0 {
            return Some(sum.iter().zip(self.need).all(|(s, n)| s >= n));
        }
        let n = self.pool.len();
        for i in from..=n.saturating_sub(slots) {
            if self.steps >= self.limit {
                return None;
            }
            self.steps += 1;
            // Prune: even the best completion from i on cannot reach the need.
            let reachable = (0..self.need.len()).all(|r| {
                let by_sum = sum[r].saturating_add(self.suffix_sum[i][r]);
                let by_max = sum[r].saturating_add(self.suffix_max[i][r].saturating_mul(slots as i128));
                by_sum >= self.need[r] && by_max >= self.need[r]
            });
            if !reachable {
                // Later starts only see a subset of this suffix: they cannot reach it either.
                return Some(false);
            }
            for (s, v) in sum.iter_mut().zip(self.pool[i]) {
                *s = s.saturating_add(*v);
            }
            chosen.push(i);
            match self.extend(i + 1, slots - 1, chosen, sum) {
                Some(true) => return Some(true),
                None => return None,
                Some(false) => {}
            }
            chosen.pop();
            for (s, v) in sum.iter_mut().zip(self.pool[i]) {
                *s = s.saturating_sub(*v);
            }
        }
        Some(false)
    }
}

/// The fallback cover: take the entry covering the largest share of what is still missing
/// (ties to the earliest), until covered; then drop entries the rest already cover, latest
/// first. Not guaranteed minimal. Polynomial (O(pool² × resources)), so it needs no budget.
fn greedy_cover(pool: &[Vec<i128>], useful: &[usize], need: &[i128]) -> Option<Vec<usize>> {
    const UNIT: i128 = 1_000_000;
    let mut remaining: Vec<i128> = need.to_vec();
    let mut chosen: Vec<usize> = Vec::new();
    let mut taken = vec![false; useful.len()];
    while remaining.iter().any(|r| *r > 0) {
        let mut best: Option<(i128, usize)> = None;
        for (u, &i) in useful.iter().enumerate() {
            if taken[u] {
                continue;
            }
            let gain: i128 = pool[i]
                .iter()
                .zip(&remaining)
                .zip(need)
                .filter(|((_, rem), n)| **rem > 0 && **n > 0)
                .map(|((v, rem), n)| (*v).min(*rem).saturating_mul(UNIT) / n)
                .sum();
            if gain > 0 && best.is_none_or(|(g, _)| gain > g) {
                best = Some((gain, u));
            }
        }
        let (_, u) = best?;
        taken[u] = true;
        chosen.push(useful[u]);
        for (rem, v) in remaining.iter_mut().zip(&pool[useful[u]]) {
            *rem = rem.saturating_sub(*v);
        }
    }
    chosen.sort_unstable();
    // Drop redundant entries, latest first (keeps earlier-submitted victims).
    let mut k = chosen.len();
    while k > 0 {
        k -= 1;
        let covers_without = (0..need.len()).all(|r| {
            let total = chosen
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != k)
                .fold(0_i128, |acc, (_, &i)| acc.saturating_add(pool[i][r]));
            total >= need[r]
        });
        if covers_without {
            chosen.remove(k);
        }
    }
    Some(chosen)
}

#[cfg(test)]
mod tests;

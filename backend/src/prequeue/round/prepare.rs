//! [`PreparedRound::new`]: one read of the snapshot into the dense, indexed form the walks and
//! the checks use (see the module documentation of [`round`](super) for what is interned and
//! why), and the accessors of the candidates' demand entries.

use std::sync::OnceLock;

use anteroom_shared::scheduling::{ActivationOrder, JobPhase, ScheduleType, is_accelerator};
use chrono::{DateTime, Utc};

use super::blockers::{BlockerIndex, BlockerRef, UNKNOWN_START};
use super::intern::{DomainInterner, FastMap, ResourceInterner};
use super::{BIG, Cand, MAX_COLUMNS, PreparedRound, RoundError, State, submit_key};
use crate::prequeue::queue_tree::QueueTree;
use crate::prequeue::snapshot::{JobId, Snapshot, UserId};

impl<'s> PreparedRound<'s> {
    /// Interns one snapshot at time `now` (which decides who is timed out), without start
    /// estimates: with `timeAwareBackfill` on, no blocker then has a known start and nothing
    /// backfills past one (see [`with_start_estimates`](Self::with_start_estimates)).
    pub fn new(snapshot: &'s Snapshot, now: DateTime<Utc>) -> Result<Self, RoundError> {
        Self::with_start_estimates(snapshot, now, &[])
    }

    /// [`new`](Self::new) with the estimated starts of the jobs that block others, read only
    /// with `timeAwareBackfill` on (`backfill.rs`).
    ///
    /// The watcher fills `estimates` from its latest forecast (the board): `(id, start)` of
    /// every `Prequeue` job with a known start ([`EstimateBasis::Limits`](crate::prequeue::EstimateBasis)),
    /// at least of the timed-out ones; others are ignored. A blocker absent from it has no
    /// known start, so nothing backfills past it; timed-out `Pending` jobs never have one.
    pub fn with_start_estimates(
        snapshot: &'s Snapshot,
        now: DateTime<Utc>,
        estimates: &[(JobId, DateTime<Utc>)],
    ) -> Result<Self, RoundError> {
        let config = &snapshot.config;
        let quotas_on = config.queue_quota_enabled;
        let blocking = config.blocking_enabled();
        let time_aware = blocking && config.time_aware_backfill;
        let tree = QueueTree::new_lenient(&snapshot.queues);

        // Queues: the tree's, then unknown names jobs or usage refer to (roots, no capacity).
        let mut queue_names: Vec<&'s str> = Vec::with_capacity(tree.len());
        let mut queue_index: FastMap<&'s str, u32> = FastMap::default();
        for spec in &snapshot.queues {
            if let Some(i) = tree.index_of(&spec.name) {
                // Lenient trees keep the first definition of a name; index = definition order.
                if i == queue_names.len() {
                    queue_names.push(spec.name.as_str());
                    queue_index.insert(spec.name.as_str(), i as u32);
                }
            }
        }
        let mut paths: Vec<Vec<u32>> = (0..queue_names.len())
            .map(|q| tree.path(q).iter().map(|&a| a as u32).collect())
            .collect();

        // Columns first: the resources the rules compare, so the job pass can drop the rest.
        let fair_share = config.activation_order.is_fair_share();
        let too_many = RoundError::TooManyResourceNames { max: MAX_COLUMNS };
        let mut interner = ResourceInterner::new();
        if quotas_on {
            for quota in &snapshot.quotas {
                for (name, _) in quota.limits.iter() {
                    interner.intern(name).ok_or_else(|| too_many.clone())?;
                }
            }
        }
        // Capacities are compared with quotas on and are fair-share denominators; the first row
        // of a queue name wins, with or without a capacity, as in `QueueTree` and `QuotaView`:
        // submission and round agree.
        let mut capacity: Vec<Vec<(u16, i128)>> = vec![Vec::new(); queue_names.len()];
        if quotas_on || fair_share {
            let mut defined = vec![false; queue_names.len()];
            for spec in &snapshot.queues {
                let Some(&q) = queue_index.get(spec.name.as_str()) else {
                    continue;
                };
                if std::mem::replace(&mut defined[q as usize], true) {
                    continue;
                }
                for (name, value) in spec.capacity.iter().flat_map(|c| c.iter()) {
                    let r = interner.intern(name).ok_or_else(|| too_many.clone())?;
                    capacity[q as usize].push((r, value.milli()));
                }
            }
        }
        if fair_share {
            for node in &snapshot.nodes {
                for (name, value) in node.allocatable.iter() {
                    let total = interner.cluster.entry(name).or_insert(0);
                    *total = total.saturating_add(value.milli());
                }
            }
        }
        let mut queue_of = |name: &'s str, names: &mut Vec<&'s str>, paths: &mut Vec<Vec<u32>>| -> u32 {
            if let Some(&q) = queue_index.get(name) {
                return q;
            }
            let q = names.len() as u32;
            names.push(name);
            paths.push(vec![q]);
            queue_index.insert(name, q);
            q
        };

        let mut domains = DomainInterner::default();
        // The accelerator names of the job at hand, sorted (resource lists iterate in order).
        let mut accelerators: Vec<&'s str> = Vec::new();
        let (now_secs, now_nanos) = (now.timestamp(), now.timestamp_subsec_nanos());
        // Candidates and pairs first (pairs exist only for owners with prequeued jobs); one
        // pass over each job's resources yields its demand entries and its domain.
        let mut pair_index: FastMap<(UserId, u32), u32> = FastMap::default();
        let mut pair_owner = Vec::new();
        let mut pair_queue = Vec::new();
        let mut cands = Vec::with_capacity(snapshot.jobs.len());
        let mut demand_res = Vec::with_capacity(snapshot.jobs.len() * 4);
        let mut demand_val = Vec::with_capacity(snapshot.jobs.len() * 4);
        // Timed-out Pending jobs: (job, queue, blocker, domain).
        let mut blockers: Vec<(u32, u32, BlockerRef, u32)> = Vec::new();
        for (j, job) in snapshot.jobs.iter().enumerate() {
            let prequeued = job.phase == JobPhase::Prequeue;
            if !prequeued && job.phase != JobPhase::Pending {
                continue;
            }
            let key = submit_key(job);
            // JobSnapshot::is_timed_out on integers (waitingSince + tolerance < now); the rare
            // negative tolerance takes chrono's path so range edges agree exactly.
            let timed_out = job.schedule_type == ScheduleType::Normal
                && match (job.waiting_since, job.waiting_tolerance_seconds) {
                    (Some(since), Some(t)) if t >= 0 => since
                        .timestamp()
                        .checked_add(t)
                        .is_some_and(|deadline| (deadline, since.timestamp_subsec_nanos()) < (now_secs, now_nanos)),
                    (Some(_), Some(_)) => job.is_timed_out(now),
                    _ => false,
                };
            if !prequeued && !timed_out {
                continue;
            }
            let queue = queue_of(job.queue.as_str(), &mut queue_names, &mut paths);
            let demand_start = demand_res.len() as u32;
            accelerators.clear();
            for (name, q) in job.resources.iter() {
                // Zero requests are no requests: no domain, no column (spec §1 "non-zero").
                if q.is_zero() {
                    continue;
                }
                let column = interner.column(name);
                if column.map_or_else(|| is_accelerator(name), |r| interner.accelerator[r as usize]) {
                    accelerators.push(name);
                }
                if let (true, Some(r)) = (prequeued, column) {
                    demand_res.push(r);
                    demand_val.push(i64::try_from(q.milli()).ok().filter(|v| *v != BIG).unwrap_or(BIG));
                }
            }
            let domain = domains.intern(&accelerators);
            // Timed-out Pending jobs block; timed-out Prequeue ones are indexed once the usage
            // is known, since one held privately blocks nobody.
            if timed_out && !prequeued {
                blockers.push((j as u32, queue, (key, j as u32), domain));
            }
            if !prequeued {
                continue;
            }
            let pair = *pair_index.entry((job.owner, queue)).or_insert_with(|| {
                pair_owner.push(job.owner);
                pair_queue.push(queue);
                (pair_owner.len() - 1) as u32
            });
            cands.push(Cand {
                key,
                job: j as u32,
                pair,
                queue,
                demand_start,
                demand_len: demand_res.len() as u32 - demand_start,
                domain,
                backfill: job.schedule_type == ScheduleType::Backfill,
                timed_out,
                pinned: !job.explicit_nodes.is_any(),
                borrow_never: job.sharing.borrow == anteroom_shared::scheduling::BorrowPolicy::Never,
            });
        }
        if fair_share {
            // Usage counts in the shares too: its resources the cluster has become columns.
            for row in &snapshot.usage {
                for (name, value) in row.resources.iter() {
                    if !value.is_zero() {
                        interner.column(name);
                    }
                }
            }
        }
        let resources = interner.names.len();
        // Submission order; the store usually delivers it sorted, which the sort detects. Then
        // within each queue, higher priorities first (§9; nothing moves while all are 0).
        cands.sort_unstable_by_key(|c| c.key);
        crate::prequeue::sharing::priority::within_queues(
            &mut cands,
            |c| c.queue,
            |c| snapshot.jobs[c.job as usize].sharing.priority,
        );

        let queues = queue_names.len();
        let mut pending_blockers = BlockerIndex::new(queues);
        if blocking {
            for &(j, queue, blocker, domain) in &blockers {
                pending_blockers.add(queue, domain, &snapshot.jobs[j as usize].explicit_nodes, blocker);
            }
        }

        // Queues that only jobs name have no capacity.
        capacity.resize(queues, Vec::new());
        // Quota rules per queue (the first rule of a queue wins, as in `QuotaView`); every
        // limit's resource is a column already.
        let mut quota_rule = vec![None; queues];
        let mut quota_limits = vec![Vec::new(); queues];
        let mut max_active = vec![None; queues];
        if quotas_on {
            for (i, quota) in snapshot.quotas.iter().enumerate() {
                let Some(&q) = queue_index.get(quota.queue.as_str()) else {
                    continue;
                };
                if quota_rule[q as usize].is_none() {
                    quota_rule[q as usize] = Some(i as u32);
                    quota_limits[q as usize] = quota
                        .limits
                        .iter()
                        .filter_map(|(n, v)| Some((interner.find(n)?, v.milli())))
                        .collect();
                    max_active[q as usize] = quota.max_active_jobs;
                }
            }
        }

        // Usage: per pair (only pairs with candidates) and per queue up the tree.
        let mut initial = State {
            pair_used: vec![0; pair_owner.len() * resources],
            pair_active: vec![0; pair_owner.len()],
            queue_used: vec![0; queues * resources],
            sharing: None,
        };
        let sharing = super::sharing::RoundSharing::new(snapshot, &tree, &queue_names, quotas_on);
        initial.sharing = sharing.as_ref().map(|s| s.initial(snapshot, &tree));
        for row in &snapshot.usage {
            let Some(&q) = queue_index.get(row.queue.as_str()) else {
                continue;
            };
            let pair = pair_index.get(&(row.owner, q)).copied();
            if let Some(p) = pair {
                initial.pair_active[p as usize] = initial.pair_active[p as usize].saturating_add(row.active_jobs);
            }
            for (name, value) in row.resources.iter() {
                // Usage of a resource no rule compares changes no check.
                let Some(r) = interner.find(name).filter(|_| !value.is_zero()) else {
                    continue;
                };
                let r = usize::from(r);
                if let Some(p) = pair {
                    let slot = &mut initial.pair_used[p as usize * resources + r];
                    *slot = slot.saturating_add(value.milli());
                }
                for &a in &paths[q as usize] {
                    let slot = &mut initial.queue_used[a as usize * resources + r];
                    *slot = slot.saturating_add(value.milli());
                }
            }
        }

        // Fair-share denominators: the queue's capacity, else the cluster's allocatable total
        // (§5 step 4). Every node counts, ready and schedulable or not: a share is a fraction
        // of what the cluster owns, and a node cordoned for a while should not shift every
        // owner's share and the order of the prequeue with it.
        let mut share_denominator = Vec::new();
        if fair_share {
            let cluster: Vec<i128> = interner
                .names
                .iter()
                .map(|name| interner.cluster.get(name).copied().unwrap_or(0))
                .collect();
            share_denominator = Vec::with_capacity(queues * resources);
            for caps in &capacity {
                for (r, total) in cluster.iter().enumerate() {
                    let named = caps.iter().find(|(i, _)| *i as usize == r).map(|(_, v)| *v);
                    share_denominator.push(named.unwrap_or(*total));
                }
            }
        }

        // Fair share divides a queue's dominant share by its weight (§9); 1 for names only
        // jobs use.
        let mut weights = vec![1_u32; queues];
        for spec in &snapshot.queues {
            if let Some(&q) = queue_index.get(spec.name.as_str())
                && tree.index_of(&spec.name) == Some(q as usize)
            {
                weights[q as usize] = spec.sharing.weight.max(1);
            }
        }

        // Fair share over time (§10): each pair's past part — its decayed usage over what
        // steadily using its queue's whole capacity (the fair-share denominators, weighted per
        // resource) would accumulate — added to its dominant share. No history: nothing is
        // added, and the order is DRF's.
        let history_share: Vec<i128> =
            if config.activation_order == ActivationOrder::FairShareHistory && !snapshot.history.is_empty() {
                let weights =
                    crate::prequeue::history::UsageWeights::new(config, snapshot.nodes.iter().map(|n| &n.allocatable));
                let capacity_units: Vec<f64> = (0..queues)
                    .map(|q| {
                        interner
                            .names
                            .iter()
                            .enumerate()
                            .map(|(r, name)| {
                                let milli = share_denominator[q * resources + r];
                                weights.of(name) * crate::prequeue::history::units_of(name, milli)
                            })
                            .sum()
                    })
                    .collect();
                pair_owner
                    .iter()
                    .zip(&pair_queue)
                    .map(|(owner, q)| {
                        let used = snapshot.history.of(queue_names[*q as usize], *owner);
                        let part = crate::prequeue::history::past_part(
                            used,
                            capacity_units[*q as usize],
                            config.usage_half_life_seconds,
                        );
                        (part.min(1e6) * super::fair_share::SHARE_UNIT as f64) as i128
                    })
                    .collect()
            } else {
                Vec::new()
            };
        // First definition of a name wins, as everywhere in the round.
        let mut budget_held = vec![false; queue_names.len()];
        let mut defined = vec![false; queue_names.len()];
        for spec in &snapshot.queues {
            if let Some(&q) = queue_index.get(spec.name.as_str())
                && !std::mem::replace(&mut defined[q as usize], true)
            {
                budget_held[q as usize] = spec.holding_budget(now).is_some();
            }
        }
        let mut prepared = PreparedRound {
            snapshot,
            resources,
            res_names: interner.names,
            queue_names,
            paths,
            capacity,
            quota_rule,
            quota_limits,
            max_active,
            share_denominator,
            weights,
            history_share,
            pair_owner,
            pair_queue,
            initial,
            cands,
            demand_res,
            demand_val,
            pending_blockers,
            prequeue_blockers: BlockerIndex::new(queues),
            budget_held,
            sharing,
            blocking,
            quotas_on,
            now,
            time_aware,
            starts_now: OnceLock::new(),
        };
        if blocking {
            // Timed-out Prequeue jobs block unless held privately (their owner's own quota or
            // `maxActiveJobs` at the start of the round): `spec/prequeue.md` §1, §5 step 4.
            let mut prequeue_blockers = BlockerIndex::new(queues);
            // Time-aware backfill reads their estimated starts (one map per round, only on).
            let starts: FastMap<JobId, DateTime<Utc>> = if time_aware {
                estimates.iter().copied().collect()
            } else {
                FastMap::default()
            };
            for cand in prepared.cands.iter().filter(|c| c.timed_out) {
                // Nor does one that would borrow and finds nothing lent (or will not borrow):
                // no one owes it room, so it goes first for no one (§9).
                let borrow_held = prepared
                    .sharing_of(cand, &prepared.initial)
                    .is_some_and(|a| a.borrowing && (!a.fits || cand.borrow_never));
                // Nor one its queue's spent budget holds (§10): it waits for the next period,
                // not for room, so it goes first for no one either.
                let budget_held = prepared.budget_holder(cand.queue as usize).is_some();
                if prepared.private_causes(cand, &prepared.initial) == 0 && !borrow_held && !budget_held {
                    let nodes = &snapshot.jobs[cand.job as usize].explicit_nodes;
                    let blocker = (cand.key, cand.job);
                    if time_aware {
                        let start = starts.get(&cand.key.2).copied().unwrap_or(UNKNOWN_START);
                        prequeue_blockers.add_with_start(cand.queue, cand.domain, nodes, blocker, start);
                    } else {
                        prequeue_blockers.add(cand.queue, cand.domain, nodes, blocker);
                    }
                }
            }
            prepared.prequeue_blockers = prequeue_blockers;
        }
        Ok(prepared)
    }

    /// The exact value of demand entry `i` of `cand`.
    fn demand_value(&self, cand: &Cand, i: usize) -> i128 {
        match self.demand_val[i] {
            BIG => {
                let name = self.res_names[self.demand_res[i] as usize];
                self.snapshot.jobs[cand.job as usize].resources.get(name).milli()
            }
            v => i128::from(v),
        }
    }

    pub(super) fn demand_of<'a>(&'a self, cand: &'a Cand) -> impl Iterator<Item = (u16, i128)> + 'a {
        let start = cand.demand_start as usize;
        (start..start + cand.demand_len as usize).map(move |i| (self.demand_res[i], self.demand_value(cand, i)))
    }

    pub(super) fn demand_on(&self, cand: &Cand, resource: u16) -> i128 {
        let start = cand.demand_start as usize;
        let res = &self.demand_res[start..start + cand.demand_len as usize];
        res.iter()
            .position(|r| *r == resource)
            .map_or(0, |i| self.demand_value(cand, start + i))
    }
}

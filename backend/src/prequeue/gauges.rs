//! What the metrics show of a round's snapshot (issue 44, the seed's dashboard): per queue its
//! prequeue length by kind, the accelerators its subtree holds beside its guarantee and
//! capacity, and — under `fairShareHistory` — its fair-share factor; the cluster's
//! accelerators, allocatable and in use. Computed here, from plain data, so that what the
//! dashboard plots is tested without a Prometheus; the watcher only hands the numbers over.
//!
//! Accelerators are every extended resource (`vendor/name`), summed over models: a dashboard
//! compares one number per queue. Labels stay bounded: queues and two kinds, and user ids only
//! when an admin asks for them ([`Gauges::users`]).

use std::collections::HashMap;

use anteroom_shared::scheduling::{JobPhase, ResourceList, ScheduleType, is_accelerator};

use super::history::{UsageWeights, capacity_units, factor, past_part};
use super::snapshot::{Snapshot, UserId};

/// One queue's gauges.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueGauges {
    /// The queue.
    pub queue: String,
    /// Its own prequeued jobs: normal, backfill.
    pub prequeued: [u64; 2],
    /// Accelerators held by occupying jobs of its subtree (the scope of its capacity and
    /// guarantee): normal, backfill.
    pub accelerators_used: [f64; 2],
    /// Accelerators its subtree is guaranteed (§9); `None`: no guarantee.
    pub accelerators_guaranteed: Option<f64>,
    /// Accelerators its capacity allows its subtree's normal jobs; `None`: no accelerator is
    /// capped (unlimited, so no series: a dashboard draws no line rather than a false one).
    pub accelerators_capacity: Option<f64>,
    /// Its fair-share factor under `fairShareHistory` (§10): `2^(-part)`, `part` the share of
    /// its capacity a steady use would need to leave its decayed usage — 1 unused, 0.5 for a
    /// queue kept full for as long as the half-life reaches. `None` under the other orders.
    pub fair_share_factor: Option<f64>,
}

/// One (queue, user) pair's fair-share factor, as `/api/v1/me/fair-share` computes it.
#[derive(Debug, Clone, PartialEq)]
pub struct UserFactor {
    /// The queue.
    pub queue: String,
    /// The user.
    pub owner: UserId,
    /// `2^(-part / share)`, share = one over the users with usage in the queue.
    pub factor: f64,
}

/// What one round shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gauges {
    /// Every queue, in the snapshot's order.
    pub queues: Vec<QueueGauges>,
    /// Accelerators the cluster's ready nodes offer.
    pub cluster_allocatable: f64,
    /// Accelerators in use on them (by any pod, Anteroom's or not).
    pub cluster_used: f64,
    /// Factors per (queue, user) with usage; only filled when asked for (user ids as labels
    /// are an admin's opt-in) and under `fairShareHistory`.
    pub users: Vec<UserFactor>,
}

/// Accelerators in a resource list, in whole devices.
pub fn accelerators(resources: &ResourceList) -> f64 {
    resources
        .iter()
        .filter(|(name, q)| is_accelerator(name) && q.is_positive())
        .map(|(_, q)| q.milli() as f64 / 1000.0)
        .sum()
}

/// A queue's decayed usage and its users' parts of it.
type QueueUse = (f64, Vec<(UserId, f64)>);

fn kind_index(schedule_type: ScheduleType) -> usize {
    match schedule_type {
        ScheduleType::Normal => 0,
        ScheduleType::Backfill => 1,
    }
}

/// The gauges of `snapshot`; `with_users` adds the per-user factors.
pub fn of(snapshot: &Snapshot, with_users: bool) -> Gauges {
    let index: HashMap<&str, usize> = snapshot
        .queues
        .iter()
        .enumerate()
        .map(|(i, q)| (q.name.as_str(), i))
        .collect();
    let parent: Vec<Option<usize>> = snapshot
        .queues
        .iter()
        .map(|q| q.parent.as_deref().and_then(|p| index.get(p).copied()))
        .collect();
    let mut queues: Vec<QueueGauges> = snapshot
        .queues
        .iter()
        .map(|q| QueueGauges {
            queue: q.name.clone(),
            accelerators_guaranteed: q.sharing.guarantee.as_ref().map(accelerators),
            accelerators_capacity: q
                .capacity
                .as_ref()
                .filter(|c| c.iter().any(|(name, _)| is_accelerator(name)))
                .map(accelerators),
            ..QueueGauges::default()
        })
        .collect();
    for job in &snapshot.jobs {
        let Some(&own) = index.get(job.queue.as_str()) else {
            continue;
        };
        let kind = kind_index(job.schedule_type);
        if job.phase == JobPhase::Prequeue {
            queues[own].prequeued[kind] += 1;
        } else if job.phase.is_occupying() {
            let held = accelerators(&job.resources);
            // Up the tree; a cycle (which the tree's validation forbids) stops after every queue.
            let mut at = Some(own);
            for _ in 0..queues.len() {
                let Some(q) = at else { break };
                queues[q].accelerators_used[kind] += held;
                at = parent[q];
            }
        }
    }
    let mut cluster_allocatable = 0.0;
    let mut cluster_used = 0.0;
    let mut total = ResourceList::new();
    for node in snapshot.nodes.iter().filter(|n| n.ready) {
        let offered = accelerators(&node.allocatable);
        cluster_allocatable += offered;
        cluster_used += (offered - accelerators(&node.free)).max(0.0);
        total.saturating_add_assign(&node.allocatable);
    }
    let mut users = Vec::new();
    if !snapshot.history.is_empty() {
        let weights = UsageWeights::new(&snapshot.config, snapshot.nodes.iter().map(|n| &n.allocatable));
        let half = snapshot.config.usage_half_life_seconds;
        let mut per_queue: HashMap<&str, QueueUse> = HashMap::new();
        for ((queue, owner), used) in snapshot.history.pairs() {
            let entry = per_queue.entry(queue.as_str()).or_default();
            entry.0 += used;
            entry.1.push((*owner, *used));
        }
        for (i, gauge) in queues.iter_mut().enumerate() {
            let units = capacity_units(&weights, snapshot.queues[i].capacity.as_ref(), &total);
            let (used, pairs) = per_queue.remove(gauge.queue.as_str()).unwrap_or_default();
            gauge.fair_share_factor = Some(factor(past_part(used, units, half), 1.0));
            if with_users && !pairs.is_empty() {
                let share = 1.0 / pairs.len() as f64;
                let mut pairs = pairs;
                pairs.sort_by_key(|(owner, _)| *owner);
                users.extend(pairs.into_iter().map(|(owner, used)| UserFactor {
                    queue: gauge.queue.clone(),
                    owner,
                    factor: factor(past_part(used, units, half), share),
                }));
            }
        }
    }
    Gauges {
        queues,
        cluster_allocatable,
        cluster_used,
        users,
    }
}

#[cfg(test)]
mod tests;

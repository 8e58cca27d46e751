//! `GET /api/v1/me/fair-share` (§10): a user's decayed usage per queue, its past part of the
//! queue's capacity (what the order adds to a dominant share), their share of the queue and the
//! factor, and what drives it — from the store at the request: the user's own runs within the
//! horizon (running ones until now) and, per queue, how many users have runs there.

use std::collections::{BTreeMap, HashMap};

use anteroom_shared::api::usage::{FairShare, FairShareQueue};
use anteroom_shared::scheduling::{ActivationOrder, PrequeueConfig, ResourceList, ScheduleType};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr};

use crate::prequeue::QueueSpec;
use crate::prequeue::history::{UsageWeights, capacity_units, decayed_run, factor, past_part, units_of};
use crate::prequeue::snapshot::{NodeSnapshot, UserId};

/// `user`'s fair share at `now`.
pub async fn of_user(
    db: &impl ConnectionTrait,
    config: &PrequeueConfig,
    queues: &[QueueSpec],
    nodes: &[NodeSnapshot],
    user: UserId,
    now: DateTime<Utc>,
) -> Result<FairShare, DbErr> {
    let weights = UsageWeights::new(config, nodes.iter().map(|n| &n.allocatable));
    let half = config.usage_half_life_seconds;
    let runs = super::ledger::runs_in_horizon(db, half, now, Some(user)).await?;
    let users = super::ledger::users_per_queue(db, half, now).await?;
    let mut total = ResourceList::new();
    for node in nodes {
        total.saturating_add_assign(&node.allocatable);
    }
    let mut used: BTreeMap<String, f64> = BTreeMap::new();
    let mut drivers: HashMap<String, BTreeMap<String, f64>> = HashMap::new();
    for run in &runs {
        let end = run.ended_at.unwrap_or(now);
        *used.entry(run.queue.clone()).or_default() += decayed_run(
            weights.per_hour(&run.resources, run.schedule_type),
            run.started_at,
            end,
            now,
            half,
        );
        let scale = if run.schedule_type == ScheduleType::Backfill {
            config.backfill_usage_weight.as_f64()
        } else {
            1.0
        };
        let per_queue = drivers.entry(run.queue.clone()).or_default();
        for (name, q) in run.resources.iter().filter(|(_, q)| q.is_positive()) {
            let per_hour = weights.of(name) * units_of(name, q.milli()) * scale;
            if per_hour > 0.0 {
                *per_queue.entry(name.to_owned()).or_default() += decayed_run(per_hour, run.started_at, end, now, half);
            }
        }
    }
    let queues_out = used
        .into_iter()
        .map(|(queue, decayed)| {
            let capacity = queues
                .iter()
                .find(|q| q.name == queue)
                .and_then(|q| q.capacity.as_ref());
            let part = past_part(decayed, capacity_units(&weights, capacity, &total), half);
            let share = 1.0 / users.get(&queue).copied().unwrap_or(1).max(1) as f64;
            FairShareQueue {
                drivers: drivers.remove(&queue).unwrap_or_default(),
                queue,
                decayed_usage: decayed,
                usage_fraction: part,
                share,
                factor: factor(part, share),
            }
        })
        .collect();
    Ok(FairShare {
        in_effect: config.activation_order == ActivationOrder::FairShareHistory,
        half_life_seconds: half,
        queues: queues_out,
    })
}

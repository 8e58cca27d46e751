//! `GET /api/v1/me/fair-share` (§10): a user's decayed usage per queue, their share, the
//! factor, and what drives it — computed from the store at the request (every run within the
//! horizon, running ones until now), the same values the watcher's ledger orders by.

use std::collections::{BTreeMap, HashMap};

use anteroom_shared::api::usage::{FairShare, FairShareQueue};
use anteroom_shared::scheduling::{ActivationOrder, PrequeueConfig, ScheduleType};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbErr};

use crate::prequeue::QueueSpec;
use crate::prequeue::history::{UsageWeights, decayed_run, factor, units_of};
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
    let runs = super::ledger::runs_in_horizon(db, half, now).await?;
    let mut totals: HashMap<(String, UserId), f64> = HashMap::new();
    let mut drivers: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for run in &runs {
        let units = weights.per_hour(&run.resources, run.schedule_type);
        let end = run.ended_at.unwrap_or(now);
        *totals.entry((run.queue.clone(), run.owner)).or_default() +=
            decayed_run(units, run.started_at, end, now, half);
        if run.owner == user {
            let scale = if run.schedule_type == ScheduleType::Backfill {
                config.backfill_usage_weight.as_f64()
            } else {
                1.0
            };
            let per_queue = drivers.entry(run.queue.clone()).or_default();
            for (name, q) in run.resources.iter().filter(|(_, q)| q.is_positive()) {
                let per_hour = weights.of(name) * units_of(name, q.milli()) * scale;
                if per_hour > 0.0 {
                    *per_queue.entry(name.to_owned()).or_default() +=
                        decayed_run(per_hour, run.started_at, end, now, half);
                }
            }
        }
    }
    let everyone: f64 = totals.values().sum();
    let weight_of = |queue: &str| {
        queues
            .iter()
            .find(|q| q.name == queue)
            .map_or(1, |q| q.sharing.weight.max(1))
    };
    let all_weights: f64 = totals.keys().map(|(q, _)| f64::from(weight_of(q))).sum();
    let mut out: Vec<FairShareQueue> = totals
        .iter()
        .filter(|((_, owner), _)| *owner == user)
        .map(|((queue, _), used)| {
            let usage_fraction = if everyone > 0.0 { used / everyone } else { 0.0 };
            let share = if all_weights > 0.0 {
                f64::from(weight_of(queue)) / all_weights
            } else {
                0.0
            };
            FairShareQueue {
                queue: queue.clone(),
                decayed_usage: *used,
                usage_fraction,
                share,
                factor: factor(usage_fraction, share),
                drivers: drivers.remove(queue).unwrap_or_default(),
            }
        })
        .collect();
    out.sort_by(|a, b| a.queue.cmp(&b.queue));
    Ok(FairShare {
        in_effect: config.activation_order == ActivationOrder::FairShareHistory,
        half_life_seconds: half,
        queues: out,
    })
}

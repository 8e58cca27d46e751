//! Fair share over time (`spec/prequeue.md` §10), the pure part: a run's usage in units
//! (resources weighted per hour), decayed with a half-life, summed per (queue, owner) pair —
//! what `activationOrder: fairShareHistory` orders by and what a user's fair-share factor says.
//!
//! Units: a GPU-hour is 1 by default; `cpu` and `memory` are weighted so that a GPU node's
//! whole CPU (or memory) counts as much as its GPUs, so a CPU-only job still counts. A run
//! from `s` to `e` weighs `∫ units × 2^(-(now - t) / halfLife) dt` at `now`: what ran a
//! half-life ago counts half. A half-life of 0 means no decay.
//!
//! The order adds to a pair's dominant share now its *past part* ([`past_part`]): its decayed
//! usage over what steadily using the queue's whole capacity would accumulate — the same
//! dimension as the dominant share, so a pair that has used a fifth of the queue for weeks
//! weighs as one that holds a fifth of it now.

use std::collections::{BTreeMap, HashMap};

use anteroom_shared::scheduling::{PrequeueConfig, ResourceList, ScheduleType, is_accelerator};
use chrono::{DateTime, Utc};

/// Who owns the usage, as the snapshot names users (its own alias, not imported: the snapshot
/// holds a [`History`]).
type UserId = i64;

/// Resources counted in bytes, weighed (and reported) per GiB.
fn is_bytes(name: &str) -> bool {
    matches!(name, "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// A request of `milli` milli-units of `name` in whole units: GiB for byte resources.
pub fn units_of(name: &str, milli: i128) -> f64 {
    let units = milli as f64 / 1000.0;
    if is_bytes(name) {
        units / f64::from(1_u32 << 30)
    } else {
        units
    }
}

/// Usage units per hour of each resource, and the weight of Elastic runs.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageWeights {
    per_resource: BTreeMap<String, f64>,
    backfill: f64,
    /// Derived from the nodes (no `usageWeights` set).
    derived: bool,
}

impl UsageWeights {
    /// The settings' weights; with none named, derived from the nodes' allocatable: every accelerator 1 per
    /// GPU-hour, `cpu` the GPU nodes' GPUs per CPU and `memory` their GPUs per GiB (with no GPU
    /// node: `cpu` 1 and `memory` the nodes' CPUs per GiB).
    pub fn new<'n>(config: &PrequeueConfig, nodes: impl IntoIterator<Item = &'n ResourceList>) -> Self {
        let backfill = config.backfill_usage_weight.as_f64();
        if !config.usage_weights.is_empty() {
            return UsageWeights {
                per_resource: config
                    .usage_weights
                    .iter()
                    .map(|(name, w)| (name.clone(), w.as_f64()))
                    .collect(),
                backfill,
                derived: false,
            };
        }
        let mut per_resource = BTreeMap::new();
        let (mut gpus, mut gpu_cpus, mut gpu_memory, mut cpus, mut memory) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for allocatable in nodes {
            let node_gpus: f64 = allocatable
                .iter()
                .filter(|(name, _)| is_accelerator(name))
                .map(|(name, q)| {
                    per_resource.insert(name.to_owned(), 1.0);
                    units_of(name, q.milli())
                })
                .sum();
            let node_cpus = units_of("cpu", allocatable.get("cpu").milli());
            let node_memory = units_of("memory", allocatable.get("memory").milli());
            cpus += node_cpus;
            memory += node_memory;
            if node_gpus > 0.0 {
                gpus += node_gpus;
                gpu_cpus += node_cpus;
                gpu_memory += node_memory;
            }
        }
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        if gpus > 0.0 {
            per_resource.insert("cpu".into(), ratio(gpus, gpu_cpus));
            per_resource.insert("memory".into(), ratio(gpus, gpu_memory));
        } else {
            per_resource.insert("cpu".into(), 1.0);
            per_resource.insert("memory".into(), ratio(cpus, memory));
        }
        UsageWeights {
            per_resource,
            backfill,
            derived: true,
        }
    }

    /// The weight of one unit-hour of `name`: as named; an accelerator no setting names counts
    /// 1 (a GPU model the nodes no longer list still weighs); anything else 0.
    pub fn of(&self, name: &str) -> f64 {
        match self.per_resource.get(name) {
            Some(w) => *w,
            None if self.derived && is_accelerator(name) => 1.0,
            None => 0.0,
        }
    }

    /// Usage units an hour of a run requesting `resources`.
    pub fn per_hour(&self, resources: &ResourceList, schedule_type: ScheduleType) -> f64 {
        let units: f64 = resources
            .iter()
            .filter(|(_, q)| q.is_positive())
            .map(|(name, q)| self.of(name) * units_of(name, q.milli()))
            .sum();
        match schedule_type {
            ScheduleType::Backfill => units * self.backfill,
            ScheduleType::Normal => units,
        }
    }
}

/// A queue's capacity in usage units an hour: per resource its capacity, else the cluster's
/// allocatable total (the fair-share denominators of §5), weighted. What [`past_part`] divides
/// a queue's decayed usage by, for `/api/v1/me/fair-share` and the metrics alike.
pub fn capacity_units(weights: &UsageWeights, capacity: Option<&ResourceList>, total: &ResourceList) -> f64 {
    let mut names: Vec<&str> = total.iter().map(|(n, _)| n).collect();
    if let Some(capacity) = capacity {
        names.extend(capacity.iter().map(|(n, _)| n));
    }
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let milli = capacity
                .and_then(|c| c.get_named(name))
                .unwrap_or_else(|| total.get(name))
                .milli();
            weights.of(name) * units_of(name, milli)
        })
        .sum()
}

/// The hours a steady use of the whole of a capacity accumulates in decayed usage (its mean
/// life, `halfLife / ln 2`): what turns decayed usage into a part of a capacity. Without decay
/// (half-life 0) usage never stops growing; 30 days stand in for it.
pub fn mean_life_hours(half_life_seconds: i64) -> f64 {
    let half = if half_life_seconds > 0 {
        half_life_seconds
    } else {
        30 * 86_400
    };
    half as f64 / std::f64::consts::LN_2 / 3600.0
}

/// Decayed usage as the part of a capacity of `capacity_units` (units an hour) that a steady
/// use would give: a pair that has used a fifth of its queue for weeks has 0.2, however long
/// the half-life. 0 when the capacity weighs nothing.
pub fn past_part(decayed_units: f64, capacity_units: f64, half_life_seconds: i64) -> f64 {
    let scale = capacity_units * mean_life_hours(half_life_seconds);
    if scale > 0.0 && decayed_units.is_finite() {
        decayed_units / scale
    } else {
        0.0
    }
}

/// `2^(-age / halfLife)`: what a unit of usage `age_seconds` old counts now (1 without decay).
pub fn decay(age_seconds: f64, half_life_seconds: i64) -> f64 {
    if half_life_seconds <= 0 {
        return 1.0;
    }
    (-age_seconds.max(0.0) / half_life_seconds as f64).exp2()
}

/// What a run of `per_hour` units an hour from `start` to `end` weighs at `now` (units): the
/// integral of `per_hour × decay(now - t)` over the run, exact (no sampling).
pub fn decayed_run(
    per_hour: f64,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    now: DateTime<Utc>,
    half_life_seconds: i64,
) -> f64 {
    let end = end.min(now);
    if end <= start {
        return 0.0;
    }
    let seconds = |a: DateTime<Utc>, b: DateTime<Utc>| (b - a).num_milliseconds() as f64 / 1000.0;
    if half_life_seconds <= 0 {
        return per_hour * seconds(start, end) / 3600.0;
    }
    let h = half_life_seconds as f64;
    let integral = h / std::f64::consts::LN_2
        * (decay(seconds(end, now), half_life_seconds) - decay(seconds(start, now), half_life_seconds));
    per_hour * integral / 3600.0
}

/// Decayed usage per (queue, owner) pair at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    by_pair: HashMap<(String, UserId), f64>,
    total: f64,
}

/// Equality is total: [`History::add`] keeps only finite values, so no NaN is ever held.
impl Eq for History {}

impl History {
    /// A history of these pairs' usage.
    pub fn from_pairs(pairs: impl IntoIterator<Item = ((String, UserId), f64)>) -> Self {
        let mut history = History::default();
        for (pair, units) in pairs {
            history.add(pair, units);
        }
        history
    }

    /// Adds `units` to a pair.
    pub fn add(&mut self, pair: (String, UserId), units: f64) {
        if units > 0.0 && units.is_finite() {
            *self.by_pair.entry(pair).or_default() += units;
            self.total += units;
        }
    }

    /// Whether nobody has any usage.
    pub fn is_empty(&self) -> bool {
        self.total <= 0.0
    }

    /// A pair's decayed usage.
    pub fn of(&self, queue: &str, owner: UserId) -> f64 {
        self.by_pair.get(&(queue.to_owned(), owner)).copied().unwrap_or(0.0)
    }

    /// A pair's part of everyone's decayed usage (0 with none).
    pub fn fraction(&self, queue: &str, owner: UserId) -> f64 {
        if self.total > 0.0 {
            self.of(queue, owner) / self.total
        } else {
            0.0
        }
    }

    /// Every pair with usage.
    pub fn pairs(&self) -> impl Iterator<Item = (&(String, UserId), &f64)> {
        self.by_pair.iter()
    }
}

/// Slurm's fair-share factor `2^(-usage / share)`, from 1 (used nothing) down toward 0: 0.5
/// means a pair used exactly its share, 0.25 twice it. `share` 0: 0 if it used anything.
pub fn factor(usage_fraction: f64, share_fraction: f64) -> f64 {
    if usage_fraction <= 0.0 {
        return 1.0;
    }
    if share_fraction <= 0.0 {
        return 0.0;
    }
    (-usage_fraction / share_fraction).exp2()
}

#[cfg(test)]
mod tests;

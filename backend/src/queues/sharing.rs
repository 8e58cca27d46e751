//! A queue write's sharing settings (`spec/prequeue.md` §9): what a body leaves on the queue,
//! the checks each field gets before the tree's (guarantees against capacities and parents),
//! and the column they are stored in.

use anteroom_shared::api::queues::QueueBody;
use anteroom_shared::scheduling::{
    MAX_PRIORITY, MAX_QUEUE_WEIGHT, MAX_RECLAIM_MIN_RUNTIME_SECONDS, QueueSharing, ResourceList,
};
use sea_orm::DbErr;
use serde_json::json;

use super::entity::queue;
use super::{resource_name_problem, sharing_of};
use crate::field_rule::Rule;

/// The sharing settings a write of `body` leaves on the queue: what the body names, and for a
/// field it leaves out what `existing` has (a new queue: the default, which shares nothing).
pub(super) fn after(body: &QueueBody, existing: Option<&queue::Model>) -> Result<QueueSharing, DbErr> {
    let stored = existing.map(sharing_of).transpose()?.unwrap_or_default();
    Ok(body.sharing_over(stored))
}

/// The `sharing` column for `sharing`: NULL for the defaults (as every queue written before
/// sharing existed), else its JSON.
pub(super) fn column(sharing: &QueueSharing) -> Result<Option<String>, DbErr> {
    if *sharing == QueueSharing::default() {
        return Ok(None);
    }
    serde_json::to_string(sharing)
        .map(Some)
        .map_err(|e| DbErr::Custom(e.to_string()))
}

/// The first field of `sharing` that is invalid on its own, with its problem (the tree checks
/// guarantees against capacities and parents afterwards).
pub(super) fn problem(sharing: &QueueSharing) -> Option<(String, Rule)> {
    for (field, list) in [
        ("guarantee", &sharing.guarantee),
        ("lendingLimit", &sharing.lending_limit),
        ("maxPerJob", &sharing.max_per_job),
    ] {
        if let Some(list) = list
            && let Some(found) = list_problem(field, list)
        {
            return Some(found);
        }
    }
    if !(1..=MAX_QUEUE_WEIGHT).contains(&sharing.weight) {
        return Some((
            "weight".into(),
            Rule::with(
                "between",
                format!("must be between 1 and {MAX_QUEUE_WEIGHT}"),
                json!({ "min": 1, "max": MAX_QUEUE_WEIGHT }),
            ),
        ));
    }
    if !(0..=MAX_RECLAIM_MIN_RUNTIME_SECONDS).contains(&sharing.reclaim_min_runtime_seconds) {
        return Some((
            "reclaimMinRuntimeSeconds".into(),
            Rule::with(
                "between",
                format!("must be between 0 and {MAX_RECLAIM_MIN_RUNTIME_SECONDS} seconds (a year)"),
                json!({ "min": 0, "max": MAX_RECLAIM_MIN_RUNTIME_SECONDS }),
            ),
        ));
    }
    let range = sharing.priority_range;
    for (field, value) in [("priorityRange.min", range.min), ("priorityRange.max", range.max)] {
        if !(-MAX_PRIORITY..=MAX_PRIORITY).contains(&value) {
            return Some((
                field.into(),
                Rule::with(
                    "between",
                    format!("must be between -{MAX_PRIORITY} and {MAX_PRIORITY}"),
                    json!({ "min": -MAX_PRIORITY, "max": MAX_PRIORITY }),
                ),
            ));
        }
    }
    if range.min > range.max {
        return Some((
            "priorityRange".into(),
            Rule::fixed(
                "priorityRangeOrder",
                "the lowest priority (min) must not be above the highest (max)",
            ),
        ));
    }
    // A job that names no priority has 0: a range without it would refuse every such job.
    if !range.allows(0) {
        return Some((
            "priorityRange".into(),
            Rule::fixed(
                "priorityRangeZero",
                "the range must include 0, the priority of every job that names none",
            ),
        ));
    }
    None
}

/// A per-resource list's first bad entry: a name the cluster would refuse, or a quantity below
/// zero (named `field.resource`, as capacities are).
fn list_problem(field: &str, list: &ResourceList) -> Option<(String, Rule)> {
    list.iter().find_map(|(name, quantity)| {
        if let Some(problem) = resource_name_problem(name) {
            return Some((format!("{field}.{name}"), problem));
        }
        (quantity.milli() < 0).then(|| {
            (
                format!("{field}.{name}"),
                Rule::fixed("notNegative", "must be zero (none) or more"),
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use anteroom_shared::scheduling::{PreemptWithinQueue, PriorityRange, Quantity};

    use super::*;

    fn gpus(n: i64) -> ResourceList {
        ResourceList::new().with("nvidia.com/a100", Quantity::from_units(n))
    }

    fn field_of(sharing: QueueSharing) -> Option<String> {
        problem(&sharing).map(|(field, _)| field)
    }

    #[test]
    fn the_defaults_and_a_full_valid_setting_pass() {
        assert_eq!(field_of(QueueSharing::default()), None);
        let full = QueueSharing {
            guarantee: Some(gpus(4)),
            lending_limit: Some(gpus(0)),
            weight: MAX_QUEUE_WEIGHT,
            reclaim_min_runtime_seconds: MAX_RECLAIM_MIN_RUNTIME_SECONDS,
            priority_range: PriorityRange {
                min: -MAX_PRIORITY,
                max: MAX_PRIORITY,
            },
            preempt_within_queue: PreemptWithinQueue::LowerPriority,
            max_per_job: Some(gpus(2)),
        };
        assert_eq!(field_of(full), None);
    }

    #[test]
    fn each_bad_field_is_named() {
        let bad = |change: fn(&mut QueueSharing)| {
            let mut sharing = QueueSharing::default();
            change(&mut sharing);
            field_of(sharing)
        };
        let name = |s: &str| Some(s.to_owned());
        assert_eq!(bad(|s| s.guarantee = Some(gpus(-1))), name("guarantee.nvidia.com/a100"));
        assert_eq!(
            bad(|s| s.lending_limit = Some(ResourceList::new().with("bad name", Quantity::from_units(1)))),
            name("lendingLimit.bad name")
        );
        assert_eq!(
            bad(|s| s.max_per_job = Some(gpus(-2))),
            name("maxPerJob.nvidia.com/a100")
        );
        assert_eq!(bad(|s| s.weight = 0), name("weight"));
        assert_eq!(bad(|s| s.weight = MAX_QUEUE_WEIGHT + 1), name("weight"));
        assert_eq!(
            bad(|s| s.reclaim_min_runtime_seconds = -1),
            name("reclaimMinRuntimeSeconds")
        );
        assert_eq!(
            bad(|s| s.reclaim_min_runtime_seconds = MAX_RECLAIM_MIN_RUNTIME_SECONDS + 1),
            name("reclaimMinRuntimeSeconds")
        );
        assert_eq!(
            bad(|s| s.priority_range.min = -MAX_PRIORITY - 1),
            name("priorityRange.min")
        );
        assert_eq!(
            bad(|s| s.priority_range = PriorityRange {
                min: 0,
                max: MAX_PRIORITY + 1
            }),
            name("priorityRange.max")
        );
        assert_eq!(
            bad(|s| s.priority_range = PriorityRange { min: 2, max: 1 }),
            name("priorityRange")
        );
        assert_eq!(
            bad(|s| s.priority_range = PriorityRange { min: 1, max: 10 }),
            name("priorityRange")
        );
    }

    #[test]
    fn the_defaults_are_stored_as_null_and_anything_else_reads_back() {
        assert_eq!(column(&QueueSharing::default()).unwrap(), None);
        let sharing = QueueSharing {
            weight: 3,
            guarantee: Some(gpus(2)),
            ..QueueSharing::default()
        };
        let text = column(&sharing).unwrap().expect("stored");
        assert_eq!(serde_json::from_str::<QueueSharing>(&text).unwrap(), sharing);
    }
}

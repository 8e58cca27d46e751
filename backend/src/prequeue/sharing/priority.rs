//! Priority inside a queue (`spec/prequeue.md` §9, seed `priorityRange`): within one queue a
//! higher priority is considered first, then the active order; across queues nothing changes.
//! The round and the start forecast both order their jobs with [`within_queues`], so "ahead of
//! a job" means the same in both.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::hash::Hash;

/// Reorders `items` (in the active order) so that each queue's items, still occupying the
/// same positions of the whole order, come by descending priority, the active order kept among
/// equal priorities. Nothing moves while every priority is 0.
pub fn within_queues<T, Q>(items: &mut [T], queue: impl Fn(&T) -> Q, priority: impl Fn(&T) -> i32)
where
    T: Copy,
    Q: Hash + Eq,
{
    if items.iter().all(|t| priority(t) == 0) {
        return;
    }
    let mut positions: HashMap<Q, Vec<usize>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        positions.entry(queue(item)).or_default().push(i);
    }
    let original = items.to_vec();
    for slots in positions.into_values() {
        let mut members: Vec<T> = slots.iter().map(|&i| original[i]).collect();
        // Stable: equal priorities keep the active order.
        members.sort_by_key(|t| Reverse(priority(t)));
        for (slot, member) in slots.into_iter().zip(members) {
            items[slot] = member;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_queue_keeps_its_places_and_fills_them_by_priority() {
        // (queue, priority, submission order)
        let mut jobs = [
            ('a', 0, 1),
            ('b', 0, 2),
            ('a', 5, 3),
            ('b', -1, 4),
            ('a', 5, 5),
            ('b', 3, 6),
        ];
        within_queues(&mut jobs, |j| j.0, |j| j.1);
        assert_eq!(
            jobs,
            [
                ('a', 5, 3),
                ('b', 3, 6),
                ('a', 5, 5),
                ('b', 0, 2),
                ('a', 0, 1),
                ('b', -1, 4)
            ]
        );
    }

    #[test]
    fn all_zero_changes_nothing() {
        let mut jobs = [('b', 0, 2), ('a', 0, 1)];
        within_queues(&mut jobs, |j| j.0, |j| j.1);
        assert_eq!(jobs, [('b', 0, 2), ('a', 0, 1)]);
    }
}

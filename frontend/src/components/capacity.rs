//! What the cluster has and what is free, summed from the nodes every user may read: the room a
//! bar without a limit is drawn against, and the capacity view's accelerator table.

use std::collections::BTreeMap;

use anteroom_shared::api::ClusterNode;

use crate::format;

/// Per resource, the cluster's total and what is free for a new pod.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Allocatable on ready nodes (a node that is down holds nothing anyone can use).
    pub allocatable: BTreeMap<String, f64>,
    /// Used on ready nodes.
    pub used: BTreeMap<String, f64>,
    /// Free on ready, schedulable nodes (a cordoned node takes no new pod).
    pub free: BTreeMap<String, f64>,
    /// The largest free amount on one such node: the biggest single-node request that fits now.
    pub largest_free: BTreeMap<String, f64>,
}

/// Sums the nodes.
pub fn cluster_totals(nodes: &[ClusterNode]) -> Totals {
    let mut t = Totals::default();
    for node in nodes.iter().filter(|n| n.ready) {
        for (name, q) in node.allocatable.iter() {
            *t.allocatable.entry(name.to_owned()).or_default() += format::value(&q);
        }
        for (name, q) in node.used.iter() {
            *t.used.entry(name.to_owned()).or_default() += format::value(&q);
        }
        if !node.schedulable {
            continue;
        }
        for (name, q) in node.free.iter() {
            let v = format::value(&q).max(0.0);
            *t.free.entry(name.to_owned()).or_default() += v;
            let largest = t.largest_free.entry(name.to_owned()).or_default();
            *largest = largest.max(v);
        }
    }
    t
}

/// Tree order of a list of queues given as (name, parent): each after its parent, siblings by
/// name, as (depth, index into `queues`); a queue whose parent is not in the list (one the
/// caller may not use) starts a tree of its own.
pub fn tree_order(queues: &[(&str, Option<&str>)]) -> Vec<(usize, usize)> {
    fn visit(parent: Option<&str>, depth: usize, all: &[(&str, Option<&str>)], out: &mut Vec<(usize, usize)>) {
        let mut children: Vec<usize> = (0..all.len()).filter(|&i| all[i].1 == parent).collect();
        children.sort_by_key(|&i| all[i].0);
        for i in children {
            if out.iter().any(|&(_, j)| j == i) {
                continue;
            }
            out.push((depth, i));
            visit(Some(all[i].0), depth + 1, all, out);
        }
    }
    let mut out = Vec::new();
    let known = |p: Option<&str>| p.is_some_and(|p| queues.iter().any(|(n, _)| *n == p));
    let mut roots: Vec<usize> = (0..queues.len()).filter(|&i| !known(queues[i].1)).collect();
    roots.sort_by_key(|&i| queues[i].0);
    for i in roots {
        if !out.iter().any(|&(_, j)| j == i) {
            out.push((0, i));
            visit(Some(queues[i].0), 1, queues, &mut out);
        }
    }
    out
}

/// A taint as `kubectl` writes it: `key=value:Effect` (`key:Effect` without a value), what a
/// toleration rule names.
pub fn taint_text(taint: &anteroom_shared::scheduling::Taint) -> String {
    let value = taint
        .value
        .as_deref()
        .filter(|v| !v.is_empty())
        .map(|v| format!("={v}"))
        .unwrap_or_default();
    format!("{}{value}:{:?}", taint.key, taint.effect)
}

#[cfg(test)]
mod tests {
    use anteroom_shared::scheduling::{Quantity, ResourceList};

    use super::*;

    fn node(name: &str, ready: bool, schedulable: bool, alloc: &[(&str, &str)], free: &[(&str, &str)]) -> ClusterNode {
        let list = |pairs: &[(&str, &str)]| {
            let mut l = ResourceList::new();
            for (k, v) in pairs {
                l.insert(*k, Quantity::parse(v).unwrap());
            }
            l
        };
        ClusterNode {
            name: name.into(),
            ready,
            schedulable,
            allocatable: list(alloc),
            // Allocatable less free, as a node reports them (a cordoned node's pods use it too).
            used: {
                let mut used = ResourceList::new();
                for ((k, a), (_, f)) in alloc.iter().zip(free) {
                    let units = a.parse::<i64>().unwrap() - f.parse::<i64>().unwrap();
                    used.insert(*k, Quantity::from_units(units));
                }
                used
            },
            free: list(free),
            labels: Default::default(),
            taints: vec![],
        }
    }

    #[test]
    fn queues_come_in_tree_order_and_an_orphan_starts_its_own_tree() {
        let q = [
            ("b", None),
            ("a1", Some("a")),
            ("a", None),
            ("x", Some("hidden")),
            ("a0", Some("a")),
        ];
        let order: Vec<(usize, &str)> = tree_order(&q).into_iter().map(|(d, i)| (d, q[i].0)).collect();
        assert_eq!(order, vec![(0, "a"), (1, "a0"), (1, "a1"), (0, "b"), (0, "x")]);
    }

    #[test]
    fn a_node_that_is_down_counts_for_nothing_and_a_cordoned_one_frees_nothing() {
        let nodes = [
            node(
                "a",
                true,
                true,
                &[("nvidia.com/a100", "8")],
                &[("nvidia.com/a100", "3")],
            ),
            node(
                "b",
                true,
                true,
                &[("nvidia.com/a100", "8")],
                &[("nvidia.com/a100", "5")],
            ),
            node(
                "c",
                true,
                false,
                &[("nvidia.com/a100", "4")],
                &[("nvidia.com/a100", "4")],
            ),
            node(
                "d",
                false,
                true,
                &[("nvidia.com/a100", "8")],
                &[("nvidia.com/a100", "8")],
            ),
        ];
        let t = cluster_totals(&nodes);
        assert_eq!(t.allocatable["nvidia.com/a100"], 20.0);
        assert_eq!(t.free["nvidia.com/a100"], 8.0);
        assert_eq!(t.largest_free["nvidia.com/a100"], 5.0);
        // In use is what ready nodes use (5 + 3), not the total less what is free: the cordoned
        // node's idle room is not in use.
        assert_eq!(t.used["nvidia.com/a100"], 8.0);
    }
}

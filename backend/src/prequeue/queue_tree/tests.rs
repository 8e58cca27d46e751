//! Queue tree validation and paths: cycles, unknown parents, capacities and guarantees.
use super::*;
use crate::prequeue::tests::fixtures::{queue, rl};

#[test]
fn a_path_runs_from_the_queue_to_its_root() {
    let tree = QueueTree::new(&[
        queue("nlp", None, None),
        queue("nlp-llm", Some("nlp"), None),
        queue("nlp-llm-7b", Some("nlp-llm"), None),
        queue("default", None, None),
    ])
    .expect("valid");
    let names: Vec<&str> = tree.path_of("nlp-llm-7b").iter().map(|&q| tree.name(q)).collect();
    assert_eq!(names, ["nlp-llm-7b", "nlp-llm", "nlp"]);
    assert_eq!(tree.root_of("nlp-llm-7b"), "nlp");
    assert_eq!(tree.root_of("unknown"), "unknown");
    assert!(tree.path_of("unknown").is_empty());
}

#[test]
fn an_unknown_parent_is_rejected() {
    let err = QueueTree::new(&[queue("a", Some("ghost"), None)]).expect_err("invalid");
    assert_eq!(err.code(), "parent_not_found");
}

#[test]
fn a_queue_cannot_be_its_own_ancestor() {
    let err = QueueTree::new(&[queue("a", Some("b"), None), queue("b", Some("a"), None)]).expect_err("cycle");
    assert_eq!(err.code(), "queue_cycle");
    let err = QueueTree::new(&[queue("a", Some("a"), None)]).expect_err("self loop");
    assert_eq!(err.code(), "queue_cycle");
}

#[test]
fn a_cycle_is_reported_at_a_queue_on_it_not_at_one_leading_into_it() {
    let err = QueueTree::new(&[
        queue("d", Some("a"), None),
        queue("a", Some("b"), None),
        queue("b", Some("a"), None),
    ])
    .expect_err("cycle");
    assert_eq!(err, QueueTreeError::Cycle { queue: "a".into() });
}

#[test]
fn a_child_capacity_above_its_parent_is_rejected() {
    let err = QueueTree::new(&[
        queue("root", None, Some(rl(&[("cpu", "4")]))),
        queue("child", Some("root"), Some(rl(&[("cpu", "8"), ("memory", "1Ti")]))),
    ])
    .expect_err("too big");
    assert_eq!(err.code(), "capacity_exceeds_parent");
    assert!(err.to_string().contains("cpu"));
}

#[test]
fn a_grandparent_capacity_bounds_when_the_parent_names_none() {
    let err = QueueTree::new(&[
        queue("root", None, Some(rl(&[("cpu", "4")]))),
        queue("mid", Some("root"), None),
        queue("leaf", Some("mid"), Some(rl(&[("cpu", "5")]))),
    ])
    .expect_err("too big");
    assert!(matches!(err, QueueTreeError::CapacityExceedsParent(ref d) if d.parent == "root"));
}

#[test]
fn a_negative_capacity_is_rejected_and_a_zero_one_accepted() {
    let specs = vec![
        queue("root", None, Some(rl(&[("cpu", "8")]))),
        queue("team", Some("root"), Some(rl(&[("cpu", "-1m")]))),
    ];
    let err = QueueTree::new(&specs).expect_err("negative");
    assert_eq!(
        err,
        QueueTreeError::NegativeCapacity {
            queue: "team".into(),
            resource: "cpu".into(),
            capacity: Quantity::parse("-1m").expect("valid"),
        }
    );
    assert_eq!(err.code(), "validation_failed");
    let zero = vec![queue("root", None, Some(rl(&[("nvidia.com/a100", "0")])))];
    assert!(QueueTree::new(&zero).is_ok());
}

#[test]
fn a_capacity_on_resources_the_parent_does_not_name_is_accepted() {
    QueueTree::new(&[
        queue("root", None, Some(rl(&[("cpu", "4")]))),
        queue("child", Some("root"), Some(rl(&[("cpu", "4"), ("memory", "1Ti")]))),
    ])
    .expect("valid");
}

#[test]
fn a_lenient_tree_cuts_cycles_and_unknown_parents() {
    let tree = QueueTree::new_lenient(&[
        queue("a", Some("b"), None),
        queue("b", Some("a"), None),
        queue("c", Some("ghost"), None),
        queue("c", None, None),
    ]);
    assert_eq!(tree.len(), 3);
    assert_eq!(tree.path_of("c").len(), 1);
    assert!(tree.path_of("a").len() <= 2);
    assert!(tree.path_of("b").len() <= 2);
}

fn names(tree: &QueueTree, queue: &str) -> Vec<String> {
    tree.path_of(queue).iter().map(|&q| tree.name(q).to_owned()).collect()
}

#[test]
fn a_lenient_tree_makes_the_queues_of_a_cycle_roots_and_keeps_the_queues_leading_into_it() {
    let rows = [
        queue("d", Some("a"), None),
        queue("a", Some("b"), None),
        queue("b", Some("a"), None),
        queue("e", Some("d"), None),
    ];
    // Whatever the row order: d and e are not on the cycle and keep their parents, so
    // their jobs still count against a's capacity; a and b have no well-defined ancestors.
    for order in [[0, 1, 2, 3], [2, 1, 0, 3], [3, 1, 2, 0], [1, 2, 3, 0]] {
        let shuffled: Vec<QueueSpec> = order.iter().map(|&i| rows[i].clone()).collect();
        let tree = QueueTree::new_lenient(&shuffled);
        assert_eq!(names(&tree, "e"), ["e", "d", "a"], "{order:?}");
        assert_eq!(names(&tree, "d"), ["d", "a"], "{order:?}");
        assert_eq!(names(&tree, "a"), ["a"], "{order:?}");
        assert_eq!(names(&tree, "b"), ["b"], "{order:?}");
    }
}

#[test]
fn guarantees_are_checked_as_the_sharing_model_counts_them() {
    use crate::prequeue::tests::fixtures::shared_queue;
    const GPU: &str = "nvidia.com/a100";
    // A grouping queue naming none sums its children: 6 + 6 under a grandparent's 8.
    let err = QueueTree::new(&[
        shared_queue("g", None, Some(&[(GPU, "8")]), None),
        queue("p", Some("g"), None),
        shared_queue("a", Some("p"), Some(&[(GPU, "6")]), None),
        shared_queue("b", Some("p"), Some(&[(GPU, "6")]), None),
    ])
    .expect_err("12 under 8");
    assert_eq!(err.code(), "guarantee_exceeds_parent");
    // Children's 3 + 3 under a capacity of 4 whose queue names no guarantee.
    let mut p = queue("p", None, Some(rl(&[(GPU, "4")])));
    p.sharing = Default::default();
    let err = QueueTree::new(&[
        p,
        shared_queue("a", Some("p"), Some(&[(GPU, "3")]), None),
        shared_queue("b", Some("p"), Some(&[(GPU, "3")]), None),
    ])
    .expect_err("6 over a capacity of 4");
    assert_eq!(err.code(), "guarantee_exceeds_capacity");
    // 2 + 2 under 4 is fine either way.
    QueueTree::new(&[
        shared_queue("g", None, Some(&[(GPU, "4")]), None),
        queue("p", Some("g"), None),
        shared_queue("a", Some("p"), Some(&[(GPU, "2")]), None),
        shared_queue("b", Some("p"), Some(&[(GPU, "2")]), None),
    ])
    .expect("valid");
}

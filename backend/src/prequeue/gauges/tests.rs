use std::sync::Arc;

use anteroom_shared::scheduling::{ActivationOrder, JobPhase};

use super::*;
use crate::prequeue::history::History;
use crate::prequeue::snapshot::Snapshot;
use crate::prequeue::tests::fixtures::{JobBuilder, node, queue, rl, shared_queue};

const A100: &str = "nvidia.com/a100";

/// A tree `lab` ← `lab/nlp`, a root `other`; a 4-GPU node (3 in use) and a 2-GPU node.
fn snapshot() -> Snapshot {
    let mut s = Snapshot::default();
    let mut lab = shared_queue("lab", None, Some(&[(A100, "4")]), None);
    lab.capacity = Some(rl(&[("cpu", "64"), (A100, "6")]));
    s.queues = vec![
        lab,
        queue("lab/nlp", Some("lab"), Some(rl(&[("cpu", "8")]))),
        queue("other", None, None),
    ];
    s.jobs = vec![
        JobBuilder::normal(1)
            .queue("lab/nlp")
            .gpus(A100, 2)
            .phase(JobPhase::Running)
            .build(),
        JobBuilder::backfill(2)
            .queue("lab")
            .gpus(A100, 1)
            .phase(JobPhase::Pending)
            .build(),
        JobBuilder::normal(3).queue("lab/nlp").gpus(A100, 8).build(),
        JobBuilder::backfill(4).queue("other").gpus(A100, 1).build(),
        JobBuilder::normal(5).queue("other").gpus(A100, 1).build(),
        // Ended: holds nothing.
        JobBuilder::normal(6)
            .queue("other")
            .gpus(A100, 5)
            .phase(JobPhase::Completed)
            .build(),
    ];
    let mut busy = node("n1", &[("cpu", "32"), (A100, "4")]);
    busy.free = rl(&[("cpu", "20"), (A100, "1")]);
    let mut down = node("n3", &[(A100, "8")]);
    down.ready = false;
    s.nodes = vec![busy, node("n2", &[(A100, "2")]), down];
    s
}

fn of_queue<'a>(g: &'a Gauges, name: &str) -> &'a QueueGauges {
    g.queues.iter().find(|q| q.queue == name).expect("the queue has gauges")
}

#[test]
fn prequeue_lengths_are_per_queue_and_kind_and_own_jobs_only() {
    let g = of(&snapshot(), false);
    assert_eq!(of_queue(&g, "lab").prequeued, [0, 0]);
    assert_eq!(of_queue(&g, "lab/nlp").prequeued, [1, 0]);
    assert_eq!(of_queue(&g, "other").prequeued, [1, 1]);
}

#[test]
fn accelerators_used_count_the_subtree_by_kind_and_only_occupying_jobs() {
    let g = of(&snapshot(), false);
    assert_eq!(of_queue(&g, "lab/nlp").accelerators_used, [2.0, 0.0]);
    // Its child's 2 normal GPUs and its own Pending Elastic one.
    assert_eq!(of_queue(&g, "lab").accelerators_used, [2.0, 1.0]);
    assert_eq!(of_queue(&g, "other").accelerators_used, [0.0, 0.0]);
}

#[test]
fn guarantee_and_capacity_are_accelerators_or_absent() {
    let g = of(&snapshot(), false);
    let lab = of_queue(&g, "lab");
    assert_eq!(lab.accelerators_guaranteed, Some(4.0));
    assert_eq!(lab.accelerators_capacity, Some(6.0));
    // A capacity on cpu only leaves accelerators unlimited: no series.
    assert_eq!(of_queue(&g, "lab/nlp").accelerators_capacity, None);
    assert_eq!(of_queue(&g, "other").accelerators_guaranteed, None);
}

#[test]
fn the_cluster_counts_ready_nodes_allocatable_and_in_use() {
    let g = of(&snapshot(), false);
    assert_eq!(g.cluster_allocatable, 6.0);
    assert_eq!(g.cluster_used, 3.0);
}

#[test]
fn no_factor_without_history_and_user_factors_only_on_request() {
    let s = snapshot();
    let g = of(&s, true);
    assert!(g.queues.iter().all(|q| q.fair_share_factor.is_none()));
    assert!(g.users.is_empty());

    let mut s = s;
    s.config.activation_order = ActivationOrder::FairShareHistory;
    s.config.usage_half_life_seconds = 3600;
    // `lab` kept its whole capacity busy for as long as the half-life reaches: its capacity
    // in units an hour times the mean life — three quarters of it user 7's. `other` ran nothing.
    let mut total = anteroom_shared::scheduling::ResourceList::new();
    for n in s.nodes.iter().filter(|n| n.ready) {
        total.saturating_add_assign(&n.allocatable);
    }
    let weights = UsageWeights::new(&s.config, s.nodes.iter().map(|n| &n.allocatable));
    let full = capacity_units(&weights, s.queues[0].capacity.as_ref(), &total)
        * crate::prequeue::history::mean_life_hours(3600);
    s.history = Arc::new(History::from_pairs([
        (("lab".to_owned(), 7), full * 0.75),
        (("lab".to_owned(), 8), full * 0.25),
    ]));
    let without_users = of(&s, false);
    assert!(without_users.users.is_empty());
    let g = of(&s, true);
    let lab = of_queue(&g, "lab").fair_share_factor.expect("a factor");
    assert!((lab - 0.5).abs() < 1e-9, "{lab}");
    assert_eq!(of_queue(&g, "other").fair_share_factor, Some(1.0));
    assert_eq!(g.users.len(), 2);
    // Each user's share is a half: 2^-(0.75 / 0.5) and 2^-(0.25 / 0.5).
    let heavy = g.users.iter().find(|u| u.owner == 7).expect("user 7").factor;
    let light = g.users.iter().find(|u| u.owner == 8).expect("user 8").factor;
    assert!((heavy - (-1.5_f64).exp2()).abs() < 1e-9, "{heavy}");
    assert!((light - (-0.5_f64).exp2()).abs() < 1e-9, "{light}");
}

//! Decay, units and the order of fair share over time: the properties §10 names, each against
//! the round itself.

use chrono::Duration;
use proptest::prelude::*;

use super::*;
use crate::prequeue::PreparedRound;
use crate::prequeue::snapshot::Snapshot;
use crate::prequeue::tests::fixtures::{JobBuilder, node, t0};
use anteroom_shared::scheduling::ActivationOrder;

const GPU: &str = "nvidia.com/a100";
const WEEK: i64 = 7 * 24 * 3600;

#[test]
fn a_run_counts_half_after_one_half_life_and_all_without_decay() {
    let start = t0();
    let end = t0() + Duration::hours(2);
    let now = end;
    let fresh = decayed_run(4.0, start, end, now, WEEK);
    let later = decayed_run(4.0, start, end, now + Duration::seconds(WEEK), WEEK);
    assert!((later / fresh - 0.5).abs() < 1e-12, "{later} / {fresh}");
    // Two hours of four GPUs just ended: a little under eight units, as the integral says.
    let h = WEEK as f64;
    let exact = 4.0 * h / std::f64::consts::LN_2 * (1.0 - (-7200.0 / h).exp2()) / 3600.0;
    assert!(
        (fresh - exact).abs() < 1e-9 && fresh < 8.0 && fresh > 7.96,
        "{fresh} vs {exact}"
    );
    assert_eq!(
        decayed_run(4.0, start, end, now + Duration::days(365), 0),
        8.0,
        "no decay"
    );
    assert_eq!(decay(WEEK as f64, WEEK), 0.5);
    assert_eq!(decay(1e9, 0), 1.0);
    // Nothing counts after `now`, and a run that has not begun counts nothing.
    assert_eq!(decayed_run(4.0, start, end, start, WEEK), 0.0);
}

#[test]
fn derived_weights_count_a_gpu_nodes_cpu_and_memory_as_much_as_its_gpus() {
    let config = PrequeueConfig::default();
    let nodes = [
        node("gpu", &[("cpu", "64"), ("memory", "512Gi"), (GPU, "8")]),
        node("cpu", &[("cpu", "128"), ("memory", "1024Gi")]),
    ];
    let w = UsageWeights::new(&config, nodes.iter().map(|n| &n.allocatable));
    assert_eq!(w.of(GPU), 1.0);
    assert_eq!(w.of("cpu"), 8.0 / 64.0);
    assert_eq!(w.of("memory"), 8.0 / 512.0);
    let whole_node = crate::prequeue::tests::fixtures::rl(&[("cpu", "64"), ("memory", "512Gi")]);
    assert_eq!(w.per_hour(&whole_node, ScheduleType::Normal), 16.0);
    // Elastic runs count at backfillUsageWeight (0.5 by default).
    let one_gpu = crate::prequeue::tests::fixtures::rl(&[(GPU, "1")]);
    assert_eq!(w.per_hour(&one_gpu, ScheduleType::Backfill), 0.5);
    // Weights the admin names replace the derived ones.
    let mut named = PrequeueConfig::default();
    named.usage_weights.insert(
        GPU.into(),
        anteroom_shared::scheduling::Weight::from_thousandths(2500).expect("2.5"),
    );
    let w = UsageWeights::new(&named, nodes.iter().map(|n| &n.allocatable));
    assert_eq!((w.of(GPU), w.of("cpu")), (2.5, 0.0));
}

#[test]
fn the_factor_is_one_unused_and_one_half_at_the_share() {
    assert_eq!(factor(0.0, 0.25), 1.0);
    assert_eq!(factor(0.25, 0.25), 0.5);
    assert_eq!(factor(0.5, 0.25), 0.25);
    assert_eq!(factor(0.1, 0.0), 0.0);
}

/// Two owners (1 and 2) in `default`, each with `waiting` one-GPU jobs, submitted alternately
/// (owner 1 first), on a node of `gpus` GPUs; past usage per owner.
fn two_owners(waiting: i64, gpus: &str, past: [f64; 2], order: ActivationOrder) -> Snapshot {
    let mut s = Snapshot::default();
    s.config.activation_order = order;
    s.config.max_total_activations_per_round = 1000;
    s.config.prequeue_candidate_size = 1000;
    s.nodes = vec![node("n", &[("cpu", "64"), (GPU, gpus)])];
    for i in 0..waiting {
        for owner in [1, 2] {
            let id = i * 2 + owner;
            s.jobs
                .push(JobBuilder::normal(id).owner(owner).gpus(GPU, 1).submitted(id).build());
        }
    }
    s.history = std::sync::Arc::new(History::from_pairs([
        (("default".to_owned(), 1), past[0]),
        (("default".to_owned(), 2), past[1]),
    ]));
    s
}

#[test]
fn the_owner_who_used_more_goes_after_the_one_who_used_less() {
    // Owner 1 submitted first, but used 100 units last week; owner 2 used 10.
    let s = two_owners(3, "8", [100.0, 10.0], ActivationOrder::FairShareHistory);
    let order = PreparedRound::new(&s, t0()).expect("round").fair_share_order();
    let owners: Vec<i64> = order.iter().map(|&j| s.jobs[j as usize].owner).collect();
    assert_eq!(owners[0], 2, "{owners:?}");
    // Plain DRF ignores the past: owner 1's older job first.
    let drf = two_owners(3, "8", [100.0, 10.0], ActivationOrder::FairShare);
    let order = PreparedRound::new(&drf, t0()).expect("round").fair_share_order();
    assert_eq!(drf.jobs[order[0] as usize].owner, 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// All else equal, whoever used less in the past is served first.
    #[test]
    fn less_past_usage_goes_first(a in 0.0_f64..1000.0, b in 0.0_f64..1000.0, waiting in 1_i64..5) {
        prop_assume!((a - b).abs() > 1e-3);
        let s = two_owners(waiting, "1", [a, b], ActivationOrder::FairShareHistory);
        // One GPU: the round starts exactly one job.
        let outcome = PreparedRound::new(&s, t0()).expect("round").select();
        let first = outcome
            .selected
            .first()
            .and_then(|id| s.jobs.iter().find(|j| j.id == *id))
            .map(|j| j.owner);
        prop_assert_eq!(first, Some(if a < b { 1 } else { 2 }));
    }

    /// With no history the order is DRF's, job for job.
    #[test]
    fn without_history_the_order_is_drfs(waiting in 1_i64..6, gpus in 1_u8..12, seed in any::<u64>()) {
        let mut s = two_owners(waiting, &gpus.to_string(), [0.0, 0.0], ActivationOrder::FairShareHistory);
        s.history = std::sync::Arc::default();
        crate::prequeue::tests::fixtures::shuffle(&mut s.jobs, seed);
        let mut drf = s.clone();
        drf.config.activation_order = ActivationOrder::FairShare;
        let with = PreparedRound::new(&s, t0()).expect("round").select();
        let without = PreparedRound::new(&drf, t0()).expect("round").select();
        prop_assert_eq!(with.selected, without.selected);
        prop_assert_eq!(with.waiting, without.waiting);
    }

    /// A past every pair shares equally changes nobody's place: the order is DRF's.
    #[test]
    fn an_equal_past_orders_as_drf(waiting in 1_i64..6, gpus in 1_u8..12, past in 0.0_f64..10_000.0, seed in any::<u64>()) {
        let mut s = two_owners(waiting, &gpus.to_string(), [past, past], ActivationOrder::FairShareHistory);
        crate::prequeue::tests::fixtures::shuffle(&mut s.jobs, seed);
        let mut drf = s.clone();
        drf.config.activation_order = ActivationOrder::FairShare;
        let with = PreparedRound::new(&s, t0()).expect("round").select();
        let without = PreparedRound::new(&drf, t0()).expect("round").select();
        prop_assert_eq!(with.selected, without.selected);
    }

    /// Decay halves any run's weight per half-life, whenever it ran.
    #[test]
    fn decay_halves_a_usage_each_half_life(start in 0_i64..1_000_000, len in 1_i64..500_000, half in 60_i64..10_000_000, units in 0.1_f64..100.0) {
        let s = t0() + Duration::seconds(start);
        let e = s + Duration::seconds(len);
        let now = e + Duration::seconds(17);
        let v = decayed_run(units, s, e, now, half);
        let w = decayed_run(units, s, e, now + Duration::seconds(half), half);
        prop_assert!(v > 0.0);
        prop_assert!((w / v - 0.5).abs() < 1e-9, "{} / {}", w, v);
    }
}

//! Unit tests of the preemption plan: the minimal cover (exact and greedy), victim eligibility,
//! and whole plans against small snapshots.

use super::*;
use crate::prequeue::snapshot::InFlightPreemption;
use crate::prequeue::tests::fixtures::{JobBuilder, node, rl, t0};
use anteroom_shared::scheduling::JobKind;
use chrono::Duration;

fn gpus(counts: &[i128]) -> Vec<Vec<i128>> {
    counts.iter().map(|c| vec![*c]).collect()
}

#[test]
fn the_reference_defect_pool_a1_c2_b4_with_deficit_3_gives_exactly_b() {
    // Pool [A: 1 GPU, C: 2 GPU, B: 4 GPU]; the reference returned [A, C, B].
    let cover = min_cover(&gpus(&[1, 2, 4]), &[3], 3).expect("covered");
    assert_eq!(cover.indices, vec![2]);
    assert!(cover.exact);
}

#[test]
fn the_reference_defect_pool_a1_b4_with_deficit_3_gives_exactly_b() {
    // Pool [A: 1, B: 4]; the reference returned [A, B].
    let cover = min_cover(&gpus(&[1, 4]), &[3], 2).expect("covered");
    assert_eq!(cover.indices, vec![1]);
}

#[test]
fn ties_between_minimum_sets_go_to_the_earliest_submitted() {
    // {0,3}, {1,2} and {2,3} all cover 4 with two victims: lexicographic order picks {0,3}.
    let cover = min_cover(&gpus(&[1, 2, 2, 3]), &[4], 4).expect("covered");
    assert_eq!(cover.indices, vec![0, 3]);
    let cover = min_cover(&gpus(&[2, 2, 2]), &[4], 3).expect("covered");
    assert_eq!(cover.indices, vec![0, 1]);
}

#[test]
fn a_deficit_over_several_resources_needs_every_resource_covered() {
    // No single entry covers both; {0, 1} has too little of the second resource.
    let pool = vec![vec![4, 0], vec![0, 4], vec![2, 8], vec![2, 8]];
    let cover = min_cover(&pool, &[4, 8], 4).expect("covered");
    assert_eq!(cover.indices, vec![0, 2]);
}

#[test]
fn no_cover_when_the_pool_falls_short() {
    assert_eq!(min_cover(&gpus(&[1, 1]), &[3], 2), None);
    assert_eq!(min_cover(&gpus(&[2, 2]), &[4], 1), None);
}

#[test]
fn a_large_pool_falls_back_to_a_greedy_cover_that_still_covers() {
    let pool = gpus(&[1; 40]);
    let cover = min_cover(&pool, &[5], 40).expect("covered");
    assert!(!cover.exact);
    assert_eq!(cover.indices.len(), 5);
}

/// 100 nodes, each with no free capacity and 24 running backfill victims of two kinds —
/// (2 GPU, 1 CPU) and (1 GPU, 2 CPU) — for a job needing 17 GPU and 17 CPU. Per resource,
/// 9 victims would do; together it takes 12, so the search wades through the sets of 9, 10
/// and 11 victims, where the per-resource pruning cuts little: more than 2 000 000 steps on
/// every node.
fn adversarial() -> Snapshot {
    let mut s = Snapshot::default();
    s.config.backfill_enabled = true;
    s.jobs.push(
        JobBuilder::normal(1)
            .gpus("nvidia.com/a100", 17)
            .cpu("17")
            .tolerance(60)
            .phase(JobPhase::Pending)
            .build(),
    );
    let mut id = 100;
    for n in 0..100 {
        let name = format!("n{n:03}");
        let mut full = node(&name, &[("cpu", "36"), ("nvidia.com/a100", "36")]);
        full.free = rl(&[("cpu", "0"), ("nvidia.com/a100", "0")]);
        s.nodes.push(full);
        for k in 0..24 {
            id += 1;
            let (gpu, cpu) = if k % 2 == 0 { (2, "1") } else { (1, "2") };
            s.jobs.push(
                JobBuilder::backfill(id)
                    .gpus("nvidia.com/a100", gpu)
                    .cpu(cpu)
                    .running_on(&name)
                    .build(),
            );
        }
    }
    s
}

#[test]
fn an_adversarial_pool_on_every_node_is_planned_within_one_round_wide_budget() {
    let s = adversarial();
    let outcome = plan_preemption(&s, later());
    // One budget for the whole step: a budget per node would spend 100 of them (about half a
    // minute in a debug build). Counted in steps, not seconds, so a slow machine cannot fail it
    // and a fast one cannot hide a budget per node.
    assert!(
        outcome.search_steps <= SEARCH_STEP_BUDGET,
        "{} steps for a budget of {SEARCH_STEP_BUDGET}",
        outcome.search_steps
    );
    assert!(outcome.search_steps > 0, "the search ran");
    let plan = outcome.plan.expect("a plan");
    assert!(!plan.exact, "the budget ran out, so minimality is not guaranteed");
    let victims: Vec<&JobSnapshot> = plan
        .victims
        .iter()
        .map(|id| s.jobs.iter().find(|j| j.id == *id).expect("a job"))
        .collect();
    assert!(victims.iter().all(|v| v.nodes == [plan.node.clone()]));
    let mut freed = ResourceList::new();
    for v in &victims {
        freed.saturating_add_assign(&v.resources);
    }
    assert!(freed.covers(&plan.deficit), "{freed} covers {}", plan.deficit);
    assert_eq!(plan.victims.len(), 12);
}

fn base() -> Snapshot {
    let mut s = Snapshot::default();
    s.config.backfill_enabled = true;
    let mut n1 = node("n1", &[("cpu", "32"), ("nvidia.com/a100", "8")]);
    n1.free = rl(&[("cpu", "16"), ("nvidia.com/a100", "1")]);
    let mut n2 = node("n2", &[("cpu", "32"), ("nvidia.com/a100", "8")]);
    n2.free = rl(&[("cpu", "16"), ("nvidia.com/a100", "0")]);
    s.nodes = vec![n1, n2];
    s.jobs = vec![
        JobBuilder::normal(1)
            .gpus("nvidia.com/a100", 4)
            .tolerance(60)
            .phase(JobPhase::Pending)
            .build(),
        JobBuilder::backfill(10)
            .gpus("nvidia.com/a100", 1)
            .running_on("n1")
            .build(),
        JobBuilder::backfill(11)
            .gpus("nvidia.com/a100", 2)
            .running_on("n1")
            .build(),
        JobBuilder::backfill(12)
            .gpus("nvidia.com/a100", 4)
            .running_on("n1")
            .build(),
        JobBuilder::backfill(20)
            .gpus("nvidia.com/a100", 8)
            .running_on("n2")
            .build(),
    ];
    s
}

fn later() -> DateTime<Utc> {
    t0() + Duration::seconds(3600)
}

#[test]
fn a_timed_out_pending_job_gets_the_smallest_set_of_victims() {
    let outcome = plan_preemption(&base(), later());
    let plan = outcome.plan.expect("a plan");
    assert_eq!(plan.beneficiary, 1);
    // n1 needs 3 more GPUs: {12} alone; n2 needs 4: {20} alone; tie on size → n1.
    assert_eq!(plan.node, "n1");
    assert_eq!(plan.victims, vec![12]);
    assert_eq!(plan.deficit, rl(&[("nvidia.com/a100", "3")]));
}

#[test]
fn preemption_is_off_while_blocking_is_off() {
    let mut s = base();
    s.config.backfill_enabled = false;
    assert_eq!(plan_preemption(&s, later()).plan, None);
}

#[test]
fn a_job_that_is_not_yet_timed_out_causes_no_preemption() {
    assert_eq!(plan_preemption(&base(), t0() + Duration::seconds(30)).plan, None);
}

#[test]
fn a_never_policy_job_causes_no_preemption() {
    let mut s = base();
    s.jobs[0].preemption_policy = PreemptionPolicy::Never;
    let outcome = plan_preemption(&s, later());
    assert_eq!(outcome.plan, None);
    assert_eq!(outcome.skipped, vec![(1, PreemptionSkip::PolicyNever)]);
}

#[test]
fn a_job_that_already_fits_somewhere_causes_no_preemption() {
    let mut s = base();
    s.nodes[1].free = rl(&[("cpu", "16"), ("nvidia.com/a100", "4")]);
    let outcome = plan_preemption(&s, later());
    assert_eq!(outcome.plan, None);
    assert_eq!(
        outcome.skipped,
        vec![(1, PreemptionSkip::FitsOnNode { node: "n2".into() })]
    );
}

#[test]
fn a_job_whose_victims_are_still_terminating_causes_no_more_preemption() {
    let mut s = base();
    s.preemptions_in_flight.push(InFlightPreemption {
        beneficiary: 1,
        node: "n1".into(),
        terminating_victims: vec![12],
    });
    let outcome = plan_preemption(&s, later());
    assert_eq!(outcome.plan, None);
    assert_eq!(outcome.skipped, vec![(1, PreemptionSkip::VictimsTerminating)]);
}

#[test]
fn a_job_planned_for_within_its_window_gets_no_second_plan_after_its_victims_are_gone() {
    // Its victims are gone, yet it still does not fit: the room went to someone else. Within
    // its window (its tolerance of 60 s by default) no new victims are taken for it.
    let mut s = base();
    let planned_at = later() - Duration::seconds(30);
    s.recent_plans.push(crate::prequeue::snapshot::RecentPlan {
        beneficiary: 1,
        planned_at,
    });
    let outcome = plan_preemption(&s, later());
    assert_eq!(outcome.plan, None);
    assert_eq!(outcome.skipped, vec![(1, PreemptionSkip::RecentPlan { planned_at })]);
    // Past the window it may be planned for again.
    s.recent_plans[0].planned_at = later() - Duration::seconds(61);
    assert!(plan_preemption(&s, later()).plan.is_some());
    // A window set by the admin replaces the tolerance.
    s.config.preemption_plan_window_seconds = 600;
    assert_eq!(plan_preemption(&s, later()).plan, None);
    // Another job's plan is not this one's.
    s.recent_plans[0].beneficiary = 2;
    assert!(plan_preemption(&s, later()).plan.is_some());
    // A job that fits now is skipped as fitting, not as a miss.
    s.recent_plans[0].beneficiary = 1;
    s.nodes[1].free = rl(&[("cpu", "16"), ("nvidia.com/a100", "4")]);
    assert_eq!(
        plan_preemption(&s, later()).skipped,
        vec![(1, PreemptionSkip::FitsOnNode { node: "n2".into() })]
    );
}

#[test]
fn locked_young_and_multi_node_backfill_jobs_are_never_victims() {
    let mut s = base();
    s.config.backfill_min_runtime_seconds = 600;
    // 12 is locked, 20 started only a minute ago, 11 runs on two nodes.
    s.jobs[3].locked_until = Some(later() + Duration::hours(1));
    s.jobs[4].started_at = Some(later() - Duration::seconds(60));
    s.jobs[2].nodes = vec!["n1".into(), "n2".into()];
    let plan = plan_preemption(&s, later()).plan;
    assert_eq!(plan, None, "only victim 10 (1 GPU) remains, which cannot cover 3");
}

#[test]
fn a_backfill_job_without_a_start_time_is_not_old_enough_to_be_preempted() {
    // It waited an hour in the prequeue and has just started: its runtime is unknown, not
    // an hour, so a minimum runtime protects it.
    let mut s = base();
    s.config.backfill_min_runtime_seconds = 600;
    s.jobs.truncate(1);
    let mut victim = JobBuilder::backfill(12)
        .gpus("nvidia.com/a100", 4)
        .running_on("n1")
        .build();
    victim.started_at = None;
    victim.submitted_at = later() - Duration::seconds(3600);
    s.jobs.push(victim.clone());
    assert_eq!(plan_preemption(&s, later()).plan, None);
    assert!(!is_eligible_victim(&victim, 600, later()));
    // Without a minimum runtime its age does not matter.
    assert!(is_eligible_victim(&victim, 0, later()));
    s.config.backfill_min_runtime_seconds = 0;
    assert_eq!(plan_preemption(&s, later()).plan.map(|p| p.victims), Some(vec![12]));
}

#[test]
fn only_jupyter_webide_and_custom_backfill_jobs_are_victims() {
    let mut s = base();
    s.jobs[3].kind = JobKind::Pytorch;
    s.jobs[4].kind = JobKind::Tensorflow;
    let plan = plan_preemption(&s, later()).plan.expect("a plan");
    assert_eq!(plan.victims, vec![10, 11]);
}

#[test]
fn the_oldest_timed_out_job_is_served_first() {
    let mut s = base();
    let mut older = JobBuilder::normal(2)
        .gpus("nvidia.com/a100", 2)
        .tolerance(60)
        .phase(JobPhase::Pending)
        .build();
    older.submitted_at = t0() - Duration::seconds(10);
    s.jobs.push(older);
    let plan = plan_preemption(&s, later()).plan.expect("a plan");
    assert_eq!(plan.beneficiary, 2);
    // n1 needs 1 more GPU: the earliest single victim that covers it is 10.
    assert_eq!(plan.victims, vec![10]);
}

#[test]
fn explicit_nodes_limit_where_room_is_made() {
    let mut s = base();
    s.jobs[0].explicit_nodes = anteroom_shared::scheduling::NodeSet::from_names(["n2"]);
    let plan = plan_preemption(&s, later()).plan.expect("a plan");
    assert_eq!(plan.node, "n2");
    assert_eq!(plan.victims, vec![20]);
}

#[test]
fn a_victim_is_preemptible_from_exactly_the_minimum_runtime_on() {
    // Victim 20 (8 GPUs, the only one on n2) started at `started`; the job is pinned to n2.
    let mut s = base();
    s.jobs[0].explicit_nodes = anteroom_shared::scheduling::NodeSet::from_names(["n2"]);
    s.config.backfill_min_runtime_seconds = 600;
    let started = s.jobs[4].started_at.expect("running");
    let at = |seconds: i64| started + Duration::seconds(seconds);
    for (now, preemptible) in [(at(599), false), (at(600), true), (at(601), true)] {
        assert_eq!(is_eligible_victim(&s.jobs[4], 600, now), preemptible, "at {now}");
        let plan = plan_preemption(&s, now).plan;
        assert_eq!(plan.map(|p| p.victims), preemptible.then(|| vec![20]), "at {now}");
    }
    // Half a second short of the minimum still protects it.
    let almost = at(600) - Duration::milliseconds(500);
    assert!(!is_eligible_victim(&s.jobs[4], 600, almost));
}

#[test]
fn a_later_node_needing_fewer_victims_wins_over_an_earlier_one() {
    // n1 needs 3 GPUs from victims of 1 and 2 (two victims); n2 needs 4 from one of 8.
    let mut s = base();
    s.jobs.retain(|j| j.id != 12);
    let plan = plan_preemption(&s, later()).plan.expect("a plan");
    assert_eq!((plan.node.as_str(), plan.victims), ("n2", vec![20]));
}

/// n1 (1 GPU free) runs victims 10 (1 GPU) and 11 (2 GPUs) and the terminating 12 (4 GPUs,
/// preempted for job 1); job 2, younger and also timed out, needs 3 GPUs.
fn reserved() -> Snapshot {
    let mut s = base();
    s.jobs.retain(|j| j.id != 20);
    s.jobs.push(
        JobBuilder::normal(2)
            .gpus("nvidia.com/a100", 3)
            .tolerance(60)
            .phase(JobPhase::Pending)
            .build(),
    );
    s.preemptions_in_flight.push(InFlightPreemption {
        beneficiary: 1,
        node: "n1".into(),
        terminating_victims: vec![12],
    });
    s
}

#[test]
fn a_younger_job_plans_no_preemption_against_room_terminating_for_another() {
    // Without the reservation job 2 would preempt 11 on n1 and could take the room 12 frees.
    let outcome = plan_preemption(&reserved(), later());
    assert_eq!(outcome.plan, None);
    assert_eq!(
        outcome.skipped,
        vec![
            (1, PreemptionSkip::VictimsTerminating),
            (
                2,
                PreemptionSkip::RoomReserved {
                    node: "n1".into(),
                    beneficiary: 1
                }
            ),
        ]
    );
}

#[test]
fn a_job_kept_off_a_reserved_node_is_still_planned_on_another() {
    let mut s = reserved();
    s.jobs.push(
        JobBuilder::backfill(20)
            .gpus("nvidia.com/a100", 8)
            .running_on("n2")
            .build(),
    );
    let plan = plan_preemption(&s, later()).plan.expect("a plan");
    assert_eq!(
        (plan.beneficiary, plan.node.as_str(), plan.victims),
        (2, "n2", vec![20])
    );
}

#[test]
fn a_reservation_whose_victims_are_gone_reserves_nothing() {
    let mut s = reserved();
    s.preemptions_in_flight[0].terminating_victims.clear();
    s.jobs.retain(|j| j.id != 12);
    // Job 1 may be planned for again (its victims are gone and it still does not fit).
    let plan = plan_preemption(&s, later()).plan.expect("a plan");
    assert_eq!(
        (plan.beneficiary, plan.node.as_str(), plan.victims),
        (1, "n1", vec![10, 11])
    );
}

#[test]
fn an_executed_plan_becomes_the_in_flight_entry_that_stops_a_second_plan() {
    let s = base();
    let plan = plan_preemption(&s, later()).plan.expect("a plan");
    let entry = plan.in_flight();
    assert_eq!(
        entry,
        InFlightPreemption {
            beneficiary: 1,
            node: "n1".into(),
            terminating_victims: vec![12],
        }
    );
    let mut next = s.clone();
    next.preemptions_in_flight.push(entry);
    assert_eq!(plan_preemption(&next, later()).plan, None);
}

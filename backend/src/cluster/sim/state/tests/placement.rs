//! Placement of pending jobs: whole gangs, best fit, creation order without head-of-line
//! blocking, cordons, taints and tolerations, and free capacity never below zero.

use super::*;

#[test]
fn a_gang_is_placed_whole_across_nodes_or_not_at_all() {
    let mut s = default_cluster();
    let fits = JobBuilder::new(1, JobKind::Pytorch)
        .task("master", 1, "4", Some(("nvidia.com/a100", "4")))
        .task("worker", 2, "4", Some(("nvidia.com/a100", "4")))
        .build();
    run(&mut s, &[fits], t0());
    let job = &s.jobs[&1];
    assert_eq!(job.phase, SimPhase::Running);
    assert_eq!(job.pods.len(), 3);
    assert_eq!(job.status(t0()).nodes, vec!["gpu-a100-0", "gpu-a100-1"]);

    // 5 × 4 GPUs = 20 > the 4 left: none of its pods is placed.
    let too_big = JobBuilder::new(2, JobKind::Custom)
        .queue("other")
        .task("main", 5, "1", Some(("nvidia.com/a100", "1")))
        .build();
    run(&mut s, &[too_big], t0());
    assert_eq!(s.jobs[&2].phase, SimPhase::Pending);
    assert!(s.jobs[&2].pods.is_empty());
    let a100_free =
        free(&s, "gpu-a100-0", "nvidia.com/a100").milli() + free(&s, "gpu-a100-1", "nvidia.com/a100").milli();
    assert_eq!(a100_free, 4_000);
}

#[test]
fn best_fit_puts_a_pod_on_the_node_it_fills_most() {
    let mut s = default_cluster();
    // Fill gpu-a100-1 with 6 of its 8 GPUs.
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Jupyter)
            .task("main", 1, "1", Some(("nvidia.com/a100", "6")))
            .pinned(&["gpu-a100-1"])
            .build()],
        t0(),
    );
    assert_eq!(s.jobs[&1].pods[0].node, "gpu-a100-1");
    run(
        &mut s,
        &[JobBuilder::new(2, JobKind::Jupyter)
            .task("main", 1, "1", Some(("nvidia.com/a100", "2")))
            .build()],
        t0(),
    );
    assert_eq!(s.jobs[&2].pods[0].node, "gpu-a100-1", "the tighter node wins");
    assert_eq!(free(&s, "gpu-a100-1", "nvidia.com/a100"), q("0"));
    assert_eq!(free(&s, "gpu-a100-0", "nvidia.com/a100"), q("8"));
}

#[test]
fn a_pending_job_that_does_not_fit_does_not_hold_back_smaller_jobs_behind_it_in_its_queue() {
    let mut s = default_cluster();
    // Queue `team`: a head that cannot fit now (9 GPUs on 8-GPU nodes), then a small job that
    // can: Volcano's allocate skips the head, as the simulation must.
    let head = JobBuilder::new(1, JobKind::Custom)
        .queue("team")
        .task("main", 1, "1", Some(("nvidia.com/a100", "9")))
        .build();
    let behind = JobBuilder::new(2, JobKind::Custom)
        .queue("team")
        .task("main", 1, "1", Some(("nvidia.com/a100", "1")))
        .build();
    let other = JobBuilder::new(3, JobKind::Custom)
        .queue("other")
        .task("main", 1, "1", Some(("nvidia.com/a100", "1")))
        .build();
    let mut c = Changes::default();
    s.create(&head, t0(), &mut c).unwrap();
    s.create(&behind, t0() + Duration::seconds(1), &mut c).unwrap();
    s.create(&other, t0() + Duration::seconds(2), &mut c).unwrap();
    s.step(t0() + Duration::seconds(2), TIMING, &mut c);
    assert_eq!(s.jobs[&1].phase, SimPhase::Pending);
    assert_eq!(s.jobs[&2].phase, SimPhase::Running, "not held back by its queue's head");
    assert_eq!(s.jobs[&3].phase, SimPhase::Running);
}

#[test]
fn pending_jobs_are_tried_in_creation_order() {
    let mut s = default_cluster();
    // Two jobs each wanting a whole v100 node's 4 GPUs plus one more than the other node has
    // left once the first is placed: the older one gets the room.
    let younger = JobBuilder::new(1, JobKind::Custom)
        .task("main", 2, "1", Some(("nvidia.com/v100", "4")))
        .build();
    let older = JobBuilder::new(2, JobKind::Custom)
        .task("main", 2, "1", Some(("nvidia.com/v100", "4")))
        .build();
    let mut c = Changes::default();
    s.create(&older, t0(), &mut c).unwrap();
    s.create(&younger, t0() + Duration::seconds(1), &mut c).unwrap();
    s.step(t0() + Duration::seconds(1), TIMING, &mut c);
    assert_eq!(s.jobs[&2].phase, SimPhase::Running, "the older job goes first");
    assert_eq!(s.jobs[&1].phase, SimPhase::Pending);
}

#[test]
fn cordoned_nodes_and_untolerated_taints_are_avoided() {
    let mut s = default_cluster();
    let mut c = Changes::default();
    assert!(s.set_schedulable("gpu-v100-0", false, &mut c));
    assert!(!s.set_schedulable("nope", false, &mut c));
    s.nodes.get_mut("gpu-v100-1").unwrap().taints.push(Taint {
        key: "dedicated".into(),
        value: Some("ml".into()),
        effect: TaintEffect::NoSchedule,
    });
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Custom)
            .task("main", 1, "1", Some(("nvidia.com/v100", "1")))
            .build()],
        t0(),
    );
    assert_eq!(
        s.jobs[&1].phase,
        SimPhase::Pending,
        "one v100 node cordoned, the other tainted"
    );
    run(
        &mut s,
        &[JobBuilder::new(2, JobKind::Custom)
            .queue("q2")
            .task("main", 1, "1", Some(("nvidia.com/v100", "1")))
            .tolerating("dedicated")
            .build()],
        t0(),
    );
    assert_eq!(s.jobs[&2].pods[0].node, "gpu-v100-1");
    let mut c = Changes::default();
    s.set_schedulable("gpu-v100-0", true, &mut c);
    s.step(t0(), TIMING, &mut c);
    assert_eq!(s.jobs[&1].pods[0].node, "gpu-v100-0");
}

#[test]
fn tolerations_apply_to_the_pods_of_their_own_task_only() {
    let mut s = default_cluster();
    for n in ["gpu-v100-0", "gpu-v100-1"] {
        s.nodes.get_mut(n).unwrap().taints.push(Taint {
            key: "dedicated".into(),
            value: Some("ml".into()),
            effect: TaintEffect::NoSchedule,
        });
    }
    // The worker tolerates the taint; the ps, pinned to a tainted node, does not: pooled over
    // the job the ps would run there, per task it cannot.
    let mut spec = JobBuilder::new(1, JobKind::Tensorflow)
        .task("worker", 1, "1", Some(("nvidia.com/v100", "1")))
        .task("ps", 1, "1", None)
        .task_tolerating("worker", "dedicated")
        .build();
    spec.tasks[1].node_names = vec!["gpu-v100-0".into()];
    run(&mut s, &[spec.clone()], t0());
    assert_eq!(
        s.jobs[&1].phase,
        SimPhase::Pending,
        "the ps does not tolerate the taint"
    );

    // Unpinned, the ps goes where it is tolerated, not onto the v100 node it would fill most.
    let mut s = default_cluster();
    for n in ["gpu-v100-0", "gpu-v100-1"] {
        s.nodes.get_mut(n).unwrap().taints.push(Taint {
            key: "dedicated".into(),
            value: None,
            effect: TaintEffect::NoSchedule,
        });
    }
    spec.tasks[1].node_names.clear();
    spec.tasks[1].resources = ResourceList::new().with("cpu", q("30"));
    run(&mut s, &[spec], t0());
    let job = &s.jobs[&1];
    assert_eq!(job.phase, SimPhase::Running);
    let ps = job.pods.iter().find(|p| p.task == "ps").unwrap();
    let worker = job.pods.iter().find(|p| p.task == "worker").unwrap();
    assert!(worker.node.starts_with("gpu-v100"));
    assert!(!ps.node.starts_with("gpu-v100"), "the ps landed on {}", ps.node);
}

#[test]
fn free_capacity_never_goes_negative_when_a_node_shrinks_under_running_pods() {
    let mut s = default_cluster();
    run(
        &mut s,
        &[JobBuilder::new(1, JobKind::Jupyter)
            .task("main", 1, "4", Some(("nvidia.com/a100", "8")))
            .pinned(&["gpu-a100-0"])
            .build()],
        t0(),
    );
    // The node file now says 4 GPUs and 2 CPUs while the pod holds 8 and 4.
    let node = s.nodes.get_mut("gpu-a100-0").unwrap();
    node.allocatable.insert("nvidia.com/a100", q("4"));
    node.allocatable.insert("cpu", q("2"));
    for n in s.node_snapshots() {
        for (name, quantity) in n.free.iter() {
            assert!(quantity.milli() >= 0, "{}: {name} free is {quantity:?}", n.name);
        }
    }
    assert_eq!(free(&s, "gpu-a100-0", "nvidia.com/a100"), q("0"));
    assert_eq!(free(&s, "gpu-a100-0", "cpu"), q("0"));
    // Nothing more lands there until the pod is gone.
    run(
        &mut s,
        &[JobBuilder::new(2, JobKind::Custom)
            .task("main", 1, "1", None)
            .pinned(&["gpu-a100-0"])
            .build()],
        t0(),
    );
    assert_eq!(s.jobs[&2].phase, SimPhase::Pending);
}

#[test]
fn a_step_skips_the_placement_pass_until_something_could_let_a_pending_job_fit() {
    let mut s = default_cluster();
    // Job 1 holds all 8 GPUs of gpu-a100-0 for 10 s, job 2 (deleted later) those of
    // gpu-a100-1; job 3 wants 8 and waits.
    run(
        &mut s,
        &[
            JobBuilder::new(1, JobKind::Custom)
                .task("main", 1, "1", Some(("nvidia.com/a100", "8")))
                .command(&["sleep", "10"])
                .build(),
            JobBuilder::new(2, JobKind::Jupyter)
                .task("main", 1, "1", Some(("nvidia.com/a100", "8")))
                .build(),
            JobBuilder::new(3, JobKind::Jupyter)
                .task("main", 1, "1", Some(("nvidia.com/a100", "8")))
                .build(),
        ],
        t0(),
    );
    assert_eq!(s.jobs[&3].phase, SimPhase::Pending);
    assert!(s.placement_settled, "nothing more can fit until something changes");

    // Job 1 completes: in the same step its GPUs go to job 3.
    let mut c = Changes::default();
    s.step(t0() + Duration::seconds(10), TIMING, &mut c);
    assert_eq!(s.jobs[&3].phase, SimPhase::Running);
    assert_eq!(s.jobs[&3].pods[0].node, "gpu-a100-0");

    // A terminating job that is gone frees its node for the next one in the same step.
    run(
        &mut s,
        &[JobBuilder::new(4, JobKind::Jupyter)
            .task("main", 1, "1", Some(("nvidia.com/a100", "8")))
            .build()],
        t0() + Duration::seconds(10),
    );
    assert_eq!(s.jobs[&4].phase, SimPhase::Pending);
    let mut c = Changes::default();
    s.delete(2, "uid-2", 0, t0() + Duration::seconds(11), TIMING, &mut c);
    s.step(t0() + Duration::seconds(11), TIMING, &mut c);
    assert_eq!(s.jobs[&4].phase, SimPhase::Running);

    // A cordon lifted lets the pass run again.
    let mut c = Changes::default();
    s.set_schedulable("gpu-v100-0", false, &mut c);
    s.set_schedulable("gpu-v100-1", false, &mut c);
    run(
        &mut s,
        &[JobBuilder::new(5, JobKind::Jupyter)
            .task("main", 1, "1", Some(("nvidia.com/v100", "1")))
            .build()],
        t0() + Duration::seconds(12),
    );
    assert_eq!(s.jobs[&5].phase, SimPhase::Pending);
    s.set_schedulable("gpu-v100-1", true, &mut c);
    s.step(t0() + Duration::seconds(12), TIMING, &mut c);
    assert_eq!(s.jobs[&5].phase, SimPhase::Running);
}

/// After a settled pass, a create frees nothing: the next pass tries only the new jobs, which
/// start if they fit, while the older pending ones wait for room as before.
#[test]
fn jobs_created_after_a_settled_pass_are_placed_alone_and_the_waiting_ones_keep_waiting() {
    let mut s = default_cluster();
    let a100 = |id| {
        JobBuilder::new(id, JobKind::Jupyter)
            .task("main", 1, "1", Some(("nvidia.com/a100", "8")))
            .build()
    };
    // Two take the two A100 nodes; the third waits.
    run(&mut s, &[a100(1), a100(2), a100(3)], t0());
    assert_eq!(s.jobs[&3].phase, SimPhase::Pending);
    assert!(s.placement_settled);
    // A small job and another big one arrive: the small one starts, the big one waits too.
    let small = JobBuilder::new(4, JobKind::Custom).task("main", 1, "1", None).build();
    run(&mut s, &[small, a100(5)], t0());
    assert_eq!(s.jobs[&4].phase, SimPhase::Running);
    assert_eq!(s.jobs[&3].phase, SimPhase::Pending);
    assert_eq!(s.jobs[&5].phase, SimPhase::Pending);
    assert!(s.created_since_pass.is_empty());
    // Room frees (job 1 deleted and gone): the full pass gives it to the oldest waiting job.
    let mut c = Changes::default();
    let uid = s.jobs[&1].spec.cluster_uid.clone();
    s.delete(1, &uid, 0, t0(), TIMING, &mut c);
    s.step(t0(), TIMING, &mut c);
    assert_eq!(s.jobs[&3].phase, SimPhase::Running);
    assert_eq!(s.jobs[&5].phase, SimPhase::Pending);
}

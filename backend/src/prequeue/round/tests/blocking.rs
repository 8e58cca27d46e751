//! Blocking and the waiting clock in a round (`spec/prequeue.md` §1, §5 step 4): which timed-out
//! jobs block their domain in their queue, that a private hold blocks nobody, and when a job's
//! clock starts.

use super::*;

#[test]
fn a_timed_out_pending_job_blocks_its_domain_in_its_queue() {
    let mut s = base(10);
    s.config.backfill_enabled = true;
    s.jobs = vec![
        JobBuilder::normal(1)
            .gpus("nvidia.com/a100", 4)
            .tolerance(60)
            .phase(JobPhase::Pending)
            .build(),
        JobBuilder::normal(2).gpus("nvidia.com/a100", 1).build(), // same domain: blocked
        JobBuilder::normal(3).cpu("1").build(),                   // cpu-only: blocked
        JobBuilder::normal(4).gpus("nvidia.com/h100", 1).build(), // other domain: free
        JobBuilder::normal(5).queue("other").gpus("nvidia.com/a100", 1).build(), // other queue
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![4, 5]);
    assert!(outcome.waiting.iter().all(|w| w.causes.blocked_by() == Some(1)));
}

#[test]
fn a_timed_out_prequeued_job_blocks_younger_jobs_but_not_timed_out_peers() {
    let mut s = with_quota(base(10), "default", &[("cpu", "2")], None);
    s.jobs = vec![
        // Timed out and not held privately: it blocks the cpu-only jobs of its queue that are
        // not timed out themselves, as of the start of the round.
        JobBuilder::normal(1).cpu("1").tolerance(60).build(),
        JobBuilder::normal(2).owner(2).cpu("1").tolerance(60).build(), // timed out peer: goes
        JobBuilder::normal(3).owner(3).cpu("1").tolerance(5000).build(), // not timed out: blocked
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![1, 2]);
    assert_eq!(outcome.waiting[0].causes.blocked_by(), Some(1));
    assert_eq!(codes(&s, 3), ["blocked_by"]);
}

#[test]
fn a_timed_out_job_held_by_its_owners_own_quota_blocks_nobody() {
    // Alice (1) is over her own quota: nothing Bob (2) does can help her, so her timed-out
    // job must not hold Bob's same-domain job back (spec §1, §5 step 4).
    let mut s = with_quota(base(10), "default", &[("nvidia.com/a100", "2")], None);
    s.usage = vec![usage(1, "default", &[("nvidia.com/a100", "2")], 1)];
    s.jobs = vec![
        JobBuilder::normal(1).gpus("nvidia.com/a100", 1).tolerance(60).build(),
        JobBuilder::normal(2)
            .owner(2)
            .gpus("nvidia.com/a100", 1)
            .tolerance(5000)
            .build(),
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![2]);
    assert_eq!(codes(&s, 1), ["quota"]);
    // The same job held by maxActiveJobs alone is held privately too.
    let mut s = with_quota(base(10), "default", &[], Some(1));
    s.usage = vec![usage(1, "default", &[("nvidia.com/a100", "1")], 1)];
    s.jobs = vec![
        JobBuilder::normal(1).gpus("nvidia.com/a100", 1).tolerance(60).build(),
        JobBuilder::normal(2)
            .owner(2)
            .gpus("nvidia.com/a100", 1)
            .tolerance(5000)
            .build(),
    ];
    assert_eq!(run(&s).selected, vec![2]);
    // Held by the queue's capacity instead (shared room), it blocks Bob.
    let mut s = base(10);
    s.config.queue_quota_enabled = true;
    s.queues = vec![queue("default", None, Some(rl(&[("nvidia.com/a100", "2")])))];
    s.usage = vec![usage(3, "default", &[("nvidia.com/a100", "2")], 1)];
    s.jobs = vec![
        JobBuilder::normal(1).gpus("nvidia.com/a100", 1).tolerance(60).build(),
        JobBuilder::normal(2).owner(2).cpu("1").tolerance(5000).build(),
    ];
    let outcome = run(&s);
    assert!(outcome.selected.is_empty());
    assert_eq!(codes(&s, 2), ["blocked_by"]);
}

#[test]
fn the_waiting_clock_runs_from_waiting_since_not_from_submission() {
    let mut s = base(10);
    s.config.backfill_enabled = true;
    // Submitted at t0 + 1 s, long ago, but waiting for shared room only since now − 30 s:
    // with a tolerance of 60 s it is not timed out and blocks nobody.
    s.jobs = vec![
        JobBuilder::normal(1)
            .cpu("1")
            .tolerance(60)
            .waiting_since(Some(970))
            .phase(JobPhase::Pending)
            .build(),
        JobBuilder::normal(2).owner(2).cpu("1").build(),
    ];
    assert_eq!(run(&s).selected, vec![2]);
    // No clock at all (held only privately so far): never timed out.
    s.jobs[0] = JobBuilder::normal(1).cpu("1").tolerance(60).waiting_since(None).build();
    assert!(!s.jobs[0].is_timed_out(now()));
    assert_eq!(run(&s).selected, vec![1, 2]);
    // Past the tolerance from waitingSince: it blocks.
    s.jobs[0] = JobBuilder::normal(1)
        .cpu("1")
        .tolerance(60)
        .waiting_since(Some(900))
        .phase(JobPhase::Pending)
        .build();
    assert!(run(&s).selected.is_empty());
}

#[test]
fn a_round_starts_the_clock_of_jobs_waiting_for_shared_room_only() {
    let mut s = base(10);
    s.config.queue_quota_enabled = true;
    s.queues = vec![queue("default", None, Some(rl(&[("cpu", "4")])))];
    s.quotas.push(QueueQuota {
        queue: "default".into(),
        limits: rl(&[("cpu", "2")]),
        max_active_jobs: None,
    });
    s.usage = vec![
        usage(1, "default", &[("cpu", "2")], 1),
        usage(2, "default", &[("cpu", "2")], 1),
    ];
    s.jobs = vec![
        // Own quota full (and the capacity too): private, no clock.
        JobBuilder::normal(1).cpu("1").tolerance(60).waiting_since(None).build(),
        // Room in its quota, the queue's capacity is full: shared, its clock starts.
        JobBuilder::normal(3)
            .owner(3)
            .cpu("1")
            .tolerance(60)
            .waiting_since(None)
            .build(),
        // Shared too, but its clock already runs: left as it is.
        JobBuilder::normal(4)
            .owner(4)
            .cpu("1")
            .tolerance(60)
            .waiting_since(Some(950))
            .build(),
    ];
    let prepared = PreparedRound::new(&s, now()).expect("prepared");
    let outcome = prepared.select();
    assert!(outcome.selected.is_empty());
    let started: Vec<JobId> = prepared.clocks_to_start(&outcome).map(|j| j.id).collect();
    assert_eq!(started, vec![3]);
    let first = outcome.waiting.iter().find(|w| w.id == 1).expect("waiting");
    assert!(first.causes.held_privately() && first.causes.queue_capacity());
    assert!(!first.causes.waits_for_shared_room());
}

#[test]
fn a_timed_out_pending_job_blocks_even_timed_out_prequeued_jobs() {
    let mut s = base(10);
    s.config.queue_quota_enabled = true;
    s.jobs = vec![
        JobBuilder::normal(1)
            .cpu("1")
            .tolerance(60)
            .phase(JobPhase::Pending)
            .build(),
        JobBuilder::normal(2).cpu("1").tolerance(60).build(),
    ];
    assert!(run(&s).selected.is_empty());
}

#[test]
fn blockers_pinned_to_other_nodes_do_not_block() {
    let mut s = base(10);
    s.config.backfill_enabled = true;
    s.jobs = vec![
        JobBuilder::normal(1)
            .cpu("1")
            .tolerance(60)
            .phase(JobPhase::Pending)
            .nodes(&["n1"])
            .build(),
        JobBuilder::normal(2).cpu("1").nodes(&["n2"]).build(),
        JobBuilder::normal(3).cpu("1").nodes(&["n1", "n3"]).build(),
        JobBuilder::normal(4).cpu("1").build(),
    ];
    let outcome = run(&s);
    assert_eq!(outcome.selected, vec![2]);
}

#[test]
fn blocking_is_off_while_backfill_and_quotas_are_off() {
    let mut s = base(10);
    s.jobs = vec![
        JobBuilder::normal(1)
            .cpu("1")
            .tolerance(60)
            .phase(JobPhase::Pending)
            .build(),
        JobBuilder::normal(2).cpu("1").build(),
    ];
    assert_eq!(run(&s).selected, vec![2]);
}

//! Unit tests of the sharing model: the worked examples of `spec/prequeue.md` §9. The property
//! tests against the round are in `prequeue/tests/sharing_props.rs`.

use super::*;
use crate::prequeue::tests::fixtures::{node, queue, rl, shared_queue};

const GPU: &str = "nvidia.com/a100";

fn build(specs: &[QueueSpec], gpus: &str) -> SharingTree {
    let tree = QueueTree::new(specs).expect("valid tree");
    SharingTree::new(specs, &tree, &[node("n1", &[("cpu", "64"), (GPU, gpus)])]).expect("sharing is on")
}

fn gpus(n: &str) -> ResourceList {
    rl(&[(GPU, n)])
}

/// Two teams of a lab, 4 GPUs guaranteed each, on an 8-GPU cluster.
fn two_teams() -> (Vec<QueueSpec>, SharingTree) {
    let specs = vec![
        shared_queue("cv", None, Some(&[(GPU, "4")]), None),
        shared_queue("nlp", None, Some(&[(GPU, "4")]), None),
        queue("default", None, None),
    ];
    let sharing = build(&specs, "8");
    (specs, sharing)
}

#[test]
fn without_any_guarantee_there_is_no_sharing() {
    let specs = vec![
        queue("default", None, Some(gpus("8"))),
        queue("team", Some("default"), None),
    ];
    let tree = QueueTree::new(&specs).expect("valid");
    assert!(SharingTree::new(&specs, &tree, &[node("n1", &[(GPU, "8")])]).is_none());
    // A guarantee of zero guarantees nothing either.
    let zero = vec![shared_queue("team", None, Some(&[(GPU, "0")]), None)];
    let tree = QueueTree::new(&zero).expect("valid");
    assert!(SharingTree::new(&zero, &tree, &[]).is_none());
}

#[test]
fn an_idle_teams_guarantee_is_lent_and_the_borrower_is_flagged() {
    let (_, sharing) = two_teams();
    let nlp = Some(1);
    let mut state = sharing.empty_state();
    // nlp uses its 4, then borrows cv's idle 4.
    for n in 0..8 {
        let a = sharing.assess(&state, nlp, &sharing.demand(&gpus("1")));
        assert!(a.fits, "GPU {n} fits the cluster");
        assert_eq!(a.borrowing, n >= 4, "GPU {n}: borrowing only beyond the guarantee");
        sharing.add(&mut state, nlp, &sharing.demand(&gpus("1")), 1);
    }
    // A ninth does not fit the cluster.
    let a = sharing.assess(&state, nlp, &sharing.demand(&gpus("1")));
    assert!(!a.fits && a.borrowing);
    assert_eq!(a.shortfall, vec![1000]);
    // cv asking 2 is within its guarantee: owed, and the pool is short by 2.
    let a = sharing.assess(&state, Some(0), &sharing.demand(&gpus("2")));
    assert!(!a.fits && a.owed());
    assert_eq!(a.shortfall, vec![2000]);
    let use_nlp = sharing.queue_use(&state, 1);
    assert_eq!(use_nlp.borrowed, gpus("4"));
    let use_cv = sharing.queue_use(&state, 0);
    assert_eq!(use_cv.lent, gpus("4"));
    assert_eq!(use_cv.guarantee, gpus("4"));
}

#[test]
fn a_queue_without_a_guarantee_only_borrows() {
    let (_, sharing) = two_teams();
    let state = sharing.empty_state();
    let a = sharing.assess(&state, Some(2), &sharing.demand(&gpus("1")));
    assert!(a.fits && a.borrowing);
    // A request without shared resources neither borrows nor is held.
    let a = sharing.assess(&state, Some(2), &sharing.demand(&rl(&[("cpu", "8")])));
    assert!(a.fits && !a.borrowing);
    // Unknown queues are roots guaranteeing nothing.
    assert!(sharing.assess(&state, None, &sharing.demand(&gpus("1"))).borrowing);
}

#[test]
fn a_lending_limit_keeps_the_rest_of_an_idle_guarantee() {
    let specs = vec![
        shared_queue("cv", None, Some(&[(GPU, "4")]), Some(&[(GPU, "1")])),
        shared_queue("nlp", None, Some(&[(GPU, "4")]), None),
    ];
    let sharing = build(&specs, "8");
    let mut state = sharing.empty_state();
    // cv keeps 3 of its idle 4: nlp gets its own 4 and 1 lent.
    let mut admitted = 0;
    while sharing.assess(&state, Some(1), &sharing.demand(&gpus("1"))).fits {
        sharing.add(&mut state, Some(1), &sharing.demand(&gpus("1")), 1);
        admitted += 1;
        assert!(admitted <= 8, "runaway");
    }
    assert_eq!(admitted, 5);
    // cv's kept room is there at once: no reclaim needed for 3 GPUs.
    assert!(sharing.assess(&state, Some(0), &sharing.demand(&gpus("3"))).fits);
    assert!(!sharing.assess(&state, Some(0), &sharing.demand(&gpus("4"))).fits);
}

#[test]
fn a_grouping_queue_without_a_guarantee_inherits_its_childrens() {
    let specs = vec![
        queue("lab", None, None),
        shared_queue("cv", Some("lab"), Some(&[(GPU, "4")]), None),
        shared_queue("nlp", Some("lab"), Some(&[(GPU, "2")]), None),
        queue("guests", None, None),
    ];
    let sharing = build(&specs, "8");
    let mut state = sharing.empty_state();
    // cv at 5 borrows from nlp inside the lab; the lab stays within its (inherited) 6.
    sharing.add(&mut state, Some(1), &sharing.demand(&gpus("4")), 1);
    let a = sharing.assess(&state, Some(1), &sharing.demand(&gpus("1")));
    assert!(a.fits && a.borrowing);
    let lab = sharing.queue_use(&state, 0);
    assert_eq!(lab.guarantee, gpus("6"));
    assert_eq!(lab.borrowed, gpus("0"));
}

#[test]
fn incremental_updates_equal_a_fresh_computation() {
    let specs = vec![
        queue("lab", None, None),
        shared_queue("cv", Some("lab"), Some(&[(GPU, "4")]), Some(&[(GPU, "1")])),
        shared_queue("nlp", Some("lab"), Some(&[(GPU, "2")]), None),
        shared_queue("ops", None, Some(&[(GPU, "1"), ("cpu", "4")]), Some(&[("cpu", "0")])),
    ];
    let tree = QueueTree::new(&specs).expect("valid");
    let sharing = SharingTree::new(&specs, &tree, &[node("n1", &[("cpu", "16"), (GPU, "8")])]).expect("on");
    let jobs: Vec<(Option<QueueIdx>, ResourceList)> = vec![
        (Some(1), gpus("2")),
        (Some(2), rl(&[(GPU, "3"), ("cpu", "2")])),
        (Some(0), gpus("1")),
        (None, rl(&[("cpu", "3")])),
        (Some(3), rl(&[("cpu", "1")])),
        (Some(1), gpus("3")),
    ];
    let mut incremental = sharing.empty_state();
    for (i, (q, req)) in jobs.iter().enumerate() {
        sharing.add(&mut incremental, *q, &sharing.demand(req), 1);
        let fresh = sharing.state(jobs[..=i].iter().map(|(q, r)| (*q, r)));
        assert_eq!(incremental, fresh, "after job {i}");
    }
    // Releasing in any order comes back to nothing.
    for (q, req) in jobs.iter().rev() {
        sharing.add(&mut incremental, *q, &sharing.demand(req), -1);
    }
    assert_eq!(incremental, sharing.empty_state());
}

#[test]
fn within_guarantee_counts_usage_before_the_job() {
    let (_, sharing) = two_teams();
    let mut state = sharing.empty_state();
    assert!(sharing.within_guarantee(&state, Some(0), &sharing.demand(&gpus("4"))));
    sharing.add(&mut state, Some(0), &sharing.demand(&gpus("3")), 1);
    assert!(sharing.within_guarantee(&state, Some(0), &sharing.demand(&gpus("1"))));
    assert!(!sharing.within_guarantee(&state, Some(0), &sharing.demand(&gpus("2"))));
}

#[test]
fn a_parents_own_job_does_not_fit_room_its_child_keeps() {
    // The lab guarantees 4 and its child keeps all 4 (lends nothing): a job of the lab itself
    // holds room beyond the lab's guarantee, so it borrows, and the lab's queue shows it.
    let specs = vec![
        shared_queue("lab", None, Some(&[(GPU, "4")]), None),
        shared_queue("cv", Some("lab"), Some(&[(GPU, "4")]), Some(&[(GPU, "0")])),
        queue("other", None, None),
    ];
    let sharing = build(&specs, "8");
    let mut state = sharing.empty_state();
    let one = sharing.demand(&gpus("1"));
    assert!(sharing.assess(&state, Some(0), &one).borrowing);
    assert!(!sharing.within_guarantee(&state, Some(0), &one));
    sharing.add(&mut state, Some(0), &one, 1);
    assert_eq!(
        sharing.queue_use(&state, 0).borrowed,
        gpus("1"),
        "{state:?} {sharing:?}"
    );
    assert_eq!(
        sharing.borrowed_by(&sharing.empty_state(), Some(0), &one),
        vec![(Some(0), vec![(0, 1000)])]
    );
    // The child's own job is within: the room is its own.
    assert!(!sharing.assess(&sharing.empty_state(), Some(1), &one).borrowing);
}

//! `spec/prequeue.md` §5 step 4 re-stated deliberately naively, with plain `ResourceList`
//! arithmetic and linear scans: the reference the property tests (`props.rs`) hold the
//! interned, optimised round against, in both activation orders.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};

use anteroom_shared::scheduling::{JobPhase, ResourceList, ScheduleType, domain_blocks};

use super::fixtures::t0;

use crate::prequeue::queue_tree::QueueTree;
use crate::prequeue::snapshot::{JobId, JobSnapshot, Snapshot, UserId};

/// The time every generated snapshot is judged at.
pub(super) fn now() -> DateTime<Utc> {
    t0() + Duration::seconds(100)
}

/// Usage of a (user, queue) from the rows.
pub(super) fn row_usage(s: &Snapshot, owner: UserId, queue: &str) -> (ResourceList, u32) {
    s.usage
        .iter()
        .find(|r| r.owner == owner && r.queue == queue)
        .map(|r| (r.resources.clone(), r.active_jobs))
        .unwrap_or_default()
}

/// All users' usage in `queue` and its descendants.
pub(super) fn subtree_usage(s: &Snapshot, tree: &QueueTree, queue: &str) -> ResourceList {
    let mut total = ResourceList::new();
    for row in &s.usage {
        if tree.path_of(&row.queue).iter().any(|&q| tree.name(q) == queue) {
            total = total.checked_add(&row.resources).expect("small");
        }
    }
    total
}

/// §1: a prequeued normal job held by its owner's own quota or `maxActiveJobs` (usage from the
/// rows, no selections: the start of the round) is held privately.
pub(super) fn held_privately(s: &Snapshot, job: &JobSnapshot) -> bool {
    if job.schedule_type != ScheduleType::Normal || !s.config.queue_quota_enabled {
        return false;
    }
    let Some(rule) = s.quotas.iter().find(|q| q.queue == job.queue) else {
        return false;
    };
    let (used, active) = row_usage(s, job.owner, &job.queue);
    used.checked_add(&job.resources).expect("small").exceeds(&rule.limits)
        || rule.max_active_jobs.is_some_and(|max| active >= max)
}

pub(super) fn blocked(s: &Snapshot, job: &JobSnapshot) -> bool {
    if !s.config.blocking_enabled() {
        return false;
    }
    let domain = job.resources.domain();
    let timed_out = job.is_timed_out(now());
    s.jobs.iter().any(|b| {
        b.id != job.id
            && b.queue == job.queue
            && b.is_timed_out(now())
            && (b.phase == JobPhase::Pending || (b.phase == JobPhase::Prequeue && !timed_out && !held_privately(s, b)))
            && domain_blocks(&b.resources.domain(), &domain)
            && b.explicit_nodes.overlaps(&job.explicit_nodes)
    })
}

/// This round's selections so far: per (owner, queue) their sum and count, per queue the sum
/// of the selections in it and below it (normal jobs only: backfill never counts).
#[derive(Default)]
pub(super) struct Selections {
    pair: HashMap<(UserId, String), (ResourceList, u32)>,
    queue: HashMap<String, ResourceList>,
}

impl Selections {
    pub(super) fn record(&mut self, tree: &QueueTree, job: &JobSnapshot) {
        if job.schedule_type != ScheduleType::Normal {
            return;
        }
        let entry = self.pair.entry((job.owner, job.queue.clone())).or_default();
        entry.0 = entry.0.checked_add(&job.resources).expect("small");
        entry.1 += 1;
        for &q in tree.path_of(&job.queue) {
            let e = self.queue.entry(tree.name(q).to_owned()).or_default();
            *e = e.checked_add(&job.resources).expect("small");
        }
    }

    pub(super) fn of_pair(&self, owner: UserId, queue: &str) -> (ResourceList, u32) {
        self.pair.get(&(owner, queue.to_owned())).cloned().unwrap_or_default()
    }
}

/// §5 step 4's rules for one prequeued job given this round's selections so far: backfill held
/// while disabled; quota, `maxActiveJobs`, capacity at every level of the path; blockers.
pub(super) fn eligible(s: &Snapshot, tree: &QueueTree, job: &JobSnapshot, sel: &Selections) -> bool {
    let normal = job.schedule_type == ScheduleType::Normal;
    if !normal && !s.config.backfill_enabled {
        return false;
    }
    if normal && s.config.queue_quota_enabled {
        if let Some(rule) = s.quotas.iter().find(|q| q.queue == job.queue) {
            let (used, active) = row_usage(s, job.owner, &job.queue);
            let (mine, count) = sel.of_pair(job.owner, &job.queue);
            let total = used
                .checked_add(&mine)
                .and_then(|t| t.checked_add(&job.resources))
                .expect("small");
            if total.exceeds(&rule.limits) {
                return false;
            }
            if rule.max_active_jobs.is_some_and(|max| active + count >= max) {
                return false;
            }
        }
        for &q in tree.path_of(&job.queue) {
            let Some(cap) = tree.capacity(q) else { continue };
            let name = tree.name(q);
            let theirs = sel.queue.get(name).cloned().unwrap_or_default();
            let total = subtree_usage(s, tree, name)
                .checked_add(&theirs)
                .and_then(|t| t.checked_add(&job.resources))
                .expect("small");
            if total.exceeds(cap) {
                return false;
            }
        }
    }
    !blocked(s, job)
}

/// The prequeued jobs in (submittedAt, id) order.
pub(super) fn prequeued(s: &Snapshot) -> Vec<&JobSnapshot> {
    let mut cands: Vec<&JobSnapshot> = s.jobs.iter().filter(|j| j.phase == JobPhase::Prequeue).collect();
    cands.sort_by_key(|j| (j.submitted_at, j.id));
    cands
}

/// §5 step 4 as written, FCFS, with plain resource-list arithmetic.
pub(super) fn naive_fcfs(s: &Snapshot) -> Vec<JobId> {
    let tree = QueueTree::new_lenient(&s.queues);
    let mut sel = Selections::default();
    let mut selected = Vec::new();
    for job in prequeued(s) {
        if selected.len() >= s.config.round_limit() {
            break;
        }
        if eligible(s, &tree, job, &sel) {
            sel.record(&tree, job);
            selected.push(job.id);
        }
    }
    selected
}

/// A dominant share as an exact fraction (numerator, denominator > 0).
pub(super) type Share = (i128, i128);

pub(super) fn share_lt(a: Share, b: Share) -> bool {
    a.0 * b.1 < b.0 * a.1
}

/// §5 step 4 with `activationOrder = fairShare`, as written and slowly: at each step look at
/// every eligible job; its (queue, owner) pair's dominant share is the maximum over resources
/// of the owner's normal usage in that queue plus this round's normal selections of the pair,
/// divided by the queue's capacity or, for a resource the capacity does not name, by the
/// allocatable total of every node (a zero divisor leaves the resource out); take the lowest
/// share, ties by the oldest job (which is the pair's oldest eligible job, since each pair's
/// jobs go in submission order). Shares are compared as exact fractions.
pub(super) fn naive_drf(s: &Snapshot) -> Vec<JobId> {
    let tree = QueueTree::new_lenient(&s.queues);
    let mut cluster = ResourceList::new();
    for n in &s.nodes {
        cluster = cluster.checked_add(&n.allocatable).expect("small");
    }
    let share = |sel: &Selections, owner: UserId, queue: &str| -> Share {
        let capacity = tree.index_of(queue).and_then(|q| tree.capacity(q));
        let (used, _) = row_usage(s, owner, queue);
        let used = used.checked_add(&sel.of_pair(owner, queue).0).expect("small");
        let mut best: Share = (0, 1);
        for (name, value) in used.iter() {
            let divisor = match capacity.and_then(|c| c.get_named(name)) {
                Some(named) => named.milli(),
                None => cluster.get(name).milli(),
            };
            if divisor > 0 && share_lt(best, (value.milli().max(0), divisor)) {
                best = (value.milli().max(0), divisor);
            }
        }
        best
    };
    let cands = prequeued(s);
    let mut sel = Selections::default();
    let mut taken: HashSet<JobId> = HashSet::new();
    let mut selected = Vec::new();
    while selected.len() < s.config.round_limit() {
        let mut next: Option<(Share, &JobSnapshot)> = None;
        for job in &cands {
            if taken.contains(&job.id) || !eligible(s, &tree, job, &sel) {
                continue;
            }
            let mine = share(&sel, job.owner, &job.queue);
            // Candidates come oldest first: a later job wins only with a strictly lower share.
            if next.is_none_or(|(best, _)| share_lt(mine, best)) {
                next = Some((mine, job));
            }
        }
        let Some((_, job)) = next else { break };
        sel.record(&tree, job);
        taken.insert(job.id);
        selected.push(job.id);
    }
    selected
}

//! The forecast re-stated naively, for the property tests: the consideration order by exact
//! fractions and linear scans, and a step simulator that advances one second at a time and
//! recomputes every usage from scratch from the simulated jobs' states, with plain
//! `ResourceList` arithmetic. Nothing here shares code with the module under test.

use std::collections::HashMap;

use anteroom_shared::scheduling::{ActivationOrder, JobPhase, ResourceList, ScheduleType};
use chrono::{DateTime, Duration, Utc};

use crate::prequeue::queue_tree::QueueTree;
use crate::prequeue::snapshot::{JobId, JobSnapshot, Snapshot, UserId};

/// A share as an exact fraction (numerator, denominator > 0).
type Share = (i128, i128);

fn lower(a: Share, b: Share) -> bool {
    a.0 * b.1 < b.0 * a.1
}

fn sum<'a>(lists: impl IntoIterator<Item = &'a ResourceList>) -> ResourceList {
    let mut total = ResourceList::new();
    for list in lists {
        total = total.checked_add(list).expect("small");
    }
    total
}

/// Every `Prequeue` job in (submittedAt, id) order, or, under fair share: repeatedly the
/// oldest remaining job of the (owner, queue) pair with the lowest dominant share (the
/// owner's normal usage from the rows plus the normal jobs taken so far, over the queue's
/// capacity where it names the resource, else over every node's allocatable total; a zero
/// divisor leaves the resource out), ties to the oldest job.
pub(crate) fn naive_order(s: &Snapshot) -> Vec<JobId> {
    let mut jobs: Vec<&JobSnapshot> = s.jobs.iter().filter(|j| j.phase == JobPhase::Prequeue).collect();
    jobs.sort_by_key(|j| (j.submitted_at, j.id));
    if s.config.activation_order == ActivationOrder::Fcfs {
        return jobs.iter().map(|j| j.id).collect();
    }
    let tree = QueueTree::new_lenient(&s.queues);
    let cluster = sum(s.nodes.iter().map(|n| &n.allocatable));
    let mut taken: Vec<&JobSnapshot> = Vec::new();
    let share = |taken: &[&JobSnapshot], owner: UserId, queue: &str| -> Share {
        let capacity = tree.index_of(queue).and_then(|q| tree.capacity(q));
        let rows = s.usage.iter().filter(|r| r.owner == owner && r.queue == queue);
        let mine = taken
            .iter()
            .filter(|j| j.owner == owner && j.queue == queue && j.schedule_type == ScheduleType::Normal);
        let used = sum(rows.map(|r| &r.resources).chain(mine.map(|j| &j.resources)));
        let mut best: Share = (0, 1);
        for (name, value) in used.iter() {
            let divisor = match capacity.and_then(|c| c.get_named(name)) {
                Some(named) => named.milli(),
                None => cluster.get(name).milli(),
            };
            let candidate = (value.milli().max(0), divisor);
            if divisor > 0 && lower(best, candidate) {
                best = candidate;
            }
        }
        best
    };
    while taken.len() < jobs.len() {
        let mut next: Option<(Share, &JobSnapshot)> = None;
        for job in jobs.iter().filter(|j| !taken.iter().any(|t| t.id == j.id)) {
            let mine = share(&taken, job.owner, &job.queue);
            // Oldest first: a later job wins only with a strictly lower share.
            if next.is_none_or(|(best, _)| lower(mine, best)) {
                next = Some((mine, job));
            }
        }
        let (_, job) = next.expect("a job remains");
        taken.push(job);
    }
    taken.iter().map(|j| j.id).collect()
}

/// A job's state in the step simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    /// Occupying until the end, if it has one.
    Occupying(Option<DateTime<Utc>>),
    Gone,
}

/// Whether `job` could start given the states of all jobs: backfill allowed; the room (every
/// ready, schedulable node's allocatable summed, less every occupying job, on each resource
/// the job requests that those nodes name); and with quotas on for a normal job, its queue's
/// first rule for its owner and every capacity up its path (occupying normal jobs only).
fn fits(s: &Snapshot, tree: &QueueTree, states: &[State], job: &JobSnapshot) -> bool {
    let normal = job.schedule_type == ScheduleType::Normal;
    if !normal && !s.config.backfill_enabled {
        return false;
    }
    let occupying: Vec<&JobSnapshot> = s
        .jobs
        .iter()
        .zip(states)
        .filter(|(_, st)| matches!(st, State::Occupying(_)))
        .map(|(j, _)| j)
        .collect();
    let room = sum(s
        .nodes
        .iter()
        .filter(|n| n.ready && n.schedulable)
        .map(|n| &n.allocatable));
    let used = sum(occupying.iter().map(|j| &j.resources));
    for (name, need) in job.resources.iter() {
        if let Some(have) = room.get_named(name)
            && need.is_positive()
            && used.get(name).milli() + need.milli() > have.milli()
        {
            return false;
        }
    }
    if !normal || !s.config.queue_quota_enabled {
        return true;
    }
    let normal_jobs = || occupying.iter().filter(|j| j.schedule_type == ScheduleType::Normal);
    if let Some(rule) = s.quotas.iter().find(|q| q.queue == job.queue) {
        let mine: Vec<&&JobSnapshot> = normal_jobs()
            .filter(|j| j.owner == job.owner && j.queue == job.queue)
            .collect();
        let total = sum(mine.iter().map(|j| &j.resources).chain([&job.resources]));
        if total.exceeds(&rule.limits) || rule.max_active_jobs.is_some_and(|max| mine.len() as u32 >= max) {
            return false;
        }
    }
    for &q in tree.path_of(&job.queue) {
        let Some(capacity) = tree.capacity(q) else {
            continue;
        };
        let inside = normal_jobs().filter(|j| tree.path_of(&j.queue).contains(&q));
        let total = sum(inside.map(|j| &j.resources).chain([&job.resources]));
        if total.exceeds(capacity) {
            return false;
        }
    }
    true
}

/// The start of every `Prequeue` job in [`naive_order`], by stepping one second at a time
/// from `now` to `now + horizon` seconds: at each second, occupying jobs whose end has come
/// leave, then the waiting jobs are tried in order and each that fits starts then. It stops
/// early when nothing waits or no occupying job has a known end. An occupying job ends at
/// `startedAt` (else `now`) plus its limit, and not before `now`.
pub(crate) fn naive_forecast(s: &Snapshot, now: DateTime<Utc>, horizon: i64) -> Vec<(JobId, Option<DateTime<Utc>>)> {
    naive_forecast_in_order(s, now, horizon, &naive_order(s))
}

/// [`naive_forecast`] in a given consideration `order` (every `Prequeue` job once): the
/// time-aware backfill property keeps the order of the forecast its estimates came from.
pub(crate) fn naive_forecast_in_order(
    s: &Snapshot,
    now: DateTime<Utc>,
    horizon: i64,
    order: &[JobId],
) -> Vec<(JobId, Option<DateTime<Utc>>)> {
    let tree = QueueTree::new_lenient(&s.queues);
    let mut states: Vec<State> = s
        .jobs
        .iter()
        .map(|j| match j.phase {
            JobPhase::Prequeue => State::Waiting,
            JobPhase::Activating | JobPhase::Pending | JobPhase::Running => State::Occupying(
                j.max_runtime_seconds
                    .map(|limit| (j.started_at.unwrap_or(now) + Duration::seconds(limit)).max(now)),
            ),
            _ => State::Gone,
        })
        .collect();
    let mut started: HashMap<JobId, DateTime<Utc>> = HashMap::new();
    for second in 0..=horizon {
        let t = now + Duration::seconds(second);
        for state in states.iter_mut() {
            if matches!(state, State::Occupying(Some(end)) if *end <= t) {
                *state = State::Gone;
            }
        }
        for id in order {
            let i = s.jobs.iter().position(|j| j.id == *id).expect("listed");
            if states[i] == State::Waiting && fits(s, &tree, &states, &s.jobs[i]) {
                let limit = s.jobs[i].max_runtime_seconds;
                states[i] = State::Occupying(limit.map(|l| t + Duration::seconds(l)));
                started.insert(*id, t);
            }
        }
        let waiting = states.contains(&State::Waiting);
        let ending = states.iter().any(|st| matches!(st, State::Occupying(Some(_))));
        if !waiting || !ending {
            break;
        }
    }
    order.iter().map(|id| (*id, started.get(id).copied())).collect()
}

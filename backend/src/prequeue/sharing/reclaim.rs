//! Reclaim (`spec/prequeue.md` §9): room a queue is guaranteed, taken back from jobs of other
//! queues that borrowed it.
//!
//! A `Prequeue` normal job is owed room when admitting it keeps every queue of its path within
//! its guarantee, its owner's quota does not hold it, and it has waited `reclaimDelaySeconds`
//! for shared room: then what holds it — the cluster's room, or a capacity on its path that
//! borrowers fill — is freed. Its victims are
//! *borrowing* running jobs — those beyond their queue's guarantee when running jobs fill
//! guarantees in the order they started — of other subtrees, unlocked, that have run for the
//! lender's `reclaimMinRuntimeSeconds`: the fewest that free the room (on one node when the
//! job asks for one node and one node can do it), newest first among equals.
//!
//! A queue that says `preemptWithinQueue: lowerPriority` also lets a waiting job take the room
//! of its own queue's running jobs of a lower priority, with the same rules (unlocked, the
//! queue's minimum runtime, fewest, lowest priority then newest first) — when reclaim finds
//! nothing. Only for a job a cap or a guarantee holds in the prequeue: one admitted into a
//! full cluster waits in Volcano, which does not know Anteroom's priorities and could give the
//! freed room to another job.

use chrono::{DateTime, Duration, Utc};

use super::{SharedDemand, SharingState, SharingTree};
use crate::prequeue::preemption::has_run_long_enough;
use crate::prequeue::queue_tree::{QueueIdx, QueueTree};
use crate::prequeue::quota::QuotaView;
use crate::prequeue::snapshot::{JobId, JobSnapshot, NodeSnapshot, Snapshot};
use anteroom_shared::scheduling::{JobPhase, PreemptWithinQueue, ResourceList, ScheduleType, TaskResources};

/// Why a plan's victims go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakeKind {
    /// They borrow room the beneficiary's queue is guaranteed (§9 reclaim).
    Reclaim,
    /// They have a lower priority in the beneficiary's own queue, which says
    /// `preemptWithinQueue: lowerPriority`.
    Priority,
}

/// Jobs to preempt for one waiting job: borrowers of its guaranteed room, or lower-priority
/// jobs of its own queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReclaimPlan {
    /// The job the room is for.
    pub beneficiary: JobId,
    /// Its queue.
    pub queue: String,
    /// The jobs to preempt, in id order.
    pub victims: Vec<JobId>,
    /// Where the victims run: the one node when they share one, else the first victim's first.
    pub node: String,
    /// Why they go.
    pub kind: TakeKind,
}

/// The most plans one round makes (each is one fenced write and a few deletes).
pub const MAX_RECLAIMS_PER_ROUND: usize = 10;

/// The most waiting jobs short of room one round looks for victims for, oldest first.
pub const MAX_EXAMINED_PER_ROUND: usize = 100;

/// Tasks by job id, read by the watcher: of the waiting gangs (jobs on more than one node) —
/// reclaim takes victims for a gang only when the gang can be placed once they are gone (§9) —
/// and of the victims on several nodes, whose room per node is known only through their tasks
/// (see `victims::frees`). The snapshot does not carry tasks for every job.
pub type GangTasks = std::collections::HashMap<JobId, Vec<TaskResources>>;

/// The reclaims (and, where a queue allows it, preemptions by priority) of one round, oldest
/// waiting job first; each plan's victims are released and its beneficiary counted before the
/// next is planned, so no room is promised twice.
///
/// `allowed`: the waiting jobs nothing but room holds — no blocker, no private hold, not
/// left over by the round limit — as the round at hand says (the watcher passes its round's
/// answer; `None`: every job). A job a blocker holds would not start even with the room freed,
/// and the room would go to someone else.
///
/// `gangs`: the tasks of the waiting gangs; a gang missing from it gets no plan. `None` plans
/// gangs without checking their placement — only a probe asking whether any reclaim may be
/// due may pass it.
pub fn plan_reclaims(
    snapshot: &Snapshot,
    now: DateTime<Utc>,
    allowed: Option<&std::collections::HashSet<JobId>>,
    gangs: Option<&GangTasks>,
) -> Vec<ReclaimPlan> {
    let config = &snapshot.config;
    if !config.queue_quota_enabled {
        return Vec::new();
    }
    let by_priority = snapshot
        .queues
        .iter()
        .any(|q| q.sharing.preempt_within_queue == PreemptWithinQueue::LowerPriority);
    let tree = QueueTree::new_lenient(&snapshot.queues);
    let model = SharingTree::build(&snapshot.queues, &tree, &snapshot.nodes);
    if model.resources().is_empty() && !by_priority {
        return Vec::new();
    }
    // Quota checks see the jobs planned for earlier in this round as occupying: one owner's two
    // waiting jobs must not both get victims when the quota admits one.
    let mut planned = Snapshot {
        config: config.clone(),
        queues: snapshot.queues.clone(),
        quotas: snapshot.quotas.clone(),
        usage: snapshot.usage.clone(),
        ..Snapshot::default()
    };
    let mut state = model.state(
        snapshot
            .usage
            .iter()
            .map(|row| (tree.index_of(&row.queue), &row.resources)),
    );
    // What occupies each queue itself (all resources), for the capacities on a path.
    let mut own: Vec<ResourceList> = vec![ResourceList::new(); tree.len()];
    for row in &snapshot.usage {
        if let Some(q) = tree.index_of(&row.queue) {
            own[q].saturating_add_assign(&row.resources);
        }
    }
    let mut candidates: Vec<Borrower<'_>> = borrowers(snapshot, &tree, &model)
        .into_iter()
        .filter(|b| !b.job.is_locked(now))
        .map(|b| Borrower {
            frees: victims::frees(b.job, gangs),
            ..b
        })
        .collect();
    // The nodes as this round's plans leave them. A node whose room an earlier plan reserves
    // while its victims terminate offers none of its free room (as the §5 planner does); each
    // plan's victims add theirs, and its beneficiary takes what it will use.
    let mut nodes: Vec<NodeSnapshot> = snapshot.nodes.clone();
    for reserved in snapshot.preemptions_in_flight.iter().filter(|p| p.is_active()) {
        if let Some(node) = nodes.iter_mut().find(|n| n.name == reserved.node) {
            node.free = ResourceList::new();
        }
    }
    let mut taken: Vec<JobId> = Vec::new();
    let delay = Duration::seconds(config.reclaim_delay_seconds.max(0));
    let mut waiting: Vec<&JobSnapshot> = snapshot
        .jobs
        .iter()
        .filter(|j| j.phase == JobPhase::Prequeue && j.schedule_type == ScheduleType::Normal)
        .filter(|j| allowed.is_none_or(|a| a.contains(&j.id)))
        .filter(|j| j.waiting_since.is_some_and(|since| since + delay <= now))
        .filter(|j| {
            !snapshot
                .preemptions_in_flight
                .iter()
                .any(|p| p.beneficiary == j.id && p.is_active())
        })
        .collect();
    waiting.sort_unstable_by_key(|j| (j.submitted_at, j.id));
    let mut plans = Vec::new();
    let mut examined = 0_usize;
    for job in waiting {
        if plans.len() >= MAX_RECLAIMS_PER_ROUND {
            break;
        }
        let Some(queue) = tree.index_of(&job.queue) else {
            continue;
        };
        let gang = match gangs {
            Some(tasks) if !job.single_node => match tasks.get(&job.id) {
                Some(tasks) => Some(tasks.as_slice()),
                None => continue,
            },
            _ => None,
        };
        let demand = model.demand(&job.resources);
        let assessment = model.assess(&state, Some(queue), &demand);
        let need = Need {
            pool: assessment.shortfall.clone(),
            capacity: capacity_deficits(&tree, &own, queue, &job.resources),
        };
        if need.is_met() {
            continue;
        }
        // The oldest jobs short of room are examined, a bounded number a round: a backlog of
        // jobs no victim can help must not make every round walk all of them.
        examined += 1;
        if examined > MAX_EXAMINED_PER_ROUND {
            break;
        }
        // Its owner's own quota holds it privately: nothing taken from others can help.
        if QuotaView::new(&planned, &tree).holds_privately(job.owner, &job.queue, &job.resources) {
            continue;
        }
        let ask = Ask {
            model: &model,
            tree: &tree,
            state: &state,
            queue,
            demand: &demand,
            need: &need,
            job,
            gang,
            nodes: &nodes,
        };
        // Owed room first: borrowers of other subtrees that ran the lender's minimum.
        let mut chosen: Option<Picked<'_, '_>> = None;
        if assessment.owed() && !demand.is_empty() {
            let min_runtime = model.reclaim_min_runtime(Some(queue));
            let eligible: Vec<&Borrower<'_>> = candidates
                .iter()
                .filter(|b| !model.is_within(b.queue, Some(queue)))
                .filter(|b| has_run_long_enough(b.job.started_at, min_runtime, now))
                .collect();
            chosen = choose(&ask, &eligible)
                .map(|c| (TakeKind::Reclaim, c.place, c.set.iter().map(|&i| eligible[i]).collect()));
        }
        // Else, where the queue allows it, its own jobs of a lower priority.
        let allows = snapshot
            .queues
            .iter()
            .find(|q| q.name == job.queue)
            .is_some_and(|q| q.sharing.preempt_within_queue == PreemptWithinQueue::LowerPriority);
        // A job that says `preemptionPolicy: Never` preempts nobody (§1); reclaim is the
        // lender's right, not the job's, and does not ask it.
        let allows = allows && job.preemption_policy != anteroom_shared::scheduling::PreemptionPolicy::Never;
        let lower: Vec<Borrower<'_>>;
        if chosen.is_none() && allows {
            let min_runtime = model.own_min_runtime(queue);
            lower = snapshot
                .jobs
                .iter()
                .filter(|v| v.queue == job.queue && v.schedule_type == ScheduleType::Normal)
                .filter(|v| matches!(v.phase, JobPhase::Running | JobPhase::Pending) && !v.is_locked(now))
                .filter(|v| v.sharing.priority < job.sharing.priority && !taken.contains(&v.id))
                .filter(|v| has_run_long_enough(v.started_at, min_runtime, now))
                .map(|v| Borrower {
                    job: v,
                    queue: Some(queue),
                    demand: model.demand(&v.resources),
                    frees: victims::frees(v, gangs),
                })
                .collect::<Vec<_>>();
            let mut eligible: Vec<&Borrower<'_>> = lower.iter().collect();
            // Lowest priority first, newest first among equals.
            eligible.sort_by_key(|b| (b.job.sharing.priority, std::cmp::Reverse((b.job.started_at, b.job.id))));
            chosen = choose(&ask, &eligible).map(|c| {
                (
                    TakeKind::Priority,
                    c.place,
                    c.set.iter().map(|&i| eligible[i]).collect(),
                )
            });
        }
        let Some((kind, place, victims)) = chosen else {
            continue;
        };
        for victim in &victims {
            model.add(&mut state, victim.queue, &victim.demand, -1);
            if let Some(q) = victim.queue {
                own[q] = own[q].left_after(&victim.job.resources);
            }
            for (name, room) in &victim.frees {
                if let Some(node) = nodes.iter_mut().find(|n| &n.name == name) {
                    node.free.saturating_add_assign(room);
                }
            }
        }
        for (name, used) in &place {
            if let Some(node) = nodes.iter_mut().find(|n| &n.name == name) {
                node.free = node.free.left_after(used);
            }
        }
        model.add(&mut state, Some(queue), &demand, 1);
        own[queue].saturating_add_assign(&job.resources);
        planned.usage.push(crate::prequeue::snapshot::UsageRow {
            owner: job.owner,
            queue: job.queue.clone(),
            resources: job.resources.clone(),
            active_jobs: 1,
        });
        let mut ids: Vec<JobId> = victims.iter().map(|v| v.job.id).collect();
        ids.sort_unstable();
        let node = common_node(&victims);
        taken.extend(&ids);
        candidates.retain(|b| !ids.contains(&b.job.id));
        plans.push(ReclaimPlan {
            beneficiary: job.id,
            queue: job.queue.clone(),
            victims: ids,
            node,
            kind,
        });
    }
    plans
}

/// A plan's kind, where its beneficiary goes, and its victims.
type Picked<'b, 's> = (TakeKind, Vec<(String, ResourceList)>, Vec<&'b Borrower<'s>>);

/// What must be freed for a job owed room: the cluster's room per shared column, and per
/// capacity on its path that its request would pass, (level, resource, excess).
#[derive(Debug)]
struct Need {
    pool: Vec<i128>,
    capacity: Vec<(QueueIdx, String, i128)>,
}

impl Need {
    fn is_met(&self) -> bool {
        self.pool.iter().all(|v| *v <= 0) && self.capacity.is_empty()
    }
}

/// One owed job's question to [`choose`].
struct Ask<'a> {
    model: &'a SharingTree,
    tree: &'a QueueTree,
    state: &'a SharingState,
    queue: QueueIdx,
    demand: &'a SharedDemand,
    need: &'a Need,
    /// The job the room is for (where it may run).
    job: &'a JobSnapshot,
    /// Its tasks, when it is a gang whose placement must be checked.
    gang: Option<&'a [TaskResources]>,
    nodes: &'a [NodeSnapshot],
}

/// Per capped queue on `queue`'s path: each resource its capacity names that the subtree's
/// usage plus `request` passes, and by how much.
fn capacity_deficits(
    tree: &QueueTree,
    own: &[ResourceList],
    queue: QueueIdx,
    request: &ResourceList,
) -> Vec<(QueueIdx, String, i128)> {
    let mut out = Vec::new();
    for &level in tree.path(queue) {
        let Some(capacity) = tree.capacity(level) else {
            continue;
        };
        for (name, cap) in capacity.iter() {
            let used: i128 = (0..tree.len())
                .filter(|&q| tree.path(q).contains(&level))
                .map(|q| own[q].get(name).milli())
                .sum();
            let excess = used.saturating_add(request.get(name).milli()) - cap.milli();
            if excess > 0 && request.get(name).milli() > 0 {
                out.push((level, name.to_owned(), excess));
            }
        }
    }
    out
}

/// When room owed to a job of one queue can be taken back (`reclaiming`'s `reclaimAt` and
/// `nothingToTake`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReclaimOutlook {
    /// No job of another subtree borrows: the room frees only as jobs end.
    NothingToTake,
    /// The earliest time some borrower may go — its lock passed and the queue's
    /// `reclaimMinRuntimeSeconds` run (`now` when one may go now).
    From(DateTime<Utc>),
    /// Borrowers exist, but none has a known time (not started, with a minimum runtime).
    Later,
}

/// Per queue of `tree`, its [`ReclaimOutlook`]: one pass over the borrowers for all queues,
/// not one per waiting job.
pub fn reclaim_outlook(
    snapshot: &Snapshot,
    tree: &QueueTree,
    model: &SharingTree,
    now: DateTime<Utc>,
) -> Vec<ReclaimOutlook> {
    let borrowers = borrowers(snapshot, tree, model);
    (0..tree.len())
        .map(|q| {
            let min_runtime = model.reclaim_min_runtime(Some(q)).max(0);
            let mut outlook = ReclaimOutlook::NothingToTake;
            for b in borrowers.iter().filter(|b| !model.is_within(b.queue, Some(q))) {
                let ran = if min_runtime == 0 {
                    Some(now)
                } else {
                    b.job
                        .started_at
                        .and_then(|at| at.checked_add_signed(Duration::seconds(min_runtime)))
                };
                let unlocked = b.job.locked_until.filter(|_| b.job.is_locked(now)).unwrap_or(now);
                outlook = match (outlook, ran.map(|ran| ran.max(unlocked).max(now))) {
                    (ReclaimOutlook::From(t), Some(at)) => ReclaimOutlook::From(t.min(at)),
                    (ReclaimOutlook::From(t), None) => ReclaimOutlook::From(t),
                    (_, Some(at)) => ReclaimOutlook::From(at),
                    (_, None) => ReclaimOutlook::Later,
                };
            }
            outlook
        })
        .collect()
}

/// A running job beyond its queue's guarantee.
#[derive(Debug)]
struct Borrower<'s> {
    job: &'s JobSnapshot,
    queue: Option<QueueIdx>,
    demand: SharedDemand,
    /// The room its release surely frees on each node ([`victims::frees`]).
    frees: Vec<(String, ResourceList)>,
}

/// Running or pending normal jobs that borrow (locked ones too: the caller decides), newest
/// first: jobs fill guarantees in the order they started (then were submitted), and a job that
/// no longer fits its queue's guarantee at some level of its path when its turn comes is a
/// borrower. Jobs occupying without running (starting, ending) count in that order too but are
/// never victims.
fn borrowers<'s>(snapshot: &'s Snapshot, tree: &QueueTree, model: &SharingTree) -> Vec<Borrower<'s>> {
    let mut occupying: Vec<&JobSnapshot> = snapshot
        .jobs
        .iter()
        .filter(|j| j.schedule_type == ScheduleType::Normal && j.phase.is_occupying())
        .collect();
    // Jobs admitted within their guarantee fill it first (a promise made at admission), then
    // borrowers in the order they started.
    occupying.sort_unstable_by_key(|j| {
        (
            j.sharing.borrowing,
            j.started_at.is_none(),
            j.started_at,
            j.submitted_at,
            j.id,
        )
    });
    let mut state = model.empty_state();
    let mut out = Vec::new();
    for job in occupying {
        let queue = tree.index_of(&job.queue);
        let demand = model.demand(&job.resources);
        if demand.is_empty() {
            continue;
        }
        let within = model.within_guarantee(&state, queue, &demand);
        model.add(&mut state, queue, &demand, 1);
        // Only a job told it borrows may be reclaimed, and only while it still does.
        let placed_or_waiting = matches!(job.phase, JobPhase::Running | JobPhase::Pending);
        if !within && job.sharing.borrowing && placed_or_waiting {
            out.push(Borrower {
                job,
                queue,
                demand,
                frees: Vec::new(),
            });
        }
    }
    // Newest first: a job not started yet costs nothing to take back.
    out.sort_unstable_by_key(|b| std::cmp::Reverse((b.job.started_at.is_none(), b.job.started_at, b.job.id)));
    out
}

mod victims;
use victims::{choose, common_node};

#[cfg(test)]
mod tests;

//! Which victims free the room a job waits for, where it can run: the fewest borrowers (or
//! lower-priority jobs) whose release makes it fit the cluster's room and its capacities and,
//! for a job on one node, leaves a node with room for it; for a gang, room to place it.

use super::{Ask, Borrower, GangTasks};
use crate::prequeue::placement::{CapacityKind, place_gang};
use crate::prequeue::preemption::min_cover;
use crate::prequeue::queue_tree::QueueIdx;
use crate::prequeue::snapshot::JobSnapshot;
use anteroom_shared::scheduling::{ResourceList, TaskResources};

/// The victims chosen for a job, and where the job will then run.
pub(super) struct Chosen {
    /// Indices into the eligible victims.
    pub set: Vec<usize>,
    /// Where the job's pods go and what each node gives them: its node for a one-node job,
    /// the gang's placement for a gang; empty when unknown (a probe).
    pub place: Vec<(String, ResourceList)>,
}

/// The room `job`'s release surely frees on each node it runs on: all it holds, for a job on
/// one node. For a job on several nodes the snapshot does not say which pod is where, so only
/// what every pod holds at least is counted on each of its nodes — per resource, the smallest
/// request among its tasks (its tasks from `gangs`; none known: nothing). Never more than it
/// frees there: a gang is never judged placeable on room a victim does not leave.
pub(super) fn frees(job: &JobSnapshot, gangs: Option<&GangTasks>) -> Vec<(String, ResourceList)> {
    if let Some(node) = single_node_of(job) {
        return vec![(node.to_owned(), job.resources.clone())];
    }
    let Some(tasks) = gangs.and_then(|g| g.get(&job.id)) else {
        return Vec::new();
    };
    let tasks: Vec<&TaskResources> = tasks.iter().filter(|t| t.replicas > 0).collect();
    let Some(first) = tasks.first() else {
        return Vec::new();
    };
    let mut least = ResourceList::new();
    for (name, q) in first.requests.iter() {
        let smallest = tasks.iter().map(|t| t.requests.get(name)).min().unwrap_or(q);
        if smallest.is_positive() {
            least.insert(name, smallest);
        }
    }
    let mut names: Vec<&str> = job.nodes.iter().map(String::as_str).filter(|n| !n.is_empty()).collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter().map(|n| (n.to_owned(), least.clone())).collect()
}

/// The fewest victims among `eligible` (newest first) whose release makes the job fit — and,
/// for a job on one node, leaves some node it may run on with room for it once they are gone
/// (its free room plus what the victims there hold); for a gang, leaves the nodes' free room
/// enough to place all its replicas. Among equally few, the newest victims, then the node
/// name.
pub(super) fn choose(ask: &Ask<'_>, eligible: &[&Borrower<'_>]) -> Option<Chosen> {
    if !ask.job.single_node {
        let set = cover(ask, eligible, &[])?;
        let place = match ask.gang {
            Some(tasks) => gang_placement(ask, tasks, set.iter().map(|&i| eligible[i]))?,
            None => Vec::new(),
        };
        return Some(Chosen { set, place });
    }
    let mut best: Option<(Vec<usize>, &str)> = None;
    for node in ask
        .nodes
        .iter()
        .filter(|n| crate::prequeue::placement::node_accepts(n, &ask.job.explicit_nodes, &ask.job.tolerations))
    {
        let short: Vec<(String, i128, &str)> = ask
            .job
            .resources
            .iter()
            .filter(|(_, q)| q.is_positive())
            .filter_map(|(name, q)| {
                let lacking = q.milli() - node.free.get(name).milli();
                (lacking > 0).then(|| (name.to_owned(), lacking, node.name.as_str()))
            })
            .collect();
        let Some(mut set) = cover(ask, eligible, &short) else {
            continue;
        };
        set.sort_unstable();
        let better = match &best {
            None => true,
            Some((b, name)) => (set.len(), &set, node.name.as_str()) < (b.len(), b, *name),
        };
        if better {
            best = Some((set, node.name.as_str()));
        }
    }
    best.map(|(set, node)| Chosen {
        set,
        place: vec![(node.to_owned(), ask.job.resources.clone())],
    })
}

/// The fewest of `pool` (indices into `eligible`, newest first) whose release lets the job
/// fit: the minimum cover of what it needs by each victim's own gain, checked exactly (a
/// lending limit can make gains overlap) and completed newest first when the check fails,
/// then every victim not needed dropped.
fn cover(ask: &Ask<'_>, eligible: &[&Borrower<'_>], short: &[(String, i128, &str)]) -> Option<Vec<usize>> {
    let pool: Vec<usize> = (0..eligible.len()).collect();
    let freed_on = |b: &Borrower<'_>, node: &str, name: &str| {
        b.frees
            .iter()
            .find(|(n, _)| n == node)
            .map_or(0, |(_, room)| room.get(name).milli())
    };
    let in_level = |b: &Borrower<'_>, level: QueueIdx| b.queue.is_some_and(|q| ask.tree.path(q).contains(&level));
    let gains: Vec<Vec<i128>> = pool
        .iter()
        .map(|&i| {
            let b = eligible[i];
            let mut gain = ask.model.release_gain(ask.state, b.queue, &b.demand);
            gain.extend(ask.need.capacity.iter().map(|(level, name, _)| {
                if in_level(b, *level) {
                    b.job.resources.get(name).milli()
                } else {
                    0
                }
            }));
            gain.extend(short.iter().map(|(name, _, node)| freed_on(b, node, name)));
            gain
        })
        .collect();
    let mut want = ask.need.pool.clone();
    want.extend(ask.need.capacity.iter().map(|(_, _, excess)| *excess));
    want.extend(short.iter().map(|(_, lacking, _)| *lacking));
    let fits = |set: &[usize]| {
        let mut after = ask.state.clone();
        for &i in set {
            ask.model.add(&mut after, eligible[i].queue, &eligible[i].demand, -1);
        }
        ask.model.assess(&after, Some(ask.queue), ask.demand).fits
            && ask.need.capacity.iter().all(|(level, name, excess)| {
                let freed: i128 = set
                    .iter()
                    .filter(|&&i| in_level(eligible[i], *level))
                    .map(|&i| eligible[i].job.resources.get(name).milli())
                    .sum();
                freed >= *excess
            })
            && short.iter().all(|(name, lacking, node)| {
                let freed: i128 = set.iter().map(|&i| freed_on(eligible[i], node, name)).sum();
                freed >= *lacking
            })
            && ask
                .gang
                .is_none_or(|tasks| gang_placement(ask, tasks, set.iter().map(|&i| eligible[i])).is_some())
    };
    let mut set: Vec<usize> = min_cover(&gains, &want, pool.len())
        .map(|c| c.indices.iter().map(|&k| pool[k]).collect())
        .unwrap_or_default();
    for &i in &pool {
        if fits(&set) {
            break;
        }
        if !set.contains(&i) {
            set.push(i);
        }
    }
    if !fits(&set) {
        return None;
    }
    // Drop the oldest first: among equals the newest go.
    set.sort_unstable();
    for k in (0..set.len()).rev() {
        let mut without = set.clone();
        without.remove(k);
        if fits(&without) {
            set = without;
        }
    }
    Some(set)
}

/// Where the gang `tasks` goes on the nodes' free room once `victims` are gone — each
/// victim's [`frees`] added back — as (node, what the replica there takes); `None` when it
/// cannot be placed.
fn gang_placement<'v>(
    ask: &Ask<'_>,
    tasks: &[TaskResources],
    victims: impl Iterator<Item = &'v Borrower<'v>>,
) -> Option<Vec<(String, ResourceList)>> {
    let mut nodes = ask.nodes.to_vec();
    for victim in victims {
        for (name, room) in &victim.frees {
            if let Some(node) = nodes.iter_mut().find(|n| &n.name == name) {
                node.free.saturating_add_assign(room);
            }
        }
    }
    let assignments = place_gang(tasks, &ask.job.tolerations, &nodes, CapacityKind::Free).ok()?;
    Some(
        assignments
            .into_iter()
            .map(|a| {
                let request = tasks
                    .iter()
                    .find(|t| t.name == a.task)
                    .map(|t| t.requests.clone())
                    .unwrap_or_default();
                (a.node, request)
            })
            .collect(),
    )
}

/// The one node a job runs on, if exactly one.
fn single_node_of(job: &JobSnapshot) -> Option<&str> {
    let mut names = job.nodes.iter().map(String::as_str).filter(|n| !n.is_empty());
    let first = names.next()?;
    names.all(|n| n == first).then_some(first)
}

pub(super) fn common_node(victims: &[&Borrower<'_>]) -> String {
    victims
        .iter()
        .filter_map(|v| v.job.nodes.iter().find(|n| !n.is_empty()))
        .next()
        .cloned()
        .unwrap_or_default()
}

//! Which victims free the room a job waits for, where it can run: the fewest borrowers (or
//! lower-priority jobs) whose release makes it fit the cluster's room and its capacities and,
//! for a job on one node, leaves a node with room for it; for a gang, room to place it.

use super::{Ask, Borrower};
use crate::prequeue::placement::{CapacityKind, place_gang};
use crate::prequeue::preemption::min_cover;
use crate::prequeue::queue_tree::QueueIdx;
use crate::prequeue::snapshot::{JobSnapshot, NodeSnapshot};
use anteroom_shared::scheduling::{Quantity, TaskResources};

/// The fewest victims among `eligible` (newest first) whose release makes the job fit — and,
/// for a job on one node, leaves some node it may run on with room for it once they are gone
/// (its free room plus what the victims there hold); for a gang, leaves the nodes' free room
/// enough to place all its replicas. Among equally few, the newest victims, then the node
/// name. Indices into `eligible`.
pub(super) fn choose(ask: &Ask<'_>, eligible: &[&Borrower<'_>]) -> Option<Vec<usize>> {
    if !ask.job.single_node {
        return cover(ask, eligible, &[]);
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
    best.map(|(set, _)| set)
}

/// The fewest of `pool` (indices into `eligible`, newest first) whose release lets the job
/// fit: the minimum cover of what it needs by each victim's own gain, checked exactly (a
/// lending limit can make gains overlap) and completed newest first when the check fails,
/// then every victim not needed dropped.
fn cover(ask: &Ask<'_>, eligible: &[&Borrower<'_>], short: &[(String, i128, &str)]) -> Option<Vec<usize>> {
    let pool: Vec<usize> = (0..eligible.len()).collect();
    let on = |b: &Borrower<'_>, node: &str| single_node_of(b.job) == Some(node);
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
            gain.extend(short.iter().map(|(name, _, node)| {
                if on(b, node) {
                    b.job.resources.get(name).milli()
                } else {
                    0
                }
            }));
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
                let freed: i128 = set
                    .iter()
                    .filter(|&&i| on(eligible[i], node))
                    .map(|&i| eligible[i].job.resources.get(name).milli())
                    .sum();
                freed >= *lacking
            })
            && ask
                .gang
                .is_none_or(|tasks| gang_places(ask, tasks, set.iter().map(|&i| eligible[i].job)))
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

/// Whether the gang `tasks` can be placed on the nodes' free room once `victims` are gone.
///
/// A victim's room comes back on the nodes it runs on; the snapshot knows those nodes but not
/// which pods sit where, so a victim on several nodes is credited an equal share on each
/// (rounded down): a gang of unequal tasks may be judged short where it would fit, never the
/// reverse by more than the rounding.
fn gang_places<'s>(ask: &Ask<'_>, tasks: &[TaskResources], victims: impl Iterator<Item = &'s JobSnapshot>) -> bool {
    let mut nodes = ask.nodes.to_vec();
    for victim in victims {
        let on: Vec<&str> = {
            let mut names: Vec<&str> = victim
                .nodes
                .iter()
                .map(String::as_str)
                .filter(|n| !n.is_empty())
                .collect();
            names.sort_unstable();
            names.dedup();
            names
        };
        let Some(share) = i128::try_from(on.len()).ok().filter(|n| *n > 0) else {
            continue;
        };
        for node in nodes.iter_mut().filter(|n| on.contains(&n.name.as_str())) {
            for (name, q) in victim.resources.iter() {
                let part = Quantity::from_milli_saturating(q.milli() / share, q.format_kind());
                let total =
                    Quantity::from_milli_saturating(node.free.get(name).milli() + part.milli(), q.format_kind());
                node.free.insert(name, total);
            }
        }
    }
    place_gang(tasks, &ask.job.tolerations, &nodes, CapacityKind::Free).is_ok()
}

/// Whether some node `job` may run on has the free room for it now.
pub(super) fn room_on_some_node(job: &JobSnapshot, nodes: &[NodeSnapshot]) -> bool {
    nodes.iter().any(|n| {
        crate::prequeue::placement::node_accepts(n, &job.explicit_nodes, &job.tolerations)
            && n.free.covers(&job.resources)
    })
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

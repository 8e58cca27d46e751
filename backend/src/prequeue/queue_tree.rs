//! The queue tree (`spec/prequeue.md` §1): validation and the path of every queue to its root,
//! computed once per snapshot so capacity checks never walk parents per job.

use std::collections::HashMap;

use anteroom_shared::scheduling::{Quantity, ResourceList};
use serde::Serialize;

use super::snapshot::QueueSpec;

/// Why a set of queues does not form a valid tree. Each variant maps to the stable API code
/// returned by [`QueueTreeError::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum QueueTreeError {
    /// Two queues share a name.
    #[error("queue {queue:?} is defined twice")]
    DuplicateQueue {
        /// The repeated name.
        queue: String,
    },
    /// A queue names a parent that does not exist.
    #[error("queue {queue:?} names the unknown parent {parent:?}")]
    ParentNotFound {
        /// The child.
        queue: String,
        /// The missing parent.
        parent: String,
    },
    /// Following parents from this queue comes back to it.
    #[error("queue {queue:?} would be its own ancestor")]
    Cycle {
        /// A queue on the cycle.
        queue: String,
    },
    /// A capacity is above an ancestor's on a resource both name (the nearest ancestor naming
    /// the resource, so a grandparent's bound also holds when the parent leaves it open).
    #[error(
        "capacity of queue {:?} for {} ({}) exceeds {:?}'s ({})",
        .0.queue, .0.resource, .0.capacity, .0.parent, .0.parent_capacity
    )]
    CapacityExceedsParent(Box<CapacityExcess>),
    /// The guarantees of a queue's children together exceed its own on a resource both name
    /// (`spec/prequeue.md` §9): the parent could not honour them all at once.
    #[error(
        "the guarantees of the children of queue {:?} for {} ({}) exceed its own ({})",
        .0.parent, .0.resource, .0.capacity, .0.parent_capacity
    )]
    GuaranteeExceedsParent(Box<CapacityExcess>),
    /// A guarantee above the queue's own capacity on a resource both name: room it could never
    /// use.
    #[error(
        "the guarantee of queue {:?} for {} ({}) exceeds its capacity ({})",
        .0.queue, .0.resource, .0.guarantee, .0.capacity
    )]
    GuaranteeExceedsCapacity(Box<GuaranteeExcess>),
    /// A capacity below zero: no job could ever be admitted under it, and sums against it
    /// would read as room given back. Zero is allowed (it closes the resource to normal jobs).
    #[error("capacity of queue {queue:?} for {resource} ({capacity}) is negative")]
    NegativeCapacity {
        /// The queue.
        queue: String,
        /// The resource.
        resource: String,
        /// The rejected capacity.
        capacity: Quantity,
    },
}

impl QueueTreeError {
    /// The stable API error code (`spec/api.md`, queue tree errors).
    pub fn code(&self) -> &'static str {
        match self {
            QueueTreeError::DuplicateQueue { .. } => "queue_exists",
            QueueTreeError::ParentNotFound { .. } => "parent_not_found",
            QueueTreeError::Cycle { .. } => "queue_cycle",
            QueueTreeError::CapacityExceedsParent { .. } => "capacity_exceeds_parent",
            QueueTreeError::GuaranteeExceedsParent(_) => "guarantee_exceeds_parent",
            QueueTreeError::GuaranteeExceedsCapacity(_) => "guarantee_exceeds_capacity",
            QueueTreeError::NegativeCapacity { .. } => "validation_failed",
        }
    }
}

/// The details of [`QueueTreeError::CapacityExceedsParent`] and, for guarantees, of
/// [`QueueTreeError::GuaranteeExceedsParent`] (`queue` then names the first child, `capacity`
/// the children's sum); boxed: errors stay small.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityExcess {
    /// The child.
    pub queue: String,
    /// The ancestor whose capacity is exceeded.
    pub parent: String,
    /// The resource.
    pub resource: String,
    /// The child's capacity.
    pub capacity: Quantity,
    /// The ancestor's capacity.
    pub parent_capacity: Quantity,
}

/// The details of [`QueueTreeError::GuaranteeExceedsCapacity`] (boxed: errors stay small).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuaranteeExcess {
    /// The queue.
    pub queue: String,
    /// The resource.
    pub resource: String,
    /// Its guarantee.
    pub guarantee: Quantity,
    /// Its capacity (its own, or the nearest ancestor's naming the resource).
    pub capacity: Quantity,
}

/// Index of a queue inside one [`QueueTree`].
pub type QueueIdx = usize;

/// The queues of a snapshot as an indexed tree with precomputed paths.
#[derive(Debug, Clone, Default)]
pub struct QueueTree {
    names: Vec<String>,
    parents: Vec<Option<QueueIdx>>,
    capacities: Vec<Option<ResourceList>>,
    guarantees: Vec<Option<ResourceList>>,
    index: HashMap<String, QueueIdx>,
    /// For each queue: itself, then each ancestor up to the root.
    paths: Vec<Vec<QueueIdx>>,
}

impl QueueTree {
    /// Builds and validates a tree: unique names, known parents, no cycle, no capacity above an
    /// ancestor's. Used to validate admin writes (build the tree with the change applied).
    pub fn new(specs: &[QueueSpec]) -> Result<Self, QueueTreeError> {
        let mut index = HashMap::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            if index.insert(spec.name.clone(), i).is_some() {
                return Err(QueueTreeError::DuplicateQueue {
                    queue: spec.name.clone(),
                });
            }
        }
        let mut parents = Vec::with_capacity(specs.len());
        for spec in specs {
            let parent = match &spec.parent {
                None => None,
                Some(p) => Some(*index.get(p).ok_or_else(|| QueueTreeError::ParentNotFound {
                    queue: spec.name.clone(),
                    parent: p.clone(),
                })?),
            };
            parents.push(parent);
        }
        let mut paths = Vec::with_capacity(specs.len());
        for start in 0..specs.len() {
            match walk_path(start, &parents) {
                Ok(path) => paths.push(path),
                // Name a queue on the cycle, not the one whose walk ran into it.
                Err(on_cycle) => {
                    return Err(QueueTreeError::Cycle {
                        queue: specs[on_cycle].name.clone(),
                    });
                }
            }
        }
        let tree = QueueTree {
            names: specs.iter().map(|s| s.name.clone()).collect(),
            parents,
            capacities: specs.iter().map(|s| s.capacity.clone()).collect(),
            guarantees: specs.iter().map(|s| s.sharing.guarantee.clone()).collect(),
            index,
            paths,
        };
        tree.check_capacities()?;
        tree.check_guarantees()?;
        Ok(tree)
    }

    /// Builds a tree from whatever the store holds, never failing: a duplicate name keeps its
    /// first definition, an unknown parent makes the queue a root, every queue on a cycle
    /// becomes a root, and capacities are not compared. The watcher uses this so one bad row
    /// cannot stop every activation; writes are validated with [`QueueTree::new`].
    ///
    /// Cycles: the queues on one have no well-defined ancestors, and keeping all but one link
    /// would make the result depend on which row comes first, so none of their parent links
    /// is kept (each still has its own capacity). A queue that only leads into a cycle is
    /// intact and keeps its parent: its path ends at the queue where the cycle begins, whose
    /// capacity its jobs still count against.
    pub fn new_lenient(specs: &[QueueSpec]) -> Self {
        let mut kept: Vec<&QueueSpec> = Vec::with_capacity(specs.len());
        let mut index = HashMap::with_capacity(specs.len());
        for spec in specs {
            if !index.contains_key(&spec.name) {
                index.insert(spec.name.clone(), kept.len());
                kept.push(spec);
            }
        }
        let mut parents: Vec<Option<QueueIdx>> = kept
            .iter()
            .map(|s| s.parent.as_ref().and_then(|p| index.get(p).copied()))
            .collect();
        // Find every queue on a cycle first, with all links in place, then cut: cutting while
        // searching would make the outcome depend on row order.
        let mut on_cycle = vec![false; parents.len()];
        for start in 0..parents.len() {
            if let Err(entry) = walk_path(start, &parents) {
                // Once around the cycle from a queue on it.
                let mut queue = entry;
                while let Some(parent) = parents[queue] {
                    on_cycle[queue] = true;
                    if parent == entry {
                        break;
                    }
                    queue = parent;
                }
            }
        }
        for (parent, cut) in parents.iter_mut().zip(&on_cycle) {
            if *cut {
                *parent = None;
            }
        }
        let paths = (0..parents.len())
            .map(|i| walk_path(i, &parents).unwrap_or_else(|_| vec![i]))
            .collect();
        QueueTree {
            names: kept.iter().map(|s| s.name.clone()).collect(),
            parents,
            capacities: kept.iter().map(|s| s.capacity.clone()).collect(),
            guarantees: kept.iter().map(|s| s.sharing.guarantee.clone()).collect(),
            index,
            paths,
        }
    }

    fn check_capacities(&self) -> Result<(), QueueTreeError> {
        for (queue, capacity) in self.capacities.iter().enumerate() {
            let Some(capacity) = capacity else { continue };
            for (resource, value) in capacity.iter() {
                if value.milli() < 0 {
                    return Err(QueueTreeError::NegativeCapacity {
                        queue: self.names[queue].clone(),
                        resource: resource.to_owned(),
                        capacity: value,
                    });
                }
                // The nearest ancestor naming the resource bounds it.
                let bound = self.paths[queue][1..].iter().find_map(|&a| {
                    self.capacities[a]
                        .as_ref()
                        .and_then(|c| c.get_named(resource))
                        .map(|limit| (a, limit))
                });
                if let Some((ancestor, limit)) = bound
                    && value > limit
                {
                    return Err(QueueTreeError::CapacityExceedsParent(Box::new(CapacityExcess {
                        queue: self.names[queue].clone(),
                        parent: self.names[ancestor].clone(),
                        resource: resource.to_owned(),
                        capacity: value,
                        parent_capacity: limit,
                    })));
                }
            }
        }
        Ok(())
    }

    /// Guarantees: none negative, none above the queue's capacity (its own or the nearest
    /// ancestor's naming the resource), and a parent's at least its children's sum on every
    /// resource the parent names.
    fn check_guarantees(&self) -> Result<(), QueueTreeError> {
        let mut resources: Vec<&str> = Vec::new();
        for (queue, guarantee) in self.guarantees.iter().enumerate() {
            let Some(guarantee) = guarantee else { continue };
            for (resource, value) in guarantee.iter() {
                if value.milli() < 0 {
                    return Err(QueueTreeError::NegativeCapacity {
                        queue: self.names[queue].clone(),
                        resource: resource.to_owned(),
                        capacity: value,
                    });
                }
                if !resources.contains(&resource) {
                    resources.push(resource);
                }
            }
        }
        let mut children: Vec<Vec<QueueIdx>> = vec![Vec::new(); self.len()];
        for (q, parent) in self.parents.iter().enumerate() {
            if let Some(p) = parent {
                children[*p].push(q);
            }
        }
        // Deepest first, so every child's effective guarantee is known before its parent's.
        let mut order: Vec<QueueIdx> = (0..self.len()).collect();
        order.sort_by_key(|&q| std::cmp::Reverse(self.paths[q].len()));
        for resource in resources {
            // A queue's effective guarantee: what it names, else its children's sum (what the
            // sharing model uses).
            let mut effective = vec![0_i128; self.len()];
            for &q in &order {
                let sum = children[q]
                    .iter()
                    .fold(0_i128, |acc, &c| acc.saturating_add(effective[c]));
                effective[q] = match self.guarantees[q].as_ref().and_then(|g| g.get_named(resource)) {
                    Some(named) => {
                        if sum > named.milli() {
                            let first = children[q].iter().copied().find(|&c| effective[c] > 0).unwrap_or(q);
                            return Err(QueueTreeError::GuaranteeExceedsParent(Box::new(CapacityExcess {
                                queue: self.names[first].clone(),
                                parent: self.names[q].clone(),
                                resource: resource.to_owned(),
                                capacity: Quantity::from_milli_saturating(sum, named.format_kind()),
                                parent_capacity: named,
                            })));
                        }
                        named.milli()
                    }
                    None => sum,
                };
            }
            for (q, &held) in effective.iter().enumerate() {
                if held <= 0 {
                    continue;
                }
                let bound = self.paths[q]
                    .iter()
                    .find_map(|&a| self.capacities[a].as_ref().and_then(|c| c.get_named(resource)));
                if let Some(capacity) = bound
                    && held > capacity.milli()
                {
                    return Err(QueueTreeError::GuaranteeExceedsCapacity(Box::new(GuaranteeExcess {
                        queue: self.names[q].clone(),
                        resource: resource.to_owned(),
                        guarantee: Quantity::from_milli_saturating(held, capacity.format_kind()),
                        capacity,
                    })));
                }
            }
        }
        Ok(())
    }

    /// The guarantee of a queue, if it has one.
    pub fn guarantee(&self, queue: QueueIdx) -> Option<&ResourceList> {
        self.guarantees[queue].as_ref()
    }

    /// Number of queues.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True without queues.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The index of a queue by name.
    pub fn index_of(&self, name: &str) -> Option<QueueIdx> {
        self.index.get(name).copied()
    }

    /// The name of a queue.
    pub fn name(&self, queue: QueueIdx) -> &str {
        &self.names[queue]
    }

    /// The parent of a queue.
    pub fn parent(&self, queue: QueueIdx) -> Option<QueueIdx> {
        self.parents[queue]
    }

    /// The capacity of a queue, if it has one.
    pub fn capacity(&self, queue: QueueIdx) -> Option<&ResourceList> {
        self.capacities[queue].as_ref()
    }

    /// The queue itself, then every ancestor up to its root.
    pub fn path(&self, queue: QueueIdx) -> &[QueueIdx] {
        &self.paths[queue]
    }

    /// The path of a queue by name; empty for an unknown queue (no capacity applies to it).
    pub fn path_of(&self, name: &str) -> &[QueueIdx] {
        self.index_of(name).map(|q| self.path(q)).unwrap_or(&[])
    }

    /// The names on a queue's path to its root, the queue first; an unknown queue is a path of
    /// its own name. What grants given to a queue (toleration rules, volumes) match against:
    /// a queue's grants reach its sub-queues.
    pub fn names_to_root<'a>(&'a self, name: &'a str) -> Vec<&'a str> {
        match self.path_of(name) {
            [] => vec![name],
            path => path.iter().map(|q| self.name(*q)).collect(),
        }
    }

    /// Whether some queue guarantees a positive amount of something: then queues lend and
    /// borrow across roots (§9).
    pub fn shares(&self) -> bool {
        self.guarantees
            .iter()
            .flatten()
            .any(|g| g.iter().any(|(_, v)| v.milli() > 0))
    }

    /// The turn decisions about `name`'s jobs take (submissions and activations are serialised
    /// per turn, and read the usage of every queue of it): the queue's root, or, while queues
    /// share ([`shares`](Self::shares)), one turn for every queue — a borrower in one tree
    /// takes room another tree lends, so two trees' decisions are no longer independent.
    pub fn turn_of<'a>(&'a self, name: &'a str) -> &'a str {
        if self.shares() { SHARED_TURN } else { self.root_of(name) }
    }

    /// The root of a queue's tree; an unknown queue is its own root.
    pub fn root_of<'a>(&'a self, name: &'a str) -> &'a str {
        match self.path_of(name).last() {
            Some(&root) => &self.names[root],
            None => name,
        }
    }
}

/// The turn every decision takes while some queue guarantees room ([`QueueTree::turn_of`]): not
/// a queue name (names are DNS labels, without parentheses).
pub const SHARED_TURN: &str = "(shared)";

/// The path from `start` to its root, or, when it runs into a cycle, `Err` with the first
/// queue met twice — a queue on the cycle (`start` itself only when it is on it).
fn walk_path(start: QueueIdx, parents: &[Option<QueueIdx>]) -> Result<Vec<QueueIdx>, QueueIdx> {
    let mut path = vec![start];
    let mut current = start;
    while let Some(parent) = parents[current] {
        if path.contains(&parent) {
            return Err(parent);
        }
        path.push(parent);
        current = parent;
    }
    Ok(path)
}

#[cfg(test)]
mod tests;

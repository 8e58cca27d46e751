//! The timed-out jobs that may block others (`spec/prequeue.md` §5 step 4), indexed once per
//! round so that finding a candidate's oldest blocker costs a few lookups, not a scan.
//!
//! With time-aware backfill on, the index of the timed-out `Prequeue` jobs also keeps the
//! earliest estimated start of the blockers of each (queue, domain, node) in the same shape,
//! so "the earliest start of every blocker that holds this job" is as cheap as its oldest.

use anteroom_shared::scheduling::NodeSet;
use chrono::{DateTime, Utc};

use super::SubmitKey;
use super::intern::FastMap;

/// A timed-out job that may block, keyed by submission so "oldest" is a `min`.
pub(super) type BlockerRef = (SubmitKey, u32);

/// The blockers of one (queue, domain): the oldest overall (blocks any unconstrained
/// candidate), the oldest unconstrained one (blocks every candidate), and the oldest per node
/// among the pinned ones (blocks candidates pinned to that node).
#[derive(Debug, Default)]
struct BlockerGroup<'s> {
    domain: u32,
    oldest_any: Option<BlockerRef>,
    oldest_unconstrained: Option<BlockerRef>,
    by_node: FastMap<&'s str, BlockerRef>,
    /// Time-aware backfill only: the earliest estimated start of any blocker of the group, of
    /// its unconstrained ones, and of those pinned to each node; [`UNKNOWN_START`] when one
    /// of them has none.
    earliest_any: Option<DateTime<Utc>>,
    earliest_unconstrained: Option<DateTime<Utc>>,
    earliest_by_node: FastMap<&'s str, DateTime<Utc>>,
}

/// The start of a blocker without an estimate: earlier than any end, so nothing backfills
/// past it.
pub(super) const UNKNOWN_START: DateTime<Utc> = DateTime::<Utc>::MIN_UTC;

/// Per queue, the blocker groups by domain (few per queue).
#[derive(Debug, Default)]
pub(super) struct BlockerIndex<'s> {
    by_queue: Vec<Vec<BlockerGroup<'s>>>,
}

impl<'s> BlockerIndex<'s> {
    pub(super) fn new(queues: usize) -> Self {
        BlockerIndex {
            by_queue: (0..queues).map(|_| Vec::new()).collect(),
        }
    }

    pub(super) fn add(&mut self, queue: u32, domain: u32, nodes: &'s NodeSet, blocker: BlockerRef) {
        self.group_mut(queue, domain).add(nodes, blocker);
    }

    /// [`add`](Self::add), and counts the blocker's estimated `start` ([`UNKNOWN_START`] for
    /// none) in the earliest starts.
    pub(super) fn add_with_start(
        &mut self,
        queue: u32,
        domain: u32,
        nodes: &'s NodeSet,
        blocker: BlockerRef,
        start: DateTime<Utc>,
    ) {
        let group = self.group_mut(queue, domain);
        group.add(nodes, blocker);
        keep_earliest(&mut group.earliest_any, start);
        match nodes {
            NodeSet::Any => keep_earliest(&mut group.earliest_unconstrained, start),
            NodeSet::Only(names) => {
                for name in names {
                    let slot = group.earliest_by_node.entry(name.as_str()).or_insert(start);
                    *slot = (*slot).min(start);
                }
            }
        }
    }

    fn group_mut(&mut self, queue: u32, domain: u32) -> &mut BlockerGroup<'s> {
        let groups = &mut self.by_queue[queue as usize];
        match groups.iter().position(|g| g.domain == domain) {
            Some(i) => &mut groups[i],
            None => {
                groups.push(BlockerGroup {
                    domain,
                    ..BlockerGroup::default()
                });
                let last = groups.len() - 1;
                &mut groups[last]
            }
        }
    }

    /// The groups of `queue` whose blockers block a candidate of `domain`.
    fn blocking_groups(&self, queue: u32, domain: u32) -> impl Iterator<Item = &BlockerGroup<'s>> {
        // domain_blocks: a cpu-only blocker (domain 0) blocks only cpu-only candidates; any
        // other blocks its own domain and cpu-only candidates. Equal ids ⇔ equal domains.
        self.by_queue[queue as usize].iter().filter(move |group| {
            if group.domain == 0 {
                domain == 0
            } else {
                domain == 0 || domain == group.domain
            }
        })
    }

    /// The oldest blocker of a candidate in `queue` with `domain` and explicit `nodes`.
    pub(super) fn oldest_for(&self, queue: u32, domain: u32, nodes: &NodeSet) -> Option<BlockerRef> {
        let mut best: Option<BlockerRef> = None;
        for group in self.blocking_groups(queue, domain) {
            match nodes {
                NodeSet::Any => {
                    if let Some(b) = group.oldest_any {
                        keep_min(&mut best, b);
                    }
                }
                NodeSet::Only(names) => {
                    if let Some(b) = group.oldest_unconstrained {
                        keep_min(&mut best, b);
                    }
                    for name in names {
                        if let Some(&b) = group.by_node.get(name.as_str()) {
                            keep_min(&mut best, b);
                        }
                    }
                }
            }
        }
        best
    }

    /// The earliest estimated start among *every* blocker of such a candidate (not only the
    /// oldest), [`UNKNOWN_START`] when one has none; `None` when nothing blocks it. Only
    /// meaningful on an index filled with [`add_with_start`](Self::add_with_start).
    pub(super) fn earliest_start_for(&self, queue: u32, domain: u32, nodes: &NodeSet) -> Option<DateTime<Utc>> {
        let mut best: Option<DateTime<Utc>> = None;
        for group in self.blocking_groups(queue, domain) {
            match nodes {
                NodeSet::Any => {
                    if let Some(t) = group.earliest_any {
                        keep_earliest(&mut best, t);
                    }
                }
                NodeSet::Only(names) => {
                    if let Some(t) = group.earliest_unconstrained {
                        keep_earliest(&mut best, t);
                    }
                    for name in names {
                        if let Some(&t) = group.earliest_by_node.get(name.as_str()) {
                            keep_earliest(&mut best, t);
                        }
                    }
                }
            }
        }
        best
    }
}

impl<'s> BlockerGroup<'s> {
    fn add(&mut self, nodes: &'s NodeSet, blocker: BlockerRef) {
        let group = self;
        keep_min(&mut group.oldest_any, blocker);
        match nodes {
            NodeSet::Any => keep_min(&mut group.oldest_unconstrained, blocker),
            NodeSet::Only(names) => {
                for name in names {
                    let slot = group.by_node.entry(name.as_str()).or_insert(blocker);
                    if blocker < *slot {
                        *slot = blocker;
                    }
                }
            }
        }
    }
}

fn keep_min(slot: &mut Option<BlockerRef>, candidate: BlockerRef) {
    if slot.is_none_or(|current| candidate < current) {
        *slot = Some(candidate);
    }
}

fn keep_earliest(slot: &mut Option<DateTime<Utc>>, start: DateTime<Utc>) {
    if slot.is_none_or(|current| start < current) {
        *slot = Some(start);
    }
}

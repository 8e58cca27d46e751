//! The timed-out jobs that may block others (`spec/prequeue.md` §5 step 4), indexed once per
//! round so that finding a candidate's oldest blocker costs a few lookups, not a scan.

use anteroom_shared::scheduling::NodeSet;

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
}

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
        let groups = &mut self.by_queue[queue as usize];
        let group = match groups.iter().position(|g| g.domain == domain) {
            Some(i) => &mut groups[i],
            None => {
                groups.push(BlockerGroup {
                    domain,
                    ..BlockerGroup::default()
                });
                let last = groups.len() - 1;
                &mut groups[last]
            }
        };
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

    /// The oldest blocker of a candidate in `queue` with `domain` and explicit `nodes`.
    pub(super) fn oldest_for(&self, queue: u32, domain: u32, nodes: &NodeSet) -> Option<BlockerRef> {
        let mut best: Option<BlockerRef> = None;
        for group in &self.by_queue[queue as usize] {
            // domain_blocks: a cpu-only blocker (domain 0) blocks only cpu-only candidates; any
            // other blocks its own domain and cpu-only candidates. Equal ids ⇔ equal domains.
            let blocks = if group.domain == 0 {
                domain == 0
            } else {
                domain == 0 || domain == group.domain
            };
            if !blocks {
                continue;
            }
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
}

fn keep_min(slot: &mut Option<BlockerRef>, candidate: BlockerRef) {
    if slot.is_none_or(|current| candidate < current) {
        *slot = Some(candidate);
    }
}

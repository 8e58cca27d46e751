//! The interners of [`PreparedRound::new`](super::PreparedRound::new): resource names into dense
//! columns and resource domains into small ids (their maps use the core's
//! [`FastMap`]).

use anteroom_shared::scheduling::is_accelerator;

use super::MAX_COLUMNS;

pub(super) use crate::prequeue::fast_map::FastMap;

/// Interns the compared resources (columns) into dense indices.
///
/// A snapshot compares few resources (cpu, memory, a handful of accelerators) but every job
/// repeats them, so lookups compare length and an 8-byte prefix against the few known names
/// before touching the rest of the string; past 32 names a hash map takes over.
pub(super) struct ResourceInterner<'s> {
    pub(super) names: Vec<&'s str>,
    /// (length, first 8 bytes) of each name, for the linear scan.
    heads: Vec<(usize, u64)>,
    index: FastMap<&'s str, u16>,
    /// Per column: the name contains `/` (counts in resource domains).
    pub(super) accelerator: Vec<bool>,
    /// Fair share only: every node's allocatable summed per resource. A resource with a
    /// positive total becomes a column when a job or a usage row first names it.
    pub(super) cluster: FastMap<&'s str, i128>,
}

/// The first (up to) 8 bytes of a name as an integer.
fn head(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    let n = bytes.len().min(8);
    word[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(word)
}

impl<'s> ResourceInterner<'s> {
    pub(super) fn new() -> Self {
        ResourceInterner {
            names: Vec::new(),
            heads: Vec::new(),
            index: FastMap::default(),
            accelerator: Vec::new(),
            cluster: FastMap::default(),
        }
    }

    pub(super) fn find(&self, name: &str) -> Option<u16> {
        if self.names.len() > 32 {
            return self.index.get(name).copied();
        }
        let bytes = name.as_bytes();
        let key = (bytes.len(), head(bytes));
        self.heads
            .iter()
            .zip(&self.names)
            .position(|(h, n)| *h == key && (bytes.len() <= 8 || n.as_bytes()[8..] == bytes[8..]))
            .map(|i| i as u16)
    }

    /// The column of `name`, added if new; `None` once [`MAX_COLUMNS`] are taken.
    pub(super) fn intern(&mut self, name: &'s str) -> Option<u16> {
        if let Some(i) = self.find(name) {
            return Some(i);
        }
        let i = u16::try_from(self.names.len())
            .ok()
            .filter(|i| usize::from(*i) < MAX_COLUMNS)?;
        self.names.push(name);
        self.heads.push((name.len(), head(name.as_bytes())));
        self.index.insert(name, i);
        self.accelerator.push(is_accelerator(name));
        Some(i)
    }

    /// The column of a resource a job or a usage row names: an existing one, or a new one for
    /// a resource the cluster has (fair share); `None` for a resource no rule compares. A full
    /// table also yields `None` here — only reachable with more than 65 535 distinct node
    /// resources — which leaves that resource out of the shares rather than failing the round.
    pub(super) fn column(&mut self, name: &'s str) -> Option<u16> {
        match self.find(name) {
            Some(i) => Some(i),
            None if self.cluster.get(name).is_some_and(|total| *total > 0) => self.intern(name),
            None => None,
        }
    }
}

/// Interns resource domains into small ids, keyed by the sorted accelerator names themselves
/// (a job naming any number of accelerators gets an exact domain); id 0 is `cpu-only`.
#[derive(Default)]
pub(super) struct DomainInterner<'s> {
    index: FastMap<Vec<&'s str>, u32>,
}

impl<'s> DomainInterner<'s> {
    pub(super) fn intern(&mut self, names: &[&'s str]) -> u32 {
        if names.is_empty() {
            return 0;
        }
        if let Some(&id) = self.index.get(names) {
            return id;
        }
        // Ids start at 1; there are at most as many domains as jobs, far below u32::MAX.
        let id = self.index.len() as u32 + 1;
        self.index.insert(names.to_vec(), id);
        id
    }
}

//! The hasher of the core's hash maps (round interning, blocker maps, preemption pools).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A small multiplicative hasher: fast on the short names and integer pairs the core keys its
/// maps by, and deterministic (no random seed), so two runs over one snapshot hash alike.
///
/// It is not collision resistant, which is safe only because no user chooses its keys: node
/// names come from the cluster, and a submission pinned to a node the cluster does not have
/// is refused ([`SubmitRejection::UnknownNode`](crate::prequeue::SubmitRejection::UnknownNode));
/// resource names that reach a map are the ones quotas, capacities or nodes name (a non-zero
/// request for a resource no node has is refused as unschedulable); queue names and ids come
/// from the database.
#[derive(Default, Clone, Copy)]
pub(crate) struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A `HashMap` with [`MixHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, BuildHasherDefault};

    use super::MixHasher;

    #[test]
    fn every_map_hashes_a_node_name_alike_because_the_hasher_has_no_random_seed() {
        let hash = |name: &str| BuildHasherDefault::<MixHasher>::default().hash_one(name);
        assert_eq!(hash("gpu-node-17"), hash("gpu-node-17"));
        assert_ne!(hash("gpu-node-17"), hash("gpu-node-18"));
        // Names sharing their first 8 bytes still differ (the whole name is mixed in).
        assert_ne!(hash("gpu-node-a"), hash("gpu-node-b"));
    }
}

//! Cluster mode's per-slot key index of a dict: the hashes of its keys, ordered, so the keys of
//! one slot are a range (the slot sits in the top bits of the hash, see [`crate::hash`]), and a
//! count per slot. Costs about what Redis 7.2's per-key slot links do (≈ 16 B a key), and only in
//! cluster mode.

use crate::hash::{slot_hash_range, slot_of_hash};
use std::collections::{BTreeSet, HashMap};

#[derive(Default)]
pub struct SlotIndex {
    hashes: BTreeSet<u64>,
    /// Hashes held by more than one key: how many more (64-bit collisions within a slot).
    repeats: HashMap<u64, u32>,
    counts: HashMap<u16, u32>,
}

impl SlotIndex {
    pub fn insert(&mut self, hash: u64) {
        if !self.hashes.insert(hash) {
            *self.repeats.entry(hash).or_default() += 1;
        }
        *self.counts.entry(slot_of_hash(hash)).or_default() += 1;
    }

    pub fn remove(&mut self, hash: u64) {
        match self.repeats.get_mut(&hash) {
            Some(1) => {
                self.repeats.remove(&hash);
            }
            Some(n) => *n -= 1,
            None => {
                self.hashes.remove(&hash);
            }
        }
        let slot = slot_of_hash(hash);
        if let Some(n) = self.counts.get_mut(&slot) {
            *n -= 1;
            if *n == 0 {
                self.counts.remove(&slot);
            }
        }
    }

    pub fn count(&self, slot: u16) -> usize {
        self.counts.get(&slot).map_or(0, |&n| n as usize)
    }

    /// The distinct hashes of the slot's keys, in order.
    pub fn hashes_in(&self, slot: u16) -> impl Iterator<Item = u64> + '_ {
        self.hashes.range(slot_hash_range(slot)).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_ranges_and_repeated_hashes() {
        let mut ix = SlotIndex::default();
        let in_slot = |slot: u16, low: u64| *slot_hash_range(slot).start() | low;
        ix.insert(in_slot(7, 1));
        ix.insert(in_slot(7, 2));
        ix.insert(in_slot(7, 2)); // two keys, one hash
        ix.insert(in_slot(8, 1));
        assert_eq!(ix.count(7), 3);
        assert_eq!(ix.count(8), 1);
        assert_eq!(ix.count(9), 0);
        assert_eq!(ix.hashes_in(7).count(), 2);
        ix.remove(in_slot(7, 2));
        assert_eq!(ix.hashes_in(7).count(), 2, "one key still has the hash");
        ix.remove(in_slot(7, 2));
        ix.remove(in_slot(7, 1));
        assert_eq!(ix.count(7), 0);
        assert_eq!(ix.hashes_in(7).count(), 0);
        assert_eq!(ix.hashes_in(8).collect::<Vec<_>>(), vec![in_slot(8, 1)]);
    }
}

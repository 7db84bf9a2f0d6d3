//! Cluster mode's per-slot key index of a dict: for each slot, the hashes of its keys (the slot
//! sits in the top bits of the hash, see [`crate::hash`]) and a count. Costs about what Redis
//! 7.2's per-key slot links do (≈ 16 B a key), and only in cluster mode.

use crate::hash::slot_of_hash;
use ahash::{HashMap, HashSet};

/// Per slot: the distinct hashes of its keys and how many keys it has. Hash sets rather than
/// one ordered set of all hashes: a key added or deleted costs a hash-set insert, where the
/// B-tree insert cost more than the rest of a SET (callgrind); no caller needs order.
#[derive(Default)]
pub struct SlotIndex {
    slots: HashMap<u16, SlotKeys>,
    /// Hashes held by more than one key: how many more (64-bit collisions within a slot).
    repeats: HashMap<u64, u32>,
}

#[derive(Default)]
struct SlotKeys {
    hashes: HashSet<u64>,
    keys: u32,
}

impl SlotIndex {
    pub fn insert(&mut self, hash: u64) {
        let slot = self.slots.entry(slot_of_hash(hash)).or_default();
        slot.keys += 1;
        if !slot.hashes.insert(hash) {
            *self.repeats.entry(hash).or_default() += 1;
        }
    }

    pub fn remove(&mut self, hash: u64) {
        let slot_no = slot_of_hash(hash);
        let Some(slot) = self.slots.get_mut(&slot_no) else {
            return;
        };
        slot.keys -= 1;
        // Almost always empty: skip hashing into it.
        let repeat = match self.repeats.is_empty() {
            true => None,
            false => self.repeats.get_mut(&hash),
        };
        match repeat {
            Some(1) => {
                self.repeats.remove(&hash);
            }
            Some(n) => *n -= 1,
            None => {
                slot.hashes.remove(&hash);
            }
        }
        if slot.keys == 0 {
            self.slots.remove(&slot_no);
        }
    }

    pub fn count(&self, slot: u16) -> usize {
        self.slots.get(&slot).map_or(0, |s| s.keys as usize)
    }

    /// The distinct hashes of the slot's keys.
    pub fn hashes_in(&self, slot: u16) -> impl Iterator<Item = u64> + '_ {
        self.slots
            .get(&slot)
            .into_iter()
            .flat_map(|s| s.hashes.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::slot_hash_range;

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
        ix.remove(in_slot(8, 1));
        assert!(ix.slots.is_empty() && ix.repeats.is_empty());
    }
}

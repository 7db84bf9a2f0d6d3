//! The one key hash of the process: the top bits pick the shard, the low bits the bucket.
//!
//! In cluster mode the top 14 bits are the key's hash slot instead (bit-reversed, so the shard,
//! taken from the top bits, follows the slot's *low* bits and a node's contiguous slot ranges
//! still spread over every shard). A slot then lives in one shard, and the dicts can index keys
//! by slot from the hash alone (COUNTKEYSINSLOT, GETKEYSINSLOT, resharding).
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::OnceLock;

// Process-wide: a seed fixed for the process; keys are hashed without a store at hand (lock
// plans, the write log), and two servers sharing it is harmless.
static STATE: OnceLock<ahash::RandomState> = OnceLock::new();
// Set once at start-up, before the first key is hashed (cluster-enabled is immutable).
static SLOT_HASHING: AtomicBool = AtomicBool::new(false);

/// Bits of the hash below the slot code.
const SLOT_SHIFT: u32 = 64 - 14;
const BELOW_SLOT: u64 = (1 << SLOT_SHIFT) - 1;

/// Cluster mode: embed each key's hash slot in its hash. Call before any key is stored.
pub fn set_slot_hashing(on: bool) {
    SLOT_HASHING.store(on, Relaxed);
}

#[inline]
pub fn slot_hashing() -> bool {
    SLOT_HASHING.load(Relaxed)
}

#[inline]
pub fn key_hash(key: &[u8]) -> u64 {
    if slot_hashing() {
        let (at, len, hash) = CHECKED.with(Cell::get);
        if at == key.as_ptr() as usize && len == key.len() {
            return hash;
        }
        return slot_key_hash(key);
    }
    STATE.get_or_init(ahash::RandomState::new).hash_one(key)
}

/// The bits of [`key_hash`] below the slot, which are all a table's bucket index uses (no table
/// has 2^50 buckets): rehashing a table's keys in cluster mode needs no CRC16 then.
#[inline]
pub fn bucket_hash(key: &[u8]) -> u64 {
    STATE.get_or_init(ahash::RandomState::new).hash_one(key) & BELOW_SLOT
}

#[inline]
fn slot_key_hash(key: &[u8]) -> u64 {
    slot_and_key_hash(key).1
}

#[inline]
fn slot_and_key_hash(key: &[u8]) -> (u16, u64) {
    let slot = tern_cluster::key_hash_slot(key);
    let h = STATE.get_or_init(ahash::RandomState::new).hash_one(key);
    (slot, (slot_code(slot) << SLOT_SHIFT) | (h & BELOW_SLOT))
}

thread_local! {
    // Cluster mode: the hash of the key the slot check just hashed (where its bytes sit, their
    // length, the hash), so the command's own lookup does not hash it (CRC16 included) again.
    // Only valid while that command runs: the dispatcher forgets it when the command ends, so
    // no later key placed at the same address can match it.
    static CHECKED: Cell<(usize, usize, u64)> = const { Cell::new((0, 0, 0)) };
}

/// Cluster mode: the slot of `key`, for the slot check; its hash (slot included) is kept for
/// the command about to run on those same bytes. Pair with [`forget_checked_key`] when it ends.
#[inline]
pub fn checked_key_slot(key: &[u8]) -> u16 {
    let (slot, hash) = slot_and_key_hash(key);
    CHECKED.with(|c| c.set((key.as_ptr() as usize, key.len(), hash)));
    slot
}

/// The command whose key [`checked_key_slot`] hashed has ended.
#[inline]
pub fn forget_checked_key() {
    if slot_hashing() {
        CHECKED.with(|c| c.set((0, 0, 0)));
    }
}

/// The slot as it sits in the top bits of its keys' hashes.
#[inline]
fn slot_code(slot: u16) -> u64 {
    (slot as u64).reverse_bits() >> SLOT_SHIFT
}

/// The range of hashes the keys of `slot` have (with slot hashing on).
pub fn slot_hash_range(slot: u16) -> std::ops::RangeInclusive<u64> {
    let code = slot_code(slot) << SLOT_SHIFT;
    code..=code | BELOW_SLOT
}

/// The slot a hash belongs to (with slot hashing on).
#[inline]
pub fn slot_of_hash(hash: u64) -> u16 {
    ((hash >> SLOT_SHIFT).reverse_bits() >> SLOT_SHIFT) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_code_round_trips_and_spreads_low_bits_first() {
        for slot in [0u16, 1, 2, 5460, 5461, 16383] {
            let r = slot_hash_range(slot);
            assert_eq!(slot_of_hash(*r.start()), slot);
            assert_eq!(slot_of_hash(*r.end()), slot);
        }
        // Consecutive slots land in different top-bit groups (shards).
        assert_ne!(slot_code(0) >> 13, slot_code(1) >> 13);
    }
}

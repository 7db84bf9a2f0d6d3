//! The one key hash of the process: the top bits pick the shard, the low bits the bucket.
use std::sync::OnceLock;

// Process-wide: a seed fixed for the process; keys are hashed without a store at hand (lock
// plans, the write log), and two servers sharing it is harmless.
static STATE: OnceLock<ahash::RandomState> = OnceLock::new();

#[inline]
pub fn key_hash(key: &[u8]) -> u64 {
    STATE.get_or_init(ahash::RandomState::new).hash_one(key)
}

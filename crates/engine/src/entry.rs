//! One key of the keyspace: the key bytes, its value, its expiry and its access clock.
use crate::value::Value;

pub struct Entry {
    pub key: Box<[u8]>,
    pub value: Value,
    /// Absolute expiry in unix milliseconds; 0 = persistent.
    pub expire_at: u64,
    /// LRU clock (seconds, 24 bits) or, under an LFU policy, Redis's 16-bit minutes + 8-bit counter.
    pub access: u32,
}

impl Entry {
    pub fn new(key: Box<[u8]>, value: Value) -> Entry {
        Self::new_at(key, value, crate::clock::now_ms())
    }

    /// A new entry created at `now_ms` (the command's time: no extra clock read).
    pub fn new_at(key: Box<[u8]>, value: Value, now_ms: u64) -> Entry {
        Entry {
            key,
            value,
            expire_at: 0,
            access: crate::clock::initial_access_at(now_ms),
        }
    }

    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now_ms
    }
}

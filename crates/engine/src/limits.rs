//! Encoding thresholds (`hash-max-listpack-entries` …): set by CONFIG, read by the value types
//! when they decide whether a collection stays compact. Atomics, so CONFIG SET takes effect on
//! the next write without locking anything.

use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

macro_rules! limits {
    ($($name:ident = $default:expr, $config:literal;)*) => {
        // Process-wide: read inside the value types' encoding decisions, where no store is
        // reachable (CONFIG mirrors the server's thresholds here).
        $(pub static $name: AtomicI64 = AtomicI64::new($default);)*

        /// Mirror a config parameter into its atomic; false if the name is not a threshold.
        pub fn set(config_name: &str, value: i64) -> bool {
            match config_name {
                $($config => { $name.store(value, Relaxed); true })*
                _ => false,
            }
        }
    };
}

limits! {
    HASH_MAX_LISTPACK_ENTRIES = 128, "hash-max-listpack-entries";
    HASH_MAX_LISTPACK_VALUE = 64, "hash-max-listpack-value";
    SET_MAX_INTSET_ENTRIES = 512, "set-max-intset-entries";
    SET_MAX_LISTPACK_ENTRIES = 128, "set-max-listpack-entries";
    SET_MAX_LISTPACK_VALUE = 64, "set-max-listpack-value";
    ZSET_MAX_LISTPACK_ENTRIES = 128, "zset-max-listpack-entries";
    ZSET_MAX_LISTPACK_VALUE = 64, "zset-max-listpack-value";
    LIST_MAX_LISTPACK_SIZE = -2, "list-max-listpack-size";
    LIST_COMPRESS_DEPTH = 0, "list-compress-depth";
    STREAM_NODE_MAX_BYTES = 4096, "stream-node-max-bytes";
    STREAM_NODE_MAX_ENTRIES = 100, "stream-node-max-entries";
}

/// Read a threshold (as usize for the non-negative ones).
#[inline]
pub fn get(l: &AtomicI64) -> i64 {
    l.load(Relaxed)
}

#[inline]
pub fn get_usize(l: &AtomicI64) -> usize {
    l.load(Relaxed).max(0) as usize
}

/// Elements at least this large get a quicklist node of their own ("plain" nodes);
/// DEBUG QUICKLIST-PACKED-THRESHOLD changes it (0 restores the 1 GB default).
// Process-wide like the thresholds above (a list encoding setting, no store reachable there).
pub static QUICKLIST_PACKED_THRESHOLD: AtomicI64 = AtomicI64::new(1 << 30);

/// Redis's quicklistisSetPackedThreshold: false when `sz` is too close to 4 GB.
pub fn set_packed_threshold(sz: u64) -> bool {
    if sz > (1u64 << 32) - (1 << 20) {
        return false;
    }
    let sz = if sz == 0 { 1 << 30 } else { sz };
    QUICKLIST_PACKED_THRESHOLD.store(sz as i64, Relaxed);
    true
}

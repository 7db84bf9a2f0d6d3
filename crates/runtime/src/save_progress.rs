//! Progress of the running snapshot save, for INFO persistence (`current_save_keys_processed`,
//! `current_save_keys_total`, `current_fork_perc`, `current_cow_size`...): the numbers Redis's
//! child reports to its parent, here counted where the snapshot's records arrive.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use tern_engine::snapshot::{KeyEncoder, SnapshotSink, COW_BYTES};

/// Keys at the cut and keys written so far by the running save (0 when none runs).
pub static KEYS_TOTAL: AtomicU64 = AtomicU64::new(0);
pub static KEYS_PROCESSED: AtomicU64 = AtomicU64::new(0);
/// Highest copy-on-write size seen during the running save, and when it last changed (unix s).
pub static COW_PEAK: AtomicU64 = AtomicU64::new(0);
pub static COW_UPDATED: AtomicU64 = AtomicU64::new(0);
/// The copy-on-write size of the last finished RDB save and AOF rewrite.
pub static RDB_LAST_COW: AtomicU64 = AtomicU64::new(0);
pub static AOF_LAST_COW: AtomicU64 = AtomicU64::new(0);

/// A snapshot sink that counts what passes to the one it wraps.
pub struct Counted<S> {
    pub inner: S,
}

impl<S> Counted<S> {
    /// Start counting a new save (at the cut; `db_sizes` sets the total next).
    pub fn new(inner: S) -> Self {
        KEYS_PROCESSED.store(0, Relaxed);
        COW_PEAK.store(0, Relaxed);
        COW_UPDATED.store(0, Relaxed);
        Counted { inner }
    }
}

impl<S: SnapshotSink> SnapshotSink for Counted<S> {
    fn encoder(&self) -> Arc<dyn KeyEncoder> {
        self.inner.encoder()
    }

    fn db_sizes(&mut self, sizes: &[(u64, u64)]) {
        KEYS_TOTAL.store(sizes.iter().map(|s| s.0).sum(), Relaxed);
        self.inner.db_sizes(sizes)
    }

    fn records(&mut self, db: usize, bytes: &[u8], keys: u64) {
        KEYS_PROCESSED.fetch_add(keys, Relaxed);
        self.inner.records(db, bytes, keys)
    }
}

/// A background save is starting: until its cut, the total is the keys there are now, as
/// Redis's child reports it from its first moment (INFO right after BGSAVE shows it).
pub fn starting(store: &tern_engine::Store) {
    if tern_engine::Store::in_atomic_unit() {
        return; // counting locks every shard; the cut sets the total soon anyway
    }
    let keys: usize = (0..store.databases()).map(|db| store.db_len(db)).sum();
    KEYS_TOTAL.store(keys as u64, Relaxed);
    KEYS_PROCESSED.store(0, Relaxed);
}

/// The save ended: its copy-on-write size becomes the last one (`aof`: a rewrite's), and the
/// current numbers go back to 0.
pub fn finish(aof: bool) {
    let cow = COW_BYTES.load(Relaxed);
    if aof {
        AOF_LAST_COW.store(cow, Relaxed);
    } else {
        RDB_LAST_COW.store(cow, Relaxed);
    }
    KEYS_TOTAL.store(0, Relaxed);
    KEYS_PROCESSED.store(0, Relaxed);
    COW_PEAK.store(0, Relaxed);
    COW_UPDATED.store(0, Relaxed);
}

/// The `current_*` lines of INFO persistence (`running`: a save or rewrite is in progress).
pub fn info_current(out: &mut String, running: bool) {
    use std::fmt::Write;
    let (cow, total, done) = if running {
        (
            COW_BYTES.load(Relaxed),
            KEYS_TOTAL.load(Relaxed),
            KEYS_PROCESSED.load(Relaxed),
        )
    } else {
        (0, 0, 0)
    };
    let now = tern_engine::clock::now_ms() / 1000;
    if running && cow > COW_PEAK.load(Relaxed) {
        COW_PEAK.store(cow, Relaxed);
        COW_UPDATED.store(now, Relaxed);
    }
    let age = match COW_UPDATED.load(Relaxed) {
        0 => 0,
        t => now.saturating_sub(t),
    };
    let perc = if total > 0 {
        done.min(total) as f64 * 100.0 / total as f64
    } else {
        0.0
    };
    let _ = write!(
        out,
        "current_cow_peak:{}\r\n\
         current_cow_size:{cow}\r\n\
         current_cow_size_age:{age}\r\n\
         current_fork_perc:{perc:.2}\r\n\
         current_save_keys_processed:{done}\r\n\
         current_save_keys_total:{total}\r\n",
        COW_PEAK.load(Relaxed).max(cow),
    );
}

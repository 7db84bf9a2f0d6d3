//! Progress of the running snapshot save, for INFO persistence (`current_save_keys_processed`,
//! `current_save_keys_total`, `current_fork_perc`, `current_cow_size`...): the numbers Redis's
//! child reports to its parent, here counted where the snapshot's records arrive.

use crate::server::Server;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use tern_engine::snapshot::{KeyEncoder, SnapshotSink};

/// The running save's progress, owned by the server (`Server::save_progress`; shared with the
/// sink that counts, which may run on another thread).
#[derive(Default)]
pub struct SaveProgress {
    /// Keys at the cut and keys written so far by the running save (0 when none runs).
    keys_total: AtomicU64,
    keys_processed: AtomicU64,
    /// Highest copy-on-write size seen during the running save, and when it last changed
    /// (unix s).
    cow_peak: AtomicU64,
    cow_updated: AtomicU64,
    /// The copy-on-write size of the last finished RDB save and AOF rewrite.
    pub rdb_last_cow: AtomicU64,
    pub aof_last_cow: AtomicU64,
}

/// A snapshot sink that counts what passes to the one it wraps.
pub struct Counted<S> {
    pub inner: S,
    progress: Arc<SaveProgress>,
}

impl<S> Counted<S> {
    /// Start counting a new save (at the cut; `db_sizes` sets the total next).
    pub fn new(progress: &Arc<SaveProgress>, inner: S) -> Self {
        progress.keys_processed.store(0, Relaxed);
        progress.cow_peak.store(0, Relaxed);
        progress.cow_updated.store(0, Relaxed);
        Counted {
            inner,
            progress: progress.clone(),
        }
    }
}

impl<S: SnapshotSink> SnapshotSink for Counted<S> {
    fn encoder(&self) -> Arc<dyn KeyEncoder> {
        self.inner.encoder()
    }

    fn wants_db(&self, db: usize) -> bool {
        self.inner.wants_db(db)
    }

    fn db_sizes(&mut self, sizes: &[(u64, u64)]) {
        let total = sizes.iter().map(|s| s.0).sum();
        self.progress.keys_total.store(total, Relaxed);
        self.inner.db_sizes(sizes)
    }

    fn records(&mut self, db: usize, bytes: &[u8], keys: u64) {
        self.progress.keys_processed.fetch_add(keys, Relaxed);
        self.inner.records(db, bytes, keys)
    }
}

/// A background save is starting: until its cut, the total is the keys there are now, as
/// Redis's child reports it from its first moment (INFO right after BGSAVE shows it).
pub fn starting(srv: &Server) {
    let store = &srv.store;
    if tern_engine::Store::in_atomic_unit() {
        return; // counting locks every shard; the cut sets the total soon anyway
    }
    let keys: usize = (0..store.databases()).map(|db| store.db_len(db)).sum();
    let p = &srv.save_progress;
    p.keys_total.store(keys as u64, Relaxed);
    p.keys_processed.store(0, Relaxed);
}

/// The save ended: its copy-on-write size becomes the last one (`aof`: a rewrite's), and the
/// current numbers go back to 0.
pub fn finish(srv: &Server, aof: bool) {
    let p = &srv.save_progress;
    let cow = srv.store.snapshot_cow_bytes();
    if aof {
        p.aof_last_cow.store(cow, Relaxed);
    } else {
        p.rdb_last_cow.store(cow, Relaxed);
    }
    p.keys_total.store(0, Relaxed);
    p.keys_processed.store(0, Relaxed);
    p.cow_peak.store(0, Relaxed);
    p.cow_updated.store(0, Relaxed);
}

/// The `current_*` lines of INFO persistence (`running`: a save or rewrite is in progress).
pub fn info_current(srv: &Server, out: &mut String, running: bool) {
    use std::fmt::Write;
    let p = &srv.save_progress;
    let (cow, total, done) = if running {
        (
            srv.store.snapshot_cow_bytes(),
            p.keys_total.load(Relaxed),
            p.keys_processed.load(Relaxed),
        )
    } else {
        (0, 0, 0)
    };
    let now = tern_engine::clock::now_ms() / 1000;
    if running && cow > p.cow_peak.load(Relaxed) {
        p.cow_peak.store(cow, Relaxed);
        p.cow_updated.store(now, Relaxed);
    }
    let age = match p.cow_updated.load(Relaxed) {
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
        p.cow_peak.load(Relaxed).max(cow),
    );
}

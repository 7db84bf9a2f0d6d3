//! Forkless point-in-time snapshots with key-level copy-on-write.
//!
//! `Store::snapshot` locks every shard for an instant (the cut): each shard flips its snapshot
//! parity, which makes every entry it holds "not yet written out" (an entry's snapshot bit
//! differs from its shard's parity), and gets a hook to the snapshot's encoder. Then:
//!
//! * the snapshotting thread walks each shard a few buckets at a time (the shard is locked only
//!   for those buckets), encodes every entry still not written out, and sets its bit;
//! * a thread about to change or remove an entry that is still not written out (a write
//!   command's lookup, a delete, an overwrite, expiry, a flush) encodes that one entry first, as
//!   it was at the cut, into a side buffer the snapshotting thread drains, and sets its bit;
//! * entries created after the cut get the new parity at once: they are not part of it.
//!
//! So every key present at the cut is written exactly once, with its value at the cut, and a
//! write during a snapshot costs at most the encoding of the key it changes: no thread ever
//! waits for a whole shard to be written. The walk visits buckets with the SCAN cursor, which
//! never misses an entry present for the whole walk however the table resizes; entries it
//! meets twice are skipped by their bit. Extra memory is the side buffer of keys written
//! before the walk reached them, not a copy of the data.
//!
//! Invariant between snapshots: every entry's bit equals its shard's parity (the walk always
//! completes, marking every entry), and all shards flip together, so entries that move between
//! shards (RENAME, MOVE, SWAPDB) keep a meaningful bit.

use crate::dict::Dict;
use crate::entry::Entry;
use crate::store::Store;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Encodes one key's records. Shared with every thread that writes a key out before changing
/// it, so it runs under that key's shard lock: it must not block or do I/O.
pub trait KeyEncoder: Send + Sync {
    /// Append the records of `e` (its key, value and expiry as they are now) to `out`. False
    /// when the key is left out (it had expired at the cut).
    fn encode(&self, out: &mut Vec<u8>, e: &Entry) -> bool;
}

/// Receives a snapshot's records, on the snapshotting thread only (never under a shard lock).
pub trait SnapshotSink: Send {
    /// The encoder for this snapshot's keys.
    fn encoder(&self) -> Arc<dyn KeyEncoder>;
    /// Whether database `db`'s keys go into this snapshot (a database excluded from
    /// persistence is left out of RDB files and AOF rewrites; its shards are still walked,
    /// without encoding anything).
    fn wants_db(&self, _db: usize) -> bool {
        true
    }
    /// Per database: (keys, keys with an expiry) at the cut, before any record arrives
    /// (zero for a database the sink does not want).
    fn db_sizes(&mut self, _sizes: &[(u64, u64)]) {}
    /// Records of `keys` keys of database `db`, as the encoder made them. Records of one
    /// database may arrive in several pieces, interleaved with other databases'.
    fn records(&mut self, db: usize, bytes: &[u8], keys: u64);
}

/// What a shard's hook points at while a snapshot has not finished walking it.
pub(crate) struct SnapShared {
    encoder: Arc<dyn KeyEncoder>,
    /// Per database: left out of this snapshot (`SnapshotSink::wants_db`).
    skipped: Box<[bool]>,
    /// Keys written out by the threads that changed them, per database, in arrival order.
    side: Mutex<Vec<SidePiece>>,
    /// Whole tables taken out of the keyspace (FLUSHDB, FLUSHALL) while they still held owed
    /// entries: (database, parity, table). Nobody else reaches them any more, so the
    /// snapshotting thread writes their owed entries out at leisure, then frees them.
    detached: Mutex<Vec<(usize, bool, Dict)>>,
    /// The store's copy-on-write counter (`SnapState::cow_bytes`).
    cow_bytes: Arc<AtomicU64>,
}

struct SidePiece {
    db: usize,
    bytes: Vec<u8>,
    keys: u64,
}

// Per thread by nature: scratch buffer.
thread_local! {
    /// Encoding scratch of threads that write a key out before changing it.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl SnapShared {
    /// Write one entry out (its state at the cut) into the side buffer.
    #[cold]
    pub(crate) fn save(&self, db: usize, e: &Entry) {
        if self.skips(db) {
            return;
        }
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            s.clear();
            if !self.encoder.encode(&mut s, e) {
                return;
            }
            self.cow_bytes.fetch_add(s.len() as u64, Ordering::Relaxed);
            let mut side = self.side.lock();
            match side.last_mut() {
                Some(p) if p.db == db => {
                    p.bytes.extend_from_slice(&s);
                    p.keys += 1;
                }
                _ => side.push(SidePiece {
                    db,
                    bytes: s.clone(),
                    keys: 1,
                }),
            }
            // Don't keep a huge value's scratch around.
            if s.capacity() > 1 << 20 {
                *s = Vec::new();
            }
        });
    }

    /// Database `db` is left out of this snapshot.
    #[inline]
    pub(crate) fn skips(&self, db: usize) -> bool {
        self.skipped.get(db).copied().unwrap_or(false)
    }

    /// Encode one entry with this snapshot's encoder (the walk).
    pub(crate) fn encode(&self, out: &mut Vec<u8>, e: &Entry) -> bool {
        self.encoder.encode(out, e)
    }

    /// Take over a table removed from the keyspace that still holds owed entries.
    pub(crate) fn detach(&self, db: usize, parity: bool, table: Dict) {
        self.detached.lock().push((db, parity, table));
    }

    /// An aborted snapshot drops what it was still to write.
    fn discard(&self) {
        self.side.lock().clear();
        self.detached.lock().clear();
    }

    fn drain_into(&self, sink: &mut dyn SnapshotSink, buf: &mut Vec<u8>) {
        let pieces = std::mem::take(&mut *self.side.lock());
        for p in pieces {
            sink.records(p.db, &p.bytes, p.keys);
            crate::save_delay::keys_written(p.keys);
        }
        let tables = std::mem::take(&mut *self.detached.lock());
        for (db, parity, table) in tables {
            if self.skips(db) {
                drop(table);
                continue;
            }
            // Out of the keyspace: only read, then freed here (off the clients' threads).
            let mut keys = 0;
            for e in table.iter().filter(|e| e.snap_bit() != parity) {
                if self.encoder.encode(buf, e) {
                    keys += 1;
                    crate::save_delay::key_written();
                }
                if buf.len() >= STEP_BYTES {
                    sink.records(db, buf, std::mem::take(&mut keys));
                    buf.clear();
                }
            }
            if !buf.is_empty() {
                sink.records(db, buf, keys);
                buf.clear();
            }
            drop(table);
        }
    }
}

/// Per-store snapshot state.
pub(crate) struct SnapState {
    /// True from the cut until every shard was walked.
    pub(crate) active: AtomicBool,
    /// One snapshot at a time.
    running: Mutex<()>,
    /// Bytes the writing threads copied for the running snapshot (keys they changed before the
    /// walk reached them): the snapshot's copy-on-write cost, what Redis reports as a child's
    /// COW size. Reset when a snapshot starts; shared with the snapshot's `SnapShared`.
    cow_bytes: Arc<AtomicU64>,
}

impl SnapState {
    pub(crate) fn new() -> SnapState {
        SnapState {
            active: AtomicBool::new(false),
            running: Mutex::new(()),
            cow_bytes: Default::default(),
        }
    }
}

/// Stop a walk step after this many encoded bytes or visited entries (the shard stays locked
/// for one step).
const STEP_BYTES: usize = 64 * 1024;
const STEP_ENTRIES: usize = 256;

impl Store {
    /// The running (or last) snapshot's copy-on-write bytes (see `SnapState::cow_bytes`).
    pub fn snapshot_cow_bytes(&self) -> u64 {
        self.snap().cow_bytes.load(Ordering::Relaxed)
    }

    /// Point-in-time snapshot. `make_at_cut` runs while every shard is locked (the cut) and
    /// returns the sink; then every key present at the cut reaches the sink exactly once, as
    /// it was at the cut (see the module comment). Returns the sink when all are in.
    ///
    /// Must not be called while this thread runs an atomic unit on this store.
    pub fn snapshot<S: SnapshotSink>(&self, make_at_cut: impl FnOnce() -> S) -> S {
        let never = AtomicBool::new(false);
        self.snapshot_abortable(make_at_cut, &never)
            .expect("a snapshot nobody can abort completes")
    }

    /// `snapshot`, which gives up when `abort` becomes true (Redis kills a BGSAVE child on
    /// FLUSHALL): no more records reach the sink, the walk only marks what is left as written
    /// (so the next snapshot starts clean), and None is returned.
    pub fn snapshot_abortable<S: SnapshotSink>(
        &self,
        make_at_cut: impl FnOnce() -> S,
        abort: &AtomicBool,
    ) -> Option<S> {
        let snap = self.snap();
        let _one = snap.running.lock();
        let all: Vec<usize> = (0..self.shard_count()).collect();
        let (mut sink, shared) = {
            let mut guards = self.lock_all_or_none(&all);
            let mut sink = make_at_cut();
            let skipped: Box<[bool]> = (0..self.databases()).map(|db| !sink.wants_db(db)).collect();
            let shared = Arc::new(SnapShared {
                encoder: sink.encoder(),
                skipped,
                side: Mutex::new(Vec::new()),
                detached: Mutex::new(Vec::new()),
                cow_bytes: snap.cow_bytes.clone(),
            });
            let mut sizes = vec![(0u64, 0u64); self.databases()];
            for (i, g) in guards.iter_mut() {
                let db = self.db_of(*i);
                if !shared.skips(db) {
                    sizes[db].0 += g.len() as u64;
                    sizes[db].1 += g.volatile() as u64;
                }
                g.begin_snapshot(shared.clone());
            }
            sink.db_sizes(&sizes);
            snap.cow_bytes.store(0, Ordering::Relaxed);
            snap.active.store(true, Ordering::Release);
            (sink, shared)
        };
        crate::save_delay::begin();
        let mut buf = Vec::with_capacity(STEP_BYTES + 4096);
        let mut aborted = false;
        for i in all {
            let db = self.db_of(i);
            let mut cursor = 0;
            loop {
                aborted = aborted || abort.load(Ordering::Relaxed);
                let (next, keys) = {
                    let mut g = self.raw_shard(i).lock();
                    if aborted {
                        g.snapshot_skip();
                        (0, 0)
                    } else {
                        g.snapshot_step(cursor, &mut buf, STEP_BYTES, STEP_ENTRIES)
                    }
                };
                if aborted {
                    shared.discard();
                    break;
                }
                if !buf.is_empty() {
                    sink.records(db, &buf, keys);
                    buf.clear();
                }
                shared.drain_into(&mut sink, &mut buf);
                crate::save_delay::settle(abort);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        crate::save_delay::end();
        // Every shard dropped its hook under its lock: nobody adds to the side buffer now.
        if aborted {
            shared.discard();
        } else {
            shared.drain_into(&mut sink, &mut buf);
        }
        snap.active.store(false, Ordering::Release);
        (!aborted).then_some(sink)
    }

    /// True while a snapshot has shards not yet walked.
    pub fn snapshot_in_progress(&self) -> bool {
        self.snap().active.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use std::collections::HashMap;

    /// Records are `key=value;` pairs, or `key=?;` for non-strings.
    struct Pairs;
    impl KeyEncoder for Pairs {
        fn encode(&self, out: &mut Vec<u8>, e: &Entry) -> bool {
            out.extend_from_slice(e.key());
            out.push(b'=');
            match &e.value {
                Value::Str(s) => s.with_bytes(|b| out.extend_from_slice(b)),
                _ => out.push(b'?'),
            }
            out.push(b';');
            true
        }
    }

    #[derive(Default)]
    struct Collect {
        /// (db, key) -> value, and how many times each key arrived.
        seen: HashMap<(usize, Vec<u8>), (Vec<u8>, u32)>,
        keys: u64,
        sizes: Vec<(u64, u64)>,
    }

    impl SnapshotSink for Collect {
        fn encoder(&self) -> Arc<dyn KeyEncoder> {
            Arc::new(Pairs)
        }
        fn db_sizes(&mut self, sizes: &[(u64, u64)]) {
            self.sizes = sizes.to_vec();
        }
        fn records(&mut self, db: usize, bytes: &[u8], keys: u64) {
            self.keys += keys;
            for rec in bytes.split(|&b| b == b';').filter(|r| !r.is_empty()) {
                let at = rec.iter().position(|&b| b == b'=').unwrap();
                let slot = self
                    .seen
                    .entry((db, rec[..at].to_vec()))
                    .or_insert((Vec::new(), 0));
                slot.0 = rec[at + 1..].to_vec();
                slot.1 += 1;
            }
        }
    }

    fn put(store: &Store, db: usize, k: &str, v: &str, now: u64) {
        let (h, mut g) = store.lock(db, k.as_bytes());
        g.set(h, k.as_bytes(), Value::from_bytes(v.as_bytes()), false, now);
    }

    #[test]
    fn consistent_cut_under_writes() {
        let store = Arc::new(Store::new(2, 4));
        let now = crate::clock::now_ms();
        for i in 0..2000 {
            put(&store, i % 2, &format!("k{i}"), "0", now);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut round = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    // pairs (k{2j} in db 0, k{2j+1} in db 1) always hold the same value; some
                    // rounds delete and re-create a pair, or add keys the cut never saw.
                    for j in 0..1000 {
                        let (a, b) = (format!("k{}", 2 * j), format!("k{}", 2 * j + 1));
                        let (ha, hb) =
                            (crate::key_hash(a.as_bytes()), crate::key_hash(b.as_bytes()));
                        let mut g = store.lock_many([(0, ha), (1, hb)]);
                        let v = Value::from_bytes(round.to_string().as_bytes());
                        if (round + j).is_multiple_of(7) {
                            g.shard(0, ha).remove(ha, a.as_bytes());
                            g.shard(1, hb).remove(hb, b.as_bytes());
                        }
                        g.shard(0, ha).set(ha, a.as_bytes(), v.clone(), false, now);
                        g.shard(1, hb).set(hb, b.as_bytes(), v, false, now);
                    }
                    let extra = format!("new{round}");
                    put(&store, 0, &extra, "x", now);
                    round += 1;
                }
            })
        };
        for _ in 0..20 {
            let c = store.snapshot(Collect::default);
            let pairs = c.seen.keys().filter(|(_, k)| k.starts_with(b"k")).count();
            assert_eq!(pairs, 2000);
            assert!(c.seen.values().all(|(_, n)| *n == 1), "a key written twice");
            assert_eq!(c.keys as usize, c.seen.len());
            let total: u64 = c.sizes.iter().map(|s| s.0).sum();
            assert_eq!(total as usize, c.seen.len());
            for j in 0..1000 {
                let a = &c.seen[&(0, format!("k{}", 2 * j).into_bytes())].0;
                let b = &c.seen[&(1, format!("k{}", 2 * j + 1).into_bytes())].0;
                assert_eq!(a, b, "pair {j}");
            }
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
    }

    #[test]
    fn flush_and_swap_during_a_snapshot_keep_the_cut() {
        let store = Store::new(2, 2);
        let now = crate::clock::now_ms();
        for i in 0..500 {
            put(&store, 0, &format!("a{i}"), "0", now);
            put(&store, 1, &format!("b{i}"), "1", now);
        }
        // Change everything from inside the cut callback's aftermath: the first walk step
        // can't have reached every shard, so flush/swap must write their shards out first.
        let mut first = true;
        struct Hooked<'a> {
            inner: Collect,
            first: &'a mut bool,
            store: &'a Store,
            now: u64,
        }
        impl SnapshotSink for Hooked<'_> {
            fn encoder(&self) -> Arc<dyn KeyEncoder> {
                Arc::new(Pairs)
            }
            fn records(&mut self, db: usize, bytes: &[u8], keys: u64) {
                self.inner.records(db, bytes, keys);
                if std::mem::take(self.first) {
                    // db 0's tables are taken over by the snapshot (still owed), then db 1's
                    // keys move to db 0 (written out first), and db 1 gets a new key.
                    for g in self.store.lock_dbs(&[0]).guards_mut() {
                        g.clear();
                    }
                    self.store.lock_dbs(&[0, 1]).swap_dbs(0, 1);
                    put(self.store, 1, "after", "x", self.now);
                }
            }
        }
        let h = store.snapshot(|| Hooked {
            inner: Collect::default(),
            first: &mut first,
            store: &store,
            now,
        });
        let c = h.inner;
        assert_eq!(c.seen.len(), 1000);
        assert!(c.seen.values().all(|(_, n)| *n == 1));
        for i in 0..500 {
            assert_eq!(c.seen[&(0, format!("a{i}").into_bytes())].0, b"0");
            assert_eq!(c.seen[&(1, format!("b{i}").into_bytes())].0, b"1");
        }
        // A second snapshot sees the state after the changes.
        let c = store.snapshot(Collect::default);
        assert_eq!(c.seen.len(), 501);
        assert!(c.seen.contains_key(&(0, b"b7".to_vec())));
        assert!(c.seen.contains_key(&(1, b"after".to_vec())));
    }

    #[test]
    fn an_aborted_snapshot_leaves_the_next_one_whole() {
        let store = Store::new(1, 3);
        let now = crate::clock::now_ms();
        for i in 0..3000 {
            put(&store, 0, &format!("k{i}"), "v", now);
        }
        let abort = AtomicBool::new(false);
        struct Aborting<'a>(&'a AtomicBool, &'a Store, u64);
        impl SnapshotSink for Aborting<'_> {
            fn encoder(&self) -> Arc<dyn KeyEncoder> {
                Arc::new(Pairs)
            }
            fn records(&mut self, _db: usize, _bytes: &[u8], _keys: u64) {
                // Change some owed keys (side buffer), then give up.
                for i in 0..100 {
                    put(self.1, 0, &format!("k{}", i * 29), "w", self.2);
                }
                self.0.store(true, Ordering::Relaxed);
            }
        }
        assert!(store
            .snapshot_abortable(|| Aborting(&abort, &store, now), &abort)
            .is_none());
        assert!(!store.snapshot_in_progress());
        let c = store.snapshot(Collect::default);
        assert_eq!(c.seen.len(), 3000);
        assert!(c.seen.values().all(|(_, n)| *n == 1));
        assert_eq!(c.seen[&(0, b"k29".to_vec())].0, b"w");
    }
}

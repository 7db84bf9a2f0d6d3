//! Forkless point-in-time snapshots with shard-level copy-on-write.
//!
//! `Store::snapshot` locks every shard (the cut), marks the store "snapshot in progress" and
//! every shard "not yet visited", and releases them. From then on, whichever thread locks a
//! not-yet-visited shard first hands it to the sink before it may change it (the check is one
//! relaxed load of a flag on every lock while no snapshot runs); the snapshotting thread walks
//! the shards and hands over those nobody touched. Every shard therefore reaches the sink
//! exactly once, in its state at the cut.
//!
//! The sink never takes a shard lock, so it cannot deadlock with lockers: a thread holding
//! shards waits at most for the sink's own mutex, whose holder waits for nothing but I/O.

use crate::shard::ShardData;
use crate::store::Store;
use std::sync::atomic::{AtomicBool, Ordering};

/// Receives each shard once, in its state at the cut.
pub trait ShardSink: Send {
    fn shard(&mut self, db: usize, data: &ShardData);
}

type SinkPtr = *const parking_lot::Mutex<dyn ShardSink>;

/// Per-store snapshot state.
pub(crate) struct SnapState {
    /// True from the cut until every shard was visited.
    pub(crate) active: AtomicBool,
    visited: Box<[AtomicBool]>,
    sink: parking_lot::Mutex<Option<SendPtr>>,
    /// One snapshot at a time.
    running: parking_lot::Mutex<()>,
}

struct SendPtr(SinkPtr);
// SAFETY: the pointer is only dereferenced while `Store::snapshot`, which borrows the sink
// (a Sync mutex around a Send sink), is running; see `visit`.
unsafe impl Send for SendPtr {}

impl SnapState {
    pub(crate) fn new(shards: usize) -> SnapState {
        SnapState {
            active: AtomicBool::new(false),
            visited: (0..shards).map(|_| AtomicBool::new(true)).collect(),
            sink: parking_lot::Mutex::new(None),
            running: parking_lot::Mutex::new(()),
        }
    }
}

impl Store {
    /// Point-in-time snapshot. `at_cut` runs while every shard is locked (the cut); then every
    /// shard is handed to `sink` exactly once, as it was at the cut: by this call walking the
    /// shards, or earlier by the first thread that locks a not-yet-visited shard (that thread
    /// serializes it before it may change it). Returns when all shards were visited.
    ///
    /// Must not be called while this thread runs an atomic unit on this store.
    pub fn snapshot(&self, at_cut: impl FnOnce(), sink: &parking_lot::Mutex<dyn ShardSink>) {
        let snap = self.snap();
        let _one = snap.running.lock();
        let all: Vec<usize> = (0..self.shard_count()).collect();
        {
            let guards = self.lock_raw_all_or_none(&all);
            // SAFETY (lifetime erasure): the pointer is cleared below before this call returns,
            // and only dereferenced for shards not yet visited, all of which are visited (under
            // their lock) before that.
            let p: SinkPtr = unsafe { std::mem::transmute(sink as *const _) };
            *snap.sink.lock() = Some(SendPtr(p));
            for v in snap.visited.iter() {
                v.store(false, Ordering::Relaxed);
            }
            snap.active.store(true, Ordering::Release);
            at_cut();
            drop(guards);
        }
        crate::save_delay::begin();
        for i in all {
            let g = self.raw_shard(i).lock();
            self.visit(i, &g);
            drop(g);
            crate::save_delay::settle();
        }
        crate::save_delay::end();
        snap.active.store(false, Ordering::Release);
        *snap.sink.lock() = None;
    }

    /// True while a snapshot has shards not yet visited.
    pub fn snapshot_in_progress(&self) -> bool {
        self.snap().active.load(Ordering::Relaxed)
    }

    /// Called with shard `i` locked, when a snapshot is active: hand it to the sink if this is
    /// the first visit since the cut.
    #[cold]
    pub(crate) fn visit(&self, i: usize, data: &ShardData) {
        let snap = self.snap();
        if snap.visited[i].swap(true, Ordering::AcqRel) {
            return;
        }
        let p = match &*snap.sink.lock() {
            Some(p) => p.0,
            None => return,
        };
        // SAFETY: shard i was not visited yet, so `snapshot` is still running (it visits every
        // shard under its lock before clearing the pointer) and the sink it borrows is alive.
        let sink = unsafe { &*p };
        sink.lock().shard(self.db_of(i), data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use std::sync::Arc;

    type Pairs = Vec<(Vec<u8>, Vec<u8>)>;
    struct Collect(Vec<(usize, Pairs)>);
    impl ShardSink for Collect {
        fn shard(&mut self, db: usize, data: &ShardData) {
            let mut v = Vec::new();
            for e in data.dict().iter() {
                if let Value::Str(s) = &e.value {
                    v.push((e.key().to_vec(), s.to_vec()));
                }
            }
            self.0.push((db, v));
        }
    }

    #[test]
    fn consistent_cut_under_writes() {
        let store = Arc::new(Store::new(2, 4));
        let now = crate::clock::now_ms();
        for i in 0..200 {
            let k = format!("k{i}");
            let (h, mut g) = store.lock(i % 2, k.as_bytes());
            g.set(h, k.as_bytes(), Value::from_bytes(b"0"), false, now);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut round = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    // pairs (k{2j}, k{2j+1}) always hold the same value; db = i % 2
                    for j in 0..100 {
                        let (a, b) = (format!("k{}", 2 * j), format!("k{}", 2 * j + 1));
                        let (ha, hb) =
                            (crate::key_hash(a.as_bytes()), crate::key_hash(b.as_bytes()));
                        let mut g = store.lock_many([(0, ha), (1, hb)]);
                        let v = round.to_string();
                        g.shard(0, ha).set(
                            ha,
                            a.as_bytes(),
                            Value::from_bytes(v.as_bytes()),
                            false,
                            now,
                        );
                        g.shard(1, hb).set(
                            hb,
                            b.as_bytes(),
                            Value::from_bytes(v.as_bytes()),
                            false,
                            now,
                        );
                    }
                    round += 1;
                }
            })
        };
        for _ in 0..20 {
            let sink = parking_lot::Mutex::new(Collect(Vec::new()));
            store.snapshot(|| {}, &sink);
            let c = sink.into_inner();
            assert_eq!(c.0.len(), 2 * 16);
            let mut all = std::collections::HashMap::new();
            for (_, kv) in c.0 {
                for (k, v) in kv {
                    all.insert(k, v);
                }
            }
            assert_eq!(all.len(), 200);
            for j in 0..100 {
                let (a, b) = (format!("k{}", 2 * j), format!("k{}", 2 * j + 1));
                assert_eq!(all[a.as_bytes()], all[b.as_bytes()], "pair {j}");
            }
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
    }
}

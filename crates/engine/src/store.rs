//! The keyspace: `databases` logical databases, each split into 2^shard_bits independently
//! locked shards. Single-key commands lock one shard; multi-key commands lock every shard they
//! touch, all or none: the first one blocking, the others only if free at once, else everything
//! is released and the contended shard waited for alone. So no locker ever waits while holding
//! a shard, and concurrent lockers cannot deadlock.
//!
//! Atomic units (MULTI/EXEC, scripts) run inside `Store::run_locked`: the thread holds the
//! planned shards for the whole unit, and every lock it takes meanwhile on one of them is
//! granted at once (a `Held` guard borrowing the data). A shard outside the plan is added to the
//! unit's set and held to its end (the "wider lock"); that is the only place where a thread
//! waits while holding shards.

use crate::hash::key_hash;
use crate::shard::{ShardData, ShardMemory};
use parking_lot::{Mutex, MutexGuard};
use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

pub struct Store {
    shards: Box<[Mutex<ShardData>]>,
    /// Each shard's estimated used bytes, readable without its lock (per-database memory).
    memory: Box<[Arc<ShardMemory>]>,
    databases: usize,
    shard_bits: u32,
    /// Per shard: how many long-running atomic units (scripts moved to a script thread) hold
    /// it. A worker about to wait for such a shard moves the command off its thread instead.
    long_held: Box<[AtomicU32]>,
    /// Long-running units in progress (0: nobody needs to look at `long_held`).
    long_units: AtomicUsize,
    snap: crate::snapshot::SnapState,
}

/// Access to one locked shard: an owned mutex guard, or, inside `run_locked`, a borrow of a
/// shard the atomic unit already holds.
pub struct ShardGuard<'a>(GuardKind<'a>);

enum GuardKind<'a> {
    Owned(MutexGuard<'a, ShardData>),
    Held(&'a mut ShardData),
}

impl Deref for ShardGuard<'_> {
    type Target = ShardData;
    #[inline]
    fn deref(&self) -> &ShardData {
        match &self.0 {
            GuardKind::Owned(g) => g,
            GuardKind::Held(r) => r,
        }
    }
}

impl DerefMut for ShardGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut ShardData {
        match &mut self.0 {
            GuardKind::Owned(g) => &mut *g,
            GuardKind::Held(r) => r,
        }
    }
}

/// The WATCH checker looks at what the handler did before the lock goes (see
/// `watch::enable_check`); one branch when it is off.
impl Drop for ShardGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.deref_mut().on_unlock();
    }
}

/// Which shards an atomic unit holds for its whole run.
#[derive(Debug, Clone)]
pub enum LockPlan {
    /// The shards owning these `(db, key hash)` pairs.
    Keys(Vec<(usize, u64)>),
    /// Every shard of every database (units whose keys cannot be known in advance).
    AllShards,
}

/// The shards the running atomic unit of this thread holds (see `run_locked`).
struct HeldSet<'a> {
    store: &'a Store,
    /// Every shard (LockPlan::AllShards), or the sorted indices in `held`.
    all: bool,
    held: Vec<usize>,
    guards: Vec<MutexGuard<'a, ShardData>>,
    /// Marked long-running (`Store::mark_unit_long`): its shards count in `long_held`.
    long: bool,
}

impl HeldSet<'_> {
    #[inline]
    fn holds(&self, i: usize) -> bool {
        self.all || self.held.binary_search(&i).is_ok()
    }

    fn indices(&self) -> Vec<usize> {
        if self.all {
            (0..self.store.shards.len()).collect()
        } else {
            self.held.clone()
        }
    }
}

impl Drop for HeldSet<'_> {
    fn drop(&mut self) {
        if self.long {
            for i in self.indices() {
                self.store.long_held[i].fetch_sub(1, Relaxed);
            }
            self.store.long_units.fetch_sub(1, Relaxed);
        }
    }
}

// Per thread by nature: the atomic unit running on this thread.
thread_local! {
    /// Points at the HeldSet of the atomic unit running on this thread, or null.
    static HELD: Cell<*mut ()> = const { Cell::new(std::ptr::null_mut()) };
}

/// Clears HELD when an atomic unit ends, also when it unwinds.
struct HeldReset;

impl Drop for HeldReset {
    fn drop(&mut self) {
        HELD.with(|h| h.set(std::ptr::null_mut()));
    }
}

/// The shards a multi-key operation holds, locked in ascending order.
pub struct MultiGuard<'a> {
    guards: Vec<(usize, ShardGuard<'a>)>,
    store: &'a Store,
}

impl<'a> MultiGuard<'a> {
    /// The locked shard owning `key` in `db`. Panics if the caller did not lock it: that is a
    /// bug in the command's key planning, never a user error.
    pub fn shard(&mut self, db: usize, hash: u64) -> &mut ShardData {
        let idx = self.store.global_index(db, hash);
        let pos = self
            .guards
            .binary_search_by_key(&idx, |(i, _)| *i)
            .expect("shard not locked");
        &mut self.guards[pos].1
    }

    /// Two distinct locked shards at once (RENAME, MOVE, SWAPDB need both sides).
    pub fn pair(
        &mut self,
        a: (usize, u64),
        b: (usize, u64),
    ) -> Option<(&mut ShardData, &mut ShardData)> {
        let ia = self.store.global_index(a.0, a.1);
        let ib = self.store.global_index(b.0, b.1);
        let pa = self
            .guards
            .binary_search_by_key(&ia, |(i, _)| *i)
            .expect("shard not locked");
        let pb = self
            .guards
            .binary_search_by_key(&ib, |(i, _)| *i)
            .expect("shard not locked");
        if pa == pb {
            return None;
        }
        if pa < pb {
            let (lo, hi) = self.guards.split_at_mut(pb);
            Some((&mut lo[pa].1, &mut hi[0].1))
        } else {
            let (lo, hi) = self.guards.split_at_mut(pa);
            Some((&mut hi[0].1, &mut lo[pb].1))
        }
    }

    /// Exchange the contents of databases `a` and `b`, shard by shard (SWAPDB). Every shard
    /// of both databases must be locked (`Store::lock_dbs`).
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let bits = self.store.shard_bits;
        for s in 0..self.store.shards_per_db() {
            let pa = self
                .guards
                .binary_search_by_key(&((a << bits) | s), |(i, _)| *i)
                .expect("shard not locked");
            let pb = self
                .guards
                .binary_search_by_key(&((b << bits) | s), |(i, _)| *i)
                .expect("shard not locked");
            let (lo, hi) = (pa.min(pb), pa.max(pb));
            let (left, right) = self.guards.split_at_mut(hi);
            left[lo].1.swap(&mut right[0].1);
        }
    }

    pub fn guards_mut(&mut self) -> impl Iterator<Item = &mut ShardData> + use<'_, 'a> {
        self.guards.iter_mut().map(|(_, g)| &mut **g)
    }
}

impl Store {
    pub fn new(databases: usize, shard_bits: u32) -> Store {
        let n = databases << shard_bits;
        let memory: Box<[Arc<ShardMemory>]> = (0..n).map(|_| Arc::default()).collect();
        Store {
            shards: (0..n)
                .map(|i| Mutex::new(ShardData::with_memory(i >> shard_bits, memory[i].clone())))
                .collect(),
            memory,
            databases,
            shard_bits,
            long_held: (0..n).map(|_| AtomicU32::new(0)).collect(),
            long_units: AtomicUsize::new(0),
            snap: crate::snapshot::SnapState::new(),
        }
    }

    pub(crate) fn snap(&self) -> &crate::snapshot::SnapState {
        &self.snap
    }

    /// Number of shards over all databases.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    pub(crate) fn raw_shard(&self, i: usize) -> &Mutex<ShardData> {
        &self.shards[i]
    }

    /// Database of the shard with global index `i`.
    pub(crate) fn db_of(&self, i: usize) -> usize {
        i >> self.shard_bits
    }

    /// Lock shard `i` (global index) directly, outside any atomic unit (background walks).
    pub fn lock_index(&self, i: usize) -> MutexGuard<'_, ShardData> {
        self.shards[i].lock()
    }

    pub fn databases(&self) -> usize {
        self.databases
    }

    pub fn shards_per_db(&self) -> usize {
        1 << self.shard_bits
    }

    /// Estimated bytes of database `db`'s keys and values: the sum of its shards' counts,
    /// read without locking (a write in flight is counted when its shard is unlocked).
    pub fn db_used_memory(&self, db: usize) -> u64 {
        let per_db = self.shards_per_db();
        self.memory[db * per_db..(db + 1) * per_db]
            .iter()
            .map(|m| m.bytes())
            .sum()
    }

    #[inline]
    pub fn shard_index(&self, hash: u64) -> usize {
        if self.shard_bits == 0 {
            0
        } else {
            (hash >> (64 - self.shard_bits)) as usize
        }
    }

    #[inline]
    fn global_index(&self, db: usize, hash: u64) -> usize {
        (db << self.shard_bits) | self.shard_index(hash)
    }

    /// Lock the shard that owns `key` in `db`; returns the key's hash for the shard calls.
    #[inline]
    pub fn lock(&self, db: usize, key: &[u8]) -> (u64, ShardGuard<'_>) {
        let h = key_hash(key);
        (h, self.guard(self.global_index(db, h)))
    }

    /// Cluster mode: the shard of `db` that holds every key of `slot`, locked.
    pub fn lock_slot(&self, db: usize, slot: u16) -> ShardGuard<'_> {
        let h = *crate::hash::slot_hash_range(slot).start();
        self.guard(self.global_index(db, h))
    }

    /// Lock shard `shard` of `db` directly (scans, KEYS, DBSIZE).
    pub fn lock_shard(&self, db: usize, shard: usize) -> ShardGuard<'_> {
        self.guard((db << self.shard_bits) | shard)
    }

    /// One shard by global index: held already by this thread's atomic unit, or locked now.
    #[inline]
    fn guard(&self, i: usize) -> ShardGuard<'_> {
        let held = HELD.with(|h| h.get());
        if !held.is_null() {
            if let Some(g) = self.held_guard(held, i) {
                return g;
            }
        }
        ShardGuard(GuardKind::Owned(self.shards[i].lock()))
    }

    /// Inside an atomic unit on this store: shard `i` as a borrow of the unit's lock, taking
    /// (and keeping to the unit's end) the lock first if the plan did not include it.
    #[cold]
    fn held_guard(&self, held: *mut (), i: usize) -> Option<ShardGuard<'_>> {
        // SAFETY: HELD points at the HeldSet on the stack of `run_locked`, which outlives every
        // call made from its closure on this thread, and is reset before that frame goes.
        let set = unsafe { &mut *(held as *mut HeldSet<'_>) };
        if !std::ptr::eq(set.store, self) {
            return None;
        }
        if !set.holds(i) {
            let g = self.shards[i].lock();
            // SAFETY: the guard borrows `self`, which the HeldSet's own store borrow keeps alive.
            let g: MutexGuard<'_, ShardData> = unsafe { std::mem::transmute(g) };
            set.guards.push(g);
            let at = set.held.binary_search(&i).unwrap_err();
            set.held.insert(at, i);
            if set.long {
                self.long_held[i].fetch_add(1, Relaxed);
            }
        }
        // SAFETY: this thread holds shard i's mutex until the unit ends. A handler never holds
        // two guards of one shard at once (that would deadlock outside a unit), so this
        // mutable borrow is unique while it lives.
        Some(ShardGuard(GuardKind::Held(unsafe {
            &mut *self.shards[i].data_ptr()
        })))
    }

    /// Lock shards by global index, all or none (see the module comment).
    fn lock_indices(&self, mut idx: Vec<usize>) -> MultiGuard<'_> {
        idx.sort_unstable();
        idx.dedup();
        let in_unit = !HELD.with(|h| h.get()).is_null();
        let guards = if in_unit || idx.len() <= 1 {
            idx.into_iter().map(|i| (i, self.guard(i))).collect()
        } else {
            self.lock_all_or_none(&idx)
                .into_iter()
                .map(|(i, g)| (i, ShardGuard(GuardKind::Owned(g))))
                .collect()
        };
        MultiGuard {
            guards,
            store: self,
        }
    }

    /// Lock shards by global index, all or none: never waits while holding one.
    pub(crate) fn lock_all_or_none(
        &self,
        idx: &[usize],
    ) -> Vec<(usize, MutexGuard<'_, ShardData>)> {
        let mut first = 0;
        loop {
            let mut got = Vec::with_capacity(idx.len());
            // Block only on `first` (the last contended one), holding nothing else.
            let lead = self.shards[idx[first]].lock();
            let mut contended = None;
            for (k, &i) in idx.iter().enumerate() {
                if k == first {
                    continue;
                }
                match self.shards[i].try_lock() {
                    Some(g) => got.push((i, g)),
                    None => {
                        contended = Some(k);
                        break;
                    }
                }
            }
            match contended {
                None => {
                    got.push((idx[first], lead));
                    got.sort_unstable_by_key(|(i, _)| *i);
                    return got;
                }
                Some(k) => {
                    drop(got);
                    drop(lead);
                    first = k;
                }
            }
        }
    }

    /// Lock every shard that owns one of the `(db, hash)` pairs.
    pub fn lock_many(&self, items: impl IntoIterator<Item = (usize, u64)>) -> MultiGuard<'_> {
        let idx = items
            .into_iter()
            .map(|(db, h)| self.global_index(db, h))
            .collect();
        self.lock_indices(idx)
    }

    /// Lock all shards of the given databases (FLUSHDB, FLUSHALL, SWAPDB, DEBUG RELOAD).
    pub fn lock_dbs(&self, dbs: &[usize]) -> MultiGuard<'_> {
        let idx = dbs
            .iter()
            .flat_map(|&db| (0..self.shards_per_db()).map(move |s| (db << self.shard_bits) | s))
            .collect();
        self.lock_indices(idx)
    }

    /// Run `f` as one atomic unit: the shards of `plan` are locked (all or none) before it starts
    /// and held until it returns; every lock `f` takes on this thread is granted from that set,
    /// which grows by any shard outside the plan (held to the end as well). Nested calls run
    /// inside the outer unit.
    pub fn run_locked<R>(&self, plan: &LockPlan, f: impl FnOnce() -> R) -> R {
        if !HELD.with(|h| h.get()).is_null() {
            return f();
        }
        let idx: Vec<usize> = match plan {
            LockPlan::Keys(keys) => {
                let mut v: Vec<usize> = keys
                    .iter()
                    .map(|&(db, h)| self.global_index(db, h))
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            }
            LockPlan::AllShards => (0..self.shards.len()).collect(),
        };
        let guards = if idx.is_empty() {
            Vec::new()
        } else {
            self.lock_all_or_none(&idx)
                .into_iter()
                .map(|(_, g)| g)
                .collect()
        };
        let all = matches!(plan, LockPlan::AllShards);
        let mut set = HeldSet {
            store: self,
            all,
            held: if all { Vec::new() } else { idx },
            guards,
            long: false,
        };
        HELD.with(|h| h.set(&mut set as *mut HeldSet<'_> as *mut ()));
        let reset = HeldReset;
        let r = f();
        drop(reset);
        drop(set);
        r
    }

    /// Declare the atomic unit running on this thread long-running (a script on a script
    /// thread): until it ends, `plan_meets_long` reports the shards it holds, and those it adds.
    pub fn mark_unit_long(&self) {
        let held = HELD.with(|h| h.get());
        if held.is_null() {
            return;
        }
        // SAFETY: as in `held_guard`: the HeldSet outlives the unit's closure on this thread.
        let set = unsafe { &mut *(held as *mut HeldSet<'_>) };
        if !std::ptr::eq(set.store, self) || set.long {
            return;
        }
        set.long = true;
        self.long_units.fetch_add(1, Relaxed);
        for i in set.indices() {
            self.long_held[i].fetch_add(1, Relaxed);
        }
    }

    /// True while some long-running unit holds shards (one relaxed load).
    #[inline]
    pub fn any_long(&self) -> bool {
        self.long_units.load(Relaxed) > 0
    }

    /// Would locking `plan` wait for a long-running unit?
    pub fn plan_meets_long(&self, plan: &LockPlan) -> bool {
        match plan {
            LockPlan::AllShards => self.long_held.iter().any(|n| n.load(Relaxed) > 0),
            LockPlan::Keys(keys) => keys
                .iter()
                .any(|&(db, h)| self.long_held[self.global_index(db, h)].load(Relaxed) > 0),
        }
    }

    /// True while this thread runs an atomic unit (`run_locked`).
    pub fn in_atomic_unit() -> bool {
        !HELD.with(|h| h.get()).is_null()
    }

    /// Keys in `db` (including expired keys not yet reclaimed, as Redis's DBSIZE counts).
    pub fn db_len(&self, db: usize) -> usize {
        (0..self.shards_per_db())
            .map(|s| self.lock_shard(db, s).len())
            .sum()
    }

    /// (keys, keys with an expiry) per database.
    pub fn db_stats(&self, db: usize) -> (usize, usize) {
        (0..self.shards_per_db()).fold((0, 0), |(k, v), s| {
            let g = self.lock_shard(db, s);
            (k + g.len(), v + g.volatile())
        })
    }

    pub fn expired_keys_total(&self) -> u64 {
        (0..self.shards.len())
            .map(|i| self.guard(i).expired_keys)
            .sum()
    }

    /// Hash fields deleted because their time ran out (INFO stats `expired_subkeys`).
    pub fn expired_fields_total(&self) -> u64 {
        (0..self.shards.len())
            .map(|i| self.guard(i).expired_fields)
            .sum()
    }

    /// Hashes with field times in `db` (INFO keyspace `subexpiry=`).
    pub fn db_subexpiry(&self, db: usize) -> usize {
        (0..self.shards_per_db())
            .map(|s| self.lock_shard(db, s).subexpiry())
            .sum()
    }

    pub fn reset_stats(&self) {
        for i in 0..self.shards.len() {
            let mut g = self.guard(i);
            g.expired_keys = 0;
            g.expired_fields = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    #[test]
    fn swap_dbs_exchanges_every_shard() {
        let store = Store::new(4, 3);
        let now = crate::clock::now_ms();
        for i in 0..100 {
            let k = format!("a{i}");
            let (h, mut g) = store.lock(1, k.as_bytes());
            g.set(h, k.as_bytes(), Value::from_bytes(b"x"), false, now);
        }
        let (h, mut g) = store.lock(3, b"only");
        g.set(h, b"only", Value::from_bytes(b"y"), false, now);
        g.set_expire(h, b"only", now + 10_000, now);
        drop(g);
        store.lock_dbs(&[1, 3]).swap_dbs(3, 1);
        assert_eq!(store.db_len(1), 1);
        assert_eq!(store.db_stats(1), (1, 1));
        assert_eq!(store.db_len(3), 100);
        let (h, mut g) = store.lock(3, b"a42");
        assert!(g.get(h, b"a42", now).is_some());
        drop(g);
        store.lock_dbs(&[2]).swap_dbs(2, 2);
        assert_eq!(store.db_len(2), 0);
    }
}

//! The keyspace: `databases` logical databases, each split into 2^shard_bits independently
//! locked shards. Single-key commands lock one shard; multi-key commands lock every shard they
//! touch in ascending global order (db, shard), which makes concurrent lockers deadlock-free.

use crate::hash::key_hash;
use crate::shard::ShardData;
use parking_lot::{Mutex, MutexGuard};

pub struct Store {
    shards: Box<[Mutex<ShardData>]>,
    databases: usize,
    shard_bits: u32,
}

pub type ShardGuard<'a> = MutexGuard<'a, ShardData>;

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
        Store {
            shards: (0..n)
                .map(|i| Mutex::new(ShardData::new(i >> shard_bits)))
                .collect(),
            databases,
            shard_bits,
        }
    }

    pub fn databases(&self) -> usize {
        self.databases
    }

    pub fn shards_per_db(&self) -> usize {
        1 << self.shard_bits
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
        (h, self.shards[self.global_index(db, h)].lock())
    }

    /// Lock shard `shard` of `db` directly (scans, KEYS, DBSIZE).
    pub fn lock_shard(&self, db: usize, shard: usize) -> ShardGuard<'_> {
        self.shards[(db << self.shard_bits) | shard].lock()
    }

    /// Lock every shard that owns one of the `(db, hash)` pairs, in ascending order.
    pub fn lock_many(&self, items: impl IntoIterator<Item = (usize, u64)>) -> MultiGuard<'_> {
        let mut idx: Vec<usize> = items
            .into_iter()
            .map(|(db, h)| self.global_index(db, h))
            .collect();
        idx.sort_unstable();
        idx.dedup();
        let guards = idx
            .into_iter()
            .map(|i| (i, self.shards[i].lock()))
            .collect();
        MultiGuard {
            guards,
            store: self,
        }
    }

    /// Lock all shards of the given databases (FLUSHDB, FLUSHALL, SWAPDB, DEBUG RELOAD).
    pub fn lock_dbs(&self, dbs: &[usize]) -> MultiGuard<'_> {
        let mut idx: Vec<usize> = dbs
            .iter()
            .flat_map(|&db| (0..self.shards_per_db()).map(move |s| (db << self.shard_bits) | s))
            .collect();
        idx.sort_unstable();
        idx.dedup();
        let guards = idx
            .into_iter()
            .map(|i| (i, self.shards[i].lock()))
            .collect();
        MultiGuard {
            guards,
            store: self,
        }
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
        self.shards.iter().map(|s| s.lock().expired_keys).sum()
    }

    pub fn reset_stats(&self) {
        for s in self.shards.iter() {
            s.lock().expired_keys = 0;
        }
    }

    /// All shards, for background walks such as active expiry.
    pub fn all_shards(&self) -> &[Mutex<ShardData>] {
        &self.shards
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

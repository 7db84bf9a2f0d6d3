//! A shard: one lock's worth of one database. Every read or write of a key goes through the
//! shard that owns it, which applies lazy expiry and keeps the counts INFO reports.

use crate::dict::Dict;
use crate::entry::{Entry, EntryBox};
use crate::value::Value;

#[derive(Default)]
pub struct ShardData {
    dict: Dict,
    /// Keys that carry an expiry (INFO keyspace `expires=`).
    volatile: usize,
    /// Where the active-expire walk resumes (a dict scan cursor).
    expire_cursor: u64,
    /// Keys removed because their time ran out (INFO stats `expired_keys`).
    pub expired_keys: u64,
    /// The database this shard belongs to (for the key events of `events`).
    db: usize,
}

impl ShardData {
    /// An empty shard of database `db`.
    pub fn new(db: usize) -> ShardData {
        ShardData {
            db,
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.dict.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dict.is_empty()
    }

    pub fn volatile(&self) -> usize {
        self.volatile
    }

    pub fn dict(&self) -> &Dict {
        &self.dict
    }

    /// The live entry for `key`, deleting it first if it has expired.
    #[inline]
    pub fn get(&mut self, hash: u64, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        let expired = self.dict.get(hash, key)?.is_expired(now_ms);
        if expired {
            self.remove(hash, key);
            self.expired_keys += 1;
            crate::events::record(crate::events::EXPIRED, self.db, key);
            return None;
        }
        self.dict.get_mut(hash, key)
    }

    /// Read-only view that treats an expired entry as absent without removing it.
    pub fn peek(&self, hash: u64, key: &[u8], now_ms: u64) -> Option<&Entry> {
        self.dict.get(hash, key).filter(|e| !e.is_expired(now_ms))
    }

    pub fn contains(&mut self, hash: u64, key: &[u8], now_ms: u64) -> bool {
        self.get(hash, key, now_ms).is_some()
    }

    /// Store `value` under `key`. An existing entry keeps its expiry only if `keep_ttl`.
    /// Returns the previous live entry's value, if any.
    pub fn set(
        &mut self,
        hash: u64,
        key: &[u8],
        value: Value,
        keep_ttl: bool,
        now_ms: u64,
    ) -> Option<Value> {
        if let Some(e) = self.get(hash, key, now_ms) {
            let old = std::mem::replace(&mut e.value, value);
            // A new object under LRU; under LFU the counter carries over, as in Redis.
            if !crate::clock::lfu_mode() {
                e.access = crate::clock::lru_clock_at(now_ms);
            }
            if !keep_ttl && e.expire_at() != 0 {
                e.try_set_expire_at(0);
                self.volatile -= 1;
            }
            return Some(old);
        }
        self.dict
            .insert_new(hash, EntryBox::new_at(key, value, now_ms));
        crate::events::record(crate::events::NEW, self.db, key);
        None
    }

    /// Insert a whole entry (expiry included) for a key known to be absent or expired.
    pub fn insert_entry(&mut self, hash: u64, entry: EntryBox, now_ms: u64) {
        if self.get(hash, entry.key(), now_ms).is_some() {
            let k = entry.key().to_vec();
            self.remove(hash, &k);
        }
        if entry.expire_at() != 0 {
            self.volatile += 1;
        }
        crate::events::record(crate::events::NEW, self.db, entry.key());
        self.dict.insert_new(hash, entry);
    }

    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<EntryBox> {
        let e = self.dict.remove(hash, key)?;
        if e.expire_at() != 0 {
            self.volatile -= 1;
        }
        Some(e)
    }

    /// Set (non-zero) or clear (0) a live key's expiry. Returns false if the key is absent.
    pub fn set_expire(&mut self, hash: u64, key: &[u8], at_ms: u64, now_ms: u64) -> bool {
        let Some(e) = self.get(hash, key, now_ms) else {
            return false;
        };
        let was = e.expire_at() != 0;
        if !e.try_set_expire_at(at_ms) {
            // No slot yet: rebuild the entry with one (same value, access clock and bucket).
            let old = self.dict.remove(hash, key).expect("entry just found");
            let (value, access, _) = old.into_parts();
            self.dict
                .insert_new(hash, EntryBox::new_expiring(key, value, access, at_ms));
        }
        match (was, at_ms != 0) {
            (false, true) => self.volatile += 1,
            (true, false) => self.volatile -= 1,
            _ => {}
        }
        true
    }

    /// Drop every key, handing back the old table (the caller decides where to free it).
    pub fn clear(&mut self) -> Dict {
        self.volatile = 0;
        self.expire_cursor = 0;
        self.dict.take()
    }

    /// Exchange contents with another shard (SWAPDB).
    pub fn swap(&mut self, other: &mut ShardData) {
        std::mem::swap(&mut self.dict, &mut other.dict);
        std::mem::swap(&mut self.volatile, &mut other.volatile);
        std::mem::swap(&mut self.expire_cursor, &mut other.expire_cursor);
    }

    /// One bounded step of active expiry: walk up to `max_buckets` buckets from where the last
    /// step stopped and delete what has expired. Returns (expired, volatile keys examined).
    pub fn expire_step(&mut self, now_ms: u64, max_buckets: usize) -> (usize, usize) {
        if self.volatile == 0 {
            return (0, 0);
        }
        let mut expired = 0;
        let mut sampled = 0;
        let mut victims = Vec::new();
        for _ in 0..max_buckets {
            let cursor = self.expire_cursor;
            self.expire_cursor = self.dict.scan(cursor, |e| {
                if e.expire_at() != 0 {
                    sampled += 1;
                    if e.expire_at() <= now_ms {
                        victims.push(e.key().to_vec());
                    }
                }
            });
            if self.expire_cursor == 0 {
                break;
            }
        }
        for k in victims {
            let h = crate::hash::key_hash(&k);
            if self.remove(h, &k).is_some() {
                expired += 1;
                crate::events::record(crate::events::EXPIRED, self.db, &k);
            }
        }
        self.expired_keys += expired as u64;
        (expired, sampled)
    }
}

//! Hash-field expiry at the shard: which hashes have field times (by their earliest, Redis's
//! `db->hexpires`), and the deletion of fields whose time has passed, lazily on access or in
//! the active cycle.
//!
//! The index is kept exact where the shard sees the change (a key inserted, replaced or
//! unlinked) and re-synced by the hash commands after they change field times
//! (`ShardData::hfe_sync`). A stale entry (a time that changed behind it) costs one lookup
//! when the active cycle reaches it, which then files the hash under its true earliest time.

use crate::shard::ShardData;
use crate::value::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

// Process-wide: hashes with field times in every index, read without taking any shard lock
// (a snapshot asks at its cut, with every shard already locked, which RDB version to write).
static INDEXED: AtomicUsize = AtomicUsize::new(0);

/// True when some hash of any database has field times.
pub fn any_indexed() -> bool {
    INDEXED.load(Relaxed) > 0
}

// Process-wide: set the first time any hash field gets a time (HEXPIRE, a load), so that hash
// commands skip the lazy field-expiry step entirely on servers that never use it.
static IN_USE: AtomicBool = AtomicBool::new(false);

/// True once any hash field has had a time in this process.
#[inline]
pub fn in_use() -> bool {
    IN_USE.load(Relaxed)
}

pub(crate) fn mark_in_use() {
    if !IN_USE.load(Relaxed) {
        IN_USE.store(true, Relaxed);
    }
}

#[derive(Default)]
pub(crate) struct HfeIndex {
    by_time: BTreeSet<(u64, Box<[u8]>)>,
    by_key: HashMap<Box<[u8]>, u64>,
}

impl HfeIndex {
    /// File `key` under `min` (None: it has no field times any more).
    pub(crate) fn note(&mut self, key: &[u8], min: Option<u64>) {
        match min {
            Some(t) => {
                match self.by_key.insert(key.into(), t) {
                    Some(old) if old == t => return,
                    Some(old) => {
                        self.by_time.remove(&(old, Box::from(key)));
                    }
                    None => {
                        INDEXED.fetch_add(1, Relaxed);
                    }
                }
                self.by_time.insert((t, key.into()));
            }
            None => self.forget(key),
        }
    }

    pub(crate) fn forget(&mut self, key: &[u8]) {
        if let Some(old) = self.by_key.remove(key) {
            self.by_time.remove(&(old, Box::from(key)));
            INDEXED.fetch_sub(1, Relaxed);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.by_key.len()
    }

    /// The earliest filing time and its hash.
    fn first(&self) -> Option<&(u64, Box<[u8]>)> {
        self.by_time.first()
    }
}

impl Drop for HfeIndex {
    fn drop(&mut self) {
        INDEXED.fetch_sub(self.by_key.len(), Relaxed);
    }
}

/// The earliest field time of a value, if it is a hash with any.
pub(crate) fn min_of(v: &Value) -> Option<u64> {
    match v {
        Value::Hash(h) => h.min_field_ttl(),
        _ => None,
    }
}

/// Fields past their time are deleted only where keys past theirs would be: on a master
/// (a replica waits for the master's HDEL), not while a pause holds expiry or a load runs.
fn may_delete(now_ms: u64) -> bool {
    crate::expire::role() == crate::expire::Role::Master
        && !crate::expire::paused(now_ms)
        && !crate::expire::loading()
}

impl ShardData {
    /// Delete `fields` of the hash at `key` (all of them when None) whose time is before
    /// `now_ms` (Redis's lazy check), reporting each (HDEL to the write log, `hexpired`),
    /// and the key once empty. Nothing is deleted where `may_delete` says no: the caller then
    /// hides such fields itself (`HashValue::field_expired`). Returns the fields deleted.
    pub fn expire_fields(
        &mut self,
        hash: u64,
        key: &[u8],
        fields: Option<&[&[u8]]>,
        now_ms: u64,
    ) -> usize {
        let due: Vec<Box<[u8]>> = match self.dict().get(hash, key).map(|e| &e.value) {
            Some(Value::Hash(h)) if h.ttls().is_some() => match fields {
                None => h.due_fields(now_ms.saturating_sub(1), usize::MAX),
                Some(fs) => fs
                    .iter()
                    .filter(|f| h.field_expired(f, now_ms))
                    .map(|f| Box::from(*f))
                    .collect(),
            },
            _ => return 0,
        };
        if due.is_empty() || !may_delete(now_ms) {
            return 0;
        }
        self.delete_expired_fields(hash, key, &due, true)
    }

    /// The earliest field time of any hash here, if it is at or before `now_ms`.
    pub fn first_due_time(&self, now_ms: u64) -> Option<u64> {
        self.hfe_index()
            .and_then(|i| i.first())
            .map(|(t, _)| *t)
            .filter(|t| *t <= now_ms)
    }

    /// The active cycle here: hashes in the order of their earliest field time, while that is
    /// at or before `until_ms` (and `now_ms`), deleting their fields due at `now_ms`, until
    /// `max_fields` are gone. Returns the fields deleted.
    pub fn expire_due_hashes(&mut self, now_ms: u64, until_ms: u64, max_fields: usize) -> usize {
        let mut done = 0;
        while done < max_fields {
            let key = match self.hfe_index().and_then(|i| i.first()) {
                Some((t, k)) if *t <= until_ms.min(now_ms) => k.clone(),
                _ => break,
            };
            done += self.expire_hash_fields(&key, now_ms, max_fields - done);
        }
        done
    }

    /// The active cycle on one hash: delete up to `max_fields` of its fields whose time is at
    /// or before `now_ms`, earliest first (each propagated as an HDEL of its own, as Redis's
    /// cycle does). Returns the fields deleted.
    fn expire_hash_fields(&mut self, key: &[u8], now_ms: u64, max_fields: usize) -> usize {
        let hash = crate::hash::key_hash(key);
        let due = match self.dict().get(hash, key).map(|e| &e.value) {
            Some(Value::Hash(h)) => h.due_fields(now_ms, max_fields),
            _ => Vec::new(),
        };
        if due.is_empty() {
            // Filed under a time that is no longer its earliest (or gone): refile.
            self.hfe_sync(hash, key);
            return 0;
        }
        self.delete_expired_fields(hash, key, &due, false)
    }

    /// `one_unit`: the deletions are one command's (lazy expiry), logged together (in
    /// MULTI/EXEC when several); else each is a unit of its own (the active cycle). Returns
    /// the fields deleted.
    fn delete_expired_fields(
        &mut self,
        hash: u64,
        key: &[u8],
        due: &[Box<[u8]>],
        one_unit: bool,
    ) -> usize {
        let db = self.db_index();
        let Some(e) = self.entry_for_change(hash, key) else {
            return 0;
        };
        let Value::Hash(h) = &mut e.value else {
            return 0;
        };
        for f in due {
            h.remove(f);
        }
        crate::events::fields_expired(db, key, due, one_unit);
        let empty = h.is_empty();
        self.expired_fields += due.len() as u64;
        crate::events::record(crate::events::HEXPIRED, db, key);
        if empty {
            self.remove_expiring(hash, key);
            crate::events::record(crate::events::EMPTIED, db, key);
        } else {
            self.hfe_sync(hash, key);
            // A change that time made: a WATCH touch, not the command's change.
            self.touch_watchers(key);
        }
        due.len()
    }
}

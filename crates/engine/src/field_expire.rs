//! Subkey expiry at the shard: which hashes have field times and which sets and sorted sets
//! have member times (by their earliest, Redis's `db->hexpires`), and the deletion of fields
//! and members whose time has passed, lazily on access or in the active cycle.
//!
//! Hash fields follow Redis 7.4 (the hash commands expire the fields they touch); set and
//! sorted-set members (KeyDB's EXPIREMEMBER) are all deleted when their key is looked up.
//! KEYDB.CRON jobs are filed here too, under their next run: the active cycle hands a due job
//! to the runtime (`events::cron_due`), as KeyDB runs its jobs off its expiry.
//!
//! The index is kept exact where the shard sees the change (a key inserted, replaced or
//! unlinked) and re-synced by the commands after they change times
//! (`ShardData::hfe_sync`). A stale entry (a time that changed behind it) costs one lookup
//! when the active cycle reaches it, which then files the hash under its true earliest time.

use crate::shard::ShardData;
use crate::types::field_ttl::FieldTtls;
use crate::value::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

// Process-wide: hashes with field times in every index (sets and sorted sets not counted),
// read without taking any shard lock (a snapshot asks at its cut, with every shard already
// locked, which RDB version to write).
static INDEXED_HASHES: AtomicUsize = AtomicUsize::new(0);
// Process-wide: every key in every index, for the active cycle's one-load early exit.
static INDEXED: AtomicUsize = AtomicUsize::new(0);

/// True when some hash of any database has field times.
pub fn any_hash_indexed() -> bool {
    INDEXED_HASHES.load(Relaxed) > 0
}

/// True when some hash, set or sorted set of any database has field or member times.
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

// Process-wide: set the first time a set or sorted-set member gets a time, so that key
// lookups skip the member-expiry step entirely on servers that never use it.
static MEMBERS_IN_USE: AtomicBool = AtomicBool::new(false);

/// True once any set or sorted-set member has had a time in this process.
#[inline]
pub fn members_in_use() -> bool {
    MEMBERS_IN_USE.load(Relaxed)
}

pub(crate) fn mark_members_in_use() {
    if !MEMBERS_IN_USE.load(Relaxed) {
        MEMBERS_IN_USE.store(true, Relaxed);
    }
}

/// What a filed key holds, which decides the counts it is part of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Filed {
    /// A hash with field times (counted in INDEXED_HASHES: it makes snapshots RDB 12).
    Hash,
    /// A set or sorted set with member times.
    Members,
    /// A KEYDB.CRON job (not subkey expiry: left out of `subexpiry`).
    Cron,
}

impl Filed {
    pub(crate) fn of(v: &Value) -> Filed {
        match v {
            Value::Hash(_) => Filed::Hash,
            Value::Cron(_) => Filed::Cron,
            _ => Filed::Members,
        }
    }
}

#[derive(Default)]
pub(crate) struct HfeIndex {
    by_time: BTreeSet<(u64, Box<[u8]>)>,
    /// Filing time and kind of each key.
    by_key: HashMap<Box<[u8]>, (u64, Filed)>,
    /// KEYDB.CRON jobs among them.
    crons: usize,
}

impl HfeIndex {
    /// File `key`, holding a `kind`, under `min` (None: it has no times any more).
    pub(crate) fn note(&mut self, key: &[u8], min: Option<u64>, kind: Filed) {
        let Some(t) = min else {
            return self.forget(key);
        };
        let old = self.by_key.insert(key.into(), (t, kind));
        self.count(old.map(|(_, k)| k), Some(kind));
        match old {
            Some((ot, _)) if ot == t => return,
            Some((ot, _)) => {
                self.by_time.remove(&(ot, Box::from(key)));
            }
            None => {}
        }
        self.by_time.insert((t, key.into()));
    }

    pub(crate) fn forget(&mut self, key: &[u8]) {
        if let Some((old, kind)) = self.by_key.remove(key) {
            self.by_time.remove(&(old, Box::from(key)));
            self.count(Some(kind), None);
        }
    }

    /// A key's kind went from `before` to `after` (None: not filed).
    fn count(&mut self, before: Option<Filed>, after: Option<Filed>) {
        if before == after {
            return;
        }
        if before.is_none() {
            INDEXED.fetch_add(1, Relaxed);
        } else if after.is_none() {
            INDEXED.fetch_sub(1, Relaxed);
        }
        if before == Some(Filed::Hash) {
            INDEXED_HASHES.fetch_sub(1, Relaxed);
        } else if before == Some(Filed::Cron) {
            self.crons -= 1;
        }
        if after == Some(Filed::Hash) {
            INDEXED_HASHES.fetch_add(1, Relaxed);
        } else if after == Some(Filed::Cron) {
            self.crons += 1;
        }
    }

    /// Keys with field or member times (INFO keyspace `subexpiry=`).
    pub(crate) fn subkey_len(&self) -> usize {
        self.by_key.len() - self.crons
    }

    /// The earliest filing time and its hash.
    fn first(&self) -> Option<&(u64, Box<[u8]>)> {
        self.by_time.first()
    }
}

impl Drop for HfeIndex {
    fn drop(&mut self) {
        let hashes = self
            .by_key
            .values()
            .filter(|(_, k)| *k == Filed::Hash)
            .count();
        INDEXED_HASHES.fetch_sub(hashes, Relaxed);
        INDEXED.fetch_sub(self.by_key.len(), Relaxed);
    }
}

/// The earliest field or member time of a value, if it has any.
pub(crate) fn min_of(v: &Value) -> Option<u64> {
    match v {
        Value::Cron(j) => Some(j.next_run()),
        v => v.subkey_ttls().and_then(FieldTtls::min),
    }
}

/// Whether `v` is a set or sorted set with a member whose time is before `now_ms` (what a
/// key lookup's lazy step deletes).
#[inline]
pub(crate) fn members_due(v: &Value, now_ms: u64) -> bool {
    v.member_ttls()
        .and_then(FieldTtls::min)
        .is_some_and(|t| t < now_ms)
}

/// The fields or members of `v` whose time is at or before `now_ms`, earliest first.
fn due_of(v: &Value, now_ms: u64, limit: usize) -> Vec<Box<[u8]>> {
    v.subkey_ttls()
        .map_or_else(Vec::new, |t| t.due(now_ms, limit))
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

    /// Delete the members of the set or sorted set at `key` whose time is before `now_ms`
    /// (a key lookup's lazy step), reporting them as one unit, and the key once empty.
    /// Returns whether the key is gone.
    #[cold]
    pub(crate) fn expire_members(&mut self, hash: u64, key: &[u8], now_ms: u64) -> bool {
        let due = match self.dict().get(hash, key).map(|e| &e.value) {
            Some(v @ (Value::Set(_) | Value::ZSet(_))) => {
                due_of(v, now_ms.saturating_sub(1), usize::MAX)
            }
            _ => return false,
        };
        if due.is_empty() || !may_delete(now_ms) {
            return false;
        }
        self.delete_expired_fields(hash, key, &due, true);
        self.dict().get(hash, key).is_none()
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
            done += self.expire_subkeys(&key, now_ms, max_fields - done);
        }
        done
    }

    /// The active cycle on one key: delete up to `max_fields` of its fields or members whose
    /// time is at or before `now_ms`, earliest first (each propagated as an HDEL, SREM or ZREM
    /// of its own, as Redis's cycle does). Returns the fields deleted.
    fn expire_subkeys(&mut self, key: &[u8], now_ms: u64, max_fields: usize) -> usize {
        let hash = crate::hash::key_hash(key);
        let due = match self.dict().get(hash, key) {
            Some(e) if matches!(e.value, Value::Cron(_)) => {
                return self.fire_cron(hash, key, now_ms)
            }
            Some(e) => due_of(&e.value, now_ms, max_fields),
            None => Vec::new(),
        };
        if due.is_empty() {
            // Filed under a time that is no longer its earliest (or gone): refile.
            self.hfe_sync(hash, key);
            return 0;
        }
        self.delete_expired_fields(hash, key, &due, false)
    }

    /// A KEYDB.CRON job whose time came: handed to the runtime to run; a SINGLE job's key
    /// goes now (propagated as a DEL, as an expired key's), a REPEAT job is filed under its
    /// next run. Returns 1 when it fired.
    fn fire_cron(&mut self, hash: u64, key: &[u8], now_ms: u64) -> usize {
        let db = self.db_index();
        let Some(e) = self.entry_for_change(hash, key) else {
            return 0;
        };
        let Value::Cron(j) = &mut e.value else {
            return 0;
        };
        if j.next_run() > now_ms {
            self.hfe_sync(hash, key);
            return 0;
        }
        let job = (**j).clone();
        if job.single {
            self.remove_expiring(hash, key);
            crate::events::expired(db, key);
        } else {
            j.advance(now_ms);
            self.hfe_sync(hash, key);
        }
        crate::events::cron_due(db, key, job);
        1
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
        let (command, event) = match e.value {
            Value::Hash(_) => (&b"HDEL"[..], crate::events::HEXPIRED),
            Value::Set(_) => (&b"SREM"[..], crate::events::SREMOVED),
            Value::ZSet(_) => (&b"ZREM"[..], crate::events::ZREMOVED),
            _ => return 0,
        };
        for f in due {
            e.value.remove_subkey(f);
        }
        let empty = e.value.is_empty_collection();
        crate::events::fields_expired(db, key, command, due, one_unit);
        self.expired_fields += due.len() as u64;
        crate::events::record(event, db, key);
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

#[cfg(test)]
mod tests {
    use super::*;

    // The counters are process-wide and other tests file hashes too: compare differences
    // within one index's lifetime, on keys of this test's own.
    #[test]
    fn hash_count_follows_a_key_that_changes_kind() {
        let mut i = HfeIndex::default();
        let hashes = || INDEXED_HASHES.load(Relaxed);
        let (h0, all0) = (hashes(), INDEXED.load(Relaxed));
        i.note(b"hfe-test-k", Some(10), Filed::Hash);
        assert_eq!(hashes(), h0 + 1);
        // The same key now a set with member times: no longer a hash.
        i.note(b"hfe-test-k", Some(20), Filed::Members);
        assert_eq!(hashes(), h0);
        assert_eq!(INDEXED.load(Relaxed), all0 + 1);
        // Then a cron job: filed, not subkey expiry.
        i.note(b"hfe-test-k", Some(30), Filed::Cron);
        assert_eq!(i.subkey_len(), 0);
        i.note(b"hfe-test-k", Some(40), Filed::Hash);
        assert_eq!((hashes(), i.subkey_len()), (h0 + 1, 1));
        assert_eq!(i.first().map(|(t, _)| *t), Some(40));
        i.forget(b"hfe-test-k");
        assert_eq!((hashes(), INDEXED.load(Relaxed)), (h0, all0));
        i.note(b"hfe-test-a", Some(5), Filed::Hash);
        i.note(b"hfe-test-b", Some(6), Filed::Cron);
        drop(i);
        assert_eq!((hashes(), INDEXED.load(Relaxed)), (h0, all0));
    }
}

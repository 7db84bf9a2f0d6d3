//! A shard: one lock's worth of one database. Every read or write of a key goes through the
//! shard that owns it, which applies lazy expiry and keeps the counts INFO reports.

use crate::dict::Dict;
use crate::entry::{Entry, EntryBox};
use crate::field_expire::{min_of, Filed, HfeIndex};
use crate::snapshot::SnapShared;
use crate::value::Value;
use crate::watch::{self, WatchFlag, WatchTable, Watcher};
use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::Arc;

#[derive(Default)]
pub struct ShardData {
    dict: Dict,
    /// Clients watching keys of this shard (None while nobody does: the common case costs one
    /// branch per write).
    watched: Option<Box<WatchTable>>,
    /// Keys that carry an expiry (INFO keyspace `expires=`).
    volatile: usize,
    /// Where the active-expire walk resumes (a dict scan cursor).
    expire_cursor: u64,
    /// Keys removed because their time ran out (INFO stats `expired_keys`).
    pub expired_keys: u64,
    /// The database this shard belongs to (for the key events of `events`).
    db: usize,
    /// Snapshot parity: entries whose bit differs are still owed to the running snapshot.
    snap_parity: bool,
    /// The running snapshot, until its walk has finished this shard (see `snapshot`).
    snap: Option<Arc<SnapShared>>,
    /// WATCH checker (`watch::enable_check`): the watched keys the current lock holder looked up
    /// with `get_quiet` or touched. Empty unless checking.
    quiet: Vec<(Box<[u8]>, Quiet)>,
    /// On a writable replica: keys its own clients gave a TTL, which the replica expires itself
    /// (the master knows nothing of them; Redis's slaveKeysWithExpire). None otherwise.
    /// Boxed: a shard without any (every master's) stays one pointer bigger, not a table's size.
    replica_keys: Option<Box<ReplicaKeys>>,
    /// Hashes with field times, by their earliest (None while there are none).
    hfe: Option<Box<HfeIndex>>,
    /// Hash fields removed because their time ran out (INFO stats `expired_subkeys`).
    pub expired_fields: u64,
    /// Estimated bytes of this shard's entries (its database's used memory), shared with the
    /// store so readers sum it without locking the shard.
    mem: Arc<ShardMemory>,
    /// Entries handed out to a write since the lock was taken, which it may have grown or
    /// shrunk in place: (key hash, entry address, size counted for it). Settled on unlock.
    resizing: Vec<(u64, usize, usize)>,
}

/// One shard's estimated used bytes. Aligned to its own cache line: every write to the shard
/// updates it, and neighbouring shards are written by other threads.
#[derive(Default)]
#[repr(align(64))]
pub struct ShardMemory(AtomicI64);

impl ShardMemory {
    /// The bytes counted (never negative).
    pub fn bytes(&self) -> u64 {
        self.0.load(Relaxed).max(0) as u64
    }
}

/// The keys a writable replica expires itself, in one shard.
type ReplicaKeys = HashSet<Box<[u8]>>;

/// What the WATCH checker knows of a watched key while its shard is locked.
enum Quiet {
    /// Looked up with `get_quiet` (its fingerprint then; None: absent), not touched since.
    Seen(Option<Vec<u8>>),
    /// Touched, or declared a quiet change: it may change freely until the lock goes.
    Declared,
}

/// Write `e` out to the running snapshot if it is still owed (before it changes).
#[inline]
fn save_owed(snap: &Option<Arc<SnapShared>>, parity: bool, db: usize, e: &mut Entry) {
    if let Some(s) = snap {
        if e.snap_bit() != parity {
            s.save(db, e);
            e.set_snap_bit(parity);
        }
    }
}

/// An expired key met by a lookup stays (seen as absent) instead of being deleted: while a
/// pause holds expiry (reads only), and on a replica (Redis's expireIfNeeded). A writable
/// replica deletes what a write lookup (`save`: the caller may change the entry) or a write
/// command meets (Redis's LOOKUP_WRITE); a read-only one only what a write command's write
/// lookup meets, which its clients cannot run (the master's stream never sees keys
/// expired): the entry must go before such a caller may insert the key again.
/// Cold: only for a key found expired.
#[cold]
fn keeps_expired(save: bool, now_ms: u64) -> bool {
    use crate::expire::Role;
    match crate::expire::role() {
        Role::Master => !save && crate::expire::paused(now_ms),
        Role::Replica => !(save && watch::writing()),
        Role::WritableReplica => !save && !watch::writing(),
    }
}

impl ShardData {
    /// An empty shard of database `db`.
    pub fn new(db: usize) -> ShardData {
        ShardData {
            db,
            ..Default::default()
        }
    }

    /// An empty shard of database `db` counting its bytes into `mem`.
    pub(crate) fn with_memory(db: usize, mem: Arc<ShardMemory>) -> ShardData {
        ShardData {
            db,
            mem,
            ..Default::default()
        }
    }

    /// Estimated bytes of this shard's entries.
    pub fn used_memory(&self) -> u64 {
        self.mem.bytes()
    }

    #[inline]
    fn count_bytes(&self, delta: i64) {
        self.mem.0.fetch_add(delta, Relaxed);
    }

    /// A write may change `e` in place: remember what it was counted at (once per lock).
    #[inline]
    fn note_resizing(resizing: &mut Vec<(u64, usize, usize)>, hash: u64, e: &Entry) {
        let addr = e as *const Entry as usize;
        if !resizing.iter().any(|r| r.1 == addr) {
            resizing.push((hash, addr, e.accounted_size()));
        }
    }

    /// Count what the entries handed out to writes grew or shrank by.
    fn settle_resizing(&mut self) {
        let mut delta = 0i64;
        for (hash, addr, before) in self.resizing.drain(..) {
            if let Some(e) = self.dict.find_addr(hash, addr) {
                delta += e.accounted_size() as i64 - before as i64;
            }
        }
        if delta != 0 {
            self.count_bytes(delta);
        }
    }

    /// When the shard's lock is released: settle the byte count, run the WATCH checker.
    #[inline]
    pub(crate) fn on_unlock(&mut self) {
        if !self.resizing.is_empty() {
            self.settle_resizing();
        }
        self.verify_quiet();
    }

    pub fn len(&self) -> usize {
        self.dict.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dict.is_empty()
    }

    /// Make room for `n` keys in all (a loader's size hint).
    pub fn reserve(&mut self, n: usize) {
        self.dict.reserve(n);
    }

    pub fn volatile(&self) -> usize {
        self.volatile
    }

    pub fn dict(&self) -> &Dict {
        &self.dict
    }

    pub(crate) fn db_index(&self) -> usize {
        self.db
    }

    /// Hashes with field times in this shard (INFO keyspace `subexpiry=`).
    pub fn subexpiry(&self) -> usize {
        self.hfe.as_ref().map_or(0, |i| i.subkey_len())
    }

    pub(crate) fn hfe_index(&self) -> Option<&HfeIndex> {
        self.hfe.as_deref()
    }

    /// File the value at `key` under its earliest field or member time again (after such
    /// times changed), or drop it from the index when it has none (or is gone).
    pub fn hfe_sync(&mut self, hash: u64, key: &[u8]) {
        let (min, kind) = match self.dict.get(hash, key) {
            Some(e) => (min_of(&e.value), Filed::of(&e.value)),
            None => (None, Filed::Members),
        };
        match (&mut self.hfe, min) {
            (None, None) => {}
            (slot, min) => slot.get_or_insert_default().note(key, min, kind),
        }
    }

    /// The entry at `key` (expired or not) for a change the engine makes itself: a running
    /// snapshot that still owes it gets it first.
    pub(crate) fn entry_for_change(&mut self, hash: u64, key: &[u8]) -> Option<&mut Entry> {
        let e = self.dict.get_mut(hash, key)?;
        Self::note_resizing(&mut self.resizing, hash, e);
        save_owed(&self.snap, self.snap_parity, self.db, e);
        Some(e)
    }

    /// The live entry for `key`, deleting it first if it has expired. Under a write command a
    /// found key counts as touched for WATCH (the caller may change it in place): the safe
    /// default for a handler that does not decide itself (see `get_quiet`).
    /// Under a write command the entry is also written out first to a running snapshot
    /// that still owes it (a read command's `&mut` only moves the access clock).
    #[inline]
    pub fn get(&mut self, hash: u64, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        if (self.watched.is_some() || watch::collecting())
            && watch::writing()
            && self.peek(hash, key, now_ms).is_some()
        {
            self.touch(key);
        }
        let save = self.snap.is_some() && watch::writing();
        self.lookup(hash, key, now_ms, save)
    }

    /// `get` without counting as a WATCH touch, for a write command that touches exactly when
    /// Redis signals the key as modified: the caller may change the entry, and then must call
    /// `touch(key)` under this same lock (before or after the change, never after unlocking),
    /// or `quiet_change(key)` where Redis changes it without signalling. The WATCH checker
    /// (`watch::enable_check`) holds handlers to that.
    pub fn get_quiet(&mut self, hash: u64, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        if self.watched.is_some() && watch::checker().is_some() {
            let found = self.lookup(hash, key, now_ms, true).is_some();
            self.note_quiet(hash, key);
            return if found {
                self.dict.get_mut(hash, key)
            } else {
                None
            };
        }
        self.lookup(hash, key, now_ms, true)
    }

    /// WATCH checker: remember how a watched key looked when `get_quiet` handed it out.
    #[cold]
    fn note_quiet(&mut self, hash: u64, key: &[u8]) {
        let Some(fingerprint) = watch::checker() else {
            return;
        };
        let watched = self.watched.as_ref().is_some_and(|t| t.contains_key(key));
        if !watched || self.quiet.iter().any(|(k, _)| &**k == key) {
            return;
        }
        let print = self.dict.get(hash, key).map(fingerprint);
        self.quiet.push((key.into(), Quiet::Seen(print)));
    }

    /// A change Redis makes to `key` without signalling it (so without invalidating WATCH):
    /// stream consumer-group state, PFDEBUG's re-encoding. Not a touch; it only tells the WATCH
    /// checker that the change is deliberate.
    pub fn quiet_change(&mut self, key: &[u8]) {
        if self.watched.is_some() && watch::checker().is_some() {
            self.declare(key);
        }
    }

    /// WATCH checker: `key` may change until the lock goes (touched or a quiet change).
    #[cold]
    fn declare(&mut self, key: &[u8]) {
        let watched = self.watched.as_ref().is_some_and(|t| t.contains_key(key));
        match self.quiet.iter_mut().find(|(k, _)| &**k == key) {
            Some((_, q)) => *q = Quiet::Declared,
            None if watched => self.quiet.push((key.into(), Quiet::Declared)),
            None => {}
        }
    }

    /// WATCH checker, when the shard's lock is released: every watched key handed out by
    /// `get_quiet` and neither touched nor declared a quiet change must be as it was.
    #[inline]
    pub(crate) fn verify_quiet(&mut self) {
        if !self.quiet.is_empty() {
            self.verify_quiet_slow();
        }
    }

    #[cold]
    fn verify_quiet_slow(&mut self) {
        let seen = std::mem::take(&mut self.quiet);
        let Some(fingerprint) = watch::checker() else {
            return;
        };
        for (key, q) in seen {
            let Quiet::Seen(before) = q else { continue };
            let now = self
                .dict
                .get(crate::hash::key_hash(&key), &key)
                .map(fingerprint);
            if now != before && !std::thread::panicking() {
                eprintln!(
                    "WATCH checker: key {:?} of db {} changed without a touch (a lost WATCH \
                     invalidation); aborting",
                    String::from_utf8_lossy(&key),
                    self.db
                );
                std::process::abort();
            }
        }
    }

    /// The live entry (an expired one is deleted); `save`: the caller may change it, so a
    /// running snapshot that still owes it gets it first.
    #[inline]
    fn lookup(&mut self, hash: u64, key: &[u8], now_ms: u64, save: bool) -> Option<&mut Entry> {
        let e = self.dict.get(hash, key)?;
        let expired = e.is_expired(now_ms);
        let members_due = !expired
            && crate::field_expire::members_in_use()
            && crate::field_expire::members_due(&e.value, now_ms);
        if expired {
            // A pause holds expiry, and so does a replica: a read sees the key absent, nobody
            // deletes it.
            if keeps_expired(save, now_ms) {
                return None;
            }
            self.remove_expiring(hash, key);
            self.expired_keys += 1;
            crate::events::expired(self.db, key);
            return None;
        }
        if members_due && self.expire_members(hash, key, now_ms) {
            return None;
        }
        let e = self.dict.get_mut(hash, key)?;
        if save {
            save_owed(&self.snap, self.snap_parity, self.db, e);
        }
        if save || watch::writing() {
            Self::note_resizing(&mut self.resizing, hash, e);
        }
        Some(e)
    }

    /// Remove a key found expired by a walk (SCAN, RANDOMKEY), counting it in `expired_keys`
    /// and reporting it like lazy expiry does. Returns whether it was there.
    pub fn remove_expired(&mut self, hash: u64, key: &[u8]) -> bool {
        // A walk is a read: on a replica it only hides the key (Redis's SCAN and RANDOMKEY).
        if crate::expire::paused(crate::clock::now_ms())
            || crate::expire::role() != crate::expire::Role::Master
        {
            return self.dict.get(hash, key).is_some();
        }
        if self.remove_expiring(hash, key).is_none() {
            return false;
        }
        self.expired_keys += 1;
        crate::events::expired(self.db, key);
        true
    }

    /// Read-only view that treats an expired entry as absent without removing it.
    pub fn peek(&self, hash: u64, key: &[u8], now_ms: u64) -> Option<&Entry> {
        self.dict.get(hash, key).filter(|e| !e.is_expired(now_ms))
    }

    /// Whether `key` is live (an expired entry is deleted): never a WATCH touch.
    pub fn contains(&mut self, hash: u64, key: &[u8], now_ms: u64) -> bool {
        self.lookup(hash, key, now_ms, false).is_some()
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
        self.touch(key);
        let new_timed = min_of(&value).is_some();
        if let Some(e) = self.lookup(hash, key, now_ms, true) {
            let old = std::mem::replace(&mut e.value, value);
            // A new object under LRU; under LFU the counter carries over, as in Redis.
            if !crate::clock::lfu_mode() {
                e.access = crate::clock::lru_clock_at(now_ms);
            }
            if !keep_ttl && e.expire_at() != 0 {
                e.try_set_expire_at(0);
                self.volatile -= 1;
            }
            if self.hfe.is_some() || new_timed {
                self.hfe_sync(hash, key);
            }
            return Some(old);
        }
        self.insert(hash, EntryBox::new_at(key, value, now_ms));
        crate::events::record(crate::events::NEW, self.db, key);
        None
    }

    /// Create `key`, absent (or expired), without signalling it for WATCH: Redis's dbAdd with
    /// no signalModifiedKey after it (a BITFIELD whose every write failed still creates its
    /// key). Declared to the WATCH checker as a quiet change.
    pub fn set_quiet(&mut self, hash: u64, key: &[u8], value: Value, now_ms: u64) {
        let live = self.lookup(hash, key, now_ms, true).is_some();
        debug_assert!(!live, "set_quiet on a live key");
        if live {
            // Never replace a value unannounced.
            self.set(hash, key, value, false, now_ms);
            return;
        }
        self.quiet_change(key);
        self.insert(hash, EntryBox::new_at(key, value, now_ms));
        crate::events::record(crate::events::NEW, self.db, key);
    }

    /// Every insertion: a new entry is not part of a running snapshot's cut.
    fn insert(&mut self, hash: u64, mut entry: EntryBox) {
        entry.set_snap_bit(self.snap_parity);
        if let Some(t) = min_of(&entry.value) {
            let kind = Filed::of(&entry.value);
            self.hfe
                .get_or_insert_default()
                .note(entry.key(), Some(t), kind);
        }
        self.count_bytes(entry.accounted_size() as i64);
        self.dict.insert_new(hash, entry);
    }

    /// Insert a whole entry (expiry included) for a key known to be absent or expired.
    pub fn insert_entry(&mut self, hash: u64, entry: EntryBox, now_ms: u64) {
        // The caller replaces the key: `save` (not a read), so an expired entry goes even
        // while a pause holds expiry, never leaving the key twice in the table.
        if self.lookup(hash, entry.key(), now_ms, true).is_some() {
            let k = entry.key().to_vec();
            self.remove(hash, &k);
        }
        if entry.expire_at() != 0 {
            self.volatile += 1;
            self.note_replica_ttl(entry.key());
        }
        self.touch(entry.key());
        crate::events::record(crate::events::NEW, self.db, entry.key());
        self.insert(hash, entry);
    }

    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<EntryBox> {
        let e = self.unlink(hash, key)?;
        self.touch(key);
        Some(e)
    }

    /// `remove` for a key whose time ran out: a WATCH touch, but not one of the running
    /// command's changes (tracking invalidates expired keys on their own, with no writer).
    pub(crate) fn remove_expiring(&mut self, hash: u64, key: &[u8]) -> Option<EntryBox> {
        let e = self.unlink(hash, key)?;
        self.touch_watchers(key);
        Some(e)
    }

    fn unlink(&mut self, hash: u64, key: &[u8]) -> Option<EntryBox> {
        let mut e = self.dict.remove(hash, key)?;
        // Counted as it was when handed out, if a write had it (its change is not settled).
        let addr = &*e as *const Entry as usize;
        let counted = match self.resizing.iter().position(|r| r.1 == addr) {
            Some(i) => self.resizing.swap_remove(i).2,
            None => e.accounted_size(),
        };
        self.count_bytes(-(counted as i64));
        save_owed(&self.snap, self.snap_parity, self.db, &mut e);
        if e.expire_at() != 0 {
            self.volatile -= 1;
        }
        if let Some(i) = self.hfe.as_mut() {
            i.forget(key);
        }
        Some(e)
    }

    /// Set (non-zero) or clear (0) a live key's expiry. Returns false if the key is absent.
    pub fn set_expire(&mut self, hash: u64, key: &[u8], at_ms: u64, now_ms: u64) -> bool {
        if self.lookup(hash, key, now_ms, true).is_none() {
            return false;
        }
        self.touch(key);
        let e = self.dict.get_mut(hash, key).expect("entry just found");
        let was = e.expire_at() != 0;
        if !e.try_set_expire_at(at_ms) {
            // No slot yet: rebuild the entry with one (same value, access clock and bucket).
            self.settle_resizing();
            let old = self.dict.remove(hash, key).expect("entry just found");
            self.count_bytes(-(old.accounted_size() as i64));
            let (value, access, _) = old.into_parts();
            self.insert(hash, EntryBox::new_expiring(key, value, access, at_ms));
        }
        match (was, at_ms != 0) {
            (false, true) => self.volatile += 1,
            (true, false) => self.volatile -= 1,
            _ => {}
        }
        if at_ms != 0 {
            self.note_replica_ttl(key);
        }
        true
    }

    // --- writable replicas -------------------------------------------------------------------

    /// `key` just got a TTL: on a writable replica, from one of its own clients (not the
    /// master's stream, not a load), the replica must expire it itself (Redis's
    /// rememberSlaveKeyWithExpire). On a master: one thread-local load.
    #[inline]
    fn note_replica_ttl(&mut self, key: &[u8]) {
        if watch::writing() && !watch::from_master() {
            self.note_replica_ttl_slow(key);
        }
    }

    #[cold]
    fn note_replica_ttl_slow(&mut self, key: &[u8]) {
        if crate::expire::role() == crate::expire::Role::WritableReplica {
            crate::expire::REPLICA_KEYS_NOTED.store(true, std::sync::atomic::Ordering::Relaxed);
            self.replica_keys
                .get_or_insert_with(Default::default)
                .insert(key.into());
        }
    }

    /// Whether some key of this shard is one a writable replica expires itself.
    #[inline]
    pub fn has_replica_keys(&self) -> bool {
        self.replica_keys.is_some()
    }

    /// Stop tracking keys for replica expiry (promoted to master: active expiry covers them).
    pub fn forget_replica_keys(&mut self) {
        self.replica_keys = None;
    }

    /// Keys given a TTL on this writable replica (`note_replica_ttl`) that are still tracked.
    pub fn replica_key_count(&self) -> usize {
        self.replica_keys.as_ref().map_or(0, |s| s.len())
    }

    /// Delete the tracked keys whose time ran out, logging each as lazy expiry does; keys that
    /// are gone or lost their TTL are no longer tracked (Redis's expireSlaveKeys). Returns the
    /// keys expired.
    pub fn expire_replica_keys(&mut self, now_ms: u64) -> usize {
        let Some(mut tracked) = self.replica_keys.take() else {
            return 0;
        };
        let mut expired = 0;
        tracked.retain(|k| {
            let h = crate::hash::key_hash(k);
            let at = self.dict.get(h, k).map_or(0, |e| e.expire_at());
            if at == 0 {
                return false;
            }
            if at > now_ms || crate::expire::loading() {
                return true;
            }
            self.remove_expiring(h, k);
            self.expired_keys += 1;
            crate::events::expired(self.db, k);
            expired += 1;
            false
        });
        if !tracked.is_empty() {
            self.replica_keys = Some(tracked);
        }
        expired
    }

    /// Drop every key, handing back the old table (the caller decides where to free it; empty
    /// when a running snapshot took it over).
    pub fn clear(&mut self) -> Dict {
        self.touch_all(None);
        self.volatile = 0;
        self.replica_keys = None;
        self.hfe = None;
        self.expire_cursor = 0;
        self.resizing.clear();
        self.mem.0.store(0, Relaxed);
        let old = self.dict.take();
        if let Some(snap) = self.snap.take() {
            // A running snapshot still owes entries of this table: it takes the table over,
            // writes them out and frees it (instead of this thread encoding them all now).
            snap.detach(self.db, self.snap_parity, old);
            return Dict::default();
        }
        old
    }

    /// Exchange contents with another shard (SWAPDB). Watches stay with their database.
    pub fn swap(&mut self, other: &mut ShardData) {
        // Entries change database: a running snapshot gets both sides as they were first.
        self.save_all_owed();
        other.save_all_owed();
        self.touch_all(Some(other));
        other.touch_all(Some(self));
        self.settle_resizing();
        other.settle_resizing();
        let (mine, theirs) = (self.mem.0.load(Relaxed), other.mem.0.load(Relaxed));
        self.mem.0.store(theirs, Relaxed);
        other.mem.0.store(mine, Relaxed);
        std::mem::swap(&mut self.dict, &mut other.dict);
        std::mem::swap(&mut self.volatile, &mut other.volatile);
        std::mem::swap(&mut self.hfe, &mut other.hfe);
        // As Redis's SWAPDB: the writable replica's own TTL keys are no longer tracked.
        self.replica_keys = None;
        other.replica_keys = None;
        std::mem::swap(&mut self.expire_cursor, &mut other.expire_cursor);
    }

    // --- snapshots ---------------------------------------------------------------------------

    /// At a snapshot's cut (every shard locked): every entry becomes owed to `snap`.
    pub(crate) fn begin_snapshot(&mut self, snap: Arc<SnapShared>) {
        self.snap_parity = !self.snap_parity;
        self.snap = if self.dict.is_empty() {
            None
        } else {
            Some(snap)
        };
    }

    /// Write out every entry still owed to the running snapshot (the shard is about to change
    /// wholesale).
    fn save_all_owed(&mut self) {
        if self.snap.is_none() {
            return;
        }
        let (snap, parity, db) = (&self.snap, self.snap_parity, self.db);
        self.dict.for_each_mut(|e| save_owed(snap, parity, db, e));
        self.snap = None;
    }

    /// An aborted snapshot: mark every owed entry written (without writing it) and drop the
    /// hook.
    pub(crate) fn snapshot_skip(&mut self) {
        if self.snap.take().is_some() {
            let parity = self.snap_parity;
            self.dict.for_each_mut(|e| e.set_snap_bit(parity));
        }
    }

    /// One step of the snapshot walk from `cursor`: encode the owed entries of whole buckets
    /// into `out` (until about `max_bytes` or `max_entries`), marking them written. Returns the
    /// next cursor (0: this shard is done, and its hook dropped) and the keys encoded.
    pub(crate) fn snapshot_step(
        &mut self,
        mut cursor: u64,
        out: &mut Vec<u8>,
        max_bytes: usize,
        max_entries: usize,
    ) -> (u64, u64) {
        let Some(snap) = self.snap.clone() else {
            return (0, 0);
        };
        let parity = self.snap_parity;
        let (mut seen, mut keys) = (0usize, 0u64);
        loop {
            let skip = snap.skips(self.db);
            cursor = self.dict.scan_mut(cursor, |e| {
                seen += 1;
                if e.snap_bit() != parity {
                    if !skip && snap.encode(out, e) {
                        keys += 1;
                        crate::save_delay::key_written();
                    }
                    e.set_snap_bit(parity);
                }
            });
            if cursor == 0 {
                self.snap = None;
                return (0, keys);
            }
            if out.len() >= max_bytes || seen >= max_entries {
                return (cursor, keys);
            }
        }
    }

    // --- WATCH -------------------------------------------------------------------------------

    /// Record that `flag`'s client watches `key`.
    pub fn watch(&mut self, key: &[u8], flag: &WatchFlag, now_ms: u64) {
        let hash = crate::hash::key_hash(key);
        let stale = self
            .dict
            .get(hash, key)
            .is_some_and(|e| e.is_expired(now_ms));
        let list = self
            .watched
            .get_or_insert_with(Default::default)
            .entry(key.into())
            .or_default();
        if !list.iter().any(|w| std::sync::Arc::ptr_eq(&w.flag, flag)) {
            list.push(Watcher {
                flag: flag.clone(),
                stale,
            });
        }
    }

    pub fn unwatch(&mut self, key: &[u8], flag: &WatchFlag) {
        let Some(table) = self.watched.as_mut() else {
            return;
        };
        if let Some(list) = table.get_mut(key) {
            list.retain(|w| !std::sync::Arc::ptr_eq(&w.flag, flag));
            if list.is_empty() {
                table.remove(key);
            }
        }
        if table.is_empty() {
            self.watched = None;
        }
    }

    /// EXEC's check of one watched key: has it expired since WATCH (without being deleted yet)?
    pub fn watched_key_expired(&self, key: &[u8], flag: &WatchFlag, now_ms: u64) -> bool {
        let stale = self
            .watched
            .as_ref()
            .and_then(|t| t.get(key))
            .and_then(|l| l.iter().find(|w| std::sync::Arc::ptr_eq(&w.flag, flag)))
            .is_some_and(|w| w.stale);
        !stale
            && self
                .dict
                .get(crate::hash::key_hash(key), key)
                .is_some_and(|e| e.is_expired(now_ms))
    }

    /// `key` changed: flag its watchers (a stale key's deletion is no change).
    #[inline]
    pub fn touch(&mut self, key: &[u8]) {
        if watch::collecting() {
            watch::note_touched(key);
        }
        self.touch_watchers(key);
    }

    #[inline]
    pub(crate) fn touch_watchers(&mut self, key: &[u8]) {
        if self.watched.is_none() {
            return;
        }
        self.touch_slow(key);
    }

    #[cold]
    fn touch_slow(&mut self, key: &[u8]) {
        self.quiet_change(key);
        let exists = self.dict.get(crate::hash::key_hash(key), key).is_some();
        let Some(list) = self.watched.as_mut().and_then(|t| t.get_mut(key)) else {
            return;
        };
        for w in list.iter_mut() {
            if w.stale && !exists {
                w.stale = false;
            } else {
                w.dirty();
            }
        }
    }

    /// The whole database behind this shard is emptied (FLUSHDB) or replaced by `with`'s
    /// contents (SWAPDB): flag the watchers of keys that exist on either side, as Redis's
    /// touchAllWatchedKeysInDb does (stale keys that stay absent or stale are no change).
    fn touch_all(&mut self, with: Option<&ShardData>) {
        self.quiet.clear();
        let Some(table) = self.watched.as_mut() else {
            return;
        };
        let now = crate::clock::now_ms();
        for (key, list) in table.iter_mut() {
            let h = crate::hash::key_hash(key);
            let here = self.dict.get(h, key).is_some();
            let there = with.and_then(|o| o.dict.get(h, key));
            if !here && there.is_none() {
                continue;
            }
            let there_stale = there.is_some_and(|e| e.is_expired(now));
            for w in list.iter_mut() {
                if w.stale {
                    if there.is_none() {
                        w.stale = false;
                        continue;
                    }
                    if there_stale {
                        continue;
                    }
                } else if !here && there_stale {
                    w.stale = true;
                    continue;
                }
                w.dirty();
            }
        }
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
            if self.remove_expiring(h, &k).is_some() {
                expired += 1;
                crate::events::expired(self.db, &k);
            }
        }
        self.expired_keys += expired as u64;
        (expired, sampled)
    }
}

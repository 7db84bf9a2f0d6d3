//! Key events the engine itself causes and the command layer may want to publish as keyspace
//! notifications: a key removed because its time ran out (lazy or active expiry) and a key
//! added to a database; also a read that found no key (`keymiss`), which the command layer
//! records here so that it is published in order with the `expired` that may have caused it.
//! The engine knows nothing about pub/sub; it only records the event on the current thread
//! when someone asked for that kind (one relaxed atomic load otherwise). Whoever runs engine
//! code on a thread (a command, the active-expire cycle) takes the events afterwards with
//! `take` and publishes them.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};

/// A key expired (lazily on access or in the active cycle).
pub const EXPIRED: u8 = 1;
/// A key was added to a database.
pub const NEW: u8 = 2;
/// A read lookup found no key (Redis's `keymiss`); recorded by the command layer.
pub const KEYMISS: u8 = 4;
/// Fields of a hash expired (Redis's `hexpired`).
pub const HEXPIRED: u8 = 8;
/// A hash, set or sorted set was deleted because its last field or member expired (a `del`
/// event).
pub const EMPTIED: u8 = 16;
/// Members of a set expired (an `srem` event, as KeyDB's member expiry reports it).
pub const SREMOVED: u8 = 32;
/// Members of a sorted set expired (a `zrem` event).
pub const ZREMOVED: u8 = 64;

// Process-wide: read (one relaxed load) on every key added or expired, inside the shard and
// entry code where no store is reachable; the config layer mirrors notify-keyspace-events here.
static WANTED: AtomicU8 = AtomicU8::new(0);
/// Set while some client tracks keys (client-side caching): expired keys are then also kept
/// for the tracking layer, apart from the keyspace events above.
// Process-wide for the same reason as WANTED (read on every expiry, no store at hand).
static TRACKED: AtomicBool = AtomicBool::new(false);

// Per thread by nature: the events of the engine code that ran on this thread, taken by it.
thread_local! {
    static PENDING: RefCell<Vec<KeyEvent>> = const { RefCell::new(Vec::new()) };
    static EXPIRED_KEYS: RefCell<Vec<Box<[u8]>>> = const { RefCell::new(Vec::new()) };
}

/// Keep expired keys for `take_expired` from now on (or stop).
pub fn set_tracked(on: bool) {
    TRACKED.store(on, Relaxed);
}

/// True while expired keys are kept for tracking.
#[inline]
pub fn tracked() -> bool {
    TRACKED.load(Relaxed)
}

/// The keys expired on this thread while tracking was on, since the last call.
pub fn take_expired() -> Vec<Box<[u8]>> {
    EXPIRED_KEYS.with(|p| std::mem::take(&mut *p.borrow_mut()))
}

/// One recorded event: its kind, the database and the key.
pub struct KeyEvent {
    pub kind: u8,
    pub db: usize,
    pub key: Box<[u8]>,
}

/// Which kinds to record from now on (a mask of `EXPIRED`, `NEW`, `KEYMISS`; 0 = none).
pub fn set_wanted(mask: u8) {
    WANTED.store(mask, Relaxed);
    if mask == 0 {
        PENDING.with(|p| p.borrow_mut().clear());
    }
}

/// True when any kind is being recorded.
#[inline]
pub fn any_wanted() -> bool {
    WANTED.load(Relaxed) != 0
}

#[inline]
pub(crate) fn record(kind: u8, db: usize, key: &[u8]) {
    if kind == EXPIRED && TRACKED.load(Relaxed) {
        EXPIRED_KEYS.with(|p| p.borrow_mut().push(key.into()));
    }
    if WANTED.load(Relaxed) & kind != 0 {
        PENDING.with(|p| {
            p.borrow_mut().push(KeyEvent {
                kind,
                db,
                key: key.into(),
            })
        });
    }
}

/// A read lookup of `key` in `db` found nothing: recorded while `KEYMISS` is wanted (one
/// relaxed load otherwise).
#[inline]
pub fn keymiss(db: usize, key: &[u8]) {
    record(KEYMISS, db, key);
}

/// Forget the last `n` keymiss events recorded on this thread: a command that counted its
/// reads is about to run again elsewhere, where it reads (and records) them again.
pub fn forget_keymiss(mut n: usize) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let mut i = p.len();
        while n > 0 && i > 0 {
            i -= 1;
            if p[i].kind == KEYMISS {
                p.remove(i);
                n -= 1;
            }
        }
    });
}

/// Called for every key the engine deletes because its time ran out (lazily or in the active
/// cycle), with the shard still locked: the write log turns it into a DEL in order with the
/// writes around it. Set once at start-up; expiry is the cold path, so this costs nothing on
/// the hot one.
// Process-wide: a callback with a fixed signature, called deep in the shard code (no store).
static EXPIRE_HOOK: std::sync::OnceLock<fn(usize, &[u8])> = std::sync::OnceLock::new();

/// Install the expiry hook (first call wins).
pub fn set_expire_hook(f: fn(usize, &[u8])) {
    let _ = EXPIRE_HOOK.set(f);
}

/// A key of `db` was removed because it expired (the shard is locked by the caller).
#[inline]
pub(crate) fn expired(db: usize, key: &[u8]) {
    record(EXPIRED, db, key);
    if let Some(h) = EXPIRE_HOOK.get() {
        h(db, key);
    }
}

/// (database, key, the command that removes them (HDEL, SREM or ZREM), fields or members,
/// whether the deletions form one unit).
pub type FieldExpireHook = fn(usize, &[u8], &[u8], &[Box<[u8]>], bool);

/// Called for every hash field or set/sorted-set member the engine deletes because its time
/// ran out, with the shard still locked: the write log turns it into an HDEL (as Redis
/// propagates it), SREM or ZREM.
// Process-wide, as EXPIRE_HOOK and for the same reason.
static FIELD_EXPIRE_HOOK: std::sync::OnceLock<FieldExpireHook> = std::sync::OnceLock::new();

/// Install the field-expiry hook (first call wins).
pub fn set_field_expire_hook(f: FieldExpireHook) {
    let _ = FIELD_EXPIRE_HOOK.set(f);
}

/// `fields` of `key` in `db` were removed because their time ran out.
#[inline]
pub(crate) fn fields_expired(
    db: usize,
    key: &[u8],
    command: &[u8],
    fields: &[Box<[u8]>],
    one_unit: bool,
) {
    if let Some(h) = FIELD_EXPIRE_HOOK.get() {
        h(db, key, command, fields, one_unit);
    }
}

/// (database, key, the job): a KEYDB.CRON job whose time came, to run once the shard is
/// unlocked.
pub type CronHook = fn(usize, &[u8], crate::types::CronJob);

// Process-wide, as EXPIRE_HOOK and for the same reason.
static CRON_HOOK: std::sync::OnceLock<CronHook> = std::sync::OnceLock::new();

/// Install the hook that runs due KEYDB.CRON jobs (first call wins).
pub fn set_cron_hook(f: CronHook) {
    let _ = CRON_HOOK.set(f);
}

/// The job at `key` in `db` is due (the shard is locked by the caller: the hook only queues).
pub(crate) fn cron_due(db: usize, key: &[u8], job: crate::types::CronJob) {
    if let Some(h) = CRON_HOOK.get() {
        h(db, key, job);
    }
}

/// The events recorded on this thread since the last call, oldest first.
pub fn take() -> Vec<KeyEvent> {
    PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()))
}

/// True when this thread has recorded events not yet taken.
pub fn pending() -> bool {
    PENDING.with(|p| !p.borrow().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_wanted_kinds() {
        set_wanted(EXPIRED);
        record(NEW, 0, b"a");
        record(EXPIRED, 3, b"b");
        let ev = take();
        assert_eq!(ev.len(), 1);
        assert_eq!((ev[0].kind, ev[0].db, &*ev[0].key), (EXPIRED, 3, &b"b"[..]));
        assert!(!pending());
        set_wanted(0);
    }
}

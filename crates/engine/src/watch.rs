//! WATCH bookkeeping inside a shard: which clients watch which of its keys, and the touches that
//! make their EXEC fail. Touches happen inside the shard's critical section (by the code that
//! changes the key), so an EXEC that holds the shard afterwards always sees them.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A client's "a watched key was touched" flag (Redis's CLIENT_DIRTY_CAS).
pub type WatchFlag = Arc<AtomicBool>;

pub(crate) struct Watcher {
    pub flag: WatchFlag,
    /// The key existed but had already expired when WATCH ran: its deletion is no change.
    pub stale: bool,
}

impl Watcher {
    pub fn dirty(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }
}

pub(crate) type WatchTable = HashMap<Box<[u8]>, Vec<Watcher>>;

// Per thread by nature: the command running on this thread (as TOUCHED / COLLECTING below).
thread_local! {
    /// The command running on this thread: `CMD_WRITE` while it is flagged `write` (its
    /// lookups of a watched key count as touching it: it may change the entry in place),
    /// `CMD_FROM_MASTER` while it comes from this replica's master (see `expire::role`).
    static COMMAND: Cell<u8> = const { Cell::new(0) };
}

const CMD_WRITE: u8 = 1;
const CMD_FROM_MASTER: u8 = 2;

/// Declare the command about to run on this thread (set by the dispatcher): whether it may
/// write, and whether it comes from the master's replication stream (Redis's CLIENT_MASTER).
/// One store per command for both.
pub fn set_command(write: bool, from_master: bool) {
    COMMAND.with(|c| c.set(write as u8 | (from_master as u8) << 1));
}

pub(crate) fn writing() -> bool {
    COMMAND.with(|c| c.get() & CMD_WRITE != 0)
}

/// True while this thread runs a command of the master's stream: keys are never expired for
/// it (Redis's expireIfNeeded), its later DEL is what removes them.
#[inline]
pub fn from_master() -> bool {
    COMMAND.with(|c| c.get() & CMD_FROM_MASTER != 0)
}

/// What the WATCH checker compares to find a change: a fingerprint of an entry's contents and
/// expiry that ignores its encoding and access clock (see `enable_check`).
pub type Fingerprint = fn(&crate::entry::Entry) -> Vec<u8>;

// Process-wide: a debug switch with a fixed callback, read when a shard's lock is released.
static CHECK: std::sync::OnceLock<Fingerprint> = std::sync::OnceLock::new();

/// Turn on the WATCH checker (debug builds, tests): every watched key a handler looks up with
/// `ShardData::get_quiet` is fingerprinted, and when the shard's lock is released the key must
/// be unchanged unless the handler called `ShardData::touch` (or `ShardData::quiet_change`) for
/// it. A change nobody declared is a lost WATCH invalidation: the process aborts, naming the
/// key and the command's shard.
pub fn enable_check(fingerprint: Fingerprint) {
    let _ = CHECK.set(fingerprint);
}

#[inline]
pub(crate) fn checker() -> Option<Fingerprint> {
    CHECK.get().copied()
}

thread_local! {
    /// While tracking is on: the keys the running command signalled as modified (every WATCH
    /// touch), which are exactly the keys CLIENT TRACKING must invalidate (Redis routes both
    /// through signalModifiedKey). None while not collecting.
    static TOUCHED: std::cell::RefCell<Option<Vec<Box<[u8]>>>> =
        const { std::cell::RefCell::new(None) };
    static COLLECTING: Cell<bool> = const { Cell::new(false) };
}

/// Start collecting the keys this thread's command touches (see `take_touched`).
pub fn collect_touches() {
    TOUCHED.with(|t| *t.borrow_mut() = Some(Vec::new()));
    COLLECTING.with(|c| c.set(true));
}

/// Stop collecting and hand back the keys touched since `collect_touches`, each once.
pub fn take_touched() -> Vec<Box<[u8]>> {
    COLLECTING.with(|c| c.set(false));
    let mut keys = TOUCHED.with(|t| t.borrow_mut().take()).unwrap_or_default();
    if keys.len() > 1 {
        let mut seen = std::collections::HashSet::with_capacity(keys.len());
        keys.retain(|k| seen.insert(k.clone()));
    }
    keys
}

#[inline]
pub(crate) fn collecting() -> bool {
    COLLECTING.with(|c| c.get())
}

#[cold]
pub(crate) fn note_touched(key: &[u8]) {
    TOUCHED.with(|t| {
        if let Some(v) = t.borrow_mut().as_mut() {
            v.push(key.into());
        }
    });
}

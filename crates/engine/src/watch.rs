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

thread_local! {
    /// True while this thread runs a command flagged `write`: such a command's lookups of a
    /// watched key count as touching it (it may change the entry in place).
    static WRITING: Cell<bool> = const { Cell::new(false) };
}

/// Declare whether the command about to run on this thread may write (set by the dispatcher).
pub fn set_writing(on: bool) {
    WRITING.with(|w| w.set(on));
}

pub(crate) fn writing() -> bool {
    WRITING.with(|w| w.get())
}

/// What the WATCH checker compares to find a change: a fingerprint of an entry's contents and
/// expiry that ignores its encoding and access clock (see `enable_check`).
pub type Fingerprint = fn(&crate::entry::Entry) -> Vec<u8>;

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

//! `rdb-key-save-delay`: a pause per key a snapshot writes (RDB files, AOF rewrites,
//! replication payloads), so tests can keep a save running. Microseconds; a negative -N
//! pauses 1 µs once in N keys, as Redis's debugDelay.
//!
//! Redis's forked child sleeps while the parent serves clients. Here the pause owed for a
//! shard's keys is taken by the snapshotting thread after it released that shard, so clients
//! never wait for it. Keys a client thread wrote out before changing them are owed too, when
//! the snapshotting thread passes them on: a save takes as long as Redis's child would,
//! however much the keyspace changes meanwhile.
//! A save written by a writer process (BGSAVE, AOF rewrite: threads that called
//! `keep_delay_of_start`) keeps the delay set when it began, as Redis's child keeps its copy of
//! the configuration: setting it back to 0 speeds up the next save, not the running one (the
//! suite then kills it). Other snapshots (replica syncs) re-read it: 0 ends their pause.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

// Process-wide: the config's mirror hook has no store at hand, and the delay is a test knob
// read by the snapshotting thread between keys.
/// The configured delay (mirrored from the config by the server).
pub static KEY_SAVE_DELAY_US: AtomicI64 = AtomicI64::new(0);

// Per thread by nature: the state of the snapshot this thread is walking.
thread_local! {
    /// Keys this snapshotting thread wrote since its last pause; None on other threads and
    /// while its snapshot has no delay.
    static OWED_KEYS: Cell<Option<u64>> = const { Cell::new(None) };
    /// The delay of this thread's snapshot, read when it began.
    static DELAY_US: Cell<i64> = const { Cell::new(0) };
    /// This thread's snapshots keep the delay of their start.
    static KEEP_DELAY: Cell<bool> = const { Cell::new(false) };
}

/// Called by a snapshot sink after each key.
#[inline]
pub fn key_written() {
    OWED_KEYS.with(|o| {
        if let Some(n) = o.get() {
            o.set(Some(n + 1))
        }
    });
}

/// Called by the snapshotting thread for `n` keys written out on its behalf.
pub(crate) fn keys_written(n: u64) {
    OWED_KEYS.with(|o| {
        if let Some(owed) = o.get() {
            o.set(Some(owed + n))
        }
    });
}

/// The snapshots this thread takes keep the delay set when each began (a writer process's
/// save).
pub fn keep_delay_of_start() {
    KEEP_DELAY.with(|k| k.set(true));
}

/// The delay in force for this thread's snapshot.
fn delay_us() -> i64 {
    if KEEP_DELAY.with(|k| k.get()) {
        DELAY_US.with(|c| c.get())
    } else {
        KEY_SAVE_DELAY_US.load(Relaxed)
    }
}

/// Mark the current thread as the one walking a snapshot (until `end`), with the delay
/// configured now.
pub(crate) fn begin() {
    let d = KEY_SAVE_DELAY_US.load(Relaxed);
    DELAY_US.with(|c| c.set(d));
    OWED_KEYS.with(|o| o.set(Some(0)));
}

pub(crate) fn end() {
    OWED_KEYS.with(|o| o.set(None));
}

/// Take the pause owed for the keys written since the last call (no lock may be held); cut
/// short when the snapshot is given up (`abort`).
pub(crate) fn settle(abort: &std::sync::atomic::AtomicBool) {
    let keys = OWED_KEYS
        .with(|o| o.replace(o.get().map(|_| 0)))
        .unwrap_or(0);
    if keys == 0 {
        return;
    }
    let d = delay_us();
    if d < 0 {
        // Process-wide, as KEY_SAVE_DELAY_US: which keys of the test knob's 1-in-N pause.
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let hits = (0..keys)
            .filter(|_| {
                COUNTER
                    .fetch_add(1, Relaxed)
                    .is_multiple_of(d.unsigned_abs())
            })
            .count();
        std::thread::sleep(Duration::from_micros(hits as u64));
        return;
    }
    // One sleep per key, as Redis's child makes one usleep per key: tests size their saves by
    // that (each sleep costs a system call and timer slack on top of the nominal delay). A long
    // pause is slept in steps that re-read the delay in force, so that a snapshot given up (or
    // one that follows the setting, set back to 0) stops at once.
    for _ in 0..keys {
        let start = Instant::now();
        loop {
            let per_key = Duration::from_micros(delay_us().max(0) as u64);
            if per_key.is_zero() || abort.load(Relaxed) {
                return;
            }
            let left = per_key.saturating_sub(start.elapsed());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(5)));
        }
    }
}

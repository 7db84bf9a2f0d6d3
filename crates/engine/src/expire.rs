//! The active expiry cycle: a bounded, incremental sweep over shards that hold keys with a TTL,
//! run `hz` times a second. Lazy expiry on access does the rest.

use crate::store::Store;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// True while an append-only file is replayed: nothing expires then (a later command of the
/// log may still refer to a key whose time has passed since, as Redis's loading rule says).
// Process-wide: read inside `Entry`'s expiry test, where no store is reachable.
static LOADING: AtomicBool = AtomicBool::new(false);

/// Suspend (true) or resume expiry, lazy and active (AOF loading).
pub fn set_loading(on: bool) {
    LOADING.store(on, Ordering::Relaxed);
}

/// True while expiry is suspended. Read only on the cold path (an expired-looking key).
#[inline]
pub fn loading() -> bool {
    LOADING.load(Ordering::Relaxed)
}

/// CLIENT PAUSE: until this unix ms, keys are not expired (a read sees an expired key as
/// absent but leaves it), as Redis's PAUSE_ACTION_EXPIRE. 0: no pause. The one record of the
/// pause's end (the command layer's `pause` reads it too).
// Process-wide: read by the shard's lookups, which have no store at hand.
static PAUSED_UNTIL: AtomicU64 = AtomicU64::new(0);

/// Pause until `ms` at least (a later end already set is kept).
pub fn extend_pause(ms: u64) {
    PAUSED_UNTIL.fetch_max(ms, Ordering::Relaxed);
}

/// End the pause now.
pub fn end_pause() {
    PAUSED_UNTIL.store(0, Ordering::Relaxed);
}

/// The unix ms the pause ends at (0 or past: none).
pub fn paused_until() -> u64 {
    PAUSED_UNTIL.load(Ordering::Relaxed)
}

/// True while a pause holds expiry. Read only on the cold path (an expired key).
pub fn paused(now_ms: u64) -> bool {
    now_ms < PAUSED_UNTIL.load(Ordering::Relaxed)
}

/// Redis's checkAlreadyExpired: an absolute time `at_ms` already past, so that a command
/// setting it deletes the key instead; never while a log is replayed, never on a replica (the
/// key keeps its past time and waits for the master's DEL).
pub fn already_expired(at_ms: i64, now_ms: u64) -> bool {
    at_ms <= now_ms as i64 && !loading() && role() == Role::Master
}

/// Set once a writable replica's client gave some key a TTL (`ShardData::note_replica_ttl`):
/// until then a replica's expire cycle locks no shard.
// Process-wide: set deep in the shard code, read by the cycle; never cleared (a hint).
pub(crate) static REPLICA_KEYS_NOTED: AtomicBool = AtomicBool::new(false);

/// Who decides when keys expire on this server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Lazy and active expiry delete keys (and log the DEL).
    Master,
    /// A read-only replica: the master's DELs remove expired keys; meanwhile reads see them as
    /// absent and nothing here deletes them.
    Replica,
    /// A writable replica (`replica-read-only no`): as `Replica`, except that write commands
    /// delete the expired keys they meet and keys given a TTL here are expired here.
    WritableReplica,
}

/// Where the engine learns the server's role: set once at start by the runtime, which owns
/// the replication state. Read only on cold paths (an expired key met, a TTL set by a write,
/// an expire cycle), never per lookup.
// Process-wide: read deep in the shard code, where no server is reachable.
static ROLE_HOOK: std::sync::OnceLock<fn() -> Role> = std::sync::OnceLock::new();

/// Install the role hook (first call wins). Without one the server is a master.
pub fn set_role_hook(f: fn() -> Role) {
    let _ = ROLE_HOOK.set(f);
}

/// The server's role for expiry, now (a promotion takes effect at the next call).
#[inline]
pub fn role() -> Role {
    ROLE_HOOK.get().map_or(Role::Master, |f| f())
}
use std::time::{Duration, Instant};

/// Buckets one shard step walks before yielding the lock.
const BUCKETS_PER_STEP: usize = 64;
/// Hash fields deleted per locked step of the active cycle (bounded like the key walk).
const FIELDS_PER_STEP: usize = 200;

pub struct ActiveExpire {
    next_shard: AtomicUsize,
}

impl Default for ActiveExpire {
    fn default() -> Self {
        ActiveExpire {
            next_shard: AtomicUsize::new(0),
        }
    }
}

impl ActiveExpire {
    /// Run for at most `budget`, resuming where the previous cycle stopped. Returns keys expired.
    pub fn cycle(&self, store: &Store, now_ms: u64, budget: Duration) -> usize {
        if loading() {
            return 0;
        }
        if role() != Role::Master {
            // Only a master samples keys to expire (Redis's activeExpireCycle); a replica
            // expires only the keys its own clients gave a TTL (writable replicas).
            return self.replica_cycle(store, now_ms, budget);
        }
        let start = Instant::now();
        let n = store.shard_count();
        let mut expired = self.field_cycle(store, now_ms, budget / 2);
        let mut visited = 0;
        while visited < n && start.elapsed() < budget {
            let i = self.next_shard.fetch_add(1, Ordering::Relaxed) % n;
            visited += 1;
            loop {
                let mut g = store.lock_index(i);
                if g.has_replica_keys() {
                    // Promoted: these keys expire as every other now.
                    g.forget_replica_keys();
                }
                if g.volatile() == 0 {
                    break;
                }
                let (e, sampled) = g.expire_step(now_ms, BUCKETS_PER_STEP);
                drop(g);
                expired += e;
                // Keep working on a shard while a quarter or more of what we saw had expired.
                if sampled == 0 || e * 4 < sampled || start.elapsed() >= budget {
                    break;
                }
            }
        }
        expired
    }

    /// Hash fields and set/sorted-set members past their time, database by database, in the
    /// order of the keys' earliest times across all the database's shards (a merge of the
    /// shards' ordered indexes, so HDELs reach the log in time order, as from Redis's one
    /// index per database), each key's due fields earliest first. Runs for at most `budget`;
    /// returns the fields deleted.
    fn field_cycle(&self, store: &Store, now_ms: u64, budget: Duration) -> usize {
        if !crate::field_expire::any_indexed() {
            return 0;
        }
        let start = Instant::now();
        let mut expired = 0;
        let per_db = store.shards_per_db();
        for db in 0..store.databases() {
            // Each shard's earliest due time, refreshed for the shard just worked on.
            let mut heads: Vec<Option<u64>> = (0..per_db)
                .map(|s| store.lock_shard(db, s).first_due_time(now_ms))
                .collect();
            loop {
                let mut order: Vec<(u64, usize)> = heads
                    .iter()
                    .enumerate()
                    .filter_map(|(s, h)| h.map(|t| (t, s)))
                    .collect();
                if order.is_empty() {
                    break;
                }
                order.sort_unstable();
                let s = order[0].1;
                // Work on this shard until its next hash comes after another shard's first.
                let until = order.get(1).map_or(u64::MAX, |&(t, _)| t);
                let mut g = store.lock_shard(db, s);
                expired += g.expire_due_hashes(now_ms, until, FIELDS_PER_STEP);
                heads[s] = g.first_due_time(now_ms);
                drop(g);
                if start.elapsed() >= budget {
                    return expired;
                }
            }
        }
        expired
    }

    /// A replica's share (Redis's expireSlaveKeys): delete the keys its own clients gave a
    /// TTL that has run out, within `budget`. Returns keys expired.
    fn replica_cycle(&self, store: &Store, now_ms: u64, budget: Duration) -> usize {
        if !REPLICA_KEYS_NOTED.load(Ordering::Relaxed) {
            // No client of this replica ever gave a key a TTL: no shard to look at.
            return 0;
        }
        let start = Instant::now();
        let n = store.shard_count();
        let mut expired = 0;
        for _ in 0..n {
            let i = self.next_shard.fetch_add(1, Ordering::Relaxed) % n;
            let mut g = store.lock_index(i);
            if g.has_replica_keys() {
                expired += g.expire_replica_keys(now_ms);
            }
            drop(g);
            if start.elapsed() >= budget {
                break;
            }
        }
        expired
    }
}

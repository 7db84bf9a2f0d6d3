//! `maxmemory`: before a command runs (only when a limit is set), keys are evicted by
//! `maxmemory-policy` until used memory is under the limit; if that cannot be done, commands
//! that may grow memory (`denyoom`, and anything queued inside MULTI) are refused with OOM, as
//! in Redis's processCommand/performEvictions.
//!
//! Used memory is jemalloc's allocated bytes. Reading it means merging per-arena statistics,
//! so it is refreshed at most once a millisecond, or sooner when this thread alone allocated
//! a lot since the last refresh (one big SETBIT must be seen by the very next command).
//!
//! Candidates are sampled as Redis does: `maxmemory-samples` random keys per database (keys
//! with a TTL for the volatile-* policies), the best by idle time, LFU counter or TTL evicted.
//! An eviction behaves as a deletion: WATCH is touched, tracking clients are told, and an
//! `evicted` keyspace event is emitted.
//!
//! A database with its own quota (`db-maxmemory`) is held to it the same way, by its own
//! estimated used memory (`Store::db_used_memory`) and its own policy (`db-maxmemory-policy`,
//! else the global one), evicting only its own keys: a command run in it is refused when it
//! is over its quota and nothing more may be evicted there.

use crate::args::Args;
use crate::ctx::Conn;
use crate::server::Server;
use crate::stats::ThreadStats;
use crate::table::{flags, CommandSpec};
use rand::rngs::SmallRng;
use rand::Rng;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The error a refused command gets (its `OOM` code counts in errorstats).
pub const OOM_ERROR: &str = "OOM command not allowed when used memory > 'maxmemory'.";
/// The same as a script's `redis.call` sees it (the leading `-` carries the OOM code).
pub const OOM_SCRIPT_ERROR: &str = "-OOM command not allowed when used memory > 'maxmemory'.";

/// A refresh is forced once this thread allocated this much since the last one.
const THREAD_ALLOC_SLACK: u64 = 2 * 1024;

/// The used-memory figure the maxmemory checks read (the allocator's, cached), owned by the
/// server (`Server::used_memory`): two lock-free atomics, read on every command's OOM check.
#[derive(Default)]
pub struct UsedMemory {
    /// Bytes allocated at the last refresh.
    bytes: AtomicU64,
    /// When that refresh was (clock ms).
    refreshed_ms: AtomicU64,
}

// Per thread by nature: what the allocator counted for this thread, and the command this
// thread is running.
thread_local! {
    /// This thread's net allocated bytes at the last refresh it saw.
    static THREAD_BASE: Cell<u64> = const { Cell::new(0) };
    /// The state the current top-level command started with (scripts check it, as Redis's
    /// `pre_command_oom_state`).
    static OOM_BEFORE: Cell<bool> = const { Cell::new(false) };
}

fn thread_net_allocated() -> u64 {
    use tikv_jemalloc_ctl::thread::{allocatedp, deallocatedp};
    let (Ok(a), Ok(d)) = (allocatedp::read(), deallocatedp::read()) else {
        return 0;
    };
    a.get().wrapping_sub(d.get())
}

impl UsedMemory {
    /// Used memory as eviction sees it (bytes allocated), fresh enough for `now_ms`.
    pub fn get(&self, now_ms: u64) -> u64 {
        let mine = thread_net_allocated();
        let base = THREAD_BASE.with(|b| b.get());
        let stale = now_ms > self.refreshed_ms.load(Relaxed)
            || mine.wrapping_sub(base) as i64 > THREAD_ALLOC_SLACK as i64;
        if stale {
            self.refresh(now_ms);
        }
        self.bytes.load(Relaxed)
    }

    fn refresh(&self, now_ms: u64) -> u64 {
        let (allocated, _, _) = crate::info_sections::jemalloc_stats();
        self.bytes.store(allocated, Relaxed);
        self.refreshed_ms.store(now_ms, Relaxed);
        THREAD_BASE.with(|b| b.set(thread_net_allocated()));
        allocated
    }
}

/// Policies, as `MAXMEMORY_POLICIES` numbers them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Policy {
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
    AllkeysLru,
    AllkeysLfu,
    AllkeysRandom,
    NoEviction,
}

impl Policy {
    fn from_index(i: u32) -> Policy {
        match i {
            0 => Policy::VolatileLru,
            1 => Policy::VolatileLfu,
            2 => Policy::VolatileRandom,
            3 => Policy::VolatileTtl,
            4 => Policy::AllkeysLru,
            5 => Policy::AllkeysLfu,
            6 => Policy::AllkeysRandom,
            _ => Policy::NoEviction,
        }
    }

    fn volatile_only(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }
}

/// Before a top-level command: evict down to `maxmemory` if one is set. Returns true when
/// memory is still over the limit (the caller refuses commands that may grow it).
pub fn before_command(srv: &Server, conn: &mut Conn) -> bool {
    let limit = srv.config.hot.maxmemory.load(Relaxed);
    let mut oom =
        limit > 0 && over_limit(srv, &mut conn.rng, &conn.stats, conn.now_ms, limit, None);
    if !oom && srv.db_policies.any_quota() {
        let quota = srv.db_policies.quota(conn.db);
        oom = quota > 0 && over_db_quota(srv, &mut conn.rng, &conn.stats, conn.db, quota, None);
    }
    OOM_BEFORE.with(|c| c.set(oom));
    oom
}

/// `over_limit` for database `db` and its quota: evict its own keys by its own policy until
/// its used memory is within `quota`. True when it is still over.
fn over_db_quota(
    srv: &Server,
    rng: &mut SmallRng,
    stats: &ThreadStats,
    db: usize,
    quota: u64,
    budget: Option<std::time::Duration>,
) -> bool {
    let used = || srv.store.db_used_memory(db);
    if used() <= quota || srv.pause.holds_expiry() || crate::replica_expiry::ignores_maxmemory(srv)
    {
        return false;
    }
    let global = srv.config.hot.maxmemory_policy.load(Relaxed);
    let policy = Policy::from_index(srv.db_policies.eviction_policy(db, global));
    if policy == Policy::NoEviction {
        return true;
    }
    let budget = budget.unwrap_or_else(|| command_budget(srv));
    let start = std::time::Instant::now();
    let mut shards = candidate_shards(srv, policy, Some(db));
    loop {
        // The count is exact once a victim's shard is unlocked: measure after each one.
        if evict_one(srv, rng, stats, policy, &mut shards).is_none() {
            return used() > quota;
        }
        if used() <= quota || start.elapsed() > budget {
            return false;
        }
    }
}

/// True when the command now starting met an over-limit server (scripts refuse their first
/// `denyoom` call then, unless they already wrote).
pub fn oom_before_command() -> bool {
    OOM_BEFORE.with(|c| c.get())
}

fn over_limit(
    srv: &Server,
    rng: &mut SmallRng,
    stats: &ThreadStats,
    now: u64,
    limit: u64,
    budget: Option<std::time::Duration>,
) -> bool {
    // What replicas hold of the replication buffer beyond the backlog is not counted, as
    // in Redis (a slow replica must not make the master evict its dataset).
    let counted = |used: u64| {
        if used > limit {
            used.saturating_sub(crate::replication::buffer_memory(srv).not_counted)
        } else {
            used
        }
    };
    let mut used = counted(srv.used_memory.get(now));
    // A CLIENT PAUSE holds eviction (and then nothing is refused for memory), as Redis; so
    // does being a replica that ignores maxmemory.
    if used <= limit || srv.pause.holds_expiry() || crate::replica_expiry::ignores_maxmemory(srv) {
        return false;
    }
    let policy = Policy::from_index(srv.config.hot.maxmemory_policy.load(Relaxed));
    if policy == Policy::NoEviction {
        return true;
    }
    // Evict by estimated size until the estimate says we are under, then measure again. The
    // work per command is bounded as Redis bounds it (eviction tenacity): past the budget the
    // command runs anyway and the next one goes on evicting; only when nothing is left to
    // evict is memory reported over the limit.
    let budget = budget.unwrap_or_else(|| command_budget(srv));
    let start = std::time::Instant::now();
    let mut shards = candidate_shards(srv, policy, None);
    loop {
        let mut to_free = used - limit;
        while to_free > 0 {
            match evict_one(srv, rng, stats, policy, &mut shards) {
                Some(freed) => to_free = to_free.saturating_sub(freed.max(1)),
                None => return counted(srv.used_memory.refresh(now)) > limit,
            }
            if start.elapsed() > budget {
                return false;
            }
        }
        used = counted(srv.used_memory.refresh(now));
        if used <= limit {
            return false;
        }
    }
}

/// How long one command may spend evicting (Redis's eviction tenacity: 50 us per step up to
/// 10, then growing 15% per step).
fn command_budget(srv: &Server) -> std::time::Duration {
    let tenacity = srv
        .config
        .get_i64("maxmemory-eviction-tenacity")
        .clamp(0, 100) as u64;
    std::time::Duration::from_micros(if tenacity <= 10 {
        50 * tenacity.max(1)
    } else {
        (500.0 * 1.15f64.powi((tenacity - 10) as i32)) as u64
    })
}

/// The cron's share: keep evicting while over the limit between commands (Redis's eviction
/// time proc), for at most `budget`.
pub fn cron(srv: &Server, budget: std::time::Duration) {
    // Per thread by nature: the cron thread's own sampling generator.
    thread_local! {
        static RNG: std::cell::RefCell<SmallRng> =
            std::cell::RefCell::new(rand::SeedableRng::from_entropy());
    }
    let limit = srv.config.hot.maxmemory.load(Relaxed);
    if limit > 0 {
        let now = tern_engine::clock::now_ms();
        let stats = srv.stats.local();
        RNG.with(|r| over_limit(srv, &mut r.borrow_mut(), &stats, now, limit, Some(budget)));
    }
    if srv.db_policies.any_quota() {
        let stats = srv.stats.local();
        for db in 0..srv.store.databases() {
            let quota = srv.db_policies.quota(db);
            if quota > 0 {
                RNG.with(|r| {
                    over_db_quota(srv, &mut r.borrow_mut(), &stats, db, quota, Some(budget))
                });
            }
        }
    }
}

/// The shards (global indices) that hold keys the policy may evict, in database `only` or, for
/// the global limit, in every database but those given `noeviction` of their own.
fn candidate_shards(srv: &Server, policy: Policy, only: Option<usize>) -> Vec<usize> {
    let store = &srv.store;
    let per_db = store.shards_per_db();
    let range = match only {
        Some(db) => db * per_db..(db + 1) * per_db,
        None => 0..store.databases() * per_db,
    };
    range
        .filter(|&gi| only.is_some() || !srv.db_policies.never_evicted(gi / per_db))
        .filter(|&gi| {
            let shard = store.lock_shard(gi / per_db, gi % per_db);
            !shard.is_empty() && (!policy.volatile_only() || shard.volatile() > 0)
        })
        .collect()
}

/// The first key `policy` may evict, walking `shards` from index `from` (score unused).
fn first_evictable(
    srv: &Server,
    policy: Policy,
    shards: &[usize],
    from: usize,
) -> Option<(u64, usize, Box<[u8]>)> {
    let per_db = srv.store.shards_per_db();
    (0..shards.len()).find_map(|i| {
        let gi = shards[(from + i) % shards.len()];
        let db = gi / per_db;
        let shard = srv.store.lock_shard(db, gi % per_db);
        let found = shard
            .dict()
            .iter()
            .find(|e| !policy.volatile_only() || e.expire_at() != 0)
            .map(|e| (1, db, e.key().into()));
        found
    })
}

/// Evict the best of a sample of keys (one key from each of `maxmemory-samples` random
/// candidate shards); returns its estimated size, or None when no key can be evicted under
/// the policy. Shards found without candidates leave `shards`.
fn evict_one(
    srv: &Server,
    rng: &mut SmallRng,
    stats: &ThreadStats,
    policy: Policy,
    shards: &mut Vec<usize>,
) -> Option<u64> {
    let store = &srv.store;
    let samples = (srv.config.hot.maxmemory_samples.load(Relaxed) as usize).max(1);
    let lfu_decay = srv.config.hot.lfu_decay_time.load(Relaxed);
    let per_db = store.shards_per_db();
    let random = matches!(policy, Policy::AllkeysRandom | Policy::VolatileRandom);
    let want = if random { 1 } else { samples };
    // (score: higher = evict first, db, key)
    let mut best: Option<(u64, usize, Box<[u8]>)> = None;
    let mut taken = 0;
    let mut misses = 0;
    while taken < want && !shards.is_empty() && misses < want * 8 {
        let pick = rng.gen_range(0..shards.len());
        let gi = shards[pick];
        let (db, s) = (gi / per_db, gi % per_db);
        let shard = store.lock_shard(db, s);
        if shard.is_empty() || (policy.volatile_only() && shard.volatile() == 0) {
            shards.swap_remove(pick);
            continue;
        }
        let Some(e) = shard.dict().random_entry(rng) else {
            continue;
        };
        let expire = e.expire_at();
        if policy.volatile_only() && expire == 0 {
            misses += 1;
            continue;
        }
        taken += 1;
        let score = match policy {
            Policy::AllkeysLru | Policy::VolatileLru => {
                tern_engine::clock::idle_seconds(e.access) + 1
            }
            Policy::AllkeysLfu | Policy::VolatileLfu => {
                256 - tern_engine::clock::lfu_decayed_counter(e.access, lfu_decay).min(255)
            }
            Policy::VolatileTtl => u64::MAX - expire,
            _ => 1,
        };
        if best.as_ref().is_none_or(|(b, _, _)| score > *b) {
            best = Some((score, db, e.key().into()));
        }
    }
    if best.is_none() && !shards.is_empty() {
        // Sampling kept missing (volatile keys rare among persistent ones): walk the
        // candidate shards for any key the policy may evict before saying there is none.
        best = first_evictable(srv, policy, shards, rng.gen_range(0..shards.len()));
    }
    let (_, db, key) = best?;
    let (h, mut shard) = store.lock(db, &key);
    // Another thread (the cron, or a command on another core) may have evicted or deleted the
    // key since it was sampled: that is progress, not "nothing left to evict".
    let Some(entry) = shard.remove(h, &key) else {
        return Some(0);
    };
    let lazy = srv.config.get_bool("lazyfree-lazy-eviction");
    // Logged before the shard is released, so a later write to the key follows it in the log.
    crate::propagate::propagate_delete(srv, db, &key, lazy);
    // Counted while the shard is still locked: DBSIZE + evicted_keys stay consistent for a
    // reader holding every shard (MULTI ... EXEC).
    stats.evicted_keys.add(1);
    let size = (tern_engine::entry::entry_alloc_size(key.len(), entry.expire_at() != 0)
        + entry.value.heap_size()) as u64;
    drop(shard);
    let effort = entry.value.free_effort();
    if lazy {
        crate::background::drop_later(srv, entry, effort);
    } else {
        drop(entry);
    }
    let flags = srv.config.hot.notify_flags.load(Relaxed);
    if flags & crate::notify::EVICTED != 0 {
        crate::notify::notify_keyspace(srv, db, crate::notify::EVICTED, "evicted", &key);
    }
    if srv.tracking.active() {
        crate::tracking::invalidate(srv, None, &[&key], true);
    }
    Some(size)
}

/// While over the limit, is this command refused? `denyoom` commands (scripts and functions by
/// their flags, EXEC by what it queued), and inside MULTI everything but what ends it.
pub fn refuses(srv: &Server, conn: &Conn, spec: &CommandSpec, args: &Args) -> bool {
    if conn.multi.is_some() && !matches!(spec.name, "exec" | "discard" | "quit" | "reset") {
        return true;
    }
    if spec.flags & flags::DENYOOM != 0 {
        return true;
    }
    match spec.name {
        "eval" | "eval_ro" => crate::lua::scripts::eval_denies_oom(srv, false, args),
        "evalsha" | "evalsha_ro" => crate::lua::scripts::eval_denies_oom(srv, true, args),
        "fcall" | "fcall_ro" => crate::lua::libraries::fcall_denies_oom(srv, args),
        "exec" => conn.multi.as_ref().is_some_and(|m| {
            m.commands()
                .any(|(_, e)| e.spec.flags & flags::DENYOOM != 0)
        }),
        _ => false,
    }
}

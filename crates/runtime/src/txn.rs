//! Transactions as the runtime runs them: a client's MULTI queue and WATCHed keys, the
//! dispatcher's queueing and rejection rules, and the atomic-unit entry point EXEC, scripts
//! and functions use (hold the planned shards for the whole unit; the mechanism lives in
//! `tern_engine::Store::run_locked`).
//!
//! EXEC plans the shards the whole transaction needs (its commands' keys, with SELECT
//! followed, plus the watched keys; every shard when a command's keys cannot be known in
//! advance), takes them all at once and runs the queue as one atomic unit: other threads keep
//! serving other shards, but nothing can interleave with the transaction's own.
//!
//! WATCH registers the client in the watched key's shard; whoever changes that key flags the
//! client inside the same critical section (`ShardData::touch`), so EXEC, which holds the
//! shard when it checks the flag, cannot miss a change that came before it.

use crate::args::{parse_i64, Args, OwnedArgs};
use crate::clients::cflags;
use crate::ctx::Conn;
use crate::registry::CmdEntry;
use crate::server::Server;
use crate::table::{flags, flags as f, CommandSpec};
use std::sync::atomic::Ordering::Relaxed;
use tern_engine::hash::key_hash;
use tern_engine::watch::WatchFlag;
pub use tern_engine::LockPlan;

/// A kept MultiState bigger than this is dropped instead (one huge transaction does not pin
/// its buffers for the client's life).
const KEEP_BYTES: usize = 64 * 1024;

/// A queued command: its arguments (`ranges[first..end]`, offsets into `buf`) and the
/// command-table entry it resolved to when queued.
struct Queued {
    first: usize,
    end: usize,
    entry: EntryRef,
}

/// A command-table entry. SAFETY: entries live in the server's registry, which is never
/// modified after start and outlives every connection (and so every transaction).
#[derive(Clone, Copy)]
struct EntryRef(*const CmdEntry);

// SAFETY: see EntryRef; the registry is Sync.
unsafe impl Send for EntryRef {}

/// A client's open transaction. Its commands' arguments share one buffer, and the state is
/// kept for the client's next transaction (no allocation per queued command once warm).
#[derive(Default)]
pub struct MultiState {
    buf: Vec<u8>,
    ranges: Vec<(usize, usize)>,
    cmds: Vec<Queued>,
    /// A command was rejected while queueing: EXEC answers EXECABORT.
    aborted: bool,
    /// Flags of the queued commands: any of them has (OR), every one has (AND).
    any_flags: u32,
    all_flags: u32,
}

impl MultiState {
    /// Memory the queue holds (client eviction counts it).
    pub fn memory(&self) -> usize {
        self.buf.capacity()
            + self.ranges.capacity() * std::mem::size_of::<(usize, usize)>()
            + self.cmds.capacity() * std::mem::size_of::<Queued>()
    }

    pub fn len(&self) -> usize {
        self.cmds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    fn push(&mut self, args: &Args, entry: &CmdEntry) {
        let first = self.ranges.len();
        for a in args.iter() {
            let s = self.buf.len();
            self.buf.extend_from_slice(a);
            self.ranges.push((s, self.buf.len()));
        }
        self.cmds.push(Queued {
            first,
            end: self.ranges.len(),
            entry: EntryRef(entry),
        });
    }

    /// The queued commands in order, with their entries.
    pub fn commands(&self) -> impl Iterator<Item = (Args<'_>, &CmdEntry)> {
        self.cmds.iter().map(|q| {
            // SAFETY: see EntryRef.
            let entry = unsafe { &*q.entry.0 };
            (Args::new(&self.buf, &self.ranges[q.first..q.end]), entry)
        })
    }

    /// A command was rejected while queueing: EXEC answers EXECABORT.
    pub fn is_aborted(&self) -> bool {
        self.aborted
    }

    /// Flags any queued command has.
    pub fn any_flags(&self) -> u32 {
        self.any_flags
    }

    /// Flags every queued command has.
    pub fn all_flags(&self) -> u32 {
        self.all_flags
    }

    fn clear(&mut self) {
        self.buf.clear();
        self.ranges.clear();
        self.cmds.clear();
        self.aborted = false;
        self.any_flags = 0;
        self.all_flags = 0;
    }
}

/// A client's watched keys and the flag their writers raise.
#[derive(Default)]
pub struct WatchState {
    keys: Vec<(usize, Box<[u8]>)>,
    flag: WatchFlag,
}

impl WatchState {
    /// Per-client overhead of the watched keys, as Redis counts it (a list node and a
    /// watchedKey each; the key names are shared).
    pub fn memory(&self) -> usize {
        self.keys.len() * 56
    }
}

/// MULTI: open a transaction, reusing the buffers of the client's last one.
pub fn begin(conn: &mut Conn) {
    let state = conn.spare_multi.take().unwrap_or_default();
    conn.multi = Some(state);
    conn.handle.set_flag(cflags::MULTI, true);
    conn.handle.multi_len.store(0, Relaxed);
}

/// WATCH one key in the client's current database (a key already watched there is skipped).
pub fn watch_key(srv: &Server, conn: &mut Conn, key: &[u8], now_ms: u64) {
    let db = conn.db;
    if conn.watch.keys.iter().any(|(d, k)| *d == db && &**k == key) {
        return;
    }
    let (_, mut shard) = srv.store.lock(db, key);
    shard.watch(key, &conn.watch.flag, now_ms);
    drop(shard);
    conn.watch.keys.push((db, key.into()));
}

/// Commands that run at once even inside MULTI (Redis's processCommand exceptions).
pub fn runs_inside_multi(name: &str) -> bool {
    matches!(
        name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

/// Queue a command of an open transaction (called by the dispatcher, the command resolved).
pub fn queue(conn: &mut Conn, out: &mut tern_resp::Reply, args: &Args, entry: &CmdEntry) {
    let Some(state) = conn.multi.as_mut() else {
        return;
    };
    let spec = entry.spec;
    if spec.flags & f::NO_MULTI != 0 {
        state.aborted = true;
        out.error("ERR Command not allowed inside a transaction");
        return;
    }
    state.push(args, entry);
    if state.len() == 1 {
        state.all_flags = spec.flags;
    }
    state.any_flags |= spec.flags;
    state.all_flags &= spec.flags;
    conn.handle.multi_len.store(state.len() as i64, Relaxed);
    out.simple(b"QUEUED");
}

/// A command of an open transaction was rejected before queueing (unknown, wrong arity...).
pub fn flag_error(conn: &mut Conn) {
    if let Some(state) = conn.multi.as_mut() {
        state.aborted = true;
    }
}

/// A command refused before it ran (BUSY, OOM), as Redis's rejectCommand: an open transaction
/// is flagged, and a refused EXEC discards the transaction with EXECABORT naming the reason.
pub fn reject(
    srv: &Server,
    conn: &mut Conn,
    out: &mut tern_resp::Reply,
    spec: &CommandSpec,
    err: &str,
) {
    if spec.name == "exec" {
        end_multi(conn);
        unwatch_all(srv, conn);
        // MONITOR saw MULTI and no queued command: EXEC tells it the transaction is over.
        if srv.has_monitors() && !conn.is_monitor() {
            let exec = OwnedArgs::new([&b"exec"[..]]);
            let line = crate::dispatch::monitor_line(
                conn.db,
                &conn.handle.monitor_addr(),
                &exec.args(),
                &[],
            );
            srv.feed_monitors(&line);
        }
        out.error(&format!(
            "EXECABORT Transaction discarded because of: {}",
            err.trim_start_matches('-')
        ));
    } else {
        flag_error(conn);
        out.error(err);
    }
}

pub fn end_multi(conn: &mut Conn) -> Option<MultiState> {
    conn.handle.set_flag(cflags::MULTI, false);
    conn.handle.multi_len.store(-1, Relaxed);
    conn.multi.take()
}

/// Keep a finished transaction's buffers for the client's next MULTI.
pub fn recycle(conn: &mut Conn, mut state: MultiState) {
    if state.buf.capacity() <= KEEP_BYTES && state.ranges.capacity() <= KEEP_BYTES / 16 {
        state.clear();
        conn.spare_multi = Some(state);
    }
}

/// Forget every watched key and clear the touched flag (EXEC, DISCARD, UNWATCH, RESET, exit).
pub fn unwatch_all(srv: &Server, conn: &mut Conn) {
    let state = std::mem::take(&mut conn.watch);
    for (db, key) in &state.keys {
        let (_, mut shard) = srv.store.lock(*db, key);
        shard.unwatch(key, &state.flag);
    }
}

/// Leave any transaction state behind (RESET, disconnect).
pub fn reset(srv: &Server, conn: &mut Conn) {
    end_multi(conn);
    unwatch_all(srv, conn);
}

/// EXEC's abort check, inside the transaction's locks: a watched key was touched, or has
/// expired since WATCH without having been deleted yet.
pub fn watch_failed(srv: &Server, conn: &Conn, now_ms: u64) -> bool {
    let w = &conn.watch;
    if w.flag.load(Relaxed) {
        return true;
    }
    w.keys.iter().any(|(db, key)| {
        let (_, shard) = srv.store.lock(*db, key);
        shard.watched_key_expired(key, &w.flag, now_ms)
    })
}

/// The shards EXEC must hold: the queued commands' keys in the database each one runs in
/// (following SELECT), and the watched keys.
pub fn plan(conn: &Conn, state: &MultiState) -> LockPlan {
    let mut keys: Vec<(usize, u64)> = Vec::with_capacity(conn.watch.keys.len() + state.cmds.len());
    keys.extend(conn.watch.keys.iter().map(|(db, k)| (*db, key_hash(k))));
    let mut db = conn.db;
    for (args, entry) in state.commands() {
        let spec = entry.spec;
        if spec.name == "select" {
            if let Some(n) = parse_i64(args.get(1)).filter(|&n| n >= 0) {
                db = n as usize;
            }
            continue;
        }
        if !add_command_keys(&mut keys, db, spec, &args) {
            return LockPlan::AllShards;
        }
    }
    LockPlan::Keys(keys)
}

/// Run `f` as one atomic unit holding `plan`'s shards (see `Store::run_locked`).
/// The outermost unit appends what its commands propagated before its locks are released.
pub fn run_locked<R>(srv: &Server, plan: LockPlan, f: impl FnOnce() -> R) -> R {
    if tern_engine::Store::in_atomic_unit() {
        return f();
    }
    srv.store.run_locked(&plan, || {
        let r = f();
        crate::propagate::flush(srv);
        r
    })
}

/// Commands whose keys the key specs do not give (other databases, patterns, the whole
/// keyspace): a unit running one of them locks every shard.
pub fn needs_every_shard(spec: &CommandSpec, args: &Args) -> bool {
    match spec.name {
        "flushall" | "flushdb" | "swapdb" | "keys" | "scan" | "randomkey" | "dbsize" | "move"
        | "copy" | "sort" | "sort_ro" | "debug" | "info" | "memory" | "migrate" => true,
        // Scripts may touch undeclared keys; their declared ones are known.
        _ => spec.keys.is_empty() && spec.flags & flags::WRITE != 0 && !args.is_empty(),
    }
}

/// Add the shards command `args` needs when run in database `db` to `keys`; false when it
/// needs every shard.
pub fn add_command_keys(
    keys: &mut Vec<(usize, u64)>,
    db: usize,
    spec: &CommandSpec,
    args: &Args,
) -> bool {
    if needs_every_shard(spec, args) {
        return false;
    }
    spec.for_each_key(args, |pos, _| keys.push((db, key_hash(args.get(pos)))));
    true
}

/// Would this command, about to run for `conn`, wait for a shard a long-running unit (a
/// script on a script thread) holds? Only asked while such a unit exists.
pub fn meets_long_unit(srv: &Server, conn: &Conn, spec: &CommandSpec, args: &Args) -> bool {
    let plan = if spec.name == "exec" {
        match &conn.multi {
            Some(m) => plan(conn, m),
            None => return false,
        }
    } else {
        let mut keys = Vec::new();
        if add_command_keys(&mut keys, conn.db, spec, args) {
            LockPlan::Keys(keys)
        } else {
            LockPlan::AllShards
        }
    };
    srv.store.plan_meets_long(&plan)
}

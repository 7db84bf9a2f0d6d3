//! Transactions: MULTI EXEC DISCARD WATCH UNWATCH.
//!
//! MULTI makes the dispatcher queue commands (`+QUEUED`) instead of running them. EXEC plans
//! the shards the whole transaction needs (its commands' keys, with SELECT followed, plus the
//! watched keys; every shard when a command's keys cannot be known in advance), takes them all
//! at once and runs the queue as one atomic unit (`Store::run_locked`): other threads keep
//! serving other shards, but nothing can interleave with the transaction's own.
//!
//! WATCH registers the client in the watched key's shard; whoever changes that key flags the
//! client inside the same critical section (`ShardData::touch`), so EXEC, which holds the
//! shard when it checks the flag, cannot miss a change that came before it.

use crate::args::{parse_i64, Args, OwnedArgs};
use crate::clients::cflags;
use crate::ctx::{Conn, Ctx};
use crate::registry::CmdEntry;
use crate::server::Server;
use crate::table::{flags as f, CommandSpec};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tern_engine::watch::WatchFlag;
use tern_engine::{key_hash, LockPlan};

pub static COMMANDS: &[CommandSpec] = crate::table::commands! { group "transactions";
    ("multi", 1, [NOSCRIPT LOADING STALE FAST ALLOW_BUSY], [TRANSACTION], [], multi, "1.2.0",
        "Starts a transaction."),
    ("exec", 1, [NOSCRIPT LOADING STALE SKIP_SLOWLOG], [TRANSACTION], [], exec, "1.2.0",
        "Executes all commands in a transaction.",
        complexity: "Depends on commands in the transaction"),
    ("discard", 1, [NOSCRIPT LOADING STALE FAST ALLOW_BUSY], [TRANSACTION], [], discard, "2.0.0",
        "Discards a transaction.", complexity: "O(N), when N is the number of queued commands"),
    ("watch", -2, [NOSCRIPT LOADING STALE FAST ALLOW_BUSY], [TRANSACTION], [range(1, -1, 1, RO)],
        watch, "2.2.0", "Monitors changes to keys to determine the execution of a transaction.",
        complexity: "O(1) for every key."),
    ("unwatch", 1, [NOSCRIPT LOADING STALE FAST ALLOW_BUSY], [TRANSACTION], [], unwatch, "2.2.0",
        "Forgets about watched keys of a transaction."),
};

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

/// A kept MultiState bigger than this is dropped instead (one huge transaction does not pin
/// its buffers for the client's life).
const KEEP_BYTES: usize = 64 * 1024;

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

fn multi(ctx: &mut Ctx, _args: &Args) {
    if ctx.conn.multi.is_some() {
        return ctx.error("ERR MULTI calls can not be nested");
    }
    let state = ctx.conn.spare_multi.take().unwrap_or_default();
    ctx.conn.multi = Some(state);
    ctx.conn.handle.set_flag(cflags::MULTI, true);
    ctx.conn.handle.multi_len.store(0, Relaxed);
    ctx.out.ok();
}

fn end_multi(conn: &mut Conn) -> Option<MultiState> {
    conn.handle.set_flag(cflags::MULTI, false);
    conn.handle.multi_len.store(-1, Relaxed);
    conn.multi.take()
}

/// Keep a finished transaction's buffers for the client's next MULTI.
fn recycle(conn: &mut Conn, mut state: MultiState) {
    if state.buf.capacity() <= KEEP_BYTES && state.ranges.capacity() <= KEEP_BYTES / 16 {
        state.clear();
        conn.spare_multi = Some(state);
    }
}

fn discard(ctx: &mut Ctx, _args: &Args) {
    let Some(state) = end_multi(ctx.conn) else {
        return ctx.error("ERR DISCARD without MULTI");
    };
    recycle(ctx.conn, state);
    unwatch_all(ctx.srv, ctx.conn);
    ctx.out.ok();
}

fn watch(ctx: &mut Ctx, args: &Args) {
    if ctx.conn.multi.is_some() {
        return ctx.error("ERR WATCH inside MULTI is not allowed");
    }
    let db = ctx.conn.db;
    for key in args.iter().skip(1) {
        let state = &mut ctx.conn.watch;
        if state.keys.iter().any(|(d, k)| *d == db && &**k == key) {
            continue;
        }
        let (_, mut shard) = ctx.lock(key);
        shard.watch(key, &ctx.conn.watch.flag, ctx.now_ms);
        drop(shard);
        ctx.conn.watch.keys.push((db, key.into()));
    }
    ctx.out.ok();
}

fn unwatch(ctx: &mut Ctx, _args: &Args) {
    unwatch_all(ctx.srv, ctx.conn);
    ctx.out.ok();
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

fn exec(ctx: &mut Ctx, _args: &Args) {
    let Some(state) = end_multi(ctx.conn) else {
        return ctx.error("ERR EXEC without MULTI");
    };
    let srv: &Arc<Server> = ctx.srv;
    if state.aborted {
        unwatch_all(srv, ctx.conn);
        recycle(ctx.conn, state);
        return ctx.error("EXECABORT Transaction discarded because of previous errors.");
    }
    // The server's state may have changed since queueing (Redis checks EXEC as the sum of
    // its commands): a replica now, its link down, too few replicas for writes.
    if !state.is_empty() && !crate::master_link::obeys(ctx.conn.handle.id) {
        let write = state.any_flags & f::WRITE != 0;
        let stale_ok = state.all_flags & f::STALE != 0;
        let denied = crate::master_link::deny_reason(srv, write, stale_ok)
            .or_else(|| write.then(|| crate::replication::deny_write(srv)).flatten());
        if let Some(e) = denied {
            unwatch_all(srv, ctx.conn);
            recycle(ctx.conn, state);
            return ctx.error(&format!("EXECABORT Transaction discarded because of: {e}"));
        }
    }
    let plan = plan(ctx.conn, &state);
    crate::txn::run_locked(srv, plan, || {
        if watch_failed(srv, ctx.conn, ctx.now_ms) {
            ctx.out.null_array();
            return;
        }
        // Blocking commands time out at once and nothing moves to another thread, as in Redis.
        let deny = std::mem::replace(&mut ctx.conn.deny_blocking, true);
        ctx.out.array(state.len());
        for (args, entry) in state.commands() {
            crate::dispatch::execute_queued(srv, ctx.conn, ctx.out, &args, entry);
        }
        ctx.conn.deny_blocking = deny;
        // Errors inside the transaction were counted for their own commands, not for EXEC.
        ctx.out.errors = 0;
    });
    unwatch_all(srv, ctx.conn);
    recycle(ctx.conn, state);
}

/// EXEC's abort check, inside the transaction's locks: a watched key was touched, or has
/// expired since WATCH without having been deleted yet.
fn watch_failed(srv: &Server, conn: &Conn, now_ms: u64) -> bool {
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
pub(crate) fn plan(conn: &Conn, state: &MultiState) -> LockPlan {
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
        if !crate::txn::add_command_keys(&mut keys, db, spec, &args) {
            return LockPlan::AllShards;
        }
    }
    LockPlan::Keys(keys)
}

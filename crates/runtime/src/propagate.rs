//! Propagation: what each write appends to the write log (`tern_persist::wlog`), in Redis 7.2's
//! propagated form.
//!
//! As in Redis's call(): a command that changed something (its handler called `ctx.dirty`) is
//! propagated as it was sent, unless its handler rewrote that (`Ctx::propagate_as`: SET EX as
//! SET PXAT, SPOP as SREM, BLPOP as LPOP...), added commands of its own
//! (`Ctx::also_propagate`) or suppressed it (`Ctx::prevent_propagation`). The commands of one
//! execution unit (a command, a transaction, a script) are collected on the thread running it
//! and appended to the log at the unit's end — wrapped in MULTI/EXEC when there are several —
//! while the unit still holds its shard locks, so writes to the same key reach the log in the
//! order they were applied.
//!
//! When the log is inactive (no AOF), none of this runs: a write costs the gate's relaxed load
//! and per-thread in-flight counter (see `WriteLog::gate`).

use crate::args::Args;
use crate::ctx::{Conn, Ctx};
use crate::server::Server;
use crate::table::{flags, CommandSpec, Handler};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use tern_engine::{key_hash, LockPlan, Store};
use tern_persist::wlog::{Ops, WriteLog};
use tern_resp::Reply;

/// The server's write log and what replies read of it under `appendfsync always` (`Server::propagation`).
pub struct Propagation {
    /// The write log: the AOF and the replicas consume it.
    pub log: WriteLog,
    /// Per (db, key hash) slot: the LSN of the last unit that changed a key of the slot.
    changed: [AtomicU64; CHANGED_SLOTS],
    /// The LSN of the last unit that changed keys it does not name: every reply waits for it.
    barrier: AtomicU64,
}

impl Default for Propagation {
    fn default() -> Self {
        Propagation {
            log: WriteLog::new(),
            changed: [const { AtomicU64::new(0) }; CHANGED_SLOTS],
            barrier: AtomicU64::new(0),
        }
    }
}

impl Propagation {
    #[inline]
    fn changed_slot(&self, db: usize, hash: u64) -> &AtomicU64 {
        let h = hash ^ (db as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        &self.changed[(h >> 52) as usize % CHANGED_SLOTS]
    }
}

/// The propagation controls of the command running on this thread.
#[derive(Default)]
struct Frame {
    /// Inside a logged call (the Ctx methods do nothing otherwise).
    on: bool,
    replace: Option<Vec<Vec<u8>>>,
    prevent: bool,
    force: bool,
}

// Per-thread scratch of the execution unit running on this thread (whichever server it serves):
// thread-locals by nature, they stay.
thread_local! {
    /// The running execution unit's commands.
    static UNIT: RefCell<Ops> = RefCell::new(Ops::default());
    static FRAME: RefCell<Frame> = RefCell::new(Frame::default());
    /// Changes made on this thread (`Ctx::dirty`), to tell whether a command changed anything.
    static DIRTY: Cell<u64> = const { Cell::new(0) };
    /// LSN after the last unit this thread appended (0: none since `take_last_append`).
    static LAST_APPEND: Cell<u64> = const { Cell::new(0) };
    /// The keys the running unit changed, for `Propagation::changed` once it is appended.
    static UNIT_KEYS: RefCell<UnitKeys> = RefCell::new(UnitKeys::default());
}

// ---------------------------------------------------------------------------------------------
// What a reply reveals, for `appendfsync always`.
//
// A reply may leave only once everything its client could have observed is durable. Rather
// than making every reply wait for the whole log (a GET of a key last written an hour ago
// would wait for other clients' fsync), each unit that changes keys records, before it
// releases their shards, its LSN in a slot per (db, key) hash; a reply to a command that names
// its keys waits for the largest LSN of their slots, read after the command ran (so it covers
// every change the command could have seen). Commands that see more than their named keys
// (KEYS, SCAN, DBSIZE, INFO, scripts, EXEC...) and units that change keys they do not name
// (FLUSHALL, SWAPDB, MOVE...) fall back to the whole log (`Propagation::barrier` for the latter).

const CHANGED_SLOTS: usize = 4096;

#[derive(Default)]
struct UnitKeys {
    keys: Vec<(usize, u64)>,
    /// Changed keys it does not name.
    unnamed: bool,
}

/// Record the keys a logged command changed (or that it changed keys it does not name).
fn unit_changed(db: usize, spec: &CommandSpec, args: &Args) {
    UNIT_KEYS.with(|u| {
        let mut u = u.borrow_mut();
        if u.unnamed {
            return;
        }
        let keys = spec.key_positions(args);
        if keys.is_empty() || crate::txn::needs_every_shard(spec, args) {
            u.unnamed = true;
            return;
        }
        for (p, _) in keys {
            if p < args.len() {
                u.keys.push((db, key_hash(args.get(p))));
            }
        }
    });
}

/// The unit was appended at `lsn`: publish its changes (its shards are still held).
fn unit_appended(p: &Propagation, lsn: u64) {
    UNIT_KEYS.with(|u| {
        let mut u = u.borrow_mut();
        if std::mem::take(&mut u.unnamed) {
            p.barrier.fetch_max(lsn, Relaxed);
        }
        for (db, h) in u.keys.drain(..) {
            p.changed_slot(db, h).fetch_max(lsn, Relaxed);
        }
    });
}

/// After a command ran: raise the batch's observed position (`Conn::obs`) by what its reply
/// reveals. Only under `appendfsync always`.
pub fn observe(srv: &Server, conn: &mut Conn, spec: &CommandSpec, args: &Args) {
    if !crate::aof::must_wait(srv) {
        return;
    }
    // Commands that reveal no data.
    if matches!(spec.name, "ping" | "echo" | "time") {
        return;
    }
    let keys = spec.key_positions(args);
    let named_only = !keys.is_empty()
        && spec.flags & flags::SCRIPT_CALLER == 0
        && !crate::txn::needs_every_shard(spec, args);
    let p = &srv.propagation;
    let lsn = if named_only {
        // Acquire: pairs with the shard unlock that followed each slot's update.
        keys.into_iter()
            .filter(|&(i, _)| i < args.len())
            .map(|(i, _)| p.changed_slot(conn.db, key_hash(args.get(i))).load(Acquire))
            .fold(p.barrier.load(Acquire), u64::max)
    } else {
        p.log.appended()
    };
    conn.observe_lsn(srv, lsn);
}

#[inline]
pub(crate) fn add_dirty(n: u64) {
    DIRTY.with(|d| d.set(d.get().wrapping_add(n)));
}

/// Commands that run their own atomic unit (and append its commands at its end): never
/// propagated themselves.
fn runs_own_unit(name: &str) -> bool {
    matches!(
        name,
        "exec" | "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
    )
}

/// True for the commands that must pass the write gate: writes, commands that may propagate
/// (PFCOUNT's cache update), and the atomic units.
#[inline]
pub fn gated(spec: &CommandSpec) -> bool {
    (spec.flags & flags::WRITE != 0)
        || (spec.flags & flags::MAY_REPLICATE != 0 && !matches!(spec.name, "publish" | "spublish"))
        || spec.name == "exec"
}

struct Saved {
    frame: Frame,
    dirty: u64,
}

fn enter() -> Saved {
    let frame = FRAME.with(|f| {
        std::mem::replace(
            &mut *f.borrow_mut(),
            Frame {
                on: true,
                ..Default::default()
            },
        )
    });
    Saved {
        frame,
        dirty: DIRTY.with(|d| d.get()),
    }
}

fn leave(saved: Saved, db: usize, spec: &CommandSpec, args: &Args, own: bool) {
    let fr = FRAME.with(|f| std::mem::replace(&mut *f.borrow_mut(), saved.frame));
    let dirty = DIRTY.with(|d| d.get()) != saved.dirty;
    if !own || !(dirty || fr.force) {
        return;
    }
    unit_changed(db, spec, args);
    if fr.prevent {
        return;
    }
    UNIT.with(|u| {
        let mut u = u.borrow_mut();
        match &fr.replace {
            Some(v) => u.push(db as i32, v.iter().map(|a| a.as_slice())),
            None => u.push(db as i32, args.iter().collect::<Vec<_>>().into_iter()),
        }
    });
}

/// Append the unit's commands to the log (wrapped in MULTI/EXEC when several).
pub fn flush(srv: &Server) {
    UNIT.with(|u| {
        let mut u = u.borrow_mut();
        if !u.is_empty() {
            keep_excluded_from_aof(srv, &mut u);
            let lsn = srv.propagation.log.append(&u);
            LAST_APPEND.with(|l| l.set(lsn));
            u.clear();
            unit_appended(&srv.propagation, lsn);
        }
    });
}

/// Commands of databases excluded from persistence (`db-persistence no`) go to replicas
/// only, never to the AOF.
#[inline]
fn keep_excluded_from_aof(srv: &Server, ops: &mut Ops) {
    let policies = &srv.db_policies;
    if policies.any_reply_override() {
        ops.keep_from_aof(|db| !policies.persisted(db));
    }
}

/// The LSN after the last unit this thread appended since the previous call (0: none).
pub fn take_last_append() -> u64 {
    LAST_APPEND.with(|l| l.replace(0))
}

/// The shards a single write command holds while it runs and logs itself.
fn write_plan(db: usize, spec: &CommandSpec, args: &Args) -> LockPlan {
    if crate::txn::needs_every_shard(spec, args) {
        return LockPlan::AllShards;
    }
    let keys: Vec<(usize, u64)> = spec
        .key_positions(args)
        .into_iter()
        .filter(|&(p, _)| p < args.len())
        .map(|(p, _)| (db, key_hash(args.get(p))))
        .collect();
    if keys.is_empty() {
        LockPlan::AllShards
    } else {
        LockPlan::Keys(keys)
    }
}

/// Run a gated command while the log is active: inside an atomic unit holding its keys'
/// shards (unless it is one, or runs inside one), then append what it propagates.
#[allow(clippy::too_many_arguments)]
pub(crate) fn logged_call(
    srv: &Arc<Server>,
    conn: &mut Conn,
    out: &mut Reply,
    args: &Args,
    spec: &'static CommandSpec,
    handler: Handler,
    now_ms: u64,
) {
    let own = !runs_own_unit(spec.name);
    let call = |conn: &mut Conn, out: &mut Reply| {
        let saved = enter();
        {
            let mut ctx = Ctx {
                srv,
                conn,
                out,
                now_ms,
                cmd: spec,
            };
            handler(&mut ctx, args);
        }
        leave(saved, conn.db, spec, args, own);
    };
    if !own || Store::in_atomic_unit() {
        call(conn, out);
        if !Store::in_atomic_unit() {
            flush(srv);
        }
        return;
    }
    let plan = write_plan(conn.db, spec, args);
    srv.store.run_locked(&plan, || {
        call(conn, out);
        flush(srv);
    });
}

// Process-wide: the engine's expiry hook is a plain `fn(usize, &[u8])` called per expired key
// with no server at hand; set once at start (`install_expire_hook`), read with one load.
static EXPIRE_SERVER: OnceLock<Arc<Server>> = OnceLock::new();

/// Propagate the keys the engine expires to `srv`'s write log (once, at start; first call wins).
pub fn install_expire_hook(srv: &Arc<Server>) {
    let _ = EXPIRE_SERVER.set(srv.clone());
    tern_engine::events::set_expire_hook(on_expired);
    tern_engine::events::set_field_expire_hook(on_field_expired);
}

/// The engine's field-expiry hook: a hash field (or set or sorted-set member) deleted because
/// its time ran out reaches the log as `HDEL key field` (`SREM`, `ZREM`), one command per
/// field as Redis propagates it; the fields one command's lazy expiry deleted go together
/// (MULTI/EXEC when several), the active cycle's one by one.
fn on_field_expired(db: usize, key: &[u8], command: &[u8], fields: &[Box<[u8]>], one_unit: bool) {
    let Some(srv) = EXPIRE_SERVER.get() else {
        return;
    };
    if one_unit {
        let cmds: Vec<[&[u8]; 3]> = fields.iter().map(|f| [command, key, f]).collect();
        propagate_server_writes(srv, db, key, &cmds);
    } else {
        for f in fields {
            propagate_server_writes(srv, db, key, &[[command, key, f]]);
        }
    }
}

/// The engine's expiry hook: a key deleted because its time ran out is propagated as DEL (or
/// UNLINK), appended while its shard is still locked — with the unit running on this thread,
/// or on its own.
fn on_expired(db: usize, key: &[u8]) {
    if let Some(srv) = EXPIRE_SERVER.get() {
        propagate_delete(
            srv,
            db,
            key,
            srv.config.hot.lazyfree_lazy_expire.load(Relaxed),
        );
    }
}

/// A key the server removed on its own (expired, evicted) reaches the log as DEL or UNLINK.
pub fn propagate_delete(srv: &Server, db: usize, key: &[u8], unlink: bool) {
    let cmd: &[u8] = if unlink { b"UNLINK" } else { b"DEL" };
    propagate_server_writes(srv, db, key, &[[cmd, key]]);
}

/// Changes the server made on its own to `key` (not a client's command) reach the log:
/// inside the running unit if there is one, else as a unit of their own.
fn propagate_server_writes<const N: usize>(
    srv: &Server,
    db: usize,
    key: &[u8],
    cmds: &[[&[u8]; N]],
) {
    let p = &srv.propagation;
    if !p.log.active() || cmds.is_empty() {
        return;
    }
    if Store::in_atomic_unit() {
        UNIT.with(|u| {
            let mut u = u.borrow_mut();
            for argv in cmds {
                u.push(db as i32, argv.iter().copied());
            }
        });
        UNIT_KEYS.with(|u| u.borrow_mut().keys.push((db, key_hash(key))));
    } else {
        let mut ops = Ops::default();
        for argv in cmds {
            ops.push(db as i32, argv.iter().copied());
        }
        keep_excluded_from_aof(srv, &mut ops);
        let lsn = p.log.append(&ops);
        p.changed_slot(db, key_hash(key)).fetch_max(lsn, Relaxed);
    }
}

/// PUBLISH and SPUBLISH reach replicas (never the AOF), as Redis propagates them; with the
/// unit running on this thread (MULTI, a script) or on their own.
pub fn propagate_publish(srv: &Server, db: usize, args: &Args) {
    if srv.propagation.log.subscribers() == 0 {
        return;
    }
    if Store::in_atomic_unit() {
        UNIT.with(|u| {
            u.borrow_mut()
                .push_replicas_only(db as i32, args.iter().collect::<Vec<_>>().into_iter())
        });
    } else {
        let mut ops = Ops::default();
        ops.push_replicas_only(db as i32, args.iter().collect::<Vec<_>>().into_iter());
        srv.propagation.log.append(&ops);
    }
}

impl Ctx<'_> {
    /// Propagate this command as `argv` instead of as it was sent (Redis's
    /// rewriteClientCommandVector). Applies if the command changed something.
    pub fn propagate_as(&self, argv: &[&[u8]]) {
        FRAME.with(|f| {
            let mut f = f.borrow_mut();
            if f.on {
                f.replace = Some(argv.iter().map(|a| a.to_vec()).collect());
            }
        });
    }

    /// Propagate one more command now, in the current database (Redis's alsoPropagate).
    pub fn also_propagate(&self, argv: &[&[u8]]) {
        self.also_propagate_db(self.conn.db, argv);
    }

    pub fn also_propagate_db(&self, db: usize, argv: &[&[u8]]) {
        if FRAME.with(|f| f.borrow().on) {
            UNIT.with(|u| u.borrow_mut().push(db as i32, argv.iter().copied()));
        }
    }

    /// Do not propagate this command itself (what it also_propagated stays).
    pub fn prevent_propagation(&self) {
        FRAME.with(|f| {
            let mut f = f.borrow_mut();
            f.prevent |= f.on;
        });
    }

    /// Propagate this command even if it changed nothing (FLUSHALL on an empty keyspace).
    pub fn force_propagation(&self) {
        FRAME.with(|f| {
            let mut f = f.borrow_mut();
            f.force |= f.on;
        });
    }

    /// True while this command's effects are being logged (to skip building rewrites).
    pub fn propagating(&self) -> bool {
        FRAME.with(|f| f.borrow().on)
    }
}

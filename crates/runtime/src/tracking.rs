//! Client-side caching (CLIENT TRACKING), as Redis 7.2 offers it.
//!
//! Default mode: the keys a tracking client reads are remembered in a server-wide table (key ->
//! ids of the clients that read it), sharded by key hash. When any client modifies one of those
//! keys (or it expires, or the database is flushed) each remembering client gets one
//! invalidation message and the key is forgotten. BCAST mode remembers nothing: a client
//! registers key prefixes and is told about every modified key matching one of them.
//!
//! Messages go to the client's own push queue (RESP3 `invalidate` pushes) or, with REDIRECT, to
//! the redirect client's queue: a push when it speaks RESP3, a pub/sub message on
//! `__redis__:invalidate` when it is a RESP2 subscriber, nothing otherwise. When the redirect
//! client is gone, the tracking client is told `tracking-redir-broken` (RESP3) instead.
//!
//! The dispatcher calls `after_command` only while some client tracks (one relaxed load).

use crate::args::Args;
use crate::clients::{cflags, ClientHandle};
use crate::ctx::{Conn, Ctx};
use crate::push::PushTx;
use crate::registry::CmdEntry;
use crate::server::Server;
use crate::table::flags;
use parking_lot::{Mutex, RwLock};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

const SHARDS: usize = 16;
const CHANNEL: &[u8] = b"__redis__:invalidate";

type Ids = HashSet<u64, ahash::RandomState>;
type Table = HashMap<Box<[u8]>, Ids, ahash::RandomState>;

/// One tracking client's settings, shared with whoever invalidates keys it cached.
pub struct Tracker {
    pub id: u64,
    /// Its own push queue.
    tx: PushTx,
    /// Client id to redirect messages to (0 = none).
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// CLIENT CACHING YES/NO given for the next command.
    pub caching: AtomicBool,
    /// BCAST prefixes, sorted.
    pub prefixes: Vec<Box<[u8]>>,
}

impl Tracker {
    fn handle(&self) -> &ClientHandle {
        &self.tx.handle
    }
}

/// Server-wide tracking state.
pub struct Tracking {
    /// Clients with tracking on.
    count: AtomicUsize,
    clients: RwLock<HashMap<u64, Arc<Tracker>>>,
    table: [Mutex<Table>; SHARDS],
    keys: AtomicUsize,
    items: AtomicU64,
    /// BCAST prefix -> ids of the clients that registered it.
    prefixes: RwLock<BTreeMap<Box<[u8]>, Vec<u64>>>,
    nprefixes: AtomicUsize,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            count: AtomicUsize::new(0),
            clients: Default::default(),
            table: std::array::from_fn(|_| Mutex::new(Table::default())),
            keys: AtomicUsize::new(0),
            items: AtomicU64::new(0),
            prefixes: Default::default(),
            nprefixes: AtomicUsize::new(0),
        }
    }
}

fn shard_of(key: &[u8]) -> usize {
    (tern_engine::hash::key_hash(key) as usize) % SHARDS
}

impl Tracking {
    /// True while any client has tracking on, or the table still remembers keys (they stay
    /// after their clients turned tracking off, until invalidated or flushed, as in Redis).
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Relaxed) > 0 || self.keys.load(Relaxed) > 0
    }

    pub fn get(&self, id: u64) -> Option<Arc<Tracker>> {
        self.clients.read().get(&id).cloned()
    }

    /// INFO: tracking_total_keys, tracking_total_items, tracking_total_prefixes.
    pub fn totals(&self) -> (usize, u64, usize) {
        (
            self.keys.load(Relaxed),
            self.items.load(Relaxed),
            self.prefixes.read().len(),
        )
    }

    fn remember(&self, id: u64, key: &[u8]) {
        let mut t = self.table[shard_of(key)].lock();
        let ids = match t.get_mut(key) {
            Some(ids) => ids,
            None => {
                self.keys.fetch_add(1, Relaxed);
                t.entry(key.into()).or_default()
            }
        };
        if ids.insert(id) {
            self.items.fetch_add(1, Relaxed);
        }
    }

    /// Take `key` out of the table, returning who had it.
    fn take(&self, key: &[u8]) -> Option<Ids> {
        let ids = self.table[shard_of(key)].lock().remove(key)?;
        self.keys.fetch_sub(1, Relaxed);
        self.items.fetch_sub(ids.len() as u64, Relaxed);
        Some(ids)
    }
}

// ---------------------------------------------------------------------------------------------
// Delivery

/// The frame for `head` (`invalidate` or a message header) followed by an already encoded
/// last element.
fn frame(push_resp3: bool, tail: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(48 + tail.len());
    if push_resp3 {
        out.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n");
    } else {
        out.extend_from_slice(b"*3\r\n$7\r\nmessage\r\n$20\r\n");
        out.extend_from_slice(CHANNEL);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(tail);
    out
}

fn is_resp3(h: &ClientHandle) -> bool {
    h.resp.load(Relaxed) >= 3
}

/// Send one invalidation (`tail` is the encoded keys array, or a null) for tracker `t`.
fn deliver(srv: &Server, t: &Tracker, tail: &[u8]) {
    if t.redirect == 0 {
        if is_resp3(t.handle()) {
            t.tx.send(srv, &frame(true, tail));
        }
        return;
    }
    let target = srv.clients.get(t.redirect);
    let tx = target.as_ref().and_then(|h| h.push.lock().clone());
    let Some(h) = target else {
        t.handle().set_flag(cflags::TRACKING_BROKEN_REDIR, true);
        if is_resp3(t.handle()) {
            let mut out = tern_resp::Reply::new();
            out.buf.clear();
            out.resp = 3;
            out.push(2);
            out.bulk(b"tracking-redir-broken");
            out.int(t.redirect as i64);
            t.tx.send(srv, &out.buf);
        }
        return;
    };
    let Some(tx) = tx else { return };
    if is_resp3(&h) {
        tx.send(srv, &frame(true, tail));
    } else if h.has_flag(cflags::PUBSUB) {
        tx.send(srv, &frame(false, tail));
    }
}

fn keys_array(keys: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", keys.len()).into_bytes();
    for k in keys {
        out.extend_from_slice(format!("${}\r\n", k.len()).as_bytes());
        out.extend_from_slice(k);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// `keys` were modified (by client `writer`, None for expiry): tell whoever cached them.
pub fn invalidate(srv: &Server, writer: Option<u64>, keys: &[&[u8]], bcast: bool) {
    let tr = &srv.tracking;
    if keys.is_empty() {
        return;
    }
    // BCAST: noted now, sent by `flush_pending` once the top-level command is done.
    if bcast && tr.nprefixes.load(Relaxed) > 0 {
        BCAST_PENDING.with(|p| {
            let mut p = p.borrow_mut();
            for k in keys {
                p.insert((*k).into(), writer);
            }
        });
    }
    // Default mode: each key once, then forgotten.
    for key in keys {
        let Some(ids) = tr.take(key) else { continue };
        let tail = keys_array(&[key]);
        for id in ids {
            let Some(t) = tr.get(id) else { continue };
            if t.bcast || (t.noloop && writer == Some(id)) {
                continue;
            }
            if SERVING.get() == id {
                SELF_PENDING.with(|p| p.borrow_mut().push((t, tail.clone())));
                continue;
            }
            deliver(srv, &t, &tail);
        }
    }
}

// Per thread by nature: what the command running on this thread has yet to hand over.
thread_local! {
    /// Keys modified on this thread not yet broadcast to BCAST clients, with the client that
    /// modified each last (None: expiry).
    static BCAST_PENDING: RefCell<BTreeMap<Box<[u8]>, Option<u64>>> =
        const { RefCell::new(BTreeMap::new()) };
    /// The client a blocked command is being served for on this thread (0 = none): its own
    /// invalidations wait in SELF_PENDING until its reply has been handed over, as Redis sends
    /// them after the reply.
    static SERVING: Cell<u64> = const { Cell::new(0) };
    static SELF_PENDING: RefCell<Vec<(Arc<Tracker>, Vec<u8>)>> = const { RefCell::new(Vec::new()) };
}

/// Send BCAST clients the keys modified since the last call, one message per prefix with
/// matching keys (NOLOOP clients do not hear of their own writes).
pub fn flush_pending(srv: &Server) {
    let deferred = SELF_PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    for (t, tail) in deferred {
        deliver(srv, &t, &tail);
    }
    let pending = BCAST_PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if pending.is_empty() {
        return;
    }
    let tr = &srv.tracking;
    let prefixes = tr.prefixes.read();
    for (prefix, ids) in prefixes.iter() {
        let matched: Vec<(&[u8], Option<u64>)> = pending
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, w)| (&k[..], *w))
            .collect();
        if matched.is_empty() {
            continue;
        }
        let mut all: Option<Vec<u8>> = None;
        for id in ids {
            let Some(t) = tr.get(*id) else { continue };
            if t.noloop && matched.iter().any(|(_, w)| *w == Some(*id)) {
                let mine: Vec<&[u8]> = matched
                    .iter()
                    .filter(|(_, w)| *w != Some(*id))
                    .map(|(k, _)| *k)
                    .collect();
                if !mine.is_empty() {
                    deliver(srv, &t, &keys_array(&mine));
                }
                continue;
            }
            let tail = all.get_or_insert_with(|| {
                keys_array(&matched.iter().map(|(k, _)| *k).collect::<Vec<_>>())
            });
            deliver(srv, &t, tail);
        }
    }
}

/// The databases were flushed: every tracking client is told to drop everything (a null
/// invalidation) and the table is emptied.
pub fn flush(srv: &Server) {
    let tr = &srv.tracking;
    let all: Vec<Arc<Tracker>> = tr.clients.read().values().cloned().collect();
    for t in all {
        let null: &[u8] = if is_resp3(t.handle()) {
            b"_\r\n"
        } else {
            b"$-1\r\n"
        };
        deliver(srv, &t, null);
    }
    for shard in &tr.table {
        let mut s = shard.lock();
        let items: usize = s.values().map(|ids| ids.len()).sum();
        tr.keys.fetch_sub(s.len(), Relaxed);
        tr.items.fetch_sub(items as u64, Relaxed);
        s.clear();
    }
}

/// Keys that expired on this thread (the active-expire cycle calls this after each cycle).
pub fn flush_expired(srv: &Server) {
    if !tern_engine::events::tracked() {
        return;
    }
    let expired = tern_engine::events::take_expired();
    if expired.is_empty() || !srv.tracking.active() {
        return;
    }
    let keys: Vec<&[u8]> = expired.iter().map(|k| &k[..]).collect();
    invalidate(srv, None, &keys, true);
}

/// The active-expire cycle's expired keys, BCAST ones included (called by the cron thread).
pub fn cron(srv: &Server) {
    if srv.tracking.active() {
        flush_expired(srv);
        flush_pending(srv);
        // A lowered tracking-table-max-keys takes effect without waiting for the next read.
        enforce_limit(srv);
    }
}

/// Over `tracking-table-max-keys`: forget keys (telling their clients) until under it.
pub fn enforce_limit(srv: &Server) {
    let max = srv.config.get_i64("tracking-table-max-keys");
    if max <= 0 {
        return;
    }
    let max = max as usize;
    let tr = &srv.tracking;
    let mut shard = 0;
    let mut tries = 0;
    while tr.keys.load(Relaxed) > max && tries < SHARDS * 4 {
        let victim = tr.table[shard % SHARDS].lock().keys().next().cloned();
        shard += 1;
        tries += 1;
        if let Some(k) = victim {
            invalidate(srv, None, &[&k], false);
        }
    }
}

/// After a command ran (only while some client tracks): remember what a tracking client read,
/// invalidate what a write changed or what expired, and drop a CLIENT CACHING that applied to
/// this command.
pub fn after_command(
    srv: &Arc<Server>,
    conn: &mut Conn,
    args: &Args,
    entry: &CmdEntry,
    touched: &[Box<[u8]>],
) {
    let spec = entry.spec;
    let tr = &srv.tracking;
    let id = conn.handle.id;
    let tracking = conn.handle.has_flag(cflags::TRACKING);
    if conn.serving_blocked {
        SERVING.set(id);
    }
    if conn.pending_block.is_none() && !conn.pending_offload {
        // What the command changed is invalidated first (as Redis does while it runs), then
        // what it read is remembered.
        if matches!(entry.fullname.as_str(), "flushdb" | "flushall") {
            flush(srv);
        } else if !touched.is_empty() {
            let keys: Vec<&[u8]> = touched.iter().map(|k| &**k).collect();
            invalidate(srv, Some(id), &keys, true);
        }
        if tracking
            && spec.flags & flags::READONLY != 0
            && spec.flags & flags::PUBSUB == 0
            // A read-only script is not a read: only the commands it calls are.
            && !matches!(entry.fullname.as_str(), "eval_ro" | "evalsha_ro" | "fcall_ro")
            && !conn.handle.has_flag(cflags::TRACKING_BCAST)
        {
            if let Some(t) = tr.get(id) {
                let caching = t.caching.load(Relaxed);
                if !((t.optin && !caching) || (t.optout && caching)) {
                    for (pos, _) in spec.key_positions(args) {
                        tr.remember(id, &args[pos]);
                    }
                    enforce_limit(srv);
                }
            }
        }
    }
    flush_expired(srv);
    SERVING.set(0);
    if tracking && !entry.fullname.starts_with("client|") && !conn.handle.has_flag(cflags::MULTI) {
        if let Some(t) = tr.get(id) {
            t.caching.store(false, Relaxed);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Turning tracking on and off

/// Tracking off for this client (CLIENT TRACKING OFF, RESET, disconnect). Keys it cached stay
/// in the table until invalidated, as in Redis.
pub fn forget_client(srv: &Server, conn: &Conn) {
    let h = &conn.handle;
    if !h.has_flag(cflags::TRACKING) {
        return;
    }
    let tr = &srv.tracking;
    let mut clients = tr.clients.write();
    if let Some(t) = clients.remove(&h.id) {
        let mut p = tr.prefixes.write();
        for prefix in &t.prefixes {
            if let Some(ids) = p.get_mut(prefix) {
                ids.retain(|&i| i != h.id);
                if ids.is_empty() {
                    p.remove(prefix);
                }
            }
        }
        tr.nprefixes.store(p.len(), Relaxed);
        tr.count.fetch_sub(1, Relaxed);
    }
    tern_engine::events::set_tracked(tr.count.load(Relaxed) > 0);
    h.set_flag(
        cflags::TRACKING | cflags::TRACKING_BROKEN_REDIR | cflags::TRACKING_BCAST,
        false,
    );
    h.tracking_redir.store(-1, Relaxed);
}

/// CLIENT TRACKING's mode options.
pub struct Opts {
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
}

/// CLIENT TRACKING ON (options already validated): register the connection.
pub fn enable(ctx: &mut Ctx, redirect: u64, o: Opts, prefixes: Vec<Box<[u8]>>) {
    let tx = ctx.conn.push_sender();
    let srv = ctx.srv;
    let tr = &srv.tracking;
    let h = ctx.conn.handle.clone();
    let mut clients = tr.clients.write();
    let old = clients.get(&h.id).cloned();
    let mut mine: Vec<Box<[u8]>> = old.as_ref().map(|t| t.prefixes.clone()).unwrap_or_default();
    if o.bcast {
        let wanted = if prefixes.is_empty() {
            vec![Box::<[u8]>::from(&b""[..])]
        } else {
            prefixes
        };
        let mut p = tr.prefixes.write();
        for prefix in wanted {
            if mine.contains(&prefix) {
                continue;
            }
            p.entry(prefix.clone()).or_default().push(h.id);
            mine.push(prefix);
        }
        tr.nprefixes.store(p.len(), Relaxed);
        mine.sort();
    }
    let caching = old.as_ref().is_some_and(|t| t.caching.load(Relaxed));
    clients.insert(
        h.id,
        Arc::new(Tracker {
            id: h.id,
            tx,
            redirect,
            bcast: o.bcast,
            optin: o.optin,
            optout: o.optout,
            noloop: o.noloop,
            caching: AtomicBool::new(caching),
            prefixes: mine,
        }),
    );
    if old.is_none() {
        tr.count.fetch_add(1, Relaxed);
    }
    tern_engine::events::set_tracked(true);
    h.set_flag(cflags::TRACKING_BROKEN_REDIR, false);
    h.set_flag(cflags::TRACKING_BCAST, o.bcast);
    h.set_flag(cflags::TRACKING, true);
    h.tracking_redir.store(redirect as i64, Relaxed);
}

//! Pub/Sub as the runtime keeps it: the server-wide subscription registry, what each client
//! is subscribed to, and message delivery.
//!
//! The registry maps channels, patterns and shard channels to the push queues (`push`) of
//! their subscribers; PUBLISH on any thread encodes the message once per protocol and queues it
//! to every receiver, so a subscriber gets messages in the order they were published and a slow
//! one never holds a publisher up. What a client is subscribed to lives on its connection
//! (`ClientSubs`), which is the only place that changes its own subscriptions.

use crate::args::Args;
use crate::clients::cflags;
use crate::ctx::{Conn, Ctx};
use crate::push::PushTx;
use crate::server::Server;
use parking_lot::RwLock;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

type Map = HashMap<Box<[u8]>, Vec<PushTx>, ahash::RandomState>;
type Names = HashSet<Box<[u8]>, ahash::RandomState>;

/// The three kinds of subscription.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    fn subscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }

    fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }
}

/// Server-wide subscriptions.
#[derive(Default)]
pub struct PubSub {
    channels: RwLock<Map>,
    patterns: RwLock<Map>,
    shard: RwLock<Map>,
    /// Distinct channels + patterns: when 0, PUBLISH and keyspace events have no one to reach.
    active: AtomicUsize,
    /// Distinct patterns (PUBLISH skips the pattern walk when there are none).
    npatterns: AtomicUsize,
    /// Clients disconnected for going over their output buffer limit.
    pub obuf_limit_disconnections: AtomicU64,
    /// Bumped each time the server unsubscribed clients from shard channels: a connection
    /// that saw another value brings its own list up to date (`reconcile_shard`).
    shard_revocations: AtomicU64,
}

impl PubSub {
    fn map(&self, kind: Kind) -> &RwLock<Map> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard,
        }
    }

    fn recount(&self, kind: Kind, map: &Map) {
        if kind == Kind::Pattern {
            self.npatterns.store(map.len(), Relaxed);
        }
    }

    fn add(&self, kind: Kind, name: &[u8], tx: &PushTx) {
        let mut m = self.map(kind).write();
        let before = m.len();
        m.entry(name.into()).or_default().push(tx.clone());
        if m.len() != before && kind != Kind::Shard {
            self.active.fetch_add(1, Relaxed);
        }
        self.recount(kind, &m);
    }

    fn remove(&self, kind: Kind, name: &[u8], id: u64) {
        let mut m = self.map(kind).write();
        let Some(subs) = m.get_mut(name) else { return };
        subs.retain(|s| s.id() != id);
        if subs.is_empty() {
            m.remove(name);
            if kind != Kind::Shard {
                self.active.fetch_sub(1, Relaxed);
            }
        }
        self.recount(kind, &m);
    }

    /// True when nobody is subscribed to anything.
    /// Channels (or shard channels) with subscribers, those matching `pattern` when given
    /// (PUBSUB CHANNELS / SHARDCHANNELS).
    pub fn names(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Box<[u8]>> {
        self.map(kind)
            .read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| crate::glob::matches(p, c, false)))
            .cloned()
            .collect()
    }

    /// Subscribers of each channel named (PUBSUB NUMSUB / SHARDNUMSUB).
    pub fn subscriber_counts<'a>(
        &self,
        kind: Kind,
        channels: impl Iterator<Item = &'a [u8]>,
    ) -> Vec<usize> {
        let m = self.map(kind).read();
        channels.map(|c| m.get(c).map_or(0, Vec::len)).collect()
    }

    /// Distinct patterns subscribed to (PUBSUB NUMPAT).
    pub fn pattern_count(&self) -> usize {
        self.npatterns.load(Relaxed)
    }

    /// Anyone subscribed to a channel or pattern (keyspace events and PUBLISH need someone).
    pub fn has_subscribers(&self) -> bool {
        self.active.load(Relaxed) != 0
    }

    pub fn is_empty(&self) -> bool {
        self.channels.read().is_empty()
            && self.patterns.read().is_empty()
            && self.shard.read().is_empty()
    }

    /// Client id -> its (channels, patterns, shard channels), for every subscribed client
    /// (ACL revocations check them).
    #[allow(clippy::type_complexity)]
    pub fn by_client(&self) -> HashMap<u64, [Vec<Box<[u8]>>; 3]> {
        let mut out: HashMap<u64, [Vec<Box<[u8]>>; 3]> = HashMap::new();
        for (i, m) in [&self.channels, &self.patterns, &self.shard]
            .into_iter()
            .enumerate()
        {
            for (name, subs) in m.read().iter() {
                for s in subs {
                    out.entry(s.id()).or_default()[i].push(name.clone());
                }
            }
        }
        out
    }

    /// Distinct channels, patterns, shard channels (INFO stats).
    pub fn counts(&self) -> (usize, usize, usize) {
        (
            self.channels.read().len(),
            self.patterns.read().len(),
            self.shard.read().len(),
        )
    }

    /// Cluster mode, slots gone from this node's view: unsubscribe every client from the
    /// shard channels `doomed` selects, each told with a `sunsubscribe` push carrying its
    /// shard subscriptions left, as Redis's `removeChannelsInSlot`. The connections drop the
    /// channels from their own lists before their next command.
    pub fn unsubscribe_shard_channels(&self, srv: &Server, doomed: impl Fn(&[u8]) -> bool) {
        let mut left: HashMap<u64, usize> = HashMap::new();
        let removed: Vec<(Box<[u8]>, Vec<PushTx>)> = {
            let mut m = self.shard.write();
            let gone: Vec<Box<[u8]>> = m.keys().filter(|c| doomed(c)).cloned().collect();
            if gone.is_empty() {
                return;
            }
            for subs in m.values() {
                for s in subs {
                    *left.entry(s.id()).or_default() += 1;
                }
            }
            let removed = gone
                .into_iter()
                .map(|c| {
                    let subs = m.remove(&c).unwrap_or_default();
                    (c, subs)
                })
                .collect();
            // Before any client hears of it: a connection that read its `sunsubscribe` and
            // sends its next command must find its list out of date.
            self.shard_revocations.fetch_add(1, Relaxed);
            removed
        };
        for (channel, subs) in removed {
            for s in subs {
                let n = left.get_mut(&s.id()).expect("counted above");
                *n -= 1;
                let mut out = tern_resp::Reply::new();
                out.buf.clear();
                out.resp = if s.handle.resp.load(Relaxed) >= 3 {
                    3
                } else {
                    2
                };
                out.push(3);
                out.bulk(Kind::Shard.unsubscribe_word());
                out.bulk(&channel);
                out.int(*n as i64);
                let h = &s.handle;
                h.ssub_count.store(*n, Relaxed);
                let others = h.sub_count.load(Relaxed) + h.psub_count.load(Relaxed);
                h.set_flag(cflags::PUBSUB, others + *n > 0);
                s.send(srv, &out.buf);
            }
        }
    }

    /// Deliver `msg` on `channel` (a shard channel when `shard`): to the channel's subscribers,
    /// then (not for shard channels) to each matching pattern's. Returns the receivers as Redis
    /// counts them (a client matching twice counts twice).
    pub fn publish(&self, srv: &Server, shard: bool, channel: &[u8], msg: &[u8]) -> usize {
        let mut n = 0;
        let word: &[u8] = if shard { b"smessage" } else { b"message" };
        {
            let m = if shard {
                self.shard.read()
            } else {
                self.channels.read()
            };
            if let Some(subs) = m.get(channel) {
                let mut enc = Encoded::default();
                for s in subs {
                    s.send(srv, enc.get(s, &[word, channel, msg]));
                    n += 1;
                }
            }
        }
        if shard || self.npatterns.load(Relaxed) == 0 {
            return n;
        }
        let pats = self.patterns.read();
        for (pat, subs) in pats.iter() {
            if !crate::glob::matches(pat, channel, false) {
                continue;
            }
            let mut enc = Encoded::default();
            for s in subs {
                s.send(srv, enc.get(s, &[b"pmessage", pat, channel, msg]));
                n += 1;
            }
        }
        n
    }
}

/// One message encoded at most once per protocol.
#[derive(Default)]
struct Encoded([Option<Vec<u8>>; 2]);

impl Encoded {
    fn get(&mut self, to: &PushTx, parts: &[&[u8]]) -> &[u8] {
        let resp3 = to.handle.resp.load(Relaxed) >= 3;
        self.0[resp3 as usize].get_or_insert_with(|| encode(resp3, parts))
    }
}

/// A push frame: `>n` (RESP3) or `*n` (RESP2) of bulk strings.
fn encode(resp3: bool, parts: &[&[u8]]) -> Vec<u8> {
    let mut out = tern_resp::Reply::new();
    out.buf.clear();
    out.resp = if resp3 { 3 } else { 2 };
    out.push(parts.len());
    for p in parts {
        out.bulk(p);
    }
    out.buf
}

/// What one client is subscribed to; lives on its connection.
#[derive(Default)]
pub struct ClientSubs {
    channels: Names,
    patterns: Names,
    shard: Names,
    /// `PubSub::shard_revocations` as of the last look.
    shard_revocations_seen: u64,
}

impl ClientSubs {
    fn set(&mut self, kind: Kind) -> &mut Names {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// The count a (un)subscribe confirmation reports: channels + patterns, or shard channels.
    fn count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Shard => self.shard.len(),
            _ => self.channels.len() + self.patterns.len(),
        }
    }

    pub fn total(&self) -> usize {
        self.channels.len() + self.patterns.len() + self.shard.len()
    }
}

/// Drop from the client's own list the shard channels the server unsubscribed it from
/// (`PubSub::unsubscribe_shard_channels`); cheap when that did not happen.
#[inline]
pub fn reconcile_shard(srv: &Server, conn: &mut Conn) {
    let now = srv.pubsub.shard_revocations.load(Relaxed);
    if conn.subs.shard_revocations_seen == now {
        return;
    }
    conn.subs.shard_revocations_seen = now;
    if conn.subs.shard.is_empty() {
        return;
    }
    let id = conn.handle.id;
    {
        let m = srv.pubsub.shard.read();
        conn.subs.shard.retain(|c| {
            m.get(c)
                .is_some_and(|subs| subs.iter().any(|s| s.id() == id))
        });
    }
    sync_handle(conn);
}

/// Bring the client's CLIENT LIST counters and its `P` flag up to date.
fn sync_handle(conn: &Conn) {
    let h = &conn.handle;
    let s = &conn.subs;
    h.sub_count.store(s.channels.len(), Relaxed);
    h.psub_count.store(s.patterns.len(), Relaxed);
    h.ssub_count.store(s.shard.len(), Relaxed);
    h.set_flag(cflags::PUBSUB, s.total() > 0);
}

/// A (un)subscribe confirmation: [word, name or nil, count] as a push.
fn confirm(ctx: &mut Ctx, word: &[u8], name: Option<&[u8]>, count: usize) {
    let out = &mut *ctx.out;
    out.push(3);
    out.bulk(word);
    out.opt_bulk(name);
    out.int(count as i64);
}

/// SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE: subscribe the client to `args[1..]`, confirming each.
pub fn subscribe(ctx: &mut Ctx, args: &Args, kind: Kind) {
    // Inside a script (or a module call) the client expects one reply per command.
    let in_multi = ctx.conn.handle.has_flag(cflags::MULTI);
    if ctx.conn.deny_blocking && (kind == Kind::Shard || !in_multi) {
        let name = String::from_utf8_lossy(kind.subscribe_word()).to_ascii_uppercase();
        ctx.error(&format!(
            "ERR {name} isn't allowed for a DENY BLOCKING client"
        ));
        return;
    }
    let tx = ctx.conn.push_sender();
    let srv = ctx.srv;
    for name in args.iter().skip(1) {
        if ctx.conn.subs.set(kind).insert(name.into()) {
            srv.pubsub.add(kind, name, &tx);
        }
        let n = ctx.conn.subs.count(kind);
        confirm(ctx, kind.subscribe_word(), Some(name), n);
    }
    sync_handle(ctx.conn);
    ctx.conn.keep_reply = true;
}

/// UNSUBSCRIBE and friends: `args[1..]`, or every subscription of the kind when none.
pub fn unsubscribe(ctx: &mut Ctx, args: &Args, kind: Kind) {
    let srv = ctx.srv;
    let id = ctx.conn.handle.id;
    let names: Vec<Box<[u8]>> = if args.len() == 1 {
        ctx.conn.subs.set(kind).iter().cloned().collect()
    } else {
        args.iter().skip(1).map(Into::into).collect()
    };
    if names.is_empty() {
        let n = ctx.conn.subs.count(kind);
        confirm(ctx, kind.unsubscribe_word(), None, n);
    }
    for name in &names {
        if ctx.conn.subs.set(kind).remove(name) {
            srv.pubsub.remove(kind, name, id);
        }
        let n = ctx.conn.subs.count(kind);
        confirm(ctx, kind.unsubscribe_word(), Some(name), n);
    }
    sync_handle(ctx.conn);
    ctx.conn.keep_reply = true;
}

/// Drop every subscription of the client without telling it (RESET, disconnect).
pub fn forget_client(srv: &Server, conn: &mut Conn) {
    if conn.subs.total() == 0 {
        return;
    }
    let id = conn.handle.id;
    let subs = std::mem::take(&mut conn.subs);
    for (kind, set) in [
        (Kind::Channel, subs.channels),
        (Kind::Pattern, subs.patterns),
        (Kind::Shard, subs.shard),
    ] {
        for name in set {
            srv.pubsub.remove(kind, &name, id);
        }
    }
    sync_handle(conn);
}

/// The commands a RESP2 client may run while subscribed.
pub fn allowed_while_subscribed(name: &str) -> bool {
    matches!(
        name,
        "ping"
            | "subscribe"
            | "ssubscribe"
            | "unsubscribe"
            | "sunsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "quit"
            | "reset"
    )
}

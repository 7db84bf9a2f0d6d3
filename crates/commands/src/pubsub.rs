//! Pub/Sub: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB SSUBSCRIBE SUNSUBSCRIBE
//! SPUBLISH, the server-wide subscription registry, and keyspace notification delivery.
//!
//! The registry maps channels, patterns and shard channels to the push queues (`push`) of
//! their subscribers; PUBLISH on any thread encodes the message once per protocol and queues it
//! to every receiver, so a subscriber gets messages in the order they were published and a slow
//! one never holds a publisher up. What a client is subscribed to lives on its connection
//! (`ClientSubs`), which is the only place that changes its own subscriptions.

use crate::args::Args;
use crate::clients::cflags;
use crate::ctx::{Conn, Ctx};
use crate::notify;
use crate::push::PushTx;
use crate::server::Server;
use crate::table::CommandSpec;
use parking_lot::RwLock;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

type Map = HashMap<Box<[u8]>, Vec<PushTx>, ahash::RandomState>;
type Names = HashSet<Box<[u8]>, ahash::RandomState>;

/// The three kinds of subscription.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
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

fn subscribe_generic(ctx: &mut Ctx, args: &Args, kind: Kind) {
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

fn unsubscribe_generic(ctx: &mut Ctx, args: &Args, kind: Kind) {
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

// ---------------------------------------------------------------------------------------------
// Keyspace notifications

/// Publish one keyspace event of `class` for `key` in `db`, as `notify-keyspace-events` asks:
/// `__keyspace@<db>__:<key>` carrying the event and `__keyevent@<db>__:<event>` carrying the
/// key. Events the engine recorded on this thread (expired and new keys) go out first, so that
/// subscribers see them in the order they happened.
pub fn notify_keyspace(srv: &Server, db: usize, class: u32, event: &str, key: &[u8]) {
    flush_engine_events(srv);
    publish_event(srv, db, class, event, key);
}

fn publish_event(srv: &Server, db: usize, class: u32, event: &str, key: &[u8]) {
    let flags = srv.config.hot.notify_flags.load(Relaxed);
    if flags & class == 0 || srv.pubsub.active.load(Relaxed) == 0 {
        return;
    }
    let mut dbs = itoa::Buffer::new();
    let dbs = dbs.format(db).as_bytes();
    if flags & notify::KEYSPACE != 0 {
        let mut chan = Vec::with_capacity(16 + key.len());
        chan.extend_from_slice(b"__keyspace@");
        chan.extend_from_slice(dbs);
        chan.extend_from_slice(b"__:");
        chan.extend_from_slice(key);
        srv.pubsub.publish(srv, false, &chan, event.as_bytes());
    }
    if flags & notify::KEYEVENT != 0 {
        let mut chan = Vec::with_capacity(16 + event.len());
        chan.extend_from_slice(b"__keyevent@");
        chan.extend_from_slice(dbs);
        chan.extend_from_slice(b"__:");
        chan.extend_from_slice(event.as_bytes());
        srv.pubsub.publish(srv, false, &chan, key);
    }
}

/// Publish the expired/new key and keymiss events recorded on this thread (after a command,
/// before any other event, and after an active-expire cycle).
pub fn flush_engine_events(srv: &Server) {
    if !tern_engine::events::any_wanted() || !tern_engine::events::pending() {
        return;
    }
    for ev in tern_engine::events::take() {
        let (class, name) = match ev.kind {
            tern_engine::events::EXPIRED => (notify::EXPIRED, "expired"),
            tern_engine::events::KEYMISS => (notify::KEY_MISS, "keymiss"),
            _ => (notify::NEW, "new"),
        };
        publish_event(srv, ev.db, class, name, &ev.key);
    }
}

// ---------------------------------------------------------------------------------------------
// Commands

pub static COMMANDS: &[CommandSpec] = crate::table::commands! { group "pubsub";
    ("subscribe", -2, [PUBSUB NOSCRIPT LOADING STALE SENTINEL], [], [], subscribe, "2.0.0",
        "Listens for messages published to channels.",
        complexity: "O(N) where N is the number of channels to subscribe to."),
    ("unsubscribe", -1, [PUBSUB NOSCRIPT LOADING STALE SENTINEL], [], [], unsubscribe, "2.0.0",
        "Stops listening to messages posted to channels.",
        complexity: "O(N) where N is the number of channels to unsubscribe."),
    ("psubscribe", -2, [PUBSUB NOSCRIPT LOADING STALE SENTINEL], [], [], psubscribe, "2.0.0",
        "Listens for messages published to channels that match one or more patterns.",
        complexity: "O(N) where N is the number of patterns to subscribe to."),
    ("punsubscribe", -1, [PUBSUB NOSCRIPT LOADING STALE SENTINEL], [], [], punsubscribe, "2.0.0",
        "Stops listening to messages published to channels that match one or more patterns.",
        complexity: "O(N) where N is the number of patterns to unsubscribe."),
    ("publish", 3, [PUBSUB LOADING STALE FAST MAY_REPLICATE SENTINEL], [], [], publish, "2.0.0",
        "Posts a message to a channel.",
        complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client)."),
    ("pubsub", -2, [], [], [], _, "2.8.0", "A container for Pub/Sub commands.",
        complexity: "Depends on subcommand.", subcommands: PUBSUB_SUBCOMMANDS),
    ("ssubscribe", -2, [PUBSUB NOSCRIPT LOADING STALE], [], [range(1, -1, 1, NOT_KEY)], ssubscribe,
        "7.0.0", "Listens for messages published to shard channels.",
        complexity: "O(N) where N is the number of shard channels to subscribe to."),
    ("sunsubscribe", -1, [PUBSUB NOSCRIPT LOADING STALE], [], [range(1, -1, 1, NOT_KEY)],
        sunsubscribe, "7.0.0", "Stops listening to messages posted to shard channels.",
        complexity: "O(N) where N is the number of shard channels to unsubscribe."),
    ("spublish", 3, [PUBSUB LOADING STALE FAST MAY_REPLICATE], [], [key(1, NOT_KEY)], spublish,
        "7.0.0", "Post a message to a shard channel",
        complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel."),
};

static PUBSUB_SUBCOMMANDS: &[CommandSpec] = crate::table::commands! { group "pubsub";
    ("channels", -2, [PUBSUB LOADING STALE], [], [], pubsub_channels, "2.8.0",
        "Returns the active channels.",
        complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)"),
    ("numsub", -2, [PUBSUB LOADING STALE], [], [], pubsub_numsub, "2.8.0",
        "Returns a count of subscribers to channels.",
        complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels"),
    ("numpat", 2, [PUBSUB LOADING STALE], [], [], pubsub_numpat, "2.8.0",
        "Returns a count of unique pattern subscriptions."),
    ("shardchannels", -2, [PUBSUB LOADING STALE], [], [], pubsub_shardchannels, "7.0.0",
        "Returns the active shard channels.",
        complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels)."),
    ("shardnumsub", -2, [PUBSUB LOADING STALE], [], [], pubsub_shardnumsub, "7.0.0",
        "Returns the count of subscribers of shard channels.",
        complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels"),
    ("help", 2, [LOADING STALE], [], [], pubsub_help, "6.2.0",
        "Returns helpful text about the different subcommands."),
};

fn subscribe(ctx: &mut Ctx, args: &Args) {
    subscribe_generic(ctx, args, Kind::Channel);
}

fn psubscribe(ctx: &mut Ctx, args: &Args) {
    subscribe_generic(ctx, args, Kind::Pattern);
}

fn ssubscribe(ctx: &mut Ctx, args: &Args) {
    subscribe_generic(ctx, args, Kind::Shard);
}

fn unsubscribe(ctx: &mut Ctx, args: &Args) {
    unsubscribe_generic(ctx, args, Kind::Channel);
}

fn punsubscribe(ctx: &mut Ctx, args: &Args) {
    unsubscribe_generic(ctx, args, Kind::Pattern);
}

fn sunsubscribe(ctx: &mut Ctx, args: &Args) {
    unsubscribe_generic(ctx, args, Kind::Shard);
}

fn publish(ctx: &mut Ctx, args: &Args) {
    let n = ctx.srv.pubsub.publish(ctx.srv, false, &args[1], &args[2]);
    crate::propagate::propagate_publish(ctx.conn.db, args);
    ctx.out.int(n as i64);
}

fn spublish(ctx: &mut Ctx, args: &Args) {
    let n = ctx.srv.pubsub.publish(ctx.srv, true, &args[1], &args[2]);
    crate::propagate::propagate_publish(ctx.conn.db, args);
    ctx.out.int(n as i64);
}

fn channel_list(ctx: &mut Ctx, args: &Args, kind: Kind) {
    if args.len() > 3 {
        syntax_error(ctx, args);
        return;
    }
    let pat = (args.len() == 3).then(|| &args[2]);
    let names: Vec<Box<[u8]>> = ctx
        .srv
        .pubsub
        .map(kind)
        .read()
        .keys()
        .filter(|c| pat.is_none_or(|p| crate::glob::matches(p, c, false)))
        .cloned()
        .collect();
    ctx.out.array(names.len());
    for n in &names {
        ctx.out.bulk(n);
    }
}

fn numsub(ctx: &mut Ctx, args: &Args, kind: Kind) {
    let counts: Vec<usize> = {
        let m = ctx.srv.pubsub.map(kind).read();
        args.iter()
            .skip(2)
            .map(|c| m.get(c).map_or(0, Vec::len))
            .collect()
    };
    ctx.out.array(counts.len() * 2);
    for (c, n) in args.iter().skip(2).zip(counts) {
        ctx.out.bulk(c);
        ctx.out.int(n as i64);
    }
}

fn pubsub_channels(ctx: &mut Ctx, args: &Args) {
    channel_list(ctx, args, Kind::Channel);
}

fn pubsub_shardchannels(ctx: &mut Ctx, args: &Args) {
    channel_list(ctx, args, Kind::Shard);
}

fn pubsub_numsub(ctx: &mut Ctx, args: &Args) {
    numsub(ctx, args, Kind::Channel);
}

fn pubsub_shardnumsub(ctx: &mut Ctx, args: &Args) {
    numsub(ctx, args, Kind::Shard);
}

fn pubsub_numpat(ctx: &mut Ctx, _args: &Args) {
    let n = ctx.srv.pubsub.npatterns.load(Relaxed);
    ctx.out.int(n as i64);
}

/// Redis's addReplySubcommandSyntaxError.
fn syntax_error(ctx: &mut Ctx, args: &Args) {
    let sub: String = String::from_utf8_lossy(&args[1])
        .chars()
        .take(128)
        .collect();
    ctx.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try PUBSUB HELP."
    ));
}

fn pubsub_help(ctx: &mut Ctx, _args: &Args) {
    crate::client_cmd::reply_help(
        ctx,
        "PUBSUB",
        &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    );
}

//! Keyspace notification classes (Redis's NOTIFY_* bits, the letters of
//! `notify-keyspace-events`) and their delivery as Pub/Sub messages. Handlers report events
//! through `Ctx::notify`.

use crate::server::Server;
use std::sync::atomic::Ordering::Relaxed;

pub const KEYSPACE: u32 = 1 << 0;
pub const KEYEVENT: u32 = 1 << 1;
pub const GENERIC: u32 = 1 << 2;
pub const STRING: u32 = 1 << 3;
pub const LIST: u32 = 1 << 4;
pub const SET: u32 = 1 << 5;
pub const HASH: u32 = 1 << 6;
pub const ZSET: u32 = 1 << 7;
pub const EXPIRED: u32 = 1 << 8;
pub const EVICTED: u32 = 1 << 9;
pub const STREAM: u32 = 1 << 10;
pub const KEY_MISS: u32 = 1 << 11;
pub const LOADED: u32 = 1 << 12;
pub const MODULE: u32 = 1 << 13;
pub const NEW: u32 = 1 << 14;

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
    if flags & class == 0 || !srv.pubsub.has_subscribers() {
        return;
    }
    let mut dbs = itoa::Buffer::new();
    let dbs = dbs.format(db).as_bytes();
    if flags & KEYSPACE != 0 {
        let mut chan = Vec::with_capacity(16 + key.len());
        chan.extend_from_slice(b"__keyspace@");
        chan.extend_from_slice(dbs);
        chan.extend_from_slice(b"__:");
        chan.extend_from_slice(key);
        srv.pubsub.publish(srv, false, &chan, event.as_bytes());
    }
    if flags & KEYEVENT != 0 {
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
            tern_engine::events::EXPIRED => (EXPIRED, "expired"),
            tern_engine::events::KEYMISS => (KEY_MISS, "keymiss"),
            tern_engine::events::HEXPIRED => (HASH, "hexpired"),
            tern_engine::events::EMPTIED => (GENERIC, "del"),
            tern_engine::events::SREMOVED => (SET, "srem"),
            tern_engine::events::ZREMOVED => (ZSET, "zrem"),
            _ => (NEW, "new"),
        };
        publish_event(srv, ev.db, class, name, &ev.key);
    }
}

//! Typed key lookups: "the value at this key as a hash (or list, set...), or WRONGTYPE".
//!
//! Every data-type family used to open its handlers with the same preamble: find the entry
//! (`get` for a read command, `get_quiet` for a write), touch its LRU/LFU clock, match on the
//! value's variant and answer WRONGTYPE for any other. These functions are that preamble, once,
//! generic over the value type. The caller still locks the shard (`ctx.lock`) and decides when
//! to drop the guard, so the lock's extent stays visible in each handler. Everything here is
//! `#[inline]` and works on the entry the one hash-table lookup found: no second hash of the
//! key, no second lookup, no allocation.
//!
//! Also here: `Ctx::lock_keys`, the one way a command locks several keys of its database.

use crate::args::ERR_WRONGTYPE;
use crate::ctx::Ctx;
use std::sync::atomic::Ordering::Relaxed;
use tern_engine::{
    key_hash, Entry, HashValue, ListValue, MultiGuard, PackedBox, RString, SetValue, ShardData,
    ShardGuard, StreamValue, Value, ZSetValue,
};

/// A Redis value type a command can ask a key for: the `Value` variant that holds it.
pub trait ValueKind {
    /// The value as this type, or None for another type.
    fn of(v: &mut Value) -> Option<&mut Self>;
}

macro_rules! value_kind {
    ($ty:ty, $variant:ident) => {
        impl ValueKind for $ty {
            #[inline(always)]
            fn of(v: &mut Value) -> Option<&mut Self> {
                match v {
                    Value::$variant(x) => Some(x),
                    _ => None,
                }
            }
        }
    };
}

value_kind!(RString, Str);
value_kind!(ListValue, List);
value_kind!(HashValue, Hash);
value_kind!(SetValue, Set);
value_kind!(ZSetValue, ZSet);
value_kind!(PackedBox<StreamValue>, Stream);

/// What a typed lookup found.
pub enum Typed<'s, T> {
    Missing,
    WrongType,
    Found(&'s mut T),
}

impl<'s, T> Typed<'s, T> {
    /// The same outcome as a `Result`, for handlers that propagate WRONGTYPE with `?`.
    #[inline(always)]
    pub fn checked(self) -> Result<Option<&'s mut T>, WrongType> {
        match self {
            Typed::Missing => Ok(None),
            Typed::WrongType => Err(WrongType),
            Typed::Found(v) => Ok(Some(v)),
        }
    }
}

/// The key holds another type than the command works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrongType;

/// For handlers whose errors are Redis's error strings.
impl From<WrongType> for &'static str {
    #[inline(always)]
    fn from(_: WrongType) -> &'static str {
        ERR_WRONGTYPE
    }
}

impl<'a> Ctx<'a> {
    /// Classify an entry some lookup found (or not) as `T`, touching its access clock when it
    /// exists (whatever its type, as Redis's lookupKey does before the type check).
    #[inline(always)]
    pub fn typed<'s, T: ValueKind>(&mut self, found: Option<&'s mut Entry>) -> Typed<'s, T> {
        match found {
            None => Typed::Missing,
            Some(e) => {
                self.touch(e);
                match T::of(&mut e.value) {
                    Some(v) => Typed::Found(v),
                    None => Typed::WrongType,
                }
            }
        }
    }

    /// `key` as a `T` for a read command (Redis's lookupKeyRead: `get`, a WATCH-visible
    /// access). Keyspace hits and misses are the caller's (`ctx.hit`) or `read_as`'s.
    #[inline(always)]
    pub fn lookup_read<'s, T: ValueKind>(
        &mut self,
        shard: &'s mut ShardData,
        h: u64,
        key: &[u8],
    ) -> Typed<'s, T> {
        let found = shard.get(h, key, self.now_ms);
        self.typed(found)
    }

    /// `key` as a `T` for a write command (`get_quiet`): the handler signals the key for
    /// WATCH (`shard.touch`) when it changes it, and only then.
    #[inline(always)]
    pub fn lookup_write<'s, T: ValueKind>(
        &mut self,
        shard: &'s mut ShardData,
        h: u64,
        key: &[u8],
    ) -> Typed<'s, T> {
        let found = shard.get_quiet(h, key, self.now_ms);
        self.typed(found)
    }

    /// `key` as a `T` for a key the command only reads, whatever the command (a STORE
    /// variant's sources): see `Ctx::read_key`.
    #[inline(always)]
    pub fn lookup_source<'s, T: ValueKind>(
        &mut self,
        shard: &'s mut ShardData,
        h: u64,
        key: &[u8],
    ) -> Typed<'s, T> {
        let found = self.read_key(shard, h, key);
        self.typed(found)
    }

    /// `key`'s entry whatever its type, for a read command (`get`), its access clock touched:
    /// the untyped `lookup_read`, for the generic commands (TOUCH...).
    #[inline(always)]
    pub fn entry_read<'s>(
        &mut self,
        shard: &'s mut ShardData,
        h: u64,
        key: &[u8],
    ) -> Option<&'s mut Entry> {
        let e = shard.get(h, key, self.now_ms)?;
        self.touch(e);
        Some(e)
    }

    /// `key`'s entry whatever its type, for a write command (`get_quiet`: no WATCH signal
    /// until the handler changes it), its access clock touched: the untyped `lookup_write`.
    #[inline(always)]
    pub fn entry_write<'s>(
        &mut self,
        shard: &'s mut ShardData,
        h: u64,
        key: &[u8],
    ) -> Option<&'s mut Entry> {
        let e = shard.get_quiet(h, key, self.now_ms)?;
        self.touch(e);
        Some(e)
    }

    /// Release the shard, then answer WRONGTYPE.
    #[inline]
    pub fn wrong_type(&mut self, shard: ShardGuard<'_>) {
        drop(shard);
        self.error(ERR_WRONGTYPE);
    }

    /// The whole read preamble of a single-key read command: lock, look `key` up as a `T`,
    /// then `found` with the value (under the shard lock), `missing` when there is no key,
    /// or WRONGTYPE; the lookup counts as a keyspace hit or miss (a miss after the lock is
    /// released, as it may publish a `keymiss` event).
    #[inline(always)]
    pub fn read_as<T: ValueKind>(
        &mut self,
        key: &[u8],
        missing: impl FnOnce(&mut Ctx),
        found: impl FnOnce(&mut Ctx, &mut T),
    ) {
        let (h, mut shard) = self.lock(key);
        match self.lookup_read::<T>(&mut shard, h, key) {
            Typed::Found(v) => {
                found(self, v);
                drop(shard);
                self.hit(true, key);
            }
            Typed::Missing => {
                drop(shard);
                self.hit(false, key);
                missing(self);
            }
            Typed::WrongType => {
                drop(shard);
                self.hit(true, key);
                self.error(ERR_WRONGTYPE);
            }
        }
    }
}

/// Multi-key locking: every command that works on several keys of the current database
/// hashes them and locks all their shards at once (`Store::lock_many`: ascending shard order,
/// so two such commands never deadlock) for as long as the guard lives.
impl<'a> Ctx<'a> {
    /// Lock the shards of `keys` in the current db; returns each key's hash (in the order of
    /// `keys`, for `MultiGuard::shard`) and the guard.
    #[inline]
    pub fn lock_keys<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
    ) -> (Vec<u64>, MultiGuard<'a>) {
        let hashes: Vec<u64> = keys.into_iter().map(key_hash).collect();
        let db = self.conn.db;
        let srv: &'a crate::Server = self.srv;
        let g = srv.store.lock_many(hashes.iter().map(|&h| (db, h)));
        (hashes, g)
    }

    /// `lock_keys` for exactly two keys (the hashes in an array: no allocation for them).
    #[inline]
    pub fn lock_pair(&self, a: &[u8], b: &[u8]) -> ([u64; 2], MultiGuard<'a>) {
        let (ha, hb) = (key_hash(a), key_hash(b));
        let db = self.conn.db;
        let srv: &'a crate::Server = self.srv;
        ([ha, hb], srv.store.lock_many([(db, ha), (db, hb)]))
    }
}

/// The string inside a value, or None for any other type (the caller replies WRONGTYPE).
#[inline]
#[allow(unreachable_patterns)]
pub fn as_str(v: &Value) -> Option<&RString> {
    match v {
        Value::Str(s) => Some(s),
        _ => None,
    }
}

/// proto-max-bulk-len: the longest string a command may build.
pub fn max_bulk_len(ctx: &Ctx) -> i64 {
    ctx.srv.config.hot.proto_max_bulk_len.load(Relaxed)
}

/// Store `value` under `key` the way Redis's setKey does: an existing entry is touched and
/// keeps its access clock (so LFU counters survive overwrites); its TTL goes unless `keep_ttl`.
/// Always a change for WATCH, as setKey always signals the key.
pub fn store_value(
    ctx: &mut Ctx,
    shard: &mut ShardData,
    h: u64,
    key: &[u8],
    value: Value,
    keep_ttl: bool,
) {
    let now = ctx.now_ms;
    match shard.get_quiet(h, key, now) {
        Some(e) => {
            ctx.touch(e);
            let old = std::mem::replace(&mut e.value, value);
            let effort = old.free_effort();
            crate::background::drop_later(ctx.srv, old, effort);
            let drop_ttl = !keep_ttl && e.expire_at() != 0;
            shard.touch(key);
            if drop_ttl {
                shard.set_expire(h, key, 0, now);
            }
        }
        None => {
            shard.set(h, key, value, false, now);
        }
    }
}

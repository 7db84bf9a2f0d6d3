//! Persistence commands: DUMP and RESTORE (Redis's serialized-value payloads).

use crate::args::{eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_SYNTAX};
use crate::ctx::Ctx;
use crate::notify;
use crate::table::{acl, flags as f, kflags as k, CommandSpec, KeySpec};
use std::sync::atomic::Ordering::Relaxed;
use tern_engine::clock;
use tern_engine::EntryBox;
use tern_persist::rdb::{dump_payload, restore_payload, RestoreError};

const KS: u64 = acl::KEYSPACE;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "dump",
        tips: &["nondeterministic_output"],
        arity: 2,
        flags: f::READONLY,
        acl: KS | acl::READ | acl::SLOW,
        keys: &[KeySpec::single(1, k::RO | k::ACCESS)],
        handler: Some(dump),
        since: "2.6.0",
        complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
        summary: "Returns a serialized representation of the value stored at a key.",
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "restore",
        arity: -4,
        flags: f::WRITE | f::DENYOOM,
        acl: KS | acl::WRITE | acl::SLOW | acl::DANGEROUS,
        keys: &[KeySpec::single(1, k::OW | k::UPDATE)],
        handler: Some(restore),
        since: "2.6.0",
        complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
        summary: "Creates a key from the serialized representation of a value.",
        ..CommandSpec::DEFAULT
    },
];

fn dump(ctx: &mut Ctx, args: &Args) {
    let now = ctx.now_ms;
    let (h, mut g) = ctx.lock(&args[1]);
    let payload = match g.get(h, &args[1], now) {
        Some(e) => {
            ctx.touch(e);
            dump_payload(&e.value)
        }
        None => {
            drop(g);
            ctx.hit(false);
            return ctx.out.null();
        }
    };
    drop(g);
    ctx.hit(true);
    ctx.out.bulk(&payload);
}

fn restore(ctx: &mut Ctx, args: &Args) {
    let (mut replace, mut absttl) = (false, false);
    let (mut freq, mut idle): (i64, i64) = (-1, -1);
    let mut j = 4;
    while j < args.len() {
        let more = args.len() - j - 1;
        let a = &args[j];
        if eq_ic(a, "replace") {
            replace = true;
        } else if eq_ic(a, "absttl") {
            absttl = true;
        } else if eq_ic(a, "idletime") && more >= 1 && freq == -1 {
            match parse_i64(&args[j + 1]) {
                None => return ctx.error(ERR_NOT_INT),
                Some(v) if v < 0 => return ctx.error("ERR Invalid IDLETIME value, must be >= 0"),
                Some(v) => idle = v,
            }
            j += 1;
        } else if eq_ic(a, "freq") && more >= 1 && idle == -1 {
            match parse_i64(&args[j + 1]) {
                None => return ctx.error(ERR_NOT_INT),
                Some(v) if !(0..=255).contains(&v) => {
                    return ctx.error("ERR Invalid FREQ value, must be >= 0 and <= 255")
                }
                Some(v) => freq = v,
            }
            j += 1;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
        j += 1;
    }
    let now = ctx.now_ms;
    let key = &args[1];
    {
        let (h, mut g) = ctx.lock(key);
        if !replace && g.get(h, key, now).is_some() {
            return ctx.error("BUSYKEY Target key name already exists.");
        }
    }
    let ttl = match parse_i64(&args[2]) {
        None => return ctx.error(ERR_NOT_INT),
        Some(t) if t < 0 => return ctx.error("ERR Invalid TTL value, must be >= 0"),
        Some(t) => t,
    };
    let value = match restore_payload(&args[3]) {
        Ok(v) => v,
        Err(RestoreError::VersionOrChecksum) => {
            return ctx.error("ERR DUMP payload version or checksum are wrong")
        }
        Err(_) => return ctx.error("ERR Bad data format"),
    };
    let expire_at = match ttl {
        0 => 0,
        t if absttl => t,
        t => t.saturating_add(now as i64),
    };
    let lfu = ctx.srv.config.hot.lfu_policy.load(Relaxed);
    let mut access = clock::initial_access_at(now);
    if lfu {
        if freq >= 0 {
            access = (clock::lfu_minutes() << 8) | freq as u32;
        }
    } else if idle >= 0 {
        let lru = clock::lru_clock() as i64;
        let mut abs = lru - idle;
        if abs < 0 {
            abs += clock::LRU_CLOCK_MAX as i64;
        }
        access = abs as u32;
    }
    let (h, mut g) = ctx.lock(key);
    if !replace && g.get(h, key, now).is_some() {
        drop(g);
        return ctx.error("BUSYKEY Target key name already exists.");
    }
    let old = if replace { g.remove(h, key) } else { None };
    if expire_at != 0 && expire_at <= now as i64 {
        drop(g);
        let deleted = old.is_some();
        drop(old);
        if deleted {
            ctx.dirty(1);
            ctx.notify(notify::GENERIC, "del", key);
        }
        return ctx.out.ok();
    }
    let entry = EntryBox::new_expiring(key, value, access, expire_at.max(0) as u64);
    g.insert_entry(h, entry, now);
    drop(g);
    drop(old);
    ctx.dirty(1);
    ctx.notify(notify::GENERIC, "restore", key);
    ctx.out.ok();
}

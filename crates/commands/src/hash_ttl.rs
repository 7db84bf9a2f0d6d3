//! Hash-field expiration, as Redis 7.4 has it: HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT (with
//! NX | XX | GT | LT), HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME and HPERSIST, each taking
//! `FIELDS numfields field ...` and replying one integer per field.
//!
//! The times live beside the fields (`tern_engine::FieldTtls`); fields past their time are
//! deleted lazily by the hash commands (`hash::expire_due_fields`) and by the active cycle.
//! A time change reaches replicas and the AOF as HPEXPIREAT with the absolute time, and a
//! field deleted because the time given is already past as HDEL, as Redis propagates them.

use tern_engine::field_ttl::MAX_FIELD_TIME_MS;
use tern_engine::{HashValue, ShardData};
use tern_runtime::args::{eq_ic, parse_i64, Args};
use tern_runtime::ctx::Ctx;
use tern_runtime::keyspace_access::Typed;
use tern_runtime::notify;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "hash";
    ("hexpire", -6, [WRITE DENYOOM FAST], [HASH], [key(1, RW UPDATE)], hexpire, "7.4.0",
        "Sets a time to live in seconds on hash fields; each field's reply says what happened.",
        complexity: "O(N), N being the number of fields given."),
    ("hpexpire", -6, [WRITE DENYOOM FAST], [HASH], [key(1, RW UPDATE)], hexpire, "7.4.0",
        "Sets a time to live in milliseconds on hash fields.",
        complexity: "O(N), N being the number of fields given."),
    ("hexpireat", -6, [WRITE DENYOOM FAST], [HASH], [key(1, RW UPDATE)], hexpire, "7.4.0",
        "Sets the Unix time in seconds at which hash fields expire.",
        complexity: "O(N), N being the number of fields given."),
    ("hpexpireat", -6, [WRITE DENYOOM FAST], [HASH], [key(1, RW UPDATE)], hexpire, "7.4.0",
        "Sets the Unix time in milliseconds at which hash fields expire.",
        complexity: "O(N), N being the number of fields given."),
    ("httl", -5, [READONLY FAST], [HASH], [key(1, RO ACCESS)], httl, "7.4.0",
        "Returns the remaining time to live of hash fields, in seconds.",
        complexity: "O(N), N being the number of fields given."),
    ("hpttl", -5, [READONLY FAST], [HASH], [key(1, RO ACCESS)], httl, "7.4.0",
        "Returns the remaining time to live of hash fields, in milliseconds.",
        complexity: "O(N), N being the number of fields given."),
    ("hexpiretime", -5, [READONLY FAST], [HASH], [key(1, RO ACCESS)], httl, "7.4.0",
        "Returns the Unix time in seconds at which hash fields expire.",
        complexity: "O(N), N being the number of fields given."),
    ("hpexpiretime", -5, [READONLY FAST], [HASH], [key(1, RO ACCESS)], httl, "7.4.0",
        "Returns the Unix time in milliseconds at which hash fields expire.",
        complexity: "O(N), N being the number of fields given."),
    ("hpersist", -5, [WRITE FAST], [HASH], [key(1, RW UPDATE)], hpersist, "7.4.0",
        "Removes the time to live of hash fields.",
        complexity: "O(N), N being the number of fields given."),
};

/// Per-field replies of the HEXPIRE family.
const NO_FIELD: i64 = -2;
const CONDITION_NOT_MET: i64 = 0;
const SET: i64 = 1;
const DELETED: i64 = 2;
/// HTTL family and HPERSIST.
const NO_TTL: i64 = -1;

const ERR_FIELDS_POSITION: &str =
    "ERR Mandatory argument FIELDS is missing or not at the right position";
const ERR_NUMFIELDS_MISMATCH: &str =
    "ERR The `numfields` parameter must match the number of arguments";

#[derive(Clone, Copy, PartialEq)]
enum Cond {
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
}

/// Where `FIELDS numfields` sits (`at` = index of FIELDS): checks it and returns the range of
/// field arguments, or the error to reply.
fn fields_at(
    args: &Args,
    at: usize,
    bad_count: &'static str,
) -> Result<std::ops::Range<usize>, &'static str> {
    if !eq_ic(&args[at], "fields") {
        return Err(ERR_FIELDS_POSITION);
    }
    let n = match parse_i64(&args[at + 1]) {
        Some(n) if n >= 1 => n as usize,
        _ => return Err(bad_count),
    };
    if n != args.len() - at - 2 {
        return Err(ERR_NUMFIELDS_MISMATCH);
    }
    Ok(at + 2..args.len())
}

fn reply_all(ctx: &mut Ctx, n: usize, v: i64) {
    ctx.out.array(n);
    for _ in 0..n {
        ctx.out.int(v);
    }
}

/// Whether NX | XX | GT | LT leaves a field whose time is `prev` as it is, for the time `at`.
fn refused(cond: Cond, prev: Option<u64>, at: u64) -> bool {
    match prev {
        // A field without a time counts as one that never expires: only LT may set one.
        None => matches!(cond, Cond::Xx | Cond::Gt),
        Some(p) => match cond {
            Cond::Nx => true,
            Cond::Gt => p >= at,
            Cond::Lt => p <= at,
            Cond::Always | Cond::Xx => false,
        },
    }
}

/// HEXPIRE & co.'s arguments: the absolute time (ms), the condition, where FIELDS sits and
/// the field arguments; or the error to reply (after WRONGTYPE, which Redis checks first).
fn parse_expire_args(
    args: &Args,
    name: &str,
    now: u64,
) -> Result<(u64, Cond, usize, std::ops::Range<usize>), String> {
    let (millis, absolute) = match name {
        "hexpire" => (false, false),
        "hpexpire" => (true, false),
        "hexpireat" => (false, true),
        _ => (true, true),
    };
    let invalid = || format!("ERR invalid expire time in '{name}' command");
    let mut t = parse_i64(&args[2]).ok_or("ERR value is not an integer or out of range")?;
    if t < 0 {
        return Err("ERR invalid expire time, must be >= 0".into());
    }
    let max = MAX_FIELD_TIME_MS as i64;
    if !millis {
        if t > max / 1000 {
            return Err(invalid());
        }
        t *= 1000;
    }
    let base = if absolute { 0 } else { now as i64 };
    if t > max - base {
        return Err(invalid());
    }
    let (cond, fields_pos) = match &args[3] {
        a if eq_ic(a, "nx") => (Cond::Nx, 4),
        a if eq_ic(a, "xx") => (Cond::Xx, 4),
        a if eq_ic(a, "gt") => (Cond::Gt, 4),
        a if eq_ic(a, "lt") => (Cond::Lt, 4),
        _ => (Cond::Always, 3),
    };
    let fields = fields_at(
        args,
        fields_pos,
        "ERR Parameter `numFields` should be greater than 0",
    )?;
    Ok(((t + base) as u64, cond, fields_pos, fields))
}

fn hexpire(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let now = ctx.now_ms;
    let parsed = parse_expire_args(args, ctx.cmd.name, now);
    let (h, mut shard) = ctx.lock(key);
    let hv = match ctx.lookup_write::<HashValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Found(hv) => Some(hv),
        Typed::Missing => None,
    };
    let (at, cond, fields_pos, fields) = match parsed {
        Ok(p) => p,
        Err(e) => {
            drop(shard);
            return ctx.error(&e);
        }
    };
    let Some(hv) = hv else {
        drop(shard);
        return reply_all(ctx, fields.len(), NO_FIELD);
    };
    // A time already past deletes the field, on a master (a replica waits for the HDEL).
    let deletes = tern_engine::expire::already_expired(at as i64, now);
    let mut replies = Vec::with_capacity(fields.len());
    let mut updated: Vec<&[u8]> = Vec::new();
    let mut deleted: Vec<&[u8]> = Vec::new();
    for i in fields.clone() {
        let f = args.get(i);
        let r = if !hv.contains(f) {
            NO_FIELD
        } else if refused(cond, hv.field_ttl(f), at) {
            CONDITION_NOT_MET
        } else if deletes {
            hv.remove(f);
            deleted.push(f);
            DELETED
        } else {
            hv.set_field_ttl(f, at);
            updated.push(f);
            SET
        };
        replies.push(r);
    }
    let emptied = hv.is_empty();
    let changed = !updated.is_empty() || !deleted.is_empty();
    if emptied {
        shard.remove(h, key);
    } else if changed {
        shard.touch(key);
        shard.hfe_sync(h, key);
    }
    drop(shard);
    ctx.out.array(replies.len());
    for r in replies {
        ctx.out.int(r);
    }
    if !changed {
        return;
    }
    ctx.dirty((updated.len() + deleted.len()) as u64);
    if emptied {
        ctx.notify(notify::HASH, "hdel", key);
        ctx.notify(notify::GENERIC, "del", key);
    } else {
        let event = if deleted.is_empty() {
            "hexpire"
        } else {
            "hdel"
        };
        ctx.notify(notify::HASH, event, key);
    }
    for f in &deleted {
        ctx.also_propagate(&[b"HDEL", key, f]);
    }
    if updated.is_empty() {
        return ctx.prevent_propagation();
    }
    // As HPEXPIREAT with the absolute time and only the fields whose time was set.
    let at_text = itoa::Buffer::new().format(at).to_owned();
    let count = itoa::Buffer::new().format(updated.len()).to_owned();
    let mut argv: Vec<&[u8]> = vec![b"HPEXPIREAT", key, at_text.as_bytes()];
    if fields_pos == 4 {
        argv.push(&args[3]);
    }
    argv.push(b"FIELDS");
    argv.push(count.as_bytes());
    argv.extend(updated.iter().copied());
    ctx.propagate_as(&argv);
}

/// HTTL & co. and HPERSIST: the hash at `key` (a write lookup for HPERSIST), the fields after
/// `FIELDS n`, -2 for each when there is no key; else `each` answers per field under the lock,
/// then `finish` runs with the shard, still locked. Replies; false when it replied otherwise.
fn per_field(
    ctx: &mut Ctx,
    args: &Args,
    write: bool,
    mut each: impl FnMut(&mut HashValue, &[u8]) -> i64,
    finish: impl FnOnce(&mut ShardData, u64),
) -> bool {
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let found = if write {
        ctx.lookup_write::<HashValue>(&mut shard, h, key)
    } else {
        ctx.lookup_read::<HashValue>(&mut shard, h, key)
    };
    let hv = match found {
        Typed::WrongType => {
            ctx.wrong_type(shard);
            return false;
        }
        Typed::Found(hv) => Some(hv),
        Typed::Missing => None,
    };
    let fields = match fields_at(args, 2, "ERR Number of fields must be a positive integer") {
        Ok(r) => r,
        Err(e) => {
            drop(shard);
            ctx.error(e);
            return false;
        }
    };
    let Some(hv) = hv else {
        drop(shard);
        reply_all(ctx, fields.len(), NO_FIELD);
        return false;
    };
    let replies: Vec<i64> = fields.map(|i| each(hv, args.get(i))).collect();
    finish(&mut shard, h);
    drop(shard);
    ctx.out.array(replies.len());
    for r in replies {
        ctx.out.int(r);
    }
    true
}

fn httl(ctx: &mut Ctx, args: &Args) {
    let name = ctx.cmd.name;
    let now = ctx.now_ms as i64;
    let ttl = |hv: &mut HashValue, f: &[u8]| {
        if !hv.contains(f) {
            return NO_FIELD;
        }
        match hv.field_ttl(f).map(|at| at as i64) {
            None => NO_TTL,
            Some(at) if at < now => NO_FIELD,
            Some(at) => match name {
                "httl" => (at + 999 - now) / 1000,
                "hpttl" => at - now,
                "hexpiretime" => (at + 999) / 1000,
                _ => at,
            },
        }
    };
    per_field(ctx, args, false, ttl, |_, _| {});
}

fn hpersist(ctx: &mut Ctx, args: &Args) {
    let now = ctx.now_ms;
    let key = &args[1];
    let changed = std::cell::Cell::new(false);
    let persist = |hv: &mut HashValue, f: &[u8]| {
        if !hv.contains(f) {
            return NO_FIELD;
        }
        match hv.field_ttl(f) {
            None => NO_TTL,
            Some(at) if at < now => NO_FIELD,
            Some(_) => {
                hv.persist_field(f);
                changed.set(true);
                SET
            }
        }
    };
    let finish = |shard: &mut ShardData, h: u64| {
        if changed.get() {
            shard.touch(key);
            shard.hfe_sync(h, key);
        }
    };
    if per_field(ctx, args, true, persist, finish) && changed.get() {
        ctx.notify(notify::HASH, "hpersist", key);
        ctx.dirty(1);
    }
}

//! Member expiry, as KeyDB has it: EXPIREMEMBER, EXPIREMEMBERAT and PEXPIREMEMBERAT give one
//! member of a set or sorted set (or one field of a hash) its own time, and `TTL`, `PTTL` and
//! `PERSIST` take the member as an optional second argument (`keys.rs` hands those here).
//!
//! Set and sorted-set member times live beside the members (`SetValue::Expiring`,
//! `ZSetValue::Expiring`); members past their time are deleted whenever their key is looked
//! up on a master, and by the active cycle, each reaching replicas and the AOF as SREM / ZREM.
//! A hash field's time is the one Redis 7.4's HEXPIRE sets, with the hash rules of
//! `hash_ttl.rs`. A time change is propagated as PEXPIREMEMBERAT with the absolute time.

use tern_engine::field_ttl::MAX_FIELD_TIME_MS;
use tern_engine::Value;
use tern_runtime::args::{eq_ic, parse_i64, Args};
use tern_runtime::ctx::Ctx;
use tern_runtime::notify;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "keyspace";
    ("expiremember", -4, [WRITE FAST], [KEYSPACE], [key(1, RW UPDATE)], expiremember, "5.1.0",
        "Sets a time to live on one member of a set, sorted set or hash, in seconds (or in \
         milliseconds with the unit `ms`). A KeyDB command."),
    ("expirememberat", 4, [WRITE FAST], [KEYSPACE], [key(1, RW UPDATE)], expiremember,
        "5.1.0", "Sets the Unix time in seconds at which one member expires. A KeyDB command."),
    ("pexpirememberat", 4, [WRITE FAST], [KEYSPACE], [key(1, RW UPDATE)], expiremember,
        "5.1.0",
        "Sets the Unix time in milliseconds at which one member expires. A KeyDB command."),
};

/// EXPIREMEMBER's absolute time in ms, or the error to reply.
fn parse_time(args: &Args, name: &str, now: u64) -> Result<u64, String> {
    if args.len() > 5 {
        return Err(format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    let t = parse_i64(&args[3]).ok_or("ERR value is not an integer or out of range")?;
    let (scale, base) = match name {
        "expiremember" => {
            let scale = match (args.len() == 5).then(|| &args[4]) {
                None => 1000,
                Some(u) if eq_ic(u, "s") => 1000,
                Some(u) if eq_ic(u, "ms") => 1,
                Some(_) => return Err("ERR Invalid unit arg".into()),
            };
            (scale, now as i64)
        }
        "expirememberat" => (1000, 0),
        _ => (1, 0),
    };
    let invalid = || format!("ERR invalid expire time in '{name}' command");
    let at = t
        .checked_mul(scale)
        .and_then(|t| t.checked_add(base))
        .ok_or_else(invalid)?;
    if at > MAX_FIELD_TIME_MS as i64 {
        return Err(invalid());
    }
    // A time before the epoch is simply past.
    Ok(at.max(0) as u64)
}

/// The removal command, event class and event name of a member of `v`.
fn removal(v: &Value) -> (&'static [u8], u32, &'static str) {
    match v {
        Value::Set(_) => (b"SREM", notify::SET, "srem"),
        Value::ZSet(_) => (b"ZREM", notify::ZSET, "zrem"),
        _ => (b"HDEL", notify::HASH, "hdel"),
    }
}

/// The time of member `m` of `v`, if it has one.
fn member_time(v: &Value, m: &[u8]) -> Option<u64> {
    v.subkey_ttls().and_then(|t| t.get(m))
}

/// EXPIREMEMBER key member delay [s|ms], EXPIREMEMBERAT key member unix-s,
/// PEXPIREMEMBERAT key member unix-ms: 1 when the time was set (or the member deleted, the
/// time being past), 0 when there is no such key or member.
fn expiremember(ctx: &mut Ctx, args: &Args) {
    let name = ctx.cmd.name;
    let at = match parse_time(args, name, ctx.now_ms) {
        Ok(at) => at,
        Err(e) => return ctx.error(&e),
    };
    let (key, member) = (&args[1], &args[2]);
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    let Some(e) = ctx.entry_write(&mut shard, h, key) else {
        drop(shard);
        return ctx.out.int(0);
    };
    if !matches!(e.value, Value::Set(_) | Value::ZSet(_) | Value::Hash(_)) {
        return ctx.wrong_type(shard);
    }
    if !e.value.has_subkey(member) {
        drop(shard);
        return ctx.out.int(0);
    }
    let (remove_cmd, class, event) = removal(&e.value);
    // A time already past deletes the member, on a master (a replica waits for the removal).
    let deletes = tern_engine::expire::already_expired(at as i64, now);
    let emptied = if deletes {
        e.value.remove_subkey(member);
        e.value.is_empty_collection()
    } else {
        e.value.set_subkey_ttl(member, at);
        false
    };
    shard.touch(key);
    if emptied {
        shard.remove(h, key);
    } else {
        shard.hfe_sync(h, key);
    }
    drop(shard);
    ctx.dirty(1);
    ctx.out.int(1);
    if deletes {
        ctx.notify(class, event, key);
        if emptied {
            ctx.notify(notify::GENERIC, "del", key);
        }
        return ctx.propagate_as(&[remove_cmd, key, member]);
    }
    if class == notify::HASH {
        ctx.notify(notify::HASH, "hexpire", key);
    }
    if name != "pexpirememberat" && ctx.propagating() {
        let t = itoa::Buffer::new().format(at).to_owned();
        ctx.propagate_as(&[b"PEXPIREMEMBERAT", key, member, t.as_bytes()]);
    }
}

/// `TTL key member` / `PTTL key member`, as KeyDB answers them: -2 without the key, -1 when
/// the member has no time (or is not there, or the type has no members), else what is left
/// (never below 0; seconds rounded to the nearest).
pub(crate) fn member_ttl(ctx: &mut Ctx, args: &Args, ms: bool) {
    let (key, member) = (&args[1], &args[2]);
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    let at = ctx
        .entry_read(&mut shard, h, key)
        .map(|e| member_time(&e.value, member));
    drop(shard);
    ctx.hit(at.is_some(), key);
    let reply = match at {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => {
            let left = (at as i64 - now as i64).max(0);
            if ms {
                left
            } else {
                (left + 500) / 1000
            }
        }
    };
    ctx.out.int(reply);
}

/// `PERSIST key member`: 1 when the member had a time and lost it, else 0.
pub(crate) fn persist_member(ctx: &mut Ctx, args: &Args) {
    let (key, member) = (&args[1], &args[2]);
    let (h, mut shard) = ctx.lock(key);
    let had = match ctx.entry_write(&mut shard, h, key).map(|e| &mut e.value) {
        Some(Value::Set(s)) => s.persist_member(member),
        Some(Value::ZSet(z)) => z.persist_member(member),
        Some(Value::Hash(hv)) => hv.persist_field(member),
        _ => false,
    };
    if had {
        shard.touch(key);
        shard.hfe_sync(h, key);
    }
    drop(shard);
    if had {
        ctx.dirty(1);
        ctx.notify(notify::GENERIC, "persist", key);
    }
    ctx.out.int(had as i64);
}

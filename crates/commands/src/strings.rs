//! String commands.

use crate::args::{eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use crate::ctx::Ctx;
use crate::table::{acl, flags as f, kflags as k, CommandSpec, KeySpec};
use tern_engine::{RString, Value};

const STR: u64 = acl::STRING;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "get",
        arity: 2,
        flags: f::READONLY | f::FAST,
        acl: STR | acl::READ | acl::FAST,
        keys: &[KeySpec::single(1, k::RO | k::ACCESS)],
        handler: Some(get),
        group: "string",
        summary: "Returns the string value of a key.",
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "set",
        arity: -3,
        flags: f::WRITE | f::DENYOOM,
        acl: STR | acl::WRITE | acl::SLOW,
        keys: &[KeySpec::single(1, k::RW | k::ACCESS | k::UPDATE | k::VARIABLE_FLAGS)],
        handler: Some(set),
        group: "string",
        summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
        ..CommandSpec::DEFAULT
    },
];

fn get(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let Some(e) = shard.get(h, key, ctx.now_ms) else {
        drop(shard);
        ctx.hit(false);
        ctx.out.null();
        return;
    };
    ctx.touch(e);
    match &e.value {
        Value::Str(RString::Int(n)) => ctx.out.bulk_int(*n),
        Value::Str(RString::Emb(b)) => ctx.out.bulk(b),
        Value::Str(RString::Raw(b)) => ctx.out.bulk(b),
        #[allow(unreachable_patterns)]
        _ => {
            drop(shard);
            ctx.error(ERR_WRONGTYPE);
            return;
        }
    }
    drop(shard);
    ctx.hit(true);
}

/// Expiry option of SET / GETEX: absolute unix ms, or KEEPTTL / PERSIST.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ExpireOpt {
    None,
    At(u64),
    KeepTtl,
    Persist,
}

/// Parse EX/PX/EXAT/PXAT's number the way Redis does, returning absolute ms.
pub fn parse_expire_arg(ctx: &Ctx, unit: &[u8], arg: &[u8], cmd: &str) -> Result<u64, String> {
    let Some(n) = parse_i64(arg) else {
        return Err(ERR_NOT_INT.into());
    };
    let invalid = || format!("ERR invalid expire time in '{cmd}' command");
    if n <= 0 {
        return Err(invalid());
    }
    let (ms, absolute) = if eq_ic(unit, "EX") {
        (n.checked_mul(1000).ok_or_else(invalid)?, false)
    } else if eq_ic(unit, "PX") {
        (n, false)
    } else if eq_ic(unit, "EXAT") {
        (n.checked_mul(1000).ok_or_else(invalid)?, true)
    } else {
        (n, true)
    };
    if absolute {
        Ok(ms as u64)
    } else {
        (ms as u64)
            .checked_add(ctx.now_ms)
            .filter(|&v| v <= i64::MAX as u64)
            .ok_or_else(invalid)
    }
}

fn set(ctx: &mut Ctx, args: &Args) {
    let (mut nx, mut xx, mut get_old) = (false, false, false);
    let mut expire = ExpireOpt::None;
    let mut i = 3;
    while i < args.len() {
        let a = &args[i];
        let has_next = i + 1 < args.len();
        if eq_ic(a, "NX") && !xx {
            nx = true;
        } else if eq_ic(a, "XX") && !nx {
            xx = true;
        } else if eq_ic(a, "GET") {
            get_old = true;
        } else if eq_ic(a, "KEEPTTL") && expire == ExpireOpt::None {
            expire = ExpireOpt::KeepTtl;
        } else if (eq_ic(a, "EX") || eq_ic(a, "PX") || eq_ic(a, "EXAT") || eq_ic(a, "PXAT"))
            && expire == ExpireOpt::None
            && has_next
        {
            match parse_expire_arg(ctx, a, &args[i + 1], "set") {
                Ok(at) => expire = ExpireOpt::At(at),
                Err(e) => return ctx.error(&e),
            }
            i += 1;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
        i += 1;
    }
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    let existing = shard.get(h, key, now);
    if get_old {
        if let Some(e) = &existing {
            if !matches!(e.value, Value::Str(_)) {
                drop(shard);
                return ctx.error(ERR_WRONGTYPE);
            }
        }
    }
    let exists = existing.is_some();
    let old = if get_old {
        existing.map(|e| e.value.clone())
    } else {
        None
    };
    if (nx && exists) || (xx && !exists) {
        drop(shard);
        if get_old {
            reply_old(ctx, old);
        } else {
            ctx.out.null();
        }
        return;
    }
    shard.set(
        h,
        key,
        Value::from_bytes(&args[2]),
        expire == ExpireOpt::KeepTtl,
        now,
    );
    if let ExpireOpt::At(at) = expire {
        if at <= now {
            // Already in the past: the key is set and immediately gone, as in Redis.
            shard.remove(h, key);
        } else {
            shard.set_expire(h, key, at, now);
        }
    }
    drop(shard);
    ctx.dirty(1);
    if get_old {
        reply_old(ctx, old);
    } else {
        ctx.out.ok();
    }
}

fn reply_old(ctx: &mut Ctx, old: Option<Value>) {
    match old {
        Some(Value::Str(s)) => s.with_bytes(|b| ctx.out.bulk(b)),
        _ => ctx.out.null(),
    }
}

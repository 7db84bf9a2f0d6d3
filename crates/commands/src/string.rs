//! String commands: GET/SET and their variants, counters, ranges, APPEND and LCS.

use std::sync::atomic::Ordering::Relaxed;
use tern_engine::thin::ThinBuf;
use tern_engine::value::EMBSTR_LIMIT;
use tern_engine::{RString, Value};
use tern_runtime::args::{
    eq_ic, parse_i64, Args, ERR_NOT_FLOAT, ERR_NOT_INT, ERR_OVERFLOW, ERR_STRING_TOO_LONG,
    ERR_SYNTAX, ERR_WRONGTYPE,
};
use tern_runtime::ctx::Ctx;
use tern_runtime::float::{self, IncrError};
use tern_runtime::keyspace_access::Typed;
use tern_runtime::keyspace_access::{as_str, max_bulk_len, store_value};
use tern_runtime::notify;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "string";
    ("get", 2, [READONLY FAST], [STRING], [key(1, RO ACCESS)], get, "1.0.0",
        "Reads the string stored at a key."),
    ("set", -3, [WRITE DENYOOM], [STRING], [key(1, RW ACCESS UPDATE VARIABLE_FLAGS)], set, "1.0.0",
        "Stores a string at a key, replacing any value of any type, with optional conditions and expiry."),
    ("setnx", 3, [WRITE DENYOOM FAST], [STRING], [key(1, OW INSERT)], setnx, "1.0.0",
        "Sets the value of a key only when the key does not exist yet."),
    ("setex", 4, [WRITE DENYOOM], [STRING], [key(1, OW UPDATE)], setex, "2.0.0",
        "Sets a key's string value together with a time to live in seconds."),
    ("psetex", 4, [WRITE DENYOOM], [STRING], [key(1, OW UPDATE)], psetex, "2.6.0",
        "Sets a key's string value together with a time to live in milliseconds."),
    ("mget", -2, [READONLY FAST], [STRING], [range(1, -1, 1, RO ACCESS)], mget, "1.0.0",
        "Returns the string values of several keys at once.",
        complexity: "O(N), N being how many keys are read."),
    ("mset", -3, [WRITE DENYOOM], [STRING], [range(1, -1, 2, OW UPDATE)], mset, "1.0.1",
        "Sets the string values of several keys in one atomic step.",
        complexity: "O(N), N being how many keys are written."),
    ("msetnx", -3, [WRITE DENYOOM], [STRING], [range(1, -1, 2, OW INSERT)], msetnx, "1.0.1",
        "Sets several keys atomically, but only if none of them exists yet.",
        complexity: "O(N), N being how many keys are written."),
    ("getset", 3, [WRITE DENYOOM FAST], [STRING], [key(1, RW ACCESS UPDATE)], getset, "1.0.0",
        "Stores a new string value and hands back the one it replaced."),
    ("getdel", 2, [WRITE FAST], [STRING], [key(1, RW ACCESS DELETE)], getdel, "6.2.0",
        "Returns a key's string value and removes the key."),
    ("getex", -2, [WRITE FAST], [STRING], [key(1, RW ACCESS UPDATE)], getex, "6.2.0",
        "Returns a key's string value, optionally changing or removing its expiration."),
    ("append", 3, [WRITE DENYOOM FAST], [STRING], [key(1, RW INSERT)], append, "2.0.0",
        "Adds bytes to the end of a string value, creating the key when missing.",
        complexity: "O(1) amortized for small appends: the buffer grows geometrically, so earlier contents are rarely copied."),
    ("strlen", 2, [READONLY FAST], [STRING], [key(1, RO)], strlen, "2.2.0",
        "Returns how many bytes a string value holds."),
    ("incr", 2, [WRITE DENYOOM FAST], [STRING], [key(1, RW ACCESS UPDATE)], incr, "1.0.0",
        "Adds one to a key's integer value; a missing key counts as zero."),
    ("decr", 2, [WRITE DENYOOM FAST], [STRING], [key(1, RW ACCESS UPDATE)], decr, "1.0.0",
        "Subtracts one from a key's integer value; a missing key counts as zero."),
    ("incrby", 3, [WRITE DENYOOM FAST], [STRING], [key(1, RW ACCESS UPDATE)], incrby, "1.0.0",
        "Adds a given integer to a key's integer value; a missing key counts as zero."),
    ("decrby", 3, [WRITE DENYOOM FAST], [STRING], [key(1, RW ACCESS UPDATE)], decrby, "1.0.0",
        "Subtracts a given integer from a key's integer value; a missing key counts as zero."),
    ("incrbyfloat", 3, [WRITE DENYOOM FAST], [STRING], [key(1, RW ACCESS UPDATE)], incrbyfloat,
        "2.6.0",
        "Adds a floating point number to a key's numeric value; a missing key counts as zero."),
    ("getrange", 4, [READONLY], [STRING], [key(1, RO ACCESS)], getrange, "2.4.0",
        "Returns the part of a string value between two offsets.",
        complexity: "O(N), N being the length of the returned part; effectively O(1) for short results."),
    ("setrange", 4, [WRITE DENYOOM], [STRING], [key(1, RW UPDATE)], setrange, "2.2.0",
        "Writes bytes into a string value at an offset, padding with zero bytes as needed.",
        complexity: "O(1) plus O(M) to copy the M bytes written (and any zero padding the string grows by)."),
    ("substr", 4, [READONLY], [STRING], [key(1, RO ACCESS)], getrange, "1.0.0",
        "Returns the part of a string value between two offsets (old name of GETRANGE).",
        complexity: "O(N), N being the length of the returned part; effectively O(1) for short results."),
    ("lcs", -3, [READONLY], [STRING], [range(1, 1, 1, RO ACCESS)], lcs, "7.0.0",
        "Finds the longest common subsequence of two string values.",
        complexity: "O(N*M), N and M being the lengths of the two strings."),
};

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// A string built from a computed buffer without trying the integer encoding (Redis's
/// createStringObject: embstr when short, raw otherwise).
fn plain_string(b: Vec<u8>) -> RString {
    if b.len() <= EMBSTR_LIMIT {
        RString::embstr(&b)
    } else {
        RString::exact(b)
    }
}

/// Redis's checkStringLength: would `size + extra` bytes exceed proto-max-bulk-len?
fn too_long_for(limit: i64, size: i64, extra: i64) -> bool {
    match size.checked_add(extra) {
        Some(total) => total > limit,
        None => true,
    }
}

fn reply_str(ctx: &mut Ctx, s: &RString) {
    match s {
        RString::Int(n) => ctx.out.bulk_int(n.get()),
        _ => ctx.out.bulk(s.as_bytes().unwrap_or_default()),
    }
}

/// Options of SET and GETEX, parsed the way Redis parses them (later EX/PX of the same kind
/// replace earlier ones; conflicting ones are a syntax error).
mod opt {
    pub const NX: u32 = 1 << 0;
    pub const XX: u32 = 1 << 1;
    pub const GET: u32 = 1 << 2;
    pub const KEEPTTL: u32 = 1 << 3;
    pub const PERSIST: u32 = 1 << 4;
    pub const EX: u32 = 1 << 5;
    pub const PX: u32 = 1 << 6;
    pub const EXAT: u32 = 1 << 7;
    pub const PXAT: u32 = 1 << 8;
    pub const ANY_EXPIRE: u32 = EX | PX | EXAT | PXAT;
}

/// Parse the options from argument `from` on. Returns the option flags and the argument index
/// of the expiry value (EX/PX/EXAT/PXAT), or None on a syntax error.
fn parse_options(args: &Args, from: usize, for_set: bool) -> Option<(u32, Option<usize>)> {
    let mut fl = 0u32;
    let mut expire = None;
    let mut i = from;
    while i < args.len() {
        let a = &args[i];
        let has_next = i + 1 < args.len();
        // For each expiry kind: the flags that may not already be present.
        let expiry_kind = [
            ("EX", opt::EX),
            ("PX", opt::PX),
            ("EXAT", opt::EXAT),
            ("PXAT", opt::PXAT),
        ]
        .into_iter()
        .find(|(name, _)| eq_ic(a, name));
        if for_set && eq_ic(a, "NX") && fl & opt::XX == 0 {
            fl |= opt::NX;
        } else if for_set && eq_ic(a, "XX") && fl & opt::NX == 0 {
            fl |= opt::XX;
        } else if for_set && eq_ic(a, "GET") {
            fl |= opt::GET;
        } else if for_set && eq_ic(a, "KEEPTTL") && fl & (opt::PERSIST | opt::ANY_EXPIRE) == 0 {
            fl |= opt::KEEPTTL;
        } else if !for_set && eq_ic(a, "PERSIST") && fl & (opt::KEEPTTL | opt::ANY_EXPIRE) == 0 {
            fl |= opt::PERSIST;
        } else if let Some((_, bit)) = expiry_kind.filter(|&(_, bit)| {
            has_next && fl & (opt::KEEPTTL | opt::PERSIST | (opt::ANY_EXPIRE & !bit)) == 0
        }) {
            fl |= bit;
            expire = Some(i + 1);
            i += 1;
        } else {
            return None;
        }
        i += 1;
    }
    Some((fl, expire))
}

/// Turn an EX/PX/EXAT/PXAT value into absolute unix milliseconds, with Redis's checks and
/// error texts (`cmd` is the command name the error quotes).
pub fn expire_at_ms(
    now_ms: u64,
    seconds: bool,
    relative: bool,
    arg: &[u8],
    cmd: &str,
) -> Result<u64, String> {
    let Some(n) = parse_i64(arg) else {
        return Err(ERR_NOT_INT.into());
    };
    let invalid = || format!("ERR invalid expire time in '{cmd}' command");
    if n <= 0 {
        return Err(invalid());
    }
    let mut ms = if seconds {
        n.checked_mul(1000).ok_or_else(invalid)?
    } else {
        n
    };
    if relative {
        ms = ms.checked_add(now_ms as i64).ok_or_else(invalid)?;
    }
    Ok(ms as u64)
}

fn expire_from_flags(ctx: &Ctx, fl: u32, arg: &[u8]) -> Result<u64, String> {
    expire_at_ms(
        ctx.now_ms,
        fl & (opt::EX | opt::EXAT) != 0,
        fl & (opt::EX | opt::PX) != 0,
        arg,
        ctx.cmd.name,
    )
}

// ---------------------------------------------------------------------------------------------
// GET / SET family
// ---------------------------------------------------------------------------------------------

fn get(ctx: &mut Ctx, args: &Args) {
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.null(),
        |ctx, s: &mut RString| reply_str(ctx, s),
    );
}

/// The core of SET, SETNX, SETEX, PSETEX. `expire` is an absolute time in ms.
/// Returns None when the key was left alone because of NX/XX; with `get_old` the previous
/// value (or WRONGTYPE) is replied before anything changes.
fn set_generic(
    ctx: &mut Ctx,
    key: &[u8],
    val: &[u8],
    fl: u32,
    expire: Option<u64>,
) -> Result<bool, ()> {
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    let mut found = false;
    // Changes (and touches for WATCH) only in store_value, past the NX/XX and type checks.
    if let Some(e) = shard.get_quiet(h, key, now) {
        found = true;
        if fl & opt::GET != 0 {
            ctx.touch(e);
            match as_str(&e.value) {
                Some(s) => reply_str(ctx, s),
                None => {
                    drop(shard);
                    ctx.hit(true, key);
                    ctx.error(ERR_WRONGTYPE);
                    return Err(());
                }
            }
        }
    } else if fl & opt::GET != 0 {
        ctx.out.null();
    }
    if fl & opt::GET != 0 {
        ctx.hit(found, key);
    }
    if (fl & opt::NX != 0 && found) || (fl & opt::XX != 0 && !found) {
        return Ok(false);
    }
    let keep_ttl = fl & opt::KEEPTTL != 0;
    store_value(ctx, &mut shard, h, key, Value::from_bytes(val), keep_ttl);
    if let Some(at) = expire {
        // A time already past is stored as is: the key reads as missing from now on and is
        // reclaimed (and counted as expired) on its next access, as Redis does.
        shard.set_expire(h, key, at, now);
    }
    drop(shard);
    ctx.dirty(1);
    ctx.notify(notify::STRING, "set", key);
    if let Some(at) = expire {
        ctx.notify(notify::GENERIC, "expire", key);
        // Relative times are propagated as the absolute time they gave.
        if fl & opt::PXAT == 0 {
            let t = at.to_string();
            ctx.propagate_as(&[b"SET", key, val, b"PXAT", t.as_bytes()]);
        }
    }
    Ok(true)
}

fn set(ctx: &mut Ctx, args: &Args) {
    let Some((fl, expire_idx)) = parse_options(args, 3, true) else {
        return ctx.error(ERR_SYNTAX);
    };
    let expire = match expire_idx {
        Some(i) => match expire_from_flags(ctx, fl, &args[i]) {
            Ok(at) => Some(at),
            Err(e) => return ctx.error(&e),
        },
        None => None,
    };
    match set_generic(ctx, &args[1], &args[2], fl, expire) {
        Err(()) => {}
        Ok(done) if fl & opt::GET != 0 => {
            // Propagated without its GET (replaying it would only read).
            if done && expire.is_none() && ctx.propagating() {
                let argv: Vec<&[u8]> = args
                    .iter()
                    .enumerate()
                    .filter(|(j, a)| *j < 3 || !a.eq_ignore_ascii_case(b"get"))
                    .map(|(_, a)| a)
                    .collect();
                ctx.propagate_as(&argv);
            }
        }
        Ok(true) => ctx.out.ok(),
        Ok(false) => ctx.out.null(),
    }
}

fn setnx(ctx: &mut Ctx, args: &Args) {
    if let Ok(done) = set_generic(ctx, &args[1], &args[2], opt::NX, None) {
        ctx.out.int(done as i64);
    }
}

fn setex_generic(ctx: &mut Ctx, args: &Args, seconds: bool) {
    let at = match expire_at_ms(ctx.now_ms, seconds, true, &args[2], ctx.cmd.name) {
        Ok(at) => at,
        Err(e) => return ctx.error(&e),
    };
    if set_generic(ctx, &args[1], &args[3], 0, Some(at)).is_ok() {
        ctx.out.ok();
    }
}

fn setex(ctx: &mut Ctx, args: &Args) {
    setex_generic(ctx, args, true);
}

fn psetex(ctx: &mut Ctx, args: &Args) {
    setex_generic(ctx, args, false);
}

fn getset(ctx: &mut Ctx, args: &Args) {
    if let Ok(true) = set_generic(ctx, &args[1], &args[2], opt::GET, None) {
        ctx.propagate_as(&[b"SET", &args[1], &args[2]]);
    }
}

fn getdel(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    // A change (and a WATCH touch) only in `remove`.
    let s = match ctx.lookup_write::<RString>(&mut shard, h, key) {
        Typed::Found(s) => s,
        Typed::Missing => {
            drop(shard);
            ctx.hit(false, key);
            return ctx.out.null();
        }
        Typed::WrongType => {
            ctx.hit(true, key);
            return ctx.wrong_type(shard);
        }
    };
    reply_str(ctx, s);
    shard.remove(h, key);
    drop(shard);
    ctx.hit(true, key);
    ctx.dirty(1);
    ctx.notify(notify::GENERIC, "del", key);
    ctx.propagate_as(&[b"DEL", key]);
}

fn getex(ctx: &mut Ctx, args: &Args) {
    let Some((fl, expire_idx)) = parse_options(args, 2, false) else {
        return ctx.error(ERR_SYNTAX);
    };
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    // Changes (and WATCH touches) only in `remove` and `set_expire` below: GETEX without an
    // option, or PERSIST of a key without a TTL, leaves the key alone.
    let Some(e) = shard.get_quiet(h, key, now) else {
        drop(shard);
        ctx.hit(false, key);
        return ctx.out.null();
    };
    ctx.touch(e);
    ctx.hit(true, key);
    let Some(s) = as_str(&e.value) else {
        drop(shard);
        return ctx.error(ERR_WRONGTYPE);
    };
    // The expiry value is only checked once the key is known to hold a string.
    let expire = match expire_idx {
        Some(i) => match expire_from_flags(ctx, fl, &args[i]) {
            Ok(at) => Some(at),
            Err(err) => {
                drop(shard);
                return ctx.error(&err);
            }
        },
        None => None,
    };
    reply_str(ctx, s);
    let had_ttl = e.expire_at() != 0;
    let event = match expire {
        // Only absolute times can already be over; those delete the key.
        Some(at)
            if fl & (opt::EXAT | opt::PXAT) != 0
                && tern_engine::expire::already_expired(at as i64, now) =>
        {
            shard.remove(h, key);
            Some((notify::GENERIC, "del"))
        }
        Some(at) => shard
            .set_expire(h, key, at, now)
            .then_some((notify::GENERIC, "expire")),
        None if fl & opt::PERSIST != 0 && had_ttl => shard
            .set_expire(h, key, 0, now)
            .then_some((notify::GENERIC, "persist")),
        None => None,
    };
    drop(shard);
    if let Some((class, name)) = event {
        ctx.dirty(1);
        ctx.notify(class, name, key);
        // GETEX is never propagated as such: as the change it made.
        match (name, expire) {
            ("del", _) => {
                let lazy = ctx.srv.config.hot.lazyfree_lazy_expire.load(Relaxed);
                ctx.propagate_as(&[if lazy { b"UNLINK" } else { b"DEL" }, key]);
            }
            ("expire", Some(at)) => {
                let t = at.to_string();
                ctx.propagate_as(&[b"PEXPIREAT", key, t.as_bytes()]);
            }
            _ => ctx.propagate_as(&[b"PERSIST", key]),
        }
    }
}

fn mget(ctx: &mut Ctx, args: &Args) {
    let (hashes, mut g) = ctx.lock_keys(args.iter().skip(1));
    let db = ctx.conn.db;
    ctx.out.array(hashes.len());
    for (i, &h) in hashes.iter().enumerate() {
        let key = &args[i + 1];
        // A hit or miss recorded key by key: after this key's own `expired` and before the
        // next key's. Another type than a string answers nil.
        match ctx.lookup_read::<RString>(g.shard(db, h), h, key) {
            Typed::Found(s) => {
                ctx.hit(true, key);
                reply_str(ctx, s);
            }
            Typed::WrongType => {
                ctx.hit(true, key);
                ctx.out.null();
            }
            Typed::Missing => {
                ctx.hit(false, key);
                ctx.out.null();
            }
        }
    }
    drop(g);
}

fn mset_generic(ctx: &mut Ctx, args: &Args, nx: bool) {
    if args.len().is_multiple_of(2) {
        return ctx.error(&format!(
            "ERR wrong number of arguments for '{}' command",
            ctx.cmd.name
        ));
    }
    let (hashes, mut g) = ctx.lock_keys((1..args.len()).step_by(2).map(|i| &args[i]));
    let db = ctx.conn.db;
    let now = ctx.now_ms;
    if nx {
        let any = hashes
            .iter()
            .enumerate()
            .any(|(i, &h)| g.shard(db, h).get_quiet(h, &args[1 + 2 * i], now).is_some());
        if any {
            drop(g);
            return ctx.out.int(0);
        }
    }
    for (i, &h) in hashes.iter().enumerate() {
        let key = &args[1 + 2 * i];
        let val = Value::from_bytes(&args[2 + 2 * i]);
        store_value(ctx, g.shard(db, h), h, key, val, false);
        // Each key's events in turn (its `new`, then `set`), as Redis orders them.
        ctx.notify(notify::STRING, "set", key);
    }
    drop(g);
    ctx.dirty(hashes.len() as u64);
    if nx {
        ctx.out.int(1);
    } else {
        ctx.out.ok();
    }
}

fn mset(ctx: &mut Ctx, args: &Args) {
    mset_generic(ctx, args, false);
}

fn msetnx(ctx: &mut Ctx, args: &Args) {
    mset_generic(ctx, args, true);
}

// ---------------------------------------------------------------------------------------------
// Counters
// ---------------------------------------------------------------------------------------------

fn incr_decr(ctx: &mut Ctx, key: &[u8], delta: i64) {
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    let result = match ctx.lookup_write::<RString>(&mut shard, h, key) {
        Typed::WrongType => Err(ERR_WRONGTYPE),
        Typed::Found(s) => {
            let cur = match &*s {
                RString::Int(n) => Some(n.get()),
                other => other.with_bytes(parse_i64),
            };
            match cur {
                None => Err(ERR_NOT_INT),
                Some(cur) => match cur.checked_add(delta) {
                    None => Err(ERR_OVERFLOW),
                    Some(v) => {
                        *s = RString::int(v);
                        Ok(v)
                    }
                },
            }
        }
        Typed::Missing => {
            shard.set(h, key, Value::Str(RString::int(delta)), false, now);
            Ok(delta)
        }
    };
    // Every successful increment signals the key, INCRBY 0 included.
    if result.is_ok() {
        shard.touch(key);
    }
    drop(shard);
    match result {
        Ok(v) => {
            ctx.dirty(1);
            ctx.notify(notify::STRING, "incrby", key);
            ctx.out.int(v);
        }
        Err(e) => ctx.error(e),
    }
}

fn incr(ctx: &mut Ctx, args: &Args) {
    incr_decr(ctx, &args[1], 1);
}

fn decr(ctx: &mut Ctx, args: &Args) {
    incr_decr(ctx, &args[1], -1);
}

fn incrby(ctx: &mut Ctx, args: &Args) {
    match parse_i64(&args[2]) {
        Some(by) => incr_decr(ctx, &args[1], by),
        None => ctx.error(ERR_NOT_INT),
    }
}

fn decrby(ctx: &mut Ctx, args: &Args) {
    match parse_i64(&args[2]) {
        Some(i64::MIN) => ctx.error("ERR decrement would overflow"),
        Some(by) => incr_decr(ctx, &args[1], -by),
        None => ctx.error(ERR_NOT_INT),
    }
}

fn incrbyfloat(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    let result = match ctx.lookup_write::<RString>(&mut shard, h, key) {
        Typed::WrongType => Err(ERR_WRONGTYPE),
        Typed::Found(s) => {
            let r = match &*s {
                RString::Int(n) => float::incr_by_float(
                    Some(itoa::Buffer::new().format(n.get()).as_bytes()),
                    &args[2],
                ),
                other => other.with_bytes(|b| float::incr_by_float(Some(b), &args[2])),
            };
            r.map(|v| {
                *s = plain_string(v);
                s.to_vec()
            })
            .map_err(float_error)
        }
        Typed::Missing => float::incr_by_float(None, &args[2])
            .inspect(|v| {
                shard.set(h, key, Value::Str(plain_string(v.clone())), false, now);
            })
            .map_err(float_error),
    };
    if result.is_ok() {
        shard.touch(key);
    }
    drop(shard);
    match result {
        Ok(v) => {
            ctx.dirty(1);
            ctx.notify(notify::STRING, "incrbyfloat", key);
            ctx.out.bulk(&v);
            // As the value it produced: float formatting must not differ on replay.
            ctx.propagate_as(&[b"SET", key, &v, b"KEEPTTL"]);
        }
        Err(e) => ctx.error(e),
    }
}

fn float_error(e: IncrError) -> &'static str {
    match e {
        IncrError::BadValue | IncrError::BadIncrement => ERR_NOT_FLOAT,
        IncrError::NotFinite => "ERR increment would produce NaN or Infinity",
    }
}

// ---------------------------------------------------------------------------------------------
// Lengths and ranges
// ---------------------------------------------------------------------------------------------

fn append(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let tail = &args[2];
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    let limit = max_bulk_len(ctx);
    let result = match ctx.lookup_write::<RString>(&mut shard, h, key) {
        Typed::WrongType => Err(ERR_WRONGTYPE),
        Typed::Found(s) => {
            if too_long_for(limit, s.len() as i64, tail.len() as i64) {
                Err(ERR_STRING_TOO_LONG)
            } else {
                let buf = s.make_raw();
                buf.extend_from_slice(tail);
                Ok(buf.len())
            }
        }
        Typed::Missing => {
            shard.set(h, key, Value::from_bytes(tail), false, now);
            Ok(tail.len())
        }
    };
    // Redis signals every APPEND that succeeds, of an empty string too.
    if result.is_ok() {
        shard.touch(key);
    }
    drop(shard);
    match result {
        Ok(n) => {
            ctx.dirty(1);
            ctx.notify(notify::STRING, "append", key);
            ctx.out.int(n as i64);
        }
        Err(e) => ctx.error(e),
    }
}

fn strlen(ctx: &mut Ctx, args: &Args) {
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.int(0),
        |ctx, s: &mut RString| ctx.out.int(s.len() as i64),
    );
}

/// The byte range GETRANGE returns for a string of `len` bytes, Redis's clamping rules.
fn range_of(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let n = len as i64;
    let mut start = if start < 0 { n + start } else { start };
    let mut end = if end < 0 { n + end } else { end };
    start = start.max(0);
    end = end.max(0);
    if end >= n {
        end = n - 1;
    }
    if len == 0 || start > end {
        return None;
    }
    Some((start as usize, end as usize))
}

fn getrange(ctx: &mut Ctx, args: &Args) {
    let (Some(start), Some(end)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
        return ctx.error(ERR_NOT_INT);
    };
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.bulk(b""),
        |ctx, s: &mut RString| {
            s.with_bytes(|b| match range_of(b.len(), start, end) {
                Some((a, z)) => ctx.out.bulk(&b[a..=z]),
                None => ctx.out.bulk(b""),
            })
        },
    );
}

fn setrange(ctx: &mut Ctx, args: &Args) {
    let Some(offset) = parse_i64(&args[2]) else {
        return ctx.error(ERR_NOT_INT);
    };
    if offset < 0 {
        return ctx.error("ERR offset is out of range");
    }
    let key = &args[1];
    let patch = &args[3];
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    let too_big = too_long_for(max_bulk_len(ctx), offset, patch.len() as i64);
    let result = match ctx.lookup_write::<RString>(&mut shard, h, key) {
        Typed::WrongType => Err(ERR_WRONGTYPE),
        Typed::Found(s) if patch.is_empty() => Ok((s.len(), false)),
        Typed::Found(_) if too_big => Err(ERR_STRING_TOO_LONG),
        Typed::Found(s) => {
            let buf = s.make_raw();
            write_at(buf, offset as usize, patch);
            Ok((buf.len(), true))
        }
        Typed::Missing if patch.is_empty() => Ok((0, false)),
        Typed::Missing if too_big => Err(ERR_STRING_TOO_LONG),
        Typed::Missing => {
            let mut buf = ThinBuf::new();
            write_at(&mut buf, offset as usize, patch);
            let n = buf.len();
            shard.set(h, key, Value::Str(RString::Raw(buf)), false, now);
            Ok((n, true))
        }
    };
    // An empty patch changes nothing (and is no WATCH touch); any other one is, even when it
    // writes the bytes already there.
    if let Ok((_, true)) = result {
        shard.touch(key);
    }
    drop(shard);
    match result {
        Ok((n, changed)) => {
            if changed {
                ctx.dirty(1);
                ctx.notify(notify::STRING, "setrange", key);
            }
            ctx.out.int(n as i64);
        }
        Err(e) => ctx.error(e),
    }
}

/// Copy `patch` into `buf` at `offset`, zero-filling any gap.
fn write_at(buf: &mut ThinBuf, offset: usize, patch: &[u8]) {
    let end = offset + patch.len();
    if buf.len() < end {
        buf.resize(end, 0);
    }
    buf[offset..end].copy_from_slice(patch);
}

// ---------------------------------------------------------------------------------------------
// LCS
// ---------------------------------------------------------------------------------------------

/// One matching run: (a_start, a_end, b_start, b_end, length).
type Match = (u32, u32, u32, u32, u32);

fn lcs(ctx: &mut Ctx, args: &Args) {
    // Read both values under one lock set, then work on copies.
    let (hashes, mut g) = ctx.lock_pair(&args[1], &args[2]);
    let db = ctx.conn.db;
    let mut vals = [None, None];
    for (i, v) in vals.iter_mut().enumerate() {
        let h = hashes[i];
        let found = ctx.lookup_read::<RString>(g.shard(db, h), h, &args[1 + i]);
        *v = found.checked().map(|s| s.map(|s| s.to_vec())).transpose();
    }
    drop(g);
    for (i, v) in vals.iter().enumerate() {
        ctx.hit(v.is_some(), &args[1 + i]);
    }
    let [a, b] = vals;
    let (a, b) = match (a.transpose(), b.transpose()) {
        (Ok(a), Ok(b)) => (a.unwrap_or_default(), b.unwrap_or_default()),
        _ => return ctx.error("ERR The specified keys must contain string values"),
    };

    let (mut want_len, mut want_idx, mut with_len) = (false, false, false);
    let mut min_len: i64 = 0;
    let mut j = 3;
    while j < args.len() {
        let o = &args[j];
        let more = j + 1 < args.len();
        if eq_ic(o, "IDX") {
            want_idx = true;
        } else if eq_ic(o, "LEN") {
            want_len = true;
        } else if eq_ic(o, "WITHMATCHLEN") {
            with_len = true;
        } else if eq_ic(o, "MINMATCHLEN") && more {
            match parse_i64(&args[j + 1]) {
                Some(n) => min_len = n.max(0),
                None => return ctx.error(ERR_NOT_INT),
            }
            j += 1;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
        j += 1;
    }
    if want_len && want_idx {
        return ctx.error("ERR If you want both the length and indexes, please just use IDX.");
    }
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return ctx.error("ERR String too long for LCS");
    }
    let cells = (a.len() as u64 + 1) * (b.len() as u64 + 1);
    let bytes = cells.checked_mul(4);
    if bytes.is_some_and(|n| n > max_bulk_len(ctx) as u64) {
        return ctx
            .error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let mut table: Vec<u32> = Vec::new();
    if bytes.is_none() || table.try_reserve_exact(cells as usize).is_err() {
        return ctx.error("ERR Insufficient memory, failed allocating transient memory for LCS");
    }
    table.resize(cells as usize, 0);

    let (alen, blen) = (a.len(), b.len());
    let w = blen + 1;
    for i in 1..=alen {
        for j in 1..=blen {
            table[i * w + j] = if a[i - 1] == b[j - 1] {
                table[(i - 1) * w + j - 1] + 1
            } else {
                table[(i - 1) * w + j].max(table[i * w + j - 1])
            };
        }
    }
    let total = table[alen * w + blen];

    // Walk back from the bottom-right corner, rebuilding the sequence and its runs.
    let need_walk = want_idx || !want_len;
    let mut seq = vec![0u8; if need_walk { total as usize } else { 0 }];
    let mut matches: Vec<Match> = Vec::new();
    let mut fill = total as usize;
    let (mut i, mut j) = (alen, blen);
    // Current run, as (a_start, a_end, b_start, b_end); None when no run is open.
    let mut run: Option<(usize, usize, usize, usize)> = None;
    while need_walk && i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            seq[fill - 1] = a[i - 1];
            fill -= 1;
            run = match run {
                None => Some((i - 1, i - 1, j - 1, j - 1)),
                Some((as_, ae, bs, be)) if as_ == i && bs == j => Some((as_ - 1, ae, bs - 1, be)),
                Some(r) => {
                    emit = true;
                    Some(r)
                }
            };
            if let Some((as_, _, bs, _)) = run {
                if as_ == 0 || bs == 0 {
                    emit = true;
                }
            }
            i -= 1;
            j -= 1;
        } else {
            if table[(i - 1) * w + j] > table[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if run.is_some() {
                emit = true;
            }
        }
        if emit {
            if let Some((as_, ae, bs, be)) = run.take() {
                let len = (ae - as_ + 1) as u32;
                if min_len == 0 || len as i64 >= min_len {
                    matches.push((as_ as u32, ae as u32, bs as u32, be as u32, len));
                }
            }
        }
    }

    if want_idx {
        ctx.out.map(2);
        ctx.out.bulk(b"matches");
        ctx.out.array(matches.len());
        for &(as_, ae, bs, be, len) in &matches {
            ctx.out.array(2 + with_len as usize);
            ctx.out.array(2);
            ctx.out.int(as_ as i64);
            ctx.out.int(ae as i64);
            ctx.out.array(2);
            ctx.out.int(bs as i64);
            ctx.out.int(be as i64);
            if with_len {
                ctx.out.int(len as i64);
            }
        }
        ctx.out.bulk(b"len");
        ctx.out.int(total as i64);
    } else if want_len {
        ctx.out.int(total as i64);
    } else {
        ctx.out.bulk(&seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getrange_clamping() {
        assert_eq!(range_of(11, 0, 3), Some((0, 3)));
        assert_eq!(range_of(11, -4, -1), Some((7, 10)));
        assert_eq!(range_of(11, 5, 3), None);
        assert_eq!(range_of(11, -5000, 10000), Some((0, 10)));
        assert_eq!(range_of(0, 0, -1), None);
        assert_eq!(range_of(5, -1, -3), None);
        assert_eq!(range_of(3, 0, 4294967297), Some((0, 2)));
        assert_eq!(range_of(3, i64::MIN, i64::MAX), Some((0, 2)));
    }

    #[test]
    fn option_parsing_follows_redis() {
        let owned = tern_runtime::args::OwnedArgs::new(["set", "k", "v", "EX", "1", "ex", "2"]);
        assert_eq!(
            parse_options(&owned.args(), 3, true),
            Some((opt::EX, Some(6)))
        );
        let owned = tern_runtime::args::OwnedArgs::new(["set", "k", "v", "EX", "1", "PX", "2"]);
        assert_eq!(parse_options(&owned.args(), 3, true), None);
        let owned =
            tern_runtime::args::OwnedArgs::new(["set", "k", "v", "KEEPTTL", "keepttl", "GET"]);
        assert_eq!(
            parse_options(&owned.args(), 3, true),
            Some((opt::KEEPTTL | opt::GET, None))
        );
        let owned = tern_runtime::args::OwnedArgs::new(["set", "k", "v", "NX", "XX"]);
        assert_eq!(parse_options(&owned.args(), 3, true), None);
        let owned = tern_runtime::args::OwnedArgs::new(["set", "k", "v", "EX"]);
        assert_eq!(parse_options(&owned.args(), 3, true), None);
        let owned = tern_runtime::args::OwnedArgs::new(["getex", "k", "PERSIST"]);
        assert_eq!(
            parse_options(&owned.args(), 2, false),
            Some((opt::PERSIST, None))
        );
        let owned = tern_runtime::args::OwnedArgs::new(["getex", "k", "KEEPTTL"]);
        assert_eq!(parse_options(&owned.args(), 2, false), None);
        let owned = tern_runtime::args::OwnedArgs::new(["getex", "k", "PERSIST", "EX", "1"]);
        assert_eq!(parse_options(&owned.args(), 2, false), None);
    }
}

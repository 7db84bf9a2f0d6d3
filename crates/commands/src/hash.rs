//! Hash commands: HSET and friends, counters, whole-hash reads, HRANDFIELD and HSCAN.
//!
//! The value type (`tern_engine::HashValue`) owns the encodings and their conversions; the
//! handlers here look keys up, check types, reply in RESP2 or RESP3 shape and report
//! keyspace events the way Redis's t_hash.c does.

use rand::Rng;
use tern_engine::listpack::LpEntry;
use tern_engine::{HashValue, ShardData, Value};
use tern_resp::Reply;
use tern_runtime::args::{
    eq_ic, parse_i64, Args, ERR_NOT_FLOAT, ERR_NOT_INT, ERR_OVERFLOW, ERR_SYNTAX,
};
use tern_runtime::ctx::Ctx;
use tern_runtime::float::LongDouble;
use tern_runtime::keyspace_access::Typed;
use tern_runtime::notify;
use tern_runtime::scan::{parse_scan_cursor, ScanOpts};
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "hash";
    ("hset", -4, [WRITE DENYOOM FAST], [HASH], [key(1, RW UPDATE)], hset, "2.0.0",
        "Sets one or more fields of a hash, creating the hash when missing; replies with how many fields were new.",
        complexity: "O(1) per field/value pair written."),
    ("hsetnx", 4, [WRITE DENYOOM FAST], [HASH], [key(1, RW INSERT)], hsetnx, "2.0.0",
        "Sets a hash field only when that field does not exist yet."),
    ("hget", 3, [READONLY FAST], [HASH], [key(1, RO ACCESS)], hget, "2.0.0",
        "Returns the value of one hash field."),
    ("hmget", -3, [READONLY FAST], [HASH], [key(1, RO ACCESS)], hmget, "2.0.0",
        "Returns the values of several hash fields, null for each missing one.",
        complexity: "O(N), N being how many fields are asked for."),
    ("hmset", -4, [WRITE DENYOOM FAST], [HASH], [key(1, RW UPDATE)], hset, "2.0.0",
        "Sets several hash fields and replies OK (superseded by HSET).",
        complexity: "O(N), N being how many fields are written."),
    ("hdel", -3, [WRITE FAST], [HASH], [key(1, RW DELETE)], hdel, "2.0.0",
        "Removes fields from a hash, and the hash itself once it is empty.",
        complexity: "O(N), N being how many fields are removed."),
    ("hlen", 2, [READONLY FAST], [HASH], [key(1, RO)], hlen, "2.0.0",
        "Returns how many fields a hash has."),
    ("hstrlen", 3, [READONLY FAST], [HASH], [key(1, RO)], hstrlen, "3.2.0",
        "Returns the length in bytes of a hash field's value."),
    ("hexists", 3, [READONLY FAST], [HASH], [key(1, RO)], hexists, "2.0.0",
        "Tells whether a hash has a given field."),
    ("hkeys", 2, [READONLY], [HASH], [key(1, RO ACCESS)], hkeys, "2.0.0",
        "Returns every field name of a hash.", complexity: "O(N), N being the number of fields.",
        tips: &["nondeterministic_output_order"]),
    ("hvals", 2, [READONLY], [HASH], [key(1, RO ACCESS)], hvals, "2.0.0",
        "Returns every value of a hash.", complexity: "O(N), N being the number of fields.",
        tips: &["nondeterministic_output_order"]),
    ("hgetall", 2, [READONLY], [HASH], [key(1, RO ACCESS)], hgetall, "2.0.0",
        "Returns every field and value of a hash (a map in RESP3).",
        complexity: "O(N), N being the number of fields.",
        tips: &["nondeterministic_output_order"]),
    ("hincrby", 4, [WRITE DENYOOM FAST], [HASH], [key(1, RW ACCESS UPDATE)], hincrby, "2.0.0",
        "Adds an integer to a hash field's integer value; a missing field counts as zero."),
    ("hincrbyfloat", 4, [WRITE DENYOOM FAST], [HASH], [key(1, RW ACCESS UPDATE)], hincrbyfloat,
        "2.6.0",
        "Adds a floating-point number to a hash field's value; a missing field counts as zero."),
    ("hrandfield", -2, [READONLY], [HASH], [key(1, RO ACCESS)], hrandfield, "6.2.0",
        "Returns random fields of a hash, optionally with their values; a negative count allows repeats.",
        complexity: "O(N), N being how many fields are returned.",
        tips: &["nondeterministic_output"]),
    ("hscan", -3, [READONLY], [HASH], [key(1, RO ACCESS)], hscan, "2.8.0",
        "Walks a hash's fields and values a few at a time with a cursor.",
        complexity: "O(1) per call; O(N) for a whole iteration, N being the number of fields.",
        tips: &["nondeterministic_output"]),
};

const ERR_HASH_NOT_INT: &str = "ERR hash value is not an integer";
const ERR_HASH_NOT_FLOAT: &str = "ERR hash value is not a float";

/// Redis 7.4's lazy field expiry, before a command reads or writes `fields` of the hash at
/// `key` (every field when None): those past their time are deleted on a master, each
/// propagated as HDEL, with a `hexpired` event (and `del` for a hash left empty). A no-op
/// until some hash field has ever had a time.
pub(crate) fn expire_due_fields(ctx: &mut Ctx, key: &[u8], fields: Option<&[&[u8]]>) {
    if !tern_engine::field_expire::in_use() {
        return;
    }
    let (h, mut shard) = ctx.lock(key);
    shard.expire_fields(h, key, fields, ctx.now_ms);
}

/// After a write that may have changed field times: file the hash anew in the shard's index
/// of hashes with field times (a no-op for a hash without any).
fn resync_field_times(shard: &mut ShardData, h: u64, key: &[u8], was_expiring: bool) {
    if was_expiring {
        shard.hfe_sync(h, key);
    }
}

/// Reply with one stored element as a bulk string.
#[inline]
fn bulk_entry(out: &mut Reply, e: LpEntry) {
    match e {
        LpEntry::Str(s) => out.bulk(s),
        LpEntry::Int(n) => out.bulk_int(n),
    }
}

// ---------------------------------------------------------------------------------------------
// Writes
// ---------------------------------------------------------------------------------------------

fn hset(ctx: &mut Ctx, args: &Args) {
    if args.len() % 2 == 1 {
        let msg = format!(
            "ERR wrong number of arguments for '{}' command",
            ctx.cmd.name
        );
        return ctx.error(&msg);
    }
    let key = &args[1];
    let pairs = (args.len() - 2) / 2;
    let apply = |hv: &mut HashValue| {
        hv.prepare_for(pairs, (2..args.len()).map(|i| args.get(i)));
        let mut created = 0i64;
        for i in (2..args.len()).step_by(2) {
            created += hv.set(&args[i], &args[i + 1]) as i64;
        }
        created
    };
    let (h, mut shard) = ctx.lock(key);
    let created = match ctx.lookup_write::<HashValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        // HSET signals the key even when every value was already there.
        Typed::Found(hv) => {
            let expiring = hv.ttls().is_some();
            let n = apply(hv);
            shard.touch(key);
            resync_field_times(&mut shard, h, key, expiring);
            n
        }
        Typed::Missing => {
            let mut hv = HashValue::new();
            let n = apply(&mut hv);
            shard.set(h, key, Value::Hash(hv), false, ctx.now_ms);
            n
        }
    };
    drop(shard);
    if ctx.cmd.name == "hset" {
        ctx.out.int(created);
    } else {
        ctx.out.ok();
    }
    ctx.notify(notify::HASH, "hset", key);
    ctx.dirty(pairs as u64);
}

fn hsetnx(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let (field, value) = (&args[2], &args[3]);
    let apply = |hv: &mut HashValue| {
        hv.prepare_for(1, [field, value]);
        hv.set(field, value);
    };
    expire_due_fields(ctx, key, Some(&[field]));
    let (h, mut shard) = ctx.lock(key);
    match ctx.lookup_write::<HashValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Found(hv) => {
            if hv.contains(field) {
                drop(shard);
                return ctx.out.int(0);
            }
            apply(hv);
            shard.touch(key);
        }
        Typed::Missing => {
            let mut hv = HashValue::new();
            apply(&mut hv);
            shard.set(h, key, Value::Hash(hv), false, ctx.now_ms);
        }
    }
    drop(shard);
    ctx.out.int(1);
    ctx.notify(notify::HASH, "hset", key);
    ctx.dirty(1);
}

fn hdel(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let mut deleted = 0i64;
    let mut emptied = false;
    let expiring;
    match ctx.lookup_write::<HashValue>(&mut shard, h, key) {
        Typed::Missing => {
            drop(shard);
            return ctx.out.int(0);
        }
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Found(hv) => {
            // An expired field not yet deleted still counts as deleted here, as in Redis.
            expiring = hv.ttls().is_some();
            for i in 2..args.len() {
                if hv.remove(&args[i]) {
                    deleted += 1;
                    if hv.is_empty() {
                        emptied = true;
                        break;
                    }
                }
            }
        }
    }
    if emptied {
        shard.remove(h, key);
    } else if deleted > 0 {
        shard.touch(key);
        resync_field_times(&mut shard, h, key, expiring);
    }
    drop(shard);
    if deleted > 0 {
        ctx.notify(notify::HASH, "hdel", key);
        if emptied {
            ctx.notify(notify::GENERIC, "del", key);
        }
        ctx.dirty(deleted as u64);
    }
    ctx.out.int(deleted);
}

/// Run `f` on the hash at `key`, created empty when missing. A new hash that `f` leaves empty
/// (because it failed) is not stored. Replies WRONGTYPE itself and then returns None. `f`
/// succeeding is a change (a WATCH touch), failing is none.
fn with_hash_for_write<R>(
    ctx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(&mut HashValue) -> Result<R, &'static str>,
) -> Option<Result<R, &'static str>> {
    let (h, mut shard) = ctx.lock(key);
    let r = match ctx.lookup_write::<HashValue>(&mut shard, h, key) {
        Typed::WrongType => {
            ctx.wrong_type(shard);
            return None;
        }
        Typed::Found(hv) => {
            let expiring = hv.ttls().is_some();
            let r = f(hv);
            if r.is_ok() {
                shard.touch(key);
                resync_field_times(&mut shard, h, key, expiring);
            }
            r
        }
        Typed::Missing => {
            let mut hv = HashValue::new();
            let r = f(&mut hv);
            if !hv.is_empty() {
                shard.set(h, key, Value::Hash(hv), false, ctx.now_ms);
            }
            r
        }
    };
    drop(shard);
    Some(r)
}

fn hincrby(ctx: &mut Ctx, args: &Args) {
    let Some(incr) = parse_i64(&args[3]) else {
        return ctx.error(ERR_NOT_INT);
    };
    let key = &args[1];
    let field = &args[2];
    expire_due_fields(ctx, key, Some(&[field]));
    let r = with_hash_for_write(ctx, key, |hv| {
        let old = match hv.get(field) {
            None => 0,
            Some(v) => v.as_i64().ok_or(ERR_HASH_NOT_INT)?,
        };
        let new = old.checked_add(incr).ok_or(ERR_OVERFLOW)?;
        // The field keeps its time, as in Redis 7.4.
        hv.set_keep_ttl(field, itoa::Buffer::new().format(new).as_bytes());
        Ok(new)
    });
    match r {
        None => {}
        Some(Err(e)) => ctx.error(e),
        Some(Ok(n)) => {
            ctx.out.int(n);
            ctx.notify(notify::HASH, "hincrby", key);
            ctx.dirty(1);
        }
    }
}

fn hincrbyfloat(ctx: &mut Ctx, args: &Args) {
    let Some(incr) = LongDouble::parse(&args[3]) else {
        return ctx.error(ERR_NOT_FLOAT);
    };
    // Adding zero keeps a finite long double as it is and fails for infinities.
    if incr.checked_add(&LongDouble::from_i64(0)).is_none() {
        return ctx.error("ERR value is NaN or Infinity");
    }
    let key = &args[1];
    let field = &args[2];
    expire_due_fields(ctx, key, Some(&[field]));
    let r = with_hash_for_write(ctx, key, |hv| {
        let old = match hv.get(field) {
            None => LongDouble::from_i64(0),
            Some(LpEntry::Int(n)) => LongDouble::from_i64(n),
            Some(LpEntry::Str(s)) => LongDouble::parse(s).ok_or(ERR_HASH_NOT_FLOAT)?,
        };
        let sum = old
            .checked_add(&incr)
            .ok_or("ERR increment would produce NaN or Infinity")?;
        let text = sum.to_human();
        hv.set_keep_ttl(field, &text);
        Ok((text, hv.field_ttl(field)))
    });
    match r {
        None => {}
        Some(Err(e)) => ctx.error(e),
        Some(Ok((text, ttl))) => {
            ctx.out.bulk(&text);
            ctx.notify(notify::HASH, "hincrbyfloat", key);
            ctx.dirty(1);
            ctx.propagate_as(&[b"HSET", key, field, &text]);
            // HSET alone would drop the field's time on the replica (Redis 7.4 loses it there):
            // the time follows, absolute.
            if let Some(at) = ttl {
                let at = itoa::Buffer::new().format(at).to_owned();
                ctx.also_propagate(&[b"HPEXPIREAT", key, at.as_bytes(), b"FIELDS", b"1", field]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------

fn hget(ctx: &mut Ctx, args: &Args) {
    let field = &args[2];
    expire_due_fields(ctx, &args[1], Some(&[field]));
    let now = ctx.now_ms;
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.null(),
        |ctx, hv: &mut HashValue| match hv.get_live(field, now) {
            Some(v) => bulk_entry(ctx.out, v),
            None => ctx.out.null(),
        },
    );
}

fn hmget(ctx: &mut Ctx, args: &Args) {
    let n = args.len() - 2;
    if tern_engine::field_expire::in_use() {
        let fields: Vec<&[u8]> = (2..args.len()).map(|i| args.get(i)).collect();
        expire_due_fields(ctx, &args[1], Some(&fields));
    }
    let now = ctx.now_ms;
    ctx.read_as(
        &args[1],
        |ctx| {
            ctx.out.array(n);
            for _ in 0..n {
                ctx.out.null();
            }
        },
        |ctx, hv: &mut HashValue| {
            ctx.out.array(n);
            for i in 2..args.len() {
                match hv.get_live(&args[i], now) {
                    Some(v) => bulk_entry(ctx.out, v),
                    None => ctx.out.null(),
                }
            }
        },
    );
}

fn hlen(ctx: &mut Ctx, args: &Args) {
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.int(0),
        |ctx, hv: &mut HashValue| ctx.out.int(hv.len() as i64),
    );
}

fn hstrlen(ctx: &mut Ctx, args: &Args) {
    let field = &args[2];
    expire_due_fields(ctx, &args[1], Some(&[field]));
    let now = ctx.now_ms;
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.int(0),
        |ctx, hv: &mut HashValue| {
            let len = hv.get_live(field, now).map_or(0, |v| v.str_len());
            ctx.out.int(len as i64)
        },
    );
}

fn hexists(ctx: &mut Ctx, args: &Args) {
    let field = &args[2];
    expire_due_fields(ctx, &args[1], Some(&[field]));
    let now = ctx.now_ms;
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.int(0),
        |ctx, hv: &mut HashValue| ctx.out.int(hv.get_live(field, now).is_some() as i64),
    );
}

const KEYS: u8 = 1;
const VALS: u8 = 2;

fn getall_generic(ctx: &mut Ctx, args: &Args, what: u8) {
    // Fields past their time are skipped here, not deleted (as Redis 7.4 does).
    let now = ctx.now_ms;
    ctx.read_as(
        &args[1],
        |ctx| {
            if what == KEYS | VALS {
                ctx.out.map(0)
            } else {
                ctx.out.array(0)
            }
        },
        |ctx, hv: &mut HashValue| {
            let out = &mut *ctx.out;
            let n = hv.live_len(now);
            if what == KEYS | VALS {
                out.map(n);
            } else {
                out.array(n);
            }
            for (f, v) in hv.iter_live(now) {
                if what & KEYS != 0 {
                    bulk_entry(out, f);
                }
                if what & VALS != 0 {
                    bulk_entry(out, v);
                }
            }
        },
    );
}

fn hkeys(ctx: &mut Ctx, args: &Args) {
    getall_generic(ctx, args, KEYS);
}

fn hvals(ctx: &mut Ctx, args: &Args) {
    getall_generic(ctx, args, VALS);
}

fn hgetall(ctx: &mut Ctx, args: &Args) {
    getall_generic(ctx, args, KEYS | VALS);
}

// ---------------------------------------------------------------------------------------------
// HRANDFIELD
// ---------------------------------------------------------------------------------------------

/// Above this many times the requested count, a unique sample is drawn by picking at random
/// (Redis's HRANDFIELD_SUB_STRATEGY_MUL); below it, by discarding from a copy.
const SUB_STRATEGY_MUL: u64 = 3;

fn hrandfield(ctx: &mut Ctx, args: &Args) {
    if args.len() >= 3 {
        let Some(l) = parse_i64(&args[2]) else {
            return ctx.error(ERR_NOT_INT);
        };
        if l == i64::MIN {
            return ctx.error(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            );
        }
        let withvalues = match args.len() {
            3 => false,
            4 if eq_ic(&args[3], "withvalues") => true,
            _ => return ctx.error(ERR_SYNTAX),
        };
        if withvalues && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
            return ctx.error("ERR value is out of range");
        }
        return hrandfield_count(ctx, &args[1], l, withvalues);
    }
    // HRANDFIELD first deletes every field past its time, as Redis 7.4 does.
    expire_due_fields(ctx, &args[1], None);
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.null(),
        |ctx, hv: &mut HashValue| match hv.random_pair(&mut ctx.conn.rng) {
            Some((f, _)) => bulk_entry(ctx.out, f),
            None => ctx.out.null(),
        },
    );
}

fn hrandfield_count(ctx: &mut Ctx, key: &[u8], l: i64, withvalues: bool) {
    expire_due_fields(ctx, key, None);
    ctx.read_as(
        key,
        |ctx| ctx.out.array(0),
        |ctx, hv: &mut HashValue| {
            let out = &mut *ctx.out;
            let rng = &mut ctx.conn.rng;
            let resp3 = out.is_resp3();
            let size = hv.len() as u64;
            let (count, unique) = if l >= 0 {
                (l as u64, true)
            } else {
                (l.unsigned_abs(), false)
            };
            if count == 0 || size == 0 {
                return out.array(0);
            }
            let idx = hv.indexed();
            let emit = |out: &mut Reply, i: usize| {
                let (f, v) = idx.get(i);
                if withvalues && resp3 {
                    out.array(2);
                }
                bulk_entry(out, f);
                if withvalues {
                    bulk_entry(out, v);
                }
            };
            let header = |out: &mut Reply, n: u64| {
                out.array(if withvalues && !resp3 { n * 2 } else { n } as usize)
            };
            // Repeats allowed (or a single pick): independent uniform draws.
            if !unique || count == 1 {
                header(out, count);
                for _ in 0..count {
                    emit(out, rng.gen_range(0..size) as usize);
                    if out.overflowed() {
                        break;
                    }
                }
                return;
            }
            header(out, count.min(size));
            // Asking for the whole hash or more: all of it.
            if count >= size {
                for i in 0..size as usize {
                    emit(out, i);
                }
                return;
            }
            let (count, size) = (count as usize, size as usize);
            // A listpack: one ordered pass choosing each position with the right probability.
            if matches!(hv.fields(), HashValue::Listpack(_)) {
                let mut need = count;
                for i in 0..size {
                    if rng.gen_range(0..size - i) < need {
                        emit(out, i);
                        need -= 1;
                        if need == 0 {
                            break;
                        }
                    }
                }
                return;
            }
            if count as u64 * SUB_STRATEGY_MUL > size as u64 {
                // Close to the whole hash: a partial shuffle of all positions.
                let mut pos: Vec<usize> = (0..size).collect();
                for i in 0..count {
                    let j = rng.gen_range(i..size);
                    pos.swap(i, j);
                    emit(out, pos[i]);
                }
            } else {
                // Much smaller than the hash: draw until enough distinct positions came up.
                let mut seen = ahash::AHashSet::with_capacity(count);
                while seen.len() < count {
                    let i = rng.gen_range(0..size);
                    if seen.insert(i) {
                        emit(out, i);
                    }
                }
            }
        },
    );
}

// ---------------------------------------------------------------------------------------------
// HSCAN
// ---------------------------------------------------------------------------------------------

fn hscan(ctx: &mut Ctx, args: &Args) {
    let cursor = match parse_scan_cursor(&args[2]) {
        Ok(c) => c,
        Err(e) => return ctx.error(e),
    };
    let now = ctx.now_ms;
    ctx.read_as(
        &args[1],
        |ctx| {
            ctx.out.array(2);
            ctx.out.bulk(b"0");
            ctx.out.array(0);
        },
        |ctx, hv: &mut HashValue| {
            // Options are checked only once the key is known to hold a hash, as in Redis.
            let opts = match ScanOpts::parse(args, 3, false) {
                Ok(o) => o,
                Err(e) => return ctx.error(e),
            };
            let mut items: Vec<LpEntry> = Vec::new();
            // Fields past their time are skipped, not deleted (as Redis 7.4 does).
            let next = match hv.fields() {
                HashValue::Listpack(_) => {
                    for (f, v) in hv.iter_live(now) {
                        if f.with_bytes(|b| opts.matches(b)) {
                            items.push(f);
                            items.push(v);
                        }
                    }
                    0
                }
                HashValue::Table(t) => t.scan(cursor, opts.count, |f, v| {
                    if opts.matches(f) && !hv.field_expired(f, now) {
                        items.push(LpEntry::Str(f));
                        items.push(LpEntry::Str(v));
                    }
                }),
                HashValue::Expiring(_) => unreachable!("fields() is never Expiring"),
            };
            let out = &mut *ctx.out;
            out.array(2);
            out.bulk(itoa::Buffer::new().format(next).as_bytes());
            out.array(items.len());
            for e in items {
                bulk_entry(out, e);
            }
        },
    );
}

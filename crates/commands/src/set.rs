//! Set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SMOVE, the
//! algebra (SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE) and SSCAN.
//!
//! Single-key commands lock the key's shard. Multi-key commands lock every shard involved at
//! once (`Store::lock_many`, ascending order), read the sets through shared views of the
//! locked shards, build their result, and only then write the destination.

use tern_engine::listpack::LpEntry;
use tern_engine::types::set::Member;
use tern_engine::{MultiGuard, SetValue, ShardData, Value};
use tern_resp::Reply;
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use tern_runtime::ctx::Ctx;
use tern_runtime::keyspace_access::Typed;
use tern_runtime::notify;
use tern_runtime::scan::{parse_scan_cursor, reply_scan, ScanOpts};
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "set";
    ("sadd", -3, [WRITE DENYOOM FAST], [SET], [key(1, RW INSERT)], sadd, "1.0.0",
        "Adds one or more members to a set. Creates the key if it doesn't exist.",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."),
    ("srem", -3, [WRITE FAST], [SET], [key(1, RW DELETE)], srem, "1.0.0",
        "Removes one or more members from a set. Deletes the set if the last member was removed.",
        complexity: "O(N) where N is the number of members to be removed."),
    ("smembers", 2, [READONLY], [SET], [key(1, RO ACCESS)], smembers, "1.0.0",
        "Returns all members of a set.", complexity: "O(N) where N is the set cardinality.",
        tips: &["nondeterministic_output_order"]),
    ("sismember", 3, [READONLY FAST], [SET], [key(1, RO)], sismember, "1.0.0",
        "Determines whether a member belongs to a set."),
    ("smismember", -3, [READONLY FAST], [SET], [key(1, RO ACCESS)], smismember, "6.2.0",
        "Determines whether multiple members belong to a set.",
        complexity: "O(N) where N is the number of elements being checked for membership"),
    ("scard", 2, [READONLY FAST], [SET], [key(1, RO)], scard, "1.0.0",
        "Returns the number of members in a set."),
    ("spop", -2, [WRITE FAST], [SET], [key(1, RW ACCESS DELETE)], spop, "1.0.0",
        "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.",
        complexity: "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
        tips: &["nondeterministic_output"]),
    ("srandmember", -2, [READONLY], [SET], [key(1, RO ACCESS)], srandmember, "1.0.0",
        "Get one or multiple random members from a set",
        complexity: "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
        tips: &["nondeterministic_output"]),
    ("smove", 4, [WRITE FAST], [SET], [key(1, RW ACCESS DELETE), key(2, RW INSERT)], smove, "1.0.0",
        "Moves a member from one set to another."),
    ("sinter", -2, [READONLY], [SET], [range(1, -1, 1, RO ACCESS)], sinter, "1.0.0",
        "Returns the intersect of multiple sets.",
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        tips: &["nondeterministic_output_order"]),
    ("sintercard", -3, [READONLY], [SET], [keynum(1, 0, 1, 1, RO ACCESS)], sintercard, "7.0.0",
        "Returns the number of members of the intersect of multiple sets.",
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets."),
    ("sinterstore", -3, [WRITE DENYOOM], [SET], [key(1, RW UPDATE), range(2, -1, 1, RO ACCESS)],
        sinterstore, "1.0.0", "Stores the intersect of multiple sets in a key.",
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets."),
    ("sunion", -2, [READONLY], [SET], [range(1, -1, 1, RO ACCESS)], sunion, "1.0.0",
        "Returns the union of multiple sets.",
        complexity: "O(N) where N is the total number of elements in all given sets.",
        tips: &["nondeterministic_output_order"]),
    ("sunionstore", -3, [WRITE DENYOOM], [SET], [key(1, OW UPDATE), range(2, -1, 1, RO ACCESS)],
        sunionstore, "1.0.0", "Stores the union of multiple sets in a key.",
        complexity: "O(N) where N is the total number of elements in all given sets."),
    ("sdiff", -2, [READONLY], [SET], [range(1, -1, 1, RO ACCESS)], sdiff, "1.0.0",
        "Returns the difference of multiple sets.",
        complexity: "O(N) where N is the total number of elements in all given sets.",
        tips: &["nondeterministic_output_order"]),
    ("sdiffstore", -3, [WRITE DENYOOM], [SET], [key(1, OW UPDATE), range(2, -1, 1, RO ACCESS)],
        sdiffstore, "1.0.0", "Stores the difference of multiple sets in a key.",
        complexity: "O(N) where N is the total number of elements in all given sets."),
    ("sscan", -3, [READONLY], [SET], [key(1, RO ACCESS)], sscan, "2.8.0",
        "Iterates over members of a set.",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        tips: &["nondeterministic_output"]),
};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A reply larger than this is abandoned and the client disconnected (Redis closes clients
/// whose output outgrows their limit) rather than letting one command exhaust memory.
const REPLY_LIMIT: usize = 512 << 20;

#[inline]
fn reply_member(out: &mut Reply, m: Member) {
    match m {
        LpEntry::Int(n) => out.bulk_int(n),
        LpEntry::Str(s) => out.bulk(s),
    }
}

/// An empty set reply (`~0` in RESP3, `*0` in RESP2).
fn empty_set(ctx: &mut Ctx) {
    ctx.out.set(0);
}

/// The set stored in `v`, or None for another type.
#[inline]
fn as_set(v: &Value) -> Option<&SetValue> {
    match v {
        Value::Set(s) => Some(s),
        _ => None,
    }
}

#[inline]
fn as_set_mut(v: &mut Value) -> Option<&mut SetValue> {
    match v {
        Value::Set(s) => Some(s),
        _ => None,
    }
}

/// Parse a count the way getRangeLongFromObjectOrReply does: `msg` (or the generic integer
/// error) when it does not parse, `range_msg` when it is out of `[min, max]`.
fn parse_range(arg: &[u8], min: i64, max: i64, msg: Option<&str>) -> Result<i64, String> {
    let Some(n) = parse_i64(arg) else {
        return Err(msg.unwrap_or(ERR_NOT_INT).to_string());
    };
    if n < min || n > max {
        return Err(match msg {
            Some(m) => m.to_string(),
            None => format!("ERR value is out of range, value must between {min} and {max}"),
        });
    }
    Ok(n)
}

/// Redis's getPositiveLongFromObjectOrReply.
fn parse_positive(arg: &[u8], msg: Option<&str>) -> Result<i64, String> {
    parse_range(
        arg,
        0,
        i64::MAX,
        Some(msg.unwrap_or("ERR value is out of range, must be positive")),
    )
}

// ---------------------------------------------------------------------------------------------
// SADD SREM SISMEMBER SMISMEMBER SCARD SMEMBERS
// ---------------------------------------------------------------------------------------------

fn sadd(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let members = args.len() - 2;
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    let mut added = 0u64;
    match ctx.lookup_write::<SetValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Found(s) => {
            s.maybe_convert(members);
            for m in args.iter().skip(2) {
                added += s.add(m) as u64;
            }
            // Members already there change nothing (a conversion of encoding is no change).
            if added > 0 {
                shard.touch(key);
            }
        }
        Typed::Missing => {
            let mut s = SetValue::create(&args[2], members);
            for m in args.iter().skip(2) {
                added += s.add(m) as u64;
            }
            shard.set(h, key, Value::Set(s), false, now);
        }
    }
    drop(shard);
    if added > 0 {
        ctx.notify(notify::SET, "sadd", key);
    }
    ctx.dirty(added);
    ctx.out.int(added as i64);
}

fn srem(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let s = match ctx.lookup_write::<SetValue>(&mut shard, h, key) {
        Typed::Found(v) => v,
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Missing => {
            drop(shard);
            return ctx.out.int(0);
        }
    };
    let mut deleted = 0u64;
    let mut emptied = false;
    for m in args.iter().skip(2) {
        if s.remove(m) {
            deleted += 1;
            if s.is_empty() {
                emptied = true;
                break;
            }
        }
    }
    if deleted > 0 {
        shard.touch(key);
    }
    let freed = if emptied { shard.remove(h, key) } else { None };
    drop(shard);
    drop(freed);
    if deleted > 0 {
        ctx.notify(notify::SET, "srem", key);
        if emptied {
            ctx.notify(notify::GENERIC, "del", key);
        }
        ctx.dirty(deleted);
    }
    ctx.out.int(deleted as i64);
}

fn sismember(ctx: &mut Ctx, args: &Args) {
    let m = &args[2];
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.int(0),
        |ctx, s: &mut SetValue| ctx.out.int(s.contains(m) as i64),
    );
}

fn smismember(ctx: &mut Ctx, args: &Args) {
    let reply = |ctx: &mut Ctx, s: Option<&SetValue>| {
        ctx.out.array(args.len() - 2);
        for m in args.iter().skip(2) {
            ctx.out.int(s.is_some_and(|s| s.contains(m)) as i64);
        }
    };
    ctx.read_as(
        &args[1],
        |ctx| reply(ctx, None),
        |ctx, s| reply(ctx, Some(s)),
    );
}

fn scard(ctx: &mut Ctx, args: &Args) {
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.int(0),
        |ctx, s: &mut SetValue| ctx.out.int(s.len() as i64),
    );
}

fn smembers(ctx: &mut Ctx, args: &Args) {
    ctx.read_as(&args[1], empty_set, |ctx, s: &mut SetValue| {
        ctx.out.set(s.len());
        for m in s.iter() {
            reply_member(ctx.out, m);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// SPOP SRANDMEMBER
// ---------------------------------------------------------------------------------------------

fn spop(ctx: &mut Ctx, args: &Args) {
    match args.len() {
        2 => spop_one(ctx, args),
        3 => spop_count(ctx, args),
        _ => ctx.error(ERR_SYNTAX),
    }
}

fn spop_one(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let s = match ctx.lookup_write::<SetValue>(&mut shard, h, key) {
        Typed::Found(v) => v,
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Missing => {
            drop(shard);
            return ctx.out.null();
        }
    };
    let m = s.pop_random(&mut ctx.conn.rng);
    let emptied = s.is_empty();
    shard.touch(key);
    let freed = if emptied { shard.remove(h, key) } else { None };
    drop(shard);
    drop(freed);
    ctx.notify(notify::SET, "spop", key);
    ctx.out.bulk(&m);
    if emptied {
        ctx.notify(notify::GENERIC, "del", key);
    }
    ctx.dirty(1);
    // What was popped is replayed as its removal.
    ctx.propagate_as(&[b"SREM", key, &m]);
}

fn spop_count(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let count = match parse_positive(&args[2], None) {
        Ok(n) => n as u64,
        Err(e) => return ctx.error(&e),
    };
    let (h, mut shard) = ctx.lock(key);
    let s = match ctx.lookup_write::<SetValue>(&mut shard, h, key) {
        Typed::Found(v) => v,
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Missing => {
            drop(shard);
            return empty_set(ctx);
        }
    };
    if count == 0 {
        drop(shard);
        return empty_set(ctx);
    }
    let size = s.len() as u64;
    ctx.notify(notify::SET, "spop", key);
    ctx.dirty(count.min(size));
    if count >= size {
        // The whole set, in the order a union of it would list it.
        reply_union_of_one(ctx.out, s);
        let freed = shard.remove(h, key);
        drop(shard);
        drop(freed);
        ctx.notify(notify::GENERIC, "del", key);
        let lazy = ctx
            .srv
            .config
            .hot
            .lazyfree_lazy_server_del
            .load(std::sync::atomic::Ordering::Relaxed);
        ctx.propagate_as(&[if lazy { b"UNLINK" } else { b"DEL" }, key]);
        return;
    }
    let propagating = ctx.propagating();
    let mut popped: Vec<Vec<u8>> = Vec::new();
    let out = &mut *ctx.out;
    out.set(count as usize);
    s.pop_many(count as usize, &mut ctx.conn.rng, |m| {
        reply_member(out, m);
        if propagating {
            popped.push(m.with_bytes(|b| b.to_vec()));
        }
    });
    shard.touch(key);
    drop(shard);
    // Replayed as SREMs of what was popped, 1024 members per command, as Redis does.
    for chunk in popped.chunks(1024) {
        let mut argv: Vec<&[u8]> = vec![b"SREM", key];
        argv.extend(chunk.iter().map(|m| m.as_slice()));
        ctx.also_propagate(&argv);
    }
    ctx.prevent_propagation();
}

/// Reply with every member of `s` as SUNION of `s` alone would (the union is built from an
/// empty intset, so small listpacks of integers come out sorted, for instance).
fn reply_union_of_one(out: &mut Reply, s: &SetValue) {
    if let SetValue::Listpack(_) = s.members() {
        let mut u = SetValue::new_intset();
        for m in s.iter() {
            u.add_member(m);
        }
        out.set(u.len());
        for m in u.iter() {
            reply_member(out, m);
        }
    } else {
        out.set(s.len());
        for m in s.iter() {
            reply_member(out, m);
        }
    }
}

fn srandmember(ctx: &mut Ctx, args: &Args) {
    match args.len() {
        2 => ctx.read_as(
            &args[1],
            |ctx| ctx.out.null(),
            |ctx, s: &mut SetValue| {
                let m = s.random(&mut ctx.conn.rng);
                reply_member(ctx.out, m);
            },
        ),
        3 => srandmember_count(ctx, args),
        _ => ctx.error(ERR_SYNTAX),
    }
}

fn srandmember_count(ctx: &mut Ctx, args: &Args) {
    let l = match parse_range(&args[2], -i64::MAX, i64::MAX, None) {
        Ok(n) => n,
        Err(e) => return ctx.error(&e),
    };
    let (count, unique) = (l.unsigned_abs() as usize, l >= 0);
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.array(0),
        |ctx, s: &mut SetValue| {
            if count == 0 {
                return ctx.out.array(0);
            }
            let size = s.len();
            let len = if !unique || count == 1 {
                count
            } else {
                count.min(size)
            };
            ctx.out.array(len);
            let out = &mut *ctx.out;
            let mut overflow = false;
            s.random_members(count, unique, &mut ctx.conn.rng, |m| {
                reply_member(out, m);
                if out.overflowed() {
                    return false;
                }
                if out.buf.len() > REPLY_LIMIT {
                    overflow = true;
                    return false;
                }
                true
            });
            if overflow {
                ctx.conn.close_after_reply = true;
            }
        },
    );
}

// ---------------------------------------------------------------------------------------------
// SMOVE
// ---------------------------------------------------------------------------------------------

fn smove(ctx: &mut Ctx, args: &Args) {
    let (src, dst, m) = (&args[1], &args[2], &args[3]);
    let ([hs, hd], mut g) = ctx.lock_pair(src, dst);
    let db = ctx.conn.db;
    let now = ctx.now_ms;
    // Both lookups first: a missing source answers 0 before any type check.
    // Quiet lookups: SMOVE touches (for WATCH) only the sets it really changes.
    let src_state = match g.shard(db, hs).get_quiet(hs, src, now) {
        None => None,
        Some(e) => {
            ctx.touch(e);
            Some(matches!(e.value, Value::Set(_)))
        }
    };
    let dst_state = match g.shard(db, hd).get_quiet(hd, dst, now) {
        None => None,
        Some(e) => {
            ctx.touch(e);
            Some(matches!(e.value, Value::Set(_)))
        }
    };
    let Some(src_is_set) = src_state else {
        drop(g);
        return ctx.out.int(0);
    };
    if !src_is_set || dst_state == Some(false) {
        drop(g);
        return ctx.error(ERR_WRONGTYPE);
    }
    if src == dst {
        let e = g
            .shard(db, hs)
            .get_quiet(hs, src, now)
            .expect("source is live");
        let is = as_set(&e.value).is_some_and(|s| s.contains(m));
        drop(g);
        return ctx.out.int(is as i64);
    }
    let shard = g.shard(db, hs);
    let e = shard.get_quiet(hs, src, now).expect("source is live");
    let s = as_set_mut(&mut e.value).expect("checked above");
    if !s.remove(m) {
        drop(g);
        return ctx.out.int(0);
    }
    let emptied = s.is_empty();
    shard.touch(src);
    let freed = if emptied { shard.remove(hs, src) } else { None };
    let shard = g.shard(db, hd);
    let added = match shard.get_quiet(hd, dst, now) {
        Some(e) => {
            let s = as_set_mut(&mut e.value).expect("checked above");
            let added = s.add(m);
            if added {
                shard.touch(dst);
            }
            added
        }
        None => {
            let mut s = SetValue::create(m, 1);
            s.add(m);
            shard.set(hd, dst, Value::Set(s), false, now);
            true
        }
    };
    drop(g);
    drop(freed);
    ctx.notify(notify::SET, "srem", src);
    if emptied {
        ctx.notify(notify::GENERIC, "del", src);
    }
    ctx.dirty(1);
    if added {
        ctx.dirty(1);
        ctx.notify(notify::SET, "sadd", dst);
    }
    ctx.out.int(1);
}

// ---------------------------------------------------------------------------------------------
// Multi-key reads
// ---------------------------------------------------------------------------------------------

/// The sets named by `keys`, read under one multi-shard lock.
struct Locked<'a> {
    g: MultiGuard<'a>,
    /// Every hash the guard locked (sources and destination).
    locked: Vec<u64>,
    db: usize,
}

impl<'a> Locked<'a> {
    /// Lock the shards of `keys` and of `dst`.
    fn lock(ctx: &Ctx<'a>, keys: &[&[u8]], dst: Option<&[u8]>) -> Locked<'a> {
        let db = ctx.conn.db;
        let (locked, g) = ctx.lock_keys(keys.iter().chain(dst.iter()).copied());
        Locked { g, locked, db }
    }

    /// Look every key up as lookupKeyRead does (lazy expiry, touch, hit or miss and keymiss,
    /// key by key) and return whether each was found (for `Ctx::unhit` should the command be
    /// offloaded). None after replying WRONGTYPE when one holds another type.
    fn check(&mut self, ctx: &mut Ctx, keys: &[&[u8]]) -> Option<Vec<bool>> {
        let mut found = Vec::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let h = self.locked[i];
            match ctx.read_key(self.g.shard(self.db, h), h, key) {
                Some(e) => {
                    ctx.touch(e);
                    ctx.hit(true, key);
                    found.push(true);
                    if as_set(&e.value).is_none() {
                        ctx.error(ERR_WRONGTYPE);
                        return None;
                    }
                }
                None => {
                    ctx.hit(false, key);
                    found.push(false);
                }
            }
        }
        Some(found)
    }

    /// Shared views of the sets (None for missing keys), valid while `self` is borrowed.
    fn sets<'s>(&'s mut self, ctx: &Ctx, keys: &[&[u8]]) -> Vec<Option<&'s SetValue>> {
        let store = &ctx.srv.store;
        let per_db = store.shards_per_db();
        let global = |h: u64| self.db * per_db + store.shard_index(h);
        // The guard holds its shards in ascending global order, one per distinct index.
        let mut order: Vec<usize> = self.locked.iter().map(|&h| global(h)).collect();
        order.sort_unstable();
        order.dedup();
        let views: Vec<&'s ShardData> = self.g.guards_mut().map(|s| &*s).collect();
        debug_assert_eq!(views.len(), order.len());
        let now = ctx.now_ms;
        keys.iter()
            .enumerate()
            .map(|(i, key)| {
                let h = self.locked[i];
                let pos = order
                    .binary_search(&global(h))
                    .expect("key's shard is locked");
                views[pos].peek(h, key, now).and_then(|e| as_set(&e.value))
            })
            .collect()
    }

    /// Store `result` at `dst` (replacing any value, clearing its TTL), or delete `dst` when
    /// the result is empty. Replies with the cardinality and reports the events.
    fn store(mut self, ctx: &mut Ctx, dst: &[u8], result: SetValue, event: &str) {
        let h = *self.locked.last().expect("destination hash");
        let now = ctx.now_ms;
        let shard = self.g.shard(self.db, h);
        if result.is_empty() {
            let existed = tern_runtime::background::delete_live(ctx.srv, shard, h, dst, now);
            drop(self);
            ctx.out.int(0);
            if existed {
                ctx.dirty(1);
                ctx.notify(notify::GENERIC, "del", dst);
            }
            return;
        }
        let n = result.len();
        tern_runtime::background::replace_value(ctx.srv, shard, h, dst, Value::Set(result), now);
        drop(self);
        ctx.out.int(n as i64);
        ctx.notify(notify::SET, event, dst);
        ctx.dirty(1);
    }
}

fn keys_of<'a>(args: &Args<'a>, from: usize, to: usize) -> Vec<&'a [u8]> {
    (from..to).map(|i| args.get(i)).collect()
}

// ---------------------------------------------------------------------------------------------
// SINTER SINTERCARD SINTERSTORE
// ---------------------------------------------------------------------------------------------

enum InterMode {
    Reply,
    Card(usize),
    Store,
}

fn sinter(ctx: &mut Ctx, args: &Args) {
    let keys = keys_of(args, 1, args.len());
    sinter_generic(ctx, &keys, None, InterMode::Reply);
}

fn sinterstore(ctx: &mut Ctx, args: &Args) {
    let keys = keys_of(args, 2, args.len());
    sinter_generic(ctx, &keys, Some(&args[1]), InterMode::Store);
}

fn sintercard(ctx: &mut Ctx, args: &Args) {
    let numkeys = match parse_range(
        &args[1],
        1,
        i64::MAX,
        Some("ERR numkeys should be greater than 0"),
    ) {
        Ok(n) => n as usize,
        Err(e) => return ctx.error(&e),
    };
    if numkeys > args.len() - 2 {
        return ctx.error("ERR Number of keys can't be greater than number of args");
    }
    let mut limit = 0usize;
    let mut j = 2 + numkeys;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if eq_ic(&args[j], "limit") && more > 0 {
            j += 1;
            match parse_positive(&args[j], Some("ERR LIMIT can't be negative")) {
                Ok(n) => limit = n as usize,
                Err(e) => return ctx.error(&e),
            }
        } else {
            return ctx.error(ERR_SYNTAX);
        }
        j += 1;
    }
    let keys = keys_of(args, 2, 2 + numkeys);
    sinter_generic(ctx, &keys, None, InterMode::Card(limit));
}

fn sinter_generic(ctx: &mut Ctx, keys: &[&[u8]], dst: Option<&[u8]>, mode: InterMode) {
    let mut l = Locked::lock(ctx, keys, dst);
    let Some(found) = l.check(ctx, keys) else {
        return;
    };
    let mut sets: Vec<&SetValue> = Vec::with_capacity(keys.len());
    let mut any_missing = false;
    for s in l.sets(ctx, keys) {
        match s {
            Some(s) => sets.push(s),
            None => any_missing = true,
        }
    }
    // Huge inputs run on a background thread so this worker keeps serving other clients.
    let total: usize = sets.iter().map(|s| s.len()).sum();
    if total > tern_runtime::background::OFFLOAD_THRESHOLD && ctx.offload() {
        ctx.unhit(&found);
        return;
    }
    if any_missing {
        // Intersection with an empty set.
        drop(sets);
        match mode {
            InterMode::Store => l.store(ctx, dst.expect("store mode"), SetValue::new_intset(), ""),
            InterMode::Card(_) => {
                drop(l);
                ctx.out.int(0);
            }
            InterMode::Reply => {
                drop(l);
                empty_set(ctx);
            }
        }
        return;
    }
    sets.sort_by_key(|s| s.len());
    let first = sets[0];
    let in_all = |m: Member| {
        sets[1..]
            .iter()
            .all(|s| std::ptr::eq(*s, first) || s.contains_member(m))
    };
    match mode {
        InterMode::Card(limit) => {
            let mut n = 0usize;
            for m in first.iter() {
                if in_all(m) {
                    n += 1;
                    if limit != 0 && n >= limit {
                        break;
                    }
                }
            }
            drop(sets);
            drop(l);
            ctx.out.int(n as i64);
        }
        InterMode::Reply => {
            let found: Vec<Member> = first.iter().filter(|&m| in_all(m)).collect();
            ctx.out.set(found.len());
            for m in found {
                reply_member(ctx.out, m);
            }
            drop(sets);
            drop(l);
        }
        InterMode::Store => {
            // Start compact in the smallest set's spirit: an intset from an intset, else a
            // listpack; the adds convert as needed, and an all-integer result ends as an
            // intset when small enough.
            let mut result = if first.is_intset() {
                SetValue::new_intset()
            } else {
                SetValue::new_listpack()
            };
            let mut only_integers = true;
            for m in first.iter() {
                if in_all(m) {
                    if only_integers && m.as_i64().is_none() {
                        only_integers = false;
                    }
                    result.add_member(m);
                }
            }
            drop(sets);
            if !result.is_empty() {
                if only_integers {
                    result.maybe_convert_to_intset();
                }
                result.shrink_to_fit();
            }
            l.store(ctx, dst.expect("store mode"), result, "sinterstore");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SUNION SUNIONSTORE SDIFF SDIFFSTORE
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Diff,
}

fn sunion(ctx: &mut Ctx, args: &Args) {
    let keys = keys_of(args, 1, args.len());
    sunion_diff(ctx, &keys, None, SetOp::Union);
}

fn sunionstore(ctx: &mut Ctx, args: &Args) {
    let keys = keys_of(args, 2, args.len());
    sunion_diff(ctx, &keys, Some(&args[1]), SetOp::Union);
}

fn sdiff(ctx: &mut Ctx, args: &Args) {
    let keys = keys_of(args, 1, args.len());
    sunion_diff(ctx, &keys, None, SetOp::Diff);
}

fn sdiffstore(ctx: &mut Ctx, args: &Args) {
    let keys = keys_of(args, 2, args.len());
    sunion_diff(ctx, &keys, Some(&args[1]), SetOp::Diff);
}

/// The union or difference of `sets` (None = missing key = empty set), built the way Redis
/// builds it: from an empty intset, converting as members arrive.
fn union_diff(sets: &mut [Option<&SetValue>], op: SetOp) -> SetValue {
    let mut result = SetValue::new_intset();
    match op {
        SetOp::Union => {
            for s in sets.iter().flatten() {
                for m in s.iter() {
                    result.add_member(m);
                }
            }
        }
        SetOp::Diff => {
            let Some(first) = sets[0] else {
                return result;
            };
            let same = |s: &Option<&SetValue>| matches!(s, Some(x) if std::ptr::eq(*x, first));
            if sets[1..].iter().any(same) {
                return result;
            }
            // Algorithm 1 (test each member of the first set against the others) costs about
            // len(first) per set; algorithm 2 (copy the first, remove the others) the sum of
            // all sizes. Redis gives the first a 2x advantage.
            let present = sets.iter().flatten().count();
            let algo_one = (first.len() * present) / 2;
            let algo_two: usize = sets.iter().flatten().map(|s| s.len()).sum();
            if algo_one <= algo_two {
                // Largest first: members are likelier to be found early.
                sets[1..].sort_by_key(|s| std::cmp::Reverse(s.map_or(0, |s| s.len())));
                for m in first.iter() {
                    if !sets[1..].iter().flatten().any(|s| s.contains_member(m)) {
                        result.add_member(m);
                    }
                }
            } else {
                for m in first.iter() {
                    result.add_member(m);
                }
                for s in sets[1..].iter().flatten() {
                    if result.is_empty() {
                        break;
                    }
                    for m in s.iter() {
                        result.remove_member(m);
                    }
                }
            }
        }
    }
    result
}

fn sunion_diff(ctx: &mut Ctx, keys: &[&[u8]], dst: Option<&[u8]>, op: SetOp) {
    let mut l = Locked::lock(ctx, keys, dst);
    let Some(found) = l.check(ctx, keys) else {
        return;
    };
    let mut sets = l.sets(ctx, keys);
    let total: usize = sets.iter().flatten().map(|s| s.len()).sum();
    if total > tern_runtime::background::OFFLOAD_THRESHOLD && ctx.offload() {
        ctx.unhit(&found);
        return;
    }
    let result = union_diff(&mut sets, op);
    drop(sets);
    match dst {
        None => {
            drop(l);
            ctx.out.set(result.len());
            for m in result.iter() {
                reply_member(ctx.out, m);
            }
        }
        Some(dst) => {
            let event = match op {
                SetOp::Union => "sunionstore",
                SetOp::Diff => "sdiffstore",
            };
            l.store(ctx, dst, result, event);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SSCAN
// ---------------------------------------------------------------------------------------------

fn sscan(ctx: &mut Ctx, args: &Args) {
    let cursor = match parse_scan_cursor(&args[2]) {
        Ok(c) => c,
        Err(e) => return ctx.error(e),
    };
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let s = match ctx.lookup_read::<SetValue>(&mut shard, h, key) {
        Typed::Found(s) => s,
        Typed::Missing => {
            drop(shard);
            ctx.hit(false, key);
            return reply_scan::<&[u8]>(ctx, 0, &[]);
        }
        Typed::WrongType => {
            ctx.hit(true, key);
            return ctx.wrong_type(shard);
        }
    };
    // Options are parsed once the key is known to be a set, as in Redis.
    let opts = match ScanOpts::parse(args, 3, false) {
        Ok(o) => o,
        Err(e) => {
            drop(shard);
            ctx.hit(true, key);
            return ctx.error(e);
        }
    };
    let mut items: Vec<Vec<u8>> = Vec::new();
    let next = s.scan(cursor, opts.count, |m| {
        m.with_bytes(|b| {
            if opts.matches(b) {
                items.push(b.to_vec());
            }
        })
    });
    drop(shard);
    ctx.hit(true, key);
    reply_scan(ctx, next, &items);
}

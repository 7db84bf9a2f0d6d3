//! Generic keyspace commands: deletion, existence, renaming, expiry, iteration (KEYS, SCAN,
//! RANDOMKEY), database-wide operations (DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, MOVE, COPY) and
//! OBJECT introspection.
//!
//! Locking: single-key commands lock the key's shard; commands touching several keys or two
//! databases lock every shard involved at once through `Store::lock_many` (ascending order, so
//! they never deadlock), and database-wide writes lock whole databases with `Store::lock_dbs`.
//! Values freed in bulk are dropped after the locks are released.

use std::sync::atomic::Ordering::Relaxed;
use tern_engine::dict::Dict;
use tern_engine::{key_hash, Entry, EntryBox, ShardData};
use tern_runtime::args::{
    eq_ic, parse_i64, Args, ERR_DB_RANGE, ERR_NOT_INT, ERR_NO_SUCH_KEY, ERR_SYNTAX,
};
use tern_runtime::ctx::Ctx;
use tern_runtime::glob;
use tern_runtime::notify;
use tern_runtime::scan::{parse_scan_cursor, reply_scan, scan_dict, ScanBudget, ScanOpts};
use tern_runtime::table::CommandSpec;

const ERR_SAME_OBJECT: &str = "ERR source and destination objects are the same";

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "generic";
    ("del", -2, [WRITE], [KEYSPACE], [range(1, -1, 1, RM DELETE)], del, "1.0.0",
        "Deletes one or more keys.",
        complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
    ("unlink", -2, [WRITE FAST], [KEYSPACE], [range(1, -1, 1, RM DELETE)], unlink, "4.0.0",
        "Asynchronously deletes one or more keys.",
        complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
    ("exists", -2, [READONLY FAST], [KEYSPACE], [range(1, -1, 1, RO)], exists, "1.0.0",
        "Determines whether one or more keys exist.",
        complexity: "O(N) where N is the number of keys to check.",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
    ("type", 2, [READONLY FAST], [KEYSPACE], [key(1, RO)], type_cmd, "1.0.0",
        "Determines the type of value stored at a key."),
    ("rename", 3, [WRITE], [KEYSPACE], [key(1, RW ACCESS DELETE), key(2, OW UPDATE)], rename,
        "1.0.0", "Renames a key and overwrites the destination."),
    ("renamenx", 3, [WRITE FAST], [KEYSPACE], [key(1, RW ACCESS DELETE), key(2, OW INSERT)],
        renamenx, "1.0.0", "Renames a key only when the target key name doesn't exist."),
    ("expire", -3, [WRITE FAST], [KEYSPACE], [key(1, RW UPDATE)], expire, "1.0.0",
        "Sets the expiration time of a key in seconds."),
    ("pexpire", -3, [WRITE FAST], [KEYSPACE], [key(1, RW UPDATE)], pexpire, "2.6.0",
        "Sets the expiration time of a key in milliseconds."),
    ("expireat", -3, [WRITE FAST], [KEYSPACE], [key(1, RW UPDATE)], expireat, "1.2.0",
        "Sets the expiration time of a key to a Unix timestamp."),
    ("pexpireat", -3, [WRITE FAST], [KEYSPACE], [key(1, RW UPDATE)], pexpireat, "2.6.0",
        "Sets the expiration time of a key to a Unix milliseconds timestamp."),
    ("persist", -2, [WRITE FAST], [KEYSPACE], [key(1, RW UPDATE)], persist, "2.2.0",
        "Removes the expiration time of a key."),
    ("ttl", -2, [READONLY FAST], [KEYSPACE], [key(1, RO ACCESS)], ttl, "1.0.0",
        "Returns the expiration time in seconds of a key."),
    ("pttl", -2, [READONLY FAST], [KEYSPACE], [key(1, RO ACCESS)], pttl, "2.6.0",
        "Returns the expiration time in milliseconds of a key."),
    ("expiretime", 2, [READONLY FAST], [KEYSPACE], [key(1, RO ACCESS)], expiretime, "7.0.0",
        "Returns the expiration time of a key as a Unix timestamp."),
    ("pexpiretime", 2, [READONLY FAST], [KEYSPACE], [key(1, RO ACCESS)], pexpiretime, "7.0.0",
        "Returns the expiration time of a key as a Unix milliseconds timestamp."),
    ("keys", 2, [READONLY], [KEYSPACE DANGEROUS], [], keys, "1.0.0",
        "Returns all key names that match a pattern.",
        complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
        tips: &["request_policy:all_shards", "nondeterministic_output_order"]),
    ("scan", -2, [READONLY], [KEYSPACE], [], scan, "2.8.0",
        "Iterates over the key names in the database.",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        tips: &["nondeterministic_output", "request_policy:special", "response_policy:special"]),
    ("randomkey", 1, [READONLY], [KEYSPACE], [], randomkey, "1.0.0",
        "Returns a random key name from the database.",
        tips: &["request_policy:all_shards", "response_policy:special", "nondeterministic_output"]),
    ("dbsize", 1, [READONLY FAST], [KEYSPACE], [], dbsize, "1.0.0",
        "Returns the number of keys in the database.",
        tips: &["request_policy:all_shards", "response_policy:agg_sum"]),
    ("flushdb", -1, [WRITE], [KEYSPACE DANGEROUS], [], flushdb, "1.0.0",
        "Remove all keys from the current database.",
        complexity: "O(N) where N is the number of keys in the selected database",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("flushall", -1, [WRITE], [KEYSPACE DANGEROUS], [], flushall, "1.0.0",
        "Removes all keys from all databases.",
        complexity: "O(N) where N is the total number of keys in all databases",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("move", 3, [WRITE FAST], [KEYSPACE], [key(1, RW ACCESS UPDATE)], move_cmd, "1.0.0",
        "Moves a key to another database."),
    ("copy", -3, [WRITE DENYOOM], [KEYSPACE], [key(1, RO ACCESS), key(2, OW UPDATE)], copy, "6.2.0",
        "Copies the value of a key to a new key.",
        complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values."),
    ("swapdb", 3, [WRITE FAST], [KEYSPACE DANGEROUS], [], swapdb, "4.0.0",
        "Swaps two Redis databases.",
        complexity: "O(N) where N is the count of clients watching or blocking on keys from both databases."),
    ("touch", -2, [READONLY FAST], [KEYSPACE], [range(1, -1, 1, RO)], touch, "3.2.1",
        "Returns the number of existing keys out of those specified after updating the time they were last accessed.",
        complexity: "O(N) where N is the number of keys that will be touched.",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"]),
    ("object", -2, [], [], [], _, "2.2.3", "A container for object introspection commands.",
        complexity: "Depends on subcommand.", subcommands: OBJECT_SUBCOMMANDS),
};

static OBJECT_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "generic";
    ("encoding", 3, [READONLY], [KEYSPACE], [key(2, RO)], object_encoding, "2.2.3",
        "Returns the internal encoding of a Redis object."),
    ("freq", 3, [READONLY], [KEYSPACE], [key(2, RO)], object_freq, "4.0.0",
        "Returns the logarithmic access frequency counter of a Redis object."),
    ("idletime", 3, [READONLY], [KEYSPACE], [key(2, RO)], object_idletime, "2.2.3",
        "Returns the time since the last access to a Redis object."),
    ("refcount", 3, [READONLY], [KEYSPACE], [key(2, RO)], object_refcount, "2.2.3",
        "Returns the reference count of a value of a key."),
    ("help", 2, [LOADING STALE], [KEYSPACE], [], object_help, "6.2.0",
        "Returns helpful text about the different subcommands."),
};

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// Redis's getIntFromObject: a canonical integer within C `int` range.
fn parse_int32(arg: &[u8]) -> Option<i64> {
    parse_i64(arg).filter(|n| i32::try_from(*n).is_ok())
}

/// A database index argument: `not_int` when it does not parse, Redis's int range error past
/// a C int, "DB index is out of range" when it names no database.
fn parse_db(ctx: &Ctx, arg: &[u8], not_int: &'static str) -> Result<usize, &'static str> {
    let n = parse_i64(arg).ok_or(not_int)?;
    if i32::try_from(n).is_err() {
        return Err(tern_runtime::args::ERR_INT_RANGE);
    }
    if n < 0 || n as usize >= ctx.srv.store.databases() {
        return Err(ERR_DB_RANGE);
    }
    Ok(n as usize)
}

/// Free removed keys, each big one on a background thread (counted as lazyfreed, as Redis
/// counts the objects it frees lazily).
fn free_removed(srv: &tern_runtime::Server, removed: Vec<EntryBox>) {
    for e in removed {
        let effort = e.value.free_effort();
        tern_runtime::background::drop_later(srv, e, effort);
    }
}

/// Remove a key that turned out to be expired, counting it as Redis's `expired_keys`.
fn reap_expired(shard: &mut ShardData, key: &[u8]) {
    shard.remove_expired(key_hash(key), key);
}

// ---------------------------------------------------------------------------------------------
// DEL UNLINK EXISTS TYPE TOUCH
// ---------------------------------------------------------------------------------------------

/// Remove every live key among `args[1..]` under one multi-shard lock; returns the entries.
fn remove_keys(ctx: &mut Ctx, args: &Args) -> Vec<EntryBox> {
    let (hashes, mut g) = ctx.lock_keys(args.iter().skip(1));
    let db = ctx.conn.db;
    let now = ctx.now_ms;
    let mut removed = Vec::new();
    // On a replica an expired key is not expired first (the master decides): it is deleted,
    // and counted, as any other (Redis's delGenericCommand).
    let replica = ctx.srv.master_link.is_replica();
    for (i, &h) in hashes.iter().enumerate() {
        let key = &args[i + 1];
        let shard = g.shard(db, h);
        // Only a removal is a change (`remove` touches the key for WATCH).
        let present = if replica {
            shard.dict().get(h, key).is_some()
        } else {
            shard.get_quiet(h, key, now).is_some()
        };
        if present {
            if let Some(e) = shard.remove(h, key) {
                removed.push(e);
            }
        }
    }
    drop(g);
    removed
}

/// The `del` keyspace event of each removed key.
fn notify_removed(ctx: &Ctx, removed: &[EntryBox]) {
    for e in removed {
        ctx.notify(notify::GENERIC, "del", e.key());
    }
}

fn del(ctx: &mut Ctx, args: &Args) {
    let removed = remove_keys(ctx, args);
    notify_removed(ctx, &removed);
    let n = removed.len();
    // Freeing never changes a reply, so huge values go to the background even for DEL.
    free_removed(ctx.srv, removed);
    ctx.dirty(n as u64);
    ctx.out.int(n as i64);
}

/// The same as DEL here, which already frees big values in the background.
fn unlink(ctx: &mut Ctx, args: &Args) {
    del(ctx, args);
}

fn exists(ctx: &mut Ctx, args: &Args) {
    let (hashes, mut g) = ctx.lock_keys(args.iter().skip(1));
    let db = ctx.conn.db;
    let now = ctx.now_ms;
    let mut n = 0;
    for (i, &h) in hashes.iter().enumerate() {
        // Counted key by key: a key's keymiss follows its own `expired`, as in Redis.
        let hit = g.shard(db, h).contains(h, &args[i + 1], now);
        ctx.hit(hit, &args[i + 1]);
        n += hit as i64;
    }
    drop(g);
    ctx.out.int(n);
}

fn touch(ctx: &mut Ctx, args: &Args) {
    let (hashes, mut g) = ctx.lock_keys(args.iter().skip(1));
    let db = ctx.conn.db;
    let mut n = 0;
    for (i, &h) in hashes.iter().enumerate() {
        let key = &args[i + 1];
        let hit = ctx.entry_read(g.shard(db, h), h, key).is_some();
        ctx.hit(hit, key);
        n += hit as i64;
    }
    drop(g);
    ctx.out.int(n);
}

fn type_cmd(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let name = shard.get(h, key, ctx.now_ms).map(|e| e.value.type_name());
    drop(shard);
    ctx.hit(name.is_some(), key);
    ctx.out.simple(name.unwrap_or("none").as_bytes());
}

// ---------------------------------------------------------------------------------------------
// RENAME RENAMENX MOVE COPY
// ---------------------------------------------------------------------------------------------

fn rename(ctx: &mut Ctx, args: &Args) {
    rename_generic(ctx, args, false);
}

fn renamenx(ctx: &mut Ctx, args: &Args) {
    rename_generic(ctx, args, true);
}

fn rename_generic(ctx: &mut Ctx, args: &Args, nx: bool) {
    let (src, dst) = (&args[1], &args[2]);
    let ([hs, hd], mut g) = ctx.lock_pair(src, dst);
    let db = ctx.conn.db;
    let now = ctx.now_ms;
    // RENAME k k, a refused RENAMENX and errors change nothing; the changes below (remove,
    // insert_entry) touch both keys for WATCH.
    if ctx.entry_write(g.shard(db, hs), hs, src).is_none() {
        drop(g);
        return ctx.error(ERR_NO_SUCH_KEY);
    }
    if src == dst {
        drop(g);
        return if nx { ctx.out.int(0) } else { ctx.out.ok() };
    }
    let dst_shard = g.shard(db, hd);
    if nx && dst_shard.get_quiet(hd, dst, now).is_some() {
        drop(g);
        return ctx.out.int(0);
    }
    let overwritten = dst_shard.remove(hd, dst);
    let old = g.shard(db, hs).remove(hs, src).expect("source key is live");
    let moved = old.renamed(dst);
    g.shard(db, hd).insert_entry(hd, moved, now);
    drop(g);
    drop(overwritten);
    ctx.dirty(1);
    ctx.notify(notify::GENERIC, "rename_from", src);
    ctx.notify(notify::GENERIC, "rename_to", dst);
    if nx {
        ctx.out.int(1);
    } else {
        ctx.out.ok();
    }
}

fn move_cmd(ctx: &mut Ctx, args: &Args) {
    if ctx.srv.cluster.get().is_some() {
        return ctx.error("ERR MOVE is not allowed in cluster mode");
    }
    let src_db = ctx.conn.db;
    let dst_db = match parse_db(ctx, &args[2], ERR_NOT_INT) {
        Ok(d) => d,
        Err(e) => return ctx.error(e),
    };
    if dst_db == src_db {
        return ctx.error(ERR_SAME_OBJECT);
    }
    let key = &args[1];
    let h = key_hash(key);
    let now = ctx.now_ms;
    let srv: &tern_runtime::Server = ctx.srv;
    let mut g = srv.store.lock_many([(src_db, h), (dst_db, h)]);
    let Some((src, dst)) = g.pair((src_db, h), (dst_db, h)) else {
        unreachable!("distinct databases never share a shard")
    };
    // Only a move is a change (remove and insert_entry touch both sides for WATCH).
    if ctx.entry_write(src, h, key).is_none() {
        drop(g);
        return ctx.out.int(0);
    }
    if dst.get_quiet(h, key, now).is_some() {
        drop(g);
        return ctx.out.int(0);
    }
    let entry = src.remove(h, key).expect("source key is live");
    dst.insert_entry(h, entry, now);
    drop(g);
    ctx.dirty(1);
    ctx.notify_db(notify::GENERIC, "move_from", key, src_db);
    ctx.notify_db(notify::GENERIC, "move_to", key, dst_db);
    ctx.out.int(1);
}

fn copy(ctx: &mut Ctx, args: &Args) {
    let src_db = ctx.conn.db;
    let mut dst_db = src_db;
    let mut replace = false;
    let mut j = 3;
    while j < args.len() {
        let more = args.len() - j - 1;
        if eq_ic(&args[j], "replace") {
            replace = true;
        } else if eq_ic(&args[j], "db") && more >= 1 {
            match parse_db(ctx, &args[j + 1], ERR_NOT_INT) {
                Ok(d) => dst_db = d,
                Err(e) => return ctx.error(e),
            }
            j += 1;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
        j += 1;
    }
    if ctx.srv.cluster.get().is_some() && (src_db != 0 || dst_db != 0) {
        return ctx.error("ERR Copying to another database is not allowed in cluster mode");
    }
    let (src, dst) = (&args[1], &args[2]);
    if src_db == dst_db && src == dst {
        return ctx.error(ERR_SAME_OBJECT);
    }
    let (hs, hd) = (key_hash(src), key_hash(dst));
    let now = ctx.now_ms;
    let srv: &tern_runtime::Server = ctx.srv;
    let mut g = srv.store.lock_many([(src_db, hs), (dst_db, hd)]);
    // The source is only read (Redis never signals it); the target changes, and is touched
    // for WATCH, only when the copy is made (remove, insert_entry).
    let (value, expire_at) = match ctx.entry_write(g.shard(src_db, hs), hs, src) {
        Some(e) => (e.value.clone(), e.expire_at()),
        None => {
            drop(g);
            ctx.hit(false, src);
            return ctx.out.int(0);
        }
    };
    ctx.hit(true, src);
    let dshard = g.shard(dst_db, hd);
    let mut overwritten = None;
    if dshard.get_quiet(hd, dst, now).is_some() {
        if !replace {
            drop(g);
            return ctx.out.int(0);
        }
        overwritten = dshard.remove(hd, dst);
    }
    let access = tern_engine::clock::initial_access_at(now);
    let entry = EntryBox::new_expiring(dst, value, access, expire_at);
    g.shard(dst_db, hd).insert_entry(hd, entry, now);
    drop(g);
    drop(overwritten);
    ctx.dirty(1);
    ctx.notify_db(notify::GENERIC, "copy_to", dst, dst_db);
    ctx.out.int(1);
}

// ---------------------------------------------------------------------------------------------
// Expiry: EXPIRE PEXPIRE EXPIREAT PEXPIREAT PERSIST TTL PTTL EXPIRETIME PEXPIRETIME
// ---------------------------------------------------------------------------------------------

const EXP_NX: u8 = 1;
const EXP_XX: u8 = 2;
const EXP_GT: u8 = 4;
const EXP_LT: u8 = 8;

fn expire(ctx: &mut Ctx, args: &Args) {
    let base = ctx.now_ms as i64;
    expire_generic(ctx, args, base, true);
}

fn pexpire(ctx: &mut Ctx, args: &Args) {
    let base = ctx.now_ms as i64;
    expire_generic(ctx, args, base, false);
}

fn expireat(ctx: &mut Ctx, args: &Args) {
    expire_generic(ctx, args, 0, true);
}

fn pexpireat(ctx: &mut Ctx, args: &Args) {
    expire_generic(ctx, args, 0, false);
}

/// Parse NX/XX/GT/LT with Redis's errors.
fn parse_expire_flags(args: &Args) -> Result<u8, String> {
    let mut fl = 0u8;
    for j in 3..args.len() {
        let a = &args[j];
        fl |= if eq_ic(a, "nx") {
            EXP_NX
        } else if eq_ic(a, "xx") {
            EXP_XX
        } else if eq_ic(a, "gt") {
            EXP_GT
        } else if eq_ic(a, "lt") {
            EXP_LT
        } else {
            return Err(format!("ERR Unsupported option {}", args.str(j)));
        };
    }
    if fl & EXP_NX != 0 && fl & (EXP_XX | EXP_GT | EXP_LT) != 0 {
        return Err("ERR NX and XX, GT or LT options at the same time are not compatible".into());
    }
    if fl & EXP_GT != 0 && fl & EXP_LT != 0 {
        return Err("ERR GT and LT options at the same time are not compatible".into());
    }
    Ok(fl)
}

fn expire_generic(ctx: &mut Ctx, args: &Args, base: i64, seconds: bool) {
    let fl = match parse_expire_flags(args) {
        Ok(fl) => fl,
        Err(e) => return ctx.error(&e),
    };
    let Some(mut when) = parse_i64(&args[2]) else {
        return ctx.error(ERR_NOT_INT);
    };
    let invalid = format!("ERR invalid expire time in '{}' command", ctx.cmd.name);
    if seconds {
        match when.checked_mul(1000) {
            Some(v) => when = v,
            None => return ctx.error(&invalid),
        }
    }
    match when.checked_add(base) {
        Some(v) => when = v,
        None => return ctx.error(&invalid),
    }
    let key = &args[1];
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    // A refused EXPIRE (NX XX GT LT) is no change; setting a time is one, the same time too
    // (set_expire and remove touch the key for WATCH).
    let Some(e) = ctx.entry_write(&mut shard, h, key) else {
        drop(shard);
        return ctx.out.int(0);
    };
    let current: i64 = if e.expire_at() == 0 {
        -1
    } else {
        e.expire_at() as i64
    };
    let refuse = (fl & EXP_NX != 0 && current != -1)
        || (fl & EXP_XX != 0 && current == -1)
        || (fl & EXP_GT != 0 && (current == -1 || when <= current))
        || (fl & EXP_LT != 0 && current != -1 && when >= current);
    if refuse {
        drop(shard);
        return ctx.out.int(0);
    }
    let gone = if tern_engine::expire::already_expired(when, now) {
        shard.remove(h, key)
    } else {
        shard.set_expire(h, key, when as u64, now);
        None
    };
    drop(shard);
    let event = if gone.is_some() { "del" } else { "expire" };
    drop(gone);
    ctx.dirty(1);
    ctx.notify(notify::GENERIC, event, key);
    ctx.out.int(1);
    // Propagated as an explicit delete, or as PEXPIREAT with the absolute time (options kept).
    if event == "del" {
        let lazy = ctx.srv.config.hot.lazyfree_lazy_expire.load(Relaxed);
        ctx.propagate_as(&[if lazy { b"UNLINK" } else { b"DEL" }, key]);
    } else if ctx.cmd.name != "pexpireat" && ctx.propagating() {
        let t = when.to_string();
        let mut argv: Vec<&[u8]> = vec![b"PEXPIREAT", key, t.as_bytes()];
        argv.extend(args.iter().skip(3));
        ctx.propagate_as(&argv);
    }
}

/// TTL, PTTL and PERSIST take a member as KeyDB's do: at most one argument after the key.
fn member_form(ctx: &mut Ctx, args: &Args) -> Option<bool> {
    match args.len() {
        2 => Some(false),
        3 => Some(true),
        _ => {
            let e = format!(
                "ERR wrong number of arguments for '{}' command",
                ctx.cmd.name
            );
            ctx.error(&e);
            None
        }
    }
}

fn persist(ctx: &mut Ctx, args: &Args) {
    match member_form(ctx, args) {
        None => return,
        Some(true) => return super::member_ttl::persist_member(ctx, args),
        Some(false) => {}
    }
    let key = &args[1];
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    // Only removing a TTL is a change (set_expire touches the key for WATCH).
    let Some(e) = ctx.entry_write(&mut shard, h, key) else {
        drop(shard);
        return ctx.out.int(0);
    };
    let had = e.expire_at() != 0;
    if had {
        shard.set_expire(h, key, 0, now);
    }
    drop(shard);
    if had {
        ctx.dirty(1);
        ctx.notify(notify::GENERIC, "persist", key);
    }
    ctx.out.int(had as i64);
}

fn ttl_generic(ctx: &mut Ctx, args: &Args, ms: bool, absolute: bool) {
    let key = &args[1];
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    let at = shard.get(h, key, now).map(|e| e.expire_at());
    drop(shard);
    ctx.hit(at.is_some(), key);
    let reply = match at {
        None => -2,
        Some(0) => -1,
        Some(at) => {
            let v = if absolute {
                at as i64
            } else {
                (at as i64 - now as i64).max(0)
            };
            if ms {
                v
            } else {
                (v + 500) / 1000
            }
        }
    };
    ctx.out.int(reply);
}

fn ttl(ctx: &mut Ctx, args: &Args) {
    match member_form(ctx, args) {
        Some(true) => super::member_ttl::member_ttl(ctx, args, false),
        Some(false) => ttl_generic(ctx, args, false, false),
        None => {}
    }
}

fn pttl(ctx: &mut Ctx, args: &Args) {
    match member_form(ctx, args) {
        Some(true) => super::member_ttl::member_ttl(ctx, args, true),
        Some(false) => ttl_generic(ctx, args, true, false),
        None => {}
    }
}

fn expiretime(ctx: &mut Ctx, args: &Args) {
    ttl_generic(ctx, args, false, true);
}

fn pexpiretime(ctx: &mut Ctx, args: &Args) {
    ttl_generic(ctx, args, true, true);
}

// ---------------------------------------------------------------------------------------------
// KEYS DBSIZE RANDOMKEY
// ---------------------------------------------------------------------------------------------

fn keys(ctx: &mut Ctx, args: &Args) {
    let pattern = &args[1];
    let all = pattern == b"*";
    let db = ctx.conn.db;
    if ctx.srv.store.db_len(db) > tern_runtime::background::OFFLOAD_THRESHOLD && ctx.offload() {
        return;
    }
    let now = ctx.now_ms;
    let srv: &tern_runtime::Server = ctx.srv;
    // One consistent snapshot: a key renamed across shards mid-walk is seen exactly once.
    let mut g = srv.store.lock_dbs(&[db]);
    let mut found: Vec<Box<[u8]>> = Vec::new();
    for shard in g.guards_mut() {
        for e in shard.dict().iter() {
            if (all || glob::matches(pattern, e.key(), false)) && !e.is_expired(now) {
                found.push(e.key().into());
            }
        }
    }
    drop(g);
    ctx.out.array(found.len());
    for key in &found {
        ctx.out.bulk(key);
        if ctx.out.overflowed() {
            break;
        }
    }
}

fn dbsize(ctx: &mut Ctx, _args: &Args) {
    let n = ctx.srv.store.db_len(ctx.conn.db);
    ctx.out.int(n as i64);
}

/// A random live key of `db`: a shard picked in proportion to its size, then a random entry.
/// Expired picks are deleted and the draw repeats, as Redis does. On a replica they stay: if
/// every key has a TTL they may all be expired, so after 100 such draws the last is returned
/// anyway (Redis's dbRandomKey).
pub fn random_key(ctx: &mut Ctx, db: usize) -> Option<Box<[u8]>> {
    use rand::Rng;
    let srv: &tern_runtime::Server = ctx.srv;
    let store = &srv.store;
    let now = ctx.now_ms;
    let mut tries_left = 100;
    loop {
        let sizes: Vec<usize> = (0..store.shards_per_db())
            .map(|s| store.lock_shard(db, s).len())
            .collect();
        let total: usize = sizes.iter().sum();
        if total == 0 {
            return None;
        }
        let mut r = ctx.conn.rng.gen_range(0..total);
        let mut pick = 0;
        for (s, &n) in sizes.iter().enumerate() {
            if r < n {
                pick = s;
                break;
            }
            r -= n;
        }
        let mut shard = store.lock_shard(db, pick);
        let Some(e) = shard.dict().random_entry(&mut ctx.conn.rng) else {
            continue; // emptied since we counted
        };
        let key: Box<[u8]> = e.key().into();
        if e.is_expired(now) {
            reap_expired(&mut shard, &key);
            drop(shard);
            if srv.master_link.is_replica() {
                tries_left -= 1;
                if tries_left == 0 {
                    let (keys, volatile) = store.db_stats(db);
                    if keys == volatile {
                        return Some(key);
                    }
                    tries_left = 100;
                }
            }
            continue;
        }
        return Some(key);
    }
}

fn randomkey(ctx: &mut Ctx, _args: &Args) {
    let db = ctx.conn.db;
    match random_key(ctx, db) {
        Some(k) => ctx.out.bulk(&k),
        None => ctx.out.null(),
    }
}

// ---------------------------------------------------------------------------------------------
// FLUSHDB FLUSHALL SWAPDB
// ---------------------------------------------------------------------------------------------

/// FLUSHDB/FLUSHALL's optional SYNC|ASYNC; no option follows `lazyfree-lazy-user-flush`.
fn parse_flush_async(ctx: &Ctx, args: &Args) -> Result<bool, &'static str> {
    match args.len() {
        1 => Ok(ctx.srv.config.get_bool("lazyfree-lazy-user-flush")),
        2 if eq_ic(&args[1], "sync") => Ok(false),
        2 if eq_ic(&args[1], "async") => Ok(true),
        _ => Err(ERR_SYNTAX),
    }
}

/// Empty `dbs` atomically; the old tables are freed after the locks are released (on a
/// background thread for ASYNC). Returns the number of keys removed.
pub fn flush_dbs(srv: &tern_runtime::Server, dbs: &[usize], asynchronous: bool) -> usize {
    let mut g = srv.store.lock_dbs(dbs);
    let mut old: Vec<Dict> = Vec::new();
    let mut removed = 0;
    for shard in g.guards_mut() {
        if shard.is_empty() {
            continue;
        }
        removed += shard.len();
        old.push(shard.clear());
    }
    drop(g);
    // A big table is always freed away from the client's thread; ASYNC only changes when
    // the memory comes back, which no reply depends on.
    let effort = if asynchronous { usize::MAX } else { removed };
    tern_runtime::background::drop_later_counted(srv, old, effort, removed as u64);
    removed
}

fn flushdb(ctx: &mut Ctx, args: &Args) {
    let asynchronous = match parse_flush_async(ctx, args) {
        Ok(a) => a,
        Err(e) => return ctx.error(e),
    };
    let n = flush_dbs(ctx.srv, &[ctx.conn.db], asynchronous);
    ctx.dirty(n as u64);
    ctx.force_propagation();
    ctx.out.ok();
}

fn flushall(ctx: &mut Ctx, args: &Args) {
    let asynchronous = match parse_flush_async(ctx, args) {
        Ok(a) => a,
        Err(e) => return ctx.error(e),
    };
    let all: Vec<usize> = (0..ctx.srv.store.databases()).collect();
    let n = flush_dbs(ctx.srv, &all, asynchronous);
    ctx.dirty(n as u64);
    // As Redis: a running BGSAVE is given up, and with save points the empty dataset is
    // saved at once (which resets the changes since the last save).
    tern_runtime::persistence::abort_bgsave(ctx.srv);
    if tern_runtime::persistence::has_save_points(ctx.srv) {
        ctx.conn.save_after = true;
    }
    ctx.force_propagation();
    ctx.out.ok();
}

fn swapdb(ctx: &mut Ctx, args: &Args) {
    if ctx.srv.cluster.get().is_some() {
        return ctx.error("ERR SWAPDB is not allowed in cluster mode");
    }
    let a = parse_int32(&args[1]);
    let Some(a) = a else {
        return ctx.error("ERR invalid first DB index");
    };
    let Some(b) = parse_int32(&args[2]) else {
        return ctx.error("ERR invalid second DB index");
    };
    let n = ctx.srv.store.databases() as i64;
    if a < 0 || a >= n || b < 0 || b >= n {
        return ctx.error(ERR_DB_RANGE);
    }
    let (a, b) = (a as usize, b as usize);
    if a != b {
        let mut g = ctx.srv.store.lock_dbs(&[a, b]);
        g.swap_dbs(a, b);
    }
    ctx.dirty(1);
    ctx.out.ok();
}

// ---------------------------------------------------------------------------------------------
// SCAN
// ---------------------------------------------------------------------------------------------

/// One SCAN call over database `db`. The cursor packs the shard number into its low bits and
/// that shard's dict cursor above them, so the iteration walks the shards in order and within
/// each shard keeps Redis's guarantee (every key present for the whole scan is returned, even
/// across resizes). Expired keys are never returned; they are deleted on the way.
pub fn scan_keyspace(
    ctx: &mut Ctx,
    db: usize,
    cursor: u64,
    opts: &ScanOpts,
) -> (u64, Vec<Box<[u8]>>) {
    let srv: &tern_runtime::Server = ctx.srv;
    let store = &srv.store;
    let nshards = store.shards_per_db() as u64;
    let bits = nshards.trailing_zeros();
    let mask = nshards - 1;
    let mut shard_no = cursor & mask;
    let mut c = if bits >= 64 { 0 } else { cursor >> bits };
    let now = ctx.now_ms;
    let mut budget = ScanBudget::new(opts.count);
    let mut out: Vec<Box<[u8]>> = Vec::new();
    loop {
        let mut shard = store.lock_shard(db, shard_no as usize);
        let mut expired: Vec<Box<[u8]>> = Vec::new();
        if !shard.is_empty() {
            c = scan_dict(shard.dict(), c, &mut budget, |e| {
                if !opts.matches(e.key()) {
                    return;
                }
                if e.is_expired(now) {
                    expired.push(e.key().into());
                    return;
                }
                if let Some(t) = opts.type_name {
                    if !t.eq_ignore_ascii_case(e.value.type_name().as_bytes()) {
                        return;
                    }
                }
                out.push(e.key().into());
            });
        } else {
            c = 0;
        }
        for key in &expired {
            reap_expired(&mut shard, key);
        }
        drop(shard);
        if c == 0 {
            shard_no += 1;
            if shard_no == nshards {
                return (0, out);
            }
        }
        if budget.exhausted() {
            return ((c << bits) | shard_no, out);
        }
    }
}

fn scan(ctx: &mut Ctx, args: &Args) {
    let cursor = match parse_scan_cursor(&args[1]) {
        Ok(c) => c,
        Err(e) => return ctx.error(e),
    };
    let opts = match ScanOpts::parse(args, 2, true) {
        Ok(o) => o,
        Err(e) => return ctx.error(e),
    };
    let db = ctx.conn.db;
    let (next, keys) = scan_keyspace(ctx, db, cursor, &opts);
    reply_scan(ctx, next, &keys);
}

// ---------------------------------------------------------------------------------------------
// OBJECT
// ---------------------------------------------------------------------------------------------

/// Look up OBJECT's key without touching its access clock; replies null when absent.
fn object_lookup<R>(ctx: &mut Ctx, args: &Args, f: impl FnOnce(&Entry) -> R) -> Option<R> {
    let key = &args[2];
    let (h, mut shard) = ctx.lock(key);
    let r = shard.get(h, key, ctx.now_ms).map(|e| f(e));
    drop(shard);
    // LOOKUP_NONOTIFY in Redis: counted, but no keymiss event.
    ctx.hit_quiet(r.is_some());
    if r.is_none() {
        ctx.out.null();
    }
    r
}

fn object_encoding(ctx: &mut Ctx, args: &Args) {
    if let Some(enc) = object_lookup(ctx, args, |e| e.value.encoding()) {
        ctx.out.bulk(enc.as_bytes());
    }
}

/// Redis shares the integers 0..10000 between keys (refcount reported as INT_MAX) unless a
/// maxmemory LRU/LFU policy needs per-key access clocks.
const SHARED_INTEGERS: i64 = 10_000;
const SHARED_REFCOUNT: i64 = i32::MAX as i64;

fn object_refcount(ctx: &mut Ctx, args: &Args) {
    let sharing = {
        let cfg = &ctx.srv.config;
        let policy = cfg.get("maxmemory-policy").unwrap_or_default();
        cfg.get_i64("maxmemory") == 0 || !(policy.contains("lru") || policy.contains("lfu"))
    };
    let rc = object_lookup(ctx, args, |e| match &e.value {
        tern_engine::Value::Str(tern_engine::RString::Int(n))
            if sharing && (0..SHARED_INTEGERS).contains(&n.get()) =>
        {
            SHARED_REFCOUNT
        }
        _ => 1,
    });
    if let Some(rc) = rc {
        ctx.out.int(rc);
    }
}

fn object_idletime(ctx: &mut Ctx, args: &Args) {
    let lfu = ctx.srv.config.hot.lfu_policy.load(Relaxed);
    let Some(access) = object_lookup(ctx, args, |e| e.access) else {
        return;
    };
    if lfu {
        return ctx.error("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
    }
    ctx.out.int(tern_engine::clock::idle_seconds(access) as i64);
}

fn object_freq(ctx: &mut Ctx, args: &Args) {
    let hot = &ctx.srv.config.hot;
    let lfu = hot.lfu_policy.load(Relaxed);
    let decay = hot.lfu_decay_time.load(Relaxed);
    let Some(access) = object_lookup(ctx, args, |e| e.access) else {
        return;
    };
    if !lfu {
        return ctx.error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
    }
    ctx.out
        .int(tern_engine::clock::lfu_decayed_counter(access, decay) as i64);
}

fn object_help(ctx: &mut Ctx, _args: &Args) {
    const LINES: &[&str] = &[
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
    ];
    tern_runtime::ctx::reply_help(ctx, "OBJECT", LINES);
}

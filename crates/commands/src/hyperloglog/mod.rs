//! HyperLogLog commands over Redis-format HLL strings (the format itself is in `hll_format`).
//!
//! An HLL is an ordinary string value; these commands check its header before using it and
//! update it in place.
pub mod format;

use crate::hyperloglog::format as fmt;
use rand::Rng;
use tern_engine::thin::ThinBuf;
use tern_engine::{MultiGuard, RString, ShardData, Value};
use tern_runtime::args::{eq_ic, Args};
use tern_runtime::ctx::Ctx;
use tern_runtime::keyspace_access::Typed;
use tern_runtime::notify;
use tern_runtime::table::CommandSpec;

const ERR_NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const ERR_INVALID: &str = "INVALIDOBJ Corrupted HLL object detected";

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "hyperloglog";
    ("pfadd", -2, [WRITE DENYOOM FAST], [HYPERLOGLOG], [key(1, RW INSERT)], pfadd, "2.8.9",
        "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.",
        complexity: "O(1) to add every element."),
    ("pfcount", -2, [READONLY MAY_REPLICATE], [HYPERLOGLOG], [range(1, -1, 1, RW ACCESS)], pfcount,
        "2.8.9",
        "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).",
        complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys."),
    ("pfmerge", -2, [WRITE DENYOOM], [HYPERLOGLOG],
        [key(1, RW ACCESS INSERT), range(2, -1, 1, RO ACCESS)], pfmerge, "2.8.9",
        "Merges one or more HyperLogLog values into a single key.",
        complexity: "O(N) to merge N HyperLogLogs, but with high constant times."),
    ("pfdebug", 3, [WRITE DENYOOM ADMIN], [HYPERLOGLOG], [key(2, RW ACCESS)], pfdebug, "2.8.9",
        "Internal commands for debugging HyperLogLog values.", complexity: "N/A"),
    ("pfselftest", 1, [ADMIN], [HYPERLOGLOG], [], pfselftest, "2.8.9",
        "An internal command for testing HyperLogLog values.", complexity: "N/A"),
};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// What a typed lookup of a string found, checked as an HLL: None when the key is missing,
/// else the HLL's bytes, or the error Redis gives (WRONGTYPE for another type, "not a valid
/// HyperLogLog" for a string that is not one: too short, bad magic, unknown encoding, dense of
/// the wrong length).
fn hll_bytes<'s>(found: Typed<'s, RString>) -> Result<Option<&'s [u8]>, &'static str> {
    let Some(s) = found.checked()? else {
        return Ok(None);
    };
    match s.as_bytes() {
        Some(b) if fmt::is_valid(b) => Ok(Some(b)),
        _ => Err(ERR_NOT_HLL),
    }
}

/// `hll_bytes` for a command that updates the HLL in place: the string is made growable (raw)
/// first, as Redis's dbUnshareStringValue does.
fn hll_mut<'s>(found: Typed<'s, RString>) -> Result<Option<&'s mut ThinBuf>, &'static str> {
    let Some(s) = found.checked()? else {
        return Ok(None);
    };
    if !s.as_bytes().is_some_and(fmt::is_valid) {
        return Err(ERR_NOT_HLL);
    }
    Ok(Some(s.make_raw()))
}

/// The HLL a command has just created (or checked) under the same shard lock.
fn created_hll<'s>(shard: &'s mut ShardData, h: u64, key: &[u8], now: u64) -> &'s mut ThinBuf {
    match shard.get_quiet(h, key, now).map(|e| &mut e.value) {
        Some(Value::Str(s)) => s.make_raw(),
        _ => unreachable!("the HLL was checked or created under this lock"),
    }
}

/// hll-sparse-max-bytes as it stands now.
fn sparse_max_bytes(ctx: &Ctx) -> usize {
    ctx.srv
        .config
        .get_i64("hll-sparse-max-bytes")
        .clamp(0, isize::MAX as i64) as usize
}

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

fn pfadd(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let max_bytes = sparse_max_bytes(ctx);
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    let mut updated = 0u64;
    // A change (and a WATCH touch) only when a register grows or the key is created.
    match hll_bytes(ctx.lookup_write(&mut shard, h, key)) {
        Ok(Some(_)) => {}
        Ok(None) => {
            shard.set(
                h,
                key,
                Value::Str(RString::Raw(fmt::new_sparse())),
                false,
                now,
            );
            updated += 1;
        }
        Err(msg) => {
            drop(shard);
            return ctx.error(msg);
        }
    }
    let s = created_hll(&mut shard, h, key, now);
    for ele in args.iter().skip(2) {
        match fmt::add(s, ele, max_bytes) {
            Ok(true) => updated += 1,
            Ok(false) => {}
            Err(fmt::Corrupted) => {
                drop(shard);
                return ctx.error(ERR_INVALID);
            }
        }
    }
    if updated > 0 {
        fmt::invalidate_cache(s);
        shard.touch(key);
    }
    drop(shard);
    if updated > 0 {
        ctx.notify(notify::STRING, "pfadd", key);
        ctx.dirty(updated);
    }
    ctx.out.int((updated > 0) as i64);
}

fn pfcount(ctx: &mut Ctx, args: &Args) {
    if args.len() > 2 {
        return pfcount_union(ctx, args);
    }
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    // `get_quiet` although PFCOUNT is a read: it may write the cardinality it computes back
    // into the string, and then signals the key for WATCH as Redis does.
    let s = match hll_mut(ctx.lookup_write(&mut shard, h, key)) {
        Ok(Some(s)) => {
            ctx.hit(true, key);
            s
        }
        Ok(None) => {
            drop(shard);
            ctx.hit(false, key);
            return ctx.out.int(0);
        }
        Err(msg) => {
            ctx.hit(true, key);
            drop(shard);
            return ctx.error(msg);
        }
    };
    if let Some(card) = fmt::cached_card(s) {
        drop(shard);
        return ctx.out.int(card as i64);
    }
    match fmt::count(s) {
        Ok(card) => {
            fmt::set_cached_card(s, card);
            shard.touch(key);
            drop(shard);
            ctx.dirty(1);
            ctx.out.int(card as i64);
        }
        Err(fmt::Corrupted) => {
            drop(shard);
            ctx.error(ERR_INVALID);
        }
    }
}

/// Read the HLLs at `args[1..]` (their shards locked by `g`, `hashes` in that order) as a
/// command's sources, each a keyspace hit or miss, and merge their registers into `max`;
/// returns whether any of them is dense. Fails with Redis's error for a key that is not a
/// valid HLL, or for a corrupted one. (`max` is the caller's: the count over it compiles to a
/// tighter loop where its length is a known constant.)
fn merge_sources(
    ctx: &mut Ctx,
    g: &mut MultiGuard,
    hashes: &[u64],
    args: &Args,
    max: &mut [u8],
) -> Result<bool, &'static str> {
    let db = ctx.conn.db;
    let mut any_dense = false;
    for (i, &h) in hashes.iter().enumerate() {
        let key = &args[i + 1];
        let found = hll_bytes(ctx.lookup_source(g.shard(db, h), h, key));
        ctx.hit(!matches!(found, Ok(None)), key);
        let Some(s) = found? else {
            continue;
        };
        any_dense |= fmt::encoding(s) == fmt::DENSE;
        fmt::merge(max, s).map_err(|_| ERR_INVALID)?;
    }
    Ok(any_dense)
}

/// PFCOUNT of several keys: the estimate of their union, computed without changing them.
fn pfcount_union(ctx: &mut Ctx, args: &Args) {
    let (hashes, mut g) = ctx.lock_keys(args.iter().skip(1));
    let mut max = vec![0u8; fmt::REGISTERS];
    let merged = merge_sources(ctx, &mut g, &hashes, args, &mut max);
    drop(g);
    match merged {
        Ok(_) => ctx.out.int(fmt::count_raw(&max) as i64),
        Err(msg) => ctx.error(msg),
    }
}

fn pfmerge(ctx: &mut Ctx, args: &Args) {
    let max_bytes = sparse_max_bytes(ctx);
    let (hashes, mut g) = ctx.lock_keys(args.iter().skip(1));
    let db = ctx.conn.db;
    let now = ctx.now_ms;
    // The destination is merged too: it is the first key read.
    let mut max = vec![0u8; fmt::REGISTERS];
    let use_dense = match merge_sources(ctx, &mut g, &hashes, args, &mut max) {
        Ok(any_dense) => any_dense,
        Err(msg) => {
            drop(g);
            return ctx.error(msg);
        }
    };
    let key = &args[1];
    let h = hashes[0];
    let shard = g.shard(db, h);
    // Always a change of the destination, as in Redis (a WATCH touch).
    shard.touch(key);
    if ctx.entry_write(shard, h, key).is_none() {
        shard.set(
            h,
            key,
            Value::Str(RString::Raw(fmt::new_sparse())),
            false,
            now,
        );
    }
    let s = created_hll(shard, h, key, now);
    if use_dense && fmt::sparse_to_dense(s).is_err() {
        drop(g);
        return ctx.error(ERR_INVALID);
    }
    for (j, &m) in max.iter().enumerate() {
        if m == 0 {
            continue;
        }
        if fmt::encoding(s) == fmt::DENSE {
            fmt::dense_set(&mut s[fmt::HDR..], j, m);
        } else {
            let _ = fmt::sparse_set(s, j, m, max_bytes);
        }
    }
    fmt::invalidate_cache(s);
    drop(g);
    // Redis reports a merge as a mass add.
    ctx.notify(notify::STRING, "pfadd", key);
    ctx.dirty(1);
    ctx.out.ok();
}

fn pfdebug(ctx: &mut Ctx, args: &Args) {
    let sub = &args[1];
    let key = &args[2];
    let (h, mut shard) = ctx.lock(key);
    // GETREG and TODENSE may re-encode the HLL: Redis never signals that (no WATCH touch).
    shard.quiet_change(key);
    let s = match hll_mut(ctx.lookup_write(&mut shard, h, key)) {
        Ok(Some(s)) => s,
        Ok(None) => {
            drop(shard);
            return ctx.error("ERR The specified key does not exist");
        }
        Err(msg) => {
            drop(shard);
            return ctx.error(msg);
        }
    };
    if eq_ic(sub, "getreg") {
        let mut converted = false;
        if fmt::encoding(s) == fmt::SPARSE {
            if fmt::sparse_to_dense(s).is_err() {
                drop(shard);
                return ctx.error(ERR_INVALID);
            }
            converted = true;
        }
        let regs: Vec<u8> = (0..fmt::REGISTERS)
            .map(|i| fmt::dense_get(&s[fmt::HDR..], i))
            .collect();
        drop(shard);
        if converted {
            ctx.dirty(1);
        }
        ctx.out.array(regs.len());
        for r in regs {
            ctx.out.int(r as i64);
        }
    } else if eq_ic(sub, "decode") {
        if fmt::encoding(s) != fmt::SPARSE {
            drop(shard);
            return ctx.error("ERR HLL encoding is not sparse");
        }
        let d = fmt::decode_sparse(s);
        drop(shard);
        ctx.out.bulk(d.as_bytes());
    } else if eq_ic(sub, "encoding") {
        let name: &[u8] = if fmt::encoding(s) == fmt::DENSE {
            b"dense"
        } else {
            b"sparse"
        };
        drop(shard);
        ctx.out.simple(name);
    } else if eq_ic(sub, "todense") {
        let mut converted = false;
        if fmt::encoding(s) == fmt::SPARSE {
            if fmt::sparse_to_dense(s).is_err() {
                drop(shard);
                return ctx.error(ERR_INVALID);
            }
            converted = true;
        }
        drop(shard);
        if converted {
            ctx.dirty(1);
        }
        ctx.out.int(converted as i64);
    } else {
        drop(shard);
        let msg = format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(sub)
        );
        ctx.error(&msg);
    }
}

/// Redis's PFSELFTEST: register access, then estimation error on dense and sparse HLLs fed
/// the same elements (which must also agree with each other).
fn pfselftest(ctx: &mut Ctx, _args: &Args) {
    let max_bytes = sparse_max_bytes(ctx);
    match selftest(&mut ctx.conn.rng, max_bytes) {
        Ok(()) => ctx.out.ok(),
        Err(msg) => ctx.error(&msg),
    }
}

fn selftest(rng: &mut impl Rng, max_bytes: usize) -> Result<(), String> {
    let mut dense = ThinBuf::new();
    dense.resize(fmt::DENSE_SIZE, 0);
    dense[..4].copy_from_slice(b"HYLL");
    let mut bytes = vec![0u8; fmt::REGISTERS];
    for _ in 0..1000 {
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = rng.gen::<u8>() & 63;
            fmt::dense_put(&mut dense[fmt::HDR..], i, *b);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let v = fmt::dense_get(&dense[fmt::HDR..], i);
            if v != b {
                return Err(format!(
                    "ERR TESTFAILED Register {i} should be {b} but is {v}"
                ));
            }
        }
    }
    dense[fmt::HDR..].fill(0);
    let mut sparse = fmt::new_sparse();
    let relerr = 1.04 / (fmt::REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed: u64 = rng.gen();
    for j in 1..=10_000_000u64 {
        let ele = (j ^ seed).to_le_bytes();
        fmt::add(&mut dense, &ele, max_bytes).map_err(|_| "ERR TESTFAILED corrupted")?;
        fmt::add(&mut sparse, &ele, max_bytes).map_err(|_| "ERR TESTFAILED corrupted")?;
        if j != checkpoint {
            continue;
        }
        if (j as usize) < max_bytes / 2 && fmt::encoding(&sparse) != fmt::SPARSE {
            return Err("ERR TESTFAILED sparse encoding not used".into());
        }
        let card = fmt::count(&dense).unwrap_or(0);
        if Ok(card) != fmt::count(&sparse) {
            return Err("ERR TESTFAILED dense/sparse disagree".into());
        }
        let abserr = (checkpoint as i64 - card as i64).unsigned_abs();
        let mut maxerr = (relerr * 6.0 * checkpoint as f64).ceil() as u64;
        if j == 10 {
            maxerr = 1;
        }
        if abserr > maxerr {
            return Err(format!(
                "ERR TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

//! Sorted-set commands, blocking pops included.
use rand::Rng;
use std::collections::HashMap;
use tern_engine::types::zset::{AddFlags, AddOutcome, LexBound, LexRange, ScoreRange};
use tern_engine::{SetValue, ShardData, Value, ZSetValue};
use tern_resp::Reply;
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use tern_runtime::blocking::{self, BlockSpec, TimeoutReply};
use tern_runtime::ctx::Ctx;
use tern_runtime::double::{
    parse_range_double, parse_score, reply_double, ERR_MINMAX_FLOAT, ERR_NOT_FLOAT,
};
use tern_runtime::keyspace_access::Typed;
use tern_runtime::notify;
use tern_runtime::scan::{parse_scan_cursor, reply_scan, ScanOpts};
use tern_runtime::table::CommandSpec;

/// Members with their scores, in reply order.
type Pairs = Vec<(Vec<u8>, f64)>;
const ERR_NAN: &str = "ERR resulting score is not a number (NaN)";
const ERR_LEX: &str = "ERR min or max not valid string range item";

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "sorted_set";
    ("zadd", -4, [WRITE DENYOOM FAST], [SORTEDSET], [key(1, RW UPDATE)], zadd, "1.2.0",
        "Adds members with scores to a sorted set, or updates their scores, with optional conditions.",
        complexity: "O(log(N)) per member added or updated, N being the set's size."),
    ("zincrby", 4, [WRITE DENYOOM FAST], [SORTEDSET], [key(1, RW ACCESS UPDATE)], zincrby, "1.2.0",
        "Adds an increment to a member's score, adding the member when missing.",
        complexity: "O(log(N)), N being the set's size."),
    ("zrem", -3, [WRITE FAST], [SORTEDSET], [key(1, RW DELETE)], zrem, "1.2.0",
        "Removes members from a sorted set; the key goes when the last one does.",
        complexity: "O(M*log(N)), M members removed from a set of N."),
    ("zcard", 2, [READONLY FAST], [SORTEDSET], [key(1, RO)], zcard, "1.2.0",
        "Returns how many members a sorted set has."),
    ("zcount", 4, [READONLY FAST], [SORTEDSET], [key(1, RO ACCESS)], zcount, "2.0.0",
        "Counts the members whose score lies in a range.",
        complexity: "O(log(N)), N being the set's size."),
    ("zlexcount", 4, [READONLY FAST], [SORTEDSET], [key(1, RO ACCESS)], zlexcount, "2.8.9",
        "Counts the members in a lexicographic range.",
        complexity: "O(log(N)), N being the set's size."),
    ("zscore", 3, [READONLY FAST], [SORTEDSET], [key(1, RO ACCESS)], zscore, "1.2.0",
        "Returns a member's score."),
    ("zmscore", -3, [READONLY FAST], [SORTEDSET], [key(1, RO ACCESS)], zmscore, "6.2.0",
        "Returns the scores of several members.", complexity: "O(N), N members asked for."),
    ("zrank", -3, [READONLY FAST], [SORTEDSET], [key(1, RO ACCESS)], zrank, "2.0.0",
        "Returns a member's position in ascending score order, optionally with its score.",
        complexity: "O(log(N))"),
    ("zrevrank", -3, [READONLY FAST], [SORTEDSET], [key(1, RO ACCESS)], zrevrank, "2.0.0",
        "Returns a member's position in descending score order, optionally with its score.",
        complexity: "O(log(N))"),
    ("zrange", -4, [READONLY], [SORTEDSET], [key(1, RO ACCESS)], zrange, "1.2.0",
        "Returns members in a range of positions, scores or lexicographic values.",
        complexity: "O(log(N)+M), M members returned."),
    ("zrangestore", -5, [WRITE DENYOOM], [SORTEDSET], [key(1, OW UPDATE), key(2, RO ACCESS)],
        zrangestore, "6.2.0", "Stores a range of a sorted set in another key.",
        complexity: "O(log(N)+M), M members stored."),
    ("zrevrange", -4, [READONLY], [SORTEDSET], [key(1, RO ACCESS)], zrevrange, "1.2.0",
        "Returns members in a range of positions, highest score first.",
        complexity: "O(log(N)+M), M members returned."),
    ("zrangebyscore", -4, [READONLY], [SORTEDSET], [key(1, RO ACCESS)], zrangebyscore, "1.0.5",
        "Returns members whose score lies in a range.",
        complexity: "O(log(N)+M), M members returned."),
    ("zrevrangebyscore", -4, [READONLY], [SORTEDSET], [key(1, RO ACCESS)], zrevrangebyscore,
        "2.2.0", "Returns members whose score lies in a range, highest first.",
        complexity: "O(log(N)+M), M members returned."),
    ("zrangebylex", -4, [READONLY], [SORTEDSET], [key(1, RO ACCESS)], zrangebylex, "2.8.9",
        "Returns members in a lexicographic range.",
        complexity: "O(log(N)+M), M members returned."),
    ("zrevrangebylex", -4, [READONLY], [SORTEDSET], [key(1, RO ACCESS)], zrevrangebylex, "2.8.9",
        "Returns members in a lexicographic range, in reverse order.",
        complexity: "O(log(N)+M), M members returned."),
    ("zremrangebyrank", 4, [WRITE], [SORTEDSET], [key(1, RW DELETE)], zremrangebyrank, "2.0.0",
        "Removes the members in a range of positions.",
        complexity: "O(log(N)+M), M members removed."),
    ("zremrangebyscore", 4, [WRITE], [SORTEDSET], [key(1, RW DELETE)], zremrangebyscore, "1.2.0",
        "Removes the members whose score lies in a range.",
        complexity: "O(log(N)+M), M members removed."),
    ("zremrangebylex", 4, [WRITE], [SORTEDSET], [key(1, RW DELETE)], zremrangebylex, "2.8.9",
        "Removes the members in a lexicographic range.",
        complexity: "O(log(N)+M), M members removed."),
    ("zpopmin", -2, [WRITE FAST], [SORTEDSET], [key(1, RW ACCESS DELETE)], zpopmin, "5.0.0",
        "Removes and returns the members with the lowest scores.",
        complexity: "O(log(N)*M), M members popped."),
    ("zpopmax", -2, [WRITE FAST], [SORTEDSET], [key(1, RW ACCESS DELETE)], zpopmax, "5.0.0",
        "Removes and returns the members with the highest scores.",
        complexity: "O(log(N)*M), M members popped."),
    ("zmpop", -4, [WRITE], [SORTEDSET], [keynum(1, 0, 1, 1, RW ACCESS DELETE)], zmpop, "7.0.0",
        "Pops the lowest- or highest-scored members of the first non-empty sorted set among several keys.",
        complexity: "O(K) + O(M*log(N)), K keys, M members popped."),
    ("zrandmember", -2, [READONLY], [SORTEDSET], [key(1, RO ACCESS)], zrandmember, "6.2.0",
        "Returns one or more random members, optionally with their scores.",
        complexity: "O(N), N members returned.", tips: &["nondeterministic_output"]),
    ("zunion", -3, [READONLY], [SORTEDSET], [keynum(1, 0, 1, 1, RO ACCESS)], zunion, "6.2.0",
        "Returns the union of sorted sets (and sets), scores combined.",
        complexity: "O(N)+O(M*log(M)), N input members, M result members."),
    ("zinter", -3, [READONLY], [SORTEDSET], [keynum(1, 0, 1, 1, RO ACCESS)], zinter, "6.2.0",
        "Returns the intersection of sorted sets (and sets), scores combined.",
        complexity: "O(N*K)+O(M*log(M)), N the smallest input, K inputs, M result members."),
    ("zdiff", -3, [READONLY], [SORTEDSET], [keynum(1, 0, 1, 1, RO ACCESS)], zdiff, "6.2.0",
        "Returns the members of the first sorted set missing from the others.",
        complexity: "O(L + (N-K)log(N)), L input members, N the first set's size, K result members."),
    ("zunionstore", -4, [WRITE DENYOOM], [SORTEDSET],
        [key(1, OW UPDATE), keynum(2, 0, 1, 1, RO ACCESS)], zunionstore, "2.0.0",
        "Stores the union of sorted sets (and sets) in a key.",
        complexity: "O(N)+O(M log(M)), N input members, M result members."),
    ("zinterstore", -4, [WRITE DENYOOM], [SORTEDSET],
        [key(1, OW UPDATE), keynum(2, 0, 1, 1, RO ACCESS)], zinterstore, "2.0.0",
        "Stores the intersection of sorted sets (and sets) in a key.",
        complexity: "O(N*K)+O(M*log(M)), N the smallest input, K inputs, M result members."),
    ("zdiffstore", -4, [WRITE DENYOOM], [SORTEDSET],
        [key(1, OW UPDATE), keynum(2, 0, 1, 1, RO ACCESS)], zdiffstore, "6.2.0",
        "Stores the difference of sorted sets in a key.",
        complexity: "O(L + (N-K)log(N)), L input members, N the first set's size, K result members."),
    ("zintercard", -3, [READONLY], [SORTEDSET], [keynum(1, 0, 1, 1, RO ACCESS)], zintercard,
        "7.0.0", "Counts the members of the intersection of sorted sets, optionally up to a limit.",
        complexity: "O(N*K), N the smallest input, K inputs."),
    ("zscan", -3, [READONLY], [SORTEDSET], [key(1, RO ACCESS)], zscan, "2.8.0",
        "Iterates over the members and scores of a sorted set.",
        complexity: "O(1) per call, O(N) for a whole iteration.",
        tips: &["nondeterministic_output"]),
    ("bzpopmin", -3, [WRITE BLOCKING FAST], [SORTEDSET], [range(1, -2, 1, RW ACCESS DELETE)],
        bzpopmin, "5.0.0",
        "Pops the lowest-scored member of the first non-empty sorted set, waiting for one when all are empty.",
        complexity: "O(log(N)), N the set's size."),
    ("bzpopmax", -3, [WRITE BLOCKING FAST], [SORTEDSET], [range(1, -2, 1, RW ACCESS DELETE)],
        bzpopmax, "5.0.0",
        "Pops the highest-scored member of the first non-empty sorted set, waiting for one when all are empty.",
        complexity: "O(log(N)), N the set's size."),
    ("bzmpop", -5, [WRITE BLOCKING], [SORTEDSET], [keynum(2, 0, 1, 1, RW ACCESS DELETE)], bzmpop,
        "7.0.0", "ZMPOP that waits for a member when every set is empty.",
        complexity: "O(K) + O(M*log(N)), K keys, M members popped."),
};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Write a list of members, with scores when asked (RESP3: `[member, score]` pairs).
fn reply_pairs(out: &mut Reply, pairs: &[(Vec<u8>, f64)], withscores: bool) {
    reply_pairs_header(out, pairs.len(), withscores);
    for (m, s) in pairs {
        reply_pair(out, m, *s, withscores);
    }
}

/// The array header for `n` members, with or without their scores.
fn reply_pairs_header(out: &mut Reply, n: usize, withscores: bool) {
    out.array(if withscores && !out.is_resp3() {
        n * 2
    } else {
        n
    });
}

/// One member (and its score: a pair in RESP3, two elements in RESP2).
fn reply_pair(out: &mut Reply, m: &[u8], s: f64, withscores: bool) {
    if withscores && out.is_resp3() {
        out.array(2);
    }
    out.bulk(m);
    if withscores {
        reply_double(out, s);
    }
}

/// Redis's getLongFromObjectOrReply with an optional custom message.
fn parse_long(arg: &[u8], msg: Option<&'static str>) -> Result<i64, &'static str> {
    parse_i64(arg).ok_or(msg.unwrap_or(ERR_NOT_INT))
}

/// One `[(`-prefixed score bound.
fn parse_score_bound(s: &[u8]) -> Option<(f64, bool)> {
    if s.first() == Some(&b'(') {
        Some((parse_range_double(&s[1..])?, true))
    } else {
        Some((parse_range_double(s)?, false))
    }
}

/// Redis's zslParseRange.
pub fn parse_score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, &'static str> {
    let (mn, minex) = parse_score_bound(min).ok_or(ERR_MINMAX_FLOAT)?;
    let (mx, maxex) = parse_score_bound(max).ok_or(ERR_MINMAX_FLOAT)?;
    Ok(ScoreRange {
        min: mn,
        max: mx,
        minex,
        maxex,
    })
}

fn parse_lex_bound(s: &[u8]) -> Option<LexBound> {
    match *s.first()? {
        b'+' if s.len() == 1 => Some(LexBound::PosInf),
        b'-' if s.len() == 1 => Some(LexBound::NegInf),
        b'(' => Some(LexBound::Excl(s[1..].to_vec())),
        b'[' => Some(LexBound::Incl(s[1..].to_vec())),
        _ => None,
    }
}

/// Redis's zslParseLexRange.
pub fn parse_lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, &'static str> {
    Ok(LexRange {
        min: parse_lex_bound(min).ok_or(ERR_LEX)?,
        max: parse_lex_bound(max).ok_or(ERR_LEX)?,
    })
}

/// Members of a plain set used as a Z* input (score 1 each).
fn set_members(s: &SetValue) -> Vec<Vec<u8>> {
    s.iter().map(|m| m.to_vec()).collect()
}

// ---------------------------------------------------------------------------------------------
// ZADD, ZINCRBY, ZREM
// ---------------------------------------------------------------------------------------------

fn zadd(ctx: &mut Ctx, args: &Args) {
    zadd_generic(ctx, args, false);
}

fn zincrby(ctx: &mut Ctx, args: &Args) {
    zadd_generic(ctx, args, true);
}

fn zadd_generic(ctx: &mut Ctx, args: &Args, incrby: bool) {
    let key = &args[1];
    let mut fl = AddFlags {
        incr: incrby,
        ..AddFlags::default()
    };
    let mut ch = false;
    let mut idx = 2;
    if !incrby {
        while idx < args.len() {
            let o = &args[idx];
            if eq_ic(o, "nx") {
                fl.nx = true;
            } else if eq_ic(o, "xx") {
                fl.xx = true;
            } else if eq_ic(o, "ch") {
                ch = true;
            } else if eq_ic(o, "incr") {
                fl.incr = true;
            } else if eq_ic(o, "gt") {
                fl.gt = true;
            } else if eq_ic(o, "lt") {
                fl.lt = true;
            } else {
                break;
            }
            idx += 1;
        }
    }
    let elements = args.len() - idx;
    if !elements.is_multiple_of(2) || elements == 0 {
        return ctx.error(ERR_SYNTAX);
    }
    let elements = elements / 2;
    if fl.nx && fl.xx {
        return ctx.error("ERR XX and NX options at the same time are not compatible");
    }
    if (fl.nx && (fl.gt || fl.lt)) || (fl.gt && fl.lt) {
        return ctx.error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if fl.incr && elements > 1 {
        return ctx.error("ERR INCR option supports a single increment-element pair");
    }
    let mut scores = Vec::with_capacity(elements);
    for j in 0..elements {
        match parse_score(&args[idx + j * 2]) {
            Some(s) => scores.push(s),
            None => return ctx.error(ERR_NOT_FLOAT),
        }
    }
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    let mut fresh: Option<ZSetValue> = None;
    let z: &mut ZSetValue = match ctx.lookup_write::<ZSetValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Found(z) => {
            z.maybe_convert(elements);
            z
        }
        Typed::Missing => {
            if fl.xx {
                drop(shard);
                if fl.incr {
                    ctx.out.null();
                } else {
                    ctx.out.int(0);
                }
                return;
            }
            fresh = Some(ZSetValue::with_hint(elements, args[idx + 1].len()));
            fresh.as_mut().expect("just set")
        }
    };
    let (mut added, mut updated, mut processed) = (0i64, 0i64, 0i64);
    let mut last = 0.0;
    let mut nan = false;
    for (j, &score) in scores.iter().enumerate() {
        let m = &args[idx + 1 + j * 2];
        match z.add(m, score, fl) {
            AddOutcome::Nan => {
                nan = true;
                break;
            }
            AddOutcome::Added(s) => {
                added += 1;
                processed += 1;
                last = s;
            }
            AddOutcome::Updated(s) => {
                updated += 1;
                processed += 1;
                last = s;
            }
            AddOutcome::Same(s) => {
                processed += 1;
                last = s;
            }
            AddOutcome::Nop => {}
        }
    }
    // Only members added or given a new score are a change (ZINCRBY 0 is none).
    match fresh {
        Some(v) if !v.is_empty() => {
            shard.set(h, key, Value::ZSet(v), false, now);
        }
        Some(_) => {}
        None if added + updated > 0 => shard.touch(key),
        None => {}
    }
    drop(shard);
    if added + updated > 0 {
        ctx.dirty((added + updated) as u64);
        ctx.notify(notify::ZSET, if fl.incr { "zincr" } else { "zadd" }, key);
    }
    if nan {
        return ctx.error(ERR_NAN);
    }
    if fl.incr {
        if processed > 0 {
            reply_double(ctx.out, last);
        } else {
            ctx.out.null();
        }
    } else {
        ctx.out.int(if ch { added + updated } else { added });
    }
}

fn zrem(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let z = match ctx.lookup_write::<ZSetValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Missing => {
            drop(shard);
            return ctx.out.int(0);
        }
        Typed::Found(z) => z,
    };
    let mut deleted = 0;
    for m in args.iter().skip(2) {
        if z.remove(m) {
            deleted += 1;
        }
        if z.is_empty() {
            break;
        }
    }
    let removed_key = z.is_empty();
    if deleted > 0 {
        shard.touch(key);
    }
    if removed_key {
        shard.remove(h, key);
    }
    drop(shard);
    if deleted > 0 {
        ctx.notify(notify::ZSET, "zrem", key);
        if removed_key {
            ctx.notify(notify::GENERIC, "del", key);
        }
        ctx.dirty(deleted);
    }
    ctx.out.int(deleted as i64);
}

// ---------------------------------------------------------------------------------------------
// Reads: ZCARD ZCOUNT ZLEXCOUNT ZSCORE ZMSCORE ZRANK ZREVRANK
// ---------------------------------------------------------------------------------------------

/// Run `f` on the sorted set at `key` (None when missing), replying WRONGTYPE for other types.
fn with_zset<R>(
    ctx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(Option<&mut ZSetValue>) -> R,
) -> Result<R, &'static str> {
    let (h, mut shard) = ctx.lock(key);
    let r = ctx.lookup_read::<ZSetValue>(&mut shard, h, key).checked();
    let found = matches!(r, Ok(Some(_)) | Err(_));
    let out = match r {
        Err(e) => Err(e.into()),
        Ok(z) => Ok(f(z)),
    };
    drop(shard);
    ctx.hit(found, key);
    out
}

fn zcard(ctx: &mut Ctx, args: &Args) {
    match with_zset(ctx, &args[1], |z| z.map_or(0, |z| z.len())) {
        Ok(n) => ctx.out.int(n as i64),
        Err(e) => ctx.error(e),
    }
}

fn zcount(ctx: &mut Ctx, args: &Args) {
    let r = match parse_score_range(&args[2], &args[3]) {
        Ok(r) => r,
        Err(e) => return ctx.error(e),
    };
    let n = with_zset(ctx, &args[1], |z| {
        z.and_then(|z| z.score_span(&r))
            .map_or(0, |(a, b)| b - a + 1)
    });
    match n {
        Ok(n) => ctx.out.int(n as i64),
        Err(e) => ctx.error(e),
    }
}

fn zlexcount(ctx: &mut Ctx, args: &Args) {
    let r = match parse_lex_range(&args[2], &args[3]) {
        Ok(r) => r,
        Err(e) => return ctx.error(e),
    };
    let n = with_zset(ctx, &args[1], |z| {
        z.and_then(|z| z.lex_span(&r)).map_or(0, |(a, b)| b - a + 1)
    });
    match n {
        Ok(n) => ctx.out.int(n as i64),
        Err(e) => ctx.error(e),
    }
}

fn zscore(ctx: &mut Ctx, args: &Args) {
    match with_zset(ctx, &args[1], |z| z.and_then(|z| z.score(&args[2]))) {
        Ok(Some(s)) => reply_double(ctx.out, s),
        Ok(None) => ctx.out.null(),
        Err(e) => ctx.error(e),
    }
}

fn zmscore(ctx: &mut Ctx, args: &Args) {
    let r = with_zset(ctx, &args[1], |z| {
        args.iter()
            .skip(2)
            .map(|m| z.as_ref().and_then(|z| z.score(m)))
            .collect::<Vec<_>>()
    });
    match r {
        Ok(v) => {
            ctx.out.array(v.len());
            for s in v {
                match s {
                    Some(s) => reply_double(ctx.out, s),
                    None => ctx.out.null(),
                }
            }
        }
        Err(e) => ctx.error(e),
    }
}

fn zrank(ctx: &mut Ctx, args: &Args) {
    zrank_generic(ctx, args, false)
}

fn zrevrank(ctx: &mut Ctx, args: &Args) {
    zrank_generic(ctx, args, true)
}

fn zrank_generic(ctx: &mut Ctx, args: &Args, rev: bool) {
    if args.len() > 4 {
        let name = ctx.cmd.name;
        return ctx.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    let withscore = args.len() == 4;
    if withscore && !eq_ic(&args[3], "withscore") {
        return ctx.error(ERR_SYNTAX);
    }
    match with_zset(ctx, &args[1], |z| z.and_then(|z| z.rank(&args[2], rev))) {
        Err(e) => ctx.error(e),
        Ok(None) => {
            if withscore {
                ctx.out.null_array()
            } else {
                ctx.out.null()
            }
        }
        Ok(Some((r, s))) => {
            if withscore {
                ctx.out.array(2);
                ctx.out.int(r as i64);
                reply_double(ctx.out, s);
            } else {
                ctx.out.int(r as i64);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ZRANGE family
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

enum Parsed {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

struct RangeReq {
    parsed: Parsed,
    rev: bool,
    withscores: bool,
    offset: i64,
    limit: i64,
}

/// Parse `<min> <max> [options]` with the source key at `src` (Redis's zrangeGenericCommand
/// steps 1 and 2). `rev`: None = from REV option.
fn parse_range_args(
    args: &Args,
    src: usize,
    store: bool,
    mut rtype: RangeType,
    rev: Option<bool>,
) -> Result<RangeReq, &'static str> {
    let mut minidx = src + 1;
    let mut maxidx = src + 2;
    let mut withscores = false;
    let mut offset = 0;
    let mut limit = -1;
    let mut dir = rev;
    let mut j = src + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if !store && eq_ic(a, "withscores") {
            withscores = true;
        } else if eq_ic(a, "limit") && left >= 2 {
            offset = parse_long(&args[j + 1], None)?;
            limit = parse_long(&args[j + 2], None)?;
            j += 2;
        } else if rev.is_none() && eq_ic(a, "rev") {
            dir = Some(true);
        } else if rtype == RangeType::Auto && eq_ic(a, "bylex") {
            rtype = RangeType::Lex;
        } else if rtype == RangeType::Auto && eq_ic(a, "byscore") {
            rtype = RangeType::Score;
        } else {
            return Err(ERR_SYNTAX);
        }
        j += 1;
    }
    let rev = dir.unwrap_or(false);
    if rtype == RangeType::Auto {
        rtype = RangeType::Rank;
    }
    if limit != -1 && rtype == RangeType::Rank {
        return Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if withscores && rtype == RangeType::Lex {
        return Err("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    if rev && rtype != RangeType::Rank {
        std::mem::swap(&mut minidx, &mut maxidx);
    }
    let parsed = match rtype {
        RangeType::Rank | RangeType::Auto => Parsed::Rank(
            parse_long(&args[minidx], None)?,
            parse_long(&args[maxidx], None)?,
        ),
        RangeType::Score => Parsed::Score(parse_score_range(&args[minidx], &args[maxidx])?),
        RangeType::Lex => Parsed::Lex(parse_lex_range(&args[minidx], &args[maxidx])?),
    };
    Ok(RangeReq {
        parsed,
        rev,
        withscores: withscores || store,
        offset,
        limit,
    })
}

/// The (start index, count, walk down) selection a range request makes on `z`.
fn select(z: &ZSetValue, req: &RangeReq) -> (usize, usize, bool) {
    let len = z.len() as i64;
    match &req.parsed {
        Parsed::Rank(start, end) => {
            let (mut s, mut e) = (*start, *end);
            if s < 0 {
                s += len;
            }
            if e < 0 {
                e += len;
            }
            if s < 0 {
                s = 0;
            }
            if s > e || s >= len {
                return (0, 0, false);
            }
            if e >= len {
                e = len - 1;
            }
            let n = (e - s + 1) as usize;
            if req.rev {
                ((len - 1 - s) as usize, n, true)
            } else {
                (s as usize, n, false)
            }
        }
        Parsed::Score(_) | Parsed::Lex(_) => {
            if req.offset < 0 || (req.offset > 0 && req.offset >= len) {
                return (0, 0, false);
            }
            let span = match &req.parsed {
                Parsed::Score(r) => z.score_span(r),
                Parsed::Lex(r) => z.lex_span_from(r, req.rev),
                Parsed::Rank(..) => None,
            };
            let Some((a, b)) = span else {
                return (0, 0, false);
            };
            let total = b - a + 1;
            let off = req.offset as usize;
            if off >= total {
                return (0, 0, false);
            }
            let mut n = total - off;
            if req.limit >= 0 {
                n = n.min(req.limit as usize);
            }
            if req.rev {
                (b - off, n, true)
            } else {
                (a + off, n, false)
            }
        }
    }
}

fn zrange_generic(ctx: &mut Ctx, args: &Args, rtype: RangeType, rev: Option<bool>) {
    let req = match parse_range_args(args, 1, false, rtype, rev) {
        Ok(r) => r,
        Err(e) => return ctx.error(e),
    };
    let r = with_zset(ctx, &args[1], |z| match z {
        None => Vec::new(),
        Some(z) => {
            let (s, n, down) = select(z, &req);
            z.range(s, n, down)
        }
    });
    match r {
        Ok(pairs) => reply_pairs(ctx.out, &pairs, req.withscores),
        Err(e) => ctx.error(e),
    }
}

fn zrange(ctx: &mut Ctx, args: &Args) {
    zrange_generic(ctx, args, RangeType::Auto, None)
}
fn zrevrange(ctx: &mut Ctx, args: &Args) {
    zrange_generic(ctx, args, RangeType::Rank, Some(true))
}
fn zrangebyscore(ctx: &mut Ctx, args: &Args) {
    zrange_generic(ctx, args, RangeType::Score, Some(false))
}
fn zrevrangebyscore(ctx: &mut Ctx, args: &Args) {
    zrange_generic(ctx, args, RangeType::Score, Some(true))
}
fn zrangebylex(ctx: &mut Ctx, args: &Args) {
    zrange_generic(ctx, args, RangeType::Lex, Some(false))
}
fn zrevrangebylex(ctx: &mut Ctx, args: &Args) {
    zrange_generic(ctx, args, RangeType::Lex, Some(true))
}

/// Store `pairs` at `dst` (or delete it when empty) and reply the count, as Redis's
/// Z*STORE commands do. Returns whether anything changed.
fn store_result(
    ctx: &mut Ctx,
    shard: &mut ShardData,
    h: u64,
    dst: &[u8],
    pairs: Vec<(Vec<u8>, f64)>,
    event: &str,
) {
    let n = pairs.len();
    if n > 0 {
        tern_runtime::background::replace_value(
            ctx.srv,
            shard,
            h,
            dst,
            Value::ZSet(ZSetValue::from_pairs(pairs)),
            ctx.now_ms,
        );
        ctx.out.int(n as i64);
        ctx.notify(notify::ZSET, event, dst);
        ctx.dirty(1);
    } else {
        ctx.out.int(0);
        if tern_runtime::background::delete_live(ctx.srv, shard, h, dst, ctx.now_ms) {
            ctx.notify(notify::GENERIC, "del", dst);
            ctx.dirty(1);
        }
    }
}

fn zrangestore(ctx: &mut Ctx, args: &Args) {
    let req = match parse_range_args(args, 2, true, RangeType::Auto, None) {
        Ok(r) => r,
        Err(e) => return ctx.error(e),
    };
    let (dst, src) = (&args[1], &args[2]);
    let (hs, mut g) = ctx.lock_pair(dst, src);
    let db = ctx.conn.db;
    let pairs = {
        let shard = g.shard(db, hs[1]);
        let found = ctx.read_key(shard, hs[1], src);
        let r = ctx.typed::<ZSetValue>(found).checked();
        // The source is read as Redis's lookupKeyRead does (hit, or miss and keymiss).
        ctx.hit(!matches!(r, Ok(None)), src);
        match r {
            Err(e) => {
                drop(g);
                return ctx.error(e.into());
            }
            Ok(None) => Vec::new(),
            Ok(Some(z)) => {
                let (s, n, down) = select(z, &req);
                z.range(s, n, down)
            }
        }
    };
    let shard = g.shard(db, hs[0]);
    store_result(ctx, shard, hs[0], dst, pairs, "zrangestore");
}

// ---------------------------------------------------------------------------------------------
// ZREMRANGEBY*
// ---------------------------------------------------------------------------------------------

fn zremrange_generic(ctx: &mut Ctx, args: &Args, rtype: RangeType) {
    let key = &args[1];
    let (parsed, event) = match rtype {
        RangeType::Score => match parse_score_range(&args[2], &args[3]) {
            Ok(r) => (Parsed::Score(r), "zremrangebyscore"),
            Err(e) => return ctx.error(e),
        },
        RangeType::Lex => match parse_lex_range(&args[2], &args[3]) {
            Ok(r) => (Parsed::Lex(r), "zremrangebylex"),
            Err(e) => return ctx.error(e),
        },
        _ => match (parse_i64(&args[2]), parse_i64(&args[3])) {
            (Some(a), Some(b)) => (Parsed::Rank(a, b), "zremrangebyrank"),
            _ => return ctx.error(ERR_NOT_INT),
        },
    };
    let (h, mut shard) = ctx.lock(key);
    let z = match ctx.lookup_write::<ZSetValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Missing => {
            drop(shard);
            return ctx.out.int(0);
        }
        Typed::Found(z) => z,
    };
    let span = match &parsed {
        Parsed::Rank(start, end) => {
            let len = z.len() as i64;
            let (mut s, mut e) = (*start, *end);
            if s < 0 {
                s += len;
            }
            if e < 0 {
                e += len;
            }
            if s < 0 {
                s = 0;
            }
            if s > e || s >= len {
                None
            } else {
                Some((s as usize, e.min(len - 1) as usize))
            }
        }
        Parsed::Score(r) => z.score_span(r),
        Parsed::Lex(r) => z.lex_span(r),
    };
    let deleted = match span {
        Some((a, b)) => z.remove_span(a, b - a + 1),
        None => 0,
    };
    let removed_key = z.is_empty();
    if deleted > 0 {
        shard.touch(key);
    }
    if removed_key {
        shard.remove(h, key);
    }
    drop(shard);
    if deleted > 0 {
        ctx.notify(notify::ZSET, event, key);
        if removed_key {
            ctx.notify(notify::GENERIC, "del", key);
        }
        ctx.dirty(deleted as u64);
    }
    ctx.out.int(deleted as i64);
}

fn zremrangebyrank(ctx: &mut Ctx, args: &Args) {
    zremrange_generic(ctx, args, RangeType::Rank)
}
fn zremrangebyscore(ctx: &mut Ctx, args: &Args) {
    zremrange_generic(ctx, args, RangeType::Score)
}
fn zremrangebylex(ctx: &mut Ctx, args: &Args) {
    zremrange_generic(ctx, args, RangeType::Lex)
}

// ---------------------------------------------------------------------------------------------
// Pops
// ---------------------------------------------------------------------------------------------

/// Pop up to `count` from the zset at `key` in a locked shard; deletes the key when emptied.
/// Returns None when the key is missing.
fn pop_from(
    ctx: &mut Ctx,
    shard: &mut ShardData,
    h: u64,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Option<Pairs>, &'static str> {
    let z = match ctx.lookup_write::<ZSetValue>(shard, h, key).checked()? {
        None => return Ok(None),
        Some(z) => z,
    };
    let popped = z.pop(max, count);
    let empty = z.is_empty();
    if !popped.is_empty() {
        shard.touch(key);
    }
    if empty {
        shard.remove(h, key);
    }
    if !popped.is_empty() {
        ctx.dirty(popped.len() as u64);
        ctx.notify(notify::ZSET, if max { "zpopmax" } else { "zpopmin" }, key);
        if empty {
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
    Ok(Some(popped))
}

fn zpop_generic(ctx: &mut Ctx, args: &Args, max: bool) {
    if args.len() > 3 {
        return ctx.error(ERR_SYNTAX);
    }
    let mut count: i64 = -1;
    if args.len() == 3 {
        match parse_i64(&args[2]) {
            Some(n) if n >= 0 => count = n,
            Some(_) => return ctx.error("ERR value is out of range, must be positive"),
            None => return ctx.error(ERR_NOT_INT),
        }
    }
    let nested = ctx.out.is_resp3() && count != -1;
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    // count 0 on an existing key: empty array without popping
    let n = if count == -1 { 1 } else { count as usize };
    let r = pop_from(ctx, &mut shard, h, key, max, n);
    drop(shard);
    match r {
        Err(e) => ctx.error(e),
        Ok(None) => ctx.out.array(0),
        Ok(Some(p)) => {
            if nested {
                reply_pairs(ctx.out, &p, true);
            } else {
                ctx.out.array(p.len() * 2);
                for (m, s) in &p {
                    ctx.out.bulk(m);
                    reply_double(ctx.out, *s);
                }
            }
        }
    }
}

fn zpopmin(ctx: &mut Ctx, args: &Args) {
    zpop_generic(ctx, args, false)
}
fn zpopmax(ctx: &mut Ctx, args: &Args) {
    zpop_generic(ctx, args, true)
}

/// Parsed `numkeys key... MIN|MAX [COUNT n]` (ZMPOP/BZMPOP).
fn parse_mpop(args: &Args, numkeys_idx: usize) -> Result<(usize, bool, usize), &'static str> {
    const NK: &str = "ERR numkeys should be greater than 0";
    let numkeys = parse_long(&args[numkeys_idx], Some(NK))?;
    if numkeys < 1 {
        return Err(NK);
    }
    let where_idx = (numkeys_idx as i64)
        .saturating_add(numkeys)
        .saturating_add(1);
    if where_idx >= args.len() as i64 {
        return Err(ERR_SYNTAX);
    }
    let where_idx = where_idx as usize;
    let max = if eq_ic(&args[where_idx], "min") {
        false
    } else if eq_ic(&args[where_idx], "max") {
        true
    } else {
        return Err(ERR_SYNTAX);
    };
    let mut count: i64 = -1;
    let mut j = where_idx + 1;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if count == -1 && eq_ic(&args[j], "count") && more > 0 {
            j += 1;
            const C: &str = "ERR count should be greater than 0";
            let n = parse_long(&args[j], Some(C))?;
            if n < 1 {
                return Err(C);
            }
            count = n;
        } else {
            return Err(ERR_SYNTAX);
        }
        j += 1;
    }
    Ok((
        numkeys as usize,
        max,
        if count == -1 { 1 } else { count as usize },
    ))
}

/// Try each key in order: pop from the first non-empty sorted set. Ok(None) when all are
/// missing; Err on a wrong type.
fn pop_first(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    max: bool,
    count: usize,
) -> Result<Option<(Vec<u8>, Pairs)>, &'static str> {
    let (hs, mut g) = ctx.lock_keys(keys.iter().copied());
    let db = ctx.conn.db;
    for (i, key) in keys.iter().enumerate() {
        let shard = g.shard(db, hs[i]);
        if let Some(p) = pop_from(ctx, shard, hs[i], key, max, count)? {
            return Ok(Some((key.to_vec(), p)));
        }
    }
    Ok(None)
}

/// ZMPOP and the blocking pops are replayed as ZPOPMIN/ZPOPMAX (with the count popped).
fn propagate_pop(ctx: &Ctx, key: &[u8], max: bool, count: Option<usize>) {
    let cmd: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
    match count {
        None => ctx.propagate_as(&[cmd, key]),
        Some(n) => {
            let n = n.to_string();
            ctx.propagate_as(&[cmd, key, n.as_bytes()]);
        }
    }
}

fn reply_mpop(ctx: &mut Ctx, key: &[u8], pairs: &[(Vec<u8>, f64)]) {
    ctx.out.array(2);
    ctx.out.bulk(key);
    ctx.out.array(pairs.len());
    for (m, s) in pairs {
        ctx.out.array(2);
        ctx.out.bulk(m);
        reply_double(ctx.out, *s);
    }
}

fn zmpop(ctx: &mut Ctx, args: &Args) {
    let (nk, max, count) = match parse_mpop(args, 1) {
        Ok(x) => x,
        Err(e) => return ctx.error(e),
    };
    let keys: Vec<&[u8]> = (0..nk).map(|i| &args[2 + i]).collect();
    match pop_first(ctx, &keys, max, count) {
        Err(e) => ctx.error(e),
        Ok(None) => ctx.out.null_array(),
        Ok(Some((k, p))) => {
            reply_mpop(ctx, &k, &p);
            propagate_pop(ctx, &k, max, Some(p.len()));
        }
    }
}

/// Shared end of the blocking pops: serve when a key has members, else wait.
fn block_or_serve(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    deadline: u64,
    max: bool,
    count: usize,
    mpop: bool,
) {
    match pop_first(ctx, keys, max, count) {
        Err(e) => {
            if ctx.serving_blocked() {
                ctx.block(BlockSpec {
                    keys: keys.iter().map(|k| k.to_vec()).collect(),
                    deadline_ms: deadline,
                    timeout_reply: TimeoutReply::NullArray,
                    rewritten_args: None,
                    unblock_on_nokey: false,
                });
            } else {
                ctx.error(e)
            }
        }
        Ok(Some((k, p))) => {
            propagate_pop(ctx, &k, max, mpop.then_some(p.len()));
            if mpop {
                reply_mpop(ctx, &k, &p);
            } else {
                ctx.out.array(3);
                ctx.out.bulk(&k);
                let (m, s) = &p[0];
                ctx.out.bulk(m);
                reply_double(ctx.out, *s);
            }
        }
        Ok(None) => ctx.block(BlockSpec {
            keys: keys.iter().map(|k| k.to_vec()).collect(),
            deadline_ms: deadline,
            timeout_reply: TimeoutReply::NullArray,
            rewritten_args: None,
            unblock_on_nokey: false,
        }),
    }
}

fn bzpop_generic(ctx: &mut Ctx, args: &Args, max: bool) {
    let deadline = match blocking::parse_timeout_secs(&args[args.len() - 1], ctx.now_ms) {
        Ok(d) => d,
        Err(e) => return ctx.error(e),
    };
    let keys: Vec<&[u8]> = (1..args.len() - 1).map(|i| &args[i]).collect();
    block_or_serve(ctx, &keys, deadline, max, 1, false);
}

fn bzpopmin(ctx: &mut Ctx, args: &Args) {
    bzpop_generic(ctx, args, false)
}
fn bzpopmax(ctx: &mut Ctx, args: &Args) {
    bzpop_generic(ctx, args, true)
}

fn bzmpop(ctx: &mut Ctx, args: &Args) {
    let (nk, max, count) = match parse_mpop(args, 2) {
        Ok(x) => x,
        Err(e) => return ctx.error(e),
    };
    let deadline = match blocking::parse_timeout_secs(&args[1], ctx.now_ms) {
        Ok(d) => d,
        Err(e) => return ctx.error(e),
    };
    let keys: Vec<&[u8]> = (0..nk).map(|i| &args[3 + i]).collect();
    block_or_serve(ctx, &keys, deadline, max, count, true);
}

// ---------------------------------------------------------------------------------------------
// ZRANDMEMBER, ZSCAN
// ---------------------------------------------------------------------------------------------

fn zrandmember(ctx: &mut Ctx, args: &Args) {
    if args.len() >= 3 {
        let l = match parse_i64(&args[2]) {
            None => return ctx.error(ERR_NOT_INT),
            Some(l) if l == i64::MIN => {
                return ctx.error(&format!(
                    "ERR value is out of range, value must between {} and {}",
                    -i64::MAX,
                    i64::MAX
                ))
            }
            Some(l) => l,
        };
        if args.len() > 4 || (args.len() == 4 && !eq_ic(&args[3], "withscores")) {
            return ctx.error(ERR_SYNTAX);
        }
        let withscores = args.len() == 4;
        if withscores && !(-i64::MAX / 2..=i64::MAX / 2).contains(&l) {
            return ctx.error("ERR value is out of range");
        }
        return zrandmember_count(ctx, args, l, withscores);
    }
    let pick: u64 = ctx.conn.rng.gen();
    let r = with_zset(ctx, &args[1], |z| {
        z.and_then(|z| {
            let len = z.len() as u64;
            (len > 0).then(|| z.element_at((pick % len) as usize))?
        })
    });
    match r {
        Err(e) => ctx.error(e),
        Ok(Some((m, _))) => ctx.out.bulk(&m),
        Ok(None) => ctx.out.null(),
    }
}

fn zrandmember_count(ctx: &mut Ctx, args: &Args, l: i64, withscores: bool) {
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let z = match ctx.lookup_read::<ZSetValue>(&mut shard, h, key) {
        Typed::WrongType => {
            ctx.hit(true, key);
            return ctx.wrong_type(shard);
        }
        Typed::Missing => {
            drop(shard);
            ctx.hit(false, key);
            return ctx.out.array(0);
        }
        Typed::Found(z) => z,
    };
    ctx.hit(true, key);
    let size = z.len();
    let uniq = l >= 0;
    let count = l.unsigned_abs() as usize;
    if count == 0 {
        drop(shard);
        return ctx.out.array(0);
    }
    if !uniq || count == 1 {
        // Repeats allowed: streamed straight into the reply (the count may be huge; the
        // client's output limit stops it).
        let out = &mut *ctx.out;
        reply_pairs_header(out, count, withscores);
        for _ in 0..count {
            let i = ctx.conn.rng.gen_range(0..size);
            let (m, s) = z.element_at(i).expect("index in range");
            reply_pair(out, &m, s, withscores);
            if out.overflowed() {
                break;
            }
        }
        return;
    }
    let pairs: Vec<(Vec<u8>, f64)> = if count >= size {
        // Redis walks the set from its highest member down here.
        z.range(size - 1, size, true)
    } else {
        // unique sample of `count` indexes, in random order
        let idx: Vec<usize> = if count * 3 > size {
            let mut all: Vec<usize> = (0..size).collect();
            for i in 0..count {
                let j = ctx.conn.rng.gen_range(i..size);
                all.swap(i, j);
            }
            all.truncate(count);
            all
        } else {
            let mut seen = std::collections::HashSet::with_capacity(count);
            let mut v = Vec::with_capacity(count);
            while v.len() < count {
                let i = ctx.conn.rng.gen_range(0..size);
                if seen.insert(i) {
                    v.push(i);
                }
            }
            v
        };
        idx.into_iter()
            .map(|i| z.element_at(i).expect("index in range"))
            .collect()
    };
    drop(shard);
    reply_pairs(ctx.out, &pairs, withscores);
}

fn zscan(ctx: &mut Ctx, args: &Args) {
    let cursor = match parse_scan_cursor(&args[2]) {
        Ok(c) => c,
        Err(e) => return ctx.error(e),
    };
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let z = match ctx.lookup_read::<ZSetValue>(&mut shard, h, key) {
        Typed::WrongType => {
            ctx.hit(true, key);
            return ctx.wrong_type(shard);
        }
        Typed::Missing => {
            drop(shard);
            ctx.hit(false, key);
            let empty: [&[u8]; 0] = [];
            return reply_scan(ctx, 0, &empty);
        }
        Typed::Found(z) => z,
    };
    ctx.hit(true, key);
    let opts = match ScanOpts::parse(args, 3, false) {
        Ok(o) => o,
        Err(e) => {
            drop(shard);
            return ctx.error(e);
        }
    };
    let mut items: Vec<Vec<u8>> = Vec::new();
    // Redis returns a listpack's stored score text, but prints a skiplist's with %.17g.
    let fmt = if matches!(z.members(), ZSetValue::Listpack(_)) {
        tern_runtime::double::fmt_double
    } else {
        tern_runtime::double::fmt_g17
    };
    let next = z.scan(cursor, opts.count, |m, s| {
        if opts.matches(m) {
            items.push(m.to_vec());
            items.push(fmt(s).into_bytes());
        }
    });
    drop(shard);
    reply_scan(ctx, next, &items);
}

// ---------------------------------------------------------------------------------------------
// ZUNION / ZINTER / ZDIFF (+STORE), ZINTERCARD
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggr {
    Sum,
    Min,
    Max,
}

/// One input: its members with scores (sets score 1), and a membership test.
enum Src {
    Missing,
    Z(Vec<(Vec<u8>, f64)>, HashMap<Vec<u8>, f64>),
    S(Vec<Vec<u8>>, std::collections::HashSet<Vec<u8>>),
}

impl Src {
    /// The input a value provides; None for types other than sorted set and set.
    fn of(v: &Value) -> Option<Src> {
        match v {
            Value::ZSet(z) => {
                let v = z.to_vec();
                let map = v.iter().cloned().collect();
                Some(Src::Z(v, map))
            }
            Value::Set(s) => {
                let v = set_members(s);
                let set = v.iter().cloned().collect();
                Some(Src::S(v, set))
            }
            _ => None,
        }
    }

    fn len(&self) -> usize {
        match self {
            Src::Missing => 0,
            Src::Z(v, _) => v.len(),
            Src::S(v, _) => v.len(),
        }
    }
    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Src::Missing => None,
            Src::Z(_, map) => map.get(m).copied(),
            Src::S(_, set) => set.contains(m).then_some(1.0),
        }
    }
    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Src::Missing => {}
            Src::Z(v, _) => v.iter().for_each(|(m, s)| f(m, *s)),
            Src::S(v, _) => v.iter().for_each(|m| f(m, 1.0)),
        }
    }
}

fn aggregate(a: Aggr, target: &mut f64, val: f64) {
    match a {
        Aggr::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggr::Min => {
            if val < *target {
                *target = val
            }
        }
        Aggr::Max => {
            if val > *target {
                *target = val
            }
        }
    }
}

/// ZUNION/ZINTER/ZDIFF and their STORE forms and ZINTERCARD (Redis's
/// zunionInterDiffGenericCommand). `dst_idx`: index of the destination key for STORE.
fn setop_generic(ctx: &mut Ctx, args: &Args, dst_idx: Option<usize>, op: SetOp, card: bool) {
    let nk_idx = dst_idx.map_or(1, |_| 2);
    let setnum = match parse_i64(&args[nk_idx]) {
        Some(n) => n,
        None => return ctx.error(ERR_NOT_INT),
    };
    if setnum < 1 {
        let name = ctx.cmd.name;
        return ctx.error(&format!(
            "ERR at least 1 input key is needed for '{name}' command"
        ));
    }
    if setnum > (args.len() - nk_idx - 1) as i64 {
        return ctx.error(ERR_SYNTAX);
    }
    let setnum = setnum as usize;
    let mut keys: Vec<&[u8]> = (0..setnum).map(|i| &args[nk_idx + 1 + i]).collect();
    if let Some(d) = dst_idx {
        keys.push(&args[d]);
    }
    let (hs, mut g) = ctx.lock_keys(keys.iter().copied());
    let db = ctx.conn.db;
    // Read inputs (before the options, as Redis does): hits, misses and keymiss events key by
    // key, taken back should the command move to a background thread (it reads them again).
    let mut srcs: Vec<(Src, f64)> = Vec::with_capacity(setnum);
    let mut found: Vec<bool> = Vec::with_capacity(setnum);
    for i in 0..setnum {
        let shard = g.shard(db, hs[i]);
        // A STORE variant only reads its sources: no WATCH touch.
        let src = match ctx.read_key(shard, hs[i], keys[i]) {
            None => Some(Src::Missing),
            Some(e) => {
                ctx.touch(e);
                Src::of(&e.value)
            }
        };
        let hit = !matches!(src, Some(Src::Missing));
        ctx.hit(hit, keys[i]);
        found.push(hit);
        let src = match src {
            Some(src) => src,
            None => {
                drop(g);
                return ctx.error(ERR_WRONGTYPE);
            }
        };
        srcs.push((src, 1.0));
    }
    // Options.
    let mut aggr = Aggr::Sum;
    let mut withscores = false;
    let mut limit: usize = 0;
    let mut j = nk_idx + 1 + setnum;
    while j < args.len() {
        let remaining = args.len() - j;
        let a = &args[j];
        if op != SetOp::Diff && !card && remaining > setnum && eq_ic(a, "weights") {
            j += 1;
            for src in srcs.iter_mut() {
                match parse_score(&args[j]) {
                    Some(w) => src.1 = w,
                    None => {
                        drop(g);
                        return ctx.error("ERR weight value is not a float");
                    }
                }
                j += 1;
            }
        } else if op != SetOp::Diff && !card && remaining >= 2 && eq_ic(a, "aggregate") {
            let v = &args[j + 1];
            aggr = if eq_ic(v, "sum") {
                Aggr::Sum
            } else if eq_ic(v, "min") {
                Aggr::Min
            } else if eq_ic(v, "max") {
                Aggr::Max
            } else {
                drop(g);
                return ctx.error(ERR_SYNTAX);
            };
            j += 2;
        } else if remaining >= 1 && dst_idx.is_none() && !card && eq_ic(a, "withscores") {
            withscores = true;
            j += 1;
        } else if card && remaining >= 2 && eq_ic(a, "limit") {
            const E: &str = "ERR LIMIT can't be negative";
            match parse_i64(&args[j + 1]) {
                Some(n) if n >= 0 => limit = n as usize,
                _ => {
                    drop(g);
                    return ctx.error(E);
                }
            }
            j += 2;
        } else {
            drop(g);
            return ctx.error(ERR_SYNTAX);
        }
    }
    // Huge inputs run on a background thread so this worker keeps serving other clients.
    let total: usize = srcs.iter().map(|s| s.0.len()).sum();
    if total > tern_runtime::background::OFFLOAD_THRESHOLD && ctx.offload() {
        drop(srcs);
        drop(g);
        ctx.unhit(&found);
        return;
    }
    if op != SetOp::Diff {
        srcs.sort_by_key(|s| s.0.len());
    }
    let mut result: Vec<(Vec<u8>, f64)> = Vec::new();
    let mut cardinality = 0usize;
    match op {
        SetOp::Inter => {
            if srcs[0].0.len() > 0 {
                let (first, rest) = srcs.split_first().expect("one input at least");
                let mut stop = false;
                first.0.for_each(|m, s| {
                    if stop {
                        return;
                    }
                    let mut score = first.1 * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    for (src, w) in rest {
                        match src.score(m) {
                            Some(v) => {
                                let mut v = w * v;
                                if v.is_nan() {
                                    v = 0.0;
                                }
                                aggregate(aggr, &mut score, v);
                            }
                            None => return,
                        }
                    }
                    if card {
                        cardinality += 1;
                        if limit != 0 && cardinality >= limit {
                            stop = true;
                        }
                    } else {
                        result.push((m.to_vec(), score));
                    }
                });
            }
        }
        SetOp::Union => {
            let mut acc: HashMap<Vec<u8>, usize> = HashMap::new();
            for (src, w) in &srcs {
                src.for_each(|m, s| {
                    let mut v = w * s;
                    if v.is_nan() {
                        v = 0.0;
                    }
                    match acc.get(m) {
                        Some(&i) => aggregate(aggr, &mut result[i].1, v),
                        None => {
                            acc.insert(m.to_vec(), result.len());
                            result.push((m.to_vec(), v));
                        }
                    }
                });
            }
        }
        SetOp::Diff => {
            let (first, rest) = srcs.split_first().expect("one input at least");
            first.0.for_each(|m, s| {
                if rest.iter().all(|(src, _)| src.score(m).is_none()) {
                    result.push((m.to_vec(), s));
                }
            });
        }
    }
    if let Some(d) = dst_idx {
        let hd = hs[setnum];
        let shard = g.shard(db, hd);
        let event = match op {
            SetOp::Union => "zunionstore",
            SetOp::Inter => "zinterstore",
            SetOp::Diff => "zdiffstore",
        };
        store_result(ctx, shard, hd, &args[d], result, event);
        return;
    }
    drop(g);
    if card {
        return ctx.out.int(cardinality as i64);
    }
    result.sort_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    });
    reply_pairs(ctx.out, &result, withscores);
}

fn zunion(ctx: &mut Ctx, args: &Args) {
    setop_generic(ctx, args, None, SetOp::Union, false)
}
fn zinter(ctx: &mut Ctx, args: &Args) {
    setop_generic(ctx, args, None, SetOp::Inter, false)
}
fn zdiff(ctx: &mut Ctx, args: &Args) {
    setop_generic(ctx, args, None, SetOp::Diff, false)
}
fn zunionstore(ctx: &mut Ctx, args: &Args) {
    setop_generic(ctx, args, Some(1), SetOp::Union, false)
}
fn zinterstore(ctx: &mut Ctx, args: &Args) {
    setop_generic(ctx, args, Some(1), SetOp::Inter, false)
}
fn zdiffstore(ctx: &mut Ctx, args: &Args) {
    setop_generic(ctx, args, Some(1), SetOp::Diff, false)
}
fn zintercard(ctx: &mut Ctx, args: &Args) {
    setop_generic(ctx, args, None, SetOp::Inter, true)
}

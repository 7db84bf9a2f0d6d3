//! Stream commands and consumer groups.

use tern_engine::limits;
use tern_engine::types::stream::{
    AppendError, Consumer, ConsumerGroup, Nack, StreamEntry, StreamId, StreamValue, Trim,
    INVALID_ENTRIES_READ,
};
use tern_engine::{Entry, PackedBox, ShardData, Value};
use tern_runtime::args::{
    eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_NO_SUCH_KEY, ERR_SYNTAX, ERR_WRONGTYPE,
};
use tern_runtime::blocking::{self, BlockSpec, TimeoutReply};
use tern_runtime::ctx::Ctx;
use tern_runtime::keyspace_access::Typed;
use tern_runtime::notify;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "stream";
    ("xadd", -5, [WRITE DENYOOM FAST], [STREAM], [key(1, RW UPDATE)], xadd, "5.0.0",
        "Appends an entry to a stream, creating the stream when it is missing.",
        complexity: "O(1) per added entry, plus O(N) for the N entries a trimming option evicts.",
        tips: &["nondeterministic_output"]),
    ("xlen", 2, [READONLY FAST], [STREAM], [key(1, RO)], xlen, "5.0.0",
        "Returns how many entries a stream holds."),
    ("xrange", -4, [READONLY], [STREAM], [key(1, RO ACCESS)], xrange, "5.0.0",
        "Returns the stream entries whose IDs fall in a range.",
        complexity: "O(N), N being the number of entries returned (O(1) with a small COUNT)."),
    ("xrevrange", -4, [READONLY], [STREAM], [key(1, RO ACCESS)], xrevrange, "5.0.0",
        "Returns the stream entries whose IDs fall in a range, newest first.",
        complexity: "O(N), N being the number of entries returned (O(1) with a small COUNT)."),
    ("xdel", -3, [WRITE FAST], [STREAM], [key(1, RW DELETE)], xdel, "5.0.0",
        "Removes entries from a stream and returns how many were removed.",
        complexity: "O(1) per deleted entry, whatever the stream's size."),
    ("xtrim", -4, [WRITE], [STREAM], [key(1, RW DELETE)], xtrim, "5.0.0",
        "Removes the oldest entries of a stream by length or by minimum ID.",
        complexity: "O(N), N being the number of evicted entries (whole nodes go in one step).",
        tips: &["nondeterministic_output"]),
    ("xread", -4, [READONLY BLOCKING MOVABLE_KEYS], [STREAM],
        [keyword("STREAMS", 1, -1, 1, 2, RO ACCESS)], xread, "5.0.0",
        "Returns entries newer than given IDs from one or more streams, optionally waiting for them.",
        complexity: "O(M) per stream, M being the number of entries returned."),
    ("xreadgroup", -7, [WRITE BLOCKING MOVABLE_KEYS], [STREAM],
        [keyword("STREAMS", 4, -1, 1, 2, RO ACCESS)], xreadgroup, "5.0.0",
        "Reads new or pending entries of streams for a consumer of a consumer group, optionally waiting for new ones.",
        complexity: "O(M) per stream, M being the number of entries returned."),
    ("xsetid", -3, [WRITE DENYOOM FAST], [STREAM], [key(1, RW UPDATE)], xsetid, "5.0.0",
        "Sets a stream's last ID and counters (used for replication)."),
    ("xack", -4, [WRITE FAST], [STREAM], [key(1, RW UPDATE)], xack, "5.0.0",
        "Acknowledges pending entries of a consumer group and returns how many were acknowledged.",
        complexity: "O(1) per acknowledged ID."),
    ("xpending", -3, [READONLY], [STREAM], [key(1, RO ACCESS)], xpending, "5.0.0",
        "Returns a summary or the details of a consumer group's pending entries.",
        complexity: "O(N), N being the number of pending entries returned or scanned; the summary form is O(C) for C consumers.",
        tips: &["nondeterministic_output"]),
    ("xclaim", -6, [WRITE FAST], [STREAM], [key(1, RW UPDATE)], xclaim, "5.0.0",
        "Transfers pending entries of a consumer group to another consumer.",
        complexity: "O(log N) per ID, N being the size of the group's pending entries list.",
        tips: &["nondeterministic_output"]),
    ("xautoclaim", -6, [WRITE FAST], [STREAM], [key(1, RW DELETE)], xautoclaim, "6.2.0",
        "Transfers to a consumer the pending entries idle for long enough, scanning from an ID.",
        complexity: "O(1) with a small COUNT.", tips: &["nondeterministic_output"]),
    ("xgroup", -2, [], [], [], _, "5.0.0", "A container for consumer group commands.",
        complexity: "Depends on subcommand.", subcommands: XGROUP_SUBCOMMANDS),
    ("xinfo", -2, [], [], [], _, "5.0.0", "A container for stream introspection commands.",
        complexity: "Depends on subcommand.", subcommands: XINFO_SUBCOMMANDS),
};

static XGROUP_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "stream";
    ("create", -5, [WRITE DENYOOM], [STREAM], [key(2, RW INSERT)], xgroup, "5.0.0",
        "Creates a consumer group."),
    ("createconsumer", 5, [WRITE DENYOOM], [STREAM], [key(2, RW INSERT)], xgroup, "6.2.0",
        "Creates a consumer in a consumer group."),
    ("delconsumer", 5, [WRITE], [STREAM], [key(2, RW DELETE)], xgroup, "5.0.0",
        "Deletes a consumer from a consumer group."),
    ("destroy", 4, [WRITE], [STREAM], [key(2, RW DELETE)], xgroup, "5.0.0",
        "Destroys a consumer group.",
        complexity: "O(N), N being the number of entries in the group's pending entries list."),
    ("setid", -5, [WRITE], [STREAM], [key(2, RW UPDATE)], xgroup, "5.0.0",
        "Sets the last-delivered ID of a consumer group."),
    ("help", 2, [LOADING STALE], [STREAM], [], xgroup, "5.0.0",
        "Returns helpful text about the different subcommands."),
};

static XINFO_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "stream";
    ("consumers", 4, [READONLY], [STREAM], [key(2, RO ACCESS)], xinfo, "5.0.0",
        "Returns a list of the consumers in a consumer group.", tips: &["nondeterministic_output"]),
    ("groups", 3, [READONLY], [STREAM], [key(2, RO ACCESS)], xinfo, "5.0.0",
        "Returns a list of the consumer groups of a stream."),
    ("stream", -3, [READONLY], [STREAM], [key(2, RO ACCESS)], xinfo, "5.0.0",
        "Returns information about a stream."),
    ("help", 2, [LOADING STALE], [STREAM], [], xinfo, "5.0.0",
        "Returns helpful text about the different subcommands."),
};

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

const ERR_INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Redis's string2ull: a canonical non-negative integer, or what strtoull accepts when the
/// whole string is consumed (leading spaces, a sign, leading zeros).
fn parse_ull(s: &[u8]) -> Option<u64> {
    if let Some(n) = parse_i64(s) {
        return (n >= 0).then_some(n as u64);
    }
    let mut i = 0;
    while i < s.len() && is_whitespace(s[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Parse `<ms>[-<seq>]`, `-` and `+` (unless `strict`). With `seq_star` the `<ms>-*` form is
/// accepted; the boolean tells whether the sequence was given.
fn parse_id_full(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    seq_star: bool,
) -> Result<(StreamId, bool), &'static str> {
    if arg.len() > 127 {
        return Err(ERR_INVALID_ID);
    }
    // The C parser stops at a NUL byte.
    let arg = match arg.iter().position(|&c| c == 0) {
        Some(p) => &arg[..p],
        None => arg,
    };
    if arg == b"-" || arg == b"+" {
        if strict {
            return Err(ERR_INVALID_ID);
        }
        return Ok((
            if arg == b"-" {
                StreamId::MIN
            } else {
                StreamId::MAX
            },
            true,
        ));
    }
    let (ms_part, seq_part) = match arg.iter().position(|&c| c == b'-') {
        Some(p) => (&arg[..p], Some(&arg[p + 1..])),
        None => (arg, None),
    };
    let ms = parse_ull(ms_part).ok_or(ERR_INVALID_ID)?;
    match seq_part {
        Some(b"*") if seq_star => Ok((StreamId::new(ms, 0), false)),
        Some(s) => Ok((StreamId::new(ms, parse_ull(s).ok_or(ERR_INVALID_ID)?), true)),
        None => Ok((StreamId::new(ms, missing_seq), true)),
    }
}

fn parse_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, &'static str> {
    parse_id_full(arg, missing_seq, false, false).map(|r| r.0)
}

fn parse_strict_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, &'static str> {
    parse_id_full(arg, missing_seq, true, false).map(|r| r.0)
}

/// A range bound: `(` makes it exclusive (and then `-`/`+` are invalid).
fn parse_interval(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), &'static str> {
    if arg.len() > 1 && arg[0] == b'(' {
        Ok((parse_strict_id(&arg[1..], missing_seq)?, true))
    } else {
        Ok((parse_id(arg, missing_seq)?, false))
    }
}

/// Range start/end with exclusivity applied.
fn parse_range_start(arg: &[u8]) -> Result<StreamId, &'static str> {
    let (id, ex) = parse_interval(arg, 0)?;
    if ex {
        return id.incr().ok_or("ERR invalid start ID for the interval");
    }
    Ok(id)
}

fn parse_range_end(arg: &[u8]) -> Result<StreamId, &'static str> {
    let (id, ex) = parse_interval(arg, u64::MAX)?;
    if ex {
        return id.decr().ok_or("ERR invalid end ID for the interval");
    }
    Ok(id)
}

fn reply_id(ctx: &mut Ctx, id: StreamId) {
    let mut buf = itoa::Buffer::new();
    let mut s = Vec::with_capacity(42);
    s.extend_from_slice(buf.format(id.ms).as_bytes());
    s.push(b'-');
    s.extend_from_slice(buf.format(id.seq).as_bytes());
    ctx.out.bulk(&s);
}

fn reply_entry(ctx: &mut Ctx, e: &StreamEntry) {
    ctx.out.array(2);
    reply_id(ctx, e.id);
    ctx.out.array(e.item_count());
    for it in e.items() {
        ctx.out.bulk(it);
    }
}

fn as_stream(v: &mut Value) -> Option<&mut StreamValue> {
    match v {
        Value::Stream(s) => Some(s),
        _ => None,
    }
}

/// Look a stream up for a command that may change only its consumer groups or its IDs
/// (XREADGROUP, XACK, XCLAIM, XAUTOCLAIM, XGROUP, XSETID): Redis never signals those changes,
/// so they are no WATCH touch (declared to the WATCH checker as quiet changes).
fn get_group_state<'s>(
    shard: &'s mut ShardData,
    h: u64,
    key: &[u8],
    now: u64,
) -> Option<&'s mut Entry> {
    shard.quiet_change(key);
    shard.get_quiet(h, key, now)
}

/// XREAD's lookup (a read), or XREADGROUP's (`get_group_state`).
fn read_stream<'s>(
    shard: &'s mut ShardData,
    h: u64,
    key: &[u8],
    now: u64,
    group_mode: bool,
) -> Option<&'s mut Entry> {
    if group_mode {
        get_group_state(shard, h, key, now)
    } else {
        shard.get(h, key, now)
    }
}

fn subcommand_syntax_error(ctx: &mut Ctx, args: &Args) {
    let cmd = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    let sub: String = String::from_utf8_lossy(&args[1])
        .chars()
        .take(128)
        .collect();
    ctx.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try {cmd} HELP."
    ));
}

// ---------------------------------------------------------------------------------------------
// XADD XTRIM
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct AddTrimArgs {
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    no_mkstream: bool,
    id: Option<StreamId>,
    seq_given: bool,
    /// Index of the ID argument (XADD).
    idpos: usize,
    /// Index of the MAXLEN count / MINID id argument.
    trim_arg: usize,
}

/// `obey`: the AOF being replayed (Redis's mustObeyClient): a propagated exact trim may carry
/// LIMIT, and no LIMIT applies.
fn parse_add_trim(args: &Args, xadd: bool, obey: bool) -> Result<AddTrimArgs, &'static str> {
    const BOTH: &str =
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
    let mut p = AddTrimArgs {
        seq_given: true,
        ..Default::default()
    };
    let argc = args.len();
    let mut limit_given = false;
    let mut limit: i64 = 0;
    let mut i = 2;
    while i < argc {
        let more = argc - 1 - i;
        let opt = &args[i];
        if xadd && opt == b"*" {
            break;
        } else if eq_ic(opt, "maxlen") && more > 0 {
            if p.trim.is_some() {
                return Err(BOTH);
            }
            p.approx = false;
            let next = &args[i + 1];
            if more >= 2 && next == b"~" {
                p.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let n = parse_i64(&args[i + 1]).ok_or(ERR_NOT_INT)?;
            if n < 0 {
                return Err("ERR The MAXLEN argument must be >= 0.");
            }
            i += 1;
            p.trim_arg = i;
            p.trim = Some(Trim::MaxLen(n as u64));
        } else if eq_ic(opt, "minid") && more > 0 {
            if p.trim.is_some() {
                return Err(BOTH);
            }
            p.approx = false;
            let next = &args[i + 1];
            if more >= 2 && next == b"~" {
                p.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let id = parse_strict_id(&args[i + 1], 0)?;
            i += 1;
            p.trim_arg = i;
            p.trim = Some(Trim::MinId(id));
        } else if eq_ic(opt, "limit") && more > 0 {
            limit = parse_i64(&args[i + 1]).ok_or(ERR_NOT_INT)?;
            if limit < 0 {
                return Err("ERR The LIMIT argument must be >= 0.");
            }
            limit_given = true;
            i += 1;
        } else if xadd && eq_ic(opt, "nomkstream") {
            p.no_mkstream = true;
        } else if xadd {
            let (id, seq_given) = parse_id_full(opt, 0, true, true)?;
            p.id = Some(id);
            p.seq_given = seq_given;
            break;
        } else {
            return Err(ERR_SYNTAX);
        }
        i += 1;
    }
    p.idpos = i;
    if limit != 0 && p.trim.is_none() {
        return Err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        );
    }
    if !xadd && p.trim.is_none() {
        return Err("ERR syntax error, XTRIM must be called with a trimming strategy");
    }
    if obey {
        p.limit = 0;
    } else if limit_given {
        if !p.approx {
            return Err("ERR syntax error, LIMIT cannot be used without the special ~ option");
        }
        p.limit = limit as u64;
    } else if p.approx {
        let mut l = 100 * limits::get(&limits::STREAM_NODE_MAX_ENTRIES);
        if l <= 0 {
            l = 10000;
        }
        p.limit = l.min(1_000_000) as u64;
    } else {
        p.limit = 0;
    }
    Ok(p)
}

/// The replayable form of XADD/XTRIM: an approximate trim as the exact one it came to
/// (`= <length>` or `= <first id>`), and XADD's generated ID spelled out.
fn propagate_add_trim(
    ctx: &Ctx,
    args: &Args,
    p: &AddTrimArgs,
    s: &StreamValue,
    id: Option<StreamId>,
) {
    if !ctx.propagating() || (!p.approx && id.is_none()) {
        return;
    }
    let mut argv: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
    if p.approx {
        argv[p.trim_arg - 1] = b"=".to_vec();
        argv[p.trim_arg] = match p.trim {
            Some(Trim::MinId(_)) => s
                .first_entry()
                .map(|e| e.id)
                .unwrap_or(StreamId::MAX)
                .to_bytes(),
            _ => s.len().to_string().into_bytes(),
        };
    }
    if let Some(id) = id {
        argv[p.idpos] = id.to_bytes();
    }
    let refs: Vec<&[u8]> = argv.iter().map(|a| a.as_slice()).collect();
    ctx.propagate_as(&refs);
}

fn xadd(ctx: &mut Ctx, args: &Args) {
    let obey = tern_runtime::master_link::obeys(&ctx.conn.handle);
    let p = match parse_add_trim(args, true, obey) {
        Ok(p) => p,
        Err(e) => return ctx.error(e),
    };
    let field_pos = p.idpos + 1;
    let nfields = args.len() as isize - field_pos as isize;
    if nfields < 2 || nfields % 2 == 1 {
        return ctx.error("ERR wrong number of arguments for 'xadd' command");
    }
    if p.seq_given && p.id.is_some_and(|id| id.is_zero()) {
        return ctx.error("ERR The ID specified in XADD must be greater than 0-0");
    }
    let key = &args[1];
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    let exists = match ctx.typed::<PackedBox<StreamValue>>(shard.get_quiet(h, key, now)) {
        Typed::WrongType => return ctx.error(ERR_WRONGTYPE),
        Typed::Found(_) => true,
        Typed::Missing => false,
    };
    if !exists {
        if p.no_mkstream {
            return ctx.out.null();
        }
        // Created before the append, signalled (touched for WATCH) only once it succeeds.
        shard.set_quiet(h, key, Value::stream(StreamValue::default()), now);
    }
    let Some(s) = shard
        .get_quiet(h, key, now)
        .and_then(|e| as_stream(&mut e.value))
    else {
        return ctx.error(ERR_WRONGTYPE);
    };
    if s.last_id == StreamId::MAX {
        return ctx
            .error("ERR The stream has exhausted the last possible ID, unable to add more items");
    }
    let items: Vec<&[u8]> = (field_pos..args.len()).map(|i| &args[i]).collect();
    let id = match s.append(p.id, p.seq_given, &items, now) {
        Ok(id) => id,
        Err(AppendError::IdTooSmall) => {
            return ctx.error(
                "ERR The ID specified in XADD is equal or smaller than the target stream top item",
            )
        }
        Err(AppendError::TooLarge) => return ctx.error("ERR Elements are too large to be stored"),
    };
    let trimmed = match p.trim {
        Some(t) => s.trim(t, p.approx, p.limit),
        None => 0,
    };
    let generated = (p.id.is_none() || !p.seq_given).then_some(id);
    propagate_add_trim(ctx, args, &p, s, generated);
    shard.touch(key);
    drop(shard);
    reply_id(ctx, id);
    ctx.notify(notify::STREAM, "xadd", key);
    ctx.dirty(1);
    if trimmed > 0 {
        ctx.notify(notify::STREAM, "xtrim", key);
    }
}

fn xtrim(ctx: &mut Ctx, args: &Args) {
    let obey = tern_runtime::master_link::obeys(&ctx.conn.handle);
    let p = match parse_add_trim(args, false, obey) {
        Ok(p) => p,
        Err(e) => return ctx.error(e),
    };
    let key = &args[1];
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    let s = match ctx.typed::<PackedBox<StreamValue>>(shard.get_quiet(h, key, now)) {
        Typed::WrongType => return ctx.error(ERR_WRONGTYPE),
        Typed::Missing => return ctx.out.int(0),
        Typed::Found(s) => s,
    };
    let deleted = match p.trim {
        Some(t) => s.trim(t, p.approx, p.limit),
        None => 0,
    };
    propagate_add_trim(ctx, args, &p, s, None);
    if deleted > 0 {
        shard.touch(key);
    }
    drop(shard);
    if deleted > 0 {
        ctx.notify(notify::STREAM, "xtrim", key);
        ctx.dirty(deleted);
    }
    ctx.out.int(deleted as i64);
}

// ---------------------------------------------------------------------------------------------
// XLEN XRANGE XREVRANGE XDEL XSETID
// ---------------------------------------------------------------------------------------------

fn xlen(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    let r = match ctx.typed::<PackedBox<StreamValue>>(shard.get(h, key, now)) {
        Typed::Missing => None,
        Typed::WrongType => Some(Err(())),
        Typed::Found(s) => Some(Ok(s.len())),
    };
    drop(shard);
    ctx.hit(r.is_some(), key);
    match r {
        None => ctx.out.int(0),
        Some(Err(())) => ctx.error(ERR_WRONGTYPE),
        Some(Ok(n)) => ctx.out.int(n as i64),
    }
}

fn xrange(ctx: &mut Ctx, args: &Args) {
    xrange_generic(ctx, args, false)
}

fn xrevrange(ctx: &mut Ctx, args: &Args) {
    xrange_generic(ctx, args, true)
}

fn xrange_generic(ctx: &mut Ctx, args: &Args, rev: bool) {
    let (start_arg, end_arg) = if rev {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let start = match parse_range_start(start_arg) {
        Ok(id) => id,
        Err(e) => return ctx.error(e),
    };
    let end = match parse_range_end(end_arg) {
        Ok(id) => id,
        Err(e) => return ctx.error(e),
    };
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if eq_ic(&args[j], "COUNT") && j + 1 < args.len() {
            match parse_i64(&args[j + 1]) {
                Some(n) => count = n.max(0),
                None => return ctx.error(ERR_NOT_INT),
            }
            j += 2;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
    }
    let key = &args[1];
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    let s = match ctx.typed::<PackedBox<StreamValue>>(shard.get(h, key, now)) {
        Typed::Missing => {
            drop(shard);
            ctx.hit(false, key);
            return ctx.out.array(0);
        }
        Typed::WrongType => {
            drop(shard);
            ctx.hit(true, key);
            return ctx.error(ERR_WRONGTYPE);
        }
        Typed::Found(s) => s,
    };
    if count == 0 {
        ctx.out.null_array();
    } else {
        let limit = if count < 0 {
            usize::MAX
        } else {
            count as usize
        };
        let it = if rev {
            s.rev_range(start, end)
        } else {
            s.range(start, end)
        };
        let entries: Vec<&StreamEntry> = it.take(limit).collect();
        ctx.out.array(entries.len());
        for e in entries {
            reply_entry(ctx, e);
        }
    }
    drop(shard);
    ctx.hit(true, key);
}

fn xdel(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    let s = match ctx.typed::<PackedBox<StreamValue>>(shard.get_quiet(h, key, now)) {
        Typed::Missing => return ctx.out.int(0),
        Typed::WrongType => return ctx.error(ERR_WRONGTYPE),
        Typed::Found(s) => s,
    };
    let mut ids = Vec::with_capacity(args.len() - 2);
    for j in 2..args.len() {
        match parse_strict_id(&args[j], 0) {
            Ok(id) => ids.push(id),
            Err(e) => return ctx.error(e),
        }
    }
    let deleted = ids.into_iter().filter(|&id| s.delete(id)).count();
    if deleted > 0 {
        shard.touch(key);
    }
    drop(shard);
    if deleted > 0 {
        ctx.notify(notify::STREAM, "xdel", key);
        ctx.dirty(deleted as u64);
    }
    ctx.out.int(deleted as i64);
}

fn xsetid(ctx: &mut Ctx, args: &Args) {
    let id = match parse_strict_id(&args[2], 0) {
        Ok(id) => id,
        Err(e) => return ctx.error(e),
    };
    let mut entries_added: i64 = -1;
    let mut max_xdel = StreamId::MIN;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if eq_ic(&args[i], "ENTRIESADDED") && more > 0 {
            match parse_i64(&args[i + 1]) {
                None => return ctx.error(ERR_NOT_INT),
                Some(n) if n < 0 => return ctx.error("ERR entries_added must be positive"),
                Some(n) => entries_added = n,
            }
            i += 2;
        } else if eq_ic(&args[i], "MAXDELETEDID") && more > 0 {
            match parse_strict_id(&args[i + 1], 0) {
                Err(e) => return ctx.error(e),
                Ok(m) if id < m => {
                    return ctx.error(
                        "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                    )
                }
                Ok(m) => max_xdel = m,
            }
            i += 2;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
    }
    let key = &args[1];
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    let s = match ctx.typed::<PackedBox<StreamValue>>(get_group_state(&mut shard, h, key, now)) {
        Typed::Missing => return ctx.error(ERR_NO_SUCH_KEY),
        Typed::WrongType => return ctx.error(ERR_WRONGTYPE),
        Typed::Found(s) => s,
    };
    if id < s.max_deleted_entry_id {
        return ctx
            .error("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id");
    }
    if !s.is_empty() {
        if id < s.last_valid_id() {
            return ctx.error(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            );
        }
        if entries_added != -1 && s.len() as i64 > entries_added {
            return ctx.error(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            );
        }
    }
    s.last_id = id;
    if entries_added != -1 {
        s.entries_added = entries_added as u64;
    }
    if !max_xdel.is_zero() {
        s.max_deleted_entry_id = max_xdel;
    }
    drop(shard);
    ctx.out.ok();
    ctx.dirty(1);
    ctx.notify(notify::STREAM, "xsetid", key);
}

// ---------------------------------------------------------------------------------------------
// XREAD XREADGROUP
// ---------------------------------------------------------------------------------------------

fn xread(ctx: &mut Ctx, args: &Args) {
    xread_generic(ctx, args, false)
}

fn xreadgroup(ctx: &mut Ctx, args: &Args) {
    xread_generic(ctx, args, true)
}

/// What to serve from one stream.
enum Serve {
    Skip,
    /// Entries after this ID (XREAD, or XREADGROUP `>`).
    After(StreamId),
    /// The consumer's pending entries after this ID.
    History(StreamId),
}

fn xread_generic(ctx: &mut Ctx, args: &Args, group_mode: bool) {
    let argc = args.len();
    let mut deadline: Option<u64> = None;
    let mut count: usize = 0;
    let mut streams_arg = 0;
    let mut nstreams = 0;
    let mut group: Option<(&[u8], &[u8])> = None;
    let mut noack = false;
    let mut i = 1;
    while i < argc {
        let more = argc - 1 - i;
        let o = &args[i];
        if eq_ic(o, "BLOCK") && more > 0 {
            i += 1;
            match blocking::parse_timeout_ms(&args[i], ctx.now_ms) {
                Ok(d) => deadline = Some(d),
                Err(e) => return ctx.error(e),
            }
            if tern_runtime::lua::in_script() {
                return ctx.error(&format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    args.str(0)
                ));
            }
        } else if eq_ic(o, "COUNT") && more > 0 {
            i += 1;
            match parse_i64(&args[i]) {
                Some(n) => count = n.max(0) as usize,
                None => return ctx.error(ERR_NOT_INT),
            }
        } else if eq_ic(o, "STREAMS") && more > 0 {
            streams_arg = i + 1;
            let n = argc - streams_arg;
            if !n.is_multiple_of(2) {
                let (name, sym) = if group_mode {
                    ("xreadgroup", '>')
                } else {
                    ("xread", '$')
                };
                return ctx.error(&format!(
                    "ERR Unbalanced '{name}' list of streams: for each stream key an ID or '{sym}' must be specified."
                ));
            }
            nstreams = n / 2;
            break;
        } else if eq_ic(o, "GROUP") && more >= 2 {
            if !group_mode {
                return ctx
                    .error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
            }
            group = Some((&args[i + 1], &args[i + 2]));
            i += 2;
        } else if eq_ic(o, "NOACK") {
            if !group_mode {
                return ctx
                    .error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
            }
            noack = true;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
        i += 1;
    }
    if streams_arg == 0 {
        return ctx.error(ERR_SYNTAX);
    }
    if group_mode && group.is_none() {
        return ctx.error("ERR Missing GROUP option for XREADGROUP");
    }
    if group_mode {
        // XREADGROUP is propagated as the effects it had (XCLAIM, XGROUP SETID/CREATECONSUMER).
        ctx.prevent_propagation();
    }
    let serving = ctx.serving_blocked();
    let keys: Vec<&[u8]> = (0..nstreams).map(|j| &args[streams_arg + j]).collect();
    let (hashes, mut g) = ctx.lock_keys(keys.iter().copied());
    let db = ctx.conn.db;
    let now = ctx.now_ms;

    // Resolve the IDs, checking types and groups first (errors leave nothing changed).
    // `None` in `ids` is the `>` ID.
    let mut ids: Vec<Option<StreamId>> = Vec::with_capacity(nstreams);
    let mut dollar = false;
    for j in 0..nstreams {
        let key = keys[j];
        let id_arg = &args[streams_arg + nstreams + j];
        let shard = g.shard(db, hashes[j]);
        let found = ctx
            .typed::<PackedBox<StreamValue>>(read_stream(shard, hashes[j], key, now, group_mode));
        ctx.hit(!matches!(found, Typed::Missing), key);
        let s = match found {
            Typed::WrongType => {
                if serving && !group_mode {
                    drop(g);
                    return block_again(ctx, args, &keys, deadline, group_mode, None);
                }
                return ctx.error(ERR_WRONGTYPE);
            }
            Typed::Missing => None,
            Typed::Found(s) => Some(s),
        };
        if let Some((gname, _)) = group {
            if !s.as_ref().is_some_and(|s| s.groups.contains_key(gname)) {
                return ctx.error(&format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(gname)
                ));
            }
        }
        if id_arg == b"$" {
            if group_mode {
                return ctx.error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.");
            }
            dollar = true;
            ids.push(Some(s.map(|s| s.last_id).unwrap_or_default()));
            continue;
        } else if id_arg == b">" {
            if !group_mode {
                return ctx.error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.");
            }
            ids.push(None);
            continue;
        }
        match parse_strict_id(id_arg, 0) {
            Ok(id) => ids.push(Some(id)),
            Err(e) => return ctx.error(e),
        }
    }

    // Decide what each stream serves (and create consumers as Redis does).
    let mut plan: Vec<Serve> = Vec::with_capacity(nstreams);
    let mut created: Vec<usize> = Vec::new();
    for j in 0..nstreams {
        let shard = g.shard(db, hashes[j]);
        // Redis reads every stream a second time here (a second hit or miss and keymiss).
        let e = read_stream(shard, hashes[j], keys[j], now, group_mode);
        ctx.hit(e.is_some(), keys[j]);
        let Some(s) = e.and_then(|e| as_stream(&mut e.value)) else {
            plan.push(Serve::Skip);
            continue;
        };
        let mut serve = Serve::Skip;
        if let Some((gname, cname)) = group {
            let maxid = s.last_valid_id();
            let len = s.len();
            let grp = s.groups.get_mut(gname).expect("group checked");
            match ids[j] {
                Some(id) => serve = Serve::History(id),
                None => {
                    if len > 0 && maxid > grp.last_id {
                        serve = Serve::After(grp.last_id);
                    }
                }
            }
            let c = grp.consumers.entry(cname.into()).or_insert_with(|| {
                created.push(j);
                Consumer::new(now as i64)
            });
            c.seen_time = now as i64;
        } else if let Some(id) = ids[j] {
            if !s.is_empty() && s.last_valid_id() > id {
                serve = Serve::After(id);
            }
        }
        plan.push(serve);
    }
    for &j in &created {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", keys[j]);
        ctx.dirty(1);
        // With NOACK no XCLAIM will create the consumer on replay.
        if noack {
            if let Some((gname, cname)) = group {
                ctx.also_propagate(&[b"XGROUP", b"CREATECONSUMER", keys[j], gname, cname]);
            }
        }
    }
    let propagating = ctx.propagating();

    let served = plan.iter().filter(|p| !matches!(p, Serve::Skip)).count();
    if served == 0 {
        drop(g);
        if deadline.is_some() {
            let resolved = if dollar { Some(&ids) } else { None };
            return block_again(ctx, args, &keys, deadline, group_mode, resolved);
        }
        return ctx.out.null_array();
    }
    let resp3 = ctx.out.is_resp3();
    if resp3 {
        ctx.out.map(served);
    } else {
        ctx.out.array(served);
    }
    for j in 0..nstreams {
        let start = match plan[j] {
            Serve::Skip => continue,
            Serve::After(id) | Serve::History(id) => id.incr().unwrap_or(StreamId::MIN),
        };
        let history = matches!(plan[j], Serve::History(_));
        if !resp3 {
            ctx.out.array(2);
        }
        ctx.out.bulk(keys[j]);
        let shard = g.shard(db, hashes[j]);
        let s = read_stream(shard, hashes[j], keys[j], now, group_mode)
            .and_then(|e| as_stream(&mut e.value))
            .expect("stream checked");
        let limit = if count == 0 { usize::MAX } else { count };
        match group {
            None => {
                let entries: Vec<&StreamEntry> =
                    s.range(start, StreamId::MAX).take(limit).collect();
                ctx.out.array(entries.len());
                for e in entries {
                    reply_entry(ctx, e);
                }
            }
            Some((gname, cname)) if history => {
                serve_history(ctx, s, gname, cname, start, limit);
                ctx.dirty(1);
            }
            Some((gname, cname)) => {
                let ids: Vec<StreamId> = s
                    .range(start, StreamId::MAX)
                    .take(limit)
                    .map(|e| e.id)
                    .collect();
                let mut prop: Vec<Vec<Vec<u8>>> = Vec::new();
                let mut last_moved = false;
                for &id in &ids {
                    let before = s.groups.get(gname).map(|g| g.last_id);
                    s.advance_group(gname, id);
                    let grp = s.groups.get_mut(gname).expect("group checked");
                    last_moved |= before != Some(grp.last_id);
                    if !noack {
                        grp.assign(id, cname, now as i64);
                        if let Some(c) = grp.consumers.get_mut(cname) {
                            c.active_time = now as i64;
                        }
                        if propagating {
                            prop.push(xclaim_argv(keys[j], gname, &grp.pel[&id], id, grp.last_id));
                        }
                    }
                }
                if propagating && noack && last_moved {
                    let grp = s.groups.get(gname).expect("group checked");
                    prop.push(setid_argv(keys[j], gname, grp));
                }
                also_propagate_all(ctx, &prop);
                ctx.out.array(ids.len());
                for id in ids {
                    let e = s.get(id).expect("entry just read");
                    reply_entry(ctx, e);
                }
                ctx.dirty(1);
            }
        }
    }
}

/// XREADGROUP with an explicit ID: the consumer's own pending entries after `start`.
fn serve_history(
    ctx: &mut Ctx,
    s: &mut StreamValue,
    gname: &[u8],
    cname: &[u8],
    start: StreamId,
    limit: usize,
) {
    let now = ctx.now_ms as i64;
    let ids: Vec<StreamId> = s
        .groups
        .get(gname)
        .and_then(|g| g.consumers.get(cname))
        .map(|c| c.pel.range(start..).take(limit).copied().collect())
        .unwrap_or_default();
    ctx.out.array(ids.len());
    for id in ids {
        match s.get(id) {
            Some(e) => {
                reply_entry(ctx, e);
                if let Some(n) = s.groups.get_mut(gname).and_then(|g| g.pel.get_mut(&id)) {
                    n.delivery_time = now;
                    n.delivery_count += 1;
                }
            }
            None => {
                ctx.out.array(2);
                reply_id(ctx, id);
                ctx.out.null_array();
            }
        }
    }
}

/// Nothing to serve: wait (or, without BLOCK in serving mode, wait on).
fn block_again(
    ctx: &mut Ctx,
    args: &Args,
    keys: &[&[u8]],
    deadline: Option<u64>,
    group_mode: bool,
    resolved: Option<&Vec<Option<StreamId>>>,
) {
    let rewritten = resolved.map(|ids| {
        let mut v = args.to_vecs();
        let first_id = v.len() - ids.len();
        for (j, id) in ids.iter().enumerate() {
            if v[first_id + j] == b"$" {
                if let Some(id) = id {
                    v[first_id + j] = id.to_bytes();
                }
            }
        }
        v
    });
    ctx.block(BlockSpec {
        keys: keys.iter().map(|k| k.to_vec()).collect(),
        deadline_ms: deadline.unwrap_or(0),
        timeout_reply: TimeoutReply::NullArray,
        rewritten_args: rewritten,
        unblock_on_nokey: group_mode,
    });
}

// ---------------------------------------------------------------------------------------------
// XGROUP
// ---------------------------------------------------------------------------------------------

fn xgroup(ctx: &mut Ctx, args: &Args) {
    let argc = args.len();
    let opt = &args[1];
    if eq_ic(opt, "HELP") {
        if argc != 2 {
            return subcommand_syntax_error(ctx, args);
        }
        const LINES: &[&str] = &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ];
        return tern_runtime::ctx::reply_help(ctx, "XGROUP", LINES);
    }
    let create = eq_ic(opt, "CREATE");
    let setid = eq_ic(opt, "SETID");
    let mut mkstream = false;
    let mut entries_read = INVALID_ENTRIES_READ;
    let mut i = 5;
    while i < argc {
        if create && eq_ic(&args[i], "MKSTREAM") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && eq_ic(&args[i], "ENTRIESREAD") && i + 1 < argc {
            match parse_i64(&args[i + 1]) {
                None => return ctx.error(ERR_NOT_INT),
                Some(n) if n < 0 && n != INVALID_ENTRIES_READ => {
                    return ctx.error("ERR value for ENTRIESREAD must be positive or -1")
                }
                Some(n) => entries_read = n,
            }
            i += 2;
        } else {
            return subcommand_syntax_error(ctx, args);
        }
    }
    let key = &args[2];
    let gname: &[u8] = &args[3];
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    // Only MKSTREAM's creation of the stream is signalled (touched for WATCH), by `set`.
    let exists = match ctx.typed::<PackedBox<StreamValue>>(get_group_state(&mut shard, h, key, now))
    {
        Typed::WrongType => return ctx.error(ERR_WRONGTYPE),
        Typed::Missing => false,
        Typed::Found(_) => true,
    };
    if !mkstream {
        if !exists {
            return ctx.error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.");
        }
        let has_group = get_group_state(&mut shard, h, key, now)
            .and_then(|e| as_stream(&mut e.value))
            .is_some_and(|s| s.groups.contains_key(gname));
        if !has_group && (setid || eq_ic(opt, "CREATECONSUMER") || eq_ic(opt, "DELCONSUMER")) {
            return ctx.error(&format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                String::from_utf8_lossy(gname),
                String::from_utf8_lossy(key)
            ));
        }
    }
    if create && (5..=8).contains(&argc) {
        let id = if &args[4] == b"$" {
            get_group_state(&mut shard, h, key, now)
                .and_then(|e| as_stream(&mut e.value))
                .map(|s| s.last_id)
                .unwrap_or_default()
        } else {
            match parse_strict_id(&args[4], 0) {
                Ok(id) => id,
                Err(e) => return ctx.error(e),
            }
        };
        if !exists {
            shard.set(h, key, Value::stream(StreamValue::default()), false, now);
        }
        let s = get_group_state(&mut shard, h, key, now)
            .and_then(|e| as_stream(&mut e.value))
            .expect("stream exists");
        if s.groups.contains_key(gname) {
            return ctx.error("BUSYGROUP Consumer Group name already exists");
        }
        s.groups
            .insert(gname.into(), ConsumerGroup::new(id, entries_read));
        drop(shard);
        ctx.out.ok();
        ctx.dirty(1);
        ctx.notify(notify::STREAM, "xgroup-create", key);
        return;
    }
    let Some(s) = get_group_state(&mut shard, h, key, now).and_then(|e| as_stream(&mut e.value))
    else {
        return subcommand_syntax_error(ctx, args);
    };
    if setid && (argc == 5 || argc == 7) {
        let id = if &args[4] == b"$" {
            s.last_id
        } else {
            match parse_id(&args[4], 0) {
                Ok(id) => id,
                Err(e) => return ctx.error(e),
            }
        };
        let g = s.groups.get_mut(gname).expect("group checked");
        g.last_id = id;
        g.entries_read = entries_read;
        drop(shard);
        ctx.out.ok();
        ctx.dirty(1);
        ctx.notify(notify::STREAM, "xgroup-setid", key);
    } else if eq_ic(opt, "DESTROY") && argc == 4 {
        let removed = s.groups.remove(gname).is_some();
        drop(shard);
        if removed {
            ctx.out.int(1);
            ctx.dirty(1);
            ctx.notify(notify::STREAM, "xgroup-destroy", key);
        } else {
            ctx.out.int(0);
        }
    } else if eq_ic(opt, "CREATECONSUMER") && argc == 5 {
        let g = s.groups.get_mut(gname).expect("group checked");
        let cname: &[u8] = &args[4];
        let created = if g.consumers.contains_key(cname) {
            false
        } else {
            g.consumers.insert(cname.into(), Consumer::new(now as i64));
            true
        };
        drop(shard);
        if created {
            ctx.dirty(1);
            ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
        }
        ctx.out.int(created as i64);
    } else if eq_ic(opt, "DELCONSUMER") && argc == 5 {
        let g = s.groups.get_mut(gname).expect("group checked");
        let pending = g.delete_consumer(&args[4]);
        drop(shard);
        if pending.is_some() {
            ctx.dirty(1);
            ctx.notify(notify::STREAM, "xgroup-delconsumer", key);
        }
        ctx.out.int(pending.unwrap_or(0) as i64);
    } else {
        drop(shard);
        subcommand_syntax_error(ctx, args);
    }
}

// ---------------------------------------------------------------------------------------------
// XACK XPENDING XCLAIM XAUTOCLAIM
// ---------------------------------------------------------------------------------------------

fn nogroup(key: &[u8], group: &[u8]) -> String {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    )
}

fn xack(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let gname: &[u8] = &args[2];
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    let found = ctx.typed::<PackedBox<StreamValue>>(get_group_state(&mut shard, h, key, now));
    ctx.hit(!matches!(found, Typed::Missing), key);
    let g = match found {
        Typed::WrongType => return ctx.error(ERR_WRONGTYPE),
        Typed::Missing => None,
        Typed::Found(s) => s.groups.get_mut(gname),
    };
    let Some(g) = g else {
        return ctx.out.int(0);
    };
    let mut ids = Vec::with_capacity(args.len() - 3);
    for j in 3..args.len() {
        match parse_strict_id(&args[j], 0) {
            Ok(id) => ids.push(id),
            Err(e) => return ctx.error(e),
        }
    }
    let acked = ids.into_iter().filter(|&id| g.ack(id)).count();
    drop(shard);
    ctx.dirty(acked as u64);
    ctx.out.int(acked as i64);
}

fn xpending(ctx: &mut Ctx, args: &Args) {
    let argc = args.len();
    let key = &args[1];
    let gname: &[u8] = &args[2];
    if argc != 3 && !(6..=9).contains(&argc) {
        return ctx.error(ERR_SYNTAX);
    }
    let mut start = StreamId::MIN;
    let mut end = StreamId::MAX;
    let mut count: i64 = 0;
    let mut minidle: i64 = 0;
    let mut consumer: Option<&[u8]> = None;
    if argc >= 6 {
        let mut si = 3;
        if eq_ic(&args[3], "IDLE") {
            match parse_i64(&args[4]) {
                Some(n) => minidle = n,
                None => return ctx.error(ERR_NOT_INT),
            }
            if argc < 8 {
                return ctx.error(ERR_SYNTAX);
            }
            si += 2;
        }
        match parse_i64(&args[si + 2]) {
            Some(n) => count = n.max(0),
            None => return ctx.error(ERR_NOT_INT),
        }
        start = match parse_range_start(&args[si]) {
            Ok(id) => id,
            Err(e) => return ctx.error(e),
        };
        end = match parse_range_end(&args[si + 1]) {
            Ok(id) => id,
            Err(e) => return ctx.error(e),
        };
        if si + 3 < argc {
            consumer = Some(&args[si + 3]);
        }
    }
    let now = ctx.now_ms as i64;
    let (h, mut shard) = ctx.lock(key);
    let found = ctx.typed::<PackedBox<StreamValue>>(shard.get(h, key, now as u64));
    ctx.hit(!matches!(found, Typed::Missing), key);
    let g = match found {
        Typed::WrongType => return ctx.error(ERR_WRONGTYPE),
        Typed::Missing => None,
        Typed::Found(s) => s.groups.get(gname),
    };
    let Some(g) = g else {
        return ctx.error(&nogroup(key, gname));
    };
    if argc == 3 {
        ctx.out.array(4);
        ctx.out.int(g.pel.len() as i64);
        if g.pel.is_empty() {
            ctx.out.null();
            ctx.out.null();
            ctx.out.null_array();
        } else {
            reply_id(ctx, *g.pel.keys().next().expect("non-empty"));
            reply_id(ctx, *g.pel.keys().next_back().expect("non-empty"));
            let owners: Vec<(&Box<[u8]>, usize)> = g
                .consumers
                .iter()
                .filter(|(_, c)| !c.pel.is_empty())
                .map(|(n, c)| (n, c.pel.len()))
                .collect();
            ctx.out.array(owners.len());
            for (n, len) in owners {
                ctx.out.array(2);
                ctx.out.bulk(n);
                ctx.out.bulk_int(len as i64);
            }
        }
        return;
    }
    let mut rows: Vec<(StreamId, &Nack)> = Vec::new();
    if start <= end && count > 0 {
        let ids: Box<dyn Iterator<Item = StreamId>> = match consumer {
            Some(c) => match g.consumers.get(c) {
                Some(c) => Box::new(c.pel.range(start..=end).copied()),
                None => return ctx.out.array(0),
            },
            None => Box::new(g.pel.range(start..=end).map(|(id, _)| *id)),
        };
        for id in ids {
            let Some(n) = g.pel.get(&id) else { continue };
            if minidle != 0 && now - n.delivery_time < minidle {
                continue;
            }
            rows.push((id, n));
            if rows.len() as i64 >= count {
                break;
            }
        }
    } else if let Some(c) = consumer {
        if !g.consumers.contains_key(c) {
            return ctx.out.array(0);
        }
    }
    ctx.out.array(rows.len());
    for (id, n) in rows {
        ctx.out.array(4);
        reply_id(ctx, id);
        ctx.out.bulk(&n.consumer);
        ctx.out.int((now - n.delivery_time).max(0));
        ctx.out.int(n.delivery_count as i64);
    }
}

/// Redis's streamPropagateXCLAIM: the idempotent XCLAIM that gives pending entry `id` the
/// state `nack` describes (owner, delivery time and count) and the group its last ID.
fn xclaim_argv(
    key: &[u8],
    gname: &[u8],
    nack: &Nack,
    id: StreamId,
    group_last: StreamId,
) -> Vec<Vec<u8>> {
    vec![
        b"XCLAIM".to_vec(),
        key.to_vec(),
        gname.to_vec(),
        nack.consumer.to_vec(),
        b"0".to_vec(),
        id.to_bytes(),
        b"TIME".to_vec(),
        nack.delivery_time.to_string().into_bytes(),
        b"RETRYCOUNT".to_vec(),
        nack.delivery_count.to_string().into_bytes(),
        b"FORCE".to_vec(),
        b"JUSTID".to_vec(),
        b"LASTID".to_vec(),
        group_last.to_bytes(),
    ]
}

/// XGROUP SETID <key> <group> <last id> ENTRIESREAD <n>, as Redis propagates a group's new
/// last-delivered ID that no XCLAIM carried.
fn setid_argv(key: &[u8], gname: &[u8], g: &ConsumerGroup) -> Vec<Vec<u8>> {
    vec![
        b"XGROUP".to_vec(),
        b"SETID".to_vec(),
        key.to_vec(),
        gname.to_vec(),
        g.last_id.to_bytes(),
        b"ENTRIESREAD".to_vec(),
        g.entries_read.to_string().into_bytes(),
    ]
}

fn also_propagate_all(ctx: &Ctx, cmds: &[Vec<Vec<u8>>]) {
    for c in cmds {
        let argv: Vec<&[u8]> = c.iter().map(|a| a.as_slice()).collect();
        ctx.also_propagate(&argv);
    }
}

/// Look up key and group for XCLAIM/XAUTOCLAIM; Err is the error to reply.
fn claim_target<'e>(
    ctx: &mut Ctx,
    e: Option<&'e mut Entry>,
    key: &[u8],
    gname: &[u8],
) -> Result<&'e mut StreamValue, String> {
    let found = ctx.typed::<PackedBox<StreamValue>>(e);
    ctx.hit(!matches!(found, Typed::Missing), key);
    claim_check(found, key, gname)
}

/// The stream and group XCLAIM/XAUTOCLAIM work on, from their (counted) lookup.
fn claim_check<'e>(
    found: Typed<'e, PackedBox<StreamValue>>,
    key: &[u8],
    gname: &[u8],
) -> Result<&'e mut StreamValue, String> {
    match found {
        Typed::WrongType => Err(ERR_WRONGTYPE.to_string()),
        Typed::Found(s) if s.groups.contains_key(gname) => Ok(s),
        _ => Err(nogroup(key, gname)),
    }
}

/// Make sure the consumer exists (notifying its creation) and mark it seen.
fn ensure_consumer(ctx: &mut Ctx, s: &mut StreamValue, gname: &[u8], cname: &[u8], key: &[u8]) {
    let now = ctx.now_ms as i64;
    let g = s.groups.get_mut(gname).expect("group checked");
    if !g.consumers.contains_key(cname) {
        g.consumers.insert(cname.into(), Consumer::new(now));
        ctx.dirty(1);
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    if let Some(c) = g.consumers.get_mut(cname) {
        c.seen_time = now;
    }
}

/// Give pending entry `id` to `cname`; the caller checked that it exists in the group PEL.
fn claim_one(
    g: &mut ConsumerGroup,
    id: StreamId,
    cname: &[u8],
    delivery_time: i64,
    retry: Option<u64>,
    justid: bool,
) {
    let n = g.pel.get_mut(&id).expect("pending entry");
    if &*n.consumer != cname {
        if let Some(old) = g.consumers.get_mut(&n.consumer) {
            old.pel.remove(&id);
        }
        n.consumer = cname.into();
    }
    n.delivery_time = delivery_time;
    match retry {
        Some(r) => n.delivery_count = r,
        None if !justid => n.delivery_count += 1,
        None => {}
    }
    if let Some(c) = g.consumers.get_mut(cname) {
        c.pel.insert(id);
    }
}

fn xclaim(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let gname: &[u8] = &args[2];
    let cname: &[u8] = &args[3];
    let now = ctx.now_ms as i64;
    let (h, mut shard) = ctx.lock(key);
    let s = match claim_target(
        ctx,
        get_group_state(&mut shard, h, key, now as u64),
        key,
        gname,
    ) {
        Ok(s) => s,
        Err(e) => return ctx.error(&e),
    };
    let minidle = match parse_i64(&args[4]) {
        Some(n) => n.max(0),
        None => return ctx.error("ERR Invalid min-idle-time argument for XCLAIM"),
    };
    let mut ids = Vec::new();
    let mut j = 5;
    while j < args.len() {
        match parse_strict_id(&args[j], 0) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let mut force = false;
    let mut justid = false;
    let mut delivery: Option<i64> = None;
    let mut retry: Option<u64> = None;
    let mut last_id = StreamId::MIN;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = &args[j];
        if eq_ic(opt, "FORCE") {
            force = true;
        } else if eq_ic(opt, "JUSTID") {
            justid = true;
        } else if eq_ic(opt, "IDLE") && more > 0 {
            j += 1;
            match parse_i64(&args[j]) {
                Some(n) => delivery = Some(now.wrapping_sub(n)),
                None => return ctx.error("ERR Invalid IDLE option argument for XCLAIM"),
            }
        } else if eq_ic(opt, "TIME") && more > 0 {
            j += 1;
            match parse_i64(&args[j]) {
                Some(n) => delivery = Some(n),
                None => return ctx.error("ERR Invalid TIME option argument for XCLAIM"),
            }
        } else if eq_ic(opt, "RETRYCOUNT") && more > 0 {
            j += 1;
            match parse_i64(&args[j]) {
                Some(n) => retry = (n >= 0).then_some(n as u64),
                None => return ctx.error("ERR Invalid RETRYCOUNT option argument for XCLAIM"),
            }
        } else if eq_ic(opt, "LASTID") && more > 0 {
            j += 1;
            match parse_strict_id(&args[j], 0) {
                Ok(id) => last_id = id,
                Err(e) => return ctx.error(e),
            }
        } else {
            return ctx.error(&format!(
                "ERR Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(opt)
            ));
        }
        j += 1;
    }
    let mut dirty = 0u64;
    // A moved last-delivered ID counts as a change only when nothing else was claimed.
    let mut moved_last_id = false;
    {
        let g = s.groups.get_mut(gname).expect("group checked");
        if last_id > g.last_id {
            g.last_id = last_id;
            moved_last_id = true;
        }
    }
    let delivery_time = match delivery {
        Some(d) if d < 0 || d > now => now,
        Some(d) => d,
        None => now,
    };
    ensure_consumer(ctx, s, gname, cname, key);
    // Propagated as one idempotent XCLAIM per entry changed (never as sent).
    let propagating = ctx.propagating();
    let mut prop: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut claimed: Vec<StreamId> = Vec::new();
    for id in ids {
        let exists = s.contains(id);
        let g = s.groups.get_mut(gname).expect("group checked");
        let pending = g.pel.contains_key(&id);
        if !exists {
            if pending {
                if propagating {
                    prop.push(xclaim_argv(key, gname, &g.pel[&id], id, g.last_id));
                }
                g.ack(id);
                dirty += 1;
                moved_last_id = false;
            }
            continue;
        }
        let mut fresh = false;
        if force && !pending {
            g.pel.insert(
                id,
                Nack {
                    consumer: Box::default(),
                    delivery_time: now,
                    delivery_count: 1,
                },
            );
            fresh = true;
        } else if !pending {
            continue;
        }
        if !fresh && minidle > 0 {
            let n = &g.pel[&id];
            if now - n.delivery_time < minidle {
                continue;
            }
        }
        if fresh {
            // A forced entry has no previous owner to take it from.
            let n = g.pel.get_mut(&id).expect("just inserted");
            n.consumer = cname.into();
            n.delivery_time = delivery_time;
            match retry {
                Some(r) => n.delivery_count = r,
                None if !justid => n.delivery_count += 1,
                None => {}
            }
            if let Some(c) = g.consumers.get_mut(cname) {
                c.pel.insert(id);
            }
        } else {
            claim_one(g, id, cname, delivery_time, retry, justid);
        }
        if let Some(c) = g.consumers.get_mut(cname) {
            c.active_time = now;
        }
        if propagating {
            prop.push(xclaim_argv(key, gname, &g.pel[&id], id, g.last_id));
        }
        claimed.push(id);
        moved_last_id = false;
        dirty += 1;
    }
    if moved_last_id {
        dirty += 1;
        if propagating {
            let g = s.groups.get(gname).expect("group checked");
            prop.push(setid_argv(key, gname, g));
        }
    }
    also_propagate_all(ctx, &prop);
    ctx.prevent_propagation();
    ctx.out.array(claimed.len());
    for id in claimed {
        if justid {
            reply_id(ctx, id);
        } else {
            let e = s.get(id).expect("claimed entries exist");
            reply_entry(ctx, e);
        }
    }
    drop(shard);
    if dirty > 0 {
        ctx.dirty(dirty);
    }
}

fn xautoclaim(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let gname: &[u8] = &args[2];
    let cname: &[u8] = &args[3];
    // Redis looks the key up before it parses the arguments: an argument error still
    // counts the read (and its keymiss); the type and the group are checked after them.
    let now = ctx.now_ms as i64;
    let (h, mut shard) = ctx.lock(key);
    let found =
        ctx.typed::<PackedBox<StreamValue>>(get_group_state(&mut shard, h, key, now as u64));
    ctx.hit(!matches!(found, Typed::Missing), key);
    let minidle = match parse_i64(&args[4]) {
        Some(n) => n.max(0),
        None => return ctx.error("ERR Invalid min-idle-time argument for XAUTOCLAIM"),
    };
    let (start, ex) = match parse_interval(&args[5], 0) {
        Ok(r) => r,
        Err(e) => return ctx.error(e),
    };
    let start = if ex {
        match start.incr() {
            Some(id) => id,
            None => return ctx.error("ERR invalid start ID for the interval"),
        }
    } else {
        start
    };
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if eq_ic(&args[j], "COUNT") && more > 0 {
            const MAX_COUNT: i64 = i64::MAX / 16;
            match parse_i64(&args[j + 1]) {
                Some(n) if (1..=MAX_COUNT).contains(&n) => count = n,
                _ => return ctx.error("ERR COUNT must be > 0"),
            }
            j += 1;
        } else if eq_ic(&args[j], "JUSTID") {
            justid = true;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
        j += 1;
    }
    let s = match claim_check(found, key, gname) {
        Ok(s) => s,
        Err(e) => {
            drop(shard);
            return ctx.error(&e);
        }
    };
    ensure_consumer(ctx, s, gname, cname, key);
    let mut attempts = count.saturating_mul(10);
    let mut cursor = Some(start);
    let mut claimed: Vec<StreamId> = Vec::new();
    let mut deleted: Vec<StreamId> = Vec::new();
    let mut dirty = 0u64;
    let propagating = ctx.propagating();
    let mut prop: Vec<Vec<Vec<u8>>> = Vec::new();
    while attempts > 0 && count > 0 {
        attempts -= 1;
        let Some(from) = cursor else { break };
        let Some(id) = s
            .groups
            .get(gname)
            .and_then(|g| g.pel.range(from..).next().map(|(id, _)| *id))
        else {
            cursor = None;
            break;
        };
        cursor = id.incr();
        let exists = s.contains(id);
        let g = s.groups.get_mut(gname).expect("group checked");
        if !exists {
            if propagating {
                prop.push(xclaim_argv(key, gname, &g.pel[&id], id, g.last_id));
            }
            g.ack(id);
            deleted.push(id);
            dirty += 1;
            count -= 1;
            continue;
        }
        if minidle > 0 && now - g.pel[&id].delivery_time < minidle {
            continue;
        }
        claim_one(g, id, cname, now, None, justid);
        if let Some(c) = g.consumers.get_mut(cname) {
            c.active_time = now;
        }
        if propagating {
            prop.push(xclaim_argv(key, gname, &g.pel[&id], id, g.last_id));
        }
        claimed.push(id);
        count -= 1;
        dirty += 1;
    }
    also_propagate_all(ctx, &prop);
    ctx.prevent_propagation();
    let next = cursor
        .and_then(|from| {
            s.groups
                .get(gname)
                .and_then(|g| g.pel.range(from..).next().map(|(id, _)| *id))
        })
        .unwrap_or(StreamId::MIN);
    ctx.out.array(3);
    reply_id(ctx, next);
    ctx.out.array(claimed.len());
    for id in claimed {
        if justid {
            reply_id(ctx, id);
        } else {
            let e = s.get(id).expect("claimed entries exist");
            reply_entry(ctx, e);
        }
    }
    ctx.out.array(deleted.len());
    for id in deleted {
        reply_id(ctx, id);
    }
    drop(shard);
    ctx.dirty(dirty);
}

// ---------------------------------------------------------------------------------------------
// XINFO
// ---------------------------------------------------------------------------------------------

fn xinfo(ctx: &mut Ctx, args: &Args) {
    let opt = &args[1];
    if eq_ic(opt, "HELP") {
        const LINES: &[&str] = &[
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ];
        return tern_runtime::ctx::reply_help(ctx, "XINFO", LINES);
    }
    let key = &args[2];
    let now = ctx.now_ms as i64;
    let (h, mut shard) = ctx.lock(key);
    let found = ctx.typed::<PackedBox<StreamValue>>(shard.get(h, key, now as u64));
    ctx.hit(!matches!(found, Typed::Missing), key);
    let s = match found {
        Typed::Missing => return ctx.error(ERR_NO_SUCH_KEY),
        Typed::WrongType => return ctx.error(ERR_WRONGTYPE),
        Typed::Found(s) => s,
    };
    if eq_ic(opt, "CONSUMERS") && args.len() == 4 {
        let gname: &[u8] = &args[3];
        let Some(g) = s.groups.get(gname) else {
            return ctx.error(&format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                String::from_utf8_lossy(gname),
                String::from_utf8_lossy(key)
            ));
        };
        ctx.out.array(g.consumers.len());
        for (name, c) in &g.consumers {
            let inactive = if c.active_time != -1 {
                now - c.active_time
            } else {
                -1
            };
            ctx.out.map(4);
            ctx.out.bulk(b"name");
            ctx.out.bulk(name);
            ctx.out.bulk(b"pending");
            ctx.out.int(c.pel.len() as i64);
            ctx.out.bulk(b"idle");
            ctx.out.int((now - c.seen_time).max(0));
            ctx.out.bulk(b"inactive");
            ctx.out.int(inactive);
        }
    } else if eq_ic(opt, "GROUPS") && args.len() == 3 {
        ctx.out.array(s.groups.len());
        for (name, g) in &s.groups {
            ctx.out.map(6);
            ctx.out.bulk(b"name");
            ctx.out.bulk(name);
            ctx.out.bulk(b"consumers");
            ctx.out.int(g.consumers.len() as i64);
            ctx.out.bulk(b"pending");
            ctx.out.int(g.pel.len() as i64);
            ctx.out.bulk(b"last-delivered-id");
            reply_id(ctx, g.last_id);
            reply_group_counters(ctx, s, g);
        }
    } else if eq_ic(opt, "STREAM") {
        xinfo_stream(ctx, args, s);
    } else {
        drop(shard);
        subcommand_syntax_error(ctx, args);
    }
}

/// `entries-read` and `lag` of a group.
fn reply_group_counters(ctx: &mut Ctx, s: &StreamValue, g: &ConsumerGroup) {
    ctx.out.bulk(b"entries-read");
    if g.entries_read != INVALID_ENTRIES_READ {
        ctx.out.int(g.entries_read);
    } else {
        ctx.out.null();
    }
    ctx.out.bulk(b"lag");
    match s.group_lag(g) {
        Some(l) => ctx.out.int(l),
        None => ctx.out.null(),
    }
}

fn xinfo_stream(ctx: &mut Ctx, args: &Args, s: &StreamValue) {
    let optc = args.len() - 3;
    let mut full = true;
    let mut count: i64 = 10;
    if optc == 0 {
        full = false;
    } else {
        if (optc != 1 && optc != 3) || !eq_ic(&args[3], "FULL") {
            return subcommand_syntax_error(ctx, args);
        }
        if optc == 3 {
            if !eq_ic(&args[4], "COUNT") {
                return subcommand_syntax_error(ctx, args);
            }
            match parse_i64(&args[5]) {
                Some(n) => count = if n < 0 { 10 } else { n },
                None => return ctx.error(ERR_NOT_INT),
            }
        }
    }
    let limit = if count == 0 {
        usize::MAX
    } else {
        count as usize
    };
    let keys = s.node_count();
    ctx.out.map(if full { 9 } else { 10 });
    ctx.out.bulk(b"length");
    ctx.out.int(s.len() as i64);
    ctx.out.bulk(b"radix-tree-keys");
    ctx.out.int(keys as i64);
    ctx.out.bulk(b"radix-tree-nodes");
    // Redis counts its radix tree's internal nodes; a comparable figure for ours.
    ctx.out.int(if keys == 0 { 1 } else { (keys * 2) as i64 });
    ctx.out.bulk(b"last-generated-id");
    reply_id(ctx, s.last_id);
    ctx.out.bulk(b"max-deleted-entry-id");
    reply_id(ctx, s.max_deleted_entry_id);
    ctx.out.bulk(b"entries-added");
    ctx.out.int(s.entries_added as i64);
    ctx.out.bulk(b"recorded-first-entry-id");
    reply_id(ctx, s.first_id);
    if !full {
        ctx.out.bulk(b"groups");
        ctx.out.int(s.groups.len() as i64);
        ctx.out.bulk(b"first-entry");
        match s.first_entry() {
            Some(e) => reply_entry(ctx, e),
            None => ctx.out.null(),
        }
        ctx.out.bulk(b"last-entry");
        match s.last_entry() {
            Some(e) => reply_entry(ctx, e),
            None => ctx.out.null(),
        }
        return;
    }
    ctx.out.bulk(b"entries");
    let entries: Vec<&StreamEntry> = s.range(StreamId::MIN, StreamId::MAX).take(limit).collect();
    ctx.out.array(entries.len());
    for e in entries {
        reply_entry(ctx, e);
    }
    ctx.out.bulk(b"groups");
    ctx.out.array(s.groups.len());
    for (name, g) in &s.groups {
        ctx.out.map(7);
        ctx.out.bulk(b"name");
        ctx.out.bulk(name);
        ctx.out.bulk(b"last-delivered-id");
        reply_id(ctx, g.last_id);
        reply_group_counters(ctx, s, g);
        ctx.out.bulk(b"pel-count");
        ctx.out.int(g.pel.len() as i64);
        ctx.out.bulk(b"pending");
        let n = g.pel.len().min(limit);
        ctx.out.array(n);
        for (id, nack) in g.pel.iter().take(n) {
            ctx.out.array(4);
            reply_id(ctx, *id);
            ctx.out.bulk(&nack.consumer);
            ctx.out.int(nack.delivery_time);
            ctx.out.int(nack.delivery_count as i64);
        }
        ctx.out.bulk(b"consumers");
        ctx.out.array(g.consumers.len());
        for (cname, c) in &g.consumers {
            ctx.out.map(5);
            ctx.out.bulk(b"name");
            ctx.out.bulk(cname);
            ctx.out.bulk(b"seen-time");
            ctx.out.int(c.seen_time);
            ctx.out.bulk(b"active-time");
            ctx.out.int(c.active_time);
            ctx.out.bulk(b"pel-count");
            ctx.out.int(c.pel.len() as i64);
            ctx.out.bulk(b"pending");
            let n = c.pel.len().min(limit);
            ctx.out.array(n);
            for id in c.pel.iter().take(n) {
                let nack = g.pel.get(id);
                ctx.out.array(3);
                reply_id(ctx, *id);
                ctx.out.int(nack.map_or(0, |n| n.delivery_time));
                ctx.out.int(nack.map_or(0, |n| n.delivery_count as i64));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_parsing() {
        assert_eq!(parse_id(b"1-2", 0), Ok(StreamId::new(1, 2)));
        assert_eq!(parse_id(b"5", 7), Ok(StreamId::new(5, 7)));
        assert_eq!(parse_id(b"-", 0), Ok(StreamId::MIN));
        assert_eq!(parse_id(b"+", 0), Ok(StreamId::MAX));
        assert!(parse_strict_id(b"+", 0).is_err());
        assert!(parse_id(b"1-x", 0).is_err());
        assert!(parse_id(b"-1", 0).is_err());
        assert_eq!(parse_id(b"01-02", 0), Ok(StreamId::new(1, 2)));
        assert_eq!(
            parse_id(b"18446744073709551615-18446744073709551615", 0),
            Ok(StreamId::MAX)
        );
        assert!(parse_id(b"18446744073709551616", 0).is_err());
        assert_eq!(
            parse_id_full(b"5-*", 0, true, true),
            Ok((StreamId::new(5, 0), false))
        );
        assert!(parse_id_full(b"5-*", 0, true, false).is_err());
        assert_eq!(parse_interval(b"(5-1", 0), Ok((StreamId::new(5, 1), true)));
        assert!(parse_interval(b"(+", 0).is_err());
    }
}

//! List commands, blocking pops included.
use tern_engine::listpack::LpEntry;
use tern_engine::{ListValue, ShardData, Value};
use tern_resp::Reply;
use tern_runtime::args::{
    eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_NO_SUCH_KEY, ERR_SYNTAX, ERR_WRONGTYPE,
};
use tern_runtime::blocking::{parse_timeout_secs, BlockSpec, TimeoutReply};
use tern_runtime::ctx::Ctx;
use tern_runtime::keyspace_access::Typed;
use tern_runtime::notify;
use tern_runtime::table::CommandSpec;

const ERR_INDEX_RANGE: &str = "ERR index out of range";
const ERR_POSITIVE: &str = "ERR value is out of range, must be positive";

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "list";
    ("lpush", -3, [WRITE DENYOOM FAST], [LIST], [key(1, RW INSERT)], lpush, "1.0.0",
        "Prepends one or more elements to a list. Creates the key if it doesn't exist.",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."),
    ("rpush", -3, [WRITE DENYOOM FAST], [LIST], [key(1, RW INSERT)], rpush, "1.0.0",
        "Appends one or more elements to a list. Creates the key if it doesn't exist.",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."),
    ("lpushx", -3, [WRITE DENYOOM FAST], [LIST], [key(1, RW INSERT)], lpushx, "2.2.0",
        "Prepends one or more elements to a list only when the list exists.",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."),
    ("rpushx", -3, [WRITE DENYOOM FAST], [LIST], [key(1, RW INSERT)], rpushx, "2.2.0",
        "Appends an element to a list only when the list exists.",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."),
    ("lpop", -2, [WRITE FAST], [LIST], [key(1, RW ACCESS DELETE)], lpop, "1.0.0",
        "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.",
        complexity: "O(N) where N is the number of elements returned"),
    ("rpop", -2, [WRITE FAST], [LIST], [key(1, RW ACCESS DELETE)], rpop, "1.0.0",
        "Returns and removes the last elements of a list. Deletes the list if the last element was popped.",
        complexity: "O(N) where N is the number of elements returned"),
    ("llen", 2, [READONLY FAST], [LIST], [key(1, RO)], llen, "1.0.0",
        "Returns the length of a list."),
    ("lrange", 4, [READONLY], [LIST], [key(1, RO ACCESS)], lrange, "1.0.0",
        "Returns a range of elements from a list.",
        complexity: "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range."),
    ("lindex", 3, [READONLY], [LIST], [key(1, RO ACCESS)], lindex, "1.0.0",
        "Returns an element from a list by its index.",
        complexity: "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1)."),
    ("lset", 4, [WRITE DENYOOM], [LIST], [key(1, RW UPDATE)], lset, "1.0.0",
        "Sets the value of an element in a list by its index.",
        complexity: "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1)."),
    ("linsert", 5, [WRITE DENYOOM], [LIST], [key(1, RW INSERT)], linsert, "2.2.0",
        "Inserts an element before or after another element in a list.",
        complexity: "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N)."),
    ("lrem", 4, [WRITE], [LIST], [key(1, RW DELETE)], lrem, "1.0.0",
        "Removes elements from a list. Deletes the list if the last element was removed.",
        complexity: "O(N+M) where N is the length of the list and M is the number of elements removed."),
    ("ltrim", 4, [WRITE], [LIST], [key(1, RW DELETE)], ltrim, "1.0.0",
        "Removes elements from both ends a list. Deletes the list if all elements were trimmed.",
        complexity: "O(N) where N is the number of elements to be removed by the operation."),
    ("lpos", -3, [READONLY], [LIST], [key(1, RO ACCESS)], lpos, "6.0.6",
        "Returns the index of matching elements in a list.",
        complexity: "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time."),
    ("lmove", 5, [WRITE DENYOOM], [LIST], [key(1, RW ACCESS DELETE), key(2, RW INSERT)], lmove,
        "6.2.0",
        "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved."),
    ("rpoplpush", 3, [WRITE DENYOOM], [LIST], [key(1, RW ACCESS DELETE), key(2, RW INSERT)],
        rpoplpush, "1.2.0",
        "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped."),
    ("lmpop", -4, [WRITE], [LIST], [keynum(1, 0, 1, 1, RW ACCESS DELETE)], lmpop, "7.0.0",
        "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.",
        complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned."),
    ("blpop", -3, [WRITE BLOCKING], [LIST], [range(1, -2, 1, RW ACCESS DELETE)], blpop, "2.0.0",
        "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        complexity: "O(N) where N is the number of provided keys."),
    ("brpop", -3, [WRITE BLOCKING], [LIST], [range(1, -2, 1, RW ACCESS DELETE)], brpop, "2.0.0",
        "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        complexity: "O(N) where N is the number of provided keys."),
    ("blmove", 6, [WRITE DENYOOM BLOCKING], [LIST], [key(1, RW ACCESS DELETE), key(2, RW INSERT)],
        blmove, "6.2.0",
        "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved."),
    ("brpoplpush", 4, [WRITE DENYOOM BLOCKING], [LIST],
        [key(1, RW ACCESS DELETE), key(2, RW INSERT)], brpoplpush, "2.2.0",
        "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped."),
    ("blmpop", -5, [WRITE BLOCKING], [LIST], [keynum(2, 0, 1, 1, RW ACCESS DELETE)], blmpop,
        "7.0.0",
        "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned."),
};

fn reply_entry(out: &mut Reply, e: LpEntry<'_>) {
    match e {
        LpEntry::Str(s) => out.bulk(s),
        LpEntry::Int(n) => out.bulk_int(n),
    }
}

/// The list in an entry already checked to hold one (LMOVE's second look at its keys).
fn as_list(e: &mut tern_engine::Entry) -> &mut ListValue {
    match &mut e.value {
        Value::List(l) => l,
        _ => unreachable!("checked before"),
    }
}

/// A C `long` argument (getLongFromObjectOrReply).
fn long_arg(ctx: &mut Ctx, a: &[u8]) -> Option<i64> {
    let v = parse_i64(a);
    if v.is_none() {
        ctx.error(ERR_NOT_INT);
    }
    v
}

/// LEFT / RIGHT: true for LEFT (the head).
fn parse_side(a: &[u8]) -> Option<bool> {
    if eq_ic(a, "left") {
        Some(true)
    } else if eq_ic(a, "right") {
        Some(false)
    } else {
        None
    }
}

fn pop_event(front: bool) -> &'static str {
    if front {
        "lpop"
    } else {
        "rpop"
    }
}

fn push_event(front: bool) -> &'static str {
    if front {
        "lpush"
    } else {
        "rpush"
    }
}

// ---- pushes ----

fn lpush(ctx: &mut Ctx, args: &Args) {
    push_generic(ctx, args, true, false);
}

fn rpush(ctx: &mut Ctx, args: &Args) {
    push_generic(ctx, args, false, false);
}

fn lpushx(ctx: &mut Ctx, args: &Args) {
    push_generic(ctx, args, true, true);
}

fn rpushx(ctx: &mut Ctx, args: &Args) {
    push_generic(ctx, args, false, true);
}

fn push_generic(ctx: &mut Ctx, args: &Args, front: bool, xx: bool) {
    let key = &args[1];
    let items = (2..args.len()).map(|i| args.get(i));
    let n = args.len() - 2;
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    let len = match ctx.lookup_write::<ListValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Found(l) => {
            l.push_all(items, front);
            let len = l.len();
            shard.touch(key);
            len
        }
        Typed::Missing => {
            if xx {
                drop(shard);
                return ctx.out.int(0);
            }
            let mut l = ListValue::new();
            l.push_all(items, front);
            let len = l.len();
            shard.set(h, key, Value::List(l), false, now);
            len
        }
    };
    drop(shard);
    ctx.dirty(n as u64);
    ctx.out.int(len as i64);
    ctx.notify(notify::LIST, push_event(front), key);
}

// ---- pops ----

fn lpop(ctx: &mut Ctx, args: &Args) {
    pop_generic(ctx, args, true);
}

fn rpop(ctx: &mut Ctx, args: &Args) {
    pop_generic(ctx, args, false);
}

/// Reply with (and remove) up to `count` elements from one end of `l`: a bulk when `count` is
/// None, else an array. Returns how many were removed.
fn pop_reply(out: &mut Reply, l: &mut ListValue, front: bool, count: Option<usize>) -> usize {
    match count {
        None => {
            let v = l.pop(front).expect("non-empty list");
            out.bulk(&v);
            l.try_shrink();
            1
        }
        Some(c) => {
            let len = l.len();
            let n = c.min(len);
            out.array(n);
            if front {
                l.for_range(0, n, |e| reply_entry(out, e));
                l.trim(n, len - n);
            } else {
                l.for_range_rev(len - 1, n, |e| reply_entry(out, e));
                l.trim(0, len - n);
            }
            l.try_shrink();
            n
        }
    }
}

/// After elements left the list at `key`: a change (touched for WATCH); delete the list when
/// empty. Returns whether it was deleted.
fn remove_if_empty(shard: &mut ShardData, h: u64, key: &[u8], now: u64) -> bool {
    shard.touch(key);
    let empty = matches!(shard.peek(h, key, now), Some(e) if matches!(&e.value, Value::List(l) if l.is_empty()));
    if empty {
        shard.remove(h, key);
    }
    empty
}

fn notify_popped(ctx: &Ctx, key: &[u8], front: bool, deleted: bool) {
    ctx.notify(notify::LIST, pop_event(front), key);
    if deleted {
        ctx.notify(notify::GENERIC, "del", key);
    }
}

fn pop_generic(ctx: &mut Ctx, args: &Args, front: bool) {
    if args.len() > 3 {
        let msg = format!(
            "ERR wrong number of arguments for '{}' command",
            ctx.cmd.name
        );
        return ctx.error(&msg);
    }
    let count = if args.len() == 3 {
        match parse_i64(&args[2]).filter(|n| *n >= 0) {
            Some(n) => Some(n as usize),
            None => return ctx.error(ERR_POSITIVE),
        }
    } else {
        None
    };
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    let e = match ctx.lookup_write::<ListValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Missing => {
            drop(shard);
            return if count.is_some() {
                ctx.out.null_array()
            } else {
                ctx.out.null()
            };
        }
        Typed::Found(e) => e,
    };
    if count == Some(0) {
        drop(shard);
        return ctx.out.array(0);
    }
    let n = pop_reply(ctx.out, e, front, count);
    let deleted = remove_if_empty(&mut shard, h, key, now);
    drop(shard);
    ctx.dirty(n as u64);
    notify_popped(ctx, key, front, deleted);
}

/// Try to pop from the first non-empty list among `keys` (BLPOP/BRPOP/LMPOP/BLMPOP). Replies
/// `[key, element]` (count None) or `[key, [elements]]`. Returns Ok(true) when something was
/// popped, Ok(false) when every key was absent, Err(()) after a WRONGTYPE (replied unless
/// `skip_wrong`, in which case such keys are passed over).
fn pop_first_of(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    front: bool,
    count: Option<usize>,
    skip_wrong: bool,
) -> Result<bool, ()> {
    let now = ctx.now_ms;
    for &key in keys {
        let (h, mut shard) = ctx.lock(key);
        let l = match ctx.lookup_write::<ListValue>(&mut shard, h, key) {
            Typed::WrongType if skip_wrong => continue,
            Typed::WrongType => {
                ctx.wrong_type(shard);
                return Err(());
            }
            Typed::Missing => continue,
            Typed::Found(l) => l,
        };
        if l.is_empty() {
            continue;
        }
        ctx.out.array(2);
        ctx.out.bulk(key);
        let n = match count {
            None => {
                let v = l.pop(front).expect("non-empty list");
                ctx.out.bulk(&v);
                l.try_shrink();
                1
            }
            Some(c) => pop_reply(ctx.out, l, front, Some(c)),
        };
        let deleted = remove_if_empty(&mut shard, h, key, now);
        drop(shard);
        ctx.dirty(n as u64);
        notify_popped(ctx, key, front, deleted);
        // Propagated as the plain pop it was (BLPOP as LPOP, LMPOP as LPOP key count).
        let pop: &[u8] = if front { b"LPOP" } else { b"RPOP" };
        match count {
            None => ctx.propagate_as(&[pop, key]),
            Some(_) => {
                let c = n.to_string();
                ctx.propagate_as(&[pop, key, c.as_bytes()]);
            }
        }
        return Ok(true);
    }
    Ok(false)
}

fn blpop(ctx: &mut Ctx, args: &Args) {
    bpop(ctx, args, true);
}

fn brpop(ctx: &mut Ctx, args: &Args) {
    bpop(ctx, args, false);
}

fn bpop(ctx: &mut Ctx, args: &Args, front: bool) {
    let last = args.len() - 1;
    let deadline = match parse_timeout_secs(&args[last], ctx.now_ms) {
        Ok(d) => d,
        Err(e) => return ctx.error(e),
    };
    let keys: Vec<&[u8]> = (1..last).map(|i| args.get(i)).collect();
    let serving = ctx.serving_blocked();
    match pop_first_of(ctx, &keys, front, None, serving) {
        Ok(true) | Err(()) => {}
        Ok(false) => ctx.block(BlockSpec {
            keys: keys.iter().map(|k| k.to_vec()).collect(),
            deadline_ms: deadline,
            timeout_reply: TimeoutReply::NullArray,
            rewritten_args: None,
            unblock_on_nokey: false,
        }),
    }
}

/// Parse `numkeys key... LEFT|RIGHT [COUNT n]` starting at `numkeys_idx`.
fn parse_mpop<'a>(
    ctx: &mut Ctx,
    args: &Args<'a>,
    numkeys_idx: usize,
) -> Option<(Vec<&'a [u8]>, bool, usize)> {
    let numkeys = match parse_i64(&args[numkeys_idx]).filter(|n| *n >= 1) {
        Some(n) => n as usize,
        None => {
            ctx.error("ERR numkeys should be greater than 0");
            return None;
        }
    };
    let where_idx = numkeys_idx.saturating_add(numkeys).saturating_add(1);
    if where_idx >= args.len() {
        ctx.error(ERR_SYNTAX);
        return None;
    }
    let Some(front) = parse_side(&args[where_idx]) else {
        ctx.error(ERR_SYNTAX);
        return None;
    };
    let mut count: Option<usize> = None;
    let mut j = where_idx + 1;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if count.is_none() && eq_ic(&args[j], "count") && more > 0 {
            j += 1;
            match parse_i64(&args[j]).filter(|n| *n >= 1) {
                Some(n) => count = Some(n as usize),
                None => {
                    ctx.error("ERR count should be greater than 0");
                    return None;
                }
            }
        } else {
            ctx.error(ERR_SYNTAX);
            return None;
        }
        j += 1;
    }
    let keys = (numkeys_idx + 1..where_idx).map(|i| args.get(i)).collect();
    Some((keys, front, count.unwrap_or(1)))
}

fn lmpop(ctx: &mut Ctx, args: &Args) {
    let Some((keys, front, count)) = parse_mpop(ctx, args, 1) else {
        return;
    };
    if let Ok(false) = pop_first_of(ctx, &keys, front, Some(count), false) {
        ctx.out.null_array();
    }
}

fn blmpop(ctx: &mut Ctx, args: &Args) {
    let Some((keys, front, count)) = parse_mpop(ctx, args, 2) else {
        return;
    };
    let deadline = match parse_timeout_secs(&args[1], ctx.now_ms) {
        Ok(d) => d,
        Err(e) => return ctx.error(e),
    };
    let serving = ctx.serving_blocked();
    if let Ok(false) = pop_first_of(ctx, &keys, front, Some(count), serving) {
        ctx.block(BlockSpec {
            keys: keys.iter().map(|k| k.to_vec()).collect(),
            deadline_ms: deadline,
            timeout_reply: TimeoutReply::NullArray,
            rewritten_args: None,
            unblock_on_nokey: false,
        });
    }
}

// ---- moves ----

enum MoveResult {
    Moved,
    /// The source does not exist (or, when serving a blocked client, holds another type).
    NoSource,
    /// A reply (WRONGTYPE) has been written.
    Replied,
}

/// LMOVE's core: pop from `src` (head when `from_front`), push onto `dst`, reply the element.
fn move_generic(
    ctx: &mut Ctx,
    src: &[u8],
    dst: &[u8],
    from_front: bool,
    to_front: bool,
) -> MoveResult {
    let db = ctx.conn.db;
    let now = ctx.now_ms;
    let ([hs, hd], mut g) = ctx.lock_pair(src, dst);
    // Source: must exist and be a list. Nothing changes (or is touched for WATCH) before both
    // keys are checked.
    match ctx.lookup_write::<ListValue>(g.shard(db, hs), hs, src) {
        Typed::WrongType => {
            if ctx.serving_blocked() {
                return MoveResult::NoSource;
            }
            drop(g);
            ctx.error(ERR_WRONGTYPE);
            return MoveResult::Replied;
        }
        Typed::Missing => return MoveResult::NoSource,
        Typed::Found(e) => {
            if e.is_empty() {
                return MoveResult::NoSource;
            }
        }
    }
    // Destination: absent or a list.
    let dst_exists = match ctx.lookup_write::<ListValue>(g.shard(db, hd), hd, dst) {
        Typed::WrongType => {
            drop(g);
            ctx.error(ERR_WRONGTYPE);
            return MoveResult::Replied;
        }
        Typed::Missing => false,
        Typed::Found(_) => true,
    };
    let value = {
        let sh = g.shard(db, hs);
        sh.touch(src);
        let e = sh.get_quiet(hs, src, now).expect("source checked");
        as_list(e).pop(from_front).expect("non-empty source")
    };
    if dst_exists || src == dst {
        let sh = g.shard(db, hd);
        sh.touch(dst);
        let e = sh.get_quiet(hd, dst, now).expect("destination checked");
        as_list(e).push_all(std::iter::once(value.as_slice()), to_front);
    } else {
        let mut l = ListValue::new();
        l.push_all(std::iter::once(value.as_slice()), to_front);
        g.shard(db, hd).set(hd, dst, Value::List(l), false, now);
    }
    // The source after the pop: delete when empty, else maybe back to a listpack.
    let deleted = {
        let sh = g.shard(db, hs);
        let e = sh.get_quiet(hs, src, now).expect("source present");
        let l = as_list(e);
        if l.is_empty() {
            sh.remove(hs, src);
            true
        } else {
            l.try_shrink();
            false
        }
    };
    drop(g);
    ctx.out.bulk(&value);
    ctx.dirty(1);
    ctx.notify(notify::LIST, push_event(to_front), dst);
    notify_popped(ctx, src, from_front, deleted);
    MoveResult::Moved
}

fn lmove(ctx: &mut Ctx, args: &Args) {
    let (Some(from), Some(to)) = (parse_side(&args[3]), parse_side(&args[4])) else {
        return ctx.error(ERR_SYNTAX);
    };
    if let MoveResult::NoSource = move_generic(ctx, &args[1], &args[2], from, to) {
        ctx.out.null();
    }
}

fn rpoplpush(ctx: &mut Ctx, args: &Args) {
    if let MoveResult::NoSource = move_generic(ctx, &args[1], &args[2], false, true) {
        ctx.out.null();
    }
}

/// `sides`: BLMOVE's LEFT/RIGHT arguments (None: BRPOPLPUSH).
fn blmove_generic(
    ctx: &mut Ctx,
    src: &[u8],
    dst: &[u8],
    (from, to): (bool, bool),
    sides: Option<(&[u8], &[u8])>,
    timeout: &[u8],
) {
    let deadline = match parse_timeout_secs(timeout, ctx.now_ms) {
        Ok(d) => d,
        Err(e) => return ctx.error(e),
    };
    let r = move_generic(ctx, src, dst, from, to);
    if let MoveResult::Moved = r {
        // Propagated as the non-blocking move, the sides as the client wrote them (Redis).
        match sides {
            Some((a, b)) => ctx.propagate_as(&[b"LMOVE", src, dst, a, b]),
            None => ctx.propagate_as(&[b"RPOPLPUSH", src, dst]),
        }
    }
    if let MoveResult::NoSource = r {
        ctx.block(BlockSpec {
            keys: vec![src.to_vec()],
            deadline_ms: deadline,
            timeout_reply: TimeoutReply::NullArray,
            rewritten_args: None,
            unblock_on_nokey: false,
        });
    }
}

fn blmove(ctx: &mut Ctx, args: &Args) {
    let (Some(from), Some(to)) = (parse_side(&args[3]), parse_side(&args[4])) else {
        return ctx.error(ERR_SYNTAX);
    };
    let sides = Some((&args[3], &args[4]));
    blmove_generic(ctx, &args[1], &args[2], (from, to), sides, &args[5]);
}

fn brpoplpush(ctx: &mut Ctx, args: &Args) {
    blmove_generic(ctx, &args[1], &args[2], (false, true), None, &args[3]);
}

// ---- reads ----

fn llen(ctx: &mut Ctx, args: &Args) {
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.int(0),
        |ctx, l: &mut ListValue| ctx.out.int(l.len() as i64),
    );
}

/// Redis's range normalisation: Some((start, len)) or None for an empty range.
fn norm_range(start: i64, end: i64, llen: usize) -> Option<(usize, usize)> {
    let llen = llen as i64;
    let mut start = if start < 0 { llen + start } else { start };
    let mut end = if end < 0 { llen + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= llen {
        return None;
    }
    if end >= llen {
        end = llen - 1;
    }
    Some((start as usize, (end - start + 1) as usize))
}

fn lrange(ctx: &mut Ctx, args: &Args) {
    let Some(start) = long_arg(ctx, &args[2]) else {
        return;
    };
    let Some(end) = long_arg(ctx, &args[3]) else {
        return;
    };
    ctx.read_as(
        &args[1],
        |ctx| ctx.out.array(0),
        |ctx, l: &mut ListValue| match norm_range(start, end, l.len()) {
            None => ctx.out.array(0),
            Some((s, n)) => {
                let out = &mut *ctx.out;
                out.array(n);
                l.for_range(s, n, |e| reply_entry(out, e));
            }
        },
    );
}

fn lindex(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let l = match ctx.lookup_read::<ListValue>(&mut shard, h, key) {
        Typed::WrongType => {
            ctx.hit(true, key);
            return ctx.wrong_type(shard);
        }
        Typed::Missing => {
            drop(shard);
            ctx.hit(false, key);
            return ctx.out.null();
        }
        Typed::Found(l) => l,
    };
    let Some(index) = parse_i64(&args[2]) else {
        drop(shard);
        ctx.hit(true, key);
        return ctx.error(ERR_NOT_INT);
    };
    match l.norm_index(index) {
        Some(i) => reply_entry(ctx.out, l.get(i)),
        None => ctx.out.null(),
    }
    drop(shard);
    ctx.hit(true, key);
}

fn lpos(ctx: &mut Ctx, args: &Args) {
    let ele = &args[2];
    let mut rank: i64 = 1;
    let mut count: Option<usize> = None;
    let mut maxlen: usize = 0;
    let mut j = 3;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = &args[j];
        if eq_ic(opt, "rank") && more > 0 {
            j += 1;
            let Some(r) = long_arg(ctx, &args[j]) else {
                return;
            };
            if r == i64::MIN {
                return ctx.error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807");
            }
            if r == 0 {
                return ctx.error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list");
            }
            rank = r;
        } else if eq_ic(opt, "count") && more > 0 {
            j += 1;
            match parse_i64(&args[j]).filter(|n| *n >= 0) {
                Some(n) => count = Some(n as usize),
                None => return ctx.error("ERR COUNT can't be negative"),
            }
        } else if eq_ic(opt, "maxlen") && more > 0 {
            j += 1;
            match parse_i64(&args[j]).filter(|n| *n >= 0) {
                Some(n) => maxlen = n as usize,
                None => return ctx.error("ERR MAXLEN can't be negative"),
            }
        } else {
            return ctx.error(ERR_SYNTAX);
        }
        j += 1;
    }
    let rev = rank < 0;
    let rank = rank.unsigned_abs() as usize;
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let l = match ctx.lookup_read::<ListValue>(&mut shard, h, key) {
        Typed::WrongType => {
            ctx.hit(true, key);
            return ctx.wrong_type(shard);
        }
        Typed::Missing => {
            drop(shard);
            ctx.hit(false, key);
            return if count.is_some() {
                ctx.out.array(0)
            } else {
                ctx.out.null()
            };
        }
        Typed::Found(l) => l,
    };
    let mut matches = 0usize;
    let mut found: Vec<usize> = Vec::new();
    let mut scanned = 0usize;
    l.scan(rev, |idx, e| {
        if maxlen != 0 && scanned >= maxlen {
            return false;
        }
        scanned += 1;
        if e.eq_bytes(ele) {
            matches += 1;
            if matches >= rank {
                found.push(idx);
                match count {
                    None => return false,
                    Some(c) => {
                        if c != 0 && found.len() >= c {
                            return false;
                        }
                    }
                }
            }
        }
        true
    });
    drop(shard);
    ctx.hit(true, key);
    match count {
        Some(_) => {
            ctx.out.array(found.len());
            for i in found {
                ctx.out.int(i as i64);
            }
        }
        None => match found.first() {
            Some(&i) => ctx.out.int(i as i64),
            None => ctx.out.null(),
        },
    }
}

// ---- in-place writes ----

fn lset(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let val = &args[3];
    let (h, mut shard) = ctx.lock(key);
    let l = match ctx.lookup_write::<ListValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Missing => {
            drop(shard);
            return ctx.error(ERR_NO_SUCH_KEY);
        }
        Typed::Found(l) => l,
    };
    let Some(index) = parse_i64(&args[2]) else {
        drop(shard);
        return ctx.error(ERR_NOT_INT);
    };
    l.try_grow(val.len(), 1);
    match l.norm_index(index) {
        Some(i) => {
            // A change for WATCH even when the element was already `val` (as in Redis).
            l.set(i, val);
            l.try_shrink();
            shard.touch(key);
            drop(shard);
            ctx.out.ok();
            ctx.dirty(1);
            ctx.notify(notify::LIST, "lset", key);
        }
        None => {
            drop(shard);
            ctx.error(ERR_INDEX_RANGE);
        }
    }
}

fn linsert(ctx: &mut Ctx, args: &Args) {
    let after = if eq_ic(&args[2], "after") {
        true
    } else if eq_ic(&args[2], "before") {
        false
    } else {
        return ctx.error(ERR_SYNTAX);
    };
    let key = &args[1];
    let (pivot, val) = (&args[3], &args[4]);
    let (h, mut shard) = ctx.lock(key);
    let l = match ctx.lookup_write::<ListValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Missing => {
            drop(shard);
            return ctx.out.int(0);
        }
        Typed::Found(l) => l,
    };
    l.try_grow(val.len(), 1);
    if !l.insert(pivot, val, after) {
        drop(shard);
        return ctx.out.int(-1);
    }
    let len = l.len();
    shard.touch(key);
    drop(shard);
    ctx.dirty(1);
    ctx.notify(notify::LIST, "linsert", key);
    ctx.out.int(len as i64);
}

fn lrem(ctx: &mut Ctx, args: &Args) {
    let Some(count) = long_arg(ctx, &args[2]) else {
        return;
    };
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let l = match ctx.lookup_write::<ListValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Missing => {
            drop(shard);
            return ctx.out.int(0);
        }
        Typed::Found(l) => l,
    };
    let removed = l.remove(&args[3], count);
    let deleted = if l.is_empty() {
        shard.remove(h, key);
        true
    } else {
        if removed > 0 {
            l.try_shrink();
            shard.touch(key);
        }
        false
    };
    drop(shard);
    ctx.dirty(removed as u64);
    if removed > 0 {
        ctx.notify(notify::LIST, "lrem", key);
    }
    if deleted {
        ctx.notify(notify::GENERIC, "del", key);
    }
    ctx.out.int(removed as i64);
}

fn ltrim(ctx: &mut Ctx, args: &Args) {
    let Some(start) = long_arg(ctx, &args[2]) else {
        return;
    };
    let Some(end) = long_arg(ctx, &args[3]) else {
        return;
    };
    let key = &args[1];
    let (h, mut shard) = ctx.lock(key);
    let l = match ctx.lookup_write::<ListValue>(&mut shard, h, key) {
        Typed::WrongType => return ctx.wrong_type(shard),
        Typed::Missing => {
            drop(shard);
            return ctx.out.ok();
        }
        Typed::Found(l) => l,
    };
    let len = l.len();
    let (s, n) = norm_range(start, end, len).unwrap_or((0, 0));
    l.trim(s, n);
    // A change for WATCH even when it keeps every element (as in Redis).
    let deleted = if l.is_empty() {
        shard.remove(h, key);
        true
    } else {
        l.try_shrink();
        shard.touch(key);
        false
    };
    drop(shard);
    ctx.dirty((len - n) as u64);
    ctx.notify(notify::LIST, "ltrim", key);
    if deleted {
        ctx.notify(notify::GENERIC, "del", key);
    }
    ctx.out.ok();
}

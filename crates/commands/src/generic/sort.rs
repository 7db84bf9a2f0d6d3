//! SORT and SORT_RO: sort the elements of a list, set or sorted set numerically or
//! lexicographically, optionally by weights read from other keys (`BY`), returning other keys'
//! values (`GET`) or storing the result as a list (`STORE`).
//!
//! Locking: the source is copied under its own shard lock; every `BY`/`GET` lookup then locks
//! its key alone, and `STORE` locks the destination. No two shards are ever held at once, so
//! the arbitrary keys a pattern names cannot deadlock with other commands; the price is that a
//! SORT with lookups is not one atomic snapshot (a concurrent write to a weight key may be seen
//! half-way), which single-threaded Redis never shows.

use std::cmp::Ordering;
use tern_engine::{ListValue, Value};
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_SYNTAX};
use tern_runtime::ctx::Ctx;
use tern_runtime::notify;
use tern_runtime::table::CommandSpec;

use tern_runtime::table::kflags as k;

const KS_RO: u32 = k::RO | k::ACCESS;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "generic";
    ("sort", -2, [WRITE DENYOOM], [SET SORTEDSET LIST DANGEROUS],
        [key(1, RO ACCESS), unknown(RO ACCESS), unknown(OW UPDATE)], sort, "1.0.0",
        "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.",
        complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
        getkeys: Some(sort_keys)),
    ("sort_ro", -2, [READONLY], [SET SORTEDSET LIST DANGEROUS],
        [key(1, RO ACCESS), unknown(RO ACCESS)], sort_ro, "7.0.0",
        "Returns the sorted elements of a list, a set, or a sorted set.",
        complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N)."),
};

/// Redis's sortGetKeys: the sorted key, and the STORE destination (the last STORE wins),
/// skipping the arguments of the options that take them.
fn sort_keys(args: &Args) -> Vec<(usize, u32)> {
    let mut keys = vec![(1, KS_RO)];
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let a = args.get(i);
        let skip = if eq_ic(a, "limit") {
            2
        } else if eq_ic(a, "get") || eq_ic(a, "by") {
            1
        } else if eq_ic(a, "store") {
            if i + 1 < args.len() {
                store = Some(i + 1);
            }
            1
        } else {
            0
        };
        i += 1 + skip;
    }
    if let Some(s) = store {
        keys.push((s, k::OW | k::UPDATE));
    }
    keys
}

fn sort(ctx: &mut Ctx, args: &Args) {
    sort_generic(ctx, args, false);
}

fn sort_ro(ctx: &mut Ctx, args: &Args) {
    sort_generic(ctx, args, true);
}

struct Options<'a> {
    desc: bool,
    alpha: bool,
    limit: Option<(i64, i64)>,
    by: Option<&'a [u8]>,
    /// BY a pattern without `*`: keep the source's own order.
    dontsort: bool,
    gets: Vec<&'a [u8]>,
    store: Option<&'a [u8]>,
}

fn parse_options<'a>(
    args: &Args<'a>,
    readonly: bool,
    full_access: bool,
) -> Result<Options<'a>, &'static str> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: None,
        by: None,
        dontsort: false,
        gets: Vec::new(),
        store: None,
    };
    let mut j = 2;
    while j < args.len() {
        let a = args.get(j);
        let left = args.len() - j - 1;
        if eq_ic(a, "asc") {
            o.desc = false;
        } else if eq_ic(a, "desc") {
            o.desc = true;
        } else if eq_ic(a, "alpha") {
            o.alpha = true;
        } else if eq_ic(a, "limit") && left >= 2 {
            let start = parse_i64(args.get(j + 1));
            let count = parse_i64(args.get(j + 2));
            match (start, count) {
                (Some(s), Some(c)) => o.limit = Some((s, c)),
                _ => return Err("ERR value is not an integer or out of range"),
            }
            j += 2;
        } else if !readonly && eq_ic(a, "store") && left >= 1 {
            o.store = Some(args.get(j + 1));
            j += 1;
        } else if eq_ic(a, "by") && left >= 1 {
            let p = args.get(j + 1);
            o.by = Some(p);
            o.dontsort = !p.contains(&b'*');
            // A real pattern reads arbitrary keys: only for users who may read them all.
            if !o.dontsort && !full_access {
                return Err("ERR BY option of SORT denied due to insufficient ACL permissions.");
            }
            j += 1;
        } else if eq_ic(a, "get") && left >= 1 {
            if !full_access {
                return Err("ERR GET option of SORT denied due to insufficient ACL permissions.");
            }
            o.gets.push(args.get(j + 1));
            j += 1;
        } else {
            return Err(ERR_SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

/// The source's elements as SORT sees them, plus whether they are in the type's own order.
enum Source {
    List(Vec<Vec<u8>>),
    Set(Vec<Vec<u8>>),
    /// Members in rank order.
    ZSet(Vec<Vec<u8>>),
}

fn sort_generic(ctx: &mut Ctx, args: &Args, readonly: bool) {
    let full_access = tern_runtime::acl::full_read_access(ctx, args);
    let mut o = match parse_options(args, readonly, full_access) {
        Ok(o) => o,
        Err(e) => return ctx.error(e),
    };
    let key = &args[1];
    let mut found = false;
    let src = {
        let (h, mut shard) = ctx.lock(key);
        // Only read, even by SORT ... STORE: never a WATCH touch.
        match ctx.read_key(&mut shard, h, key) {
            None => {
                drop(shard);
                ctx.hit(false, key);
                Source::List(Vec::new())
            }
            Some(e) => {
                found = true;
                ctx.touch(e);
                match &e.value {
                    Value::List(l) => Source::List(l.to_vecs()),
                    Value::Set(s) => Source::Set(s.iter().map(|m| m.to_vec()).collect()),
                    Value::ZSet(z) => {
                        Source::ZSet(z.to_vec().into_iter().map(|(m, _)| m).collect())
                    }
                    _ => {
                        ctx.hit(true, key);
                        return ctx.wrong_type(shard);
                    }
                }
            }
        }
    };
    // A set has no order of its own: a stored (replicated) result must not depend on the
    // hash layout, so it is sorted lexicographically instead (also inside scripts, as Redis).
    let is_set = matches!(src, Source::Set(_));
    if o.dontsort && is_set && (o.store.is_some() || tern_runtime::lua::in_script()) {
        o.dontsort = false;
        o.alpha = true;
        o.by = None;
    }
    let ordered = !is_set;
    let mut elems = match src {
        Source::List(v) | Source::Set(v) | Source::ZSet(v) => v,
    };
    if elems.len() > tern_runtime::background::OFFLOAD_THRESHOLD && ctx.offload() {
        return;
    }
    if found {
        // Counted here, not before the offload (the background thread reads it again).
        ctx.hit(true, key);
    }
    let len = elems.len() as i64;
    let (start, end) = limit_range(o.limit, len);

    if o.dontsort && ordered {
        // Keep the source order (reversed for DESC) and cut the LIMIT range directly.
        if o.desc {
            elems.reverse();
        }
        elems = cut_limit(elems, start, end);
    } else if !o.dontsort {
        match sort_elements(ctx, elems, &o) {
            Ok(sorted) => elems = sorted,
            Err(e) => return ctx.error(e),
        }
        elems = cut_limit(elems, start, end);
    } else {
        // A set with a constant BY and no STORE: any order, LIMIT applied as is.
        elems = cut_limit(elems, start, end);
    }

    // Resolve GET patterns (each lookup locks its own key only).
    let mut output: Vec<Option<Vec<u8>>> = Vec::new();
    if o.gets.is_empty() {
        output.extend(elems.into_iter().map(Some));
    } else {
        for e in &elems {
            for g in &o.gets {
                output.push(lookup_by_pattern(ctx, g, e));
            }
        }
    }

    match o.store {
        None => {
            ctx.out.array(output.len());
            for v in &output {
                ctx.out.opt_bulk(v.as_deref());
            }
        }
        Some(dest) => store_result(ctx, dest, output),
    }
}

/// The elements from `start` to `end` inclusive (none when end < start).
fn cut_limit<T>(elems: Vec<T>, start: i64, end: i64) -> Vec<T> {
    if end >= start {
        elems
            .into_iter()
            .skip(start as usize)
            .take((end - start + 1) as usize)
            .collect()
    } else {
        Vec::new()
    }
}

/// Redis's LIMIT clipping: (start, end) inclusive indexes; end < start means nothing.
fn limit_range(limit: Option<(i64, i64)>, len: i64) -> (i64, i64) {
    let (ls, lc) = limit.unwrap_or((0, -1));
    let mut start = ls.max(0).min(len);
    let count = lc.max(-1).min(len);
    let mut end = if count < 0 {
        len - 1
    } else {
        start + count - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    (start, end)
}

fn sort_elements(
    ctx: &mut Ctx,
    elems: Vec<Vec<u8>>,
    o: &Options,
) -> Result<Vec<Vec<u8>>, &'static str> {
    struct Item {
        elem: Vec<u8>,
        score: f64,
        cmp: Option<Vec<u8>>,
    }
    let mut items = Vec::with_capacity(elems.len());
    let mut conversion_error = false;
    for elem in elems {
        let mut it = Item {
            elem,
            score: 0.0,
            cmp: None,
        };
        let by_val = match o.by {
            Some(p) => lookup_by_pattern(ctx, p, &it.elem),
            None => None,
        };
        if o.by.is_none() || by_val.is_some() {
            if o.alpha {
                it.cmp = by_val;
            } else {
                let v: &[u8] = by_val.as_deref().unwrap_or(&it.elem);
                match tern_runtime::args::strtod_exact(v, false) {
                    Some(d) => it.score = d,
                    None => conversion_error = true,
                }
            }
        }
        items.push(it);
    }
    if conversion_error {
        return Err("ERR One or more scores can't be converted into double");
    }
    let by_pattern = o.by.is_some();
    let cmp = |a: &Item, b: &Item| -> Ordering {
        let c = if !o.alpha {
            a.score
                .partial_cmp(&b.score)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.elem.cmp(&b.elem))
        } else if by_pattern {
            match (&a.cmp, &b.cmp) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
                (Some(x), Some(y)) => x.cmp(y),
            }
        } else {
            a.elem.cmp(&b.elem)
        };
        if o.desc {
            c.reverse()
        } else {
            c
        }
    };
    items.sort_by(cmp);
    Ok(items.into_iter().map(|i| i.elem).collect())
}

/// Redis's lookupKeyByPattern: `#` is the element itself; the first `*` is replaced by the
/// element; a `->field` suffix reads a hash field, otherwise the key must hold a string.
fn lookup_by_pattern(ctx: &mut Ctx, pattern: &[u8], subst: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(subst.to_vec());
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    let after = &pattern[star + 1..];
    let (postfix, field) = match after.windows(2).position(|w| w == b"->") {
        Some(i) if i + 2 < after.len() => (&after[..i], Some(&after[i + 2..])),
        _ => (after, None),
    };
    let mut key = Vec::with_capacity(pattern.len() + subst.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(subst);
    key.extend_from_slice(postfix);
    let (h, mut shard) = ctx.lock(&key);
    // A read lookup in Redis: a hit, or a miss and its keymiss event.
    let e = ctx.read_key(&mut shard, h, &key);
    ctx.hit(e.is_some(), &key);
    let e = e?;
    ctx.touch(e);
    match (&e.value, field) {
        (Value::Str(s), None) => Some(s.to_vec()),
        (Value::Hash(hv), Some(f)) => hv.get(f).map(|v| v.to_vec()),
        _ => None,
    }
}

/// STORE: the result becomes a list (missing GET values as empty strings); an empty result
/// deletes the destination.
fn store_result(ctx: &mut Ctx, dest: &[u8], output: Vec<Option<Vec<u8>>>) {
    let n = output.len();
    let (h, mut shard) = ctx.lock(dest);
    let now = ctx.now_ms;
    if n > 0 {
        let mut list = ListValue::new();
        list.push_all(output.iter().map(|v| v.as_deref().unwrap_or(b"")), false);
        list.try_auto();
        tern_runtime::background::replace_value(
            ctx.srv,
            &mut shard,
            h,
            dest,
            Value::List(list),
            now,
        );
        drop(shard);
        ctx.notify(notify::LIST, "sortstore", dest);
        ctx.dirty(n as u64);
    } else {
        let removed = tern_runtime::background::delete_live(ctx.srv, &mut shard, h, dest, now);
        drop(shard);
        if removed {
            ctx.notify(notify::GENERIC, "del", dest);
            ctx.dirty(1);
        }
    }
    ctx.out.int(n as i64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_clip_like_redis() {
        assert_eq!(limit_range(None, 5), (0, 4));
        assert_eq!(limit_range(Some((1, 2)), 5), (1, 2));
        assert_eq!(limit_range(Some((-1, 2)), 5), (0, 1));
        assert_eq!(limit_range(Some((10, 2)), 5), (4, 3));
        assert_eq!(limit_range(Some((0, 0)), 5), (0, -1));
        assert_eq!(limit_range(Some((2, -1)), 5), (2, 4));
        assert_eq!(limit_range(None, 0), (-1, -2));
    }
}

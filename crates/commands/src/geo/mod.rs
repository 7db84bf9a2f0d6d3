//! Geo commands over sorted sets with Redis's 52-bit geohash.
//!
//! A geo index is an ordinary sorted set whose scores are 52-bit cell ids (see `geohash`).
//! GEOADD is ZADD with scores computed from coordinates; the searches (GEOSEARCH, GEORADIUS and
//! their variants) look at the score ranges of the cell holding the centre and of its
//! neighbours, keep the members inside the shape, then sort, trim and reply or store them.
pub mod geohash;

use geohash::{Shape, ShapeKind};
use std::borrow::Cow;
use tern_engine::types::zset::{AddFlags, AddOutcome, ScoreRange};
use tern_engine::{key_hash, ShardData, Value, ZSetValue};
use tern_resp::Reply;
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use tern_runtime::ctx::Ctx;
use tern_runtime::notify;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "geo";
    ("geoadd", -5, [WRITE DENYOOM], [GEO], [key(1, RW UPDATE)], geoadd, "3.2.0",
        "Adds members at coordinates to a geo index (a sorted set), creating the key when needed.",
        complexity: "O(log(N)) per member, N being the index's size."),
    ("geodist", -4, [READONLY], [GEO], [key(1, RO ACCESS)], geodist, "3.2.0",
        "Returns the distance between two members of a geo index."),
    ("geohash", -2, [READONLY], [GEO], [key(1, RO ACCESS)], geohash_cmd, "3.2.0",
        "Returns the standard geohash strings of members of a geo index.",
        complexity: "O(1) per member asked for."),
    ("geopos", -2, [READONLY], [GEO], [key(1, RO ACCESS)], geopos, "3.2.0",
        "Returns the longitude and latitude of members of a geo index.",
        complexity: "O(1) per member asked for."),
    ("georadius", -6, [WRITE DENYOOM], [GEO],
        [key(1, RO ACCESS), keyword("STORE", 6, 0, 1, 0, OW UPDATE), keyword("STOREDIST", 6, 0, 1, 0, OW UPDATE)],
        georadius, "3.2.0",
        "Finds the members of a geo index within a radius of a position, optionally storing them.",
        complexity: "O(N+log(M)), N members in the grid cells around the shape, M members in the index."),
    ("georadius_ro", -6, [READONLY], [GEO], [key(1, RO ACCESS)], georadius_ro, "3.2.10",
        "Finds the members of a geo index within a radius of a position.",
        complexity: "O(N+log(M)), N members in the grid cells around the shape, M members in the index."),
    ("georadiusbymember", -5, [WRITE DENYOOM], [GEO],
        [key(1, RO ACCESS), keyword("STORE", 5, 0, 1, 0, OW UPDATE), keyword("STOREDIST", 5, 0, 1, 0, OW UPDATE)],
        georadiusbymember, "3.2.0",
        "Finds the members of a geo index within a radius of one of its members, optionally storing them.",
        complexity: "O(N+log(M)), N members in the grid cells around the shape, M members in the index."),
    ("georadiusbymember_ro", -5, [READONLY], [GEO], [key(1, RO ACCESS)], georadiusbymember_ro,
        "3.2.10", "Finds the members of a geo index within a radius of one of its members.",
        complexity: "O(N+log(M)), N members in the grid cells around the shape, M members in the index."),
    ("geosearch", -7, [READONLY], [GEO], [key(1, RO ACCESS)], geosearch, "6.2.0",
        "Finds the members of a geo index inside a circle or a box.",
        complexity: "O(N+log(M)), N members in the grid cells around the shape, M members in the index."),
    ("geosearchstore", -8, [WRITE DENYOOM], [GEO], [key(1, OW UPDATE), key(2, RO ACCESS)],
        geosearchstore, "6.2.0",
        "Finds the members of a geo index inside a circle or a box and stores them in a sorted set.",
        complexity: "O(N+log(M)), N members in the grid cells around the shape, M members in the index."),
};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The sorted set at `key` for a read (counts a keyspace hit or miss): Ok(None) when missing,
/// Err(WRONGTYPE) for another type. The source of GEORADIUS and the STORE variants (write
/// commands) is only read: `get_quiet`, never a WATCH touch.
fn lookup_read<'s>(
    ctx: &mut Ctx,
    shard: &'s mut ShardData,
    h: u64,
    key: &[u8],
) -> Result<Option<&'s ZSetValue>, &'static str> {
    let found = ctx.lookup_source::<ZSetValue>(shard, h, key).checked();
    ctx.hit(!matches!(found, Ok(None)), key);
    match found {
        Ok(z) => Ok(z.map(|z| &*z)),
        Err(e) => Err(e.into()),
    }
}

/// A coordinate as Redis prints it (long double, human form): RESP3 double or bulk string.
fn reply_coord(out: &mut Reply, v: f64) {
    out.double_str(&tern_runtime::float::LongDouble::from_f64(v).to_human());
}

/// Redis's getDoubleFromObject rules for the coordinate and distance arguments.
fn parse_double(s: &[u8]) -> Option<f64> {
    tern_runtime::double::parse_score(s)
}

fn parse_lonlat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), String> {
    let (Some(x), Some(y)) = (parse_double(lon), parse_double(lat)) else {
        return Err(tern_runtime::args::ERR_NOT_FLOAT.to_string());
    };
    if !geohash::valid_lonlat(x, y) {
        return Err(geohash::invalid_lonlat_error(x, y));
    }
    Ok((x, y))
}

fn parse_radius(radius: &[u8], unit: &[u8]) -> Result<(f64, f64), &'static str> {
    let r = parse_double(radius).ok_or("ERR need numeric radius")?;
    if r < 0.0 {
        return Err("ERR radius cannot be negative");
    }
    Ok((r, geohash::unit_factor(unit).ok_or(geohash::ERR_UNIT)?))
}

fn parse_box(width: &[u8], height: &[u8], unit: &[u8]) -> Result<(f64, f64, f64), &'static str> {
    let w = parse_double(width).ok_or("ERR need numeric width")?;
    let h = parse_double(height).ok_or("ERR need numeric height")?;
    if w < 0.0 || h < 0.0 {
        return Err("ERR height or width cannot be negative");
    }
    Ok((w, h, geohash::unit_factor(unit).ok_or(geohash::ERR_UNIT)?))
}

// ---------------------------------------------------------------------------------------------
// GEOADD
// ---------------------------------------------------------------------------------------------

/// GEOADD key [NX|XX] [CH] lon lat member ...: ZADD with the cell ids as scores.
fn geoadd(ctx: &mut Ctx, args: &Args) {
    let key = &args[1];
    let (mut nx, mut xx, mut ch) = (false, false, false);
    let mut idx = 2;
    while idx < args.len() {
        let o = &args[idx];
        if eq_ic(o, "nx") {
            nx = true;
        } else if eq_ic(o, "xx") {
            xx = true;
        } else if eq_ic(o, "ch") {
            ch = true;
        } else {
            break;
        }
        idx += 1;
    }
    let rest = args.len() - idx;
    // No triplet at all ends as ZADD without elements would: a syntax error too.
    if !rest.is_multiple_of(3) || (xx && nx) || rest == 0 {
        return ctx.error(ERR_SYNTAX);
    }
    let elements = rest / 3;
    let mut scores = Vec::with_capacity(elements);
    for j in 0..elements {
        let at = idx + j * 3;
        match parse_lonlat(&args[at], &args[at + 1]) {
            Ok((x, y)) => scores.push(geohash::score_of(x, y).unwrap_or(0.0)),
            Err(e) => return ctx.error(&e),
        }
    }
    let fl = AddFlags {
        nx,
        xx,
        ..AddFlags::default()
    };
    let (h, mut shard) = ctx.lock(key);
    let now = ctx.now_ms;
    let mut fresh: Option<ZSetValue> = None;
    let z: &mut ZSetValue = match shard.get_quiet(h, key, now) {
        Some(e) => {
            ctx.touch(e);
            match &mut e.value {
                Value::ZSet(z) => {
                    z.maybe_convert(elements);
                    z
                }
                _ => {
                    drop(shard);
                    return ctx.error(ERR_WRONGTYPE);
                }
            }
        }
        None => {
            if xx {
                drop(shard);
                return ctx.out.int(0);
            }
            fresh = Some(ZSetValue::with_hint(elements, args[idx + 2].len()));
            fresh.as_mut().expect("just set")
        }
    };
    let (mut added, mut updated) = (0i64, 0i64);
    for (j, &score) in scores.iter().enumerate() {
        match z.add(&args[idx + 2 + j * 3], score, fl) {
            AddOutcome::Added(_) => added += 1,
            AddOutcome::Updated(_) => updated += 1,
            AddOutcome::Same(_) | AddOutcome::Nop | AddOutcome::Nan => {}
        }
    }
    // As ZADD: only members added or moved are a change for WATCH.
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
        ctx.notify(notify::ZSET, "zadd", key);
        // Replayed as the ZADD it amounts to (scores as the integers they are).
        if ctx.propagating() {
            let texts: Vec<String> = scores.iter().map(|&s| (s as u64).to_string()).collect();
            let mut argv: Vec<&[u8]> = vec![b"zadd"];
            argv.extend((1..idx).map(|i| args.get(i)));
            for (j, t) in texts.iter().enumerate() {
                argv.push(t.as_bytes());
                argv.push(&args[idx + 2 + j * 3]);
            }
            ctx.propagate_as(&argv);
        }
    }
    ctx.out.int(if ch { added + updated } else { added });
}

// ---------------------------------------------------------------------------------------------
// GEOPOS, GEOHASH, GEODIST
// ---------------------------------------------------------------------------------------------

/// Run `f` on the sorted set at `key` (None when missing) for a read-only command.
fn with_zset<R>(
    ctx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(Option<&ZSetValue>) -> R,
) -> Result<R, &'static str> {
    let (h, mut shard) = ctx.lock(key);
    let r = lookup_read(ctx, &mut shard, h, key).map(f);
    drop(shard);
    r
}

fn geopos(ctx: &mut Ctx, args: &Args) {
    let n = args.len() - 2;
    let positions = with_zset(ctx, &args[1], |z| {
        (0..n)
            .map(|i| {
                z.and_then(|z| z.score(&args[2 + i]))
                    .and_then(geohash::position_of)
            })
            .collect::<Vec<_>>()
    });
    match positions {
        Err(e) => ctx.error(e),
        Ok(ps) => {
            ctx.out.array(ps.len());
            for p in ps {
                match p {
                    None => ctx.out.null_array(),
                    Some((x, y)) => {
                        ctx.out.array(2);
                        reply_coord(ctx.out, x);
                        reply_coord(ctx.out, y);
                    }
                }
            }
        }
    }
}

fn geohash_cmd(ctx: &mut Ctx, args: &Args) {
    let n = args.len() - 2;
    let hashes = with_zset(ctx, &args[1], |z| {
        (0..n)
            .map(|i| {
                z.and_then(|z| z.score(&args[2 + i]))
                    .and_then(geohash::geohash_string)
            })
            .collect::<Vec<_>>()
    });
    match hashes {
        Err(e) => ctx.error(e),
        Ok(hs) => {
            ctx.out.array(hs.len());
            for h in hs {
                match h {
                    None => ctx.out.null(),
                    Some(s) => ctx.out.bulk(&s),
                }
            }
        }
    }
}

/// GEODIST key member1 member2 [unit]
fn geodist(ctx: &mut Ctx, args: &Args) {
    let to_meter = match args.len() {
        5 => match geohash::unit_factor(&args[4]) {
            Some(u) => u,
            None => return ctx.error(geohash::ERR_UNIT),
        },
        n if n > 5 => return ctx.error(ERR_SYNTAX),
        _ => 1.0,
    };
    let r = with_zset(ctx, &args[1], |z| {
        let z = z?;
        let a = geohash::position_of(z.score(&args[2])?);
        let b = geohash::position_of(z.score(&args[3])?);
        let ((x1, y1), (x2, y2)) = (a?, b?);
        Some(geohash::distance(x1, y1, x2, y2) / to_meter)
    });
    match r {
        Err(e) => ctx.error(e),
        Ok(None) => ctx.out.null(),
        Ok(Some(d)) => ctx.out.bulk(geohash::format_distance(d).as_bytes()),
    }
}

// ---------------------------------------------------------------------------------------------
// GEOSEARCH, GEOSEARCHSTORE, GEORADIUS*
// ---------------------------------------------------------------------------------------------

/// Which search command runs (Redis's georadiusGeneric flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Search {
    /// GEORADIUS / GEORADIUS_RO: centre and radius from fixed arguments.
    Coords,
    /// GEORADIUSBYMEMBER / GEORADIUSBYMEMBER_RO: centre at a member.
    Member,
    /// GEOSEARCH: FROM... and BY... options.
    Geosearch,
    /// GEOSEARCHSTORE: GEOSEARCH into a destination key.
    GeosearchStore,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// One member found inside the shape.
struct Point {
    member: Vec<u8>,
    lon: f64,
    lat: f64,
    /// Metres from the centre (converted to the unit before replying or storing).
    dist: f64,
    score: f64,
}

/// What the parsing and the search of the source produced, before replying or storing.
struct Found {
    /// Argument index of the destination key.
    store: Option<usize>,
    storedist: bool,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    conversion: f64,
    /// None when the source key does not exist.
    points: Option<Vec<Point>>,
}

/// Members of `z` in the score range [min, max) that fall inside the shape, appended to
/// `out`, stopping once `out` holds `limit` points (0: no limit).
fn points_in_range(
    z: &ZSetValue,
    min: f64,
    max: f64,
    shape: &Shape,
    out: &mut Vec<Point>,
    limit: usize,
) {
    let range = ScoreRange {
        min,
        max,
        minex: false,
        maxex: true,
    };
    let Some((first, last)) = z.score_span(&range) else {
        return;
    };
    // Walk in chunks so that a limited search (ANY) stops early on big sets.
    const CHUNK: usize = 64;
    let mut start = first;
    while start <= last {
        let n = CHUNK.min(last - start + 1);
        let mut full = false;
        z.range_each(start, n, false, |m, score| {
            if full {
                return;
            }
            if let Some(((lon, lat), dist)) = geohash::within_shape(shape, score) {
                out.push(Point {
                    member: m.to_vec(),
                    lon,
                    lat,
                    dist,
                    score,
                });
            }
            if limit > 0 && out.len() >= limit {
                full = true;
            }
        });
        if full {
            return;
        }
        start += n;
    }
}

/// Every member in the cells around the shape, in Redis's scan order.
fn search_points(z: &ZSetValue, shape: &Shape, limit: usize) -> Vec<Point> {
    let areas = geohash::areas_for_shape(shape);
    let mut out = Vec::new();
    for cell in geohash::cells_to_scan(&areas) {
        if limit > 0 && out.len() >= limit {
            break;
        }
        let (min, max) = geohash::score_range(cell);
        points_in_range(z, min as f64, max as f64, shape, &mut out, limit);
    }
    out
}

/// The position of `member` in `z` (the search centre of FROMMEMBER / BYMEMBER).
fn member_position(z: &ZSetValue, member: &[u8]) -> Result<(f64, f64), &'static str> {
    z.score(member)
        .and_then(geohash::position_of)
        .ok_or("ERR could not decode requested zset member")
}

/// Parse the arguments and search `z` exactly as Redis's georadiusGeneric does, in the same
/// order (so that the first error is the same one).
fn parse_and_search(
    z: Option<&ZSetValue>,
    args: &Args,
    kind: Search,
    nostore: bool,
) -> Result<Found, Cow<'static, str>> {
    let argc = args.len();
    let geosearch = matches!(kind, Search::Geosearch | Search::GeosearchStore);
    let mut center = (0.0, 0.0);
    let mut shape_kind = ShapeKind::Circle { radius: 0.0 };
    let mut conversion = 1.0;
    let mut store: Option<usize> = None;
    let base = match kind {
        Search::Coords => {
            center = parse_lonlat(&args[2], &args[3])?;
            let (r, c) = parse_radius(&args[4], &args[5])?;
            shape_kind = ShapeKind::Circle { radius: r };
            conversion = c;
            6
        }
        Search::Member => {
            if let Some(z) = z {
                center = member_position(z, &args[2])?;
                let (r, c) = parse_radius(&args[3], &args[4])?;
                shape_kind = ShapeKind::Circle { radius: r };
                conversion = c;
            }
            5
        }
        Search::Geosearch => 2,
        Search::GeosearchStore => {
            store = Some(1);
            3
        }
    };

    let (mut withdist, mut withhash, mut withcoord) = (false, false, false);
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let mut sort = Sort::None;
    let mut any = false;
    let mut storedist = false;
    let mut count: i64 = 0;
    let remaining = argc.saturating_sub(base);
    let mut i = 0;
    while i < remaining {
        let at = base + i;
        let a = &args[at];
        if eq_ic(a, "withdist") {
            withdist = true;
        } else if eq_ic(a, "withhash") {
            withhash = true;
        } else if eq_ic(a, "withcoord") {
            withcoord = true;
        } else if eq_ic(a, "any") {
            any = true;
        } else if eq_ic(a, "asc") {
            sort = Sort::Asc;
        } else if eq_ic(a, "desc") {
            sort = Sort::Desc;
        } else if eq_ic(a, "count") && i + 1 < remaining {
            count = parse_i64(&args[at + 1]).ok_or(ERR_NOT_INT)?;
            if count <= 0 {
                return Err("ERR COUNT must be > 0".into());
            }
            i += 1;
        } else if (eq_ic(a, "store") || eq_ic(a, "storedist"))
            && i + 1 < remaining
            && !nostore
            && !geosearch
        {
            store = Some(at + 1);
            storedist = eq_ic(a, "storedist");
            i += 1;
        } else if eq_ic(a, "storedist") && kind == Search::GeosearchStore {
            storedist = true;
        } else if eq_ic(a, "frommember") && i + 1 < remaining && geosearch && !fromloc {
            if let Some(z) = z {
                center = member_position(z, &args[at + 1])?;
            }
            frommember = true;
            i += 1;
        } else if eq_ic(a, "fromlonlat") && i + 2 < remaining && geosearch && !frommember {
            center = parse_lonlat(&args[at + 1], &args[at + 2])?;
            fromloc = true;
            i += 2;
        } else if eq_ic(a, "byradius") && i + 2 < remaining && geosearch && !bybox {
            let (r, c) = parse_radius(&args[at + 1], &args[at + 2])?;
            shape_kind = ShapeKind::Circle { radius: r };
            conversion = c;
            byradius = true;
            i += 2;
        } else if eq_ic(a, "bybox") && i + 3 < remaining && geosearch && !byradius {
            let (w, h, c) = parse_box(&args[at + 1], &args[at + 2], &args[at + 3])?;
            shape_kind = ShapeKind::Box {
                width: w,
                height: h,
            };
            conversion = c;
            bybox = true;
            i += 3;
        } else {
            return Err(ERR_SYNTAX.into());
        }
        i += 1;
    }

    if store.is_some() && (withdist || withhash || withcoord) {
        return Err(format!(
            "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if kind == Search::GeosearchStore {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )
        .into());
    }
    if geosearch && !(frommember || fromloc) {
        return Err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            args.str(0)
        )
        .into());
    }
    if geosearch && !(byradius || bybox) {
        return Err(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            args.str(0)
        )
        .into());
    }
    if any && count == 0 {
        return Err("ERR the ANY argument requires COUNT argument".into());
    }
    let mut found = Found {
        store,
        storedist,
        withdist,
        withhash,
        withcoord,
        conversion,
        points: None,
    };
    let Some(z) = z else {
        return Ok(found);
    };
    // COUNT picks the nearest members: it implies ASC unless ANY asked for any of them.
    if count != 0 && sort == Sort::None && !any {
        sort = Sort::Asc;
    }
    let shape = Shape {
        center,
        conversion,
        kind: shape_kind,
    };
    let mut points = search_points(z, &shape, if any { count as usize } else { 0 });
    let returned = if count == 0 {
        points.len()
    } else {
        points.len().min(count as usize)
    };
    if sort != Sort::None {
        let desc = sort == Sort::Desc;
        let cmp = |a: &Point, b: &Point| {
            let o = cmp_dist(a.dist, b.dist);
            if desc {
                o.reverse()
            } else {
                o
            }
        };
        if returned == points.len() {
            // A full sort: libc's qsort is a stable merge sort, as Rust's sort is.
            points.sort_by(cmp);
        } else if returned > 0 {
            // Only the first `returned` places matter: Redis's partial quicksort, whose
            // choices among equal distances decide which members make it.
            pqsort(&mut points, &cmp, 0, returned - 1);
        }
    }
    points.truncate(returned);
    found.points = Some(points);
    Ok(found)
}

/// The argument indexes that may name the destination of GEORADIUS / GEORADIUSBYMEMBER (every
/// argument after a STORE or STOREDIST keyword): locked with the source before parsing.
fn store_candidates(args: &Args, base: usize) -> Vec<usize> {
    (base..args.len().saturating_sub(1))
        .filter(|&i| eq_ic(&args[i], "store") || eq_ic(&args[i], "storedist"))
        .map(|i| i + 1)
        .collect()
}

fn search_generic(ctx: &mut Ctx, args: &Args, kind: Search, nostore: bool) {
    let src_idx = if kind == Search::GeosearchStore { 2 } else { 1 };
    let src = &args[src_idx];
    let mut keys: Vec<&[u8]> = vec![src];
    match kind {
        Search::GeosearchStore => keys.push(&args[1]),
        Search::Coords | Search::Member if !nostore => {
            let base = if kind == Search::Coords { 6 } else { 5 };
            keys.extend(store_candidates(args, base).into_iter().map(|i| &args[i]));
        }
        _ => {}
    }
    let (hashes, mut g) = ctx.lock_keys(keys.iter().copied());
    let db = ctx.conn.db;

    let found = {
        let shard = g.shard(db, hashes[0]);
        match lookup_read(ctx, shard, hashes[0], src) {
            Err(e) => Err(Cow::Borrowed(e)),
            Ok(z) => parse_and_search(z, args, kind, nostore),
        }
    };
    let found = match found {
        Ok(f) => f,
        Err(e) => {
            drop(g);
            return ctx.error(&e);
        }
    };

    let Some(dst_idx) = found.store else {
        drop(g);
        return reply_points(ctx.out, &found);
    };
    let dst = &args[dst_idx];
    let dh = key_hash(dst);
    let shard = g.shard(db, dh);
    let points = found.points.unwrap_or_default();
    if points.is_empty() {
        let existed = tern_runtime::background::delete_live(ctx.srv, shard, dh, dst, ctx.now_ms);
        drop(g);
        if existed {
            ctx.notify(notify::GENERIC, "del", dst);
            ctx.dirty(1);
        }
        return ctx.out.int(0);
    }
    let n = points.len();
    let mut seen = std::collections::HashSet::with_capacity(n);
    let pairs: Vec<(Vec<u8>, f64)> = points
        .into_iter()
        .filter(|p| seen.insert(p.member.clone()))
        .map(|p| {
            let score = if found.storedist {
                p.dist / found.conversion
            } else {
                p.score
            };
            (p.member, score)
        })
        .collect();
    tern_runtime::background::replace_value(
        ctx.srv,
        shard,
        dh,
        dst,
        Value::ZSet(ZSetValue::from_pairs(pairs)),
        ctx.now_ms,
    );
    drop(g);
    let event = if matches!(kind, Search::GeosearchStore) {
        "geosearchstore"
    } else {
        "georadiusstore"
    };
    ctx.notify(notify::ZSET, event, dst);
    ctx.dirty(n as u64);
    ctx.out.int(n as i64);
}

/// The search reply: members, or `[member, dist?, hash?, [lon, lat]?]` entries.
fn reply_points(out: &mut Reply, found: &Found) {
    let Some(points) = &found.points else {
        return out.array(0);
    };
    let extra = found.withdist as usize + found.withhash as usize + found.withcoord as usize;
    out.array(points.len());
    for p in points {
        if extra > 0 {
            out.array(extra + 1);
        }
        out.bulk(&p.member);
        if found.withdist {
            out.bulk(geohash::format_distance(p.dist / found.conversion).as_bytes());
        }
        if found.withhash {
            out.int(p.score as i64);
        }
        if found.withcoord {
            out.array(2);
            reply_coord(out, p.lon);
            reply_coord(out, p.lat);
        }
    }
}

fn georadius(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Search::Coords, false);
}

fn georadius_ro(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Search::Coords, true);
}

fn georadiusbymember(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Search::Member, false);
}

fn georadiusbymember_ro(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Search::Member, true);
}

fn geosearch(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Search::Geosearch, false);
}

fn geosearchstore(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Search::GeosearchStore, false);
}

/// Distances compared the way Redis's sort callback does (greater, equal, else less).
fn cmp_dist(a: f64, b: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    if a > b {
        Ordering::Greater
    } else if a == b {
        Ordering::Equal
    } else {
        Ordering::Less
    }
}

/// The median of three elements by index, with the comparisons in Bentley and McIlroy's order.
fn med3<T>(
    v: &[T],
    a: usize,
    b: usize,
    c: usize,
    cmp: &impl Fn(&T, &T) -> std::cmp::Ordering,
) -> usize {
    use std::cmp::Ordering::{Greater, Less};
    if cmp(&v[a], &v[b]) == Less {
        if cmp(&v[b], &v[c]) == Less {
            b
        } else if cmp(&v[a], &v[c]) == Less {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) == Greater {
        b
    } else if cmp(&v[a], &v[c]) == Less {
        a
    } else {
        c
    }
}

/// Swap the `n` elements at `a..` with those at `b..`, one pair after the other.
fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// Partial sort (Bentley-McIlroy three-way quicksort that only recurses into the parts
/// overlapping positions `lo..=hi`), the algorithm Redis uses to sort a search's nearest
/// members when COUNT cuts the result: equal distances are ordered as Redis orders them.
fn pqsort<T>(v: &mut [T], cmp: &impl Fn(&T, &T) -> std::cmp::Ordering, lo: usize, hi: usize) {
    let len = v.len();
    pqsort_part(v, 0, len, cmp, lo, hi);
}

fn pqsort_part<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    cmp: &impl Fn(&T, &T) -> std::cmp::Ordering,
    lo: usize,
    hi: usize,
) {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let overlaps = |start: usize, count: usize| !(hi < start || lo >= start + count);
    loop {
        if n < 7 {
            for m in a + 1..a + n {
                let mut l = m;
                while l > a && cmp(&v[l - 1], &v[l]) == Greater {
                    v.swap(l, l - 1);
                    l -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let c = cmp(&v[pb], &v[a]);
                if c == Greater {
                    break;
                }
                if c == Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&v[pc], &v[a]);
                if c == Less {
                    break;
                }
                if c == Equal {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        vecswap(v, a, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && overlaps(a, r) {
            pqsort_part(v, a, r, cmp, lo, hi);
        }
        let r = pd - pc;
        if r > 1 {
            a = pn - r;
            n = r;
            if overlaps(a, n) {
                continue;
            }
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pqsort_sorts_the_requested_prefix() {
        let mut seed = 12345u64;
        for n in [1usize, 2, 5, 7, 8, 13, 40, 41, 100, 1000] {
            for hi in [0, n / 3, n - 1] {
                let mut v: Vec<u32> = (0..n)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                        ((seed >> 33) % 50) as u32
                    })
                    .collect();
                let mut sorted = v.clone();
                sorted.sort();
                pqsort(&mut v, &|a: &u32, b: &u32| a.cmp(b), 0, hi);
                assert_eq!(v[..=hi], sorted[..=hi], "n={n} hi={hi}");
            }
        }
    }
}

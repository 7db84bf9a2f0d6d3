//! Bitmap commands: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO.
//!
//! Bitmaps are plain strings: bit 0 is the most significant bit of the first byte. Integer
//! encoded strings are read through their decimal digits; every write turns the value into a
//! `raw` string, growing it with zero bytes as far as the highest bit written.

use tern_engine::thin::ThinBuf;
use tern_engine::{RString, ShardData, Value};
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use tern_runtime::ctx::Ctx;
use tern_runtime::keyspace_access::{as_str, max_bulk_len, store_value};
use tern_runtime::notify;
use tern_runtime::table::CommandSpec;

const ERR_BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const ERR_BIT_VALUE: &str = "ERR bit is not an integer or out of range";
const ERR_BITFIELD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "bitmap";
    ("setbit", 4, [WRITE DENYOOM], [BITMAP], [key(1, RW ACCESS UPDATE)], setbit, "2.2.0",
        "Sets or clears one bit of a string value, creating or zero-extending the string as needed."),
    ("getbit", 3, [READONLY FAST], [BITMAP], [key(1, RO ACCESS)], getbit, "2.2.0",
        "Returns one bit of a string value (bits past the end read as zero)."),
    ("bitcount", -2, [READONLY], [BITMAP], [key(1, RO ACCESS)], bitcount, "2.6.0",
        "Counts the bits set to 1 in a string value, optionally within a byte or bit range.",
        complexity: "O(N), N being the number of bytes counted."),
    ("bitpos", -3, [READONLY], [BITMAP], [key(1, RO ACCESS)], bitpos, "2.8.7",
        "Finds the position of the first bit set to 1 or 0 in a string value, optionally within a range.",
        complexity: "O(N), N being the number of bytes scanned."),
    ("bitop", -4, [WRITE DENYOOM], [BITMAP], [key(2, OW UPDATE), range(3, -1, 1, RO ACCESS)], bitop,
        "2.6.0", "Combines string values with AND, OR, XOR or NOT and stores the result in a key.",
        complexity: "O(N), N being the length of the longest source string."),
    ("bitfield", -2, [WRITE DENYOOM], [BITMAP], [key(1, RW ACCESS UPDATE VARIABLE_FLAGS)], bitfield,
        "3.2.0",
        "Reads, writes and increments integers of any width from 1 to 64 bits inside a string value.",
        complexity: "O(1) per subcommand."),
    ("bitfield_ro", -2, [READONLY FAST], [BITMAP], [key(1, RO ACCESS)], bitfield_ro, "6.0.0",
        "Reads integers of any width from 1 to 64 bits inside a string value (GET only).",
        complexity: "O(1) per subcommand."),
};

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// A bit offset argument: a non-negative integer whose byte lies below proto-max-bulk-len.
/// With `bits > 0` (BITFIELD) the `#N` form means N fields of `bits` bits (the product wraps
/// like Redis's, then the same range check applies).
fn parse_bit_offset(arg: &[u8], bits: u32, limit: i64) -> Result<u64, &'static str> {
    let positional = bits > 0 && arg.first() == Some(&b'#');
    let digits = if positional { &arg[1..] } else { arg };
    let mut n = parse_i64(digits).ok_or(ERR_BIT_OFFSET)?;
    if positional {
        n = n.wrapping_mul(bits as i64);
    }
    if n < 0 || (n >> 3) >= limit {
        return Err(ERR_BIT_OFFSET);
    }
    Ok(n as u64)
}

/// A BITFIELD type: `i1`..`i64` or `u1`..`u63`. Returns (signed, bits).
fn parse_bitfield_type(arg: &[u8]) -> Result<(bool, u32), &'static str> {
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(ERR_BITFIELD_TYPE),
    };
    match parse_i64(&arg[1..]) {
        Some(n) if n >= 1 && n <= if signed { 64 } else { 63 } => Ok((signed, n as u32)),
        _ => Err(ERR_BITFIELD_TYPE),
    }
}

/// Number of bits set in `bytes`, eight bytes at a time.
pub fn popcount(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(32);
    let mut total = 0u64;
    for c in &mut chunks {
        let w = |i: usize| u64::from_ne_bytes(c[i..i + 8].try_into().unwrap()).count_ones();
        total += (w(0) + w(8) + w(16) + w(24)) as u64;
    }
    let rest = chunks.remainder();
    let mut words = rest.chunks_exact(8);
    for c in &mut words {
        total += u64::from_ne_bytes(c.try_into().unwrap()).count_ones() as u64;
    }
    total
        + words
            .remainder()
            .iter()
            .map(|b| b.count_ones() as u64)
            .sum::<u64>()
}

/// Bits set between bit positions `first` and `last` (inclusive; both inside `p`).
fn popcount_bits(p: &[u8], first: u64, last: u64) -> u64 {
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    let head_mask = 0xffu8 >> (first & 7);
    let tail_mask = 0xffu8 << (7 - (last & 7));
    if fb == lb {
        return (p[fb] & head_mask & tail_mask).count_ones() as u64;
    }
    (p[fb] & head_mask).count_ones() as u64
        + popcount(&p[fb + 1..lb])
        + (p[lb] & tail_mask).count_ones() as u64
}

/// Index of the first byte of `p` that differs from `skip` (whole words are compared first).
fn first_byte_not(p: &[u8], skip: u8) -> Option<usize> {
    let word = u64::from_ne_bytes([skip; 8]);
    let mut i = 0;
    for c in p.chunks_exact(8) {
        if u64::from_ne_bytes(c.try_into().unwrap()) != word {
            break;
        }
        i += 8;
    }
    p[i..].iter().position(|&b| b != skip).map(|j| i + j)
}

/// Position of the first bit equal to `bit` between bit positions `first` and `last`
/// (inclusive; both inside `p`).
fn find_bit(p: &[u8], first: u64, last: u64, bit: bool) -> Option<u64> {
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    // Look for set bits: to find a clear bit, search the complement.
    let flip = if bit { 0u8 } else { 0xff };
    let head_mask = 0xffu8 >> (first & 7);
    let tail_mask = 0xffu8 << (7 - (last & 7));
    let in_byte = |idx: usize, mask: u8| -> Option<u64> {
        let v = (p[idx] ^ flip) & mask;
        (v != 0).then(|| idx as u64 * 8 + v.leading_zeros() as u64)
    };
    if fb == lb {
        return in_byte(fb, head_mask & tail_mask);
    }
    if let Some(pos) = in_byte(fb, head_mask) {
        return Some(pos);
    }
    if let Some(j) = first_byte_not(&p[fb + 1..lb], flip) {
        return in_byte(fb + 1 + j, 0xff);
    }
    in_byte(lb, tail_mask)
}

/// Redis's range normalisation for BITCOUNT/BITPOS: negative indexes count from the end,
/// both ends are clamped into [0, len-1]. Returns None for an empty range.
fn clamp_range(total: i64, start: i64, end: i64) -> Option<(u64, u64)> {
    let mut start = if start < 0 { total + start } else { start };
    let mut end = if end < 0 { total + end } else { end };
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    (start <= end).then_some((start as u64, end as u64))
}

/// BYTE or BIT unit keyword: true for BIT.
fn parse_unit(arg: &[u8]) -> Result<bool, &'static str> {
    if eq_ic(arg, "bit") {
        Ok(true)
    } else if eq_ic(arg, "byte") {
        Ok(false)
    } else {
        Err(ERR_SYNTAX)
    }
}

/// Look a key up for a bit write, the way Redis's lookupStringForBitCommand does: a missing
/// key becomes a zeroed raw string; an existing string becomes raw and grows with zero bytes
/// so that byte `min_len - 1` exists. `f` gets the buffer and whether the key was created or
/// grew, and says whether it changed the key (Redis signals it then, and only then: a SETBIT
/// of the bit already there, a BITFIELD whose writes all failed, are no WATCH touch). Err
/// means the key holds another type.
fn with_bit_string<R>(
    ctx: &mut Ctx,
    shard: &mut ShardData,
    h: u64,
    key: &[u8],
    min_len: usize,
    f: impl FnOnce(&mut ThinBuf, bool) -> (R, bool),
) -> Result<(R, bool), &'static str> {
    let now = ctx.now_ms;
    match ctx.lookup_write::<RString>(shard, h, key).checked()? {
        Some(s) => {
            let buf = s.make_raw();
            let grown = buf.len() < min_len;
            if grown {
                buf.resize(min_len, 0);
            }
            let (r, changed) = f(buf, grown);
            if changed {
                shard.touch(key);
            } else if grown {
                // Grown with zeros but no write counted (every BITFIELD write failed): Redis
                // keeps the longer string without signalling it.
                shard.quiet_change(key);
            }
            Ok((r, changed))
        }
        None => {
            let mut buf = ThinBuf::new();
            buf.resize(min_len, 0);
            let (r, changed) = f(&mut buf, true);
            let value = Value::Str(RString::Raw(buf));
            if changed {
                shard.set(h, key, value, false, now);
            } else {
                // Redis creates the key before the writes, and signals it only if one was made.
                shard.set_quiet(h, key, value, now);
            }
            Ok((r, changed))
        }
    }
}

/// Run `f` over the bytes of the string at `key`, counting a keyspace hit or miss like
/// Redis's lookupKeyRead. Ok(None): no such key; Err: another type.
fn read_string<R>(
    ctx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> R,
) -> Result<Option<R>, &'static str> {
    let (h, mut shard) = ctx.lock(key);
    let r = match ctx.lookup_source::<RString>(&mut shard, h, key).checked() {
        Ok(s) => Ok(s.map(|s| s.with_bytes(f))),
        Err(e) => Err(e.into()),
    };
    drop(shard);
    ctx.hit(!matches!(r, Ok(None)), key);
    r
}

// ---------------------------------------------------------------------------------------------
// SETBIT / GETBIT
// ---------------------------------------------------------------------------------------------

fn setbit(ctx: &mut Ctx, args: &Args) {
    let offset = match parse_bit_offset(&args[2], 0, max_bulk_len(ctx)) {
        Ok(o) => o,
        Err(e) => return ctx.error(e),
    };
    let on = match parse_i64(&args[3]) {
        Some(v) if v & !1 == 0 => v == 1,
        _ => return ctx.error(ERR_BIT_VALUE),
    };
    let key = &args[1];
    let byte = (offset >> 3) as usize;
    let mask = 0x80u8 >> (offset & 7);
    let (h, mut shard) = ctx.lock(key);
    let r = with_bit_string(ctx, &mut shard, h, key, byte + 1, |buf, grown| {
        let old = buf[byte] & mask != 0;
        if on {
            buf[byte] |= mask;
        } else {
            buf[byte] &= !mask;
        }
        (old, grown || old != on)
    });
    drop(shard);
    match r {
        Ok((old, changed)) => {
            if changed {
                ctx.notify(notify::STRING, "setbit", key);
                ctx.dirty(1);
            }
            ctx.out.int(old as i64);
        }
        Err(e) => ctx.error(e),
    }
}

fn getbit(ctx: &mut Ctx, args: &Args) {
    let offset = match parse_bit_offset(&args[2], 0, max_bulk_len(ctx)) {
        Ok(o) => o,
        Err(e) => return ctx.error(e),
    };
    let byte = (offset >> 3) as usize;
    let mask = 0x80u8 >> (offset & 7);
    match read_string(ctx, &args[1], |p| {
        p.get(byte).is_some_and(|b| b & mask != 0)
    }) {
        Ok(bit) => ctx.out.int(bit.unwrap_or(false) as i64),
        Err(e) => ctx.error(e),
    }
}

// ---------------------------------------------------------------------------------------------
// BITCOUNT / BITPOS
// ---------------------------------------------------------------------------------------------

/// BITCOUNT over the bytes `p` with the command's optional range arguments.
fn bitcount_of(p: &[u8], args: &Args) -> Result<i64, &'static str> {
    let len = p.len() as i64;
    let (first, last) = match args.len() {
        2 => match clamp_range(len, 0, len - 1) {
            Some((a, b)) => (a * 8, b * 8 + 7),
            None => return Ok(0),
        },
        4 | 5 => {
            let start = parse_i64(&args[2]).ok_or(ERR_NOT_INT)?;
            let end = parse_i64(&args[3]).ok_or(ERR_NOT_INT)?;
            if start < 0 && end < 0 && start > end {
                return Ok(0);
            }
            let bits = if args.len() == 5 {
                parse_unit(&args[4])?
            } else {
                false
            };
            let total = if bits { len * 8 } else { len };
            match clamp_range(total, start, end) {
                None => return Ok(0),
                Some((a, b)) if bits => (a, b),
                Some((a, b)) => (a * 8, b * 8 + 7),
            }
        }
        _ => return Err(ERR_SYNTAX),
    };
    Ok(popcount_bits(p, first, last) as i64)
}

fn bitcount(ctx: &mut Ctx, args: &Args) {
    match read_string(ctx, &args[1], |p| bitcount_of(p, args)) {
        Ok(None) => ctx.out.int(0),
        Ok(Some(Ok(n))) => ctx.out.int(n),
        Ok(Some(Err(e))) | Err(e) => ctx.error(e),
    }
}

/// BITPOS over the bytes `p` looking for `bit`, with the optional range arguments.
fn bitpos_of(p: &[u8], bit: bool, args: &Args) -> Result<i64, &'static str> {
    let len = p.len() as i64;
    let (range, end_given) = match args.len() {
        3 => (
            clamp_range(len, 0, len - 1).map(|(a, b)| (a * 8, b * 8 + 7)),
            false,
        ),
        4..=6 => {
            let start = parse_i64(&args[3]).ok_or(ERR_NOT_INT)?;
            let bits = if args.len() == 6 {
                parse_unit(&args[5])?
            } else {
                false
            };
            let end = if args.len() >= 5 {
                parse_i64(&args[4]).ok_or(ERR_NOT_INT)?
            } else if bits {
                len * 8 + 7
            } else {
                len - 1
            };
            let total = if bits { len * 8 } else { len };
            let r = clamp_range(total, start, end);
            let r = if bits {
                r
            } else {
                r.map(|(a, b)| (a * 8, b * 8 + 7))
            };
            (r, args.len() >= 5)
        }
        _ => return Err(ERR_SYNTAX),
    };
    // An empty range holds neither a 0 nor a 1.
    let Some((first, last)) = range else {
        return Ok(-1);
    };
    Ok(match find_bit(p, first, last, bit) {
        Some(pos) => pos as i64,
        // Without an explicit end, the string counts as followed by zero bits.
        None if !bit && !end_given => last as i64 + 1,
        None => -1,
    })
}

fn bitpos(ctx: &mut Ctx, args: &Args) {
    let bit = match parse_i64(&args[2]) {
        Some(b @ (0 | 1)) => b == 1,
        Some(_) => return ctx.error("ERR The bit argument must be 1 or 0."),
        None => return ctx.error(ERR_NOT_INT),
    };
    match read_string(ctx, &args[1], |p| bitpos_of(p, bit, args)) {
        Ok(None) => ctx.out.int(if bit { -1 } else { 0 }),
        Ok(Some(Ok(n))) => ctx.out.int(n),
        Ok(Some(Err(e))) | Err(e) => ctx.error(e),
    }
}

// ---------------------------------------------------------------------------------------------
// BITOP
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// Fold one more source into the result (sources shorter than others count as zero-padded).
fn fold_source(res: &mut ThinBuf, src: &[u8], first: bool, op: BitOp) {
    if first {
        if op == BitOp::Not {
            res.extend_from_slice(src);
            res.iter_mut().for_each(|b| *b = !*b);
        } else {
            res.extend_from_slice(src);
        }
        return;
    }
    let n = res.len().min(src.len());
    let (head, tail) = (&mut res[..n], &src[..n]);
    match op {
        BitOp::And => {
            head.iter_mut().zip(tail).for_each(|(d, s)| *d &= *s);
            // Past the end of the shorter side everything is ANDed with zero.
            res[n..].fill(0);
            res.resize(src.len().max(res.len()), 0);
        }
        BitOp::Or | BitOp::Xor => {
            if op == BitOp::Or {
                head.iter_mut().zip(tail).for_each(|(d, s)| *d |= *s);
            } else {
                head.iter_mut().zip(tail).for_each(|(d, s)| *d ^= *s);
            }
            if src.len() > n {
                res.extend_from_slice(&src[n..]);
            }
        }
        BitOp::Not => unreachable!("NOT has a single source"),
    }
}

fn bitop(ctx: &mut Ctx, args: &Args) {
    let name = &args[1];
    let op = if eq_ic(name, "and") {
        BitOp::And
    } else if eq_ic(name, "or") {
        BitOp::Or
    } else if eq_ic(name, "xor") {
        BitOp::Xor
    } else if eq_ic(name, "not") {
        BitOp::Not
    } else {
        return ctx.error(ERR_SYNTAX);
    };
    if op == BitOp::Not && args.len() != 4 {
        return ctx.error("ERR BITOP NOT must be called with a single source key.");
    }
    let dest = &args[2];
    let (hashes, mut g) = ctx.lock_keys(args.iter().skip(2));
    let db = ctx.conn.db;
    let mut res = ThinBuf::new();
    for (j, &h) in hashes.iter().enumerate().skip(1) {
        let key = &args[2 + j];
        let first = j == 1;
        // Sources are only read: never a WATCH touch.
        match ctx.read_key(g.shard(db, h), h, key) {
            None => {
                ctx.hit(false, key);
                fold_source(&mut res, &[], first, op);
            }
            Some(e) => {
                ctx.touch(e);
                ctx.hit(true, key);
                let Some(s) = as_str(&e.value) else {
                    drop(g);
                    return ctx.error(ERR_WRONGTYPE);
                };
                s.with_bytes(|b| fold_source(&mut res, b, first, op));
            }
        }
    }
    res.shrink_to_fit();
    let len = res.len();
    let h = hashes[0];
    let shard = g.shard(db, h);
    if len > 0 {
        store_value(ctx, shard, h, dest, Value::Str(RString::Raw(res)), false);
        drop(g);
        ctx.notify(notify::STRING, "set", dest);
        ctx.dirty(1);
    } else {
        let removed = shard.remove(h, dest).is_some();
        drop(g);
        if removed {
            ctx.notify(notify::GENERIC, "del", dest);
            ctx.dirty(1);
        }
    }
    ctx.out.int(len as i64);
}

// ---------------------------------------------------------------------------------------------
// BITFIELD
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum FieldOp {
    Get,
    Set(i64),
    IncrBy(i64),
}

#[derive(Clone, Copy, Debug)]
struct Field {
    op: FieldOp,
    offset: u64,
    bits: u32,
    signed: bool,
    overflow: Overflow,
}

/// Parse the BITFIELD subcommands (from argument 2). Returns the operations and, when any of
/// them writes, the highest bit position written.
fn parse_fields(args: &Args, limit: i64) -> Result<(Vec<Field>, Option<u64>), &'static str> {
    let mut fields = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest: Option<u64> = None;
    let mut j = 2;
    while j < args.len() {
        let remaining = args.len() - j - 1;
        let sub = &args[j];
        let kind = if eq_ic(sub, "get") && remaining >= 2 {
            0
        } else if eq_ic(sub, "set") && remaining >= 3 {
            1
        } else if eq_ic(sub, "incrby") && remaining >= 3 {
            2
        } else if eq_ic(sub, "overflow") && remaining >= 1 {
            let t = &args[j + 1];
            overflow = if eq_ic(t, "wrap") {
                Overflow::Wrap
            } else if eq_ic(t, "sat") {
                Overflow::Sat
            } else if eq_ic(t, "fail") {
                Overflow::Fail
            } else {
                return Err("ERR Invalid OVERFLOW type specified");
            };
            j += 2;
            continue;
        } else {
            return Err(ERR_SYNTAX);
        };
        let (signed, bits) = parse_bitfield_type(&args[j + 1])?;
        let offset = parse_bit_offset(&args[j + 2], bits, limit)?;
        let op = if kind == 0 {
            FieldOp::Get
        } else {
            let last = offset + bits as u64 - 1;
            highest = Some(highest.map_or(last, |h| h.max(last)));
            let v = parse_i64(&args[j + 3]).ok_or(ERR_NOT_INT)?;
            if kind == 1 {
                FieldOp::Set(v)
            } else {
                FieldOp::IncrBy(v)
            }
        };
        fields.push(Field {
            op,
            offset,
            bits,
            signed,
            overflow,
        });
        j += if kind == 0 { 3 } else { 4 };
    }
    Ok((fields, highest))
}

/// The nine bytes from `byte` on (zero past the end) as one big-endian number.
fn window(p: &[u8], byte: usize) -> u128 {
    let mut w = [0u8; 16];
    if byte < p.len() {
        let n = (p.len() - byte).min(9);
        w[7..7 + n].copy_from_slice(&p[byte..byte + n]);
    }
    u128::from_be_bytes(w)
}

/// Unsigned integer of `bits` bits at bit `offset` (bits past the end read as zero).
fn get_unsigned(p: &[u8], offset: u64, bits: u32) -> u64 {
    let w = window(p, (offset >> 3) as usize);
    let shift = 72 - (offset & 7) as u32 - bits;
    ((w >> shift) as u64) & mask_of(bits)
}

fn get_signed(p: &[u8], offset: u64, bits: u32) -> i64 {
    let v = get_unsigned(p, offset, bits);
    // Sign-extend from the field's top bit.
    ((v << (64 - bits)) as i64) >> (64 - bits)
}

/// Store the low `bits` bits of `value` at bit `offset`; the buffer covers the whole field.
fn set_unsigned(p: &mut [u8], offset: u64, bits: u32, value: u64) {
    let byte = (offset >> 3) as usize;
    let shift = 72 - (offset & 7) as u32 - bits;
    let m = (mask_of(bits) as u128) << shift;
    let w = (window(p, byte) & !m) | (((value & mask_of(bits)) as u128) << shift);
    let bytes = w.to_be_bytes();
    let n = (p.len() - byte).min(9);
    p[byte..byte + n].copy_from_slice(&bytes[7..7 + n]);
}

fn mask_of(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Redis's overflow rule for unsigned fields: is `value + incr` outside [0, 2^bits-1]?
/// Returns the direction (0 none, 1 over, -1 under) and the value WRAP or SAT would store.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> (i32, u64) {
    let max = mask_of(bits);
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = (value as i64).wrapping_neg();
    let wrapped = || value.wrapping_add(incr as u64) & max;
    if value > max || (incr > 0 && incr > max_incr) {
        (1, if ow == Overflow::Sat { max } else { wrapped() })
    } else if incr < 0 && incr < min_incr {
        (-1, if ow == Overflow::Sat { 0 } else { wrapped() })
    } else {
        (0, 0)
    }
}

/// Redis's overflow rule for signed fields of `bits` bits.
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> (i32, i64) {
    let max: i64 = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrapped = || {
        let c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            ((c << (64 - bits)) as i64) >> (64 - bits)
        } else {
            c as i64
        }
    };
    let wide = bits != 64;
    if value > max || (wide && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr) {
        (1, if ow == Overflow::Sat { max } else { wrapped() })
    } else if value < min || (wide && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr)
    {
        (-1, if ow == Overflow::Sat { min } else { wrapped() })
    } else {
        (0, 0)
    }
}

/// One write (SET/INCRBY): the reply (None when OVERFLOW FAIL refused it) and whether the
/// stored bits changed.
fn apply_write(buf: &mut [u8], fd: &Field) -> (Option<i64>, bool) {
    let (incr, is_set) = match fd.op {
        FieldOp::Set(v) => (v, true),
        FieldOp::IncrBy(v) => (v, false),
        FieldOp::Get => unreachable!("GET is not a write"),
    };
    if fd.signed {
        let old = get_signed(buf, fd.offset, fd.bits);
        let (new, ov, reply) = if is_set {
            let (ov, lim) = signed_overflow(incr, 0, fd.bits, fd.overflow);
            let new = if ov != 0 { lim } else { incr };
            (new, ov, old)
        } else {
            let (ov, lim) = signed_overflow(old, incr, fd.bits, fd.overflow);
            let new = if ov != 0 { lim } else { old.wrapping_add(incr) };
            (new, ov, new)
        };
        if ov != 0 && fd.overflow == Overflow::Fail {
            return (None, false);
        }
        set_unsigned(buf, fd.offset, fd.bits, new as u64);
        (Some(reply), old != new)
    } else {
        let old = get_unsigned(buf, fd.offset, fd.bits);
        let (new, ov, reply) = if is_set {
            let v = incr as u64;
            let (ov, lim) = unsigned_overflow(v, 0, fd.bits, fd.overflow);
            let new = if ov != 0 { lim } else { v };
            (new, ov, old)
        } else {
            let (ov, lim) = unsigned_overflow(old, incr, fd.bits, fd.overflow);
            let new = if ov != 0 {
                lim
            } else {
                old.wrapping_add(incr as u64)
            };
            (new, ov, new)
        };
        if ov != 0 && fd.overflow == Overflow::Fail {
            return (None, false);
        }
        set_unsigned(buf, fd.offset, fd.bits, new);
        (Some(reply as i64), old != new)
    }
}

fn read_field(p: &[u8], fd: &Field) -> i64 {
    if fd.signed {
        get_signed(p, fd.offset, fd.bits)
    } else {
        get_unsigned(p, fd.offset, fd.bits) as i64
    }
}

fn reply_fields(ctx: &mut Ctx, replies: &[Option<i64>]) {
    ctx.out.array(replies.len());
    for r in replies {
        match r {
            Some(v) => ctx.out.int(*v),
            None => ctx.out.null(),
        }
    }
}

fn bitfield_generic(ctx: &mut Ctx, args: &Args, read_only: bool) {
    let (fields, highest) = match parse_fields(args, max_bulk_len(ctx)) {
        Ok(x) => x,
        Err(e) => return ctx.error(e),
    };
    let key = &args[1];
    let Some(highest) = highest else {
        // Only GETs: a read lookup.
        let r = read_string(ctx, key, |p| {
            fields
                .iter()
                .map(|fd| Some(read_field(p, fd)))
                .collect::<Vec<Option<i64>>>()
        });
        return match r {
            Ok(Some(replies)) => reply_fields(ctx, &replies),
            Ok(None) => {
                let zeros: Vec<Option<i64>> = fields.iter().map(|_| Some(0)).collect();
                reply_fields(ctx, &zeros)
            }
            Err(e) => ctx.error(e),
        };
    };
    if read_only {
        return ctx.error("ERR BITFIELD_RO only supports the GET subcommand");
    }
    let (h, mut shard) = ctx.lock(key);
    let need = (highest >> 3) as usize + 1;
    let r = with_bit_string(ctx, &mut shard, h, key, need, |buf, grown| {
        let mut changes = 0u64;
        let replies: Vec<Option<i64>> = fields
            .iter()
            .map(|fd| match fd.op {
                FieldOp::Get => Some(read_field(buf, fd)),
                _ => {
                    let (reply, changed) = apply_write(buf, fd);
                    if reply.is_some() && (grown || changed) {
                        changes += 1;
                    }
                    reply
                }
            })
            .collect();
        ((replies, changes), changes > 0)
    })
    .map(|(r, _)| r);
    drop(shard);
    match r {
        Ok((replies, changes)) => {
            if changes > 0 {
                ctx.notify(notify::STRING, "setbit", key);
                ctx.dirty(changes);
            }
            reply_fields(ctx, &replies);
        }
        Err(e) => ctx.error(e),
    }
}

fn bitfield(ctx: &mut Ctx, args: &Args) {
    bitfield_generic(ctx, args, false);
}

fn bitfield_ro(ctx: &mut Ctx, args: &Args) {
    bitfield_generic(ctx, args, true);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn naive_count(p: &[u8], first: u64, last: u64) -> u64 {
        (first..=last)
            .filter(|&i| p[(i >> 3) as usize] & (0x80 >> (i & 7)) != 0)
            .count() as u64
    }

    fn naive_find(p: &[u8], first: u64, last: u64, bit: bool) -> Option<u64> {
        (first..=last).find(|&i| (p[(i >> 3) as usize] & (0x80 >> (i & 7)) != 0) == bit)
    }

    #[test]
    fn bit_scans_match_naive() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for _ in 0..3000 {
            let len = rng.gen_range(1..80);
            let dense: u8 = rng.gen_range(0..4);
            let p: Vec<u8> = (0..len)
                .map(|_| {
                    let b: u8 = match dense {
                        0 => 0,
                        1 => 0xff,
                        _ => rng.gen(),
                    };
                    if rng.gen_ratio(1, 20) {
                        rng.gen()
                    } else {
                        b
                    }
                })
                .collect();
            let total = len as u64 * 8;
            let a = rng.gen_range(0..total);
            let b = rng.gen_range(a..total);
            assert_eq!(popcount_bits(&p, a, b), naive_count(&p, a, b));
            for bit in [false, true] {
                assert_eq!(find_bit(&p, a, b, bit), naive_find(&p, a, b, bit));
            }
            assert_eq!(popcount(&p), naive_count(&p, 0, total - 1));
        }
    }

    #[test]
    fn field_get_set_roundtrip() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        for _ in 0..3000 {
            let mut buf = vec![0u8; 20];
            rng.fill(&mut buf[..]);
            let bits = rng.gen_range(1..=64u32);
            let offset = rng.gen_range(0..(160 - bits as u64));
            let before = buf.clone();
            let v: u64 = rng.gen();
            set_unsigned(&mut buf, offset, bits, v);
            assert_eq!(get_unsigned(&buf, offset, bits), v & mask_of(bits));
            // Bits outside the field are untouched.
            for i in 0..160u64 {
                if i < offset || i >= offset + bits as u64 {
                    let m = 0x80u8 >> (i & 7);
                    assert_eq!(buf[(i >> 3) as usize] & m, before[(i >> 3) as usize] & m);
                }
            }
        }
        // Reads past the end are zero-padded.
        assert_eq!(get_unsigned(&[0xff], 4, 8), 0xf0);
        assert_eq!(get_signed(&[0x80], 0, 1), -1);
        assert_eq!(get_signed(&[0xff; 8], 0, 64), -1);
    }

    #[test]
    fn overflow_rules() {
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Wrap), (1, 4));
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Sat), (1, 255));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Sat), (-1, 0));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Wrap), (-1, 251));
        assert_eq!(
            unsigned_overflow(-1i64 as u64, 0, 8, Overflow::Wrap),
            (1, 255)
        );
        assert_eq!(signed_overflow(100, 100, 8, Overflow::Wrap), (1, -56));
        assert_eq!(signed_overflow(100, 100, 8, Overflow::Sat), (1, 127));
        assert_eq!(signed_overflow(-100, -100, 8, Overflow::Sat), (-1, -128));
        assert_eq!(
            signed_overflow(i64::MAX, 1, 64, Overflow::Wrap),
            (1, i64::MIN)
        );
        assert_eq!(
            signed_overflow(i64::MIN, -1, 64, Overflow::Sat),
            (-1, i64::MIN)
        );
        assert_eq!(signed_overflow(5, 5, 64, Overflow::Sat), (0, 0));
    }

    #[test]
    fn offsets_and_types() {
        assert_eq!(parse_bit_offset(b"#3", 8, 512), Ok(24));
        assert_eq!(parse_bit_offset(b"#3", 0, 512), Err(ERR_BIT_OFFSET));
        assert_eq!(parse_bit_offset(b"-1", 0, 512), Err(ERR_BIT_OFFSET));
        assert_eq!(parse_bit_offset(b"4095", 0, 512), Ok(4095));
        assert_eq!(parse_bit_offset(b"4096", 0, 512), Err(ERR_BIT_OFFSET));
        assert_eq!(parse_bitfield_type(b"i64"), Ok((true, 64)));
        assert_eq!(parse_bitfield_type(b"u63"), Ok((false, 63)));
        assert!(parse_bitfield_type(b"u64").is_err());
        assert!(parse_bitfield_type(b"I8").is_err());
        assert!(parse_bitfield_type(b"i0").is_err());
        assert!(parse_bitfield_type(b"i").is_err());
    }
}

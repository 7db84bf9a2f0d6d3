//! The HyperLogLog representation Redis stores inside string values, byte for byte: a 16-byte
//! header ("HYLL", encoding, 3 unused bytes, 8-byte little-endian cached cardinality whose top
//! bit marks it stale) followed by either 16384 packed 6-bit registers (dense) or a run-length
//! opcode stream (sparse: ZERO `00llllll`, XZERO `01llllll llllllll`, VAL `1vvvvvll`).
//!
//! Everything here is pure; the commands live in `hll.rs`. Corrupted input is handled the way
//! Redis handles it (same results, same error detection), never by panicking.

use tern_engine::thin::ThinBuf;

/// Header size.
pub const HDR: usize = 16;
/// Bits of the hash used to pick a register.
pub const P: u32 = 14;
/// Bits left for the run of zeroes.
pub const Q: u32 = 64 - P;
pub const REGISTERS: usize = 1 << P;
const P_MASK: u64 = (REGISTERS - 1) as u64;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Length of a dense HLL string.
pub const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);
pub const DENSE: u8 = 0;
pub const SPARSE: u8 = 1;
const MAX_ENCODING: u8 = 1;

const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
const HASH_SEED: u64 = 0xadc8_3b19;
/// Offset of the cached cardinality's most significant byte.
const CARD_MSB: usize = 15;

/// Result of an update on a corrupted sparse representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupted;

// ------------------------------------------------------------------------------------------
// Hashing
// ------------------------------------------------------------------------------------------

/// MurmurHash2, 64-bit variant, reading 8-byte blocks as little-endian words.
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let len = key.len();
    let mut h = seed ^ (len as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().unwrap());
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element maps to and the length of its "000..1" pattern (1..=Q+1).
pub fn pat_len(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, HASH_SEED);
    let index = (hash & P_MASK) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

// ------------------------------------------------------------------------------------------
// Header
// ------------------------------------------------------------------------------------------

/// Redis's check that a string holds an HLL: long enough for a header, the magic, a known
/// encoding, and the exact length when dense.
pub fn is_valid(s: &[u8]) -> bool {
    s.len() >= HDR
        && &s[..4] == b"HYLL"
        && s[4] <= MAX_ENCODING
        && (s[4] != DENSE || s.len() == DENSE_SIZE)
}

pub fn encoding(s: &[u8]) -> u8 {
    s[4]
}

pub fn invalidate_cache(s: &mut [u8]) {
    s[CARD_MSB] |= 0x80;
}

/// The cached cardinality, when valid.
pub fn cached_card(s: &[u8]) -> Option<u64> {
    if s[CARD_MSB] & 0x80 != 0 {
        return None;
    }
    Some(u64::from_le_bytes(s[8..16].try_into().unwrap()))
}

pub fn set_cached_card(s: &mut [u8], card: u64) {
    s[8..16].copy_from_slice(&card.to_le_bytes());
}

/// A new, empty HLL: sparse, all registers covered by XZERO opcodes.
pub fn new_sparse() -> ThinBuf {
    let mut s = Vec::with_capacity(HDR + 2);
    s.extend_from_slice(b"HYLL");
    s.push(SPARSE);
    s.extend_from_slice(&[0; 11]);
    let mut left = REGISTERS;
    while left > 0 {
        let n = left.min(SPARSE_XZERO_MAX_LEN);
        push_xzero(&mut s, n);
        left -= n;
    }
    ThinBuf::from_slice(&s)
}

// ------------------------------------------------------------------------------------------
// Dense registers
// ------------------------------------------------------------------------------------------

/// Register `i` of a packed register array (a missing byte past the end reads as 0, like the
/// terminator Redis relies on).
#[inline]
pub fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = regs[byte] as u32;
    let b1 = regs.get(byte + 1).copied().unwrap_or(0) as u32;
    (((b0 >> fb) | (b1 << (8 - fb))) & REGISTER_MAX as u32) as u8
}

#[inline]
pub fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = val as u32;
    let m = REGISTER_MAX as u32;
    regs[byte] = ((regs[byte] as u32 & !(m << fb)) | (v << fb)) as u8;
    if let Some(b) = regs.get_mut(byte + 1) {
        let fb8 = 8 - fb;
        *b = ((*b as u32 & !(m >> fb8)) | (v >> fb8)) as u8;
    }
}

/// Raise register `i` to `count`; true when it changed.
#[inline]
pub fn dense_set(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

// ------------------------------------------------------------------------------------------
// Sparse opcodes
// ------------------------------------------------------------------------------------------

#[inline]
fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}
#[inline]
fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}
#[inline]
fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}
#[inline]
fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}
#[inline]
fn zero_len(b: u8) -> usize {
    (b & 0x3f) as usize + 1
}
#[inline]
fn xzero_len(s: &[u8], p: usize) -> usize {
    ((((s[p] & 0x3f) as usize) << 8) | at(s, p + 1) as usize) + 1
}
#[inline]
fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}
#[inline]
fn val_len(b: u8) -> usize {
    (b & 0x3) as usize + 1
}
#[inline]
fn val_op(val: u8, len: usize) -> u8 {
    ((val - 1) << 2 | (len as u8 - 1)) | 0x80
}
fn push_xzero(s: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    s.push((l >> 8) as u8 | 0x40);
    s.push((l & 0xff) as u8);
}
/// A ZERO or XZERO opcode for a run of `len` zero registers.
fn push_zeros(s: &mut Vec<u8>, len: usize) {
    if len > SPARSE_ZERO_MAX_LEN {
        push_xzero(s, len);
    } else {
        s.push((len - 1) as u8);
    }
}

/// Walk a sparse opcode stream, calling `run(first_register, len, value)` for VAL opcodes.
/// Err when an opcode would run past the last register (patched Redis checks every opcode
/// kind for that) or when the opcodes do not cover exactly all registers.
fn walk_sparse(s: &[u8], mut run: impl FnMut(usize, usize, u8)) -> Result<(), Corrupted> {
    let mut p = HDR;
    let mut idx = 0usize;
    while p < s.len() {
        let b = s[p];
        let (len, oplen) = if is_zero(b) {
            (zero_len(b), 1)
        } else if is_xzero(b) {
            (xzero_len(s, p), 2)
        } else {
            (val_len(b), 1)
        };
        if len + idx > REGISTERS {
            return Err(Corrupted);
        }
        if is_val(b) {
            run(idx, len, val_value(b));
        }
        idx += len;
        p += oplen;
    }
    if idx == REGISTERS {
        Ok(())
    } else {
        Err(Corrupted)
    }
}

/// Convert a sparse HLL to dense in place (the header, cached cardinality included, is kept).
/// A dense HLL is left alone.
pub fn sparse_to_dense(s: &mut ThinBuf) -> Result<(), Corrupted> {
    if s[4] == DENSE {
        return Ok(());
    }
    let mut dense = ThinBuf::new();
    dense.resize(DENSE_SIZE, 0);
    dense[..HDR].copy_from_slice(&s[..HDR]);
    dense[4] = DENSE;
    let regs = &mut dense[HDR..];
    walk_sparse(s, |first, len, val| {
        for i in first..first + len {
            dense_put(regs, i, val);
        }
    })?;
    *s = dense;
    Ok(())
}

/// Raise register `index` of a sparse HLL to `count`, promoting it to dense when the value
/// does not fit a VAL opcode or the string would grow past `max_bytes`. Ok(true) when a
/// register changed.
pub fn sparse_set(
    s: &mut ThinBuf,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Result<bool, Corrupted> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(s, index, count);
    }
    // Step 1: find the opcode covering `index`.
    let mut end = s.len();
    let mut p = HDR;
    let mut first = 0usize;
    let mut prev: Option<usize> = None;
    let mut span = 0usize;
    while p < end {
        let b = s[p];
        let mut oplen = 1;
        if is_zero(b) {
            span = zero_len(b);
        } else if is_val(b) {
            span = val_len(b);
        } else {
            span = xzero_len(s, p);
            oplen = 2;
        }
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Corrupted);
    }
    let op = s[p];
    let (zero, xzero) = (is_zero(op), is_xzero(op));
    let oldlen = if xzero { 2 } else { 1 };
    let next = (p + oldlen < end).then_some(p + oldlen);

    let mut simple = false;
    if is_val(op) {
        let old = val_value(op);
        if old >= count {
            return Ok(false);
        }
        if span == 1 {
            s[p] = val_op(count, 1);
            simple = true;
        }
    } else if zero && span == 1 {
        s[p] = val_op(count, 1);
        simple = true;
    }

    if !simple {
        // Step 2: split the opcode into up to three.
        let last = first + span - 1;
        let mut seq: Vec<u8> = Vec::with_capacity(5);
        if zero || xzero {
            if index != first {
                push_zeros(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                push_zeros(&mut seq, last - index);
            }
        } else {
            let cur = val_value(op);
            if index != first {
                seq.push(val_op(cur, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(cur, last - index));
            }
        }
        // Step 3: put the new sequence in place of the old opcode.
        let delta = seq.len() as isize - oldlen as isize;
        if delta > 0 && end + delta as usize > max_bytes {
            return promote(s, index, count);
        }
        let new_len = (end as isize + delta) as usize;
        let cut_end = match next {
            Some(n) => n,
            None => end,
        };
        s.splice(p..cut_end, &seq);
        s.truncate(new_len);
        end = new_len;
    }

    // Step 4: merge adjacent VAL opcodes of equal value around the change.
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < end && scan > 0 {
        scan -= 1;
        let b = s[p];
        if is_xzero(b) {
            p += 2;
            continue;
        } else if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < end && is_val(s[p + 1]) {
            let v1 = val_value(b);
            let v2 = val_value(s[p + 1]);
            if v1 == v2 {
                let len = val_len(b) + val_len(s[p + 1]);
                if len <= SPARSE_VAL_MAX_LEN {
                    s[p + 1] = val_op(v1, len);
                    s.remove_range(p..p + 1);
                    end -= 1;
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate_cache(s);
    Ok(true)
}

fn promote(s: &mut ThinBuf, index: usize, count: u8) -> Result<bool, Corrupted> {
    sparse_to_dense(s)?;
    dense_set(&mut s[HDR..], index, count);
    Ok(true)
}

/// Add one element. Ok(true) when a register changed. The HLL must have passed `is_valid`.
pub fn add(s: &mut ThinBuf, ele: &[u8], max_bytes: usize) -> Result<bool, Corrupted> {
    let (index, count) = pat_len(ele);
    match s[4] {
        DENSE => Ok(dense_set(&mut s[HDR..], index, count)),
        SPARSE => sparse_set(s, index, count, max_bytes),
        _ => Err(Corrupted),
    }
}

/// Merge an HLL into `max` (one byte per register): max[i] = MAX(max[i], reg[i]).
pub fn merge(max: &mut [u8], s: &[u8]) -> Result<(), Corrupted> {
    if s[4] == DENSE {
        let regs = &s[HDR..];
        for (i, m) in max.iter_mut().enumerate().take(REGISTERS) {
            let v = dense_get(regs, i);
            if v > *m {
                *m = v;
            }
        }
        return Ok(());
    }
    walk_sparse(s, |first, len, val| {
        for m in &mut max[first..first + len] {
            if val > *m {
                *m = val;
            }
        }
    })
}

// ------------------------------------------------------------------------------------------
// Estimation
// ------------------------------------------------------------------------------------------

type Histo = [i64; 64];

fn dense_histo(regs: &[u8], h: &mut Histo) {
    for i in 0..REGISTERS {
        h[dense_get(regs, i) as usize] += 1;
    }
}

/// Sparse histogram; false when the stream is corrupted.
fn sparse_histo(s: &[u8], h: &mut Histo) -> bool {
    walk_sparse(s, |_, len, val| h[val as usize] += len as i64).is_ok() && {
        let nonzero: i64 = h[1..].iter().sum();
        h[0] = REGISTERS as i64 - nonzero;
        true
    }
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let zp = z;
        z += x * y;
        y += y;
        if zp == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let zp = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if zp == z {
            return z / 3.0;
        }
    }
}

/// Ertl's improved estimator over the register histogram, rounded as Redis rounds it.
fn estimate(h: &Histo) -> u64 {
    let m = REGISTERS as f64;
    let q = Q as usize;
    let mut z = m * tau((m - h[q + 1] as f64) / m);
    for j in (1..=q).rev() {
        z += h[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(h[0] as f64 / m);
    let e = ALPHA_INF * m * m / z;
    // llround of a value it cannot represent yields LLONG_MIN, which Redis then reads back as
    // an unsigned number.
    if !e.is_finite() || e.abs() >= (1u64 << 63) as f64 {
        return i64::MIN as u64;
    }
    e.round() as i64 as u64
}

/// The estimated cardinality of a dense or sparse HLL; Err for a sparse stream that does not
/// cover exactly all registers.
pub fn count(s: &[u8]) -> Result<u64, Corrupted> {
    let mut h: Histo = [0; 64];
    if s[4] == DENSE {
        dense_histo(&s[HDR..], &mut h);
    } else if !sparse_histo(s, &mut h) {
        return Err(Corrupted);
    }
    Ok(estimate(&h))
}

/// The estimated cardinality of one register per byte (the multi-key PFCOUNT union).
pub fn count_raw(regs: &[u8]) -> u64 {
    let mut h: Histo = [0; 64];
    for &r in regs {
        h[r as usize] += 1;
    }
    estimate(&h)
}

/// PFDEBUG DECODE's rendering of a sparse stream ("z:N", "Z:N", "v:VAL,LEN").
pub fn decode_sparse(s: &[u8]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut p = HDR;
    while p < s.len() {
        let b = s[p];
        if is_zero(b) {
            out.push(format!("z:{}", zero_len(b)));
            p += 1;
        } else if is_xzero(b) {
            out.push(format!("Z:{}", xzero_len(s, p)));
            p += 2;
        } else {
            out.push(format!("v:{},{}", val_value(b), val_len(b)));
            p += 1;
        }
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_round_trip() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR];
        let mut vals = vec![0u8; REGISTERS];
        let mut x: u32 = 12345;
        for (i, v) in vals.iter_mut().enumerate() {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            *v = ((x >> 16) & 63) as u8;
            dense_put(&mut regs, i, *v);
        }
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(dense_get(&regs, i), *v);
        }
    }

    #[test]
    fn empty_counts_zero() {
        let s = new_sparse();
        assert_eq!(s.len(), 18);
        assert_eq!(count(&s), Ok(0));
        let mut d = s.clone();
        sparse_to_dense(&mut d).unwrap();
        assert_eq!(d.len(), DENSE_SIZE);
        assert_eq!(count(&d), Ok(0));
    }

    #[test]
    fn sparse_and_dense_agree() {
        let mut sp = new_sparse();
        let mut de = new_sparse();
        sparse_to_dense(&mut de).unwrap();
        for i in 0..2000u32 {
            let e = i.to_string();
            let a = add(&mut sp, e.as_bytes(), 1 << 20).unwrap();
            let b = add(&mut de, e.as_bytes(), 1 << 20).unwrap();
            assert_eq!(a, b);
        }
        assert_eq!(encoding(&sp), SPARSE);
        assert_eq!(count(&sp), count(&de));
        let mut conv = sp.clone();
        sparse_to_dense(&mut conv).unwrap();
        assert_eq!(&conv[HDR..], &de[HDR..]);
    }
}

//! Redis's listpack, byte for byte: the compact encoding of small hashes, sets, sorted sets and
//! list nodes. Keeping Redis's exact format means an RDB writer can emit these bytes as they are
//! and a reader can adopt Redis's blobs without re-encoding.
//!
//! Layout: `<total-bytes u32 LE> <count u16 LE> <entry>... <0xFF>`; each entry is
//! `<encoding+data> <backlen>` where backlen (1–5 bytes, read right to left) is the length of
//! encoding+data, so the list can be walked both ways. Strings that are canonical integers are
//! stored as integers, as Redis does.

use crate::thin::SizedBytes;
use crate::value::parse_canonical_i64;

const HDR: usize = 6;
const EOF: u8 = 0xFF;
/// The header's count saturates here; past it the count must be recomputed by walking.
const COUNT_UNKNOWN: u16 = u16::MAX;

/// One element as stored: a byte string or an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LpEntry<'a> {
    Str(&'a [u8]),
    Int(i64),
}

impl<'a> LpEntry<'a> {
    /// Run `f` over the element's bytes (integers are formatted on the stack).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match *self {
            LpEntry::Str(s) => f(s),
            LpEntry::Int(n) => f(itoa::Buffer::new().format(n).as_bytes()),
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.with_bytes(|b| b.to_vec())
    }

    /// Byte-wise equality with `s`, without formatting integers when `s` cannot be one.
    pub fn eq_bytes(&self, s: &[u8]) -> bool {
        match *self {
            LpEntry::Str(b) => b == s,
            LpEntry::Int(n) => parse_canonical_i64(s) == Some(n),
        }
    }

    /// The element as an integer when it is one (stored as an int, or a string that parses).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            LpEntry::Int(n) => Some(n),
            LpEntry::Str(s) => parse_canonical_i64(s),
        }
    }

    /// Length in bytes of the element's string form.
    pub fn str_len(&self) -> usize {
        match *self {
            LpEntry::Str(s) => s.len(),
            LpEntry::Int(n) => itoa::Buffer::new().format(n).len(),
        }
    }
}

/// A listpack. Offsets handed out by the walking methods point at an entry's first byte and
/// stay valid until the next mutation.
#[derive(Clone, PartialEq, Eq)]
pub struct Listpack {
    /// Exact size, its first four bytes the listpack's total-bytes field.
    buf: SizedBytes,
}

impl std::fmt::Debug for Listpack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut l = f.debug_list();
        for e in self.iter() {
            l.entry(&e);
        }
        l.finish()
    }
}

impl Default for Listpack {
    fn default() -> Self {
        Self::new()
    }
}

/// How an element will be encoded: its header + data bytes, built on the stack.
struct Encoded {
    head: [u8; 9],
    head_len: usize,
}

fn encode_int(v: i64) -> Encoded {
    let mut head = [0u8; 9];
    let head_len = if (0..=127).contains(&v) {
        head[0] = v as u8;
        1
    } else if (-4096..=4095).contains(&v) {
        let u = if v < 0 { (1i64 << 13) + v } else { v } as u64;
        head[0] = 0xC0 | (u >> 8) as u8;
        head[1] = u as u8;
        2
    } else if (-32768..=32767).contains(&v) {
        head[0] = 0xF1;
        head[1..3].copy_from_slice(&(v as i16).to_le_bytes());
        3
    } else if (-8388608..=8388607).contains(&v) {
        head[0] = 0xF2;
        head[1..4].copy_from_slice(&(v as i32).to_le_bytes()[..3]);
        4
    } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
        head[0] = 0xF3;
        head[1..5].copy_from_slice(&(v as i32).to_le_bytes());
        5
    } else {
        head[0] = 0xF4;
        head[1..9].copy_from_slice(&v.to_le_bytes());
        9
    };
    Encoded { head, head_len }
}

/// The header for a string of `len` bytes (the string itself follows it).
fn encode_str_head(len: usize) -> Encoded {
    let mut head = [0u8; 9];
    let head_len = if len < 64 {
        head[0] = 0x80 | len as u8;
        1
    } else if len < 4096 {
        head[0] = 0xE0 | (len >> 8) as u8;
        head[1] = len as u8;
        2
    } else {
        head[0] = 0xF0;
        head[1..5].copy_from_slice(&(len as u32).to_le_bytes());
        5
    };
    Encoded { head, head_len }
}

fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

fn write_backlen(out: &mut [u8], l: usize) -> usize {
    let n = backlen_size(l);
    for (i, b) in out[..n].iter_mut().enumerate() {
        let shift = 7 * (n - 1 - i);
        let bits = ((l >> shift) & 127) as u8;
        *b = if i == 0 { bits } else { bits | 128 };
    }
    n
}

/// An element in the form it will be stored: integer when canonical, else bytes.
enum Elem<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl<'a> Elem<'a> {
    fn of(s: &'a [u8]) -> Elem<'a> {
        match parse_canonical_i64(s) {
            Some(n) => Elem::Int(n),
            None => Elem::Str(s),
        }
    }

    /// Full stored bytes (encoding, data, backlen) appended to `out`.
    fn write(&self, out: &mut Vec<u8>) {
        let (enc, data): (Encoded, &[u8]) = match *self {
            Elem::Int(n) => (encode_int(n), &[]),
            Elem::Str(s) => (encode_str_head(s.len()), s),
        };
        out.extend_from_slice(&enc.head[..enc.head_len]);
        out.extend_from_slice(data);
        let mut bl = [0u8; 5];
        let n = write_backlen(&mut bl, enc.head_len + data.len());
        out.extend_from_slice(&bl[..n]);
    }

    fn stored_len(&self) -> usize {
        let l = match *self {
            Elem::Int(n) => encode_int(n).head_len,
            Elem::Str(s) => encode_str_head(s.len()).head_len + s.len(),
        };
        l + backlen_size(l)
    }
}

impl Listpack {
    pub fn new() -> Listpack {
        let mut empty = [0u8; HDR + 1];
        empty[HDR] = EOF;
        Listpack {
            buf: SizedBytes::from_slice(&empty),
        }
    }

    /// Adopt Redis listpack bytes (from an RDB file), after checking their structure. Checked
    /// before adopting: the block's length field is then set to its size.
    pub fn from_bytes(bytes: Vec<u8>) -> Option<Listpack> {
        valid(&bytes).then(|| Listpack {
            buf: SizedBytes::from_vec(bytes),
        })
    }

    /// The raw bytes, exactly as Redis would store them.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Bytes used (OBJECT/MEMORY accounting, `*-max-listpack-*` size checks).
    pub fn bytes_len(&self) -> usize {
        self.buf.len()
    }

    pub fn heap_size(&self) -> usize {
        self.buf.len()
    }

    pub fn len(&self) -> usize {
        let c = u16::from_le_bytes([self.buf[4], self.buf[5]]);
        if c != COUNT_UNKNOWN {
            return c as usize;
        }
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.buf[HDR] == EOF
    }

    fn set_header(&mut self, count: usize) {
        let total = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let c = if count >= COUNT_UNKNOWN as usize {
            COUNT_UNKNOWN
        } else {
            count as u16
        };
        self.buf[4..6].copy_from_slice(&c.to_le_bytes());
    }

    /// Offset of the first entry, or None when empty.
    pub fn first(&self) -> Option<usize> {
        (self.buf[HDR] != EOF).then_some(HDR)
    }

    /// Offset of the last entry, or None when empty.
    pub fn last(&self) -> Option<usize> {
        let eof = self.buf.len() - 1;
        (eof > HDR).then(|| self.prev_of(eof))
    }

    /// Offset of the entry after the one at `off`.
    pub fn next(&self, off: usize) -> Option<usize> {
        let n = off + self.entry_size(off);
        (self.buf[n] != EOF).then_some(n)
    }

    /// Offset of the entry before the one at `off`.
    pub fn prev(&self, off: usize) -> Option<usize> {
        (off > HDR).then(|| self.prev_of(off))
    }

    fn prev_of(&self, off: usize) -> usize {
        let mut p = off - 1;
        let mut val = 0usize;
        let mut shift = 0;
        loop {
            let b = self.buf[p];
            val |= ((b & 127) as usize) << shift;
            if b & 128 == 0 {
                break;
            }
            shift += 7;
            p -= 1;
        }
        p - val
    }

    /// Encoding+data length of the entry at `off` (without its backlen).
    fn content_len(&self, off: usize) -> usize {
        let b = &self.buf[off..];
        let e = b[0];
        if e & 0x80 == 0 {
            1
        } else if e & 0xC0 == 0x80 {
            1 + (e & 0x3F) as usize
        } else if e & 0xE0 == 0xC0 {
            2
        } else if e & 0xF0 == 0xE0 {
            2 + ((((e & 0x0F) as usize) << 8) | b[1] as usize)
        } else {
            match e {
                0xF0 => 5 + u32::from_le_bytes([b[1], b[2], b[3], b[4]]) as usize,
                0xF1 => 3,
                0xF2 => 4,
                0xF3 => 5,
                0xF4 => 9,
                _ => panic!("listpack: bad encoding byte {e:#x}"),
            }
        }
    }

    fn entry_size(&self, off: usize) -> usize {
        let l = self.content_len(off);
        l + backlen_size(l)
    }

    /// The element at `off`.
    pub fn get(&self, off: usize) -> LpEntry<'_> {
        let b = &self.buf[off..];
        let e = b[0];
        if e & 0x80 == 0 {
            LpEntry::Int(e as i64)
        } else if e & 0xC0 == 0x80 {
            let l = (e & 0x3F) as usize;
            LpEntry::Str(&b[1..1 + l])
        } else if e & 0xE0 == 0xC0 {
            let u = (((e & 0x1F) as i64) << 8) | b[1] as i64;
            LpEntry::Int(if u >= 1 << 12 { u - (1 << 13) } else { u })
        } else if e & 0xF0 == 0xE0 {
            let l = (((e & 0x0F) as usize) << 8) | b[1] as usize;
            LpEntry::Str(&b[2..2 + l])
        } else {
            match e {
                0xF0 => {
                    let l = u32::from_le_bytes([b[1], b[2], b[3], b[4]]) as usize;
                    LpEntry::Str(&b[5..5 + l])
                }
                0xF1 => LpEntry::Int(i16::from_le_bytes([b[1], b[2]]) as i64),
                0xF2 => {
                    let u = i32::from_le_bytes([0, b[1], b[2], b[3]]) >> 8;
                    LpEntry::Int(u as i64)
                }
                0xF3 => LpEntry::Int(i32::from_le_bytes([b[1], b[2], b[3], b[4]]) as i64),
                0xF4 => LpEntry::Int(i64::from_le_bytes(b[1..9].try_into().unwrap())),
                _ => panic!("listpack: bad encoding byte {e:#x}"),
            }
        }
    }

    /// Offset of the element at `index` (negative counts from the end), or None if out of range.
    pub fn seek(&self, index: i64) -> Option<usize> {
        let len = self.len() as i64;
        let idx = if index < 0 { len + index } else { index };
        if idx < 0 || idx >= len {
            return None;
        }
        if idx < len / 2 {
            let mut off = self.first()?;
            for _ in 0..idx {
                off = self.next(off)?;
            }
            Some(off)
        } else {
            let mut off = self.last()?;
            for _ in 0..(len - 1 - idx) {
                off = self.prev(off)?;
            }
            Some(off)
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter {
            lp: self,
            off: self.first(),
        }
    }

    /// Offsets of the entries, front to back.
    pub fn offsets(&self) -> Offsets<'_> {
        Offsets {
            lp: self,
            off: self.first(),
        }
    }

    /// First entry at or after `from` (stepping `skip + 1` entries at a time) equal to `s`.
    /// With `skip = 1` this searches the keys of a field/value listpack.
    pub fn find_from(&self, from: Option<usize>, s: &[u8], skip: usize) -> Option<usize> {
        let as_int = parse_canonical_i64(s);
        let mut off = from?;
        loop {
            let hit = match self.get(off) {
                LpEntry::Str(b) => as_int.is_none() && b == s,
                LpEntry::Int(n) => as_int == Some(n),
            };
            if hit {
                return Some(off);
            }
            for _ in 0..=skip {
                off = self.next(off)?;
            }
        }
    }

    /// First entry equal to `s`, stepping `skip + 1` entries (see `find_from`).
    pub fn find(&self, s: &[u8], skip: usize) -> Option<usize> {
        self.find_from(self.first(), s, skip)
    }

    fn splice_in(&mut self, at: usize, elems: &[Elem]) {
        let count = self.len() + elems.len();
        let mut tmp = Vec::with_capacity(elems.iter().map(|e| e.stored_len()).sum());
        for e in elems {
            e.write(&mut tmp);
        }
        self.buf.splice(at..at, &tmp);
        self.set_header(count);
    }

    /// Append `s` at the end.
    pub fn push_back(&mut self, s: &[u8]) {
        let at = self.buf.len() - 1;
        self.splice_in(at, &[Elem::of(s)]);
    }

    /// Append an integer at the end.
    pub fn push_back_int(&mut self, n: i64) {
        let at = self.buf.len() - 1;
        self.splice_in(at, &[Elem::Int(n)]);
    }

    /// Append two elements (a field/value or member/score pair) in one move.
    pub fn push_back_pair(&mut self, a: &[u8], b: &[u8]) {
        let at = self.buf.len() - 1;
        self.splice_in(at, &[Elem::of(a), Elem::of(b)]);
    }

    pub fn push_front(&mut self, s: &[u8]) {
        self.splice_in(HDR, &[Elem::of(s)]);
    }

    /// Insert `s` before the entry at `off` (or at the end when `off` is the EOF offset).
    pub fn insert_before(&mut self, off: usize, s: &[u8]) {
        self.splice_in(off, &[Elem::of(s)]);
    }

    /// Insert a pair before the entry at `off` (sorted-set listpacks keep members ordered).
    pub fn insert_pair_before(&mut self, off: usize, a: &[u8], b: &[u8]) {
        self.splice_in(off, &[Elem::of(a), Elem::of(b)]);
    }

    /// Insert `s` after the entry at `off`.
    pub fn insert_after(&mut self, off: usize, s: &[u8]) {
        let at = off + self.entry_size(off);
        self.splice_in(at, &[Elem::of(s)]);
    }

    /// Offset one past the last entry (where `insert_before` appends).
    pub fn end_offset(&self) -> usize {
        self.buf.len() - 1
    }

    /// Replace the element at `off` with `s`; returns the (unchanged) offset.
    pub fn replace(&mut self, off: usize, s: &[u8]) -> usize {
        let old = self.entry_size(off);
        let mut tmp = Vec::with_capacity(s.len() + 10);
        Elem::of(s).write(&mut tmp);
        self.buf.splice(off..off + old, &tmp);
        let count = self.len();
        self.set_header(count);
        off
    }

    /// Replace the element at `off` with an integer.
    pub fn replace_int(&mut self, off: usize, n: i64) -> usize {
        let old = self.entry_size(off);
        let mut tmp = Vec::with_capacity(12);
        Elem::Int(n).write(&mut tmp);
        self.buf.splice(off..off + old, &tmp);
        let count = self.len();
        self.set_header(count);
        off
    }

    /// Delete `n` entries starting at `off`; returns the offset of the entry that followed
    /// (None if the deletion reached the end).
    pub fn delete(&mut self, off: usize, n: usize) -> Option<usize> {
        let mut end = off;
        let mut removed = 0;
        while removed < n && self.buf[end] != EOF {
            end += self.entry_size(end);
            removed += 1;
        }
        let count = self.len() - removed;
        self.buf.remove_range(off..end);
        self.set_header(count);
        (self.buf[off] != EOF).then_some(off)
    }

    /// Delete the elements at indexes `[start, start + n)`.
    pub fn delete_range(&mut self, start: i64, n: usize) {
        if let Some(off) = self.seek(start) {
            self.delete(off, n);
        }
    }

    /// Check the structure (entry encodings, backlens, header).
    pub fn validate(&self) -> bool {
        valid(&self.buf)
    }

    // --- Added for list nodes (quicklist): capacity control, splitting and joining. ---

    /// Move the entries from `off` (an entry offset or `end_offset()`) to the end into a new
    /// listpack; `self` keeps the entries before `off`.
    pub fn split_off(&mut self, off: usize) -> Listpack {
        let total = self.len();
        let mut kept = 0;
        let mut o = HDR;
        while o < off {
            o += self.entry_size(o);
            kept += 1;
        }
        let end = self.buf.len() - 1;
        let mut tail = Listpack::new();
        tail.buf.splice(HDR..HDR, &self.buf[off..end]);
        tail.set_header(total - kept);
        self.buf.remove_range(off..end);
        self.set_header(kept);
        tail
    }

    /// Append all entries of `other` after this listpack's entries.
    pub fn append(&mut self, other: &Listpack) {
        let count = self.len() + other.len();
        let at = self.buf.len() - 1;
        let src = &other.buf[HDR..other.buf.len() - 1];
        self.buf.splice(at..at, src);
        self.set_header(count);
    }

    /// Delete the entries at `offsets` (ascending, all taken before this call) in one pass,
    /// like Redis's lpBatchDelete. Entries are self-contained, so the kept ones move as bytes.
    pub fn delete_offsets(&mut self, offsets: &[usize]) {
        if offsets.is_empty() {
            return;
        }
        let count = self.len() - offsets.len();
        let (mut w, mut r) = (offsets[0], offsets[0]);
        for &off in offsets {
            debug_assert!(off >= r && self.buf[off] != EOF);
            let size = self.entry_size(off);
            self.buf.copy_within(r..off, w);
            w += off - r;
            r = off + size;
        }
        let end = self.buf.len();
        self.buf.copy_within(r..end, w);
        self.buf.truncate(w + (end - r));
        self.set_header(count);
    }
}

pub struct Iter<'a> {
    lp: &'a Listpack,
    off: Option<usize>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = LpEntry<'a>;
    fn next(&mut self) -> Option<LpEntry<'a>> {
        let off = self.off?;
        self.off = self.lp.next(off);
        Some(self.lp.get(off))
    }
}

pub struct Offsets<'a> {
    lp: &'a Listpack,
    off: Option<usize>,
}

impl Iterator for Offsets<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        let off = self.off?;
        self.off = self.lp.next(off);
        Some(off)
    }
}

/// Check the structure (entry encodings, backlens, header) of listpack bytes from outside.
fn valid(b: &[u8]) -> bool {
    if b.len() < HDR + 1 || u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize != b.len() {
        return false;
    }
    if b[b.len() - 1] != EOF {
        return false;
    }
    let mut off = HDR;
    let mut count = 0usize;
    while b[off] != EOF {
        let e = b[off];
        let (head, data) = if e & 0x80 == 0 {
            (1, 0)
        } else if e & 0xC0 == 0x80 {
            (1, (e & 0x3F) as usize)
        } else if e & 0xE0 == 0xC0 {
            (2, 0)
        } else if e & 0xF0 == 0xE0 {
            if off + 1 >= b.len() {
                return false;
            }
            (2, (((e & 0x0F) as usize) << 8) | b[off + 1] as usize)
        } else {
            match e {
                0xF0 => {
                    if off + 5 > b.len() {
                        return false;
                    }
                    let l = u32::from_le_bytes([b[off + 1], b[off + 2], b[off + 3], b[off + 4]]);
                    (5, l as usize)
                }
                0xF1 => (3, 0),
                0xF2 => (4, 0),
                0xF3 => (5, 0),
                0xF4 => (9, 0),
                _ => return false,
            }
        };
        let content = head + data;
        let size = content + backlen_size(content);
        if off + size >= b.len() {
            return false;
        }
        let mut bl = [0u8; 5];
        let n = write_backlen(&mut bl, content);
        if b[off + content..off + content + n] != bl[..n] {
            return false;
        }
        off += size;
        count += 1;
    }
    if off != b.len() - 1 {
        return false;
    }
    let c = u16::from_le_bytes([b[4], b[5]]);
    c == COUNT_UNKNOWN || c as usize == count
}

/// Would `s` fit a listpack whose elements may be at most `max_value` bytes long? (the
/// `*-max-listpack-value` check Redis applies to strings; integers always fit).
pub fn fits_value(s: &[u8], max_value: usize) -> bool {
    s.len() <= max_value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(lp: &Listpack) -> Vec<Vec<u8>> {
        lp.iter().map(|e| e.to_vec()).collect()
    }

    #[test]
    fn empty_is_redis_bytes() {
        let lp = Listpack::new();
        assert_eq!(lp.as_bytes(), &[7, 0, 0, 0, 0, 0, 0xFF]);
        assert!(lp.validate());
        assert!(lp.is_empty());
    }

    #[test]
    fn known_encodings() {
        // Bytes as redis-server stores them (checked against listpack.c's encoder).
        let mut lp = Listpack::new();
        lp.push_back(b"a");
        lp.push_back(b"1");
        lp.push_back(b"-1");
        lp.push_back(b"1000");
        assert_eq!(
            lp.as_bytes(),
            &[
                18, 0, 0, 0, 4, 0, // header
                0x81, b'a', 2, // 6-bit string
                1, 1, // 7-bit uint
                0xDF, 0xFF, 2, // 13-bit int -1
                0xC3, 0xE8, 2, // 13-bit int 1000
                0xFF
            ]
        );
        assert!(lp.validate());
    }

    #[test]
    fn round_trips_every_width() {
        let ints: Vec<i64> = vec![
            0,
            127,
            128,
            -1,
            -4096,
            4095,
            4096,
            -4097,
            32767,
            -32768,
            32768,
            8388607,
            -8388608,
            8388608,
            i32::MAX as i64,
            i32::MIN as i64,
            i32::MAX as i64 + 1,
            i64::MAX,
            i64::MIN,
        ];
        let mut lp = Listpack::new();
        for n in &ints {
            lp.push_back(n.to_string().as_bytes());
        }
        let strs: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"x".repeat(63),
            b"y".repeat(64),
            b"z".repeat(4095),
            b"w".repeat(4096),
            b"007".to_vec(),
            b"-0".to_vec(),
            b"+1".to_vec(),
            b"1.5".to_vec(),
            b"9223372036854775808".to_vec(),
        ];
        for s in &strs {
            lp.push_back(s);
        }
        assert!(lp.validate());
        let got = vals(&lp);
        let mut want: Vec<Vec<u8>> = ints.iter().map(|n| n.to_string().into_bytes()).collect();
        want.extend(strs.iter().cloned());
        assert_eq!(got, want);
        for (i, e) in lp.iter().take(ints.len()).enumerate() {
            assert_eq!(e, LpEntry::Int(ints[i]));
        }
        // Walk backwards too.
        let mut back = Vec::new();
        let mut off = lp.last();
        while let Some(o) = off {
            back.push(lp.get(o).to_vec());
            off = lp.prev(o);
        }
        back.reverse();
        assert_eq!(back, want);
    }

    #[test]
    fn edits() {
        let mut lp = Listpack::new();
        for s in ["b", "c", "e"] {
            lp.push_back(s.as_bytes());
        }
        lp.push_front(b"a");
        let e = lp.find(b"e", 0).unwrap();
        lp.insert_before(e, b"d");
        assert_eq!(vals(&lp), [b"a", b"b", b"c", b"d", b"e"]);
        let c = lp.seek(2).unwrap();
        lp.replace(c, &b"C".repeat(200));
        assert_eq!(lp.get(lp.seek(2).unwrap()).to_vec(), b"C".repeat(200));
        assert_eq!(lp.get(lp.seek(-1).unwrap()).to_vec(), b"e");
        let b = lp.seek(1).unwrap();
        lp.delete(b, 2);
        assert_eq!(vals(&lp), [b"a", b"d", b"e"]);
        assert_eq!(lp.len(), 3);
        assert!(lp.validate());
        assert_eq!(lp.find(b"x", 0), None);
        // Pair search skips values.
        let mut h = Listpack::new();
        h.push_back_pair(b"f1", b"v1");
        h.push_back_pair(b"v1", b"f1");
        let off = h.find(b"f1", 1).unwrap();
        assert_eq!(off, h.first().unwrap());
        let off = h.find(b"v1", 1).unwrap();
        assert_eq!(h.get(h.next(off).unwrap()).to_vec(), b"f1");
    }

    #[test]
    fn count_saturates() {
        let mut lp = Listpack::new();
        for i in 0..65540 {
            lp.push_back_int(i % 100);
        }
        assert_eq!(lp.len(), 65540);
        assert_eq!(&lp.as_bytes()[4..6], &[0xFF, 0xFF]);
        assert!(lp.validate());
    }

    #[test]
    fn rejects_garbage() {
        assert!(Listpack::from_bytes(vec![7, 0, 0, 0, 0, 0, 0xFF]).is_some());
        assert!(Listpack::from_bytes(vec![7, 0, 0, 0, 1, 0, 0xFF]).is_none());
        assert!(Listpack::from_bytes(vec![9, 0, 0, 0, 1, 0, 0x81, b'a', 0xFF]).is_none());
        assert!(Listpack::from_bytes(vec![1, 2, 3]).is_none());
    }
}

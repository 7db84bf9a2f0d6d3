//! Redis's intset, byte for byte: a sorted array of distinct integers, all stored with the
//! width (2, 4 or 8 bytes) that the widest member needs. An RDB writer can emit these bytes as
//! they are.
//!
//! Layout: `<encoding u32 LE: 2|4|8> <length u32 LE> <members, ascending, little endian>`.
//! Adding a member that needs a wider encoding re-encodes every member ("upgrade"); Redis never
//! narrows an intset again, and neither does this one.

use std::ptr::NonNull;

const HDR: usize = 8;

/// The bytes one integer needs in an intset.
#[inline]
pub fn width_for(v: i64) -> usize {
    if v < i32::MIN as i64 || v > i32::MAX as i64 {
        8
    } else if v < i16::MIN as i64 || v > i16::MAX as i64 {
        4
    } else {
        2
    }
}

/// An intset in one exact-size heap block (as Redis reallocs it to the byte).
#[derive(Clone, PartialEq, Eq)]
pub struct Intset {
    buf: Block,
}

/// The empty intset (16-bit encoding): shared, never allocated or freed.
static EMPTY: [u8; HDR] = [2, 0, 0, 0, 0, 0, 0, 0];

/// The intset bytes in a block of exactly their length, which the bytes themselves give
/// (8 + count x width): one pointer wide, so a set's value stays 16 bytes.
#[repr(C, packed)]
struct Block(NonNull<u8>);

// SAFETY: owned exclusively like a Box<[u8]> (or the immutable static).
unsafe impl Send for Block {}
// SAFETY: shared references only read.
unsafe impl Sync for Block {}

impl Block {
    fn empty() -> Block {
        Block(NonNull::from(&EMPTY).cast())
    }

    fn is_static(&self) -> bool {
        std::ptr::eq(self.0.as_ptr(), EMPTY.as_ptr())
    }

    fn len(&self) -> usize {
        // SAFETY: every block starts with a valid 8-byte intset header.
        let buf = unsafe { std::slice::from_raw_parts(self.0.as_ptr(), HDR) };
        let header = IntsetRef { buf };
        HDR + header.len() * header.width()
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        // SAFETY: the block holds exactly len() bytes.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr(), self.len()) }
    }

    /// Adopt `v`, a whole intset (its header matches its length), at its exact size.
    fn from_vec(v: Vec<u8>) -> Block {
        debug_assert!(v.len() >= HDR);
        let b = Box::into_raw(v.into_boxed_slice()) as *mut u8;
        Block(NonNull::new(b).expect("boxed slice pointer"))
    }

    /// Take the bytes out for an edit (no copy unless shared), leaving the empty intset: a
    /// panic during the edit cannot leave a block whose header disagrees with its size.
    fn take_vec(&mut self) -> Vec<u8> {
        let b = std::mem::replace(self, Block::empty());
        if b.is_static() {
            return EMPTY.to_vec();
        }
        let b = std::mem::ManuallyDrop::new(b);
        let len = b.len();
        // SAFETY: a boxed slice of `len` bytes is a Vec with capacity `len`.
        unsafe { Vec::from_raw_parts(b.0.as_ptr(), len, len) }
    }

    fn heap_size(&self) -> usize {
        if self.is_static() {
            0
        } else {
            self.len()
        }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if !self.is_static() {
            drop(self.take_vec());
        }
    }
}

impl Clone for Block {
    fn clone(&self) -> Self {
        if self.is_static() {
            Block::empty()
        } else {
            Block::from_vec(self.bytes().to_vec())
        }
    }
}

impl PartialEq for Block {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Block {}

impl std::fmt::Debug for Intset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Default for Intset {
    fn default() -> Self {
        Self::new()
    }
}

/// An intset small enough to live inside the value itself (at most 14 bytes, what fits beside
/// the set's tag and `Value`'s in 16 bytes: three 16-bit members or one 32-bit), in the same byte
/// layout. Tiny sets then cost no allocation of their own.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct InlineIntset([u8; INLINE_BYTES]);

/// The largest intset blob kept inline.
pub const INLINE_BYTES: usize = 14;

impl std::fmt::Debug for InlineIntset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.view().iter()).finish()
    }
}

impl Default for InlineIntset {
    fn default() -> Self {
        Self::new()
    }
}

impl InlineIntset {
    /// An empty intset (16-bit encoding).
    pub fn new() -> InlineIntset {
        let mut b = [0u8; INLINE_BYTES];
        b[..4].copy_from_slice(&2u32.to_le_bytes());
        InlineIntset(b)
    }

    /// Copy an intset blob in when it fits.
    pub fn from_blob(blob: &[u8]) -> Option<InlineIntset> {
        if blob.len() > INLINE_BYTES {
            return None;
        }
        let mut b = [0u8; INLINE_BYTES];
        b[..blob.len()].copy_from_slice(blob);
        Some(InlineIntset(b))
    }

    pub fn view(&self) -> IntsetRef<'_> {
        let b = &self.0;
        let w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let n = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize;
        IntsetRef {
            buf: &b[..HDR + n * w],
        }
    }
}

/// A read-only view of intset bytes (heap or inline).
#[derive(Clone, Copy)]
pub struct IntsetRef<'a> {
    buf: &'a [u8],
}

impl<'a> IntsetRef<'a> {
    /// The bytes exactly as Redis stores them.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }

    /// The member width in bytes (2, 4 or 8).
    #[inline]
    pub fn width(&self) -> usize {
        u32::from_le_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]) as usize
    }

    #[inline]
    pub fn len(&self) -> usize {
        u32::from_le_bytes([self.buf[4], self.buf[5], self.buf[6], self.buf[7]]) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The member at position `i` (ascending order). Panics when out of range.
    #[inline]
    pub fn get(&self, i: usize) -> i64 {
        debug_assert!(i < self.len());
        read_at(self.buf, self.width(), i)
    }

    pub fn min(&self) -> Option<i64> {
        (!self.is_empty()).then(|| self.get(0))
    }

    pub fn max(&self) -> Option<i64> {
        let n = self.len();
        (n > 0).then(|| self.get(n - 1))
    }

    /// Ok(position) when `v` is a member, Err(insertion position) otherwise.
    pub fn search(&self, v: i64) -> Result<usize, usize> {
        let n = self.len();
        if n == 0 {
            return Err(0);
        }
        let w = self.width();
        if v > read_at(self.buf, w, n - 1) {
            return Err(n);
        }
        if v < read_at(self.buf, w, 0) {
            return Err(0);
        }
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let cur = read_at(self.buf, w, mid);
            match cur.cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    pub fn contains(&self, v: i64) -> bool {
        width_for(v) <= self.width() && self.search(v).is_ok()
    }

    /// Members in ascending order.
    pub fn iter(&self) -> IntsetIter<'a> {
        IntsetIter {
            is: *self,
            i: 0,
            n: self.len(),
        }
    }
}

#[inline]
fn read_at(buf: &[u8], width: usize, i: usize) -> i64 {
    let o = HDR + i * width;
    match width {
        2 => i16::from_le_bytes([buf[o], buf[o + 1]]) as i64,
        4 => i32::from_le_bytes([buf[o], buf[o + 1], buf[o + 2], buf[o + 3]]) as i64,
        _ => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[o..o + 8]);
            i64::from_le_bytes(b)
        }
    }
}

#[inline]
fn write_at(buf: &mut [u8], width: usize, i: usize, v: i64) {
    let o = HDR + i * width;
    match width {
        2 => buf[o..o + 2].copy_from_slice(&(v as i16).to_le_bytes()),
        4 => buf[o..o + 4].copy_from_slice(&(v as i32).to_le_bytes()),
        _ => buf[o..o + 8].copy_from_slice(&v.to_le_bytes()),
    }
}

impl Intset {
    /// An empty intset (16-bit encoding, as Redis creates it).
    pub fn new() -> Intset {
        Intset {
            buf: Block::empty(),
        }
    }

    /// Adopt Redis intset bytes (from an RDB file) after checking them: a known encoding, a
    /// length that matches the size, members strictly ascending.
    pub fn from_bytes(bytes: Vec<u8>) -> Option<Intset> {
        if bytes.len() < HDR {
            return None;
        }
        let w = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        let n = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
        if !matches!(w, 2 | 4 | 8) || n.checked_mul(w)?.checked_add(HDR)? != bytes.len() {
            return None;
        }
        let is = Intset {
            buf: Block::from_vec(bytes),
        };
        let ascending = (1..n).all(|i| is.get(i - 1) < is.get(i));
        ascending.then_some(is)
    }

    /// The bytes exactly as Redis stores them.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.bytes()
    }

    /// A copy of the intset in `view`, on the heap.
    pub fn from_view(view: IntsetRef) -> Intset {
        Intset {
            buf: Block::from_vec(view.as_bytes().to_vec()),
        }
    }

    #[inline]
    pub fn view(&self) -> IntsetRef<'_> {
        IntsetRef {
            buf: self.buf.bytes(),
        }
    }

    /// Bytes used (Redis's intsetBlobLen).
    pub fn blob_len(&self) -> usize {
        self.buf.len()
    }

    pub fn heap_size(&self) -> usize {
        self.buf.heap_size()
    }

    #[inline]
    pub fn width(&self) -> usize {
        self.view().width()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.view().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, i: usize) -> i64 {
        self.view().get(i)
    }

    pub fn min(&self) -> Option<i64> {
        self.view().min()
    }

    pub fn max(&self) -> Option<i64> {
        self.view().max()
    }

    pub fn search(&self, v: i64) -> Result<usize, usize> {
        self.view().search(v)
    }

    pub fn contains(&self, v: i64) -> bool {
        self.view().contains(v)
    }

    pub fn iter(&self) -> IntsetIter<'_> {
        self.view().iter()
    }

    fn set_len(buf: &mut [u8], n: usize) {
        buf[4..8].copy_from_slice(&(n as u32).to_le_bytes());
    }

    /// Add `v`; false if it was already a member.
    pub fn insert(&mut self, v: i64) -> bool {
        let w = self.width();
        let vw = width_for(v);
        if vw > w {
            self.upgrade_and_add(v, vw);
            return true;
        }
        let pos = match self.search(v) {
            Ok(_) => return false,
            Err(p) => p,
        };
        let n = self.len();
        let mut v8 = self.buf.take_vec();
        v8.reserve_exact(w);
        let at = HDR + pos * w;
        let mut enc = [0u8; 8];
        match w {
            2 => enc[..2].copy_from_slice(&(v as i16).to_le_bytes()),
            4 => enc[..4].copy_from_slice(&(v as i32).to_le_bytes()),
            _ => enc.copy_from_slice(&v.to_le_bytes()),
        }
        v8.splice(at..at, enc[..w].iter().copied());
        Self::set_len(&mut v8, n + 1);
        self.buf = Block::from_vec(v8);
        true
    }

    /// Re-encode every member with width `nw` and add `v`, which is below or above them all
    /// (it needs the wider encoding, so it cannot fall in between).
    fn upgrade_and_add(&mut self, v: i64, nw: usize) {
        let n = self.len();
        let ow = self.width();
        let mut nb = vec![0u8; HDR + (n + 1) * nw];
        nb[..4].copy_from_slice(&(nw as u32).to_le_bytes());
        Self::set_len(&mut nb, n + 1);
        let prepend = (v < 0) as usize;
        for i in 0..n {
            write_at(&mut nb, nw, i + prepend, read_at(self.buf.bytes(), ow, i));
        }
        write_at(&mut nb, nw, if prepend == 1 { 0 } else { n }, v);
        self.buf = Block::from_vec(nb);
    }

    /// Remove `v`; false if it was not a member.
    pub fn remove(&mut self, v: i64) -> bool {
        if width_for(v) > self.width() {
            return false;
        }
        match self.search(v) {
            Ok(pos) => {
                self.remove_at(pos);
                true
            }
            Err(_) => false,
        }
    }

    /// Remove the member at position `pos`, returning it.
    pub fn remove_at(&mut self, pos: usize) -> i64 {
        let v = self.get(pos);
        let n = self.len();
        let w = self.width();
        let mut v8 = self.buf.take_vec();
        let at = HDR + pos * w;
        v8.drain(at..at + w);
        Self::set_len(&mut v8, n - 1);
        self.buf = Block::from_vec(v8);
        v
    }

    /// Build from members already sorted ascending and distinct (one allocation).
    pub fn from_sorted(members: &[i64]) -> Intset {
        let w = members.iter().map(|&v| width_for(v)).max().unwrap_or(2);
        let mut nb = vec![0u8; HDR + members.len() * w];
        nb[..4].copy_from_slice(&(w as u32).to_le_bytes());
        Self::set_len(&mut nb, members.len());
        for (i, &v) in members.iter().enumerate() {
            write_at(&mut nb, w, i, v);
        }
        Intset {
            buf: Block::from_vec(nb),
        }
    }
}

pub struct IntsetIter<'a> {
    is: IntsetRef<'a>,
    i: usize,
    n: usize,
}

impl Iterator for IntsetIter<'_> {
    type Item = i64;
    #[inline]
    fn next(&mut self) -> Option<i64> {
        if self.i >= self.n {
            return None;
        }
        let v = self.is.get(self.i);
        self.i += 1;
        Some(v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let r = self.n - self.i;
        (r, Some(r))
    }
}

impl ExactSizeIterator for IntsetIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_shared_and_edits_allocate_exactly() {
        let mut is = Intset::new();
        assert_eq!(is.heap_size(), 0);
        assert_eq!(is.as_bytes(), &[2, 0, 0, 0, 0, 0, 0, 0]);
        let copy = is.clone();
        assert!(is.insert(7));
        assert_eq!(is.heap_size(), 10);
        assert!(is.insert(70_000));
        assert_eq!(is.heap_size(), 16);
        assert_eq!(is.remove_at(0), 7);
        assert_eq!(is.heap_size(), 12);
        assert_eq!(copy, Intset::new());
        assert_eq!(copy.heap_size(), 0);
    }

    #[test]
    fn redis_layout() {
        let mut is = Intset::new();
        assert_eq!(is.as_bytes(), &[2, 0, 0, 0, 0, 0, 0, 0]);
        assert!(is.insert(5));
        assert!(is.insert(-3));
        assert!(!is.insert(5));
        assert_eq!(is.as_bytes(), &[2, 0, 0, 0, 2, 0, 0, 0, 0xFD, 0xFF, 5, 0]);
        // Upgrade to 32 bits, appended at the end.
        assert!(is.insert(70000));
        assert_eq!(is.width(), 4);
        assert_eq!(is.iter().collect::<Vec<_>>(), vec![-3, 5, 70000]);
        // Upgrade to 64 bits, prepended.
        assert!(is.insert(-5_000_000_000));
        assert_eq!(is.width(), 8);
        assert_eq!(
            is.iter().collect::<Vec<_>>(),
            vec![-5_000_000_000, -3, 5, 70000]
        );
        assert_eq!(is.blob_len(), 8 + 4 * 8);
        assert!(is.contains(70000));
        assert!(!is.contains(4));
        assert!(is.remove(-3));
        assert!(!is.remove(-3));
        assert_eq!(is.len(), 3);
        assert_eq!(is.min(), Some(-5_000_000_000));
        assert_eq!(is.max(), Some(70000));
        let copy = Intset::from_bytes(is.as_bytes().to_vec()).unwrap();
        assert_eq!(copy, is);
        assert!(Intset::from_bytes(vec![3, 0, 0, 0, 0, 0, 0, 0]).is_none());
        assert!(Intset::from_bytes(vec![2, 0, 0, 0, 2, 0, 0, 0, 5, 0, 5, 0]).is_none());
    }

    #[test]
    fn random_against_btreeset() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut is = Intset::new();
        let mut model = std::collections::BTreeSet::new();
        for _ in 0..5000 {
            let v: i64 = match rng.gen_range(0..3) {
                0 => rng.gen_range(-300..300),
                1 => rng.gen_range(-100_000..100_000),
                _ => rng.gen(),
            };
            if rng.gen_bool(0.7) {
                assert_eq!(is.insert(v), model.insert(v));
            } else {
                assert_eq!(is.remove(v), model.remove(&v));
            }
        }
        assert_eq!(
            is.iter().collect::<Vec<_>>(),
            model.iter().copied().collect::<Vec<_>>()
        );
        let sorted: Vec<i64> = model.iter().copied().collect();
        assert_eq!(Intset::from_sorted(&sorted).iter().count(), sorted.len());
    }
}

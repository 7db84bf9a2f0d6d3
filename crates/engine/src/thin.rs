//! Byte buffers one pointer wide. A `Value` is kept inside every keyspace entry, so each byte
//! of it is paid per key: `Vec<u8>` (24 bytes) and `Box<[u8]>` (16) would make it 32 bytes where
//! these make it 16. Lengths live in the allocation instead.
//!
//! Everything a `Value` holds is byte-aligned (`repr(packed)`): then each type's enum is its tag
//! plus at most 14 bytes, and `Value` adds one tag byte to make 16, where 8-byte alignment would
//! pad it to 24. Pointers are read unaligned, which costs nothing on the targets we build for.

use std::alloc::{alloc, dealloc, handle_alloc_error, realloc, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The buffers here clone, compare and print as the bytes they hold (a derive would copy or
/// compare the pointer).
macro_rules! bytes_semantics {
    ($t:ty, $copy:path) => {
        impl Clone for $t {
            fn clone(&self) -> Self {
                $copy(self)
            }
        }

        impl PartialEq for $t {
            fn eq(&self, other: &Self) -> bool {
                self.deref() == other.deref()
            }
        }

        impl Eq for $t {}

        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{:?}", String::from_utf8_lossy(self))
            }
        }
    };
}

/// A growable byte buffer (a `raw` string): `[len u32][cap u32][bytes]` on the heap, no
/// allocation while empty. A buffer of 4 GiB or more switches to a wide header
/// (`[_ u32][u32::MAX][len u64][cap u64][bytes]`), so the common case pays 8 bytes, not 16.
#[repr(C, packed)]
pub struct ThinBuf(Option<NonNull<u8>>);

// SAFETY: a ThinBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for ThinBuf {}
// SAFETY: shared references only read.
unsafe impl Sync for ThinBuf {}

const NARROW_HDR: usize = 8;
const WIDE_HDR: usize = 24;
const WIDE: u32 = u32::MAX;
/// Capacities from here on take the wide header (low in tests, so they cover the switch).
#[cfg(not(test))]
const WIDE_FROM: usize = WIDE as usize;
#[cfg(test)]
const WIDE_FROM: usize = 100;
const ALIGN: usize = 8;

impl ThinBuf {
    pub const fn new() -> ThinBuf {
        ThinBuf(None)
    }

    pub fn with_capacity(cap: usize) -> ThinBuf {
        let mut b = ThinBuf::new();
        b.reserve_exact(cap);
        b
    }

    pub fn from_slice(s: &[u8]) -> ThinBuf {
        let mut b = ThinBuf::with_capacity(s.len());
        b.extend_from_slice(s);
        b
    }

    /// The allocation, copied out of the packed field (no reference to it can be taken).
    #[inline]
    fn ptr(&self) -> Option<NonNull<u8>> {
        self.0
    }

    /// (header size, len, cap) of the allocation.
    #[inline]
    fn header(&self) -> (usize, usize, usize) {
        let Some(p) = self.0 else {
            return (NARROW_HDR, 0, 0);
        };
        // SAFETY: the allocation starts with the header written by `set_capacity`; the wide
        // fields exist whenever the cap field says WIDE.
        unsafe {
            let p = p.as_ptr();
            let cap = (p.add(4) as *const u32).read();
            if cap == WIDE {
                let len = (p.add(8) as *const u64).read() as usize;
                let cap = (p.add(16) as *const u64).read() as usize;
                (WIDE_HDR, len, cap)
            } else {
                (NARROW_HDR, (p as *const u32).read() as usize, cap as usize)
            }
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.header().1
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn capacity(&self) -> usize {
        self.header().2
    }

    /// Bytes the allocation takes (for memory accounting).
    pub fn heap_size(&self) -> usize {
        match self.0 {
            None => 0,
            Some(_) => {
                let (h, _, cap) = self.header();
                h + cap
            }
        }
    }

    fn layout(hdr: usize, cap: usize) -> Layout {
        Layout::from_size_align(hdr + cap, ALIGN).expect("buffer too large")
    }

    /// Make room for exactly `cap` bytes (never shrinks below the length).
    fn set_capacity(&mut self, cap: usize) {
        let (hdr, len, old_cap) = self.header();
        let cap = cap.max(len);
        if cap == old_cap && self.ptr().is_some() {
            return;
        }
        let new_hdr = if cap >= WIDE_FROM {
            WIDE_HDR
        } else {
            NARROW_HDR
        };
        let new_layout = Self::layout(new_hdr, cap);
        // SAFETY: layouts are non-zero-sized (a header); old contents are copied or realloc'd
        // within bounds; the header is rewritten before anything reads it.
        unsafe {
            let p = match self.ptr() {
                Some(old) if new_hdr == hdr => {
                    realloc(old.as_ptr(), Self::layout(hdr, old_cap), new_layout.size())
                }
                old => {
                    let p = alloc(new_layout);
                    if let (Some(old), false) = (old, p.is_null()) {
                        std::ptr::copy_nonoverlapping(old.as_ptr().add(hdr), p.add(new_hdr), len);
                        dealloc(old.as_ptr(), Self::layout(hdr, old_cap));
                    }
                    p
                }
            };
            let Some(p) = NonNull::new(p) else {
                handle_alloc_error(new_layout)
            };
            let raw = p.as_ptr();
            if new_hdr == WIDE_HDR {
                (raw.add(4) as *mut u32).write(WIDE);
                (raw.add(8) as *mut u64).write(len as u64);
                (raw.add(16) as *mut u64).write(cap as u64);
            } else {
                (raw as *mut u32).write(len as u32);
                (raw.add(4) as *mut u32).write(cap as u32);
            }
            self.0 = Some(p);
        }
    }

    /// Room for `additional` more bytes, growing geometrically (amortised appends).
    pub fn reserve(&mut self, additional: usize) {
        let (_, len, cap) = self.header();
        let need = len.checked_add(additional).expect("buffer too large");
        if need > cap {
            self.set_capacity(need.max(cap.saturating_mul(2)).max(8));
        }
    }

    pub fn reserve_exact(&mut self, additional: usize) {
        let (_, len, cap) = self.header();
        let need = len.checked_add(additional).expect("buffer too large");
        if need > cap {
            self.set_capacity(need);
        }
    }

    pub fn shrink_to_fit(&mut self) {
        if self.is_empty() {
            *self = ThinBuf::new();
        } else {
            let len = self.len();
            self.set_capacity(len);
        }
    }

    /// Set the length to `new_len` (at most the capacity); bytes past the old length must
    /// have been written.
    fn set_len(&mut self, new_len: usize) {
        let (hdr, _, cap) = self.header();
        debug_assert!(new_len <= cap);
        if let Some(p) = self.0 {
            // SAFETY: the allocation with this header: the length field is where it says.
            unsafe {
                if hdr == WIDE_HDR {
                    (p.as_ptr().add(8) as *mut u64).write(new_len as u64);
                } else {
                    (p.as_ptr() as *mut u32).write(new_len as u32);
                }
            }
        }
    }

    /// Pointer to the first byte of content (valid for `cap` bytes).
    fn data(&self) -> *mut u8 {
        match self.0 {
            None => NonNull::<u8>::dangling().as_ptr(),
            // SAFETY: the content starts right after the header.
            Some(p) => unsafe { p.as_ptr().add(self.header().0) },
        }
    }

    pub fn extend_from_slice(&mut self, s: &[u8]) {
        self.reserve(s.len());
        let len = self.len();
        // SAFETY: reserve made room for s.len() more bytes; s cannot alias our allocation
        // (we hold &mut self).
        unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), self.data().add(len), s.len()) };
        self.set_len(len + s.len());
    }

    pub fn resize(&mut self, new_len: usize, fill: u8) {
        let len = self.len();
        if new_len <= len {
            self.truncate(new_len);
            return;
        }
        self.reserve(new_len - len);
        // SAFETY: capacity is at least new_len.
        unsafe { std::ptr::write_bytes(self.data().add(len), fill, new_len - len) };
        self.set_len(new_len);
    }

    pub fn truncate(&mut self, new_len: usize) {
        if new_len < self.len() {
            self.set_len(new_len);
        }
    }

    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Replace the bytes in `range` with `with` (Vec::splice for byte slices).
    pub fn splice(&mut self, range: std::ops::Range<usize>, with: &[u8]) {
        let len = self.len();
        assert!(
            range.start <= range.end && range.end <= len,
            "splice out of range"
        );
        let removed = range.end - range.start;
        if with.len() > removed {
            self.reserve(with.len() - removed);
        }
        let new_len = len - removed + with.len();
        // SAFETY: the tail moves within the capacity (reserved above); `with` does not alias.
        unsafe {
            let d = self.data();
            std::ptr::copy(
                d.add(range.end),
                d.add(range.start + with.len()),
                len - range.end,
            );
            std::ptr::copy_nonoverlapping(with.as_ptr(), d.add(range.start), with.len());
        }
        self.set_len(new_len);
    }

    /// Remove the bytes in `range` (Vec::drain, dropping what it yields).
    pub fn remove_range(&mut self, range: std::ops::Range<usize>) {
        self.splice(range, &[]);
    }
}

impl Default for ThinBuf {
    fn default() -> Self {
        ThinBuf::new()
    }
}

impl Drop for ThinBuf {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            let (hdr, _, cap) = self.header();
            // SAFETY: our allocation, with the layout it was made with.
            unsafe { dealloc(p.as_ptr(), Self::layout(hdr, cap)) };
        }
    }
}

impl Deref for ThinBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes start at data() (dangling and 0 when empty).
        unsafe { std::slice::from_raw_parts(self.data(), self.len()) }
    }
}

impl DerefMut for ThinBuf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.data(), self.len()) }
    }
}

bytes_semantics!(ThinBuf, ThinBuf::from_slice);

/// An immutable string of at most 255 bytes (an `embstr`): `[len u8][bytes]`, exact size.
#[repr(C, packed)]
pub struct SmallBytes(NonNull<u8>);

// SAFETY: owned exclusively, never mutated through a shared reference.
unsafe impl Send for SmallBytes {}
// SAFETY: as above.
unsafe impl Sync for SmallBytes {}

impl SmallBytes {
    pub const MAX: usize = u8::MAX as usize;

    pub fn new(s: &[u8]) -> SmallBytes {
        assert!(s.len() <= Self::MAX, "SmallBytes holds at most 255 bytes");
        let layout = Self::layout(s.len());
        // SAFETY: a non-empty layout; the length byte and the bytes are written in bounds.
        unsafe {
            let p = alloc(layout);
            let Some(p) = NonNull::new(p) else {
                handle_alloc_error(layout)
            };
            p.as_ptr().write(s.len() as u8);
            std::ptr::copy_nonoverlapping(s.as_ptr(), p.as_ptr().add(1), s.len());
            SmallBytes(p)
        }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(1 + len, 1).expect("small layout")
    }

    #[inline]
    pub fn len(&self) -> usize {
        // SAFETY: the first byte of the allocation is the length.
        unsafe { self.0.as_ptr().read() as usize }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the allocation takes.
    pub fn heap_size(&self) -> usize {
        1 + self.len()
    }
}

impl Deref for SmallBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` bytes follow the length byte.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(1), self.len()) }
    }
}

impl Drop for SmallBytes {
    fn drop(&mut self) {
        // SAFETY: our allocation, with its layout.
        unsafe { dealloc(self.0.as_ptr(), Self::layout(self.len())) }
    }
}

bytes_semantics!(SmallBytes, SmallBytes::new);

/// A string's bytes at their exact size with the length beside the pointer, not in the
/// allocation: a 1 KiB value takes a 1 KiB block, not the next size class up. Packed to 12
/// bytes, byte-aligned, so that it fits beside `RString`'s tag and `Value`'s in 16. At most
/// `u32::MAX` bytes.
#[repr(C, packed)]
pub struct ExactBytes {
    len: u32,
    ptr: NonNull<u8>,
}

// SAFETY: owned exclusively, like a Box<[u8]>.
unsafe impl Send for ExactBytes {}
// SAFETY: shared references only read.
unsafe impl Sync for ExactBytes {}

impl ExactBytes {
    pub const MAX: usize = u32::MAX as usize;

    /// A copy of `s` (at most `MAX` bytes).
    pub fn new(s: &[u8]) -> ExactBytes {
        assert!(s.len() <= Self::MAX, "ExactBytes length");
        let ptr = if s.is_empty() {
            NonNull::dangling()
        } else {
            let layout = Self::layout(s.len());
            // SAFETY: a non-empty layout; the copy stays in bounds.
            unsafe {
                let Some(p) = NonNull::new(alloc(layout)) else {
                    handle_alloc_error(layout)
                };
                std::ptr::copy_nonoverlapping(s.as_ptr(), p.as_ptr(), s.len());
                p
            }
        };
        ExactBytes {
            len: s.len() as u32,
            ptr,
        }
    }

    /// Take `v`'s bytes without copying them (its spare capacity, if any, is given back).
    pub fn from_vec(v: Vec<u8>) -> ExactBytes {
        assert!(v.len() <= Self::MAX, "ExactBytes length");
        if v.is_empty() {
            return ExactBytes::new(&[]);
        }
        let len = v.len() as u32;
        // A boxed slice is exactly `len` bytes with alignment 1: the layout `drop` frees.
        let ptr = Box::into_raw(v.into_boxed_slice()) as *mut u8;
        ExactBytes {
            len,
            ptr: NonNull::new(ptr).expect("boxed slice pointer"),
        }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len, 1).expect("exact layout")
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Deref for ExactBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        let (ptr, len) = (self.ptr, self.len as usize);
        // SAFETY: `len` initialised bytes at `ptr` (dangling when empty).
        unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len) }
    }
}

impl Drop for ExactBytes {
    fn drop(&mut self) {
        let (ptr, len) = (self.ptr, self.len as usize);
        if len > 0 {
            // SAFETY: our allocation, with its layout.
            unsafe { dealloc(ptr.as_ptr(), Self::layout(len)) }
        }
    }
}

bytes_semantics!(ExactBytes, ExactBytes::new);

/// Exact-size heap bytes whose first four bytes (u32, little endian) hold their own total
/// length, as a listpack's header does: no length or capacity beside them, and no slack (Redis
/// reallocs a listpack to the byte as well; jemalloc grows within a size class in place). Every
/// edit rewrites the length field, so it always matches the allocation.
#[repr(C, packed)]
pub struct SizedBytes(NonNull<u8>);

// SAFETY: owned exclusively, like a Box<[u8]>.
unsafe impl Send for SizedBytes {}
// SAFETY: shared references only read.
unsafe impl Sync for SizedBytes {}

impl SizedBytes {
    /// Copy `s` (at least 4 bytes) and make its first four bytes its length.
    pub fn from_slice(s: &[u8]) -> SizedBytes {
        assert!(
            s.len() >= 4 && s.len() <= u32::MAX as usize,
            "SizedBytes length"
        );
        let layout = Self::layout(s.len());
        // SAFETY: a non-empty layout; the copy and the length write are in bounds.
        unsafe {
            let p = alloc(layout);
            let Some(p) = NonNull::new(p) else {
                handle_alloc_error(layout)
            };
            std::ptr::copy_nonoverlapping(s.as_ptr(), p.as_ptr(), s.len());
            (p.as_ptr() as *mut [u8; 4]).write((s.len() as u32).to_le_bytes());
            SizedBytes(p)
        }
    }

    /// Take `v`'s bytes (at least 4) without copying them, its spare capacity given back, and
    /// make its first four bytes its length.
    pub fn from_vec(v: Vec<u8>) -> SizedBytes {
        assert!(
            v.len() >= 4 && v.len() <= u32::MAX as usize,
            "SizedBytes length"
        );
        let len = v.len() as u32;
        // A boxed slice is exactly `len` bytes with alignment 1: the layout `drop` frees.
        let p = NonNull::new(Box::into_raw(v.into_boxed_slice()) as *mut u8)
            .expect("boxed slice pointer");
        // SAFETY: at least 4 bytes.
        unsafe { (p.as_ptr() as *mut [u8; 4]).write(len.to_le_bytes()) };
        SizedBytes(p)
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len, 1).expect("sized layout")
    }

    #[inline]
    pub fn len(&self) -> usize {
        // SAFETY: the allocation is at least 4 bytes and starts with its length.
        u32::from_le_bytes(unsafe { (self.0.as_ptr() as *const [u8; 4]).read() }) as usize
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Reallocate to `new_len` bytes (contents up to the shorter length kept) and record it.
    fn resize_to(&mut self, new_len: usize) {
        let old = self.len();
        assert!(
            new_len >= 4 && new_len <= u32::MAX as usize,
            "SizedBytes length"
        );
        if new_len != old {
            // SAFETY: our allocation with its layout; realloc keeps the common prefix.
            unsafe {
                let p = realloc(self.0.as_ptr(), Self::layout(old), new_len);
                let Some(p) = NonNull::new(p) else {
                    handle_alloc_error(Self::layout(new_len))
                };
                self.0 = p;
            }
        }
        // SAFETY: at least 4 bytes.
        unsafe { (self.0.as_ptr() as *mut [u8; 4]).write((new_len as u32).to_le_bytes()) };
    }

    /// Replace the bytes in `range` (which must not include the length field) with `with`.
    pub fn splice(&mut self, range: std::ops::Range<usize>, with: &[u8]) {
        let len = self.len();
        assert!(
            4 <= range.start && range.start <= range.end && range.end <= len,
            "splice out of range"
        );
        let new_len = len - (range.end - range.start) + with.len();
        let tail = len - range.end;
        if new_len > len {
            self.resize_to(new_len);
        }
        // SAFETY: the tail moves within the larger of the two sizes (grown above, shrunk
        // below); `with` cannot alias our allocation (we hold &mut self).
        unsafe {
            let d = self.0.as_ptr();
            std::ptr::copy(d.add(range.end), d.add(range.start + with.len()), tail);
            std::ptr::copy_nonoverlapping(with.as_ptr(), d.add(range.start), with.len());
        }
        if new_len < len {
            self.resize_to(new_len);
        }
    }

    pub fn remove_range(&mut self, range: std::ops::Range<usize>) {
        self.splice(range, &[]);
    }

    /// Keep the first `new_len` bytes.
    pub fn truncate(&mut self, new_len: usize) {
        if new_len < self.len() {
            self.resize_to(new_len);
        }
    }
}

impl Deref for SizedBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the allocation holds exactly len() initialised bytes.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr(), self.len()) }
    }
}

impl DerefMut for SizedBytes {
    /// Writes to the first four bytes must keep them the length (listpack's set_header does).
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_ptr(), self.len()) }
    }
}

impl Drop for SizedBytes {
    fn drop(&mut self) {
        // SAFETY: our allocation, with its layout.
        unsafe { dealloc(self.0.as_ptr(), Self::layout(self.len())) }
    }
}

bytes_semantics!(SizedBytes, SizedBytes::from_slice);

/// A `Box<T>` that is byte-aligned, so the enums of `Value` stay 16 bytes (see the module doc).
#[repr(C, packed)]
pub struct PackedBox<T>(NonNull<T>);

// SAFETY: owned exclusively, like a Box<T>.
unsafe impl<T: Send> Send for PackedBox<T> {}
// SAFETY: as Box<T>: shared references only read through `&self`.
unsafe impl<T: Sync> Sync for PackedBox<T> {}

impl<T> PackedBox<T> {
    pub fn new(value: T) -> PackedBox<T> {
        PackedBox::from_box(Box::new(value))
    }

    pub fn from_box(b: Box<T>) -> PackedBox<T> {
        // SAFETY: Box::into_raw never returns null.
        PackedBox(unsafe { NonNull::new_unchecked(Box::into_raw(b)) })
    }

    pub fn into_box(self) -> Box<T> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the pointer came from Box::into_raw and ownership moves back out exactly once
        // (ManuallyDrop skips our Drop).
        unsafe { Box::from_raw(this.ptr().as_ptr()) }
    }

    pub fn into_inner(self) -> T {
        *self.into_box()
    }

    #[inline]
    fn ptr(&self) -> NonNull<T> {
        self.0
    }
}

impl<T> Deref for PackedBox<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the pointer is a live, aligned Box allocation owned by self.
        unsafe { self.ptr().as_ref() }
    }
}

impl<T> DerefMut for PackedBox<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in deref; &mut self gives exclusive access.
        unsafe { self.ptr().as_mut() }
    }
}

impl<T> Drop for PackedBox<T> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from Box::into_raw and is freed once, here.
        unsafe { drop(Box::from_raw(self.ptr().as_ptr())) }
    }
}

impl<T: Clone> Clone for PackedBox<T> {
    fn clone(&self) -> Self {
        PackedBox::new(T::clone(self))
    }
}

impl<T: PartialEq> PartialEq for PackedBox<T> {
    fn eq(&self, other: &Self) -> bool {
        T::eq(self, other)
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for PackedBox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        T::fmt(self, f)
    }
}

/// An i64 that is byte-aligned (the `int` encoding of a string inside a 16-byte `Value`).
#[repr(C, packed)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PackedI64(i64);

impl PackedI64 {
    #[inline]
    pub fn new(v: i64) -> PackedI64 {
        PackedI64(v)
    }

    #[inline]
    pub fn get(self) -> i64 {
        self.0
    }
}

impl std::fmt::Debug for PackedI64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thin_buf_behaves_like_a_vec() {
        let mut b = ThinBuf::new();
        let mut v: Vec<u8> = Vec::new();
        assert_eq!(b.heap_size(), 0);
        for i in 0..2000u32 {
            let chunk = [(i % 251) as u8; 7];
            match i % 5 {
                0 | 1 => {
                    b.extend_from_slice(&chunk);
                    v.extend_from_slice(&chunk);
                }
                2 => {
                    let at = (i as usize * 31) % (v.len() + 1);
                    b.splice(at..at, &chunk[..3]);
                    v.splice(at..at, chunk[..3].iter().copied());
                }
                3 if !v.is_empty() => {
                    let s = (i as usize * 17) % v.len();
                    let e = (s + 5).min(v.len());
                    b.remove_range(s..e);
                    v.drain(s..e);
                }
                _ => {
                    let n = v.len() + 3;
                    b.resize(n, 9);
                    v.resize(n, 9);
                }
            }
            assert_eq!(&b[..], &v[..]);
        }
        b.truncate(10);
        v.truncate(10);
        b.shrink_to_fit();
        assert_eq!(&b[..], &v[..]);
        assert_eq!(b.capacity(), 10);
        assert_eq!(b.clone(), b);
        b.clear();
        b.shrink_to_fit();
        assert_eq!(b.heap_size(), 0);
    }

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<ThinBuf>(), 8);
        assert_eq!(std::mem::size_of::<SizedBytes>(), 8);
        assert_eq!(std::mem::size_of::<ExactBytes>(), 12);
        assert_eq!(std::mem::size_of::<SmallBytes>(), 8);
    }

    #[test]
    fn exact_bytes() {
        let e = ExactBytes::new(&[7u8; 1024]);
        assert_eq!(e.len(), 1024);
        assert_eq!(&e[..], &[7u8; 1024][..]);
        assert_eq!(e.clone(), e);
        assert!(ExactBytes::new(b"").is_empty());
        let mut v = Vec::with_capacity(100);
        v.extend_from_slice(b"adopted");
        let a = ExactBytes::from_vec(v);
        assert_eq!(&a[..], b"adopted");
        assert!(ExactBytes::from_vec(Vec::new()).is_empty());
    }

    #[test]
    fn small_bytes() {
        let s = SmallBytes::new(b"hello world");
        assert_eq!(&s[..], b"hello world");
        assert_eq!(s.clone(), s);
        assert_eq!(SmallBytes::new(b"").len(), 0);
    }

    #[test]
    fn sized_bytes_keep_their_length_in_front() {
        let mut b = SizedBytes::from_slice(&[0, 0, 0, 0, 1, 2, 3]);
        let mut v = vec![7u8, 0, 0, 0, 1, 2, 3];
        assert_eq!(&b[..], &v[..]);
        for i in 0..500usize {
            let at = 4 + (i * 13) % (v.len() - 3);
            if i % 3 == 2 && v.len() > 10 {
                let end = (at + 4).min(v.len());
                b.remove_range(at..end);
                v.drain(at..end);
            } else {
                let with = [i as u8; 5];
                b.splice(at..at, &with[..i % 6]);
                v.splice(at..at, with[..i % 6].iter().copied());
            }
            let n = v.len() as u32;
            v[..4].copy_from_slice(&n.to_le_bytes());
            assert_eq!(&b[..], &v[..]);
        }
        b.truncate(9);
        assert_eq!(b.len(), 9);
        assert_eq!(b.clone(), b);
        let mut v = Vec::with_capacity(64);
        v.extend_from_slice(&[0, 0, 0, 0, 5, 6]);
        let a = SizedBytes::from_vec(v);
        assert_eq!(&a[..], &[6, 0, 0, 0, 5, 6]);
    }
}

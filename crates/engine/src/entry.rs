//! One key of the keyspace: its value, expiry, access clock and key bytes, in ONE allocation.
//!
//! Layout matters here (it is most of the per-key overhead): a 56-byte header (the dict's chain
//! link, the key length, the access clock, the 32-byte value, the expiry) followed directly by
//! the key bytes. A key of up to 8 bytes makes a 64-byte jemalloc block, up to 24 an 80-byte
//! one; there is no separate key allocation to pay for or to miss the cache on when a lookup
//! compares keys.
//!
//! `Entry` is the header, only ever seen by reference (`&Entry` / `&mut Entry` from the dict);
//! `EntryBox` owns an allocation (a new entry, or one removed from the dict) the way a `Box` does.

use crate::value::Value;
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

#[repr(C)]
pub struct Entry {
    /// The next entry of the same dict bucket (owned by the chain).
    pub(crate) next: Option<EntryBox>,
    /// Key length; `u32::MAX` means the length is stored as a u64 in front of the bytes
    /// (keys of 4 GiB and more, which only a raised `proto-max-bulk-len` allows).
    key_len: u32,
    /// LRU clock (seconds, 24 bits) or, under an LFU policy, Redis's 16-bit minutes + 8-bit counter.
    pub access: u32,
    pub value: Value,
    /// Absolute expiry in unix milliseconds; 0 = persistent.
    pub expire_at: u64,
}

/// Owner of one entry allocation (header + key bytes).
pub struct EntryBox(NonNull<Entry>);

// SAFETY: an EntryBox owns its allocation exclusively, like a Box<Entry>.
unsafe impl Send for EntryBox {}
unsafe impl Sync for EntryBox {}

const LONG: u32 = u32::MAX;
const PREFIX: usize = std::mem::size_of::<u64>();
const HEADER: usize = std::mem::size_of::<Entry>();

fn layout(key_len: usize, long: bool) -> Layout {
    let size = HEADER + key_len + if long { PREFIX } else { 0 };
    Layout::from_size_align(size, std::mem::align_of::<Entry>()).expect("entry layout")
}

impl EntryBox {
    pub fn new(key: &[u8], value: Value) -> EntryBox {
        Self::new_at(key, value, crate::clock::now_ms())
    }

    /// A new entry created at `now_ms` (the command's time: no extra clock read).
    pub fn new_at(key: &[u8], value: Value, now_ms: u64) -> EntryBox {
        Self::build(key, value, crate::clock::initial_access_at(now_ms), 0)
    }

    fn build(key: &[u8], value: Value, access: u32, expire_at: u64) -> EntryBox {
        let long = key.len() >= LONG as usize;
        let layout = layout(key.len(), long);
        // SAFETY: the layout is non-empty (the header); the header is written before any read
        // and the key bytes land inside the allocation, right after it.
        unsafe {
            let p = alloc(layout) as *mut Entry;
            let Some(p) = NonNull::new(p) else {
                handle_alloc_error(layout)
            };
            p.as_ptr().write(Entry {
                next: None,
                key_len: if long { LONG } else { key.len() as u32 },
                access,
                value,
                expire_at,
            });
            let mut dst = (p.as_ptr() as *mut u8).add(HEADER);
            if long {
                (dst as *mut u64).write_unaligned(key.len() as u64);
                dst = dst.add(PREFIX);
            }
            std::ptr::copy_nonoverlapping(key.as_ptr(), dst, key.len());
            EntryBox(p)
        }
    }

    /// The same value, expiry and access clock under another name (RENAME, MOVE, COPY targets).
    pub fn renamed(self, key: &[u8]) -> EntryBox {
        let (value, access, expire_at) = self.into_parts();
        Self::build(key, value, access, expire_at)
    }

    /// Take the value (and metadata) out and free the allocation.
    pub fn into_parts(self) -> (Value, u32, u64) {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the header is read exactly once and the allocation is then freed without
        // running Entry's drop glue (the value has moved out; `next` is None outside a chain,
        // and is dropped explicitly here anyway).
        unsafe {
            let Entry {
                next,
                key_len: _,
                access,
                value,
                expire_at,
            } = this.0.as_ptr().read();
            drop(next);
            this.dealloc();
            (value, access, expire_at)
        }
    }

    /// SAFETY: the header must already have been dropped or moved out.
    unsafe fn dealloc(&self) {
        let len = (*self.0.as_ptr()).key().len();
        let long = (*self.0.as_ptr()).key_len == LONG;
        dealloc(self.0.as_ptr() as *mut u8, layout(len, long));
    }
}

impl Drop for EntryBox {
    fn drop(&mut self) {
        // A chain is freed iteratively: dropping a long chain must not recurse.
        let mut rest = self.next.take();
        while let Some(mut e) = rest {
            rest = e.next.take();
        }
        // SAFETY: the allocation is ours; the value is dropped once, before the memory goes.
        unsafe {
            let key_info = ((**self).key().len(), (*self.0.as_ptr()).key_len == LONG);
            std::ptr::drop_in_place(self.0.as_ptr());
            dealloc(self.0.as_ptr() as *mut u8, layout(key_info.0, key_info.1));
        }
    }
}

impl Deref for EntryBox {
    type Target = Entry;
    #[inline]
    fn deref(&self) -> &Entry {
        // SAFETY: the pointer is valid and initialised for the box's lifetime.
        unsafe { self.0.as_ref() }
    }
}

impl DerefMut for EntryBox {
    #[inline]
    fn deref_mut(&mut self) -> &mut Entry {
        // SAFETY: as above, and the box is borrowed mutably.
        unsafe { self.0.as_mut() }
    }
}

impl Entry {
    #[inline]
    pub fn key(&self) -> &[u8] {
        // SAFETY: an Entry only exists inside an EntryBox allocation, whose key bytes follow the
        // header (after a u64 length for long keys), written once by EntryBox::build.
        unsafe {
            let base = (self as *const Entry as *const u8).add(HEADER);
            if self.key_len == LONG {
                let len = (base as *const u64).read_unaligned() as usize;
                std::slice::from_raw_parts(base.add(PREFIX), len)
            } else {
                std::slice::from_raw_parts(base, self.key_len as usize)
            }
        }
    }

    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now_ms
    }
}

/// Bytes one entry occupies before its value's own heap: header plus key, as allocated.
pub fn entry_alloc_size(key_len: usize) -> usize {
    HEADER + key_len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_leaves_room_for_an_8_byte_key_in_64() {
        assert_eq!(HEADER, 56);
    }

    #[test]
    fn keys_round_trip() {
        for k in [&b""[..], b"a", b"h:123456", &[7u8; 1000]] {
            let e = EntryBox::new(k, Value::from_bytes(b"v"));
            assert_eq!(e.key(), k);
            let e = e.renamed(b"other");
            assert_eq!(e.key(), b"other");
            assert_eq!(e.value, Value::from_bytes(b"v"));
            let (v, _, exp) = e.into_parts();
            assert_eq!(v, Value::from_bytes(b"v"));
            assert_eq!(exp, 0);
        }
    }

    #[test]
    fn long_chains_drop_without_recursion() {
        let mut head = EntryBox::new(b"0", Value::from_bytes(b"v"));
        for i in 1..200_000 {
            let mut e = EntryBox::new(format!("{i}").as_bytes(), Value::from_bytes(b"v"));
            e.next = Some(head);
            head = e;
        }
        drop(head);
    }
}

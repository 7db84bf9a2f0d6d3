//! One key of the keyspace: its value, expiry, access clock and key bytes, in ONE allocation.
//!
//! Layout matters here (it is most of the per-key overhead): a 32-byte header (the dict's chain
//! link, the key length and flags, the access clock, the 16-byte value), then an 8-byte expiry
//! slot only for keys that have (or had) a TTL, then the key bytes. A persistent key of up to 8
//! bytes makes a 40-byte jemalloc block (the quantum is 8: see the server's allocator.rs), up to
//! 16 a 48-byte one; there is no separate key
//! allocation to pay for or to miss the cache on when a lookup compares keys. Giving a TTL to a
//! key without a slot rebuilds its allocation (`ShardData::set_expire` does that).
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
    /// Key length (low 30 bits; `LONG` means the length is stored as a u64 in front of the
    /// bytes: keys of 1 GiB and more, which only a raised `proto-max-bulk-len` allows), plus the
    /// `HAS_EXPIRE_SLOT` flag and the snapshot bit (see `snapshot`).
    len_flags: u32,
    /// LRU clock (seconds, 24 bits) or, under an LFU policy, Redis's 16-bit minutes + 8-bit counter.
    pub access: u32,
    pub value: Value,
}

/// Owner of one entry allocation (header + key bytes).
pub struct EntryBox(NonNull<Entry>);

// SAFETY: an EntryBox owns its allocation exclusively, like a Box<Entry>.
unsafe impl Send for EntryBox {}
// SAFETY: as Box<Entry>: shared references only read through `&self`.
unsafe impl Sync for EntryBox {}

const HAS_EXPIRE_SLOT: u32 = 1 << 31;
/// Which snapshot parity this entry was last saved under (or created in): see `snapshot`.
const SNAP_BIT: u32 = 1 << 30;
const LONG: u32 = SNAP_BIT - 1;
const LEN_MASK: u32 = SNAP_BIT - 1;
const PREFIX: usize = std::mem::size_of::<u64>();
const HEADER: usize = std::mem::size_of::<Entry>();
const SLOT: usize = std::mem::size_of::<u64>();

/// Size of an entry allocation: header, optional expiry slot, optional long-length prefix, key.
fn alloc_size(key_len: usize, slot: bool) -> usize {
    let long = key_len >= LONG as usize;
    HEADER + key_len + if slot { SLOT } else { 0 } + if long { PREFIX } else { 0 }
}

fn layout(key_len: usize, slot: bool) -> Layout {
    Layout::from_size_align(alloc_size(key_len, slot), std::mem::align_of::<Entry>())
        .expect("entry layout")
}

impl EntryBox {
    pub fn new(key: &[u8], value: Value) -> EntryBox {
        Self::new_at(key, value, crate::clock::now_ms())
    }

    /// A new entry created at `now_ms` (the command's time: no extra clock read).
    pub fn new_at(key: &[u8], value: Value, now_ms: u64) -> EntryBox {
        Self::build(key, value, crate::clock::initial_access_at(now_ms), 0)
    }

    /// An entry with an expiry (`expire_at` != 0 also reserves the slot).
    pub fn new_expiring(key: &[u8], value: Value, access: u32, expire_at: u64) -> EntryBox {
        Self::build(key, value, access, expire_at)
    }

    fn build(key: &[u8], value: Value, access: u32, expire_at: u64) -> EntryBox {
        let long = key.len() >= LONG as usize;
        let slot = expire_at != 0;
        let layout = layout(key.len(), slot);
        // SAFETY: the layout is non-empty (the header); the header is written before any read
        // and the slot and key bytes land inside the allocation, right after it.
        unsafe {
            let p = alloc(layout) as *mut Entry;
            let Some(p) = NonNull::new(p) else {
                handle_alloc_error(layout)
            };
            let len = if long { LONG } else { key.len() as u32 };
            p.as_ptr().write(Entry {
                next: None,
                len_flags: len | if slot { HAS_EXPIRE_SLOT } else { 0 },
                access,
                value,
            });
            let mut dst = (p.as_ptr() as *mut u8).add(HEADER);
            if slot {
                (dst as *mut u64).write(expire_at);
                dst = dst.add(SLOT);
            }
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
            let expire_at = this.expire_at();
            let Entry {
                next,
                len_flags: _,
                access,
                value,
            } = this.0.as_ptr().read();
            drop(next);
            this.dealloc();
            (value, access, expire_at)
        }
    }

    /// SAFETY: the header must already have been dropped or moved out (its bytes unchanged).
    unsafe fn dealloc(&self) {
        let e = &*self.0.as_ptr();
        dealloc(
            self.0.as_ptr() as *mut u8,
            layout(e.key().len(), e.has_slot()),
        );
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
            let layout = layout(self.key().len(), self.has_slot());
            std::ptr::drop_in_place(self.0.as_ptr());
            dealloc(self.0.as_ptr() as *mut u8, layout);
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
    fn has_slot(&self) -> bool {
        self.len_flags & HAS_EXPIRE_SLOT != 0
    }

    /// Start of what follows the header (the slot, if any).
    #[inline]
    fn tail(&self) -> *const u8 {
        // SAFETY: an Entry only exists inside an EntryBox allocation, which extends past it.
        unsafe { (self as *const Entry as *const u8).add(HEADER) }
    }

    /// Estimated bytes this entry holds (its allocation, its bucket slot and its value's
    /// heap, as MEMORY USAGE counts a key): what a database's used memory counts for it.
    pub fn accounted_size(&self) -> usize {
        alloc_size(self.key().len(), self.has_slot())
            + std::mem::size_of::<Option<EntryBox>>()
            + self.value.accounted_size()
    }

    #[inline]
    pub fn key(&self) -> &[u8] {
        // SAFETY: the key bytes follow the header and slot (after a u64 length for long keys),
        // written once by EntryBox::build.
        unsafe {
            let base = self.tail().add(if self.has_slot() { SLOT } else { 0 });
            let len = self.len_flags & LEN_MASK;
            if len == LONG {
                let len = (base as *const u64).read_unaligned() as usize;
                std::slice::from_raw_parts(base.add(PREFIX), len)
            } else {
                std::slice::from_raw_parts(base, len as usize)
            }
        }
    }

    /// Absolute expiry in unix milliseconds; 0 = persistent.
    #[inline]
    pub fn expire_at(&self) -> u64 {
        if self.has_slot() {
            // SAFETY: the slot is the 8-aligned word right after the header.
            unsafe { (self.tail() as *const u64).read() }
        } else {
            0
        }
    }

    /// Set the expiry in place. False when the entry has no slot for a non-zero time: the
    /// caller must rebuild it (`EntryBox::new_expiring`).
    #[inline]
    pub fn try_set_expire_at(&mut self, at_ms: u64) -> bool {
        if self.has_slot() {
            // SAFETY: as in expire_at; the entry is borrowed mutably.
            unsafe { (self.tail() as *mut u64).write(at_ms) };
            true
        } else {
            at_ms == 0
        }
    }

    /// The snapshot bit: an entry whose bit differs from its shard's parity while a snapshot
    /// runs still holds its value at the cut and has not been written out yet.
    #[inline]
    pub(crate) fn snap_bit(&self) -> bool {
        self.len_flags & SNAP_BIT != 0
    }

    #[inline]
    pub(crate) fn set_snap_bit(&mut self, on: bool) {
        if on {
            self.len_flags |= SNAP_BIT;
        } else {
            self.len_flags &= !SNAP_BIT;
        }
    }

    /// Whether the entry's time has run out, as the running code must see it: never while a
    /// log is replayed, never for the master's stream on a replica (its DEL removes the key).
    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        let at = self.expire_at();
        at != 0 && at <= now_ms && !crate::expire::loading() && !crate::watch::from_master()
    }
}

/// Bytes one entry allocation asks for, before its value's own heap.
pub fn entry_alloc_size(key_len: usize, expiring: bool) -> usize {
    alloc_size(key_len, expiring)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_the_chain_link_the_clocks_and_the_value() {
        assert_eq!(HEADER, 16 + std::mem::size_of::<Value>());
    }

    #[test]
    fn expiry_slot() {
        for k in [&b""[..], b"k", &[9u8; 100]] {
            let mut e = EntryBox::new(k, Value::from_bytes(b"v"));
            assert_eq!(e.expire_at(), 0);
            assert!(e.try_set_expire_at(0));
            assert!(!e.try_set_expire_at(5));
            let mut e = EntryBox::new_expiring(k, Value::from_bytes(b"v"), 3, 77);
            assert_eq!((e.key(), e.expire_at(), e.access), (k, 77, 3));
            assert!(e.try_set_expire_at(0) && e.expire_at() == 0 && e.key() == k);
            assert!(e.try_set_expire_at(99) && e.expire_at() == 99);
            let e = e.renamed(b"x");
            assert_eq!((e.key(), e.expire_at()), (&b"x"[..], 99));
        }
    }

    #[test]
    fn keys_round_trip() {
        for k in [&b""[..], b"a", b"h:123456", &[7u8; 1000]] {
            let e = EntryBox::new(k, Value::from_bytes(b"v"));
            assert_eq!(e.key(), k);
            let mut e = e.renamed(b"other");
            e.set_snap_bit(true);
            assert!(e.snap_bit());
            assert_eq!(e.key(), b"other");
            e.set_snap_bit(false);
            assert!(!e.snap_bit());
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

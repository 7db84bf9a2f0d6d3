//! One key of the keyspace: the key bytes, its value, its expiry and its access clock.
//!
//! Layout matters here: with the table's `next` link an entry's node must fit jemalloc's 64-byte
//! class, not spill into the 80-byte one (16 bytes on every key). So the key is a thin pointer
//! with its length beside the access clock (filling what would be padding) rather than a
//! 16-byte `Box<[u8]>`.

use crate::value::Value;
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

pub struct Entry {
    key_ptr: NonNull<u8>,
    /// Key length; `u32::MAX` means the length is stored as a u64 in front of the bytes
    /// (keys of 4 GiB and more, which only a raised `proto-max-bulk-len` allows).
    key_len: u32,
    /// LRU clock (seconds, 24 bits) or, under an LFU policy, Redis's 16-bit minutes + 8-bit counter.
    pub access: u32,
    pub value: Value,
    /// Absolute expiry in unix milliseconds; 0 = persistent.
    pub expire_at: u64,
}

// SAFETY: the key bytes are owned exclusively by the entry (like a Box<[u8]>).
unsafe impl Send for Entry {}
unsafe impl Sync for Entry {}

const LONG: u32 = u32::MAX;
const PREFIX: usize = std::mem::size_of::<u64>();

fn key_layout(len: usize, long: bool) -> Layout {
    let size = if long { len + PREFIX } else { len };
    Layout::from_size_align(size, if long { PREFIX } else { 1 }).expect("key layout")
}

fn alloc_key(key: &[u8]) -> (NonNull<u8>, u32) {
    let long = key.len() >= LONG as usize;
    if key.is_empty() {
        return (NonNull::dangling(), 0);
    }
    let layout = key_layout(key.len(), long);
    // SAFETY: the layout has a non-zero size; the copy stays inside the new allocation.
    unsafe {
        let p = alloc(layout);
        let Some(p) = NonNull::new(p) else {
            handle_alloc_error(layout)
        };
        if long {
            (p.as_ptr() as *mut u64).write(key.len() as u64);
            std::ptr::copy_nonoverlapping(key.as_ptr(), p.as_ptr().add(PREFIX), key.len());
            (p, LONG)
        } else {
            std::ptr::copy_nonoverlapping(key.as_ptr(), p.as_ptr(), key.len());
            (p, key.len() as u32)
        }
    }
}

impl Entry {
    pub fn new(key: &[u8], value: Value) -> Entry {
        Self::new_at(key, value, crate::clock::now_ms())
    }

    /// A new entry created at `now_ms` (the command's time: no extra clock read).
    pub fn new_at(key: &[u8], value: Value, now_ms: u64) -> Entry {
        let (key_ptr, key_len) = alloc_key(key);
        Entry {
            key_ptr,
            key_len,
            access: crate::clock::initial_access_at(now_ms),
            value,
            expire_at: 0,
        }
    }

    /// The same value, expiry and access clock under another name (RENAME).
    pub fn renamed(mut self, key: &[u8]) -> Entry {
        self.free_key();
        let (key_ptr, key_len) = alloc_key(key);
        self.key_ptr = key_ptr;
        self.key_len = key_len;
        self
    }

    #[inline]
    pub fn key(&self) -> &[u8] {
        // SAFETY: key_ptr/key_len describe the bytes alloc_key copied and only Drop frees.
        unsafe {
            if self.key_len == LONG {
                let len = (self.key_ptr.as_ptr() as *const u64).read() as usize;
                std::slice::from_raw_parts(self.key_ptr.as_ptr().add(PREFIX), len)
            } else {
                std::slice::from_raw_parts(self.key_ptr.as_ptr(), self.key_len as usize)
            }
        }
    }

    fn free_key(&mut self) {
        let len = self.key().len();
        if len == 0 {
            return;
        }
        let layout = key_layout(len, self.key_len == LONG);
        // SAFETY: allocated by alloc_key with this same layout, freed once.
        unsafe { dealloc(self.key_ptr.as_ptr(), layout) };
        self.key_ptr = NonNull::dangling();
        self.key_len = 0;
    }

    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now_ms
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.free_key();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_fits_64_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 56);
    }

    #[test]
    fn keys_round_trip() {
        for k in [&b""[..], b"a", b"h:123456", &[7u8; 1000]] {
            let e = Entry::new(k, Value::from_bytes(b"v"));
            assert_eq!(e.key(), k);
            let e = e.renamed(b"other");
            assert_eq!(e.key(), b"other");
            assert_eq!(e.value, Value::from_bytes(b"v"));
        }
    }
}

//! A chained hash table in the style of Redis's `dict`: power-of-two buckets indexed by the low
//! bits of the key hash. That layout is what makes SCAN's reverse-binary cursor valid across
//! resizes (every element present for the whole scan is returned), and lets active expiry and
//! RANDOMKEY pick buckets directly. Resizes happen at once; a shard holds a small slice of the
//! keyspace, so they stay short.

use crate::entry::{Entry, EntryBox};
use crate::hash::{bucket_hash, key_hash};
use crate::slot_index::SlotIndex;

pub struct Dict {
    buckets: Vec<Option<EntryBox>>,
    len: usize,
    /// Cluster mode: the keys by hash slot.
    slots: Option<Box<SlotIndex>>,
}

impl Default for Dict {
    fn default() -> Self {
        Dict {
            buckets: Vec::new(),
            len: 0,
            slots: crate::hash::slot_hashing().then(Default::default),
        }
    }
}

const MIN_BUCKETS: usize = 4;

impl Dict {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    #[inline]
    fn mask(&self) -> u64 {
        self.buckets.len() as u64 - 1
    }

    pub fn get(&self, hash: u64, key: &[u8]) -> Option<&Entry> {
        if self.len == 0 {
            return None;
        }
        let mut cur = self.buckets[(hash & self.mask()) as usize].as_deref();
        while let Some(node) = cur {
            if node.key() == key {
                return Some(node);
            }
            cur = node.next.as_deref();
        }
        None
    }

    pub fn get_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut Entry> {
        if self.len == 0 {
            return None;
        }
        let idx = (hash & self.mask()) as usize;
        let mut cur = self.buckets[idx].as_deref_mut();
        while let Some(node) = cur {
            if node.key() == key {
                return Some(node);
            }
            cur = node.next.as_deref_mut();
        }
        None
    }

    /// The entry stored at address `addr` under `hash` (an entry's identity while the shard
    /// stays locked: entries are boxed, so a table resize does not move them).
    pub fn find_addr(&self, hash: u64, addr: usize) -> Option<&Entry> {
        if self.len == 0 {
            return None;
        }
        let mut cur = self.buckets[(hash & self.mask()) as usize].as_deref();
        while let Some(node) = cur {
            if node as *const Entry as usize == addr {
                return Some(node);
            }
            cur = node.next.as_deref();
        }
        None
    }

    /// Grow the table at once to hold `n` entries without resizing (never shrinks it).
    pub fn reserve(&mut self, n: usize) {
        let want = n.next_power_of_two().max(MIN_BUCKETS);
        if want > self.buckets.len() {
            self.resize(want);
        }
    }

    /// Insert an entry whose key is known to be absent.
    pub fn insert_new(&mut self, hash: u64, mut entry: EntryBox) -> &mut Entry {
        if self.len >= self.buckets.len() {
            self.resize((self.buckets.len() * 2).max(MIN_BUCKETS));
        }
        let idx = (hash & self.mask()) as usize;
        entry.next = self.buckets[idx].take();
        self.len += 1;
        if let Some(ix) = &mut self.slots {
            ix.insert(hash);
        }
        self.buckets[idx].insert(entry)
    }

    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<EntryBox> {
        if self.len == 0 {
            return None;
        }
        let idx = (hash & self.mask()) as usize;
        let mut link = &mut self.buckets[idx];
        loop {
            match link {
                None => return None,
                Some(node) if node.key() == key => {
                    let mut node = link.take().expect("matched node");
                    *link = node.next.take();
                    self.len -= 1;
                    if let Some(ix) = &mut self.slots {
                        ix.remove(hash);
                    }
                    self.maybe_shrink();
                    return Some(node);
                }
                Some(node) => link = &mut node.next,
            }
        }
    }

    fn maybe_shrink(&mut self) {
        let n = self.buckets.len();
        if n > MIN_BUCKETS && self.len * 8 < n {
            self.resize((self.len.next_power_of_two() * 2).max(MIN_BUCKETS));
        }
    }

    fn resize(&mut self, new_size: usize) {
        let old = std::mem::replace(&mut self.buckets, (0..new_size).map(|_| None).collect());
        let mask = new_size as u64 - 1;
        for mut head in old {
            while let Some(mut node) = head {
                head = node.next.take();
                let idx = (bucket_hash(node.key()) & mask) as usize;
                node.next = self.buckets[idx].take();
                self.buckets[idx] = Some(node);
            }
        }
    }

    /// Visit the entries of the bucket(s) `cursor` designates and return the next cursor
    /// (0 when the scan is complete). Redis's reverse-binary increment: it enumerates buckets
    /// so that growing or shrinking the table between calls never skips an element.
    pub fn scan(&self, cursor: u64, mut f: impl FnMut(&Entry)) -> u64 {
        if self.buckets.is_empty() {
            return 0;
        }
        let mask = self.mask();
        let mut cur = self.buckets[(cursor & mask) as usize].as_deref();
        while let Some(node) = cur {
            f(node);
            cur = node.next.as_deref();
        }
        next_cursor(cursor, mask)
    }

    /// `scan` with mutable access to the entries (the snapshot walk marks what it wrote out).
    pub fn scan_mut(&mut self, cursor: u64, mut f: impl FnMut(&mut Entry)) -> u64 {
        if self.buckets.is_empty() {
            return 0;
        }
        let mask = self.mask();
        let mut cur = self.buckets[(cursor & mask) as usize].as_deref_mut();
        while let Some(node) = cur {
            f(node);
            cur = node.next.as_deref_mut();
        }
        next_cursor(cursor, mask)
    }

    /// Every entry, mutably (a snapshot writing out a whole shard before it changes wholesale).
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut Entry)) {
        for b in self.buckets.iter_mut() {
            let mut cur = b.as_deref_mut();
            while let Some(node) = cur {
                f(node);
                cur = node.next.as_deref_mut();
            }
        }
    }

    /// Mutable access to the chain of one bucket (for expiry walks); returns the keys of
    /// entries `pred` selects, so the caller can remove them.
    pub fn bucket_keys_where(
        &self,
        bucket: usize,
        mut pred: impl FnMut(&Entry) -> bool,
    ) -> Vec<Box<[u8]>> {
        let mut out = Vec::new();
        let mut cur = self.buckets.get(bucket).and_then(|b| b.as_deref());
        while let Some(node) = cur {
            if pred(node) {
                out.push(node.key().into());
            }
            cur = node.next.as_deref();
        }
        out
    }

    /// A uniformly chosen non-empty bucket, then a uniform element of its chain (Redis's
    /// dictGetFairRandomKey is similar in spirit). None when empty.
    pub fn random_entry(&self, rng: &mut impl rand::Rng) -> Option<&Entry> {
        if self.len == 0 {
            return None;
        }
        loop {
            let b = rng.gen_range(0..self.buckets.len());
            if let Some(head) = self.buckets[b].as_deref() {
                let mut chain = Vec::new();
                let mut cur = Some(head);
                while let Some(n) = cur {
                    chain.push(n);
                    cur = n.next.as_deref();
                }
                return Some(chain[rng.gen_range(0..chain.len())]);
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.buckets.iter().flat_map(|b| {
            let mut cur = b.as_deref();
            std::iter::from_fn(move || {
                let n = cur?;
                cur = n.next.as_deref();
                Some(n)
            })
        })
    }

    /// Cluster mode: how many keys the slot has (expired ones not yet removed included, as
    /// Redis counts them). 0 without a slot index.
    pub fn count_in_slot(&self, slot: u16) -> usize {
        self.slots.as_ref().map_or(0, |ix| ix.count(slot))
    }

    /// Cluster mode: up to `max` keys of the slot, found through the index, never by a scan.
    pub fn keys_in_slot(&self, slot: u16, max: usize) -> Vec<Box<[u8]>> {
        let mut out = Vec::new();
        let Some(ix) = &self.slots else {
            return out;
        };
        for hash in ix.hashes_in(slot) {
            let mut cur = self.buckets[(hash & self.mask()) as usize].as_deref();
            while let Some(node) = cur {
                if out.len() >= max {
                    return out;
                }
                if key_hash(node.key()) == hash {
                    out.push(node.key().into());
                }
                cur = node.next.as_deref();
            }
        }
        out
    }

    /// Remove every entry, returning the old table so the caller can drop it elsewhere.
    pub fn take(&mut self) -> Dict {
        std::mem::take(self)
    }
}

/// Redis's reverse-binary cursor increment over a table of `mask + 1` buckets.
fn next_cursor(cursor: u64, mask: u64) -> u64 {
    let mut v = cursor | !mask;
    v = v.reverse_bits();
    v = v.wrapping_add(1);
    v.reverse_bits()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use std::collections::HashSet;

    fn entry(k: &str) -> EntryBox {
        EntryBox::new(k.as_bytes(), Value::from_bytes(b"v"))
    }

    #[test]
    fn insert_get_remove() {
        let mut d = Dict::default();
        for i in 0..1000 {
            let k = format!("k{i}");
            d.insert_new(key_hash(k.as_bytes()), entry(&k));
        }
        assert_eq!(d.len(), 1000);
        assert!(d.get(key_hash(b"k7"), b"k7").is_some());
        for i in 0..990 {
            let k = format!("k{i}");
            assert!(d.remove(key_hash(k.as_bytes()), k.as_bytes()).is_some());
        }
        assert_eq!(d.len(), 10);
        assert!(d.bucket_count() <= 64);
        assert!(d.get(key_hash(b"k995"), b"k995").is_some());
    }

    #[test]
    fn scan_survives_growth() {
        let mut d = Dict::default();
        for i in 0..100 {
            let k = format!("a{i}");
            d.insert_new(key_hash(k.as_bytes()), entry(&k));
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut extra = 0;
        loop {
            cursor = d.scan(cursor, |e| {
                seen.insert(e.key().to_vec());
            });
            // grow the table while the scan is under way
            for _ in 0..(if extra < 2000 { 20 } else { 0 }) {
                let k = format!("b{extra}");
                extra += 1;
                d.insert_new(key_hash(k.as_bytes()), entry(&k));
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..100 {
            assert!(seen.contains(format!("a{i}").as_bytes()), "a{i} missed");
        }
    }
}

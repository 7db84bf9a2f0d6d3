//! StreamValue: an append-only log of ID → field/value entries with consumer groups.
//!
//! Layout: entries live in nodes (like Redis's radix tree of listpacks), each node keyed by the
//! ID of the first entry it received and holding up to `stream-node-max-entries` entries (live
//! plus deleted) or about `stream-node-max-bytes` bytes. A node keeps its entries in ID order
//! in one vector, each entry's fields packed into a single allocation. Deleted entries leave
//! the vector but still count towards the node's fill, as Redis's tombstones do; a node whose
//! last live entry goes is dropped. Approximate trimming (`~`) removes whole nodes only, so it
//! behaves like Redis's.
//!
//! Consumer groups keep their pending entries lists (PEL) in ordered maps keyed by ID; each
//! pending entry names its consumer, and each consumer keeps the set of IDs it owns.

use crate::limits;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A stream entry ID: milliseconds and sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(&self) -> bool {
        self.ms == 0 && self.seq == 0
    }

    /// The next ID, or None past the maximum.
    pub fn incr(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(StreamId::new(self.ms + 1, 0))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous ID, or None before the minimum.
    pub fn decr(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(StreamId::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_string().into_bytes()
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// One entry: its ID and its field/value pairs packed as `len (u32 LE) bytes` items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEntry {
    pub id: StreamId,
    data: Box<[u8]>,
}

impl StreamEntry {
    pub fn new<T: AsRef<[u8]>>(id: StreamId, items: &[T]) -> StreamEntry {
        let total: usize = items.iter().map(|s| 4 + s.as_ref().len()).sum();
        let mut data = Vec::with_capacity(total);
        for s in items {
            let s = s.as_ref();
            data.extend_from_slice(&(s.len() as u32).to_le_bytes());
            data.extend_from_slice(s);
        }
        StreamEntry {
            id,
            data: data.into_boxed_slice(),
        }
    }

    /// Fields and values, alternating.
    pub fn items(&self) -> EntryItems<'_> {
        EntryItems { rest: &self.data }
    }

    /// Number of fields and values (twice the pair count).
    pub fn item_count(&self) -> usize {
        self.items().count()
    }

    fn heap_size(&self) -> usize {
        self.data.len()
    }
}

pub struct EntryItems<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for EntryItems<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.len() < 4 {
            return None;
        }
        let n = u32::from_le_bytes(self.rest[..4].try_into().ok()?) as usize;
        let item = &self.rest[4..4 + n];
        self.rest = &self.rest[4 + n..];
        Some(item)
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
struct Node {
    entries: Vec<StreamEntry>,
    /// Entries deleted from this node (they still count towards its fill).
    deleted: usize,
    /// The listpack bytes Redis's node would take (for `stream-node-max-bytes`).
    bytes: usize,
    /// The field names of the node's first entry (Redis's master entry), packed like an
    /// entry: later entries with the same fields take less room in Redis's node.
    master_fields: Box<[u8]>,
}

impl Node {
    /// The node's entries with `start <= id <= end`.
    fn entries_in(&self, start: StreamId, end: StreamId) -> &[StreamEntry] {
        let i = self.entries.partition_point(|e| e.id < start);
        let j = self.entries.partition_point(|e| e.id <= end);
        &self.entries[i..j.max(i)]
    }
}

/// Bytes of one listpack element holding `s` (integers are stored as integers).
fn lp_elem_size(s: &[u8]) -> usize {
    let body = match crate::value::parse_canonical_i64(s) {
        Some(v) => lp_int_size(v),
        None => {
            let l = s.len();
            l + if l < 64 {
                1
            } else if l < 4096 {
                2
            } else {
                5
            }
        }
    };
    body + lp_backlen(body)
}

fn lp_int_size(v: i64) -> usize {
    if (0..=127).contains(&v) {
        1
    } else if (-4096..4096).contains(&v) {
        2
    } else if i16::try_from(v).is_ok() {
        3
    } else if (-(1 << 23)..(1 << 23)).contains(&v) {
        4
    } else if i32::try_from(v).is_ok() {
        5
    } else {
        9
    }
}

fn lp_backlen(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16383 => 2,
        16384..=2097151 => 3,
        2097152..=268435455 => 4,
        _ => 5,
    }
}

/// An integer element: Redis stores the ID deltas as signed 64-bit values.
fn lp_sint_size(v: i64) -> usize {
    let body = lp_int_size(v);
    body + lp_backlen(body)
}

fn lp_uint_size(v: u64) -> usize {
    let body = if v > i64::MAX as u64 {
        9
    } else {
        lp_int_size(v as i64)
    };
    body + lp_backlen(body)
}

/// A pending entry: who owns it, when it was last delivered, how often.
#[derive(Debug, Clone, PartialEq)]
pub struct Nack {
    pub consumer: Box<[u8]>,
    pub delivery_time: i64,
    pub delivery_count: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Consumer {
    pub seen_time: i64,
    /// -1 until the consumer first got an entry.
    pub active_time: i64,
    pub pel: BTreeSet<StreamId>,
}

impl Consumer {
    pub fn new(now: i64) -> Consumer {
        Consumer {
            seen_time: now,
            active_time: -1,
            pel: BTreeSet::new(),
        }
    }
}

/// `entries_read` when it is unknown.
pub const INVALID_ENTRIES_READ: i64 = -1;

#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerGroup {
    pub last_id: StreamId,
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, Nack>,
    pub consumers: BTreeMap<Box<[u8]>, Consumer>,
}

impl ConsumerGroup {
    pub fn new(last_id: StreamId, entries_read: i64) -> ConsumerGroup {
        ConsumerGroup {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// Remove a pending entry from the group and from its owner.
    pub fn ack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(n) => {
                if let Some(c) = self.consumers.get_mut(&n.consumer) {
                    c.pel.remove(&id);
                }
                true
            }
            None => false,
        }
    }

    /// Delete a consumer and its pending entries; returns how many it had.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// Give pending entry `id` to `consumer` (which must exist), creating it when missing.
    pub fn assign(&mut self, id: StreamId, consumer: &[u8], now: i64) {
        match self.pel.get_mut(&id) {
            Some(n) => {
                if &*n.consumer != consumer {
                    if let Some(old) = self.consumers.get_mut(&n.consumer) {
                        old.pel.remove(&id);
                    }
                    n.consumer = consumer.into();
                }
                n.delivery_time = now;
                n.delivery_count = 1;
            }
            None => {
                self.pel.insert(
                    id,
                    Nack {
                        consumer: consumer.into(),
                        delivery_time: now,
                        delivery_count: 1,
                    },
                );
            }
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }

    fn heap_size(&self) -> usize {
        self.pel.len() * 64
            + self
                .consumers
                .iter()
                .map(|(k, c)| k.len() + 64 + c.pel.len() * 24)
                .sum::<usize>()
    }
}

/// Why an append failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendError {
    /// The ID is not greater than the last one (or the sequence would overflow).
    IdTooSmall,
    /// The fields are too large for one node.
    TooLarge,
}

/// Trimming strategy of XADD/XTRIM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

const LISTPACK_MAX_SIZE: usize = 1 << 30;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamValue {
    nodes: BTreeMap<StreamId, Node>,
    length: u64,
    pub last_id: StreamId,
    pub first_id: StreamId,
    pub max_deleted_entry_id: StreamId,
    pub entries_added: u64,
    pub groups: BTreeMap<Box<[u8]>, ConsumerGroup>,
}

impl StreamValue {
    pub fn new() -> StreamValue {
        StreamValue::default()
    }

    pub fn len(&self) -> usize {
        self.length as usize
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    pub fn encoding(&self) -> &'static str {
        "stream"
    }

    pub fn heap_size(&self) -> usize {
        let entries: usize = self
            .nodes
            .values()
            .map(|n| {
                n.entries.capacity() * std::mem::size_of::<StreamEntry>()
                    + n.entries.iter().map(StreamEntry::heap_size).sum::<usize>()
                    + 48
            })
            .sum();
        entries
            + self
                .groups
                .iter()
                .map(|(k, g)| k.len() + 96 + g.heap_size())
                .sum::<usize>()
    }

    /// `heap_size` in constant time (per group): the newest node's bytes per entry times the
    /// length, groups by their pending and consumer counts.
    pub fn heap_size_estimate(&self) -> usize {
        let per_entry = self.nodes.values().next_back().map_or(0, |n| {
            let bytes = n.entries.capacity() * std::mem::size_of::<StreamEntry>()
                + n.entries.iter().map(StreamEntry::heap_size).sum::<usize>();
            bytes / n.entries.len().max(1)
        });
        let groups: usize = self
            .groups
            .iter()
            .map(|(k, g)| k.len() + 96 + g.pel.len() * 88 + g.consumers.len() * 64)
            .sum();
        per_entry * self.length as usize + self.nodes.len() * 48 + groups
    }

    /// Number of nodes (Redis's radix-tree-keys).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Entries with `start <= id <= end`, in ID order.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> Box<dyn Iterator<Item = &StreamEntry> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        let from = self.first_node_key(start);
        Box::new(
            self.nodes
                .range(from..=end)
                .flat_map(move |(_, n)| n.entries_in(start, end).iter()),
        )
    }

    /// The key of the node that may hold `start`: the last node starting at or before it.
    fn first_node_key(&self, start: StreamId) -> StreamId {
        self.nodes
            .range(..=start)
            .next_back()
            .map(|(k, _)| *k)
            .unwrap_or(StreamId::MIN)
    }

    /// Entries with `start <= id <= end`, from the last.
    pub fn rev_range(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> Box<dyn Iterator<Item = &StreamEntry> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        let from = self.first_node_key(start);
        Box::new(
            self.nodes
                .range(from..=end)
                .rev()
                .flat_map(move |(_, n)| n.entries_in(start, end).iter().rev()),
        )
    }

    pub fn get(&self, id: StreamId) -> Option<&StreamEntry> {
        let (_, n) = self.nodes.range(..=id).next_back()?;
        let i = n.entries.binary_search_by(|e| e.id.cmp(&id)).ok()?;
        Some(&n.entries[i])
    }

    pub fn contains(&self, id: StreamId) -> bool {
        self.get(id).is_some()
    }

    pub fn first_entry(&self) -> Option<&StreamEntry> {
        self.nodes.values().next().and_then(|n| n.entries.first())
    }

    pub fn last_entry(&self) -> Option<&StreamEntry> {
        self.nodes
            .values()
            .next_back()
            .and_then(|n| n.entries.last())
    }

    /// The ID of the last live entry (Redis's streamLastValidID), 0-0 when empty.
    pub fn last_valid_id(&self) -> StreamId {
        self.last_entry().map(|e| e.id).unwrap_or_default()
    }

    fn refresh_first_id(&mut self) {
        self.first_id = self.first_entry().map(|e| e.id).unwrap_or_default();
    }

    /// The ID XADD would use: `id` explicit (`seq_given` false for `ms-*`), or None for `*`.
    pub fn next_id(
        &self,
        id: Option<StreamId>,
        seq_given: bool,
        now_ms: u64,
    ) -> Result<StreamId, AppendError> {
        let new = match id {
            Some(id) if seq_given => id,
            Some(id) => {
                if self.last_id.ms == id.ms {
                    if self.last_id.seq == u64::MAX {
                        return Err(AppendError::IdTooSmall);
                    }
                    StreamId::new(id.ms, self.last_id.seq + 1)
                } else {
                    id
                }
            }
            None => {
                if now_ms > self.last_id.ms {
                    StreamId::new(now_ms, 0)
                } else {
                    self.last_id.incr().unwrap_or(StreamId::MIN)
                }
            }
        };
        if new <= self.last_id {
            return Err(AppendError::IdTooSmall);
        }
        Ok(new)
    }

    /// Append an entry (fields and values alternating) and return its ID.
    pub fn append<T: AsRef<[u8]>>(
        &mut self,
        id: Option<StreamId>,
        seq_given: bool,
        items: &[T],
        now_ms: u64,
    ) -> Result<StreamId, AppendError> {
        let new = self.next_id(id, seq_given, now_ms)?;
        let total: usize = items.iter().map(|s| s.as_ref().len()).sum();
        if total > LISTPACK_MAX_SIZE {
            return Err(AppendError::TooLarge);
        }
        let mut max_bytes = limits::get_usize(&limits::STREAM_NODE_MAX_BYTES);
        if max_bytes == 0 || max_bytes > LISTPACK_MAX_SIZE {
            max_bytes = LISTPACK_MAX_SIZE;
        }
        let max_entries = limits::get_usize(&limits::STREAM_NODE_MAX_ENTRIES);
        let need_new = match self.nodes.values().next_back() {
            None => true,
            Some(n) => {
                n.bytes + total >= max_bytes
                    || (max_entries > 0 && n.entries.len() + n.deleted >= max_entries)
            }
        };
        if need_new {
            let names: Vec<&[u8]> = items.iter().step_by(2).map(|s| s.as_ref()).collect();
            // Header and end byte, then the master entry: counters, field names, terminator.
            let master = 7
                + 2
                + 2
                + lp_uint_size(names.len() as u64)
                + names.iter().map(|n| lp_elem_size(n)).sum::<usize>()
                + 2;
            self.nodes.insert(
                new,
                Node {
                    entries: Vec::new(),
                    deleted: 0,
                    bytes: master,
                    master_fields: StreamEntry::new(new, &names).data,
                },
            );
        }
        let (&master_id, node) = self
            .nodes
            .iter_mut()
            .next_back()
            .expect("a tail node exists");
        let entry = StreamEntry::new(new, items);
        let same_fields = {
            let mut names = entry.items().step_by(2);
            let mut master = EntryItems {
                rest: &node.master_fields,
            };
            loop {
                match (names.next(), master.next()) {
                    (None, None) => break true,
                    (Some(a), Some(b)) if a == b => {}
                    _ => break false,
                }
            }
        };
        // flags, ms delta, seq delta, [field count, fields,] values, element count.
        let mut size = 2
            + lp_sint_size(new.ms.wrapping_sub(master_id.ms) as i64)
            + lp_sint_size(new.seq.wrapping_sub(master_id.seq) as i64)
            + 2;
        for (i, it) in entry.items().enumerate() {
            if i % 2 == 1 || !same_fields {
                size += lp_elem_size(it);
            }
        }
        if !same_fields {
            size += lp_uint_size(items.len() as u64 / 2);
        }
        node.entries.push(entry);
        node.bytes += size;
        self.length += 1;
        self.entries_added += 1;
        self.last_id = new;
        if self.length == 1 {
            self.first_id = new;
        }
        Ok(new)
    }

    /// Delete one entry; true when it existed. Updates first_id and max_deleted_entry_id.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&key, n)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        let Ok(i) = n.entries.binary_search_by(|e| e.id.cmp(&id)) else {
            return false;
        };
        n.entries.remove(i);
        n.deleted += 1;
        if n.entries.is_empty() {
            self.nodes.remove(&key);
        }
        self.length -= 1;
        if id > self.max_deleted_entry_id {
            self.max_deleted_entry_id = id;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if id == self.first_id {
            self.refresh_first_id();
        }
        true
    }

    /// Redis's streamTrim: returns how many entries went. `limit` 0 means no limit.
    pub fn trim(&mut self, strategy: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        loop {
            if let Trim::MaxLen(max) = strategy {
                if self.length <= max {
                    break;
                }
            }
            let Some((&key, node)) = self.nodes.iter().next() else {
                break;
            };
            let entries = node.entries.len() as u64;
            if limit > 0 && deleted + entries > limit {
                break;
            }
            let remove_node = match strategy {
                Trim::MaxLen(max) => self.length - entries >= max,
                Trim::MinId(min) => node.entries.last().is_some_and(|e| e.id < min),
            };
            if remove_node {
                self.nodes.remove(&key);
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let node = self.nodes.get_mut(&key).expect("node exists");
            let cut = match strategy {
                Trim::MaxLen(max) => (self.length - max) as usize,
                Trim::MinId(min) => node.entries.partition_point(|e| e.id < min),
            };
            let cut = cut.min(node.entries.len());
            node.entries.drain(..cut);
            node.deleted += cut;
            self.length -= cut as u64;
            deleted += cut as u64;
            if node.entries.is_empty() {
                self.nodes.remove(&key);
            }
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.refresh_first_id();
        }
        deleted
    }

    /// The first live entry's ID (0-0 when empty): what an approximate MINID trim would be
    /// propagated as.
    pub fn first_valid_id(&self) -> StreamId {
        self.first_entry().map(|e| e.id).unwrap_or_default()
    }

    /// Redis's streamRangeHasTombstones.
    pub fn range_has_tombstones(&self, start: Option<StreamId>, end: Option<StreamId>) -> bool {
        if self.length == 0 || self.max_deleted_entry_id.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted_entry_id {
            return false;
        }
        let s = start.unwrap_or(StreamId::MIN);
        let e = end.unwrap_or(StreamId::MAX);
        s <= self.max_deleted_entry_id && self.max_deleted_entry_id <= e
    }

    /// Redis's streamEstimateDistanceFromFirstEverEntry (INVALID_ENTRIES_READ when unknown).
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= self.last_id {
            return self.entries_added as i64;
        }
        if id == self.last_id {
            return self.entries_added as i64;
        } else if id > self.last_id {
            return INVALID_ENTRIES_READ;
        }
        if self.max_deleted_entry_id.is_zero() || self.max_deleted_entry_id < self.first_id {
            if id < self.first_id {
                return (self.entries_added - self.length) as i64;
            } else if id == self.first_id {
                return (self.entries_added - self.length + 1) as i64;
            }
        }
        INVALID_ENTRIES_READ
    }

    /// A group's lag, None when it cannot be known.
    pub fn group_lag(&self, g: &ConsumerGroup) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != INVALID_ENTRIES_READ
            && !self.range_has_tombstones(Some(g.last_id), None)
        {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        let read = self.estimate_distance(g.last_id);
        if read != INVALID_ENTRIES_READ {
            Some(self.entries_added as i64 - read)
        } else {
            None
        }
    }

    /// Move a group's last-delivered ID forward to `id` (delivered now), keeping entries_read
    /// as Redis does.
    pub fn advance_group(&mut self, group: &[u8], id: StreamId) {
        let tomb = self.range_has_tombstones(Some(id), None);
        let est = self.estimate_distance(id);
        let added = self.entries_added;
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        if id <= g.last_id {
            return;
        }
        if g.entries_read != INVALID_ENTRIES_READ && !tomb {
            g.entries_read += 1;
        } else if added > 0 {
            g.entries_read = est;
        }
        g.last_id = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(s: &StreamValue) -> Vec<StreamId> {
        s.range(StreamId::MIN, StreamId::MAX)
            .map(|e| e.id)
            .collect()
    }

    #[test]
    fn append_range_delete() {
        let mut s = StreamValue::new();
        for i in 1..=250u64 {
            s.append(Some(StreamId::new(i, 0)), true, &[b"f", b"v"], 0)
                .unwrap();
        }
        assert_eq!(s.len(), 250);
        assert_eq!(s.node_count(), 3);
        assert_eq!(
            s.range(StreamId::new(99, 0), StreamId::new(102, 0))
                .map(|e| e.id.ms)
                .collect::<Vec<_>>(),
            vec![99, 100, 101, 102]
        );
        assert_eq!(
            s.rev_range(StreamId::new(99, 0), StreamId::new(102, 0))
                .map(|e| e.id.ms)
                .collect::<Vec<_>>(),
            vec![102, 101, 100, 99]
        );
        assert!(s.delete(StreamId::new(1, 0)));
        assert!(!s.delete(StreamId::new(1, 0)));
        assert_eq!(s.first_id, StreamId::new(2, 0));
        assert_eq!(s.max_deleted_entry_id, StreamId::new(1, 0));
        assert_eq!(
            s.append(Some(StreamId::new(3, 0)), true, &[b"f", b"v"], 0),
            Err(AppendError::IdTooSmall)
        );
        let e = s.get(StreamId::new(5, 0)).unwrap();
        assert_eq!(e.items().collect::<Vec<_>>(), vec![&b"f"[..], b"v"]);
    }

    #[test]
    fn trimming() {
        let mut s = StreamValue::new();
        for i in 1..=250u64 {
            s.append(Some(StreamId::new(i, 0)), true, &[b"f", b"v"], 0)
                .unwrap();
        }
        assert_eq!(s.trim(Trim::MaxLen(200), true, 0), 0);
        assert_eq!(s.trim(Trim::MaxLen(140), true, 0), 100);
        assert_eq!(s.trim(Trim::MaxLen(100), false, 0), 50);
        assert_eq!(ids(&s).first().unwrap().ms, 151);
        assert_eq!(s.trim(Trim::MinId(StreamId::new(200, 0)), false, 0), 49);
        assert_eq!(s.first_id, StreamId::new(200, 0));
    }
}

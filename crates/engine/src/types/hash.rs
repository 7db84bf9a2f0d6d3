//! HashValue: field/value pairs, compact (listpack) while small, converting at Redis's thresholds.
//!
//! * `listpack`: field, value, field, value ... in one Redis-format listpack, while the hash has
//!   at most `hash-max-listpack-entries` fields and every field and value is at most
//!   `hash-max-listpack-value` bytes.
//! * `hashtable`: a dense vector of pairs plus a hash index ([`HashTable`]) once either limit is
//!   passed. A hash never converts back, as in Redis.
//!
//! Values are handed out as [`LpEntry`] (bytes or an integer), whatever the encoding, so callers
//! reply without copying.

use crate::limits;
use crate::listpack::{Listpack, LpEntry};
use crate::thin::PackedBox;
use crate::types::field_ttl::FieldTtls;

/// Redis refuses to grow a listpack past 1 GiB (`lpSafeToAdd`); the hash converts instead.
const LISTPACK_SAFETY_SIZE: usize = 1 << 30;

#[derive(Debug, Clone, PartialEq)]
pub enum HashValue {
    Listpack(Listpack),
    Table(PackedBox<HashTable>),
    /// A hash some of whose fields have (or had) an expiry time: Redis 7.4's `listpackex`, or
    /// its `hashtable` with field TTLs. Stays this way once there, as in Redis.
    Expiring(PackedBox<ExpiringHash>),
}

/// The fields of an [`HashValue::Expiring`] hash (never itself `Expiring`) and their times.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpiringHash {
    pub fields: HashValue,
    pub ttls: FieldTtls,
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::Listpack(Listpack::new())
    }
}

fn max_entries() -> usize {
    limits::get_usize(&limits::HASH_MAX_LISTPACK_ENTRIES)
}

fn max_value() -> usize {
    limits::get_usize(&limits::HASH_MAX_LISTPACK_VALUE)
}

impl HashValue {
    pub fn new() -> HashValue {
        HashValue::default()
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        match self {
            HashValue::Listpack(lp) => lp.len() / 2,
            HashValue::Table(t) => t.len(),
            HashValue::Expiring(x) => x.fields.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            HashValue::Listpack(_) => "listpack",
            HashValue::Table(_) => "hashtable",
            HashValue::Expiring(x) => match x.fields {
                HashValue::Listpack(_) => "listpackex",
                _ => "hashtable",
            },
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            HashValue::Listpack(lp) => lp.heap_size(),
            HashValue::Table(t) => std::mem::size_of::<HashTable>() + t.heap_size(),
            HashValue::Expiring(x) => {
                std::mem::size_of::<ExpiringHash>() + x.fields.heap_size() + x.ttls.heap_size()
            }
        }
    }

    /// The value stored under `field`.
    pub fn get(&self, field: &[u8]) -> Option<LpEntry<'_>> {
        match self {
            HashValue::Listpack(lp) => {
                let f = lp.find(field, 1)?;
                Some(lp.get(lp.next(f)?))
            }
            HashValue::Table(t) => t.get(field).map(LpEntry::Str),
            HashValue::Expiring(x) => x.fields.get(field),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        match self {
            HashValue::Listpack(lp) => lp.find(field, 1).is_some(),
            HashValue::Table(t) => t.contains(field),
            HashValue::Expiring(x) => x.fields.contains(field),
        }
    }

    /// Length of the value under `field` as a string (0 when absent), for HSTRLEN.
    pub fn value_len(&self, field: &[u8]) -> usize {
        self.get(field).map_or(0, |v| v.str_len())
    }

    /// Redis's conversion check before a write of `new_fields` pairs whose arguments are
    /// `items` (fields and values): convert up front when the pairs alone would exceed the
    /// entry limit, or when any argument is longer than the value limit.
    pub fn prepare_for<'a>(
        &mut self,
        new_fields: usize,
        items: impl IntoIterator<Item = &'a [u8]>,
    ) {
        if let HashValue::Expiring(x) = self {
            return x.fields.prepare_for(new_fields, items);
        }
        let HashValue::Listpack(lp) = self else {
            return;
        };
        if new_fields > max_entries() {
            self.convert(new_fields);
            return;
        }
        let maxv = max_value();
        let mut sum = 0usize;
        for it in items {
            if it.len() > maxv {
                self.convert(0);
                return;
            }
            sum += it.len();
        }
        if lp.bytes_len() + sum > LISTPACK_SAFETY_SIZE {
            self.convert(0);
        }
    }

    /// Set `field` to `value`; true when the field is new. A time the field had goes (HSET
    /// makes a new field). Converts to a hash table when the field or value is too long for
    /// the listpack or the hash grows past the entry limit.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let HashValue::Expiring(x) = self {
            x.ttls.remove(field);
        }
        self.set_keep_ttl(field, value)
    }

    /// `set`, keeping the time the field has (HINCRBY, HINCRBYFLOAT).
    pub fn set_keep_ttl(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let HashValue::Expiring(x) = self {
            return x.fields.set_keep_ttl(field, value);
        }
        if let HashValue::Listpack(lp) = self {
            let maxv = max_value();
            if field.len() > maxv
                || value.len() > maxv
                || lp.bytes_len() + field.len() + value.len() > LISTPACK_SAFETY_SIZE
            {
                self.convert(0);
            }
        }
        match self {
            HashValue::Listpack(lp) => {
                if let Some(f) = lp.find(field, 1) {
                    let v = lp.next(f).expect("listpack hash: field without value");
                    lp.replace(v, value);
                    return false;
                }
                lp.push_back_pair(field, value);
                if lp.len() / 2 > max_entries() {
                    self.convert(0);
                }
                true
            }
            HashValue::Table(t) => t.set(field, value),
            HashValue::Expiring(_) => unreachable!("handled above"),
        }
    }

    /// Remove `field`; true when it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Listpack(lp) => match lp.find(field, 1) {
                Some(f) => {
                    lp.delete(f, 2);
                    true
                }
                None => false,
            },
            HashValue::Table(t) => t.remove(field),
            HashValue::Expiring(x) => {
                x.ttls.remove(field);
                x.fields.remove(field)
            }
        }
    }

    /// Switch to the hash-table encoding (no-op when already there), sized for `reserve` more.
    pub fn convert(&mut self, reserve: usize) {
        if let HashValue::Expiring(x) = self {
            return x.fields.convert(reserve);
        }
        let HashValue::Listpack(lp) = self else {
            return;
        };
        let mut t = HashTable::with_capacity(lp.len() / 2 + reserve);
        let mut it = lp.iter();
        while let (Some(f), Some(v)) = (it.next(), it.next()) {
            f.with_bytes(|fb| v.with_bytes(|vb| t.set(fb, vb)));
        }
        *self = HashValue::Table(PackedBox::new(t));
    }

    /// Field/value pairs in storage order.
    pub fn iter(&self) -> Pairs<'_> {
        match self {
            HashValue::Listpack(lp) => Pairs::Lp(lp.iter()),
            HashValue::Table(t) => Pairs::Table(t.pairs.iter()),
            HashValue::Expiring(x) => x.fields.iter(),
        }
    }

    /// Random access to the pairs by position (O(n) once for a listpack, then O(1) each).
    pub fn indexed(&self) -> Indexed<'_> {
        match self {
            HashValue::Listpack(lp) => {
                let mut offs = Vec::with_capacity(lp.len() / 2);
                let mut o = lp.first();
                while let Some(f) = o {
                    offs.push(f);
                    o = lp.next(f).and_then(|v| lp.next(v));
                }
                Indexed::Lp(lp, offs)
            }
            HashValue::Table(t) => Indexed::Table(t),
            HashValue::Expiring(x) => x.fields.indexed(),
        }
    }

    /// One uniformly random pair.
    pub fn random_pair(&self, rng: &mut impl rand::Rng) -> Option<(LpEntry<'_>, LpEntry<'_>)> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let i = rng.gen_range(0..n);
        match self {
            HashValue::Listpack(lp) => {
                let f = lp.seek(2 * i as i64)?;
                Some((lp.get(f), lp.get(lp.next(f)?)))
            }
            HashValue::Table(t) => t
                .pair_at(i)
                .map(|(f, v)| (LpEntry::Str(f), LpEntry::Str(v))),
            HashValue::Expiring(x) => x.fields.random_pair(rng),
        }
    }

    /// The fields as stored, whatever times they have: a listpack or a hash table.
    pub fn fields(&self) -> &HashValue {
        match self {
            HashValue::Expiring(x) => &x.fields,
            plain => plain,
        }
    }

    /// The fields' times, when some field has one.
    pub fn ttls(&self) -> Option<&FieldTtls> {
        match self {
            HashValue::Expiring(x) if !x.ttls.is_empty() => Some(&x.ttls),
            _ => None,
        }
    }

    /// The time of `field` (absolute Unix ms), if it has one.
    pub fn field_ttl(&self, field: &[u8]) -> Option<u64> {
        self.ttls().and_then(|t| t.get(field))
    }

    /// True when `field` has a time and it has passed (`at < now`, as Redis's lazy check).
    pub fn field_expired(&self, field: &[u8], now_ms: u64) -> bool {
        self.field_ttl(field).is_some_and(|at| at < now_ms)
    }

    /// Give the existing `field` the time `at_ms`, switching to the expiring form if needed.
    pub fn set_field_ttl(&mut self, field: &[u8], at_ms: u64) {
        crate::field_expire::mark_in_use();
        if !matches!(self, HashValue::Expiring(_)) {
            let fields = std::mem::take(self);
            *self = HashValue::Expiring(PackedBox::new(ExpiringHash {
                fields,
                ttls: FieldTtls::default(),
            }));
        }
        if let HashValue::Expiring(x) = self {
            x.ttls.set(field, at_ms);
        }
    }

    /// Drop `field`'s time; true when it had one.
    pub fn persist_field(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Expiring(x) => x.ttls.remove(field).is_some(),
            _ => false,
        }
    }

    /// The fields whose time is at or before `now_ms`, earliest first, at most `limit`.
    pub fn due_fields(&self, now_ms: u64, limit: usize) -> Vec<Box<[u8]>> {
        self.ttls().map_or_else(Vec::new, |t| t.due(now_ms, limit))
    }

    /// Field/value pairs whose time has not passed (HGETALL, HKEYS, HVALS skip the others).
    pub fn iter_live(&self, now_ms: u64) -> impl Iterator<Item = (LpEntry<'_>, LpEntry<'_>)> {
        self.iter()
            .filter(move |(f, _)| !f.with_bytes(|fb| self.field_expired(fb, now_ms)))
    }

    /// `get`, None for a field whose time has passed (not yet deleted: on a replica, say).
    pub fn get_live(&self, field: &[u8], now_ms: u64) -> Option<LpEntry<'_>> {
        if self.field_expired(field, now_ms) {
            return None;
        }
        self.get(field)
    }

    /// How many fields `iter_live` yields.
    pub fn live_len(&self, now_ms: u64) -> usize {
        let expired = self
            .ttls()
            .map_or(0, |t| t.iter().filter(|(_, at)| *at < now_ms).count());
        self.len() - expired
    }
}

/// Iterator over a hash's (field, value) pairs.
pub enum Pairs<'a> {
    Lp(crate::listpack::Iter<'a>),
    Table(std::slice::Iter<'a, Pair>),
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (LpEntry<'a>, LpEntry<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Pairs::Lp(it) => Some((it.next()?, it.next()?)),
            Pairs::Table(it) => it.next().map(|p| {
                let (f, v) = p.split();
                (LpEntry::Str(f), LpEntry::Str(v))
            }),
        }
    }
}

/// Positional access to a hash's pairs (see [`HashValue::indexed`]).
pub enum Indexed<'a> {
    Lp(&'a Listpack, Vec<usize>),
    Table(&'a HashTable),
}

impl<'a> Indexed<'a> {
    pub fn len(&self) -> usize {
        match self {
            Indexed::Lp(_, offs) => offs.len(),
            Indexed::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pair at position `i` (< len).
    pub fn get(&self, i: usize) -> (LpEntry<'a>, LpEntry<'a>) {
        match self {
            Indexed::Lp(lp, offs) => {
                let f = offs[i];
                let v = lp.next(f).expect("listpack hash: field without value");
                (lp.get(f), lp.get(v))
            }
            Indexed::Table(t) => {
                let (f, v) = t.pair_at(i).expect("index in range");
                (LpEntry::Str(f), LpEntry::Str(v))
            }
        }
    }
}

/// A field and its value in one allocation: `varint(field length) field value`.
#[derive(Clone)]
pub struct Pair(Box<[u8]>);

impl Pair {
    fn new(field: &[u8], value: &[u8]) -> Pair {
        let mut v = Vec::with_capacity(crate::varint::len(field.len()) + field.len() + value.len());
        crate::varint::put(&mut v, field.len());
        v.extend_from_slice(field);
        v.extend_from_slice(value);
        Pair(v.into_boxed_slice())
    }

    /// (field, value).
    #[inline]
    fn split(&self) -> (&[u8], &[u8]) {
        let (len, i) = crate::varint::get(&self.0);
        (&self.0[i..i + len], &self.0[i + len..])
    }

    #[inline]
    fn field(&self) -> &[u8] {
        self.split().0
    }

    #[inline]
    fn value(&self) -> &[u8] {
        self.split().1
    }
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (k, v) = self.split();
        write!(
            f,
            "{:?}: {:?}",
            String::from_utf8_lossy(k),
            String::from_utf8_lossy(v)
        )
    }
}

/// The `hashtable` encoding: the pairs in a dense vector, plus an index from field hash to
/// position (a SwissTable of `u32` positions, so 5 bytes a slot). Positions give O(1) random
/// picks (HRANDFIELD) and a stable scan cursor (HSCAN); removal moves the last pair into the
/// hole. Hashes are not stored: growing the index rehashes the fields.
#[derive(Clone, Default)]
pub struct HashTable {
    pairs: Vec<Pair>,
    index: hashbrown::HashTable<u32>,
    state: ahash::RandomState,
    /// Bytes held by the pairs' allocations (for memory accounting).
    bytes: usize,
}

impl std::fmt::Debug for HashTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.pairs.iter()).finish()
    }
}

impl PartialEq for HashTable {
    fn eq(&self, other: &HashTable) -> bool {
        self.len() == other.len()
            && self
                .pairs
                .iter()
                .all(|p| other.get(p.field()) == Some(p.value()))
    }
}

impl HashTable {
    pub fn with_capacity(n: usize) -> HashTable {
        HashTable {
            pairs: Vec::with_capacity(n),
            index: hashbrown::HashTable::with_capacity(n),
            state: ahash::RandomState::new(),
            bytes: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    pub fn heap_size(&self) -> usize {
        self.pairs.capacity() * std::mem::size_of::<Pair>()
            + self.index.allocation_size()
            + self.bytes
    }

    #[inline]
    fn hash(&self, field: &[u8]) -> u64 {
        self.state.hash_one(field)
    }

    fn position(&self, field: &[u8]) -> Option<usize> {
        let pairs = &self.pairs;
        self.index
            .find(self.hash(field), |&i| pairs[i as usize].field() == field)
            .map(|&i| i as usize)
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.position(field).map(|i| self.pairs[i].value())
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.position(field).is_some()
    }

    /// Set `field` to `value`; true when the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        let pair = Pair::new(field, value);
        self.bytes += pair.0.len();
        if let Some(i) = self.position(field) {
            self.bytes -= self.pairs[i].0.len();
            self.pairs[i] = pair;
            return false;
        }
        let pos = u32::try_from(self.pairs.len()).expect("hash with more than 2^32 fields");
        let h = self.hash(field);
        let (pairs, state) = (&self.pairs, &self.state);
        self.index
            .insert_unique(h, pos, |&i| state.hash_one(pairs[i as usize].field()));
        self.pairs.push(pair);
        true
    }

    /// Remove `field`; true when it was there. The last pair moves into its place.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let h = self.hash(field);
        let pairs = &self.pairs;
        let Ok(entry) = self
            .index
            .find_entry(h, |&i| pairs[i as usize].field() == field)
        else {
            return false;
        };
        let (pos, _) = entry.remove();
        let pos = pos as usize;
        let last = self.pairs.len() - 1;
        if pos != last {
            // Point the moved pair's slot at its new position.
            let lh = self.hash(self.pairs[last].field());
            let slot = self
                .index
                .find_mut(lh, |&i| i as usize == last)
                .expect("every pair is indexed");
            *slot = pos as u32;
        }
        let gone = self.pairs.swap_remove(pos);
        self.bytes -= gone.0.len();
        let cap = self.pairs.capacity();
        if cap > 64 && self.pairs.len() * 8 < cap {
            let n = self.pairs.len();
            self.pairs.shrink_to(n * 2);
            let (pairs, state) = (&self.pairs, &self.state);
            self.index
                .shrink_to(n, |&i| state.hash_one(pairs[i as usize].field()));
        }
        true
    }

    /// The pair at position `i`.
    pub fn pair_at(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.pairs.get(i).map(Pair::split)
    }

    /// The pairs in position order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.pairs.iter().map(Pair::split)
    }

    /// One step of an HSCAN: visit up to `count` pairs, from position `cursor - 1` downwards
    /// (cursor 0 starts at the top), and return the cursor to continue from (0 when done).
    /// Walking down means a removal, which moves the last pair into the hole, never hides a
    /// pair that was present for the whole scan: the moved pair was either visited already
    /// or lands below the cursor.
    pub fn scan<'a>(
        &'a self,
        cursor: u64,
        count: usize,
        mut f: impl FnMut(&'a [u8], &'a [u8]),
    ) -> u64 {
        let len = self.len();
        let mut pos = if cursor == 0 || cursor > len as u64 {
            len
        } else {
            cursor as usize
        };
        let mut visited = 0;
        while pos > 0 && visited < count {
            pos -= 1;
            let (k, v) = self.pairs[pos].split();
            f(k, v);
            visited += 1;
        }
        pos as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(h: &HashValue) -> Vec<(Vec<u8>, Vec<u8>)> {
        h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()
    }

    #[test]
    fn pair_layout() {
        for flen in [0usize, 1, 127, 128, 300, 20000] {
            let f = vec![b'f'; flen];
            let p = Pair::new(&f, b"value");
            assert_eq!(p.field(), &f[..]);
            assert_eq!(p.value(), b"value");
        }
    }

    #[test]
    fn listpack_set_get_remove() {
        let mut h = HashValue::new();
        assert!(h.set(b"a", b"1"));
        assert!(h.set(b"b", b"two"));
        assert!(!h.set(b"a", b"one"));
        assert_eq!(h.len(), 2);
        assert_eq!(h.encoding(), "listpack");
        assert_eq!(h.get(b"a").unwrap().to_vec(), b"one");
        assert_eq!(h.get(b"b").unwrap().to_vec(), b"two");
        assert!(h.get(b"c").is_none());
        // Field lookups never match values.
        assert!(h.get(b"one").is_none());
        assert_eq!(h.value_len(b"b"), 3);
        assert!(h.remove(b"a"));
        assert!(!h.remove(b"a"));
        assert_eq!(pairs(&h), vec![(b"b".to_vec(), b"two".to_vec())]);
        // Integers are stored as listpack integers and read back as the same bytes.
        h.set(b"n", b"-12345");
        assert_eq!(h.get(b"n"), Some(LpEntry::Int(-12345)));
        assert_eq!(h.value_len(b"n"), 6);
    }

    #[test]
    fn conversion_keeps_contents() {
        let mut h = HashValue::new();
        for i in 0..10 {
            h.set(format!("f{i}").as_bytes(), format!("{i}").as_bytes());
        }
        let before = pairs(&h);
        h.convert(0);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(pairs(&h), before);
        assert_eq!(h.get(b"f3").unwrap().to_vec(), b"3");
        assert!(h.remove(b"f0"));
        assert_eq!(h.len(), 9);
        // Long values convert at once.
        let mut h = HashValue::new();
        h.set(b"x", &[b'v'; 65]);
        assert_eq!(h.encoding(), "hashtable");
        let mut h = HashValue::new();
        h.set(b"x", &[b'v'; 64]);
        assert_eq!(h.encoding(), "listpack");
    }

    #[test]
    fn table_scan_sees_everything_despite_removals() {
        let mut t = HashTable::with_capacity(0);
        for i in 0..100 {
            t.set(format!("{i}").as_bytes(), b"v");
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut removed = 0;
        loop {
            cursor = t.scan(cursor, 7, |k, _| {
                seen.insert(k.to_vec());
            });
            // Remove a couple of pairs between calls.
            for _ in 0..2 {
                let victim = format!("{}", 99 - removed);
                t.remove(victim.as_bytes());
                removed += 1;
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..(100 - removed) {
            assert!(seen.contains(format!("{i}").as_bytes()), "{i} missed");
        }
    }

    #[test]
    fn table_matches_a_model() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut t = HashTable::with_capacity(0);
        let mut model = std::collections::HashMap::new();
        for step in 0..50_000u32 {
            let f = format!("f{}", rng.gen_range(0..2000));
            if rng.gen_bool(0.6) {
                let v = step.to_string();
                assert_eq!(
                    t.set(f.as_bytes(), v.as_bytes()),
                    model.insert(f, v).is_none()
                );
            } else {
                assert_eq!(t.remove(f.as_bytes()), model.remove(&f).is_some());
            }
            if step % 5000 == 0 {
                assert_eq!(t.len(), model.len());
                for (k, v) in &model {
                    assert_eq!(t.get(k.as_bytes()), Some(v.as_bytes()));
                }
                for (k, v) in t.iter() {
                    assert_eq!(model[std::str::from_utf8(k).unwrap()].as_bytes(), v);
                }
            }
        }
        // Drain it: the table shrinks and stays consistent.
        let keys: Vec<String> = model.keys().cloned().collect();
        for k in keys {
            assert!(t.remove(k.as_bytes()));
            model.remove(&k);
            if let Some(k2) = model.keys().next() {
                assert!(t.contains(k2.as_bytes()));
            }
        }
        assert!(t.is_empty());
        assert_eq!(t.bytes, 0);
    }

    #[test]
    fn indexed_and_random() {
        let mut h = HashValue::new();
        for i in 0..5 {
            h.set(format!("f{i}").as_bytes(), format!("v{i}").as_bytes());
        }
        let idx = h.indexed();
        assert_eq!(idx.len(), 5);
        assert_eq!(idx.get(3).0.to_vec(), b"f3");
        assert_eq!(idx.get(3).1.to_vec(), b"v3");
        let mut rng = rand::thread_rng();
        let (f, v) = h.random_pair(&mut rng).unwrap();
        assert_eq!(f.to_vec()[1..], v.to_vec()[1..]);
        h.convert(0);
        let idx = h.indexed();
        assert_eq!(idx.get(4).0.to_vec(), b"f4");
        let (f, v) = h.random_pair(&mut rng).unwrap();
        assert_eq!(f.to_vec()[1..], v.to_vec()[1..]);
    }
}

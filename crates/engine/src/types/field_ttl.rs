//! Expiry times of single hash fields (Redis 7.4's hash-field expiration, HEXPIRE and friends).
//!
//! Kept beside the fields rather than inside their encoding, so the listpack and hash-table
//! encodings stay byte-for-byte what they are without TTLs: a field's time is found by name
//! (HTTL, lazy expiry on access) and the earliest ones in time order (the active cycle, the
//! shard's index of hashes to visit). Times are absolute Unix milliseconds.

use std::collections::{BTreeSet, HashMap};

/// Redis refuses field times past 2^46 - 1 ms (its ebuckets keep 48 bits, minus two for flags).
pub const MAX_FIELD_TIME_MS: u64 = (1 << 46) - 1;

/// Up to this many timed fields, the compact form (one buffer scanned in order) is used.
const SMALL_MAX: usize = 64;

#[derive(Clone, Debug, PartialEq)]
pub enum FieldTtls {
    /// `[time u64 LE][field length varint][field]...` in time order: about 10 bytes plus the
    /// name per field, what Redis 7.4's `listpackex` spends; lookups scan, as a listpack's do.
    Small(Vec<u8>),
    /// By name and in time order, for hashes with many timed fields.
    Large(Box<LargeTtls>),
}

#[derive(Clone, Default, Debug, PartialEq)]
pub struct LargeTtls {
    by_field: HashMap<Box<[u8]>, u64>,
    by_time: BTreeSet<(u64, Box<[u8]>)>,
}

impl Default for FieldTtls {
    fn default() -> Self {
        FieldTtls::Small(Vec::new())
    }
}

/// One entry of the compact form: (time, field, bytes the entry takes).
fn small_entry(b: &[u8]) -> (u64, &[u8], usize) {
    let at = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
    let (len, n) = crate::varint::get(&b[8..]);
    let start = 8 + n;
    (at, &b[start..start + len], start + len)
}

/// Iterator over the compact form's (field, time) in time order.
struct SmallIter<'a>(&'a [u8]);

impl<'a> Iterator for SmallIter<'a> {
    type Item = (&'a [u8], u64);
    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let (at, f, n) = small_entry(self.0);
        self.0 = &self.0[n..];
        Some((f, at))
    }
}

fn encode_small(field: &[u8], at: u64) -> Vec<u8> {
    let mut e = Vec::with_capacity(8 + crate::varint::len(field.len()) + field.len());
    e.extend_from_slice(&at.to_le_bytes());
    crate::varint::put(&mut e, field.len());
    e.extend_from_slice(field);
    e
}

impl FieldTtls {
    pub fn len(&self) -> usize {
        match self {
            FieldTtls::Small(b) => SmallIter(b).count(),
            FieldTtls::Large(l) => l.by_field.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            FieldTtls::Small(b) => b.is_empty(),
            FieldTtls::Large(l) => l.by_field.is_empty(),
        }
    }

    /// Where `field`'s entry starts in the compact form, and its time.
    fn small_find(b: &[u8], field: &[u8]) -> Option<(usize, u64, usize)> {
        let mut off = 0;
        while off < b.len() {
            let (at, f, n) = small_entry(&b[off..]);
            if f == field {
                return Some((off, at, n));
            }
            off += n;
        }
        None
    }

    /// The time of `field`, if it has one.
    pub fn get(&self, field: &[u8]) -> Option<u64> {
        match self {
            FieldTtls::Small(b) => Self::small_find(b, field).map(|(_, at, _)| at),
            FieldTtls::Large(l) => l.by_field.get(field).copied(),
        }
    }

    /// Give `field` the time `at_ms` (replacing any earlier one).
    pub fn set(&mut self, field: &[u8], at_ms: u64) {
        self.remove(field);
        if let FieldTtls::Small(b) = self {
            if SmallIter(b).count() >= SMALL_MAX {
                let mut l = LargeTtls::default();
                for (f, at) in SmallIter(b) {
                    l.by_field.insert(f.into(), at);
                    l.by_time.insert((at, f.into()));
                }
                *self = FieldTtls::Large(Box::new(l));
            }
        }
        match self {
            FieldTtls::Small(b) => {
                let mut off = 0;
                while off < b.len() {
                    let (at, _, n) = small_entry(&b[off..]);
                    if at > at_ms {
                        break;
                    }
                    off += n;
                }
                let e = encode_small(field, at_ms);
                b.reserve_exact(e.len());
                b.splice(off..off, e);
            }
            FieldTtls::Large(l) => {
                l.by_field.insert(field.into(), at_ms);
                l.by_time.insert((at_ms, field.into()));
            }
        }
    }

    /// Drop `field`'s time; returns it.
    pub fn remove(&mut self, field: &[u8]) -> Option<u64> {
        match self {
            FieldTtls::Small(b) => {
                let (off, at, n) = Self::small_find(b, field)?;
                b.drain(off..off + n);
                if b.capacity() > 2 * b.len() + 64 {
                    b.shrink_to_fit();
                }
                Some(at)
            }
            FieldTtls::Large(l) => {
                let at = l.by_field.remove(field)?;
                l.by_time.remove(&(at, Box::from(field)));
                Some(at)
            }
        }
    }

    /// The earliest time of any field.
    pub fn min(&self) -> Option<u64> {
        match self {
            FieldTtls::Small(b) => SmallIter(b).next().map(|(_, at)| at),
            FieldTtls::Large(l) => l.by_time.first().map(|(t, _)| *t),
        }
    }

    /// Fields whose time is at or before `now_ms`, earliest first, at most `limit`.
    pub fn due(&self, now_ms: u64, limit: usize) -> Vec<Box<[u8]>> {
        self.iter()
            .take_while(|(_, t)| *t <= now_ms)
            .take(limit)
            .map(|(f, _)| Box::from(f))
            .collect()
    }

    /// (field, time) pairs in time order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], u64)> + '_> {
        match self {
            FieldTtls::Small(b) => Box::new(SmallIter(b)),
            FieldTtls::Large(l) => Box::new(l.by_time.iter().map(|(t, f)| (&**f, *t))),
        }
    }

    /// Bytes held, roughly (MEMORY USAGE): the large form keeps each name twice.
    pub fn heap_size(&self) -> usize {
        match self {
            FieldTtls::Small(b) => b.capacity(),
            FieldTtls::Large(l) => {
                l.by_field.capacity() * (std::mem::size_of::<(Box<[u8]>, u64)>() + 1)
                    + l.by_time
                        .iter()
                        .map(|(_, f)| 2 * f.len() + 48)
                        .sum::<usize>()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_by_name_and_in_order() {
        let mut t = FieldTtls::default();
        check_order(&mut t);
        // The same through the large form.
        let mut big = FieldTtls::default();
        for i in 0..(SMALL_MAX as u64 + 1) {
            big.set(format!("x{i}").as_bytes(), 1_000 + i);
        }
        assert!(matches!(big, FieldTtls::Large(_)));
        for i in 0..(SMALL_MAX as u64 + 1) {
            assert_eq!(big.remove(format!("x{i}").as_bytes()), Some(1_000 + i));
        }
        check_order(&mut big);
    }

    fn check_order(t: &mut FieldTtls) {
        t.set(b"a", 30);
        t.set(b"b", 10);
        t.set(b"c", 20);
        assert_eq!(t.min(), Some(10));
        t.set(b"b", 40);
        assert_eq!(t.min(), Some(20));
        assert_eq!(t.get(b"b"), Some(40));
        assert_eq!(
            t.due(30, 10),
            vec![Box::from(&b"c"[..]), Box::from(&b"a"[..])]
        );
        assert_eq!(t.due(30, 1).len(), 1);
        assert_eq!(t.remove(b"c"), Some(20));
        assert_eq!(t.remove(b"c"), None);
        assert_eq!(t.len(), 2);
        assert_eq!(t.iter().map(|(_, at)| at).collect::<Vec<_>>(), vec![30, 40]);
    }
}

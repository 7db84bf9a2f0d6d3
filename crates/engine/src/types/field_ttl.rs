//! Expiry times of single hash fields (Redis 7.4's hash-field expiration, HEXPIRE and friends).
//!
//! Kept beside the fields rather than inside their encoding, so the listpack and hash-table
//! encodings stay byte-for-byte what they are without TTLs: a field's time is found by name
//! (HTTL, lazy expiry on access) and the earliest ones in time order (the active cycle, the
//! shard's index of hashes to visit). Times are absolute Unix milliseconds.

use std::collections::{BTreeSet, HashMap};

/// Redis refuses field times past 2^46 - 1 ms (its ebuckets keep 48 bits, minus two for flags).
pub const MAX_FIELD_TIME_MS: u64 = (1 << 46) - 1;

#[derive(Clone, Default, Debug, PartialEq)]
pub struct FieldTtls {
    by_field: HashMap<Box<[u8]>, u64>,
    by_time: BTreeSet<(u64, Box<[u8]>)>,
}

impl FieldTtls {
    pub fn len(&self) -> usize {
        self.by_field.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_field.is_empty()
    }

    /// The time of `field`, if it has one.
    pub fn get(&self, field: &[u8]) -> Option<u64> {
        self.by_field.get(field).copied()
    }

    /// Give `field` the time `at_ms` (replacing any earlier one).
    pub fn set(&mut self, field: &[u8], at_ms: u64) {
        if let Some(old) = self.by_field.insert(field.into(), at_ms) {
            self.by_time.remove(&(old, Box::from(field)));
        }
        self.by_time.insert((at_ms, field.into()));
    }

    /// Drop `field`'s time; returns it.
    pub fn remove(&mut self, field: &[u8]) -> Option<u64> {
        let at = self.by_field.remove(field)?;
        self.by_time.remove(&(at, Box::from(field)));
        Some(at)
    }

    /// The earliest time of any field.
    pub fn min(&self) -> Option<u64> {
        self.by_time.first().map(|(t, _)| *t)
    }

    /// Fields whose time is at or before `now_ms`, earliest first, at most `limit`.
    pub fn due(&self, now_ms: u64, limit: usize) -> Vec<Box<[u8]>> {
        self.by_time
            .iter()
            .take_while(|(t, _)| *t <= now_ms)
            .take(limit)
            .map(|(_, f)| f.clone())
            .collect()
    }

    /// (field, time) pairs in time order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.by_time.iter().map(|(t, f)| (&**f, *t))
    }

    /// Bytes held, roughly (MEMORY USAGE): each field's name is kept twice, once per index.
    pub fn heap_size(&self) -> usize {
        self.by_field.capacity() * (std::mem::size_of::<(Box<[u8]>, u64)>() + 1)
            + self
                .by_time
                .iter()
                .map(|(_, f)| 2 * f.len() + 48)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_by_name_and_in_order() {
        let mut t = FieldTtls::default();
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

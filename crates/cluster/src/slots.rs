//! Hash slots: Redis's `keyHashSlot` (CRC16/XMODEM of the key or of its `{hash tag}`, modulo
//! 16384) and a 16384-bit slot bitmap laid out as Redis's `unsigned char slots[CLUSTER_SLOTS/8]`
//! (slot `s` is bit `s & 7` of byte `s / 8`), the form the bus carries it in.

use crc::{Crc, Table, CRC_16_XMODEM};

/// Number of hash slots in a cluster.
pub const CLUSTER_SLOTS: usize = 16384;

/// Bytes of a slot bitmap.
pub const SLOT_BITMAP_LEN: usize = CLUSTER_SLOTS / 8;

// Slice-by-16 tables: every keyed command in cluster mode hashes its keys, so this is hot.
const CRC16: Crc<u16, Table<16>> = Crc::<u16, Table<16>>::new(&CRC_16_XMODEM);

/// The CRC16 Redis Cluster uses (XMODEM: polynomial 0x1021, initial value 0, no reflection).
pub fn crc16(data: &[u8]) -> u16 {
    CRC16.checksum(data)
}

/// The part of `key` that is hashed: the bytes between the first `{` and the first `}` after
/// it, when that is not empty; otherwise the whole key.
#[inline]
pub fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = find_open_brace(key) {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// Where the first `{` of `key` is. Every key of every command in cluster mode is searched,
/// and keys are short: a word at a time, this costs a fraction of a byte-at-a-time loop or of
/// memchr's set-up for a 16-byte key.
#[inline]
fn find_open_brace(key: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const BRACES: u64 = u64::from_ne_bytes([b'{'; 8]);
    let mut words = key.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let x = u64::from_le_bytes(word.try_into().expect("8 bytes")) ^ BRACES;
        // A zero byte of x (a `{`) sets its high bit here; a false hit can only follow a true
        // one, so the lowest bit set marks the first `{`.
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&b| b == b'{')
        .map(|i| at + i)
}

/// The hash slot of `key` (0..16384).
pub fn key_hash_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) & (CLUSTER_SLOTS as u16 - 1)
}

/// A set of hash slots as a 16384-bit bitmap.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SlotSet([u8; SLOT_BITMAP_LEN]);

impl Default for SlotSet {
    fn default() -> Self {
        SlotSet([0; SLOT_BITMAP_LEN])
    }
}

impl std::fmt::Debug for SlotSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SlotSet[")?;
        for (i, (start, end)) in self.ranges().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        f.write_str("]")
    }
}

impl SlotSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The set from its wire form (Redis's bitmap bytes).
    pub fn from_bytes(bytes: [u8; SLOT_BITMAP_LEN]) -> Self {
        SlotSet(bytes)
    }

    /// The wire form.
    pub fn as_bytes(&self) -> &[u8; SLOT_BITMAP_LEN] {
        &self.0
    }

    /// The set holding every slot of the inclusive ranges; `None` if a bound is out of range
    /// or a range is reversed.
    pub fn from_ranges(ranges: &[(u16, u16)]) -> Option<Self> {
        let mut set = SlotSet::new();
        for &(start, end) in ranges {
            if start > end || end as usize >= CLUSTER_SLOTS {
                return None;
            }
            set.insert_range(start, end);
        }
        Some(set)
    }

    /// Whether `slot` is in the set (false for slots past 16383).
    pub fn contains(&self, slot: u16) -> bool {
        let s = slot as usize;
        s < CLUSTER_SLOTS && self.0[s / 8] & (1 << (s & 7)) != 0
    }

    /// Add `slot`; returns whether it was absent. Panics past 16383 (a caller's bug).
    pub fn insert(&mut self, slot: u16) -> bool {
        let s = slot as usize;
        assert!(s < CLUSTER_SLOTS, "slot {slot} out of range");
        let was = self.0[s / 8] & (1 << (s & 7)) != 0;
        self.0[s / 8] |= 1 << (s & 7);
        !was
    }

    /// Remove `slot`; returns whether it was present.
    pub fn remove(&mut self, slot: u16) -> bool {
        let s = slot as usize;
        if s >= CLUSTER_SLOTS {
            return false;
        }
        let was = self.0[s / 8] & (1 << (s & 7)) != 0;
        self.0[s / 8] &= !(1 << (s & 7));
        was
    }

    /// Add every slot of the inclusive range `start..=end` (both below 16384).
    pub fn insert_range(&mut self, start: u16, end: u16) {
        for s in start..=end {
            self.insert(s);
        }
    }

    /// Number of slots in the set.
    pub fn count(&self) -> usize {
        self.0.iter().map(|b| b.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&b| b == 0)
    }

    /// Slots in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        (0..CLUSTER_SLOTS as u16).filter(move |&s| self.contains(s))
    }

    /// Maximal runs of consecutive slots as inclusive `(start, end)` pairs, ascending: the form
    /// CLUSTER NODES, CLUSTER SLOTS and CLUSTER SHARDS print.
    pub fn ranges(&self) -> Ranges<'_> {
        Ranges { set: self, next: 0 }
    }
}

/// Iterator over the runs of a [`SlotSet`]; skips empty bytes whole.
pub struct Ranges<'a> {
    set: &'a SlotSet,
    next: usize,
}

impl Iterator for Ranges<'_> {
    type Item = (u16, u16);

    fn next(&mut self) -> Option<(u16, u16)> {
        let bytes = &self.set.0;
        let mut s = self.next;
        // Find the start of the next run, a whole empty byte at a time where possible.
        loop {
            if s >= CLUSTER_SLOTS {
                self.next = s;
                return None;
            }
            if s.is_multiple_of(8) && bytes[s / 8] == 0 {
                s += 8;
            } else if bytes[s / 8] & (1 << (s & 7)) != 0 {
                break;
            } else {
                s += 1;
            }
        }
        let start = s;
        while s < CLUSTER_SLOTS {
            if s.is_multiple_of(8) && bytes[s / 8] == 0xff {
                s += 8;
            } else if bytes[s / 8] & (1 << (s & 7)) != 0 {
                s += 1;
            } else {
                break;
            }
        }
        self.next = s;
        Some((start as u16, (s - 1) as u16))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_check_value() {
        // The catalogue's check value for CRC-16/XMODEM, also in Redis's crc16.c test.
        assert_eq!(crc16(b"123456789"), 0x31c3);
    }

    #[test]
    fn key_slots_match_redis() {
        // Values from redis-server 7.2.6 CLUSTER KEYSLOT.
        assert_eq!(key_hash_slot(b"foo"), 12182);
        assert_eq!(key_hash_slot(b"bar"), 5061);
        assert_eq!(key_hash_slot(b""), 0);
        assert_eq!(key_hash_slot(b"{user1000}.following"), 3443);
        assert_eq!(key_hash_slot(b"123456789"), 12739);
        assert_eq!(key_hash_slot(b"foo{}{bar}"), 8363);
        assert_ne!(key_hash_slot(b"foo{}{bar}"), key_hash_slot(b"bar"));
        assert_eq!(key_hash_slot(b"foo{{bar}}zap"), 4015);
        assert_eq!(key_hash_slot(b"{bar"), 4015);
        assert_eq!(key_hash_slot(b"foo{bar}{zap}"), 5061);
    }

    #[test]
    fn open_brace_found_as_a_byte_scan_finds_it() {
        // Every length up to three words, a `{` at each place (or none), among bytes next to
        // `{` in value and with the high bit set, which a word-at-a-time test could mistake.
        for len in 0..24 {
            for brace in (0..len).map(Some).chain([None]) {
                for filler in [b'a', b'z', b'|', 0x00, 0x7a, 0x7c, 0xfb, 0xff, 0x80] {
                    let mut key = vec![filler; len];
                    if let Some(at) = brace {
                        key[at] = b'{';
                        if at + 1 < len {
                            key[at + 1] = b'{';
                        }
                    }
                    let want = key.iter().position(|&b| b == b'{');
                    assert_eq!(find_open_brace(&key), want, "{key:?}");
                }
            }
        }
    }

    #[test]
    fn hash_tag_rules() {
        assert_eq!(hash_tag(b"abc"), b"abc");
        assert_eq!(hash_tag(b"{abc}x"), b"abc");
        assert_eq!(hash_tag(b"x{}y{z}"), b"x{}y{z}");
        assert_eq!(hash_tag(b"x{y"), b"x{y");
        assert_eq!(hash_tag(b"}x{y}"), b"y");
    }

    #[test]
    fn ranges_of_sets() {
        let empty = SlotSet::new();
        assert_eq!(empty.ranges().count(), 0);
        assert!(empty.is_empty());
        let all = SlotSet::from_ranges(&[(0, 16383)]).unwrap();
        assert_eq!(all.ranges().collect::<Vec<_>>(), vec![(0, 16383)]);
        assert_eq!(all.count(), 16384);
        let mut s = SlotSet::new();
        for slot in [0, 1, 2, 7, 8, 9, 100, 5000, 5001, 16383] {
            s.insert(slot);
        }
        s.insert_range(200, 1000);
        assert_eq!(
            s.ranges().collect::<Vec<_>>(),
            vec![
                (0, 2),
                (7, 9),
                (100, 100),
                (200, 1000),
                (5000, 5001),
                (16383, 16383)
            ]
        );
        assert!(s.remove(8));
        assert!(!s.remove(8));
        assert_eq!(s.ranges().nth(1), Some((7, 7)));
        assert!(SlotSet::from_ranges(&[(5, 4)]).is_none());
        assert!(SlotSet::from_ranges(&[(0, 16384)]).is_none());
        assert!(!s.contains(16384));
    }

    #[test]
    fn ranges_agree_with_bits_on_random_sets() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for _ in 0..200 {
            let mut bytes = [0u8; SLOT_BITMAP_LEN];
            let density = rng.gen_range(0..4);
            for b in bytes.iter_mut() {
                *b = match density {
                    0 => 0,
                    1 => rng.gen(),
                    2 => [0, 0xff][rng.gen_range(0..2)],
                    _ => 0xff,
                };
            }
            let set = SlotSet::from_bytes(bytes);
            let ranges: Vec<_> = set.ranges().collect();
            let rebuilt = SlotSet::from_ranges(&ranges).unwrap();
            assert_eq!(rebuilt, set);
            assert_eq!(set.iter().count(), set.count());
            for w in ranges.windows(2) {
                assert!(w[0].1 + 1 < w[1].0, "runs are maximal and ascending");
            }
        }
    }
}

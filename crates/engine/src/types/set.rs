//! SetValue: Redis's three set encodings and the conversions between them (t_set.c's rules).
//!
//! - `intset` while every member is an integer and there are at most `set-max-intset-entries`;
//! - `listpack` while there are at most `set-max-listpack-entries` members of at most
//!   `set-max-listpack-value` bytes;
//! - `hashtable` otherwise: a dense vector of members plus a hash index of their positions, so
//!   that a random member is one index away (SPOP, SRANDMEMBER) and SSCAN can walk positions
//!   (see [`SetValue::scan`]).
//!
//! Like Redis, a set never goes back to a smaller encoding on its own; only the STORE
//! commands build their results compact.

use super::field_ttl::FieldTtls;
use super::intset::{InlineIntset, Intset, IntsetIter, IntsetRef};
use crate::limits;
use crate::listpack::{self, Listpack, LpEntry};
use crate::thin::PackedBox;
use crate::value::parse_canonical_i64;
use rand::Rng;
use std::hash::BuildHasher;
use std::sync::OnceLock;

/// Members are viewed as listpack entries: an integer or a byte string.
pub type Member<'a> = LpEntry<'a>;

/// The hasher of hashtable-encoded sets: ahash with keys drawn once per process, so that a set
/// carries no per-instance hasher state.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemberHasher;

impl BuildHasher for MemberHasher {
    type Hasher = ahash::AHasher;
    #[inline]
    fn build_hasher(&self) -> ahash::AHasher {
        // Process-wide: a zero-sized hasher inside every set value carries no state of its own.
        static STATE: OnceLock<ahash::RandomState> = OnceLock::new();
        STATE.get_or_init(ahash::RandomState::new).build_hasher()
    }
}

#[inline]
fn hash_of(m: &[u8]) -> u64 {
    MemberHasher.hash_one(m)
}

/// The hashtable encoding: members in a dense vector (so a random member is one index away
/// and SSCAN can walk positions) plus a hash index of 4-byte positions into it. Removal moves
/// the last member into the hole, as `Vec::swap_remove` does.
#[derive(Clone, Default)]
pub struct HtSet {
    members: Vec<Box<[u8]>>,
    index: hashbrown::HashTable<u32>,
}

impl std::fmt::Debug for HtSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries(self.members.iter().map(|m| String::from_utf8_lossy(m)))
            .finish()
    }
}

impl PartialEq for HtSet {
    fn eq(&self, other: &HtSet) -> bool {
        self.len() == other.len() && self.members.iter().all(|m| other.contains(m))
    }
}

impl HtSet {
    pub fn with_capacity(n: usize) -> HtSet {
        HtSet {
            members: Vec::with_capacity(n),
            index: hashbrown::HashTable::with_capacity(n),
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Slots of the index (for sizing decisions).
    pub fn capacity(&self) -> usize {
        self.index.capacity()
    }

    fn position(&self, m: &[u8]) -> Option<usize> {
        let members = &self.members;
        self.index
            .find(hash_of(m), |&i| *members[i as usize] == *m)
            .map(|&i| i as usize)
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        self.position(m).is_some()
    }

    /// Add a member; false if it was already there.
    pub fn insert(&mut self, m: Box<[u8]>) -> bool {
        let h = hash_of(&m);
        let members = &self.members;
        if self
            .index
            .find(h, |&i| *members[i as usize] == *m)
            .is_some()
        {
            return false;
        }
        let idx = u32::try_from(self.members.len()).expect("set too large");
        if self.members.len() == self.members.capacity() {
            // Grow by half rather than doubling: the vector is most of a big set's memory.
            let extra = (self.members.capacity() / 2).max(4);
            self.members.reserve_exact(extra);
        }
        self.members.push(m);
        let members = &self.members;
        self.index
            .insert_unique(h, idx, |&i| hash_of(&members[i as usize]));
        true
    }

    /// Move the last member into position `idx` (whose index slot is already gone) and
    /// return the member that was there.
    fn take_at(&mut self, idx: usize) -> Box<[u8]> {
        let last = self.members.len() - 1;
        if idx != last {
            let slot = self
                .index
                .find_mut(hash_of(&self.members[last]), |&i| i as usize == last)
                .expect("every position is indexed");
            *slot = idx as u32;
        }
        self.members.swap_remove(idx)
    }

    /// Remove a member; false if it was not there.
    pub fn swap_remove(&mut self, m: &[u8]) -> bool {
        let members = &self.members;
        let Ok(entry) = self
            .index
            .find_entry(hash_of(m), |&i| *members[i as usize] == *m)
        else {
            return false;
        };
        let (idx, _) = entry.remove();
        self.take_at(idx as usize);
        true
    }

    /// Remove and return the member at position `idx`.
    pub fn swap_remove_index(&mut self, idx: usize) -> Option<Box<[u8]>> {
        let h = hash_of(self.members.get(idx)?);
        let Ok(entry) = self.index.find_entry(h, |&i| i as usize == idx) else {
            unreachable!("every position is indexed");
        };
        entry.remove();
        Some(self.take_at(idx))
    }

    #[inline]
    pub fn get_index(&self, idx: usize) -> &[u8] {
        &self.members[idx]
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Box<[u8]>> {
        self.members.iter()
    }

    pub fn shrink_to_fit(&mut self) {
        self.members.shrink_to_fit();
        let members = &self.members;
        self.index.shrink_to_fit(|&i| hash_of(&members[i as usize]));
    }

    /// Heap bytes: the member vector, the index, and the members' own bytes (estimated from
    /// a sample, as MEMORY USAGE samples).
    pub fn heap_size(&self) -> usize {
        let n = self.len();
        let sample = n.min(16);
        let avg = self
            .members
            .iter()
            .take(sample)
            .map(|m| m.len())
            .sum::<usize>()
            .checked_div(sample)
            .unwrap_or(0);
        self.members.capacity() * 16 + self.index.capacity() * 5 + n * avg
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    /// An intset of at most 16 bytes, held in place (no allocation of its own).
    IntsetInline(InlineIntset),
    Intset(Intset),
    Listpack(Listpack),
    Hashtable(PackedBox<HtSet>),
    /// A set some of whose members have (or had) an expiry time (KeyDB's EXPIREMEMBER): the
    /// members in one of the encodings above, and their times beside them.
    Expiring(PackedBox<ExpiringSet>),
}

/// The members of an [`SetValue::Expiring`] set (never itself `Expiring`) and their times.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpiringSet {
    pub members: SetValue,
    pub ttls: FieldTtls,
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue::IntsetInline(InlineIntset::new())
    }
}

/// `set-max-intset-entries`, capped at 2^30 as Redis caps it.
pub fn intset_max_entries() -> usize {
    limits::get_usize(&limits::SET_MAX_INTSET_ENTRIES).min(1 << 30)
}

pub fn listpack_max_entries() -> usize {
    limits::get_usize(&limits::SET_MAX_LISTPACK_ENTRIES)
}

pub fn listpack_max_value() -> usize {
    limits::get_usize(&limits::SET_MAX_LISTPACK_VALUE)
}

/// Listpacks stay below 1 GB (Redis's LISTPACK_MAX_SAFETY_SIZE).
const LISTPACK_SAFETY_SIZE: usize = 1 << 30;

/// Digits (and sign) of `v` in decimal.
fn sdigits10(v: i64) -> usize {
    itoa::Buffer::new().format(v).len()
}

/// Bytes a listpack needs to store `v` `n` times (Redis's lpEstimateBytesRepeatedInteger).
fn lp_bytes_repeated_int(v: i64, n: usize) -> usize {
    let enc = if (0..=127).contains(&v) {
        1
    } else if (-4096..=4095).contains(&v) {
        2
    } else if (-32768..=32767).contains(&v) {
        3
    } else if (-8388608..=8388607).contains(&v) {
        4
    } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
        5
    } else {
        9
    };
    // One backlen byte covers every integer encoding.
    (enc + 1) * n
}

fn new_ht(cap: usize) -> PackedBox<HtSet> {
    PackedBox::new(HtSet::with_capacity(cap))
}

/// Pick `k` of `n` positions, each subset equally likely, in ascending order (Redis's
/// lpNextRandom selection: one pass, keep each with probability wanted/left).
impl ExpiringSet {
    fn remove(&mut self, m: &[u8]) -> bool {
        let removed = self.members.remove(m);
        if removed {
            self.ttls.remove(m);
        }
        removed
    }
}

pub fn pick_ordered<R: Rng + ?Sized>(n: usize, k: usize, rng: &mut R) -> Vec<usize> {
    let mut out = Vec::with_capacity(k.min(n));
    let mut want = k.min(n);
    for i in 0..n {
        if want == 0 {
            break;
        }
        if rng.gen_range(0..n - i) < want {
            out.push(i);
            want -= 1;
        }
    }
    out
}

impl SetValue {
    /// An empty set in the encoding Redis's setTypeCreate picks for a first member `first`
    /// and about `size_hint` members to come.
    pub fn create(first: &[u8], size_hint: usize) -> SetValue {
        if size_hint <= limits::get_usize(&limits::SET_MAX_INTSET_ENTRIES)
            && parse_canonical_i64(first).is_some()
        {
            SetValue::new_intset()
        } else if size_hint <= listpack_max_entries() {
            SetValue::Listpack(Listpack::new())
        } else {
            SetValue::Hashtable(new_ht(size_hint))
        }
    }

    pub fn new_intset() -> SetValue {
        SetValue::IntsetInline(InlineIntset::new())
    }

    /// Store an intset inline when it is small enough, on the heap otherwise.
    fn from_intset(is: Intset) -> SetValue {
        match InlineIntset::from_blob(is.as_bytes()) {
            Some(small) => SetValue::IntsetInline(small),
            None => SetValue::Intset(is),
        }
    }

    /// The intset, when that is the encoding.
    #[inline]
    pub fn ints(&self) -> Option<IntsetRef<'_>> {
        if let SetValue::Expiring(x) = self {
            return x.members.ints();
        }
        match self {
            SetValue::IntsetInline(s) => Some(s.view()),
            SetValue::Intset(is) => Some(is.view()),
            _ => None,
        }
    }

    #[inline]
    pub fn is_intset(&self) -> bool {
        if let SetValue::Expiring(x) = self {
            return x.members.is_intset();
        }
        matches!(self, SetValue::IntsetInline(_) | SetValue::Intset(_))
    }

    /// Run `f` on the intset (which must be the encoding), moving it between inline and heap
    /// storage as its size requires.
    fn intset_mut<R>(&mut self, f: impl FnOnce(&mut Intset) -> R) -> R {
        let mut is = match std::mem::take(self) {
            SetValue::IntsetInline(s) => Intset::from_view(s.view()),
            SetValue::Intset(is) => is,
            _ => unreachable!("not an intset"),
        };
        let r = f(&mut is);
        *self = SetValue::from_intset(is);
        r
    }

    pub fn new_listpack() -> SetValue {
        SetValue::Listpack(Listpack::new())
    }

    pub fn len(&self) -> usize {
        match self {
            SetValue::IntsetInline(s) => s.view().len(),
            SetValue::Intset(is) => is.len(),
            SetValue::Listpack(lp) => lp.len(),
            SetValue::Hashtable(ht) => ht.len(),
            SetValue::Expiring(x) => x.members.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            SetValue::IntsetInline(_) | SetValue::Intset(_) => "intset",
            SetValue::Listpack(_) => "listpack",
            SetValue::Hashtable(_) => "hashtable",
            SetValue::Expiring(x) => x.members.encoding(),
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            SetValue::IntsetInline(_) => 0,
            SetValue::Intset(is) => is.heap_size(),
            SetValue::Listpack(lp) => lp.heap_size(),
            SetValue::Hashtable(ht) => std::mem::size_of::<HtSet>() + ht.heap_size(),
            SetValue::Expiring(x) => {
                std::mem::size_of::<ExpiringSet>() + x.members.heap_size() + x.ttls.heap_size()
            }
        }
    }

    /// Before adding about `size_hint` members: go straight to a hash table when they could
    /// not fit the compact encoding anyway (Redis's setTypeMaybeConvert).
    pub fn maybe_convert(&mut self, size_hint: usize) {
        if let SetValue::Expiring(x) = self {
            return x.members.maybe_convert(size_hint);
        }
        let too_big = match self {
            SetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            SetValue::Listpack(_) => size_hint > listpack_max_entries(),
            SetValue::IntsetInline(_) | SetValue::Intset(_) => {
                size_hint > limits::get_usize(&limits::SET_MAX_INTSET_ENTRIES)
            }
            SetValue::Hashtable(_) => false,
        };
        if too_big {
            self.convert_to_ht(size_hint);
        }
    }

    /// Re-encode as a hash table sized for `cap` members.
    pub fn convert_to_ht(&mut self, cap: usize) {
        if let SetValue::Expiring(x) = self {
            return x.members.convert_to_ht(cap);
        }
        if matches!(self, SetValue::Hashtable(_)) {
            return;
        }
        let mut ht = new_ht(cap.max(self.len()));
        for m in self.iter() {
            ht.insert(m.to_vec().into_boxed_slice());
        }
        *self = SetValue::Hashtable(ht);
    }

    /// Re-encode an intset as a listpack (members keep their ascending order).
    fn intset_to_listpack(&mut self) {
        if let Some(is) = self.ints() {
            let mut lp = Listpack::new();
            for v in is.iter() {
                lp.push_back_int(v);
            }
            *self = SetValue::Listpack(lp);
        }
    }

    /// Convert an intset that grew past `set-max-intset-entries`.
    fn maybe_convert_intset(&mut self) {
        if let Some(is) = self.ints() {
            let n = is.len();
            if n > intset_max_entries() {
                self.convert_to_ht(n);
            }
        }
    }

    /// Turn a set whose members are all integers into an intset when it is small enough
    /// (the STORE commands' final step). Returns false (and changes nothing) otherwise.
    pub fn maybe_convert_to_intset(&mut self) -> bool {
        if let SetValue::Expiring(x) = self {
            return x.members.maybe_convert_to_intset();
        }
        match self {
            SetValue::IntsetInline(_) | SetValue::Intset(_) => true,
            _ if self.len() > intset_max_entries() => false,
            _ => {
                let mut ints = Vec::with_capacity(self.len());
                for m in self.iter() {
                    match m.as_i64() {
                        Some(v) => ints.push(v),
                        None => return false,
                    }
                }
                ints.sort_unstable();
                *self = SetValue::from_intset(Intset::from_sorted(&ints));
                true
            }
        }
    }

    /// Give back spare capacity (after building a result set).
    pub fn shrink_to_fit(&mut self) {
        match self {
            SetValue::IntsetInline(_) | SetValue::Intset(_) | SetValue::Listpack(_) => {}
            SetValue::Hashtable(ht) => ht.shrink_to_fit(),
            SetValue::Expiring(x) => x.members.shrink_to_fit(),
        }
    }

    /// Add a member; false if it was already there. Converts as Redis's setTypeAdd does.
    pub fn add(&mut self, m: &[u8]) -> bool {
        if let SetValue::Expiring(x) = self {
            return x.members.add(m);
        }
        if let Some(is) = self.ints() {
            if let Some(v) = parse_canonical_i64(m) {
                if is.contains(v) {
                    return false;
                }
                self.intset_mut(|is| is.insert(v));
                self.maybe_convert_intset();
                return true;
            }
        }
        match self {
            SetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            SetValue::IntsetInline(_) | SetValue::Intset(_) => {
                let is = self.ints().expect("an intset");
                // A non-integer: a listpack if everything would fit one, else a hash table.
                let n = is.len();
                let (maxelelen, totsize) = match (is.min(), is.max()) {
                    (Some(lo), Some(hi)) => (
                        sdigits10(lo).max(sdigits10(hi)),
                        lp_bytes_repeated_int(lo, n).max(lp_bytes_repeated_int(hi, n)),
                    ),
                    _ => (0, 0),
                };
                let maxv = listpack_max_value();
                if n < listpack_max_entries()
                    && m.len() <= maxv
                    && maxelelen <= maxv
                    && totsize + m.len() < LISTPACK_SAFETY_SIZE
                {
                    self.intset_to_listpack();
                    if let SetValue::Listpack(lp) = self {
                        lp.push_back(m);
                    }
                } else {
                    self.convert_to_ht(n + 1);
                    if let SetValue::Hashtable(ht) = self {
                        ht.insert(m.into());
                    }
                }
                true
            }
            SetValue::Listpack(lp) => {
                if lp.find(m, 0).is_some() {
                    return false;
                }
                if lp.len() < listpack_max_entries()
                    && m.len() <= listpack_max_value()
                    && lp.bytes_len() + m.len() < LISTPACK_SAFETY_SIZE
                {
                    lp.push_back(m);
                } else {
                    let n = lp.len();
                    self.convert_to_ht(n + 1);
                    if let SetValue::Hashtable(ht) = self {
                        ht.insert(m.into());
                    }
                }
                true
            }
            SetValue::Hashtable(ht) => {
                if ht.contains(m) {
                    false
                } else {
                    ht.insert(m.into())
                }
            }
        }
    }

    /// Add a member given as an entry (integers go into an intset without formatting).
    pub fn add_member(&mut self, m: Member) -> bool {
        if let SetValue::Expiring(x) = self {
            return x.members.add_member(m);
        }
        match m {
            LpEntry::Int(v) if self.is_intset() => {
                if self.ints().is_some_and(|is| is.contains(v)) {
                    return false;
                }
                self.intset_mut(|is| is.insert(v));
                self.maybe_convert_intset();
                true
            }
            m => m.with_bytes(|b| self.add(b)),
        }
    }

    /// Remove a member; false if it was not there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        if let SetValue::Expiring(x) = self {
            return x.remove(m);
        }
        match self {
            SetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            SetValue::IntsetInline(_) | SetValue::Intset(_) => {
                parse_canonical_i64(m).is_some_and(|v| self.remove_int(v))
            }
            SetValue::Listpack(lp) => match lp.find(m, 0) {
                Some(off) => {
                    lp.delete(off, 1);
                    true
                }
                None => false,
            },
            SetValue::Hashtable(ht) => {
                let removed = ht.swap_remove(m);
                if removed {
                    Self::maybe_shrink_ht(ht);
                }
                removed
            }
        }
    }

    pub fn remove_member(&mut self, m: Member) -> bool {
        if let SetValue::Expiring(x) = self {
            return m.with_bytes(|b| x.remove(b));
        }
        match m {
            LpEntry::Int(v) if self.is_intset() => self.remove_int(v),
            m => m.with_bytes(|b| self.remove(b)),
        }
    }

    /// Remove an integer from an intset-encoded set.
    fn remove_int(&mut self, v: i64) -> bool {
        if !self.ints().is_some_and(|is| is.contains(v)) {
            return false;
        }
        self.intset_mut(|is| is.remove(v))
    }

    /// Shrink a hash table that became mostly empty (Redis resizes below 10% fill).
    fn maybe_shrink_ht(ht: &mut HtSet) {
        let cap = ht.capacity();
        if cap > 64 && ht.len() * 10 < cap {
            ht.shrink_to_fit();
        }
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        if let SetValue::Expiring(x) = self {
            return x.members.contains(m);
        }
        match self {
            SetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            SetValue::IntsetInline(_) | SetValue::Intset(_) => {
                parse_canonical_i64(m).is_some_and(|v| self.ints().is_some_and(|is| is.contains(v)))
            }
            SetValue::Listpack(lp) => lp.find(m, 0).is_some(),
            SetValue::Hashtable(ht) => ht.contains(m),
        }
    }

    pub fn contains_member(&self, m: Member) -> bool {
        if let SetValue::Expiring(x) = self {
            return x.members.contains_member(m);
        }
        match (self.ints(), m) {
            (Some(is), LpEntry::Int(v)) => is.contains(v),
            (_, m) => m.with_bytes(|b| self.contains(b)),
        }
    }

    /// Members in storage order (ascending for intsets, insertion order otherwise).
    pub fn iter(&self) -> SetIter<'_> {
        if let SetValue::Expiring(x) = self {
            return x.members.iter();
        }
        match self {
            SetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            SetValue::IntsetInline(s) => SetIter::Int(s.view().iter()),
            SetValue::Intset(is) => SetIter::Int(is.iter()),
            SetValue::Listpack(lp) => SetIter::Lp(lp.iter()),
            SetValue::Hashtable(ht) => SetIter::Ht(ht.iter()),
        }
    }

    /// The member at position `i` of the storage order (a walk for listpacks).
    pub fn member_at(&self, i: usize) -> Member<'_> {
        if let SetValue::Expiring(x) = self {
            return x.members.member_at(i);
        }
        match self {
            SetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            SetValue::IntsetInline(s) => LpEntry::Int(s.view().get(i)),
            SetValue::Intset(is) => LpEntry::Int(is.get(i)),
            SetValue::Listpack(lp) => lp.get(lp.seek(i as i64).expect("index in range")),
            SetValue::Hashtable(ht) => LpEntry::Str(ht.get_index(i)),
        }
    }

    /// One member chosen uniformly at random. The set must not be empty.
    pub fn random<R: Rng + ?Sized>(&self, rng: &mut R) -> Member<'_> {
        let i = rng.gen_range(0..self.len());
        self.member_at(i)
    }

    /// Remove and return a random member. The set must not be empty.
    pub fn pop_random<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Vec<u8> {
        if let SetValue::Expiring(x) = self {
            return {
                let m = x.members.pop_random(rng);
                x.ttls.remove(&m);
                m
            };
        }
        let i = rng.gen_range(0..self.len());
        match self {
            SetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            SetValue::IntsetInline(_) | SetValue::Intset(_) => {
                let v = self.intset_mut(|is| is.remove_at(i));
                itoa::Buffer::new().format(v).as_bytes().to_vec()
            }
            SetValue::Listpack(lp) => {
                let off = lp.seek(i as i64).expect("index in range");
                let v = lp.get(off).to_vec();
                lp.delete(off, 1);
                v
            }
            SetValue::Hashtable(ht) => {
                let v = ht.swap_remove_index(i).expect("index in range").into_vec();
                Self::maybe_shrink_ht(ht);
                v
            }
        }
    }

    /// SPOP with a count smaller than the set: remove `count` random members, calling `emit`
    /// on each, with Redis's two strategies (pick the victims when few, else pick the
    /// survivors into a new set and hand out the old one).
    pub fn pop_many<R: Rng + ?Sized>(
        &mut self,
        count: usize,
        rng: &mut R,
        mut emit: impl FnMut(Member),
    ) {
        if let SetValue::Expiring(x) = self {
            let ExpiringSet { members, ttls } = &mut **x;
            return members.pop_many_plain(count, rng, &mut |m| {
                m.with_bytes(|b| ttls.remove(b));
                emit(m)
            });
        }
        self.pop_many_plain(count, rng, &mut emit)
    }

    /// `pop_many` on a set that is not the expiring form.
    fn pop_many_plain<R: Rng + ?Sized>(
        &mut self,
        count: usize,
        rng: &mut R,
        emit: &mut dyn FnMut(Member),
    ) {
        let size = self.len();
        debug_assert!(count < size);
        let remaining = size - count;
        const MOVE_STRATEGY_MUL: usize = 5;
        if remaining * MOVE_STRATEGY_MUL > count {
            if let SetValue::Listpack(lp) = self {
                let offs: Vec<usize> = lp.offsets().collect();
                let picked: Vec<usize> = pick_ordered(size, count, rng)
                    .into_iter()
                    .map(|i| offs[i])
                    .collect();
                for &o in &picked {
                    emit(lp.get(o));
                }
                lp.delete_offsets(&picked);
            } else {
                for _ in 0..count {
                    let m = self.pop_random(rng);
                    emit(LpEntry::Str(&m));
                }
            }
            return;
        }
        // Few survivors: move them into a new set, hand out the rest of the old one.
        let newset = if let SetValue::Listpack(lp) = self {
            let mut newset = SetValue::new_listpack();
            let offs: Vec<usize> = lp.offsets().collect();
            let keep: Vec<usize> = pick_ordered(size, remaining, rng)
                .into_iter()
                .map(|i| offs[i])
                .collect();
            for &o in &keep {
                newset.add_member(lp.get(o));
            }
            lp.delete_offsets(&keep);
            newset
        } else {
            let mut newset = if self.is_intset() {
                SetValue::new_intset()
            } else {
                SetValue::new_listpack()
            };
            for _ in 0..remaining {
                let i = rng.gen_range(0..self.len());
                match self {
                    SetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
                    SetValue::IntsetInline(_) | SetValue::Intset(_) => {
                        let v = self.intset_mut(|is| is.remove_at(i));
                        newset.add_member(LpEntry::Int(v));
                    }
                    SetValue::Hashtable(ht) => {
                        let m = ht.swap_remove_index(i).expect("index in range");
                        newset.add(&m);
                    }
                    SetValue::Listpack(_) => unreachable!("handled above"),
                }
            }
            newset
        };
        for m in self.iter() {
            emit(m);
        }
        *self = newset;
    }

    /// SRANDMEMBER with a count (Redis's cases): `count` members with repetitions when
    /// `unique` is false, else `min(count, len)` distinct members. `emit` gets each; the caller
    /// writes the reply length first (`reply_len`), and may stop early by returning false.
    pub fn random_members<R: Rng + ?Sized>(
        &self,
        count: usize,
        unique: bool,
        rng: &mut R,
        mut emit: impl FnMut(Member) -> bool,
    ) {
        if let SetValue::Expiring(x) = self {
            return x.members.random_members(count, unique, rng, emit);
        }
        let size = self.len();
        if count == 0 || size == 0 {
            return;
        }
        // Case 1: repetitions allowed (or a single member): sample independently.
        if !unique || count == 1 {
            if let SetValue::Listpack(lp) = self {
                if count > 1 {
                    let offs: Vec<usize> = lp.offsets().collect();
                    for _ in 0..count {
                        if !emit(lp.get(offs[rng.gen_range(0..size)])) {
                            return;
                        }
                    }
                    return;
                }
            }
            for _ in 0..count {
                if !emit(self.random(rng)) {
                    return;
                }
            }
            return;
        }
        // Case 2: everything.
        if count >= size {
            for m in self.iter() {
                emit(m);
            }
            return;
        }
        // Case 2.5: a listpack, in one ordered pass.
        if let SetValue::Listpack(lp) = self {
            let offs: Vec<usize> = lp.offsets().collect();
            for i in pick_ordered(size, count, rng) {
                emit(lp.get(offs[i]));
            }
            return;
        }
        // Case 3: most of the set: start from all positions and drop random ones.
        const SUB_STRATEGY_MUL: usize = 3;
        if count * SUB_STRATEGY_MUL > size {
            let mut idx: Vec<usize> = (0..size).collect();
            while idx.len() > count {
                let r = rng.gen_range(0..idx.len());
                idx.swap_remove(r);
            }
            for i in idx {
                emit(self.member_at(i));
            }
            return;
        }
        // Case 4: a small part: draw positions until enough distinct ones.
        let mut seen = std::collections::HashSet::with_capacity(count);
        let mut order = Vec::with_capacity(count);
        while order.len() < count {
            let i = rng.gen_range(0..size);
            if seen.insert(i) {
                order.push(i);
            }
        }
        for i in order {
            emit(self.member_at(i));
        }
    }

    /// One SSCAN step. Compact encodings return everything at once (cursor 0), as Redis does.
    /// Hash tables are walked by position from the top down: the cursor is how many positions
    /// are left below. Removal moves the last member into the hole, i.e. only ever downwards,
    /// so a member present for the whole scan is never carried past the cursor unvisited.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(Member)) -> u64 {
        if let SetValue::Expiring(x) = self {
            return x.members.scan(cursor, count, f);
        }
        match self {
            SetValue::Hashtable(ht) => {
                let len = ht.len();
                let mut i = if cursor == 0 {
                    len
                } else {
                    (cursor.min(len as u64)) as usize
                };
                let mut visited = 0;
                while i > 0 && visited < count {
                    i -= 1;
                    f(LpEntry::Str(ht.get_index(i)));
                    visited += 1;
                }
                i as u64
            }
            _ => {
                for m in self.iter() {
                    f(m);
                }
                0
            }
        }
    }

    /// The intset's bytes exactly as Redis stores them, when that is the encoding (RDB).
    pub fn intset_bytes(&self) -> Option<&[u8]> {
        self.ints().map(|is| is.as_bytes())
    }

    /// The members (the set itself unless it is the expiring form).
    pub fn members(&self) -> &SetValue {
        match self {
            SetValue::Expiring(x) => &x.members,
            plain => plain,
        }
    }

    /// The members' times, when some member has one.
    pub fn ttls(&self) -> Option<&FieldTtls> {
        match self {
            SetValue::Expiring(x) if !x.ttls.is_empty() => Some(&x.ttls),
            _ => None,
        }
    }

    /// Give the existing member `m` the time `at_ms`, switching to the expiring form if needed.
    pub fn set_member_ttl(&mut self, m: &[u8], at_ms: u64) {
        crate::field_expire::mark_members_in_use();
        if !matches!(self, SetValue::Expiring(_)) {
            let members = std::mem::take(self);
            *self = SetValue::Expiring(PackedBox::new(ExpiringSet {
                members,
                ttls: FieldTtls::default(),
            }));
        }
        if let SetValue::Expiring(x) = self {
            x.ttls.set(m, at_ms);
        }
    }

    /// Drop `m`'s time; true when it had one.
    pub fn persist_member(&mut self, m: &[u8]) -> bool {
        match self {
            SetValue::Expiring(x) => x.ttls.remove(m).is_some(),
            _ => false,
        }
    }

    /// Does `m` fit a listpack-encoded set (length check)?
    pub fn fits_listpack_value(m: &[u8]) -> bool {
        listpack::fits_value(m, listpack_max_value())
    }
}

/// Iterator over a set's members in storage order.
pub enum SetIter<'a> {
    Int(IntsetIter<'a>),
    Lp(listpack::Iter<'a>),
    Ht(std::slice::Iter<'a, Box<[u8]>>),
}

impl<'a> Iterator for SetIter<'a> {
    type Item = Member<'a>;
    #[inline]
    fn next(&mut self) -> Option<Member<'a>> {
        match self {
            SetIter::Int(it) => it.next().map(LpEntry::Int),
            SetIter::Lp(it) => it.next(),
            SetIter::Ht(it) => it.next().map(|b| LpEntry::Str(b)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn member_times_follow_their_members() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for n in [3usize, 40, 600] {
            let mut s = SetValue::default();
            for i in 0..n {
                s.add(format!("{i}").as_bytes());
            }
            let enc = s.encoding();
            for i in 0..n {
                s.set_member_ttl(format!("{i}").as_bytes(), 1000 + i as u64);
            }
            // The encoding is the members'; only the times are beside them.
            assert_eq!(s.encoding(), enc);
            assert_eq!(s.ttls().map(|t| t.len()), Some(n));
            assert!(s.remove(b"0"));
            assert!(s.ttls().and_then(|t| t.get(b"0")).is_none());
            s.add(b"0");
            assert!(s.ttls().and_then(|t| t.get(b"0")).is_none());
            let popped = s.pop_random(&mut rng);
            assert!(s.ttls().and_then(|t| t.get(&popped)).is_none());
            let mut gone = Vec::new();
            s.pop_many(n / 3, &mut rng, |m| gone.push(m.to_vec()));
            for m in &gone {
                assert!(s.ttls().and_then(|t| t.get(m)).is_none());
            }
            // Every time left belongs to a member.
            for (m, _) in s.ttls().into_iter().flat_map(|t| t.iter()) {
                assert!(s.contains(m));
            }
            let Some(first) = s
                .ttls()
                .and_then(|t| t.iter().next())
                .map(|(m, _)| m.to_vec())
            else {
                continue;
            };
            assert!(s.persist_member(&first));
            assert!(!s.persist_member(&first));
        }
    }

    fn members(s: &SetValue) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = s.iter().map(|m| m.to_vec()).collect();
        v.sort();
        v
    }

    #[test]
    fn encodings_follow_redis() {
        let mut s = SetValue::create(b"1", 1);
        assert_eq!(s.encoding(), "intset");
        assert!(s.add(b"1"));
        assert!(!s.add(b"1"));
        assert!(s.add(b"-7"));
        assert!(s.add(b"a"));
        assert_eq!(s.encoding(), "listpack");
        assert!(s.contains(b"-7") && s.contains(b"a") && !s.contains(b"b"));
        assert_eq!(
            members(&s),
            vec![b"-7".to_vec(), b"1".to_vec(), b"a".to_vec()]
        );
        for i in 0..200 {
            s.add(format!("m{i}").as_bytes());
        }
        assert_eq!(s.encoding(), "hashtable");
        assert_eq!(s.len(), 203);
        assert!(s.remove(b"a"));
        assert!(!s.remove(b"a"));
        assert!(s.contains(b"1"));
        // A long member sends a listpack to a hash table.
        let mut s = SetValue::create(b"a", 1);
        assert_eq!(s.encoding(), "listpack");
        s.add(&[b'x'; 65]);
        assert_eq!(s.encoding(), "hashtable");
        // Many members at once go straight to a hash table.
        assert_eq!(SetValue::create(b"a", 129).encoding(), "hashtable");
        assert_eq!(SetValue::create(b"1", 129).encoding(), "intset");
        assert_eq!(SetValue::create(b"1", 513).encoding(), "hashtable");
    }

    #[test]
    fn small_intsets_live_inline() {
        let mut s = SetValue::new_intset();
        for v in [3, 1, 2] {
            assert!(s.add(v.to_string().as_bytes()));
        }
        assert!(matches!(s, SetValue::IntsetInline(_)));
        assert_eq!(s.heap_size(), 0);
        assert_eq!(
            s.intset_bytes().unwrap(),
            &[2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 2, 0, 3, 0]
        );
        assert!(s.add(b"5"));
        assert!(matches!(s, SetValue::Intset(_)));
        assert_eq!(s.encoding(), "intset");
        assert!(s.remove(b"1"));
        assert!(matches!(s, SetValue::IntsetInline(_)));
        assert!(!s.remove(b"1"));
        assert!(!s.add(b"5"));
        assert!(s.contains_member(LpEntry::Int(5)) && !s.contains(b"1"));
        // Upgrading the width moves it to the heap: one 32-bit member fits, a 64-bit one not.
        let mut w = SetValue::new_intset();
        w.add(b"-50000");
        assert!(matches!(w, SetValue::IntsetInline(_)));
        w.add(b"-5000000000");
        assert!(matches!(w, SetValue::Intset(_)));
        w.remove(b"-50000");
        w.add(b"1");
        assert!(matches!(w, SetValue::Intset(_)));
        assert_eq!(
            w.iter().map(|m| m.as_i64().unwrap()).collect::<Vec<_>>(),
            vec![-5000000000, 1]
        );
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let mut popped = vec![w.pop_random(&mut rng), w.pop_random(&mut rng)];
        popped.sort();
        assert_eq!(popped, vec![b"-5000000000".to_vec(), b"1".to_vec()]);
        assert!(w.is_empty());
    }

    #[test]
    fn intset_overflow_and_big_members() {
        let mut s = SetValue::new_intset();
        for i in 0..512 {
            s.add(i.to_string().as_bytes());
        }
        assert_eq!(s.encoding(), "intset");
        s.add(b"512");
        assert_eq!(s.encoding(), "hashtable");
        // An intset with too many members for a listpack goes to a hash table on a string.
        let mut s = SetValue::new_intset();
        for i in 0..130 {
            s.add(i.to_string().as_bytes());
        }
        s.add(b"x");
        assert_eq!(s.encoding(), "hashtable");
        assert!(!s.maybe_convert_to_intset());
        assert!(s.remove(b"x"));
        assert!(s.maybe_convert_to_intset());
        assert_eq!(s.encoding(), "intset");
        assert_eq!(s.len(), 130);
    }

    #[test]
    fn pop_and_random() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        for (n, first) in [(20usize, "1"), (20, "a"), (300, "a"), (300, "1")] {
            for count in [1usize, 2, 10, 18, 19] {
                let mut s = SetValue::create(first.as_bytes(), 1);
                for i in 0..n {
                    if first == "a" {
                        s.add(format!("e{i}").as_bytes());
                    } else {
                        s.add(i.to_string().as_bytes());
                    }
                }
                let all = members(&s);
                let mut got = Vec::new();
                s.pop_many(count, &mut rng, |m| got.push(m.to_vec()));
                assert_eq!(got.len(), count);
                assert_eq!(s.len(), n - count);
                let mut union = got.clone();
                union.extend(members(&s));
                union.sort();
                assert_eq!(union, all);
                let mut seen = Vec::new();
                s.random_members(5, true, &mut rng, |m| {
                    seen.push(m.to_vec());
                    true
                });
                seen.sort();
                seen.dedup();
                assert_eq!(seen.len(), 5.min(s.len()));
            }
        }
    }

    #[test]
    fn hashtable_against_model() {
        use rand::Rng;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let mut ht = HtSet::with_capacity(0);
        let mut model = std::collections::HashSet::new();
        for step in 0..20000 {
            let m = format!("k{}", rng.gen_range(0..3000)).into_bytes();
            match rng.gen_range(0..4) {
                0 | 1 => assert_eq!(ht.insert(m.clone().into()), model.insert(m)),
                2 => assert_eq!(ht.swap_remove(&m), model.remove(&m)),
                _ if !ht.is_empty() => {
                    let i = rng.gen_range(0..ht.len());
                    let v = ht.swap_remove_index(i).unwrap();
                    assert!(model.remove(&*v));
                }
                _ => {}
            }
            if step % 5000 == 0 {
                ht.shrink_to_fit();
            }
            assert_eq!(ht.len(), model.len());
        }
        for m in &model {
            assert!(ht.contains(m));
        }
        for i in 0..ht.len() {
            assert!(model.contains(ht.get_index(i)));
        }
        assert!(!ht.contains(b"nope"));
        assert_eq!(ht.clone(), ht);
    }

    #[test]
    fn scan_survives_removals() {
        let mut s = SetValue::Hashtable(new_ht(0));
        for i in 0..1000 {
            s.add(format!("{i}").as_bytes());
        }
        let mut found = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            cursor = s.scan(cursor, 10, |m| {
                found.insert(m.to_vec());
            });
            step += 1;
            if step == 3 {
                for i in 100..1000 {
                    s.remove(format!("{i}").as_bytes());
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..100 {
            assert!(found.contains(format!("{i}").as_bytes()));
        }
    }

    #[test]
    fn listpack_batch_delete() {
        let mut lp = Listpack::new();
        for i in 0..50 {
            if i % 3 == 0 {
                lp.push_back_int(i * 1000);
            } else {
                lp.push_back(format!("str{i}").as_bytes());
            }
        }
        let offs: Vec<usize> = lp.offsets().collect();
        let del: Vec<usize> = (0..50).filter(|i| i % 4 == 1).map(|i| offs[i]).collect();
        lp.delete_offsets(&del);
        assert!(lp.validate());
        let want: Vec<Vec<u8>> = (0..50)
            .filter(|i| i % 4 != 1)
            .map(|i| {
                if i % 3 == 0 {
                    (i * 1000).to_string().into_bytes()
                } else {
                    format!("str{i}").into_bytes()
                }
            })
            .collect();
        let got: Vec<Vec<u8>> = lp.iter().map(|e| e.to_vec()).collect();
        assert_eq!(got, want);
    }
}

//! Stored values. One enum per Redis type; each type keeps compact encodings for small sizes
//! and reports Redis's encoding names.

use crate::thin::{ExactBytes, PackedBox, PackedI64, SmallBytes, ThinBuf};
use crate::types::{CronJob, FieldTtls, HashValue, ListValue, SetValue, StreamValue, ZSetValue};

/// Strings longer than this are `raw`, shorter ones `embstr` (Redis's OBJ_ENCODING_EMBSTR_SIZE_LIMIT).
pub const EMBSTR_LIMIT: usize = 44;

/// The longest string kept inside the value itself: 13 bytes, a length byte, `RString`'s tag
/// and `Value`'s make the 16 bytes a value takes (see `value_stays_16_bytes`).
pub const INLINE_MAX: usize = 13;

/// A string of at most INLINE_MAX bytes stored in place: no allocation of its own.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct InlineStr {
    len: u8,
    buf: [u8; INLINE_MAX],
}

impl InlineStr {
    fn new(b: &[u8]) -> InlineStr {
        let mut buf = [0; INLINE_MAX];
        buf[..b.len()].copy_from_slice(b);
        InlineStr {
            len: b.len() as u8,
            buf,
        }
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
}

impl std::fmt::Debug for InlineStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RString {
    /// A canonical decimal integer that fits an i64 (`int` encoding).
    Int(PackedI64),
    /// A short string held in the value itself (reported as `embstr`, as Redis would).
    Inline(InlineStr),
    /// A short string stored in one allocation, never modified in place (`embstr`).
    Emb(SmallBytes),
    /// A `raw` string as written (SET and the like): its exact bytes, no room to grow. Most
    /// strings are never edited in place; the first APPEND or SETRANGE makes it `Raw`.
    Exact(ExactBytes),
    /// A string that may grow in place (APPEND, SETRANGE) (`raw`).
    Raw(ThinBuf),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(RString),
    List(ListValue),
    Hash(HashValue),
    Set(SetValue),
    ZSet(ZSetValue),
    Stream(PackedBox<StreamValue>),
    /// A KEYDB.CRON job.
    Cron(PackedBox<CronJob>),
}

/// Parse a canonical integer the way Redis's `string2ll` does: no leading zeros, no '+',
/// no spaces, fits in i64.
pub fn parse_canonical_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = if s[0] == b'-' {
        (true, &s[1..])
    } else {
        (false, s)
    };
    if digits.is_empty() || digits[0] == b'0' {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

impl RString {
    /// The `int` encoding of `n`.
    pub fn int(n: i64) -> RString {
        RString::Int(PackedI64::new(n))
    }

    /// Choose the encoding Redis would: int when canonical, embstr when short, raw otherwise.
    pub fn from_bytes(b: &[u8]) -> RString {
        if let Some(n) = parse_canonical_i64(b) {
            return RString::int(n);
        }
        if b.len() <= EMBSTR_LIMIT {
            RString::embstr(b)
        } else {
            RString::exact(b.to_vec())
        }
    }

    /// A `raw` string of `v`'s bytes (taken, not copied) at their exact size; growable when
    /// too long for that.
    pub fn exact(v: Vec<u8>) -> RString {
        if v.len() <= ExactBytes::MAX {
            RString::Exact(ExactBytes::from_vec(v))
        } else {
            RString::Raw(ThinBuf::from_slice(&v))
        }
    }

    /// An `embstr` of `b` (at most EMBSTR_LIMIT bytes): in place when it fits, else one
    /// exact-size allocation.
    pub fn embstr(b: &[u8]) -> RString {
        debug_assert!(b.len() <= EMBSTR_LIMIT);
        if b.len() <= INLINE_MAX {
            RString::Inline(InlineStr::new(b))
        } else {
            RString::Emb(SmallBytes::new(b))
        }
    }

    /// The bytes of a non-integer string (None for the `int` encoding).
    #[inline]
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            RString::Int(_) => None,
            RString::Inline(s) => Some(s.as_bytes()),
            RString::Emb(b) => Some(b),
            RString::Exact(b) => Some(b),
            RString::Raw(v) => Some(v),
        }
    }

    pub fn from_vec(v: Vec<u8>) -> RString {
        if v.len() <= 20 {
            if let Some(n) = parse_canonical_i64(&v) {
                return RString::int(n);
            }
        }
        if v.len() <= INLINE_MAX {
            RString::embstr(&v)
        } else if v.len() <= EMBSTR_LIMIT {
            RString::Emb(SmallBytes::new(&v))
        } else {
            RString::exact(v)
        }
    }

    pub fn len(&self) -> usize {
        match self {
            RString::Int(n) => itoa::Buffer::new().format(n.get()).len(),
            RString::Inline(s) => s.len as usize,
            RString::Emb(b) => b.len(),
            RString::Exact(b) => b.len(),
            RString::Raw(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Run `f` over the string's bytes (integers are formatted on a stack buffer).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            RString::Int(n) => f(itoa::Buffer::new().format(n.get()).as_bytes()),
            RString::Inline(s) => f(s.as_bytes()),
            RString::Emb(b) => f(b),
            RString::Exact(b) => f(b),
            RString::Raw(v) => f(v),
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.with_bytes(|b| b.to_vec())
    }

    /// Mutable byte buffer for in-place edits; converts to `raw` as Redis does.
    pub fn make_raw(&mut self) -> &mut ThinBuf {
        if !matches!(self, RString::Raw(_)) {
            *self = RString::Raw(self.with_bytes(ThinBuf::from_slice));
        }
        match self {
            RString::Raw(v) => v,
            _ => unreachable!("just converted to raw"),
        }
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            RString::Int(_) => "int",
            RString::Inline(_) | RString::Emb(_) => "embstr",
            RString::Exact(_) | RString::Raw(_) => "raw",
        }
    }

    /// Heap bytes this string uses (for memory accounting).
    pub fn heap_size(&self) -> usize {
        match self {
            RString::Int(_) | RString::Inline(_) => 0,
            RString::Emb(b) => b.heap_size(),
            RString::Exact(b) => b.len(),
            RString::Raw(v) => v.heap_size(),
        }
    }
}

impl Value {
    pub fn stream(s: StreamValue) -> Value {
        Value::Stream(PackedBox::new(s))
    }

    pub fn from_bytes(b: &[u8]) -> Value {
        Value::Str(RString::from_bytes(b))
    }

    /// The times of a set's or sorted set's members (KeyDB's EXPIREMEMBER), when some member
    /// has one.
    pub fn member_ttls(&self) -> Option<&FieldTtls> {
        match self {
            Value::Set(s) => s.ttls(),
            Value::ZSet(z) => z.ttls(),
            _ => None,
        }
    }

    /// The field or member times of a hash, set or sorted set, when it has any.
    pub fn subkey_ttls(&self) -> Option<&FieldTtls> {
        match self {
            Value::Hash(h) => h.ttls(),
            v => v.member_ttls(),
        }
    }

    /// Whether a hash, set or sorted set has the field or member `m`.
    pub fn has_subkey(&self, m: &[u8]) -> bool {
        match self {
            Value::Set(s) => s.contains(m),
            Value::ZSet(z) => z.score(m).is_some(),
            Value::Hash(h) => h.contains(m),
            _ => false,
        }
    }

    /// Remove the field or member `m` (with its time); true when it was there.
    pub fn remove_subkey(&mut self, m: &[u8]) -> bool {
        match self {
            Value::Set(s) => s.remove(m),
            Value::ZSet(z) => z.remove(m),
            Value::Hash(h) => h.remove(m),
            _ => false,
        }
    }

    /// Give the existing field or member `m` the time `at_ms`.
    pub fn set_subkey_ttl(&mut self, m: &[u8], at_ms: u64) {
        match self {
            Value::Set(s) => s.set_member_ttl(m, at_ms),
            Value::ZSet(z) => z.set_member_ttl(m, at_ms),
            Value::Hash(h) => h.set_field_ttl(m, at_ms),
            _ => {}
        }
    }

    /// True for a hash, set or sorted set left without fields or members.
    pub fn is_empty_collection(&self) -> bool {
        match self {
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
            Value::Hash(h) => h.is_empty(),
            _ => false,
        }
    }

    /// The name TYPE reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::Stream(_) => "stream",
            Value::Cron(_) => "cron",
        }
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
            Value::List(v) => v.encoding(),
            Value::Hash(v) => v.encoding(),
            Value::Set(v) => v.encoding(),
            Value::ZSet(v) => v.encoding(),
            Value::Stream(v) => v.encoding(),
            Value::Cron(_) => "raw",
        }
    }

    /// Roughly how many allocations freeing this value takes (Redis's lazyfreeGetFreeEffort):
    /// decides whether it is freed in the background. O(1): no walk over the value.
    pub fn free_effort(&self) -> usize {
        match self {
            Value::Str(_) | Value::Cron(_) => 1,
            // Compact encodings are one allocation however many elements they hold.
            v if matches!(v.encoding(), "listpack" | "intset") => 1,
            Value::List(v) => v.node_count(),
            Value::Hash(v) => v.len(),
            Value::Set(v) => v.len(),
            Value::ZSet(v) => v.len(),
            // Redis's estimate: one allocation per node, and per group one plus the first
            // group's PEL size.
            Value::Stream(v) => {
                let per_group = v.groups.values().next().map_or(0, |g| 1 + g.pel.len());
                v.node_count() + v.groups.len() * per_group
            }
        }
    }

    /// `heap_size`, but cheap enough to run on every write: a stream's is estimated from its
    /// newest node instead of walking every entry.
    pub fn accounted_size(&self) -> usize {
        match self {
            Value::Stream(v) => v.heap_size_estimate(),
            other => other.heap_size(),
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
            Value::List(v) => v.heap_size(),
            Value::Hash(v) => v.heap_size(),
            Value::Set(v) => v.heap_size(),
            Value::ZSet(v) => v.heap_size(),
            Value::Stream(v) => v.heap_size(),
            Value::Cron(j) => std::mem::size_of::<CronJob>() + j.heap_size(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_integers() {
        assert_eq!(parse_canonical_i64(b"123"), Some(123));
        assert_eq!(parse_canonical_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_canonical_i64(b"9223372036854775808"), None);
        assert_eq!(parse_canonical_i64(b"0123"), None);
        assert_eq!(parse_canonical_i64(b"+1"), None);
        assert_eq!(parse_canonical_i64(b"-0"), None);
        assert_eq!(parse_canonical_i64(b" 1"), None);
    }

    #[test]
    fn value_stays_16_bytes() {
        // Paid once per key inside its entry: see entry.rs. Each type's enum is 15 bytes, so
        // `Value`'s tag fits beside it.
        assert_eq!(std::mem::size_of::<RString>(), 15);
        for size in [
            std::mem::size_of::<ListValue>(),
            std::mem::size_of::<HashValue>(),
            std::mem::size_of::<SetValue>(),
            std::mem::size_of::<ZSetValue>(),
        ] {
            assert!(size <= 15);
        }
        assert_eq!(std::mem::size_of::<Value>(), 16);
    }

    #[test]
    fn short_strings_live_in_place() {
        for len in [0, 1, INLINE_MAX, INLINE_MAX + 1, EMBSTR_LIMIT] {
            let b = vec![b'x'; len];
            let s = RString::from_bytes(&b);
            assert_eq!(s.encoding(), "embstr");
            assert_eq!(s.as_bytes(), Some(&b[..]));
            assert_eq!(s.len(), len);
            assert_eq!(s.heap_size() == 0, len <= INLINE_MAX);
            assert_eq!(RString::from_vec(b.clone()), s);
        }
    }

    #[test]
    fn encodings() {
        assert_eq!(RString::from_bytes(b"42").encoding(), "int");
        assert_eq!(RString::from_bytes(b"hello").encoding(), "embstr");
        assert_eq!(RString::from_bytes(&[b'x'; 45]).encoding(), "raw");
        let mut s = RString::from_bytes(b"hi");
        s.make_raw().extend_from_slice(b"!");
        assert_eq!(s.encoding(), "raw");
        assert_eq!(s.to_vec(), b"hi!");
    }
}

//! ZSetValue: member/score pairs ordered by (score, member).
//!
//! Two encodings, as Redis: `listpack` (member, score, member, score... in order; scores stored
//! as Redis stores them: an integer entry when the double prints as an integer, else its
//! d2string text) while the set has at most `zset-max-listpack-entries` members of at most
//! `zset-max-listpack-value` bytes; `skiplist` (skiplist with spans + member index) otherwise.
//!
//! Positions are 0-based indexes in ascending order. Range queries first resolve to an index
//! span (`score_span`, `lex_span`), which then feeds `range`, `remove_span` or a count, so
//! every encoding implements the few primitives once. Public API used by other families
//! (GEO, SORT): `score`, `insert`, `rank`, `score_span` + `range`, `for_each`.
use super::double::{fmt_double, strtod};
use super::field_ttl::FieldTtls;
use super::zskiplist::SkipList;
use crate::limits;
use crate::listpack::{Listpack, LpEntry};
use crate::thin::PackedBox;

#[derive(Debug, Clone, PartialEq)]
pub enum ZSetValue {
    Listpack(Listpack),
    Skiplist(PackedBox<SkipList>),
    /// A sorted set some of whose members have (or had) an expiry time (KeyDB's
    /// EXPIREMEMBER): the pairs in one of the encodings above, and the times beside them.
    Expiring(PackedBox<ExpiringZSet>),
}

/// The pairs of an [`ZSetValue::Expiring`] set (never itself `Expiring`) and their times.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpiringZSet {
    pub members: ZSetValue,
    pub ttls: FieldTtls,
}

impl Default for ZSetValue {
    fn default() -> Self {
        ZSetValue::Listpack(Listpack::new())
    }
}

/// A score interval (`ZRANGEBYSCORE` min/max with `(` exclusions).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub minex: bool,
    pub maxex: bool,
}

impl ScoreRange {
    pub fn inclusive(min: f64, max: f64) -> ScoreRange {
        ScoreRange {
            min,
            max,
            minex: false,
            maxex: false,
        }
    }
    #[inline]
    pub fn gte_min(&self, v: f64) -> bool {
        if self.minex {
            v > self.min
        } else {
            v >= self.min
        }
    }
    #[inline]
    pub fn lte_max(&self, v: f64) -> bool {
        if self.maxex {
            v < self.max
        } else {
            v <= self.max
        }
    }
    /// True when no score can be inside.
    pub fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }
}

/// One end of a lexicographic range: `-`, `+`, `[member` or `(member`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    NegInf,
    PosInf,
    Incl(Vec<u8>),
    Excl(Vec<u8>),
}

impl LexBound {
    fn rank(&self) -> (u8, &[u8]) {
        match self {
            LexBound::NegInf => (0, &[]),
            LexBound::PosInf => (2, &[]),
            LexBound::Incl(s) | LexBound::Excl(s) => (1, s),
        }
    }
    fn excl(&self) -> bool {
        matches!(self, LexBound::Excl(_))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

impl LexRange {
    pub fn gte_min(&self, v: &[u8]) -> bool {
        match &self.min {
            LexBound::NegInf => true,
            LexBound::PosInf => false,
            LexBound::Incl(s) => v >= s.as_slice(),
            LexBound::Excl(s) => v > s.as_slice(),
        }
    }
    pub fn lte_max(&self, v: &[u8]) -> bool {
        match &self.max {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(s) => v <= s.as_slice(),
            LexBound::Excl(s) => v < s.as_slice(),
        }
    }
    pub fn is_empty(&self) -> bool {
        let c = self.min.rank().cmp(&self.max.rank());
        c == std::cmp::Ordering::Greater
            || (c == std::cmp::Ordering::Equal && (self.min.excl() || self.max.excl()))
    }
}

/// ZADD's conditions.
#[derive(Debug, Clone, Copy, Default)]
pub struct AddFlags {
    pub incr: bool,
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
}

/// What one `add` did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AddOutcome {
    /// The score (or the sum with INCR) is NaN: nothing changed.
    Nan,
    Added(f64),
    /// Present, score changed to the value.
    Updated(f64),
    /// Present, score unchanged (the value is the score).
    Same(f64),
    /// A condition (NX/XX/GT/LT) prevented the change.
    Nop,
}

/// The score of a listpack score entry.
fn lp_score(e: LpEntry) -> f64 {
    match e {
        LpEntry::Int(n) => n as f64,
        LpEntry::Str(s) => {
            let s = &s[..s.len().min(127)];
            strtod(s).0
        }
    }
}

/// The text a score is stored as in a listpack: an integer whenever the double is integral
/// and in range (so -0 is stored as 0, as Redis does), else d2string's form.
fn lp_score_text(score: f64) -> String {
    if score == 0.0 {
        "0".into()
    } else {
        fmt_double(score)
    }
}

fn max_entries() -> usize {
    limits::get_usize(&limits::ZSET_MAX_LISTPACK_ENTRIES)
}

fn max_value() -> usize {
    limits::get_usize(&limits::ZSET_MAX_LISTPACK_VALUE)
}

/// Would a set of `len` members whose longest member has `maxlen` bytes be a listpack?
pub fn fits_listpack(len: usize, maxlen: usize) -> bool {
    len <= max_entries() && maxlen <= max_value()
}

impl ZSetValue {
    /// A new empty set sized for `size_hint` members, the first being `len_hint` bytes long
    /// (Redis's zsetTypeCreate).
    pub fn with_hint(size_hint: usize, len_hint: usize) -> ZSetValue {
        if size_hint <= max_entries() && len_hint <= max_value() {
            ZSetValue::Listpack(Listpack::new())
        } else {
            ZSetValue::Skiplist(PackedBox::new(SkipList::with_capacity(size_hint)))
        }
    }

    /// Build a set from pairs (members unique), choosing the encoding by size and longest
    /// member as Redis does for the results of Z*STORE and ZRANGESTORE.
    pub fn from_pairs(mut pairs: Vec<(Vec<u8>, f64)>) -> ZSetValue {
        let maxlen = pairs.iter().map(|p| p.0.len()).max().unwrap_or(0);
        if fits_listpack(pairs.len(), maxlen) {
            pairs.sort_by(|a, b| {
                a.1.partial_cmp(&b.1)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| a.0.cmp(&b.0))
            });
            let mut lp = Listpack::new();
            for (m, s) in &pairs {
                lp.push_back_pair(m, lp_score_text(*s).as_bytes());
            }
            ZSetValue::Listpack(lp)
        } else {
            let mut sl = SkipList::with_capacity(pairs.len());
            for (m, s) in &pairs {
                sl.insert(*s, m);
            }
            ZSetValue::Skiplist(PackedBox::new(sl))
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ZSetValue::Listpack(lp) => lp.len() / 2,
            ZSetValue::Skiplist(sl) => sl.len(),
            ZSetValue::Expiring(x) => x.members.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            ZSetValue::Listpack(_) => "listpack",
            ZSetValue::Skiplist(_) => "skiplist",
            ZSetValue::Expiring(x) => x.members.encoding(),
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            ZSetValue::Listpack(lp) => lp.heap_size(),
            ZSetValue::Skiplist(sl) => sl.heap_size() + std::mem::size_of::<SkipList>(),
            ZSetValue::Expiring(x) => {
                std::mem::size_of::<ExpiringZSet>() + x.members.heap_size() + x.ttls.heap_size()
            }
        }
    }

    /// Convert a listpack to a skiplist sized for `cap` members.
    pub fn convert_to_skiplist(&mut self, cap: usize) {
        if let ZSetValue::Expiring(x) = self {
            return x.members.convert_to_skiplist(cap);
        }
        if let ZSetValue::Listpack(lp) = self {
            let mut sl = SkipList::with_capacity(cap.max(lp.len() / 2));
            let mut it = lp.iter();
            while let (Some(m), Some(s)) = (it.next(), it.next()) {
                m.with_bytes(|mb| sl.insert(lp_score(s), mb));
            }
            *self = ZSetValue::Skiplist(PackedBox::new(sl));
        }
    }

    /// ZADD's up-front conversion when more pairs arrive than a listpack may hold.
    pub fn maybe_convert(&mut self, size_hint: usize) {
        if let ZSetValue::Expiring(x) = self {
            return x.members.maybe_convert(size_hint);
        }
        if matches!(self, ZSetValue::Listpack(_)) && size_hint > max_entries() {
            let n = self.len() + size_hint;
            self.convert_to_skiplist(n);
        }
    }

    fn lp_find(lp: &Listpack, member: &[u8]) -> Option<(usize, f64)> {
        let off = lp.find(member, 1)?;
        let soff = lp.next(off)?;
        Some((off, lp_score(lp.get(soff))))
    }

    fn lp_insert(lp: &mut Listpack, member: &[u8], score: f64) {
        let mut at = None;
        let mut off = lp.first();
        while let Some(mo) = off {
            let so = lp.next(mo).expect("zset listpack pair");
            let s = lp_score(lp.get(so));
            if s > score || (s == score && lp.get(mo).with_bytes(|m| m > member)) {
                at = Some(mo);
                break;
            }
            off = lp.next(so);
        }
        let sc = lp_score_text(score);
        match at {
            Some(o) => lp.insert_pair_before(o, member, sc.as_bytes()),
            None => lp.push_back_pair(member, sc.as_bytes()),
        }
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        if let ZSetValue::Expiring(x) = self {
            return x.members.score(member);
        }
        match self {
            ZSetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            ZSetValue::Listpack(lp) => Self::lp_find(lp, member).map(|x| x.1),
            ZSetValue::Skiplist(sl) => sl.score(member),
        }
    }

    /// ZADD's per-member step (Redis's zsetAdd), converting the encoding when needed.
    pub fn add(&mut self, member: &[u8], score: f64, f: AddFlags) -> AddOutcome {
        if let ZSetValue::Expiring(x) = self {
            return x.members.add(member, score, f);
        }
        if score.is_nan() {
            return AddOutcome::Nan;
        }
        let cur = self.score(member);
        match cur {
            Some(cur) => {
                if f.nx {
                    return AddOutcome::Nop;
                }
                let mut score = score;
                if f.incr {
                    score += cur;
                    if score.is_nan() {
                        return AddOutcome::Nan;
                    }
                }
                if (f.lt && score >= cur) || (f.gt && score <= cur) {
                    return AddOutcome::Nop;
                }
                if score == cur {
                    return AddOutcome::Same(score);
                }
                match self {
                    ZSetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
                    ZSetValue::Listpack(lp) => {
                        let (off, _) = Self::lp_find(lp, member).expect("present");
                        lp.delete(off, 2);
                        Self::lp_insert(lp, member, score);
                    }
                    ZSetValue::Skiplist(sl) => sl.update_score(member, score),
                }
                AddOutcome::Updated(score)
            }
            None => {
                if f.xx {
                    return AddOutcome::Nop;
                }
                self.insert_new(member, score);
                AddOutcome::Added(score)
            }
        }
    }

    fn insert_new(&mut self, member: &[u8], score: f64) {
        if let ZSetValue::Listpack(lp) = self {
            if lp.len() / 2 + 1 > max_entries()
                || member.len() > max_value()
                || lp.bytes_len() + member.len() > (1 << 30)
            {
                let n = self.len() + 1;
                self.convert_to_skiplist(n);
            }
        }
        match self {
            ZSetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            ZSetValue::Listpack(lp) => Self::lp_insert(lp, member, score),
            ZSetValue::Skiplist(sl) => sl.insert(score, member),
        }
    }

    /// Set `member`'s score, adding it when absent. Returns true when it was added.
    pub fn insert(&mut self, member: &[u8], score: f64) -> bool {
        matches!(
            self.add(member, score, AddFlags::default()),
            AddOutcome::Added(_)
        )
    }

    /// Remove `member`; true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        if let ZSetValue::Expiring(x) = self {
            return {
                let removed = x.members.remove(member);
                if removed {
                    x.ttls.remove(member);
                }
                removed
            };
        }
        match self {
            ZSetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            ZSetValue::Listpack(lp) => match lp.find(member, 1) {
                Some(off) => {
                    lp.delete(off, 2);
                    true
                }
                None => false,
            },
            ZSetValue::Skiplist(sl) => sl.remove(member).is_some(),
        }
    }

    /// 0-based rank (descending order when `rev`) and score of `member`.
    pub fn rank(&self, member: &[u8], rev: bool) -> Option<(usize, f64)> {
        if let ZSetValue::Expiring(x) = self {
            return x.members.rank(member, rev);
        }
        let len = self.len();
        let (r, s) = match self {
            ZSetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            ZSetValue::Listpack(lp) => {
                let mut i = 0;
                let mut it = lp.iter();
                loop {
                    let (m, s) = (it.next()?, it.next()?);
                    if m.eq_bytes(member) {
                        break (i, lp_score(s));
                    }
                    i += 1;
                }
            }
            ZSetValue::Skiplist(sl) => {
                let (r, s) = sl.rank(member)?;
                (r - 1, s)
            }
        };
        Some((if rev { len - 1 - r } else { r }, s))
    }

    /// The member and score at ascending index `idx`.
    pub fn element_at(&self, idx: usize) -> Option<(Vec<u8>, f64)> {
        if let ZSetValue::Expiring(x) = self {
            return x.members.element_at(idx);
        }
        match self {
            ZSetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            ZSetValue::Listpack(lp) => {
                let off = lp.seek(2 * idx as i64)?;
                let so = lp.next(off)?;
                Some((lp.get(off).to_vec(), lp_score(lp.get(so))))
            }
            ZSetValue::Skiplist(sl) => {
                let c = sl.cursor_at(idx)?;
                let (m, s) = sl.get(c);
                Some((m.to_vec(), s))
            }
        }
    }

    /// Up to `count` pairs starting at ascending index `start`, walking up (or down, from
    /// `start`, when `rev`).
    pub fn range(&self, start: usize, count: usize, rev: bool) -> Vec<(Vec<u8>, f64)> {
        let mut out = Vec::with_capacity(count.min(self.len()));
        self.range_each(start, count, rev, |m, s| out.push((m.to_vec(), s)));
        out
    }

    /// Like `range`, calling `f` on each pair instead of collecting.
    pub fn range_each(&self, start: usize, count: usize, rev: bool, mut f: impl FnMut(&[u8], f64)) {
        if let ZSetValue::Expiring(x) = self {
            return x.members.range_each(start, count, rev, f);
        }
        if count == 0 || start >= self.len() {
            return;
        }
        match self {
            ZSetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            ZSetValue::Listpack(lp) => {
                let Some(mut off) = lp.seek(2 * start as i64) else {
                    return;
                };
                let mut n = 0;
                loop {
                    let so = lp.next(off).expect("pair");
                    let s = lp_score(lp.get(so));
                    lp.get(off).with_bytes(|m| f(m, s));
                    n += 1;
                    if n == count {
                        break;
                    }
                    let next = if rev {
                        lp.prev(off).and_then(|p| lp.prev(p))
                    } else {
                        lp.next(so)
                    };
                    match next {
                        Some(o) => off = o,
                        None => break,
                    }
                }
            }
            ZSetValue::Skiplist(sl) => {
                let mut c = sl.cursor_at(start);
                let mut n = 0;
                while let Some(cur) = c {
                    let (m, s) = sl.get(cur);
                    f(m, s);
                    n += 1;
                    if n == count {
                        break;
                    }
                    c = if rev { sl.prev(cur) } else { sl.next(cur) };
                }
            }
        }
    }

    /// Every pair in ascending order.
    pub fn for_each(&self, f: impl FnMut(&[u8], f64)) {
        self.range_each(0, self.len(), false, f)
    }

    pub fn to_vec(&self) -> Vec<(Vec<u8>, f64)> {
        self.range(0, self.len(), false)
    }

    /// The ascending index span `[first, last]` of the members a predicate pair selects:
    /// `below_min` holds for a prefix, `upto_max` for a prefix. None when empty. When the
    /// order does not partition the members (a lex range over different scores) the result
    /// follows Redis's own walk: from the low end, or from the high end when `from_top`.
    fn span_by(
        &self,
        below_min: impl Fn(f64, &[u8]) -> bool,
        upto_max: impl Fn(f64, &[u8]) -> bool,
        from_top: bool,
    ) -> Option<(usize, usize)> {
        if let ZSetValue::Expiring(x) = self {
            return x.members.span_by(below_min, upto_max, from_top);
        }
        match self {
            ZSetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            ZSetValue::Listpack(lp) => {
                let n = lp.len() / 2;
                if n == 0 {
                    return None;
                }
                let mut flags: Vec<(bool, bool)> = Vec::with_capacity(n);
                let mut it = lp.iter();
                while let (Some(m), Some(sc)) = (it.next(), it.next()) {
                    let s = lp_score(sc);
                    flags.push(m.with_bytes(|mb| (below_min(s, mb), upto_max(s, mb))));
                }
                // Redis first checks the ends: the last member must reach the minimum and
                // the first must not pass the maximum.
                if flags[n - 1].0 || !flags[0].1 {
                    return None;
                }
                if from_top {
                    let l = (0..n).rev().find(|&i| flags[i].1)?;
                    if flags[l].0 {
                        return None;
                    }
                    let mut f = l;
                    while f > 0 && !flags[f - 1].0 {
                        f -= 1;
                    }
                    Some((f, l))
                } else {
                    let f = (0..n).find(|&i| !flags[i].0)?;
                    if !flags[f].1 {
                        return None;
                    }
                    let mut l = f;
                    while l + 1 < n && flags[l + 1].1 {
                        l += 1;
                    }
                    Some((f, l))
                }
            }
            ZSetValue::Skiplist(sl) => {
                let fc = sl.first_not_below(&below_min)?;
                let (fm, fs) = sl.get(fc);
                if !upto_max(fs, fm) {
                    return None;
                }
                let lc = sl.last_upto(&upto_max)?;
                let f = sl.index_of(fc);
                let l = sl.index_of(lc);
                (f <= l).then_some((f, l))
            }
        }
    }

    /// Index span of the members whose score is in `r`.
    pub fn score_span(&self, r: &ScoreRange) -> Option<(usize, usize)> {
        if r.is_empty() {
            return None;
        }
        self.span_by(|s, _| !r.gte_min(s), |s, _| r.lte_max(s), false)
    }

    /// Index span of the members in lexicographic range `r` (meaningful when all scores are
    /// equal, as Redis).
    pub fn lex_span(&self, r: &LexRange) -> Option<(usize, usize)> {
        self.lex_span_from(r, false)
    }

    /// `lex_span` as a reverse walk (ZREVRANGEBYLEX) finds it.
    pub fn lex_span_from(&self, r: &LexRange, from_top: bool) -> Option<(usize, usize)> {
        if r.is_empty() {
            return None;
        }
        self.span_by(|_, m| !r.gte_min(m), |_, m| r.lte_max(m), from_top)
    }

    /// Remove the members at ascending indexes `[start, start + count)`.
    pub fn remove_span(&mut self, start: usize, count: usize) -> usize {
        if let ZSetValue::Expiring(x) = self {
            return {
                if !x.ttls.is_empty() {
                    let ExpiringZSet { members, ttls } = &mut **x;
                    members.range_each(start, count, false, |m, _| {
                        ttls.remove(m);
                    });
                }
                x.members.remove_span(start, count)
            };
        }
        let count = count.min(self.len().saturating_sub(start));
        if count == 0 {
            return 0;
        }
        match self {
            ZSetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            ZSetValue::Listpack(lp) => {
                lp.delete_range(2 * start as i64, 2 * count);
            }
            ZSetValue::Skiplist(sl) => {
                let mut victims = Vec::with_capacity(count);
                let mut c = sl.cursor_at(start);
                while let Some(cur) = c {
                    victims.push(sl.get(cur).0.to_vec());
                    if victims.len() == count {
                        break;
                    }
                    c = sl.next(cur);
                }
                for v in &victims {
                    sl.remove(v);
                }
            }
        }
        count
    }

    /// Remove and return up to `count` members from the low end (or the high end when `max`).
    pub fn pop(&mut self, max: bool, count: usize) -> Vec<(Vec<u8>, f64)> {
        let len = self.len();
        let n = count.min(len);
        if n == 0 {
            return Vec::new();
        }
        if max {
            let out = self.range(len - 1, n, true);
            self.remove_span(len - n, n);
            out
        } else {
            let out = self.range(0, n, false);
            self.remove_span(0, n);
            out
        }
    }

    /// The pairs (the set itself unless it is the expiring form).
    pub fn members(&self) -> &ZSetValue {
        match self {
            ZSetValue::Expiring(x) => &x.members,
            plain => plain,
        }
    }

    /// The members' times, when some member has one.
    pub fn ttls(&self) -> Option<&FieldTtls> {
        match self {
            ZSetValue::Expiring(x) if !x.ttls.is_empty() => Some(&x.ttls),
            _ => None,
        }
    }

    /// Give the existing member `m` the time `at_ms`, switching to the expiring form if needed.
    pub fn set_member_ttl(&mut self, m: &[u8], at_ms: u64) {
        crate::field_expire::mark_members_in_use();
        if !matches!(self, ZSetValue::Expiring(_)) {
            let members = std::mem::take(self);
            *self = ZSetValue::Expiring(PackedBox::new(ExpiringZSet {
                members,
                ttls: FieldTtls::default(),
            }));
        }
        if let ZSetValue::Expiring(x) = self {
            x.ttls.set(m, at_ms);
        }
    }

    /// Drop `m`'s time; true when it had one.
    pub fn persist_member(&mut self, m: &[u8]) -> bool {
        match self {
            ZSetValue::Expiring(x) => x.ttls.remove(m).is_some(),
            _ => false,
        }
    }

    /// One ZSCAN step. A listpack is returned whole (cursor 0); a skiplist walks its member
    /// index bucket by bucket until `count` members were seen.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], f64)) -> u64 {
        if let ZSetValue::Expiring(x) = self {
            return x.members.scan(cursor, count, f);
        }
        match self {
            ZSetValue::Expiring(_) => unreachable!("the expiring form delegates first"),
            ZSetValue::Listpack(_) => {
                self.for_each(f);
                0
            }
            ZSetValue::Skiplist(sl) => {
                let mut cur = cursor;
                let mut seen = 0;
                let mut steps = count.saturating_mul(10);
                loop {
                    cur = sl.scan_step(cur, |m, s| {
                        seen += 1;
                        f(m, s)
                    });
                    if cur == 0 || seen >= count || steps == 0 {
                        return cur;
                    }
                    steps -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_times_follow_their_members() {
        for n in [5usize, 300] {
            let mut z = ZSetValue::default();
            for i in 0..n {
                z.insert(format!("m{i}").as_bytes(), i as f64);
            }
            let enc = z.encoding();
            for i in 0..n {
                z.set_member_ttl(format!("m{i}").as_bytes(), 1000 + i as u64);
            }
            assert_eq!(z.encoding(), enc);
            // A new score keeps the time; removal in any form drops it.
            z.insert(b"m1", 99.0);
            assert_eq!(z.ttls().and_then(|t| t.get(b"m1")), Some(1001));
            assert!(z.remove(b"m2"));
            assert!(z.ttls().and_then(|t| t.get(b"m2")).is_none());
            let popped = z.pop(false, 2);
            for (m, _) in &popped {
                assert!(z.ttls().and_then(|t| t.get(m)).is_none());
            }
            z.remove_span(0, 2);
            assert_eq!(z.ttls().map_or(0, |t| t.len()), z.len());
            for (m, _) in z.ttls().into_iter().flat_map(|t| t.iter()) {
                assert!(z.score(m).is_some());
            }
        }
    }

    #[test]
    fn listpack_and_skiplist_agree() {
        let mut a = ZSetValue::default();
        let mut b = ZSetValue::Skiplist(PackedBox::new(Default::default()));
        for i in 0..100i64 {
            let m = format!("m{:03}", (i * 37) % 100);
            let s = ((i * 37) % 100 / 3) as f64 + 0.5;
            a.insert(m.as_bytes(), s);
            b.insert(m.as_bytes(), s);
        }
        assert_eq!(a.encoding(), "listpack");
        assert_eq!(a.to_vec(), b.to_vec());
        let r = ScoreRange {
            min: 3.5,
            max: 10.5,
            minex: true,
            maxex: false,
        };
        assert_eq!(a.score_span(&r), b.score_span(&r));
        assert_eq!(a.rank(b"m050", true), b.rank(b"m050", true));
        assert_eq!(a.range(10, 5, true), b.range(10, 5, true));
        a.remove_span(3, 10);
        b.remove_span(3, 10);
        assert_eq!(a.to_vec(), b.to_vec());
        assert_eq!(a.pop(true, 3), b.pop(true, 3));
    }
}

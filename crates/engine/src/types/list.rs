//! ListValue: a single listpack while the list is small, a quicklist (a deque of listpack
//! nodes, each bounded by `list-max-listpack-size`) once it outgrows one node, and back to a
//! listpack when it shrinks to half the limit, at the points Redis 7.2 converts.
//!
//! Nodes are kept full: a node about to be filled under a byte limit is allocated at the limit
//! once, so a long list costs its listpack bytes plus 24 bytes of deque slot per node.
//! `list-compress-depth` (LZF of inner nodes) is not implemented: nodes stay uncompressed.
use crate::limits;
use crate::listpack::{Listpack, LpEntry};
use crate::thin::PackedBox;
use std::collections::VecDeque;

/// Redis's per-insert overestimate of an entry's encoding overhead in a node.
const SIZE_ESTIMATE_OVERHEAD: usize = 8;
/// Count-limited nodes still never grow past this many bytes.
const SIZE_SAFETY_LIMIT: usize = 8192;
const OPT_LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];

/// (byte limit, count limit) of a node for a `list-max-listpack-size` value.
fn node_limits(fill: i64) -> (usize, usize) {
    if fill >= 0 {
        (usize::MAX, if fill == 0 { 1 } else { fill as usize })
    } else {
        let lvl = ((-fill - 1) as usize).min(OPT_LEVELS.len() - 1);
        (OPT_LEVELS[lvl], u32::MAX as usize)
    }
}

fn exceeds(fill: i64, new_sz: usize, new_count: usize) -> bool {
    let (sz, cnt) = node_limits(fill);
    if sz != usize::MAX {
        new_sz > sz
    } else {
        new_sz > SIZE_SAFETY_LIMIT || new_count > cnt
    }
}

fn fill() -> i64 {
    limits::get(&limits::LIST_MAX_LISTPACK_SIZE)
}

fn allows_insert(node: &Listpack, elem_len: usize, fill: i64) -> bool {
    !exceeds(
        fill,
        node.bytes_len() + elem_len + SIZE_ESTIMATE_OVERHEAD,
        node.len() + 1,
    )
}

fn allows_merge(a: &Listpack, b: &Listpack, fill: i64) -> bool {
    !exceeds(fill, a.bytes_len() + b.bytes_len() - 7, a.len() + b.len())
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Quicklist {
    nodes: VecDeque<Listpack>,
    count: usize,
}

impl Quicklist {
    /// Node index and index within it of element `i` (< count).
    fn locate(&self, i: usize) -> (usize, usize) {
        if i < self.count / 2 {
            let mut rem = i;
            for (n, node) in self.nodes.iter().enumerate() {
                let l = node.len();
                if rem < l {
                    return (n, rem);
                }
                rem -= l;
            }
        } else {
            let mut rem = self.count - 1 - i;
            for (n, node) in self.nodes.iter().enumerate().rev() {
                let l = node.len();
                if rem < l {
                    return (n, l - 1 - rem);
                }
                rem -= l;
            }
        }
        unreachable!("index within count")
    }

    fn push(&mut self, s: &[u8], front: bool, fill: i64) {
        let slot = if front {
            self.nodes.front_mut()
        } else {
            self.nodes.back_mut()
        };
        match slot {
            Some(n) if allows_insert(n, s.len(), fill) => {
                if front {
                    n.push_front(s)
                } else {
                    n.push_back(s)
                }
            }
            _ => {
                let mut n = Listpack::new();
                n.push_back(s);
                if front {
                    self.nodes.push_front(n);
                } else {
                    self.nodes.push_back(n);
                }
            }
        }
        self.count += 1;
    }

    fn pop(&mut self, front: bool) -> Option<Vec<u8>> {
        let node = slot_mut(&mut self.nodes, front)?;
        let off = if front { node.first() } else { node.last() }?;
        let v = node.get(off).to_vec();
        node.delete(off, 1);
        if node.is_empty() {
            if front {
                self.nodes.pop_front();
            } else {
                self.nodes.pop_back();
            }
        }
        self.count -= 1;
        Some(v)
    }

    /// Drop node `n` if it became empty; try to merge it with its neighbours otherwise.
    fn tidy(&mut self, n: usize, fill: i64) {
        if n >= self.nodes.len() {
            return;
        }
        if self.nodes[n].is_empty() {
            self.nodes.remove(n);
            return;
        }
        if n + 1 < self.nodes.len() && allows_merge(&self.nodes[n], &self.nodes[n + 1], fill) {
            let b = self.nodes.remove(n + 1).expect("node");
            self.nodes[n].append(&b);
        }
        if n > 0 && allows_merge(&self.nodes[n - 1], &self.nodes[n], fill) {
            let b = self.nodes.remove(n).expect("node");
            self.nodes[n - 1].append(&b);
        }
    }

    /// Insert `s` at element index `i` (0..=count).
    fn insert_at(&mut self, i: usize, s: &[u8], fill: i64) {
        if i == 0 {
            return self.push(s, true, fill);
        }
        if i == self.count {
            return self.push(s, false, fill);
        }
        let (n, idx) = self.locate(i);
        if allows_insert(&self.nodes[n], s.len(), fill) {
            let node = &mut self.nodes[n];
            let off = node.seek(idx as i64).expect("in node");
            node.insert_before(off, s);
        } else if idx == 0 && n > 0 && allows_insert(&self.nodes[n - 1], s.len(), fill) {
            self.nodes[n - 1].push_back(s);
        } else {
            // Split the full node at the insertion point; the new element starts the tail half
            // unless it fits at the end of the head half.
            let node = &mut self.nodes[n];
            let off = node.seek(idx as i64).expect("in node");
            let mut tail = node.split_off(off);
            if allows_insert(&self.nodes[n], s.len(), fill) {
                self.nodes[n].push_back(s);
                self.nodes.insert(n + 1, tail);
            } else if allows_insert(&tail, s.len(), fill) {
                tail.push_front(s);
                self.nodes.insert(n + 1, tail);
            } else {
                let mut mid = Listpack::new();
                mid.push_back(s);
                self.nodes.insert(n + 1, tail);
                self.nodes.insert(n + 1, mid);
            }
            self.tidy(n + 1, fill);
        }
        self.count += 1;
    }

    /// Delete `k` elements starting at index `i`.
    fn delete_range(&mut self, i: usize, k: usize) {
        if k == 0 {
            return;
        }
        let (mut n, mut idx) = self.locate(i);
        let mut left = k;
        while left > 0 && n < self.nodes.len() {
            let l = self.nodes[n].len();
            let take = (l - idx).min(left);
            if take == l {
                self.nodes.remove(n);
            } else {
                self.nodes[n].delete_range(idx as i64, take);
                n += 1;
            }
            left -= take;
            idx = 0;
        }
        self.count -= k - left;
    }
}

fn slot_mut(nodes: &mut VecDeque<Listpack>, front: bool) -> Option<&mut Listpack> {
    if front {
        nodes.front_mut()
    } else {
        nodes.back_mut()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ListValue {
    Listpack(Listpack),
    Quicklist(PackedBox<Quicklist>),
}

impl Default for ListValue {
    fn default() -> Self {
        ListValue::Listpack(Listpack::new())
    }
}

/// A position in a list: node and entry offset (offsets are invalidated by mutations).
#[derive(Debug, Clone, Copy)]
struct Pos {
    node: usize,
    off: usize,
}

impl ListValue {
    pub fn new() -> ListValue {
        ListValue::default()
    }

    pub fn len(&self) -> usize {
        match self {
            ListValue::Listpack(lp) => lp.len(),
            ListValue::Quicklist(q) => q.count,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            ListValue::Listpack(_) => "listpack",
            ListValue::Quicklist(_) => "quicklist",
        }
    }

    pub fn heap_size(&self) -> usize {
        match self {
            ListValue::Listpack(lp) => lp.heap_size(),
            ListValue::Quicklist(q) => {
                q.nodes.capacity() * std::mem::size_of::<Listpack>()
                    + q.nodes.iter().map(|n| n.heap_size()).sum::<usize>()
            }
        }
    }

    /// The list's listpack nodes in order (one for the listpack encoding): what RDB writes.
    pub fn nodes(&self) -> Box<dyn Iterator<Item = &Listpack> + '_> {
        match self {
            ListValue::Listpack(lp) => Box::new(std::iter::once(lp)),
            ListValue::Quicklist(q) => Box::new(q.nodes.iter()),
        }
    }

    /// Number of quicklist nodes (1 for a listpack).
    pub fn node_count(&self) -> usize {
        match self {
            ListValue::Listpack(_) => 1,
            ListValue::Quicklist(q) => q.nodes.len(),
        }
    }

    /// Before adding elements of the given total string length and count: convert a listpack
    /// that would outgrow one node (Redis's "growing" conversion).
    pub fn try_grow(&mut self, add_bytes: usize, add_len: usize) {
        if let ListValue::Listpack(lp) = self {
            if exceeds(fill(), lp.bytes_len() + add_bytes, lp.len() + add_len) {
                let lp = std::mem::take(lp);
                let mut q = Quicklist {
                    count: lp.len(),
                    nodes: VecDeque::new(),
                };
                if !lp.is_empty() {
                    q.nodes.push_back(lp);
                }
                *self = ListValue::Quicklist(PackedBox::new(q));
            }
        }
    }

    /// After removing elements: back to a listpack when a single node holds at most half of
    /// the limit (Redis's "shrinking" conversion).
    pub fn try_shrink(&mut self) {
        self.try_convert_quicklist(true);
    }

    /// A freshly built list: listpack if it fits one node (Redis's "auto" conversion).
    pub fn try_auto(&mut self) {
        self.try_convert_quicklist(false);
    }

    fn try_convert_quicklist(&mut self, shrinking: bool) {
        if let ListValue::Quicklist(q) = self {
            if q.nodes.len() > 1 {
                return;
            }
            let (mut sz, mut cnt) = node_limits(fill());
            if shrinking {
                sz /= 2;
                cnt /= 2;
            }
            let bytes = q.nodes.front().map_or(7, |n| n.bytes_len());
            if bytes > sz || q.count > cnt {
                return;
            }
            let lp = q.nodes.pop_front().unwrap_or_default();
            *self = ListValue::Listpack(lp);
        }
    }

    /// Push one element (conversion is the caller's job: `try_grow` first).
    pub fn push(&mut self, s: &[u8], front: bool) {
        match self {
            ListValue::Listpack(lp) => {
                if front {
                    lp.push_front(s)
                } else {
                    lp.push_back(s)
                }
            }
            ListValue::Quicklist(q) => q.push(s, front, fill()),
        }
    }

    /// Convert as needed, then push all of `items` in order.
    pub fn push_all<'a>(&mut self, items: impl Iterator<Item = &'a [u8]> + Clone, front: bool) {
        let (bytes, n) = items.clone().fold((0, 0), |(b, n), s| (b + s.len(), n + 1));
        self.try_grow(bytes, n);
        for s in items {
            self.push(s, front);
        }
    }

    pub fn pop(&mut self, front: bool) -> Option<Vec<u8>> {
        match self {
            ListValue::Listpack(lp) => {
                let off = if front { lp.first() } else { lp.last() }?;
                let v = lp.get(off).to_vec();
                lp.delete(off, 1);
                Some(v)
            }
            ListValue::Quicklist(q) => q.pop(front),
        }
    }

    /// Normalise a possibly negative index; None when out of range.
    pub fn norm_index(&self, index: i64) -> Option<usize> {
        let len = self.len() as i64;
        let i = if index < 0 { len + index } else { index };
        (0..len).contains(&i).then_some(i as usize)
    }

    fn pos(&self, i: usize) -> Pos {
        match self {
            ListValue::Listpack(lp) => Pos {
                node: 0,
                off: lp.seek(i as i64).expect("index in range"),
            },
            ListValue::Quicklist(q) => {
                let (n, idx) = q.locate(i);
                Pos {
                    node: n,
                    off: q.nodes[n].seek(idx as i64).expect("index in node"),
                }
            }
        }
    }

    fn node(&self, n: usize) -> &Listpack {
        match self {
            ListValue::Listpack(lp) => lp,
            ListValue::Quicklist(q) => &q.nodes[n],
        }
    }

    fn node_total(&self) -> usize {
        match self {
            ListValue::Listpack(_) => 1,
            ListValue::Quicklist(q) => q.nodes.len(),
        }
    }

    fn next_pos(&self, p: Pos) -> Option<Pos> {
        if let Some(off) = self.node(p.node).next(p.off) {
            return Some(Pos { node: p.node, off });
        }
        let mut n = p.node + 1;
        while n < self.node_total() {
            if let Some(off) = self.node(n).first() {
                return Some(Pos { node: n, off });
            }
            n += 1;
        }
        None
    }

    fn prev_pos(&self, p: Pos) -> Option<Pos> {
        if let Some(off) = self.node(p.node).prev(p.off) {
            return Some(Pos { node: p.node, off });
        }
        let mut n = p.node;
        while n > 0 {
            n -= 1;
            if let Some(off) = self.node(n).last() {
                return Some(Pos { node: n, off });
            }
        }
        None
    }

    fn first_pos(&self) -> Option<Pos> {
        (!self.is_empty()).then(|| self.pos(0))
    }

    fn last_pos(&self) -> Option<Pos> {
        (!self.is_empty()).then(|| self.pos(self.len() - 1))
    }

    /// The element at index `i` (already normalised and in range).
    pub fn get(&self, i: usize) -> LpEntry<'_> {
        let p = self.pos(i);
        self.node(p.node).get(p.off)
    }

    /// Call `f` on `n` elements from index `start` (in range), front to back.
    pub fn for_range(&self, start: usize, n: usize, mut f: impl FnMut(LpEntry<'_>)) {
        if n == 0 {
            return;
        }
        let mut p = Some(self.pos(start));
        for _ in 0..n {
            let Some(cur) = p else { break };
            f(self.node(cur.node).get(cur.off));
            p = self.next_pos(cur);
        }
    }

    /// Call `f` on `n` elements from index `start` backwards (towards the head).
    pub fn for_range_rev(&self, start: usize, n: usize, mut f: impl FnMut(LpEntry<'_>)) {
        if n == 0 {
            return;
        }
        let mut p = Some(self.pos(start));
        for _ in 0..n {
            let Some(cur) = p else { break };
            f(self.node(cur.node).get(cur.off));
            p = self.prev_pos(cur);
        }
    }

    /// Walk elements from the head (or from the tail when `rev`), with their indexes, until
    /// `f` returns false.
    pub fn scan(&self, rev: bool, mut f: impl FnMut(usize, LpEntry<'_>) -> bool) {
        let len = self.len();
        let mut p = if rev {
            self.last_pos()
        } else {
            self.first_pos()
        };
        let mut k = 0;
        while let Some(cur) = p {
            let idx = if rev { len - 1 - k } else { k };
            if !f(idx, self.node(cur.node).get(cur.off)) {
                return;
            }
            k += 1;
            p = if rev {
                self.prev_pos(cur)
            } else {
                self.next_pos(cur)
            };
        }
    }

    /// Index of the first element equal to `s`, from the head.
    pub fn find(&self, s: &[u8]) -> Option<usize> {
        let mut found = None;
        self.scan(false, |i, e| {
            if e.eq_bytes(s) {
                found = Some(i);
                false
            } else {
                true
            }
        });
        found
    }

    /// Replace the element at index `i` (in range). Call `try_grow` before, `try_shrink` after.
    pub fn set(&mut self, i: usize, s: &[u8]) {
        match self {
            ListValue::Listpack(lp) => {
                let off = lp.seek(i as i64).expect("index in range");
                lp.replace(off, s);
            }
            ListValue::Quicklist(q) => {
                // In place, as Redis does for any element below the plain-node threshold,
                // even when the node grows past its limit.
                let (n, idx) = q.locate(i);
                let node = &mut q.nodes[n];
                let off = node.seek(idx as i64).expect("index in node");
                node.replace(off, s);
            }
        }
    }

    /// Insert `s` before (or after) the first element equal to `pivot`. Returns false when the
    /// pivot is absent. Call `try_grow` before.
    pub fn insert(&mut self, pivot: &[u8], s: &[u8], after: bool) -> bool {
        let Some(i) = self.find(pivot) else {
            return false;
        };
        let at = if after { i + 1 } else { i };
        match self {
            ListValue::Listpack(lp) => {
                if at == lp.len() {
                    lp.push_back(s);
                } else {
                    let off = lp.seek(at as i64).expect("index in range");
                    lp.insert_before(off, s);
                }
            }
            ListValue::Quicklist(q) => q.insert_at(at, s, fill()),
        }
        true
    }

    /// Remove up to `count` elements equal to `s` (all when 0, from the tail when negative).
    /// Returns how many were removed. Call `try_shrink` after.
    pub fn remove(&mut self, s: &[u8], count: i64) -> usize {
        let limit = if count == 0 {
            usize::MAX
        } else {
            count.unsigned_abs() as usize
        };
        let rev = count < 0;
        let mut removed = 0;
        let nodes: &mut [Listpack] = match self {
            ListValue::Listpack(lp) => std::slice::from_mut(lp),
            ListValue::Quicklist(q) => q.nodes.make_contiguous(),
        };
        let order: Vec<usize> = if rev {
            (0..nodes.len()).rev().collect()
        } else {
            (0..nodes.len()).collect()
        };
        for n in order {
            if removed >= limit {
                break;
            }
            let node = &mut nodes[n];
            if rev {
                let mut p = node.last();
                while let Some(off) = p {
                    if removed >= limit {
                        break;
                    }
                    let prev = node.prev(off);
                    if node.get(off).eq_bytes(s) {
                        node.delete(off, 1);
                        removed += 1;
                    }
                    p = prev;
                }
            } else {
                let mut p = node.first();
                while let Some(off) = p {
                    if removed >= limit {
                        break;
                    }
                    if node.get(off).eq_bytes(s) {
                        p = node.delete(off, 1);
                        removed += 1;
                    } else {
                        p = node.next(off);
                    }
                }
            }
        }
        if let ListValue::Quicklist(q) = self {
            q.count -= removed;
            q.nodes.retain(|n| !n.is_empty());
        }
        removed
    }

    /// Keep only elements `[start, start + keep)` (in range). Call `try_shrink` after.
    pub fn trim(&mut self, start: usize, keep: usize) {
        let len = self.len();
        let tail = len - start - keep;
        match self {
            ListValue::Listpack(lp) => {
                if tail > 0 {
                    lp.delete_range((start + keep) as i64, tail);
                }
                if start > 0 {
                    lp.delete_range(0, start);
                }
            }
            ListValue::Quicklist(q) => {
                if tail > 0 {
                    q.delete_range(start + keep, tail);
                }
                if start > 0 {
                    q.delete_range(0, start);
                }
            }
        }
    }

    /// All elements, front to back (tests, DEBUG).
    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        let mut v = Vec::with_capacity(self.len());
        self.scan(false, |_, e| {
            v.push(e.to_vec());
            true
        });
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    // The fill setting is a process-wide atomic: serialise the tests that change it.
    static LOCK: Mutex<()> = Mutex::new(());

    fn with_fill<R>(f: i64, body: impl FnOnce() -> R) -> R {
        let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let old = limits::get(&limits::LIST_MAX_LISTPACK_SIZE);
        limits::set("list-max-listpack-size", f);
        let r = body();
        limits::set("list-max-listpack-size", old);
        r
    }

    fn model_check(l: &ListValue, m: &VecDeque<Vec<u8>>) {
        let got = l.to_vecs();
        let want: Vec<Vec<u8>> = m.iter().cloned().collect();
        assert_eq!(got, want);
        assert_eq!(l.len(), m.len());
        if let ListValue::Quicklist(q) = l {
            assert_eq!(q.nodes.iter().map(|n| n.len()).sum::<usize>(), q.count);
            assert!(q.nodes.iter().all(|n| !n.is_empty()));
        }
    }

    #[test]
    fn converts_both_ways() {
        with_fill(4, || {
            let mut l = ListValue::new();
            let items: Vec<Vec<u8>> = (0..4).map(|i| format!("v{i}").into_bytes()).collect();
            l.push_all(items.iter().map(|v| v.as_slice()), false);
            assert_eq!(l.encoding(), "listpack");
            l.push_all([b"x".as_slice()].into_iter(), false);
            assert_eq!(l.encoding(), "quicklist");
            for _ in 0..3 {
                l.pop(true);
                l.try_shrink();
            }
            // Two nodes left (one element each): still a quicklist, as in Redis.
            assert_eq!(l.encoding(), "quicklist");
            l.pop(true);
            l.try_shrink();
            assert_eq!(l.encoding(), "listpack");
            assert_eq!(l.to_vecs(), vec![b"x".to_vec()]);
        });
    }

    #[test]
    fn random_ops_match_model() {
        for fill in [1, 3, 7, -1] {
            with_fill(fill, || {
                let mut l = ListValue::new();
                let mut m: VecDeque<Vec<u8>> = VecDeque::new();
                let mut seed = 12345u64.wrapping_add(fill as u64);
                let mut rnd = |n: u64| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (seed >> 33) % n
                };
                for step in 0..3000 {
                    let v = match rnd(4) {
                        0 => format!("{}", rnd(20)).into_bytes(),
                        1 => vec![b'a'; rnd(300) as usize],
                        _ => format!("e{}", rnd(30)).into_bytes(),
                    };
                    match rnd(9) {
                        0 | 1 => {
                            l.push_all([v.as_slice()].into_iter(), true);
                            m.push_front(v);
                        }
                        2 | 3 => {
                            l.push_all([v.as_slice()].into_iter(), false);
                            m.push_back(v);
                        }
                        4 => {
                            let front = rnd(2) == 0;
                            let a = l.pop(front);
                            let b = if front { m.pop_front() } else { m.pop_back() };
                            assert_eq!(a, b);
                            l.try_shrink();
                        }
                        5 if !m.is_empty() => {
                            let i = rnd(m.len() as u64) as usize;
                            l.try_grow(v.len(), 1);
                            l.set(i, &v);
                            m[i] = v;
                            l.try_shrink();
                        }
                        6 if !m.is_empty() => {
                            let pivot = m[rnd(m.len() as u64) as usize].clone();
                            let after = rnd(2) == 0;
                            l.try_grow(v.len(), 1);
                            assert!(l.insert(&pivot, &v, after));
                            let i = m.iter().position(|x| *x == pivot).unwrap();
                            m.insert(if after { i + 1 } else { i }, v);
                        }
                        7 => {
                            let c = rnd(5) as i64 - 2;
                            let n = l.remove(&v, c);
                            let mut left = if c == 0 {
                                usize::MAX
                            } else {
                                c.unsigned_abs() as usize
                            };
                            let mut removed = 0;
                            if c >= 0 {
                                let mut i = 0;
                                while i < m.len() && left > 0 {
                                    if m[i] == v {
                                        m.remove(i);
                                        left -= 1;
                                        removed += 1;
                                    } else {
                                        i += 1;
                                    }
                                }
                            } else {
                                let mut i = m.len();
                                while i > 0 && left > 0 {
                                    i -= 1;
                                    if m[i] == v {
                                        m.remove(i);
                                        left -= 1;
                                        removed += 1;
                                    }
                                }
                            }
                            assert_eq!(n, removed);
                            l.try_shrink();
                        }
                        8 if step % 50 == 0 && !m.is_empty() => {
                            let s = rnd(m.len() as u64) as usize;
                            let k = rnd((m.len() - s) as u64 + 1) as usize;
                            l.trim(s, k);
                            let kept: VecDeque<Vec<u8>> =
                                m.iter().skip(s).take(k).cloned().collect();
                            m = kept;
                            l.try_shrink();
                        }
                        _ => {}
                    }
                    model_check(&l, &m);
                    if !m.is_empty() {
                        let i = rnd(m.len() as u64) as usize;
                        assert_eq!(l.get(i).to_vec(), m[i]);
                    }
                }
            });
        }
    }

    #[test]
    fn nodes_stay_full() {
        with_fill(-2, || {
            let mut l = ListValue::new();
            for i in 0..100_000 {
                let s = format!("{i}");
                l.push_all([s.as_bytes()].into_iter(), false);
            }
            let ListValue::Quicklist(q) = &l else {
                panic!("quicklist expected")
            };
            for n in q.nodes.iter().take(q.nodes.len() - 1) {
                assert!(
                    n.bytes_len() > 8000 && n.heap_size() <= 8192,
                    "{}",
                    n.bytes_len()
                );
            }
        });
    }
}

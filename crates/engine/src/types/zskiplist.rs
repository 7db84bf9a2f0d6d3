//! The full sorted-set encoding: a skiplist with spans (O(log n) rank and range, as Redis's
//! zskiplist) whose nodes live in an arena, plus a member index that is an intrusive chained
//! hash table over the same nodes (each member is stored once). The hash table uses
//! power-of-two buckets so that ZSCAN's reverse-binary cursor keeps Redis's guarantee.
#![allow(clippy::needless_range_loop)]

use crate::hash::key_hash;

const MAX_LEVEL: usize = 32;
const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Level {
    forward: u32,
    span: u32,
}

#[derive(Debug, Clone, PartialEq)]
struct Node {
    ele: Box<[u8]>,
    score: f64,
    backward: u32,
    hash: u64,
    hnext: u32,
    levels: Vec<Level>,
}

/// Members ordered by (score, member bytes), with a member -> node index.
#[derive(Debug, Clone)]
pub struct SkipList {
    nodes: Vec<Node>,
    free: Vec<u32>,
    tail: u32,
    length: usize,
    level: usize,
    buckets: Vec<u32>,
    rng: u64,
    /// Bytes of member data plus level arrays, kept for an O(1) `heap_size`.
    owned_bytes: usize,
}

/// Equal when they hold the same members with the same scores (arena layout aside).
impl PartialEq for SkipList {
    fn eq(&self, other: &Self) -> bool {
        if self.length != other.length {
            return false;
        }
        let (mut a, mut b) = (self.first(), other.first());
        while let (Some(x), Some(y)) = (a, b) {
            let ((ea, sa), (eb, sb)) = (self.get(x), other.get(y));
            if ea != eb || sa.to_bits() != sb.to_bits() {
                return false;
            }
            a = self.next(x);
            b = other.next(y);
        }
        true
    }
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn less(s1: f64, e1: &[u8], s2: f64, e2: &[u8]) -> bool {
    s1 < s2 || (s1 == s2 && e1 < e2)
}

impl SkipList {
    pub fn new() -> SkipList {
        SkipList::with_capacity(0)
    }

    /// An empty skiplist whose member index is sized for `cap` members.
    pub fn with_capacity(cap: usize) -> SkipList {
        let head = Node {
            ele: Box::default(),
            score: 0.0,
            backward: NIL,
            hash: 0,
            hnext: NIL,
            levels: vec![
                Level {
                    forward: NIL,
                    span: 0
                };
                MAX_LEVEL
            ],
        };
        let mut nodes = Vec::with_capacity(cap + 1);
        nodes.push(head);
        let nb = cap.next_power_of_two().max(4);
        SkipList {
            nodes,
            free: Vec::new(),
            tail: NIL,
            length: 0,
            level: 1,
            buckets: vec![NIL; nb],
            owned_bytes: 0,
            rng: 0x9E37_79B9_7F4A_7C15 ^ (cap as u64).wrapping_mul(0x2545_F491_4F6C_DD1D),
        }
    }

    pub fn len(&self) -> usize {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// Approximate heap bytes used.
    pub fn heap_size(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.buckets.capacity() * 4
            + self.free.capacity() * 4
            + MAX_LEVEL * std::mem::size_of::<Level>()
            + self.owned_bytes
    }

    fn random_level(&mut self) -> usize {
        let mut level = 1;
        loop {
            // xorshift64*
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32;
            if (r & 0xFFFF) < 0x4000 && level < MAX_LEVEL {
                level += 1;
            } else {
                return level;
            }
        }
    }

    // ----- member index -------------------------------------------------------------------

    fn bucket_of(&self, hash: u64) -> usize {
        (hash as usize) & (self.buckets.len() - 1)
    }

    fn find_node(&self, ele: &[u8]) -> Option<u32> {
        let h = key_hash(ele);
        let mut cur = self.buckets[self.bucket_of(h)];
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            if n.hash == h && &*n.ele == ele {
                return Some(cur);
            }
            cur = n.hnext;
        }
        None
    }

    fn index_insert(&mut self, idx: u32) {
        if self.length > self.buckets.len() {
            self.rehash(self.buckets.len() * 2);
        }
        let b = self.bucket_of(self.nodes[idx as usize].hash);
        self.nodes[idx as usize].hnext = self.buckets[b];
        self.buckets[b] = idx;
    }

    fn index_remove(&mut self, idx: u32) {
        let b = self.bucket_of(self.nodes[idx as usize].hash);
        let next = self.nodes[idx as usize].hnext;
        if self.buckets[b] == idx {
            self.buckets[b] = next;
        } else {
            let mut cur = self.buckets[b];
            while cur != NIL {
                let n = self.nodes[cur as usize].hnext;
                if n == idx {
                    self.nodes[cur as usize].hnext = next;
                    break;
                }
                cur = n;
            }
        }
        if self.buckets.len() > 4 && self.length * 10 < self.buckets.len() {
            let nb = self.length.next_power_of_two().max(4);
            self.rehash(nb);
        }
    }

    fn rehash(&mut self, nb: usize) {
        let mut buckets = vec![NIL; nb];
        let mask = nb - 1;
        for b in 0..self.buckets.len() {
            let mut cur = self.buckets[b];
            while cur != NIL {
                let next = self.nodes[cur as usize].hnext;
                let nbk = (self.nodes[cur as usize].hash as usize) & mask;
                self.nodes[cur as usize].hnext = buckets[nbk];
                buckets[nbk] = cur;
                cur = next;
            }
        }
        self.buckets = buckets;
    }

    /// One ZSCAN step over the member index: visits the members of the bucket(s) at `cursor`
    /// and returns the next cursor (0 when done). Reverse-binary, as Redis's dictScan.
    pub fn scan_step(&self, cursor: u64, mut f: impl FnMut(&[u8], f64)) -> u64 {
        let mask = (self.buckets.len() - 1) as u64;
        let mut cur = self.buckets[(cursor & mask) as usize];
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            f(&n.ele, n.score);
            cur = n.hnext;
        }
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }

    // ----- skiplist -----------------------------------------------------------------------

    fn alloc(&mut self, level: usize, score: f64, ele: Box<[u8]>, hash: u64) -> u32 {
        self.owned_bytes += ele.len() + level * std::mem::size_of::<Level>();
        let node = Node {
            ele,
            score,
            backward: NIL,
            hash,
            hnext: NIL,
            levels: vec![
                Level {
                    forward: NIL,
                    span: 0
                };
                level
            ],
        };
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        }
    }

    #[inline]
    fn fwd(&self, x: u32, i: usize) -> u32 {
        self.nodes[x as usize].levels[i].forward
    }

    /// The score of `ele`, if present.
    pub fn score(&self, ele: &[u8]) -> Option<f64> {
        self.find_node(ele).map(|i| self.nodes[i as usize].score)
    }

    /// Insert a member known to be absent.
    pub fn insert(&mut self, score: f64, ele: &[u8]) {
        let mut update = [HEAD; MAX_LEVEL];
        let mut rank = [0u32; MAX_LEVEL];
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            rank[i] = if i == self.level - 1 { 0 } else { rank[i + 1] };
            loop {
                let f = self.fwd(x, i);
                if f == NIL {
                    break;
                }
                let fnode = &self.nodes[f as usize];
                if less(fnode.score, &fnode.ele, score, ele) {
                    rank[i] += self.nodes[x as usize].levels[i].span;
                    x = f;
                } else {
                    break;
                }
            }
            update[i] = x;
        }
        let level = self.random_level();
        if level > self.level {
            for i in self.level..level {
                rank[i] = 0;
                update[i] = HEAD;
                self.nodes[HEAD as usize].levels[i].span = self.length as u32;
            }
            self.level = level;
        }
        let hash = key_hash(ele);
        let nx = self.alloc(level, score, ele.into(), hash);
        for i in 0..level {
            let u = update[i] as usize;
            let ufwd = self.nodes[u].levels[i].forward;
            let uspan = self.nodes[u].levels[i].span;
            self.nodes[nx as usize].levels[i].forward = ufwd;
            self.nodes[nx as usize].levels[i].span = uspan - (rank[0] - rank[i]);
            self.nodes[u].levels[i].forward = nx;
            self.nodes[u].levels[i].span = (rank[0] - rank[i]) + 1;
        }
        for i in level..self.level {
            self.nodes[update[i] as usize].levels[i].span += 1;
        }
        self.nodes[nx as usize].backward = if update[0] == HEAD { NIL } else { update[0] };
        let f0 = self.fwd(nx, 0);
        if f0 != NIL {
            self.nodes[f0 as usize].backward = nx;
        } else {
            self.tail = nx;
        }
        self.length += 1;
        self.index_insert(nx);
    }

    fn unlink(&mut self, x: u32, update: &[u32; MAX_LEVEL]) {
        for i in 0..self.level {
            let u = update[i] as usize;
            if self.nodes[u].levels[i].forward == x {
                self.nodes[u].levels[i].span += self.nodes[x as usize].levels[i].span;
                self.nodes[u].levels[i].span -= 1;
                self.nodes[u].levels[i].forward = self.nodes[x as usize].levels[i].forward;
            } else {
                self.nodes[u].levels[i].span -= 1;
            }
        }
        let f0 = self.fwd(x, 0);
        let back = self.nodes[x as usize].backward;
        if f0 != NIL {
            self.nodes[f0 as usize].backward = back;
        } else {
            self.tail = back;
        }
        while self.level > 1 && self.fwd(HEAD, self.level - 1) == NIL {
            self.level -= 1;
        }
        self.length -= 1;
    }

    fn free_node(&mut self, x: u32) {
        self.index_remove(x);
        let n = &mut self.nodes[x as usize];
        self.owned_bytes -= n.ele.len() + n.levels.len() * std::mem::size_of::<Level>();
        n.ele = Box::default();
        n.levels = Vec::new();
        self.free.push(x);
        if self.length == 0 {
            // reset the arena
            self.nodes.truncate(1);
            self.free.clear();
        }
    }

    fn path_to(&self, score: f64, ele: &[u8]) -> ([u32; MAX_LEVEL], u32) {
        let mut update = [HEAD; MAX_LEVEL];
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let f = self.fwd(x, i);
                if f == NIL {
                    break;
                }
                let fnode = &self.nodes[f as usize];
                if less(fnode.score, &fnode.ele, score, ele) {
                    x = f;
                } else {
                    break;
                }
            }
            update[i] = x;
        }
        (update, self.fwd(x, 0))
    }

    /// Remove `ele`; returns its score if it was present.
    pub fn remove(&mut self, ele: &[u8]) -> Option<f64> {
        let idx = self.find_node(ele)?;
        let score = self.nodes[idx as usize].score;
        let (update, x) = self.path_to(score, ele);
        debug_assert_eq!(x, idx);
        self.unlink(x, &update);
        self.free_node(x);
        Some(score)
    }

    /// Change the score of a present member.
    pub fn update_score(&mut self, ele: &[u8], newscore: f64) {
        let Some(idx) = self.find_node(ele) else {
            return;
        };
        let cur = self.nodes[idx as usize].score;
        if cur == newscore {
            return;
        }
        // In place when the order does not change.
        let back = self.nodes[idx as usize].backward;
        let f0 = self.fwd(idx, 0);
        let back_ok = back == NIL || {
            let b = &self.nodes[back as usize];
            less(b.score, &b.ele, newscore, ele)
        };
        let fwd_ok = f0 == NIL || {
            let f = &self.nodes[f0 as usize];
            less(newscore, ele, f.score, &f.ele)
        };
        if back_ok && fwd_ok {
            self.nodes[idx as usize].score = newscore;
            return;
        }
        self.remove(ele);
        self.insert(newscore, ele);
    }

    /// 1-based rank of a member with its score.
    pub fn rank(&self, ele: &[u8]) -> Option<(usize, f64)> {
        let idx = self.find_node(ele)?;
        let score = self.nodes[idx as usize].score;
        let mut r: usize = 0;
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let f = self.fwd(x, i);
                if f == NIL {
                    break;
                }
                let fnode = &self.nodes[f as usize];
                if less(fnode.score, &fnode.ele, score, ele) || f == idx {
                    r += self.nodes[x as usize].levels[i].span as usize;
                    x = f;
                    if f == idx {
                        return Some((r, score));
                    }
                } else {
                    break;
                }
            }
        }
        None
    }

    /// The node at 1-based `rank`.
    fn node_by_rank(&self, rank: usize) -> u32 {
        let mut traversed = 0usize;
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let f = self.fwd(x, i);
                if f == NIL {
                    break;
                }
                let sp = self.nodes[x as usize].levels[i].span as usize;
                if traversed + sp <= rank {
                    traversed += sp;
                    x = f;
                } else {
                    break;
                }
            }
            if traversed == rank {
                return x;
            }
        }
        NIL
    }

    /// Cursor at 0-based `index` (ascending order).
    pub fn cursor_at(&self, index: usize) -> Option<Cursor> {
        if index >= self.length {
            return None;
        }
        let x = self.node_by_rank(index + 1);
        (x != NIL).then_some(Cursor(x))
    }

    pub fn first(&self) -> Option<Cursor> {
        let f = self.fwd(HEAD, 0);
        (f != NIL).then_some(Cursor(f))
    }

    pub fn last(&self) -> Option<Cursor> {
        (self.tail != NIL).then_some(Cursor(self.tail))
    }

    pub fn next(&self, c: Cursor) -> Option<Cursor> {
        let f = self.fwd(c.0, 0);
        (f != NIL).then_some(Cursor(f))
    }

    pub fn prev(&self, c: Cursor) -> Option<Cursor> {
        let b = self.nodes[c.0 as usize].backward;
        (b != NIL).then_some(Cursor(b))
    }

    pub fn get(&self, c: Cursor) -> (&[u8], f64) {
        let n = &self.nodes[c.0 as usize];
        (&n.ele, n.score)
    }

    /// The first node for which `below(score, ele)` is false (nodes are partitioned: every
    /// node for which `below` holds comes first). None when all are below.
    pub fn first_not_below(&self, below: impl Fn(f64, &[u8]) -> bool) -> Option<Cursor> {
        let f = self.fwd(self.last_where(below), 0);
        (f != NIL).then_some(Cursor(f))
    }

    /// The last node for which `upto(score, ele)` holds (nodes satisfying it come first).
    pub fn last_upto(&self, upto: impl Fn(f64, &[u8]) -> bool) -> Option<Cursor> {
        let x = self.last_where(upto);
        (x != HEAD).then_some(Cursor(x))
    }

    /// The last node for which `pred(score, ele)` holds (nodes satisfying it come first),
    /// or HEAD when none does.
    fn last_where(&self, pred: impl Fn(f64, &[u8]) -> bool) -> u32 {
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let f = self.fwd(x, i);
                if f == NIL {
                    break;
                }
                let fnode = &self.nodes[f as usize];
                if pred(fnode.score, &fnode.ele) {
                    x = f;
                } else {
                    break;
                }
            }
        }
        x
    }

    /// 0-based index of the node at `c`.
    pub fn index_of(&self, c: Cursor) -> usize {
        let n = &self.nodes[c.0 as usize];
        let (score, ele) = (n.score, n.ele.clone());
        self.rank(&ele).map(|(r, _)| r - 1).unwrap_or_else(|| {
            let _ = score;
            0
        })
    }
}

/// A position in a skiplist (valid until the next mutation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor(u32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_rank_remove() {
        let mut z = SkipList::new();
        for i in 0..1000u32 {
            let m = format!("m{}", (i * 7919) % 1000);
            z.insert(((i * 7919) % 1000) as f64, m.as_bytes());
        }
        assert_eq!(z.len(), 1000);
        for i in 0..1000usize {
            let c = z.cursor_at(i).unwrap();
            let (e, s) = z.get(c);
            assert_eq!(s, i as f64);
            assert_eq!(e, format!("m{}", i).as_bytes());
            assert_eq!(z.rank(e).unwrap().0, i + 1);
        }
        for i in (0..1000).step_by(2) {
            assert!(z.remove(format!("m{}", i).as_bytes()).is_some());
        }
        assert_eq!(z.len(), 500);
        for i in 0..500usize {
            let (e, s) = z.get(z.cursor_at(i).unwrap());
            assert_eq!(s, (2 * i + 1) as f64);
            assert_eq!(z.rank(e).unwrap().0, i + 1);
        }
        z.update_score(b"m1", 5000.0);
        assert_eq!(z.rank(b"m1").unwrap().0, 500);
        let mut seen = 0;
        let mut cur = 0;
        loop {
            cur = z.scan_step(cur, |_, _| seen += 1);
            if cur == 0 {
                break;
            }
        }
        assert_eq!(seen, 500);
    }

    #[test]
    fn random_ops_match_a_model() {
        let mut z = SkipList::new();
        let mut model: std::collections::BTreeMap<Vec<u8>, f64> = Default::default();
        let mut seed: u64 = 42;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for step in 0..20000 {
            let m = format!("m{}", rnd(300)).into_bytes();
            let sc = rnd(50) as f64 - 25.0;
            match rnd(4) {
                0 | 1 => {
                    if model.contains_key(&m) {
                        z.update_score(&m, sc);
                    } else {
                        z.insert(sc, &m);
                    }
                    model.insert(m, sc);
                }
                2 => {
                    assert_eq!(z.remove(&m).is_some(), model.remove(&m).is_some());
                }
                _ => {
                    assert_eq!(z.score(&m), model.get(&m).copied());
                }
            }
            if step % 500 == 0 || model.is_empty() {
                let mut sorted: Vec<(f64, Vec<u8>)> =
                    model.iter().map(|(k, v)| (*v, k.clone())).collect();
                sorted.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
                assert_eq!(z.len(), sorted.len());
                for (i, (s, e)) in sorted.iter().enumerate() {
                    let (ge, gs) = z.get(z.cursor_at(i).unwrap());
                    assert_eq!((ge, gs), (e.as_slice(), *s));
                    assert_eq!(z.rank(e).unwrap().0, i + 1);
                }
                // backward links
                let mut c = z.last();
                let mut n = 0;
                while let Some(cur) = c {
                    n += 1;
                    c = z.prev(cur);
                }
                assert_eq!(n, sorted.len());
            }
        }
    }
}

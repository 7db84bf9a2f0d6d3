//! The replication backlog: the last `repl-backlog-size` bytes of the replication stream, kept
//! in a ring so that a replica that lost its link continues from its offset (PSYNC, answered
//! `+CONTINUE`) instead of loading a whole new snapshot.
//!
//! The ring is allocated zeroed (`calloc`): its pages cost memory only once the stream has
//! written them, as Redis's backlog grows block by block.

pub struct Backlog {
    ring: Vec<u8>,
    /// Where the next byte goes.
    head: usize,
    /// Bytes held (at most the ring's size).
    histlen: usize,
}

impl Backlog {
    pub fn new(size: usize) -> Backlog {
        Backlog {
            ring: vec![0; size.max(1)],
            head: 0,
            histlen: 0,
        }
    }

    pub fn size(&self) -> usize {
        self.ring.len()
    }

    pub fn histlen(&self) -> usize {
        self.histlen
    }

    /// Append stream bytes, forgetting the oldest ones beyond the size.
    pub fn push(&mut self, bytes: &[u8]) {
        let size = self.ring.len();
        // Only the last `size` bytes can stay.
        let bytes = &bytes[bytes.len().saturating_sub(size)..];
        let first = bytes.len().min(size - self.head);
        self.ring[self.head..self.head + first].copy_from_slice(&bytes[..first]);
        let rest = bytes.len() - first;
        self.ring[..rest].copy_from_slice(&bytes[first..]);
        self.head = (self.head + bytes.len()) % size;
        self.histlen = (self.histlen + bytes.len()).min(size);
    }

    /// Append the last `n` bytes held (n at most `histlen`), oldest first, to `out`.
    pub fn copy_tail(&self, n: usize, out: &mut Vec<u8>) {
        let n = n.min(self.histlen);
        let size = self.ring.len();
        let start = (self.head + size - n) % size;
        if start + n <= size {
            out.extend_from_slice(&self.ring[start..start + n]);
        } else {
            out.extend_from_slice(&self.ring[start..]);
            out.extend_from_slice(&self.ring[..n - (size - start)]);
        }
    }

    /// A new size (CONFIG SET repl-backlog-size): the newest bytes that fit are kept.
    pub fn resize(&mut self, size: usize) {
        let size = size.max(1);
        if size == self.ring.len() {
            return;
        }
        let keep = self.histlen.min(size);
        let mut tail = Vec::with_capacity(keep);
        self.copy_tail(keep, &mut tail);
        *self = Backlog::new(size);
        self.push(&tail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(b: &Backlog, n: usize) -> Vec<u8> {
        let mut v = Vec::new();
        b.copy_tail(n, &mut v);
        v
    }

    #[test]
    fn keeps_the_newest_bytes_across_the_wrap() {
        let mut b = Backlog::new(8);
        b.push(b"abcde");
        assert_eq!((b.histlen(), tail(&b, 5)), (5, b"abcde".to_vec()));
        b.push(b"fghij");
        assert_eq!(b.histlen(), 8);
        assert_eq!(tail(&b, 8), b"cdefghij");
        assert_eq!(tail(&b, 3), b"hij");
        b.push(b"0123456789xy");
        assert_eq!(tail(&b, 8), b"456789xy");
    }

    #[test]
    fn resize_keeps_what_fits() {
        let mut b = Backlog::new(8);
        b.push(b"abcdefghij");
        b.resize(4);
        assert_eq!((b.size(), tail(&b, 4)), (4, b"ghij".to_vec()));
        b.resize(16);
        assert_eq!((b.histlen(), tail(&b, 4)), (4, b"ghij".to_vec()));
        b.push(b"k");
        assert_eq!(tail(&b, 5), b"ghijk");
    }
}

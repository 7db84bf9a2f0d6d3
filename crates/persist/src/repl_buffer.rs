//! The replication buffer, shared as in Redis 7: the replication stream is kept once, in a
//! list of blocks, and both the backlog and every replica read from it. A replica is a
//! position in the stream, not a copy of it, so ten replicas of a busy master cost what one
//! does.
//!
//! The backlog is the tail of the list: whole blocks are dropped from its head once more than
//! `repl-backlog-size` bytes are held, but never a block a replica has still to send. A slow
//! replica (or one waiting for its snapshot) therefore makes the backlog outgrow its setting,
//! and another replica that lost its link may continue from anywhere in what is held.

use std::collections::VecDeque;

/// Blocks are at least this big, so that small writes fill them instead of allocating
/// (Redis's PROTO_REPLY_CHUNK_BYTES).
const MIN_BLOCK: usize = 16 * 1024;

/// Bookkeeping counted per block on top of its bytes (Redis counts its block header and list
/// node the same way).
const BLOCK_OVERHEAD: usize = 64;

struct Block {
    /// Stream offset of the block's first byte (bytes of the stream before it).
    start: u64,
    /// Allocated with the block's full size; only the last block is ever partly filled.
    data: Vec<u8>,
}

impl Block {
    fn end(&self) -> u64 {
        self.start + self.data.len() as u64
    }
}

pub struct ReplBuffer {
    blocks: VecDeque<Block>,
    /// repl-backlog-size: what the backlog keeps when no replica holds more.
    size: usize,
    /// Bytes allocated for blocks, with their overhead (INFO's mem_total_replication_buffers).
    mem: usize,
    /// Stream offset after the last byte held.
    end: u64,
}

impl ReplBuffer {
    /// An empty buffer whose stream continues at `offset`.
    pub fn new(size: usize, offset: u64) -> ReplBuffer {
        ReplBuffer {
            blocks: VecDeque::new(),
            size: size.max(1),
            mem: 0,
            end: offset,
        }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// CONFIG SET repl-backlog-size; the next trim applies it.
    pub fn set_size(&mut self, size: usize) {
        self.size = size.max(1);
    }

    /// Stream offset of the first byte held (`end` when empty).
    pub fn first(&self) -> u64 {
        self.blocks.front().map_or(self.end, |b| b.start)
    }

    /// Stream offset where the first block ends: a reader passing it may let that block go.
    pub fn first_block_end(&self) -> u64 {
        self.blocks.front().map_or(self.end, Block::end)
    }

    /// Bytes held: the backlog's history length.
    pub fn histlen(&self) -> usize {
        (self.end - self.first()) as usize
    }

    pub fn mem(&self) -> usize {
        self.mem
    }

    /// Append stream bytes. True when a new block was allocated (Redis checks the replicas'
    /// output limits then).
    pub fn push(&mut self, mut bytes: &[u8]) -> bool {
        if let Some(tail) = self.blocks.back_mut() {
            let room = tail.data.capacity() - tail.data.len();
            let n = room.min(bytes.len());
            tail.data.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            self.end += n as u64;
        }
        let grew = !bytes.is_empty();
        // Never smaller than MIN_BLOCK (small writes fill it), never bigger than a sixteenth
        // of the backlog (a huge block could not be trimmed while a little of it is needed).
        let cap = (self.size / 16).max(MIN_BLOCK);
        while !bytes.is_empty() {
            let size = bytes.len().clamp(MIN_BLOCK, cap);
            let n = size.min(bytes.len());
            let mut data = Vec::with_capacity(size);
            data.extend_from_slice(&bytes[..n]);
            self.mem += data.capacity() + BLOCK_OVERHEAD;
            self.blocks.push_back(Block {
                start: self.end,
                data,
            });
            self.end += n as u64;
            bytes = &bytes[n..];
        }
        grew
    }

    /// Index of the block holding stream offset `pos` (the last block when `pos` is the end).
    fn block_of(&self, pos: u64) -> usize {
        self.blocks
            .partition_point(|b| b.end() <= pos)
            .min(self.blocks.len().saturating_sub(1))
    }

    /// Append the bytes from offset `from` (at least `first()`) up to `to` (at most the end).
    pub fn copy_range(&self, from: u64, to: u64, out: &mut Vec<u8>) {
        debug_assert!(from >= self.first() && to <= self.end);
        if from >= to {
            return;
        }
        for b in self.blocks.range(self.block_of(from)..) {
            if b.start >= to {
                break;
            }
            let lo = (from.max(b.start) - b.start) as usize;
            let hi = (to.min(b.end()) - b.start) as usize;
            out.extend_from_slice(&b.data[lo..hi]);
        }
    }

    /// What a replica at `pos` holds on to, as Redis counts a replica's output buffer: from
    /// the start of the block it is in to the end of the last block, with each block's
    /// overhead.
    pub fn held_from(&self, pos: u64) -> usize {
        let Some(last) = self.blocks.back() else {
            return 0;
        };
        let i = self.block_of(pos);
        let first = &self.blocks[i];
        (last.start + last.data.capacity() as u64 - first.start) as usize
            + (self.blocks.len() - i) * BLOCK_OVERHEAD
    }

    /// Whether `trim` could drop a block if no replica needed it.
    pub fn over_size(&self) -> bool {
        self.blocks.len() > 1 && self.histlen() - self.blocks[0].data.len() > self.size
    }

    /// Drop up to `max_blocks` whole blocks from the head while more than the backlog's size
    /// stays held, none of them needed by a replica (every replica is at `keep_from` or
    /// later), and at least one block remains. Returns the blocks dropped.
    pub fn trim(&mut self, keep_from: u64, max_blocks: usize) -> usize {
        let mut dropped = 0;
        while dropped < max_blocks && self.blocks.len() > 1 {
            let first = &self.blocks[0];
            if first.end() > keep_from || self.histlen() - first.data.len() <= self.size {
                break;
            }
            self.mem -= first.data.capacity() + BLOCK_OVERHEAD;
            self.blocks.pop_front();
            dropped += 1;
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(b: &ReplBuffer, from: u64, to: u64) -> Vec<u8> {
        let mut v = Vec::new();
        b.copy_range(from, to, &mut v);
        v
    }

    #[test]
    fn small_writes_fill_one_block_and_read_back_from_any_offset() {
        let mut b = ReplBuffer::new(1 << 20, 100);
        assert!(b.push(b"abc"), "the first byte allocates a block");
        assert!(!b.push(b"defg"));
        assert_eq!((b.first(), b.histlen()), (100, 7));
        assert_eq!(range(&b, 102, 107), b"cdefg");
        assert_eq!(b.mem(), MIN_BLOCK + BLOCK_OVERHEAD);
    }

    #[test]
    fn a_big_write_spans_blocks_capped_at_a_sixteenth_of_the_backlog() {
        let mut b = ReplBuffer::new(1 << 20, 0);
        let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        b.push(&data);
        // 64 KiB blocks: 1 MiB / 16.
        assert_eq!(b.blocks.len(), 4);
        assert_eq!(range(&b, 0, 200_000), data);
        assert_eq!(range(&b, 65_530, 65_540), &data[65_530..65_540]);
    }

    #[test]
    fn trimming_keeps_the_backlog_size_and_what_replicas_still_need() {
        let mut b = ReplBuffer::new(MIN_BLOCK, 0);
        for _ in 0..10 {
            b.push(&[7u8; MIN_BLOCK]);
        }
        // A replica still at offset 0 pins everything.
        assert_eq!(b.trim(0, 64), 0);
        assert_eq!(b.histlen(), 10 * MIN_BLOCK);
        // Every replica past block 3: blocks 0..3 go, the rest is beyond the size but pinned.
        assert_eq!(b.trim(3 * MIN_BLOCK as u64 + 5, 64), 3);
        assert_eq!(b.first(), 3 * MIN_BLOCK as u64);
        // No replica: down to just over the size (two blocks: dropping one more would leave
        // exactly the size, which Redis does not do either).
        assert_eq!(b.trim(u64::MAX, 2), 2, "at most max_blocks per call");
        b.trim(u64::MAX, 64);
        assert_eq!(b.histlen(), 2 * MIN_BLOCK);
        assert_eq!(b.mem(), 2 * (MIN_BLOCK + BLOCK_OVERHEAD));
    }

    #[test]
    fn a_replica_holds_from_its_block_to_the_end() {
        let mut b = ReplBuffer::new(MIN_BLOCK, 0);
        b.push(&[1u8; 3 * MIN_BLOCK + 10]);
        assert_eq!(b.blocks.len(), 4);
        assert_eq!(b.held_from(0), b.held_from(MIN_BLOCK as u64 - 1));
        assert!(b.held_from(3 * MIN_BLOCK as u64 + 10) < b.held_from(2 * MIN_BLOCK as u64));
        assert_eq!(ReplBuffer::new(10, 0).held_from(0), 0);
    }

    #[test]
    fn random_writes_reads_and_trims_match_a_plain_copy() {
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut b = ReplBuffer::new(40_000, 1000);
        let mut all: Vec<u8> = Vec::new();
        let mut readers = [1000u64, 1000, 1000];
        for round in 0..3000 {
            let len = if rnd(10) == 0 { rnd(200_000) } else { rnd(300) } as usize;
            let chunk: Vec<u8> = (0..len).map(|i| (i as u64 * 31 + round) as u8).collect();
            b.push(&chunk);
            all.extend_from_slice(&chunk);
            let r = rnd(3) as usize;
            let end = 1000 + all.len() as u64;
            let to = (readers[r] + rnd(100_000)).min(end);
            let got = range(&b, readers[r], to);
            assert_eq!(
                got,
                &all[(readers[r] - 1000) as usize..(to - 1000) as usize]
            );
            readers[r] = to;
            b.trim(*readers.iter().min().unwrap(), 64);
            assert!(b.first() <= *readers.iter().min().unwrap());
            let h = b.histlen() as u64;
            assert_eq!(range(&b, end - h, end), &all[all.len() - h as usize..]);
        }
    }
}

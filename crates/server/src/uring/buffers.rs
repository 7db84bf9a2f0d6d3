//! The worker's provided-buffer ring (IORING_REGISTER_PBUF_RING): receives pick a buffer here
//! as data arrives, so an idle connection holds no receive memory. A buffer goes back to the
//! ring once its connection has copied its bytes out.

use io_uring::types::BufRingEntry;
use io_uring::IoUring;
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

/// Buffers in the ring (a power of two, as the kernel requires).
pub const COUNT: u16 = 256;
/// Bytes per buffer: one receive fills at most one.
pub const SIZE: usize = 16 * 1024;
/// The buffer group id receives name.
pub const GROUP: u16 = 0;

/// Anonymous memory of our own (not the allocator's): the kernel writes into it, and it must
/// not count as the dataset's memory in INFO (jemalloc's stats).
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh private anonymous mapping; checked for failure below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once (after the ring that used it is gone).
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

pub struct BufferPool {
    ring: Mapping,
    data: Mapping,
    /// Our copy of the ring's tail (the kernel reads the shared one).
    tail: u16,
    /// Buffers handed out by completions and not returned yet.
    held: usize,
}

impl BufferPool {
    /// Map the buffers, register the ring with `uring` and offer every buffer.
    pub fn register(uring: &IoUring) -> io::Result<BufferPool> {
        let ring_len = COUNT as usize * std::mem::size_of::<BufRingEntry>();
        let ring = Mapping::new(ring_len.max(4096))?;
        let data = Mapping::new(COUNT as usize * SIZE)?;
        // SAFETY: the ring memory lives as long as the pool, which is dropped only after the
        // io_uring instance (see `Ring`'s field order), so the kernel never sees it unmapped.
        unsafe {
            uring
                .submitter()
                .register_buf_ring_with_flags(ring.ptr as u64, COUNT, GROUP, 0)?;
        }
        let mut pool = BufferPool {
            ring,
            data,
            tail: 0,
            held: COUNT as usize,
        };
        for bid in 0..COUNT {
            pool.give_back(bid);
        }
        Ok(pool)
    }

    /// Buffers the kernel can fill now.
    pub fn available(&self) -> usize {
        COUNT as usize - self.held
    }

    /// A completion handed buffer `bid` to us.
    pub fn taken(&mut self) {
        self.held += 1;
    }

    /// The bytes of buffer `bid`.
    pub fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        debug_assert!(len <= SIZE && bid < COUNT);
        // SAFETY: inside our mapping; the kernel wrote `len` bytes there and no longer writes
        // this buffer until it is given back.
        unsafe { std::slice::from_raw_parts(self.data.ptr.add(bid as usize * SIZE), len) }
    }

    /// Offer buffer `bid` to the kernel again.
    pub fn give_back(&mut self, bid: u16) {
        let base = self.ring.ptr.cast::<BufRingEntry>();
        // SAFETY: the slot at our tail is not the kernel's (it reads only up to the shared
        // tail), and the entry points at buffer `bid` of our mapping.
        unsafe {
            let entry = &mut *base.add((self.tail & (COUNT - 1)) as usize);
            entry.set_addr(self.data.ptr.add(bid as usize * SIZE) as u64);
            entry.set_len(SIZE as u32);
            entry.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the shared tail lives in entry 0's reserved field; the release store
        // publishes the entry written above before the kernel can see the new tail.
        unsafe {
            let tail = BufRingEntry::tail(base) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
        self.held -= 1;
    }
}

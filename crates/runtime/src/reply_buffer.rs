//! Per-client reply buffer sizing, as Redis 7 does it: a client's reply buffer (CLIENT LIST
//! `rbs`) starts at 16 KiB, shrinks towards its recent peak use (`rbp`) when that stays under
//! half of it, and doubles (up to 16 KiB) while the peak fills it. The peak is reset every
//! `reply-buffer peak-reset-time` (DEBUG REPLYBUFFER PEAK-RESET-TIME, 5 s by default), so an
//! idle client's buffer shrinks to the 1 KiB minimum. The connection keeps its real buffer's
//! capacity at `rbs` between batches.

use crate::clients::{ClientHandle, REPLY_STATIC};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// The smallest reply buffer (Redis's PROTO_REPLY_MIN_BYTES).
pub const MIN_BYTES: usize = 1024;
const DEFAULT_PEAK_RESET_MS: i64 = 5000;

/// One client's reply-buffer state, read by CLIENT LIST.
pub struct ClientReplyBuffer {
    /// Usable size of the buffer (`rbs`).
    pub size: AtomicUsize,
    /// Most bytes the buffer held since the last peak reset (`rbp`).
    pub peak: AtomicUsize,
    peak_reset_ms: AtomicU64,
}

impl Default for ClientReplyBuffer {
    fn default() -> Self {
        ClientReplyBuffer {
            size: AtomicUsize::new(REPLY_STATIC),
            peak: AtomicUsize::new(REPLY_STATIC),
            peak_reset_ms: AtomicU64::new(tern_engine::clock::now_ms()),
        }
    }
}

impl ClientReplyBuffer {
    /// A batch of `bytes` of replies went through the buffer: the part that fit counts
    /// towards the peak (the rest is Redis's reply list).
    #[inline]
    pub fn used(&self, bytes: usize) {
        let held = bytes.min(self.size.load(Relaxed));
        if held > self.peak.load(Relaxed) {
            self.peak.store(held, Relaxed);
        }
    }
}

/// Server-wide knobs (DEBUG REPLYBUFFER) and counters (INFO stats).
pub struct ReplyBufferPolicy {
    /// ms between peak resets; -1: never.
    pub peak_reset_ms: AtomicI64,
    pub resizing: AtomicBool,
    pub shrinks: AtomicU64,
    pub expands: AtomicU64,
}

impl Default for ReplyBufferPolicy {
    fn default() -> Self {
        ReplyBufferPolicy {
            peak_reset_ms: AtomicI64::new(DEFAULT_PEAK_RESET_MS),
            resizing: AtomicBool::new(true),
            shrinks: AtomicU64::new(0),
            expands: AtomicU64::new(0),
        }
    }
}

impl ReplyBufferPolicy {
    /// DEBUG REPLYBUFFER PEAK-RESET-TIME RESET: back to the default.
    pub fn reset_peak_time(&self) {
        self.peak_reset_ms.store(DEFAULT_PEAK_RESET_MS, Relaxed);
    }

    /// One cron visit of a client (Redis's clientsCronResizeOutputBuffer).
    pub fn visit(&self, rb: &ClientReplyBuffer, now_ms: u64) {
        if !self.resizing.load(Relaxed) {
            return;
        }
        let size = rb.size.load(Relaxed);
        let peak = rb.peak.load(Relaxed);
        let shrink_to = size / 2;
        let expand_to = size * 2;
        let new_size = if shrink_to >= MIN_BYTES && peak < shrink_to {
            self.shrinks.fetch_add(1, Relaxed);
            MIN_BYTES.max(peak + 1)
        } else if expand_to < REPLY_STATIC * 2 && peak == size {
            self.expands.fetch_add(1, Relaxed);
            REPLY_STATIC.min(expand_to)
        } else {
            0
        };
        let every = self.peak_reset_ms.load(Relaxed);
        if every >= 0 && now_ms.saturating_sub(rb.peak_reset_ms.load(Relaxed)) >= every as u64 {
            // Between batches nothing sits in the buffer.
            rb.peak.store(0, Relaxed);
            rb.peak_reset_ms.store(now_ms, Relaxed);
        }
        if new_size != 0 {
            rb.size.store(new_size, Relaxed);
        }
    }
}

/// What the connection's buffer may keep between batches.
pub fn capacity_for(handle: &ClientHandle) -> usize {
    handle.reply_buffer.size.load(Relaxed)
}

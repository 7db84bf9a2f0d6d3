//! Wall clock helpers and the LRU/LFU access clocks Redis keeps per object.
use std::time::{SystemTime, UNIX_EPOCH};

pub const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;

/// Whether an LFU maxmemory-policy is in force: decides what a new object's access field holds.
// Process-wide: read on every key creation inside the entry and shard code, where no store is
// reachable (a server mirrors its maxmemory-policy here).
pub static LFU_POLICY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn lfu_mode() -> bool {
    LFU_POLICY.load(std::sync::atomic::Ordering::Relaxed)
}

/// The access field of an object created at `now_ms`: an LRU clock, or under LFU the initial
/// counter. Hot paths pass the command's time instead of reading the clock again.
pub fn initial_access_at(now_ms: u64) -> u32 {
    if lfu_mode() {
        // Current minutes and Redis's LFU_INIT_VAL counter (5).
        (lfu_minutes_at(now_ms) << 8) | 5
    } else {
        lru_clock_at(now_ms)
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Seconds-resolution LRU clock wrapped to 24 bits, like Redis's LRU_CLOCK().
pub fn lru_clock() -> u32 {
    lru_clock_at(now_ms())
}

/// The LRU clock at a given unix-ms time.
#[inline]
pub fn lru_clock_at(now_ms: u64) -> u32 {
    ((now_ms / 1000) as u32) & LRU_CLOCK_MAX
}

/// Seconds since the object was last accessed, given its stored LRU clock.
pub fn idle_seconds(lru: u32) -> u64 {
    let now = lru_clock();
    if now >= lru {
        (now - lru) as u64
    } else {
        (now + (LRU_CLOCK_MAX - lru)) as u64
    }
}

/// LFU: minutes clock in 16 bits.
pub fn lfu_minutes() -> u32 {
    lfu_minutes_at(now_ms())
}

#[inline]
fn lfu_minutes_at(now_ms: u64) -> u32 {
    ((now_ms / 60_000) as u32) & 0xffff
}

/// Apply LFU decay and a logarithmic increment, as Redis does on access.
pub fn lfu_touch(
    access: u32,
    log_factor: u64,
    decay_time: u64,
    now_ms: u64,
    rng: &mut impl rand::Rng,
) -> u32 {
    let now = lfu_minutes_at(now_ms);
    let mut counter = decayed(access, decay_time, now);
    if counter < 255 {
        let base = counter.saturating_sub(5) as f64;
        let p = 1.0 / (base * log_factor as f64 + 1.0);
        if rng.gen::<f64>() < p {
            counter += 1;
        }
    }
    (now << 8) | counter as u32
}

/// The LFU counter after decay, without recording an access (OBJECT FREQ).
pub fn lfu_decayed_counter(access: u32, decay_time: u64) -> u64 {
    decayed(access, decay_time, lfu_minutes())
}

/// The counter of `access` decayed by the minutes elapsed until `now` (16-bit minutes clock).
fn decayed(access: u32, decay_time: u64, now: u32) -> u64 {
    let ldt = access >> 8;
    let counter = (access & 0xff) as u64;
    let elapsed = if now >= ldt {
        now - ldt
    } else {
        65535 - ldt + now
    } as u64;
    counter.saturating_sub(elapsed.checked_div(decay_time).unwrap_or(0))
}

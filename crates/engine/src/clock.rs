//! Wall clock helpers and the LRU/LFU access clocks Redis keeps per object.
use std::time::{SystemTime, UNIX_EPOCH};

pub const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;

/// Whether an LFU maxmemory-policy is in force: decides what a new object's access field holds.
pub static LFU_POLICY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn lfu_mode() -> bool {
    LFU_POLICY.load(std::sync::atomic::Ordering::Relaxed)
}

/// The access field of a newly created object: an LRU clock, or under LFU the initial counter.
pub fn initial_access() -> u32 {
    if lfu_mode() {
        lfu_initial()
    } else {
        lru_clock()
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
    ((now_ms() / 1000) as u32) & LRU_CLOCK_MAX
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
    ((now_ms() / 60_000) as u32) & 0xffff
}

/// A fresh object's LFU field: current minutes, counter LFU_INIT_VAL (5).
pub fn lfu_initial() -> u32 {
    (lfu_minutes() << 8) | 5
}

/// Apply LFU decay and a logarithmic increment, as Redis does on access.
pub fn lfu_touch(access: u32, log_factor: u64, decay_time: u64, rng: &mut impl rand::Rng) -> u32 {
    let mut counter = lfu_decayed_counter(access, decay_time);
    if counter < 255 {
        let base = counter.saturating_sub(5) as f64;
        let p = 1.0 / (base * log_factor as f64 + 1.0);
        if rng.gen::<f64>() < p {
            counter += 1;
        }
    }
    (lfu_minutes() << 8) | counter as u32
}

/// The LFU counter after decay, without recording an access (OBJECT FREQ).
pub fn lfu_decayed_counter(access: u32, decay_time: u64) -> u64 {
    let ldt = access >> 8;
    let counter = (access & 0xff) as u64;
    let now = lfu_minutes();
    let elapsed = if now >= ldt {
        now - ldt
    } else {
        65535 - ldt + now
    } as u64;
    counter.saturating_sub(elapsed.checked_div(decay_time).unwrap_or(0))
}

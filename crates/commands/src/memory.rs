//! Process memory figures from jemalloc (the server's global allocator), as INFO memory needs.

/// (allocated, active, resident) bytes; zeros when jemalloc stats are unavailable.
pub fn jemalloc_stats() -> (u64, u64, u64) {
    use tikv_jemalloc_ctl::{epoch, stats};
    if epoch::advance().is_err() {
        return (0, 0, 0);
    }
    let a = stats::allocated::read().unwrap_or(0) as u64;
    let c = stats::active::read().unwrap_or(0) as u64;
    let r = stats::resident::read().unwrap_or(0) as u64;
    (a, c, r)
}

/// Resident set size of the process from /proc (used_memory_rss).
pub fn rss_bytes() -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

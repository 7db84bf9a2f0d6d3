//! Statistics. Each worker thread owns one `ThreadStats` and is its only writer, so counting a
//! command costs plain loads and stores, no contended atomics; INFO sums over all threads.

use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// A counter with one writer: increments are load + store (no lock prefix).
#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }
    /// Take back `n` added earlier (never below zero, should a reset come in between).
    pub fn sub(&self, n: u64) {
        self.0
            .store(self.0.load(Relaxed).saturating_sub(n), Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
    pub fn reset(&self) {
        self.0.store(0, Relaxed);
    }
}

/// Log-linear latency histogram (microseconds): 2 significant binary digits of sub-buckets
/// per power of two, enough for the p50/p99/p99.9 INFO latencystats reports.
pub struct Histogram {
    buckets: Box<[Counter]>,
}

const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: (0..64 * SUB).map(|_| Counter::default()).collect(),
        }
    }
}

impl Histogram {
    fn index(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros();
        let shift = msb - SUB_BITS;
        let sub = ((v >> shift) as usize) & (SUB - 1);
        ((shift + 1) as usize) * SUB + sub
    }

    /// Largest value (µs) that falls in bucket `i`.
    pub fn upper_bound(i: usize) -> u64 {
        if i < SUB {
            return i as u64;
        }
        let shift = (i / SUB - 1) as u32;
        let sub = (i % SUB) as u64;
        (((SUB as u64) | sub) << shift) + (1u64 << shift) - 1
    }

    #[inline]
    pub fn record(&self, v: u64) {
        self.buckets[Self::index(v).min(self.buckets.len() - 1)].add(1);
    }

    pub fn merge_into(&self, acc: &mut [u64]) {
        for (a, b) in acc.iter_mut().zip(self.buckets.iter()) {
            *a += b.get();
        }
    }

    pub fn reset(&self) {
        self.buckets.iter().for_each(Counter::reset);
    }

    /// Percentile value from merged bucket counts.
    pub fn percentile(counts: &[u64], p: f64) -> u64 {
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return 0;
        }
        let want = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return Self::upper_bound(i);
            }
        }
        Self::upper_bound(counts.len() - 1)
    }

    pub fn slots() -> usize {
        64 * SUB
    }
}

#[derive(Default)]
pub struct CmdStats {
    pub calls: Counter,
    pub usec: Counter,
    pub rejected: Counter,
    pub failed: Counter,
    pub latency: std::sync::OnceLock<Histogram>,
}

/// Counters of one worker thread.
pub struct ThreadStats {
    pub cmds: Box<[CmdStats]>,
    pub commands_processed: Counter,
    pub keyspace_hits: Counter,
    pub keyspace_misses: Counter,
    pub net_input_bytes: Counter,
    pub net_output_bytes: Counter,
    pub dirty: Counter,
    pub total_error_replies: Counter,
    pub unexpected_error_replies: Counter,
    pub expired_stale_perc: Counter,
    /// Keys evicted for maxmemory before this thread's commands.
    pub evicted_keys: Counter,
}

impl ThreadStats {
    fn new(ncmds: usize) -> ThreadStats {
        ThreadStats {
            cmds: (0..ncmds).map(|_| CmdStats::default()).collect(),
            commands_processed: Counter::default(),
            keyspace_hits: Counter::default(),
            keyspace_misses: Counter::default(),
            net_input_bytes: Counter::default(),
            net_output_bytes: Counter::default(),
            dirty: Counter::default(),
            total_error_replies: Counter::default(),
            unexpected_error_replies: Counter::default(),
            expired_stale_perc: Counter::default(),
            evicted_keys: Counter::default(),
        }
    }

    fn reset(&self) {
        for c in self.cmds.iter() {
            c.calls.reset();
            c.usec.reset();
            c.rejected.reset();
            c.failed.reset();
            if let Some(h) = c.latency.get() {
                h.reset();
            }
        }
        self.commands_processed.reset();
        self.keyspace_hits.reset();
        self.keyspace_misses.reset();
        self.net_input_bytes.reset();
        self.net_output_bytes.reset();
        self.total_error_replies.reset();
        self.unexpected_error_replies.reset();
        self.evicted_keys.reset();
    }
}

/// All threads' stats plus the rare, shared ones (error codes).
#[derive(Default)]
pub struct StatsRegistry {
    threads: Mutex<Vec<Arc<ThreadStats>>>,
    ncmds: std::sync::OnceLock<usize>,
    pub errors: Mutex<BTreeMap<String, u64>>,
}

// Per thread by nature: this thread's counters, found without a lock. Not keyed by registry:
// a thread serving two servers would count for the first one only (one server per process today).
thread_local! {
    static LOCAL: RefCell<Option<Arc<ThreadStats>>> = const { RefCell::new(None) };
}

/// Redis stops tracking new error codes past this many distinct ones.
const MAX_ERROR_CODES: usize = 128;

impl StatsRegistry {
    pub fn set_command_count(&self, n: usize) {
        let _ = self.ncmds.set(n);
    }

    /// This thread's stats, created and registered on first use.
    pub fn local(&self) -> Arc<ThreadStats> {
        LOCAL.with(|l| {
            let mut l = l.borrow_mut();
            if let Some(s) = l.as_ref() {
                return s.clone();
            }
            let s = Arc::new(ThreadStats::new(*self.ncmds.get().unwrap_or(&0)));
            self.threads.lock().push(s.clone());
            *l = Some(s.clone());
            s
        })
    }

    pub fn threads(&self) -> Vec<Arc<ThreadStats>> {
        self.threads.lock().clone()
    }

    pub fn sum(&self, f: impl Fn(&ThreadStats) -> u64) -> u64 {
        self.threads.lock().iter().map(|t| f(t)).sum()
    }

    pub fn record_error(&self, code: &str) {
        let mut e = self.errors.lock();
        if let Some(c) = e.get_mut(code) {
            *c += 1;
        } else if e.len() < MAX_ERROR_CODES {
            e.insert(code.to_string(), 1);
        }
    }

    pub fn reset(&self) {
        for t in self.threads.lock().iter() {
            t.reset();
        }
        self.errors.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_percentiles() {
        let h = Histogram::default();
        for v in 1..=1000 {
            h.record(v);
        }
        let mut acc = vec![0; Histogram::slots()];
        h.merge_into(&mut acc);
        let p50 = Histogram::percentile(&acc, 50.0);
        assert!((480..=540).contains(&p50), "{p50}");
        let p99 = Histogram::percentile(&acc, 99.0);
        assert!((980..=1060).contains(&p99), "{p99}");
    }
}

//! A KEYDB.CRON job: a Lua script with its keys and arguments, run once or every `interval_ms`.
//!
//! Stored as a key of its own type (TYPE `cron`), so DEL cancels it and it persists and
//! replicates like any key. The job runs at `start_ms + interval_ms`, as KeyDB's does; a
//! repeating job then moves `start_ms` on by whole intervals, past the present.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronJob {
    pub script: Box<[u8]>,
    /// The schedule's origin, Unix ms: the next run is one interval after it.
    pub start_ms: u64,
    pub interval_ms: u64,
    pub keys: Vec<Box<[u8]>>,
    pub args: Vec<Box<[u8]>>,
    /// SINGLE: run once, then the key goes.
    pub single: bool,
}

impl CronJob {
    /// When the job runs next (Unix ms).
    pub fn next_run(&self) -> u64 {
        self.start_ms.saturating_add(self.interval_ms)
    }

    /// After a run at `now_ms`: the origin moves one interval on, and on by as many more as
    /// it takes for the next run to be after `now_ms` (a job that missed runs, say after a
    /// restart, runs once, not once per missed interval).
    pub fn advance(&mut self, now_ms: u64) {
        self.start_ms = self.start_ms.saturating_add(self.interval_ms);
        if self.start_ms < now_ms {
            let behind = now_ms - self.start_ms;
            let steps = behind / self.interval_ms + 1;
            self.start_ms = self
                .start_ms
                .saturating_add(steps.saturating_mul(self.interval_ms));
        }
    }

    /// The KEYDB.CRON command that recreates the job at `key`, its start time spelled out (what
    /// replicas, the AOF and its rewrite get, so that every copy keeps one schedule).
    pub fn command(&self, key: &[u8]) -> Vec<Vec<u8>> {
        let mode: &[u8] = if self.single { b"SINGLE" } else { b"REPEAT" };
        let mut argv = vec![
            b"KEYDB.CRON".to_vec(),
            key.to_vec(),
            mode.to_vec(),
            self.start_ms.to_string().into_bytes(),
            self.interval_ms.to_string().into_bytes(),
            self.script.to_vec(),
            self.keys.len().to_string().into_bytes(),
        ];
        argv.extend(self.keys.iter().chain(&self.args).map(|s| s.to_vec()));
        argv
    }

    pub fn heap_size(&self) -> usize {
        let strings = |v: &[Box<[u8]>]| v.iter().map(|s| s.len() + 16).sum::<usize>();
        self.script.len() + strings(&self.keys) + strings(&self.args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(start: u64, interval: u64) -> CronJob {
        CronJob {
            script: b"return 1".to_vec().into(),
            start_ms: start,
            interval_ms: interval,
            keys: Vec::new(),
            args: Vec::new(),
            single: false,
        }
    }

    #[test]
    fn advance_keeps_the_cadence_and_skips_missed_runs() {
        let mut j = job(1000, 100);
        assert_eq!(j.next_run(), 1100);
        j.advance(1100);
        assert_eq!(j.next_run(), 1200);
        // Far behind: one run now, the next on the cadence after now.
        j.advance(5050);
        assert!(j.start_ms >= 5050 && j.next_run() > 5050);
        assert_eq!((j.next_run() - 1000) % 100, 0);
    }
}

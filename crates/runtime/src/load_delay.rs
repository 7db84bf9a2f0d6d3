//! `key-load-delay`, Redis's hidden test setting: a pause after every key (RDB, from a file or
//! from the master's socket) or command (AOF) loaded, so that a test can watch a server while
//! it is still loading (-LOADING replies, `loading:1`, a replica held mid-load, a restarted
//! master that Sentinel must see as rebooting).

use std::time::Duration;

use crate::server::Server;

/// Keys between two readings of the setting while it is 0 (reading it costs a config lookup).
const RECHECK_KEYS: u64 = 1024;

/// The pause to take after each loaded key. The setting is read again as the load goes (at
/// each key while it pauses), so a CONFIG SET during a load applies to it, as in Redis: the
/// suite sets it back to 0 to let a held replica finish.
pub struct KeyLoadDelay<'a> {
    srv: &'a Server,
    /// Positive: sleep that many microseconds after each key. Negative: sleep 1 µs once
    /// every `-usec` keys (Redis sleeps with probability 1/-usec). Zero: no pause.
    usec: i64,
    keys: u64,
}

impl<'a> KeyLoadDelay<'a> {
    pub fn from_config(srv: &'a Server) -> Self {
        KeyLoadDelay {
            srv,
            usec: srv.config.get_i64("key-load-delay"),
            keys: 0,
        }
    }

    pub fn after_key(&mut self) {
        self.keys += 1;
        if self.usec != 0 || self.keys.is_multiple_of(RECHECK_KEYS) {
            self.usec = self.srv.config.get_i64("key-load-delay");
        }
        match self.usec {
            0 => {}
            usec if usec > 0 => std::thread::sleep(Duration::from_micros(usec as u64)),
            usec => {
                if self.keys.is_multiple_of(usec.unsigned_abs()) {
                    std::thread::sleep(Duration::from_micros(1));
                }
            }
        }
    }
}

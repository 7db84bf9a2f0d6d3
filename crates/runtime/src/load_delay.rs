//! `key-load-delay`, Redis's hidden test setting: a pause after every key (RDB) or command
//! (AOF) loaded, so that a test can watch a server while it is still loading (-LOADING
//! replies, `loading:1`, a restarted master that Sentinel must see as rebooting).

use std::time::Duration;

use crate::server::Server;

/// The pause to take after each loaded key, read once when a load starts (as the setting
/// comes from the configuration file or an earlier CONFIG SET).
pub struct KeyLoadDelay {
    /// Positive: sleep that many microseconds after each key. Negative: sleep 1 µs once
    /// every `-usec` keys (Redis sleeps with probability 1/-usec). Zero: no pause.
    usec: i64,
    keys: u64,
}

impl KeyLoadDelay {
    pub fn from_config(srv: &Server) -> Self {
        KeyLoadDelay {
            usec: srv.config.get_i64("key-load-delay"),
            keys: 0,
        }
    }

    pub fn after_key(&mut self) {
        match self.usec {
            0 => {}
            usec if usec > 0 => std::thread::sleep(Duration::from_micros(usec as u64)),
            usec => {
                self.keys += 1;
                if self.keys.is_multiple_of(usec.unsigned_abs()) {
                    std::thread::sleep(Duration::from_micros(1));
                }
            }
        }
    }
}

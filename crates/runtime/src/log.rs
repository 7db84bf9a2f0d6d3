//! The server's log as the command layer sees it: the server crate owns the log file (and
//! `loglevel`, `logfile`) and installs its writer at start-up.

use std::sync::OnceLock;

// Process-wide: the log goes to the process's stderr / logfile, and is written from code that
// has no server at hand (Lua's redis.log, start-up, background threads).
static LOGGER: OnceLock<fn(u8, &str)> = OnceLock::new();

/// Redis's levels: 0 debug, 1 verbose, 2 notice, 3 warning.
pub const VERBOSE: u8 = 1;
pub const NOTICE: u8 = 2;
pub const WARNING: u8 = 3;

/// Install the server's log writer.
pub fn set_logger(f: fn(u8, &str)) {
    let _ = LOGGER.set(f);
}

/// Log `msg` at `level` (to stderr before a writer is installed: tests, tools).
pub fn write(level: u8, msg: &str) {
    match LOGGER.get() {
        Some(f) => f(level, msg),
        None => eprintln!("{msg}"),
    }
}

pub fn notice(msg: &str) {
    write(NOTICE, msg);
}

pub fn warning(msg: &str) {
    write(WARNING, msg);
}

//! Redis-style log lines (`pid:M 22 Nov 2026 02:22:34.123 * message`) to stdout or `logfile`.

use parking_lot::Mutex;
use std::io::Write;

// Process-wide by nature: the log file (or stdout) and its level belong to the process, and
// lines are written from everywhere, start-up and panics included, with no server at hand.
static SINK: Mutex<Option<std::fs::File>> = Mutex::new(None);
// Process-wide with SINK (loglevel applies to the one log).
static LEVEL: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(2);
/// The server whose role the line prefix shows. The log file belongs to the process (one
/// binary, one server), so it is process state; lines written before the server exists say `M`.
// Process-wide with SINK; a Weak, so the log never keeps the server alive.
static SERVER: std::sync::OnceLock<std::sync::Weak<tern_runtime::Server>> =
    std::sync::OnceLock::new();

/// Name the server whose role (`M`/`S`) log lines show.
pub fn set_server(srv: &std::sync::Arc<tern_runtime::Server>) {
    let _ = SERVER.set(std::sync::Arc::downgrade(srv));
}

pub const DEBUG: u8 = 0;
pub const VERBOSE: u8 = 1;
pub const NOTICE: u8 = 2;
pub const WARNING: u8 = 3;

pub fn init(logfile: &str, level: &str) -> std::io::Result<()> {
    if !logfile.is_empty() {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(logfile)?;
        *SINK.lock() = Some(f);
    }
    LEVEL.store(level_of(level), std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

fn level_of(name: &str) -> u8 {
    match name {
        "debug" => DEBUG,
        "verbose" => VERBOSE,
        "warning" => WARNING,
        "nothing" => 9,
        _ => NOTICE,
    }
}

pub fn log(level: u8, msg: &str) {
    if level < LEVEL.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let mark = ['.', '-', '*', '#'][level.min(3) as usize];
    let now = tern_engine::clock::now_ms();
    let line = format!(
        "{}:{} {} {} {}\n",
        std::process::id(),
        role_char(),
        format_time(now),
        mark,
        msg
    );
    raw(&line);
}

/// The role in the line prefix, as Redis: `M` master, `S` replica.
fn role_char() -> char {
    let replica = SERVER
        .get()
        .and_then(|w| w.upgrade())
        .is_some_and(|srv| srv.master_link.is_replica());
    if replica {
        'S'
    } else {
        'M'
    }
}

/// A crash report's line: as `log`, but a log lock held by the crashing thread (or one that
/// stopped) is waited for only briefly before writing to stdout without it.
pub fn crash_line(level: u8, msg: &str) {
    let line = format!(
        "{}:{} {} {} {}\n",
        std::process::id(),
        role_char(),
        format_time(tern_engine::clock::now_ms()),
        ['.', '-', '*', '#'][level.min(3) as usize],
        msg
    );
    crash_raw(&line);
}

/// `raw` for a crash report (see `crash_line`).
pub fn crash_raw(text: &str) {
    match SINK.try_lock_for(std::time::Duration::from_millis(200)) {
        Some(mut sink) => match sink.as_mut() {
            Some(f) => {
                let _ = f.write_all(text.as_bytes());
            }
            None => {
                let _ = std::io::stdout().write_all(text.as_bytes());
                let _ = std::io::stdout().flush();
            }
        },
        None => {
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
    }
}

/// Text written as it is, without the line prefix (Redis's logo).
pub fn raw(text: &str) {
    let mut sink = SINK.lock();
    match sink.as_mut() {
        Some(f) => {
            let _ = f.write_all(text.as_bytes());
        }
        None => {
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
    }
}

/// `22 Nov 2026 02:22:34.123` in UTC.
fn format_time(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{:02} {} {} {:02}:{:02}:{:02}.{:03}",
        d,
        MONTHS[(m - 1) as usize],
        y,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[macro_export]
macro_rules! notice {
    ($($t:tt)*) => { $crate::log::log($crate::log::NOTICE, &format!($($t)*)) };
}
#[macro_export]
macro_rules! warning {
    ($($t:tt)*) => { $crate::log::log($crate::log::WARNING, &format!($($t)*)) };
}

/// Set once `Server initialized` is logged (the port listens).
// Process-wide with SINK: a fact about the process's log (what it printed), read by start-up.
static INITIALIZED: (parking_lot::Mutex<bool>, parking_lot::Condvar) =
    (parking_lot::const_mutex(false), parking_lot::Condvar::new());

/// Log `Server initialized`, once the port listens: clients (and Redis's suite) connect on
/// that line, as with Redis, which binds before it.
pub fn server_initialized() {
    log(NOTICE, "Server initialized");
    *INITIALIZED.0.lock() = true;
    INITIALIZED.1.notify_all();
}

/// Before exiting on a fatal loading error: let `Server initialized` come first (or `limit`
/// pass), so the log reads as Redis's (started, then failed loading).
pub fn wait_initialized(limit: std::time::Duration) {
    let mut done = INITIALIZED.0.lock();
    if !*done {
        let _ = INITIALIZED.1.wait_for(&mut done, limit);
    }
}

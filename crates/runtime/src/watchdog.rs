//! The software watchdog (`watchdog-period`, milliseconds; 0 is off), as Redis's: work that
//! Redis would do on its event loop (a command, loading a master's payload) and that runs
//! longer than the period is reported in the log, `--- WATCHDOG TIMER EXPIRED ---` with the
//! thread, what it was doing and its stack.
//!
//! Redis arms SIGALRM and reports from the handler if its event loop has not come back in
//! time. tern has many threads: each one doing watched work marks itself busy (`busy`, one
//! relaxed load when the watchdog is off); a monitor thread finds one busy past the period
//! and sends it SIGALRM, whose handler records that thread's stack. As in Redis the signal
//! interrupts what the thread is blocked in (a read gets EINTR and is retried), and one
//! stretch of work is reported once.

use crate::server::Server;
use parking_lot::Mutex;
use std::cell::{RefCell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// The watched threads, owned by the server (`Server::watchdog`).
#[derive(Default)]
pub struct Watchdog {
    threads: Mutex<Vec<Weak<Slot>>>,
}

/// Threads mark their work while watchdog-period > 0 (one relaxed load of the config's
/// mirror: CONFIG SET applies to the next stretch of work at once).
fn enabled(srv: &Server) -> bool {
    srv.config.hot.watchdog_period.load(Relaxed) > 0
}

/// One thread's state as the monitor sees it.
struct Slot {
    thread: libc::pthread_t,
    name: String,
    /// When the current stretch of work began (ms since `epoch`, +1); 0 while idle.
    busy_since: AtomicU64,
    /// Counts stretches of work: each is reported at most once.
    stretch: AtomicU64,
    reported: AtomicU64,
    /// What the thread does: a static description, or a command's name (its first bytes,
    /// copied without a lock: a report racing a new command may show a mixed name).
    what: [AtomicU64; NAME_WORDS],
    what_len: AtomicUsize,
    /// Held while the thread may be signalled, and by the thread as it exits: a signal
    /// never goes to a thread that is gone.
    alive: Mutex<bool>,
    epoch: Instant,
}

const NAME_WORDS: usize = 8;

thread_local! {
    /// This thread's slot (made the first time it does watched work with the watchdog on).
    static SLOT: RefCell<Option<SlotOwner>> = const { RefCell::new(None) };
}

/// Marks the slot gone when its thread exits.
struct SlotOwner(Arc<Slot>);

impl Drop for SlotOwner {
    fn drop(&mut self) {
        *self.0.alive.lock() = false;
    }
}

/// A stretch of watched work on this thread; it ends when dropped.
pub struct Busy(Option<Arc<Slot>>);

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(slot) = &self.0 {
            slot.busy_since.store(0, Release);
        }
    }
}

/// This thread begins work described by `what` (a command's name, or what a long job does).
pub fn busy(srv: &Server, what: &[u8]) -> Busy {
    if !enabled(srv) {
        return Busy(None);
    }
    let slot = SLOT.with(|s| {
        s.borrow_mut()
            .get_or_insert_with(|| {
                let slot = Arc::new(Slot {
                    // SAFETY: pthread_self has no preconditions.
                    thread: unsafe { libc::pthread_self() },
                    name: std::thread::current()
                        .name()
                        .unwrap_or("unnamed")
                        .to_string(),
                    busy_since: AtomicU64::new(0),
                    stretch: AtomicU64::new(0),
                    reported: AtomicU64::new(0),
                    what: Default::default(),
                    what_len: AtomicUsize::new(0),
                    alive: Mutex::new(true),
                    epoch: Instant::now(),
                });
                let mut threads = srv.watchdog.threads.lock();
                threads.retain(|w| w.strong_count() > 0);
                threads.push(Arc::downgrade(&slot));
                SlotOwner(slot)
            })
            .0
            .clone()
    });
    let mut words = [0u64; NAME_WORDS];
    let n = what.len().min(NAME_WORDS * 8);
    for (i, b) in what[..n].iter().enumerate() {
        words[i / 8] |= (*b as u64) << ((i % 8) * 8);
    }
    for (w, v) in slot.what.iter().zip(words) {
        w.store(v, Relaxed);
    }
    slot.what_len.store(n, Relaxed);
    slot.stretch.fetch_add(1, Relaxed);
    slot.busy_since
        .store(slot.epoch.elapsed().as_millis() as u64 + 1, Release);
    Busy(Some(slot))
}

/// This thread begins running the command `args` (an empty one is still watched).
pub fn busy_command(srv: &Server, args: &crate::args::Args) -> Busy {
    if !enabled(srv) {
        return Busy(None);
    }
    busy(srv, if args.is_empty() { b"" } else { &args[0] })
}

impl Slot {
    fn what(&self) -> String {
        let mut bytes = Vec::with_capacity(NAME_WORDS * 8);
        for w in &self.what {
            bytes.extend_from_slice(&w.load(Relaxed).to_le_bytes());
        }
        bytes.truncate(self.what_len.load(Relaxed));
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

// The signal handler's side: one report at a time (the monitor asks, waits, reads).
const MAX_FRAMES: usize = 64;

struct Frames(UnsafeCell<[*mut libc::c_void; MAX_FRAMES]>);
// SAFETY: written only by the handler while the monitor waits for CAPTURED, read after it.
unsafe impl Sync for Frames {}

static FRAMES: Frames = Frames(UnsafeCell::new([std::ptr::null_mut(); MAX_FRAMES]));
static FRAME_COUNT: AtomicUsize = AtomicUsize::new(0);
/// The monitor asked for a stack (a SIGALRM from elsewhere is ignored).
static WANTED: AtomicBool = AtomicBool::new(false);
static CAPTURED: AtomicBool = AtomicBool::new(false);

extern "C" {
    // glibc's execinfo, as Redis uses it.
    fn backtrace(buffer: *mut *mut libc::c_void, size: libc::c_int) -> libc::c_int;
    fn backtrace_symbols(
        buffer: *const *mut libc::c_void,
        size: libc::c_int,
    ) -> *mut *mut libc::c_char;
}

extern "C" fn on_sigalrm(_: libc::c_int) {
    if !WANTED.swap(false, AcqRel) {
        // Not the watchdog's (kill -ALRM, or the crash report's alarm that ends a report
        // that hangs): what SIGALRM does without a handler, it ends the process.
        // SAFETY: sigaction and raise are async-signal-safe; the signal stays blocked until
        // this handler returns, then it acts as by default.
        unsafe {
            set_action(libc::SIG_DFL);
            libc::raise(libc::SIGALRM);
        }
        return;
    }
    // SAFETY: FRAMES is ours until CAPTURED is set; backtrace writes at most MAX_FRAMES
    // entries (it was called once before, so it allocates nothing here).
    let n = unsafe { backtrace(FRAMES.0.get().cast(), MAX_FRAMES as libc::c_int) };
    FRAME_COUNT.store(n.max(0) as usize, Relaxed);
    CAPTURED.store(true, Release);
}

/// Install (or, with `on` false, remove) the SIGALRM handler. Removed, SIGALRM acts as by
/// default again (Redis ignores it then; the crash report's alarm relies on it here).
fn set_handler(on: bool) {
    let action = if on {
        on_sigalrm as extern "C" fn(libc::c_int) as usize
    } else {
        libc::SIG_DFL
    };
    // SAFETY: installs a handler that only touches atomics and the frame buffer, or SIG_DFL.
    unsafe { set_action(action) };
}

/// SA_RESTART: other threads' restartable calls carry on; a socket read with a timeout
/// still sees EINTR, as in Redis.
///
/// # Safety
/// `action` is SIG_DFL, SIG_IGN or an async-signal-safe handler.
unsafe fn set_action(action: libc::sighandler_t) {
    let mut act: libc::sigaction = std::mem::zeroed();
    act.sa_sigaction = action;
    act.sa_flags = libc::SA_RESTART;
    libc::sigemptyset(&mut act.sa_mask);
    libc::sigaction(libc::SIGALRM, &act, std::ptr::null_mut());
}

/// The effective period: at least two cron ticks, as Redis enforces.
fn period(srv: &Server) -> Option<Duration> {
    let ms = srv.config.hot.watchdog_period.load(Relaxed) as i64;
    if ms <= 0 {
        return None;
    }
    let hz = srv.config.get_i64("hz").clamp(1, 500);
    Some(Duration::from_millis(ms.max(1000 / hz * 2) as u64))
}

/// The monitor thread: follows `watchdog-period` (CONFIG SET turns it on and off).
pub fn start(srv: &Arc<Server>) {
    let srv = Arc::downgrade(srv);
    let _ = std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || {
            let mut on = false;
            loop {
                let Some(srv) = srv.upgrade() else { return };
                let period = period(&srv);
                if period.is_some() != on {
                    on = period.is_some();
                    if on {
                        // The first call loads the unwinder: not in the handler.
                        let mut warm = [std::ptr::null_mut(); 4];
                        // SAFETY: a buffer of 4 entries.
                        unsafe { backtrace(warm.as_mut_ptr(), 4) };
                    }
                    set_handler(on);
                }
                if let Some(period) = period {
                    check(&srv, period);
                }
                drop(srv);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
}

/// Report every thread busy past `period` in a stretch not reported yet.
fn check(srv: &Server, period: Duration) {
    let threads: Vec<Arc<Slot>> = srv
        .watchdog
        .threads
        .lock()
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for slot in threads {
        let since = slot.busy_since.load(Acquire);
        if since == 0 {
            continue;
        }
        let busy_ms = (slot.epoch.elapsed().as_millis() as u64 + 1).saturating_sub(since);
        let stretch = slot.stretch.load(Relaxed);
        if busy_ms < period.as_millis() as u64 || slot.reported.load(Relaxed) == stretch {
            continue;
        }
        slot.reported.store(stretch, Relaxed);
        let frames = {
            let alive = slot.alive.lock();
            if !*alive {
                continue;
            }
            CAPTURED.store(false, Relaxed);
            WANTED.store(true, Release);
            // SAFETY: the thread is alive while `alive` is held (it clears it on exit).
            let sent = unsafe { libc::pthread_kill(slot.thread, libc::SIGALRM) } == 0;
            drop(alive);
            let deadline = Instant::now() + Duration::from_millis(500);
            while sent && !CAPTURED.load(Acquire) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            WANTED.store(false, Relaxed);
            if CAPTURED.load(Acquire) {
                symbols()
            } else {
                vec!["(the thread did not answer the signal)".to_string()]
            }
        };
        crate::log::warning(&format!(
            "\n--- WATCHDOG TIMER EXPIRED ---\nThread {} busy for {busy_ms} ms (watchdog-period {} ms): {}\n\n------ STACK TRACE ------\nBacktrace (resolve with addr2line -f -C -e <binary> <+offsets>):\n{}\n--------\n",
            slot.name,
            period.as_millis(),
            slot.what(),
            frames.join("\n")
        ));
    }
}

/// The captured frames as glibc names them (`binary(function+offset) [address]`; the
/// addresses resolve with `addr2line -e tern-server`).
fn symbols() -> Vec<String> {
    let n = FRAME_COUNT.load(Relaxed).min(MAX_FRAMES);
    // SAFETY: the handler finished writing (CAPTURED was read with Acquire) and nobody
    // writes again until the next request; backtrace_symbols returns one malloc'ed block.
    unsafe {
        let frames = FRAMES.0.get().cast::<*mut libc::c_void>();
        let names = backtrace_symbols(frames, n as libc::c_int);
        if names.is_null() {
            return (0..n).map(|i| format!("{:?}", *frames.add(i))).collect();
        }
        let out = (0..n)
            .map(|i| {
                std::ffi::CStr::from_ptr(*names.add(i))
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        libc::free(names.cast());
        out
    }
}

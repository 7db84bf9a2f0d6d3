//! The crash report: on a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) the log gets
//! Redis's bug-report block (the `crashed by signal` line operators and Redis's own suite grep
//! for, who sent the signal, a stack trace), then the signal is raised again with its default
//! action so the process still dies of it (and dumps core where enabled). A panic is logged
//! with its location and stack trace as well.

use crate::log;

const FATAL_SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
];

/// The signal stack a crash report runs on. Symbolizing the stack trace takes far more than
/// the few KiB std gives each thread for its overflow handler: on that, the report itself
/// overflowed and the process died before the trace was written.
const SIGNAL_STACK: usize = 1 << 20;

/// Give the calling thread a signal stack large enough for the crash report (the main thread
/// at start-up, each worker as it starts; other threads keep std's and would log a report
/// without its trace). Mapped lazily: only the pages a report touches are ever resident.
pub fn use_large_signal_stack() {
    // SAFETY: a fresh anonymous mapping, handed to sigaltstack for this thread; it is never
    // unmapped (the threads that take one live as long as the process).
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            SIGNAL_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return;
        }
        let ss = libc::stack_t {
            ss_sp: p,
            ss_flags: 0,
            ss_size: SIGNAL_STACK,
        };
        if libc::sigaltstack(&ss, std::ptr::null_mut()) != 0 {
            libc::munmap(p, SIGNAL_STACK);
        }
    }
}

/// Install the fatal-signal handlers and the panic hook (once, at start-up).
pub fn install() {
    use_large_signal_stack();
    // SAFETY: plain sigaction calls with a handler of the signature SA_SIGINFO expects.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_fatal_signal as *const () as usize;
        libc::sigemptyset(&mut act.sa_mask);
        // On the alternate stack (a stack overflow is a SIGSEGV too); the handler runs once.
        act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER | libc::SA_RESETHAND;
        for sig in FATAL_SIGNALS {
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        log::crash_line(
            log::WARNING,
            &format!(
                "------ PANIC ------ thread '{}' panicked: {info}",
                thread.name().unwrap_or("?")
            ),
        );
        log_stack_trace();
    }));
}

extern "C" fn on_fatal_signal(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    _ctx: *mut libc::c_void,
) {
    // A report that hangs (a lock held by the crashed thread) must not keep the process up.
    // SAFETY: alarm is async-signal-safe.
    unsafe { libc::alarm(10) };
    log::crash_raw("\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n");
    // SAFETY: the kernel hands the handler a valid siginfo.
    let (code, addr, pid, uid) = unsafe {
        let i = &*info;
        (i.si_code, i.si_addr(), i.si_pid(), i.si_uid())
    };
    log::crash_line(
        log::WARNING,
        &format!(
            "tern {} (Redis {} compatible) crashed by signal: {sig}, si_code: {code}",
            env!("CARGO_PKG_VERSION"),
            tern_runtime::REDIS_VERSION
        ),
    );
    if sig == libc::SIGSEGV || sig == libc::SIGBUS {
        log::crash_line(log::WARNING, &format!("Accessing address: {addr:p}"));
    }
    if code == libc::SI_USER && pid != -1 {
        log::crash_line(log::WARNING, &format!("Killed by PID: {pid}, UID: {uid}"));
    }
    let thread = std::thread::current();
    log::crash_line(
        log::WARNING,
        &format!("Crashed in thread '{}'", thread.name().unwrap_or("?")),
    );
    log_stack_trace();
    log::crash_raw(
        "\n=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n       Please report the crash with the log above.\n\n",
    );
    // Die of the same signal, with its default action (SA_RESETHAND restored it).
    // SAFETY: raise is async-signal-safe.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn log_stack_trace() {
    let bt = std::backtrace::Backtrace::force_capture();
    log::crash_raw(&format!("\n------ STACK TRACE ------\n{bt}\n"));
}

//! The io_uring network path (`io-backend io_uring`): one ring per worker thread, multishot
//! receives into a provided-buffer ring, sends batched into one `io_uring_enter` when the
//! worker is about to sleep, and (Linux 6.1+) the kernel's completion work deferred to that
//! same enter. `io-backend auto` uses it where the kernel allows it and falls
//! back to epoll (tokio's own reactor) elsewhere.

mod buffers;
mod ring;
mod stream;

pub use stream::UringStream;

use io_uring::{opcode, types};
use ring::TaskRun;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// How client sockets are served.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Backend {
    Epoll,
    IoUring,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Epoll => "epoll",
            Backend::IoUring => "io_uring",
        }
    }
}

/// A test hook: set, the io_uring probe fails as on a kernel that forbids io_uring.
const FORCE_FAIL_ENV: &str = "TERN_IO_URING_PROBE_FAIL";
/// A test hook: set, the probe takes deferred task running as refused (an older kernel).
const FORCE_COOPERATIVE_ENV: &str = "TERN_IO_URING_NO_DEFER";

/// The backend the `io-backend` setting asks for, given what this kernel allows. Err: the
/// server cannot start (`io_uring` asked for, not available).
pub fn choose(setting: &str) -> Result<Backend, String> {
    match setting {
        "epoll" => Ok(Backend::Epoll),
        "io_uring" => probe()
            .map(|()| Backend::IoUring)
            .map_err(|why| format!("io-backend io_uring is not available: {why}")),
        _ => match probe() {
            Ok(()) => Ok(Backend::IoUring),
            Err(why) => {
                crate::notice!("io_uring is not available ({why}): using epoll");
                Ok(Backend::Epoll)
            }
        },
    }
}

fn describe(e: &io::Error, mode: TaskRun) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => "ENOSYS: the kernel has no io_uring".into(),
        Some(libc::EPERM) => {
            "EPERM: forbidden (a seccomp profile, or kernel.io_uring_disabled)".into()
        }
        Some(libc::EINVAL) => match mode {
            TaskRun::Deferred => format!("{e}: the kernel is too old (6.1+ needed)"),
            TaskRun::Cooperative => format!("{e}: the kernel is too old (5.19+ needed)"),
        },
        _ => e.to_string(),
    }
}

/// Can this process use io_uring the way the workers will, and how does the kernel run its
/// completion work: deferred where it can (see `TaskRun`), cooperatively otherwise (older
/// kernels), said in a log line. The workers' rings are set up as chosen here.
fn probe() -> Result<(), String> {
    if std::env::var_os(FORCE_FAIL_ENV).is_some() {
        return Err(format!("disabled by {FORCE_FAIL_ENV}"));
    }
    let deferred = if std::env::var_os(FORCE_COOPERATIVE_ENV).is_some() {
        Err(format!("disabled by {FORCE_COOPERATIVE_ENV}"))
    } else {
        probe_with(TaskRun::Deferred)
    };
    let mode = match deferred {
        Ok(()) => TaskRun::Deferred,
        Err(why) => {
            // Its failure is the reason io_uring is not available at all.
            probe_with(TaskRun::Cooperative)?;
            crate::notice!(
                "io_uring: no deferred task running ({why}): completions run at the workers' \
                 system calls (COOP_TASKRUN)"
            );
            TaskRun::Cooperative
        }
    };
    ring::set_task_run(mode);
    Ok(())
}

/// A ring set up for `mode`, the opcodes, a provided-buffer ring, and a multishot receive
/// that stays armed (checked on a socket pair). Runs on one thread (a deferred ring accepts
/// enters only from the thread that made it).
fn probe_with(mode: TaskRun) -> Result<(), String> {
    let describe = |e: io::Error| describe(&e, mode);
    let mut uring = ring::setup(mode).build(8).map_err(describe)?;
    let mut p = io_uring::Probe::new();
    uring.submitter().register_probe(&mut p).map_err(describe)?;
    for (code, name) in [
        (opcode::RecvMulti::CODE, "RECV"),
        (opcode::Send::CODE, "SEND"),
        (opcode::AsyncCancel::CODE, "ASYNC_CANCEL"),
    ] {
        if !p.is_supported(code) {
            return Err(format!("the kernel lacks the {name} operation"));
        }
    }
    let pool = buffers::BufferPool::register(&uring).map_err(describe)?;
    let (a, mut b) = std::os::unix::net::UnixStream::pair().map_err(|e| e.to_string())?;
    let recv = opcode::RecvMulti::new(types::Fd(a.as_raw_fd()), buffers::GROUP)
        .build()
        .user_data(1);
    // SAFETY: the socket and the buffer ring outlive the request (both dropped after the
    // ring's completion below, and the ring before the pool).
    unsafe { uring.submission().push(&recv) }.map_err(|e| e.to_string())?;
    io::Write::write_all(&mut b, b"x").map_err(|e| e.to_string())?;
    // Waiting for a completion also runs deferred work.
    uring.submit_and_wait(1).map_err(describe)?;
    let cqe = uring
        .completion()
        .next()
        .ok_or("no completion for the test receive")?;
    let ok = cqe.result() == 1 && io_uring::cqueue::more(cqe.flags());
    drop(uring);
    drop(pool);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "no multishot receive (result {}): the kernel is too old (6.0+ needed)",
            cqe.result()
        ))
    }
}

/// Give this worker thread its ring (inside its runtime). Err: the ring could not be set up.
pub fn start_on_worker() -> io::Result<()> {
    let ring = ring::Ring::new()?;
    let efd = ring.eventfd();
    ring::install(ring);
    // SAFETY: the eventfd belongs to the ring, which stays installed on this thread for the
    // thread's whole life: the descriptor outlives the registration.
    let watched = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(
            EventFd(efd),
            tokio::io::Interest::READABLE,
        )?
    };
    tokio::spawn(reap_on_wake(watched));
    Ok(())
}

/// The ring's eventfd as the runtime watches it (the ring owns the descriptor).
struct EventFd(RawFd);

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Completions (or, deferred, completion work) that arrive while the worker sleeps: the
/// eventfd wakes the runtime, and this task hands them out. The eventfd is never read:
/// edge-triggered, every signal is a new edge, and an unread counter costs nothing.
async fn reap_on_wake(fd: tokio::io::unix::AsyncFd<EventFd>) {
    loop {
        let Ok(mut ready) = fd.readable().await else {
            return;
        };
        ring::with_ring(|r| r.on_wake());
        ready.clear_ready();
    }
}

/// The worker is about to sleep: one submission for everything its tasks queued, and (with
/// deferred task running) the kernel's completion work for this ring run in the same enter.
pub fn on_worker_park() {
    ring::with_ring(|r| r.submit_batch());
}

/// A drain pass (see `drain`) on an io_uring worker: requests queued go in, and what clients
/// already sent is received now, not when the worker next sleeps. False on an epoll worker.
pub fn take_in_now() -> bool {
    ring::with_ring(|r| r.take_in()).is_some()
}

/// Is this thread's connections' I/O on io_uring?
pub fn active() -> bool {
    ring::active()
}

/// Bytes a socket served here received that its connection has not read yet (the socket's
/// own FIONREAD no longer counts them).
pub fn unread_bytes(fd: RawFd) -> usize {
    ring::with_ring(|r| r.unread_by_fd(fd)).unwrap_or(0)
}

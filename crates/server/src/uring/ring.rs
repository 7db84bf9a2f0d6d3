//! One io_uring per worker thread, and the state of every connection it serves. Requests are
//! queued here while the worker runs its tasks and submitted together when it is about to
//! sleep (`on_worker_park`); completions are reaped there too, and by a task the worker's
//! runtime wakes through an eventfd the ring signals.

use super::buffers::{self, BufferPool};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};

const SQ_ENTRIES: u32 = 1024;
/// Room for many multishot completions between two reaps (overflow is kept by the kernel
/// anyway, at a cost).
const CQ_ENTRIES: u32 = 8192;
/// Received buffers one connection may hold unread before its receive is cancelled (until it
/// reads): a connection that stops reading cannot take every buffer of the worker.
const HOLD_CAP: usize = 32;
/// Bytes a connection may have queued for sending before writes wait: the caller's own queue
/// (the Outbox, the output-buffer limits) then sees a slow client's backlog.
pub const SEND_BOUND: usize = 256 * 1024;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Op {
    Recv = 1,
    Send = 2,
    Cancel = 3,
}

/// A request's tag: the connection's slot, the slot's generation (a completion for an earlier
/// user of the slot is recognised and ignored) and the operation.
fn user_data(slot: u32, gen: u32, op: Op) -> u64 {
    (u64::from(gen & 0xff_ffff) << 40) | (u64::from(slot) << 8) | op as u64
}

fn decode(ud: u64) -> (usize, u32, u8) {
    (
        ((ud >> 8) & 0xffff_ffff) as usize,
        (ud >> 40) as u32,
        (ud & 0xff) as u8,
    )
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum RecvState {
    /// No receive armed.
    Idle,
    /// A multishot receive is armed.
    Armed,
    /// Its cancellation is on the way; the last completion sets Idle.
    Cancelling,
}

/// A filled buffer not read yet.
struct Received {
    bid: u16,
    len: usize,
    /// Bytes already read from it.
    off: usize,
}

struct Slot {
    gen: u32,
    in_use: bool,
    fd: RawFd,
    recv: RecvState,
    received: VecDeque<Received>,
    unread: usize,
    eof: bool,
    recv_error: Option<i32>,
    /// Waiting for a free buffer before its receive can be armed again.
    starved: bool,
    reader: Option<Waker>,
    /// The bytes of the send in flight (the kernel reads them: never touched meanwhile).
    sending: Vec<u8>,
    /// How much of `sending` the kernel took so far.
    sent: usize,
    send_in_flight: bool,
    /// Written while a send is in flight: the next send.
    queued: Vec<u8>,
    send_error: Option<i32>,
    writer: Option<Waker>,
    /// Cancellations not completed yet.
    cancels: u32,
    write_shut: bool,
    /// The stream is gone; the socket closes once no request can still refer to it.
    dropped: bool,
}

impl Slot {
    fn new(gen: u32, fd: RawFd) -> Slot {
        Slot {
            gen,
            in_use: true,
            fd,
            recv: RecvState::Idle,
            received: VecDeque::new(),
            unread: 0,
            eof: false,
            recv_error: None,
            starved: false,
            reader: None,
            sending: Vec::new(),
            sent: 0,
            send_in_flight: false,
            queued: Vec::new(),
            send_error: None,
            writer: None,
            cancels: 0,
            write_shut: false,
            dropped: false,
        }
    }

    fn send_pending(&self) -> usize {
        self.sending.len() - self.sent + self.queued.len()
    }
}

/// A submission refused for now (the completion queue is full, or the kernel is short of
/// memory): retried after the completions are reaped, not worth a log line.
fn transient(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::EAGAIN))
}

/// How the kernel runs a ring's completion work (the task work that turns data arriving on a
/// socket into a completion), chosen once at start-up by the probe.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum TaskRun {
    /// IORING_SETUP_DEFER_TASKRUN (Linux 6.1+, with SINGLE_ISSUER): the work waits on the ring
    /// until the worker enters with GETEVENTS, and then runs in one batch; arriving work only
    /// signals the eventfd (when the ring had none waiting). Every ring operation must come
    /// from the thread that made the ring: the rings are thread-locals of their workers.
    Deferred,
    /// IORING_SETUP_COOP_TASKRUN (5.19+): the work runs at the worker's next system call,
    /// whatever it is, without interrupting it while it runs; a sleeping worker is woken.
    Cooperative,
}

/// The probe's choice, read by every worker's ring (true: `TaskRun::Deferred`).
static DEFERRED: AtomicBool = AtomicBool::new(false);

pub fn set_task_run(mode: TaskRun) {
    DEFERRED.store(mode == TaskRun::Deferred, Ordering::Relaxed);
}

fn task_run() -> TaskRun {
    if DEFERRED.load(Ordering::Relaxed) {
        TaskRun::Deferred
    } else {
        TaskRun::Cooperative
    }
}

/// The ring flags for `mode` (the workers' rings and the start-up probe's). TASKRUN_FLAG with
/// deferred work: the kernel marks the submission queue while work waits, which is how the
/// worker knows it must enter again (see `Ring::work_announced`).
pub fn setup(mode: TaskRun) -> io_uring::Builder {
    let mut b = IoUring::builder();
    match mode {
        TaskRun::Deferred => {
            b.setup_single_issuer()
                .setup_defer_taskrun()
                .setup_taskrun_flag();
        }
        TaskRun::Cooperative => {
            b.setup_coop_taskrun();
        }
    }
    b
}

fn store_waker(slot: &mut Option<Waker>, cx: &Context<'_>) {
    match slot {
        Some(w) if w.will_wake(cx.waker()) => {}
        _ => *slot = Some(cx.waker().clone()),
    }
}

pub struct Ring {
    // Dropped first: the kernel instance goes before the buffer memory it used.
    uring: IoUring,
    mode: TaskRun,
    pool: BufferPool,
    /// Never read: the runtime watches it (edge-triggered) to wake on completions.
    eventfd: OwnedFd,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// Connections waiting for a free buffer, oldest first.
    starved: VecDeque<(usize, u32)>,
    /// Completions copied out of the queue, handled after it is released.
    reaped: Vec<(u64, i32, u32)>,
}

impl Ring {
    pub fn new() -> io::Result<Ring> {
        let mode = task_run();
        let uring = setup(mode).setup_cqsize(CQ_ENTRIES).build(SQ_ENTRIES)?;
        let pool = BufferPool::register(&uring)?;
        // SAFETY: eventfd has no memory arguments; the result is checked.
        let efd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if efd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor we just created and own.
        let eventfd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(efd) };
        uring.submitter().register_eventfd(eventfd.as_raw_fd())?;
        Ok(Ring {
            uring,
            mode,
            pool,
            eventfd,
            slots: Vec::new(),
            free: Vec::new(),
            starved: VecDeque::new(),
            reaped: Vec::new(),
        })
    }

    pub fn eventfd(&self) -> RawFd {
        self.eventfd.as_raw_fd()
    }

    /// Serve socket `fd` (owned from now on; closed by the ring). Returns its slot and
    /// generation.
    pub fn open(&mut self, fd: OwnedFd) -> (usize, u32) {
        let fd = std::os::fd::IntoRawFd::into_raw_fd(fd);
        match self.free.pop() {
            Some(i) => {
                let gen = self.slots[i].gen.wrapping_add(1) & 0xff_ffff;
                self.slots[i] = Slot::new(gen, fd);
                (i, gen)
            }
            None => {
                self.slots.push(Slot::new(0, fd));
                (self.slots.len() - 1, 0)
            }
        }
    }

    /// Queue one request; a full queue is submitted first.
    fn push(&mut self, entry: squeue::Entry) {
        loop {
            // SAFETY: every request's memory (buffers, the send bytes) outlives it: see the
            // slot's `sending` and `BufferPool`.
            let pushed = unsafe { self.uring.submission().push(&entry) };
            if pushed.is_ok() {
                return;
            }
            if let Err(e) = self.uring.submit() {
                if !transient(&e) {
                    crate::warning!("io_uring submit failed: {e}");
                }
                // Completions waiting may be what blocks the submission.
                self.reap();
            }
        }
    }

    fn arm_recv(&mut self, i: usize) {
        let s = &mut self.slots[i];
        s.recv = RecvState::Armed;
        let ud = user_data(i as u32, s.gen, Op::Recv);
        let e = opcode::RecvMulti::new(types::Fd(s.fd), buffers::GROUP)
            .build()
            .user_data(ud);
        self.push(e);
    }

    fn start_send(&mut self, i: usize) {
        let s = &mut self.slots[i];
        s.send_in_flight = true;
        let rest = &s.sending[s.sent..];
        let ud = user_data(i as u32, s.gen, Op::Send);
        let e = opcode::Send::new(types::Fd(s.fd), rest.as_ptr(), rest.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(ud);
        self.push(e);
    }

    fn cancel(&mut self, i: usize, op: Op) {
        let s = &mut self.slots[i];
        s.cancels += 1;
        let target = user_data(i as u32, s.gen, op);
        let e = opcode::AsyncCancel::new(target)
            .build()
            .user_data(user_data(i as u32, s.gen, Op::Cancel));
        self.push(e);
    }

    /// A buffer is read: back to the kernel, and a connection waiting for one may arm again.
    fn release(&mut self, bid: u16) {
        self.pool.give_back(bid);
        while let Some((i, gen)) = self.starved.pop_front() {
            let s = &mut self.slots[i];
            if s.in_use && s.gen == gen && s.starved {
                s.starved = false;
                if let Some(w) = s.reader.take() {
                    w.wake();
                }
                break;
            }
        }
    }

    /// Arm the receive if it is off and may be on.
    fn keep_receiving(&mut self, i: usize) {
        let s = &mut self.slots[i];
        if s.recv != RecvState::Idle
            || s.eof
            || s.recv_error.is_some()
            || s.dropped
            || s.received.len() >= HOLD_CAP
        {
            return;
        }
        if self.pool.available() == 0 {
            // Every buffer is unread somewhere: wait for one (see `release`).
            if !s.starved {
                s.starved = true;
                let gen = s.gen;
                self.starved.push_back((i, gen));
            }
            return;
        }
        self.arm_recv(i);
    }

    pub fn poll_read(
        &mut self,
        i: usize,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let s = &mut self.slots[i];
        if s.received.is_empty() {
            if let Some(e) = s.recv_error {
                return Poll::Ready(Err(io::Error::from_raw_os_error(e)));
            }
            if s.eof {
                return Poll::Ready(Ok(()));
            }
            store_waker(&mut s.reader, cx);
            self.keep_receiving(i);
            return Poll::Pending;
        }
        while buf.remaining() > 0 {
            let s = &mut self.slots[i];
            let Some(front) = s.received.front_mut() else {
                break;
            };
            let n = buf.remaining().min(front.len - front.off);
            let bytes = self.pool.bytes(front.bid, front.len);
            buf.put_slice(&bytes[front.off..front.off + n]);
            front.off += n;
            s.unread -= n;
            if front.off == front.len {
                let bid = front.bid;
                s.received.pop_front();
                self.release(bid);
            }
        }
        self.keep_receiving(i);
        Poll::Ready(Ok(()))
    }

    /// Bytes received for socket `fd` and not read yet (0 for a socket not served here).
    pub fn unread_by_fd(&self, fd: RawFd) -> usize {
        self.slots
            .iter()
            .find(|s| s.in_use && !s.dropped && s.fd == fd)
            .map_or(0, |s| s.unread)
    }

    pub fn poll_write(
        &mut self,
        i: usize,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let s = &mut self.slots[i];
        if let Some(e) = s.send_error {
            return Poll::Ready(Err(io::Error::from_raw_os_error(e)));
        }
        if s.write_shut {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        let pending = s.send_pending();
        if pending >= SEND_BOUND {
            store_waker(&mut s.writer, cx);
            return Poll::Pending;
        }
        let take = buf.len().min(SEND_BOUND - pending);
        if s.send_in_flight {
            s.queued.extend_from_slice(&buf[..take]);
        } else if take > 0 {
            s.sending.extend_from_slice(&buf[..take]);
            self.start_send(i);
        }
        Poll::Ready(Ok(take))
    }

    /// Ready once everything written went to the socket (or failed), then the write side is
    /// shut down, as a TCP stream's shutdown does.
    pub fn poll_shutdown(&mut self, i: usize, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let s = &mut self.slots[i];
        if s.send_error.is_none() && s.send_pending() > 0 {
            store_waker(&mut s.writer, cx);
            return Poll::Pending;
        }
        if !s.write_shut {
            s.write_shut = true;
            // SAFETY: the slot's socket is open until the slot is freed.
            unsafe { libc::shutdown(s.fd, libc::SHUT_WR) };
        }
        Poll::Ready(Ok(()))
    }

    /// The stream is dropped: stop receiving, give its buffers back, and close the socket
    /// once the last request on it completed (a send in flight still goes out).
    pub fn close(&mut self, i: usize) {
        let s = &mut self.slots[i];
        s.dropped = true;
        s.reader = None;
        s.writer = None;
        s.unread = 0;
        let held: Vec<u16> = s.received.drain(..).map(|r| r.bid).collect();
        let armed = s.recv == RecvState::Armed;
        for bid in held {
            self.release(bid);
        }
        if armed {
            self.slots[i].recv = RecvState::Cancelling;
            self.cancel(i, Op::Recv);
        }
        self.free_if_done(i);
    }

    fn free_if_done(&mut self, i: usize) {
        let s = &mut self.slots[i];
        if s.in_use && s.dropped && s.recv == RecvState::Idle && !s.send_in_flight && s.cancels == 0
        {
            s.in_use = false;
            s.sending = Vec::new();
            s.queued = Vec::new();
            // SAFETY: the socket this slot owned; no request refers to it any more.
            unsafe { libc::close(s.fd) };
            self.free.push(i);
        }
    }

    /// Handle every completion waiting in the queue; returns how many there were.
    pub fn reap(&mut self) -> usize {
        let mut handled = 0;
        loop {
            {
                let mut cq = self.uring.completion();
                self.reaped
                    .extend(cq.by_ref().map(|c| (c.user_data(), c.result(), c.flags())));
            }
            if self.reaped.is_empty() {
                break;
            }
            let mut batch = std::mem::take(&mut self.reaped);
            handled += batch.len();
            for &(ud, res, flags) in &batch {
                self.complete(ud, res, flags);
            }
            batch.clear();
            self.reaped = batch;
        }
        if self.uring.submission().cq_overflow() {
            // Completions the kernel kept aside come into the queue on the next enter (the
            // crate adds GETEVENTS for them).
            let _ = self.uring.submit();
        }
        handled
    }

    fn complete(&mut self, ud: u64, res: i32, flags: u32) {
        let (i, gen, op) = decode(ud);
        let bid = cqueue::buffer_select(flags);
        if bid.is_some() {
            self.pool.taken();
        }
        let live = self.slots.get(i).is_some_and(|s| s.in_use && s.gen == gen);
        if !live {
            // Cannot happen (a slot is freed only when nothing refers to it), but a buffer
            // must never be lost.
            if let Some(b) = bid {
                self.release(b);
            }
            return;
        }
        match op {
            x if x == Op::Recv as u8 => self.received(i, res, flags, bid),
            x if x == Op::Send as u8 => self.sent(i, res),
            _ => self.slots[i].cancels -= 1,
        }
        self.free_if_done(i);
    }

    fn received(&mut self, i: usize, res: i32, flags: u32, bid: Option<u16>) {
        let more = cqueue::more(flags);
        let s = &mut self.slots[i];
        if !more {
            s.recv = RecvState::Idle;
        }
        match (res, bid) {
            (n, Some(b)) if n > 0 && !s.dropped => {
                s.received.push_back(Received {
                    bid: b,
                    len: n as usize,
                    off: 0,
                });
                s.unread += n as usize;
                if s.recv == RecvState::Armed && s.received.len() >= HOLD_CAP {
                    s.recv = RecvState::Cancelling;
                    self.cancel(i, Op::Recv);
                }
            }
            (_, Some(b)) => self.release(b),
            (0, None) => s.eof = true,
            // Out of buffers (the receive ended: armed again when one is free) or cancelled.
            (e, None) if -e == libc::ENOBUFS || -e == libc::ECANCELED => {}
            (e, None) => s.recv_error = Some(-e),
        }
        if let Some(w) = self.slots[i].reader.take() {
            w.wake();
        }
    }

    fn sent(&mut self, i: usize, res: i32) {
        let s = &mut self.slots[i];
        s.send_in_flight = false;
        if res > 0 {
            s.sent += res as usize;
            if s.sent < s.sending.len() {
                // A short send: the rest goes next, before anything written since.
                self.start_send(i);
            } else {
                s.sending.clear();
                s.sent = 0;
                std::mem::swap(&mut s.sending, &mut s.queued);
                if s.queued.capacity() > 4 * SEND_BOUND {
                    s.queued = Vec::new();
                }
                if !s.sending.is_empty() {
                    self.start_send(i);
                }
            }
        } else {
            s.send_error = Some(if res == 0 { libc::EPIPE } else { -res });
            s.sending.clear();
            s.queued.clear();
            s.sent = 0;
        }
        if let Some(w) = self.slots[i].writer.take() {
            w.wake();
        }
    }

    /// Take in now what clients already sent: an enter even with nothing to submit (it runs
    /// the kernel work that turns data already in the sockets into completions: deferred work
    /// because the enter asks for completions, cooperative work on the way back from any
    /// system call), then what came is handed out.
    pub fn take_in(&mut self) {
        let _ = self.enter_quietly();
        self.reap();
        self.submit_batch();
    }

    /// The eventfd woke the worker: completions, or (deferred) work to run first.
    pub fn on_wake(&mut self) {
        match self.mode {
            TaskRun::Deferred => self.submit_batch(),
            TaskRun::Cooperative => {
                self.reap();
            }
        }
    }

    /// Does the kernel announce deferred completion work waiting for this worker
    /// (IORING_SQ_TASKRUN)? It sets the flag before it signals the eventfd, and only the
    /// first work to arrive on an empty list signals it: work that arrived while the eventfd
    /// was off (`enter_quietly`), or was left over by an enter's 20-item limit, is seen here.
    /// The fence orders the re-enabling of the eventfd before this read (the kernel's flag
    /// update is a locked instruction, a full barrier on x86-64): either the kernel saw the
    /// eventfd on and signals it, or this read sees its flag. The flag is a hint, though: the
    /// kernel may set it just after this worker ran the very work it announces, and then
    /// only new work clears it (see `submit_batch`).
    fn work_announced(&mut self) -> bool {
        if self.mode == TaskRun::Cooperative {
            return false;
        }
        fence(Ordering::SeqCst);
        self.uring.submission().taskrun()
    }

    /// Submit with the eventfd off: what completes inside this enter is reaped by the caller,
    /// not by a wake-up of the runtime. With deferred work the enter asks for completions
    /// (GETEVENTS, waiting for none): the kernel runs the waiting work then (at most 20
    /// items per enter on 6.x kernels: `work_announced` says when to come back).
    fn enter_quietly(&mut self) -> io::Result<usize> {
        self.uring.completion().disable_eventfd();
        let entered = match self.mode {
            TaskRun::Cooperative => self.uring.submit(),
            TaskRun::Deferred => self.enter_with_getevents(),
        };
        self.uring.completion().enable_eventfd();
        entered
    }

    /// The worker is about to sleep (or the eventfd woke it): submit everything queued in one
    /// enter, and handle what completed meanwhile (sends usually complete inside the enter;
    /// deferred receive work runs in it) so its tasks run before sleeping. Completions
    /// handled here may queue more (the rest of a short send, a cancel), and more deferred
    /// work may be waiting (the kernel runs at most 20 items per enter): entered again for
    /// those until none is left, or until a buffer ring's worth of completions was handed
    /// out; then the tasks woken so far run first, and the worker comes back through its
    /// eventfd.
    pub fn submit_batch(&mut self) {
        let mut handed_out = 0;
        let mut fruitless = false;
        loop {
            let queued = !self.uring.submission().is_empty();
            if !queued && !self.work_announced() {
                break;
            }
            if handed_out >= buffers::COUNT as usize {
                // The worker must not sleep with work waiting: the kernel signalled the
                // eventfd for the first of it only (maybe while it was off), and the tasks
                // woken so far may queue nothing. Signalled here, it wakes the reap task.
                self.wake_self();
                return;
            }
            if fruitless && !queued {
                // The last enter was for the flag alone and brought no completion: the flag
                // is taken as stale and not followed again (the worker would enter forever
                // instead of sleeping: seen). One enter with the eventfd on instead: work
                // that arrived during the quiet one (its signal swallowed) runs now, and any
                // later work signals the eventfd.
                let _ = self.enter_with_getevents();
                self.reap();
                return;
            }
            if let Err(e) = self.enter_quietly() {
                if !transient(&e) {
                    crate::warning!("io_uring submit failed: {e}");
                    break;
                }
            }
            // After enabling: a completion that came in between is reaped now, any later one
            // signals the eventfd.
            let came = self.reap();
            handed_out += came;
            fruitless = !queued && came == 0;
        }
        self.reap();
    }

    /// Submit what is queued and run the deferred completion work waiting (GETEVENTS,
    /// waiting for no completion).
    fn enter_with_getevents(&mut self) -> io::Result<usize> {
        let queued = self.uring.submission().len() as u32;
        // SAFETY: no wait argument is passed; the entries queued are valid (see `push`).
        unsafe {
            self.uring.submitter().enter::<libc::sigset_t>(
                queued,
                0,
                io_uring::EnterFlags::GETEVENTS.bits(),
                None,
            )
        }
    }

    fn wake_self(&self) {
        let one = 1u64;
        // SAFETY: an 8-byte write from a local into our own eventfd.
        unsafe { libc::write(self.eventfd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

// Per thread by nature: a ring is made on its worker thread (inside the worker's runtime) and
// only ever reached through this thread-local, so every submission comes from the thread that
// made it, as SINGLE_ISSUER requires (the drain pass's `take_in` runs as a task of that
// worker's current-thread runtime; the start-up probe uses a ring of its own).
thread_local! {
    /// This worker thread's ring (None on an epoll worker or any other thread).
    static RING: RefCell<Option<Ring>> = const { RefCell::new(None) };
}

pub fn install(ring: Ring) {
    RING.with(|r| *r.borrow_mut() = Some(ring));
}

pub fn active() -> bool {
    RING.with(|r| r.borrow().is_some())
}

/// Run `f` on this thread's ring (None where there is none).
pub fn with_ring<R>(f: impl FnOnce(&mut Ring) -> R) -> Option<R> {
    RING.with(|r| r.try_borrow_mut().ok()?.as_mut().map(f))
}

//! A command that observes other connections (INFO, CLIENT LIST/KILL/UNBLOCK, SHUTDOWN ABORT)
//! first lets every thread take in what clients have already sent.
//!
//! Redis serves every client from one event loop: a request that reached the server before
//! another was sent is read first, so a test may send SHUTDOWN on one connection and at once
//! count the blocked clients on another. Here connections live on several worker threads, and
//! the second request could run before another worker even read the first. So before such a
//! command runs, its connection waits (asynchronously: its worker keeps serving everyone else)
//! for a "drain pass" of the acceptor, then of every worker: each runs everything that is ready
//! on it, I/O included, and acknowledges. Connections waiting in the listen backlog get handed
//! to a worker (and numbered) in the first stage; every worker then reads the sockets that are
//! readable (a just-handed connection is registered and read too) before acknowledging.
//!
//! Ordinary commands never come here (one flag test in the dispatcher). The wait is bounded
//! (`BOUND`): a worker busy in a long command does not hold the observer longer than that, and
//! two observers on two workers answer each other's passes while they wait, so none deadlocks.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// The longest an observing command waits for the other threads' passes.
const BOUND: Duration = Duration::from_millis(50);

/// One thread's passes: requested and acknowledged, by number.
#[derive(Default)]
struct Passes {
    asked: AtomicU64,
    done: AtomicU64,
    /// Wakes the thread's responder task.
    wake: Notify,
    /// Wakes the observers waiting for a pass to finish.
    finished: Notify,
}

impl Passes {
    /// Ask for a pass that starts after this call; returns its number.
    fn ask(&self) -> u64 {
        let n = self.asked.fetch_add(1, Ordering::AcqRel) + 1;
        self.wake.notify_one();
        n
    }

    async fn wait_done(&self, n: u64) {
        loop {
            let finished = self.finished.notified();
            let mut finished = std::pin::pin!(finished);
            // Registered before the check: an acknowledgement in between is not missed.
            finished.as_mut().enable();
            if self.done.load(Ordering::Acquire) >= n {
                return;
            }
            finished.await;
        }
    }
}

/// The passes of one server's acceptor and worker threads: made by whoever starts them, and
/// handed to each thread's responder.
pub struct Drain {
    acceptor: Passes,
    workers: Vec<Passes>,
}

impl Drain {
    /// The passes of the acceptor and of `workers` worker threads (made before they start).
    pub fn new(workers: usize) -> Arc<Drain> {
        Arc::new(Drain {
            acceptor: Passes::default(),
            workers: (0..workers).map(|_| Passes::default()).collect(),
        })
    }
}

// Per thread by nature: the drain of the thread set this thread serves in, set when its
// responder starts; an observing command runs on its connection's worker and finds it here.
thread_local! {
    static THIS_THREADS: RefCell<Option<Arc<Drain>>> = const { RefCell::new(None) };
}

/// The task answering passes of `drain` on this thread's runtime: `None` the acceptor,
/// `Some(i)` worker i. Called on that thread (it records `drain` as this thread's at once,
/// before any connection the thread serves can observe).
pub fn respond(drain: Arc<Drain>, worker: Option<usize>) -> impl std::future::Future<Output = ()> {
    THIS_THREADS.with(|t| *t.borrow_mut() = Some(drain.clone()));
    respond_on(drain, worker)
}

async fn respond_on(d: Arc<Drain>, worker: Option<usize>) {
    let passes = match worker {
        None => &d.acceptor,
        Some(i) => &d.workers[i],
    };
    loop {
        passes.wake.notified().await;
        // Every pass asked until now starts no earlier than here.
        let upto = passes.asked.load(Ordering::Acquire);
        // A yielded task runs again only after the runtime has run every task that was ready
        // (the hand-over of new connections among them), polled its I/O driver and run the
        // tasks that woke: the connections with input. Twice, because a connection started in
        // the first round has its socket's readiness reported only by the next poll.
        // On io_uring the ring is not the runtime's driver: its requests (a new connection's
        // receive) are submitted, and data already sent received, at each step explicitly,
        // and the connections that got some run once more before the acknowledgement.
        tokio::task::yield_now().await;
        crate::uring::take_in_now();
        tokio::task::yield_now().await;
        if crate::uring::take_in_now() {
            tokio::task::yield_now().await;
        }
        passes.done.fetch_max(upto, Ordering::AcqRel);
        passes.finished.notify_waiters();
    }
}

/// Wait (at most `BOUND`) until the acceptor, then every worker, has taken in what was sent
/// to it before this call.
pub async fn before_observing() {
    let Some(d) = THIS_THREADS.with(|t| t.borrow().clone()) else {
        return;
    };
    let _ = tokio::time::timeout(BOUND, async {
        let n = d.acceptor.ask();
        d.acceptor.wait_done(n).await;
        // This worker too: its own responder runs while this connection waits.
        let asked: Vec<u64> = d.workers.iter().map(Passes::ask).collect();
        for (w, n) in d.workers.iter().zip(asked) {
            w.wait_done(n).await;
        }
    })
    .await;
}

//! Out-of-band output: what other clients cause to be sent to a connection (pub/sub messages,
//! keyspace events, MONITOR lines). Each client that can receive such output has one queue its
//! connection task drains; senders on any thread append already encoded bytes to it. Senders
//! never wait: the bytes queued and not yet written are counted per client, and a client over
//! its `client-output-buffer-limit` (Redis's hard and soft limits) is disconnected.
//!
//! The queue is one byte buffer behind a mutex, as a client's output buffer is in Redis: a
//! sender copies the encoded bytes in (no per-message allocation or reference count shared
//! between the receivers' threads) and wakes the connection only when the buffer was empty,
//! so a burst of messages costs one wake-up; the connection takes the whole buffer at once.

use crate::clients::ClientHandle;
use crate::server::Server;
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

struct State {
    buf: Vec<u8>,
    /// The connection waiting for output, if it is.
    waker: Option<Waker>,
    /// The connection is gone: sends fail.
    closed: bool,
}

struct Queue {
    state: Mutex<State>,
}

/// The sending side of one client's queue.
#[derive(Clone)]
pub struct PushTx {
    pub handle: Arc<ClientHandle>,
    queue: Arc<Queue>,
}

/// The receiving side, owned by the connection.
pub struct PushRx {
    handle: Arc<ClientHandle>,
    queue: Arc<Queue>,
}

/// A new queue for `handle`'s connection.
pub fn channel(handle: Arc<ClientHandle>) -> (PushTx, PushRx) {
    let queue = Arc::new(Queue {
        state: Mutex::new(State {
            buf: Vec::new(),
            waker: None,
            closed: false,
        }),
    });
    (
        PushTx {
            handle: handle.clone(),
            queue: queue.clone(),
        },
        PushRx { handle, queue },
    )
}

impl PushTx {
    /// Queue one encoded frame. Returns false when the client is gone (or was just
    /// disconnected for going over its output buffer limit).
    pub fn send(&self, srv: &Server, frame: &[u8]) -> bool {
        let h = &*self.handle;
        if h.is_killed() {
            return false;
        }
        let len = frame.len();
        h.push_pending.fetch_add(len, Relaxed);
        let wake = {
            let mut st = self.queue.state.lock();
            if st.closed {
                drop(st);
                h.push_pending.fetch_sub(len, Relaxed);
                return false;
            }
            let was_empty = st.buf.is_empty();
            st.buf.extend_from_slice(frame);
            if was_empty {
                st.waker.take()
            } else {
                None
            }
        };
        if let Some(w) = wake {
            w.wake();
        }
        if crate::output_limits::reached(srv, h) {
            crate::output_limits::close(srv, h, crate::output_limits::Close::Scheduled);
            return false;
        }
        crate::client_eviction::check(srv, h);
        true
    }

    pub fn id(&self) -> u64 {
        self.handle.id
    }
}

/// Resolves once output is queued (see `PushRx::ready`).
pub struct Ready<'a>(&'a Queue);

impl Future for Ready<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = self.0.state.lock();
        if !st.buf.is_empty() {
            return Poll::Ready(());
        }
        match &st.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl PushRx {
    /// Wait until output is queued.
    pub fn ready(&self) -> Ready<'_> {
        Ready(&self.queue)
    }

    /// Frames taken off the queue were written (or moved to the reply buffer): uncount them.
    pub fn written(&self, bytes: usize) {
        self.handle.push_pending.fetch_sub(bytes, Relaxed);
    }

    /// Append everything queued to `out`; returns the bytes appended, still counted as
    /// pending until the caller says `written`. An empty `out` trades buffers with the queue
    /// (no copy).
    pub fn drain_into(&mut self, out: &mut Vec<u8>) -> usize {
        let mut st = self.queue.state.lock();
        let n = st.buf.len();
        if n == 0 {
            return 0;
        }
        if out.is_empty() {
            std::mem::swap(out, &mut st.buf);
        } else {
            out.extend_from_slice(&st.buf);
            st.buf.clear();
        }
        n
    }
}

impl Drop for PushRx {
    fn drop(&mut self) {
        let mut st = self.queue.state.lock();
        st.closed = true;
        st.waker = None;
        let n = st.buf.len();
        st.buf = Vec::new();
        drop(st);
        self.written(n);
    }
}

//! Out-of-band output: what other clients cause to be sent to a connection (pub/sub messages,
//! keyspace events, MONITOR lines). Each client that can receive such output has one queue its
//! connection task drains; senders on any thread append already encoded frames to it. Senders
//! never wait: the bytes queued and not yet written are counted per client, and a client over
//! its `client-output-buffer-limit` (Redis's hard and soft limits) is disconnected.

use crate::clients::{cflags, ClientHandle};
use crate::server::Server;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

/// One encoded frame, shared by every receiver that gets the same bytes.
pub type Frame = Arc<[u8]>;

/// The sending side of one client's queue.
#[derive(Clone)]
pub struct PushTx {
    pub handle: Arc<ClientHandle>,
    tx: UnboundedSender<Frame>,
}

/// The receiving side, owned by the connection.
pub struct PushRx {
    handle: Arc<ClientHandle>,
    rx: UnboundedReceiver<Frame>,
}

/// A new queue for `handle`'s connection.
pub fn channel(handle: Arc<ClientHandle>) -> (PushTx, PushRx) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        PushTx {
            handle: handle.clone(),
            tx,
        },
        PushRx { handle, rx },
    )
}

impl PushTx {
    /// Queue one frame. Returns false when the client is gone (or was just disconnected for
    /// going over its output buffer limit).
    pub fn send(&self, srv: &Server, frame: Frame) -> bool {
        let h = &*self.handle;
        if h.is_killed() {
            return false;
        }
        let len = frame.len();
        let used = h.push_pending.fetch_add(len, Relaxed) + len;
        if self.tx.send(frame).is_err() {
            h.push_pending.fetch_sub(len, Relaxed);
            return false;
        }
        if over_limit(srv, h, used) {
            srv.pubsub.obuf_limit_disconnections.fetch_add(1, Relaxed);
            h.kill();
            return false;
        }
        true
    }

    pub fn id(&self) -> u64 {
        self.handle.id
    }
}

impl PushRx {
    /// Wait for the next frame (None once every sender is gone).
    pub async fn recv(&mut self) -> Option<Frame> {
        self.rx.recv().await
    }

    /// A frame already queued, if any.
    pub fn try_recv(&mut self) -> Option<Frame> {
        self.rx.try_recv().ok()
    }

    /// Frames taken off the queue were written (or moved to the reply buffer): uncount them.
    pub fn written(&self, bytes: usize) {
        self.handle.push_pending.fetch_sub(bytes, Relaxed);
    }

    /// Append `first` and whatever else is queued (up to about `max` bytes) to `out`; returns
    /// the bytes appended, still counted as pending until the caller says `written`.
    pub fn drain_into(&mut self, first: Option<Frame>, out: &mut Vec<u8>, max: usize) -> usize {
        let mut n = 0;
        if let Some(f) = first {
            out.extend_from_slice(&f);
            n += f.len();
        }
        while n < max {
            let Some(f) = self.try_recv() else { break };
            out.extend_from_slice(&f);
            n += f.len();
        }
        n
    }
}

/// Redis's checkClientOutputBufferLimits for queued push output: over the hard limit, or over
/// the soft limit continuously for more than its seconds. Pub/sub subscribers use the
/// `pubsub` class, everyone else (MONITOR) the `normal` one.
fn over_limit(srv: &Server, h: &ClientHandle, used: usize) -> bool {
    let class = if h.has_flag(cflags::PUBSUB) { 2 } else { 0 };
    let l = &srv.config.hot.obuf_limits[class];
    let (hard, soft, secs) = (l[0].load(Relaxed), l[1].load(Relaxed), l[2].load(Relaxed));
    let used = used as u64;
    if hard != 0 && used >= hard {
        return true;
    }
    if soft != 0 && used >= soft {
        let now = tern_engine::clock::now_ms() / 1000;
        let since = h.obuf_soft_since.load(Relaxed);
        if since == 0 {
            h.obuf_soft_since.store(now, Relaxed);
            return false;
        }
        return now - since.min(now) > secs;
    }
    if h.obuf_soft_since.load(Relaxed) != 0 {
        h.obuf_soft_since.store(0, Relaxed);
    }
    false
}

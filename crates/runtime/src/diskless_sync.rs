//! The master side of a diskless full sync (`repl-diskless-sync yes` and a replica that
//! announced `REPLCONF capa eof`): the snapshot is streamed straight to the replicas' sockets
//! as `$EOF:<mark>\r\n<rdb><mark>`, with no file on disk.
//!
//! Replicas that ask for a full sync wait `repl-diskless-sync-delay` seconds (counted from the
//! first waiting one) so that those arriving meanwhile share one snapshot; the transfer starts
//! at once when `repl-diskless-sync-max-replicas` are waiting. Replicas arriving during a
//! transfer wait for the next one. The snapshot is the store's forkless one; its bytes go to
//! every replica of the transfer in lock step, as Redis's pipe does: a replica that fails (its
//! connection closed, or no progress for `repl-timeout`) is dropped and the others go on; when
//! the last one is gone the snapshot is given up.
//!
//! The connection side (writing what arrives, then waiting for the replica's first REPLCONF
//! ACK before the stream starts) runs in the server crate.

use crate::replication::Sub;
use crate::server::Server;
use bytes::Bytes;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tern_engine::clock;
use tokio::sync::mpsc;

/// What a waiting replica's connection receives: its header and the snapshot's bytes, then
/// `Done` once the whole payload (the closing mark included) was handed over. The channel
/// closing before `Done` means the transfer failed.
pub enum Feed {
    Data(Bytes),
    Done,
}

/// A replica waiting for (or in) a transfer.
struct Waiter {
    handle: Arc<crate::clients::ClientHandle>,
    sub: Arc<Sub>,
    /// PSYNC (the payload starts with `+FULLRESYNC`) or SYNC.
    psync: bool,
    name: String,
    tx: mpsc::Sender<Feed>,
}

#[derive(Default)]
struct State {
    waiting: Vec<Waiter>,
    /// When the oldest waiting replica arrived.
    first_wait_ms: u64,
    /// A scheduler thread is running (it ends once nobody waits).
    scheduled: bool,
}

/// Diskless transfers, owned by the server (`Server::diskless`).
#[derive(Default)]
pub struct DisklessSync {
    state: Mutex<State>,
    /// A snapshot is being streamed to replicas (INFO's rdb_bgsave_in_progress).
    transferring: AtomicBool,
    /// FLUSHALL asked the running transfer to stop (its data is gone).
    flushed: AtomicBool,
}

impl DisklessSync {
    pub fn in_progress(&self) -> bool {
        self.transferring.load(Relaxed)
    }

    /// FLUSHALL: give up the running transfer, as Redis kills its RDB child; its replicas
    /// are dropped and reconnect for a new one.
    pub fn abort_transfer(&self) {
        if self.in_progress() {
            self.flushed.store(true, Relaxed);
        }
    }
}

/// The full sync of this replica goes through sockets: diskless sync is on and the replica
/// can read an `$EOF:` payload.
pub fn wanted(srv: &Server, handle: &crate::clients::ClientHandle) -> bool {
    srv.config.get_bool("repl-diskless-sync") && handle.has_flag(crate::clients::cflags::CAPA_EOF)
}

/// Chunks queued per replica before the snapshot waits for it.
const QUEUE: usize = 16;
/// The size of the chunks the snapshot's bytes are sent in.
const CHUNK: usize = 64 * 1024;

/// Queue a replica (attached, subscribed, not started) for the next transfer. Its connection
/// reads what it must send from the returned receiver.
pub fn join(
    srv: &Arc<Server>,
    handle: Arc<crate::clients::ClientHandle>,
    sub: Arc<Sub>,
    psync: bool,
    name: String,
) -> mpsc::Receiver<Feed> {
    let (tx, rx) = mpsc::channel(QUEUE);
    srv.replicas
        .sync_full
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut st = srv.diskless.state.lock();
    if st.waiting.is_empty() {
        st.first_wait_ms = clock::now_ms();
    }
    st.waiting.push(Waiter {
        handle,
        sub,
        psync,
        name,
        tx,
    });
    if !st.scheduled {
        st.scheduled = true;
        let srv = srv.clone();
        let rt = tokio::runtime::Handle::current();
        let _ = std::thread::Builder::new()
            .name("diskless-sync".into())
            .spawn(move || schedule(&srv, &rt));
    }
    rx
}

/// Start transfers while replicas wait: after the delay, or at once with enough of them.
fn schedule(srv: &Arc<Server>, rt: &tokio::runtime::Handle) {
    loop {
        let batch = {
            let mut st = srv.diskless.state.lock();
            // Replicas that went away before their transfer started are forgotten.
            st.waiting.retain(|w| !w.tx.is_closed());
            if st.waiting.is_empty() {
                st.scheduled = false;
                return;
            }
            let delay_ms = srv.config.get_i64("repl-diskless-sync-delay").max(0) as u64 * 1000;
            let max = srv.config.get_i64("repl-diskless-sync-max-replicas").max(0) as usize;
            let waited = clock::now_ms().saturating_sub(st.first_wait_ms);
            if waited >= delay_ms || (max > 0 && st.waiting.len() >= max) {
                std::mem::take(&mut st.waiting)
            } else {
                Vec::new()
            }
        };
        if batch.is_empty() {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        // INFO's rdb_current_bgsave_time_sec counts from the transfer's start too.
        let running = crate::sync_rdb::Running::start(srv);
        srv.diskless.transferring.store(true, Relaxed);
        transfer(srv, rt, batch);
        srv.diskless.transferring.store(false, Relaxed);
        drop(running);
        // Whoever arrived during the transfer waited since its start at least.
        let mut st = srv.diskless.state.lock();
        if !st.waiting.is_empty() {
            st.first_wait_ms = st.first_wait_ms.min(clock::now_ms());
        }
    }
}

/// A fresh end-of-payload mark: 40 random characters, drawn as a replication ID is.
fn eof_mark() -> String {
    crate::replication::random_replid()
}

/// One snapshot streamed to `batch`.
fn transfer(srv: &Arc<Server>, rt: &tokio::runtime::Handle, batch: Vec<Waiter>) {
    crate::log::notice("Starting BGSAVE for SYNC with target: replicas sockets");
    srv.diskless.flushed.store(false, Relaxed);
    // This process streams it (no fork): the pid is the server's own.
    crate::log::notice(&format!(
        "Background RDB transfer started by pid {}",
        std::process::id()
    ));
    let mark = eof_mark();
    let abort = AtomicBool::new(false);
    let now = clock::now_ms();
    let replid = crate::replication::replid(srv);
    let written = srv.store.snapshot_abortable(
        || {
            // At the cut (every shard locked): each replica's stream starts here.
            let mut outs = Vec::with_capacity(batch.len());
            let mut pos = tern_persist::wlog::StreamPosition { offset: 0, db: 0 };
            for w in &batch {
                pos = srv.propagation.log.start_sub(&w.sub);
                let offset = pos.offset;
                let mut head = String::new();
                if w.psync {
                    head.push_str(&format!("+FULLRESYNC {replid} {offset}\r\n"));
                }
                head.push_str(&format!("$EOF:{mark}\r\n"));
                // The replica learns at once that the transfer started (its channel is
                // empty: this never waits under the locks).
                let head = match w.tx.try_send(Feed::Data(Bytes::from(head))) {
                    Ok(()) => None,
                    Err(mpsc::error::TrySendError::Full(Feed::Data(h))) => Some(h),
                    Err(_) => None,
                };
                outs.push(Out {
                    handle: w.handle.clone(),
                    tx: w.tx.clone(),
                    name: w.name.clone(),
                    head,
                    last_progress: Instant::now(),
                });
            }
            let fan = FanOut {
                outs,
                buf: Vec::with_capacity(CHUNK),
                rt: rt.clone(),
                srv,
                abort: &abort,
            };
            let aux = crate::replication::sync_aux(&replid, now, pos);
            crate::persistence::rdb_writer(srv, fan, &aux)
        },
        &abort,
    );
    let fan = match written.map(|w| w.finish()) {
        Some(Ok(fan)) => fan,
        Some(Err(e)) => {
            crate::log::warning(&format!(
                "Diskless rdb transfer, write error sending DB to replicas: {e}"
            ));
            return;
        }
        None if srv.diskless.flushed.load(Relaxed) => {
            crate::log::warning("Background transfer aborted (FLUSHALL)");
            return;
        }
        None => {
            crate::log::warning("Diskless rdb transfer, last replica dropped, killing fork child.");
            return;
        }
    };
    let mut fan = fan;
    fan.buf.extend_from_slice(mark.as_bytes());
    // The end goes like every chunk: a replica stuck past repl-timeout is dropped, not
    // waited for.
    if fan.deliver(true).is_err() {
        crate::log::warning("Diskless rdb transfer, last replica dropped, killing fork child.");
        return;
    }
    crate::log::notice(&format!(
        "Diskless rdb transfer, done reading from pipe, {} replicas still up.",
        fan.outs.len()
    ));
    for o in fan.outs.drain(..) {
        crate::log::notice(&format!(
            "Streamed RDB transfer with replica {} succeeded (socket). Waiting for REPLCONF ACK from replica to enable streaming",
            o.name
        ));
    }
    crate::log::notice("Background RDB transfer terminated with success");
}

/// One replica's end of the fan-out.
struct Out {
    handle: Arc<crate::clients::ClientHandle>,
    tx: mpsc::Sender<Feed>,
    name: String,
    /// Its `+FULLRESYNC` / `$EOF:` lines, sent before the first chunk.
    head: Option<Bytes>,
    /// When its queue last took something (Redis's time of the last partial write): the
    /// replica times out repl-timeout after it.
    last_progress: Instant,
}

/// The snapshot's output: bytes are gathered into chunks, each handed to every replica still
/// there (waiting for the slowest, as long as it keeps taking them).
struct FanOut<'a> {
    outs: Vec<Out>,
    buf: Vec<u8>,
    rt: tokio::runtime::Handle,
    srv: &'a Server,
    abort: &'a AtomicBool,
}

impl FanOut<'_> {
    /// Hand the buffered bytes to every replica; Err once none is left.
    fn send_buffered(&mut self) -> std::io::Result<()> {
        self.deliver(false)
    }

    /// Hand the buffered bytes (and with `done` the end of the payload) to every replica
    /// still there; one that made no progress for repl-timeout is dropped. Err once none is
    /// left.
    fn deliver(&mut self, done: bool) -> std::io::Result<()> {
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        let (rt, srv) = (&self.rt, self.srv);
        self.outs.retain_mut(|o| {
            if let Some(h) = o.head.take() {
                if !o.send(rt, srv, Feed::Data(h)) {
                    return false;
                }
            }
            (chunk.is_empty() || o.send(rt, srv, Feed::Data(chunk.clone())))
                && (!done || o.send(rt, srv, Feed::Done))
        });
        if self.outs.is_empty() {
            self.abort.store(true, Relaxed);
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "no replica left",
            ));
        }
        Ok(())
    }
}

/// How often a send waiting for a stuck replica looks at the clock and at repl-timeout.
const TIMEOUT_CHECK: Duration = Duration::from_millis(100);

impl Out {
    /// Queue `f` for this replica, waiting while its queue is full; false (the replica is
    /// dropped) if its connection is gone or it took nothing for repl-timeout. The limit is
    /// read again while waiting, as Redis's cron does: a CONFIG SET repl-timeout made while
    /// the transfer is stuck on this replica applies to it.
    fn send(&mut self, rt: &tokio::runtime::Handle, srv: &Server, f: Feed) -> bool {
        loop {
            // Room in its queue means it took something since the last send, however long
            // the transfer waited for another replica meanwhile.
            match self.tx.try_reserve() {
                Ok(permit) => {
                    permit.send(f);
                    self.last_progress = Instant::now();
                    return true;
                }
                Err(mpsc::error::TrySendError::Closed(())) => {
                    crate::log::warning(&format!(
                        "Diskless rdb transfer, write error sending DB to replica: replica {} went away",
                        self.name
                    ));
                    return false;
                }
                Err(mpsc::error::TrySendError::Full(())) => {}
            }
            // Full: it took nothing since the last send.
            let limit = Duration::from_secs(srv.config.get_i64("repl-timeout").max(1) as u64);
            let idle = self.last_progress.elapsed();
            if idle >= limit {
                crate::log::warning(&format!(
                    "Disconnecting timedout replica (full sync): {}",
                    self.name
                ));
                // Its connection may be stuck writing: closing it ends that.
                self.handle.kill();
                return false;
            }
            let wait = (limit - idle).min(TIMEOUT_CHECK);
            let tx = &self.tx;
            // Wait for room (or the next look at the clock). The timer is made inside
            // block_on: it needs the runtime's context.
            let _ = rt.block_on(async {
                tokio::time::timeout(wait, async {
                    if let Ok(permit) = tx.reserve().await {
                        drop(permit);
                    }
                })
                .await
            });
        }
    }
}

impl std::io::Write for FanOut<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.srv.diskless.flushed.load(Relaxed) {
            self.abort.store(true, Relaxed);
            return Err(std::io::Error::other("FLUSHALL"));
        }
        self.buf.extend_from_slice(b);
        if self.buf.len() >= CHUNK {
            self.send_buffered()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

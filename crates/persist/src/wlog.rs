//! The write log: every change to the keyspace as the command(s) that replay it, in RESP (the
//! AOF and replication format), in the order the changes happened.
//!
//! Writers append while still holding the shard locks of what they changed, so two writes to
//! the same key reach the log in the order they were applied. Each append advances the log
//! sequence number (LSN: the byte offset of the end of the stream); a consumer (the AOF writer
//! thread) takes the pending bytes and reports how far they are durable.
//!
//! When no consumer is attached the log is inactive and costs a write command one relaxed load
//! plus a per-thread in-flight counter (`gate`), which lets a consumer attach at run time
//! without losing a write that had already decided not to log itself.

use crate::repl_buffer::ReplBuffer;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// One thread's in-flight counter of unlogged writes, on its own cache line.
#[repr(align(64))]
struct Slot(AtomicU64);

const SLOTS: usize = 64;

/// Bytes a deferring thread may leave pending before it wakes the consumer anyway.
const DEFERRED_WAKE_BYTES: usize = 256 * 1024;

thread_local! {
    /// Set on threads that call `wake_consumer` before they go idle (the workers): their
    /// appends do not wake the consumer one by one, so one wake-up (one write, one fsync)
    /// covers everything a worker's pass over its ready connections appended, as Redis's
    /// write in beforeSleep.
    static DEFER_WAKE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The replication offset right after this thread's last append (WAIT's target), until
    /// taken.
    static LAST_REPL_END: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    /// On a replica's link thread: the master's stream bytes of the command being applied
    /// (and of a transaction's queued commands before it), passed on by the first append
    /// the command makes, under the shard locks of its change, so a snapshot's cut never
    /// falls between a change and the stream bytes that carry it.
    static PROXY_STAGED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    static SLOT: usize = {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        (NEXT.fetch_add(1, Ordering::Relaxed) as usize) % SLOTS
    };
}

/// Commands encoded in RESP with the database each must run in (-1: any, no SELECT).
#[derive(Default, Debug, Clone)]
pub struct Ops {
    pub buf: Vec<u8>,
    /// Per command: its database, the end offset in `buf`, and whether only replicas get it
    /// (PUBLISH: the AOF never does, as in Redis).
    ops: Vec<(i32, usize, bool)>,
}

impl Ops {
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn clear(&mut self) {
        self.buf.clear();
        self.ops.clear();
    }

    /// Append one command for database `db`.
    pub fn push<'a>(&mut self, db: i32, argv: impl ExactSizeIterator<Item = &'a [u8]>) {
        encode_command(&mut self.buf, argv);
        self.ops.push((db, self.buf.len(), false));
    }

    /// Append one command only replicas get.
    pub fn push_replicas_only<'a>(
        &mut self,
        db: i32,
        argv: impl ExactSizeIterator<Item = &'a [u8]>,
    ) {
        encode_command(&mut self.buf, argv);
        self.ops.push((db, self.buf.len(), true));
    }

    /// Send the commands of the databases `excluded` picks to replicas only (a database left
    /// out of persistence is still replicated).
    pub fn keep_from_aof(&mut self, excluded: impl Fn(usize) -> bool) {
        for op in &mut self.ops {
            if op.0 >= 0 && excluded(op.0 as usize) {
                op.2 = true;
            }
        }
    }

    /// The commands as (db, encoded bytes, replicas only).
    pub fn iter(&self) -> impl Iterator<Item = (i32, &[u8], bool)> {
        let mut start = 0;
        self.ops.iter().map(move |&(db, end, repl)| {
            let s = &self.buf[start..end];
            start = end;
            (db, s, repl)
        })
    }
}

/// `*<n>\r\n$<len>\r\n<arg>\r\n...` as Redis writes a command to the AOF.
pub fn encode_command<'a>(out: &mut Vec<u8>, argv: impl ExactSizeIterator<Item = &'a [u8]>) {
    let mut ib = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(ib.format(argv.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in argv {
        out.push(b'$');
        out.extend_from_slice(ib.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

const MULTI: &[u8] = b"*1\r\n$5\r\nMULTI\r\n";
const EXEC: &[u8] = b"*1\r\n$4\r\nEXEC\r\n";

/// What the consumer takes from the log in one go.
pub struct Batch {
    /// LSN of `bytes[0]`.
    pub start: u64,
    pub bytes: Vec<u8>,
    /// LSNs at which the consumer must switch to its next output (a rewrite's cut), in order.
    pub cuts: Vec<u64>,
}

impl Batch {
    pub fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }
}

struct Inner {
    buf: Vec<u8>,
    /// LSN of buf[0].
    base: u64,
    /// Database of the last SELECT written (-1: the next command selects).
    selected: i64,
    cuts: Vec<u64>,
    /// No consumer (the AOF writer) is attached, or it was asked to stop; nothing is kept
    /// for it.
    closed: bool,
    /// The replication stream's subscribers (replicas), started or waiting for their cut.
    subs: Vec<Arc<Sub>>,
    /// Database of the last SELECT in the replication stream (-1: the next command selects).
    repl_selected: i64,
    /// Subscribers past their cut (the stream is encoded only for them).
    started: usize,
    /// Bytes ever fed to the replication stream (INFO's master_repl_offset).
    repl_offset: u64,
    /// Scratch for one unit's replication-stream encoding.
    rbuf: Vec<u8>,
    /// The replication buffer: the backlog, and what replicas have still to send (while it
    /// exists the stream is encoded even with no replica).
    backlog: Option<ReplBuffer>,
    /// Its size setting, kept for a buffer made again.
    backlog_size: usize,
    /// (stream offset, LSN): the stream up to the offset may go to replicas once the AOF is
    /// durable up to the LSN (Redis writes the AOF before the replicas in each event-loop
    /// pass, so a replica never has a write its master could lose in a crash).
    holds: std::collections::VecDeque<(u64, u64)>,
    /// The stream up to here may go whatever the AOF holds.
    released: u64,
    limits: ReplicaLimits,
    /// This server is a replica: its replication stream is its master's, passed on byte for
    /// byte (`proxy_feed`), never encoded from its own writes (which go to the AOF only).
    proxy: bool,
    /// While proxying: the database the master's stream has selected after the bytes fed
    /// so far (a sub-replica's full sync starts its stream in it).
    proxy_db: usize,
}

impl Inner {
    /// The replication stream is encoded for someone: a started replica or the backlog.
    fn streaming(&self) -> bool {
        self.started > 0 || self.backlog.is_some()
    }
}

/// Where the replication stream is: its offset, and the database its last SELECT chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamPosition {
    pub offset: u64,
    pub db: usize,
}

/// The backlog as INFO replication reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BacklogInfo {
    pub size: usize,
    /// Offset of its first byte (the stream's first byte is offset 1).
    pub first_byte_offset: u64,
    pub histlen: usize,
}

/// client-output-buffer-limit's replica class (0: no limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplicaLimits {
    pub hard: usize,
    pub soft: usize,
    pub soft_seconds: u64,
}

/// Stream bytes a replica's sender copies out in one go (the log's lock is held meanwhile).
const TAKE_CHUNK: u64 = 1 << 20;

/// Blocks of the replication buffer freed per trim, so that freeing a slow replica's
/// hundreds of megabytes never holds the log's lock long (Redis trims incrementally too).
const TRIM_BLOCKS: usize = 64;

/// A subscriber of the replication stream (a replica connection): from its start (the cut of
/// the snapshot it was sent) it reads every logged command, plus what only replicas get
/// (PUBLISH, PINGs), from the shared replication buffer; its connection drains it.
pub struct Sub {
    inner: Mutex<SubInner>,
    /// Tells the draining side there is something to take.
    wake: Box<dyn Fn() + Send + Sync>,
}

#[derive(Default)]
struct SubInner {
    /// Stream offset of the next byte to send.
    pos: u64,
    started: bool,
    overflowed: bool,
    /// Detached by the server (it became a replica itself).
    closed: bool,
    /// When its output first went over the soft limit (None: under it).
    soft_since: Option<std::time::Instant>,
}

impl Sub {
    pub fn new(wake: Box<dyn Fn() + Send + Sync>) -> Arc<Sub> {
        Arc::new(Sub {
            inner: Mutex::new(SubInner::default()),
            wake,
        })
    }

    /// Dropped for falling behind.
    pub fn overflowed(&self) -> bool {
        self.inner.lock().overflowed
    }

    /// Detached by `WriteLog::close_subs`.
    pub fn closed(&self) -> bool {
        self.inner.lock().closed
    }
}

pub struct WriteLog {
    active: AtomicBool,
    inner: Mutex<Inner>,
    cv: Condvar,
    appended: AtomicU64,
    durable: AtomicU64,
    unlogged: [Slot; SLOTS],
    /// A deferring thread appended without waking the consumer.
    wake_pending: AtomicBool,
}

/// How a write command runs with respect to the log (see `WriteLog::gate`).
pub enum Gate<'a> {
    /// The log is active: the command appends what it changes.
    Logged,
    /// Inactive: the command is counted as in flight until this is dropped.
    Unlogged(&'a AtomicU64),
}

impl Drop for Gate<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Gate::Unlogged(c) = self {
            c.fetch_sub(1, Ordering::Release);
        }
    }
}

impl Gate<'_> {
    #[inline]
    pub fn logged(&self) -> bool {
        matches!(self, Gate::Logged)
    }
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO_SLOT: Slot = Slot(AtomicU64::new(0));

impl Default for WriteLog {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteLog {
    pub const fn new() -> WriteLog {
        WriteLog {
            active: AtomicBool::new(false),
            inner: parking_lot::const_mutex(Inner {
                buf: Vec::new(),
                base: 0,
                selected: -1,
                cuts: Vec::new(),
                closed: true,
                subs: Vec::new(),
                repl_selected: -1,
                started: 0,
                repl_offset: 0,
                rbuf: Vec::new(),
                backlog: None,
                backlog_size: 1 << 20,
                holds: std::collections::VecDeque::new(),
                released: 0,
                limits: ReplicaLimits {
                    hard: 0,
                    soft: 0,
                    soft_seconds: 0,
                },
                proxy: false,
                proxy_db: 0,
            }),
            cv: Condvar::new(),
            appended: AtomicU64::new(0),
            durable: AtomicU64::new(0),
            unlogged: [ZERO_SLOT; SLOTS],
            wake_pending: AtomicBool::new(false),
        }
    }

    /// True while a consumer is attached (writes must log themselves).
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// Enter a write command: `Logged` when the log is active; otherwise the command is counted
    /// as an unlogged write in flight until the gate drops, so `activate` can wait for it.
    #[inline]
    pub fn gate(&self) -> Gate<'_> {
        if self.active.load(Ordering::Relaxed) {
            return Gate::Logged;
        }
        let c = &self.unlogged[SLOT.with(|s| *s)].0;
        // SeqCst on both sides (here and in `activate`): either this write sees the log
        // active, or `activate` sees it in flight and waits for it.
        c.fetch_add(1, Ordering::SeqCst);
        if self.active.load(Ordering::SeqCst) {
            c.fetch_sub(1, Ordering::Release);
            return Gate::Logged;
        }
        Gate::Unlogged(c)
    }

    /// Attach a consumer: from now on writes log themselves. Returns once every write that
    /// had started unlogged has finished, so that a cut taken afterwards (with every shard
    /// locked) has every unlogged write before it. Records appended from here up to the first
    /// cut are dropped (`Batch::start` of the first batch after `take` tells where they end).
    pub fn activate(&self) {
        {
            let mut g = self.inner.lock();
            g.closed = false;
            g.selected = -1;
            g.cuts.clear();
            let end = g.base + g.buf.len() as u64;
            g.buf.clear();
            g.base = end;
        }
        self.start_logging();
    }

    /// Make writes log themselves, and wait until no unlogged write is in flight.
    fn start_logging(&self) {
        self.active.store(true, Ordering::SeqCst);
        for s in &self.unlogged {
            while s.0.load(Ordering::SeqCst) != 0 {
                std::thread::yield_now();
            }
        }
    }

    /// Writes log themselves while the consumer, a subscriber or the backlog is there.
    fn update_active(&self, g: &Inner) {
        self.active.store(
            !g.closed || !g.subs.is_empty() || g.backlog.is_some(),
            Ordering::SeqCst,
        );
    }

    /// Detach: the consumer is told to stop (`take` returns None once what was pending is
    /// taken); writes stop logging unless a subscriber remains.
    pub fn deactivate(&self) {
        let mut g = self.inner.lock();
        g.closed = true;
        self.update_active(&g);
        self.cv.notify_all();
    }

    /// Attach a replication-stream subscriber; it receives nothing until `start_sub` (at the
    /// cut of the snapshot it is sent first). Returns once writes log themselves.
    pub fn subscribe(&self, sub: Arc<Sub>) {
        self.inner.lock().subs.push(sub);
        self.start_logging();
    }

    /// The subscriber's stream starts here. Call at a snapshot's cut (every shard locked).
    /// Returns where: the replication offset, and the database the stream has selected
    /// there (0 on a master, whose next command selects again).
    pub fn start_sub(&self, sub: &Arc<Sub>) -> StreamPosition {
        let mut g = self.inner.lock();
        Self::ensure_buffer(&mut g);
        let mut si = sub.inner.lock();
        si.pos = g.repl_offset;
        if !si.started {
            si.started = true;
            g.started += 1;
        }
        drop(si);
        // As Redis does for a new replica: the next command of the stream selects its db.
        g.repl_selected = -1;
        Self::position(&g)
    }

    fn position(g: &Inner) -> StreamPosition {
        StreamPosition {
            offset: g.repl_offset,
            db: if g.proxy { g.proxy_db } else { 0 },
        }
    }

    /// The replication offset and the stream's database as an RDB saved now records them.
    pub fn stream_position(&self) -> StreamPosition {
        Self::position(&self.inner.lock())
    }

    /// Proxy mode on or off (this server became a replica, or a master again). Either way
    /// the stream's next command selects its database.
    pub fn set_proxy(&self, on: bool) {
        let mut g = self.inner.lock();
        g.proxy = on;
        g.repl_selected = -1;
        drop(g);
        PROXY_STAGED.with(|p| p.borrow_mut().clear());
    }

    /// A new history at `offset` (a full sync from our master, or a restart from an RDB that
    /// recorded it): the offset is set and the backlog starts empty there, created if
    /// `backlog` is Some(size) and there was none.
    pub fn reset_stream(&self, offset: u64, db: usize, backlog: Option<usize>) {
        {
            let mut g = self.inner.lock();
            g.repl_offset = offset;
            g.proxy_db = db;
            g.repl_selected = -1;
            g.holds.clear();
            g.released = offset;
            if let Some(size) = backlog {
                g.backlog_size = size;
            }
            let keep = g.backlog.is_some() || backlog.is_some();
            let size = g.backlog_size;
            g.backlog = keep.then(|| ReplBuffer::new(size, offset));
            // Replicas on the old history cannot go on in this one.
            Self::close_started(&mut g);
            self.update_active(&g);
        }
        if backlog.is_some() {
            self.start_logging();
        }
    }

    /// On a replica's link thread, before applying a command of the master's stream: its
    /// bytes, to be passed on by the command's first append or by `proxy_flush`.
    pub fn proxy_stage(&self, bytes: &[u8]) {
        PROXY_STAGED.with(|p| p.borrow_mut().extend_from_slice(bytes));
    }

    /// After a command (or a whole transaction) of the master's stream was applied: pass on
    /// what its appends did not (commands that change nothing), leaving the stream in `db`.
    pub fn proxy_flush(&self, db: usize) {
        let mut g = self.inner.lock();
        g.proxy_db = db;
        PROXY_STAGED.with(|p| {
            let mut p = p.borrow_mut();
            if !p.is_empty() {
                Self::feed_proxied(&mut g, &p, self.durable());
                p.clear();
            }
        });
    }

    /// The link dropped mid-transaction: the staged bytes will come again.
    pub fn proxy_discard(&self) {
        PROXY_STAGED.with(|p| p.borrow_mut().clear());
    }

    fn feed_proxied(g: &mut Inner, bytes: &[u8], durable: u64) {
        if g.streaming() {
            g.rbuf.extend_from_slice(bytes);
            Self::feed_subs(g, durable);
        } else {
            // Nobody keeps the stream, but its offsets still count (INFO, ACKs).
            g.repl_offset += bytes.len() as u64;
        }
    }

    pub fn unsubscribe(&self, sub: &Arc<Sub>) {
        let mut g = self.inner.lock();
        let before = g.subs.len();
        g.subs.retain(|s| !Arc::ptr_eq(s, sub));
        let mut si = sub.inner.lock();
        if g.subs.len() < before && si.started {
            g.started -= 1;
        }
        si.started = false;
        drop(si);
        Self::trim(&mut g);
        self.update_active(&g);
    }

    /// Drop the started subscribers (each sees `take_sub` return None).
    fn close_started(g: &mut Inner) {
        g.subs.retain(|s| {
            let mut si = s.inner.lock();
            if !si.started {
                return true;
            }
            si.closed = true;
            drop(si);
            (s.wake)();
            false
        });
        g.started = 0;
    }

    /// Detach every subscriber (each sees `take` return None), as Redis disconnects its
    /// replicas when it becomes a replica or loads a new dataset from its master.
    pub fn close_subs(&self) {
        let mut g = self.inner.lock();
        for s in g.subs.drain(..) {
            s.inner.lock().closed = true;
            (s.wake)();
        }
        g.started = 0;
        Self::trim(&mut g);
        self.update_active(&g);
    }

    /// Subscribers attached (started or not).
    pub fn subscribers(&self) -> usize {
        self.inner.lock().subs.len()
    }

    /// Bytes ever fed to the replication stream.
    pub fn repl_offset(&self) -> u64 {
        self.inner.lock().repl_offset
    }

    /// Create the replication backlog of `size` bytes (if there is none); from now on the
    /// stream is kept in it and writes log themselves. True when it was created now.
    pub fn create_backlog(&self, size: usize) -> bool {
        {
            let mut g = self.inner.lock();
            if g.backlog.is_some() {
                return false;
            }
            g.backlog_size = size;
            let offset = g.repl_offset;
            g.backlog = Some(ReplBuffer::new(size, offset));
            g.holds.clear();
            g.released = offset;
            // A replica continuing later must get a SELECT before its first command, as
            // after its full sync: its database is unknown to the stream from here.
            g.repl_selected = -1;
        }
        self.start_logging();
        true
    }

    /// Drop the backlog (repl-backlog-ttl after the last replica left, or a new history).
    /// Replicas still attached keep it (they read from it).
    pub fn free_backlog(&self) {
        let mut g = self.inner.lock();
        if g.started == 0 {
            g.backlog = None;
        }
        self.update_active(&g);
    }

    /// CONFIG SET repl-backlog-size: the oldest blocks beyond it go (those no replica needs).
    pub fn resize_backlog(&self, size: usize) {
        let mut g = self.inner.lock();
        g.backlog_size = size;
        if let Some(b) = g.backlog.as_mut() {
            b.set_size(size);
        }
        Self::trim(&mut g);
    }

    pub fn backlog_info(&self) -> Option<BacklogInfo> {
        let g = self.inner.lock();
        let b = g.backlog.as_ref()?;
        Some(BacklogInfo {
            size: b.size(),
            first_byte_offset: b.first() + 1,
            histlen: b.histlen(),
        })
    }

    /// Bytes the replication buffer takes (INFO's mem_total_replication_buffers).
    pub fn repl_buffer_mem(&self) -> usize {
        self.inner.lock().backlog.as_ref().map_or(0, |b| b.mem())
    }

    /// client-output-buffer-limit for replicas, applied from the next block on.
    pub fn set_replica_limits(&self, limits: ReplicaLimits) {
        self.inner.lock().limits = limits;
    }

    /// A replica's output buffer as Redis counts it: the shared blocks it holds on to.
    pub fn sub_held(&self, sub: &Sub) -> usize {
        let g = self.inner.lock();
        let si = sub.inner.lock();
        match (&g.backlog, si.started && !si.overflowed && !si.closed) {
            (Some(b), true) => b.held_from(si.pos),
            _ => 0,
        }
    }

    /// Free the replication buffer's blocks nobody needs any more (a cron's share).
    pub fn trim_repl_buffer(&self) {
        Self::trim(&mut self.inner.lock());
    }

    fn trim(g: &mut Inner) {
        if !g.backlog.as_ref().is_some_and(ReplBuffer::over_size) {
            return;
        }
        let keep_from = g
            .subs
            .iter()
            .filter_map(|s| {
                let si = s.inner.lock();
                si.started.then_some(si.pos)
            })
            .min()
            .unwrap_or(u64::MAX);
        if let Some(b) = g.backlog.as_mut() {
            b.trim(keep_from, TRIM_BLOCKS);
        }
    }

    fn ensure_buffer(g: &mut Inner) {
        if g.backlog.is_none() {
            let (size, offset) = (g.backlog_size, g.repl_offset);
            g.backlog = Some(ReplBuffer::new(size, offset));
        }
    }

    /// Take the stream bytes `sub` has still to send (into `spare`), or with `durable` only
    /// those the AOF already holds up to that LSN. Empty before the subscriber's start; None
    /// once it was dropped (fallen behind, or closed).
    pub fn take_sub(&self, sub: &Sub, spare: Vec<u8>, durable: Option<u64>) -> Option<Vec<u8>> {
        let mut g = self.inner.lock();
        let mut out = spare;
        out.clear();
        {
            let g = &mut *g;
            let mut si = sub.inner.lock();
            if si.overflowed || si.closed {
                return None;
            }
            if !si.started || g.backlog.is_none() {
                return Some(out);
            }
            let end = match durable {
                None => {
                    g.holds.clear();
                    g.repl_offset
                }
                Some(d) => {
                    Self::release_holds(g, d);
                    if g.holds.is_empty() {
                        g.repl_offset
                    } else {
                        g.released
                    }
                }
            };
            let to = end.min(si.pos + TAKE_CHUNK);
            if to <= si.pos {
                return Some(out);
            }
            let mut passed_first_block = false;
            if let Some(buf) = g.backlog.as_ref() {
                buf.copy_range(si.pos, to, &mut out);
                passed_first_block = si.pos < buf.first_block_end() && to >= buf.first_block_end();
            }
            si.pos = to;
            if !passed_first_block {
                return Some(out);
            }
        }
        Self::trim(&mut g);
        Some(out)
    }

    /// PSYNC: attach `sub` as a started subscriber whose stream continues at `psync_offset`
    /// (the first byte it lacks), fed at once with the backlog from there. None (nothing
    /// attached) when the backlog does not reach back that far, or does not exist. Returns
    /// the bytes of backlog sent.
    pub fn continue_sub(&self, sub: &Arc<Sub>, psync_offset: u64) -> Option<u64> {
        let mut g = self.inner.lock();
        let b = g.backlog.as_ref()?;
        let pos = psync_offset.checked_sub(1)?;
        if pos < b.first() || pos > g.repl_offset {
            return None;
        }
        {
            let mut si = sub.inner.lock();
            si.started = true;
            si.pos = pos;
        }
        g.started += 1;
        g.subs.push(sub.clone());
        self.update_active(&g);
        drop(g);
        (sub.wake)();
        Some(self.repl_offset() - pos)
    }

    /// Feed `rbuf` to the replication buffer, wake the started subscribers, and drop those
    /// whose output went over the limits.
    fn feed_subs(g: &mut Inner, durable: u64) {
        let bytes = std::mem::take(&mut g.rbuf);
        Self::release_holds(g, durable);
        Self::ensure_buffer(g);
        let grew = g.backlog.as_mut().is_some_and(|b| b.push(&bytes));
        g.repl_offset += bytes.len() as u64;
        // What the AOF must hold first: everything appended so far.
        let lsn = g.base + g.buf.len() as u64;
        let end = g.repl_offset;
        match g.holds.back_mut() {
            Some(last) if last.1 == lsn => last.0 = end,
            _ => g.holds.push_back((end, lsn)),
        }
        if g.started > 0 {
            // As Redis, the limits are checked when the buffer takes a new block.
            if grew {
                Self::drop_over_limit(g);
            }
            for s in &g.subs {
                (s.wake)();
            }
        }
        Self::trim(g);
        g.rbuf = bytes;
        g.rbuf.clear();
    }

    /// The stream the AOF holds up to `durable` may go.
    fn release_holds(g: &mut Inner, durable: u64) {
        while let Some(&(offset, _)) = g.holds.front().filter(|h| h.1 <= durable) {
            g.released = g.released.max(offset);
            g.holds.pop_front();
        }
    }

    /// Drop the started subscribers whose output is over client-output-buffer-limit (the hard
    /// limit never below the backlog's size, as Redis: the backlog is shared anyway).
    fn drop_over_limit(g: &mut Inner) {
        let ReplicaLimits {
            hard,
            soft,
            soft_seconds,
        } = g.limits;
        if hard == 0 && soft == 0 {
            return;
        }
        let hard = if hard > 0 {
            hard.max(g.backlog_size)
        } else {
            0
        };
        let Some(buf) = g.backlog.as_ref() else {
            return;
        };
        let now = std::time::Instant::now();
        let before = g.subs.len();
        g.subs.retain(|s| {
            let mut si = s.inner.lock();
            if !si.started {
                return true;
            }
            let held = buf.held_from(si.pos);
            let over_soft = soft > 0 && held >= soft;
            if !over_soft {
                si.soft_since = None;
            }
            let soft_expired = over_soft
                && match si.soft_since {
                    None => {
                        si.soft_since = Some(now);
                        false
                    }
                    Some(t) => now.duration_since(t).as_secs() > soft_seconds,
                };
            if (hard > 0 && held >= hard) || soft_expired {
                si.overflowed = true;
                drop(si);
                (s.wake)();
                return false;
            }
            true
        });
        g.started -= before - g.subs.len();
    }

    /// Send a PING down the replication stream (Redis's repl-ping-replica-period).
    pub fn ping_subs(&self) {
        self.feed_subs_raw(b"*1\r\n$4\r\nPING\r\n");
    }

    /// Send `REPLCONF GETACK *` down the replication stream: replicas answer with their offset.
    pub fn getack_subs(&self) {
        self.feed_subs_raw(b"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n");
    }

    /// One command to the replicas (and the backlog) alone, with no SELECT (DEBUG
    /// REPLICATE).
    pub fn feed_replicas_only(&self, argv: &[&[u8]]) {
        let mut cmd = Vec::new();
        encode_command(&mut cmd, argv.iter().copied());
        self.feed_subs_raw(&cmd);
    }

    fn feed_subs_raw(&self, command: &[u8]) {
        let mut g = self.inner.lock();
        // A replica's stream is its master's: it adds nothing of its own.
        if !g.streaming() || g.proxy {
            return;
        }
        g.rbuf.extend_from_slice(command);
        Self::feed_subs(&mut g, self.durable());
        self.update_active(&g);
    }

    /// Append one execution unit's commands, wrapped in MULTI/EXEC when there are several.
    /// Returns the LSN after it.
    pub fn append(&self, ops: &Ops) -> u64 {
        let durable = self.durable();
        let mut g = self.inner.lock();
        if !g.closed {
            let g = &mut *g;
            let n = ops.iter().filter(|op| !op.2).count();
            Self::encode_unit(&mut g.buf, &mut g.selected, ops, n > 1, false);
        }
        if g.proxy {
            let g = &mut *g;
            PROXY_STAGED.with(|p| {
                let mut p = p.borrow_mut();
                if !p.is_empty() {
                    Self::feed_proxied(g, &p, durable);
                    p.clear();
                }
            });
        } else if g.streaming() {
            let g = &mut *g;
            Self::encode_unit(&mut g.rbuf, &mut g.repl_selected, ops, ops.len() > 1, true);
            Self::feed_subs(g, durable);
            self.update_active(g);
        }
        let pending = g.buf.len();
        let end = g.base + pending as u64;
        self.appended.store(end, Ordering::Release);
        LAST_REPL_END.with(|r| r.set(Some(g.repl_offset)));
        drop(g);
        if DEFER_WAKE.with(|d| d.get()) && pending < DEFERRED_WAKE_BYTES {
            if !self.wake_pending.load(Ordering::Relaxed) {
                self.wake_pending.store(true, Ordering::Release);
            }
        } else {
            self.cv.notify_one();
        }
        end
    }

    /// The replication offset right after the last unit this thread appended since the last
    /// call: a replica that acknowledged it has every write of that unit (WAIT).
    pub fn take_last_repl_end(&self) -> Option<u64> {
        LAST_REPL_END.with(|r| r.take())
    }

    /// Make this thread's appends leave the consumer's wake-up to `wake_consumer`.
    pub fn defer_wakes_on_this_thread(&self) {
        DEFER_WAKE.with(|d| d.set(true));
    }

    /// Wake the consumer if a deferring thread appended since the last wake-up (a worker about
    /// to go idle, or a reply that has waited too long).
    #[inline]
    pub fn wake_consumer(&self) {
        if self.wake_pending.load(Ordering::Relaxed)
            && self.wake_pending.swap(false, Ordering::AcqRel)
        {
            self.cv.notify_one();
        }
    }

    fn encode_unit(out: &mut Vec<u8>, selected: &mut i64, ops: &Ops, wrap: bool, repl: bool) {
        if wrap {
            out.extend_from_slice(MULTI);
        }
        for (db, bytes, repl_only) in ops.iter() {
            if repl_only && !repl {
                continue;
            }
            if db >= 0 && db as i64 != *selected {
                let mut ib = itoa::Buffer::new();
                let s = ib.format(db);
                encode_command(out, [&b"SELECT"[..], s.as_bytes()].into_iter());
                *selected = db as i64;
            }
            out.extend_from_slice(bytes);
        }
        if wrap {
            out.extend_from_slice(EXEC);
        }
    }

    /// Mark a cut: what is appended from here on belongs to the consumer's next output, which
    /// starts with a SELECT. Call with every shard locked (nothing else can append). Returns
    /// the cut's LSN.
    pub fn cut(&self) -> u64 {
        let mut g = self.inner.lock();
        let at = g.base + g.buf.len() as u64;
        g.cuts.push(at);
        g.selected = -1;
        drop(g);
        self.cv.notify_one();
        at
    }

    /// LSN of everything appended so far.
    #[inline]
    pub fn appended(&self) -> u64 {
        self.appended.load(Ordering::Acquire)
    }

    /// LSN up to which the consumer reported the log durable.
    #[inline]
    pub fn durable(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    pub fn set_durable(&self, lsn: u64) {
        self.durable.fetch_max(lsn, Ordering::AcqRel);
        // Replicas whose stream waited for this may go on.
        let g = self.inner.lock();
        if g.started > 0 && g.holds.front().is_some_and(|h| h.1 <= lsn) {
            for s in &g.subs {
                (s.wake)();
            }
        }
    }

    /// Bytes appended but not yet taken by the consumer.
    pub fn pending(&self) -> usize {
        self.inner.lock().buf.len()
    }

    /// For the consumer: wait up to `timeout` for appended bytes or a cut, then take them all.
    /// `Some(empty batch)` on timeout; None once the log was deactivated and nothing is left.
    pub fn take(&self, timeout: std::time::Duration, spare: Vec<u8>) -> Option<Batch> {
        let mut g = self.inner.lock();
        if g.buf.is_empty() && g.cuts.is_empty() && !g.closed {
            self.cv.wait_for(&mut g, timeout);
        }
        if g.closed && g.buf.is_empty() && g.cuts.is_empty() {
            return None;
        }
        let mut spare = spare;
        spare.clear();
        let bytes = std::mem::replace(&mut g.buf, spare);
        let start = g.base;
        g.base += bytes.len() as u64;
        let cuts = std::mem::take(&mut g.cuts);
        Some(Batch { start, bytes, cuts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_and_wrap() {
        let log = WriteLog::new();
        log.activate();
        let mut ops = Ops::default();
        ops.push(0, [&b"SET"[..], b"k", b"v"].into_iter());
        ops.push(0, [&b"DEL"[..], b"x"].into_iter());
        log.append(&ops);
        let mut one = Ops::default();
        one.push(2, [&b"INCR"[..], b"n"].into_iter());
        log.append(&one);
        let b = log
            .take(std::time::Duration::from_millis(1), Vec::new())
            .unwrap();
        assert_eq!(
            String::from_utf8(b.bytes.clone()).unwrap(),
            "*1\r\n$5\r\nMULTI\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n\
             *2\r\n$3\r\nDEL\r\n$1\r\nx\r\n*1\r\n$4\r\nEXEC\r\n\
             *2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n"
        );
        assert_eq!(b.end(), log.appended());
        log.cut();
        log.append(&one);
        let b = log
            .take(std::time::Duration::from_millis(1), Vec::new())
            .unwrap();
        assert_eq!(b.cuts.len(), 1);
        assert!(b.bytes.starts_with(b"*2\r\n$6\r\nSELECT"));
        log.deactivate();
        assert!(log
            .take(std::time::Duration::from_millis(1), Vec::new())
            .is_none());
    }

    #[test]
    fn subscribers_get_the_stream_from_their_cut_with_replica_only_commands() {
        let log = WriteLog::new();
        let sub = Sub::new(Box::new(|| {}));
        let mut one = Ops::default();
        one.push(0, [&b"SET"[..], b"a", b"1"].into_iter());
        log.subscribe(sub.clone());
        assert!(
            log.active(),
            "a subscriber alone makes writes log themselves"
        );
        log.append(&one);
        assert_eq!(
            log.take_sub(&sub, Vec::new(), None).unwrap(),
            b"",
            "nothing before the cut"
        );
        assert_eq!(log.start_sub(&sub).offset, 0);
        let mut unit = Ops::default();
        unit.push(0, [&b"INCR"[..], b"n"].into_iter());
        unit.push_replicas_only(0, [&b"PUBLISH"[..], b"c", b"m"].into_iter());
        log.append(&unit);
        let got = log.take_sub(&sub, Vec::new(), None).unwrap();
        assert_eq!(
            String::from_utf8(got.clone()).unwrap(),
            "*1\r\n$5\r\nMULTI\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n\
             *3\r\n$7\r\nPUBLISH\r\n$1\r\nc\r\n$1\r\nm\r\n*1\r\n$4\r\nEXEC\r\n"
        );
        assert_eq!(log.repl_offset(), got.len() as u64);
        assert_eq!(log.pending(), 0, "no AOF consumer: nothing kept for it");
        log.unsubscribe(&sub);
        assert!(log.active(), "the backlog stays after its last replica");
        log.free_backlog();
        assert!(!log.active());
    }

    #[test]
    fn a_replica_gets_only_what_the_aof_already_holds() {
        let log = WriteLog::new();
        log.activate();
        let woken = Arc::new(AtomicU64::new(0));
        let w = woken.clone();
        let sub = Sub::new(Box::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
        }));
        log.subscribe(sub.clone());
        log.start_sub(&sub);
        let set = |k: &[u8]| {
            let mut u = Ops::default();
            u.push(0, [&b"SET"[..], k, b"v"].into_iter());
            u
        };
        let first = log.append(&set(b"a"));
        let second = log.append(&set(b"b"));
        assert!(log.take_sub(&sub, Vec::new(), Some(0)).unwrap().is_empty());
        let before = woken.load(Ordering::Relaxed);
        log.set_durable(first);
        assert!(
            woken.load(Ordering::Relaxed) > before,
            "the sender is woken"
        );
        let got = String::from_utf8(log.take_sub(&sub, Vec::new(), Some(log.durable())).unwrap())
            .unwrap();
        assert!(
            got.ends_with("$1\r\na\r\n$1\r\nv\r\n") && !got.contains("$1\r\nb"),
            "{got}"
        );
        log.set_durable(second);
        let rest =
            String::from_utf8(log.take_sub(&sub, Vec::new(), Some(second)).unwrap()).unwrap();
        assert_eq!(rest, "*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\nv\r\n");
        // Without an AOF to wait for, everything goes.
        log.append(&set(b"c"));
        assert!(!log.take_sub(&sub, Vec::new(), None).unwrap().is_empty());
    }

    #[test]
    fn the_aof_never_gets_replica_only_commands() {
        let log = WriteLog::new();
        log.activate();
        let mut unit = Ops::default();
        unit.push(0, [&b"INCR"[..], b"n"].into_iter());
        unit.push_replicas_only(0, [&b"PUBLISH"[..], b"c", b"m"].into_iter());
        log.append(&unit);
        let b = log
            .take(std::time::Duration::from_millis(1), Vec::new())
            .unwrap();
        assert_eq!(
            String::from_utf8(b.bytes).unwrap(),
            "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n"
        );
    }

    #[test]
    fn a_replica_continues_from_the_backlog() {
        let log = WriteLog::new();
        let set = |k: &[u8]| {
            let mut u = Ops::default();
            u.push(0, [&b"SET"[..], k, b"v"].into_iter());
            u
        };
        log.append(&set(b"lost"));
        assert_eq!(log.repl_offset(), 0, "no replica, no backlog: no stream");
        assert!(log.create_backlog(128));
        assert!(
            log.active(),
            "the backlog alone makes writes log themselves"
        );
        log.append(&set(b"a"));
        let after_a = log.repl_offset();
        log.append(&set(b"b"));
        let info = log.backlog_info().unwrap();
        assert_eq!(
            (info.first_byte_offset, info.histlen),
            (1, log.repl_offset() as usize)
        );
        // A replica that processed up to `after_a` asks for the next byte.
        let sub = Sub::new(Box::new(|| {}));
        assert_eq!(
            log.continue_sub(&sub, after_a + 1),
            Some(log.repl_offset() - after_a)
        );
        let got = log.take_sub(&sub, Vec::new(), None).unwrap();
        assert_eq!(got, b"*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\nv\r\n");
        log.append(&set(b"c"));
        assert!(
            String::from_utf8(log.take_sub(&sub, Vec::new(), None).unwrap())
                .unwrap()
                .contains("$1\r\nc\r\n")
        );
        // Past the backlog's reach (128 bytes, so two 16 KiB blocks): no continuation.
        log.unsubscribe(&sub);
        for _ in 0..2000 {
            log.append(&set(b"x"));
        }
        let late = Sub::new(Box::new(|| {}));
        assert_eq!(log.continue_sub(&late, after_a + 1), None);
        assert_eq!(log.continue_sub(&late, log.repl_offset() + 2), None);
        assert_eq!(log.continue_sub(&late, log.repl_offset() + 1), Some(0));
        log.unsubscribe(&late);
        log.free_backlog();
        assert!(!log.active());
    }

    #[test]
    fn replicas_share_one_buffer_and_a_slow_one_keeps_the_backlog_long() {
        let log = WriteLog::new();
        assert!(log.create_backlog(16 * 1024));
        let (fast, slow) = (Sub::new(Box::new(|| {})), Sub::new(Box::new(|| {})));
        for s in [&fast, &slow] {
            log.subscribe(s.clone());
            log.start_sub(s);
        }
        let big = vec![b'v'; 1000];
        let set = || {
            let mut u = Ops::default();
            u.push(0, [&b"SET"[..], b"k", &big].into_iter());
            u
        };
        for _ in 0..200 {
            log.append(&set());
            log.take_sub(&fast, Vec::new(), None).unwrap();
        }
        let held = log.backlog_info().unwrap().histlen;
        assert!(held >= 200_000, "the slow replica pins everything: {held}");
        let mem = log.repl_buffer_mem();
        assert!(
            mem < 2 * held,
            "one copy for both replicas: {mem} for {held}"
        );
        // The slow one catches up: the buffer shrinks back to the backlog's size.
        while !log.take_sub(&slow, Vec::new(), None).unwrap().is_empty() {}
        log.trim_repl_buffer();
        log.trim_repl_buffer();
        let info = log.backlog_info().unwrap();
        assert!(info.histlen <= 16 * 1024 + 64 * 1024, "{}", info.histlen);
        assert!(log.repl_buffer_mem() < mem / 2);
        // A replica over the hard limit is dropped at the next new block.
        log.set_replica_limits(ReplicaLimits {
            hard: 32 * 1024,
            soft: 0,
            soft_seconds: 0,
        });
        for _ in 0..100 {
            log.append(&set());
        }
        assert!(slow.overflowed() && log.take_sub(&slow, Vec::new(), None).is_none());
        assert!(fast.overflowed(), "neither took anything");
    }

    #[test]
    fn gate_counts_unlogged_writes() {
        let log = WriteLog::new();
        {
            let g = log.gate();
            assert!(!g.logged());
        }
        log.activate();
        assert!(log.gate().logged());
    }
}

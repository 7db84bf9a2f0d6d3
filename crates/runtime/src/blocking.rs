//! Blocking commands (BLPOP, BZPOPMIN, XREAD BLOCK, ...): what a handler asks for when it has
//! nothing to return yet, and the shared timeout parsing.
//!
//! A blocking handler first tries to serve itself. When there is nothing to pop it calls
//! `ctx.block(BlockSpec { .. })` and writes no reply. The connection then waits; when a write
//! touches one of the keys, the waiting command is run again, on the writer's thread, with
//! `ctx.serving_blocked()` true: if it calls `ctx.block` again it keeps its place in the queue,
//! otherwise whatever it replied is sent to the waiting client. So in serving mode a handler
//! that finds the key of the wrong type must call `ctx.block` again (Redis keeps such clients
//! blocked) instead of replying WRONGTYPE.

use crate::args::OwnedArgs;
use crate::clients::{cflags, ClientHandle};
use crate::ctx::Conn;
use crate::server::Server;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use tern_resp::Reply;

/// What a timed-out client receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutReply {
    /// `*-1` (RESP2) / `_` (RESP3): BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN/MAX,
    /// BZMPOP, XREAD.
    NullArray,
    /// WAIT: the count of replicas that acknowledged `repl_woff` at the time of the reply;
    /// the wait ends once `numreplicas` did.
    Wait { repl_woff: u64, numreplicas: i64 },
    /// WAITAOF's `[local, replicas]` as they stand at the time of the reply; the wait ends
    /// once the AOF is fsynced past `woff` (if `numlocal`) and `numreplicas` replicas
    /// acknowledged `repl_woff` in theirs.
    WaitAof {
        woff: u64,
        repl_woff: u64,
        numlocal: bool,
        numreplicas: i64,
    },
    /// An error: SHUTDOWN's waiters when the shutdown is given up.
    Error(&'static str),
}

impl TimeoutReply {
    pub fn write(&self, srv: &Server, out: &mut Reply) {
        match *self {
            TimeoutReply::NullArray => out.null_array(),
            TimeoutReply::Wait { repl_woff, .. } => {
                out.int(crate::replication::count_acks(srv, repl_woff))
            }
            TimeoutReply::WaitAof {
                woff, repl_woff, ..
            } => crate::wait::waitaof_reply(srv, out, woff, repl_woff),
            TimeoutReply::Error(e) => out.error(e),
        }
    }
}

#[derive(Debug, Clone)]
pub struct BlockSpec {
    /// Keys of the client's current database to wait on (duplicates allowed).
    pub keys: Vec<Vec<u8>>,
    /// Absolute unix time in ms at which to give up; 0 waits forever.
    pub deadline_ms: u64,
    pub timeout_reply: TimeoutReply,
    /// The arguments to run again when a key is ready, when they differ from the original
    /// (XREAD replaces `$` with the stream's last ID at the time it blocked).
    pub rewritten_args: Option<Vec<Vec<u8>>>,
    /// Wake with the command's own reply when a key is deleted or changes type (XREADGROUP),
    /// instead of waiting on.
    pub unblock_on_nokey: bool,
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The command ran again and produced this reply (in the waiter's protocol).
    Reply(Vec<u8>),
    Timeout,
    /// CLIENT UNBLOCK ... ERROR.
    Error(String),
    /// The client went away.
    Cancelled,
}

#[derive(Debug)]
enum State {
    Waiting,
    /// A writer is running the command for this client right now.
    Serving,
    Done(Outcome),
}

/// One blocked client: what it waits for and how to run its command again.
pub struct Waiter {
    pub db: usize,
    keys: Vec<Vec<u8>>,
    args: OwnedArgs,
    resp: u8,
    pub deadline_ms: u64,
    pub timeout_reply: TimeoutReply,
    on_nokey: bool,
    handle: Arc<ClientHandle>,
    state: Mutex<State>,
    wake: tokio::sync::Notify,
}

impl Waiter {
    /// Wait for the outcome (the caller also watches the deadline and the socket).
    pub async fn notified(&self) {
        self.wake.notified().await
    }

    /// The keys waited on (sorted, without duplicates); none for WAIT and the like.
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.keys
    }

    /// The name of the blocked command, as the client sent it.
    pub fn command_name(&self) -> &[u8] {
        self.args.args().get(0)
    }

    pub fn client(&self) -> &Arc<ClientHandle> {
        &self.handle
    }

    /// The outcome if the wait is over.
    pub fn outcome(&self) -> Option<Outcome> {
        match &*self.state.lock() {
            State::Done(o) => Some(o.clone()),
            _ => None,
        }
    }

    /// End the wait with `o` unless a writer got there first; true if this call ended it.
    fn finish_if_waiting(&self, o: Outcome) -> bool {
        let mut st = self.state.lock();
        if matches!(*st, State::Waiting) {
            *st = State::Done(o);
            true
        } else {
            false
        }
    }
}

#[derive(Default)]
struct Queues {
    by_key: HashMap<(usize, Vec<u8>), VecDeque<Arc<Waiter>>>,
    by_client: HashMap<u64, Arc<Waiter>>,
}

/// Every blocked client, by key (FIFO per key) and by client id.
#[derive(Default)]
pub struct Blocking {
    blocked: AtomicUsize,
    queues: Mutex<Queues>,
}

impl Blocking {
    /// Any client blocked at all? (The writers' fast path: one atomic load.)
    #[inline]
    pub fn any(&self) -> bool {
        self.blocked.load(SeqCst) > 0
    }

    /// (blocked clients, distinct keys waited on, keys with an unblock-on-delete waiter).
    pub fn counts(&self) -> (usize, usize, usize) {
        let q = self.queues.lock();
        let nokey = q
            .by_key
            .values()
            .filter(|w| w.iter().any(|w| w.on_nokey))
            .count();
        (q.by_client.len(), q.by_key.len(), nokey)
    }

    fn register(&self, w: &Arc<Waiter>) {
        let mut q = self.queues.lock();
        for k in &w.keys {
            q.by_key
                .entry((w.db, k.clone()))
                .or_default()
                .push_back(w.clone());
        }
        q.by_client.insert(w.handle.id, w.clone());
        self.blocked.fetch_add(1, SeqCst);
        w.handle.set_flag(cflags::BLOCKED, true);
    }

    fn unregister(&self, w: &Arc<Waiter>) {
        let mut q = self.queues.lock();
        if q.by_client.remove(&w.handle.id).is_none() {
            return;
        }
        for k in &w.keys {
            let slot = (w.db, k.clone());
            if let Some(list) = q.by_key.get_mut(&slot) {
                list.retain(|x| !Arc::ptr_eq(x, w));
                if list.is_empty() {
                    q.by_key.remove(&slot);
                }
            }
        }
        self.blocked.fetch_sub(1, SeqCst);
        w.handle.set_flag(cflags::BLOCKED, false);
    }

    /// Waiters on `(db, key)` in arrival order.
    fn waiters_on(&self, db: usize, key: &[u8]) -> Vec<Arc<Waiter>> {
        let q = self.queues.lock();
        q.by_key
            .get(&(db, key.to_vec()))
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Every key someone waits on (FLUSHALL, SWAPDB, MOVE: whole databases change at once).
    fn all_keys(&self) -> Vec<(usize, Vec<u8>)> {
        self.queues.lock().by_key.keys().cloned().collect()
    }

    /// CLIENT UNBLOCK: end `id`'s wait with a timeout or an error; false if it is not blocked.
    pub fn unblock(&self, id: u64, error: bool) -> bool {
        let Some(w) = self.queues.lock().by_client.get(&id).cloned() else {
            return false;
        };
        // A SHUTDOWN waiting for replicas has no timeout to end it with: Redis 7.2.6 crashes
        // on CLIENT UNBLOCK TIMEOUT here (later Redis answers 0), while ERROR ends the
        // caller's wait and leaves the shutdown pending.
        if !error && w.timeout_reply == crate::shutdown_sequence::WAITER_REPLY {
            return false;
        }
        let o = if error {
            Outcome::Error("UNBLOCKED client unblocked via CLIENT UNBLOCK".into())
        } else {
            Outcome::Timeout
        };
        self.end_if_waiting(&w, o)
    }

    /// Every blocked client.
    pub fn waiters(&self) -> Vec<Arc<Waiter>> {
        self.queues.lock().by_client.values().cloned().collect()
    }

    /// End `w`'s wait with the error `e` (without its `-`) unless a writer served it first.
    pub fn fail(&self, w: &Arc<Waiter>, e: String) -> bool {
        self.end_if_waiting(w, Outcome::Error(e))
    }

    /// This master became a replica: every blocked client gets Redis's UNBLOCKED error and is
    /// closed after it (Redis's disconnectAllBlockedClients). Returns how many.
    pub fn unblock_all_on_role_change(&self) -> usize {
        let waiting: Vec<Arc<Waiter>> = self.queues.lock().by_client.values().cloned().collect();
        waiting
            .iter()
            .filter(|w| {
                // Flagged before the wake-up, so the connection sees it with the error.
                let close = crate::clients::cflags::CLOSE_AFTER_REPLY;
                w.handle.set_flag(close, true);
                let ended = self.end_if_waiting(
                    w,
                    Outcome::Error(
                        "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
                            .into(),
                    ),
                );
                if !ended {
                    // A writer served it just before: its reply goes out, the client stays.
                    w.handle.set_flag(close, false);
                }
                ended
            })
            .count()
    }

    /// End the wait of every client whose timeout reply is `which` (as if timed out); returns
    /// how many.
    pub fn time_out_all(&self, which: TimeoutReply) -> usize {
        let waiting: Vec<Arc<Waiter>> = self
            .queues
            .lock()
            .by_client
            .values()
            .filter(|w| w.timeout_reply == which)
            .cloned()
            .collect();
        waiting
            .iter()
            .filter(|w| self.end_if_waiting(w, Outcome::Timeout))
            .count()
    }

    /// Is any client waiting with `which` as its timeout reply?
    pub fn any_waiting(&self, which: TimeoutReply) -> bool {
        self.any()
            && self
                .queues
                .lock()
                .by_client
                .values()
                .any(|w| w.timeout_reply == which)
    }

    /// End `w`'s wait with `o` unless a writer got there first: out of the registry, woken.
    fn end_if_waiting(&self, w: &Arc<Waiter>, o: Outcome) -> bool {
        if !w.finish_if_waiting(o) {
            return false;
        }
        self.unregister(w);
        w.wake.notify_one();
        true
    }
}

/// Start waiting: register the client on its keys, then try once more, so a push that ran
/// between the command's first attempt and the registration is not missed.
pub fn start_wait(
    srv: &Arc<Server>,
    conn: &Conn,
    resp: u8,
    spec: BlockSpec,
    args: Vec<Vec<u8>>,
) -> Arc<Waiter> {
    let mut keys = spec.keys;
    keys.sort();
    keys.dedup();
    let w = Arc::new(Waiter {
        db: conn.db,
        keys,
        args: OwnedArgs::new(spec.rewritten_args.unwrap_or(args)),
        resp,
        deadline_ms: spec.deadline_ms,
        timeout_reply: spec.timeout_reply,
        on_nokey: spec.unblock_on_nokey,
        handle: conn.handle.clone(),
        state: Mutex::new(State::Waiting),
        wake: tokio::sync::Notify::new(),
    });
    srv.blocking.register(&w);
    // A key may have become ready between the command and its registration. Waits on no key
    // (WAIT, WAITAOF) depend on the connection's own state: running them again elsewhere
    // would answer for another connection.
    if !w.keys.is_empty() {
        let mut ready = VecDeque::new();
        try_serve(srv, conn, &w, &mut ready, true);
        serve_queue(srv, conn, ready);
    }
    w
}

/// The client stopped waiting on its own side (deadline passed, connection closed). Returns
/// the outcome to deliver: `own` if the wait was still open, or what a writer delivered first.
pub fn end_wait(srv: &Server, w: &Arc<Waiter>, own: Outcome) -> Outcome {
    if srv.blocking.end_if_waiting(w, own.clone()) {
        return own;
    }
    loop {
        if let Some(o) = w.outcome() {
            return o;
        }
        // A writer is running the command for us this very moment: wait for its result.
        std::thread::yield_now();
    }
}

/// Write the reply for a finished wait into the client's output.
pub fn write_outcome(srv: &Server, conn: &Conn, out: &mut Reply, w: &Waiter, o: Outcome) {
    // A served command was counted where it ran; one that timed out or was unblocked with an
    // error is counted now, once (Redis's updateStatsOnUnblock; not for WAIT and WAITAOF).
    let key_wait = matches!(w.timeout_reply, TimeoutReply::NullArray);
    match o {
        Outcome::Reply(bytes) => out.raw(&bytes),
        Outcome::Timeout => {
            w.timeout_reply.write(srv, out);
            if key_wait {
                crate::dispatch::count_unblocked_call(conn, false);
            }
        }
        Outcome::Error(e) => {
            out.error(&e);
            crate::dispatch::count_unblocked_call(conn, true);
        }
        Outcome::Cancelled => {}
    }
}

/// After a write command: queue the keys it wrote for the blocked clients to look at. Called
/// only when someone is blocked.
pub fn note_written_keys(
    srv: &Server,
    db: usize,
    spec: &crate::table::CommandSpec,
    args: &crate::Args,
    ready: &mut VecDeque<(usize, Vec<u8>)>,
) {
    match spec.name {
        // These change whole databases (or another database than the client's).
        "flushall" | "flushdb" | "swapdb" | "move" | "copy" | "restore" | "exec" => {
            ready.extend(srv.blocking.all_keys());
        }
        _ => {
            for (pos, _) in spec.key_positions(args) {
                ready.push_back((db, args.get(pos).to_vec()));
            }
        }
    }
}

/// Serve the blocked clients waiting on the queued keys, in arrival order per key. Commands run
/// for them may write further keys (BLMOVE pushes to its destination), which join the queue.
pub fn serve_queue(srv: &Arc<Server>, conn: &Conn, mut ready: VecDeque<(usize, Vec<u8>)>) {
    // Terminates: every served waiter leaves the registry, and only served commands queue keys.
    while let Some((db, key)) = ready.pop_front() {
        if !srv.blocking.any() {
            return;
        }
        // As Redis (LOOKUP_NOEFFECTS): an expired key is not there for waiters, and looking
        // must not delete it (that happens, and is propagated, when a command touches it).
        let live = {
            let (h, g) = srv.store.lock(db, &key);
            g.peek(h, &key, tern_engine::clock::now_ms()).is_some()
        };
        for w in srv.blocking.waiters_on(db, &key) {
            if live || w.on_nokey {
                try_serve(srv, conn, &w, &mut ready, false);
            }
        }
    }
}

/// Run `w`'s command again on this thread. Served: the reply goes to the waiter, which is
/// woken. Not served (it asked to block again): it keeps its place. `recheck`: the run that
/// closes the race with registration, which Redis does not make: its key lookups are not
/// counted (hits, misses, keymiss events), as the command's own first run counted them.
fn try_serve(
    srv: &Arc<Server>,
    conn: &Conn,
    w: &Arc<Waiter>,
    ready: &mut VecDeque<(usize, Vec<u8>)>,
    recheck: bool,
) {
    {
        let mut st = w.state.lock();
        if !matches!(*st, State::Waiting) {
            return;
        }
        *st = State::Serving;
    }
    let mut tmp = Conn::new(w.handle.clone(), false, conn.stats.clone());
    tmp.db = w.db;
    tmp.serving_blocked = true;
    tmp.quiet_reads = recheck;
    tmp.now_ms = tern_engine::clock::now_ms();
    let mut out = Reply::new();
    out.resp = w.resp;
    crate::dispatch::execute(srv, &mut tmp, &mut out, &w.args.args());
    ready.extend(tmp.ready_keys.drain(..));
    let served = tmp.pending_block.take().is_none();
    if served {
        *w.state.lock() = State::Done(Outcome::Reply(out.buf));
        srv.blocking.unregister(w);
        w.wake.notify_one();
    } else {
        *w.state.lock() = State::Waiting;
    }
}

/// A blocking timeout in seconds (decimals allowed), as Redis's getTimeoutFromObjectOrReply
/// parses it for BLPOP & co. Returns the absolute deadline in ms (0 = forever).
pub fn parse_timeout_secs(arg: &[u8], now_ms: u64) -> Result<u64, &'static str> {
    const ERR: &str = "ERR timeout is not a float or out of range";
    // Redis parses with strtold: hex floats and "inf" are numbers (and then out of range).
    if arg.is_empty() {
        return Err(ERR);
    }
    let secs = crate::args::strtod_exact(arg, true).ok_or(ERR)?;
    if secs < 0.0 {
        return Err("ERR timeout is negative");
    }
    let ms = secs * 1000.0;
    if ms >= (i64::MAX / 2) as f64 {
        return Err("ERR timeout is out of range");
    }
    deadline_from_ms(ms.ceil() as u64, now_ms)
}

/// A blocking timeout in integer milliseconds (XREAD/XREADGROUP BLOCK).
pub fn parse_timeout_ms(arg: &[u8], now_ms: u64) -> Result<u64, &'static str> {
    let ms = crate::args::parse_i64(arg).ok_or("ERR timeout is not an integer or out of range")?;
    if ms < 0 {
        return Err("ERR timeout is negative");
    }
    deadline_from_ms(ms as u64, now_ms)
}

fn deadline_from_ms(ms: u64, now_ms: u64) -> Result<u64, &'static str> {
    if ms == 0 {
        return Ok(0);
    }
    now_ms
        .checked_add(ms)
        .filter(|d| *d < i64::MAX as u64)
        .ok_or("ERR timeout is out of range")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout_secs(b"0", 1000), Ok(0));
        assert_eq!(parse_timeout_secs(b"0.1", 1000), Ok(1100));
        assert_eq!(parse_timeout_secs(b"1", 1000), Ok(2000));
        assert_eq!(
            parse_timeout_secs(b"-1", 1000),
            Err("ERR timeout is negative")
        );
        assert!(parse_timeout_secs(b"abc", 1000).is_err());
        assert_eq!(
            parse_timeout_secs(b"0x7FFFFFFFFFFFFF", 1000),
            Err("ERR timeout is out of range")
        );
        assert_eq!(
            parse_timeout_secs(b"inf", 1000),
            Err("ERR timeout is out of range")
        );
        assert!(parse_timeout_secs(b" 1", 1000).is_err());
        assert_eq!(parse_timeout_ms(b"10", 1000), Ok(1010));
        assert!(parse_timeout_ms(b"1.5", 1000).is_err());
    }
}

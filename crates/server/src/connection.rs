//! One client connection: read what is there, run every complete command, answer them all with
//! one write. Runs as a task on the worker thread that accepted it, for its whole life.

use crate::outbox::{write_now, Outbox};
use bytes::{Buf, BytesMut};
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::Poll;
use tern_resp::{Limits, Reply, RequestParser};
use tern_runtime::args::OwnedArgs;
use tern_runtime::blocking::{self, Outcome, Waiter};
use tern_runtime::clients::ClientHandle;
use tern_runtime::dispatch;
use tern_runtime::{Args, Conn, Server};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const READ_CHUNK: usize = 16 * 1024;
/// An argument this big is read whole as soon as it arrives (Redis's PROTO_MBULK_BIG_ARG).
const BIG_ARG: usize = 32 * 1024;

// Per worker thread by nature (reset by that worker's park hook, which has no server at hand).
thread_local! {
    /// Replies this worker has written since it last went idle (see `on_worker_park`).
    static BATCHES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The worker thread is about to wait for I/O: nothing else is ready to run.
pub fn on_worker_park() {
    BATCHES.with(|b| b.set(0));
}

/// A client's byte stream: TCP, TLS over TCP, or a Unix socket. Generic (one copy per kind),
/// so plain TCP pays nothing for the others.
pub trait ClientStream: AsyncRead + AsyncWrite + Unpin {}
impl<S: AsyncRead + AsyncWrite + Unpin> ClientStream for S {}

pub async fn serve<S: ClientStream>(srv: Arc<Server>, mut stream: S, handle: Arc<ClientHandle>) {
    let stats = srv.stats.local();
    let mut conn = Conn::new(handle.clone(), false, stats.clone());
    conn.drain_first = true;
    tern_runtime::acl::set_default_auth(&srv, &mut conn);
    let mut parser = RequestParser::new();
    let mut inbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut out = Reply::new();
    // Replies the client has not taken yet: meanwhile its requests are still read and run.
    let mut outbox = Outbox::default();
    // Input left unprocessed when a blocking command paused the pipeline.
    let mut resume = false;
    'conn: loop {
        if !resume {
            // Room for the pending bulk, but never more than doubling what actually arrived: a
            // client announcing a huge argument cannot make us allocate it before sending it.
            let need = parser.pending_bulk_need(inbuf.len());
            let want = need.min(inbuf.len().max(READ_CHUNK)).max(READ_CHUNK / 4);
            if inbuf.capacity() - inbuf.len() < want {
                inbuf.reserve(want.max(READ_CHUNK));
            }
            let n = if outbox.is_idle() && conn.push_rx.is_none() {
                stream.read_buf(&mut inbuf).await
            } else {
                let io = wait_io(&mut stream, &mut inbuf, &mut outbox, conn.push_rx.as_ref()).await;
                if handle.reply_pending.load(Relaxed) != outbox.bytes() {
                    output_written(&srv, &handle, &outbox);
                }
                match io {
                    Io::Read(r) => r,
                    Io::Wrote => continue 'conn,
                    Io::WriteFailed => break,
                    Io::Push => {
                        // Pub/sub messages or MONITOR lines: taken once the connections
                        // already readable are served (more messages to a write when
                        // publishers are busy; see the reply path below).
                        if BATCHES.with(|b| b.replace(b.get().saturating_add(1))) > 0 {
                            tokio::task::yield_now().await;
                        }
                        let Some(rx) = conn.push_rx.as_mut() else {
                            continue 'conn;
                        };
                        let n = rx.drain_into(&mut out.buf);
                        if n > 0 {
                            // A keyspace event or invalidation reveals a write.
                            conn.observe_all(&srv);
                        }
                        let ok = send_replies(
                            &srv,
                            &mut conn,
                            &mut out,
                            &mut outbox,
                            &mut stream,
                            &stats,
                        )
                        .await;
                        // Counted as queued push output until it joined the replies.
                        if let Some(rx) = conn.push_rx.as_mut() {
                            rx.written(n);
                        }
                        if !ok || handle.is_killed() {
                            break 'conn;
                        }
                        continue 'conn;
                    }
                }
            };
            let mut n = match n {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            // A big argument on its way: take all the socket holds now (Redis reads a big
            // argument whole), so its memory shows at once and it completes sooner. Small
            // requests never pay the extra read.
            while parser.pending_bulk_need(inbuf.len()) >= BIG_ARG {
                // What arrived so far counts at once (client eviction), as after each of
                // Redis's reads.
                record_input(&handle, &inbuf, &parser);
                tern_runtime::client_eviction::check(&srv, &handle);
                if handle.is_killed() {
                    break;
                }
                let need = parser.pending_bulk_need(inbuf.len());
                // Room for what already waits in the socket (one read takes it, so the
                // argument's memory shows sooner), or double what came: never room for
                // bytes only announced.
                let want = need.min(inbuf.len().max(READ_CHUNK).max(socket_backlog(handle.fd)));
                if inbuf.capacity() - inbuf.len() < want {
                    inbuf.reserve(want);
                }
                // Only what is already there: a read that would wait ends the loop.
                let now =
                    tokio::time::timeout(std::time::Duration::ZERO, stream.read_buf(&mut inbuf));
                match now.await {
                    Ok(Ok(m)) if m > 0 => n += m,
                    _ => break,
                }
            }
            if handle.is_killed() {
                break;
            }
            stats.net_input_bytes.add(n as u64);
        }
        resume = false;
        conn.start_batch();
        // Replies still waiting count against the output limit with the batch's.
        out.set_limit(
            tern_runtime::clients::reply_cap(&srv, &handle).saturating_sub(outbox.bytes()),
        );
        handle.last_interaction.store(conn.now_ms, Relaxed);
        let limits = Limits {
            max_bulk_len: srv.config.hot.proto_max_bulk_len.load(Relaxed),
            auth_required: !conn.authenticated && srv.acl.auth_required(),
        };
        let mut pos = 0;
        let mut fatal = false;
        let mut blocked = None;
        let mut offload = None;
        let mut paused = None;
        // A held command's input figures as CLIENT LIST showed them when it was parsed.
        let mut held_input = (0, 0);
        loop {
            match parser.parse(&inbuf[pos..], &limits) {
                Ok(Some(used)) => {
                    let args = Args::new(parser.arg_base(&inbuf[pos..]), parser.ranges());
                    // As CLIENT LIST shows a command running: its arguments (argv-mem), and
                    // the unprocessed input, this command included unless it is big (Redis
                    // moves a big argument out of the query buffer instead of copying it).
                    let argv: usize = parser.ranges().iter().map(|&(a, b)| b - a).sum();
                    handle.argv_mem.store(argv, Relaxed);
                    let big = used >= BIG_ARG;
                    handle
                        .qbuf
                        .store(inbuf.len() - pos - if big { used } else { 0 }, Relaxed);
                    if big {
                        // Redis evicts clients before running a command; a big one may be
                        // what takes this client over the limit.
                        tern_runtime::client_eviction::check(&srv, &handle);
                        if handle.is_killed() {
                            fatal = true;
                            break;
                        }
                    }
                    // Pushes queued for this client go out in order with its replies: those
                    // that came before the command ahead of its reply, those it caused (a
                    // PUBLISH to itself, its own keyspace events) after it, as in Redis 7.2.
                    let pushes = conn.push_rx.is_some();
                    if pushes {
                        conn.drain_pushes(&srv, &mut out);
                    }
                    {
                        let _busy = tern_runtime::watchdog::busy_command(&srv, &args);
                        dispatch::execute(&srv, &mut conn, &mut out, &args);
                    }
                    if pushes || conn.push_rx.is_some() {
                        conn.drain_pushes(&srv, &mut out);
                    }
                    pos += used;
                    if std::mem::take(&mut conn.pending_pause) {
                        paused = Some(OwnedArgs::new(args.iter()));
                        held_input = (handle.qbuf.load(Relaxed), handle.argv_mem.load(Relaxed));
                        break;
                    }
                    if let Some(spec) = conn.pending_block.take() {
                        blocked = Some((spec, args.to_vecs()));
                        break;
                    }
                    if conn.pending_offload {
                        offload = Some(OwnedArgs::new(args.iter()));
                        break;
                    }
                    if conn.pending_sync.is_some() {
                        break;
                    }
                    if conn.close_after_reply || handle.is_killed() || out.overflowed() {
                        fatal = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    out.error(&e.0);
                    fatal = true;
                    break;
                }
            }
        }
        if out.overflowed() {
            // Gone from CLIENT LIST and the clients' memory at once, before anyone's eviction
            // could count what it held.
            close_over_limit(&srv, &handle);
            break;
        }
        inbuf.advance(pos);
        if inbuf.is_empty() {
            if inbuf.capacity() > 4 * READ_CHUNK {
                // A big idle read buffer goes (Redis shrinks idle query buffers).
                inbuf = BytesMut::with_capacity(READ_CHUNK);
            } else {
                // Back to the buffer's start, so its spare room (qbuf-free) is the whole
                // allocation whatever the batch consumed, as Redis's query buffer shows.
                let _ = inbuf.try_reclaim(inbuf.capacity() + 1);
            }
        }
        record_input(&handle, &inbuf, &parser);
        // maxmemory-clients: this client's input and state may have grown.
        conn.account_memory(&srv);
        if handle.is_killed() {
            break;
        }
        if !fatal && inbuf.len() as u64 > srv.config.hot.client_query_buffer_limit.load(Relaxed) {
            crate::warning!(
                "Closing client that reached max query buffer length: id={} addr={}",
                handle.id,
                handle.addr
            );
            break;
        }
        if let Some(args) = paused {
            // Held back: an observing command waits for the other threads to take in what
            // was already sent (see `drain`), then runs; under CLIENT PAUSE a command is
            // dispatched again each time the pause changes, until it is let through.
            let mut drain = std::mem::take(&mut conn.pending_drain);
            let mut held_by_pause = false;
            loop {
                if drain {
                    drain = false;
                    crate::drain::before_observing().await;
                    // It runs as if straight from the input (CLIENT LIST shows itself so).
                    handle.qbuf.store(held_input.0, Relaxed);
                    handle.argv_mem.store(held_input.1, Relaxed);
                } else {
                    if !held_by_pause {
                        // CLIENT PAUSE: earlier replies go out, then the command waits (a
                        // blocked client, as Redis counts it).
                        if !flush_replies(
                            &srv,
                            &mut conn,
                            &mut out,
                            &mut outbox,
                            &mut stream,
                            &stats,
                        )
                        .await
                        {
                            break 'conn;
                        }
                        handle.set_flag(tern_runtime::clients::cflags::BLOCKED, true);
                        held_by_pause = true;
                    }
                    srv.pause.changed().await;
                    if handle.is_killed() {
                        break;
                    }
                }
                conn.start_batch();
                let a = args.args();
                conn.drain_first = false;
                {
                    let _busy = tern_runtime::watchdog::busy_command(&srv, &a);
                    dispatch::execute(&srv, &mut conn, &mut out, &a);
                }
                conn.drain_first = true;
                if std::mem::take(&mut conn.pending_pause) {
                    continue;
                }
                // Let through: it may block, move to another thread or end the connection,
                // as when it is dispatched straight from the input.
                if let Some(spec) = conn.pending_block.take() {
                    blocked = Some((spec, a.to_vecs()));
                } else if conn.pending_offload {
                    offload = Some(OwnedArgs::new(a.iter()));
                } else if conn.close_after_reply {
                    fatal = true;
                }
                break;
            }
            if held_by_pause {
                handle.set_flag(tern_runtime::clients::cflags::BLOCKED, false);
            }
            if handle.is_killed() {
                break;
            }
            resume = true;
        }
        if let Some(args) = offload {
            conn.pending_offload = false;
            let (c, o) = run_offloaded(&srv, conn, out, args).await;
            conn = c;
            out = o;
            resume = true;
        }
        if let Some((spec, args)) = blocked {
            // Earlier replies of the pipeline go out before the wait, as in Redis.
            if !flush_replies(&srv, &mut conn, &mut out, &mut outbox, &mut stream, &stats).await {
                break;
            }
            let w = blocking::start_wait(&srv, &conn, out.resp, spec, args);
            let outcome = wait_blocked(&srv, &w, &mut stream, &mut inbuf, &mut conn).await;
            if outcome == Outcome::Cancelled {
                break;
            }
            blocking::write_outcome(&srv, &conn, &mut out, &w, outcome);
            // Unblocked because this master became a replica: answered, then closed.
            if handle.has_flag(tern_runtime::clients::cflags::CLOSE_AFTER_REPLY) {
                fatal = true;
            }
            // Served by whichever thread wrote its key: what it reveals is not tracked here.
            conn.observe_all(&srv);
            conn.start_batch();
            resume = true;
        }
        if out.overflowed() {
            close_over_limit(&srv, &handle);
            break;
        }
        if !out.buf.is_empty() {
            // While other connections of this worker have been served since it was last idle,
            // the reply waits until the connections already readable are served too, as
            // Redis writes its replies before sleeping: a burst of replies then finds the
            // clients' side awake (on loopback, waking an idle reader is the costliest part
            // of a write), and a lone client is answered at once.
            if BATCHES.with(|b| b.replace(b.get().saturating_add(1))) > 0 {
                tokio::task::yield_now().await;
            }
            if !send_replies(&srv, &mut conn, &mut out, &mut outbox, &mut stream, &stats).await {
                break;
            }
        }
        if fatal {
            // What was answered goes out before the close (QUIT, a protocol error).
            flush_replies(&srv, &mut conn, &mut out, &mut outbox, &mut stream, &stats).await;
            break;
        }
        if let Some(kind) = conn.pending_sync.take() {
            if !flush_replies(&srv, &mut conn, &mut out, &mut outbox, &mut stream, &stats).await {
                break;
            }
            // The rest of the input is the replica's, read as it sends on its link.
            crate::replica::serve(&srv, &mut stream, &handle, kind, &mut inbuf).await;
            break;
        }
        // Drop big argument tables so an idle client holds little memory (Redis frees argv
        // after each command).
        parser.shrink();
    }
    if conn.is_monitor() {
        srv.remove_monitor(handle.id);
    }
    tern_runtime::txn::reset(&srv, &mut conn);
    tern_runtime::subscriptions::forget_client(&srv, &mut conn);
    tern_runtime::tracking::forget_client(&srv, &conn);
    handle.push.lock().take();
    handle.detach_socket();
    srv.clients.unregister(handle.id);
    let _ = stream.shutdown().await;
}

/// Bytes received on the socket and not read yet (0 if unknown): the socket's own, and on
/// io_uring those already in receive buffers.
fn socket_backlog(fd: std::os::fd::RawFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: fd is this connection's open socket; FIONREAD only stores an int.
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    let in_socket = if rc < 0 { 0 } else { n.max(0) as usize };
    in_socket + crate::uring::unread_bytes(fd)
}

/// What the client's pending input holds, as CLIENT LIST shows it: the parsed part of a
/// pending request is its arguments (argv-mem), the rest its query buffer.
fn record_input(handle: &ClientHandle, inbuf: &BytesMut, parser: &RequestParser) {
    let parsed = parser.parsed_len();
    handle.qbuf.store(inbuf.len() - parsed, Relaxed);
    handle.argv_mem.store(parsed, Relaxed);
    // Mid-request, only the room the pending argument will fill counts (Redis sizes a big
    // argument's buffer exactly); between requests, the whole spare capacity.
    let free = inbuf.capacity() - inbuf.len();
    handle.qbuf_free.store(
        if parser.in_progress() {
            free.min(parser.pending_bulk_need(inbuf.len()))
        } else {
            free
        },
        Relaxed,
    );
}

/// What woke a connection that has output waiting (or a push queue).
enum Io {
    Read(std::io::Result<usize>),
    /// Waiting output was written (or flushed), and nothing else happened.
    Wrote,
    /// Writing failed: the client is gone.
    WriteFailed,
    /// Push output was queued for the client.
    Push,
}

/// Wait for input, for the socket to take waiting output, or for push output. Each wake-up
/// first writes as much waiting output as the socket takes (as Redis writes before it
/// sleeps), then looks for input before push output, so neither output nor a stream of
/// messages keeps a client's requests from being read (Redis reads a client whatever it has
/// pending).
async fn wait_io<S: ClientStream>(
    stream: &mut S,
    inbuf: &mut BytesMut,
    outbox: &mut Outbox,
    push: Option<&tern_runtime::push::PushRx>,
) -> Io {
    let mut ready = push.map(|rx| rx.ready());
    std::future::poll_fn(|cx| {
        let mut wrote = false;
        loop {
            match outbox.poll_send(stream, cx) {
                Poll::Ready(Ok(_)) => wrote = true,
                Poll::Ready(Err(_)) => return Poll::Ready(Io::WriteFailed),
                Poll::Pending => break,
            }
        }
        if let Poll::Ready(r) = pin!(stream.read_buf(&mut *inbuf)).poll(cx) {
            return Poll::Ready(Io::Read(r));
        }
        if wrote {
            return Poll::Ready(Io::Wrote);
        }
        if let Some(r) = ready.as_mut() {
            if Pin::new(r).poll(cx).is_ready() {
                return Poll::Ready(Io::Push);
            }
        }
        Poll::Pending
    })
    .await
}

/// Waiting output went out: CLIENT LIST, the output limits and client eviction see what is
/// left.
fn output_written(srv: &Server, handle: &ClientHandle, outbox: &Outbox) {
    handle.reply_pending.store(outbox.bytes(), Relaxed);
    if outbox.bytes() == 0 {
        tern_runtime::output_limits::under_soft_limit(handle);
    }
    tern_runtime::client_eviction::check(srv, handle);
}

/// Hand the replies gathered so far to the socket (false: the client is gone or closed): at
/// once when nothing else waits and the socket takes them, otherwise queued behind what
/// waits. With `appendfsync always` nothing goes out before what those commands wrote or
/// read is on disk (one fsync covers every client waiting meanwhile).
async fn send_replies<S: ClientStream>(
    srv: &Server,
    conn: &mut Conn,
    out: &mut Reply,
    outbox: &mut Outbox,
    stream: &mut S,
    stats: &tern_runtime::stats::ThreadStats,
) -> bool {
    if out.overflowed() {
        close_over_limit(srv, &conn.handle);
        return false;
    }
    if out.buf.is_empty() {
        return true;
    }
    let (lsn, written) = conn.take_observed();
    if tern_runtime::aof::must_wait(srv) && !tern_runtime::aof::reached(srv, lsn, written) {
        tern_runtime::aof::wait_durable(srv, lsn, written).await;
    }
    let handle = &*conn.handle;
    stats.net_output_bytes.add(out.buf.len() as u64);
    handle.reply_buffer.used(out.buf.len());
    // Keep the buffer near the size its recent use earned (see `reply_buffer`).
    let cap = tern_runtime::reply_buffer::capacity_for(handle);
    let mut sent = 0;
    if outbox.bytes() == 0 {
        // Usually the socket takes it all at once.
        match write_now(stream, &out.buf).await {
            Ok(n) => sent = n,
            Err(_) => return false,
        }
        if outbox.wrote_directly(stream).await.is_err() {
            return false;
        }
        if sent == out.buf.len() {
            out.buf.clear();
            if out.buf.capacity() > 2 * cap {
                out.buf.shrink_to(cap);
            }
            return true;
        }
    }
    // A client slow to read: the rest waits, counted in CLIENT LIST (obl/omem), against the
    // output limits and in client eviction.
    let rest = std::mem::replace(&mut out.buf, Vec::with_capacity(cap));
    outbox.push(rest, sent);
    handle.reply_pending.store(outbox.bytes(), Relaxed);
    if tern_runtime::output_limits::reached(srv, handle) {
        close_over_limit(srv, handle);
        return false;
    }
    tern_runtime::client_eviction::check(srv, handle);
    !handle.is_killed()
}

/// `send_replies`, then wait until the socket took everything (before a blocking wait, a
/// close, a replica's sync).
async fn flush_replies<S: ClientStream>(
    srv: &Server,
    conn: &mut Conn,
    out: &mut Reply,
    outbox: &mut Outbox,
    stream: &mut S,
    stats: &tern_runtime::stats::ThreadStats,
) -> bool {
    if !send_replies(srv, conn, out, outbox, stream, stats).await {
        return false;
    }
    let handle = conn.handle.clone();
    let drained = outbox
        .drain(stream, |left| {
            handle.reply_pending.store(left, Relaxed);
            tern_runtime::client_eviction::check(srv, &handle);
        })
        .await;
    tern_runtime::output_limits::under_soft_limit(&handle);
    drained.is_ok() && !handle.is_killed()
}

/// Redis's hard (or soft) output-buffer limit: the client goes without what was not written.
fn close_over_limit(srv: &Server, handle: &ClientHandle) {
    tern_runtime::output_limits::close(srv, handle, tern_runtime::output_limits::Close::Scheduled);
}

/// Wait until a writer serves the blocked command, its deadline passes, CLIENT UNBLOCK ends
/// it, or the client goes away. Input that arrives meanwhile is kept for afterwards.
async fn wait_blocked<S: ClientStream>(
    srv: &Arc<Server>,
    w: &Arc<Waiter>,
    stream: &mut S,
    inbuf: &mut BytesMut,
    conn: &mut Conn,
) -> Outcome {
    let deadline = (w.deadline_ms != 0).then(|| {
        let now = tern_engine::clock::now_ms();
        tokio::time::Instant::now()
            + std::time::Duration::from_millis(w.deadline_ms.saturating_sub(now))
    });
    // WAIT and WAITAOF end when replicas acknowledge (and the AOF's fsync) suffice.
    let acks = matches!(
        w.timeout_reply,
        blocking::TimeoutReply::Wait { .. } | blocking::TimeoutReply::WaitAof { .. }
    );
    let satisfied = tern_runtime::wait::satisfied(srv, w.timeout_reply);
    tokio::pin!(satisfied);
    loop {
        if let Some(o) = w.outcome() {
            return o;
        }
        if inbuf.capacity() - inbuf.len() < READ_CHUNK / 4 {
            inbuf.reserve(READ_CHUNK);
        }
        // Biased: a served reply goes out before pushes the serving caused (invalidations).
        tokio::select! {
            biased;
            _ = w.notified() => {}
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            } => return blocking::end_wait(srv, w, Outcome::Timeout),
            r = stream.read_buf(inbuf) => {
                if matches!(r, Ok(0) | Err(_)) {
                    return blocking::end_wait(srv, w, Outcome::Cancelled);
                }
            }
            done = &mut satisfied, if acks => {
                let o = match done {
                    Ok(reply) => Outcome::Reply(reply),
                    Err(e) => Outcome::Error(e),
                };
                return blocking::end_wait(srv, w, o);
            }
            // A RESP3 subscriber may block: its messages keep flowing meanwhile.
            () = async {
                match conn.push_rx.as_ref() {
                    Some(rx) => rx.ready().await,
                    None => std::future::pending().await,
                }
            } => {
                let Some(rx) = conn.push_rx.as_mut() else { continue };
                let mut buf = Vec::new();
                let n = rx.drain_into(&mut buf);
                let ok = stream.write_all(&buf).await.is_ok() && stream.flush().await.is_ok();
                rx.written(n);
                if !ok {
                    return blocking::end_wait(srv, w, Outcome::Cancelled);
                }
            }
        }
    }
}

/// Run one command on a background thread (its handler asked, its input being huge): this
/// worker thread goes on serving its other connections meanwhile.
async fn run_offloaded(
    srv: &Arc<Server>,
    mut conn: Conn,
    mut out: Reply,
    args: OwnedArgs,
) -> (Conn, Reply) {
    let srv = srv.clone();
    let pool = conn.offload_pool;
    tern_runtime::background::run(pool, move || {
        // Count on the background thread's own statistics, not the worker's.
        let worker_stats = std::mem::replace(&mut conn.stats, srv.stats.local());
        conn.offloaded = true;
        conn.mark = std::time::Instant::now();
        {
            let args = args.args();
            let _busy = tern_runtime::watchdog::busy_command(&srv, &args);
            dispatch::execute(&srv, &mut conn, &mut out, &args);
        }
        conn.offloaded = false;
        conn.stats = worker_stats;
        (conn, out)
    })
    .await
}

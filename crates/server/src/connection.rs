//! One client connection: read what is there, run every complete command, answer them all with
//! one write. Runs as a task on the worker thread that accepted it, for its whole life.

use bytes::{Buf, BytesMut};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tern_commands::args::OwnedArgs;
use tern_commands::blocking::{self, Outcome, Waiter};
use tern_commands::clients::ClientHandle;
use tern_commands::dispatch;
use tern_commands::{Args, Conn, Server};
use tern_resp::{Limits, Reply, RequestParser};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const READ_CHUNK: usize = 16 * 1024;
/// An argument this big is read whole as soon as it arrives (Redis's PROTO_MBULK_BIG_ARG).
const BIG_ARG: usize = 32 * 1024;

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
    tern_commands::acl::set_default_auth(&srv, &mut conn);
    let mut parser = RequestParser::new();
    let mut inbuf = BytesMut::with_capacity(READ_CHUNK);
    let mut out = Reply::new();
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
            let n = match conn.push_rx.as_mut() {
                None => stream.read_buf(&mut inbuf).await,
                Some(rx) => {
                    // Input first: a stream of messages cannot keep a subscriber's commands
                    // (UNSUBSCRIBE...) from being read.
                    tokio::select! {
                        biased;
                        r = stream.read_buf(&mut inbuf) => r,
                        () = rx.ready() => {
                            // Pub/sub messages or MONITOR lines: write what is queued once
                            // the connections already readable are served (more messages to
                            // a write when publishers are busy; see the reply path below).
                            if BATCHES.with(|b| b.replace(b.get().saturating_add(1))) > 0 {
                                tokio::task::yield_now().await;
                            }
                            let n = rx.drain_into(&mut out.buf);
                            if n > 0 {
                                // A keyspace event or invalidation reveals a write.
                                conn.observe_all();
                            }
                            let ok = write_replies(&srv, &mut conn, &mut out, &mut stream, &stats).await;
                            // Counted against the output limit until written.
                            if let Some(rx) = conn.push_rx.as_mut() {
                                rx.written(n);
                            }
                            if !ok || handle.is_killed() {
                                break 'conn;
                            }
                            continue 'conn;
                        }
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
                let need = parser.pending_bulk_need(inbuf.len());
                let want = need.min(inbuf.len().max(READ_CHUNK));
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
        out.set_limit(tern_commands::clients::reply_cap(&srv, &handle));
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
        loop {
            match parser.parse(&inbuf[pos..], &limits) {
                Ok(Some(used)) => {
                    let args = Args::new(parser.arg_base(&inbuf[pos..]), parser.ranges());
                    // CLIENT LIST's qbuf counts the unprocessed input, this command included.
                    handle.qbuf.store(inbuf.len() - pos, Relaxed);
                    // Pushes queued for this client go out in order with its replies: those
                    // that came before the command ahead of its reply, those it caused (a
                    // PUBLISH to itself, its own keyspace events) after it, as in Redis 7.2.
                    let pushes = conn.push_rx.is_some();
                    if pushes {
                        conn.drain_pushes(&mut out);
                    }
                    dispatch::execute(&srv, &mut conn, &mut out, &args);
                    if pushes || conn.push_rx.is_some() {
                        conn.drain_pushes(&mut out);
                    }
                    pos += used;
                    if std::mem::take(&mut conn.pending_pause) {
                        paused = Some(OwnedArgs::new(args.iter()));
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
        inbuf.advance(pos);
        // As Redis shows it: the parsed part of a pending request is its arguments (argv-mem),
        // the rest its query buffer.
        let parsed = parser.parsed_len();
        handle.qbuf.store(inbuf.len() - parsed, Relaxed);
        handle.argv_mem.store(parsed, Relaxed);
        // Mid-request, only the room the pending argument will fill counts (Redis sizes a
        // big argument's buffer exactly); between requests, the whole spare capacity.
        let free = inbuf.capacity() - inbuf.len();
        handle.qbuf_free.store(
            if parser.in_progress() {
                free.min(parser.pending_bulk_need(inbuf.len()))
            } else {
                free
            },
            Relaxed,
        );
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
            // CLIENT PAUSE: earlier replies go out, then the command waits (a blocked client,
            // as Redis counts it) and is dispatched again until the pause lets it through.
            if !write_replies(&srv, &mut conn, &mut out, &mut stream, &stats).await {
                break;
            }
            handle.set_flag(tern_commands::clients::cflags::BLOCKED, true);
            let shutdown = srv.shutdown.subscribe();
            loop {
                srv.pause.changed().await;
                if handle.is_killed() || *shutdown.borrow() {
                    break;
                }
                conn.start_batch();
                let a = args.args();
                dispatch::execute(&srv, &mut conn, &mut out, &a);
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
            handle.set_flag(tern_commands::clients::cflags::BLOCKED, false);
            if handle.is_killed() || *shutdown.borrow() {
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
            if !write_replies(&srv, &mut conn, &mut out, &mut stream, &stats).await {
                break;
            }
            let w = blocking::start_wait(&srv, &conn, out.resp, spec, args);
            let outcome = wait_blocked(&srv, &w, &mut stream, &mut inbuf, &mut conn).await;
            if outcome == Outcome::Cancelled {
                break;
            }
            blocking::write_outcome(&conn, &mut out, &w, outcome);
            // Served by whichever thread wrote its key: what it reveals is not tracked here.
            conn.observe_all();
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
            if !write_replies(&srv, &mut conn, &mut out, &mut stream, &stats).await {
                break;
            }
            // Keep the buffer near the size its recent use earned (see `reply_buffer`).
            let cap = tern_commands::reply_buffer::capacity_for(&handle);
            if out.buf.capacity() > 2 * cap {
                out.buf.shrink_to(cap);
            }
        }
        if fatal {
            break;
        }
        if let Some(kind) = conn.pending_sync.take() {
            // The rest of the input, if any, was sent before the replica read our reply:
            // Redis too drops it.
            crate::replica::serve(&srv, &mut stream, &handle, kind).await;
            break;
        }
        // Drop big idle read buffers and argument tables so an idle client holds little
        // memory (Redis frees argv after each command and shrinks idle query buffers).
        if inbuf.is_empty() && inbuf.capacity() > 4 * READ_CHUNK {
            inbuf = BytesMut::with_capacity(READ_CHUNK);
        }
        parser.shrink();
    }
    if conn.is_monitor() {
        srv.remove_monitor(handle.id);
    }
    tern_commands::multi::reset(&srv, &mut conn);
    tern_commands::pubsub::forget_client(&srv, &mut conn);
    tern_commands::tracking::forget_client(&srv, &conn);
    handle.push.lock().take();
    handle.detach_socket();
    srv.clients.unregister(handle.id);
    let _ = stream.shutdown().await;
}

/// Write the replies gathered so far (false: the client is gone). With `appendfsync always`
/// nothing goes out before what those commands wrote or read is on disk (one fsync covers
/// every client waiting meanwhile).
async fn write_replies<S: ClientStream>(
    srv: &Server,
    conn: &mut Conn,
    out: &mut Reply,
    stream: &mut S,
    stats: &tern_commands::stats::ThreadStats,
) -> bool {
    if out.overflowed() {
        close_over_limit(srv, &conn.handle);
        return false;
    }
    if out.buf.is_empty() {
        return true;
    }
    let lsn = conn.take_observed();
    if tern_commands::aof::must_wait() && tern_commands::propagate::LOG.durable() < lsn {
        tern_commands::aof::wait_durable(lsn).await;
    }
    stats.net_output_bytes.add(out.buf.len() as u64);
    conn.handle.reply_buffer.used(out.buf.len());
    // Usually the socket takes it all at once; a client that does not read gets the slow path.
    let ok = match stream.write(&out.buf).await {
        Ok(n) if n == out.buf.len() => true,
        Ok(n) if n > 0 => write_rest(srv, &conn.handle, &out.buf, n, stream).await,
        _ => false,
    };
    // TLS may keep records it could not send yet; on TCP this is a no-op.
    let ok = ok && stream.flush().await.is_ok();
    out.buf.clear();
    ok
}

/// The rest of a reply the client is slow to read: the bytes waiting show in CLIENT LIST
/// (obl/omem), and the client is closed once they stay over its class's soft limit for longer
/// than the limit's seconds, as Redis's checkClientOutputBufferLimits.
async fn write_rest<S: ClientStream>(
    srv: &Server,
    handle: &ClientHandle,
    buf: &[u8],
    mut off: usize,
    stream: &mut S,
) -> bool {
    let mut soft_since: Option<tokio::time::Instant> = None;
    let ok = loop {
        let pending = buf.len() - off;
        if pending == 0 {
            break true;
        }
        handle.reply_pending.store(pending, Relaxed);
        tern_commands::client_eviction::check(srv, handle);
        if handle.is_killed() {
            break false;
        }
        let (_, soft, secs) = tern_commands::clients::obuf_limits(srv, handle);
        let counted = tern_commands::clients::counted_reply_bytes(
            pending,
            handle.reply_buffer.size.load(Relaxed),
        );
        let over_soft = soft != 0 && counted as u64 >= soft;
        let deadline = if over_soft {
            let since = *soft_since.get_or_insert_with(tokio::time::Instant::now);
            // Redis counts whole seconds and checks from its cron: never earlier than that.
            Some(since + std::time::Duration::from_millis(secs * 1000 + 500))
        } else {
            soft_since = None;
            None
        };
        tokio::select! {
            r = stream.write(&buf[off..]) => match r {
                Ok(n) if n > 0 => off += n,
                _ => break false,
            },
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            } => {
                close_over_limit(srv, handle);
                break false;
            }
        }
    };
    handle.reply_pending.store(0, Relaxed);
    ok
}

/// Redis's hard (or soft) output-buffer limit: the client goes without what was not written.
fn close_over_limit(srv: &Server, handle: &ClientHandle) {
    srv.pubsub.obuf_limit_disconnections.fetch_add(1, Relaxed);
    crate::warning!(
        "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
        handle.info_line("NULL", tern_engine::clock::now_ms())
    );
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
    let mut shutdown = srv.shutdown.subscribe();
    // WAITAOF 1 0: the AOF writer's fsync ends the wait.
    let fsync_target = match w.timeout_reply {
        blocking::TimeoutReply::WaitAof {
            woff,
            ends_on_fsync: true,
        } => Some(woff),
        _ => None,
    };
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
            _ = shutdown.changed() => return blocking::end_wait(srv, w, Outcome::Cancelled),
            synced = async {
                match fsync_target {
                    Some(lsn) => tern_commands::aof::wait_fsynced(lsn).await,
                    None => std::future::pending().await,
                }
            } => {
                let o = if synced {
                    // [1 local fsync, 0 replicas]: the same bytes in RESP2 and RESP3.
                    Outcome::Reply(b"*2\r\n:1\r\n:0\r\n".to_vec())
                } else {
                    Outcome::Error(tern_commands::wait::waitaof_aof_off())
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
    tern_commands::background::run(pool, move || {
        // Count on the background thread's own statistics, not the worker's.
        let worker_stats = std::mem::replace(&mut conn.stats, srv.stats.local());
        conn.offloaded = true;
        conn.mark = std::time::Instant::now();
        dispatch::execute(&srv, &mut conn, &mut out, &args.args());
        conn.offloaded = false;
        conn.stats = worker_stats;
        (conn, out)
    })
    .await
}

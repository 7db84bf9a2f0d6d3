//! A connection that became a replica (SYNC / PSYNC): the snapshot file, then the replication
//! stream, until the replica goes away, is killed, falls too far behind or the server stops.

use crate::connection::ClientStream;
use bytes::BytesMut;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use tern_runtime::clients::ClientHandle;
use tern_runtime::diskless_sync::{self, Feed};
use tern_runtime::replication::{self, SyncKind};
use tern_runtime::sync_rdb;
use tern_runtime::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

const FILE_CHUNK: usize = 256 * 1024;

pub async fn serve<S: ClientStream>(
    srv: &Arc<Server>,
    stream: &mut S,
    handle: &Arc<ClientHandle>,
    kind: SyncKind,
    pending: &mut BytesMut,
) {
    let ready = Arc::new(Notify::new());
    replication::sync_requested(srv, handle);
    // What the replica sent right after its SYNC (a command that needs a reply drops it).
    replication::replica_input(srv, handle, pending);
    if handle.is_killed() {
        return;
    }
    if let SyncKind::Psync { replid, offset } = &kind {
        let wake = ready.clone();
        let continued = replication::try_continue(
            srv,
            handle,
            replid,
            *offset,
            Box::new(move || wake.notify_one()),
        );
        if let Some((rep, line)) = continued {
            if stream.write_all(line.as_bytes()).await.is_err() {
                return;
            }
            stream_to_replica(srv, stream, handle, &rep.sub, &ready).await;
            return;
        }
    }
    let wake = ready.clone();
    let mut rep = {
        let srv = srv.clone();
        let handle = handle.clone();
        // Subscribing waits for in-flight unlogged writes: off the async worker.
        tokio::task::spawn_blocking(move || {
            replication::attach(&srv, &handle, Box::new(move || wake.notify_one()))
        })
        .await
        .expect("attach replica")
    };
    if diskless_sync::wanted(srv, handle) {
        return serve_diskless(srv, stream, handle, rep, &kind, &ready).await;
    }
    // The snapshot runs on its own thread; the replica gets a newline every second meanwhile
    // (Redis's keepalive before the payload). If the replica leaves first (or is dropped at
    // its output limit), the snapshot is given up, or finished as the server's dump
    // (`sync_rdb::unwanted`).
    let sub = rep.sub.clone();
    let abort = Arc::new(AtomicBool::new(false));
    let orphaned = Arc::new(AtomicBool::new(false));
    let job = {
        let srv = srv.clone();
        let (abort, orphaned) = (abort.clone(), orphaned.clone());
        tokio::task::spawn_blocking(move || {
            let _running = sync_rdb::Running::start(&srv);
            let r = replication::write_sync_rdb(&srv, &mut rep, &abort);
            if let (Ok(Some(made)), true) = (&r, orphaned.load(Relaxed)) {
                sync_rdb::keep_as_dump(&srv, made);
            }
            (rep, r)
        })
    };
    tokio::pin!(job);
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    tick.tick().await;
    let mut inbuf = BytesMut::new();
    let (mut rep, made) = loop {
        let gone = tokio::select! {
            r = &mut job => break r.expect("replica snapshot"),
            _ = ready.notified() => {
                let over = sub.overflowed();
                if over {
                    output_limit_reached(handle);
                }
                over
            }
            _ = tick.tick() => {
                handle.is_killed()
                    || stream.write_all(b"\n").await.is_err()
                    || stream.flush().await.is_err()
            }
            r = stream.read_buf(&mut inbuf) => {
                replication::replica_input(srv, handle, &mut inbuf);
                matches!(r, Ok(0) | Err(_)) || handle.is_killed()
            }
        };
        if gone {
            if !sync_rdb::unwanted(srv, &abort) {
                orphaned.store(true, Relaxed);
            }
            return;
        }
    };
    let made = match made {
        Ok(Some(v)) => v,
        Ok(None) => return,
        Err(e) => {
            tern_runtime::log::warning(&e);
            return;
        }
    };
    rep.set_state("send_bulk");
    let sent = send_rdb(srv, stream, &made.path, &kind, made.offset).await;
    rep.sync_file_sent();
    if sent.is_err() {
        return;
    }
    rep.set_state("online");
    tern_runtime::log::notice(&format!(
        "Synchronization with replica {} succeeded",
        replication::replica_name(srv, handle)
    ));
    stream_to_replica(srv, stream, handle, &rep.sub, &ready).await;
}

/// A diskless full sync: wait for the transfer this replica joined (a newline every second
/// meanwhile), write what it hands over, then wait for the replica's first REPLCONF ACK before
/// the stream starts (the payload's end is found by its mark, so nothing may follow it until
/// the replica has loaded it).
async fn serve_diskless<S: ClientStream>(
    srv: &Arc<Server>,
    stream: &mut S,
    handle: &Arc<ClientHandle>,
    rep: replication::Attached,
    kind: &SyncKind,
    ready: &Notify,
) {
    let name = replication::replica_name(srv, handle);
    let psync = matches!(kind, SyncKind::Psync { .. });
    let mut feed = diskless_sync::join(srv, handle.clone(), rep.sub.clone(), psync, name.clone());
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    tick.tick().await;
    let mut started = false;
    let mut inbuf = BytesMut::with_capacity(1024);
    loop {
        tokio::select! {
            // A replica that goes away mid-transfer is noticed at once (its socket reads
            // EOF), not at the next chunk, which a slow snapshot may take long to make.
            r = stream.read_buf(&mut inbuf) => {
                if matches!(r, Ok(0) | Err(_)) {
                    tern_runtime::log::notice(&format!("Connection with replica {name} lost."));
                    return;
                }
            }
            f = feed.recv() => match f {
                Some(Feed::Data(bytes)) => {
                    started = true;
                    let write = async {
                        stream.write_all(&bytes).await?;
                        stream.flush().await
                    };
                    tokio::pin!(write);
                    let began = std::time::Instant::now();
                    // A replica whose stream outgrows its limit meanwhile is dropped, as in
                    // Redis, even in the middle of its payload; so is one that takes nothing
                    // for repl-timeout (read at every tick: CONFIG SET applies to a stuck
                    // write too).
                    loop {
                        tokio::select! {
                            r = &mut write => {
                                if r.is_err() {
                                    return;
                                }
                                break;
                            }
                            _ = ready.notified() => {
                                if rep.sub.overflowed() {
                                    return output_limit_reached(handle);
                                }
                            }
                            _ = tick.tick() => {
                                if began.elapsed() >= repl_timeout(srv) {
                                    tern_runtime::log::warning(&format!(
                                        "Disconnecting timedout replica (full sync): {name}"
                                    ));
                                    return;
                                }
                            }
                        }
                    }
                }
                Some(Feed::Done) => break,
                // The transfer failed (or dropped this replica): the replica reconnects.
                None => return,
            },
            _ = ready.notified() => {
                if rep.sub.overflowed() {
                    return output_limit_reached(handle);
                }
            }
            _ = tick.tick() => {
                if handle.is_killed() {
                    return;
                }
                // A stopped server (DEBUG SLEEP) sends no keepalive, as a sleeping Redis.
                if !started
                    && !srv.world.is_stopped()
                    && (stream.write_all(b"\n").await.is_err() || stream.flush().await.is_err())
                {
                    return;
                }
            }
        }
    }
    drop(feed);
    rep.set_state("online");
    tern_runtime::log::notice(&format!("Synchronization with replica {name} succeeded"));
    if !first_ack(srv, stream, handle, repl_timeout(srv), inbuf).await {
        return;
    }
    stream_to_replica(srv, stream, handle, &rep.sub, ready).await;
}

/// Read what the replica sends until its first REPLCONF ACK (recorded); false if the
/// connection ends or nothing comes within `timeout`.
async fn first_ack<S: ClientStream>(
    srv: &Server,
    stream: &mut S,
    handle: &Arc<ClientHandle>,
    timeout: std::time::Duration,
    mut inbuf: BytesMut,
) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let acked = sends_ack(&inbuf);
        replication::replica_input(srv, handle, &mut inbuf);
        if handle.is_killed() {
            return false;
        }
        if acked {
            return true;
        }
        match tokio::time::timeout_at(deadline, stream.read_buf(&mut inbuf)).await {
            Ok(Ok(n)) if n > 0 => {}
            Ok(_) => {
                tern_runtime::log::notice(&format!(
                    "Connection with replica {} lost.",
                    replication::replica_name(srv, handle)
                ));
                return false;
            }
            Err(_) => {
                tern_runtime::log::warning(&format!(
                    "Disconnecting timedout replica (streaming sync): {}",
                    replication::replica_name(srv, handle)
                ));
                return false;
            }
        }
    }
}

/// The complete commands in `buf` include a REPLCONF ACK.
fn sends_ack(buf: &[u8]) -> bool {
    use tern_resp::{Limits, RequestParser};
    use tern_runtime::args::{eq_ic, Args};
    let mut parser = RequestParser::new();
    let limits = Limits {
        max_bulk_len: 1 << 20,
        auth_required: false,
    };
    let mut pos = 0;
    while let Ok(Some(used)) = parser.parse(&buf[pos..], &limits) {
        let args = Args::new(parser.arg_base(&buf[pos..]), parser.ranges());
        if args.len() >= 2 && eq_ic(&args[0], "replconf") && eq_ic(&args[1], "ack") {
            return true;
        }
        pos += used;
    }
    false
}

fn repl_timeout(srv: &Server) -> std::time::Duration {
    std::time::Duration::from_secs(srv.config.get_i64("repl-timeout").max(1) as u64)
}

async fn send_rdb<S: ClientStream>(
    srv: &Server,
    stream: &mut S,
    path: &std::path::Path,
    kind: &SyncKind,
    offset: u64,
) -> std::io::Result<()> {
    let mut file = tokio::fs::File::open(path).await?;
    let len = file.metadata().await?.len();
    let mut head = String::new();
    if matches!(kind, SyncKind::Psync { .. }) {
        head.push_str(&format!(
            "+FULLRESYNC {} {offset}\r\n",
            replication::replid(srv)
        ));
    }
    head.push_str(&format!("${len}\r\n"));
    stream.write_all(head.as_bytes()).await?;
    let mut buf = vec![0u8; FILE_CHUNK];
    loop {
        let n = file.read(&mut buf).await?;
        if n == 0 {
            return stream.flush().await;
        }
        stream.write_all(&buf[..n]).await?;
    }
}

fn output_limit_reached(handle: &ClientHandle) {
    tern_runtime::log::warning(&format!(
        "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
        handle.id, handle.addr
    ));
}

/// Drain the subscription into the socket; what the replica sends (REPLCONF ACK) is read and
/// recorded.
async fn stream_to_replica<S: ClientStream>(
    srv: &Server,
    stream: &mut S,
    handle: &Arc<ClientHandle>,
    sub: &Arc<replication::Sub>,
    ready: &Notify,
) {
    let mut inbuf = BytesMut::with_capacity(1024);
    let mut spare = Vec::new();
    let overflowed = || output_limit_reached(handle);
    loop {
        if handle.is_killed() {
            return;
        }
        // With an AOF, only what it already holds (written; fsynced under `always`).
        let durable = tern_runtime::aof::must_wait(srv).then(|| srv.propagation.log.durable());
        let Some(bytes) = srv.propagation.log.take_sub(sub, spare, durable) else {
            if sub.overflowed() {
                overflowed();
            }
            return;
        };
        if !bytes.is_empty() {
            // While the socket is full the stream piles up in the replication buffer: past
            // the limit the replica is dropped, even though this write never completes.
            let write = async {
                stream.write_all(&bytes).await?;
                stream.flush().await
            };
            tokio::pin!(write);
            loop {
                tokio::select! {
                    r = &mut write => {
                        if r.is_err() {
                            return;
                        }
                        break;
                    }
                    _ = ready.notified() => {
                        if sub.overflowed() {
                            return overflowed();
                        }
                        if sub.closed() {
                            return;
                        }
                    }
                }
            }
            spare = bytes;
            continue;
        }
        spare = bytes;
        tokio::select! {
            _ = ready.notified() => {}
            r = stream.read_buf(&mut inbuf) => {
                if matches!(r, Ok(0) | Err(_)) {
                    tern_runtime::log::notice(&format!(
                        "Connection with replica {} lost.",
                        replication::replica_name(srv, handle)
                    ));
                    return;
                }
                replication::replica_input(srv, handle, &mut inbuf);
            }
        }
    }
}

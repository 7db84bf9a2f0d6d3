//! The master side of replication: the registry of attached replicas, what SYNC / PSYNC start
//! (always a full resynchronization) and what REPLCONF records (the commands are the server
//! family's).
//!
//! A full sync sends an RDB snapshot, then the replication stream from the snapshot's cut on:
//! the replica subscribes to the write log (`tern_persist::wlog::Sub`), the forkless snapshot
//! starts the subscription at its cut (every shard locked), so the replica gets exactly the
//! writes after the state it loaded. The connection side (sending the file, then draining the
//! subscription) runs in the server crate. Partial resynchronization (a backlog) and the
//! replica side (REPLICAOF) are not implemented yet.

use crate::args::{eq_ic, parse_i64, Args};
use crate::ctx::Ctx;
use crate::server::Server;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use tern_engine::clock;
pub use tern_persist::wlog::Sub;

/// What a replica asked for; the connection takes over once the reply so far is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncKind {
    /// SYNC: the bulk RDB, then the stream.
    Sync,
    /// PSYNC: `+FULLRESYNC <replid> <offset>` first.
    Psync,
}

/// SYNC / PSYNC: the connection turns into a replica once the reply so far is written.
pub fn start_sync(ctx: &mut Ctx, kind: SyncKind) {
    if ctx.conn.handle.has_flag(crate::clients::cflags::REPLICA) {
        // Redis ignores SYNC from a client that already is a replica.
        return;
    }
    ctx.conn.pending_sync = Some(kind);
}

/// REPLCONF ACK / FACK: the replica's processed offset.
pub fn record_ack(srv: &Server, id: u64, offset: i64) {
    if let Some(r) = srv.replicas.list.lock().iter_mut().find(|r| r.id == id) {
        r.ack_offset = offset.max(0) as u64;
        r.ack_ms = clock::now_ms();
    }
}

/// What a client told us before it became a replica (REPLCONF listening-port/ip-address).
#[derive(Default, Clone)]
struct Announced {
    listening_port: u16,
    ip: Option<String>,
}

/// REPLCONF listening-port: the port INFO shows for this (future) replica.
pub fn announce_listening_port(srv: &Server, id: u64, port: u16) {
    announce(srv, id).listening_port = port;
}

/// REPLCONF ip-address: the address INFO shows for this (future) replica.
pub fn announce_ip(srv: &Server, id: u64, ip: String) {
    announce(srv, id).ip = Some(ip);
}

fn announce(srv: &Server, id: u64) -> parking_lot::MappedMutexGuard<'_, Announced> {
    parking_lot::MutexGuard::map(srv.replicas.announced.lock(), |v| {
        let i = match v.iter().position(|(c, _)| *c == id) {
            Some(i) => i,
            None => {
                v.push((id, Announced::default()));
                v.len() - 1
            }
        };
        &mut v[i].1
    })
}

/// One attached replica, as INFO replication shows it.
struct Replica {
    id: u64,
    ip: String,
    port: u16,
    /// "wait_bgsave" while its snapshot is produced, "send_bulk" while sent, then "online".
    state: &'static str,
    ack_offset: u64,
    ack_ms: u64,
}

/// The master side's state, owned by the server (`Server::replicas`).
#[derive(Default)]
pub struct Replicas {
    /// What clients announced before they became replicas, by client id.
    announced: Mutex<Vec<(u64, Announced)>>,
    list: Mutex<Vec<Replica>>,
    /// Full syncs served since start (INFO stats sync_full).
    pub sync_full: AtomicU64,
    /// When the cron last sent a PING down the stream.
    last_ping_ms: AtomicU64,
}

/// A replica attached to the write log; dropping it detaches it.
pub struct Attached {
    pub sub: Arc<Sub>,
    srv: Arc<Server>,
    id: u64,
    rdb: Option<PathBuf>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.srv.propagation.log.unsubscribe(&self.sub);
        let replicas = &self.srv.replicas;
        replicas.list.lock().retain(|r| r.id != self.id);
        replicas.announced.lock().retain(|(c, _)| *c != self.id);
        if let Some(p) = self.rdb.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Attached {
    pub fn set_state(&self, state: &'static str) {
        let mut list = self.srv.replicas.list.lock();
        if let Some(r) = list.iter_mut().find(|r| r.id == self.id) {
            r.state = state;
        }
    }
}

/// The replica's output limit: client-output-buffer-limit's hard limit for its class
/// (0 = none).
fn output_limit(srv: &Server) -> usize {
    match srv.config.hot.obuf_limits[1][0].load(Relaxed) {
        0 => usize::MAX,
        n => n as usize,
    }
}

/// Register the client as a replica and subscribe it to the write log (not started yet).
/// `wake` is called whenever stream bytes are there to take.
pub fn attach(
    srv: &Arc<Server>,
    handle: &crate::clients::ClientHandle,
    wake: Box<dyn Fn() + Send + Sync>,
) -> Attached {
    let announced = srv
        .replicas
        .announced
        .lock()
        .iter()
        .find(|(c, _)| *c == handle.id)
        .map(|(_, a)| a.clone())
        .unwrap_or_default();
    let ip = announced.ip.unwrap_or_else(|| {
        handle
            .addr
            .rsplit_once(':')
            .map(|(h, _)| h.to_string())
            .unwrap_or_default()
    });
    handle.set_flag(crate::clients::cflags::REPLICA, true);
    srv.replicas.list.lock().push(Replica {
        id: handle.id,
        ip,
        port: announced.listening_port,
        state: "wait_bgsave",
        ack_offset: 0,
        ack_ms: clock::now_ms(),
    });
    crate::log::notice(&format!("Replica {} asks for synchronization", handle.addr));
    let sub = Sub::new(output_limit(srv), wake);
    srv.propagation.log.subscribe(sub.clone());
    Attached {
        sub,
        srv: srv.clone(),
        id: handle.id,
        rdb: None,
    }
}

/// Write the full-sync snapshot to a temp file in the working directory; the replica's stream
/// starts at its cut. Blocking (run it off the async workers). Returns (path, stream offset).
pub fn write_sync_rdb(srv: &Server, rep: &mut Attached) -> Result<(PathBuf, u64), String> {
    crate::log::notice("Starting BGSAVE for SYNC with target: disk (forkless snapshot)");
    let path = PathBuf::from(format!("temp-{}-repl-{}.rdb", std::process::id(), rep.id));
    rep.rdb = Some(path.clone());
    let file = std::fs::File::create(&path).map_err(|e| {
        format!(
            "Failed opening the temp RDB file {} for the replica sync: {e}",
            path.display()
        )
    })?;
    let offset = AtomicU64::new(0);
    let sub = rep.sub.clone();
    let now = clock::now_ms();
    let extra = vec![
        ("repl-stream-db", "0".to_string()),
        ("repl-id", crate::info_sections::master_replid().to_string()),
    ];
    let writer = crate::aof::snapshot_into(
        srv,
        Some(&|| offset.store(srv.propagation.log.start_sub(&sub), Relaxed)),
        || {
            let mut aux = crate::persistence::rdb_aux(now, false);
            aux.extend(extra);
            aux.push(("repl-offset", srv.propagation.log.repl_offset().to_string()));
            crate::persistence::rdb_writer(
                srv,
                std::io::BufWriter::with_capacity(1 << 20, file),
                &aux,
                now,
            )
        },
    );
    writer
        .finish()
        .and_then(|bw| bw.into_inner().map_err(|e| e.into_error()))
        .map_err(|e| format!("Write error saving the RDB for the replica sync: {e}"))?;
    srv.replicas.sync_full.fetch_add(1, Relaxed);
    Ok((path, offset.load(Relaxed)))
}

/// The replication cron: PING down the stream every `repl-ping-replica-period` seconds.
pub fn cron(srv: &Server) {
    if srv.propagation.log.subscribers() == 0 {
        // The first PING comes a full period after a replica attaches.
        srv.replicas.last_ping_ms.store(clock::now_ms(), Relaxed);
        return;
    }
    let period_ms = (srv.config.get_i64("repl-ping-replica-period").max(1) as u64) * 1000;
    let now = clock::now_ms();
    if now.saturating_sub(srv.replicas.last_ping_ms.load(Relaxed)) >= period_ms {
        srv.replicas.last_ping_ms.store(now, Relaxed);
        srv.propagation.log.ping_subs();
    }
}

/// Replicas online that acknowledged within `max_lag` seconds.
fn good_replicas(srv: &Server, max_lag: u64) -> usize {
    let now = clock::now_ms();
    srv.replicas
        .list
        .lock()
        .iter()
        .filter(|r| r.state == "online" && now.saturating_sub(r.ack_ms) / 1000 <= max_lag)
        .count()
}

pub const ERR_NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// Redis's min-replicas-to-write: writes need that many good replicas (None: they may run).
/// One relaxed load while the option is off.
pub fn deny_write(srv: &Server) -> Option<&'static str> {
    let h = &srv.config.hot;
    let want = h.min_replicas_to_write.load(Relaxed);
    let lag = h.min_replicas_max_lag.load(Relaxed);
    if want == 0 || lag == 0 || good_replicas(srv, lag) >= want as usize {
        return None;
    }
    Some(ERR_NOREPLICAS)
}

/// INFO's min_slaves_good_slaves.
pub fn good_replicas_now(srv: &Server) -> usize {
    good_replicas(srv, srv.config.hot.min_replicas_max_lag.load(Relaxed))
}

/// One attached replica as INFO, ROLE and the metrics report it: ip, port, state, acknowledged
/// offset, seconds since its last acknowledgement.
pub struct ReplicaRow {
    pub ip: String,
    pub port: u16,
    pub state: &'static str,
    pub offset: u64,
    pub lag: u64,
}

/// Every attached replica, in attach order.
pub fn replica_rows(srv: &Server) -> Vec<ReplicaRow> {
    let now = clock::now_ms();
    srv.replicas
        .list
        .lock()
        .iter()
        .map(|r| ReplicaRow {
            ip: r.ip.clone(),
            port: r.port,
            state: r.state,
            offset: r.ack_offset,
            lag: now.saturating_sub(r.ack_ms) / 1000,
        })
        .collect()
}

/// INFO replication's replica lines and count.
pub fn info_replicas(srv: &Server, out: &mut String) -> usize {
    use std::fmt::Write;
    let rows = replica_rows(srv);
    for (i, r) in rows.iter().enumerate() {
        let _ = write!(
            out,
            "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
            r.ip, r.port, r.state, r.offset, r.lag
        );
    }
    rows.len()
}

/// What a replica sends on its stream: REPLCONF ACK <offset> (recorded), anything else is
/// ignored. Consumes the complete commands in `inbuf`.
pub fn replica_input(
    srv: &Server,
    handle: &crate::clients::ClientHandle,
    inbuf: &mut bytes::BytesMut,
) {
    use bytes::Buf;
    use tern_resp::{Limits, RequestParser};
    let mut parser = RequestParser::new();
    let limits = Limits {
        max_bulk_len: 1 << 20,
        auth_required: false,
    };
    let mut pos = 0;
    loop {
        match parser.parse(&inbuf[pos..], &limits) {
            Ok(Some(used)) => {
                let args = Args::new(parser.arg_base(&inbuf[pos..]), parser.ranges());
                if args.len() >= 3 && eq_ic(&args[0], "replconf") && eq_ic(&args[1], "ack") {
                    if let Some(off) = parse_i64(&args[2]) {
                        record_ack(srv, handle.id, off);
                    }
                }
                pos += used;
            }
            Ok(None) => break,
            Err(_) => {
                pos = inbuf.len();
                break;
            }
        }
    }
    inbuf.advance(pos);
}

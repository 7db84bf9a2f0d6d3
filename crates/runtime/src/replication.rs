//! The master side of replication: SYNC / PSYNC (always a full resynchronization), REPLCONF,
//! and the registry of attached replicas.
//!
//! A full sync sends an RDB snapshot, then the replication stream from the snapshot's cut on:
//! the replica subscribes to the write log (`tern_persist::wlog::Sub`), the forkless snapshot
//! starts the subscription at its cut (every shard locked), so the replica gets exactly the
//! writes after the state it loaded. The connection side (sending the file, then draining the
//! subscription) runs in the server crate. Partial resynchronization (a backlog) and the
//! replica side (REPLICAOF) are not implemented yet.

use crate::args::{eq_ic, parse_i64, Args};
use crate::ctx::Ctx;
use crate::propagate::LOG;
use crate::server::Server;
use crate::table::CommandSpec;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use tern_engine::clock;
pub use tern_persist::wlog::Sub;

pub static COMMANDS: &[CommandSpec] = crate::table::commands! { group "server";
    ("sync", 1, [ADMIN NOSCRIPT NO_ASYNC_LOADING NO_MULTI], [], [], sync, "1.0.0",
        "An internal command used in replication.", complexity: ""),
    ("psync", -3, [ADMIN NOSCRIPT NO_ASYNC_LOADING NO_MULTI], [], [], psync, "2.8.0",
        "An internal command used in replication.", complexity: ""),
    ("replconf", -1, [ADMIN NOSCRIPT LOADING STALE ALLOW_BUSY], [], [], replconf, "3.0.0",
        "An internal command for configuring the replication stream."),
};

/// What a replica asked for; the connection takes over once the reply so far is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncKind {
    /// SYNC: the bulk RDB, then the stream.
    Sync,
    /// PSYNC: `+FULLRESYNC <replid> <offset>` first.
    Psync,
}

fn sync(ctx: &mut Ctx, _args: &Args) {
    start_sync(ctx, SyncKind::Sync);
}

fn psync(ctx: &mut Ctx, _args: &Args) {
    // No backlog: every PSYNC (any replid, any offset) gets a full resynchronization.
    start_sync(ctx, SyncKind::Psync);
}

fn start_sync(ctx: &mut Ctx, kind: SyncKind) {
    if ctx.conn.handle.has_flag(crate::clients::cflags::REPLICA) {
        // Redis ignores SYNC from a client that already is a replica.
        return;
    }
    ctx.conn.pending_sync = Some(kind);
}

/// REPLCONF option value pairs. A replica's own announcements are recorded for INFO;
/// ACK offsets update its entry.
fn replconf(ctx: &mut Ctx, args: &Args) {
    if args.len().is_multiple_of(2) {
        return ctx.error("ERR syntax error");
    }
    let id = ctx.conn.handle.id;
    let mut i = 1;
    while i < args.len() {
        let (opt, val) = (&args[i], &args[i + 1]);
        if eq_ic(opt, "listening-port") {
            let Some(port) = parse_i64(val).filter(|p| (0..=65535).contains(p)) else {
                return ctx.error("ERR value is not an integer or out of range");
            };
            announce(id).listening_port = port as u16;
        } else if eq_ic(opt, "ip-address") {
            announce(id).ip = Some(String::from_utf8_lossy(val).into_owned());
        } else if eq_ic(opt, "ack") || eq_ic(opt, "fack") {
            // Sent by replicas on the stream itself (read there): never answered.
            if let Some(off) = parse_i64(val) {
                record_ack(id, off);
            }
            return;
        } else if eq_ic(opt, "capa")
            || eq_ic(opt, "getack")
            || eq_ic(opt, "rdb-only")
            || eq_ic(opt, "rdb-filter-only")
        {
            // Accepted: the sync is always disk-based and full; there is no stream to ack.
        } else {
            return ctx.error(&format!(
                "ERR Unrecognized REPLCONF option: {}",
                String::from_utf8_lossy(opt)
            ));
        }
        i += 2;
    }
    ctx.out.ok();
}

fn record_ack(id: u64, offset: i64) {
    if let Some(r) = REPLICAS.lock().iter_mut().find(|r| r.id == id) {
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

static ANNOUNCED: Mutex<Vec<(u64, Announced)>> = parking_lot::const_mutex(Vec::new());

fn announce(id: u64) -> parking_lot::MappedMutexGuard<'static, Announced> {
    parking_lot::MutexGuard::map(ANNOUNCED.lock(), |v| {
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

static REPLICAS: Mutex<Vec<Replica>> = parking_lot::const_mutex(Vec::new());

/// Full syncs served since start (INFO stats sync_full).
pub static SYNC_FULL: AtomicU64 = AtomicU64::new(0);

/// A replica attached to the write log; dropping it detaches it.
pub struct Attached {
    pub sub: Arc<Sub>,
    id: u64,
    rdb: Option<PathBuf>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        LOG.unsubscribe(&self.sub);
        REPLICAS.lock().retain(|r| r.id != self.id);
        ANNOUNCED.lock().retain(|(c, _)| *c != self.id);
        if let Some(p) = self.rdb.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Attached {
    pub fn set_state(&self, state: &'static str) {
        if let Some(r) = REPLICAS.lock().iter_mut().find(|r| r.id == self.id) {
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
    srv: &Server,
    handle: &crate::clients::ClientHandle,
    wake: Box<dyn Fn() + Send + Sync>,
) -> Attached {
    let announced = ANNOUNCED
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
    REPLICAS.lock().push(Replica {
        id: handle.id,
        ip,
        port: announced.listening_port,
        state: "wait_bgsave",
        ack_offset: 0,
        ack_ms: clock::now_ms(),
    });
    crate::log::notice(&format!("Replica {} asks for synchronization", handle.addr));
    let sub = Sub::new(output_limit(srv), wake);
    LOG.subscribe(sub.clone());
    Attached {
        sub,
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
        Some(&|| offset.store(LOG.start_sub(&sub), Relaxed)),
        || {
            let mut aux = crate::persistence::rdb_aux(now, false);
            aux.extend(extra);
            aux.push(("repl-offset", LOG.repl_offset().to_string()));
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
    SYNC_FULL.fetch_add(1, Relaxed);
    Ok((path, offset.load(Relaxed)))
}

/// The replication cron: PING down the stream every `repl-ping-replica-period` seconds.
pub fn cron(srv: &Server) {
    static LAST_PING_MS: AtomicU64 = AtomicU64::new(0);
    if LOG.subscribers() == 0 {
        // The first PING comes a full period after a replica attaches.
        LAST_PING_MS.store(clock::now_ms(), Relaxed);
        return;
    }
    let period_ms = (srv.config.get_i64("repl-ping-replica-period").max(1) as u64) * 1000;
    let now = clock::now_ms();
    if now.saturating_sub(LAST_PING_MS.load(Relaxed)) >= period_ms {
        LAST_PING_MS.store(now, Relaxed);
        LOG.ping_subs();
    }
}

/// Replicas online that acknowledged within `max_lag` seconds.
fn good_replicas(max_lag: u64) -> usize {
    let now = clock::now_ms();
    REPLICAS
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
    if want == 0 || lag == 0 || good_replicas(lag) >= want as usize {
        return None;
    }
    Some(ERR_NOREPLICAS)
}

/// INFO's min_slaves_good_slaves.
pub fn good_replicas_now(srv: &Server) -> usize {
    good_replicas(srv.config.hot.min_replicas_max_lag.load(Relaxed))
}

/// (ip, listening port, acknowledged offset) of each replica, for ROLE.
pub fn replica_offsets() -> Vec<(String, u16, u64)> {
    REPLICAS
        .lock()
        .iter()
        .map(|r| (r.ip.clone(), r.port, r.ack_offset))
        .collect()
}

/// INFO replication's replica lines and count.
/// One attached replica as INFO and the metrics report it: ip, port, state, acknowledged
/// offset, seconds since its last acknowledgement.
pub struct ReplicaRow {
    pub ip: String,
    pub port: u16,
    pub state: &'static str,
    pub offset: u64,
    pub lag: u64,
}

pub fn replica_rows() -> Vec<ReplicaRow> {
    let now = clock::now_ms();
    REPLICAS
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

pub fn info_replicas(out: &mut String) -> usize {
    use std::fmt::Write;
    let now = clock::now_ms();
    let reps = REPLICAS.lock();
    for (i, r) in reps.iter().enumerate() {
        let _ = write!(
            out,
            "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
            r.ip,
            r.port,
            r.state,
            r.ack_offset,
            now.saturating_sub(r.ack_ms) / 1000
        );
    }
    reps.len()
}

/// What a replica sends on its stream: REPLCONF ACK <offset> (recorded), anything else is
/// ignored. Consumes the complete commands in `inbuf`.
pub fn replica_input(handle: &crate::clients::ClientHandle, inbuf: &mut bytes::BytesMut) {
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
                        record_ack(handle.id, off);
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

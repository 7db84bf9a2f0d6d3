//! The master side of replication: the registry of attached replicas, the replication IDs and
//! backlog, what SYNC / PSYNC start and what REPLCONF records (the commands are the server
//! family's).
//!
//! A full sync sends an RDB snapshot, then the replication stream from the snapshot's cut on:
//! the replica subscribes to the write log (`tern_persist::wlog::Sub`), the forkless snapshot
//! starts the subscription at its cut (every shard locked), so the replica gets exactly the
//! writes after the state it loaded. The connection side (sending the file, then draining the
//! subscription) runs in the server crate.
//!
//! A partial resynchronization (PSYNC with our replication ID and an offset the backlog still
//! holds) answers `+CONTINUE` and sends the backlog from that offset, as Redis does. The
//! backlog is created (with a new replication ID) when the first replica attaches and freed
//! `repl-backlog-ttl` seconds after the last one left.

use crate::args::{eq_ic, parse_i64, Args};
use crate::ctx::Ctx;
use crate::server::Server;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use tern_engine::clock;
pub use tern_persist::wlog::Sub;

/// What a replica asked for; the connection takes over once the reply so far is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyncKind {
    /// SYNC: the bulk RDB, then the stream.
    Sync,
    /// PSYNC <replid> <offset>: `+CONTINUE` when the backlog allows, else `+FULLRESYNC
    /// <replid> <offset>` first.
    Psync { replid: String, offset: i64 },
}

/// The smallest backlog Redis keeps, whatever repl-backlog-size says.
const MIN_BACKLOG: usize = 16 * 1024;

/// Our replication history's names, as PSYNC2 has them: the current ID, and the previous one
/// (valid up to `second_offset`) that replicas of our former master may still continue with.
pub struct ReplIds {
    pub id: String,
    pub id2: String,
    pub second_offset: i64,
}

const NO_ID: &str = "0000000000000000000000000000000000000000";

pub(crate) fn random_replid() -> String {
    use rand::Rng;
    let mut r = rand::thread_rng();
    (0..40)
        .map(|_| std::char::from_digit(r.gen_range(0..16), 16).unwrap_or('0'))
        .collect()
}

impl Default for ReplIds {
    fn default() -> Self {
        ReplIds {
            id: random_replid(),
            id2: NO_ID.into(),
            second_offset: -1,
        }
    }
}

/// Our current replication ID.
pub fn replid(srv: &Server) -> String {
    srv.replicas.ids.lock().id.clone()
}

/// A new history (Redis's changeReplicationId + clearReplicationId2).
fn new_replid(srv: &Server) {
    let mut ids = srv.replicas.ids.lock();
    *ids = ReplIds::default();
}

/// DEBUG CHANGE-REPL-ID: a new ID and no ID 2, as Redis's changeReplicationId and
/// clearReplicationId2.
pub fn change_replid(srv: &Server) {
    new_replid(srv);
}

/// The dataset was replaced by another history (a full sync from our master): nobody can
/// continue our old stream, so the backlog goes and the ID changes.
pub fn forget_history(srv: &Server) {
    srv.propagation.log.free_backlog();
    new_replid(srv);
}

/// A replica's full sync completed: its history is now the master's, from `offset` (Redis
/// takes the master's ID and offset and clears ID 2), kept in a new backlog so that its own
/// replicas, and itself once promoted, can continue it.
pub fn adopt_master_history(srv: &Server, id: &str, offset: u64, db: usize) {
    *srv.replicas.ids.lock() = ReplIds {
        id: id.to_string(),
        id2: NO_ID.into(),
        second_offset: -1,
    };
    srv.propagation
        .log
        .reset_stream(offset, db, Some(backlog_size(srv)));
}

/// A continued link answered `+CONTINUE <new id>`: our master's history got a new name (it
/// was promoted, or is another one that shares our past). The old name stays valid up to
/// here as ID 2, and our replicas reconnect to learn the new one.
pub fn master_renamed_history(srv: &Server, new_id: &str) {
    let offset = srv.propagation.log.repl_offset() as i64;
    {
        let mut ids = srv.replicas.ids.lock();
        ids.id2 = std::mem::replace(&mut ids.id, new_id.to_string());
        ids.second_offset = offset + 1;
    }
    srv.propagation.log.close_subs();
}

/// The stream continues on a link whose backlog this server may not have yet (it restarted
/// from an RDB): one is made, as Redis does after a successful PSYNC.
pub fn ensure_backlog(srv: &Server) {
    srv.propagation.log.create_backlog(backlog_size(srv));
}

/// This replica became a master (REPLICAOF NO ONE): the history it shared with its old
/// master stays valid up to the current offset as ID 2, so its siblings continue with it
/// partially; a new ID starts the new history (Redis's shiftReplicationId).
pub fn shift_replid(srv: &Server) {
    let offset = srv.propagation.log.repl_offset() as i64;
    let mut ids = srv.replicas.ids.lock();
    let old = std::mem::replace(&mut ids.id, random_replid());
    ids.id2 = old;
    ids.second_offset = offset + 1;
    crate::log::notice(&format!(
        "Setting secondary replication ID to {}, valid up to offset: {}. New replication ID is {}",
        ids.id2, ids.second_offset, ids.id
    ));
}

/// REPLICAOF NO ONE on a replica: a new history (the old one as ID 2), our own stream
/// again instead of the master's, and our replicas reconnect to learn the new ID (they
/// continue partially). The backlog's time to live counts from now.
pub fn promoted(srv: &Server) {
    shift_replid(srv);
    srv.propagation.log.set_proxy(false);
    srv.propagation.log.close_subs();
    srv.replicas
        .no_replicas_since_ms
        .store(clock::now_ms(), Relaxed);
}

/// The replication history an RDB file recorded (its `repl-id`, `repl-offset` and
/// `repl-stream-db` AUX fields), when all three are valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplInfo {
    pub id: String,
    pub offset: u64,
    pub db: usize,
}

impl ReplInfo {
    pub fn from_aux(aux: &[(Vec<u8>, Vec<u8>)]) -> Option<ReplInfo> {
        let field = |name: &str| {
            aux.iter()
                .find(|(k, _)| k.as_slice() == name.as_bytes())
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        };
        let id = field("repl-id").filter(|id| id.len() == 40)?;
        let offset = field("repl-offset")?.parse::<i64>().ok()?;
        let db = field("repl-stream-db")?.parse::<i64>().ok()?;
        // Older servers could record -1 for either; such a file says nothing usable.
        (offset >= 0 && db >= 0).then_some(ReplInfo {
            id,
            offset: offset as u64,
            db: db as usize,
        })
    }
}

/// The AUX fields that record our replication history in an RDB saved now (Redis's
/// rdbPopulateSaveInfo): on a master with a backlog, or a replica holding its master's data.
/// Call at the snapshot's cut.
pub fn rdb_repl_aux(srv: &Server) -> Vec<(&'static str, String)> {
    let has_history = if srv.master_link.is_replica() {
        crate::master_link::has_master_data(srv)
    } else {
        srv.propagation.log.backlog_info().is_some()
    };
    if !has_history {
        return Vec::new();
    }
    let pos = srv.propagation.log.stream_position();
    vec![
        ("repl-stream-db", pos.db.to_string()),
        ("repl-id", replid(srv)),
        ("repl-offset", pos.offset.to_string()),
    ]
}

/// After the start-up load of an RDB that recorded a replication history: a replica
/// continues it with its master (PSYNC from the recorded offset); a master keeps it as ID 2,
/// so its replicas continue too, and sends them the DELs of the keys that expired while it
/// was down (too many, and the backlog no longer reaches back: they sync in full).
pub fn restore_history(srv: &Server, loaded: crate::persistence::RdbLoaded) {
    let Some(info) = loaded.repl else {
        return;
    };
    if srv.master_link.is_replica() {
        srv.replicas.ids.lock().id = info.id.clone();
        srv.propagation.log.reset_stream(info.offset, info.db, None);
        crate::master_link::cache_own_history(srv, info.db);
        return;
    }
    {
        let mut ids = srv.replicas.ids.lock();
        ids.id2 = info.id;
        ids.second_offset = info.offset as i64 + 1;
    }
    srv.propagation
        .log
        .reset_stream(info.offset, 0, Some(backlog_size(srv)));
    srv.replicas
        .no_replicas_since_ms
        .store(clock::now_ms(), Relaxed);
    let del: &[u8] = if srv.config.get_bool("lazyfree-lazy-expire") {
        b"UNLINK"
    } else {
        b"DEL"
    };
    let mut ops = tern_persist::wlog::Ops::default();
    for (db, key) in &loaded.expired_keys {
        ops.clear();
        ops.push(*db as i32, [del, key.as_slice()].into_iter());
        srv.propagation.log.append(&ops);
    }
}

fn backlog_size(srv: &Server) -> usize {
    (srv.config.get_i64("repl-backlog-size").max(0) as usize).max(MIN_BACKLOG)
}

/// CONFIG SET repl-backlog-size resizes the backlog at once; client-output-buffer-limit's
/// replica class applies to the shared replication buffer.
pub fn register_hooks(srv: &Arc<Server>) {
    let s = Arc::downgrade(srv);
    srv.config.set_apply_hook(
        "repl-backlog-size",
        Box::new(move |_| {
            let srv = s.upgrade().ok_or("shutting down")?;
            srv.propagation.log.resize_backlog(backlog_size(&srv));
            Ok(())
        }),
    );
    let s = Arc::downgrade(srv);
    srv.config.set_apply_hook(
        "client-output-buffer-limit",
        Box::new(move |_| {
            let srv = s.upgrade().ok_or("shutting down")?;
            apply_replica_limits(&srv);
            Ok(())
        }),
    );
    apply_replica_limits(srv);
}

fn apply_replica_limits(srv: &Server) {
    let l = &srv.config.hot.obuf_limits[1];
    srv.propagation
        .log
        .set_replica_limits(tern_persist::wlog::ReplicaLimits {
            hard: l[0].load(Relaxed) as usize,
            soft: l[1].load(Relaxed) as usize,
            soft_seconds: l[2].load(Relaxed),
        });
}

/// SYNC / PSYNC: the connection turns into a replica once the reply so far is written.
pub fn start_sync(ctx: &mut Ctx, kind: SyncKind) {
    if ctx.conn.handle.has_flag(crate::clients::cflags::REPLICA) {
        // Redis ignores SYNC from a client that already is a replica.
        return;
    }
    if crate::failover::running(ctx.srv) {
        return ctx.error("NOMASTERLINK Can't SYNC while failing over");
    }
    // A replica serves its own replicas only what it has from its master.
    if srv_is_unlinked_replica(ctx.srv) {
        return ctx.error("NOMASTERLINK Can't SYNC while not connected with my master");
    }
    ctx.conn.pending_sync = Some(kind);
}

fn srv_is_unlinked_replica(srv: &Server) -> bool {
    srv.master_link.is_replica() && !crate::master_link::link_is_up(srv)
}

/// REPLCONF ACK <offset> [FACK <aof offset>]: what the replica processed, and what its AOF
/// holds fsynced. Wakes the clients in WAIT / WAITAOF.
pub fn record_ack(srv: &Server, id: u64, offset: i64, fsynced: Option<i64>) {
    if let Some(r) = srv.replicas.list.lock().iter_mut().find(|r| r.id == id) {
        r.ack_offset = r.ack_offset.max(offset.max(0) as u64);
        if let Some(f) = fsynced {
            r.aof_ack_offset = r.aof_ack_offset.max(f.max(0) as u64);
        }
        r.ack_ms = clock::now_ms();
    }
    srv.replicas.acked.notify_waiters();
}

/// Online replicas for which `pred` holds (only online ones ever count, as in Redis).
fn count_online(srv: &Server, pred: impl Fn(&Replica) -> bool) -> usize {
    let list = srv.replicas.list.lock();
    list.iter()
        .filter(|r| r.state == "online" && pred(r))
        .count()
}

/// Online replicas that acknowledged `offset` (Redis's replicationCountAcksByOffset).
pub fn count_acks(srv: &Server, offset: u64) -> i64 {
    count_online(srv, |r| r.ack_offset >= offset) as i64
}

/// Online replicas whose AOF holds `offset` fsynced.
pub fn count_aof_acks(srv: &Server, offset: u64) -> i64 {
    count_online(srv, |r| r.aof_ack_offset >= offset) as i64
}

/// A client started waiting for acknowledgements: ask the replicas for their offsets now
/// (Redis sends REPLCONF GETACK before it sleeps), unless a pause holds replica traffic.
pub fn request_acks(srv: &Server) {
    if !srv.pause.holds_replicas() {
        srv.propagation.log.getack_subs();
    }
}

/// What a client told us before it became a replica (REPLCONF listening-port/ip-address/capa).
#[derive(Default, Clone)]
struct Announced {
    listening_port: u16,
    ip: Option<String>,
    /// REPLCONF capa psync2: `+CONTINUE` names our replication ID.
    psync2: bool,
}

/// REPLCONF listening-port: the port INFO shows for this (future) replica.
pub fn announce_listening_port(srv: &Server, id: u64, port: u16) {
    announce(srv, id).listening_port = port;
}

/// REPLCONF ip-address: the address INFO shows for this (future) replica.
pub fn announce_ip(srv: &Server, id: u64, ip: String) {
    announce(srv, id).ip = Some(ip);
}

/// REPLCONF capa psync2.
pub fn announce_psync2(srv: &Server, id: u64) {
    announce(srv, id).psync2 = true;
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
    /// What its AOF holds fsynced (REPLCONF ACK ... FACK), for WAITAOF.
    aof_ack_offset: u64,
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
    /// PSYNCs answered +CONTINUE, and those with a replication ID that could not continue.
    pub sync_partial_ok: AtomicU64,
    pub sync_partial_err: AtomicU64,
    /// When the cron last sent a PING down the stream.
    last_ping_ms: AtomicU64,
    /// Notified at every acknowledgement (WAIT and WAITAOF wait on it).
    pub acked: tokio::sync::Notify,
    pub ids: Mutex<ReplIds>,
    /// When the last replica left (0: one is attached, or none ever was): the backlog's TTL
    /// counts from there.
    no_replicas_since_ms: AtomicU64,
    /// A coordinated FAILOVER in progress.
    pub failover: crate::failover::Failover,
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
        let mut list = replicas.list.lock();
        list.retain(|r| r.id != self.id);
        if list.is_empty() {
            replicas
                .no_replicas_since_ms
                .store(clock::now_ms(), Relaxed);
        }
        drop(list);
        replicas.announced.lock().retain(|(c, _)| *c != self.id);
        if let Some(p) = self.rdb.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Attached {
    /// The snapshot file of a disk-based sync was sent: it goes now, not with the replica.
    pub fn sync_file_sent(&mut self) {
        if let Some(p) = self.rdb.take() {
            let _ = std::fs::remove_file(p);
        }
    }

    pub fn set_state(&self, state: &'static str) {
        let mut list = self.srv.replicas.list.lock();
        if let Some(r) = list.iter_mut().find(|r| r.id == self.id) {
            r.state = state;
        }
    }
}

/// Register the client as a replica and subscribe it to the write log (not started yet).
/// `wake` is called whenever stream bytes are there to take.
pub fn attach(
    srv: &Arc<Server>,
    handle: &crate::clients::ClientHandle,
    wake: Box<dyn Fn() + Send + Sync>,
) -> Attached {
    let first = register(srv, handle, "wait_bgsave");
    // The first replica of a server without a backlog starts a new history, as in Redis.
    if first && srv.propagation.log.backlog_info().is_none() {
        new_replid(srv);
        srv.propagation.log.create_backlog(backlog_size(srv));
    }
    let sub = Sub::new(wake);
    srv.propagation.log.subscribe(sub.clone());
    attached(srv, handle, sub)
}

/// The replica's handle, its output counted from the shared replication buffer.
fn attached(srv: &Arc<Server>, handle: &crate::clients::ClientHandle, sub: Arc<Sub>) -> Attached {
    let (weak, s) = (Arc::downgrade(srv), sub.clone());
    *handle.repl_output.lock() = Some(Box::new(move || {
        weak.upgrade()
            .map_or(0, |srv| srv.propagation.log.sub_held(&s))
    }));
    Attached {
        sub,
        srv: srv.clone(),
        id: handle.id,
        rdb: None,
    }
}

/// Flag the client a replica and list it in `state`; true if it is the only one now.
fn register(srv: &Server, handle: &crate::clients::ClientHandle, state: &'static str) -> bool {
    handle.set_flag(crate::clients::cflags::REPLICA, true);
    let entry = replica_entry(srv, handle, state);
    let mut list = srv.replicas.list.lock();
    list.push(entry);
    srv.replicas.no_replicas_since_ms.store(0, Relaxed);
    list.len() == 1
}

/// The replica as INFO first shows it: its announced port and address.
fn replica_entry(
    srv: &Server,
    handle: &crate::clients::ClientHandle,
    state: &'static str,
) -> Replica {
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
    Replica {
        id: handle.id,
        ip,
        port: announced.listening_port,
        state,
        ack_offset: 0,
        aof_ack_offset: 0,
        ack_ms: clock::now_ms(),
    }
}

/// The replication buffer's memory as Redis reports it: the backlog's share (up to its
/// size), the replicas' share (what they hold beyond it), and what maxmemory does not count
/// (the same beyond the backlog's size, with an allowance for the backlog's block overhead).
pub struct BufferMemory {
    pub total: u64,
    pub backlog: u64,
    pub replicas: u64,
    pub not_counted: u64,
}

pub fn buffer_memory(srv: &Server) -> BufferMemory {
    let total = srv.propagation.log.repl_buffer_mem() as u64;
    let size = backlog_size(srv) as u64;
    let has_replicas = !srv.replicas.list.lock().is_empty();
    let replicas = if has_replicas {
        total.saturating_sub(size)
    } else {
        0
    };
    let counted = size + (size / (16 * 1024) + 1) * 64;
    BufferMemory {
        total,
        backlog: total - replicas,
        replicas,
        not_counted: total.saturating_sub(counted),
    }
}

/// CONFIG RESETSTAT: the sync counters start again.
pub fn reset_stats(srv: &Server) {
    for c in [
        &srv.replicas.sync_full,
        &srv.replicas.sync_partial_ok,
        &srv.replicas.sync_partial_err,
    ] {
        c.store(0, Relaxed);
    }
}

/// The log line of every SYNC / PSYNC, before anything is decided.
pub fn sync_requested(srv: &Server, handle: &crate::clients::ClientHandle) {
    crate::log::notice(&format!(
        "Replica {} asks for synchronization",
        replica_name(srv, handle)
    ));
}

/// PSYNC <replid> <offset>: continue the replica's stream from the backlog when our history
/// and the backlog allow it (Redis's masterTryPartialResynchronization). Returns the attached
/// replica (online, its subscription already fed with the backlog from `offset`) and the
/// `+CONTINUE` line to send first; None for a full resynchronization.
pub fn try_continue(
    srv: &Arc<Server>,
    handle: &crate::clients::ClientHandle,
    asked_id: &str,
    offset: i64,
    wake: Box<dyn Fn() + Send + Sync>,
) -> Option<(Attached, String)> {
    let name = replica_name(srv, handle);
    let (id, id2, second) = {
        let ids = srv.replicas.ids.lock();
        (ids.id.clone(), ids.id2.clone(), ids.second_offset)
    };
    let ours = asked_id.eq_ignore_ascii_case(&id);
    if !ours && (!asked_id.eq_ignore_ascii_case(&id2) || offset > second) {
        if asked_id.starts_with('?') {
            crate::log::notice(&format!("Full resync requested by replica {name}"));
        } else {
            srv.replicas.sync_partial_err.fetch_add(1, Relaxed);
            if !asked_id.eq_ignore_ascii_case(&id2) {
                crate::log::notice(&format!(
                    "Partial resynchronization not accepted: Replication ID mismatch (Replica asked for '{asked_id}', my replication IDs are '{id}' and '{id2}')"
                ));
            } else {
                crate::log::notice(&format!(
                    "Partial resynchronization not accepted: Requested offset for second ID was {offset}, but I can reply up to {second}"
                ));
            }
        }
        return None;
    }
    let sub = Sub::new(wake);
    let sent = (offset >= 0)
        .then(|| srv.propagation.log.continue_sub(&sub, offset as u64))
        .flatten();
    let Some(sent) = sent else {
        srv.replicas.sync_partial_err.fetch_add(1, Relaxed);
        crate::log::notice(&format!(
            "Unable to partial resync with replica {name} for lack of backlog (Replica request was: {offset})."
        ));
        if offset > srv.propagation.log.repl_offset() as i64 {
            crate::log::warning(&format!(
                "Warning: replica {name} tried to PSYNC with an offset that is greater than the master replication offset."
            ));
        }
        return None;
    };
    let psync2 = srv
        .replicas
        .announced
        .lock()
        .iter()
        .any(|(c, a)| *c == handle.id && a.psync2);
    register(srv, handle, "online");
    srv.replicas.sync_partial_ok.fetch_add(1, Relaxed);
    crate::log::notice(&format!(
        "Partial resynchronization request from {name} accepted. Sending {sent} bytes of backlog starting from offset {offset}."
    ));
    let line = if psync2 {
        format!("+CONTINUE {id}\r\n")
    } else {
        "+CONTINUE\r\n".to_string()
    };
    Some((attached(srv, handle, sub), line))
}

/// How Redis names a replica in its log: `ip:port` as announced.
pub fn replica_name(srv: &Server, handle: &crate::clients::ClientHandle) -> String {
    let r = replica_entry(srv, handle, "");
    format!("{}:{}", r.ip, r.port)
}

/// Write the full-sync snapshot to a temp file in the working directory; the replica's stream
/// starts at its cut. Blocking (run it off the async workers; INFO counts it while the caller
/// holds a `sync_rdb::Running`). None when `abort` was set meanwhile (the replica went away:
/// `sync_rdb::unwanted`).
pub fn write_sync_rdb(
    srv: &Server,
    rep: &mut Attached,
    abort: &AtomicBool,
) -> Result<Option<crate::sync_rdb::SyncRdb>, String> {
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
    let dirty_at_cut = AtomicU64::new(0);
    let sub = rep.sub.clone();
    let now = clock::now_ms();
    let writer = crate::aof::snapshot_into_abortable(srv, None, abort, || {
        // At the cut: the replica's stream starts here, where its RDB says it does.
        let pos = srv.propagation.log.start_sub(&sub);
        offset.store(pos.offset, Relaxed);
        dirty_at_cut.store(srv.dirty_total(), Relaxed);
        let aux = sync_aux(&replid(srv), now, pos);
        crate::persistence::rdb_writer(srv, std::io::BufWriter::with_capacity(1 << 20, file), &aux)
    });
    let Some(writer) = writer else {
        crate::sync_rdb::aborted(srv);
        return Ok(None);
    };
    writer
        .finish()
        .and_then(|bw| bw.into_inner().map_err(|e| e.into_error()))
        .map_err(|e| format!("Write error saving the RDB for the replica sync: {e}"))?;
    srv.replicas.sync_full.fetch_add(1, Relaxed);
    Ok(Some(crate::sync_rdb::SyncRdb {
        path,
        offset: offset.load(Relaxed),
        dirty_at_cut: dirty_at_cut.load(Relaxed),
    }))
}

/// The AUX fields of a full sync's snapshot: the replica's stream starts at `pos`, in the
/// database the stream had selected there.
pub(crate) fn sync_aux(
    replid: &str,
    now_ms: u64,
    pos: tern_persist::wlog::StreamPosition,
) -> Vec<(&'static str, String)> {
    let mut aux = crate::persistence::rdb_aux(now_ms, false);
    aux.push(("repl-stream-db", pos.db.to_string()));
    aux.push(("repl-id", replid.to_string()));
    aux.push(("repl-offset", pos.offset.to_string()));
    aux
}

/// The replication cron: PING down the stream every `repl-ping-replica-period` seconds.
pub fn cron(srv: &Arc<Server>) {
    crate::failover::cron(srv);
    free_idle_backlog(srv);
    // Blocks a departed replica held go a share at a time (Redis: 640 per event-loop pass).
    for _ in 0..10 {
        srv.propagation.log.trim_repl_buffer();
    }
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

/// repl-backlog-ttl seconds without replicas: the backlog is freed and the history renamed
/// (a replica keeps its backlog: it may be promoted).
fn free_idle_backlog(srv: &Server) {
    let since = srv.replicas.no_replicas_since_ms.load(Relaxed);
    let ttl = srv.config.get_i64("repl-backlog-ttl");
    if since == 0
        || ttl == 0
        || srv.master_link.is_replica()
        || srv.propagation.log.backlog_info().is_none()
    {
        return;
    }
    if clock::now_ms().saturating_sub(since) / 1000 > ttl as u64 {
        forget_history(srv);
        crate::log::notice(&format!(
            "Replication backlog freed after {ttl} seconds without connected replicas."
        ));
    }
}

/// Replicas online that acknowledged within `max_lag` seconds.
fn good_replicas(srv: &Server, max_lag: u64) -> usize {
    let now = clock::now_ms();
    count_online(srv, |r| now.saturating_sub(r.ack_ms) / 1000 <= max_lag)
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

/// What a replica sends on its stream: REPLCONF ACK <offset> (recorded); a command that
/// would be answered drops the replica (`replica_replies`). Consumes the complete commands
/// in `inbuf`.
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
                if crate::replica_replies::refuse(srv, handle, &args) {
                    pos = inbuf.len();
                    break;
                }
                if args.len() >= 3 && eq_ic(&args[0], "replconf") && eq_ic(&args[1], "ack") {
                    if let Some(off) = parse_i64(&args[2]) {
                        let fack = (args.len() >= 5 && eq_ic(&args[3], "fack"))
                            .then(|| parse_i64(&args[4]))
                            .flatten();
                        record_ack(srv, handle.id, off, fack);
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

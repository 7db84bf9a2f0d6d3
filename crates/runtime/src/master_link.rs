//! The replica side of replication: the link to the master (REPLICAOF / SLAVEOF and ROLE, the
//! commands, are the server family's).
//!
//! The link runs on its own thread with blocking I/O: handshake (PING, AUTH with
//! `masteruser`/`masterauth`, REPLCONF listening-port and capa, PSYNC), the full
//! resynchronization (the RDB payload, `$<len>` or diskless `$EOF:<mark>`, spooled to a temp
//! file, then loaded in place of the dataset while clients get -LOADING), then the stream:
//! each command runs as the master client (which no READONLY, MASTERDOWN, OOM or NOREPLICAS
//! check stops) and is logged like any write, so this server's AOF and its own replicas follow.
//! It acknowledges its offset every second and on REPLCONF GETACK, and reconnects after a
//! failure: with the master's replication ID and the offset it had processed, so a master
//! whose backlog still holds the rest answers `+CONTINUE` and only the missing stream comes
//! (no new snapshot).
//!
//! As PSYNC2 has it, a replica's replication history is its master's: the same ID and
//! offsets, and the master's stream passed on byte for byte to its own replicas and backlog
//! (the write log's proxy mode). So a replica restarted from its RDB (which records the ID
//! and offset), a master turned replica, or a replica moved to a promoted sibling, asks to
//! continue from its own history, and a promoted replica's siblings continue with it.

use crate::args::{eq_ic, Args};
use crate::ctx::Conn;
use crate::server::Server;
use parking_lot::Mutex;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tern_engine::clock;

/// Clients whose commands are obeyed without the refusals normal clients get: the AOF
/// loader and the master's stream (Redis's CLIENT_MASTER, flag M).
#[inline]
pub fn obeys(h: &crate::clients::ClientHandle) -> bool {
    h.id == crate::aof::CLIENT_ID || h.has_flag(crate::clients::cflags::MASTER)
}

/// Link states as ROLE names them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Connect,
    Connecting,
    /// Connected, the handshake (up to the PSYNC reply) under way.
    Handshake,
    Sync,
    Connected,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Connect => "connect",
            State::Connecting => "connecting",
            State::Handshake => "handshake",
            State::Sync => "sync",
            State::Connected => "connected",
        }
    }
}

struct Link {
    host: String,
    port: u16,
    state: State,
    /// The master's stream offset processed so far (slave_repl_offset).
    offset: u64,
    /// The dataset is our replication history's (`replication::replid`, the stream's
    /// offset) up to now: a (re)connection asks to continue from there (Redis's cached
    /// master). False while a full sync replaces the data, and for a replica started
    /// without a recorded history.
    continuable: bool,
    /// The database the master's stream had selected when the link was lost: a continued
    /// stream goes on in it without a new SELECT, as Redis's cached master client keeps it.
    stream_db: usize,
    last_io_ms: u64,
    /// When a connected link was lost (0: never connected since REPLICAOF, reported as -1).
    down_since_ms: u64,
    /// The payload of a full sync as INFO reports it while it arrives (Redis's
    /// repl_transfer_*): its size (-1 until the header, 0 for a diskless `$EOF:`), the bytes
    /// read so far, the time of the last read.
    transfer_size: i64,
    transfer_read: u64,
    transfer_last_io_ms: u64,
}

/// The replica side's state, owned by the server (`Server::master_link`).
#[derive(Default)]
pub struct MasterLink {
    link: Mutex<Option<Link>>,
    /// Fast checks for every command: this server is a replica, and its link is up.
    is_replica: AtomicBool,
    link_up: AtomicBool,
    /// Bumped by every REPLICAOF: a link thread of an older generation stops.
    generation: AtomicU64,
    /// Held by the link thread while it applies one command of the stream, and by whoever
    /// bumps `generation`: once REPLICAOF returns, the old link applies nothing more, so
    /// the history it offers the next master is exactly its data.
    apply: Mutex<()>,
}

impl MasterLink {
    pub fn is_replica(&self) -> bool {
        self.is_replica.load(Relaxed)
    }
}

const ERR_READONLY: &str = "READONLY You can't write against a read only replica.";
const ERR_MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// Why a normal client's command is refused on a replica (None on a master: one relaxed load).
/// `write`: the command (or a transaction's queued commands) writes; `stale_ok`: all of them
/// may run while the link is down.
pub fn deny_reason(srv: &Server, write: bool, stale_ok: bool) -> Option<&'static str> {
    if !srv.master_link.is_replica.load(Relaxed) {
        return None;
    }
    if !srv.master_link.link_up.load(Relaxed)
        && !stale_ok
        && !srv.config.get_bool("replica-serve-stale-data")
    {
        return Some(ERR_MASTERDOWN);
    }
    if write && srv.config.hot.replica_read_only.load(Relaxed) {
        return Some(ERR_READONLY);
    }
    None
}

/// REPLICAOF NO ONE: stop following the master, keeping the data and (as ID 2) the
/// history. False if this server was not a replica.
pub fn become_master(srv: &Server) -> bool {
    if !srv.master_link.is_replica.swap(false, Relaxed) {
        return false;
    }
    {
        let _applying = srv.master_link.apply.lock();
        srv.master_link.generation.fetch_add(1, Relaxed);
    }
    srv.master_link.link_up.store(false, Relaxed);
    *srv.master_link.link.lock() = None;
    let _ = srv.config.set("replicaof", "no one", false);
    crate::replication::promoted(srv);
    true
}

/// Wait up to `limit` for the link to the master to go down (the stream read to its end).
pub fn wait_link_down(srv: &Server, limit: Duration) {
    let deadline = Instant::now() + limit;
    while link_is_up(srv) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The link to the master is up (the stream is being applied).
pub fn link_is_up(srv: &Server) -> bool {
    srv.master_link.link_up.load(Relaxed)
}

/// This replica's data is its history's (see `Link::continuable`): an RDB saved now
/// records the history.
pub fn has_master_data(srv: &Server) -> bool {
    srv.master_link
        .link
        .lock()
        .as_ref()
        .is_some_and(|l| l.continuable)
}

/// A replica restarted from an RDB that recorded its history: the link asks to continue it,
/// the stream going on in database `db`.
pub fn cache_own_history(srv: &Server, db: usize) {
    if let Some(l) = srv.master_link.link.lock().as_mut() {
        l.continuable = true;
        l.stream_db = db;
        l.offset = srv.propagation.log.repl_offset();
    }
}

/// Whether the link already follows host:port (REPLICAOF to the same master is a no-op).
pub fn follows(srv: &Server, host: &str, port: u16) -> bool {
    srv.master_link
        .link
        .lock()
        .as_ref()
        .is_some_and(|l| l.host.eq_ignore_ascii_case(host) && l.port == port)
}

/// ROLE's view of the link: master host and port, link state, and the processed offset
/// (-1 until connected). None on a master.
pub fn link_role(srv: &Server) -> Option<(String, u16, &'static str, i64)> {
    let link = srv.master_link.link.lock();
    let l = link.as_ref()?;
    let offset = if l.state == State::Connected {
        l.offset as i64
    } else {
        -1
    };
    Some((l.host.clone(), l.port, l.state.name(), offset))
}

/// Become a replica of host:port (REPLICAOF). A master offers its own history to the new
/// master (it may be a promoted replica of ours); a replica keeps the history it had
/// from its old master, as Redis's cached master.
pub fn start(srv: Arc<Server>, host: String, port: u16) {
    let was_master = !srv.master_link.is_replica();
    let kept = srv.master_link.link.lock().as_ref().map(|l| l.continuable);
    let (continuable, stream_db) = match kept {
        _ if was_master => {
            crate::log::notice("Before turning into a replica, using my own master parameters to synthesize a cached master: I may be able to synchronize with the new master with just a partial transfer.");
            (true, Some(0))
        }
        // The stream's database once the old link has stopped applying.
        Some(c) => (c, None),
        None => (false, Some(0)),
    };
    follow_master(srv, host, port, continuable, stream_db);
}

/// `replicaof host port` in the configuration: follow that master from the start, with no
/// history to continue unless the RDB loaded at start-up recorded one.
pub fn start_from_config(srv: Arc<Server>, host: String, port: u16) {
    follow_master(srv, host, port, false, Some(0));
}

/// `stream_db` None: the database the old master's stream had selected when its link
/// stopped (the write log tracks it as it passes the stream on).
fn follow_master(
    srv: Arc<Server>,
    host: String,
    port: u16,
    continuable: bool,
    stream_db: Option<usize>,
) {
    let gen = {
        let _applying = srv.master_link.apply.lock();
        srv.master_link.generation.fetch_add(1, Relaxed) + 1
    };
    let stream_db = stream_db.unwrap_or_else(|| srv.propagation.log.stream_position().db);
    srv.master_link.link_up.store(false, Relaxed);
    *srv.master_link.link.lock() = Some(Link {
        host: host.clone(),
        port,
        state: State::Connect,
        offset: srv.propagation.log.repl_offset(),
        continuable,
        stream_db,
        last_io_ms: 0,
        down_since_ms: 0,
        transfer_size: -1,
        transfer_read: 0,
        transfer_last_io_ms: 0,
    });
    srv.master_link.is_replica.store(true, Relaxed);
    // CONFIG GET and CONFIG REWRITE see the master we follow, so a restart follows it too.
    let _ = srv
        .config
        .set("replicaof", &format!("{host} {port}"), false);
    // From now on our replication stream is the master's, passed on.
    srv.propagation.log.set_proxy(true);
    // Clients blocked on this master's data or acknowledgements cannot be served any more.
    srv.blocking.unblock_all_on_role_change();
    // Our own replicas stay: if the new master continues our history they continue with
    // us; they are dropped when it renames the history (+CONTINUE <new id>) or its full sync
    // replaces our data, as Redis 7 does.
    let _ = std::thread::Builder::new()
        .name("master-link".into())
        .spawn(move || link_main(&srv, &host, port, gen));
}

fn current(srv: &Server, gen: u64) -> bool {
    srv.master_link.generation.load(Relaxed) == gen
}

fn set_state(srv: &Server, gen: u64, f: impl FnOnce(&mut Link)) {
    if !current(srv, gen) {
        return;
    }
    if let Some(l) = srv.master_link.link.lock().as_mut() {
        f(l);
    }
}

fn link_main(srv: &Arc<Server>, host: &str, port: u16, gen: u64) {
    // The dataset loading at start-up (and the history it records) comes first.
    while srv.rdb.loading.load(Relaxed) || !srv.rdb.startup_load_done.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
    crate::log::notice(&format!("Connecting to MASTER {host}:{port}"));
    while current(srv, gen) {
        set_state(srv, gen, |l| l.state = State::Connecting);
        if let Err(e) = sync_and_follow(srv, host, port, gen) {
            crate::log::warning(&e);
        }
        // Down since now only if it was up (a failed attempt leaves the time as it was).
        let was_up = srv.master_link.link_up.load(Relaxed) && current(srv, gen);
        if was_up {
            srv.master_link.link_up.store(false, Relaxed);
        }
        set_state(srv, gen, |l| {
            l.state = State::Connect;
            if was_up {
                l.down_since_ms = clock::now_ms();
            }
        });
        std::thread::sleep(Duration::from_secs(1));
        // DEBUG SLEEP stops the whole server in Redis, its link to the master included.
        srv.world.wait_while_stopped();
    }
}

/// The link's socket, read a line or a chunk at a time.
struct Wire {
    r: BufReader<crate::tls::SyncStream>,
}

impl Wire {
    fn send(&mut self, argv: &[&[u8]]) -> Result<(), String> {
        let mut buf = Vec::new();
        tern_persist::wlog::encode_command(&mut buf, argv.iter().copied());
        // Writes bypass the read buffer; TLS frames them as records.
        let w = self.r.get_mut();
        w.write_all(&buf)
            .and_then(|_| w.flush())
            .map_err(|e| format!("Error writing to MASTER: {e}"))
    }

    /// One reply line (empty keepalive lines skipped), waiting up to `timeout` in all.
    fn line(&mut self, srv: &Server, timeout: Duration, gen: u64) -> Result<String, String> {
        let mut start = Instant::now();
        let mut l = String::new();
        loop {
            match self.r.read_line(&mut l) {
                Ok(0) => return Err("MASTER closed the connection".into()),
                Ok(_) if l.ends_with('\n') => {
                    let t = l.trim_end().to_string();
                    if !t.is_empty() {
                        return Ok(t);
                    }
                    l.clear();
                    // A keepalive newline (a diskless master waiting to start its transfer):
                    // the master is alive, the timeout counts from here.
                    start = Instant::now();
                }
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(format!("Error reading from MASTER: {e}")),
            }
            // CONFIG SET repl-timeout applies to a wait under way.
            if start.elapsed() > timeout.min(repl_timeout(srv)) {
                return Err("Timeout connecting to the MASTER...".into());
            }
            if !current(srv, gen) {
                return Err("REPLICAOF changed".into());
            }
        }
    }

    fn command(
        &mut self,
        srv: &Server,
        argv: &[&[u8]],
        timeout: Duration,
        gen: u64,
    ) -> Result<String, String> {
        self.send(argv)?;
        self.line(srv, timeout, gen)
    }
}

/// A read that timed out, or that a signal interrupted (SIGCONT after SIGSTOP): try again.
fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

fn repl_timeout(srv: &Server) -> Duration {
    Duration::from_secs(srv.config.get_i64("repl-timeout").max(1) as u64)
}

fn connect(srv: &Server, host: &str, port: u16) -> Result<Wire, String> {
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("Unable to connect to MASTER: {e}"))?
        .collect();
    let mut last = String::from("no address");
    for a in addrs {
        match TcpStream::connect_timeout(&a, repl_timeout(srv)) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                // tls-replication: the link speaks TLS (handshake within repl-timeout).
                let s = if srv.config.get_bool("tls-replication") {
                    let config = srv.tls.client_config().ok_or_else(|| {
                        "Unable to connect to MASTER: TLS is not configured".to_string()
                    })?;
                    crate::tls::SyncStream::tls(config, s, host, repl_timeout(srv))
                        .map_err(|e| format!("Unable to connect to MASTER: {e}"))?
                } else {
                    crate::tls::SyncStream::Plain(s)
                };
                s.tcp()
                    .set_read_timeout(Some(Duration::from_millis(100)))
                    .map_err(|e| e.to_string())?;
                return Ok(Wire {
                    r: BufReader::with_capacity(64 * 1024, s),
                });
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("Error condition on socket for SYNC: {last}"))
}

fn handshake(srv: &Server, wire: &mut Wire, gen: u64) -> Result<Psync, String> {
    let t = repl_timeout(srv);
    crate::log::notice("MASTER <-> REPLICA sync started");
    let pong = wire.command(srv, &[b"PING"], t, gen)?;
    // As Redis: an auth error to PING is fine here, AUTH follows.
    if pong.starts_with('-')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(format!("Error reply to PING from master: '{pong}'"));
    }
    crate::log::notice("Master replied to PING, replication can continue...");
    let pass = srv.config.get("masterauth").unwrap_or_default();
    if !pass.is_empty() {
        let user = srv.config.get("masteruser").unwrap_or_default();
        let r = if user.is_empty() {
            wire.command(srv, &[b"AUTH", pass.as_bytes()], t, gen)?
        } else {
            wire.command(srv, &[b"AUTH", user.as_bytes(), pass.as_bytes()], t, gen)?
        };
        if r.starts_with('-') {
            return Err(format!("Unable to AUTH to MASTER: {r}"));
        }
    }
    // Under tls-replication the master reaches us on our tls-port, as Redis announces.
    let port = match srv.config.get_i64("tls-port") {
        p if p != 0 && srv.config.get_bool("tls-replication") => p,
        _ => srv.config.get_i64("port"),
    }
    .to_string();
    let announced = match srv.config.get_i64("replica-announce-port") {
        0 => port,
        p => p.to_string(),
    };
    // Errors to REPLCONF are not fatal (an old master), as in Redis.
    let _ = wire.command(
        srv,
        &[b"REPLCONF", b"listening-port", announced.as_bytes()],
        t,
        gen,
    )?;
    if let Some(ip) = srv
        .config
        .get("replica-announce-ip")
        .filter(|s| !s.is_empty())
    {
        let _ = wire.command(srv, &[b"REPLCONF", b"ip-address", ip.as_bytes()], t, gen)?;
    }
    let _ = wire.command(
        srv,
        &[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"],
        t,
        gen,
    )?;
    let cached = srv
        .master_link
        .link
        .lock()
        .as_ref()
        .filter(|l| l.continuable)
        .map(|l| l.stream_db)
        .map(|db| {
            (
                crate::replication::replid(srv),
                srv.propagation.log.repl_offset(),
                db,
            )
        });
    let (id, next) = match &cached {
        Some((id, off, _)) => {
            let next = (off + 1).to_string();
            crate::log::notice(&format!(
                "Trying a partial resynchronization (request {id}:{next})."
            ));
            (id.as_str(), next)
        }
        None => {
            crate::log::notice("Partial resynchronization not possible (no cached master)");
            ("?", "-1".to_string())
        }
    };
    // A master handing over (FAILOVER) asks its target to take over with its PSYNC.
    let failing_over = crate::failover::in_progress(srv);
    let mut psync: Vec<&[u8]> = vec![b"PSYNC", id.as_bytes(), next.as_bytes()];
    if failing_over {
        psync.push(b"FAILOVER");
    }
    let r = wire.command(srv, &psync, t, gen)?;
    if failing_over {
        crate::failover::psync_answered(
            srv,
            r.starts_with("+CONTINUE") || r.starts_with("+FULLRESYNC"),
        );
    }
    let mut parts = r.split(' ');
    match (parts.next(), cached) {
        (Some("+FULLRESYNC"), _) => {
            let id = parts.next().unwrap_or("?").to_string();
            let off = parts.next().and_then(|o| o.parse().ok()).unwrap_or(0);
            crate::log::notice(&format!("Full resync from master: {id}:{off}"));
            Ok(Psync::Full(id, off))
        }
        (Some("+CONTINUE"), Some((id, off, db))) => {
            crate::log::notice("Successful partial resynchronization with master.");
            if let Some(new) = parts.next().filter(|n| n.len() == 40 && *n != id) {
                crate::log::notice(&format!("Master replication ID changed to {new}"));
                crate::replication::master_renamed_history(srv, new);
            }
            crate::replication::ensure_backlog(srv);
            crate::log::notice(
                "MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.",
            );
            Ok(Psync::Continue(off, db))
        }
        _ => Err(format!("Unexpected reply to PSYNC from master: {r}")),
    }
}

/// How the master answered PSYNC: a full resynchronization from (replid, offset), or the
/// stream continuing after our offset in the database it had selected.
enum Psync {
    Full(String, u64),
    Continue(u64, usize),
}

/// The payload's first line: `$<len>` or `$EOF:<mark>` (keepalive newlines skipped).
fn payload_head(srv: &Server, wire: &mut Wire, gen: u64) -> Result<String, String> {
    let head = wire.line(srv, repl_timeout(srv), gen)?;
    if head.starts_with('-') {
        return Err(format!("MASTER aborted replication with an error: {head}"));
    }
    let Some(spec) = head.strip_prefix('$') else {
        return Err(format!(
            "Bad protocol from MASTER, the first byte is not '$' (we received '{head}'), are you sure the host and port are right?"
        ));
    };
    Ok(spec.to_string())
}

/// The RDB payload as it arrives, without its framing: `$<len>` bytes, or (diskless,
/// `$EOF:<mark>`) everything up to the 40-byte mark. Reads give up after `repl-timeout`
/// without data, or when REPLICAOF changes; INFO's transfer counters follow the reads.
struct Payload<'a> {
    srv: &'a Server,
    wire: &'a mut Wire,
    gen: u64,
    last_io: Instant,
    /// `$EOF:` form: the mark, the bytes read but not delivered (the last ones might start
    /// the mark) and how many of them may be delivered.
    mark: Option<Vec<u8>>,
    held: Vec<u8>,
    deliverable: usize,
    /// `$<len>` form: the bytes still to come.
    left: u64,
    done: bool,
}

impl<'a> Payload<'a> {
    fn new(srv: &'a Server, wire: &'a mut Wire, spec: &str, gen: u64) -> Result<Self, String> {
        let (mark, left, size) = match spec.strip_prefix("EOF:") {
            Some(m) => (Some(m.as_bytes().to_vec()), 0, 0),
            None => {
                let len: u64 = spec
                    .parse()
                    .map_err(|_| format!("Bad payload length from MASTER: ${spec}"))?;
                (None, len, len as i64)
            }
        };
        set_state(srv, gen, |l| l.transfer_size = size);
        Ok(Payload {
            srv,
            wire,
            gen,
            last_io: Instant::now(),
            done: mark.is_none() && left == 0,
            mark,
            held: Vec::new(),
            deliverable: 0,
            left,
        })
    }

    /// The size announced (0 for the `$EOF:` form).
    fn size(&self) -> u64 {
        if self.mark.is_some() {
            0
        } else {
            self.left
        }
    }

    /// One read from the socket, waiting up to repl-timeout.
    fn read_wire(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let fail = |m: String| Err(std::io::Error::other(m));
        loop {
            match self.wire.r.read(buf) {
                Ok(0) => {
                    return fail("I/O error trying to sync with MASTER: connection lost".into())
                }
                Ok(n) => {
                    self.last_io = Instant::now();
                    set_state(self.srv, self.gen, |l| {
                        l.transfer_read += n as u64;
                        l.transfer_last_io_ms = clock::now_ms();
                    });
                    return Ok(n);
                }
                Err(e) if is_timeout(&e) => {
                    if self.last_io.elapsed() > repl_timeout(self.srv) {
                        return fail("Timeout receiving bulk data from MASTER... If the problem persists try to set the 'repl-timeout' parameter in redis.conf to a larger value.".into());
                    }
                    if !current(self.srv, self.gen) {
                        return fail("REPLICAOF changed".into());
                    }
                }
                Err(e) => return fail(format!("I/O error trying to sync with MASTER: {e}")),
            }
        }
    }
}

impl Read for Payload<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let Some(mark) = self.mark.clone() else {
            if self.done {
                return Ok(0);
            }
            let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
            let n = self.read_wire(&mut buf[..want])?;
            self.left -= n as u64;
            self.done = self.left == 0;
            return Ok(n);
        };
        loop {
            if self.deliverable > 0 {
                let n = buf.len().min(self.deliverable);
                buf[..n].copy_from_slice(&self.held[..n]);
                self.held.drain(..n);
                self.deliverable -= n;
                return Ok(n);
            }
            if self.done {
                return Ok(0);
            }
            // The master sends nothing after the mark until we acknowledge the load, so the
            // mark is the end of what has arrived.
            let mut chunk = [0u8; 16 * 1024];
            let n = self.read_wire(&mut chunk)?;
            self.held.extend_from_slice(&chunk[..n]);
            if self.held.ends_with(&mark) {
                self.held.truncate(self.held.len() - mark.len());
                self.deliverable = self.held.len();
                self.done = true;
            } else {
                self.deliverable = self.held.len() - self.held.len().min(mark.len());
            }
        }
    }
}

/// Receive the RDB payload into `path`.
fn receive_payload(
    srv: &Server,
    wire: &mut Wire,
    spec: &str,
    path: &std::path::Path,
    gen: u64,
) -> Result<u64, String> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(|e| {
        format!("Opening the temp file needed for MASTER <-> REPLICA synchronization: {e}")
    })?);
    let mut payload = Payload::new(srv, wire, spec, gen)?;
    let total = std::io::copy(&mut payload, &mut file).map_err(|e| {
        if e.kind() == std::io::ErrorKind::Other {
            e.to_string()
        } else {
            format!("Write error writing the payload to disk: {e}")
        }
    })?;
    file.flush()
        .map_err(|e| format!("Write error writing the payload to disk: {e}"))?;
    // It becomes our dump file: durable before it replaces the old one.
    file.get_ref().sync_data().map_err(|e| {
        format!(
            "Failed trying to sync the temp DB to disk in MASTER <-> REPLICA synchronization: {e}"
        )
    })?;
    Ok(total)
}

/// The received payload replaces our dump file (`dbfilename`), as Redis keeps its master's
/// snapshot: renamed over it, the directory fsynced.
fn install_payload(srv: &Server, temp: &std::path::Path) -> Result<std::path::PathBuf, String> {
    let dump = crate::persistence::rdb_path(srv);
    std::fs::rename(temp, &dump).map_err(|e| {
        format!("Failed trying to rename the temp DB into {} in MASTER <-> REPLICA synchronization: {e}", dump.display())
    })?;
    let dir = dump
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if let Err(e) = std::fs::File::open(dir).and_then(|d| d.sync_all()) {
        crate::log::warning(&format!(
            "Failed trying to sync DB directory {} in MASTER <-> REPLICA synchronization: {e}",
            dir.display()
        ));
    }
    Ok(dump)
}

/// Load the payload straight from the socket (`repl-diskless-load`); `mode` is Direct or
/// Swap. `dropped` runs just before the new data replaces the old: our own replicas and
/// history go then.
fn load_from_socket(
    srv: &Server,
    wire: &mut Wire,
    spec: &str,
    mode: crate::diskless_load::Mode,
    async_loading: bool,
    gen: u64,
    dropped: impl FnOnce(),
) -> Result<usize, String> {
    use crate::diskless_load::{Failed, Mode};
    // Redis loads on its event loop: the watchdog reports a load past its period.
    let _busy = crate::watchdog::busy(srv, b"loading the master's payload from the socket");
    let mut payload = Payload::new(srv, wire, spec, gen)?;
    let size = payload.size();
    let loaded = if mode == Mode::Swap {
        crate::log::notice("MASTER <-> REPLICA sync: Loading DB in memory");
        crate::diskless_load::load_swapped(srv, &mut payload, size, async_loading, dropped)
    } else {
        dropped();
        crate::log::notice("MASTER <-> REPLICA sync: Flushing old data");
        crate::persistence::empty_keyspace(srv);
        crate::log::notice("MASTER <-> REPLICA sync: Loading DB in memory");
        crate::diskless_load::load_direct(srv, &mut payload, size)
    };
    let failed = |why: String| {
        crate::log::warning(&why);
        "Failed trying to load the MASTER synchronization DB from socket, check server logs."
            .to_string()
    };
    match loaded {
        Ok(loaded) => {
            // Nothing may follow the RDB in the payload.
            let mut rest = [0u8; 64];
            match payload.read(&mut rest) {
                // The stream goes on in the database the snapshot names.
                Ok(0) => {
                    Ok(crate::replication::ReplInfo::from_aux(&loaded.aux).map_or(0, |r| r.db))
                }
                _ => Err("Replication stream EOF marker is broken".into()),
            }
        }
        Err(Failed::Transfer(why)) | Err(Failed::Rdb(why)) => Err(failed(why)),
    }
}

fn sync_and_follow(srv: &Arc<Server>, host: &str, port: u16, gen: u64) -> Result<(), String> {
    let mut wire = connect(srv, host, port)?;
    crate::log::notice("Non blocking connect for SYNC fired the event.");
    // A diskless master answers PSYNC only when its transfer starts: ROLE says handshake
    // until then, as Redis.
    set_state(srv, gen, |l| l.state = State::Handshake);
    let (replid, offset) = match handshake(srv, &mut wire, gen)? {
        Psync::Full(id, off) => (id, off),
        Psync::Continue(off, db) => {
            set_state(srv, gen, |l| {
                l.state = State::Connected;
                l.offset = off;
                l.last_io_ms = clock::now_ms();
            });
            if !current(srv, gen) {
                return Ok(());
            }
            srv.master_link.link_up.store(true, Relaxed);
            return follow(srv, &mut wire, off, db, gen);
        }
    };
    set_state(srv, gen, |l| {
        // Our dataset (and the history it continues) stays until the payload is in and
        // about to replace it (`dropping_history`): a transfer that fails before leaves
        // the old master's history to continue, as Redis keeps its cached master until
        // it loads.
        l.state = State::Sync;
        l.transfer_size = -1;
        l.transfer_read = 0;
        l.transfer_last_io_ms = clock::now_ms();
    });
    // Our dataset already is a point of this history (Redis compares its replication ID
    // with the master's): a swapdb load may serve it meanwhile.
    let same_history = srv
        .master_link
        .link
        .lock()
        .as_ref()
        .is_some_and(|_| crate::replication::replid(srv) == replid);
    let spec = payload_head(srv, &mut wire, gen)?;
    let mode = crate::diskless_load::mode(srv);
    let target = if mode == crate::diskless_load::Mode::Disk {
        "to disk"
    } else {
        "to parser"
    };
    match spec.strip_prefix("EOF:") {
        Some(_) => crate::log::notice(&format!(
            "MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF {target}"
        )),
        None => crate::log::notice(&format!(
            "MASTER <-> REPLICA sync: receiving {spec} bytes from master {target}"
        )),
    }
    if mode != crate::diskless_load::Mode::Disk {
        let db = load_from_socket(srv, &mut wire, &spec, mode, same_history, gen, || {
            dropping_history(srv)
        })?;
        return synced(srv, wire, replid, offset, db, gen);
    }
    let path = std::path::PathBuf::from(format!("temp-{}-master-sync.rdb", std::process::id()));
    let received = receive_payload(srv, &mut wire, &spec, &path, gen);
    let loaded = received.and_then(|_| {
        if !current(srv, gen) {
            return Err("REPLICAOF changed".into());
        }
        let dump = install_payload(srv, &path)?;
        crate::log::notice("MASTER <-> REPLICA sync: Flushing old data");
        dropping_history(srv);
        crate::persistence::empty_keyspace(srv);
        crate::log::notice("MASTER <-> REPLICA sync: Loading DB in memory");
        let _busy = crate::watchdog::busy(srv, b"loading the master's payload");
        let how = crate::persistence::RdbLoadHow {
            as_replica: true,
            ..Default::default()
        };
        let loaded = crate::persistence::rdb_load(srv, &dump, how).map_err(|e| {
            format!("Failed trying to load the MASTER synchronization DB from disk: {e}")
        });
        // rdb-del-sync-files: a replica without persistence keeps no sync file.
        if srv.config.get_bool("rdb-del-sync-files")
            && !crate::persistence::has_save_points(srv)
            && !crate::aof::enabled(srv)
        {
            crate::log::notice("Removing the RDB file obtained from the master. This replica has persistence disabled");
            let _ = std::fs::remove_file(&dump);
        }
        loaded
    });
    let _ = std::fs::remove_file(&path);
    // The stream goes on in the database the master's snapshot names (Redis's
    // repl-stream-db), else the first command selects.
    let db = loaded?.and_then(|l| l.repl).map_or(0, |r| r.db);
    synced(srv, wire, replid, offset, db, gen)
}

/// A full sync's payload is about to replace our dataset: the history it continued ends
/// (Redis discards its cached master and its replicas here, not at +FULLRESYNC): our
/// replicas go, and nothing is left to continue until the new data is in.
fn dropping_history(srv: &Server) {
    if let Some(l) = srv.master_link.link.lock().as_mut() {
        l.continuable = false;
    }
    srv.propagation.log.close_subs();
    crate::replication::forget_history(srv);
}

/// The master's dataset is in: our history is now the master's; restart our AOF from it,
/// mark the link up and follow (the first ACK goes at once: a diskless master starts the
/// stream on it).
fn synced(
    srv: &Arc<Server>,
    mut wire: Wire,
    replid: String,
    offset: u64,
    db: usize,
    gen: u64,
) -> Result<(), String> {
    crate::replication::adopt_master_history(srv, &replid, offset, db);
    if crate::aof::enabled(srv) {
        // The AOF must restart from the new dataset, as Redis does after a sync.
        crate::aof::start_rewrite(srv.clone());
    }
    set_state(srv, gen, |l| {
        l.state = State::Connected;
        l.offset = offset;
        l.continuable = true;
        l.last_io_ms = clock::now_ms();
    });
    if !current(srv, gen) {
        return Ok(());
    }
    srv.master_link.link_up.store(true, Relaxed);
    crate::log::notice("MASTER <-> REPLICA sync: Finished with success");
    follow(srv, &mut wire, offset, db, gen)
}

/// Apply the master's stream until the link breaks or REPLICAOF changes.
fn follow(
    srv: &Arc<Server>,
    wire: &mut Wire,
    offset: u64,
    db: usize,
    gen: u64,
) -> Result<(), String> {
    // The master is a client as Redis lists it (CLIENT LIST flags=M, addr = the master's
    // address) and as CLIENT KILL finds it: killing it drops the link, which reconnects.
    let (addr, laddr, fd) = {
        use std::os::fd::AsRawFd;
        let tcp = wire.r.get_ref().tcp();
        let name =
            |a: std::io::Result<std::net::SocketAddr>| a.map(|a| a.to_string()).unwrap_or_default();
        (
            name(tcp.peer_addr()),
            name(tcp.local_addr()),
            tcp.as_raw_fd(),
        )
    };
    // Its id comes from the clients' counter, a new one at each connection, as in Redis.
    let handle = Arc::new(crate::clients::ClientHandle::new(
        srv.clients.next_id(),
        addr,
        laddr,
        fd,
    ));
    handle.set_flag(crate::clients::cflags::MASTER, true);
    srv.clients.register_link(handle.clone());
    let result = follow_as(srv, wire, offset, db, gen, &handle);
    // Off the registry before the socket closes (KILL must never touch a reused fd).
    handle.detach_socket();
    srv.clients.unregister(handle.id);
    result
}

fn follow_as(
    srv: &Arc<Server>,
    wire: &mut Wire,
    mut offset: u64,
    db: usize,
    gen: u64,
    handle: &Arc<crate::clients::ClientHandle>,
) -> Result<(), String> {
    use tern_resp::{Limits, RequestParser};
    let mut read_offset = offset;
    let mut fsynced = Fsynced::new(offset);
    let mut conn = Conn::new(handle.clone(), false, srv.stats.local());
    conn.set_db(db);
    conn.deny_blocking = true;
    let mut out = tern_resp::Reply::new();
    let mut parser = RequestParser::new();
    let limits = Limits {
        max_bulk_len: i64::MAX / 2,
        auth_required: false,
    };
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    // The first ACK goes at once: a master that streamed a diskless payload waits for it to
    // put us online (and FAILOVER targets only online replicas).
    let mut last_ack = Instant::now()
        .checked_sub(Duration::from_secs(1))
        .unwrap_or_else(Instant::now);
    let mut last_io = Instant::now();
    let timeout = repl_timeout(srv);
    let log = &srv.propagation.log;
    log.proxy_discard();
    let result = loop {
        if !current(srv, gen) {
            break Ok(());
        }
        if handle.is_killed() {
            break Err("Connection with master lost.".into());
        }
        srv.world.wait_while_stopped();
        // Every second, and as soon as more of the stream is fsynced in our AOF (so a
        // WAITAOF on the master need not wait for the next second).
        if last_ack.elapsed() >= Duration::from_secs(1) || fsynced.moved(srv, offset) {
            last_ack = Instant::now();
            if let Err(e) = fsynced.ack(srv, wire, offset) {
                break Err(e);
            }
        }
        match wire.r.read(&mut chunk) {
            Ok(0) => break Err("Connection with master lost.".into()),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                last_io = Instant::now();
            }
            Err(e) if is_timeout(&e) => {
                if last_io.elapsed() > timeout {
                    break Err("MASTER timeout: no data nor PING received...".into());
                }
                continue;
            }
            Err(e) => break Err(format!("Error reading from MASTER: {e}")),
        }
        conn.start_batch();
        let mut pos = 0;
        let mut err = None;
        loop {
            match parser.parse(&buf[pos..], &limits) {
                Ok(Some(used)) => {
                    // While a script is busy the stream waits (Redis accumulates it rather
                    // than answering the master -BUSY, which would lose the write).
                    while crate::lua::busy_error(srv).is_some()
                        && current(srv, gen)
                        && !handle.is_killed()
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    let _applying = srv.master_link.apply.lock();
                    if !current(srv, gen) {
                        err = Some("REPLICAOF changed".to_string());
                        break;
                    }
                    let args = Args::new(parser.arg_base(&buf[pos..]), parser.ranges());
                    // Our replicas and backlog get the master's bytes as they are, passed
                    // on by the command's own logging (or `proxy_flush` after it).
                    log.proxy_stage(&buf[pos..pos + used]);
                    if args.len() >= 2 && eq_ic(&args[0], "replconf") && eq_ic(&args[1], "getack") {
                        if let Err(e) = fsynced.ack(srv, wire, offset) {
                            err = Some(e);
                            break;
                        }
                    } else if !args.is_empty() {
                        crate::dispatch::execute(srv, &mut conn, &mut out, &args);
                        if out.buf.first() == Some(&b'-') {
                            error_to_master(srv, &conn, &args, &out.buf);
                        }
                        out.buf.clear();
                        fsynced.applied(srv, read_offset + used as u64, conn.woff);
                    }
                    if conn.multi.is_none() {
                        log.proxy_flush(conn.db);
                    }
                    pos += used;
                    // The offset counts the stream's bytes, as the master's does; inside a
                    // MULTI it waits for the EXEC (Redis's reploff), so a link lost
                    // mid-transaction continues from the MULTI, which runs again whole.
                    read_offset += used as u64;
                    if conn.multi.is_none() {
                        offset = read_offset;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    err = Some(format!("Protocol error from MASTER: {}", e.0));
                    break;
                }
            }
        }
        buf.drain(..pos);
        let now = clock::now_ms();
        set_state(srv, gen, |l| {
            l.offset = offset;
            l.last_io_ms = now;
        });
        if let Some(e) = err {
            break Err(e);
        }
    };
    crate::txn::reset(srv, &mut conn);
    log.proxy_discard();
    // The database of the stream at `offset` (a MULTI cut short ran nothing).
    let db = conn.db;
    set_state(srv, gen, |l| l.stream_db = db);
    result
}

/// A command of the master's stream failed here: the datasets may have diverged. Logged as
/// Redis does (and counted); with `propagation-error-behavior panic` or
/// `panic-on-replicas`, a read-only replica stops rather than go on diverging.
fn error_to_master(srv: &Server, conn: &Conn, args: &Args, reply: &[u8]) {
    let text = String::from_utf8_lossy(&reply[1..reply.len().min(4097)]);
    let text = text.trim_end();
    let name = srv
        .commands
        .get(&args[0])
        .map_or("<unknown>".to_string(), |e| e.fullname.clone());
    crate::log::warning(&format!(
        "== CRITICAL == This replica is sending an error to its master: '{text}' after processing the command '{name}'"
    ));
    conn.stats.unexpected_error_replies.add(1);
    let behavior = srv
        .config
        .get("propagation-error-behavior")
        .unwrap_or_default();
    if srv.config.hot.replica_read_only.load(Relaxed)
        && (behavior == "panic" || behavior == "panic-on-replicas")
    {
        crate::log::warning(&format!(
            "This replica panicked sending an error to its master after processing the command '{name}'"
        ));
        std::process::abort();
    }
}

/// How far the master's stream is fsynced in our AOF: the stream offsets applied, each with
/// the LSN of our log it was written at, until the AOF writer reports that LSN fsynced.
struct Fsynced {
    pending: std::collections::VecDeque<(u64, u64)>,
    /// The offset known fsynced.
    done: u64,
    /// The FACK last sent.
    sent: u64,
}

impl Fsynced {
    fn new(offset: u64) -> Fsynced {
        Fsynced {
            pending: Default::default(),
            done: offset,
            sent: 0,
        }
    }

    /// The stream up to `offset` was applied, the last write at `lsn` of our log.
    fn applied(&mut self, srv: &Server, offset: u64, lsn: u64) {
        if !crate::aof::enabled(srv) {
            return;
        }
        match self.pending.back_mut() {
            Some(last) if last.1 == lsn => last.0 = offset,
            _ => self.pending.push_back((offset, lsn)),
        }
    }

    /// REPLCONF ACK <processed> [FACK <offset fsynced in our AOF>] (FACK only with an AOF,
    /// as Redis).
    fn ack(&mut self, srv: &Server, wire: &mut Wire, processed: u64) -> Result<(), String> {
        let fack = self.advance(srv, processed);
        let off = processed.to_string();
        match fack {
            Some(f) => {
                let f = f.to_string();
                wire.send(&[b"REPLCONF", b"ACK", off.as_bytes(), b"FACK", f.as_bytes()])?
            }
            None => wire.send(&[b"REPLCONF", b"ACK", off.as_bytes()])?,
        }
        self.sent = fack.unwrap_or(0);
        Ok(())
    }

    /// More is fsynced than the last FACK said.
    fn moved(&mut self, srv: &Server, processed: u64) -> bool {
        self.advance(srv, processed).is_some_and(|f| f > self.sent)
    }

    /// The offset our AOF holds fsynced (None without an AOF): `processed` once nothing
    /// applied waits for its fsync.
    fn advance(&mut self, srv: &Server, processed: u64) -> Option<u64> {
        if !crate::aof::enabled(srv) {
            self.pending.clear();
            return None;
        }
        while let Some(&(off, lsn)) = self.pending.front() {
            if !crate::aof::fsynced_to(srv, lsn) {
                return Some(self.done);
            }
            self.done = off;
            self.pending.pop_front();
        }
        self.done = self.done.max(processed);
        Some(self.done)
    }
}

/// The replication offset a replica has processed, kept while the link is down (as Redis's
/// cached master's): what a cluster replica's election ranks it by, and what it gossips.
/// 0 while it has no history to continue (a full sync's payload replacing its data, or
/// none recorded yet), as Redis's replica with neither master nor cached master: CLUSTER
/// SLOTS hides such a replica, CLUSTER SHARDS shows it `loading`. None on a master.
pub fn processed_offset(srv: &Server) -> Option<u64> {
    srv.master_link.link.lock().as_ref().map(|l| {
        if l.continuable || l.state == State::Connected {
            l.offset
        } else {
            0
        }
    })
}

/// How old a replica's copy of the master's data is, ms: since the last byte from the
/// master while the link is up, since the link went down otherwise (a cluster replica's
/// election weighs it).
pub fn data_age_ms(srv: &Server) -> u64 {
    let link = srv.master_link.link.lock();
    let Some(l) = link.as_ref() else { return 0 };
    let now = clock::now_ms();
    if l.state == State::Connected {
        now.saturating_sub(l.last_io_ms)
    } else if l.down_since_ms != 0 {
        now.saturating_sub(l.down_since_ms)
    } else {
        u64::MAX / 2
    }
}

/// INFO replication's lines for a replica (None on a master).
pub fn info_lines(srv: &Server) -> Option<(String, String, u64)> {
    use std::fmt::Write;
    let link = srv.master_link.link.lock();
    let l = link.as_ref()?;
    let now = clock::now_ms();
    let up = l.state == State::Connected;
    let mut out = String::new();
    let _ = write!(
        out,
        "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\n\
         master_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\n\
         slave_read_repl_offset:{}\r\nslave_repl_offset:{}\r\n",
        l.host,
        l.port,
        if up { "up" } else { "down" },
        if up {
            (now.saturating_sub(l.last_io_ms) / 1000) as i64
        } else {
            -1
        },
        (l.state == State::Sync) as u8,
        l.offset,
        l.offset,
    );
    if l.state == State::Sync {
        let perc = if l.transfer_size != 0 {
            l.transfer_read as f64 / l.transfer_size as f64 * 100.0
        } else {
            0.0
        };
        let _ = write!(
            out,
            "master_sync_total_bytes:{}\r\nmaster_sync_read_bytes:{}\r\n\
             master_sync_left_bytes:{}\r\nmaster_sync_perc:{perc:.2}\r\n\
             master_sync_last_io_seconds_ago:{}\r\n",
            l.transfer_size,
            l.transfer_read,
            l.transfer_size - l.transfer_read as i64,
            now.saturating_sub(l.transfer_last_io_ms) / 1000,
        );
    }
    if !up {
        let down = if l.down_since_ms == 0 {
            -1
        } else {
            (now.saturating_sub(l.down_since_ms) / 1000) as i64
        };
        let _ = write!(out, "master_link_down_since_seconds:{down}\r\n");
    }
    let _ = write!(
        out,
        "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:{}\r\n",
        srv.config.get_i64("replica-priority"),
        srv.config.hot.replica_read_only.load(Relaxed) as u8,
        srv.config.get_bool("replica-announced") as u8,
    );
    Some((out, crate::replication::replid(srv), l.offset))
}

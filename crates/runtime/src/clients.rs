//! The registry of connected clients: what CLIENT LIST/INFO/KILL and INFO clients read. Hot
//! per-command fields are atomics written only by the connection's own thread.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed,
};
use std::sync::Arc;
use std::time::Instant;

/// Client flag bits shown in CLIENT LIST `flags=`.
pub mod cflags {
    pub const MONITOR: u32 = 1 << 0;
    pub const PUBSUB: u32 = 1 << 1;
    pub const MULTI: u32 = 1 << 2;
    pub const BLOCKED: u32 = 1 << 3;
    pub const TRACKING: u32 = 1 << 4;
    pub const DIRTY_CAS: u32 = 1 << 5;
    pub const CLOSE_AFTER_REPLY: u32 = 1 << 6;
    pub const UNIX_SOCKET: u32 = 1 << 7;
    pub const READONLY: u32 = 1 << 8;
    pub const NO_EVICT: u32 = 1 << 9;
    pub const NO_TOUCH: u32 = 1 << 10;
    pub const REPLICA: u32 = 1 << 11;
    pub const MASTER: u32 = 1 << 12;
    pub const TRACKING_BROKEN_REDIR: u32 = 1 << 13;
    pub const TRACKING_BCAST: u32 = 1 << 14;
    /// REPLCONF capa eof: the replica reads a diskless `$EOF:` payload.
    pub const CAPA_EOF: u32 = 1 << 15;
}

#[derive(Default)]
pub struct ClientMeta {
    pub name: Option<Vec<u8>>,
    pub lib_name: Option<Vec<u8>>,
    pub lib_ver: Option<Vec<u8>>,
    pub user: String,
    /// The ACL user the connection is authenticated as (None for internal clients).
    pub acl_user: Option<Arc<crate::acl::AclUser>>,
}

/// Reads a replica's share of the replication buffer.
pub type ReplOutput = Box<dyn Fn() -> usize + Send + Sync>;

pub struct ClientHandle {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    pub fd: RawFd,
    pub created: Instant,
    pub last_interaction: AtomicU64,
    pub db: AtomicUsize,
    /// Command-table id of the last command + 1 (0 = none yet).
    pub last_cmd: AtomicUsize,
    pub resp: AtomicU32,
    pub flags: AtomicU32,
    pub multi_len: AtomicI64,
    pub sub_count: AtomicUsize,
    pub psub_count: AtomicUsize,
    pub ssub_count: AtomicUsize,
    pub qbuf: AtomicUsize,
    pub qbuf_free: AtomicUsize,
    /// Bytes of a pending request's arguments already parsed (CLIENT LIST argv-mem).
    pub argv_mem: AtomicUsize,
    /// Reply bytes produced for this client and not yet written to its socket (set while a
    /// write waits for the client to read).
    pub reply_pending: AtomicUsize,
    pub obuf: AtomicUsize,
    /// The reply buffer's size and peak use (CLIENT LIST rbs/rbp).
    pub reply_buffer: crate::reply_buffer::ClientReplyBuffer,
    /// The memory last counted for this client in the eviction total (see client_eviction).
    pub tot_mem: AtomicUsize,
    /// Bytes the connection's own state holds: MULTI queue, watched keys, tracking prefixes.
    pub state_mem: AtomicUsize,
    /// Bytes queued for this client by others (pub/sub, MONITOR) and not yet written.
    pub push_pending: AtomicUsize,
    /// When (unix seconds) queued output went over the soft limit; 0 = it is under.
    pub obuf_soft_since: AtomicU64,
    /// A replica's output: the shared replication buffer's bytes it holds on to.
    pub repl_output: Mutex<Option<ReplOutput>>,
    pub meta: Mutex<ClientMeta>,
    /// CLIENT TRACKING's redirect target (0 = none), -1 while tracking is off.
    pub tracking_redir: AtomicI64,
    /// This client's push queue once it has one, so that tracking can redirect invalidations
    /// to it (cleared when the connection ends).
    pub push: Mutex<Option<crate::push::PushTx>>,
    killed: AtomicBool,
    /// The socket while it is open; KILL shuts it down under this lock so a closed (and
    /// possibly reused) descriptor is never touched.
    sock: Mutex<Option<RawFd>>,
}

impl ClientHandle {
    pub fn new(id: u64, addr: String, laddr: String, fd: RawFd) -> ClientHandle {
        ClientHandle {
            id,
            addr,
            laddr,
            fd,
            created: Instant::now(),
            last_interaction: AtomicU64::new(tern_engine::clock::now_ms()),
            db: AtomicUsize::new(0),
            last_cmd: AtomicUsize::new(0),
            resp: AtomicU32::new(2),
            flags: AtomicU32::new(0),
            multi_len: AtomicI64::new(-1),
            sub_count: AtomicUsize::new(0),
            psub_count: AtomicUsize::new(0),
            ssub_count: AtomicUsize::new(0),
            qbuf: AtomicUsize::new(0),
            qbuf_free: AtomicUsize::new(0),
            argv_mem: AtomicUsize::new(0),
            reply_pending: AtomicUsize::new(0),
            obuf: AtomicUsize::new(0),
            reply_buffer: Default::default(),
            tot_mem: AtomicUsize::new(0),
            state_mem: AtomicUsize::new(0),
            push_pending: AtomicUsize::new(0),
            repl_output: Mutex::new(None),
            obuf_soft_since: AtomicU64::new(0),
            meta: Mutex::new(ClientMeta {
                user: "default".into(),
                ..Default::default()
            }),
            tracking_redir: AtomicI64::new(-1),
            push: Mutex::new(None),
            killed: AtomicBool::new(false),
            sock: Mutex::new(Some(fd)),
        }
    }

    pub fn set_flag(&self, f: u32, on: bool) {
        if on {
            self.flags.fetch_or(f, Relaxed);
        } else {
            self.flags.fetch_and(!f, Relaxed);
        }
    }

    pub fn has_flag(&self, f: u32) -> bool {
        self.flags.load(Relaxed) & f != 0
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Relaxed)
    }

    /// Close the connection from any thread: the owner's next read fails and it cleans up.
    /// True for the call that closed it (false when it already was).
    pub fn kill(&self) -> bool {
        let first = !self.killed.swap(true, Relaxed);
        if let Some(fd) = *self.sock.lock() {
            // SAFETY: fd is open while it is registered here; shutdown does not close it.
            unsafe {
                libc::shutdown(fd, libc::SHUT_RDWR);
            }
        }
        first
    }

    /// The peer closed its side and left nothing unread: the connection's next read ends
    /// it. Asked from any thread without disturbing the connection (the data stays queued).
    pub fn peer_closed(&self) -> bool {
        let sock = self.sock.lock();
        let Some(fd) = *sock else { return false };
        let mut byte = 0u8;
        // SAFETY: fd is open while it is registered here (see `kill`); a peek reads nothing.
        let n = unsafe {
            libc::recv(
                fd,
                (&mut byte as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n == 0
    }

    /// Called by the owner just before its socket is closed.
    pub fn detach_socket(&self) {
        *self.sock.lock() = None;
    }

    pub fn idle_secs(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.last_interaction.load(Relaxed)) / 1000
    }

    pub fn flags_string(&self) -> String {
        let f = self.flags.load(Relaxed);
        let mut s = String::new();
        let table = [
            (cflags::MONITOR, 'O'),
            (cflags::REPLICA, 'S'),
            (cflags::MASTER, 'M'),
            (cflags::PUBSUB, 'P'),
            (cflags::MULTI, 'x'),
            (cflags::BLOCKED, 'b'),
            (cflags::TRACKING, 't'),
            (cflags::TRACKING_BROKEN_REDIR, 'R'),
            (cflags::TRACKING_BCAST, 'B'),
            (cflags::DIRTY_CAS, 'd'),
            (cflags::CLOSE_AFTER_REPLY, 'c'),
            (cflags::UNIX_SOCKET, 'U'),
            (cflags::READONLY, 'r'),
            (cflags::NO_EVICT, 'e'),
            (cflags::NO_TOUCH, 'T'),
        ];
        for (bit, c) in table {
            if f & bit != 0 {
                s.push(c);
            }
        }
        if s.is_empty() {
            s.push('N');
        }
        s
    }

    /// One CLIENT LIST / CLIENT INFO line (without the trailing newline), fields as Redis 7.2.
    /// How MONITOR names this client: its address, or `unix:<path>` for a Unix socket
    /// client, as Redis writes it.
    pub fn monitor_addr(&self) -> std::borrow::Cow<'_, str> {
        if self.has_flag(cflags::UNIX_SOCKET) {
            let path = self.addr.strip_suffix(":0").unwrap_or(&self.addr);
            std::borrow::Cow::Owned(format!("unix:{path}"))
        } else {
            std::borrow::Cow::Borrowed(&self.addr)
        }
    }

    /// A replica's output buffer, as Redis counts it (0 for other clients).
    pub fn repl_output_bytes(&self) -> usize {
        self.repl_output.lock().as_ref().map_or(0, |f| f())
    }

    pub fn info_line(&self, cmd_name: &str, now_ms: u64) -> String {
        let m = self.meta.lock();
        let lossy = |o: &Option<Vec<u8>>| {
            o.as_deref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        let qbuf = self.qbuf.load(Relaxed);
        let qbuf_free = self.qbuf_free.load(Relaxed);
        // As Redis: pending replies fill the client's reply buffer (obl), the rest goes to
        // its reply list (omem, counted in whole 16 KiB nodes).
        let pending = self.reply_pending.load(Relaxed);
        let rbs = self.reply_buffer.size.load(Relaxed);
        let obl = pending.min(rbs);
        let list = counted_reply_bytes(pending, rbs);
        let omem = list + self.push_pending.load(Relaxed) + self.repl_output_bytes();
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events=r cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            lossy(&m.name),
            self.created.elapsed().as_secs(),
            self.idle_secs(now_ms),
            self.flags_string(),
            self.db.load(Relaxed),
            self.sub_count.load(Relaxed),
            self.psub_count.load(Relaxed),
            self.ssub_count.load(Relaxed),
            self.multi_len.load(Relaxed),
            qbuf,
            qbuf_free,
            self.argv_mem.load(Relaxed),
            self.state_mem.load(Relaxed),
            self.reply_buffer.size.load(Relaxed),
            self.reply_buffer.peak.load(Relaxed),
            obl,
            list / REPLY_NODE,
            omem,
            crate::client_eviction::client_memory(self),
            cmd_name,
            // The master's link runs as no ACL user (Redis's superuser client).
            if self.has_flag(cflags::MASTER) {
                "(superuser)"
            } else {
                &m.user
            },
            self.tracking_redir.load(Relaxed),
            self.resp.load(Relaxed),
            lossy(&m.lib_name),
            lossy(&m.lib_ver),
        )
    }
}

/// Redis's reply chunk (PROTO_REPLY_CHUNK_BYTES): the largest reply buffer, and the size of
/// the reply-list nodes output past the buffer goes to.
pub const REPLY_STATIC: usize = 16 * 1024;

/// A node of Redis's reply list as it counts it: a 16 KiB chunk plus its 16-byte header is
/// allocated in jemalloc's 20 KiB size class, and the usable rest counts whole.
const REPLY_NODE: usize = 20 * 1024 - 16;

/// Reply bytes counted against client-output-buffer-limit, as Redis counts them: what does
/// not fit the client's reply buffer (`rbs`), in whole reply-list nodes.
pub fn counted_reply_bytes(pending: usize, rbs: usize) -> usize {
    pending.saturating_sub(rbs).div_ceil(REPLY_NODE) * REPLY_NODE
}

/// The most reply bytes a client may have pending before its hard limit is reached (Redis
/// closes a client once the counted bytes reach the limit); usize::MAX without a limit.
pub fn reply_cap(srv: &crate::server::Server, h: &ClientHandle) -> usize {
    match obuf_limits(srv, h).0 {
        0 => usize::MAX,
        hard => {
            let nodes = (hard as usize).div_ceil(REPLY_NODE) - 1;
            h.reply_buffer.size.load(Relaxed) + nodes * REPLY_NODE
        }
    }
}

/// The client-output-buffer-limit class of a client: 0 normal, 1 replica, 2 pub/sub.
pub fn obuf_class(h: &ClientHandle) -> usize {
    if h.has_flag(cflags::REPLICA) {
        1
    } else if h.has_flag(cflags::PUBSUB) {
        2
    } else {
        0
    }
}

/// (hard, soft, soft seconds) of the client's class; 0 = no such limit.
pub fn obuf_limits(srv: &crate::server::Server, h: &ClientHandle) -> (u64, u64, u64) {
    let l = &srv.config.hot.obuf_limits[obuf_class(h)];
    (l[0].load(Relaxed), l[1].load(Relaxed), l[2].load(Relaxed))
}

#[derive(Default)]
pub struct ClientRegistry {
    next_id: AtomicU64,
    clients: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
    /// Connections accepted since start (INFO stats total_connections_received).
    pub total_connections: AtomicU64,
    pub rejected_connections: AtomicU64,
    /// How reply buffers are resized (DEBUG REPLYBUFFER) and how often they were.
    pub reply_buffers: crate::reply_buffer::ReplyBufferPolicy,
    /// maxmemory-clients in bytes (0: no client eviction).
    pub eviction_limit: AtomicUsize,
    /// Memory of the normal and pub/sub clients (kept whether or not eviction is on).
    pub clients_mem: AtomicUsize,
    pub evicted_clients: AtomicU64,
    pub eviction_lock: Mutex<()>,
}

impl ClientRegistry {
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Relaxed) + 1
    }

    pub fn register(&self, h: Arc<ClientHandle>) {
        self.total_connections.fetch_add(1, Relaxed);
        self.clients.lock().insert(h.id, h);
    }

    /// A client this server opened itself (the link to its master): listed and killable, not
    /// counted as a received connection.
    pub fn register_link(&self, h: Arc<ClientHandle>) {
        self.clients.lock().insert(h.id, h);
    }

    pub fn unregister(&self, id: u64) {
        if let Some(h) = self.clients.lock().remove(&id) {
            crate::client_eviction::forget(self, &h);
        }
    }

    pub fn count(&self) -> usize {
        self.clients.lock().len()
    }

    pub fn get(&self, id: u64) -> Option<Arc<ClientHandle>> {
        self.clients.lock().get(&id).cloned()
    }

    /// Snapshot of all clients in id order (a client being closed is already gone).
    pub fn all(&self) -> Vec<Arc<ClientHandle>> {
        self.clients
            .lock()
            .values()
            .filter(|c| !c.is_killed())
            .cloned()
            .collect()
    }
}

//! The listening sockets (TCP on `port`, TLS on `tls-port`, the `unixsocket`), their accept
//! tasks, and a new connection's first steps (limits, protected mode, the TLS handshake)
//! before it is served. CONFIG SET port / tls-port / bind move them at run time.

use crate::uring::{self, UringStream};
use crate::{connection, notice, warning};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tern_runtime::clients::{cflags, ClientHandle};
use tern_runtime::Server;
use tokio::io::AsyncWriteExt;

/// An accepted connection handed to a worker thread, with the client id the acceptor gave it.
pub struct Accepted {
    /// Given in accept order, as Redis numbers its clients (0: over `maxclients` already,
    /// refused by the worker).
    pub id: u64,
    pub socket: Socket,
}

/// An accepted socket, by the listener it came from.
pub enum Socket {
    Tcp(std::net::TcpStream),
    Tls(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

/// What the acceptor needs of the worker threads: where to send a connection, and how
/// loaded each one is.
pub struct Worker {
    pub tx: tokio::sync::mpsc::UnboundedSender<Accepted>,
    pub load: Arc<std::sync::atomic::AtomicUsize>,
}

const PROTECTED_MODE_MSG: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Serve one accepted connection on this worker until it ends.
pub async fn start_connection(srv: Arc<Server>, accepted: Accepted) {
    let id = accepted.id;
    match accepted.socket {
        Socket::Tcp(s) => {
            let Some((stream, peer, local, denied)) = tcp_setup(&srv, s) else {
                return;
            };
            let fd = stream.as_raw_fd();
            if uring::active() {
                if let Some(stream) = UringStream::new(stream.into()) {
                    admit(srv, stream, id, peer, local, fd, false, denied).await;
                }
                return;
            }
            let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
                return;
            };
            admit(srv, stream, id, peer, local, fd, false, denied).await;
        }
        Socket::Tls(s) => {
            // TLS stays on tokio's reactor whatever the backend (see README, I/O backends).
            let Some((stream, peer, local, denied)) = tcp_setup(&srv, s) else {
                return;
            };
            let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
                return;
            };
            let Some(config) = srv.tls.server_config() else {
                return;
            };
            let fd = stream.as_raw_fd();
            // The handshake runs first: every reply, refusals included, goes over TLS.
            match tokio_rustls::TlsAcceptor::from(config).accept(stream).await {
                Ok(tls) => admit(srv, tls, id, peer, local, fd, false, denied).await,
                Err(e) => tern_runtime::log::write(
                    1,
                    &format!(
                        "Error accepting a client connection: {e} (addr={peer} laddr={local})"
                    ),
                ),
            }
        }
        Socket::Unix(s) => {
            // As Redis: the socket's path stands for both ends, port 0.
            let path = format!("{}:0", srv.config.get("unixsocket").unwrap_or_default());
            let fd = s.as_raw_fd();
            if uring::active() {
                if let Some(stream) = UringStream::new(s.into()) {
                    admit(srv, stream, id, path.clone(), path, fd, true, false).await;
                }
                return;
            }
            let _ = s.set_nonblocking(true);
            let Ok(stream) = tokio::net::UnixStream::from_std(s) else {
                return;
            };
            admit(srv, stream, id, path.clone(), path, fd, true, false).await;
        }
    }
}

/// A TCP connection's socket options, addresses, and whether protected mode refuses it;
/// None when it is already gone.
fn tcp_setup(
    srv: &Server,
    stream: std::net::TcpStream,
) -> Option<(std::net::TcpStream, String, String, bool)> {
    stream.set_nonblocking(true).ok()?;
    let _ = stream.set_nodelay(true);
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?:0".into());
    let local = stream
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?:0".into());
    let denied = protected_mode_denies(srv, &stream);
    let keepalive = srv.config.get_i64("tcp-keepalive");
    if keepalive > 0 {
        let sock = socket2::SockRef::from(&stream);
        let ka = socket2::TcpKeepalive::new()
            .with_time(Duration::from_secs(keepalive as u64))
            .with_interval(Duration::from_secs((keepalive as u64 / 3).max(1)));
        let _ = sock.set_tcp_keepalive(&ka);
    }
    Some((stream, peer, local, denied))
}

/// Protected mode's refusal, the client limit, then registration and the connection loop.
#[allow(clippy::too_many_arguments)]
async fn admit<S: connection::ClientStream>(
    srv: Arc<Server>,
    mut stream: S,
    id: u64,
    peer: String,
    local: String,
    fd: i32,
    unix: bool,
    denied: bool,
) {
    if denied {
        let _ = stream.write_all(PROTECTED_MODE_MSG.as_bytes()).await;
        let _ = stream.flush().await;
        return;
    }
    if id == 0 || srv.clients.count() as u64 >= srv.config.hot.maxclients.load(Relaxed) {
        srv.clients.rejected_connections.fetch_add(1, Relaxed);
        let _ = stream
            .write_all(b"-ERR max number of clients reached\r\n")
            .await;
        let _ = stream.flush().await;
        return;
    }
    let handle = Arc::new(ClientHandle::new(id, peer, local, fd));
    if unix {
        handle.set_flag(cflags::UNIX_SOCKET, true);
    }
    srv.clients.register(handle.clone());
    connection::serve(srv, stream, handle).await;
}

/// Protected mode refuses TCP clients from other hosts (never a Unix socket client).
fn protected_mode_denies(srv: &Server, stream: &std::net::TcpStream) -> bool {
    if !srv.config.get_bool("protected-mode") || srv.acl.auth_required() {
        return false;
    }
    if srv.config.get("bind").as_deref() != Some("* -::*") {
        return false;
    }
    match stream.peer_addr() {
        Ok(a) => !a.ip().is_loopback(),
        Err(_) => false,
    }
}

/// Which of the two TCP listeners.
#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    Tcp,
    Tls,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Tcp => "tcp",
            Kind::Tls => "tls",
        }
    }
}

/// Bind every `bind` address (a leading `-` marks one whose failure is tolerated).
fn bind_all(
    srv: &Server,
    binds: &str,
    port: u16,
    kind: Kind,
) -> Result<Vec<std::net::TcpListener>, String> {
    let backlog = srv.config.get_i64("tcp-backlog").max(1) as i32;
    tern_runtime::listen::bind_addresses(binds, port, backlog, kind.name())
}

/// Stop an accept task and wait until it has dropped its listener: once the caller returns
/// (CONFIG SET of a port), the old port is free and refuses connections.
pub(crate) fn abort_and_wait(task: tokio::task::JoinHandle<()>) {
    task.abort();
    while !task.is_finished() {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// One kind's accept tasks and the (bind, port) they serve (port 0: none).
#[derive(Default)]
struct ListenSet {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The listening sockets the tasks own (shut down directly at exit: `close_before_exit`).
    fds: Vec<std::os::fd::RawFd>,
    binds: String,
    port: u16,
}

/// The listening sockets and their accept tasks.
pub struct Listeners {
    runtime: tokio::runtime::Handle,
    workers: Arc<Workers>,
    tcp: parking_lot::Mutex<ListenSet>,
    tls: parking_lot::Mutex<ListenSet>,
    unix: parking_lot::Mutex<Option<(tokio::task::JoinHandle<()>, String)>>,
}

impl Listeners {
    pub fn new(srv: &Arc<Server>, workers: Vec<Worker>) -> Arc<Listeners> {
        Arc::new(Listeners {
            runtime: tokio::runtime::Handle::current(),
            workers: Arc::new(Workers {
                srv: Arc::downgrade(srv),
                list: workers,
            }),
            tcp: Default::default(),
            tls: Default::default(),
            unix: Default::default(),
        })
    }

    /// Listen on every address of `binds` at `port` (0: not at all, as Redis's `port 0`).
    /// Like Redis, the old sockets are closed first (a new address may overlap an old one);
    /// if the new ones cannot all be bound, the old ones are restored and the error returned.
    pub fn rebind(&self, srv: &Server, kind: Kind, binds: &str, port: u16) -> Result<(), String> {
        let mut cur = match kind {
            Kind::Tcp => self.tcp.lock(),
            Kind::Tls => self.tls.lock(),
        };
        cur.fds.clear();
        for t in cur.tasks.drain(..) {
            abort_and_wait(t);
        }
        let (old_binds, old_port) = (cur.binds.clone(), cur.port);
        let result = if port == 0 {
            Ok(Vec::new())
        } else {
            bind_all(srv, binds, port, kind)
        };
        match result {
            Ok(l) => self.spawn_all(&mut cur, l, kind),
            Err(e) => {
                if old_port != 0 {
                    match bind_all(srv, &old_binds, old_port, kind) {
                        Ok(l) => self.spawn_all(&mut cur, l, kind),
                        Err(e2) => warning!("Failed to restore the old listeners: {e2}"),
                    }
                }
                return Err(e);
            }
        }
        (cur.binds, cur.port) = (binds.to_string(), port);
        if kind == Kind::Tcp {
            srv.tcp_port.store(port as u64, Relaxed);
        }
        Ok(())
    }

    fn spawn_all(&self, set: &mut ListenSet, listeners: Vec<std::net::TcpListener>, kind: Kind) {
        use std::os::fd::AsRawFd;
        let _guard = self.runtime.enter();
        for l in listeners {
            match tokio::net::TcpListener::from_std(l) {
                Ok(l) => {
                    set.fds.push(l.as_raw_fd());
                    set.tasks.push(
                        self.runtime
                            .spawn(accept_tcp(l, kind, self.workers.clone())),
                    )
                }
                Err(e) => warning!("Listener setup failed: {e}"),
            }
        }
    }

    /// Create the Unix socket at `path` (a stale file there is removed first) with `perm`
    /// (octal bits; 0 keeps the umask's).
    pub fn listen_unix(&self, srv: &Server, path: &str, perm: u32) -> Result<(), String> {
        let _ = std::fs::remove_file(path);
        let backlog = srv.config.get_i64("tcp-backlog").max(1) as i32;
        let l = (|| -> std::io::Result<std::os::unix::net::UnixListener> {
            let s = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None)?;
            s.bind(&socket2::SockAddr::unix(path)?)?;
            if perm != 0 {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm))?;
            }
            s.listen(backlog)?;
            s.set_nonblocking(true)?;
            Ok(std::os::unix::net::UnixListener::from(
                std::os::fd::OwnedFd::from(s),
            ))
        })()
        .map_err(|e| format!("Failed opening Unix socket: {e}"))?;
        let _guard = self.runtime.enter();
        let l = tokio::net::UnixListener::from_std(l)
            .map_err(|e| format!("Failed opening Unix socket: {e}"))?;
        let task = self.runtime.spawn(accept_unix(l, self.workers.clone()));
        *self.unix.lock() = Some((task, path.to_string()));
        Ok(())
    }

    /// Shutdown: the Unix socket file goes away, as Redis removes it.
    pub fn remove_unix(&self) {
        if let Some((task, path)) = self.unix.lock().take() {
            task.abort();
            notice!("Removing the unix socket file.");
            if let Err(e) = std::fs::remove_file(&path) {
                warning!("Error removing the unix socket file: {e}");
            }
        }
    }

    /// The last step of a shutdown, on whatever thread runs it: stop listening at once (a
    /// client connecting after SHUTDOWN is refused, as Redis closes its listeners before
    /// exiting), then remove the Unix socket file.
    pub fn close_before_exit(&self) {
        for set in [&self.tcp, &self.tls] {
            let mut set = set.lock();
            for fd in set.fds.drain(..) {
                // SAFETY: a listening socket its accept task still owns (aborted only below);
                // shut down, not closed, so the descriptor stays valid until the process exits.
                unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
            }
            for t in set.tasks.drain(..) {
                t.abort();
            }
        }
        self.remove_unix();
    }

    pub fn listening_anywhere(&self) -> bool {
        !self.tcp.lock().tasks.is_empty()
            || !self.tls.lock().tasks.is_empty()
            || self.unix.lock().is_some()
    }
}

/// The worker threads, as the accept tasks see them.
pub struct Workers {
    /// Weak: the server's CONFIG SET hooks hold the listeners.
    srv: std::sync::Weak<Server>,
    list: Vec<Worker>,
}

impl Workers {
    /// Number the client (here, in accept order, as Redis does: two clients connecting
    /// together keep their order whatever worker serves them) and give it to the least-loaded
    /// worker: a connection stays on the thread that gets it.
    fn hand_over(&self, socket: Socket) {
        let Some(srv) = self.srv.upgrade() else {
            return;
        };
        // As Redis, a client refused for `maxclients` uses no id.
        let full = srv.clients.count() as u64 >= srv.config.hot.maxclients.load(Relaxed);
        let id = if full { 0 } else { srv.clients.next_id() };
        let w = self
            .list
            .iter()
            .min_by_key(|w| w.load.load(Relaxed))
            .expect("at least one worker");
        // Counted here, not when the worker gets to it: a burst of connections (a benchmark's
        // 50) would otherwise all see the same stale counts and land on one worker.
        w.load.fetch_add(1, Relaxed);
        if w.tx.send(Accepted { id, socket }).is_err() {
            w.load.fetch_sub(1, Relaxed);
        }
    }
}

/// Redis serves no client while a short load runs (it answers -LOADING only between chunks
/// of a long one): connections wait in the backlog until the start-up load ends, or until
/// it has run for `LOAD_SERVE_AFTER` (then they are served, with -LOADING).
async fn wait_startup_load(workers: &Workers) {
    const LOAD_SERVE_AFTER: Duration = Duration::from_millis(200);
    let t0 = std::time::Instant::now();
    let loaded = || {
        workers
            .srv
            .upgrade()
            .is_none_or(|srv| srv.rdb.startup_load_done.load(Relaxed))
    };
    while !loaded() && t0.elapsed() < LOAD_SERVE_AFTER {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn accept_tcp(l: tokio::net::TcpListener, kind: Kind, workers: Arc<Workers>) {
    wait_startup_load(&workers).await;
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                let Ok(std) = s.into_std() else { continue };
                workers.hand_over(match kind {
                    Kind::Tcp => Socket::Tcp(std),
                    Kind::Tls => Socket::Tls(std),
                });
            }
            // No longer listening (shut down by `close_before_exit`).
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return,
            Err(e) => {
                warning!("Accepting client connection: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn accept_unix(l: tokio::net::UnixListener, workers: Arc<Workers>) {
    wait_startup_load(&workers).await;
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                let Ok(std) = s.into_std() else { continue };
                workers.hand_over(Socket::Unix(std));
            }
            Err(e) => {
                warning!("Accepting client connection: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Open every configured listener and register the CONFIG SET hooks that move them.
/// Err: the server cannot start (the message is logged by the caller).
/// CONFIG SET port / tls-port: rebind that kind's listeners on the new port.
fn set_port_hook(srv: &Arc<Server>, listeners: &Arc<Listeners>, kind: Kind) {
    const PORT_ERR: &str = "Unable to listen on this port. Check server logs.";
    let (l, s) = (listeners.clone(), Arc::downgrade(srv));
    let name = if kind == Kind::Tls {
        "tls-port"
    } else {
        "port"
    };
    srv.config.set_apply_hook(
        name,
        Box::new(move |v| {
            let srv = s.upgrade().ok_or("shutting down")?;
            let port: u16 = v.parse().map_err(|_| PORT_ERR.to_string())?;
            // As Redis: TLS is configured the first time it is needed.
            if kind == Kind::Tls && port != 0 && !srv.tls.is_configured() {
                srv.tls.configure(&srv.config).map_err(|e| {
                    warning!("{e}");
                    tern_runtime::tls::APPLY_ERR.to_string()
                })?;
            }
            let binds = srv.config.get("bind").unwrap_or_default();
            l.rebind(&srv, kind, &binds, port).map_err(|e| {
                warning!("{e}");
                PORT_ERR.to_string()
            })
        }),
    );
}

pub fn start(srv: &Arc<Server>, listeners: &Arc<Listeners>) -> Result<(), String> {
    let binds = srv.config.get("bind").unwrap_or_default();
    if tern_runtime::tls::wanted(&srv.config) {
        if let Err(e) = srv.tls.configure(&srv.config) {
            warning!("{e}");
            return Err("Failed to configure TLS. Check logs for more info.".into());
        }
    }
    tern_runtime::tls::register_hooks(srv);
    let port = srv.config.get_i64("port") as u16;
    listeners.rebind(srv, Kind::Tcp, &binds, port)?;
    let tls_port = srv.config.get_i64("tls-port") as u16;
    listeners.rebind(srv, Kind::Tls, &binds, tls_port)?;
    let path = srv.config.get("unixsocket").unwrap_or_default();
    if !path.is_empty() {
        let perm = u32::from_str_radix(&srv.config.get("unixsocketperm").unwrap_or_default(), 8)
            .unwrap_or(0);
        listeners.listen_unix(srv, &path, perm)?;
    }
    if !listeners.listening_anywhere() {
        return Err("Configured to not listen anywhere, exiting.".into());
    }

    // CONFIG SET port / tls-port / bind: listen on the new address before answering OK.
    set_port_hook(srv, listeners, Kind::Tcp);
    set_port_hook(srv, listeners, Kind::Tls);
    let (l, s) = (listeners.clone(), Arc::downgrade(srv));
    srv.config.set_apply_hook(
        "bind",
        Box::new(move |v| {
            let srv = s.upgrade().ok_or("shutting down")?;
            let port = srv.tcp_port.load(Relaxed) as u16;
            let tls_port = srv.config.get_i64("tls-port") as u16;
            l.rebind(&srv, Kind::Tcp, v, port)
                .and_then(|_| l.rebind(&srv, Kind::Tls, v, tls_port))
                .map_err(|e| {
                    warning!("{e}");
                    "Failed to bind to specified addresses.".to_string()
                })
        }),
    );
    // Listening now: clients (and Redis's suite) may connect once this is logged.
    crate::log::server_initialized();
    let kinds: Vec<&'static str> = [
        (port != 0, "tcp"),
        (!path.is_empty(), "unix"),
        (tls_port != 0, "tls"),
    ]
    .into_iter()
    .filter_map(|(on, kind)| on.then_some(kind))
    .collect();
    // "Ready" once the dataset is loaded, as Redis: the suite and operators' tooling wait for
    // it, and a client connecting earlier gets -LOADING.
    let loaded_srv = srv.clone();
    let ready = move || {
        while !loaded_srv.rdb.startup_load_done.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
        }
        for kind in kinds {
            notice!("Ready to accept connections {kind}");
        }
    };
    if srv.rdb.startup_load_done.load(Relaxed) {
        ready();
    } else {
        std::thread::Builder::new()
            .name("ready-log".into())
            .spawn(ready)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

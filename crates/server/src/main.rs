//! tern-server: a Redis-compatible, multi-threaded in-memory data store.
mod connection;
mod crash;
mod log;
mod replica;
mod startup;

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use tern_commands::clients::ClientHandle;
use tern_commands::Server;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

// jemalloc, as Redis uses: low fragmentation, and the allocation stats INFO memory reports.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

struct Worker {
    tx: UnboundedSender<std::net::TcpStream>,
    load: Arc<AtomicUsize>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, template] = args.as_slice() {
        if flag == tern_commands::save_child::CHILD_FLAG {
            tern_commands::save_child::child_main(template);
        }
    }
    let config = match startup::parse_args(&args) {
        startup::Startup::Run(c) => *c,
        startup::Startup::Exit(code) => std::process::exit(code),
    };
    if let Err(e) = log::init(
        &config.get("logfile").unwrap_or_default(),
        &config.get("loglevel").unwrap_or_default(),
    ) {
        eprintln!("Can't open the log file: {e}");
        std::process::exit(1);
    }
    tern_commands::log::set_logger(log::log);
    crash::install();
    // Keys the engine expires reach the write log as DEL (while an AOF is on).
    tern_engine::events::set_expire_hook(tern_commands::propagate::on_expired);
    tern_commands::digest::maybe_enable_watch_check();
    let threads = match config.get_i64("threads") {
        n if n > 0 => n as usize,
        _ => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    };
    let has_config_file = config.file.read().is_some();
    let srv = Arc::new(Server::new(config, threads));
    log_startup(&srv, has_config_file, threads);
    if let Err(e) = tern_commands::acl::load_at_startup(&srv) {
        warning!("{e}");
        std::process::exit(1);
    }
    let pidfile = srv.config.get("pidfile").unwrap_or_default();
    if !pidfile.is_empty() {
        if let Err(e) = std::fs::write(&pidfile, format!("{}\n", std::process::id())) {
            warning!("Failed to write PID file: {e}");
        }
    }

    // Load the RDB file while already accepting connections: until it is in, commands
    // without the `loading` flag get -LOADING. A corrupt file stops the server (and is kept).
    tern_commands::aof::set_fsync_policy(&srv.config.get("appendfsync").unwrap_or_default());
    register_aof_hooks(&srv);
    let rdb = tern_commands::persistence::rdb_path(&srv);
    if srv.config.get_bool("appendonly") {
        // With the AOF on, the AOF alone is the dataset (as in Redis): load it, then open it
        // for appending. Refused or corrupt files stop the server and are left as they are.
        tern_commands::persistence::RDB.loading.store(true, Relaxed);
        let srv2 = srv.clone();
        std::thread::Builder::new()
            .name("aof-load".into())
            .spawn(move || {
                let t0 = std::time::Instant::now();
                match tern_commands::aof::load(&srv2) {
                    Ok(tern_commands::aof::Loaded::Ok | tern_commands::aof::Loaded::Truncated) => {
                        notice!(
                            "DB loaded from append only file: {:.3} seconds",
                            t0.elapsed().as_secs_f64()
                        )
                    }
                    Ok(_) => {}
                    Err(e) => {
                        log::wait_initialized(Duration::from_secs(5));
                        warning!("{e}");
                        std::process::exit(1);
                    }
                }
                if let Err(e) = tern_commands::aof::open_on_start(&srv2) {
                    log::wait_initialized(Duration::from_secs(5));
                    warning!("{e}");
                    std::process::exit(1);
                }
                tern_commands::persistence::RDB
                    .loading
                    .store(false, Relaxed);
            })
            .expect("spawn loader thread");
    } else if rdb.exists() {
        tern_commands::persistence::RDB.loading.store(true, Relaxed);
        let srv2 = srv.clone();
        std::thread::Builder::new()
            .name("rdb-load".into())
            .spawn(move || {
                let t0 = std::time::Instant::now();
                match tern_commands::persistence::rdb_load(&srv2, &rdb, false) {
                    Ok(_) => notice!(
                        "DB loaded from disk: {:.3} seconds",
                        t0.elapsed().as_secs_f64()
                    ),
                    Err(e) => {
                        log::wait_initialized(Duration::from_secs(5));
                        warning!("{e}");
                        std::process::exit(1);
                    }
                }
            })
            .expect("spawn loader thread");
    }
    let workers: Vec<Worker> = (0..threads).map(|i| spawn_worker(srv.clone(), i)).collect();
    spawn_cron(srv.clone());
    // `replicaof host port` in the configuration: follow that master from the start.
    if let Some((host, Ok(port))) = srv.config.get("replicaof").and_then(|v| {
        v.split_once(' ')
            .map(|(h, p)| (h.to_string(), p.parse::<u16>()))
    }) {
        tern_commands::master_link::start(srv.clone(), host, port);
    }

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("acceptor runtime");
    let mut code = rt.block_on(accept_loop(srv.clone(), workers));
    // A background save's writer is of no use any more, as Redis kills its child: stop it
    // and remove its temp file.
    for pid in tern_commands::save_child::kill_all() {
        warning!("There is a child saving an .rdb. Killing it! (pid {pid})");
    }
    if code == 0
        && !tern_commands::persistence::SHUTDOWN_SAVED.load(Relaxed)
        && tern_commands::persistence::has_save_points(&srv)
    {
        notice!("Saving the final RDB snapshot before exiting.");
        match tern_commands::persistence::rdb_save(&srv) {
            Ok(_) => notice!("DB saved on disk"),
            Err(e) => {
                warning!("Error trying to save the DB, can't exit: {e}");
                code = 1;
            }
        }
    }
    tern_commands::aof::shutdown();
    if !pidfile.is_empty() {
        let _ = std::fs::remove_file(&pidfile);
    }
    notice!("tern is now ready to exit, bye bye...");
    std::process::exit(code);
}

/// The start-up lines Redis logs (operators' tooling and Redis's own test suite wait for them:
/// the banner's `PID:` line, then `Server initialized`).
fn log_startup(srv: &Server, has_config_file: bool, threads: usize) {
    let pid = std::process::id();
    warning!("oO0OoO0OoO0Oo tern is starting oO0OoO0OoO0Oo");
    warning!(
        "Redis version={}, bits=64, commit=00000000, modified=0, pid={pid}, just started",
        tern_commands::REDIS_VERSION
    );
    if has_config_file {
        warning!("Configuration loaded");
    } else {
        warning!("Warning: no config file specified, using the default config. In order to specify a config file use tern-server /path/to/tern.conf");
    }
    let port = srv.config.get_i64("port");
    let logfile = srv.config.get("logfile").unwrap_or_default();
    let tty = logfile.is_empty() && unsafe { libc::isatty(1) } == 1;
    if srv.config.get_bool("always-show-logo") || tty {
        log::raw(&format!(
            "\n    tern {} (Redis {} compatible), 64 bit\n    Running in standalone mode with {threads} threads\n    Port: {port}\n    PID: {pid}\n\n",
            env!("CARGO_PKG_VERSION"),
            tern_commands::REDIS_VERSION,
        ));
    } else {
        notice!("Running mode=standalone, port={port}.");
    }
}

fn spawn_worker(srv: Arc<Server>, i: usize) -> Worker {
    let (tx, mut rx) = unbounded_channel::<std::net::TcpStream>();
    let load = Arc::new(AtomicUsize::new(0));
    let load2 = load.clone();
    std::thread::Builder::new()
        .name(format!("tern-worker-{i}"))
        .spawn(move || {
            tern_commands::propagate::LOG.defer_wakes_on_this_thread();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .on_thread_park(|| {
                    tern_commands::aof::on_worker_park();
                    connection::on_worker_park();
                })
                .build()
                .expect("worker runtime");
            rt.block_on(async move {
                tern_commands::aof::start_durable_relay();
                while let Some(std_stream) = rx.recv().await {
                    let srv = srv.clone();
                    let load = load2.clone();
                    load.fetch_add(1, Relaxed);
                    tokio::spawn(async move {
                        start_connection(srv, std_stream).await;
                        load.fetch_sub(1, Relaxed);
                    });
                }
            });
        })
        .expect("spawn worker thread");
    Worker { tx, load }
}

const PROTECTED_MODE_MSG: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

async fn start_connection(srv: Arc<Server>, std_stream: std::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let Ok(stream) = tokio::net::TcpStream::from_std(std_stream) else {
        return;
    };
    let _ = stream.set_nodelay(true);
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?:0".into());
    let local = stream
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?:0".into());
    let mut stream = stream;
    use tokio::io::AsyncWriteExt;
    if srv.clients.count() as u64 >= srv.config.hot.maxclients.load(Relaxed) {
        srv.clients.rejected_connections.fetch_add(1, Relaxed);
        let _ = stream
            .write_all(b"-ERR max number of clients reached\r\n")
            .await;
        return;
    }
    if protected_mode_denies(&srv, &stream) {
        let _ = stream.write_all(PROTECTED_MODE_MSG.as_bytes()).await;
        return;
    }
    let keepalive = srv.config.get_i64("tcp-keepalive");
    if keepalive > 0 {
        let sock = socket2::SockRef::from(&stream);
        let ka = socket2::TcpKeepalive::new()
            .with_time(Duration::from_secs(keepalive as u64))
            .with_interval(Duration::from_secs((keepalive as u64 / 3).max(1)));
        let _ = sock.set_tcp_keepalive(&ka);
    }
    let id = srv.clients.next_id();
    let handle = Arc::new(ClientHandle::new(id, peer, local, stream.as_raw_fd()));
    srv.clients.register(handle.clone());
    connection::serve(srv, stream, handle).await;
}

fn protected_mode_denies(srv: &Server, stream: &tokio::net::TcpStream) -> bool {
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

/// Bind every `bind` address (a leading `-` marks one whose failure is tolerated).
fn bind_all(srv: &Server, binds: &str, port: u16) -> Result<Vec<std::net::TcpListener>, String> {
    let backlog = srv.config.get_i64("tcp-backlog").max(1) as i32;
    let mut out = Vec::new();
    for spec in binds.split_whitespace() {
        let (optional, addr) = match spec.strip_prefix('-') {
            Some(a) => (true, a),
            None => (false, spec),
        };
        let host = match addr {
            "*" => "0.0.0.0",
            "::*" => "::",
            a => a,
        };
        let sa: Option<SocketAddr> = (host, port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut i| i.next());
        let res = sa
            .ok_or_else(|| format!("bad address {host}"))
            .and_then(|sa| {
                let domain = if sa.is_ipv6() {
                    socket2::Domain::IPV6
                } else {
                    socket2::Domain::IPV4
                };
                let s = socket2::Socket::new(domain, socket2::Type::STREAM, None)
                    .map_err(|e| e.to_string())?;
                if sa.is_ipv6() {
                    let _ = s.set_only_v6(true);
                }
                s.set_reuse_address(true).map_err(|e| e.to_string())?;
                s.bind(&sa.into()).map_err(|e| e.to_string())?;
                s.listen(backlog).map_err(|e| e.to_string())?;
                s.set_nonblocking(true).map_err(|e| e.to_string())?;
                Ok(std::net::TcpListener::from(s))
            });
        match res {
            Ok(l) => out.push(l),
            Err(e) if optional => notice!("Skipping optional bind {spec}: {e}"),
            Err(e) => {
                return Err(format!(
                    "Failed listening on port {port} (tcp), aborting: {host}: {e}"
                ))
            }
        }
    }
    if out.is_empty() {
        return Err("Failed listening: no address bound".into());
    }
    Ok(out)
}

/// The listening sockets and their accept tasks; CONFIG SET port/bind swaps them at run time.
struct Listeners {
    runtime: tokio::runtime::Handle,
    workers: Arc<Vec<Worker>>,
    /// Accept tasks and the (bind, port) they serve.
    current: parking_lot::Mutex<(Vec<tokio::task::JoinHandle<()>>, String, u16)>,
}

impl Listeners {
    /// Listen on every address of `binds` at `port`. Like Redis, the old sockets are closed
    /// first (a new address may overlap an old one); if the new ones cannot all be bound, the
    /// old ones are restored and the error returned.
    fn rebind(&self, srv: &Server, binds: &str, port: u16) -> Result<(), String> {
        let mut cur = self.current.lock();
        for t in cur.0.drain(..) {
            t.abort();
            // The task owns its listener; wait until it is dropped so the port is free.
            while !t.is_finished() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let (old_binds, old_port) = (cur.1.clone(), cur.2);
        let result = bind_all(srv, binds, port);
        let (listeners, used) = match result {
            Ok(l) => (l, (binds.to_string(), port)),
            Err(e) => {
                if old_port != 0 {
                    match bind_all(srv, &old_binds, old_port) {
                        Ok(l) => self.spawn_all(&mut cur.0, l),
                        Err(e2) => warning!("Failed to restore the old listeners: {e2}"),
                    }
                }
                return Err(e);
            }
        };
        self.spawn_all(&mut cur.0, listeners);
        (cur.1, cur.2) = used;
        srv.tcp_port.store(port as u64, Relaxed);
        Ok(())
    }

    fn spawn_all(
        &self,
        tasks: &mut Vec<tokio::task::JoinHandle<()>>,
        listeners: Vec<std::net::TcpListener>,
    ) {
        let _guard = self.runtime.enter();
        for l in listeners {
            match tokio::net::TcpListener::from_std(l) {
                Ok(l) => tasks.push(self.runtime.spawn(accept_on(l, self.workers.clone()))),
                Err(e) => warning!("Listener setup failed: {e}"),
            }
        }
    }
}

async fn accept_on(l: tokio::net::TcpListener, workers: Arc<Vec<Worker>>) {
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                let Ok(std) = s.into_std() else { continue };
                // Least-loaded worker: connections stay on the thread that gets them.
                let w = workers
                    .iter()
                    .min_by_key(|w| w.load.load(Relaxed))
                    .expect("at least one worker");
                let _ = w.tx.send(std);
            }
            Err(e) => {
                warning!("Accepting client connection: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn accept_loop(srv: Arc<Server>, workers: Vec<Worker>) -> i32 {
    let listeners = Arc::new(Listeners {
        runtime: tokio::runtime::Handle::current(),
        workers: Arc::new(workers),
        current: parking_lot::Mutex::new((Vec::new(), String::new(), 0)),
    });
    let port = srv.config.get_i64("port") as u16;
    if let Err(e) = listeners.rebind(&srv, &srv.config.get("bind").unwrap_or_default(), port) {
        warning!("{e}");
        return 1;
    }
    log::server_initialized();
    // CONFIG SET port / bind: listen on the new address before answering OK.
    let (l2, s2) = (listeners.clone(), Arc::downgrade(&srv));
    srv.config.set_apply_hook(
        "port",
        Box::new(move |v| {
            let srv = s2.upgrade().ok_or("shutting down")?;
            let port: u16 = v
                .parse()
                .map_err(|_| "Unable to listen on this port. Check server logs.".to_string())?;
            l2.rebind(&srv, &srv.config.get("bind").unwrap_or_default(), port)
                .map_err(|_| "Unable to listen on this port. Check server logs.".to_string())
        }),
    );
    let (l3, s3) = (listeners.clone(), Arc::downgrade(&srv));
    srv.config.set_apply_hook(
        "bind",
        Box::new(move |v| {
            let srv = s3.upgrade().ok_or("shutting down")?;
            let port = srv.tcp_port.load(Relaxed) as u16;
            l3.rebind(&srv, v, port)
                .map_err(|_| "Failed to bind to specified addresses.".to_string())
        }),
    );
    notice!("Ready to accept connections tcp");
    let mut shutdown = srv.shutdown.subscribe();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .expect("SIGINT handler");
    tokio::select! {
        _ = shutdown.wait_for(|v| *v) => notice!("User requested shutdown..."),
        _ = term.recv() => notice!("Received SIGTERM scheduling shutdown..."),
        _ = int.recv() => notice!("Received SIGINT scheduling shutdown..."),
    }
    0
}

/// Background work Redis does in serverCron: active expiry and idle-client timeouts.
fn spawn_cron(srv: Arc<Server>) {
    std::thread::Builder::new()
        .name("tern-cron".into())
        .spawn(move || {
            let mut last_timeout_check = std::time::Instant::now();
            loop {
                let hz = srv.config.hot.hz.load(Relaxed).max(1);
                let period = Duration::from_millis(1000 / hz);
                std::thread::sleep(period);
                if srv.cron_paused.load(Relaxed) {
                    continue;
                }
                if srv.active_expire_enabled.load(Relaxed) && !srv.pause.holds_expiry() {
                    let effort = srv
                        .config
                        .hot
                        .active_expire_effort
                        .load(Relaxed)
                        .clamp(1, 10);
                    // Redis's slow cycle: 25% of each period, more with higher effort.
                    let budget = period * (25 + 2 * (effort as u32 - 1)) / 100;
                    let started = std::time::Instant::now();
                    srv.expire
                        .cycle(&srv.store, tern_engine::clock::now_ms(), budget);
                    // As Redis's latency monitor: a cycle that took long (freeing a big
                    // expired value, say) is an `expire-cycle` event.
                    srv.latency_event("expire-cycle", started.elapsed().as_millis() as u64);
                    // Keyspace events for the keys this cycle expired.
                    tern_commands::pubsub::flush_engine_events(&srv);
                }
                tern_commands::tracking::cron(&srv);
                // Over maxmemory: go on evicting between commands (a quarter of the period).
                tern_commands::evict::cron(&srv, period / 4);
                tern_commands::persistence::cron(&srv);
                tern_commands::aof::cron(&srv);
                tern_commands::replication::cron(&srv);
                if last_timeout_check.elapsed() >= Duration::from_secs(1) {
                    last_timeout_check = std::time::Instant::now();
                    close_idle_clients(&srv);
                }
            }
        })
        .expect("spawn cron thread");
}

/// CONFIG SET appendonly / appendfsync act at once.
fn register_aof_hooks(srv: &Arc<Server>) {
    let s = Arc::downgrade(srv);
    srv.config.set_apply_hook(
        "appendonly",
        Box::new(move |v| {
            let srv = s.upgrade().ok_or("shutting down")?;
            tern_commands::aof::config_changed(&srv, v == "yes")
        }),
    );
    srv.config.set_apply_hook(
        "appendfsync",
        Box::new(|v| {
            tern_commands::aof::set_fsync_policy(v);
            Ok(())
        }),
    );
}

fn close_idle_clients(srv: &Server) {
    use tern_commands::clients::cflags;
    let timeout = srv.config.hot.timeout.load(Relaxed);
    if timeout == 0 {
        return;
    }
    let now = tern_engine::clock::now_ms();
    for c in srv.clients.all() {
        if c.has_flag(
            cflags::MONITOR | cflags::PUBSUB | cflags::BLOCKED | cflags::REPLICA | cflags::MASTER,
        ) {
            continue;
        }
        if c.idle_secs(now) > timeout {
            notice!("Closing idle client");
            c.kill();
        }
    }
}

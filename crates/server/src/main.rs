//! tern-server: a Redis-compatible, multi-threaded in-memory data store.
mod allocator;
mod connection;
mod crash;
mod drain;
mod listeners;
mod log;
mod metrics;
mod outbox;
mod replica;
mod startup;
mod uring;

use listeners::{Accepted, Listeners, Worker};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use tern_runtime::Server;
use tokio::sync::mpsc::unbounded_channel;

#[global_allocator]
static GLOBAL: allocator::Jemalloc = allocator::Jemalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, template] = args.as_slice() {
        if flag == tern_runtime::save_child::CHILD_FLAG {
            tern_runtime::save_child::child_main(template);
        }
    }
    tern_commands::install_command_table();
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
    tern_runtime::log::set_logger(log::log);
    crash::install();
    tern_commands::server::debug::digest::maybe_enable_watch_check();
    let threads = match config.get_i64("threads") {
        n if n > 0 => n as usize,
        _ => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    };
    let has_config_file = config.file.read().is_some();
    let srv = Arc::new(Server::new(config, threads));
    log::set_server(&srv);
    // Keys the engine expires reach the write log as DEL (while an AOF is on).
    tern_runtime::propagate::install_expire_hook(&srv);
    // KEYDB.CRON jobs the active cycle finds due run on a thread of their own.
    tern_runtime::cron_jobs::install(&srv);
    // A replica leaves expiry to its master.
    tern_runtime::replica_expiry::install(&srv);
    log_startup(&srv, has_config_file, threads);
    let backend = match uring::choose(&srv.config.get("io-backend").unwrap_or_default()) {
        Ok(b) => b,
        Err(e) => {
            warning!("{e}");
            std::process::exit(1);
        }
    };
    let _ = srv.io_backend.set(backend.name());
    if let Err(e) = tern_runtime::acl::load_at_startup(&srv) {
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
    tern_runtime::aof::set_fsync_policy(&srv, &srv.config.get("appendfsync").unwrap_or_default());
    register_aof_hooks(&srv);
    allocator::register_hooks(&srv);
    if let Err(e) = tern_runtime::cluster::start::init(&srv) {
        warning!("{e}");
        std::process::exit(1);
    }
    register_client_eviction_hooks(&srv);
    tern_runtime::replication::register_hooks(&srv);
    tern_runtime::client_eviction::apply_limit(&srv);
    // `replicaof host port` in the configuration: follow that master from the start (the
    // link waits for the load below, which may give it a history to continue).
    // (Not in cluster mode: a cluster node's master comes from nodes.conf.)
    if let Some((host, Ok(port))) = srv
        .config
        .get("replicaof")
        .filter(|_| srv.cluster.get().is_none())
        .and_then(|v| {
            v.split_once(' ')
                .map(|(h, p)| (h.to_string(), p.parse::<u16>()))
        })
    {
        tern_runtime::master_link::start_from_config(srv.clone(), host, port);
    }
    let rdb = tern_runtime::persistence::rdb_path(&srv);
    if srv.config.get_bool("appendonly") {
        // With the AOF on, the AOF alone is the dataset (as in Redis): load it, then open it
        // for appending. Refused or corrupt files stop the server and are left as they are.
        srv.rdb.loading.store(true, Relaxed);
        let srv2 = srv.clone();
        std::thread::Builder::new()
            .name("aof-load".into())
            .spawn(move || {
                let t0 = std::time::Instant::now();
                match tern_runtime::aof::load(&srv2) {
                    Ok(tern_runtime::aof::Loaded::Ok | tern_runtime::aof::Loaded::Truncated) => {
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
                if let Err(e) = tern_runtime::aof::open_on_start(&srv2) {
                    log::wait_initialized(Duration::from_secs(5));
                    warning!("{e}");
                    std::process::exit(1);
                }
                srv2.rdb.loading.store(false, Relaxed);
                tern_runtime::cluster::verify_data::claim_slots_of_loaded_keys(&srv2);
                srv2.rdb.startup_load_done.store(true, Relaxed);
            })
            .expect("spawn loader thread");
    } else if rdb.exists() {
        srv.rdb.loading.store(true, Relaxed);
        let srv2 = srv.clone();
        std::thread::Builder::new()
            .name("rdb-load".into())
            .spawn(move || {
                let t0 = std::time::Instant::now();
                let as_replica = tern_runtime::replica_expiry::is_replica(&srv2);
                let how = tern_runtime::persistence::RdbLoadHow {
                    as_replica,
                    name_expired: !as_replica,
                    ..Default::default()
                };
                match tern_runtime::persistence::rdb_load(&srv2, &rdb, how) {
                    Ok(loaded) => {
                        notice!(
                            "DB loaded from disk: {:.3} seconds",
                            t0.elapsed().as_secs_f64()
                        );
                        if let Some(loaded) = loaded {
                            tern_runtime::replication::restore_history(&srv2, loaded);
                        }
                    }
                    Err(e) => {
                        log::wait_initialized(Duration::from_secs(5));
                        warning!("{e}");
                        warning!("Terminating server after rdb file reading failure.");
                        std::process::exit(1);
                    }
                }
                tern_runtime::cluster::verify_data::claim_slots_of_loaded_keys(&srv2);
                srv2.rdb.startup_load_done.store(true, Relaxed);
            })
            .expect("spawn loader thread");
    } else {
        srv.rdb.startup_load_done.store(true, Relaxed);
    }
    let drain = drain::Drain::new(threads);
    let workers: Vec<Worker> = (0..threads)
        .map(|i| spawn_worker(srv.clone(), drain.clone(), i, backend))
        .collect();
    spawn_cron(srv.clone());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("acceptor runtime");
    // Returns only when the listeners could not start: a shutdown exits from its last step.
    let code = rt.block_on(accept_loop(srv.clone(), drain, workers));
    if !pidfile.is_empty() {
        let _ = std::fs::remove_file(&pidfile);
    }
    std::process::exit(code);
}

/// The start-up lines Redis logs (operators' tooling and Redis's own test suite wait for them:
/// the banner's `PID:` line, then `Server initialized`).
fn log_startup(srv: &Server, has_config_file: bool, threads: usize) {
    let pid = std::process::id();
    warning!("oO0OoO0OoO0Oo tern is starting oO0OoO0OoO0Oo");
    warning!(
        "Redis version={}, bits=64, commit=00000000, modified=0, pid={pid}, just started",
        tern_runtime::REDIS_VERSION
    );
    if has_config_file {
        warning!("Configuration loaded");
    } else {
        warning!("Warning: no config file specified, using the default config. In order to specify a config file use tern-server /path/to/tern.conf");
    }
    let port = srv.config.get_i64("port");
    let logfile = srv.config.get("logfile").unwrap_or_default();
    // SAFETY: isatty only inspects a descriptor number.
    let tty = logfile.is_empty() && unsafe { libc::isatty(1) } == 1;
    if srv.config.get_bool("always-show-logo") || tty {
        log::raw(&format!(
            "\n    tern {} (Redis {} compatible), 64 bit\n    Running in standalone mode with {threads} threads\n    Port: {port}\n    PID: {pid}\n\n",
            env!("CARGO_PKG_VERSION"),
            tern_runtime::REDIS_VERSION,
        ));
    } else {
        let mode = if srv.config.get_bool("cluster-enabled") {
            "cluster"
        } else {
            "standalone"
        };
        notice!("Running mode={mode}, port={port}.");
    }
}

fn spawn_worker(
    srv: Arc<Server>,
    drain: Arc<drain::Drain>,
    i: usize,
    backend: uring::Backend,
) -> Worker {
    let (tx, mut rx) = unbounded_channel::<Accepted>();
    let load = Arc::new(AtomicUsize::new(0));
    let load2 = load.clone();
    std::thread::Builder::new()
        .name(format!("tern-worker-{i}"))
        .spawn(move || {
            crash::use_large_signal_stack();
            srv.propagation.log.defer_wakes_on_this_thread();
            let park_srv = srv.clone();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .on_thread_park(move || {
                    tern_runtime::aof::on_worker_park(&park_srv);
                    connection::on_worker_park();
                    // Last: the replies queued by the hooks above go in the same submission.
                    uring::on_worker_park();
                })
                .build()
                .expect("worker runtime");
            rt.block_on(async move {
                if backend == uring::Backend::IoUring {
                    if let Err(e) = uring::start_on_worker() {
                        warning!("Can't set up io_uring on worker {i}: {e}");
                        std::process::exit(1);
                    }
                }
                tern_runtime::aof::start_durable_relay(&srv);
                tokio::spawn(drain::respond(drain, Some(i)));
                // A task of its own, not block_on's future (which the runtime polls only
                // between rounds of tasks): a connection handed over is started in the same
                // round as the tasks woken with it (see `drain`).
                let hand_over = tokio::spawn(async move {
                    while let Some(accepted) = rx.recv().await {
                        let srv = srv.clone();
                        // The acceptor counted it in (`Workers::hand_over`).
                        let load = load2.clone();
                        tokio::spawn(async move {
                            listeners::start_connection(srv, accepted).await;
                            load.fetch_sub(1, Relaxed);
                        });
                    }
                });
                let _ = hand_over.await;
            });
        })
        .expect("spawn worker thread");
    Worker { tx, load }
}

async fn accept_loop(srv: Arc<Server>, drain: Arc<drain::Drain>, workers: Vec<Worker>) -> i32 {
    tokio::spawn(drain::respond(drain, None));
    let listeners = Listeners::new(&srv, workers);
    if let Err(e) = listeners::start(&srv, &listeners) {
        warning!("{e}");
        listeners.remove_unix();
        return 1;
    }
    if let Err(e) = metrics::start(&srv) {
        warning!("{e}");
        return 1;
    }
    tern_runtime::watchdog::start(&srv);
    let l = listeners.clone();
    srv.shutdown_state
        .set_before_exit(Box::new(move || l.close_before_exit()));
    // SIGTERM / SIGINT only mark a shutdown wanted: the cron runs it (see shutdown.rs).
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .expect("SIGINT handler");
    loop {
        let sig = tokio::select! {
            _ = term.recv() => libc::SIGTERM,
            _ = int.recv() => libc::SIGINT,
        };
        tern_runtime::shutdown_sequence::on_signal(&srv, sig);
    }
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
                    tern_runtime::notify::flush_engine_events(&srv);
                }
                tern_runtime::tracking::cron(&srv);
                tern_runtime::clients_cron::run(&srv);
                // Over maxmemory: go on evicting between commands (a quarter of the period).
                tern_runtime::evict::cron(&srv, period / 4);
                tern_runtime::persistence::cron(&srv);
                tern_runtime::aof::cron(&srv);
                tern_runtime::replication::cron(&srv);
                tern_runtime::migrate_link::cron(&srv);
                tern_runtime::shutdown_sequence::cron(&srv);
                if last_timeout_check.elapsed() >= Duration::from_secs(1) {
                    last_timeout_check = std::time::Instant::now();
                    close_idle_clients(&srv);
                }
            }
        })
        .expect("spawn cron thread");
}

/// CONFIG SET maxmemory-clients (or maxmemory, of which it may be a percentage) evicts at once.
fn register_client_eviction_hooks(srv: &Arc<Server>) {
    for name in ["maxmemory-clients", "maxmemory"] {
        let s = Arc::downgrade(srv);
        srv.config.set_apply_hook(
            name,
            Box::new(move |_| {
                let srv = s.upgrade().ok_or("shutting down")?;
                tern_runtime::client_eviction::apply_limit(&srv);
                Ok(())
            }),
        );
    }
}

/// CONFIG SET appendonly / aof-disable-auto-gc / appendfsync / db-persistence act at once.
fn register_aof_hooks(srv: &Arc<Server>) {
    tern_runtime::db_policy::watch_persistence(srv);
    let s = Arc::downgrade(srv);
    srv.config.set_apply_hook(
        "appendonly",
        Box::new(move |v| {
            let srv = s.upgrade().ok_or("shutting down")?;
            tern_runtime::aof::config_changed(&srv, v == "yes")
        }),
    );
    let s = Arc::downgrade(srv);
    srv.config.set_apply_hook(
        "aof-disable-auto-gc",
        Box::new(move |v| {
            let srv = s.upgrade().ok_or("shutting down")?;
            tern_runtime::aof::auto_gc_changed(&srv, v == "yes")
        }),
    );
    let s = Arc::downgrade(srv);
    srv.config.set_apply_hook(
        "appendfsync",
        Box::new(move |v| {
            let srv = s.upgrade().ok_or("shutting down")?;
            tern_runtime::aof::set_fsync_policy(&srv, v);
            Ok(())
        }),
    );
}

fn close_idle_clients(srv: &Server) {
    use tern_runtime::clients::cflags;
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

//! Process-wide state shared by every connection: the keyspace, configuration, clients,
//! statistics, slow log, latency monitor and MONITOR subscribers.

use crate::clients::ClientRegistry;
use crate::config::Config;
use crate::registry::Registry;
use crate::stats::StatsRegistry;
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Instant;
use tern_engine::expire::ActiveExpire;
use tern_engine::Store;

pub struct SlowlogEntry {
    pub id: u64,
    pub time: u64,
    pub duration_us: u64,
    pub args: Vec<Vec<u8>>,
    pub peer: String,
    pub name: String,
}

#[derive(Default)]
pub struct Slowlog {
    pub next_id: u64,
    pub entries: VecDeque<SlowlogEntry>,
}

/// One latency event's history (LATENCY HISTORY / LATEST).
#[derive(Default)]
pub struct LatencySeries {
    pub samples: VecDeque<(u64, u64)>,
    pub max: u64,
}

pub struct Server {
    pub store: Store,
    pub config: Config,
    pub clients: ClientRegistry,
    pub stats: StatsRegistry,
    pub commands: Registry,
    pub slowlog: Mutex<Slowlog>,
    pub latency: Mutex<BTreeMap<String, LatencySeries>>,
    monitors: Mutex<Vec<crate::push::PushTx>>,
    monitor_count: AtomicUsize,
    pub expire: ActiveExpire,
    pub active_expire_enabled: AtomicBool,
    /// DEBUG PAUSE-CRON: the periodic tasks (active expire, tracking table limit) stop.
    pub cron_paused: AtomicBool,
    pub started: Instant,
    pub started_unix: u64,
    pub run_id: String,
    pub lastsave: AtomicU64,
    /// Dirty counter value at the last save (changes since = sum(dirty) - this).
    pub dirty_at_save: AtomicU64,
    pub tcp_port: AtomicU64,
    pub executable: String,
    pub threads: usize,
    /// How the workers serve client sockets (`io-backend` as chosen at start-up, the kernel
    /// permitting): INFO server's `io_backend` line.
    pub io_backend: std::sync::OnceLock<&'static str>,
    /// SHUTDOWN / signals: a shutdown asked for, waiting for replicas, its flags.
    pub shutdown_state: crate::shutdown_sequence::Shutdown,
    pub stat_expired_time_cap: AtomicU64,
    /// Clients waiting in BLPOP, BZPOPMIN, XREAD BLOCK, ...
    pub blocking: crate::blocking::Blocking,
    /// CLIENT PAUSE.
    pub pause: crate::pause::Pause,
    /// Pub/Sub subscriptions (channels, patterns, shard channels).
    pub pubsub: crate::subscriptions::PubSub,
    /// DEBUG SLEEP's stop of every worker.
    pub world: crate::world::World,
    /// Client-side caching: tracked keys, BCAST prefixes, tracking clients.
    pub tracking: crate::tracking::Tracking,
    /// ACL users, the ACL log.
    pub acl: std::sync::Arc<crate::acl::Acl>,
    /// The TLS configurations (tls-port listener, outgoing TLS links).
    pub tls: crate::tls::Tls,
    /// The replica side: the link to our master (REPLICAOF).
    pub master_link: crate::master_link::MasterLink,
    /// The master side: attached replicas.
    pub replicas: crate::replication::Replicas,
    /// The master side's diskless full syncs (snapshots streamed to replica sockets).
    pub diskless: crate::diskless_sync::DisklessSync,
    /// The software watchdog's view of busy threads (watchdog-period).
    pub watchdog: crate::watchdog::Watchdog,
    /// The replica side's diskless loads (async loading).
    pub diskless_load: crate::diskless_load::DisklessLoad,
    /// The EVAL script cache (SCRIPT LOAD, EVAL, SCRIPT FLUSH).
    pub scripts: crate::lua::scripts::ScriptCache,
    /// MIGRATE's cached connections to its targets.
    pub migrate_links: crate::migrate_link::MigrateLinks,
    /// The FUNCTION libraries.
    pub functions: crate::lua::libraries::FunctionLibraries,
    /// The Lua runtime's shared state: running scripts (SCRIPT KILL, BUSY), VM memory lines,
    /// math.random's rand48 state, DEBUG SET-DISABLE-DENY-SCRIPTS.
    pub lua: crate::lua::LuaRuntime,
    /// INFO's instantaneous_* rates between samples.
    pub rates: crate::info_sections::Rates,
    /// The running snapshot save's progress (INFO persistence `current_*`).
    pub save_progress: std::sync::Arc<crate::save_progress::SaveProgress>,
    /// The append-only file: its state, files, writer and rewrite.
    pub aof: crate::aof::AofState,
    /// The write log (AOF, replicas) and what replies wait for of it.
    pub propagation: crate::propagate::Propagation,
    /// RDB save/load state (INFO persistence, BGSAVE, loading, DEBUG
    /// SET-SKIP-CHECKSUM-VALIDATION, the start-up load's end).
    pub rdb: crate::persistence::RdbState,
    /// Background saves' writer processes and INFO's fork counters.
    pub save_children: std::sync::Arc<crate::save_child::SaveChildren>,
    /// INFO memory's lazyfree counters (shared with the background frees).
    pub lazyfree: std::sync::Arc<crate::background::Lazyfree>,
    /// The used-memory figure maxmemory checks read, refreshed at most once a millisecond.
    pub used_memory: crate::evict::UsedMemory,
    /// INFO memory's peak and startup used-memory marks.
    pub memory_marks: crate::info_sections::MemoryMarks,
    /// Cluster mode's state and routing table; set once at start-up when `cluster-enabled`.
    pub cluster: std::sync::OnceLock<std::sync::Arc<crate::cluster::Cluster>>,
    /// Per-database quotas, eviction policies, persistence and appendfsync.
    pub db_policies: std::sync::Arc<crate::db_policy::DbPolicies>,
}

impl Server {
    pub fn new(config: Config, threads: usize) -> Server {
        let mut databases = config.get_i64("databases").max(1) as usize;
        if config.get_bool("cluster-enabled") && databases != 1 {
            // A cluster serves one keyspace, as Redis: a dump with keys elsewhere then fails
            // to load instead of hiding them.
            crate::log::warning(&format!(
                "WARNING: Changing databases number from {databases} to 1 since we are in cluster mode"
            ));
            databases = 1;
            config
                .set("databases", "1", false)
                .expect("databases takes 1");
        }
        let commands = Registry::build_renamed(&config.renames.lock());
        let stats = StatsRegistry::default();
        stats.set_command_count(commands.len());
        let now = tern_engine::clock::now_ms();
        let acl = std::sync::Arc::new(crate::acl::Acl::new(&commands));
        acl.set_requirepass(&config.get("requirepass").unwrap_or_default());
        let a = acl.clone();
        config.set_apply_hook(
            "requirepass",
            Box::new(move |v| {
                a.set_requirepass(v);
                Ok(())
            }),
        );
        let a = acl.clone();
        *config.users_rewrite.write() = Some(Box::new(move || {
            crate::acl::user_lines(&a)
                .into_iter()
                .map(|l| String::from_utf8_lossy(&l).into_owned())
                .collect()
        }));
        let run_id: String = {
            use rand::Rng;
            let mut r = rand::thread_rng();
            (0..40)
                .map(|_| std::char::from_digit(r.gen_range(0..16), 16).unwrap_or('0'))
                .collect()
        };
        let db_policies =
            std::sync::Arc::new(crate::db_policy::DbPolicies::new(databases, &config));
        db_policies.watch_config(&config);
        // Before the first key is stored: cluster mode indexes keys by hash slot.
        tern_engine::hash::set_slot_hashing(config.get_bool("cluster-enabled"));
        Server {
            store: Store::new(databases, shard_bits_for(threads)),
            config,
            clients: ClientRegistry::default(),
            stats,
            commands,
            slowlog: Mutex::new(Slowlog::default()),
            latency: Mutex::new(BTreeMap::new()),
            monitors: Mutex::new(Vec::new()),
            monitor_count: AtomicUsize::new(0),
            expire: ActiveExpire::default(),
            active_expire_enabled: AtomicBool::new(true),
            cron_paused: AtomicBool::new(false),
            started: Instant::now(),
            started_unix: now / 1000,
            run_id,
            lastsave: AtomicU64::new(now / 1000),
            dirty_at_save: AtomicU64::new(0),
            tcp_port: AtomicU64::new(0),
            executable: std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            threads,
            io_backend: Default::default(),
            shutdown_state: Default::default(),
            stat_expired_time_cap: AtomicU64::new(0),
            blocking: Default::default(),
            pause: Default::default(),
            pubsub: Default::default(),
            world: Default::default(),
            tracking: Default::default(),
            acl,
            tls: Default::default(),
            master_link: Default::default(),
            replicas: Default::default(),
            diskless: Default::default(),
            watchdog: Default::default(),
            diskless_load: Default::default(),
            scripts: Default::default(),
            migrate_links: Default::default(),
            functions: Default::default(),
            lua: Default::default(),
            rates: Default::default(),
            save_progress: Default::default(),
            aof: Default::default(),
            propagation: Default::default(),
            rdb: Default::default(),
            save_children: Default::default(),
            lazyfree: Default::default(),
            used_memory: Default::default(),
            memory_marks: Default::default(),
            cluster: Default::default(),
            db_policies,
        }
    }

    pub fn dirty_total(&self) -> u64 {
        self.stats.sum(|t| t.dirty.get())
    }

    #[inline]
    pub fn has_monitors(&self) -> bool {
        self.monitor_count.load(Relaxed) > 0
    }

    pub fn add_monitor(&self, tx: crate::push::PushTx) {
        let mut m = self.monitors.lock();
        m.push(tx);
        self.monitor_count.store(m.len(), Relaxed);
    }

    pub fn remove_monitor(&self, id: u64) {
        let mut m = self.monitors.lock();
        m.retain(|tx| tx.id() != id);
        self.monitor_count.store(m.len(), Relaxed);
    }

    /// Send one already formatted MONITOR line to every monitor; drop closed ones.
    pub fn feed_monitors(&self, line: &[u8]) {
        let mut m = self.monitors.lock();
        m.retain(|tx| tx.send(self, line));
        self.monitor_count.store(m.len(), Relaxed);
    }

    /// Record a latency event when it exceeds `latency-monitor-threshold` (ms).
    pub fn latency_event(&self, event: &str, ms: u64) {
        let threshold = self.config.hot.latency_threshold.load(Relaxed);
        if threshold == 0 || ms < threshold {
            return;
        }
        let now = tern_engine::clock::now_ms() / 1000;
        let mut l = self.latency.lock();
        let s = l.entry(event.to_string()).or_default();
        if let Some(last) = s.samples.back_mut() {
            if last.0 == now {
                last.1 = last.1.max(ms);
                s.max = s.max.max(ms);
                return;
            }
        }
        s.samples.push_back((now, ms));
        if s.samples.len() > 160 {
            s.samples.pop_front();
        }
        s.max = s.max.max(ms);
    }
}

/// Shards per database: several per thread so two threads rarely meet on one lock, and a
/// power of two. 64 keeps 16 empty databases small (an empty shard allocates nothing).
fn shard_bits_for(threads: usize) -> u32 {
    let want = (threads.max(1) * 16).next_power_of_two().clamp(16, 256);
    want.trailing_zeros()
}

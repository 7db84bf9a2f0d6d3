//! What INFO reports, section by section (every Redis 7.2 section with its field names and
//! formats), and the figures behind it that MEMORY STATS and the metrics endpoint share.
//!
//! Sections: server, clients, memory, persistence, stats, replication, cpu, modules, errorstats,
//! cluster, keyspace, commandstats, latencystats; `default` (no argument), `all` (everything but
//! module-generated sections) and `everything`. Fields for features tern does not have yet
//! report the values an idle Redis master reports.

use crate::clients::cflags;
use crate::server::Server;
use crate::stats::Histogram;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Instant;

/// (allocated, active, resident) bytes; zeros when jemalloc stats are unavailable.
pub fn jemalloc_stats() -> (u64, u64, u64) {
    use tikv_jemalloc_ctl::{epoch, stats};
    if epoch::advance().is_err() {
        return (0, 0, 0);
    }
    // Objects sitting in threads' caches count as allocated to jemalloc but are free to us;
    // they come and go by the tens of KB as threads refill and flush their caches, so they are
    // left out (Redis's used_memory counts only what is in use).
    // SAFETY: a NUL-terminated name of a size_t statistic, read as usize.
    let cached: usize =
        unsafe { tikv_jemalloc_ctl::raw::read(b"stats.arenas.4096.tcache_bytes\0") }.unwrap_or(0);
    let a = (stats::allocated::read().unwrap_or(0) as u64).saturating_sub(cached as u64);
    let c = stats::active::read().unwrap_or(0) as u64;
    let r = stats::resident::read().unwrap_or(0) as u64;
    (a, c, r)
}

/// Resident set size of the process from /proc (used_memory_rss).
pub fn rss_bytes() -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// The INFO text for the given sections (lower-case names), as Redis's genRedisInfoString.
pub fn gen_info(srv: &Server, sections: &HashSet<String>, all: bool, everything: bool) -> String {
    let all = all || everything;
    let want = |name: &str| all || sections.contains(name);
    // Memory is measured before the reply text is allocated, so that INFO does not count
    // its own output in used_memory.
    let memory = want("memory").then(|| memory_figures(srv));
    let mut out = String::with_capacity(4096);
    let mut n = 0;
    let mut header = |out: &mut String, title: &str| {
        if n > 0 {
            out.push_str("\r\n");
        }
        n += 1;
        let _ = write!(out, "# {title}\r\n");
    };
    if want("server") {
        header(&mut out, "Server");
        server_section(srv, &mut out);
    }
    if want("clients") {
        header(&mut out, "Clients");
        clients_section(srv, &mut out);
    }
    if let Some(figures) = memory {
        header(&mut out, "Memory");
        memory_section(srv, figures, &mut out);
    }
    if want("persistence") {
        header(&mut out, "Persistence");
        persistence_section(srv, &mut out);
    }
    if want("stats") {
        header(&mut out, "Stats");
        stats_section(srv, &mut out);
    }
    if want("replication") {
        header(&mut out, "Replication");
        replication_section(srv, &mut out);
    }
    if want("cpu") {
        header(&mut out, "CPU");
        cpu_section(&mut out);
    }
    if all || sections.contains("module_list") || sections.contains("modules") {
        // No modules are loaded: the section is its header only.
        header(&mut out, "Modules");
    }
    if want("commandstats") {
        header(&mut out, "Commandstats");
        commandstats_section(srv, &mut out);
    }
    if want("errorstats") {
        header(&mut out, "Errorstats");
        for (code, count) in srv.stats.errors.lock().iter() {
            let _ = write!(out, "errorstat_{}:count={count}\r\n", safe_info(code));
        }
    }
    if want("latencystats") {
        header(&mut out, "Latencystats");
        if srv.config.hot.latency_tracking.load(Relaxed) {
            latencystats_section(srv, &mut out);
        }
    }
    if want("cluster") {
        header(&mut out, "Cluster");
        let _ = write!(
            out,
            "cluster_enabled:{}\r\n",
            srv.config.get_bool("cluster-enabled") as u8
        );
    }
    if want("keyspace") {
        header(&mut out, "Keyspace");
        for db in 0..srv.store.databases() {
            let (keys, expires) = srv.store.db_stats(db);
            if keys > 0 || expires > 0 {
                // subexpiry: hashes with field times (Redis 7.4's field); used_memory: tern's
                // estimate of the database's keys and values (see `db_memory_lines`).
                let sub = srv.store.db_subexpiry(db);
                let used = srv.store.db_used_memory(db);
                let _ = write!(
                    out,
                    "db{db}:keys={keys},expires={expires},avg_ttl=0,subexpiry={sub},used_memory={used}\r\n"
                );
            }
        }
    }
    out
}

/// Redis's getSafeInfoString: `#`, `:` and line breaks become `_`.
fn safe_info(s: &str) -> String {
    s.chars()
        .map(|c| if "#:\r\n".contains(c) { '_' } else { c })
        .collect()
}

fn uname() -> (String, String, String) {
    // A fact of the machine, read once per process: every server in it would see the same.
    static U: OnceLock<(String, String, String)> = OnceLock::new();
    U.get_or_init(|| {
        // SAFETY: utsname is plain data; uname fills it with NUL-terminated strings.
        unsafe {
            let mut u: libc::utsname = std::mem::zeroed();
            if libc::uname(&mut u) != 0 {
                return ("Linux".into(), String::new(), String::new());
            }
            let s = |f: &[libc::c_char]| {
                std::ffi::CStr::from_ptr(f.as_ptr())
                    .to_string_lossy()
                    .into_owned()
            };
            (s(&u.sysname), s(&u.release), s(&u.machine))
        }
    })
    .clone()
}

fn server_section(srv: &Server, out: &mut String) {
    let (sys, rel, mach) = uname();
    let uptime = srv.started.elapsed().as_secs();
    let cfg = &srv.config;
    let mode = if cfg.get_bool("cluster-enabled") {
        "cluster"
    } else {
        "standalone"
    };
    let config_file = cfg
        .file
        .read()
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let port = match srv.tcp_port.load(Relaxed) {
        0 => cfg.get_i64("port") as u64,
        p => p,
    };
    let hz = srv.config.hot.hz.load(Relaxed);
    let _ = write!(
        out,
        "redis_version:{}\r\n\
         redis_git_sha1:00000000\r\n\
         redis_git_dirty:0\r\n\
         redis_build_id:{}\r\n\
         redis_mode:{mode}\r\n\
         os:{sys} {rel} {mach}\r\n\
         arch_bits:{}\r\n\
         monotonic_clock:POSIX clock_gettime\r\n\
         multiplexing_api:epoll\r\n\
         atomicvar_api:c11-builtin\r\n\
         gcc_version:0.0.0\r\n\
         process_id:{}\r\n\
         process_supervised:no\r\n\
         run_id:{}\r\n\
         tcp_port:{port}\r\n\
         server_time_usec:{}\r\n\
         uptime_in_seconds:{uptime}\r\n\
         uptime_in_days:{}\r\n\
         hz:{hz}\r\n\
         configured_hz:{}\r\n\
         lru_clock:{}\r\n\
         executable:{}\r\n\
         config_file:{config_file}\r\n\
         io_threads_active:0\r\n\
         io_backend:{}\r\n",
        crate::REDIS_VERSION,
        &srv.run_id[..16.min(srv.run_id.len())],
        usize::BITS,
        std::process::id(),
        srv.run_id,
        tern_engine::clock::now_us(),
        uptime / 86400,
        cfg.get_i64("hz"),
        tern_engine::clock::lru_clock(),
        srv.executable,
        srv.io_backend.get().copied().unwrap_or("epoll"),
    );
    if let Some(ms) = srv.shutdown_state.ms_left() {
        let _ = write!(out, "shutdown_in_milliseconds:{ms}\r\n");
    }
    // The listeners in Redis's order (tcp, unix, tls), each when it is on.
    let binds = cfg.get("bind").unwrap_or_default();
    let unix = cfg.get("unixsocket").unwrap_or_default();
    let tls_port = cfg.get_i64("tls-port");
    if port != 0 {
        let _ = write!(out, "listener0:name=tcp");
        for b in binds.split_whitespace() {
            let _ = write!(out, ",bind={b}");
        }
        let _ = write!(out, ",port={port}\r\n");
    }
    if !unix.is_empty() {
        let _ = write!(out, "listener1:name=unix,bind={unix}\r\n");
    }
    if tls_port != 0 {
        let _ = write!(out, "listener2:name=tls");
        for b in binds.split_whitespace() {
            let _ = write!(out, ",bind={b}");
        }
        let _ = write!(out, ",port={tls_port}\r\n");
    }
}

fn clients_section(srv: &Server, out: &mut String) {
    let clients = srv.clients.all();
    let (_, blocking_keys, nokey_keys) = srv.blocking.counts();
    let mut blocked = 0;
    let mut tracking = 0;
    let mut replicas = 0;
    let mut max_in = 0;
    let mut max_out = 0;
    for c in &clients {
        if c.has_flag(cflags::BLOCKED) {
            blocked += 1;
        }
        if c.has_flag(cflags::TRACKING) {
            tracking += 1;
        }
        if c.has_flag(cflags::REPLICA) {
            replicas += 1;
        }
        max_in = max_in.max(c.qbuf.load(Relaxed) + c.qbuf_free.load(Relaxed));
        max_out = max_out.max(c.obuf.load(Relaxed));
    }
    let _ = write!(
        out,
        "connected_clients:{}\r\n\
         cluster_connections:{}\r\n\
         maxclients:{}\r\n\
         client_recent_max_input_buffer:{max_in}\r\n\
         client_recent_max_output_buffer:{max_out}\r\n\
         blocked_clients:{blocked}\r\n\
         tracking_clients:{tracking}\r\n\
         clients_in_timeout_table:{blocked}\r\n\
         total_blocking_keys:{blocking_keys}\r\n\
         total_blocking_keys_on_nokey:{nokey_keys}\r\n",
        clients.len() - replicas,
        // As Redis: two links per other known node.
        srv.cluster
            .get()
            .map_or(0, |c| c.state.lock().nodes().count().saturating_sub(1) * 2),
        srv.config.hot.maxclients.load(Relaxed),
    );
}

/// Redis's bytesToHuman.
pub fn bytes_to_human(n: u64) -> String {
    const K: f64 = 1024.0;
    let d = n as f64;
    if n < 1024 {
        format!("{n}B")
    } else if n < 1 << 20 {
        format!("{:.2}K", d / K)
    } else if n < 1 << 30 {
        format!("{:.2}M", d / (K * K))
    } else if n < 1 << 40 {
        format!("{:.2}G", d / (K * K * K))
    } else if n < 1 << 50 {
        format!("{:.2}T", d / (K * K * K * K))
    } else if n < 1 << 60 {
        format!("{:.2}P", d / (K * K * K * K * K))
    } else {
        format!("{n}B")
    }
}

fn total_system_memory() -> u64 {
    // A fact of the machine, read once per process: every server in it would see the same.
    static M: OnceLock<u64> = OnceLock::new();
    *M.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let (pages, size) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages > 0 && size > 0 {
            pages as u64 * size as u64
        } else {
            0
        }
    })
}

/// The marks INFO memory measures used memory against, owned by the server
/// (`Server::memory_marks`).
#[derive(Default)]
pub struct MemoryMarks {
    /// Highest used_memory seen (updated whenever INFO or MEMORY reads memory).
    peak: AtomicU64,
    /// used_memory when INFO first ran, an approximation of Redis's used_memory_startup.
    startup: OnceLock<u64>,
}

/// The memory figures INFO memory and MEMORY STATS share.
pub struct MemoryFigures {
    pub used: u64,
    pub active: u64,
    pub resident: u64,
    pub rss: u64,
    pub peak: u64,
    pub startup: u64,
    pub clients_normal: u64,
}

pub fn memory_figures(srv: &Server) -> MemoryFigures {
    let (used, active, resident) = crate::info_sections::jemalloc_stats();
    MemoryFigures {
        used,
        active,
        resident,
        rss: crate::info_sections::rss_bytes(),
        peak: srv.memory_marks.peak.fetch_max(used, Relaxed).max(used),
        startup: *srv.memory_marks.startup.get_or_init(|| used),
        clients_normal: srv
            .clients
            .all()
            .iter()
            .filter(|c| !c.has_flag(crate::clients::cflags::REPLICA))
            .map(|c| crate::client_eviction::client_memory(c) as u64)
            .sum(),
    }
}

fn memory_section(srv: &Server, figures: MemoryFigures, out: &mut String) {
    let MemoryFigures {
        used,
        active,
        resident,
        rss,
        peak,
        startup,
        clients_normal,
    } = figures;
    let allocated = used;
    let sys = total_system_memory();
    let repl = crate::replication::buffer_memory(srv);
    let overhead = startup + clients_normal + repl.total;
    let dataset = used.saturating_sub(overhead);
    let net = used.saturating_sub(startup);
    let dataset_perc = if net > 0 {
        dataset as f64 * 100.0 / net as f64
    } else {
        0.0
    };
    let peak_perc = if peak > 0 {
        used as f64 * 100.0 / peak as f64
    } else {
        0.0
    };
    let maxmemory = srv.config.hot.maxmemory.load(Relaxed);
    let policy = srv.config.get("maxmemory-policy").unwrap_or_default();
    let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    let (vm_eval, vm_functions) = crate::lua::vm_memory(
        srv,
        crate::lua::scripts::generation(srv),
        crate::lua::libraries::generation(srv),
    );
    let vm_total = vm_eval + vm_functions;
    let (cached_scripts, scripts_eval) = crate::lua::scripts::cache_stats(srv);
    let scripts_eval = scripts_eval as u64;
    let (libraries, functions) = crate::lua::libraries::counts(srv);
    let mem_functions = crate::lua::libraries::memory_overhead(srv);
    let mem_scripts = scripts_eval + mem_functions;
    let lazy_pending = srv.lazyfree.pending.load(Relaxed);
    let lazyfreed = srv.lazyfree.freed.load(Relaxed);
    let (repl_buffers, repl_backlog, repl_clients, not_counted) =
        (repl.total, repl.backlog, repl.replicas, repl.not_counted);
    let _ = write!(
        out,
        "used_memory:{used}\r\n\
         used_memory_human:{}\r\n\
         used_memory_rss:{rss}\r\n\
         used_memory_rss_human:{}\r\n\
         used_memory_peak:{peak}\r\n\
         used_memory_peak_human:{}\r\n\
         used_memory_peak_perc:{peak_perc:.2}%\r\n\
         used_memory_overhead:{overhead}\r\n\
         used_memory_startup:{startup}\r\n\
         used_memory_dataset:{dataset}\r\n\
         used_memory_dataset_perc:{dataset_perc:.2}%\r\n\
         allocator_allocated:{allocated}\r\n\
         allocator_active:{active}\r\n\
         allocator_resident:{resident}\r\n\
         total_system_memory:{sys}\r\n\
         total_system_memory_human:{}\r\n\
         used_memory_lua:{vm_eval}\r\n\
         used_memory_vm_eval:{vm_eval}\r\n\
         used_memory_lua_human:{}\r\n\
         used_memory_scripts_eval:{scripts_eval}\r\n\
         number_of_cached_scripts:{cached_scripts}\r\n\
         number_of_functions:{functions}\r\n\
         number_of_libraries:{libraries}\r\n\
         used_memory_vm_functions:{vm_functions}\r\n\
         used_memory_vm_total:{vm_total}\r\n\
         used_memory_vm_total_human:{}\r\n\
         used_memory_functions:{mem_functions}\r\n\
         used_memory_scripts:{mem_scripts}\r\n\
         used_memory_scripts_human:{}\r\n\
         maxmemory:{maxmemory}\r\n\
         maxmemory_human:{}\r\n\
         maxmemory_policy:{policy}\r\n\
         allocator_frag_ratio:{:.2}\r\n\
         allocator_frag_bytes:{}\r\n\
         allocator_rss_ratio:{:.2}\r\n\
         allocator_rss_bytes:{}\r\n\
         rss_overhead_ratio:{:.2}\r\n\
         rss_overhead_bytes:{}\r\n\
         mem_fragmentation_ratio:{:.2}\r\n\
         mem_fragmentation_bytes:{}\r\n\
         mem_not_counted_for_evict:{not_counted}\r\n\
         mem_replication_backlog:{repl_backlog}\r\n\
         mem_total_replication_buffers:{repl_buffers}\r\n\
         mem_clients_slaves:{repl_clients}\r\n\
         mem_clients_normal:{clients_normal}\r\n\
         mem_cluster_links:{}\r\n\
         mem_aof_buffer:0\r\n\
         mem_allocator:jemalloc-5.3.0\r\n\
         active_defrag_running:0\r\n\
         lazyfree_pending_objects:{lazy_pending}\r\n\
         lazyfreed_objects:{lazyfreed}\r\n",
        bytes_to_human(used),
        bytes_to_human(rss),
        bytes_to_human(peak),
        bytes_to_human(sys),
        bytes_to_human(vm_eval),
        bytes_to_human(vm_total),
        bytes_to_human(mem_scripts),
        bytes_to_human(maxmemory),
        ratio(active, allocated),
        active.saturating_sub(allocated),
        ratio(resident, active),
        resident as i64 - active as i64,
        ratio(rss, resident),
        rss as i64 - resident as i64,
        ratio(rss, used),
        rss as i64 - used as i64,
        srv.cluster.get().map_or(0, |c| {
            c.io.links_memory() + c.state.lock().pending_send_bytes()
        }),
    );
    db_memory_lines(srv, out);
}

/// tern's per-database lines of INFO memory, for each database holding keys or having a
/// quota: its estimated used memory (the sum of its entries' and values' sizes, as the
/// per-database quotas count it), its quota and the policy that applies to it.
fn db_memory_lines(srv: &Server, out: &mut String) {
    let global = srv.config.hot.maxmemory_policy.load(Relaxed);
    for db in 0..srv.store.databases() {
        let quota = srv.db_policies.quota(db);
        let used = srv.store.db_used_memory(db);
        if quota == 0 && used == 0 {
            continue;
        }
        let index = srv.db_policies.eviction_policy(db, global) as i32;
        let policy = crate::config::MAXMEMORY_POLICIES
            .iter()
            .find(|(_, i)| *i == index)
            .map_or("noeviction", |(n, _)| n);
        let _ = write!(
            out,
            "db{db}_used_memory:{used}\r\n\
             db{db}_used_memory_human:{}\r\n\
             db{db}_maxmemory:{quota}\r\n\
             db{db}_maxmemory_policy:{policy}\r\n",
            bytes_to_human(used),
        );
    }
}

fn persistence_section(srv: &Server, out: &mut String) {
    let rdb = &srv.rdb;
    let dirty = srv
        .dirty_total()
        .saturating_sub(srv.dirty_at_save.load(Relaxed));
    let now = tern_engine::clock::now_ms() / 1000;
    let loading = rdb.loading.load(Relaxed);
    // A diskless transfer is Redis's BGSAVE to replica sockets; a disk sync's snapshot its
    // BGSAVE to disk.
    let bg = rdb.bgsave_in_progress.load(Relaxed)
        || srv.diskless.in_progress()
        || rdb.sync_saves.load(Relaxed) > 0;
    let total = rdb.loading_total.load(Relaxed).max(1);
    let loaded = rdb.loading_loaded.load(Relaxed);
    let _ = write!(
        out,
        "loading:{}\r\n\
         async_loading:{}\r\n",
        loading as u8,
        srv.diskless_load.async_loading.load(Relaxed) as u8
    );
    crate::save_progress::info_current(srv, out, bg || srv.aof.rewrite_in_progress.load(Relaxed));
    if loading {
        let start = rdb.loading_start.load(Relaxed);
        // As Redis: the time so far scaled by what is left (1 until there is progress).
        let elapsed = now.saturating_sub(start);
        let eta = (elapsed * total.saturating_sub(loaded))
            .checked_div(loaded)
            .unwrap_or(1);
        let _ = write!(
            out,
            "loading_start_time:{start}\r\n\
             loading_total_bytes:{total}\r\n\
             loading_rdb_used_mem:0\r\n\
             loading_loaded_bytes:{loaded}\r\n\
             loading_loaded_perc:{:.2}\r\n\
             loading_eta_seconds:{eta}\r\n",
            loaded as f64 * 100.0 / total as f64
        );
    }
    let _ = write!(
        out,
        "rdb_changes_since_last_save:{dirty}\r\n\
         rdb_bgsave_in_progress:{}\r\n\
         rdb_last_save_time:{}\r\n\
         rdb_last_bgsave_status:{}\r\n\
         rdb_last_bgsave_time_sec:{}\r\n\
         rdb_current_bgsave_time_sec:{}\r\n\
         rdb_saves:{}\r\n\
         rdb_last_cow_size:{}\r\n\
         rdb_last_load_keys_expired:{}\r\n\
         rdb_last_load_keys_loaded:{}\r\n",
        bg as u8,
        srv.lastsave.load(Relaxed),
        if rdb.last_bgsave_ok.load(Relaxed) {
            "ok"
        } else {
            "err"
        },
        rdb.last_bgsave_time_sec.load(Relaxed),
        if bg {
            now.saturating_sub(rdb.bgsave_started.load(Relaxed)) as i64
        } else {
            -1
        },
        rdb.saves.load(Relaxed),
        srv.save_progress.rdb_last_cow.load(Relaxed),
        rdb.last_load_keys_expired.load(Relaxed),
        rdb.last_load_keys_loaded.load(Relaxed),
    );
    crate::aof::info_fields(srv, out);
}

/// Rates between successive INFO calls (Redis samples in its cron; tern measures on demand).
struct RateSample {
    at: Instant,
    cmds: u64,
    input: u64,
    output: u64,
    rates: (u64, f64, f64),
}

/// INFO's instantaneous rates, owned by the server (`Server::rates`).
#[derive(Default)]
pub struct Rates {
    last: Mutex<Option<RateSample>>,
}

fn rates(srv: &Server, cmds: u64, input: u64, output: u64) -> (u64, f64, f64) {
    let mut g = srv.rates.last.lock();
    let now = Instant::now();
    match g.as_mut() {
        None => {
            *g = Some(RateSample {
                at: now,
                cmds,
                input,
                output,
                rates: (0, 0.0, 0.0),
            });
            (0, 0.0, 0.0)
        }
        Some(s) => {
            let dt = now.duration_since(s.at).as_secs_f64();
            if dt >= 0.1 {
                let per = |a: u64, b: u64| a.saturating_sub(b) as f64 / dt;
                s.rates = (
                    per(cmds, s.cmds).round() as u64,
                    per(input, s.input) / 1024.0,
                    per(output, s.output) / 1024.0,
                );
                s.at = now;
                s.cmds = cmds;
                s.input = input;
                s.output = output;
            }
            s.rates
        }
    }
}

fn stats_section(srv: &Server, out: &mut String) {
    let st = &srv.stats;
    let cmds = st.sum(|t| t.commands_processed.get());
    let cron_runs = crate::cron_jobs::executed();
    let evicted_clients = srv.clients.evicted_clients.load(Relaxed);
    let rb_shrinks = srv.clients.reply_buffers.shrinks.load(Relaxed);
    let rb_expands = srv.clients.reply_buffers.expands.load(Relaxed);
    let sync_full = srv.replicas.sync_full.load(Relaxed);
    let sync_partial_ok = srv.replicas.sync_partial_ok.load(Relaxed);
    let sync_partial_err = srv.replicas.sync_partial_err.load(Relaxed);
    let input = st.sum(|t| t.net_input_bytes.get());
    let output = st.sum(|t| t.net_output_bytes.get());
    let (ops, in_kbps, out_kbps) = rates(srv, cmds, input, output);
    let (ps_channels, ps_patterns, ps_shard) = srv.pubsub.counts();
    let (tr_keys, tr_items, tr_prefixes) = srv.tracking.totals();
    let forks = srv.save_children.forks.load(Relaxed);
    let fork_usec = srv.save_children.latest_fork_usec.load(Relaxed);
    let _ = write!(
        out,
        "total_connections_received:{}\r\n\
         total_commands_processed:{cmds}\r\n\
         instantaneous_ops_per_sec:{ops}\r\n\
         total_net_input_bytes:{input}\r\n\
         total_net_output_bytes:{output}\r\n\
         total_net_repl_input_bytes:0\r\n\
         total_net_repl_output_bytes:0\r\n\
         instantaneous_input_kbps:{in_kbps:.2}\r\n\
         instantaneous_output_kbps:{out_kbps:.2}\r\n\
         instantaneous_input_repl_kbps:0.00\r\n\
         instantaneous_output_repl_kbps:0.00\r\n\
         rejected_connections:{}\r\n\
         sync_full:{sync_full}\r\n\
         sync_partial_ok:{sync_partial_ok}\r\n\
         sync_partial_err:{sync_partial_err}\r\n\
         expired_subkeys:{}\r\n\
         cron_jobs_executed:{cron_runs}\r\n\
         expired_keys:{}\r\n\
         expired_stale_perc:0.00\r\n\
         expired_time_cap_reached_count:{}\r\n\
         expire_cycle_cpu_milliseconds:0\r\n\
         evicted_keys:{}\r\n\
         evicted_clients:{evicted_clients}\r\n\
         total_eviction_exceeded_time:0\r\n\
         current_eviction_exceeded_time:0\r\n\
         keyspace_hits:{}\r\n\
         keyspace_misses:{}\r\n\
         pubsub_channels:{}\r\n\
         pubsub_patterns:{}\r\n\
         pubsubshard_channels:{}\r\n\
         latest_fork_usec:{fork_usec}\r\n\
         total_forks:{forks}\r\n\
         migrate_cached_sockets:{}\r\n\
         slave_expires_tracked_keys:0\r\n\
         active_defrag_hits:0\r\n\
         active_defrag_misses:0\r\n\
         active_defrag_key_hits:0\r\n\
         active_defrag_key_misses:0\r\n\
         total_active_defrag_time:0\r\n\
         current_active_defrag_time:0\r\n\
         tracking_total_keys:{}\r\n\
         tracking_total_items:{}\r\n\
         tracking_total_prefixes:{}\r\n\
         unexpected_error_replies:{}\r\n\
         total_error_replies:{}\r\n\
         dump_payload_sanitizations:0\r\n\
         total_reads_processed:{cmds}\r\n\
         total_writes_processed:{cmds}\r\n\
         io_threaded_reads_processed:0\r\n\
         io_threaded_writes_processed:0\r\n\
         reply_buffer_shrinks:{rb_shrinks}\r\n\
         reply_buffer_expands:{rb_expands}\r\n\
         eventloop_cycles:0\r\n\
         eventloop_duration_sum:0\r\n\
         eventloop_duration_cmd_sum:{}\r\n\
         instantaneous_eventloop_cycles_per_sec:0\r\n\
         instantaneous_eventloop_duration_usec:0\r\n\
         acl_access_denied_auth:{}\r\n\
         acl_access_denied_cmd:{}\r\n\
         acl_access_denied_key:{}\r\n\
         acl_access_denied_channel:{}\r\n\
         client_output_buffer_limit_disconnections:{}\r\n",
        srv.clients.total_connections.load(Relaxed),
        srv.clients.rejected_connections.load(Relaxed),
        srv.store.expired_fields_total(),
        srv.store.expired_keys_total(),
        srv.stat_expired_time_cap.load(Relaxed),
        st.sum(|t| t.evicted_keys.get()),
        st.sum(|t| t.keyspace_hits.get()),
        st.sum(|t| t.keyspace_misses.get()),
        ps_channels,
        ps_patterns,
        ps_shard,
        crate::migrate_link::cached_sockets(srv),
        tr_keys,
        tr_items,
        tr_prefixes,
        st.sum(|t| t.unexpected_error_replies.get()),
        st.sum(|t| t.total_error_replies.get()),
        st.sum(|t| t.cmds.iter().map(|c| c.usec.get()).sum()),
        srv.acl.denied_auth.load(Relaxed),
        srv.acl.denied_cmd.load(Relaxed),
        srv.acl.denied_key.load(Relaxed),
        srv.acl.denied_channel.load(Relaxed),
        srv.pubsub.obuf_limit_disconnections.load(Relaxed),
    );
}

fn replication_section(srv: &Server, out: &mut String) {
    let cfg = &srv.config;
    let mut lines = String::new();
    let n = crate::replication::info_replicas(srv, &mut lines);
    let as_replica = crate::master_link::info_lines(srv);
    let (replid, offset) = match &as_replica {
        Some((head, id, _)) => {
            out.push_str(head);
            // A replica's stream is its master's: the same offsets.
            (id.clone(), srv.propagation.log.repl_offset())
        }
        None => {
            out.push_str("role:master\r\n");
            (
                crate::replication::replid(srv),
                srv.propagation.log.repl_offset(),
            )
        }
    };
    let _ = write!(out, "connected_slaves:{n}\r\n");
    if cfg.get_i64("min-replicas-to-write") != 0 && cfg.get_i64("min-replicas-max-lag") != 0 {
        let good = crate::replication::good_replicas_now(srv);
        let _ = write!(out, "min_slaves_good_slaves:{good}\r\n");
    }
    out.push_str(&lines);
    let (id2, second_offset) = {
        let ids = srv.replicas.ids.lock();
        (ids.id2.clone(), ids.second_offset)
    };
    let backlog = srv.propagation.log.backlog_info();
    let _ = write!(
        out,
        "master_failover_state:{}\r\n\
         master_replid:{}\r\n\
         master_replid2:{id2}\r\n\
         master_repl_offset:{}\r\n\
         second_repl_offset:{second_offset}\r\n\
         repl_backlog_active:{}\r\n\
         repl_backlog_size:{}\r\n\
         repl_backlog_first_byte_offset:{}\r\n\
         repl_backlog_histlen:{}\r\n",
        crate::failover::state_name(srv),
        replid,
        offset,
        backlog.is_some() as u8,
        cfg.get_i64("repl-backlog-size"),
        backlog.map_or(0, |b| b.first_byte_offset),
        backlog.map_or(0, |b| b.histlen),
    );
}

fn rusage(who: i32) -> (String, String) {
    // SAFETY: rusage is plain data filled by getrusage.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    (
        format!("{}.{:06}", ru.ru_stime.tv_sec, ru.ru_stime.tv_usec),
        format!("{}.{:06}", ru.ru_utime.tv_sec, ru.ru_utime.tv_usec),
    )
}

fn cpu_section(out: &mut String) {
    let (s, u) = rusage(libc::RUSAGE_SELF);
    let (cs, cu) = rusage(libc::RUSAGE_CHILDREN);
    let (ts, tu) = rusage(libc::RUSAGE_THREAD);
    let _ = write!(
        out,
        "used_cpu_sys:{s}\r\n\
         used_cpu_user:{u}\r\n\
         used_cpu_sys_children:{cs}\r\n\
         used_cpu_user_children:{cu}\r\n\
         used_cpu_sys_main_thread:{ts}\r\n\
         used_cpu_user_main_thread:{tu}\r\n"
    );
}

/// One command's figures summed over the worker threads (INFO commandstats and
/// latencystats, the metrics endpoint).
pub struct CommandTotals {
    pub name: String,
    pub calls: u64,
    pub usec: u64,
    pub rejected: u64,
    pub failed: u64,
    /// The merged latency histogram, when `with_latency` and some call was recorded.
    pub latency: Option<Vec<u64>>,
}

/// Every command, by full name, with its totals over the worker threads.
pub fn command_totals(srv: &Server, with_latency: bool) -> Vec<CommandTotals> {
    let threads = srv.stats.threads();
    let mut entries = srv.commands.all();
    entries.sort_by(|a, b| a.fullname.cmp(&b.fullname));
    entries
        .into_iter()
        .map(|e| {
            let mut t = CommandTotals {
                name: e.fullname.clone(),
                calls: 0,
                usec: 0,
                rejected: 0,
                failed: 0,
                latency: None,
            };
            for c in threads.iter().filter_map(|th| th.cmds.get(e.id)) {
                t.calls += c.calls.get();
                t.usec += c.usec.get();
                t.rejected += c.rejected.get();
                t.failed += c.failed.get();
                if let Some(h) = c.latency.get().filter(|_| with_latency) {
                    h.merge_into(t.latency.get_or_insert_with(|| vec![0; Histogram::slots()]));
                }
            }
            t.latency = t.latency.filter(|h| h.iter().any(|&c| c > 0));
            t
        })
        .collect()
}

/// `latency-tracking-info-percentiles`: (as written, value).
pub fn latency_percentiles(srv: &Server) -> Vec<(String, f64)> {
    srv.config
        .get("latency-tracking-info-percentiles")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse::<f64>().ok().map(|v| (p.to_string(), v)))
        .collect()
}

fn commandstats_section(srv: &Server, out: &mut String) {
    for t in command_totals(srv, false) {
        let CommandTotals {
            calls,
            usec,
            rejected,
            failed,
            ..
        } = t;
        if calls == 0 && rejected == 0 && failed == 0 {
            continue;
        }
        let per = if calls == 0 {
            0.0
        } else {
            usec as f32 / calls as f32
        };
        let _ = write!(
            out,
            "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per:.2},rejected_calls={rejected},failed_calls={failed}\r\n",
            safe_info(&t.name)
        );
    }
}

fn latencystats_section(srv: &Server, out: &mut String) {
    let percentiles = latency_percentiles(srv);
    for t in command_totals(srv, true) {
        let Some(acc) = t.latency else { continue };
        let _ = write!(out, "latency_percentiles_usec_{}:", safe_info(&t.name));
        for (k, (name, p)) in percentiles.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            let v = Histogram::percentile(&acc, *p);
            let _ = write!(out, "p{name}={:.3}", v as f64);
        }
        out.push_str("\r\n");
    }
}

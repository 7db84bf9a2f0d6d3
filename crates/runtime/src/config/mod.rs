//! Configuration: the parameter table (`params`), values as Redis reads and prints them
//! (`values`), config files and command-line options (`file`), CONFIG REWRITE (`rewrite`), and
//! here the set/get semantics behind CONFIG SET/GET. Values are kept in the canonical string
//! form CONFIG GET prints; the few read on hot paths are mirrored into atomics (`Hot`).
//!
//! Parameters tern does not act on yet are accepted, validated and reported like Redis does.

mod db_overrides;
mod file;
mod params;
mod rewrite;
mod values;

pub use db_overrides::{db_pairs, is_db_override, DB_OVERRIDE_PARAMS};
pub use file::options_from_args;
pub use params::*;
pub use rewrite::RewriteError;
pub use values::*;

use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed,
};

/// Parameter flags (Redis's *_CONFIG flags that matter to tern).
pub mod pflags {
    pub const IMMUTABLE: u32 = 1 << 0;
    pub const SENSITIVE: u32 = 1 << 1;
    /// Only listed by an exact CONFIG GET name, never by a pattern.
    pub const HIDDEN: u32 = 1 << 2;
    /// Settable only when `enable-protected-configs` allows it.
    pub const PROTECTED: u32 = 1 << 3;
    pub const DENY_LOADING: u32 = 1 << 4;
    /// Takes several arguments (space separated in CONFIG SET).
    pub const MULTI_ARG: u32 = 1 << 5;
    pub const DEBUG: u32 = 1 << 6;
}
use pflags::*;

/// How a value is being set: from a config file (save lines accumulate) or CONFIG SET.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    File,
    Set,
}

// ---------------------------------------------------------------------------------------------

/// Values read on hot paths, mirrored from the table on every set.
pub struct Hot {
    pub hz: AtomicU64,
    pub proto_max_bulk_len: AtomicI64,
    pub client_query_buffer_limit: AtomicU64,
    pub maxclients: AtomicU64,
    pub timeout: AtomicU64,
    pub slowlog_slower_than: AtomicI64,
    pub slowlog_max_len: AtomicU64,
    pub latency_threshold: AtomicU64,
    /// watchdog-period (ms): threads mark their work for the watchdog while it is > 0.
    pub watchdog_period: AtomicU64,
    pub latency_tracking: AtomicBool,
    pub lfu_policy: AtomicBool,
    pub lfu_log_factor: AtomicU64,
    pub lfu_decay_time: AtomicU64,
    pub requirepass_set: AtomicBool,
    pub active_expire_effort: AtomicU64,
    /// maxmemory in bytes (0 = no limit).
    pub maxmemory: AtomicU64,
    /// Index into `MAXMEMORY_POLICIES`' values (7 = noeviction).
    pub maxmemory_policy: AtomicU32,
    pub maxmemory_samples: AtomicU64,
    /// notify-keyspace-events as Redis's NOTIFY_* bit set (0 = off).
    pub notify_flags: AtomicU32,
    pub replica_read_only: AtomicBool,
    pub busy_reply_threshold: AtomicU64,
    pub min_replicas_to_write: AtomicU64,
    pub min_replicas_max_lag: AtomicU64,
    pub lazyfree_lazy_user_del: AtomicBool,
    pub lazyfree_lazy_user_flush: AtomicBool,
    pub lazyfree_lazy_expire: AtomicBool,
    pub lazyfree_lazy_server_del: AtomicBool,
    /// aof-timestamp-enabled: `#TS:` annotations in the AOF (read by its writer thread).
    pub aof_timestamp_enabled: AtomicBool,
    /// client-output-buffer-limit as (hard bytes, soft bytes, soft seconds) per class, in
    /// `OBUF_CLASSES` order (normal, slave, pubsub).
    pub obuf_limits: [[AtomicU64; 3]; 3],
}

/// A function run after a CONFIG SET changed a parameter (the server crate registers e.g. port
/// and bind re-listeners). Returning Err makes the whole CONFIG SET roll back.
pub type ApplyHook = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

pub struct Config {
    values: RwLock<HashMap<&'static str, String>>,
    pub hot: Hot,
    /// The file the server was started with (CONFIG REWRITE target).
    pub file: RwLock<Option<PathBuf>>,
    /// A `save` line was already read from a config file (later ones append).
    save_seen: AtomicBool,
    /// notify-keyspace-events: `n` was given together with every class of `A` (the canonical
    /// string, only `A` then, cannot carry it).
    notify_new_with_all: AtomicBool,
    /// Lines of the top-level config file, so command-line option errors get Redis's line numbers
    /// (Redis parses `file + "\n" + options` as one text).
    file_lines: AtomicUsize,
    /// Serialises CONFIG SET (all-or-nothing across several parameters).
    set_lock: Mutex<()>,
    hooks: RwLock<HashMap<&'static str, ApplyHook>>,
    /// `rename-command old new` lines, in order (the command table applies them).
    pub renames: Mutex<Vec<(String, String)>>,
    /// `user ...` lines (for ACL), `loadmodule ...` lines, `module.config value` lines.
    pub users: Mutex<Vec<Vec<String>>>,
    /// The ACL users as `user ...` lines, for CONFIG REWRITE (set by the server).
    #[allow(clippy::type_complexity)]
    pub users_rewrite: RwLock<Option<Box<dyn Fn() -> Vec<String> + Send + Sync>>>,
    pub loadmodules: Mutex<Vec<Vec<String>>>,
    pub module_configs: Mutex<Vec<(String, String)>>,
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}

fn cwd() -> String {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}

impl Config {
    pub fn new() -> Config {
        let mut values = HashMap::new();
        for p in PARAMS {
            let v = if p.name == "dir" {
                cwd()
            } else {
                p.default.to_string()
            };
            values.insert(p.name, v);
        }
        let c = Config {
            values: RwLock::new(values),
            hot: Hot {
                hz: AtomicU64::new(10),
                proto_max_bulk_len: AtomicI64::new(512 << 20),
                client_query_buffer_limit: AtomicU64::new(1 << 30),
                maxclients: AtomicU64::new(10000),
                timeout: AtomicU64::new(0),
                slowlog_slower_than: AtomicI64::new(10000),
                slowlog_max_len: AtomicU64::new(128),
                latency_threshold: AtomicU64::new(0),
                watchdog_period: AtomicU64::new(0),
                latency_tracking: AtomicBool::new(true),
                lfu_policy: AtomicBool::new(false),
                lfu_log_factor: AtomicU64::new(10),
                lfu_decay_time: AtomicU64::new(1),
                requirepass_set: AtomicBool::new(false),
                active_expire_effort: AtomicU64::new(1),
                maxmemory: AtomicU64::new(0),
                maxmemory_policy: AtomicU32::new(7),
                maxmemory_samples: AtomicU64::new(5),
                notify_flags: AtomicU32::new(0),
                replica_read_only: AtomicBool::new(true),
                busy_reply_threshold: AtomicU64::new(5000),
                min_replicas_to_write: AtomicU64::new(0),
                min_replicas_max_lag: AtomicU64::new(10),
                lazyfree_lazy_user_del: AtomicBool::new(false),
                lazyfree_lazy_user_flush: AtomicBool::new(false),
                lazyfree_lazy_expire: AtomicBool::new(false),
                lazyfree_lazy_server_del: AtomicBool::new(false),
                aof_timestamp_enabled: AtomicBool::new(false),
                obuf_limits: Default::default(),
            },
            file: RwLock::new(None),
            save_seen: AtomicBool::new(false),
            notify_new_with_all: AtomicBool::new(false),
            file_lines: AtomicUsize::new(0),
            set_lock: Mutex::new(()),
            hooks: RwLock::new(HashMap::new()),
            renames: Mutex::new(Vec::new()),
            users: Mutex::new(Vec::new()),
            users_rewrite: RwLock::new(None),
            loadmodules: Mutex::new(Vec::new()),
            module_configs: Mutex::new(Vec::new()),
        };
        for p in PARAMS {
            c.mirror(p.name, p.default);
        }
        c
    }

    /// The canonical value of a parameter (by name or alias).
    pub fn get(&self, name: &str) -> Option<String> {
        let p = find(name)?;
        self.values.read().get(p.name).cloned()
    }

    pub fn get_i64(&self, name: &str) -> i64 {
        self.get(name).and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    pub fn get_bool(&self, name: &str) -> bool {
        self.get(name).as_deref() == Some("yes")
    }

    /// Register a function run after CONFIG SET changes `name` (see `ApplyHook`).
    pub fn set_apply_hook(&self, name: &'static str, hook: ApplyHook) {
        self.hooks.write().insert(name, hook);
    }

    /// Validate `argv` for `p` and return the new canonical value (special parameters may have
    /// side effects, like `dir` changing the working directory). `current` is the present value.
    pub fn canonical_args(
        &self,
        p: &Param,
        argv: &[String],
        origin: Origin,
        current: &str,
    ) -> Result<String, String> {
        match p.kind {
            Kind::Bool => match argv[0].to_ascii_lowercase().as_str() {
                "yes" => Ok("yes".into()),
                "no" => Ok("no".into()),
                _ => Err("argument must be 'yes' or 'no'".into()),
            },
            Kind::Num {
                min,
                max,
                unsigned,
                fmt,
            } => num_canonical(p, min, max, unsigned, fmt, &argv[0]),
            Kind::Enum(names) => enum_value(names, argv, false)
                .map(|v| enum_name(names, v, false))
                .ok_or_else(|| enum_error(names)),
            Kind::Flags(names) => {
                let v = enum_value(names, argv, true).ok_or_else(|| enum_error(names))?;
                if v & 1 != 0 && v & 2 != 0 {
                    return Err(
                        "shutdown options SAVE and NOSAVE can't be used simultaneously".into(),
                    );
                }
                Ok(enum_name(names, v, true))
            }
            Kind::Str { check, .. } => {
                if let Some(f) = check {
                    f(&argv[0]).map_err(str::to_string)?;
                }
                Ok(argv[0].clone())
            }
            Kind::Special => self.special(p.name, argv, origin, current),
        }
    }

    fn special(
        &self,
        name: &str,
        argv: &[String],
        origin: Origin,
        current: &str,
    ) -> Result<String, String> {
        let wrong = || "wrong number of arguments".to_string();
        match name {
            "save" => {
                let argv: &[String] = if argv.len() == 1 && argv[0].is_empty() {
                    &[]
                } else {
                    argv
                };
                if argv.len() % 2 == 1 {
                    return Err("Invalid save parameters".into());
                }
                let mut pairs = Vec::new();
                for (j, a) in argv.iter().enumerate() {
                    let v = strtoll_full(a).ok_or("Invalid save parameters")?;
                    if (j % 2 == 0 && v < 1) || (j % 2 == 1 && v < 0) {
                        return Err("Invalid save parameters".into());
                    }
                    pairs.push(if j % 2 == 1 { v as i32 as i64 } else { v });
                }
                let new: Vec<String> = pairs.iter().map(|v| v.to_string()).collect();
                let new = new.join(" ");
                // In a config file the first save line replaces the defaults, later ones append.
                if origin == Origin::File
                    && self.save_seen.swap(true, Relaxed)
                    && !current.is_empty()
                {
                    if new.is_empty() {
                        return Ok(current.to_string());
                    }
                    return Ok(format!("{current} {new}"));
                }
                Ok(new)
            }
            "bind" => {
                if argv.len() > 16 {
                    return Err("Too many bind addresses specified.".into());
                }
                if argv.len() == 1 && argv[0].is_empty() {
                    return Ok(String::new());
                }
                Ok(argv.join(" "))
            }
            "dir" => {
                if argv.len() != 1 {
                    return Err(wrong());
                }
                std::env::set_current_dir(&argv[0]).map_err(|e| strerror(&e))?;
                Ok(cwd())
            }
            "client-output-buffer-limit" => {
                if !argv.len().is_multiple_of(4) {
                    return Err("Wrong number of arguments in buffer limit configuration.".into());
                }
                let mut v = parse_obuf_limits(current);
                let mut staged = v;
                for c in argv.chunks(4) {
                    let class = match c[0].to_ascii_lowercase().as_str() {
                        "normal" => 0,
                        "slave" | "replica" => 1,
                        "pubsub" => 2,
                        _ => {
                            return Err(
                                "Invalid client class specified in buffer limit configuration."
                                    .into(),
                            )
                        }
                    };
                    let hard = memtoull(&c[1]);
                    let soft = memtoull(&c[2]);
                    let secs = strtoll_full(&c[3]).filter(|s| *s >= 0 && !c[3].is_empty());
                    match (hard, soft, secs) {
                        (Some(h), Some(s), Some(t)) => staged[class] = (h, s, t),
                        _ => {
                            return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into())
                        }
                    }
                }
                v.copy_from_slice(&staged);
                Ok(obuf_canonical(&v))
            }
            "oom-score-adj-values" => {
                if argv.len() != 3 {
                    return Err(wrong());
                }
                let mut out = Vec::new();
                for a in argv {
                    match strtoll_full(a) {
                        Some(v) if (-2000..=2000).contains(&v) => out.push(v.to_string()),
                        _ => return Err("Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into()),
                    }
                }
                Ok(out.join(" "))
            }
            "notify-keyspace-events" => {
                if argv.len() != 1 {
                    return Err(wrong());
                }
                let f = notify_flags_from_str(&argv[0])
                    .ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?;
                // Redis prints only `A` when every class in A is on, so the canonical string
                // cannot carry `n` then: remember it on the side.
                self.notify_new_with_all
                    .store(f & NOTIFY_ALL == NOTIFY_ALL && f & NOTIFY_NEW != 0, Relaxed);
                Ok(notify_flags_to_str(f))
            }
            "replicaof" => {
                if argv.len() != 2 {
                    return Err(wrong());
                }
                if argv[0].eq_ignore_ascii_case("no") && argv[1].eq_ignore_ascii_case("one") {
                    return Ok(String::new());
                }
                let port = strtoll_full(&argv[1])
                    .filter(|p| (0..=65535).contains(p) && !argv[1].is_empty())
                    .ok_or("Invalid master port")?;
                Ok(format!("{} {}", argv[0], port))
            }
            "latency-tracking-info-percentiles" => {
                if argv.len() == 1 && argv[0].is_empty() {
                    return Ok(String::new());
                }
                let mut out = Vec::new();
                for a in argv {
                    let v = string2d(a)
                        .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
                    if !(0.0..=100.0).contains(&v) {
                        return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into());
                    }
                    out.push(fmt_percentile(v));
                }
                Ok(out.join(" "))
            }
            n if is_db_override(n) => {
                let databases = self.get_i64("databases").max(1) as usize;
                db_overrides::merge(n, argv, current, databases)
            }
            _ => Ok(argv.join(" ")),
        }
    }

    /// Set one parameter to one value. `runtime` applies CONFIG SET rules (immutable refused).
    pub fn set(&self, name: &str, value: &str, runtime: bool) -> Result<(), String> {
        let p = find(name).ok_or_else(|| {
            format!("Unknown option or number of arguments for CONFIG SET - '{name}'")
        })?;
        if runtime {
            return self
                .set_many(&[(name.to_string(), value.to_string())], true)
                .map_err(|e| e.message);
        }
        let argv = self.split_value(p, value);
        let cur = self.values.read().get(p.name).cloned().unwrap_or_default();
        let v = self.canonical_args(p, &argv, Origin::File, &cur)?;
        self.store(p.name, v);
        Ok(())
    }

    /// CONFIG SET's view of a multi-argument value: split on single spaces ("" is no args).
    fn split_value(&self, p: &Param, value: &str) -> Vec<String> {
        if p.multi_arg() {
            if value.is_empty() {
                Vec::new()
            } else {
                value.split(' ').map(str::to_string).collect()
            }
        } else {
            vec![value.to_string()]
        }
    }

    fn store(&self, name: &'static str, v: String) {
        self.mirror(name, &v);
        self.values.write().insert(name, v);
    }

    /// CONFIG SET of several pairs: all or nothing. `allow_protected` says whether this client
    /// may change PROTECTED parameters (enable-protected-configs yes, or local and the client is
    /// local). Errors carry Redis's full message (without the "ERR " prefix).
    pub fn set_many(
        &self,
        pairs: &[(String, String)],
        allow_protected: bool,
    ) -> Result<(), SetError> {
        let _guard = self.set_lock.lock();
        let mut params: Vec<&'static Param> = Vec::with_capacity(pairs.len());
        let mut first_err: Option<SetError> = None;
        for (name, _) in pairs {
            let Some(p) = find(name) else {
                if first_err.is_none() {
                    first_err = Some(SetError {
                        message: format!(
                            "Unknown option or number of arguments for CONFIG SET - '{name}'"
                        ),
                    });
                }
                continue;
            };
            if first_err.is_none() {
                if !p.mutable() || (p.flags & PROTECTED != 0 && !allow_protected) {
                    let what = if !p.mutable() {
                        "can't set immutable config"
                    } else {
                        "can't set protected config"
                    };
                    first_err = Some(SetError::failed(name, what));
                } else if params.iter().any(|q| std::ptr::eq(*q, p)) {
                    first_err = Some(SetError::failed(name, "duplicate parameter"));
                }
            }
            params.push(p);
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        let old: Vec<String> = {
            let vals = self.values.read();
            params
                .iter()
                .map(|p| {
                    if p.name == "dir" {
                        cwd()
                    } else {
                        vals.get(p.name).cloned().unwrap_or_default()
                    }
                })
                .collect()
        };
        let mut changed: Vec<usize> = Vec::new();
        for (k, (p, (_, value))) in params.iter().zip(pairs).enumerate() {
            let argv = self.split_value(p, value);
            let cur = self.values.read().get(p.name).cloned().unwrap_or_default();
            match self.canonical_args(p, &argv, Origin::Set, &cur) {
                Ok(v) => {
                    if v != cur || p.name == "dir" {
                        changed.push(k);
                    }
                    self.store(p.name, v);
                }
                Err(e) => {
                    self.restore(&params[..=k], &old);
                    return Err(SetError::failed(p.name, &e));
                }
            }
        }
        // Apply hooks, once per changed parameter; any failure restores everything.
        let hooks = self.hooks.read();
        for &k in &changed {
            let p = params[k];
            let v = self.get(p.name).unwrap_or_default();
            let res = match hooks.get(p.name) {
                Some(h) => h(&v),
                None => Ok(()),
            };
            if let Err(e) = res {
                self.restore(&params, &old);
                for &j in &changed {
                    if let Some(h2) = hooks.get(params[j].name) {
                        let _ = h2(&old[j]);
                    }
                }
                return Err(SetError::failed(p.name, &e));
            }
        }
        Ok(())
    }

    fn restore(&self, params: &[&'static Param], old: &[String]) {
        for (p, v) in params.iter().zip(old) {
            if p.name == "dir" {
                let _ = std::env::set_current_dir(v);
            }
            self.store(p.name, v.clone());
        }
    }

    /// (name as listed, value) pairs for CONFIG GET: every parameter and alias.
    pub fn entries(&self) -> Vec<(&'static str, String)> {
        let vals = self.values.read();
        let mut out = Vec::new();
        for p in PARAMS {
            let v = if p.name == "dir" {
                cwd()
            } else {
                vals.get(p.name).cloned().unwrap_or_default()
            };
            out.push((p.name, v.clone()));
            if let Some(a) = p.alias {
                out.push((a, v));
            }
        }
        out
    }

    /// Mirror a canonical value into the hot-path atomics.
    fn mirror(&self, name: &str, v: &str) {
        let h = &self.hot;
        let n = || v.parse::<i64>().unwrap_or(0);
        let yes = v == "yes";
        match name {
            "hz" => h.hz.store(n().clamp(1, 500) as u64, Relaxed),
            "rdb-key-save-delay" => tern_engine::save_delay::KEY_SAVE_DELAY_US.store(n(), Relaxed),
            "aof-timestamp-enabled" => h.aof_timestamp_enabled.store(yes, Relaxed),
            "proto-max-bulk-len" => h.proto_max_bulk_len.store(n(), Relaxed),
            "client-query-buffer-limit" => h
                .client_query_buffer_limit
                .store(v.parse().unwrap_or(0), Relaxed),
            "maxclients" => h.maxclients.store(n() as u64, Relaxed),
            "timeout" => h.timeout.store(n() as u64, Relaxed),
            "slowlog-log-slower-than" => h.slowlog_slower_than.store(n(), Relaxed),
            "slowlog-max-len" => h.slowlog_max_len.store(n() as u64, Relaxed),
            "latency-monitor-threshold" => h.latency_threshold.store(n() as u64, Relaxed),
            "watchdog-period" => h.watchdog_period.store(n().max(0) as u64, Relaxed),
            "latency-tracking" => h.latency_tracking.store(yes, Relaxed),
            "maxmemory-policy" => {
                h.lfu_policy.store(v.contains("lfu"), Relaxed);
                tern_engine::clock::LFU_POLICY.store(v.contains("lfu"), Relaxed);
                let idx = MAXMEMORY_POLICIES
                    .iter()
                    .find(|(p, _)| *p == v)
                    .map(|(_, i)| *i)
                    .unwrap_or(7);
                h.maxmemory_policy.store(idx as u32, Relaxed);
            }
            "maxmemory" => h.maxmemory.store(v.parse().unwrap_or(0), Relaxed),
            "maxmemory-samples" => h.maxmemory_samples.store(n() as u64, Relaxed),
            "lfu-log-factor" => h.lfu_log_factor.store(n() as u64, Relaxed),
            "lfu-decay-time" => h.lfu_decay_time.store(n() as u64, Relaxed),
            "requirepass" => h.requirepass_set.store(!v.is_empty(), Relaxed),
            "active-expire-effort" => h.active_expire_effort.store(n() as u64, Relaxed),
            "notify-keyspace-events" => {
                let mut f = notify_flags_from_str(v).unwrap_or(0);
                if f & NOTIFY_ALL == NOTIFY_ALL && self.notify_new_with_all.load(Relaxed) {
                    f |= NOTIFY_NEW;
                }
                h.notify_flags.store(f, Relaxed);
                // Expired and new keys are events the engine sees, and read misses are
                // recorded beside them: ask for them only while someone could hear about them.
                let mut want = 0;
                if f & (NOTIFY_KEYSPACE | NOTIFY_KEYEVENT) != 0 {
                    if f & crate::notify::EXPIRED != 0 {
                        want |= tern_engine::events::EXPIRED;
                    }
                    if f & NOTIFY_NEW != 0 {
                        want |= tern_engine::events::NEW;
                    }
                    if f & NOTIFY_KEY_MISS != 0 {
                        want |= tern_engine::events::KEYMISS;
                    }
                    // Hash fields the engine expires: `hexpired`, and `del` for an emptied hash.
                    if f & crate::notify::HASH != 0 {
                        want |= tern_engine::events::HEXPIRED;
                    }
                    if f & crate::notify::GENERIC != 0 {
                        want |= tern_engine::events::EMPTIED;
                    }
                    // Set and sorted-set members the engine expires: `srem`, `zrem`.
                    if f & crate::notify::SET != 0 {
                        want |= tern_engine::events::SREMOVED;
                    }
                    if f & crate::notify::ZSET != 0 {
                        want |= tern_engine::events::ZREMOVED;
                    }
                }
                tern_engine::events::set_wanted(want);
            }
            "client-output-buffer-limit" => {
                for (slot, (hard, soft, secs)) in h.obuf_limits.iter().zip(parse_obuf_limits(v)) {
                    slot[0].store(hard, Relaxed);
                    slot[1].store(soft, Relaxed);
                    slot[2].store(secs.max(0) as u64, Relaxed);
                }
            }
            "replica-read-only" => h.replica_read_only.store(yes, Relaxed),
            "busy-reply-threshold" => h.busy_reply_threshold.store(n() as u64, Relaxed),
            "min-replicas-to-write" => h.min_replicas_to_write.store(n() as u64, Relaxed),
            "min-replicas-max-lag" => h.min_replicas_max_lag.store(n() as u64, Relaxed),
            "lazyfree-lazy-user-del" => h.lazyfree_lazy_user_del.store(yes, Relaxed),
            "lazyfree-lazy-user-flush" => h.lazyfree_lazy_user_flush.store(yes, Relaxed),
            "lazyfree-lazy-expire" => h.lazyfree_lazy_expire.store(yes, Relaxed),
            "lazyfree-lazy-server-del" => h.lazyfree_lazy_server_del.store(yes, Relaxed),
            _ => {
                tern_engine::limits::set(name, n());
            }
        }
    }
}

/// Error of `Config::set_many`: the full Redis message (without "ERR ").
#[derive(Debug)]
pub struct SetError {
    pub message: String,
}

impl SetError {
    fn failed(name: &str, why: &str) -> SetError {
        SetError {
            message: format!("CONFIG SET failed (possibly related to argument '{name}') - {why}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn numbers_and_errors() {
        let c = Config::new();
        let p = find("maxclients").unwrap();
        assert_eq!(
            c.canonical_args(p, &argv(&["-1"]), Origin::Set, "")
                .unwrap_err(),
            "argument must be between 1 and 4294967295 inclusive"
        );
        let p = find("maxmemory").unwrap();
        assert_eq!(
            c.canonical_args(p, &argv(&["1gb"]), Origin::Set, "")
                .unwrap(),
            "1073741824"
        );
        assert_eq!(
            c.canonical_args(p, &argv(&["-1"]), Origin::Set, "")
                .unwrap_err(),
            "argument must be a memory value"
        );
        let p = find("maxmemory-clients").unwrap();
        assert_eq!(
            c.canonical_args(p, &argv(&["200%"]), Origin::Set, "")
                .unwrap_err(),
            "percentage argument must be less or equal to 100"
        );
        assert_eq!(
            c.canonical_args(p, &argv(&["10%"]), Origin::Set, "")
                .unwrap(),
            "10%"
        );
        let p = find("hz").unwrap();
        assert_eq!(
            c.canonical_args(p, &argv(&["0"]), Origin::Set, "").unwrap(),
            "1"
        );
        let p = find("unixsocketperm").unwrap();
        assert_eq!(
            c.canonical_args(p, &argv(&["777"]), Origin::Set, "")
                .unwrap(),
            "777"
        );
    }

    #[test]
    fn enums_and_flags() {
        let c = Config::new();
        let p = find("oom-score-adj").unwrap();
        assert_eq!(
            c.canonical_args(p, &argv(&["relative"]), Origin::Set, "")
                .unwrap(),
            "yes"
        );
        let p = find("shutdown-on-sigint").unwrap();
        assert_eq!(
            c.canonical_args(p, &argv(&["nosave", "force", "now"]), Origin::Set, "")
                .unwrap(),
            "nosave now force"
        );
        assert!(c
            .canonical_args(p, &argv(&["save", "nosave"]), Origin::Set, "")
            .is_err());
    }

    #[test]
    fn specials() {
        assert_eq!(
            notify_flags_to_str(notify_flags_from_str("KEA").unwrap()),
            "AKE"
        );
        assert_eq!(
            notify_flags_to_str(notify_flags_from_str("Elg").unwrap()),
            "glE"
        );
        let c = Config::new();
        c.set("client-output-buffer-limit", "replica 1mb 2mb 3", true)
            .unwrap();
        assert_eq!(
            c.get("client-output-buffer-limit").unwrap(),
            "normal 0 0 0 slave 1048576 2097152 3 pubsub 33554432 8388608 60"
        );
        c.set("latency-tracking-info-percentiles", "50.0 99.90 100", true)
            .unwrap();
        assert_eq!(
            c.get("latency-tracking-info-percentiles").unwrap(),
            "50 99.9 100"
        );
        assert!(c.set("save", "1 2 3", true).is_err());
        c.set("save", "", true).unwrap();
        assert_eq!(c.get("save").unwrap(), "");
    }

    #[test]
    fn rollback_and_duplicates() {
        let c = Config::new();
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        c.set("maxmemory", "10000002", true).unwrap();
        let e = c
            .set_many(
                &pairs(&[
                    ("maxmemory", "10000001"),
                    ("maxmemory-clients", "200%"),
                    ("client-query-buffer-limit", "invalid"),
                ]),
                true,
            )
            .unwrap_err();
        assert_eq!(e.message, "CONFIG SET failed (possibly related to argument 'maxmemory-clients') - percentage argument must be less or equal to 100");
        assert_eq!(c.get("maxmemory").unwrap(), "10000002");
        let e = c
            .set_many(&pairs(&[("maxmemory", "1"), ("maxmemory", "2")]), true)
            .unwrap_err();
        assert!(e.message.contains("duplicate parameter"), "{}", e.message);
    }

    #[test]
    fn file_save_lines_and_errors() {
        let c = Config::new();
        c.load_text("save 900 1\nsave 300 10\n", Path::new("x.conf"), 0)
            .unwrap();
        assert_eq!(c.get("save").unwrap(), "900 1 300 10");
        let e = c
            .load_text("port 1\nbogus 1\n", Path::new("y.conf"), 0)
            .unwrap_err();
        assert!(e.contains("at line 2\n>>> 'bogus 1'\nBad directive"), "{e}");
    }

    #[test]
    fn command_line_options() {
        let a =
            |v: &[&str]| options_from_args(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(a(&["--port", "7", "--save"]), "port \"7\" \nsave \"\"");
        assert_eq!(
            a(&["--save", "--loglevel", "verbose"]),
            "save \"\"\nloglevel \"verbose\" "
        );
        assert_eq!(a(&["--maxmemory 700mb"]), "maxmemory 700mb ");
    }
}

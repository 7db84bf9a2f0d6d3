//! Configuration: one table of parameters (Redis 7.2 names, aliases, types, defaults, bounds),
//! redis.conf / command-line parsing, and CONFIG GET/SET semantics. Values are kept in their
//! canonical string form; the few read on hot paths are mirrored into atomics (`Hot`).

use parking_lot::RwLock;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    /// Byte sizes; accept `1gb`, `100mb`, `1k` ... and report plain bytes.
    Memory {
        min: i64,
        max: i64,
    },
    Enum(&'static [&'static str]),
    Str,
    /// Multi-argument or special syntax, validated by `special_canonical`.
    Special,
}

#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub kind: Kind,
    pub default: &'static str,
    pub mutable: bool,
    /// Hidden from `CONFIG GET *` wildcard listings? (Redis hides debug/hidden configs only
    /// from rewrite; we list all.)
    pub sensitive: bool,
}

const fn p(name: &'static str, kind: Kind, default: &'static str, mutable: bool) -> Param {
    Param {
        name,
        alias: None,
        kind,
        default,
        mutable,
        sensitive: false,
    }
}

const fn pa(
    name: &'static str,
    alias: &'static str,
    kind: Kind,
    default: &'static str,
    mutable: bool,
) -> Param {
    Param {
        name,
        alias: Some(alias),
        kind,
        default,
        mutable,
        sensitive: false,
    }
}

const B: Kind = Kind::Bool;
const S: Kind = Kind::Str;
const X: Kind = Kind::Special;
const fn int(min: i64, max: i64) -> Kind {
    Kind::Int { min, max }
}
const fn mem(min: i64, max: i64) -> Kind {
    Kind::Memory { min, max }
}
const LL: i64 = i64::MAX;
const IM: i64 = i32::MAX as i64;

pub static PARAMS: &[Param] = &[
    p("port", int(0, 65535), "6379", true),
    p("bind", X, "* -::*", true),
    p("protected-mode", B, "yes", true),
    Param {
        sensitive: true,
        ..p("requirepass", S, "", true)
    },
    p("databases", int(1, IM), "16", false),
    p("threads", int(0, 1024), "0", false),
    p("maxclients", int(1, IM), "10000", true),
    p("timeout", int(0, IM), "0", true),
    p("tcp-keepalive", int(0, IM), "300", true),
    p("tcp-backlog", int(0, IM), "511", false),
    p(
        "proto-max-bulk-len",
        mem(1024 * 1024, LL),
        "536870912",
        true,
    ),
    p(
        "client-query-buffer-limit",
        mem(1024 * 1024, LL),
        "1073741824",
        true,
    ),
    p(
        "loglevel",
        Kind::Enum(&["debug", "verbose", "notice", "warning", "nothing"]),
        "notice",
        true,
    ),
    p("logfile", S, "", false),
    p("pidfile", S, "", false),
    p("dir", X, "", true),
    p("hz", int(0, IM), "10", true),
    p("dynamic-hz", B, "yes", true),
    p("save", X, "3600 1 300 100 60 10000", true),
    p("dbfilename", S, "dump.rdb", true),
    p("appendonly", B, "no", true),
    p(
        "appendfsync",
        Kind::Enum(&["always", "everysec", "no"]),
        "everysec",
        true,
    ),
    p("appendfilename", S, "appendonly.aof", false),
    p("appenddirname", S, "appendonlydir", false),
    p("maxmemory", mem(0, LL), "0", true),
    p(
        "maxmemory-policy",
        Kind::Enum(&[
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "noeviction",
        ]),
        "noeviction",
        true,
    ),
    p("maxmemory-samples", int(1, 64), "5", true),
    p("lfu-log-factor", int(0, IM), "10", true),
    p("lfu-decay-time", int(0, IM), "1", true),
    p("slowlog-log-slower-than", int(-1, LL), "10000", true),
    p("slowlog-max-len", int(0, LL), "128", true),
    p("latency-monitor-threshold", int(0, LL), "0", true),
    p("latency-tracking", B, "yes", true),
    p("latency-tracking-info-percentiles", X, "50 99 99.9", true),
    p(
        "enable-debug-command",
        Kind::Enum(&["no", "yes", "local"]),
        "no",
        false,
    ),
    p(
        "enable-protected-configs",
        Kind::Enum(&["no", "yes", "local"]),
        "no",
        false,
    ),
    p(
        "enable-module-command",
        Kind::Enum(&["no", "yes", "local"]),
        "no",
        false,
    ),
    p("lazyfree-lazy-eviction", B, "no", true),
    p("lazyfree-lazy-expire", B, "no", true),
    p("lazyfree-lazy-server-del", B, "no", true),
    p("lazyfree-lazy-user-del", B, "no", true),
    p("lazyfree-lazy-user-flush", B, "no", true),
    p("notify-keyspace-events", X, "", true),
    p("active-expire-effort", int(1, 10), "1", true),
    p("daemonize", B, "no", false),
    p("rdbcompression", B, "yes", true),
    p("rdbchecksum", B, "yes", false),
    p("stop-writes-on-bgsave-error", B, "yes", true),
    p("hash-max-listpack-entries", int(0, LL), "128", true),
    pa("hash-max-ziplist-entries", "", int(0, LL), "128", true),
    p("hash-max-listpack-value", int(0, LL), "64", true),
    p(
        "list-max-listpack-size",
        int(i32::MIN as i64, IM),
        "-2",
        true,
    ),
    p("list-compress-depth", int(0, IM), "0", true),
    p("set-max-intset-entries", int(0, LL), "512", true),
    p("set-max-listpack-entries", int(0, LL), "128", true),
    p("set-max-listpack-value", int(0, LL), "64", true),
    p("zset-max-listpack-entries", int(0, LL), "128", true),
    p("zset-max-listpack-value", int(0, LL), "64", true),
    p("stream-node-max-bytes", mem(0, LL), "4096", true),
    p("stream-node-max-entries", int(0, LL), "100", true),
    p("hll-sparse-max-bytes", mem(0, LL), "3000", true),
    p("activerehashing", B, "yes", true),
    p("busy-reply-threshold", int(0, LL), "5000", true),
    p(
        "client-output-buffer-limit",
        X,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        true,
    ),
    p("repl-backlog-size", mem(1, LL), "1048576", true),
    p("replica-read-only", B, "yes", true),
    p("cluster-enabled", B, "no", false),
    p("lua-time-limit", int(0, LL), "5000", true),
];

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
    pub latency_tracking: AtomicBool,
    pub lfu_policy: AtomicBool,
    pub lfu_log_factor: AtomicU64,
    pub lfu_decay_time: AtomicU64,
    pub requirepass_set: AtomicBool,
    pub active_expire_effort: AtomicU64,
}

pub struct Config {
    values: RwLock<HashMap<&'static str, String>>,
    pub hot: Hot,
    /// The file the server was started with (CONFIG REWRITE target).
    pub file: RwLock<Option<PathBuf>>,
    /// A `save` line was already read from the file (later ones append).
    save_seen: AtomicBool,
}

pub fn find(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| {
        p.name.eq_ignore_ascii_case(name)
            || p.alias
                .is_some_and(|a| !a.is_empty() && a.eq_ignore_ascii_case(name))
    })
}

/// Redis's memtoll: a number with an optional unit (k, kb, m, mb, g, gb; case-insensitive).
pub fn parse_memory(s: &str) -> Option<i64> {
    let lower = s.to_ascii_lowercase();
    let (num, mul): (&str, i64) = [
        ("gb", 1 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("g", 1_000_000_000),
        ("m", 1_000_000),
        ("k", 1000),
        ("b", 1),
    ]
    .iter()
    .find_map(|(suf, m)| lower.strip_suffix(suf).map(|n| (n, *m)))
    .unwrap_or((lower.as_str(), 1));
    let n: i64 = num.parse().ok()?;
    n.checked_mul(mul)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

impl Param {
    /// Validate `value` and return its canonical form, or Redis's error text.
    pub fn canonical(&self, value: &str) -> Result<String, String> {
        match self.kind {
            Kind::Bool => parse_bool(value)
                .map(|b| if b { "yes" } else { "no" }.to_string())
                .ok_or_else(|| "argument must be 'yes' or 'no'".into()),
            Kind::Int { min, max } => {
                let v: i64 = value
                    .parse()
                    .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
                if v < min || v > max {
                    return Err(format!(
                        "argument must be between {min} and {max} inclusive"
                    ));
                }
                Ok(v.to_string())
            }
            Kind::Memory { min, max } => {
                let v = parse_memory(value)
                    .ok_or_else(|| "argument must be a memory value".to_string())?;
                if v < min || v > max {
                    return Err(format!(
                        "argument must be between {min} and {max} inclusive"
                    ));
                }
                Ok(v.to_string())
            }
            Kind::Enum(names) => {
                let l = value.to_ascii_lowercase();
                if names.contains(&l.as_str()) {
                    Ok(l)
                } else {
                    Err(format!(
                        "argument(s) must be one of the following: {}",
                        names.join(", ")
                    ))
                }
            }
            Kind::Str => Ok(value.to_string()),
            Kind::Special => special_canonical(self.name, value),
        }
    }
}

fn special_canonical(name: &str, value: &str) -> Result<String, String> {
    match name {
        "save" => {
            let parts: Vec<&str> = value.split_whitespace().collect();
            if !parts.len().is_multiple_of(2) || parts.iter().any(|p| p.parse::<u64>().is_err()) {
                return Err("Invalid save parameters".into());
            }
            Ok(parts.join(" "))
        }
        "bind" => Ok(value.split_whitespace().collect::<Vec<_>>().join(" ")),
        "dir" => {
            std::env::set_current_dir(value).map_err(|e| e.to_string())?;
            Ok(std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|_| value.to_string()))
        }
        "notify-keyspace-events" => {
            if value.chars().all(|c| "KEg$lshzxetmdnA".contains(c)) {
                Ok(value.to_string())
            } else {
                Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into())
            }
        }
        "latency-tracking-info-percentiles" => {
            let mut out = Vec::new();
            for p in value.split_whitespace() {
                let v: f64 = p.parse().map_err(|_| "latency-tracking-info-percentiles parameter should be between 0.0 and 100.0".to_string())?;
                if !(0.0..=100.0).contains(&v) {
                    return Err("latency-tracking-info-percentiles parameter should be between 0.0 and 100.0".into());
                }
                out.push(p.to_string());
            }
            Ok(out.join(" "))
        }
        _ => Ok(value.to_string()),
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}

impl Config {
    pub fn new() -> Config {
        let mut values = HashMap::new();
        for p in PARAMS {
            let v = if p.name == "dir" {
                std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
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
                latency_tracking: AtomicBool::new(true),
                lfu_policy: AtomicBool::new(false),
                lfu_log_factor: AtomicU64::new(10),
                lfu_decay_time: AtomicU64::new(1),
                requirepass_set: AtomicBool::new(false),
                active_expire_effort: AtomicU64::new(1),
            },
            file: RwLock::new(None),
            save_seen: AtomicBool::new(false),
        };
        for p in PARAMS {
            c.apply(p.name, p.default);
        }
        c
    }

    /// The canonical value of a parameter.
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

    /// Set one parameter (start-up or CONFIG SET). `runtime` refuses immutable parameters.
    pub fn set(&self, name: &str, value: &str, runtime: bool) -> Result<(), String> {
        let p = find(name).ok_or_else(|| {
            format!("Unknown option or number of arguments for CONFIG SET - '{name}'")
        })?;
        if runtime && !p.mutable {
            return Err("can't set immutable config".into());
        }
        let v = p.canonical(value)?;
        self.values.write().insert(p.name, v.clone());
        self.apply(p.name, &v);
        Ok(())
    }

    /// Names (canonical and aliases) with their values, for CONFIG GET and rewrite.
    pub fn entries(&self) -> Vec<(&'static str, String)> {
        let vals = self.values.read();
        let mut out = Vec::new();
        for p in PARAMS {
            let v = vals.get(p.name).cloned().unwrap_or_default();
            out.push((p.name, v.clone()));
            if let Some(a) = p.alias.filter(|a| !a.is_empty()) {
                out.push((a, v));
            }
        }
        out
    }

    fn apply(&self, name: &str, v: &str) {
        let h = &self.hot;
        let n = || v.parse::<i64>().unwrap_or(0);
        match name {
            "hz" => h.hz.store(n().clamp(1, 500) as u64, Relaxed),
            "proto-max-bulk-len" => h.proto_max_bulk_len.store(n(), Relaxed),
            "client-query-buffer-limit" => h.client_query_buffer_limit.store(n() as u64, Relaxed),
            "maxclients" => h.maxclients.store(n() as u64, Relaxed),
            "timeout" => h.timeout.store(n() as u64, Relaxed),
            "slowlog-log-slower-than" => h.slowlog_slower_than.store(n(), Relaxed),
            "slowlog-max-len" => h.slowlog_max_len.store(n() as u64, Relaxed),
            "latency-monitor-threshold" => h.latency_threshold.store(n() as u64, Relaxed),
            "latency-tracking" => h.latency_tracking.store(v == "yes", Relaxed),
            "maxmemory-policy" => h.lfu_policy.store(v.contains("lfu"), Relaxed),
            "lfu-log-factor" => h.lfu_log_factor.store(n() as u64, Relaxed),
            "lfu-decay-time" => h.lfu_decay_time.store(n() as u64, Relaxed),
            "requirepass" => h.requirepass_set.store(!v.is_empty(), Relaxed),
            "active-expire-effort" => h.active_expire_effort.store(n() as u64, Relaxed),
            _ => {}
        }
    }

    /// Parse redis.conf text: one directive per line, `#` comments, quoted arguments,
    /// `include path`. Errors name the line as Redis does.
    pub fn load_text(&self, text: &str, origin: &Path, depth: usize) -> Result<(), String> {
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let mut buf = Vec::new();
            let mut ranges = Vec::new();
            let bad = |msg: &str| {
                format!(
                    "\n*** FATAL CONFIG FILE ERROR (Redis 7.2.6) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}",
                    i + 1,
                    trimmed,
                    msg
                )
            };
            if tern_resp::split_args(trimmed.as_bytes(), &mut buf, &mut ranges).is_err() {
                return Err(bad("Unbalanced quotes in configuration line"));
            }
            let argv: Vec<String> = ranges
                .iter()
                .map(|&(a, b)| String::from_utf8_lossy(&buf[a..b]).into_owned())
                .collect();
            if argv.is_empty() {
                continue;
            }
            let name = argv[0].to_ascii_lowercase();
            if name == "include" {
                if argv.len() != 2 || depth > 16 {
                    return Err(bad("Bad include directive"));
                }
                let path = Path::new(&argv[1]);
                let text = std::fs::read_to_string(path)
                    .map_err(|e| bad(&format!("Can't open the include file '{}': {e}", argv[1])))?;
                self.load_text(&text, path, depth + 1)?;
                continue;
            }
            let Some(param) = find(&name) else {
                return Err(bad("Bad directive or wrong number of arguments"));
            };
            let value = if matches!(param.kind, Kind::Special) {
                let joined = argv[1..].join(" ");
                // `save ""` and repeated `save a b` lines: the first line resets, later ones append.
                if param.name == "save" && !joined.is_empty() {
                    let cur = self.get("save").unwrap_or_default();
                    if self.seen_save(origin) && !cur.is_empty() {
                        format!("{cur} {joined}")
                    } else {
                        joined
                    }
                } else {
                    joined
                }
            } else {
                if argv.len() != 2 {
                    return Err(bad("wrong number of arguments"));
                }
                argv[1].clone()
            };
            self.set(param.name, &value, false).map_err(|e| bad(&e))?;
        }
        Ok(())
    }

    fn seen_save(&self, _origin: &Path) -> bool {
        self.save_seen.swap(true, Relaxed)
    }
}

//! Configuration: one table of every Redis 7.2 parameter (names, aliases, types, defaults,
//! bounds, flags) plus tern's own `threads`; redis.conf / command-line parsing; the set, get and
//! rewrite semantics behind CONFIG SET/GET/REWRITE. Values are kept in the canonical string form
//! CONFIG GET prints; the few read on hot paths are mirrored into atomics (`Hot`).
//!
//! Parameters tern does not act on yet are accepted, validated and reported like Redis does.

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

/// How a numeric parameter is written and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumFmt {
    Int,
    /// Byte sizes: `1gb`, `100mb`, `1k` ... reported as plain bytes.
    Mem,
    /// A byte size or a percentage (`10%`, stored negative as Redis does).
    MemPct,
    Octal,
}

pub type Validator = fn(&str) -> Result<(), &'static str>;

#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Bool,
    Num {
        min: i128,
        max: i128,
        /// C unsigned type: negative input wraps and fails the bound check, bounds print as %llu.
        unsigned: bool,
        fmt: NumFmt,
    },
    /// One of the names; values that share a number print as the first such name.
    Enum(&'static [(&'static str, i32)]),
    /// Several enum names OR-ed together (shutdown-on-sigint ...).
    Flags(&'static [(&'static str, i32)]),
    Str {
        /// An empty value means "unset" (not written by CONFIG REWRITE).
        empty_is_null: bool,
        check: Option<Validator>,
    },
    /// Own syntax: save, bind, dir, client-output-buffer-limit, ...
    Special,
}

#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub kind: Kind,
    /// Canonical default (what CONFIG GET shows on a fresh server).
    pub default: &'static str,
    pub flags: u32,
}

impl Param {
    pub fn mutable(&self) -> bool {
        self.flags & IMMUTABLE == 0
    }
    pub fn sensitive(&self) -> bool {
        self.flags & SENSITIVE != 0
    }
    pub fn hidden(&self) -> bool {
        self.flags & HIDDEN != 0
    }
    pub fn multi_arg(&self) -> bool {
        self.flags & MULTI_ARG != 0 || matches!(self.kind, Kind::Flags(_))
    }
}

const fn b(name: &'static str, alias: Option<&'static str>, flags: u32, default: bool) -> Param {
    Param {
        name,
        alias,
        kind: Kind::Bool,
        default: if default { "yes" } else { "no" },
        flags,
    }
}

const fn s(
    name: &'static str,
    alias: Option<&'static str>,
    flags: u32,
    empty_is_null: bool,
    default: &'static str,
    check: Option<Validator>,
) -> Param {
    Param {
        name,
        alias,
        kind: Kind::Str {
            empty_is_null,
            check,
        },
        default,
        flags,
    }
}

const fn e(
    name: &'static str,
    flags: u32,
    names: &'static [(&'static str, i32)],
    default: &'static str,
) -> Param {
    Param {
        name,
        alias: None,
        kind: Kind::Enum(names),
        default,
        flags,
    }
}

#[allow(clippy::too_many_arguments)]
const fn n(
    name: &'static str,
    alias: Option<&'static str>,
    flags: u32,
    min: i128,
    max: i128,
    default: &'static str,
    unsigned: bool,
    fmt: NumFmt,
) -> Param {
    Param {
        name,
        alias,
        kind: Kind::Num {
            min,
            max,
            unsigned,
            fmt,
        },
        default,
        flags,
    }
}

/// Signed integer parameter.
const fn i(name: &'static str, flags: u32, min: i128, max: i128, default: &'static str) -> Param {
    n(name, None, flags, min, max, default, false, NumFmt::Int)
}
const fn ia(
    name: &'static str,
    alias: &'static str,
    min: i128,
    max: i128,
    default: &'static str,
) -> Param {
    n(name, Some(alias), 0, min, max, default, false, NumFmt::Int)
}
/// Unsigned integer parameter.
const fn u(name: &'static str, flags: u32, min: i128, max: i128, default: &'static str) -> Param {
    n(name, None, flags, min, max, default, true, NumFmt::Int)
}
const fn x(
    name: &'static str,
    alias: Option<&'static str>,
    flags: u32,
    default: &'static str,
) -> Param {
    Param {
        name,
        alias,
        kind: Kind::Special,
        default,
        flags,
    }
}

const INT_MAX: i128 = i32::MAX as i128;
const INT_MIN: i128 = i32::MIN as i128;
const UINT_MAX: i128 = u32::MAX as i128;
const LONG_MAX: i128 = i64::MAX as i128;
const ULLONG_MAX: i128 = u64::MAX as i128;
const MB: i128 = 1 << 20;
const NULL: bool = true;
const EMPTY_OK: bool = false;

const PROTECTED_ACTION: &[(&str, i32)] = &[("no", 0), ("yes", 1), ("local", 2)];
pub const MAXMEMORY_POLICIES: &[(&str, i32)] = &[
    ("volatile-lru", 0),
    ("volatile-lfu", 1),
    ("volatile-random", 2),
    ("volatile-ttl", 3),
    ("allkeys-lru", 4),
    ("allkeys-lfu", 5),
    ("allkeys-random", 6),
    ("noeviction", 7),
];
const SHUTDOWN_FLAGS: &[(&str, i32)] = &[
    ("default", 0),
    ("save", 1),
    ("nosave", 2),
    ("now", 4),
    ("force", 8),
];

pub static PARAMS: &[Param] = &[
    // yes/no
    b("rdbchecksum", None, IMMUTABLE, true),
    b("daemonize", None, IMMUTABLE, false),
    b("io-threads-do-reads", None, DEBUG | IMMUTABLE, false),
    b("always-show-logo", None, IMMUTABLE, false),
    b("protected-mode", None, 0, true),
    b("rdbcompression", None, 0, true),
    b("rdb-del-sync-files", None, 0, false),
    b("activerehashing", None, 0, true),
    b("stop-writes-on-bgsave-error", None, 0, true),
    b("set-proc-title", None, IMMUTABLE, true),
    b("dynamic-hz", None, 0, true),
    b("lazyfree-lazy-eviction", None, DEBUG, false),
    b("lazyfree-lazy-expire", None, DEBUG, false),
    b("lazyfree-lazy-server-del", None, DEBUG, false),
    b("lazyfree-lazy-user-del", None, DEBUG, false),
    b("lazyfree-lazy-user-flush", None, DEBUG, false),
    b("repl-disable-tcp-nodelay", None, 0, false),
    b("repl-diskless-sync", None, DEBUG, true),
    b("aof-rewrite-incremental-fsync", None, 0, true),
    b("no-appendfsync-on-rewrite", None, 0, false),
    b("cluster-require-full-coverage", None, 0, true),
    b("rdb-save-incremental-fsync", None, 0, true),
    b("aof-load-truncated", None, 0, true),
    b("aof-use-rdb-preamble", None, 0, true),
    b("aof-timestamp-enabled", None, 0, false),
    b(
        "cluster-replica-no-failover",
        Some("cluster-slave-no-failover"),
        0,
        false,
    ),
    b("replica-lazy-flush", Some("slave-lazy-flush"), 0, false),
    b(
        "replica-serve-stale-data",
        Some("slave-serve-stale-data"),
        0,
        true,
    ),
    b("replica-read-only", Some("slave-read-only"), DEBUG, true),
    b(
        "replica-ignore-maxmemory",
        Some("slave-ignore-maxmemory"),
        0,
        true,
    ),
    b("jemalloc-bg-thread", None, 0, true),
    b("activedefrag", None, DEBUG, false),
    b("syslog-enabled", None, IMMUTABLE, false),
    b("cluster-enabled", None, IMMUTABLE, false),
    b("appendonly", None, DENY_LOADING, false),
    b("cluster-allow-reads-when-down", None, 0, false),
    b("cluster-allow-pubsubshard-when-down", None, 0, true),
    b("crash-log-enabled", None, 0, true),
    b("crash-memcheck-enabled", None, 0, true),
    b("use-exit-on-panic", None, HIDDEN, false),
    b("disable-thp", None, IMMUTABLE, true),
    b("cluster-allow-replica-migration", None, 0, true),
    b("replica-announced", None, 0, true),
    b("latency-tracking", None, 0, true),
    b("aof-disable-auto-gc", None, HIDDEN, false),
    b("replica-ignore-disk-write-errors", None, 0, false),
    // strings
    s("aclfile", None, IMMUTABLE, EMPTY_OK, "", None),
    s("unixsocket", None, IMMUTABLE, NULL, "", None),
    s("pidfile", None, IMMUTABLE, NULL, "", None),
    s(
        "replica-announce-ip",
        Some("slave-announce-ip"),
        0,
        NULL,
        "",
        None,
    ),
    s("masteruser", None, SENSITIVE, NULL, "", None),
    s("cluster-announce-ip", None, 0, NULL, "", None),
    s(
        "cluster-config-file",
        None,
        IMMUTABLE,
        EMPTY_OK,
        "nodes.conf",
        None,
    ),
    s(
        "cluster-announce-hostname",
        None,
        0,
        NULL,
        "",
        Some(valid_hostname),
    ),
    s(
        "cluster-announce-human-nodename",
        None,
        0,
        NULL,
        "",
        Some(valid_nodename),
    ),
    s("syslog-ident", None, IMMUTABLE, EMPTY_OK, "redis", None),
    s(
        "dbfilename",
        None,
        PROTECTED,
        EMPTY_OK,
        "dump.rdb",
        Some(valid_dbfilename),
    ),
    s(
        "appendfilename",
        None,
        IMMUTABLE,
        EMPTY_OK,
        "appendonly.aof",
        Some(valid_aof_filename),
    ),
    s(
        "appenddirname",
        None,
        IMMUTABLE,
        EMPTY_OK,
        "appendonlydir",
        Some(valid_aof_dirname),
    ),
    s("server_cpulist", None, IMMUTABLE, NULL, "", None),
    s("bio_cpulist", None, IMMUTABLE, NULL, "", None),
    s("aof_rewrite_cpulist", None, IMMUTABLE, NULL, "", None),
    s("bgsave_cpulist", None, IMMUTABLE, NULL, "", None),
    s("ignore-warnings", None, 0, EMPTY_OK, "", None),
    s(
        "proc-title-template",
        None,
        0,
        EMPTY_OK,
        "{title} {listen-addr} {server-mode}",
        Some(valid_proc_title),
    ),
    s("bind-source-addr", None, 0, NULL, "", None),
    s("logfile", None, IMMUTABLE, EMPTY_OK, "", None),
    s("req-res-logfile", None, IMMUTABLE | HIDDEN, NULL, "", None),
    s("locale-collate", None, 0, EMPTY_OK, "", None),
    s("masterauth", None, SENSITIVE, NULL, "", None),
    s("requirepass", None, SENSITIVE, NULL, "", None),
    // enums
    e(
        "supervised",
        IMMUTABLE,
        &[("upstart", 1), ("systemd", 2), ("auto", 3), ("no", 0)],
        "no",
    ),
    e(
        "syslog-facility",
        IMMUTABLE,
        &[
            ("user", 8),
            ("local0", 128),
            ("local1", 136),
            ("local2", 144),
            ("local3", 152),
            ("local4", 160),
            ("local5", 168),
            ("local6", 176),
            ("local7", 184),
        ],
        "local0",
    ),
    e(
        "repl-diskless-load",
        DEBUG | DENY_LOADING,
        &[("disabled", 0), ("on-empty-db", 1), ("swapdb", 2)],
        "disabled",
    ),
    e(
        "loglevel",
        0,
        &[
            ("debug", 0),
            ("verbose", 1),
            ("notice", 2),
            ("warning", 3),
            ("nothing", 4),
        ],
        "notice",
    ),
    e("maxmemory-policy", 0, MAXMEMORY_POLICIES, "noeviction"),
    e(
        "appendfsync",
        0,
        &[("everysec", 2), ("always", 1), ("no", 0)],
        "everysec",
    ),
    e(
        "oom-score-adj",
        0,
        &[("no", 0), ("yes", 1), ("relative", 1), ("absolute", 2)],
        "no",
    ),
    e(
        "acl-pubsub-default",
        0,
        &[("allchannels", 1), ("resetchannels", 0)],
        "resetchannels",
    ),
    e(
        "sanitize-dump-payload",
        DEBUG,
        &[("no", 0), ("yes", 1), ("clients", 2)],
        "no",
    ),
    e(
        "enable-protected-configs",
        IMMUTABLE,
        PROTECTED_ACTION,
        "no",
    ),
    e("enable-debug-command", IMMUTABLE, PROTECTED_ACTION, "no"),
    e("enable-module-command", IMMUTABLE, PROTECTED_ACTION, "no"),
    e(
        "cluster-preferred-endpoint-type",
        0,
        &[("ip", 0), ("hostname", 1), ("unknown-endpoint", 2)],
        "ip",
    ),
    e(
        "propagation-error-behavior",
        0,
        &[("ignore", 0), ("panic", 1), ("panic-on-replicas", 2)],
        "ignore",
    ),
    Param {
        name: "shutdown-on-sigint",
        alias: None,
        kind: Kind::Flags(SHUTDOWN_FLAGS),
        default: "default",
        flags: MULTI_ARG,
    },
    Param {
        name: "shutdown-on-sigterm",
        alias: None,
        kind: Kind::Flags(SHUTDOWN_FLAGS),
        default: "default",
        flags: MULTI_ARG,
    },
    // numbers
    i("databases", IMMUTABLE, 1, INT_MAX, "16"),
    i("port", 0, 0, 65535, "6379"),
    i("io-threads", DEBUG | IMMUTABLE, 1, 128, "1"),
    i("auto-aof-rewrite-percentage", 0, 0, INT_MAX, "100"),
    ia(
        "cluster-replica-validity-factor",
        "cluster-slave-validity-factor",
        0,
        INT_MAX,
        "10",
    ),
    ia(
        "list-max-listpack-size",
        "list-max-ziplist-size",
        INT_MIN,
        INT_MAX,
        "-2",
    ),
    i("tcp-keepalive", 0, 0, INT_MAX, "300"),
    i("cluster-migration-barrier", 0, 0, INT_MAX, "1"),
    i("active-defrag-cycle-min", 0, 1, 99, "1"),
    i("active-defrag-cycle-max", 0, 1, 99, "25"),
    i("active-defrag-threshold-lower", 0, 0, 1000, "10"),
    i("active-defrag-threshold-upper", 0, 0, 1000, "100"),
    i("lfu-log-factor", 0, 0, INT_MAX, "10"),
    i("lfu-decay-time", 0, 0, INT_MAX, "1"),
    ia("replica-priority", "slave-priority", 0, INT_MAX, "100"),
    i("repl-diskless-sync-delay", 0, 0, INT_MAX, "5"),
    i("maxmemory-samples", 0, 1, INT_MAX, "5"),
    i("maxmemory-eviction-tenacity", 0, 0, 100, "10"),
    i("timeout", 0, 0, INT_MAX, "0"),
    ia(
        "replica-announce-port",
        "slave-announce-port",
        0,
        65535,
        "0",
    ),
    i("tcp-backlog", IMMUTABLE, 0, INT_MAX, "511"),
    i("cluster-port", IMMUTABLE, 0, 65535, "0"),
    i("cluster-announce-bus-port", 0, 0, 65535, "0"),
    i("cluster-announce-port", 0, 0, 65535, "0"),
    i("cluster-announce-tls-port", 0, 0, 65535, "0"),
    i("repl-timeout", 0, 1, INT_MAX, "60"),
    ia(
        "repl-ping-replica-period",
        "repl-ping-slave-period",
        1,
        INT_MAX,
        "10",
    ),
    i("list-compress-depth", DEBUG, 0, INT_MAX, "0"),
    i("rdb-key-save-delay", HIDDEN, INT_MIN, INT_MAX, "0"),
    i("key-load-delay", HIDDEN, INT_MIN, INT_MAX, "0"),
    i("active-expire-effort", 0, 1, 10, "1"),
    i("hz", 0, 0, INT_MAX, "10"),
    ia(
        "min-replicas-to-write",
        "min-slaves-to-write",
        0,
        INT_MAX,
        "0",
    ),
    ia(
        "min-replicas-max-lag",
        "min-slaves-max-lag",
        0,
        INT_MAX,
        "10",
    ),
    i("watchdog-period", HIDDEN, 0, INT_MAX, "0"),
    i("shutdown-timeout", 0, 0, INT_MAX, "10"),
    i("repl-diskless-sync-max-replicas", 0, 0, INT_MAX, "0"),
    u("maxclients", 0, 1, UINT_MAX, "10000"),
    n(
        "unixsocketperm",
        None,
        IMMUTABLE,
        0,
        0o777,
        "0",
        true,
        NumFmt::Octal,
    ),
    u("socket-mark-id", IMMUTABLE, 0, UINT_MAX, "0"),
    u("client-default-resp", IMMUTABLE | HIDDEN, 2, 3, "2"),
    u("active-defrag-max-scan-fields", 0, 1, LONG_MAX, "1000"),
    u("slowlog-max-len", 0, 0, LONG_MAX, "128"),
    u("acllog-max-len", 0, 0, LONG_MAX, "128"),
    n(
        "busy-reply-threshold",
        Some("lua-time-limit"),
        0,
        0,
        LONG_MAX,
        "5000",
        false,
        NumFmt::Int,
    ),
    i("cluster-node-timeout", 0, 0, LONG_MAX, "15000"),
    i("cluster-ping-interval", HIDDEN, 0, LONG_MAX, "0"),
    i("slowlog-log-slower-than", 0, -1, LONG_MAX, "10000"),
    i("latency-monitor-threshold", 0, 0, LONG_MAX, "0"),
    n(
        "proto-max-bulk-len",
        None,
        DEBUG,
        MB,
        LONG_MAX,
        "536870912",
        false,
        NumFmt::Mem,
    ),
    i("stream-node-max-entries", 0, 0, LONG_MAX, "100"),
    n(
        "repl-backlog-size",
        None,
        0,
        1,
        LONG_MAX,
        "1048576",
        false,
        NumFmt::Mem,
    ),
    n("maxmemory", None, 0, 0, ULLONG_MAX, "0", true, NumFmt::Mem),
    n(
        "cluster-link-sendbuf-limit",
        None,
        0,
        0,
        ULLONG_MAX,
        "0",
        true,
        NumFmt::Mem,
    ),
    n(
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        0,
        0,
        LONG_MAX,
        "512",
        true,
        NumFmt::Int,
    ),
    u("set-max-intset-entries", 0, 0, LONG_MAX, "512"),
    u("set-max-listpack-entries", 0, 0, LONG_MAX, "128"),
    u("set-max-listpack-value", 0, 0, LONG_MAX, "64"),
    n(
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        0,
        0,
        LONG_MAX,
        "128",
        true,
        NumFmt::Int,
    ),
    n(
        "active-defrag-ignore-bytes",
        None,
        0,
        1,
        LONG_MAX,
        "104857600",
        true,
        NumFmt::Mem,
    ),
    n(
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        0,
        0,
        LONG_MAX,
        "64",
        true,
        NumFmt::Mem,
    ),
    n(
        "stream-node-max-bytes",
        None,
        0,
        0,
        LONG_MAX,
        "4096",
        true,
        NumFmt::Mem,
    ),
    n(
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        0,
        0,
        LONG_MAX,
        "64",
        true,
        NumFmt::Mem,
    ),
    n(
        "hll-sparse-max-bytes",
        None,
        0,
        0,
        LONG_MAX,
        "3000",
        true,
        NumFmt::Mem,
    ),
    u("tracking-table-max-keys", 0, 0, LONG_MAX, "1000000"),
    n(
        "client-query-buffer-limit",
        None,
        DEBUG,
        MB,
        LONG_MAX,
        "1073741824",
        true,
        NumFmt::Mem,
    ),
    n(
        "maxmemory-clients",
        None,
        0,
        -100,
        LONG_MAX,
        "0",
        false,
        NumFmt::MemPct,
    ),
    i("repl-backlog-ttl", 0, 0, LONG_MAX, "3600"),
    n(
        "auto-aof-rewrite-min-size",
        None,
        0,
        0,
        LONG_MAX,
        "67108864",
        false,
        NumFmt::Mem,
    ),
    i(
        "loading-process-events-interval-bytes",
        HIDDEN,
        1024,
        INT_MAX,
        "2097152",
    ),
    // TLS (registered even without TLS support, as in Redis 7.2)
    i("tls-port", 0, 0, 65535, "0"),
    i("tls-session-cache-size", 0, 0, INT_MAX, "20480"),
    i("tls-session-cache-timeout", 0, 0, INT_MAX, "300"),
    b("tls-cluster", None, 0, false),
    b("tls-replication", None, 0, false),
    e(
        "tls-auth-clients",
        0,
        &[("no", 0), ("yes", 1), ("optional", 2)],
        "yes",
    ),
    b("tls-prefer-server-ciphers", None, 0, false),
    b("tls-session-caching", None, 0, true),
    s("tls-cert-file", None, 0, NULL, "", None),
    s("tls-key-file", None, 0, NULL, "", None),
    s("tls-key-file-pass", None, 0, NULL, "", None),
    s("tls-client-cert-file", None, 0, NULL, "", None),
    s("tls-client-key-file", None, 0, NULL, "", None),
    s("tls-client-key-file-pass", None, 0, NULL, "", None),
    s("tls-dh-params-file", None, 0, NULL, "", None),
    s("tls-ca-cert-file", None, 0, NULL, "", None),
    s("tls-ca-cert-dir", None, 0, NULL, "", None),
    s("tls-protocols", None, 0, NULL, "", None),
    s("tls-ciphers", None, 0, NULL, "", None),
    s("tls-ciphersuites", None, 0, NULL, "", None),
    // special syntax
    x("dir", None, PROTECTED | DENY_LOADING, ""),
    x("save", None, MULTI_ARG, "3600 1 300 100 60 10000"),
    x(
        "client-output-buffer-limit",
        None,
        MULTI_ARG,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
    ),
    x("oom-score-adj-values", None, MULTI_ARG, "0 200 800"),
    x("notify-keyspace-events", None, 0, ""),
    x("bind", None, MULTI_ARG, "* -::*"),
    x("replicaof", Some("slaveof"), IMMUTABLE | MULTI_ARG, ""),
    x(
        "latency-tracking-info-percentiles",
        None,
        MULTI_ARG,
        "50 99 99.9",
    ),
    // tern's own: worker threads (0 = one per core). Hidden from CONFIG GET patterns so tools
    // that walk `CONFIG GET *` see exactly Redis's parameters; an exact `CONFIG GET threads` works.
    i("threads", IMMUTABLE | HIDDEN, 0, 1024, "0"),
    // tern: Prometheus /metrics over HTTP on this port (0: off); hidden from CONFIG GET *,
    // which lists Redis's own set.
    i("metrics-port", HIDDEN, 0, 65535, "0"),
];

/// Directives the config file accepts besides the parameters (kept by CONFIG REWRITE).
const FILE_ONLY_DIRECTIVES: &[&str] = &[
    "include",
    "rename-command",
    "user",
    "loadmodule",
    "sentinel",
];

// ---------------------------------------------------------------------------------------------
// Validators (Redis's is_valid functions and their texts)

fn is_basename(v: &str) -> bool {
    !v.contains('/')
}

fn valid_dbfilename(v: &str) -> Result<(), &'static str> {
    if !is_basename(v) {
        return Err("dbfilename can't be a path, just a filename");
    }
    Ok(())
}

fn valid_aof_filename(v: &str) -> Result<(), &'static str> {
    if v.is_empty() {
        return Err("appendfilename can't be empty");
    }
    if !is_basename(v) {
        return Err("appendfilename can't be a path, just a filename");
    }
    Ok(())
}

fn valid_aof_dirname(v: &str) -> Result<(), &'static str> {
    if v.is_empty() {
        return Err("appenddirname can't be empty");
    }
    if !is_basename(v) {
        return Err("appenddirname can't be a path, just a dirname");
    }
    Ok(())
}

fn valid_hostname(v: &str) -> Result<(), &'static str> {
    if v.len() >= 256 {
        return Err("Hostnames must be less than 256 characters");
    }
    if !v
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
    {
        return Err("Hostnames may only contain alphanumeric characters, hyphens or dots");
    }
    Ok(())
}

fn valid_nodename(v: &str) -> Result<(), &'static str> {
    if v.bytes()
        .any(|c| !c.is_ascii_alphanumeric() && b"!#$%&()*+:;<>?@[]^{|}~".contains(&c))
    {
        return Err("Announced human node name contained invalid character");
    }
    Ok(())
}

/// Variables known to proc-title-template; the template must expand to something non-blank.
fn valid_proc_title(v: &str) -> Result<(), &'static str> {
    const ERR: &str = "template format is invalid or contains unknown variables";
    const VARS: &[&str] = &[
        "title",
        "listen-addr",
        "server-mode",
        "port",
        "tls-port",
        "unixsocket",
        "config-file",
    ];
    let bytes = v.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => {
                out.push('{');
                i += 2;
            }
            b'}' if bytes.get(i + 1) == Some(&b'}') => {
                out.push('}');
                i += 2;
            }
            b'{' => {
                let end = v[i + 1..].find('}').ok_or(ERR)? + i + 1;
                let var = &v[i + 1..end];
                if !VARS.contains(&var) {
                    return Err(ERR);
                }
                // Every variable but the (empty, when validating) title expands to text.
                if var != "title" {
                    out.push('x');
                }
                i = end + 1;
            }
            b'}' => return Err(ERR),
            c => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    if out.trim_matches(' ').is_empty() {
        return Err(ERR);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Parsing helpers

/// Redis's memtoull: digits with an optional unit (b, k, kb, m, mb, g, gb; any case).
pub fn memtoull(s: &str) -> Option<u64> {
    if s.starts_with('-') {
        return None;
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = s.split_at(digits);
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return None,
    };
    if num.is_empty() {
        // strtoull("") is 0 without EINVAL on glibc only when digits exist; Redis rejects it.
        return None;
    }
    let v: u64 = num.parse().unwrap_or(u64::MAX);
    Some(v.wrapping_mul(mul))
}

/// Memory value as a signed number (kept for callers of the old API).
pub fn parse_memory(s: &str) -> Option<i64> {
    memtoull(s).map(|v| v as i64)
}

/// C strtoll(s, &end, 10) with `*end == '\0'` required: optional leading spaces and sign.
fn strtoll_full(s: &str) -> Option<i64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if t.is_empty() {
        // strtoll of "" stops at once; the end pointer is at '\0' and the value 0.
        return if s.is_empty() { Some(0) } else { None };
    }
    let (neg, digits) = match t.as_bytes()[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let v: i128 = digits.parse().unwrap_or(i128::MAX);
    let v = if neg { -v } else { v };
    Some(v.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

/// Redis's string2d: a float with no leading space and no trailing garbage, not NaN.
fn string2d(s: &str) -> Option<f64> {
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    Some(v)
}

/// `%f` followed by Redis's trimDoubleString (drop trailing zeros and a bare point).
fn fmt_percentile(v: f64) -> String {
    let mut s = format!("{v:.6}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    s
}

/// Redis's sdscatrepr: quoted, escaped.
pub fn repr(s: &str) -> String {
    let mut out = String::from("\"");
    for &c in s.as_bytes() {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c as char),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
    out
}

/// Redis's rewriteConfigFormatMemory: the largest exact unit.
fn fmt_memory(bytes: u64) -> String {
    const GB: u64 = 1 << 30;
    const MB: u64 = 1 << 20;
    const KB: u64 = 1 << 10;
    if bytes != 0 && bytes.is_multiple_of(GB) {
        format!("{}gb", bytes / GB)
    } else if bytes != 0 && bytes.is_multiple_of(MB) {
        format!("{}mb", bytes / MB)
    } else if bytes != 0 && bytes.is_multiple_of(KB) {
        format!("{}kb", bytes / KB)
    } else {
        bytes.to_string()
    }
}

/// The C library's text for an errno (what Redis prints with strerror).
pub fn strerror(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => {
            // SAFETY: strerror returns a pointer to a static, NUL-terminated message.
            unsafe {
                let p = libc::strerror(code);
                if p.is_null() {
                    return e.to_string();
                }
                std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
        None => e.to_string(),
    }
}

pub fn sdssplitargs(line: &str) -> Option<Vec<String>> {
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    tern_resp::split_args(line.as_bytes(), &mut buf, &mut ranges).ok()?;
    Some(
        ranges
            .iter()
            .map(|&(a, b)| String::from_utf8_lossy(&buf[a..b]).into_owned())
            .collect(),
    )
}

pub fn find(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| {
        p.name.eq_ignore_ascii_case(name) || p.alias.is_some_and(|a| a.eq_ignore_ascii_case(name))
    })
}

// ---------------------------------------------------------------------------------------------
// Numeric, enum and special canonical forms

/// Parse a numeric value as Redis's numericParseString; the result is the stored number
/// (percentages negative).
fn parse_num(fmt: NumFmt, v: &str) -> Result<i64, &'static str> {
    match fmt {
        NumFmt::Mem | NumFmt::MemPct => {
            if let Some(m) = memtoull(v) {
                return Ok(m as i64);
            }
            if fmt == NumFmt::MemPct && v.len() > 1 && v.ends_with('%') {
                if let Some(p) = crate::args::parse_i64(&v.as_bytes()[..v.len() - 1]) {
                    if p >= 0 {
                        return Ok(-p);
                    }
                }
            }
            Err(if fmt == NumFmt::MemPct {
                "argument must be a memory or percent value"
            } else {
                "argument must be a memory value"
            })
        }
        NumFmt::Octal => {
            let t = v.trim_start();
            let (neg, d) = match t.as_bytes().first() {
                Some(b'-') => (true, &t[1..]),
                Some(b'+') => (false, &t[1..]),
                _ => (false, t),
            };
            match i64::from_str_radix(d, 8) {
                Ok(x) if !d.is_empty() && !d.starts_with(['+', '-']) => {
                    Ok(if neg { -x } else { x })
                }
                _ => Err("argument couldn't be parsed as an octal number"),
            }
        }
        NumFmt::Int => crate::args::parse_i64(v.as_bytes())
            .ok_or("argument couldn't be parsed into an integer"),
    }
}

fn num_canonical(
    p: &Param,
    min: i128,
    max: i128,
    unsigned: bool,
    fmt: NumFmt,
    v: &str,
) -> Result<String, String> {
    let ll = parse_num(fmt, v).map_err(str::to_string)?;
    if unsigned {
        let ull = ll as u64 as i128;
        if ull > max || ull < min {
            return Err(if fmt == NumFmt::Octal {
                format!("argument must be between {min:o} and {max:o} inclusive")
            } else {
                format!("argument must be between {min} and {max} inclusive")
            });
        }
    } else if fmt == NumFmt::MemPct && ll < 0 {
        if (ll as i128) < min {
            return Err(format!(
                "percentage argument must be less or equal to {}",
                -min
            ));
        }
    } else if (ll as i128) > max || (ll as i128) < min {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    let mut ll = ll;
    if p.name == "hz" {
        // A hint: accepted, then capped to the range the server can honour.
        ll = ll.clamp(1, 500);
    }
    Ok(match fmt {
        NumFmt::MemPct if ll < 0 => format!("{}%", -ll),
        NumFmt::Mem | NumFmt::MemPct => (ll as u64).to_string(),
        NumFmt::Octal => format!("{:o}", ll),
        NumFmt::Int if unsigned => (ll as u64).to_string(),
        NumFmt::Int => ll.to_string(),
    })
}

fn enum_error(names: &[(&str, i32)]) -> String {
    let list: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
    format!(
        "argument(s) must be one of the following: {}",
        list.join(", ")
    )
}

/// configEnumGetValue: OR of the named values, None on an unknown name or no names.
fn enum_value(names: &[(&str, i32)], argv: &[String], bitflags: bool) -> Option<i32> {
    if argv.is_empty() || (!bitflags && argv.len() != 1) {
        return None;
    }
    let mut v = 0;
    for a in argv {
        let mut matched = false;
        for (n, val) in names {
            if n.eq_ignore_ascii_case(a) {
                v |= val;
                matched = true;
            }
        }
        if !matched {
            return None;
        }
    }
    Some(v)
}

/// configEnumGetName.
fn enum_name(names: &[(&str, i32)], value: i32, bitflags: bool) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut unmatched = value;
    for (n, val) in names {
        if value == *val {
            return n.to_string();
        }
        if bitflags && *val != 0 && *val == (unmatched & val) {
            out.push(n);
            unmatched &= !val;
        }
    }
    if out.is_empty() || unmatched != 0 {
        return "unknown".into();
    }
    out.join(" ")
}

const NOTIFY_KEYSPACE: u32 = 1 << 0;
const NOTIFY_KEYEVENT: u32 = 1 << 1;
const NOTIFY_KEY_MISS: u32 = 1 << 11;
const NOTIFY_NEW: u32 = 1 << 14;
/// Class flags in the order Redis prints them (`A` covers all but `m` and `n`).
const NOTIFY_CLASSES: &[(char, u32)] = &[
    ('g', 1 << 2),
    ('$', 1 << 3),
    ('l', 1 << 4),
    ('s', 1 << 5),
    ('h', 1 << 6),
    ('z', 1 << 7),
    ('x', 1 << 8),
    ('e', 1 << 9),
    ('t', 1 << 10),
    ('d', 1 << 13),
    ('n', NOTIFY_NEW),
];
pub const NOTIFY_ALL: u32 = (1 << 2)
    | (1 << 3)
    | (1 << 4)
    | (1 << 5)
    | (1 << 6)
    | (1 << 7)
    | (1 << 8)
    | (1 << 9)
    | (1 << 10)
    | (1 << 13);

/// `n` was given together with every class of `A` (see notify-keyspace-events' canonical form).
static NOTIFY_NEW_WITH_ALL: AtomicBool = AtomicBool::new(false);

/// keyspaceEventsStringToFlags; None on an unknown class character.
pub fn notify_flags_from_str(s: &str) -> Option<u32> {
    let mut f = 0;
    for c in s.chars() {
        f |= match c {
            'A' => NOTIFY_ALL,
            'K' => NOTIFY_KEYSPACE,
            'E' => NOTIFY_KEYEVENT,
            'm' => NOTIFY_KEY_MISS,
            c => NOTIFY_CLASSES.iter().find(|(ch, _)| *ch == c)?.1,
        };
    }
    Some(f)
}

/// keyspaceEventsFlagsToString.
pub fn notify_flags_to_str(f: u32) -> String {
    let mut s = String::new();
    if f & NOTIFY_ALL == NOTIFY_ALL {
        s.push('A');
        if f & NOTIFY_NEW != 0 {
            // Redis prints only 'A' for the class flags when all are set; `n` is outside A.
        }
    } else {
        for (c, bit) in NOTIFY_CLASSES {
            if f & bit != 0 {
                s.push(*c);
            }
        }
    }
    if f & NOTIFY_KEYSPACE != 0 {
        s.push('K');
    }
    if f & NOTIFY_KEYEVENT != 0 {
        s.push('E');
    }
    if f & NOTIFY_KEY_MISS != 0 {
        s.push('m');
    }
    s
}

/// Client classes of client-output-buffer-limit, in the order CONFIG GET prints them.
pub const OBUF_CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

/// (hard, soft, soft_seconds) per class from the canonical string.
pub fn parse_obuf_limits(canon: &str) -> [(u64, u64, i64); 3] {
    let mut out = [(0, 0, 0); 3];
    let parts: Vec<&str> = canon.split(' ').collect();
    for chunk in parts.chunks(4) {
        if let [class, h, s, t] = chunk {
            if let Some(i) = OBUF_CLASSES.iter().position(|c| c == class) {
                out[i] = (
                    h.parse().unwrap_or(0),
                    s.parse().unwrap_or(0),
                    t.parse().unwrap_or(0),
                );
            }
        }
    }
    out
}

fn obuf_canonical(v: &[(u64, u64, i64); 3]) -> String {
    OBUF_CLASSES
        .iter()
        .zip(v.iter())
        .map(|(c, (h, s, t))| format!("{c} {h} {s} {t}"))
        .collect::<Vec<_>>()
        .join(" ")
}

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
                obuf_limits: Default::default(),
            },
            file: RwLock::new(None),
            save_seen: AtomicBool::new(false),
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
                NOTIFY_NEW_WITH_ALL
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
            "aof-timestamp-enabled" => crate::aof::AOF_TIMESTAMPS.store(yes, Relaxed),
            "proto-max-bulk-len" => h.proto_max_bulk_len.store(n(), Relaxed),
            "client-query-buffer-limit" => h
                .client_query_buffer_limit
                .store(v.parse().unwrap_or(0), Relaxed),
            "maxclients" => h.maxclients.store(n() as u64, Relaxed),
            "timeout" => h.timeout.store(n() as u64, Relaxed),
            "slowlog-log-slower-than" => h.slowlog_slower_than.store(n(), Relaxed),
            "slowlog-max-len" => h.slowlog_max_len.store(n() as u64, Relaxed),
            "latency-monitor-threshold" => h.latency_threshold.store(n() as u64, Relaxed),
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
                if f & NOTIFY_ALL == NOTIFY_ALL && NOTIFY_NEW_WITH_ALL.load(Relaxed) {
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
            "lazyfree-lazy-expire" => {
                h.lazyfree_lazy_expire.store(yes, Relaxed);
                crate::propagate::LAZY_EXPIRE.store(yes, Relaxed);
            }
            "lazyfree-lazy-server-del" => h.lazyfree_lazy_server_del.store(yes, Relaxed),
            _ => {
                tern_engine::limits::set(name, n());
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Loading redis.conf text

    /// Parse redis.conf text: one directive per line, `#` comments, quoted arguments,
    /// `include path`. Errors are Redis's FATAL CONFIG FILE ERROR text naming the line.
    /// `origin` "(command line)" marks the `--name value` options, which Redis numbers after the
    /// config file's lines.
    pub fn load_text(&self, text: &str, origin: &Path, depth: usize) -> Result<(), String> {
        let is_cmdline = origin == Path::new("(command line)");
        let offset = if is_cmdline && depth == 0 {
            // Redis parses `file + "\n" + options`: options start after the file's last line.
            match self.file_lines.load(Relaxed) {
                0 => 1,
                n => n,
            }
        } else {
            0
        };
        if depth == 0 && !is_cmdline {
            self.file_lines
                .store(text.matches('\n').count() + 1, Relaxed);
        }
        for (i, raw) in text.split('\n').enumerate() {
            let line = raw.trim_matches([' ', '\t', '\r', '\n']);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |msg: &str| {
                format!(
                    "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}",
                    crate::REDIS_VERSION,
                    offset + i + 1,
                    line,
                    msg
                )
            };
            let Some(mut argv) = sdssplitargs(line) else {
                return Err(bad("Unbalanced quotes in configuration line"));
            };
            if argv.is_empty() {
                continue;
            }
            argv[0] = argv[0].to_ascii_lowercase();
            if let Some(p) = find(&argv[0]) {
                if !p.multi_arg() && argv.len() != 2 {
                    return Err(bad("wrong number of arguments"));
                }
                let args: Vec<String> = if p.multi_arg() && argv.len() == 2 && !argv[1].is_empty() {
                    // `--save "900 1"` style: one argument holding several.
                    sdssplitargs(&argv[1]).unwrap_or_default()
                } else {
                    argv[1..].to_vec()
                };
                let cur = self.values.read().get(p.name).cloned().unwrap_or_default();
                let v = self
                    .canonical_args(p, &args, Origin::File, &cur)
                    .map_err(|e| bad(&e))?;
                self.store(p.name, v);
                continue;
            }
            let argc = argv.len();
            match argv[0].as_str() {
                "list-max-ziplist-entries"
                | "list-max-ziplist-value"
                | "lua-replicate-commands"
                    if argc == 2 => {}
                "include" if argc == 2 => {
                    if depth > 16 {
                        return Err(bad("Bad include directive"));
                    }
                    let path = Path::new(&argv[1]);
                    let text = match std::fs::read_to_string(path) {
                        Ok(t) => t,
                        Err(e) => {
                            return Err(format!(
                                "Fatal error, can't open config file '{}': {}",
                                argv[1],
                                strerror(&e)
                            ))
                        }
                    };
                    self.load_text(&text, path, depth + 1)?;
                }
                "rename-command" if argc == 3 => {
                    let exists =
                        crate::table::commands().any(|c| c.name.eq_ignore_ascii_case(&argv[1]));
                    if !exists {
                        return Err(bad("No such command in rename-command"));
                    }
                    self.renames
                        .lock()
                        .push((argv[1].to_ascii_lowercase(), argv[2].clone()));
                }
                "user" if argc >= 2 => {
                    let declared = |j: usize, msg: &str| {
                        bad(&format!("Error in user declaration '{}': {msg}", argv[j]))
                    };
                    if self.users.lock().iter().any(|u| u[0] == argv[1]) {
                        return Err(declared(
                            1,
                            crate::acl::rules::SetError::Duplicate.message(),
                        ));
                    }
                    if let Err((j, msg)) = crate::acl::validate_user_line(&argv) {
                        return Err(declared(j.min(argc - 1), msg));
                    }
                    self.users.lock().push(argv[1..].to_vec());
                }
                "loadmodule" if argc >= 2 => self.loadmodules.lock().push(argv[1..].to_vec()),
                name if name.contains('.') => {
                    if argc < 2 {
                        return Err(bad("Module config specified without value"));
                    }
                    self.module_configs
                        .lock()
                        .push((argv[0].clone(), argv[1..].join(" ")));
                }
                "sentinel" => {
                    if argc != 1 {
                        return Err(bad("sentinel directive while not in sentinel mode"));
                    }
                }
                _ => return Err(bad("Bad directive or wrong number of arguments")),
            }
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // CONFIG REWRITE

    /// Rewrite the config file the server started with, keeping comments, unknown directives and
    /// layout as Redis does. `force_all` writes every parameter (DEBUG CONFIG-REWRITE-FORCE-ALL).
    pub fn rewrite(&self, force_all: bool) -> Result<(), RewriteError> {
        let Some(path) = self.file.read().clone() else {
            return Err(RewriteError::NoFile);
        };
        let content = self
            .rewrite_content(&path, force_all)
            .map_err(RewriteError::Io)?;
        overwrite_file(&path, &content).map_err(RewriteError::Io)
    }

    /// The new file content CONFIG REWRITE would write for `path`.
    pub fn rewrite_content(&self, path: &Path, force_all: bool) -> std::io::Result<String> {
        let old = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        let mut st = RewriteState::read(&old);
        st.force_all = force_all;
        let vals = self.values.read().clone();
        for p in PARAMS {
            let v = if p.name == "dir" {
                cwd()
            } else {
                vals.get(p.name).cloned().unwrap_or_default()
            };
            rewrite_param(&mut st, p, &v);
        }
        // The ACL users, unless they live in an ACL file (then `user` lines are dropped).
        if vals.get("aclfile").is_none_or(|f| f.is_empty()) {
            if let Some(users) = self.users_rewrite.read().as_ref() {
                for line in users() {
                    st.line("user", line, true);
                }
            }
        }
        st.mark("user");
        // No modules are loaded: their lines go, as Redis drops modules it did not load.
        st.mark("loadmodule");
        st.remove_orphaned();
        Ok(st.content())
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

#[derive(Debug)]
pub enum RewriteError {
    NoFile,
    Io(std::io::Error),
}

const REWRITE_SIGNATURE: &str = "# Generated by CONFIG REWRITE";

struct RewriteState {
    lines: Vec<String>,
    option_lines: HashMap<String, VecDeque<usize>>,
    rewritten: HashSet<String>,
    needs_signature: bool,
    force_all: bool,
}

impl RewriteState {
    fn read(old: &str) -> RewriteState {
        let mut st = RewriteState {
            lines: Vec::new(),
            option_lines: HashMap::new(),
            rewritten: HashSet::new(),
            needs_signature: true,
            force_all: false,
        };
        if old.is_empty() {
            return st;
        }
        for raw in old.split('\n') {
            let line = raw.trim_matches(['\r', '\n', '\t', ' ']).to_string();
            if line.is_empty() || line.starts_with('#') {
                if line == REWRITE_SIGNATURE {
                    st.needs_signature = false;
                }
                st.lines.push(line);
                continue;
            }
            let argv = sdssplitargs(&line);
            let known = argv.as_ref().and_then(|a| a.first()).map(|name| {
                find(name).map(|p| p.name.to_string()).or_else(|| {
                    let l = name.to_ascii_lowercase();
                    FILE_ONLY_DIRECTIVES.contains(&l.as_str()).then_some(l)
                })
            });
            match known.flatten() {
                Some(option) => {
                    let idx = st.lines.len();
                    st.lines.push(line);
                    st.option_lines.entry(option).or_default().push_back(idx);
                }
                None => st.lines.push(format!("# ??? {line}")),
            }
        }
        st
    }

    fn mark(&mut self, option: &str) {
        self.rewritten.insert(option.to_string());
    }

    fn line(&mut self, option: &str, line: String, force: bool) {
        self.mark(option);
        let slot = self
            .option_lines
            .get_mut(option)
            .and_then(|l| l.pop_front());
        match slot {
            Some(idx) => self.lines[idx] = line,
            None if force || self.force_all => {
                if self.needs_signature {
                    self.lines.push(REWRITE_SIGNATURE.to_string());
                    self.needs_signature = false;
                }
                self.lines.push(line);
            }
            None => {}
        }
    }

    fn remove_orphaned(&mut self) {
        for (option, idxs) in self.option_lines.iter_mut() {
            if !self.rewritten.contains(option) {
                continue;
            }
            for idx in idxs.drain(..) {
                self.lines[idx].clear();
            }
        }
    }

    fn content(&self) -> String {
        let mut out = String::new();
        let mut was_empty = false;
        for l in &self.lines {
            if l.is_empty() {
                if was_empty {
                    continue;
                }
                was_empty = true;
            } else {
                was_empty = false;
            }
            out.push_str(l);
            out.push('\n');
        }
        out
    }
}

fn rewrite_param(st: &mut RewriteState, p: &Param, v: &str) {
    let name = p.name;
    let d = p.default;
    match p.kind {
        Kind::Bool | Kind::Enum(_) | Kind::Flags(_) => {
            st.line(name, format!("{name} {v}"), v != d);
        }
        Kind::Num { fmt, .. } => {
            let line = match fmt {
                NumFmt::MemPct if v.ends_with('%') => format!("{name} {v}"),
                NumFmt::Mem | NumFmt::MemPct => {
                    format!("{name} {}", fmt_memory(v.parse().unwrap_or(0)))
                }
                _ => format!("{name} {v}"),
            };
            st.line(name, line, v != d);
        }
        Kind::Str { empty_is_null, .. } => {
            if empty_is_null && v.is_empty() {
                st.mark(name);
                return;
            }
            st.line(name, format!("{name} {}", repr(v)), v != d);
        }
        Kind::Special => match name {
            "dir" => st.line(name, format!("dir {}", repr(v)), true),
            "save" => {
                if v.is_empty() {
                    st.line(name, "save \"\"".into(), true);
                } else {
                    let parts: Vec<&str> = v.split(' ').collect();
                    for pair in parts.chunks(2) {
                        st.line(name, format!("save {}", pair.join(" ")), true);
                    }
                }
                st.mark(name);
            }
            "client-output-buffer-limit" => {
                let cur = parse_obuf_limits(v);
                let def = parse_obuf_limits(d);
                for (k, class) in OBUF_CLASSES.iter().enumerate() {
                    let (h, s, t) = cur[k];
                    let class = if *class == "slave" { "replica" } else { class };
                    st.line(
                        name,
                        format!("{name} {class} {} {} {t}", fmt_memory(h), fmt_memory(s)),
                        cur[k] != def[k],
                    );
                }
            }
            "oom-score-adj-values" => st.line(name, format!("{name} {v}"), v != d),
            "notify-keyspace-events" => st.line(name, format!("{name} {}", repr(v)), !v.is_empty()),
            "bind" => {
                if v == d {
                    st.mark(name);
                } else if v.is_empty() {
                    st.line(name, "bind \"\"".into(), true);
                } else {
                    st.line(name, format!("bind {v}"), true);
                }
            }
            "replicaof" => {
                if v.is_empty() {
                    st.mark(name);
                } else {
                    st.line(name, format!("{name} {v}"), true);
                }
            }
            "latency-tracking-info-percentiles" => {
                let arg = if v.is_empty() { "\"\"" } else { v };
                st.line(name, format!("{name} {arg}"), true);
            }
            _ => st.line(name, format!("{name} {v}"), v != d),
        },
    }
}

/// Replace `path` atomically: write a temporary file beside it, fsync, chmod, rename.
fn overwrite_file(path: &Path, content: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let tmp = PathBuf::from(format!(
        "{}.{:06}",
        path.display(),
        std::process::id() % 1_000_000
    ));
    let res = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(content.as_bytes())?;
        f.sync_all()?;
        // SAFETY: umask only swaps the process's file-creation mask.
        let mask = unsafe {
            let m = libc::umask(0);
            libc::umask(m);
            m
        };
        f.set_permissions(std::fs::Permissions::from_mode(0o644 & !(mask as u32)))?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// Redis's command-line convention: `[file] --name v1 v2 "--name2 v" ...` becomes config-file
/// text appended after the file (`--save` with no value means `save ""`). Returns the options
/// text; the caller parses it with `load_text(.., Path::new("(command line)"), 0)`.
pub fn options_from_args(args: &[String]) -> String {
    let mut options = String::new();
    let mut handled_last = true;
    let n = args.len();
    for (j, a) in args.iter().enumerate() {
        if a == "-" && (j == 0 || j == n - 1) {
            continue;
        }
        if handled_last && a.starts_with("--") {
            if !options.is_empty() {
                options.push('\n');
            }
            options.push_str(&a[2..]);
            options.push(' ');
            let parts = sdssplitargs(a).map(|v| v.len()).unwrap_or(0);
            if parts == 1 {
                handled_last = false;
                let next_is_opt = j + 1 < n && args[j + 1].starts_with("--");
                if a.eq_ignore_ascii_case("--save") && (next_is_opt || j == n - 1) {
                    options.push_str("\"\"");
                    handled_last = true;
                } else if a.eq_ignore_ascii_case("--sentinel") && next_is_opt {
                    handled_last = true;
                }
            } else {
                handled_last = true;
            }
        } else {
            options.push_str(&repr(a));
            options.push(' ');
            handled_last = true;
        }
    }
    options
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

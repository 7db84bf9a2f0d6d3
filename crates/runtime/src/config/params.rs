//! The parameter table: every Redis 7.2 parameter (names, aliases, types, defaults, bounds,
//! flags) plus tern's own, and the validators Redis runs on their values.

use super::pflags::*;

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

/// tern's `io-backend`: how client sockets are served.
const IO_BACKENDS: &[(&str, i32)] = &[("auto", 0), ("io_uring", 1), ("epoll", 2)];
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
    // tern's own: per-database policies (`db_overrides`), `<db> <setting>` pairs. Hidden from
    // CONFIG GET patterns like tern's other own parameters; an exact CONFIG GET lists them.
    x("db-maxmemory", None, MULTI_ARG | HIDDEN, ""),
    x("db-maxmemory-policy", None, MULTI_ARG | HIDDEN, ""),
    x("db-persistence", None, MULTI_ARG | HIDDEN, ""),
    x("db-appendfsync", None, MULTI_ARG | HIDDEN, ""),
    // tern's own: worker threads (0 = one per core). Hidden from CONFIG GET patterns so tools
    // that walk `CONFIG GET *` see exactly Redis's parameters; an exact `CONFIG GET threads` works.
    i("threads", IMMUTABLE | HIDDEN, 0, 1024, "0"),
    // tern's own: client sockets on epoll, on io_uring, or io_uring where the kernel allows it
    // (`auto`). Startup-only, hidden from CONFIG GET * like `threads`.
    e("io-backend", IMMUTABLE | HIDDEN, IO_BACKENDS, "epoll"),
    // tern: Prometheus /metrics over HTTP on this port (0: off); hidden from CONFIG GET *,
    // which lists Redis's own set.
    i("metrics-port", HIDDEN, 0, 65535, "0"),
];

/// Directives the config file accepts besides the parameters (kept by CONFIG REWRITE).
pub(super) const FILE_ONLY_DIRECTIVES: &[&str] = &[
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

//! Per-database policies against the real binary: `db-maxmemory`, `db-maxmemory-policy`,
//! `db-persistence` and `db-appendfsync` from a config file, CONFIG SET/GET/REWRITE and their
//! errors; a cache database evicted at its quota beside a noeviction one refused at its own;
//! an excluded database absent from the AOF and RDB files (kill -9, SAVE, restart); a
//! database's replies not waiting for the fsync another one needs; INFO's per-database memory.
use crate::common::{free_port, info_u64, info_value, InfoText, Raw, Server};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

type R = Raw<false>;

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tern-dbpolicy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Start tern-server with config file `conf` (first argument, as redis-server takes it).
fn tern_with_file(conf: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tern-server"));
    cmd.arg(conf)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(extra)
        .envs(env.iter().copied());
    Server::spawn_cmd(cmd, port)
}

/// Wait until the server answers PING with its dataset loaded.
fn ready(s: &Server) -> R {
    let mut c = R::new(s.port);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = c.q("PING");
        if r == "PONG" {
            return c;
        }
        assert!(Instant::now() < deadline, "not ready: {r}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn config_file_set_get_rewrite_round_trip() {
    let dir = fresh_dir("config");
    let conf = dir.join("tern.conf");
    // A plain redis.conf's lines keep their meaning beside the per-database ones.
    std::fs::write(
        &conf,
        "save \"\"\n\
         maxmemory-policy allkeys-lfu\n\
         appendfsync everysec\n\
         db-maxmemory 3 2gb 1 100mb\n\
         db-maxmemory-policy 1 allkeys-lru\n\
         db-persistence 1 no\n\
         db-appendfsync 1 no 2 always\n",
    )
    .unwrap();
    let s = tern_with_file(&conf, &["--dir", dir.to_str().unwrap()], &[]);
    let mut c = ready(&s);
    assert_eq!(get(&mut c, "maxmemory-policy"), "allkeys-lfu");
    assert_eq!(get(&mut c, "appendfsync"), "everysec");
    assert_eq!(get(&mut c, "db-maxmemory"), "1 104857600 3 2147483648");
    assert_eq!(get(&mut c, "db-maxmemory-policy"), "1 allkeys-lru");
    assert_eq!(get(&mut c, "db-persistence"), "1 no");
    assert_eq!(get(&mut c, "db-appendfsync"), "1 no 2 always");
    // CONFIG SET merges per database; 0 / default / yes drop a database's override.
    assert_eq!(set(&mut c, "db-maxmemory", "3 0 2 1mb"), "OK");
    assert_eq!(get(&mut c, "db-maxmemory"), "1 104857600 2 1048576");
    assert_eq!(
        set(&mut c, "db-maxmemory-policy", "2 volatile-ttl 1 default"),
        "OK"
    );
    assert_eq!(get(&mut c, "db-maxmemory-policy"), "2 volatile-ttl");
    assert_eq!(set(&mut c, "db-persistence", "1 yes 4 no"), "OK");
    assert_eq!(get(&mut c, "db-persistence"), "4 no");
    // Errors, Redis-style, and nothing changes.
    let cases = [
        (
            "CONFIG SET db-maxmemory \"16 1mb\"",
            "!ERR CONFIG SET failed (possibly related to argument 'db-maxmemory') - Invalid argument '16' for db-maxmemory: the database index must be between 0 and 15",
        ),
        (
            "CONFIG SET db-maxmemory \"x 1mb\"",
            "!ERR CONFIG SET failed (possibly related to argument 'db-maxmemory') - Invalid argument 'x' for db-maxmemory: the database index must be between 0 and 15",
        ),
        (
            "CONFIG SET db-maxmemory \"1 lots\"",
            "!ERR CONFIG SET failed (possibly related to argument 'db-maxmemory') - Invalid argument 'lots' for db-maxmemory of database 1: argument must be a memory value (0: no quota)",
        ),
        (
            "CONFIG SET db-maxmemory-policy \"1 lru\"",
            "!ERR CONFIG SET failed (possibly related to argument 'db-maxmemory-policy') - Invalid argument 'lru' for db-maxmemory-policy of database 1: must be one of volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction, default",
        ),
        (
            "CONFIG SET db-persistence \"1 maybe\"",
            "!ERR CONFIG SET failed (possibly related to argument 'db-persistence') - Invalid argument 'maybe' for db-persistence of database 1: argument must be 'yes' or 'no'",
        ),
        (
            "CONFIG SET db-appendfsync 1",
            "!ERR CONFIG SET failed (possibly related to argument 'db-appendfsync') - wrong number of arguments, db-appendfsync takes <db> <value> pairs",
        ),
    ];
    for (cmd, want) in cases {
        // "CONFIG SET name \"value\"": the value is one argument.
        let (head, value) = cmd.split_once(" \"").unwrap_or((cmd, ""));
        let mut args: Vec<&str> = head.split(' ').collect();
        let value = value.trim_end_matches('"');
        if !value.is_empty() {
            args.push(value);
        }
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        assert_eq!(c.qa(&args), want, "{cmd}");
    }
    assert_eq!(get(&mut c, "db-maxmemory"), "1 104857600 2 1048576");
    // CONFIG REWRITE writes the overrides back; a restart from the file has them.
    assert_eq!(c.q("CONFIG REWRITE"), "OK");
    let text = std::fs::read_to_string(&conf).unwrap();
    for line in [
        "db-maxmemory 1 104857600 2 1048576",
        "db-maxmemory-policy 2 volatile-ttl",
        "db-persistence 4 no",
        "db-appendfsync 1 no 2 always",
        "maxmemory-policy allkeys-lfu",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
    }
    drop(c);
    drop(s);
    let s = tern_with_file(&conf, &[], &[]);
    let mut c = ready(&s);
    assert_eq!(get(&mut c, "db-maxmemory"), "1 104857600 2 1048576");
    assert_eq!(get(&mut c, "db-persistence"), "4 no");
    assert_eq!(get(&mut c, "db-appendfsync"), "1 no 2 always");
    // An empty value clears every override.
    assert_eq!(set(&mut c, "db-appendfsync", ""), "OK");
    assert_eq!(get(&mut c, "db-appendfsync"), "");
    // A config file with an out-of-range database does not start.
    let bad = dir.join("bad.conf");
    std::fs::write(&bad, "db-maxmemory 1 2mb 99 3mb\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tern-server"))
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Invalid argument '99' for db-maxmemory"),
        "{text}"
    );
}

/// CONFIG SET of one parameter to `value` (one argument, spaces and all).
fn set(c: &mut R, name: &str, value: &str) -> String {
    c.qa(&[b"CONFIG", b"SET", name.as_bytes(), value.as_bytes()])
}

/// CONFIG GET of one parameter: its value.
fn get(c: &mut R, name: &str) -> String {
    let r = c.qa(&[b"CONFIG", b"GET", name.as_bytes()]);
    let prefix = format!("[{name},");
    r.strip_prefix(&prefix)
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or_else(|| panic!("CONFIG GET {name}: {r}"))
        .to_string()
}

fn dbsize(c: &mut R, db: usize) -> u64 {
    assert_eq!(c.q(&format!("SELECT {db}")), "OK");
    c.q("DBSIZE").trim_start_matches(':').parse().unwrap()
}

#[test]
fn only_the_cache_db_is_evicted_and_the_noeviction_db_is_refused_at_its_quota() {
    const QUOTA: u64 = 1 << 20;
    let s = Server::tern(&[
        "--db-maxmemory",
        "1 1mb 2 1mb",
        "--db-maxmemory-policy",
        "1 allkeys-lru",
    ]);
    let mut c = R::new(s.port);
    let value = "v".repeat(1000);
    // db 1, the cache: 4 MB of writes all succeed; it stays at its quota by evicting.
    assert_eq!(c.q("SELECT 1"), "OK");
    for i in 0..4000 {
        assert_eq!(c.q(&format!("SET cache:{i} {value}")), "OK");
    }
    let evicted = info_u64(&mut c, "stats", "evicted_keys");
    assert!(evicted > 2000, "evicted {evicted}");
    let cache_keys = dbsize(&mut c, 1);
    assert_eq!(cache_keys + evicted, 4000);
    let used = info_u64(&mut c, "memory", "db1_used_memory");
    assert!(used <= QUOTA + 2000, "db1 uses {used}");
    // db 2, durable (noeviction): writes succeed until its quota, then OOM; nothing of it is
    // evicted, neither by its own quota nor by db 1's.
    assert_eq!(c.q("SELECT 2"), "OK");
    let mut stored = 0;
    let mut refused = None;
    for i in 0..4000 {
        let r = c.q(&format!("SET durable:{i} {value}"));
        if r == "OK" {
            stored += 1;
        } else {
            refused = Some(r);
            break;
        }
    }
    assert_eq!(
        refused.as_deref(),
        Some("!OOM command not allowed when used memory > 'maxmemory'.")
    );
    assert!((800..1100).contains(&stored), "stored {stored} before OOM");
    assert_eq!(dbsize(&mut c, 2), stored);
    assert_eq!(info_u64(&mut c, "stats", "evicted_keys"), evicted);
    // Reads and deletes still run in db 2, and the cache goes on taking writes meanwhile.
    assert_eq!(c.q("SELECT 2"), "OK");
    assert_eq!(c.q("GET durable:0"), value);
    assert_eq!(c.q("SELECT 1"), "OK");
    for i in 4000..4500 {
        assert_eq!(c.q(&format!("SET cache:{i} {value}")), "OK");
    }
    assert_eq!(dbsize(&mut c, 2), stored);
    // db 0 has no quota: unaffected.
    assert_eq!(c.q("SELECT 0"), "OK");
    for i in 0..2000 {
        assert_eq!(c.q(&format!("SET free:{i} {value}")), "OK");
    }
    assert_eq!(dbsize(&mut c, 0), 2000);
    // Freeing room in db 2 lets its writes in again.
    assert_eq!(c.q("SELECT 2"), "OK");
    for i in 0..50 {
        assert_eq!(c.q(&format!("DEL durable:{i}")), ":1");
    }
    assert_eq!(c.q("SET again x"), "OK");
    // Raising its quota at run time, too.
    assert_eq!(set(&mut c, "db-maxmemory", "2 8mb"), "OK");
    for i in 0..500 {
        assert_eq!(c.q(&format!("SET more:{i} {value}")), "OK");
    }
}

/// The files of `dir`'s AOF directory, concatenated, and every file's name.
fn aof_bytes(dir: &Path) -> (Vec<u8>, Vec<String>) {
    let mut all = Vec::new();
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir.join("appendonlydir")).unwrap() {
        let e = e.unwrap();
        names.push(e.file_name().to_string_lossy().to_string());
        all.extend(std::fs::read(e.path()).unwrap());
    }
    (all, names)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// redis-check-aof of Redis 7.2.6 (built in ~/redis-7.2.6), if present.
fn redis_check(tool: &str, file: &Path) -> Option<String> {
    let home = std::env::var("HOME").ok()?;
    let bin = Path::new(&home).join("redis-7.2.6/src").join(tool);
    if !bin.exists() {
        return None;
    }
    let out = Command::new(bin).arg(file).output().ok()?;
    assert!(out.status.success(), "{tool} {}: {out:?}", file.display());
    Some(String::from_utf8_lossy(&out.stdout).to_string())
}

#[test]
fn kill9_keeps_the_durable_db_and_leaves_the_cache_db_out_of_the_files() {
    let dir = fresh_dir("kill9");
    let d = dir.to_str().unwrap();
    let opts = [
        "--dir",
        d,
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--db-persistence",
        "1 no",
    ];
    let s = Server::tern(&opts);
    let mut c = ready(&s);
    // Writes to both, interleaved, some inside MULTI spanning both databases.
    for i in 0..200 {
        assert_eq!(c.q("SELECT 0"), "OK");
        assert_eq!(c.q(&format!("SET d:{i} {i}")), "OK");
        assert_eq!(c.q("SELECT 1"), "OK");
        assert_eq!(c.q(&format!("SET c:{i} {i}")), "OK");
    }
    assert_eq!(c.q("MULTI"), "OK");
    for cmd in [
        "SELECT 0",
        "RPUSH d:list a b",
        "SELECT 1",
        "RPUSH c:list a b",
    ] {
        assert_eq!(c.q(cmd), "QUEUED");
    }
    assert_eq!(c.q("EXEC"), "[OK,:2,OK,:2]");
    // A rewrite halfway: its base must leave db 1 out too.
    assert_eq!(
        c.q("BGREWRITEAOF"),
        "Background append only file rewriting started"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while info_u64(&mut c, "persistence", "aof_rewrite_in_progress") == 1
        || info_u64(&mut c, "persistence", "aof_rewrite_scheduled") == 1
    {
        assert!(Instant::now() < deadline, "rewrite did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    for i in 200..300 {
        assert_eq!(c.q("SELECT 0"), "OK");
        assert_eq!(c.q(&format!("SET d:{i} {i}")), "OK");
        assert_eq!(c.q("SELECT 1"), "OK");
        assert_eq!(c.q(&format!("SET c:{i} {i}")), "OK");
    }
    s.signal(libc::SIGKILL);
    drop(c);
    drop(s);
    let (bytes, names) = aof_bytes(&dir);
    assert!(
        contains(&bytes, b"d:299"),
        "db 0's last write is in the AOF"
    );
    assert!(
        !contains(&bytes, b"c:"),
        "a db 1 key reached the AOF files {names:?}"
    );
    assert!(
        !contains(&bytes, b"SELECT\r\n$1\r\n1"),
        "db 1 selected in the AOF"
    );
    if let Some(out) = redis_check(
        "redis-check-aof",
        &dir.join("appendonlydir/appendonly.aof.manifest"),
    ) {
        assert!(out.contains("valid"), "{out}");
    }
    let s = Server::tern(&opts);
    let mut c = ready(&s);
    assert_eq!(dbsize(&mut c, 0), 301);
    for i in [0, 150, 299] {
        assert_eq!(c.q(&format!("GET d:{i}")), i.to_string());
    }
    assert_eq!(c.q("LRANGE d:list 0 -1"), "[a,b]");
    assert_eq!(dbsize(&mut c, 1), 0);
}

#[test]
fn save_and_restart_leave_the_excluded_db_out() {
    let dir = fresh_dir("save");
    let d = dir.to_str().unwrap();
    let opts = ["--dir", d, "--db-persistence", "1 no"];
    let s = Server::tern(&opts);
    let mut c = ready(&s);
    for i in 0..100 {
        assert_eq!(c.q("SELECT 0"), "OK");
        assert_eq!(c.q(&format!("SET d:{i} {i}")), "OK");
        assert_eq!(c.q("SELECT 1"), "OK");
        assert_eq!(c.q(&format!("SADD c:{i} {i}")), ":1");
        assert_eq!(c.q("SELECT 2"), "OK");
        assert_eq!(c.q(&format!("HSET h:{i} f {i}")), ":1");
    }
    assert_eq!(c.q("SAVE"), "OK");
    let rdb = std::fs::read(dir.join("dump.rdb")).unwrap();
    assert!(contains(&rdb, b"d:99") && contains(&rdb, b"h:99"));
    assert!(!contains(&rdb, b"c:"), "a db 1 key is in the RDB");
    if let Some(out) = redis_check("redis-check-rdb", &dir.join("dump.rdb")) {
        assert!(out.contains("200 keys read"), "{out}");
    }
    // BGSAVE too.
    assert_eq!(c.q("SELECT 1"), "OK");
    assert_eq!(c.q("SET c:late x"), "OK");
    assert_eq!(c.q("BGSAVE"), "Background saving started");
    let deadline = Instant::now() + Duration::from_secs(10);
    while info_u64(&mut c, "persistence", "rdb_bgsave_in_progress") == 1 {
        assert!(Instant::now() < deadline, "bgsave did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    let rdb = std::fs::read(dir.join("dump.rdb")).unwrap();
    assert!(!contains(&rdb, b"c:"), "a db 1 key is in the BGSAVE's RDB");
    drop(c);
    drop(s);
    let s = Server::tern(&opts);
    let mut c = ready(&s);
    assert_eq!(dbsize(&mut c, 0), 100);
    assert_eq!(dbsize(&mut c, 1), 0);
    assert_eq!(dbsize(&mut c, 2), 100);
    assert_eq!(c.q("HGET h:7 f"), "7");
}

/// Under a global `appendfsync always` with every fsync 300 ms slow, a write to a database
/// with `db-appendfsync no` is answered without waiting for an fsync, while one to the
/// default database still waits for its own.
#[test]
fn a_db_with_its_own_appendfsync_does_not_wait_for_the_fsync() {
    const DELAY: Duration = Duration::from_millis(300);
    let bin = Path::new(env!("CARGO_BIN_EXE_tern-server"));
    let shim = bin.with_file_name("libtern_fsync_delay.so");
    assert!(
        shim.exists(),
        "{} missing: cargo build --release -p tern-fsync-delay",
        shim.display()
    );
    let dir = fresh_dir("fsync");
    let conf = dir.join("tern.conf");
    std::fs::write(
        &conf,
        "save \"\"\nappendonly yes\nappendfsync always\ndb-appendfsync 1 no\n",
    )
    .unwrap();
    let delay = DELAY.as_micros().to_string();
    let s = tern_with_file(
        &conf,
        &["--dir", dir.to_str().unwrap()],
        &[
            ("LD_PRELOAD", shim.to_str().unwrap()),
            ("FSYNC_DELAY_US", &delay),
        ],
    );
    let mut c = ready(&s);
    let timed = |c: &mut R, cmd: &str| {
        let t = Instant::now();
        assert_eq!(c.q(cmd), "OK");
        t.elapsed()
    };
    for round in 0..3 {
        assert_eq!(c.q("SELECT 0"), "OK");
        let durable = timed(&mut c, &format!("SET d{round} 1"));
        assert!(
            durable >= DELAY,
            "round {round}: db 0 answered after {durable:?}"
        );
        assert_eq!(c.q("SELECT 1"), "OK");
        let quick = timed(&mut c, &format!("SET q{round} 1"));
        assert!(
            quick < DELAY / 2,
            "round {round}: db 1 answered after {quick:?}"
        );
        // Its write still reaches the file (written, not fsynced) before the reply.
        let (bytes, _) = aof_bytes(&dir);
        assert!(contains(&bytes, format!("q{round}").as_bytes()));
    }
    // CONFIG SET turns it back: db 1 waits like db 0.
    assert_eq!(set(&mut c, "db-appendfsync", "1 default"), "OK");
    assert_eq!(c.q("SELECT 1"), "OK");
    let now_durable = timed(&mut c, "SET q-after 1");
    assert!(now_durable >= DELAY, "db 1 answered after {now_durable:?}");
}

#[test]
fn info_shows_per_db_memory() {
    let s = Server::tern(&[
        "--db-maxmemory",
        "4 64mb",
        "--db-maxmemory-policy",
        "4 allkeys-lfu",
    ]);
    let mut c = R::new(s.port);
    assert_eq!(c.q("SELECT 3"), "OK");
    let value = "x".repeat(500);
    for i in 0..1000 {
        assert_eq!(c.q(&format!("SET k{i} {value}")), "OK");
    }
    for i in 0..100 {
        assert_eq!(c.q(&format!("RPUSH list {value}")), format!(":{}", i + 1));
    }
    let keyspace = c.info_text("keyspace");
    let line = info_value(&keyspace, "db3").expect("db3 line");
    let used: u64 = line
        .split(',')
        .find_map(|kv| kv.strip_prefix("used_memory="))
        .expect("used_memory in the keyspace line")
        .parse()
        .unwrap();
    assert!(line.starts_with("keys=1001,expires=0,avg_ttl=0,"), "{line}");
    // 1100 values of 500 bytes at least; not wildly more (an estimate, not the allocator's).
    assert!((550_000..1_000_000).contains(&used), "db3 used {used}");
    assert_eq!(info_u64(&mut c, "memory", "db3_used_memory"), used);
    assert_eq!(info_u64(&mut c, "memory", "db3_maxmemory"), 0);
    let memory = c.info_text("memory");
    assert_eq!(
        info_value(&memory, "db3_maxmemory_policy").unwrap(),
        "noeviction"
    );
    // A database with a quota is listed even while empty, with its own policy.
    assert_eq!(info_value(&memory, "db4_used_memory").unwrap(), "0");
    assert_eq!(info_value(&memory, "db4_maxmemory").unwrap(), "67108864");
    assert_eq!(
        info_value(&memory, "db4_maxmemory_policy").unwrap(),
        "allkeys-lfu"
    );
    assert!(info_value(&memory, "db5_used_memory").is_none());
    // Deleting every key brings the count back to exactly nothing.
    assert_eq!(c.q("DEL list"), ":1");
    for i in 0..1000 {
        assert_eq!(c.q(&format!("DEL k{i}")), ":1");
    }
    assert!(info_value(&c.info_text("memory"), "db3_used_memory").is_none());
    assert_eq!(c.q("SET one 1"), "OK");
    let one = info_u64(&mut c, "memory", "db3_used_memory");
    assert!(one > 0 && one < 200, "one key: {one}");
    assert_eq!(c.q("FLUSHDB"), "OK");
    assert!(info_value(&c.info_text("keyspace"), "db3").is_none());
}

/// Turning a database's persistence off (or on) at run time with the AOF on rewrites it, so
/// its files describe the databases as they are now persisted.
#[test]
fn config_set_db_persistence_rewrites_the_aof() {
    let dir = fresh_dir("set-persistence");
    let d = dir.to_str().unwrap();
    let s = Server::tern(&["--dir", d, "--appendonly", "yes"]);
    let mut c = ready(&s);
    for i in 0..50 {
        assert_eq!(c.q("SELECT 0"), "OK");
        assert_eq!(c.q(&format!("SET d:{i} {i}")), "OK");
        assert_eq!(c.q("SELECT 1"), "OK");
        assert_eq!(c.q(&format!("SET c:{i} {i}")), "OK");
    }
    assert!(contains(&aof_bytes(&dir).0, b"c:49"));
    let rewrites = info_u64(&mut c, "persistence", "aof_rewrites");
    assert_eq!(set(&mut c, "db-persistence", "1 no"), "OK");
    let deadline = Instant::now() + Duration::from_secs(10);
    while info_u64(&mut c, "persistence", "aof_rewrites") == rewrites
        || info_u64(&mut c, "persistence", "aof_rewrite_in_progress") == 1
    {
        assert!(
            Instant::now() < deadline,
            "no rewrite after CONFIG SET db-persistence"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.q("SET c:after x"), "OK");
    let (bytes, names) = aof_bytes(&dir);
    assert!(!contains(&bytes, b"c:"), "db 1 keys left in {names:?}");
    assert!(contains(&bytes, b"d:49"));
    drop(c);
    drop(s);
    let s = Server::tern(&[
        "--dir",
        d,
        "--appendonly",
        "yes",
        "--db-persistence",
        "1 no",
    ]);
    let mut c = ready(&s);
    assert_eq!(dbsize(&mut c, 0), 50);
    assert_eq!(dbsize(&mut c, 1), 0);
}

/// Under the global `maxmemory` (allkeys-lru), a database given `noeviction` of its own keeps
/// every key while the others are evicted.
#[test]
fn the_global_limit_spares_a_database_with_its_own_noeviction() {
    let s = Server::tern(&[
        "--maxmemory-policy",
        "allkeys-lru",
        "--db-maxmemory-policy",
        "2 noeviction",
    ]);
    let mut c = R::new(s.port);
    let value = "v".repeat(1000);
    assert_eq!(c.q("SELECT 2"), "OK");
    for i in 0..500 {
        assert_eq!(c.q(&format!("SET durable:{i} {value}")), "OK");
    }
    let used = info_u64(&mut c, "memory", "used_memory");
    assert_eq!(
        c.q(&format!("CONFIG SET maxmemory {}", used + (2 << 20))),
        "OK"
    );
    assert_eq!(c.q("SELECT 1"), "OK");
    for i in 0..6000 {
        assert_eq!(c.q(&format!("SET cache:{i} {value}")), "OK");
    }
    assert!(info_u64(&mut c, "stats", "evicted_keys") > 1000);
    assert_eq!(dbsize(&mut c, 2), 500);
    assert!(dbsize(&mut c, 1) < 6000);
}

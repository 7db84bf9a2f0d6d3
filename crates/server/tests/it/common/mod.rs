//! Shared integration-test harness: start the real `tern-server` binary (and, for
//! differential tests, Debian's `redis-server`) on a free port and connect real clients.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Whether `port` can be bound on 127.0.0.1. Bound but never listening: a socket that
/// listened could, for a moment, belong to a child another test thread is forking (fds stay
/// open until exec), and a server's readiness probe would then connect to that dying copy and
/// be reset. SO_REUSEADDR as the servers set it, so such a copy cannot make their bind fail.
fn can_bind(port: u16) -> bool {
    let Ok(s) = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None) else {
        return false;
    };
    let _ = s.set_reuse_address(true);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    s.bind(&addr.into()).is_ok()
}

/// A port no other test of this process was given, below the kernel's ephemeral range (so a
/// client socket's local port cannot take it between this check and the server's bind).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let _ = NEXT.compare_exchange(
        0,
        10_000 + (std::process::id() % 400) as u16 * 50,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    loop {
        let p = NEXT.fetch_add(1, Ordering::SeqCst);
        let p = 10_000 + (p - 10_000) % 20_000;
        if can_bind(p) {
            return p;
        }
    }
}

/// A port in 7860-7889 (the cluster tests' own range, away from `free_port`'s) whose bus
/// port, +10000, is free too.
fn cluster_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    for _ in 0..30 {
        let p = 7860 + NEXT.fetch_add(1, Ordering::SeqCst) % 30;
        if can_bind(p) && can_bind(p + 10_000) {
            return p;
        }
    }
    panic!("no free port pair in 7860-7889 (+10000) for a cluster node")
}

pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    /// Start tern-server with `--port <free> --save ""` plus `extra` arguments.
    pub fn tern(extra: &[&str]) -> Server {
        Self::tern_env(extra, &[])
    }

    /// `tern` with extra environment variables for the server process.
    pub fn tern_env(extra: &[&str], env: &[(&str, &str)]) -> Server {
        Self::tern_at(free_port(), extra, env)
    }

    /// `tern` on a given port (a restart where the old one ran: its peers reconnect).
    pub fn tern_at(port: u16, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tern-server"));
        cmd.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            // As Redis's own test configuration: a diskless full sync starts at once.
            "--repl-diskless-sync-delay",
            "0",
        ]);
        // TERN_TEST_EXTRA="--appendonly yes" runs a whole suite with extra options (before
        // the test's own, which win).
        if let Ok(x) = std::env::var("TERN_TEST_EXTRA") {
            cmd.args(x.split_whitespace());
        }
        cmd.args(extra);
        cmd.envs(env.iter().copied());
        Self::spawn(cmd, port)
    }

    /// A redis-server to replicate from: its diskless sync starts at once, DEBUG enabled.
    pub fn redis_master() -> Option<Server> {
        Server::redis(&[
            "--repl-diskless-sync-delay",
            "0",
            "--enable-debug-command",
            "yes",
        ])
    }

    /// Start Debian's redis-server with the same conventions; None if it is not installed.
    pub fn redis(extra: &[&str]) -> Option<Server> {
        let path = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())?;
        let port = free_port();
        let mut cmd = Command::new(path);
        cmd.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args(extra);
        Some(Self::spawn(cmd, port))
    }

    /// Start any server command line (another build of Redis, say) the same way.
    pub fn spawn_cmd(cmd: Command, port: u16) -> Server {
        Self::spawn(cmd, port)
    }

    /// Own a process started by hand (one expected to exit at once, not waited for).
    pub fn from_child(child: Child, port: u16) -> Server {
        Server { child, port }
    }

    /// A cluster-enabled node (bus port = port + 10000, as a default node has it): tern, or
    /// the binary CLUSTER_IT_SERVER names (a redis-server, to prove the cluster tests on Redis).
    pub fn cluster_node(node_timeout_ms: u32) -> Server {
        let bin = std::env::var("CLUSTER_IT_SERVER")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_tern-server").to_string());
        let port = cluster_port();
        let mut cmd = Command::new(bin);
        cmd.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--appendonly", "no", "--cluster-enabled", "yes"])
        .args([
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
        ])
        .arg(node_timeout_ms.to_string());
        Self::spawn(cmd, port)
    }

    fn spawn(mut cmd: Command, port: u16) -> Server {
        let dir = std::env::temp_dir().join(format!("tern-test-{port}"));
        // Another test binary may have used this port before and left a dump.rdb (perhaps a
        // deliberately corrupt one) or an AOF here: every server starts in an empty directory.
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::create_dir_all(&dir);
        // The server's own output stays in its directory: `diagnose` shows it when a
        // connection fails.
        let log = std::fs::File::create(dir.join("server.log")).expect("server log");
        cmd.current_dir(&dir)
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log);
        let child = cmd.spawn().expect("spawn server");
        let s = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "server on port {port} did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .expect("client")
            .get_connection()
            .unwrap_or_else(|e| panic!("connect: {e}\n{}", self.diagnose()))
    }

    pub fn conn_resp3(&self) -> redis::Connection {
        redis::Client::open(format!("{}?protocol=resp3", self.url()))
            .expect("client")
            .get_connection()
            .unwrap_or_else(|e| panic!("connect: {e}\n{}", self.diagnose()))
    }

    /// The server process's state and the end of its log (for a failed connection).
    pub fn diagnose(&self) -> String {
        let pid = self.child.id();
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .next()
                    .unwrap_or("?")
                    .to_string()
            })
            .unwrap_or_else(|_| "gone".into());
        let log = std::fs::read_to_string(
            std::env::temp_dir()
                .join(format!("tern-test-{}", self.port))
                .join("server.log"),
        )
        .unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        let sockets = Command::new("ss")
            .args(["-tanp"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let port = format!(":{} ", self.port);
        let sockets: Vec<&str> = sockets.lines().filter(|l| l.contains(&port)).collect();
        format!(
            "server pid {pid} on port {} state {state}; sockets on the port:\n{}\nits log ends:\n{}",
            self.port,
            sockets.join("\n"),
            tail.join("\n")
        )
    }

    /// A raw TCP connection for protocol-level tests.
    pub fn raw(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        s
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's working directory (its files, and `server.log` with its output).
    pub fn dir(&self) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("tern-test-{}", self.port))
    }

    /// What the server wrote to stdout and stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir().join("server.log")).unwrap_or_default()
    }

    /// Send the server process a signal (it has not been collected yet, so it is delivered).
    pub fn signal(&self, sig: i32) {
        assert!(send_signal(self.pid(), sig), "kill({}, {sig})", self.pid());
    }

    /// The server's exit status once it exited within `limit`, else None.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A failed test shows what its servers logged (CI keeps nothing else).
        if std::thread::panicking() {
            eprintln!("--- server on port {} ---\n{}", self.port, self.diagnose());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Send raw bytes and read until `expect_len` bytes arrived or the peer closed.
pub fn raw_roundtrip(s: &mut TcpStream, req: &[u8], expect_len: usize) -> Vec<u8> {
    s.write_all(req).expect("write");
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while out.len() < expect_len {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    out
}

/// A command built from string arguments: `cmd(&["SET", "k", "v"])`.
pub fn cmd(args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

/// Run the same command on both servers and return both replies (as redis::Value).
pub fn both(
    a: &mut redis::Connection,
    b: &mut redis::Connection,
    args: &[&str],
) -> (
    redis::RedisResult<redis::Value>,
    redis::RedisResult<redis::Value>,
) {
    let c = cmd(args);
    (c.query(a), c.query(b))
}

/// Run a command whose arguments may be binary.
pub fn run(c: &mut redis::Connection, args: &[&[u8]]) -> redis::RedisResult<redis::Value> {
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).unwrap());
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c)
}

/// Run a command that must succeed and return its reply.
pub fn q(c: &mut redis::Connection, args: &[&str]) -> redis::Value {
    cmd(args)
        .query(c)
        .unwrap_or_else(|e| panic!("{args:?} failed: {e}"))
}

/// The full error line ("ERR ...", "WRONGTYPE ...") a command fails with.
pub fn err(c: &mut redis::Connection, args: &[&str]) -> String {
    match cmd(args).query::<redis::Value>(c) {
        Ok(v) => panic!("{args:?} should fail, got {v:?}"),
        Err(e) => error_line(&e),
    }
}

pub fn bulk(s: &str) -> redis::Value {
    redis::Value::BulkString(s.as_bytes().to_vec())
}

pub fn int(n: i64) -> redis::Value {
    redis::Value::Int(n)
}

/// SET a key to a binary value.
pub fn set_bytes(c: &mut redis::Connection, key: &str, val: &[u8]) {
    run(c, &[b"SET", key.as_bytes(), val]).unwrap();
}

/// OBJECT ENCODING of a key.
pub fn encoding(c: &mut redis::Connection, key: &str) -> String {
    match q(c, &["OBJECT", "ENCODING", key]) {
        redis::Value::BulkString(b) => String::from_utf8(b).unwrap(),
        redis::Value::SimpleString(s) => s,
        v => panic!("{v:?}"),
    }
}

/// A raw RESP connection that renders each reply compactly: `:1`, bulk `a`, arrays `[a,b]`,
/// maps `{k:v}`, RESP3 doubles `,1.5`, booleans `#t`, errors `!ERR ...`. A nil bulk string is
/// `(nil)`; with `DISTINCT_NILS` a RESP3 null is `(null)` and a nil array `(nilarr)`, otherwise
/// both are `(nil)` too.
pub struct Raw<const DISTINCT_NILS: bool = false> {
    pub port: u16,
    w: TcpStream,
    r: std::io::BufReader<TcpStream>,
}

impl<const DISTINCT_NILS: bool> Raw<DISTINCT_NILS> {
    pub fn new(port: u16) -> Self {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw {
            port,
            w: s.try_clone().unwrap(),
            r: std::io::BufReader::new(s),
        }
    }

    /// A connection switched to RESP3 with HELLO 3.
    pub fn resp3(port: u16) -> Self {
        let mut c = Self::new(port);
        c.send(&[b"HELLO", b"3"]);
        c.read_raw();
        c
    }

    pub fn send(&mut self, args: &[&[u8]]) {
        let mut buf = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            buf.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            buf.extend_from_slice(a);
            buf.extend_from_slice(b"\r\n");
        }
        self.w.write_all(&buf).unwrap();
    }

    /// The server closed the connection: nothing more to read.
    pub fn closed_by_server(&mut self) -> bool {
        use std::io::Read;
        let mut b = [0u8; 1];
        matches!(self.r.read(&mut b), Ok(0) | Err(_))
    }

    fn line(&mut self) -> String {
        use std::io::BufRead;
        let mut l = String::new();
        self.r.read_line(&mut l).unwrap();
        l.trim_end_matches("\r\n").to_string()
    }

    pub fn read(&mut self) -> String {
        let (null, nil_array) = if DISTINCT_NILS {
            ("(null)", "(nilarr)")
        } else {
            ("(nil)", "(nil)")
        };
        let l = self.line();
        let (t, rest) = l.split_at(1);
        match t {
            "+" => rest.to_string(),
            "-" => format!("!{rest}"),
            ":" => format!(":{rest}"),
            "," => format!(",{rest}"),
            "#" => format!("#{rest}"),
            "_" => null.into(),
            "$" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return "(nil)".into();
                }
                let mut b = vec![0u8; n as usize + 2];
                self.r.read_exact(&mut b).unwrap();
                String::from_utf8_lossy(&b[..n as usize]).into_owned()
            }
            "*" | "~" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return nil_array.into();
                }
                let items: Vec<String> = (0..n).map(|_| self.read()).collect();
                format!("[{}]", items.join(","))
            }
            ">" => {
                let n: i64 = rest.parse().unwrap();
                let items: Vec<String> = (0..n).map(|_| self.read()).collect();
                format!(">[{}]", items.join(","))
            }
            "%" => {
                let n: i64 = rest.parse().unwrap();
                let items: Vec<String> = (0..n)
                    .map(|_| {
                        let k = self.read();
                        format!("{k}:{}", self.read())
                    })
                    .collect();
                format!("{{{}}}", items.join(","))
            }
            _ => panic!("unexpected reply line {l:?}"),
        }
    }

    /// The exact bytes of one reply.
    pub fn read_raw(&mut self) -> Vec<u8> {
        use std::io::BufRead;
        let mut l = String::new();
        self.r.read_line(&mut l).unwrap();
        let mut out = l.clone().into_bytes();
        let (t, rest) = l.trim_end_matches("\r\n").split_at(1);
        match t {
            "$" | "=" | "!" => {
                let n: i64 = rest.parse().unwrap();
                if n >= 0 {
                    let mut b = vec![0u8; n as usize + 2];
                    self.r.read_exact(&mut b).unwrap();
                    out.extend_from_slice(&b);
                }
            }
            "*" | "~" | ">" | "%" | "|" => {
                let mut n: i64 = rest.parse().unwrap();
                if matches!(t, "%" | "|") {
                    n *= 2;
                }
                for _ in 0..n.max(0) {
                    out.extend(self.read_raw());
                }
            }
            _ => {}
        }
        out
    }

    /// Send a command given as space-separated words without reading its reply.
    pub fn send_cmd(&mut self, cmd: &str) {
        let words: Vec<&[u8]> = cmd.split_whitespace().map(|w| w.as_bytes()).collect();
        self.send(&words);
    }

    /// Run a command given as space-separated words.
    pub fn q(&mut self, cmd: &str) -> String {
        self.send_cmd(cmd);
        self.read()
    }

    /// Run a command with binary arguments.
    pub fn qa(&mut self, args: &[&[u8]]) -> String {
        self.send(args);
        self.read()
    }

    /// Run a command given as space-separated words; the exact bytes of its reply.
    pub fn q_raw(&mut self, cmd: &str) -> Vec<u8> {
        self.send_cmd(cmd);
        self.read_raw()
    }
}

/// A reply as comparable text: its debug form, or `error: CODE detail`.
pub fn norm(r: redis::RedisResult<redis::Value>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!(
            "error: {} {}",
            e.code().unwrap_or("?"),
            e.detail().unwrap_or("")
        ),
    }
}

/// A stream entry reply: `[id, [f1, v1, ...]]`.
pub fn entry(id: &str, fields: &[&str]) -> redis::Value {
    redis::Value::Array(vec![
        bulk(id),
        redis::Value::Array(fields.iter().map(|f| bulk(f)).collect()),
    ])
}

/// The children of `pid` (what `pgrep -P` finds): a save's or rewrite's writer process.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|x| x.parse::<u32>().ok()));
        }
    }
    out
}

/// An error reply as one line, "CODE detail" as the server sent it.
pub fn error_line(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

/// The error line of a reply that must be an error.
pub fn err_text(r: redis::RedisResult<redis::Value>) -> String {
    match r {
        Err(e) => error_line(&e),
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

/// Run a command that must reply with an integer.
pub fn qi(c: &mut redis::Connection, args: &[&str]) -> i64 {
    match q(c, args) {
        redis::Value::Int(n) => n,
        v => panic!("{args:?}: expected an integer, got {v:?}"),
    }
}

pub fn ok() -> redis::Value {
    redis::Value::Okay
}

/// An array of bulk strings.
pub fn arr(items: &[&str]) -> redis::Value {
    redis::Value::Array(items.iter().map(|s| bulk(s)).collect())
}

/// The DUMP payload of a key that exists.
pub fn dump(c: &mut redis::Connection, key: &str) -> Vec<u8> {
    match q(c, &["DUMP", key]) {
        redis::Value::BulkString(b) => b,
        v => panic!("DUMP {key}: {v:?}"),
    }
}

/// Run each command on a raw connection and compare its rendered reply.
pub fn check<const D: bool>(c: &mut Raw<D>, cases: &[(&str, &str)]) {
    for (cmd, want) in cases {
        assert_eq!(c.q(cmd), *want, "command: {cmd} (port {})", c.port);
    }
}

/// Send a command from a thread of its own on a new connection (one that blocks, or is held by
/// a pause); join the handle for its reply.
pub fn spawn_cmd(
    s: &Server,
    args: &[&str],
) -> std::thread::JoinHandle<redis::RedisResult<redis::Value>> {
    let mut c = s.conn();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    std::thread::spawn(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        cmd(&a).query(&mut c)
    })
}

/// Anything INFO can be asked through: a redis-rs connection or a raw one.
pub trait InfoText {
    /// The text of `INFO section`.
    fn info_text(&mut self, section: &str) -> String;
}

impl InfoText for redis::Connection {
    fn info_text(&mut self, section: &str) -> String {
        match q(self, &["INFO", section]) {
            redis::Value::BulkString(b) => String::from_utf8(b).unwrap(),
            redis::Value::VerbatimString { text, .. } => text,
            v => panic!("INFO {section}: {v:?}"),
        }
    }
}

impl<const D: bool> InfoText for Raw<D> {
    fn info_text(&mut self, section: &str) -> String {
        self.q(&format!("INFO {section}"))
    }
}

/// The value of `field` in an INFO text, if it is there.
pub fn info_value(info: &str, field: &str) -> Option<String> {
    let prefix = format!("{field}:");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(str::to_string)
}

/// One field of an INFO section (panics when the field is missing).
pub fn info_field(c: &mut impl InfoText, section: &str, field: &str) -> String {
    let info = c.info_text(section);
    info_value(&info, field).unwrap_or_else(|| panic!("no {field} in INFO {section}:\n{info}"))
}

/// A numeric field of an INFO section.
pub fn info_u64(c: &mut impl InfoText, section: &str, field: &str) -> u64 {
    let v = info_field(c, section, field);
    v.parse()
        .unwrap_or_else(|_| panic!("INFO {section} {field}: {v:?} is not a number"))
}

/// Wait until INFO shows exactly `n` blocked clients.
pub fn wait_blocked(c: &mut impl InfoText, n: usize) {
    let want = n.to_string();
    wait_for(
        &format!("{n} blocked clients"),
        Duration::from_secs(10),
        || info_field(c, "clients", "blocked_clients") == want,
    );
}

/// Poll `f` every 10 ms until it holds; fail after `limit`.
pub fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// REPLICAOF the server `master` (on this host).
pub fn replicaof(r: &mut redis::Connection, master: &Server) {
    assert_eq!(
        q(r, &["REPLICAOF", "127.0.0.1", &master.port.to_string()]),
        redis::Value::Okay
    );
}

/// Wait until the replica `r` reports its link to the master up.
pub fn wait_link_up(r: &mut redis::Connection) {
    wait_until("the replica's link to come up", || {
        info_field(r, "replication", "master_link_status") == "up"
    });
}

/// Wait until the replica `r` has processed the master `m`'s stream as far as it is now.
pub fn wait_caught_up(m: &mut redis::Connection, r: &mut redis::Connection) {
    // At least as far: the master's periodic PINGs to its replicas may move both on meanwhile.
    let offset = info_u64(m, "replication", "master_repl_offset");
    wait_until("the replica to catch up", || {
        info_field(r, "replication", "master_link_status") == "up"
            && info_u64(r, "replication", "slave_repl_offset") >= offset
    });
}

/// Poll `f` until it holds; fail after 20 s.
pub fn wait_until(what: &str, f: impl FnMut() -> bool) {
    wait_for(what, Duration::from_secs(20), f)
}

/// A new empty directory under the temp dir, unique in this process (tests of every module
/// share one process, so a name alone could collide).
pub fn fresh_dir(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let n = SEQ.fetch_add(1, Ordering::SeqCst);
    let d = std::env::temp_dir().join(format!("tern-it-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Send `sig` to a process that may be gone already (a server's writer child); whether it
/// was delivered.
pub fn send_signal(pid: u32, sig: i32) -> bool {
    // SAFETY: kill(2) has no memory effects; the pid is one of our servers or their children.
    unsafe { libc::kill(pid as libc::pid_t, sig) == 0 }
}

/// Wait for an AOF rewrite (running or scheduled) to end.
pub fn wait_rewrite(c: &mut redis::Connection) {
    // Both flags from one INFO: read apart, the cron can start a scheduled rewrite between
    // the two reads (in progress "0", then scheduled "0") while it still runs.
    wait_for("the rewrite to end", Duration::from_secs(30), || {
        let i = c.info_text("persistence");
        info_value(&i, "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_value(&i, "aof_rewrite_scheduled").as_deref() == Some("0")
    });
}

/// The AOF manifest in a server's directory.
pub fn manifest(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).unwrap()
}

/// The files the AOF manifest lists: (name, type).
pub fn listed(dir: &Path) -> Vec<(String, String)> {
    manifest(dir)
        .lines()
        .map(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            (w[1].to_string(), w[5].to_string())
        })
        .collect()
}

/// Run a command that must succeed and convert its reply (`q` gives the reply as a Value).
pub fn q_as<T: redis::FromRedisValue>(c: &mut redis::Connection, args: &[&str]) -> T {
    cmd(args)
        .query(c)
        .unwrap_or_else(|e| panic!("{args:?} failed: {e}"))
}

/// Run a command and convert its reply; an error reply stays an error.
pub fn try_q<T: redis::FromRedisValue>(
    c: &mut redis::Connection,
    args: &[&str],
) -> redis::RedisResult<T> {
    cmd(args).query(c)
}

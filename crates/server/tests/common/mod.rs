//! Shared integration-test harness: start the real `tern-server` binary (and, for
//! differential tests, Debian's `redis-server`) on a free port and connect real clients.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind ephemeral port");
    l.local_addr().expect("local addr").port()
}

pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    /// Start tern-server with `--port <free> --save ""` plus `extra` arguments.
    pub fn tern(extra: &[&str]) -> Server {
        let port = free_port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tern-server"));
        cmd.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(extra);
        Self::spawn(cmd, port)
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

    fn spawn(mut cmd: Command, port: u16) -> Server {
        let dir = std::env::temp_dir().join(format!("tern-test-{port}"));
        let _ = std::fs::create_dir_all(&dir);
        cmd.current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
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
            .expect("connect")
    }

    pub fn conn_resp3(&self) -> redis::Connection {
        redis::Client::open(format!("{}?protocol=resp3", self.url()))
            .expect("client")
            .get_connection()
            .expect("connect")
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
}

impl Drop for Server {
    fn drop(&mut self) {
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
        Err(e) => format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or("")),
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

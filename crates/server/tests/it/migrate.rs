//! MIGRATE: tern -> redis-server, redis-server -> tern, tern -> tern, options (COPY, REPLACE,
//! AUTH, AUTH2, KEYS), the connection cache, and every error reply, compared with what
//! redis-server's own MIGRATE answers where the two can be put in the same situation.
use crate::common::*;
use redis::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

fn tern() -> Server {
    Server::tern(&["--enable-debug-command", "yes"])
}

fn redis_server() -> Option<Server> {
    Server::redis(&["--enable-debug-command", "yes"])
}

fn migrate(c: &mut redis::Connection, args: &[&str]) -> redis::RedisResult<Value> {
    let mut cmd = redis::cmd("MIGRATE");
    for a in args {
        cmd.arg(*a);
    }
    cmd.query(c)
}

fn migrate_err(c: &mut redis::Connection, args: &[&str]) -> String {
    let mut full = vec!["MIGRATE"];
    full.extend_from_slice(args);
    err(c, &full)
}

fn exists(c: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("EXISTS").arg(key).query(c).unwrap()
}

/// A pretend target: accepts one connection, reads `expect` commands, answers each with the
/// line `reply(i, command)` gives (None: no answer), and hands back what it received.
fn fake_target(
    expect: usize,
    reply: impl Fn(usize, &[Vec<u8>]) -> Option<String> + Send + 'static,
) -> (u16, std::thread::JoinHandle<Vec<Vec<Vec<u8>>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        let mut got = Vec::new();
        for i in 0..expect {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap() == 0 {
                break;
            }
            let n: usize = line.trim_end()[1..].parse().unwrap();
            let mut cmd = Vec::new();
            for _ in 0..n {
                let mut hdr = String::new();
                r.read_line(&mut hdr).unwrap();
                let len: usize = hdr.trim_end()[1..].parse().unwrap();
                let mut b = vec![0u8; len + 2];
                r.read_exact(&mut b).unwrap();
                b.truncate(len);
                cmd.push(b);
            }
            if let Some(rep) = reply(i, &cmd) {
                w.write_all(rep.as_bytes()).unwrap();
            }
            got.push(cmd);
        }
        // Keep the connection open a little, so the client sees no EOF before its timeout.
        std::thread::sleep(Duration::from_millis(700));
        got
    });
    (port, h)
}

#[test]
fn argument_errors_match_redis() {
    let t = tern();
    let mut c = t.conn();
    q(&mut c, &["SET", "k", "v"]);
    let port = t.port.to_string();
    let cases: &[&[&str]] = &[
        &["127.0.0.1", &port, "k", "0", "x"],
        &["127.0.0.1", &port, "k", "x", "1000"],
        &["127.0.0.1", &port, "k", "0", "1000", "foo"],
        &["127.0.0.1", &port, "k", "0", "1000", "auth"],
        &["127.0.0.1", &port, "k", "0", "1000", "auth2", "u"],
        &["127.0.0.1", &port, "k", "0", "1000", "keys", "a"],
        &[
            "127.0.0.1",
            &port,
            "k",
            "0",
            "1000",
            "copy",
            "replace",
            "bogus",
        ],
    ];
    let expected = [
        "ERR value is not an integer or out of range",
        "ERR value is not an integer or out of range",
        "ERR syntax error",
        "ERR syntax error",
        "ERR syntax error",
        "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
        "ERR syntax error",
    ];
    for (args, want) in cases.iter().zip(expected) {
        assert_eq!(migrate_err(&mut c, args), want, "{args:?}");
    }
    assert!(migrate_err(&mut c, &["127.0.0.1", &port, "k", "0"]).contains("wrong number"));
    if let Some(r) = redis_server() {
        let mut rc = r.conn();
        q(&mut rc, &["SET", "k", "v"]);
        for args in cases {
            assert_eq!(
                migrate_err(&mut c, args),
                migrate_err(&mut rc, args),
                "{args:?}"
            );
        }
    }
    // Nothing to move: NOKEY, before any connection is tried (the target does not exist).
    assert_eq!(
        migrate(&mut c, &["127.0.0.1", "1", "missing", "0", "100"]).unwrap(),
        Value::SimpleString("NOKEY".into())
    );
    assert_eq!(
        migrate(
            &mut c,
            &["127.0.0.1", "1", "", "0", "100", "KEYS", "m1", "m2"]
        )
        .unwrap(),
        Value::SimpleString("NOKEY".into())
    );
    // An expired key does not count.
    q(&mut c, &["SET", "short", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(
        migrate(&mut c, &["127.0.0.1", "1", "short", "0", "100"]).unwrap(),
        Value::SimpleString("NOKEY".into())
    );
    // COMMAND GETKEYS follows Redis's key finder.
    let keys: Vec<String> = redis::cmd("COMMAND")
        .arg(&[
            "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "AUTH", "keys", "KEYS", "a", "b",
        ])
        .query(&mut c)
        .unwrap();
    assert_eq!(keys, ["a", "b"]);
    let keys: Vec<String> = redis::cmd("COMMAND")
        .arg(&["GETKEYS", "MIGRATE", "h", "1", "k", "0", "5", "COPY"])
        .query(&mut c)
        .unwrap();
    assert_eq!(keys, ["k"]);
}

#[test]
fn connection_errors_match_redis() {
    let t = tern();
    let mut c = t.conn();
    q(&mut c, &["SET", "k", "v"]);
    // A port nobody listens on: Redis's connect does not notice the refusal, its write does.
    let closed = free_port().to_string();
    let refused = migrate_err(&mut c, &["127.0.0.1", &closed, "k", "0", "200"]);
    assert_eq!(refused, "IOERR error or timeout writing to target instance");
    // A host that does not resolve.
    let bad = migrate_err(&mut c, &["no-such-host.invalid", "6379", "k", "0", "200"]);
    assert_eq!(bad, "IOERR error or timeout connecting to the client");
    if let Some(r) = redis_server() {
        let mut rc = r.conn();
        q(&mut rc, &["SET", "k", "v"]);
        assert_eq!(
            migrate_err(&mut rc, &["127.0.0.1", &closed, "k", "0", "200"]),
            refused
        );
        assert_eq!(
            migrate_err(&mut rc, &["no-such-host.invalid", "6379", "k", "0", "200"]),
            bad
        );
    }
    assert_eq!(exists(&mut c, "k"), 1);
    assert_eq!(info_field(&mut c, "stats", "migrate_cached_sockets"), "0");
}

#[test]
fn timeout_leaves_the_key_and_drops_the_connection() {
    let t = tern();
    let mut c = t.conn();
    q(&mut c, &["SET", "k", "v"]);
    // The target reads the commands but never answers.
    let (port, h) = fake_target(2, |_, _| None);
    let started = std::time::Instant::now();
    let e = migrate_err(&mut c, &["127.0.0.1", &port.to_string(), "k", "0", "300"]);
    assert_eq!(e, "IOERR error or timeout reading to target instance");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!(exists(&mut c, "k"), 1);
    assert_eq!(info_field(&mut c, "stats", "migrate_cached_sockets"), "0");
    let got = h.join().unwrap();
    assert_eq!(got[0], [b"SELECT".to_vec(), b"0".to_vec()]);
}

#[test]
fn target_errors_are_passed_through() {
    let t = tern();
    let mut c = t.conn();
    q(&mut c, &["SET", "k", "v"]);
    // SELECT refused: the first error wins, nothing is deleted.
    let (port, h) = fake_target(3, |i, _| {
        Some(
            if i == 0 {
                "-ERR DB index is out of range\r\n"
            } else {
                "+OK\r\n"
            }
            .into(),
        )
    });
    let port = port.to_string();
    let e = migrate_err(&mut c, &["127.0.0.1", &port, "k", "99", "1000"]);
    assert_eq!(
        e,
        "ERR Target instance replied with error: ERR DB index is out of range"
    );
    assert_eq!(exists(&mut c, "k"), 1);
    // The connection stays cached after a target error.
    assert_eq!(info_field(&mut c, "stats", "migrate_cached_sockets"), "1");
    h.join().unwrap();
}

#[test]
fn wire_format_auth_select_restore() {
    let t = tern();
    let mut c = t.conn();
    q(&mut c, &["SET", "k1", "v1"]);
    q(&mut c, &["SET", "k2", "v2", "PX", "50000"]);
    let d1: Vec<u8> = redis::cmd("DUMP").arg("k1").query(&mut c).unwrap();
    let (port, h) = fake_target(4, |_, _| Some("+OK\r\n".into()));
    let port_s = port.to_string();
    let r = migrate(
        &mut c,
        &[
            "127.0.0.1",
            &port_s,
            "",
            "3",
            "1000",
            "REPLACE",
            "AUTH2",
            "u",
            "pw",
            "KEYS",
            "k1",
            "nokey",
            "k2",
        ],
    );
    assert_eq!(r.unwrap(), ok());
    let got = h.join().unwrap();
    assert_eq!(got[0], [b"AUTH".to_vec(), b"u".to_vec(), b"pw".to_vec()]);
    assert_eq!(got[1], [b"SELECT".to_vec(), b"3".to_vec()]);
    assert_eq!(got[2][0], b"RESTORE");
    assert_eq!(got[2][1], b"k1");
    assert_eq!(got[2][2], b"0");
    assert_eq!(got[2][4], b"REPLACE");
    assert_eq!(got[3][1], b"k2");
    let ttl: i64 = std::str::from_utf8(&got[3][2]).unwrap().parse().unwrap();
    assert!((45_000..=50_000).contains(&ttl), "{ttl}");
    // The payload is exactly what DUMP gives.
    assert_eq!(d1, got[2][3]);
    // Moved: both source keys are gone.
    assert_eq!(exists(&mut c, "k1") + exists(&mut c, "k2"), 0);
}

/// Fill `c` with one key of every type, returning their names.
fn fill(c: &mut redis::Connection) -> Vec<&'static str> {
    q(c, &["SET", "str", "hello"]);
    q(c, &["SET", "int", "12345"]);
    q(c, &["RPUSH", "list", "a", "b", "3"]);
    q(c, &["SADD", "set", "x", "y", "7"]);
    q(c, &["SADD", "iset", "1", "2", "3"]);
    q(c, &["ZADD", "zset", "1.5", "a", "2", "b"]);
    q(c, &["HSET", "hash", "f1", "v1", "f2", "2"]);
    q(c, &["XADD", "stream", "1-1", "f", "v"]);
    q(c, &["XGROUP", "CREATE", "stream", "g", "0"]);
    let big: Vec<String> = (0..300).map(|i| format!("member-{i}")).collect();
    let mut cmd = vec!["SADD", "bigset"];
    cmd.extend(big.iter().map(|s| s.as_str()));
    q(c, &cmd);
    q(c, &["EXPIRE", "str", "100"]);
    vec![
        "str", "int", "list", "set", "iset", "zset", "hash", "stream", "bigset",
    ]
}

fn digests(c: &mut redis::Connection, keys: &[&str]) -> Vec<String> {
    let mut cmd = redis::cmd("DEBUG");
    cmd.arg("DIGEST-VALUE").arg(keys);
    let v: Vec<String> = cmd.query(c).unwrap();
    v
}

/// Move every type from `src` to `dst` (MIGRATE on `src`), checking the digests.
fn move_all(src: &Server, dst: &Server) {
    let (mut s, mut d) = (src.conn(), dst.conn());
    let keys = fill(&mut s);
    let before = digests(&mut s, &keys);
    let port = dst.port.to_string();
    let mut args = vec!["127.0.0.1", port.as_str(), "", "5", "5000", "KEYS"];
    args.extend(keys.iter().copied());
    assert_eq!(migrate(&mut s, &args).unwrap(), ok());
    q(&mut d, &["SELECT", "5"]);
    assert_eq!(digests(&mut d, &keys), before);
    for k in &keys {
        assert_eq!(exists(&mut s, k), 0, "{k} still on the source");
    }
    let ttl: i64 = redis::cmd("TTL").arg("str").query(&mut d).unwrap();
    assert!((95..=100).contains(&ttl), "{ttl}");
    assert_eq!(info_field(&mut s, "stats", "migrate_cached_sockets"), "1");
}

#[test]
fn tern_to_redis() {
    let Some(r) = redis_server() else { return };
    move_all(&tern(), &r);
}

#[test]
fn redis_to_tern() {
    let Some(r) = redis_server() else { return };
    move_all(&r, &tern());
}

#[test]
fn tern_to_tern() {
    move_all(&tern(), &tern());
}

#[test]
fn copy_replace_busykey_and_ack_only_deletes() {
    let (a, b) = (tern(), tern());
    let (mut s, mut d) = (a.conn(), b.conn());
    let port = b.port.to_string();
    q(&mut s, &["RPUSH", "list", "a", "b", "c", "d"]);
    q(&mut d, &["SET", "list", "somevalue"]);
    // BUSYKEY from the target, passed through; the source keeps its key.
    let e = migrate_err(&mut s, &["127.0.0.1", &port, "list", "0", "5000", "COPY"]);
    assert_eq!(
        e,
        "ERR Target instance replied with error: BUSYKEY Target key name already exists."
    );
    assert_eq!(exists(&mut s, "list"), 1);
    // COPY REPLACE: both have it.
    let r = migrate(
        &mut s,
        &["127.0.0.1", &port, "list", "0", "5000", "COPY", "REPLACE"],
    );
    assert_eq!(r.unwrap(), ok());
    assert_eq!(exists(&mut s, "list"), 1);
    let l: Vec<String> = redis::cmd("LRANGE")
        .arg("list")
        .arg(0)
        .arg(-1)
        .query(&mut d)
        .unwrap();
    assert_eq!(l, ["a", "b", "c", "d"]);
    // Only acknowledged keys are deleted: c and d are busy on the target.
    q(&mut s, &["FLUSHALL"]);
    q(&mut d, &["FLUSHALL"]);
    q(
        &mut s,
        &["MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"],
    );
    q(&mut d, &["MSET", "c", "_", "d", "_"]);
    let e = migrate_err(
        &mut s,
        &[
            "127.0.0.1",
            &port,
            "",
            "0",
            "5000",
            "KEYS",
            "a",
            "b",
            "c",
            "d",
            "e",
        ],
    );
    assert!(
        e.starts_with("ERR Target instance replied with error: BUSYKEY"),
        "{e}"
    );
    let n: i64 = redis::cmd("DBSIZE").query(&mut s).unwrap();
    assert_eq!(n, 2);
    assert_eq!(exists(&mut s, "c") + exists(&mut s, "d"), 2);
    let n: i64 = redis::cmd("DBSIZE").query(&mut d).unwrap();
    assert_eq!(n, 5);
}

#[test]
fn auth_and_auth2() {
    let (a, b) = (tern(), tern());
    let (mut s, mut d) = (a.conn(), b.conn());
    let port = b.port.to_string();
    q(&mut d, &["CONFIG", "SET", "requirepass", "foobar"]);
    q(&mut s, &["RPUSH", "list", "a", "b"]);
    let r = migrate(
        &mut s,
        &["127.0.0.1", &port, "list", "9", "5000", "AUTH", "foobar"],
    );
    assert_eq!(r.unwrap(), ok());
    q(&mut s, &["RPUSH", "list", "a", "b"]);
    let e = migrate_err(
        &mut s,
        &["127.0.0.1", &port, "list", "9", "5000", "AUTH", "nope"],
    );
    assert_eq!(
        e,
        "ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(exists(&mut s, "list"), 1);
    let r = migrate(
        &mut s,
        &[
            "127.0.0.1",
            &port,
            "list",
            "9",
            "5000",
            "REPLACE",
            "AUTH2",
            "default",
            "foobar",
        ],
    );
    assert_eq!(r.unwrap(), ok());
    assert_eq!(exists(&mut s, "list"), 0);
    // Without AUTH a fresh target refuses: its NOAUTH error comes back. (Not `b`: the
    // connection cached to it is authenticated already, and Redis reuses it as it is.)
    let c = tern();
    q(&mut c.conn(), &["CONFIG", "SET", "requirepass", "foobar"]);
    q(&mut s, &["SET", "k", "v"]);
    let e = migrate_err(
        &mut s,
        &["127.0.0.1", &c.port.to_string(), "k", "8", "5000"],
    );
    assert!(
        e.starts_with("ERR Target instance replied with error: NOAUTH"),
        "{e}"
    );
}

#[test]
fn cached_connection_survives_a_target_side_close() {
    let (a, b) = (tern(), tern());
    let (mut s, mut d) = (a.conn(), b.conn());
    let port = b.port.to_string();
    q(&mut s, &["SET", "k1", "v"]);
    assert_eq!(
        migrate(&mut s, &["127.0.0.1", &port, "k1", "0", "5000"]).unwrap(),
        ok()
    );
    assert_eq!(info_field(&mut s, "stats", "migrate_cached_sockets"), "1");
    // The target drops every other client: the cached connection is dead, MIGRATE reconnects.
    q(
        &mut d,
        &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"],
    );
    std::thread::sleep(Duration::from_millis(100));
    q(&mut s, &["SET", "k2", "v"]);
    assert_eq!(
        migrate(&mut s, &["127.0.0.1", &port, "k2", "0", "5000"]).unwrap(),
        ok()
    );
    assert_eq!(exists(&mut d, "k2"), 1);
}

#[test]
fn cached_connections_are_released_after_ten_idle_seconds() {
    let t = tern();
    let mut c = t.conn();
    q(&mut c, &["SET", "k", "v"]);
    let (port, h) = fake_target(2, |_, _| Some("+OK\r\n".into()));
    let _ = migrate(
        &mut c,
        &["127.0.0.1", &port.to_string(), "k", "0", "1000", "COPY"],
    );
    h.join().unwrap();
    // A target error or success both keep the connection; the fake one closed it, so it is
    // dropped at the latest after ten idle seconds.
    std::thread::sleep(Duration::from_secs(12));
    assert_eq!(info_field(&mut c, "stats", "migrate_cached_sockets"), "0");
}

#[test]
fn raw_connection_helper_is_usable() {
    // Sanity check of the fake target itself: it answers what it is told.
    let (port, h) = fake_target(1, |_, _| Some("+PONG\r\n".into()));
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"+PONG\r\n");
    assert_eq!(h.join().unwrap(), vec![vec![b"PING".to_vec()]]);
}

//! Wire-level behaviour of the real binary: pipelining, inline commands, protocol errors that
//! close only the offending connection, and MONITOR redaction.
use crate::common::{raw_roundtrip, Server};
use std::io::{Read, Write};

fn read_all(s: &mut std::net::TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

#[test]
fn pipelined_commands_answered_in_order_in_one_batch() {
    let s = Server::tern(&[]);
    let mut c = s.raw();
    let mut req = Vec::new();
    for i in 0..1000 {
        req.extend_from_slice(
            format!("*3\r\n$3\r\nSET\r\n$4\r\nk{i:03}\r\n$1\r\n{}\r\n", i % 10).as_bytes(),
        );
    }
    req.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$4\r\nk123\r\n");
    let expect = b"+OK\r\n".repeat(1000).len() + b"$1\r\n3\r\n".len();
    let out = raw_roundtrip(&mut c, &req, expect);
    assert_eq!(out.len(), expect);
    assert!(out.ends_with(b"+OK\r\n$1\r\n3\r\n"));
}

#[test]
fn inline_commands_with_quotes_and_empty_lines() {
    let s = Server::tern(&[]);
    let mut c = s.raw();
    let out = raw_roundtrip(
        &mut c,
        b"\r\nSET \"a b\" 'x\\'y'\r\nGET \"a b\"\r\nPING\n",
        18,
    );
    assert_eq!(out, b"+OK\r\n$3\r\nx'y\r\n+PONG\r\n");
}

#[test]
fn binary_safe_and_empty_arguments() {
    let s = Server::tern(&[]);
    let mut c = s.raw();
    let out = raw_roundtrip(
        &mut c,
        b"*3\r\n$3\r\nSET\r\n$3\r\n\x00\r\n\r\n$0\r\n\r\n*2\r\n$3\r\nGET\r\n$3\r\n\x00\r\n\r\n",
        11,
    );
    assert_eq!(out, b"+OK\r\n$0\r\n\r\n");
}

#[test]
fn protocol_errors_close_only_that_connection() {
    let s = Server::tern(&[]);
    let mut other = s.conn();
    let _: () = redis::cmd("SET")
        .arg("keep")
        .arg("1")
        .query(&mut other)
        .unwrap();
    let cases: &[(&[u8], &str)] = &[
        (
            b"*3000000000\r\n",
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
            "-ERR Protocol error: expected '$', got 'f'\r\n",
        ),
        (
            b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n",
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\n$blabla\r\n",
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"set \"\"\"test-key\"\"\" test-value\r\n",
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
    ];
    for (req, want) in cases {
        let mut c = s.raw();
        c.write_all(req).unwrap();
        let out = read_all(&mut c);
        assert_eq!(
            String::from_utf8_lossy(&out),
            *want,
            "request {:?}",
            String::from_utf8_lossy(req)
        );
    }
    // An inline request without a newline past 64 KB.
    let mut c = s.raw();
    let _ = c.write_all(&vec![b'a'; 70 * 1024]);
    let out = read_all(&mut c);
    assert_eq!(
        String::from_utf8_lossy(&out),
        "-ERR Protocol error: too big inline request\r\n"
    );
    let v: String = redis::cmd("GET").arg("keep").query(&mut other).unwrap();
    assert_eq!(v, "1");
}

#[test]
fn bulk_longer_than_proto_max_bulk_len_is_refused() {
    let s = Server::tern(&["--proto-max-bulk-len", "1mb"]);
    let mut c = s.raw();
    c.write_all(b"*2\r\n$3\r\nGET\r\n$1048577\r\n").unwrap();
    assert_eq!(
        read_all(&mut c),
        b"-ERR Protocol error: invalid bulk length\r\n"
    );
}

#[test]
fn large_value_round_trip() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let big = vec![b'x'; 10 * 1024 * 1024];
    let _: () = redis::cmd("SET")
        .arg("big")
        .arg(&big)
        .query(&mut c)
        .unwrap();
    let back: Vec<u8> = redis::cmd("GET").arg("big").query(&mut c).unwrap();
    assert_eq!(back.len(), big.len());
    assert!(back == big);
}

#[test]
fn monitor_redacts_credentials() {
    let s = Server::tern(&["--requirepass", "secret"]);
    let mut m = s.raw();
    let out = raw_roundtrip(&mut m, b"AUTH secret\r\nMONITOR\r\n", 10);
    assert_eq!(out, b"+OK\r\n+OK\r\n");
    let mut c = s.raw();
    let _ = raw_roundtrip(&mut c, b"AUTH wrong\r\n", 5);
    let _ = raw_roundtrip(
        &mut c,
        b"AUTH secret\r\nHELLO 2 AUTH default secret\r\n",
        10,
    );
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.iter().filter(|&&b| b == b'\n').count() < 3 {
        let n = m.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].ends_with("\"AUTH\" \"(redacted)\""),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with("\"AUTH\" \"(redacted)\""),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].ends_with("\"HELLO\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\""),
        "{}",
        lines[2]
    );
    assert!(!text.contains("secret"));
}

#[test]
fn unauthenticated_clients_get_noauth_and_tight_limits() {
    let s = Server::tern(&["--requirepass", "pw"]);
    let mut c = s.raw();
    assert_eq!(
        raw_roundtrip(&mut c, b"GET x\r\n", 34),
        b"-NOAUTH Authentication required.\r\n"
    );
    let mut c = s.raw();
    c.write_all(b"*20\r\n").unwrap();
    assert_eq!(
        read_all(&mut c),
        b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    );
}

#[test]
fn config_set_port_and_bind_relisten() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let new_port = crate::common::free_port();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("port")
        .arg(new_port)
        .query(&mut c)
        .unwrap();
    let mut moved = redis::Client::open(format!("redis://127.0.0.1:{new_port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let pong: String = redis::cmd("PING").query(&mut moved).unwrap();
    assert_eq!(pong, "PONG");
    // The old port is closed; a parallel test may have taken it since, so if something answers
    // there it must not be this server.
    if let Ok(mut c) = redis::Client::open(s.url()).and_then(|c| c.get_connection()) {
        let port: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("port")
            .query(&mut c)
            .unwrap();
        assert_ne!(
            port[1],
            new_port.to_string(),
            "old port still served by this server"
        );
    }
    // A port that is taken fails and leaves the server where it was.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port();
    let err = redis::cmd("CONFIG")
        .arg("SET")
        .arg("port")
        .arg(taken_port)
        .query::<()>(&mut moved)
        .unwrap_err();
    assert!(
        err.to_string().contains("Unable to listen on this port"),
        "{err}"
    );
    let port: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("port")
        .query(&mut moved)
        .unwrap();
    assert_eq!(port, vec!["port".to_string(), new_port.to_string()]);
    let mut again = redis::Client::open(format!("redis://127.0.0.1:{new_port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let pong: String = redis::cmd("PING").query(&mut again).unwrap();
    assert_eq!(pong, "PONG");
}

/// `*-9223372036854775808` (string2ll's smallest value) is an empty command as any negative
/// count is, not a protocol error; one past it is.
#[test]
fn most_negative_multibulk_count_is_an_empty_command() {
    let s = Server::tern(&[]);
    let mut c = s.raw();
    let out = raw_roundtrip(&mut c, b"*-9223372036854775808\r\n*1\r\n$4\r\nPING\r\n", 7);
    assert_eq!(out, b"+PONG\r\n");
    let mut c = s.raw();
    c.write_all(b"*-9223372036854775809\r\n").unwrap();
    assert_eq!(
        read_all(&mut c),
        b"-ERR Protocol error: invalid multibulk length\r\n"
    );
}

/// The client's bytes echoed in an error come back as sent, not re-encoded as UTF-8
/// (no U+FFFD for a byte >= 0x80), on tern as on Redis.
#[test]
fn error_messages_echo_raw_bytes() {
    let tern = Server::tern(&[]);
    let redis = Server::redis(&[]);
    for s in std::iter::once(&tern).chain(redis.as_ref()) {
        let mut c = s.raw();
        for (req, expect) in [
            (
                &b"*2\r\n$4\r\nGE\xe9T\r\n$2\r\n\xff\xfe\r\n"[..],
                &b"-ERR unknown command 'GE\xe9T', with args beginning with: '\xff\xfe' \r\n"[..],
            ),
            (
                b"*2\r\n$6\r\nCONFIG\r\n$2\r\n\xe9x\r\n",
                b"-ERR unknown subcommand '\xe9x'. Try CONFIG HELP.\r\n",
            ),
        ] {
            let out = raw_roundtrip(&mut c, req, expect.len());
            assert_eq!(out, expect, "{}", String::from_utf8_lossy(&out));
        }
    }
    // Long names and arguments are cut at Redis's byte limits.
    let mut c = tern.raw();
    let name = vec![b'\xe9'; 200];
    let arg = vec![b'a'; 200];
    let mut req = b"*2\r\n$200\r\n".to_vec();
    req.extend_from_slice(&name);
    req.extend_from_slice(b"\r\n$200\r\n");
    req.extend_from_slice(&arg);
    req.extend_from_slice(b"\r\n");
    let mut expect = b"-ERR unknown command '".to_vec();
    expect.extend_from_slice(&name[..128]);
    expect.extend_from_slice(b"', with args beginning with: '");
    expect.extend_from_slice(&arg[..128]);
    expect.extend_from_slice(b"' \r\n");
    let out = raw_roundtrip(&mut c, &req, expect.len());
    assert_eq!(out, expect);
}

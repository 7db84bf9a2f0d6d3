//! A real redis-server accepts messages this codec encodes: the test plays a cluster node of its
//! own (a MEET to Redis's bus port, then the PING/PONG handshake Redis starts on the test's own
//! bus port) and checks, with CLUSTER NODES and its nodes.conf, that Redis took in what the
//! messages said (node id, ports, hostname and shard-id extensions, claimed slots). Runs against
//! `$REDIS_SERVER` if set, else against both ~/redis-7.2.6/src/redis-server and Debian's
//! /usr/bin/redis-server (7.0, which ignores the shard-id extension it does not know).
//! Ports 7620 and 17620-17621.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tern_cluster::msg::{frame_len, Header, Ping, PingExt};
use tern_cluster::{Body, Msg, NodeFlags, NodeId, NodesConf, SlotSet};

const REDIS_PORT: u16 = 7620;
const OUR_PORT: u16 = 7621;
const OUR_BUS_PORT: u16 = 17621;
const OUR_ID: &[u8; 40] = b"7e57c0de00000000000000000000000000000001";
const OUR_SHARD: &[u8; 40] = b"7e57c0de000000000000000000000000000000aa";

struct Redis {
    child: Child,
    dir: PathBuf,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The redis-server binaries to test against: `$REDIS_SERVER` alone if set; else the built
/// 7.2.6 and the system's `redis-server` (Debian's 7.0), those that exist.
fn redis_binaries() -> Vec<String> {
    if let Ok(path) = std::env::var("REDIS_SERVER") {
        return vec![path];
    }
    let home = std::env::var("HOME").unwrap_or_default();
    let found: Vec<String> = [
        format!("{home}/redis-7.2.6/src/redis-server"),
        "/usr/bin/redis-server".to_string(),
    ]
    .into_iter()
    .filter(|p| std::path::Path::new(p).exists())
    .collect();
    assert!(!found.is_empty(), "no redis-server found: set REDIS_SERVER");
    found
}

fn start_redis(binary: &str) -> Redis {
    let dir = std::env::temp_dir().join(format!("tern-cluster-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let child = Command::new(binary)
        .args([
            "--port",
            &REDIS_PORT.to_string(),
            "--cluster-enabled",
            "yes",
        ])
        .args([
            "--cluster-node-timeout",
            "5000",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server runs (set REDIS_SERVER)");
    let redis = Redis { child, dir };
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", REDIS_PORT)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    redis
}

/// One command over RESP; returns the reply's payload (bulk or simple string).
fn command(args: &[&str]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", REDIS_PORT)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req += &format!("${}\r\n{a}\r\n", a.len());
    }
    s.write_all(req.as_bytes()).unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed");
        reply.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&reply).to_string();
        if let Some(rest) = text.strip_prefix('$') {
            let (len, body) = rest.split_once("\r\n").unwrap_or(("", ""));
            if let Ok(len) = len.parse::<usize>() {
                if body.len() >= len + 2 {
                    return body[..len].to_string();
                }
            }
        } else if text.ends_with("\r\n") {
            return text[1..text.len() - 2].to_string();
        }
    }
}

/// The first whole message from `s` (anything read past it is dropped: the test only looks at
/// the first message on each link).
fn read_msg(s: &mut TcpStream) -> Msg {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(len) = frame_len(&buf).unwrap() {
            if buf.len() >= len {
                return Msg::decode(&buf[..len]).unwrap();
            }
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "bus connection closed");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The next connection to `listener`; fails the test rather than hang.
fn accept_within(listener: &TcpListener, limit: Duration) -> TcpStream {
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + limit;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).unwrap();
                return stream;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(
                    Instant::now() < deadline,
                    "Redis never connected to our bus port"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// Reply PONG to every PING/MEET until the link closes.
fn answer_pings(mut link: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        while let Ok(Some(len)) = frame_len(&buf) {
            if buf.len() < len {
                break;
            }
            let msg = Msg::decode(&buf[..len]).expect("Redis's messages decode");
            buf.drain(..len);
            if matches!(msg.body, Body::Ping(_) | Body::Meet(_))
                && link.write_all(&our_message(Body::Pong)).is_err()
            {
                return;
            }
        }
        match link.read(&mut chunk) {
            Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    }
}

fn our_message(body_for: fn(Ping) -> Body) -> Vec<u8> {
    let header = Header {
        port: OUR_PORT,
        cport: OUR_BUS_PORT,
        sender: NodeId(*OUR_ID),
        flags: NodeFlags::MYSELF | NodeFlags::MASTER,
        slots: SlotSet::from_ranges(&[(16000, 16383)]).unwrap(),
        config_epoch: 1,
        current_epoch: 1,
        ..Header::default()
    };
    let ping = Ping {
        gossip: vec![],
        extensions: vec![
            PingExt::Hostname(b"tern-test.example".to_vec()),
            PingExt::ShardId(NodeId(*OUR_SHARD)),
        ],
    };
    Msg::new(header, body_for(ping)).encode()
}

#[test]
fn redis_server_joins_a_node_speaking_this_codec() {
    for binary in redis_binaries() {
        join(&binary);
    }
}

fn join(binary: &str) {
    let listener = TcpListener::bind(("127.0.0.1", OUR_BUS_PORT)).unwrap();
    let redis = start_redis(binary);
    let redis_id = command(&["CLUSTER", "MYID"]);

    // MEET: Redis answers with a PONG on the same link.
    let mut out = TcpStream::connect(("127.0.0.1", REDIS_PORT + 10000)).unwrap();
    out.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    out.write_all(&our_message(Body::Meet)).unwrap();
    let pong = read_msg(&mut out);
    assert!(matches!(pong.body, Body::Pong(_)), "{pong:?}");
    assert_eq!(pong.header.sender.to_string(), redis_id);
    assert_eq!(pong.header.port, REDIS_PORT);
    assert_eq!(pong.header.cport, REDIS_PORT + 10000);
    assert!(pong
        .header
        .flags
        .contains(NodeFlags::MASTER | NodeFlags::MYSELF));
    assert!(pong.header.slots.is_empty());

    // Redis now knows us as a node in handshake and connects to our bus port to PING us; our
    // PONG (with our real id) completes the handshake.
    let mut inbound = accept_within(&listener, Duration::from_secs(10));
    inbound
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let ping = read_msg(&mut inbound);
    assert!(
        matches!(ping.body, Body::Ping(_) | Body::Meet(_)),
        "{ping:?}"
    );
    assert_eq!(ping.header.sender.to_string(), redis_id);
    inbound.write_all(&our_message(Body::Pong)).unwrap();
    // Go on answering Redis's PINGs on its link, and drain what it sends on ours.
    std::thread::spawn(move || answer_pings(inbound));
    let mut drain = out.try_clone().unwrap();
    std::thread::spawn(move || while let Ok(1..) = drain.read(&mut [0u8; 8192]) {});

    let deadline = Instant::now() + Duration::from_secs(10);
    let ours = std::str::from_utf8(OUR_ID).unwrap();
    let line = loop {
        let nodes = command(&["CLUSTER", "NODES"]);
        if let Some(line) = nodes.lines().find(|l| l.starts_with(ours)) {
            if !line.contains("handshake") && line.contains("16000-16383") {
                break line.to_string();
            }
        }
        assert!(
            Instant::now() < deadline,
            "handshake not completed: {nodes}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let fields: Vec<&str> = line.split(' ').collect();
    assert_eq!(
        fields[1],
        format!("127.0.0.1:{OUR_PORT}@{OUR_BUS_PORT},tern-test.example")
    );
    assert_eq!(fields[2], "master");
    assert_eq!(fields[3], "-");
    assert_eq!(fields[6], "1", "our configEpoch");
    assert_eq!(fields[8], "16000-16383", "our claimed slots");
    // Redis's own nodes.conf, read back with this crate's parser, has our shard id (from the
    // extension) and hostname.
    assert_eq!(command(&["CLUSTER", "SAVECONFIG"]), "OK");
    let text = std::fs::read_to_string(redis.dir.join("nodes.conf")).unwrap();
    let conf = NodesConf::parse(&text).unwrap();
    // 7.2 files are written back byte for byte; 7.0 ones (no aux fields, no trailing comma)
    // come back in the 7.2 form.
    let is_72 = command(&["INFO", "server"]).contains("redis_version:7.2.");
    if is_72 {
        assert_eq!(conf.to_text(), text);
    }
    assert_eq!(conf.myself().unwrap().id.to_string(), redis_id);
    let us = conf.nodes.iter().find(|n| n.id == NodeId(*OUR_ID)).unwrap();
    assert_eq!(us.hostname, "tern-test.example");
    assert_eq!((us.port, us.cport), (OUR_PORT, OUR_BUS_PORT));
    if is_72 {
        assert_eq!(us.shard_id, Some(NodeId(*OUR_SHARD)));
    }
}

//! Messages captured from real redis-server 7.2.6 nodes (`capture_bus.py`): each decodes to
//! what the capture set up (node ids, ports, hostnames, slots, payloads) and encodes back to the
//! same bytes.
//!
//! The capture: nodes 1-5 on ports 7601-7605, each announcing cluster bus port 1765x (a relay in
//! front of its real bus port). Nodes 1, 2, 3 serve 0-5460, 5461-10922, 10923-16383; node 4
//! replicates node 1, takes over with CLUSTER FAILOVER, is killed (node 1 is elected back) and
//! restarted; node 1 publishes "hello from a" on "news", "shard hello" on shard channel "bar"
//! and runs hellocluster.pingall ("Hey", module message type 1); node 5 joins, leaves and is
//! forgotten.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;

use tern_cluster::msg::{frame_len, ClusterState, PingExt, HEADER_LEN};
use tern_cluster::{Body, Msg, NodeFlags, NodeId, SlotSet};

struct Node {
    port: u16,
    bus_port: u16,
    id: NodeId,
    hostname: Option<String>,
    human_nodename: Option<String>,
}

struct Fixture {
    facts: HashMap<String, String>,
    bytes: Vec<u8>,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bus")
}

fn nodes() -> HashMap<usize, Node> {
    let text = fs::read_to_string(dir().join("nodes.txt")).unwrap();
    let opt = |s: &str| (s != "-").then(|| s.to_string());
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let node = Node {
                port: f[1].parse().unwrap(),
                bus_port: f[2].parse().unwrap(),
                id: NodeId::parse(f[3].as_bytes()).unwrap(),
                hostname: opt(f[4]),
                human_nodename: opt(f[5]),
            };
            (f[0].parse().unwrap(), node)
        })
        .collect()
}

fn fixture(name: &str) -> Fixture {
    let text = fs::read_to_string(dir().join(format!("{name}.hex"))).unwrap();
    let mut facts = HashMap::new();
    let mut hex = String::new();
    for line in text.lines() {
        if let Some(fact) = line.strip_prefix("# ") {
            let (k, v) = fact.split_once(": ").unwrap();
            facts.insert(k.to_string(), v.to_string());
        } else {
            hex.push_str(line.trim());
        }
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    Fixture { facts, bytes }
}

/// Decode, check the generic facts and the byte-exact round trip; returns the message and the
/// sender's index.
fn load(name: &str) -> (Msg, usize, HashMap<usize, Node>) {
    let fx = fixture(name);
    let nodes = nodes();
    assert_eq!(
        frame_len(&fx.bytes).unwrap(),
        Some(fx.bytes.len()),
        "{name}: frame length"
    );
    assert_eq!(fx.facts["totlen"].parse::<usize>().unwrap(), fx.bytes.len());
    let msg = Msg::decode(&fx.bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(msg.encode(), fx.bytes, "{name}: re-encoded bytes differ");
    let type_name = tern_cluster::msg::msg_type::name(msg.msg_type()).to_ascii_uppercase();
    let expected_type = fx.facts["type"].replace("FAILOVER_AUTH_REQUEST", "AUTH-REQ");
    let expected_type = expected_type.replace("FAILOVER_AUTH_ACK", "AUTH-ACK");
    assert_eq!(type_name, expected_type, "{name}: type");
    let sender: usize = fx.facts["sender"].parse().unwrap();
    let h = &msg.header;
    let me = &nodes[&sender];
    assert_eq!(h.sender, me.id, "{name}: sender");
    assert_eq!(h.port, me.port, "{name}: client port");
    assert_eq!(h.cport, me.bus_port, "{name}: announced bus port");
    assert_eq!(h.pport, 0, "{name}: no TLS port");
    assert!(h.myip.is_empty(), "{name}: no announced ip");
    assert!(h.config_epoch <= h.current_epoch, "{name}: epochs");
    assert!(
        h.flags.contains(NodeFlags::MYSELF)
            && (h.flags.contains(NodeFlags::MASTER) ^ h.flags.contains(NodeFlags::REPLICA)),
        "{name}: flags {:?}",
        h.flags
    );
    assert_eq!(
        h.replicaof.is_some(),
        h.flags.contains(NodeFlags::REPLICA),
        "{name}: replicaof"
    );
    // Node 1 sends its MEETs before it knows who serves every slot; the cluster is up when
    // messages are published and the manual failover starts.
    if name.starts_with("meet") {
        assert_eq!(h.state, ClusterState::Fail, "{name}: state");
    } else if name.starts_with("publish") || name.starts_with("module") || name == "mfstart" {
        assert_eq!(h.state, ClusterState::Ok, "{name}: state");
    }
    // Nodes 2 and 3 always serve their own range; 1 and 4 serve 0-5460 or nothing.
    let own = match sender {
        2 => vec![(5461, 10922)],
        3 => vec![(10923, 16383)],
        _ => vec![(0, 5460)],
    };
    let slots: Vec<_> = h.slots.ranges().collect();
    assert!(slots == own || slots.is_empty(), "{name}: slots {slots:?}");
    (msg, sender, nodes)
}

fn check_ping_body(name: &str, msg: &Msg, sender: usize, nodes: &HashMap<usize, Node>) {
    let ping = msg.body.ping().unwrap();
    let me = &nodes[&sender];
    for g in &ping.gossip {
        let (_, other) = nodes
            .iter()
            .find(|(_, n)| n.id == g.node)
            .expect("gossip about a known node");
        assert_ne!(g.node, me.id, "{name}: no gossip about the sender");
        assert_eq!(g.port, other.port, "{name}: gossip port");
        assert_eq!(g.cport, other.bus_port, "{name}: gossip bus port");
        assert_eq!(g.ip.to_string(), "127.0.0.1", "{name}: gossip ip");
        assert_eq!(g.pport, 0);
        assert!(
            g.pong_received == 0 || g.pong_received > 1_700_000_000,
            "{name}: pong time"
        );
    }
    let host: Vec<String> = ping
        .extensions
        .iter()
        .filter_map(|e| match e {
            PingExt::Hostname(h) => Some(String::from_utf8(h.clone()).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(
        host,
        me.hostname.iter().cloned().collect::<Vec<_>>(),
        "{name}: hostname ext"
    );
    let human: Vec<String> = ping
        .extensions
        .iter()
        .filter_map(|e| match e {
            PingExt::HumanNodename(h) => Some(String::from_utf8(h.clone()).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(
        human,
        me.human_nodename.iter().cloned().collect::<Vec<_>>(),
        "{name}: nodename ext"
    );
    let shard_ids = ping
        .extensions
        .iter()
        .filter(|e| matches!(e, PingExt::ShardId(_)))
        .count();
    assert_eq!(shard_ids, 1, "{name}: one shard id");
    assert!(msg.header.mflags.ext_data(), "{name}: EXT_DATA flag");
    assert!(!ping
        .extensions
        .iter()
        .any(|e| matches!(e, PingExt::Unknown { .. })));
}

#[test]
fn meet_ping_pong() {
    for name in [
        "meet_0",
        "meet_1",
        "ping_gossip_ext_0",
        "ping_gossip_ext_1",
        "pong_gossip_ext",
        "pong_no_gossip",
        "ping_from_replica",
        "ping_paused",
        "ping_forgotten_node",
    ] {
        let (msg, sender, nodes) = load(name);
        check_ping_body(name, &msg, sender, &nodes);
        match name {
            n if n.starts_with("meet") => assert!(matches!(msg.body, Body::Meet(_))),
            n if n.starts_with("pong") => assert!(matches!(msg.body, Body::Pong(_))),
            _ => assert!(matches!(msg.body, Body::Ping(_))),
        }
    }
    let (msg, ..) = load("ping_gossip_ext_0");
    assert!(msg.body.ping().unwrap().gossip.len() >= 2);
    let (msg, ..) = load("pong_no_gossip");
    assert!(msg.body.ping().unwrap().gossip.is_empty());
    let (msg, _, nodes) = load("ping_from_replica");
    assert_eq!(msg.header.replicaof, Some(nodes[&1].id));
    assert!(msg.header.flags.contains(NodeFlags::REPLICA));
    assert_eq!(
        msg.header.slots,
        SlotSet::from_ranges(&[(0, 5460)]).unwrap(),
        "a replica sends its master's slots"
    );
    let (msg, ..) = load("ping_paused");
    assert!(
        msg.header.mflags.paused(),
        "master paused for the manual failover"
    );
    let (msg, _, nodes) = load("ping_forgotten_node");
    let forgotten: Vec<_> = msg
        .body
        .ping()
        .unwrap()
        .extensions
        .iter()
        .filter_map(|e| match e {
            PingExt::ForgottenNode { node, ttl } => Some((*node, *ttl)),
            _ => None,
        })
        .collect();
    assert_eq!(forgotten.len(), 1);
    assert_eq!(forgotten[0].0, nodes[&5].id);
    assert!((1..=60).contains(&forgotten[0].1), "ttl {}", forgotten[0].1);
}

#[test]
fn fail() {
    let (msg, _, nodes) = load("fail");
    assert_eq!(msg.body, Body::Fail(nodes[&4].id), "node 4 was killed");
    assert_eq!(msg.encode().len(), HEADER_LEN + 40);
}

#[test]
fn publish_and_publishshard() {
    let (msg, ..) = load("publish");
    match &msg.body {
        Body::Publish(p) => {
            assert_eq!(p.channel, b"news");
            assert_eq!(p.message, b"hello from a");
        }
        b => panic!("{b:?}"),
    }
    let (msg, ..) = load("publishshard");
    match &msg.body {
        Body::PublishShard(p) => {
            assert_eq!(p.channel, b"bar");
            assert_eq!(p.message, b"shard hello");
        }
        b => panic!("{b:?}"),
    }
}

#[test]
fn module() {
    let mut ids = Vec::new();
    for name in ["module_0", "module_1"] {
        let (msg, ..) = load(name);
        match &msg.body {
            Body::Module(m) => {
                assert_eq!(m.msg_type, 1, "hellocluster's PING type");
                assert_eq!(m.payload, b"Hey");
                ids.push(m.module_id);
            }
            b => panic!("{b:?}"),
        }
    }
    // Redis encodes the id from the module's name, and "hellocluster" is too long for that
    // encoding, so its id is 0; the field still travels.
    assert_eq!(ids, [0, 0]);
}

#[test]
fn manual_failover_messages() {
    let (msg, _, nodes) = load("mfstart");
    assert_eq!(msg.body, Body::MfStart);
    assert_eq!(
        msg.header.replicaof,
        Some(nodes[&1].id),
        "sent by the replica to its master"
    );
    for name in ["failover_auth_request_0", "failover_auth_request_1"] {
        let (msg, ..) = load(name);
        assert_eq!(msg.body, Body::FailoverAuthRequest);
        assert!(
            msg.header.mflags.force_ack(),
            "{name}: manual failover asks for a forced ack"
        );
        assert!(msg.header.flags.contains(NodeFlags::REPLICA));
    }
    for name in ["failover_auth_ack_0", "failover_auth_ack_1"] {
        let (msg, ..) = load(name);
        assert_eq!(msg.body, Body::FailoverAuthAck);
        assert!(msg.header.flags.contains(NodeFlags::MASTER));
    }
}

#[test]
fn update() {
    let (msg, _, nodes) = load("update");
    match &msg.body {
        Body::Update(u) => {
            assert!(
                u.node == nodes[&1].id || u.node == nodes[&4].id,
                "the 0-5460 shard's master"
            );
            assert_eq!(u.slots.ranges().collect::<Vec<_>>(), vec![(0, 5460)]);
            assert!(u.config_epoch >= 1 && u.config_epoch <= msg.header.current_epoch);
        }
        b => panic!("{b:?}"),
    }
}

#[test]
fn epochs_and_offsets_tell_the_failover_story() {
    let (mfstart, ..) = load("mfstart");
    let (paused, ..) = load("ping_paused");
    let (request, ..) = load("failover_auth_request_0");
    let (ack, ..) = load("failover_auth_ack_0");
    let (update, ..) = load("update");
    let (fail, ..) = load("fail");
    let (forgotten, forgetter, _) = load("ping_forgotten_node");
    // The paused master advertises the offset the replica must reach; the replica had reached
    // it when it asked for the failover.
    assert!(paused.header.offset > 0);
    assert_eq!(mfstart.header.offset, paused.header.offset);
    // A replica sends its master's configEpoch.
    assert_eq!(request.header.config_epoch, paused.header.config_epoch);
    // The election bumps currentEpoch; voters answer in that epoch; the winner takes it as its
    // configEpoch and tells the old master so with UPDATE.
    assert!(request.header.current_epoch > mfstart.header.current_epoch);
    assert_eq!(ack.header.current_epoch, request.header.current_epoch);
    match &update.body {
        Body::Update(u) => assert_eq!(u.config_epoch, request.header.current_epoch),
        b => panic!("{b:?}"),
    }
    assert_eq!(update.header.config_epoch, request.header.current_epoch);
    // Node 1, now the replica, reports its master failing, sending the master's configEpoch...
    assert_eq!(fail.header.config_epoch, request.header.current_epoch);
    assert!(fail.header.flags.contains(NodeFlags::REPLICA));
    // ...and wins the next election with a newer epoch (seen in its later PINGs).
    assert_eq!(forgetter, 1);
    assert!(forgotten.header.config_epoch > request.header.current_epoch);
    assert!(forgotten.header.flags.contains(NodeFlags::MASTER));
}

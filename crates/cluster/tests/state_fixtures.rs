//! The cluster state machine fed what real redis-server 7.2.6 nodes wrote: nodes.conf files load
//! into a state that saves them back, and the captured bus messages (see `bus_fixtures.rs` for
//! the capture) replayed into a node in the order they happened leave it with the view a Redis
//! node would have: the handshake completed, slots and epochs learned, the failover's UPDATE,
//! the FAIL of the killed node, and a forgotten node dropped.

use std::fs;
use std::path::PathBuf;

use tern_cluster::msg::{msg_type, PingExt};
use tern_cluster::nodes_conf::LinkState;
use tern_cluster::state::{Action, ClusterState, Config, Health, Link};
use tern_cluster::{Body, Msg, NodeFlags, NodeId, NodesConf, SlotSet};

const NOW: u64 = 1_795_690_600_000;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn bus(name: &str) -> Msg {
    let text = fs::read_to_string(fixture_dir().join(format!("bus/{name}.hex"))).unwrap();
    let hex: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::trim)
        .collect();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    Msg::decode(&bytes).unwrap()
}

fn id(s: &str) -> NodeId {
    NodeId::parse(s.as_bytes()).unwrap()
}

const N1: &str = "b3414d02ecaa71cc978eae1d74d9e80a5ad35c49";
const N2: &str = "fc0d9af4ade8b41d82f911e1ee6a8f44b8044acd";
const N3: &str = "6ddee49480201f8305c662756eb9b2ff0d8fa936";
const N4: &str = "d46a67195b29686e003747e4589bb485c81b0f80";
const N5: &str = "ef23ce4f9c2bc0d5a52f7edd064f886d3348807e";

/// Lines of a conf with what loading resets (ping/pong times, link state) blanked, by id.
fn normalized(conf: &NodesConf) -> Vec<String> {
    let mut lines: Vec<String> = conf
        .nodes
        .iter()
        .cloned()
        .map(|mut l| {
            l.ping_sent = 0;
            l.pong_received = 0;
            l.link = LinkState::Connected;
            l.to_line(true)
        })
        .collect();
    lines.sort();
    lines
}

#[test]
fn redis_nodes_conf_files_load_and_save_back() {
    for name in [
        "plain_master",
        "empty_master",
        "master_importing",
        "master_migrating",
        "replica",
    ] {
        let text =
            fs::read_to_string(fixture_dir().join(format!("nodes_conf/{name}.conf"))).unwrap();
        let conf = NodesConf::parse(&text).unwrap();
        let state = ClusterState::from_conf(Config::default(), &conf, 7, NOW);
        let saved = state.to_conf();
        assert_eq!(normalized(&saved), normalized(&conf), "{name}");
        assert_eq!(saved.current_epoch, conf.current_epoch);
        assert_eq!(saved.last_vote_epoch, conf.last_vote_epoch);
        assert!(saved.nodes[0].flags.contains(NodeFlags::MYSELF));
        // Links start down; nodes with a ping/pong time in the file count from now.
        for line in saved.nodes.iter().skip(1) {
            assert_eq!(line.link, LinkState::Disconnected);
            assert!(line.pong_received == 0 || line.pong_received == NOW as i64);
        }
        // The slot map agrees with the node lines.
        for line in &conf.nodes {
            for slot in line.slots.iter() {
                assert_eq!(state.slot_owner(slot), Some(line.id), "{name} slot {slot}");
            }
        }
    }
    let text = fs::read_to_string(fixture_dir().join("nodes_conf/plain_master.conf")).unwrap();
    let state =
        ClusterState::from_conf(Config::default(), &NodesConf::parse(&text).unwrap(), 7, NOW);
    assert_eq!(state.myself(), id(N3));
    assert!(state.node(&id(N4)).unwrap().failed());
    assert_eq!(state.node(&id(N1)).unwrap().config_epoch, 5);
    assert_eq!(state.current_epoch, 6);
}

fn sends(actions: &[Action], link: Link) -> Vec<Msg> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send { link: l, msg } if *l == link => Some((**msg).clone()),
            _ => None,
        })
        .collect()
}

fn logs(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Log { line, .. } => Some(line.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn captured_redis_traffic_replayed_into_node_2() {
    // Node 2 of the capture, serving its slots, knowing only node 5 (which node 1 later forgets).
    let text = format!(
        "{N2} 127.0.0.1:7602@17652,node-b.example,tls-port=0,shard-id=5059a5bc1c98956b59422cb6d4e49b2eb1e4229f myself,master - 0 0 0 connected 5461-10922\n\
         {N5} 127.0.0.1:7605@17655,,tls-port=0,shard-id=5059a5bc1c98956b59422cb6d4e49b2eb1e4229e master - 0 0 0 connected\n\
         vars currentEpoch 0 lastVoteEpoch 0\n"
    );
    let conf = NodesConf::parse(&text).unwrap();
    let mut node = ClusterState::from_conf(Config::default(), &conf, 11, NOW);
    let mut now = NOW;
    let peer = "127.0.0.1";

    // Node 1's MEET: a PONG back on the same link, and node 1 known under a temporary name.
    node.handle_message(Link::Inbound(1), peer, &bus("meet_0"), now);
    let a = node.take_actions();
    let pongs = sends(&a, Link::Inbound(1));
    assert_eq!(pongs.len(), 1);
    assert_eq!(pongs[0].msg_type(), msg_type::PONG);
    assert_eq!(pongs[0].header.sender, id(N2));
    assert_eq!(
        pongs[0].header.slots,
        SlotSet::from_ranges(&[(5461, 10922)]).unwrap()
    );
    let Body::Pong(p) = &pongs[0].body else {
        unreachable!()
    };
    assert!(p.extensions.contains(&PingExt::ShardId(id(
        "5059a5bc1c98956b59422cb6d4e49b2eb1e4229f"
    ))));
    let handshake: Vec<NodeId> = node
        .nodes()
        .filter(|n| n.flags.contains(NodeFlags::HANDSHAKE))
        .map(|n| n.id)
        .collect();
    assert_eq!(handshake.len(), 1);
    let tmp = handshake[0];
    let hn = node.node(&tmp).unwrap();
    assert_eq!((hn.ip.as_str(), hn.port, hn.cport), (peer, 7601, 17651));
    assert!(node.node(&id(N1)).is_none());

    // The cron connects to it and PINGs; node 1's PONG completes the handshake.
    now += 100;
    node.tick(now);
    let a = node.take_actions();
    assert!(a.contains(&Action::Connect {
        node: tmp,
        ip: peer.into(),
        cport: 17651
    }));
    node.link_connected(tmp, now);
    let a = node.take_actions();
    let pings = sends(&a, Link::Outbound(tmp));
    assert_eq!(pings.len(), 1);
    assert_eq!(pings[0].msg_type(), msg_type::PING);
    node.handle_message(Link::Outbound(tmp), peer, &bus("pong_gossip_ext"), now);
    let a = node.take_actions();
    assert!(a.contains(&Action::RenameLink {
        from: tmp,
        to: id(N1)
    }));
    let n1 = node.node(&id(N1)).unwrap();
    assert_eq!(n1.flags, NodeFlags::MASTER);
    assert_eq!(n1.pong_received, now);
    assert!(node.node(&tmp).is_none());

    // Node 1's PING: its slots, epochs, names and shard, and the nodes its gossip names.
    now += 100;
    node.handle_message(Link::Inbound(1), peer, &bus("ping_gossip_ext_0"), now);
    let a = node.take_actions();
    assert_eq!(sends(&a, Link::Inbound(1)).len(), 1);
    assert_eq!(node.current_epoch, 1);
    let n1 = node.node(&id(N1)).unwrap();
    assert_eq!(n1.config_epoch, 1);
    assert_eq!(n1.slots, SlotSet::from_ranges(&[(0, 5460)]).unwrap());
    assert_eq!(n1.hostname, b"node-a.example");
    assert_eq!(n1.human_nodename, b"human-a");
    assert_eq!(n1.shard_id, id("ce0895d291e1e32848cc645bcf140ecb87884a9a"));
    assert_eq!(node.slot_owner(0), Some(id(N1)));
    assert_eq!(node.slot_owner(5461), Some(id(N2)));
    for (other, port) in [(N3, 7603), (N4, 7604)] {
        let n = node.node(&id(other)).expect("learned from gossip");
        assert_eq!((n.ip.as_str(), n.port, n.cport), (peer, port, port + 10050));
        assert!(n.is_master() && !n.in_handshake());
    }

    // Node 4 now replicates node 1.
    node.handle_message(Link::Inbound(2), peer, &bus("ping_from_replica"), now);
    node.take_actions();
    let n4 = node.node(&id(N4)).unwrap();
    assert!(n4.flags.contains(NodeFlags::REPLICA));
    assert_eq!(n4.master, Some(id(N1)));
    assert_eq!(n4.human_nodename, b"human-d");
    assert!(node.node(&id(N1)).unwrap().replicas.contains(&id(N4)));
    assert_eq!(node.current_epoch, 3);

    // The manual failover: node 4's UPDATE about itself at epoch 4 makes it the master of
    // node 1's slots. Its header already carries epoch 4, which (as in Redis) is learned first,
    // leaving the body nothing newer to say; so the body is first delivered under node 1's
    // header (epoch 1), as any node that saw the UPDATE's content would relay it.
    let update = bus("update");
    let relayed = Msg::new(bus("ping_gossip_ext_0").header, update.body.clone());
    node.handle_message(Link::Inbound(1), peer, &relayed, now);
    node.take_actions();
    node.handle_message(Link::Inbound(2), peer, &update, now);
    node.take_actions();
    let n4 = node.node(&id(N4)).unwrap();
    assert!(n4.is_master());
    assert_eq!(n4.config_epoch, 4);
    assert_eq!(node.slot_owner(0), Some(id(N4)));
    assert_eq!(node.slot_owner(5460), Some(id(N4)));

    // Node 4 killed: node 1 (now its replica) broadcasts its FAIL.
    node.handle_message(Link::Inbound(1), peer, &bus("fail"), now);
    let a = node.take_actions();
    assert!(node.node(&id(N4)).unwrap().failed());
    assert!(logs(&a).contains(&format!(
        "FAIL message received from {N1} (human-a) about {N4} (human-d)"
    )));
    // Only PING/PONG/MEET say who is whose replica: the FAIL's header changes no role.
    assert!(node.node(&id(N1)).unwrap().is_master());
    node.before_sleep(now + 5000);
    assert_eq!(node.health(), Health::Fail);

    // Node 1 elected back at epoch 5 takes its slots again, and tells us it forgot node 5.
    node.handle_message(Link::Inbound(1), peer, &bus("ping_forgotten_node"), now);
    node.take_actions();
    let n1 = node.node(&id(N1)).unwrap();
    assert!(n1.is_master());
    assert_eq!(n1.config_epoch, 5);
    assert_eq!(node.slot_owner(0), Some(id(N1)));
    assert!(node.node(&id(N4)).unwrap().slots.is_empty());
    assert!(node.node(&id(N5)).is_none());
    assert_eq!(node.current_epoch, 6);
    // What the node saves loads back.
    node.before_sleep(now);
    let saved = node.to_conf().to_text();
    assert!(node
        .take_actions()
        .contains(&Action::SaveConfig { fsync: true }));
    assert_eq!(NodesConf::parse(&saved).unwrap().to_text(), saved);
}

/// The capture's cluster as node `me` sees it: 1, 2, 3 masters of the three ranges at the
/// epochs of the failover's vote request, 4 replica of 1.
fn failover_cluster(me: &str) -> ClusterState {
    let req = bus("failover_auth_request_0").header;
    let line = |n: &str, port: u16, role: &str, epoch: u64, slots: &str| {
        let flags = if n == me {
            format!("myself,{role}")
        } else {
            role.to_string()
        };
        let (flags, master) = match role {
            "slave" => (flags, N1.to_string()),
            _ => (flags, "-".to_string()),
        };
        format!(
            "{n} 127.0.0.1:{port}@{}{} {flags} {master} 0 0 {epoch} connected {slots}\n",
            port + 10050,
            if n == N4 { ",,nodename=human-d" } else { "" }
        )
    };
    let text = format!(
        "{}{}{}{}vars currentEpoch {} lastVoteEpoch 0\n",
        line(N1, 7601, "master", req.config_epoch, "0-5460"),
        line(N2, 7602, "master", 0, "5461-10922"),
        line(N3, 7603, "master", 0, "10923-16383"),
        line(N4, 7604, "slave", req.config_epoch, ""),
        req.current_epoch - 1
    );
    let mut node =
        ClusterState::from_conf(Config::default(), &NodesConf::parse(&text).unwrap(), 5, NOW);
    for n in [N1, N2, N3, N4] {
        if n != me {
            node.link_connected(id(n), NOW);
        }
    }
    node.take_actions();
    node
}

#[test]
fn captured_manual_failover_replayed_on_each_side() {
    // Node 1 (the master) gets MFSTART from its replica: pauses writes, pings it PAUSED.
    let mut n1 = failover_cluster(N1);
    n1.handle_message(Link::Inbound(1), "127.0.0.1", &bus("mfstart"), NOW);
    let a = n1.take_actions();
    assert!(a
        .iter()
        .any(|a| matches!(a, Action::PauseWrites { until } if *until == NOW + 10_000)));
    assert!(logs(&a).contains(&format!(
        "Manual failover requested by replica {N4} (human-d)."
    )));
    let pings = sends(&a, Link::Outbound(id(N4)));
    assert_eq!(pings.len(), 1);
    assert!(pings[0].header.mflags.paused());

    // Node 2 (another master) grants the captured vote request, FORCEACK as the master is up.
    let req = bus("failover_auth_request_0");
    assert!(req.header.mflags.force_ack());
    let mut n2 = failover_cluster(N2);
    n2.handle_message(Link::Inbound(1), "127.0.0.1", &req, NOW);
    let a = n2.take_actions();
    let acks = sends(&a, Link::Outbound(id(N4)));
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].body, Body::FailoverAuthAck);
    assert_eq!(n2.last_vote_epoch, req.header.current_epoch);
    assert!(logs(&a).contains(&format!(
        "Failover auth granted to {N4} (human-d) for epoch {}",
        req.header.current_epoch
    )));

    // Node 4 (the replica): CLUSTER FAILOVER, the master's PAUSED ping gives the offset, the
    // election runs once caught up, and the two captured ACKs make it master.
    let mut n4 = failover_cluster(N4);
    n4.manual_failover(tern_cluster::manual_failover::FailoverMode::Default, NOW)
        .unwrap();
    let a = n4.take_actions();
    assert_eq!(sends(&a, Link::Outbound(id(N1)))[0].body, Body::MfStart);
    let paused = bus("ping_paused");
    assert!(paused.header.mflags.paused());
    n4.handle_message(Link::Inbound(1), "127.0.0.1", &paused, NOW + 10);
    assert!(logs(&n4.take_actions()).contains(&format!(
        "Received replication offset for paused master manual failover: {}",
        paused.header.offset
    )));
    n4.repl_offset = paused.header.offset;
    let mut now = NOW + 100;
    n4.tick(now);
    now += 100;
    n4.tick(now);
    let a = n4.take_actions();
    let requests: Vec<Msg> = a
        .iter()
        .filter_map(|a| match a {
            Action::Send { msg, .. } if msg.body == Body::FailoverAuthRequest => {
                Some((**msg).clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(requests.len(), 3, "{:#?}", logs(&a));
    assert!(requests[0].header.mflags.force_ack());
    assert_eq!(requests[0].header.current_epoch, req.header.current_epoch);
    for ack in ["failover_auth_ack_0", "failover_auth_ack_1"] {
        n4.handle_message(Link::Inbound(2), "127.0.0.1", &bus(ack), now);
    }
    now += 100;
    n4.tick(now);
    let a = n4.take_actions();
    assert!(a.contains(&Action::PromoteMyself), "{:#?}", logs(&a));
    assert_eq!(n4.slot_owner(0), Some(id(N4)));
    assert_eq!(
        n4.node(&id(N4)).unwrap().config_epoch,
        req.header.current_epoch
    );
}

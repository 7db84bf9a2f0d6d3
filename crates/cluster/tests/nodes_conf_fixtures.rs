//! nodes.conf files written by real redis-server 7.2.6 nodes (`capture_bus.py`): each parses to
//! what the capture set up and is written back byte for byte.

use std::fs;
use std::path::PathBuf;

use tern_cluster::nodes_conf::{LinkState, SlotMigration};
use tern_cluster::{NodeFlags, NodeId, NodesConf};

fn read(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    fs::read_to_string(dir.join("nodes_conf").join(name)).unwrap()
}

/// Node ids by index, from the bus capture of the same run.
fn ids() -> Vec<NodeId> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bus");
    fs::read_to_string(dir.join("nodes.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| NodeId::parse(l.split_whitespace().nth(3).unwrap().as_bytes()).unwrap())
        .collect()
}

fn round_trip(name: &str) -> NodesConf {
    let text = read(name);
    let conf = NodesConf::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(conf.to_text(), text, "{name}: written back differently");
    for node in &conf.nodes {
        assert_eq!(node.ip, "127.0.0.1");
        assert_eq!(
            node.cport as u32,
            node.port as u32 + 10050,
            "announced relay bus port"
        );
        assert_eq!(node.tls_port, Some(0));
        assert!(node.shard_id.is_some());
        let index = (node.port - 7601) as usize;
        assert_eq!(
            node.id,
            ids()[index],
            "{name}: id of the node on port {}",
            node.port
        );
        let hostname = ["node-a.example", "node-b.example", "", "", ""][index];
        assert_eq!(node.hostname, hostname);
        let human = [Some("human-a"), None, None, Some("human-d"), None][index];
        assert_eq!(node.human_nodename.as_deref(), human);
    }
    conf
}

#[test]
fn replica() {
    let conf = round_trip("replica.conf");
    let ids = ids();
    let me = conf.myself().unwrap();
    assert_eq!(me.id, ids[0]);
    assert_eq!(me.flags, NodeFlags::MYSELF | NodeFlags::REPLICA);
    assert_eq!(
        me.master,
        Some(ids[3]),
        "node 1 replicates node 4 after the manual failover"
    );
    assert!(me.slots.is_empty());
    let master = conf.nodes.iter().find(|n| n.id == ids[3]).unwrap();
    assert_eq!(master.slots.ranges().collect::<Vec<_>>(), vec![(0, 5460)]);
    assert_eq!(
        master.shard_id, me.shard_id,
        "a replica is in its master's shard"
    );
    assert_eq!(conf.nodes.len(), 4);
}

#[test]
fn migrating_and_importing() {
    let ids = ids();
    let conf = round_trip("master_migrating.conf");
    let me = conf.myself().unwrap();
    assert_eq!(me.id, ids[0]);
    assert_eq!(
        me.migrations,
        vec![SlotMigration::Migrating {
            slot: 100,
            node: ids[1]
        }]
    );
    assert_eq!(me.slots.ranges().collect::<Vec<_>>(), vec![(0, 5460)]);
    let back = conf.nodes.iter().find(|n| n.id == ids[3]).unwrap();
    assert!(
        back.slots.is_empty(),
        "node 4 came back after node 1 took its slots over"
    );
    assert_eq!(back.flags, NodeFlags::MASTER);
    assert_eq!(back.shard_id, me.shard_id, "it stays in node 1's shard");
    let conf = round_trip("master_importing.conf");
    let me = conf.myself().unwrap();
    assert_eq!(me.id, ids[1]);
    assert_eq!(
        me.migrations,
        vec![SlotMigration::Importing {
            slot: 100,
            node: ids[0]
        }]
    );
    assert_eq!(conf.nodes.len(), 5, "node 5 had joined");
    assert!(conf.current_epoch >= conf.last_vote_epoch);
}

#[test]
fn plain_and_empty_masters() {
    let ids = ids();
    let conf = round_trip("plain_master.conf");
    let me = conf.myself().unwrap();
    assert_eq!(me.id, ids[2]);
    assert_eq!(me.slots.ranges().collect::<Vec<_>>(), vec![(10923, 16383)]);
    assert!(
        conf.nodes.iter().all(|n| n.id != ids[4]),
        "node 5 was forgotten"
    );
    assert!(conf.nodes.iter().all(|n| n.link == LinkState::Connected));
    let conf = round_trip("empty_master.conf");
    let me = conf.myself().unwrap();
    assert_eq!(me.id, ids[3]);
    assert!(
        me.slots.is_empty(),
        "node 4 came back after losing its slots"
    );
    let gone = conf.nodes.iter().find(|n| n.id == ids[4]).unwrap();
    assert_eq!(gone.link, LinkState::Disconnected);
}

#[test]
fn tls_cluster() {
    // Two nodes with `tls-cluster yes` (`capture_bus.py --tls`): Redis 7.2 still writes the plain
    // port in the address and the TLS port as the `tls-port` aux field; the bus port follows the
    // TLS port (7631 + 10000).
    for (i, name) in ["tls_1.conf", "tls_2.conf"].into_iter().enumerate() {
        let text = read(name);
        let conf = NodesConf::parse(&text).unwrap();
        assert_eq!(conf.to_text(), text, "{name}: written back differently");
        assert_eq!(conf.nodes.len(), 2);
        let me = conf.myself().unwrap();
        assert_eq!(me.port, 7611 + i as u16);
        assert_eq!(me.tls_port, Some(7631 + i as u16));
        assert_eq!(me.tcp_port, None);
        assert_eq!(me.cport, 17631 + i as u16);
        assert_eq!(me.human_nodename.as_deref(), Some(["tls-1", "tls-2"][i]));
        let slots: Vec<_> = me.slots.ranges().collect();
        assert_eq!(slots, [vec![(0, 8191)], vec![(8192, 16383)]][i]);
        assert_eq!(conf.current_epoch, 1);
    }
}

//! Redis Cluster driven as a user does: `redis-cli --cluster create` of six nodes (three
//! masters, one replica each), `--cluster check`, a `-MOVED` redirection, the `redis` crate's
//! cluster client reading and writing through it, and `--cluster reshard` of one slot that
//! holds keys. The larger set (rebalance, add/del-node, failover, mixed clusters) is
//! tests/python/test_cluster_py.py.
//!
//! `CLUSTER_IT_SERVER=/usr/bin/redis-server` runs these against real Redis (they pass there);
//! `CLUSTER_REDIS_CLI` picks the redis-cli (default: the one on PATH, from redis-tools).
use crate::common::*;
use redis::cluster::ClusterClient;
use redis::cluster_routing::get_slot;
use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

fn redis_cli() -> String {
    std::env::var("CLUSTER_REDIS_CLI").unwrap_or_else(|_| "redis-cli".into())
}

/// `redis-cli --cluster ARGS`; its output, or a panic with it when it exits non-zero.
fn cluster_cli(args: &[&str]) -> String {
    let out = Command::new(redis_cli())
        .arg("--cluster")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run redis-cli (install redis-tools): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "redis-cli --cluster {args:?} failed:\n{text}"
    );
    text
}

fn addr(s: &Server) -> String {
    format!("127.0.0.1:{}", s.port)
}

/// One line of CLUSTER NODES: id, host:port, flags, master id, owned slots.
struct NodeLine {
    id: String,
    addr: String,
    flags: Vec<String>,
    master: String,
    slots: BTreeSet<u16>,
}

fn cluster_nodes(s: &Server) -> Vec<NodeLine> {
    let text: String = q_as(&mut s.conn(), &["CLUSTER", "NODES"]);
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let mut slots = BTreeSet::new();
            for r in f.iter().skip(8).filter(|r| !r.starts_with('[')) {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                slots.extend(a.parse::<u16>().unwrap()..=b.parse::<u16>().unwrap());
            }
            NodeLine {
                id: f[0].into(),
                addr: f[1].split('@').next().unwrap().into(),
                flags: f[2].split(',').map(String::from).collect(),
                master: f[3].into(),
                slots,
            }
        })
        .collect()
}

/// What every node must agree on: slots per node and who replicates whom.
fn shape(s: &Server) -> Vec<(String, String, Vec<u16>)> {
    let mut v: Vec<_> = cluster_nodes(s)
        .into_iter()
        .map(|n| (n.id, n.master, n.slots.into_iter().collect()))
        .collect();
    v.sort();
    v
}

/// Wait until every node says cluster_state:ok and all see the same shape (gossip converged).
fn wait_converged(nodes: &[Server]) {
    wait_for("the cluster to converge", Duration::from_secs(30), || {
        nodes.iter().all(|n| {
            let info: String = q_as(&mut n.conn(), &["CLUSTER", "INFO"]);
            info.contains("cluster_state:ok")
        }) && nodes.iter().all(|n| shape(n) == shape(&nodes[0]))
    });
}

fn create(n: usize, replicas: usize) -> Vec<Server> {
    let nodes: Vec<Server> = (0..n).map(|_| Server::cluster_node(5000)).collect();
    let mut args = vec!["create".to_string()];
    args.extend(nodes.iter().map(addr));
    args.extend(["--cluster-replicas".into(), replicas.to_string()]);
    args.push("--cluster-yes".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cluster_cli(&args);
    wait_converged(&nodes);
    nodes
}

fn check_clean(entry: &Server) {
    let out = cluster_cli(&["check", &addr(entry)]);
    assert!(out.contains("[OK] All 16384 slots covered."), "{out}");
    assert!(
        out.contains("[OK] All nodes agree about slots configuration."),
        "{out}"
    );
    assert!(
        !out.contains("[ERR]") && !out.contains("[WARNING]"),
        "{out}"
    );
}

fn owner_of(nodes: &[Server], slot: u16) -> &Server {
    let line = cluster_nodes(&nodes[0])
        .into_iter()
        .find(|n| n.flags.iter().any(|f| f == "master") && n.slots.contains(&slot))
        .unwrap_or_else(|| panic!("no master owns slot {slot}"));
    nodes.iter().find(|s| addr(s) == line.addr).unwrap()
}

#[test]
fn create_six_nodes_check_moved_and_cluster_client() {
    let nodes = create(6, 1);
    check_clean(&nodes[0]);
    let view = cluster_nodes(&nodes[0]);
    let masters: Vec<&NodeLine> = view
        .iter()
        .filter(|n| n.flags.iter().any(|f| f == "master"))
        .collect();
    let replicas: Vec<&NodeLine> = view
        .iter()
        .filter(|n| n.flags.iter().any(|f| f == "slave"))
        .collect();
    assert_eq!((masters.len(), replicas.len()), (3, 3));
    let covered: BTreeSet<u16> = masters
        .iter()
        .flat_map(|m| m.slots.iter().copied())
        .collect();
    assert_eq!(covered.len(), 16384);
    for r in &replicas {
        assert!(
            masters.iter().any(|m| m.id == r.master),
            "{} follows a master",
            r.addr
        );
    }

    // A key asked of a master that does not own its slot: -MOVED slot owner.
    let slot = get_slot(b"foo");
    assert_eq!(slot, 12182);
    let owner = owner_of(&nodes, slot);
    let other = nodes
        .iter()
        .find(|s| {
            let a = addr(s);
            masters.iter().any(|m| m.addr == a) && s.port != owner.port
        })
        .unwrap();
    let mut raw = Raw::<false>::new(other.port);
    assert_eq!(raw.q("GET foo"), format!("!MOVED {slot} {}", addr(owner)));

    // The cluster client follows the slot map: 1000 keys written and read back.
    let client = ClusterClient::new(vec![other.url()]).unwrap();
    let mut cc = client.get_connection().unwrap();
    for i in 0..1000 {
        let _: () = redis::cmd("SET")
            .arg(format!("key:{i}"))
            .arg(i)
            .query(&mut cc)
            .unwrap();
    }
    for i in 0..1000 {
        let v: i64 = redis::cmd("GET")
            .arg(format!("key:{i}"))
            .query(&mut cc)
            .unwrap();
        assert_eq!(v, i);
    }
    // Each master holds exactly the keys of its own slots.
    let mut total = 0;
    for m in &masters {
        let s = nodes.iter().find(|s| addr(s) == m.addr).unwrap();
        let n: usize = q_as(&mut s.conn(), &["DBSIZE"]);
        let want = (0..1000)
            .filter(|i| m.slots.contains(&get_slot(format!("key:{i}").as_bytes())))
            .count();
        assert_eq!(n, want, "{}", m.addr);
        total += n;
    }
    assert_eq!(total, 1000);
}

#[test]
fn reshard_one_slot_with_keys() {
    let nodes = create(3, 0);
    let view = cluster_nodes(&nodes[0]);
    let src_line = view.iter().find(|n| !n.slots.is_empty()).unwrap();
    let dst_line = view
        .iter()
        .find(|n| !n.slots.is_empty() && n.id != src_line.id)
        .unwrap();
    let src = nodes.iter().find(|s| addr(s) == src_line.addr).unwrap();
    let dst = nodes.iter().find(|s| addr(s) == dst_line.addr).unwrap();
    // `reshard --cluster-slots 1` moves the source's first slot: fill it with keys.
    let slot = *src_line.slots.iter().next().unwrap();
    let keys: Vec<String> = (0..)
        .map(|i| format!("k{i}"))
        .filter(|k| get_slot(k.as_bytes()) == slot)
        .take(40)
        .collect();
    let mut sc = src.conn();
    for k in &keys {
        let _: () = cmd(&["SET", k, &format!("v-{k}")]).query(&mut sc).unwrap();
    }
    let count = |s: &Server| -> usize {
        q_as(
            &mut s.conn(),
            &["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()],
        )
    };
    assert_eq!(count(src), 40);

    cluster_cli(&[
        "reshard",
        &addr(&nodes[0]),
        "--cluster-from",
        &src_line.id,
        "--cluster-to",
        &dst_line.id,
        "--cluster-slots",
        "1",
        "--cluster-yes",
    ]);
    wait_converged(&nodes);
    check_clean(&nodes[0]);
    assert!(cluster_nodes(&nodes[0])
        .iter()
        .any(|n| n.id == dst_line.id && n.slots.contains(&slot)));
    assert_eq!((count(src), count(dst)), (0, 40));
    let mut raw = Raw::<false>::new(src.port);
    assert_eq!(
        raw.q(&format!("GET {}", keys[0])),
        format!("!MOVED {slot} {}", addr(dst))
    );
    let client = ClusterClient::new(vec![src.url()]).unwrap();
    let mut cc = client.get_connection().unwrap();
    for k in &keys {
        let v: String = redis::cmd("GET").arg(k).query(&mut cc).unwrap();
        assert_eq!(v, format!("v-{k}"));
    }
}

//! Cluster mode (`cluster-enabled yes`) with real tern nodes talking Redis's cluster bus:
//! nodes MEET and converge, slots spread, the cluster turns `ok`; nodes.conf survives a
//! restart and is locked; CLUSTER REPLICATE makes a replica with its master's data; CLUSTER
//! FAILOVER swaps roles; kill -9 of a master gets its replica promoted; a tern node and a real
//! redis-server 7.2.6 form one cluster. Errors of the CLUSTER subcommands as Redis's.
use crate::common::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Redis 7.2.6 built from source (the only one that speaks the 7.2 bus with shard ids).
const REDIS_72: &str = concat!(env!("HOME"), "/redis-7.2.6/src/redis-server");

struct Node {
    server: Server,
    bus: u16,
    dir: PathBuf,
}

/// A data directory that outlives the server (the harness wipes its own at start).
fn data_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tern-cluster-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("data dir");
    d
}

fn start_at(port: u16, bus: u16, dir: &std::path::Path, extra: &[&str]) -> Server {
    let bus_s = bus.to_string();
    let dir_s = dir.to_string_lossy().to_string();
    let mut args = vec![
        "--cluster-enabled",
        "yes",
        "--cluster-port",
        &bus_s,
        "--cluster-node-timeout",
        "2000",
        "--dir",
        &dir_s,
    ];
    args.extend_from_slice(extra);
    Server::tern_at(port, &args, &[])
}

fn node(tag: &str) -> Node {
    let port = free_port();
    let bus = free_port();
    let dir = data_dir(&format!("{tag}-{port}"));
    Node {
        server: start_at(port, bus, &dir, &[]),
        bus,
        dir,
    }
}

fn s(c: &mut redis::Connection, args: &[&str]) -> String {
    let v: redis::Value = cmd(args)
        .query(c)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    match v {
        redis::Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        redis::Value::SimpleString(s) => s,
        redis::Value::Okay => "OK".into(),
        redis::Value::Int(n) => n.to_string(),
        redis::Value::VerbatimString { text, .. } => text,
        other => format!("{other:?}"),
    }
}

fn info_field_of(text: &str, field: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn meet(from: &Node, to: &Node) {
    let mut c = from.server.conn();
    assert_eq!(
        s(
            &mut c,
            &[
                "cluster",
                "meet",
                "127.0.0.1",
                &to.server.port.to_string(),
                &to.bus.to_string()
            ]
        ),
        "OK"
    );
}

/// Every node lists `n` nodes, all connected, none in handshake.
fn converged(nodes: &[&Node], n: usize) -> bool {
    nodes.iter().all(|x| {
        let text = s(&mut x.server.conn(), &["cluster", "nodes"]);
        let lines: Vec<&str> = text.lines().collect();
        lines.len() == n
            && lines
                .iter()
                .all(|l| l.contains(" connected") && !l.contains("handshake"))
    })
}

fn cluster_ok(x: &Node) -> bool {
    info_field_of(
        &s(&mut x.server.conn(), &["cluster", "info"]),
        "cluster_state",
    ) == "ok"
}

fn myid(x: &Node) -> String {
    s(&mut x.server.conn(), &["cluster", "myid"])
}

/// Three masters that met and share the 16384 slots.
fn three_masters(tag: &str) -> Vec<Node> {
    let nodes: Vec<Node> = (0..3).map(|i| node(&format!("{tag}{i}"))).collect();
    meet(&nodes[0], &nodes[1]);
    meet(&nodes[0], &nodes[2]);
    let ranges = [("0", "5460"), ("5461", "10922"), ("10923", "16383")];
    for (n, (a, b)) in nodes.iter().zip(ranges) {
        assert_eq!(
            s(&mut n.server.conn(), &["cluster", "addslotsrange", a, b]),
            "OK"
        );
    }
    let refs: Vec<&Node> = nodes.iter().collect();
    wait_for("three nodes to converge", Duration::from_secs(20), || {
        converged(&refs, 3)
    });
    for n in &nodes {
        wait_for("cluster_state:ok", Duration::from_secs(20), || {
            cluster_ok(n)
        });
    }
    nodes
}

/// Redis's key slot, from the server's own implementation.
fn key_slot(key: &str) -> u16 {
    tern_runtime::cluster::proto::key_hash_slot(key.as_bytes())
}

/// `n` keys whose slots are in `lo..=hi`.
fn keys_in(lo: u16, hi: u16, n: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("key:{i}"))
        .filter(|k| (lo..=hi).contains(&key_slot(k)))
        .take(n)
        .collect()
}

fn role(x: &Node) -> String {
    info_field_of(&s(&mut x.server.conn(), &["info", "replication"]), "role")
}

#[test]
fn three_nodes_meet_converge_and_serve_slots() {
    let nodes = three_masters("conv");
    let mut c = nodes[0].server.conn();
    let info = s(&mut c, &["cluster", "info"]);
    assert_eq!(info_field_of(&info, "cluster_slots_assigned"), "16384");
    assert_eq!(info_field_of(&info, "cluster_slots_ok"), "16384");
    assert_eq!(info_field_of(&info, "cluster_known_nodes"), "3");
    assert_eq!(info_field_of(&info, "cluster_size"), "3");
    assert!(!info_field_of(&info, "cluster_stats_messages_ping_sent").is_empty());
    // Every node has a distinct configEpoch once collisions are resolved.
    wait_for("distinct epochs", Duration::from_secs(10), || {
        let mut epochs: Vec<String> = nodes
            .iter()
            .map(|n| {
                info_field_of(
                    &s(&mut n.server.conn(), &["cluster", "info"]),
                    "cluster_my_epoch",
                )
            })
            .collect();
        epochs.sort();
        epochs.dedup();
        epochs.len() == 3
    });
    // CLUSTER SLOTS: three ranges, each with its master's address and id.
    let slots: Vec<(i64, i64, (String, i64, String))> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query::<Vec<redis::Value>>(&mut c)
        .unwrap()
        .into_iter()
        .map(|r| {
            let redis::Value::Array(v) = r else {
                panic!("{r:?}")
            };
            let a: i64 = redis::from_redis_value(&v[0]).unwrap();
            let b: i64 = redis::from_redis_value(&v[1]).unwrap();
            let redis::Value::Array(m) = &v[2] else {
                panic!()
            };
            let ip: String = redis::from_redis_value(&m[0]).unwrap();
            let port: i64 = redis::from_redis_value(&m[1]).unwrap();
            let id: String = redis::from_redis_value(&m[2]).unwrap();
            (a, b, (ip, port, id))
        })
        .collect();
    assert_eq!(slots.len(), 3);
    for (a, b, (ip, port, id)) in &slots {
        let owner = nodes
            .iter()
            .find(|n| n.server.port as i64 == *port)
            .expect("a node's port");
        assert_eq!(ip, "127.0.0.1");
        assert_eq!(*id, myid(owner));
        assert!(matches!((a, b), (0, 5460) | (5461, 10922) | (10923, 16383)));
    }
    // CLUSTER SHARDS: one shard per master, its slots as pairs.
    let shards: Vec<redis::Value> = redis::cmd("CLUSTER").arg("SHARDS").query(&mut c).unwrap();
    assert_eq!(shards.len(), 3);
    // CLUSTER LINKS: a link to and a link from each of the two peers.
    let links: Vec<redis::Value> = redis::cmd("CLUSTER").arg("LINKS").query(&mut c).unwrap();
    assert_eq!(links.len(), 4, "{links:?}");
    // Errors as Redis's.
    assert_eq!(
        err(&mut c, &["cluster", "addslots", "100"]),
        "ERR Slot 100 is already busy"
    );
    assert_eq!(
        err(&mut c, &["cluster", "addslots", "99999"]),
        "ERR Invalid or out of range slot"
    );
    assert_eq!(
        err(&mut c, &["cluster", "addslotsrange", "10", "5"]),
        "ERR start slot number 10 is greater than end slot number 5"
    );
    assert_eq!(
        err(&mut c, &["cluster", "forget", &myid(&nodes[0])]),
        "ERR I tried hard but I can't forget myself..."
    );
    assert_eq!(
        err(
            &mut c,
            &[
                "cluster",
                "replicate",
                "0000000000000000000000000000000000000000"
            ]
        ),
        "ERR Unknown node 0000000000000000000000000000000000000000"
    );
    assert_eq!(
        err(&mut c, &["cluster", "failover"]),
        "ERR You should send CLUSTER FAILOVER to a replica"
    );
    assert_eq!(
        err(&mut c, &["cluster", "set-config-epoch", "5"]),
        "ERR The user can assign a config epoch only when the node does not know any other node."
    );
    assert_eq!(
        err(&mut c, &["select", "1"]),
        "ERR SELECT is not allowed in cluster mode"
    );
    assert_eq!(
        err(&mut c, &["replicaof", "127.0.0.1", "1"]),
        "ERR REPLICAOF not allowed in cluster mode."
    );
    assert_eq!(
        err(&mut c, &["cluster", "meet", "nohost", "1"]),
        "ERR Invalid node address specified: nohost:1"
    );
    assert_eq!(
        err(&mut c, &["cluster", "nosuch"]),
        "ERR unknown subcommand 'nosuch'. Try CLUSTER HELP."
    );
    // DELSLOTS frees a slot everywhere it is asked; the cluster is then down (full coverage).
    assert_eq!(s(&mut c, &["cluster", "delslots", "0"]), "OK");
    assert_eq!(
        err(&mut c, &["cluster", "delslots", "0"]),
        "ERR Slot 0 is already unassigned"
    );
    wait_for("cluster_state:fail", Duration::from_secs(10), || {
        !cluster_ok(&nodes[0])
    });
    assert_eq!(s(&mut c, &["cluster", "addslots", "0"]), "OK");
    wait_for("cluster_state:ok again", Duration::from_secs(10), || {
        cluster_ok(&nodes[0])
    });
    // CLUSTER FORGET: gone from the table (and back by gossip after the ban otherwise).
    let gone = myid(&nodes[2]);
    assert_eq!(s(&mut c, &["cluster", "forget", &gone]), "OK");
    assert!(!s(&mut c, &["cluster", "nodes"]).contains(&gone));
    assert_eq!(s(&mut c, &["cluster", "forget", &gone]), "OK");
}

#[test]
fn nodes_conf_survives_a_restart_and_is_locked() {
    let port = free_port();
    let bus = free_port();
    let dir = data_dir(&format!("restart-{port}"));
    let mut first = start_at(port, bus, &dir, &[]);
    let mut c = first.conn();
    assert_eq!(s(&mut c, &["cluster", "set-config-epoch", "7"]), "OK");
    assert_eq!(
        err(&mut c, &["cluster", "set-config-epoch", "8"]),
        "ERR Node config epoch is already non-zero"
    );
    assert_eq!(
        s(
            &mut c,
            &["cluster", "addslotsrange", "0", "99", "200", "300"]
        ),
        "OK"
    );
    assert_eq!(s(&mut c, &["cluster", "saveconfig"]), "OK");
    let id = s(&mut c, &["cluster", "myid"]);
    let shard = s(&mut c, &["cluster", "myshardid"]);
    let conf = std::fs::read_to_string(dir.join("nodes.conf")).expect("nodes.conf");
    assert!(conf.contains(&id), "{conf}");
    assert!(
        conf.ends_with("vars currentEpoch 7 lastVoteEpoch 0\n"),
        "{conf}"
    );
    // A second server on the same file refuses to start, with Redis's message.
    let other = free_port();
    let mut second = start_second(other, &dir);
    assert!(second.wait_exit(Duration::from_secs(10)).is_some());
    assert!(
        second
            .log()
            .contains("is already used by a different Redis Cluster node"),
        "{}",
        second.log()
    );
    first.signal(9);
    first.wait_exit(Duration::from_secs(10));
    drop(first);
    let again = start_at(port, bus, &dir, &[]);
    let mut c = again.conn();
    assert_eq!(s(&mut c, &["cluster", "myid"]), id);
    assert_eq!(s(&mut c, &["cluster", "myshardid"]), shard);
    let nodes = s(&mut c, &["cluster", "nodes"]);
    assert!(
        nodes.contains(" myself,master - 0 0 7 connected 0-99 200-300"),
        "{nodes}"
    );
    let info = s(&mut c, &["cluster", "info"]);
    assert_eq!(info_field_of(&info, "cluster_current_epoch"), "7");
    assert_eq!(info_field_of(&info, "cluster_slots_assigned"), "201");
    // RESET HARD: a new id, epochs back to 0, no slots.
    assert_eq!(s(&mut c, &["cluster", "reset", "hard"]), "OK");
    assert_ne!(s(&mut c, &["cluster", "myid"]), id);
    let info = s(&mut c, &["cluster", "info"]);
    assert_eq!(info_field_of(&info, "cluster_current_epoch"), "0");
    assert_eq!(info_field_of(&info, "cluster_slots_assigned"), "0");
    // A master with keys cannot be reset.
    assert_eq!(s(&mut c, &["cluster", "addslotsrange", "0", "16383"]), "OK");
    let me = Node {
        server: again,
        bus,
        dir: dir.clone(),
    };
    wait_for(
        "a one-node cluster to be ok",
        Duration::from_secs(10),
        || cluster_ok(&me),
    );
    let mut c = me.server.conn();
    assert_eq!(s(&mut c, &["set", "k", "v"]), "OK");
    assert_eq!(
        err(&mut c, &["cluster", "reset"]),
        "ERR CLUSTER RESET can't be called with master nodes containing keys"
    );
    assert_eq!(
        err(&mut c, &["cluster", "flushslots"]),
        "ERR DB must be empty to perform CLUSTER FLUSHSLOTS."
    );
}

fn start_second(port: u16, dir: &std::path::Path) -> Server {
    // Not through `tern_at`'s readiness wait: this one must exit.
    let bus = free_port();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tern-server"));
    let logdir = std::env::temp_dir().join(format!("tern-test-{port}"));
    let _ = std::fs::create_dir_all(&logdir);
    let log = std::fs::File::create(logdir.join("server.log")).unwrap();
    cmd.args([
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--cluster-enabled",
        "yes",
        "--cluster-port",
        &bus.to_string(),
        "--dir",
        &dir.to_string_lossy(),
    ])
    .current_dir(&logdir)
    .stdout(log.try_clone().unwrap())
    .stderr(log);
    Server::from_child(cmd.spawn().unwrap(), port)
}

#[test]
fn replicate_failover_and_promotion_after_kill() {
    let masters = three_masters("fo");
    let replica = node("fo-r");
    meet(&replica, &masters[0]);
    let all: Vec<&Node> = masters.iter().chain([&replica]).collect();
    wait_for("four nodes", Duration::from_secs(20), || converged(&all, 4));
    // Data written before the replica attaches reaches it.
    let keys = keys_in(0, 5460, 20);
    let mut m = masters[0].server.conn();
    for k in &keys {
        assert_eq!(s(&mut m, &["set", k, k]), "OK");
    }
    let mut r = replica.server.conn();
    assert_eq!(
        err(&mut r, &["cluster", "replicate", &myid(&replica)]),
        "ERR Can't replicate myself"
    );
    assert_eq!(
        s(&mut r, &["cluster", "replicate", &myid(&masters[0])]),
        "OK"
    );
    wait_for("the replica to sync", Duration::from_secs(20), || {
        info_field_of(
            &s(&mut replica.server.conn(), &["info", "replication"]),
            "master_link_status",
        ) == "up"
    });
    wait_for(
        "the replica to hold the data",
        Duration::from_secs(10),
        || s(&mut replica.server.conn(), &["dbsize"]) == keys.len().to_string(),
    );
    // Everyone sees it as the master's replica.
    let master_id = myid(&masters[0]);
    wait_for("replica seen by all", Duration::from_secs(10), || {
        masters.iter().all(|n| {
            s(&mut n.server.conn(), &["cluster", "replicas", &master_id]).contains(&myid(&replica))
        })
    });
    assert_eq!(
        err(&mut r, &["cluster", "setslot", "1", "stable"]),
        "ERR Please use SETSLOT only with masters."
    );

    // CLUSTER FAILOVER: the replica takes over, the old master follows it.
    assert_eq!(s(&mut r, &["cluster", "failover"]), "OK");
    wait_for("roles to swap", Duration::from_secs(15), || {
        role(&replica) == "master" && role(&masters[0]) == "slave"
    });
    wait_for(
        "the new master to serve slots 0-5460 everywhere",
        Duration::from_secs(10),
        || {
            let rid = myid(&replica);
            masters[1..].iter().all(|n| {
                s(&mut n.server.conn(), &["cluster", "nodes"])
                    .lines()
                    .any(|l| l.starts_with(&rid) && l.contains("master") && l.ends_with("0-5460"))
            })
        },
    );
    assert_eq!(s(&mut r, &["get", &keys[0]]), keys[0]);

    // kill -9 of the (new) master: the old one, now its replica, is promoted.
    wait_for("the old master to sync", Duration::from_secs(20), || {
        info_field_of(
            &s(&mut masters[0].server.conn(), &["info", "replication"]),
            "master_link_status",
        ) == "up"
    });
    let replica_id = myid(&replica);
    replica.server.signal(9);
    wait_for("promotion after the kill", Duration::from_secs(30), || {
        role(&masters[0]) == "master"
    });
    wait_for(
        "cluster ok without the dead node",
        Duration::from_secs(20),
        || cluster_ok(&masters[1]) && cluster_ok(&masters[0]),
    );
    let mut m = masters[0].server.conn();
    assert_eq!(s(&mut m, &["get", &keys[1]]), keys[1]);
    let nodes = s(&mut masters[1].server.conn(), &["cluster", "nodes"]);
    let dead = nodes
        .lines()
        .find(|l| l.starts_with(&replica_id))
        .expect("the dead node is still listed");
    assert!(dead.contains("fail"), "{nodes}");
    let _ = &replica.dir;
}

#[test]
fn tern_and_redis_72_nodes_form_one_cluster() {
    if !std::path::Path::new(REDIS_72).exists() {
        eprintln!("skipped: {REDIS_72} not built");
        return;
    }
    let t = node("mixed");
    let rport = free_port();
    let rbus = free_port();
    let rdir = data_dir(&format!("mixed-redis-{rport}"));
    let mut cmd = std::process::Command::new(REDIS_72);
    cmd.args([
        "--port",
        &rport.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--cluster-enabled",
        "yes",
        "--cluster-port",
        &rbus.to_string(),
        "--cluster-node-timeout",
        "2000",
        "--dir",
        &rdir.to_string_lossy(),
    ]);
    let redis = Server::spawn_cmd(cmd, rport);
    let rnode = Node {
        server: redis,
        bus: rbus,
        dir: rdir,
    };
    meet(&t, &rnode);
    assert_eq!(
        s(
            &mut t.server.conn(),
            &["cluster", "addslotsrange", "0", "8191"]
        ),
        "OK"
    );
    assert_eq!(
        s(
            &mut rnode.server.conn(),
            &["cluster", "addslotsrange", "8192", "16383"]
        ),
        "OK"
    );
    wait_for(
        "tern and redis to converge",
        Duration::from_secs(20),
        || converged(&[&t, &rnode], 2),
    );
    wait_for("both ok", Duration::from_secs(20), || {
        cluster_ok(&t) && cluster_ok(&rnode)
    });
    // Redis sees tern's slots and shard id as tern does.
    let tid = myid(&t);
    let from_redis = s(&mut rnode.server.conn(), &["cluster", "nodes"]);
    assert!(
        from_redis
            .lines()
            .any(|l| l.starts_with(&tid) && l.ends_with(" connected 0-8191")),
        "{from_redis}"
    );
    let shards = format!(
        "{:?}",
        redis::cmd("CLUSTER")
            .arg("SHARDS")
            .query::<redis::Value>(&mut rnode.server.conn())
            .unwrap()
    );
    // One shard per master: tern's with its slots and id.
    assert!(
        shards.contains(&tid) && shards.contains("int(0), int(8191)"),
        "{shards}"
    );
    let _ = &rnode.dir;
}

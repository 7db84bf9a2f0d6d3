//! PSYNC2: a replica's replication history is its master's (the same ID, the same offsets,
//! the master's stream passed on unchanged to its own replicas), and it survives what
//! production deployments do to it: a chained replica continues from its replica's backlog,
//! a replica or a master restarted from its RDB continues where the file says, and the
//! siblings of a promoted replica (and the old master) continue with it. Tern and Debian's
//! redis-server in each role.
use crate::common::*;
use crate::persist_data::*;
use crate::psync::{sync_counts, write_while_down};
use std::time::Duration;

const DEBUG: &[&str] = &["--enable-debug-command", "yes"];

fn field(c: &mut redis::Connection, name: &str) -> String {
    info_field(c, "replication", name)
}

fn digest(c: &mut redis::Connection) -> redis::Value {
    q(c, &["DEBUG", "DIGEST"])
}

/// A master, a replica of it, and a replica of that replica: the chain shares one history.
fn chain_continues(master: &Server, middle: &Server, last: &Server) {
    let mut m = master.conn();
    let mut r1 = middle.conn();
    let mut r2 = last.conn();
    fill_all(&mut m);
    replicaof(&mut r1, master);
    wait_caught_up(&mut m, &mut r1);
    replicaof(&mut r2, middle);
    wait_caught_up(&mut m, &mut r2);
    write_while_down(&mut m, 1);
    wait_caught_up(&mut m, &mut r2);
    // One history: the master's ID and offsets all along the chain.
    let id = field(&mut m, "master_replid");
    let offset = field(&mut m, "master_repl_offset");
    for r in [&mut r1, &mut r2] {
        assert_eq!(field(r, "master_replid"), id);
        assert_eq!(field(r, "master_repl_offset"), offset);
    }
    // The last replica's link drops: it continues from the middle one's backlog.
    let (full, ok, _) = sync_counts(&mut r1);
    assert_eq!(q(&mut r2, &["CLIENT", "KILL", "TYPE", "master"]), int(1));
    write_while_down(&mut m, 2);
    wait_caught_up(&mut m, &mut r2);
    let (full2, ok2, _) = sync_counts(&mut r1);
    assert_eq!((full2, ok2), (full, ok + 1));
    assert_eq!(digest(&mut m), digest(&mut r2));
    compare(&mut m, &mut r2);
}

#[test]
fn a_chained_tern_replica_gets_the_masters_stream_and_continues() {
    chain_continues(
        &Server::tern(DEBUG),
        &Server::tern(DEBUG),
        &Server::tern(DEBUG),
    );
}

#[test]
fn redis_replica_of_a_tern_replica_of_redis_continues() {
    let Some(master) = Server::redis_master() else {
        return;
    };
    let Some(last) = Server::redis(DEBUG) else {
        return;
    };
    chain_continues(&master, &Server::tern(DEBUG), &last);
}

/// Wait until the server on `port` stopped (SHUTDOWN), then free its slot.
fn shut_down(s: &mut Server, c: &mut redis::Connection) {
    let _ = run(c, &[b"SHUTDOWN", b"SAVE"]);
    assert!(s.wait_exit(Duration::from_secs(20)).is_some(), "exit");
}

#[test]
fn a_replica_restarted_from_its_rdb_continues() {
    let master = Server::tern(DEBUG);
    let mut m = master.conn();
    let dir = fresh_dir("psync2-replica-restart");
    let dir_arg = dir.to_str().unwrap().to_string();
    let mport = master.port.to_string();
    let args = [
        DEBUG,
        &["--dir", &dir_arg, "--replicaof", "127.0.0.1", &mport],
    ]
    .concat();
    let mut replica = Server::tern(&args);
    let mut r = replica.conn();
    fill_all(&mut m);
    wait_caught_up(&mut m, &mut r);
    write_while_down(&mut m, 1);
    wait_caught_up(&mut m, &mut r);
    let port = replica.port;
    shut_down(&mut replica, &mut r);
    drop(replica);
    // Writes meanwhile, in another database than the stream's last.
    let mut m5 = master.conn();
    q(&mut m5, &["SELECT", "5"]);
    q(&mut m5, &["SET", "while:down", "v"]);
    write_while_down(&mut m, 2);
    let replica = Server::tern_at(port, &args, &[]);
    let mut r = replica.conn();
    wait_caught_up(&mut m, &mut r);
    assert_eq!(sync_counts(&mut m).0, 1, "no second full sync");
    assert_eq!(sync_counts(&mut m).1, 1, "one partial resync");
    assert!(replica
        .log()
        .contains("Successful partial resynchronization with master."));
    assert_eq!(digest(&mut m), digest(&mut r));
    compare(&mut m, &mut r);
}

#[test]
fn replicas_continue_after_their_master_restarts_from_its_rdb() {
    let dir = fresh_dir("psync2-master-restart");
    let dir_arg = dir.to_str().unwrap().to_string();
    let args = [DEBUG, &["--dir", &dir_arg]].concat();
    let mut master = Server::tern(&args);
    let port = master.port;
    let mut m = master.conn();
    let tern_replica = Server::tern(DEBUG);
    let redis_replica = Server::redis(DEBUG);
    let mut replicas: Vec<redis::Connection> = [Some(&tern_replica), redis_replica.as_ref()]
        .into_iter()
        .flatten()
        .map(|s| s.conn())
        .collect();
    fill_all(&mut m);
    for r in replicas.iter_mut() {
        replicaof(r, &master);
    }
    // A key that expires while the master is down: its DEL reaches the replicas.
    q(&mut m, &["SET", "short", "v", "PX", "300"]);
    write_while_down(&mut m, 1);
    for r in replicas.iter_mut() {
        wait_caught_up(&mut m, r);
    }
    let old_id = field(&mut m, "master_replid");
    shut_down(&mut master, &mut m);
    drop(master);
    // Where the master's stream ended (its shutdown asked the replicas for an ACK, in the
    // stream too): where the tern replica stands.
    let old_offset: i64 = field(&mut replicas[0], "master_repl_offset")
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let master = Server::tern_at(port, &args, &[]);
    let mut m = master.conn();
    // The old history is ID 2, up to where the file left it.
    assert_eq!(field(&mut m, "master_replid2"), old_id);
    assert_eq!(
        field(&mut m, "second_repl_offset"),
        (old_offset + 1).to_string()
    );
    assert_ne!(field(&mut m, "master_replid"), old_id);
    write_while_down(&mut m, 2);
    for r in replicas.iter_mut() {
        wait_caught_up(&mut m, r);
        assert_eq!(q(r, &["EXISTS", "short"]), int(0));
        assert_eq!(digest(&mut m), digest(r));
        assert_eq!(field(r, "master_replid"), field(&mut m, "master_replid"));
    }
    let n = replicas.len() as u64;
    assert_eq!(sync_counts(&mut m), (0, n, 0));
}

/// A master with two replicas; one is promoted (REPLICAOF NO ONE): the other, and then the
/// old master, follow it with a partial resynchronization.
fn promotion_keeps_partial_resync(master: &Server, promoted: &Server, sibling: &Server) {
    let mut m = master.conn();
    let mut p = promoted.conn();
    let mut s = sibling.conn();
    fill_all(&mut m);
    replicaof(&mut p, master);
    replicaof(&mut s, master);
    write_while_down(&mut m, 1);
    wait_caught_up(&mut m, &mut p);
    wait_caught_up(&mut m, &mut s);
    let old_id = field(&mut m, "master_replid");
    let offset: i64 = field(&mut m, "master_repl_offset").parse().unwrap();
    q(&mut p, &["REPLICAOF", "NO", "ONE"]);
    assert_eq!(field(&mut p, "role"), "master");
    assert_eq!(field(&mut p, "master_replid2"), old_id);
    assert_eq!(
        field(&mut p, "second_repl_offset"),
        (offset + 1).to_string()
    );
    replicaof(&mut s, promoted);
    write_while_down(&mut p, 2);
    wait_caught_up(&mut p, &mut s);
    replicaof(&mut m, promoted);
    wait_caught_up(&mut p, &mut m);
    assert_eq!(sync_counts(&mut p), (0, 2, 0));
    assert_eq!(digest(&mut p), digest(&mut s));
    assert_eq!(digest(&mut p), digest(&mut m));
    compare(&mut p, &mut m);
}

#[test]
fn a_promoted_tern_replica_keeps_its_siblings_and_old_master_partial() {
    promotion_keeps_partial_resync(
        &Server::tern(DEBUG),
        &Server::tern(DEBUG),
        &Server::tern(DEBUG),
    );
}

#[test]
fn redis_servers_continue_with_a_promoted_tern_replica() {
    let Some(master) = Server::redis_master() else {
        return;
    };
    let Some(sibling) = Server::redis(DEBUG) else {
        return;
    };
    promotion_keeps_partial_resync(&master, &Server::tern(DEBUG), &sibling);
}

#[test]
fn tern_continues_with_a_promoted_redis_replica() {
    let Some(promoted) = Server::redis(DEBUG) else {
        return;
    };
    promotion_keeps_partial_resync(&Server::tern(DEBUG), &promoted, &Server::tern(DEBUG));
}

//! WAIT and WAITAOF count replica acknowledgements (REPLCONF ACK, and FACK for what a
//! replica's AOF holds fsynced): from tern and redis-server replicas, a stopped replica not
//! counted until it catches up, the count at the timeout, errors on a replica.
use crate::common::*;
use redis::Value;

fn replica_of(master: &Server, replica: &Server) {
    let mut r = replica.conn();
    q(
        &mut r,
        &["REPLICAOF", "127.0.0.1", &master.port.to_string()],
    );
    wait_link_up(&mut r);
}

fn online_replicas(m: &mut redis::Connection) -> usize {
    info_field(m, "replication", "connected_slaves")
        .parse()
        .unwrap()
}

#[test]
fn wait_counts_the_replicas_that_acknowledged_the_last_write() {
    let master = Server::tern(&[]);
    let replica = Server::tern(&[]);
    replica_of(&master, &replica);
    let mut m = master.conn();
    let redis_replica = Server::redis(&[]);
    if let Some(rr) = &redis_replica {
        replica_of(&master, rr);
    }
    let n = 1 + redis_replica.is_some() as i64;
    wait_until("every replica online", || {
        online_replicas(&mut m) == n as usize
    });
    q(&mut m, &["SET", "k", "1"]);
    // Blocks until both acknowledged (GETACK asks them at once).
    assert_eq!(q(&mut m, &["WAIT", &n.to_string(), "10000"]), int(n));
    // More than there are: the count at the timeout.
    assert_eq!(q(&mut m, &["WAIT", &(n + 1).to_string(), "200"]), int(n));
    // Inside a transaction WAIT never blocks.
    q(&mut m, &["MULTI"]);
    q(&mut m, &["WAIT", "5", "0"]);
    assert_eq!(q(&mut m, &["EXEC"]), Value::Array(vec![int(n)]));
    // A stopped replica does not acknowledge the next write...
    replica.signal(libc::SIGSTOP);
    q(&mut m, &["INCR", "k"]);
    // (A generous timeout: the running replicas must acknowledge within it.)
    assert_eq!(q(&mut m, &["WAIT", &n.to_string(), "2000"]), int(n - 1));
    // ...until it runs again.
    replica.signal(libc::SIGCONT);
    assert_eq!(q(&mut m, &["WAIT", &n.to_string(), "10000"]), int(n));
    assert_eq!(q(&mut replica.conn(), &["GET", "k"]), bulk("2"));
}

#[test]
fn wait_and_waitaof_are_refused_on_a_replica() {
    let master = Server::tern(&[]);
    let replica = Server::tern(&[]);
    replica_of(&master, &replica);
    let mut r = replica.conn();
    assert_eq!(
        err(&mut r, &["WAIT", "1", "0"]),
        "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."
    );
    assert_eq!(
        err(&mut r, &["WAITAOF", "0", "1", "0"]),
        "ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated."
    );
}

#[test]
fn waitaof_counts_replicas_whose_aof_holds_the_write() {
    let master = Server::tern(&["--appendonly", "yes", "--appendfsync", "always"]);
    let with_aof = Server::tern(&["--appendonly", "yes", "--appendfsync", "always"]);
    let without_aof = Server::tern(&[]);
    replica_of(&master, &with_aof);
    replica_of(&master, &without_aof);
    let mut m = master.conn();
    wait_until("both replicas online", || online_replicas(&mut m) == 2);
    q(&mut m, &["SET", "k", "v"]);
    assert_eq!(
        q(&mut m, &["WAITAOF", "1", "1", "10000"]),
        Value::Array(vec![int(1), int(1)])
    );
    // Only one replica has an AOF: the other never counts.
    assert_eq!(
        q(&mut m, &["WAITAOF", "0", "2", "300"]),
        Value::Array(vec![int(1), int(1)])
    );
    // Both have the write itself.
    assert_eq!(q(&mut m, &["WAIT", "2", "10000"]), int(2));
}

#[test]
fn clients_blocked_on_a_master_that_becomes_a_replica_get_an_error_and_are_closed() {
    let master = Server::tern(&[]);
    let demoted = Server::tern(&["--appendonly", "yes"]);
    let mut waiting = Raw::<false>::new(demoted.port);
    waiting.send(&[b"INCR", b"foo"]);
    assert_eq!(waiting.read(), ":1");
    waiting.send(&[b"WAITAOF", b"0", b"1", b"0"]);
    let mut popping = Raw::<false>::new(demoted.port);
    popping.send(&[b"BLPOP", b"list", b"0"]);
    let mut c = demoted.conn();
    wait_blocked(&mut c, 2);
    q(
        &mut c,
        &["REPLICAOF", "127.0.0.1", &master.port.to_string()],
    );
    for client in [&mut waiting, &mut popping] {
        assert_eq!(
            client.read(),
            "!UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
        );
        assert!(client.closed_by_server());
    }
}

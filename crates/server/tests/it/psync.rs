//! Partial resynchronization (PSYNC with the replication backlog): a replica whose link drops
//! continues from the offset it had processed, receiving only the missing stream, in every
//! pairing of tern and Debian's redis-server; a request the backlog cannot serve gets a full
//! sync; the backlog appears in INFO and is freed after repl-backlog-ttl.
use crate::common::*;
use crate::persist_data::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

/// INFO stats counters of a master: (sync_full, sync_partial_ok, sync_partial_err).
pub(crate) fn sync_counts(m: &mut redis::Connection) -> (u64, u64, u64) {
    (
        info_u64(m, "stats", "sync_full"),
        info_u64(m, "stats", "sync_partial_ok"),
        info_u64(m, "stats", "sync_partial_err"),
    )
}

/// Writes of every shape the stream carries: a list, a transaction, a script.
pub(crate) fn write_while_down(m: &mut redis::Connection, round: usize) {
    for i in 0..50 {
        q(m, &["RPUSH", "down:list", &format!("{round}-{i}")]);
    }
    q(m, &["MULTI"]);
    q(m, &["INCR", "down:n"]);
    q(m, &["HSET", "down:h", &format!("f{round}"), "v"]);
    q(m, &["EXEC"]);
    q(
        m,
        &[
            "EVAL",
            "return redis.call('sadd',KEYS[1],ARGV[1])",
            "1",
            "down:s",
            &round.to_string(),
        ],
    );
}

/// The replica's link is killed (on the master, then on the replica) and writes go on
/// meanwhile; the replica comes back with PSYNC and gets exactly the missing stream.
fn continue_after_dropped_links(master: &Server, replica: &Server) {
    let mut m = master.conn();
    let mut r = replica.conn();
    fill_all(&mut m);
    q(
        &mut r,
        &["REPLICAOF", "127.0.0.1", &master.port.to_string()],
    );
    wait_caught_up(&mut m, &mut r);
    // A replica told REPLICAOF first offers its own history (refused: one
    // sync_partial_err), as a redis-server does.
    let (full, ok, refused) = sync_counts(&mut m);
    assert_eq!((full, ok, refused), (1, 0, 1));
    let mut m5 = master.conn();
    q(&mut m5, &["SELECT", "5"]);
    for round in 1..=2 {
        // The stream's last SELECT is db 5 when the link drops, and the first write after it
        // is in db 5 again (no new SELECT): the continued stream must stay in db 5.
        q(&mut m5, &["SET", &format!("before:db5:{round}"), "v"]);
        // Dropped by the master, then by the replica (its master is a client it can kill).
        let killed = if round == 1 {
            q(&mut m, &["CLIENT", "KILL", "TYPE", "replica"])
        } else {
            q(&mut r, &["CLIENT", "KILL", "TYPE", "master"])
        };
        assert_eq!(killed, int(1), "round {round}");
        q(&mut m5, &["SET", &format!("down:db5:{round}"), "v"]);
        write_while_down(&mut m, round);
        wait_caught_up(&mut m, &mut r);
        assert_eq!(
            sync_counts(&mut m),
            (1, round as u64, refused),
            "round {round}"
        );
    }
    compare(&mut m, &mut r);
    assert_eq!(
        q(&mut m, &["DEBUG", "DIGEST"]),
        q(&mut r, &["DEBUG", "DIGEST"])
    );
    assert_eq!(q(&mut r, &["LLEN", "down:list"]), int(100));
}

#[test]
fn tern_replica_of_tern_continues_after_a_dropped_link() {
    continue_after_dropped_links(
        &Server::tern(&["--enable-debug-command", "yes"]),
        &Server::tern(&["--enable-debug-command", "yes"]),
    );
}

#[test]
fn redis_replica_of_tern_continues_after_a_dropped_link() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let Some(replica) = Server::redis(&["--enable-debug-command", "yes"]) else {
        return;
    };
    continue_after_dropped_links(&master, &replica);
}

#[test]
fn tern_replica_of_redis_continues_after_a_dropped_link() {
    let Some(master) = Server::redis_master() else {
        return;
    };
    continue_after_dropped_links(&master, &Server::tern(&["--enable-debug-command", "yes"]));
}

#[test]
fn a_psync_the_backlog_cannot_serve_is_a_full_sync() {
    let master = Server::tern(&["--repl-backlog-size", "16kb"]);
    let replica = Server::tern(&[]);
    let mut m = master.conn();
    let mut r = replica.conn();
    q(&mut m, &["SET", "before", "1"]);
    q(
        &mut r,
        &["REPLICAOF", "127.0.0.1", &master.port.to_string()],
    );
    wait_caught_up(&mut m, &mut r);
    // A replica told REPLICAOF first offers its own history (as Redis): refused.
    assert_eq!(sync_counts(&mut m), (1, 0, 1));
    q(&mut m, &["CLIENT", "KILL", "TYPE", "replica"]);
    // More than the backlog holds, before the replica is back (it retries after a second).
    q(&mut m, &["SET", "big", &"x".repeat(64 * 1024)]);
    wait_caught_up(&mut m, &mut r);
    assert_eq!(sync_counts(&mut m), (2, 0, 2));
    assert_eq!(q(&mut r, &["STRLEN", "big"]), int(64 * 1024));
    assert!(master
        .log()
        .contains("Unable to partial resync with replica 127.0.0.1:"));
}

/// A replica connection asking for a full sync (`PSYNC ? -1`): the connection, read up to the
/// `+FULLRESYNC` line, and the replication ID it names.
fn full_resync(s: &Server) -> (BufReader<std::net::TcpStream>, String) {
    let mut t = s.raw();
    t.write_all(b"PSYNC ? -1\r\n").unwrap();
    let mut r = BufReader::new(t);
    let mut line = String::new();
    while !line.starts_with("+FULLRESYNC") {
        line.clear();
        r.read_line(&mut line).unwrap();
    }
    let replid = line.split(' ').nth(1).unwrap().to_string();
    (r, replid)
}

/// The protocol as a replica speaks it: the IDs and offsets INFO shows, +CONTINUE with our
/// replication ID, the backlog's bytes from the requested offset, then the live stream.
#[test]
fn psync_protocol_and_backlog_info() {
    let s = Server::tern(&["--repl-ping-replica-period", "3600"]);
    let mut c = s.conn();
    assert_eq!(
        info_field(&mut c, "replication", "repl_backlog_active"),
        "0"
    );
    // The first replica creates the backlog.
    let (_first, replid) = full_resync(&s);
    let mut line = String::new();
    assert_eq!(info_field(&mut c, "replication", "master_replid"), replid);
    assert_eq!(
        info_field(&mut c, "replication", "repl_backlog_active"),
        "1"
    );
    assert_eq!(
        info_field(&mut c, "replication", "repl_backlog_first_byte_offset"),
        "1"
    );
    q(&mut c, &["SET", "k", "v1"]);
    let after_first = info_u64(&mut c, "replication", "master_repl_offset");
    assert_eq!(
        info_u64(&mut c, "replication", "repl_backlog_histlen"),
        after_first
    );
    q(&mut c, &["SET", "k", "v2"]);
    // A second replica that had processed up to `after_first`.
    let mut t = s.raw();
    t.write_all(b"REPLCONF capa eof capa psync2\r\n").unwrap();
    let mut r = BufReader::new(t);
    line.clear();
    r.read_line(&mut line).unwrap();
    assert_eq!(line, "+OK\r\n");
    r.get_mut()
        .write_all(format!("PSYNC {replid} {}\r\n", after_first + 1).as_bytes())
        .unwrap();
    line.clear();
    r.read_line(&mut line).unwrap();
    assert_eq!(line, format!("+CONTINUE {replid}\r\n"));
    let want = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv2\r\n";
    let mut got = vec![0; want.len()];
    r.read_exact(&mut got).unwrap();
    assert_eq!(got, want);
    q(&mut c, &["SET", "k", "v3"]);
    let want = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv3\r\n";
    let mut got = vec![0; want.len()];
    r.read_exact(&mut got).unwrap();
    assert_eq!(got, want);
    assert_eq!(sync_counts(&mut c), (1, 1, 0));
    // An unknown ID or an offset past the stream: a full resynchronization.
    for req in [
        "PSYNC 0123456789012345678901234567890123456789 1".to_string(),
        format!("PSYNC {replid} 999999"),
    ] {
        let mut t = s.raw();
        t.write_all(format!("{req}\r\n").as_bytes()).unwrap();
        let mut r = BufReader::new(t);
        line.clear();
        while line.trim().is_empty() {
            line.clear();
            r.read_line(&mut line).unwrap();
        }
        assert!(
            line.starts_with(&format!("+FULLRESYNC {replid} ")),
            "{line}"
        );
    }
    assert_eq!(sync_counts(&mut c), (3, 1, 2));
    assert_eq!(
        err(&mut c, &["PSYNC", &replid, "notanumber"]),
        "ERR value is not an integer or out of range"
    );
}

#[test]
fn the_backlog_is_freed_after_its_ttl_without_replicas() {
    let s = Server::tern(&["--repl-backlog-ttl", "1"]);
    let mut c = s.conn();
    let (r, replid) = full_resync(&s);
    assert_eq!(
        info_field(&mut c, "replication", "repl_backlog_active"),
        "1"
    );
    drop(r);
    wait_for("the backlog to be freed", Duration::from_secs(10), || {
        info_field(&mut c, "replication", "repl_backlog_active") == "0"
    });
    // A new history: nobody can continue the old one.
    assert_ne!(info_field(&mut c, "replication", "master_replid"), replid);
    assert!(s
        .log()
        .contains("Replication backlog freed after 1 seconds without connected replicas."));
}

/// A replica (with a replica of its own) told to follow a new master whose full sync never
/// arrives (the new master dies mid-transfer) still holds its old master's history: back to
/// the old master, it continues partially, and its own replica stays connected throughout.
/// Redis discards its cached master when the payload is about to be loaded, not at
/// +FULLRESYNC.
#[test]
fn a_full_sync_that_fails_before_loading_keeps_the_old_history() {
    for load in ["disabled", "swapdb"] {
        let master1 = Server::tern(&[]);
        let mut m1 = master1.conn();
        q(&mut m1, &["SET", "a", "b"]);
        let mut master2 = Server::tern(&["--enable-debug-command", "yes"]);
        let mut m2 = master2.conn();
        q(&mut m2, &["DEBUG", "POPULATE", "10", "master2", "10"]);
        // 1 s per key: the transfer never ends before the kill.
        q(&mut m2, &["CONFIG", "SET", "rdb-key-save-delay", "1000000"]);
        let replica = Server::tern(&["--repl-diskless-load", load]);
        let sub = Server::tern(&[]);
        let (mut r, mut s) = (replica.conn(), sub.conn());
        replicaof(&mut r, &master1);
        wait_caught_up(&mut m1, &mut r);
        replicaof(&mut s, &replica);
        wait_caught_up(&mut r, &mut s);
        assert_eq!(q(&mut s, &["GET", "a"]), bulk("b"));

        replicaof(&mut r, &master2);
        wait_until("master2's transfer to start", || {
            info_field(&mut m2, "persistence", "rdb_bgsave_in_progress") == "1"
                && m2.info_text("replication").contains("state=wait_bgsave")
        });
        master2.signal(libc::SIGKILL);
        master2.wait_exit(Duration::from_secs(10));
        // Until a payload loads, the chain keeps master1's replication ID.
        let id = info_field(&mut m1, "replication", "master_replid");
        assert_eq!(info_field(&mut r, "replication", "master_replid"), id);

        let (full, partial, _) = sync_counts(&mut m1);
        replicaof(&mut r, &master1);
        wait_link_up(&mut r);
        assert_eq!(sync_counts(&mut m1).0, full, "{load}: {}", replica.log());
        assert_eq!(sync_counts(&mut m1).1, partial + 1, "{load}");
        assert_eq!(info_field(&mut r, "replication", "master_replid"), id);
        assert_eq!(info_field(&mut s, "replication", "master_replid"), id);
        // The sub-replica synced once, fully, and never lost its link.
        assert_eq!(sync_counts(&mut r).0, 1, "{load}");
        assert_eq!(sync_counts(&mut r).1, 0, "{load}");
        assert!(!sub.log().contains("Connection with master lost"), "{load}");
        // And the chain goes on.
        q(&mut m1, &["SET", "after", "1"]);
        wait_caught_up(&mut m1, &mut r);
        wait_caught_up(&mut r, &mut s);
        assert_eq!(q(&mut s, &["GET", "after"]), bulk("1"));
    }
}

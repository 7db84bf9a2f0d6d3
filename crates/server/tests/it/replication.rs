//! Master-side replication: SYNC sends a snapshot then the replication stream in Redis 7.2's
//! propagated form; Debian's redis-server, started as a replica of tern, loads the snapshot,
//! follows the stream and ends up with the same data; a replica that cannot keep up is
//! dropped at its output limit.
use crate::common::*;
use crate::persist_data::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A SYNC connection: the snapshot is read, then commands of the stream one by one.
struct Stream(BufReader<TcpStream>);

impl Stream {
    fn sync(s: &Server) -> (Stream, Vec<u8>) {
        // No keepalive PINGs in the stream the tests read (Redis's own suite does the same
        // when it attaches to a replication stream).
        q(
            &mut s.conn(),
            &["CONFIG", "SET", "repl-ping-replica-period", "3600"],
        );
        let mut t = s.raw();
        t.write_all(b"SYNC\r\n").unwrap();
        let mut r = BufReader::new(t);
        let mut line = String::new();
        // Newlines are keepalives before the payload.
        while line.trim().is_empty() {
            line.clear();
            r.read_line(&mut line).unwrap();
        }
        let len: usize = line
            .trim()
            .strip_prefix('$')
            .expect("bulk")
            .parse()
            .unwrap();
        let mut rdb = vec![0; len];
        r.read_exact(&mut rdb).unwrap();
        (Stream(r), rdb)
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.0.read_line(&mut l).unwrap();
        l.trim_end().to_string()
    }

    /// The next command, its name lower-cased.
    fn next(&mut self) -> Vec<String> {
        let n: usize = self
            .line()
            .strip_prefix('*')
            .expect("array")
            .parse()
            .unwrap();
        (0..n)
            .map(|i| {
                let len: usize = self.line()[1..].parse().unwrap();
                let mut b = vec![0; len + 2];
                self.0.read_exact(&mut b).unwrap();
                let s = String::from_utf8_lossy(&b[..len]).into_owned();
                if i == 0 {
                    s.to_lowercase()
                } else {
                    s
                }
            })
            .collect()
    }

    fn expect(&mut self, want: &[&str]) {
        let got = self.next();
        let got: Vec<&str> = got.iter().map(|s| s.as_str()).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn sync_sends_the_snapshot_then_the_propagated_stream() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["SET", "before", "1"]);
    let (mut st, rdb) = Stream::sync(&s);
    assert!(rdb.starts_with(b"REDIS00"), "an RDB file");
    assert!(
        rdb.windows(6).any(|w| w == b"before"),
        "the key written before"
    );
    wait_until("the replica to be listed", || {
        info_field(&mut c, "replication", "connected_slaves") == "1"
    });

    q(&mut c, &["SET", "k", "v", "EX", "100"]);
    st.expect(&["select", "0"]);
    let set = st.next();
    assert_eq!(
        &set[..4],
        &["set", "k", "v", "PXAT"],
        "relative TTL made absolute"
    );

    // A transaction: wrapped in MULTI/EXEC; PUBLISH reaches replicas.
    q(&mut c, &["MULTI"]);
    q(&mut c, &["INCR", "a"]);
    q(&mut c, &["INCR", "b"]);
    q(&mut c, &["PUBLISH", "ch", "hi"]);
    q(&mut c, &["EXEC"]);
    st.expect(&["multi"]);
    st.expect(&["incr", "a"]);
    st.expect(&["incr", "b"]);
    st.expect(&["publish", "ch", "hi"]);
    st.expect(&["exec"]);

    // A write with no effect is not propagated; another database is selected first.
    q(&mut c, &["DEL", "missing"]);
    q(&mut c, &["SELECT", "2"]);
    q(&mut c, &["SET", "z", "1"]);
    st.expect(&["select", "2"]);
    st.expect(&["set", "z", "1"]);

    // A script's effects, wrapped.
    q(
        &mut c,
        &[
            "EVAL",
            "redis.call('set',KEYS[1],'x') redis.call('incr','n')",
            "1",
            "sk",
        ],
    );
    st.expect(&["multi"]);
    st.expect(&["set", "sk", "x"]);
    st.expect(&["incr", "n"]);
    st.expect(&["exec"]);

    // An expired key reaches replicas as DEL.
    q(&mut c, &["SET", "short", "v", "PX", "1"]);
    let _ = st.next();
    std::thread::sleep(Duration::from_millis(10));
    q(&mut c, &["GET", "short"]);
    st.expect(&["del", "short"]);

    drop(st);
    wait_until("the replica to be gone", || {
        info_field(&mut c, "replication", "connected_slaves") == "0"
    });
}

#[test]
fn redis_server_replicates_from_tern() {
    let tern = Server::tern(&["--enable-debug-command", "yes"]);
    let mut t = tern.conn();
    fill_all(&mut t);
    let Some(replica) = Server::redis(&[
        "--replicaof",
        "127.0.0.1",
        &tern.port.to_string(),
        "--enable-debug-command",
        "yes",
    ]) else {
        return;
    };
    let mut r = replica.conn();
    wait_link_up(&mut r);
    // Writes after the sync: transactions, scripts, expiries, other databases.
    q(&mut t, &["MULTI"]);
    q(&mut t, &["RPUSH", "after:list", "a", "b", "c"]);
    q(&mut t, &["HSET", "after:hash", "f", "v"]);
    q(&mut t, &["EXEC"]);
    q(
        &mut t,
        &[
            "EVAL",
            "redis.call('zadd',KEYS[1],1,'m') return 1",
            "1",
            "after:z",
        ],
    );
    q(&mut t, &["SET", "after:ttl", "v", "EX", "1000"]);
    q(&mut t, &["SELECT", "5"]);
    q(&mut t, &["SET", "after:db5", "v"]);
    q(&mut t, &["SELECT", "0"]);
    q(&mut t, &["SPOP", "set:small"]);
    wait_caught_up(&mut t, &mut r);
    assert_eq!(
        info_field(&mut t, "replication", "slave0")
            .split(',')
            .find(|f| f.starts_with("state="))
            .unwrap(),
        "state=online"
    );
    compare(&mut t, &mut r);
    assert_eq!(
        q(&mut t, &["DEBUG", "DIGEST"]),
        q(&mut r, &["DEBUG", "DIGEST"])
    );
    assert_eq!(
        q(&mut t, &["LRANGE", "after:list", "0", "-1"]),
        q(&mut r, &["LRANGE", "after:list", "0", "-1"])
    );
}

#[test]
fn a_replica_that_cannot_keep_up_is_dropped_at_its_output_limit() {
    let s = Server::tern(&["--client-output-buffer-limit", "replica 1mb 0 0"]);
    let mut c = s.conn();
    // Never read: the stream piles up in the server.
    let (st, _) = Stream::sync(&s);
    wait_until("the replica to be listed", || {
        info_field(&mut c, "replication", "connected_slaves") == "1"
    });
    let value = "x".repeat(64 * 1024);
    let mut n = 0;
    while info_field(&mut c, "replication", "connected_slaves") == "1" {
        q(&mut c, &["SET", &format!("k{}", n % 100), &value]);
        n += 1;
        assert!(n < 5000, "the replica was never dropped");
    }
    // Other clients and the data are unaffected.
    assert_eq!(q(&mut c, &["EXISTS", "k0"]), int(1));
    drop(st);
}

#[test]
fn min_replicas_to_write_counts_good_replicas() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["CONFIG", "SET", "min-replicas-to-write", "1"]);
    assert!(err(&mut c, &["SET", "x", "1"]).starts_with("NOREPLICAS Not enough good replicas"));
    assert!(err(&mut c, &["EVAL", "#!lua\nreturn 1", "0"]).starts_with("NOREPLICAS"));
    // The script's error keeps the NOREPLICAS code (Redis: no ERR in front).
    assert!(
        err(&mut c, &["EVAL", "return redis.call('set','x','1')", "0"]).starts_with("NOREPLICAS")
    );
    assert_eq!(
        q(
            &mut c,
            &[
                "EVAL",
                "#!lua flags=no-writes\nreturn redis.call('get','x')",
                "0"
            ]
        ),
        redis::Value::Nil
    );
    let (mut st, _) = Stream::sync(&s);
    wait_until("the replica to be online", || {
        info_field(&mut c, "replication", "min_slaves_good_slaves") == "1"
    });
    q(&mut c, &["SET", "x", "1"]);
    st.expect(&["select", "0"]);
    st.expect(&["set", "x", "1"]);
    q(&mut c, &["CONFIG", "SET", "min-replicas-to-write", "2"]);
    assert!(err(&mut c, &["SET", "x", "2"]).starts_with("NOREPLICAS"));
    q(&mut c, &["CONFIG", "SET", "min-replicas-to-write", "0"]);
    q(&mut c, &["SET", "x", "3"]);
}

/// tern as a replica: REPLICAOF a master, a full sync, then the stream; READONLY for clients,
/// ROLE and INFO as Redis; REPLICAOF NO ONE keeps the data and accepts writes again.
fn follow_master(master: &Server) {
    let mut m = master.conn();
    fill_all(&mut m);
    let replica = Server::tern(&["--enable-debug-command", "yes"]);
    let mut r = replica.conn();
    q(&mut r, &["SET", "replaced-by-the-sync", "1"]);
    assert_eq!(
        q(
            &mut r,
            &["REPLICAOF", "127.0.0.1", &master.port.to_string()]
        ),
        redis::Value::Okay
    );
    wait_link_up(&mut r);
    assert_eq!(info_field(&mut r, "replication", "role"), "slave");
    q(&mut m, &["MULTI"]);
    q(&mut m, &["INCR", "after:n"]);
    q(&mut m, &["SADD", "after:s", "a", "b"]);
    q(&mut m, &["EXEC"]);
    q(&mut m, &["SET", "after:ttl", "v", "EX", "1000"]);
    q(&mut m, &["SELECT", "5"]);
    q(&mut m, &["SET", "after:db5", "v"]);
    q(&mut m, &["SELECT", "0"]);
    wait_caught_up(&mut m, &mut r);
    compare(&mut m, &mut r);
    assert_eq!(
        q(&mut m, &["DEBUG", "DIGEST"]),
        q(&mut r, &["DEBUG", "DIGEST"])
    );
    assert_eq!(q(&mut r, &["EXISTS", "replaced-by-the-sync"]), int(0));
    assert_eq!(
        err(&mut r, &["SET", "x", "1"]),
        "READONLY You can't write against a read only replica."
    );
    // A script without flags is refused at its write, with the READONLY code kept.
    assert!(
        err(&mut r, &["EVAL", "return redis.call('set','x','1')", "0"])
            .starts_with("READONLY You can't write against a read only replica. script:")
    );
    let redis::Value::Array(role) = q(&mut r, &["ROLE"]) else {
        panic!()
    };
    assert_eq!(role[0], bulk("slave"));
    assert_eq!(role[2], int(master.port as i64));
    assert_eq!(role[3], bulk("connected"));
    // The master sees us, with our listening port.
    wait_until("the master to list the replica online", || {
        info_field(&mut m, "replication", "slave0")
            .contains(&format!("port={},state=online", replica.port))
    });
    assert_eq!(q(&mut r, &["REPLICAOF", "NO", "ONE"]), redis::Value::Okay);
    assert_eq!(info_field(&mut r, "replication", "role"), "master");
    q(&mut r, &["SET", "x", "1"]);
    assert_eq!(q(&mut r, &["GET", "after:n"]), bulk("1"));
}

#[test]
fn tern_replicates_from_redis_server() {
    let Some(master) = Server::redis_master() else {
        return;
    };
    follow_master(&master);
}

#[test]
fn tern_replicates_from_tern() {
    follow_master(&Server::tern(&["--enable-debug-command", "yes"]));
}

#[test]
fn a_replica_with_its_link_down_refuses_stale_reads_when_told_to() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["SET", "k", "v"]);
    q(&mut c, &["CONFIG", "SET", "replica-serve-stale-data", "no"]);
    q(&mut c, &["MULTI"]);
    q(&mut c, &["GET", "k"]);
    // Becoming a replica of nobody reachable while the transaction is open.
    let mut other = s.conn();
    q(
        &mut other,
        &["REPLICAOF", "127.0.0.1", &free_port().to_string()],
    );
    assert_eq!(
        err(&mut c, &["EXEC"]),
        "EXECABORT Transaction discarded because of: MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
    );
    assert!(err(&mut c, &["GET", "k"]).starts_with("MASTERDOWN"));
    // As in Redis, PING is not a stale-allowed command; INFO is.
    assert!(err(&mut c, &["PING"]).starts_with("MASTERDOWN"));
    assert_eq!(
        info_field(&mut c, "replication", "master_link_status"),
        "down"
    );
    q(
        &mut c,
        &["CONFIG", "SET", "replica-serve-stale-data", "yes"],
    );
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("v"));
    q(&mut c, &["REPLICAOF", "NO", "ONE"]);
    q(&mut c, &["SET", "k", "w"]);
}

#[test]
fn a_disk_sync_removes_its_snapshot_file_once_sent() {
    let master = Server::tern(&["--repl-diskless-sync", "no"]);
    let replica = Server::tern(&[]);
    let mut m = master.conn();
    q(&mut m, &["SET", "k", "v"]);
    let mut r = replica.conn();
    replicaof(&mut r, &master);
    wait_caught_up(&mut m, &mut r);
    let leftovers: Vec<_> = std::fs::read_dir(master.dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("temp-") && n.ends_with(".rdb"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert_eq!(q(&mut r, &["GET", "k"]), bulk("v"));
}

/// A replica that loads its payload from disk keeps it as its dump file, as Redis does,
/// unless `rdb-del-sync-files` says a replica without persistence keeps none.
#[test]
fn a_disk_loaded_payload_becomes_the_replicas_dump() {
    let master = Server::tern(&[]);
    let mut m = master.conn();
    q(&mut m, &["SET", "k", "v"]);
    for (del, kept) in [("no", true), ("yes", false)] {
        let replica = Server::tern(&[
            "--repl-diskless-load",
            "disabled",
            "--rdb-del-sync-files",
            del,
        ]);
        let mut r = replica.conn();
        replicaof(&mut r, &master);
        wait_caught_up(&mut m, &mut r);
        let dump = replica.dir().join("dump.rdb");
        assert_eq!(dump.exists(), kept, "rdb-del-sync-files {del}");
        if kept {
            let bytes = std::fs::read(&dump).unwrap();
            assert!(bytes.starts_with(b"REDIS") && bytes.len() > 20);
        }
        assert_eq!(q(&mut r, &["GET", "k"]), bulk("v"));
    }
}

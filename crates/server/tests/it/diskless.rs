//! Diskless full syncs, both sides: a master streaming its snapshot to replica sockets
//! (`repl-diskless-sync`), a replica parsing the payload from the socket
//! (`repl-diskless-load on-empty-db|swapdb`), between tern and redis-server both ways.

use crate::common::*;
use std::time::Duration;

/// Keys of several types in two databases, a function library, and an expiring key.
fn fill(m: &mut redis::Connection) {
    for i in 0..300 {
        q(m, &["SET", &format!("s:{i}"), &format!("value-{i}")]);
    }
    q(m, &["RPUSH", "list", "a", "b", "c"]);
    q(m, &["HSET", "hash", "f1", "v1", "f2", "v2"]);
    q(m, &["ZADD", "zset", "1", "a", "2", "b"]);
    q(m, &["SADD", "set", "x", "y"]);
    q(m, &["SET", "ttl", "v", "EX", "1000"]);
    q(m, &["SELECT", "3"]);
    q(m, &["SET", "in-db3", "v"]);
    q(m, &["SELECT", "0"]);
    q(
        m,
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=dl\nredis.register_function{function_name='dlf', callback=function() return 'from-master' end, flags={'no-writes'}}",
        ],
    );
}

/// Temp RDB files a sync might leave in a server's directory.
fn temp_rdbs(s: &Server) -> Vec<String> {
    std::fs::read_dir(s.dir())
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("temp-") && n.ends_with(".rdb"))
                .collect()
        })
        .unwrap_or_default()
}

/// A tern replica (DEBUG enabled) that loads its payload in `mode` (repl-diskless-load).
fn tern_replica(mode: &str) -> Server {
    Server::tern(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-load",
        mode,
    ])
}

/// `r` follows `master` and ends with the master's data (`assert_same`).
fn follow(master: &Server, m: &mut redis::Connection, r: &mut redis::Connection) {
    replicaof(r, master);
    wait_link_up(r);
    assert_same(m, r);
}

/// The replica followed the master's snapshot and its stream: same digest, same functions.
fn assert_same(m: &mut redis::Connection, r: &mut redis::Connection) {
    q(m, &["SET", "after-sync", "1"]);
    wait_caught_up(m, r);
    assert_eq!(q(m, &["DEBUG", "DIGEST"]), q(r, &["DEBUG", "DIGEST"]));
    assert_eq!(q(r, &["DBSIZE"]), q(m, &["DBSIZE"]));
    assert_eq!(q(r, &["GET", "after-sync"]), bulk("1"));
}

fn count(log: &str, line: &str) -> usize {
    log.matches(line).count()
}

#[test]
fn tern_master_streams_to_tern_replicas_in_every_load_mode() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let mut m = master.conn();
    fill(&mut m);
    for (mode, target) in [
        ("disabled", "to disk"),
        ("on-empty-db", "to parser"),
        ("swapdb", "to parser"),
    ] {
        let replica = tern_replica(mode);
        let mut r = replica.conn();
        follow(&master, &mut m, &mut r);
        assert_eq!(q(&mut r, &["FCALL_RO", "dlf", "0"]), bulk("from-master"));
        let log = replica.log();
        assert!(
            log.contains(&format!(
                "MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF {target}"
            )),
            "{mode}: {log}"
        );
        if mode == "swapdb" {
            assert!(log.contains("MASTER <-> REPLICA sync: Swapping active DB with loaded DB"));
        }
        assert!(temp_rdbs(&replica).is_empty(), "{mode}");
        let info = m.info_text("replication");
        assert!(info.contains("state=online"), "{info}");
    }
    let log = master.log();
    assert_eq!(
        count(
            &log,
            "Starting BGSAVE for SYNC with target: replicas sockets"
        ),
        3
    );
    assert_eq!(count(&log, "Streamed RDB transfer with replica"), 3);
    assert!(log
        .contains("succeeded (socket). Waiting for REPLCONF ACK from replica to enable streaming"));
    assert!(temp_rdbs(&master).is_empty());
}

#[test]
fn on_empty_db_loads_from_disk_when_the_replica_has_data() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let mut m = master.conn();
    fill(&mut m);
    let replica = tern_replica("on-empty-db");
    let mut r = replica.conn();
    q(&mut r, &["SET", "local", "1"]);
    follow(&master, &mut m, &mut r);
    assert_eq!(q(&mut r, &["EXISTS", "local"]), int(0));
    assert!(replica
        .log()
        .contains("receiving streamed RDB from master with EOF to disk"));
}

#[test]
fn disk_sync_when_diskless_sync_is_off() {
    let master = Server::tern(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync",
        "no",
    ]);
    let mut m = master.conn();
    fill(&mut m);
    let replica = Server::tern(&["--enable-debug-command", "yes"]);
    let mut r = replica.conn();
    follow(&master, &mut m, &mut r);
    assert!(master
        .log()
        .contains("Starting BGSAVE for SYNC with target: disk"));
    assert!(!replica.log().contains("streamed RDB"));
}

/// What a raw replica connection receives for PSYNC after the given REPLCONF capa lines: the
/// `+FULLRESYNC` line, then the payload's header line.
fn raw_sync_header(master: &Server, capas: &[&str]) -> (String, String) {
    use std::io::{BufRead, BufReader, Write};
    let s = master.raw();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    for capa in capas {
        let cmd = format!(
            "*3\r\n$8\r\nREPLCONF\r\n$4\r\ncapa\r\n${}\r\n{capa}\r\n",
            capa.len()
        );
        w.write_all(cmd.as_bytes()).unwrap();
        line.clear();
        r.read_line(&mut line).unwrap();
        assert_eq!(line, "+OK\r\n");
    }
    w.write_all(b"*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n")
        .unwrap();
    let mut next = || loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line != "\n" {
            return line.trim_end().to_string();
        }
    };
    let first = next();
    let second = next();
    (first, second)
}

#[test]
fn only_replicas_with_capa_eof_get_the_diskless_form() {
    let master = Server::tern(&[]);
    let mut m = master.conn();
    q(&mut m, &["SET", "k", "v"]);
    let (full, head) = raw_sync_header(&master, &["eof", "psync2"]);
    assert!(full.starts_with("+FULLRESYNC "), "{full}");
    let mark = head.strip_prefix("$EOF:").expect("a diskless header");
    assert_eq!(mark.len(), 40);
    assert!(mark.bytes().all(|b| b.is_ascii_alphanumeric()));
    let (full, head) = raw_sync_header(&master, &["psync2"]);
    assert!(full.starts_with("+FULLRESYNC "), "{full}");
    assert!(
        head.strip_prefix('$').unwrap().parse::<u64>().is_ok(),
        "{head}"
    );
}

#[test]
fn replicas_arriving_within_the_delay_share_one_snapshot() {
    let master = Server::tern(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "2",
    ]);
    let mut m = master.conn();
    fill(&mut m);
    let a = Server::tern(&["--enable-debug-command", "yes"]);
    let b = Server::tern(&["--enable-debug-command", "yes"]);
    let (mut ra, mut rb) = (a.conn(), b.conn());
    replicaof(&mut ra, &master);
    replicaof(&mut rb, &master);
    // Both wait for the transfer to start.
    wait_until("two replicas waiting", || {
        m.info_text("replication")
            .matches("state=wait_bgsave")
            .count()
            == 2
    });
    wait_link_up(&mut ra);
    wait_link_up(&mut rb);
    assert_same(&mut m, &mut ra);
    assert_same(&mut m, &mut rb);
    assert_eq!(info_u64(&mut m, "stats", "sync_full"), 2);
    let log = master.log();
    assert_eq!(
        count(
            &log,
            "Starting BGSAVE for SYNC with target: replicas sockets"
        ),
        1,
        "{log}"
    );
    assert!(log.contains("Diskless rdb transfer, done reading from pipe, 2 replicas still up."));
}

#[test]
fn max_replicas_starts_the_transfer_before_the_delay() {
    let master = Server::tern(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "60",
        "--repl-diskless-sync-max-replicas",
        "2",
    ]);
    let mut m = master.conn();
    fill(&mut m);
    let a = Server::tern(&["--enable-debug-command", "yes"]);
    let b = Server::tern(&["--enable-debug-command", "yes"]);
    let (mut ra, mut rb) = (a.conn(), b.conn());
    replicaof(&mut ra, &master);
    std::thread::sleep(Duration::from_millis(500));
    // One replica alone waits for the delay.
    assert_eq!(
        info_field(&mut ra, "replication", "master_link_status"),
        "down"
    );
    replicaof(&mut rb, &master);
    wait_link_up(&mut ra);
    wait_link_up(&mut rb);
    assert_same(&mut m, &mut ra);
    assert_same(&mut m, &mut rb);
}

#[test]
fn info_during_a_transfer_and_a_replica_arriving_meanwhile_waits_for_the_next() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let mut m = master.conn();
    q(&mut m, &["DEBUG", "POPULATE", "200"]);
    // 20 ms per key: the transfer takes 4 s.
    q(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "20000"]);
    let a = Server::tern(&["--enable-debug-command", "yes"]);
    let mut ra = a.conn();
    replicaof(&mut ra, &master);
    wait_until("the transfer to start", || {
        info_field(&mut m, "persistence", "rdb_bgsave_in_progress") == "1"
    });
    let info = m.info_text("replication");
    assert!(info.contains("state=wait_bgsave"), "{info}");
    let b = Server::tern(&["--enable-debug-command", "yes"]);
    let mut rb = b.conn();
    replicaof(&mut rb, &master);
    wait_until("the second replica to ask", || {
        m.info_text("replication")
            .matches("state=wait_bgsave")
            .count()
            == 2
    });
    q(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    wait_link_up(&mut ra);
    wait_link_up(&mut rb);
    assert_same(&mut m, &mut ra);
    assert_same(&mut m, &mut rb);
    assert_eq!(
        info_field(&mut m, "persistence", "rdb_bgsave_in_progress"),
        "0"
    );
    assert_eq!(
        count(
            &master.log(),
            "Starting BGSAVE for SYNC with target: replicas sockets"
        ),
        2
    );
}

#[test]
fn tern_master_streams_to_redis_server_replica() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let mut m = master.conn();
    fill(&mut m);
    for mode in ["disabled", "swapdb"] {
        let Some(replica) = Server::redis(&[
            "--enable-debug-command",
            "yes",
            "--repl-diskless-load",
            mode,
        ]) else {
            return;
        };
        let mut r = replica.conn();
        follow(&master, &mut m, &mut r);
        assert!(temp_rdbs(&replica).is_empty());
    }
    assert!(temp_rdbs(&master).is_empty());
    assert!(master
        .log()
        .contains("Starting BGSAVE for SYNC with target: replicas sockets"));
}

#[test]
fn redis_server_master_streams_to_tern_in_every_load_mode() {
    for mode in ["disabled", "on-empty-db", "swapdb"] {
        let Some(master) = Server::redis_master() else {
            return;
        };
        let mut m = master.conn();
        fill(&mut m);
        let replica = tern_replica(mode);
        let mut r = replica.conn();
        follow(&master, &mut m, &mut r);
        assert_eq!(q(&mut r, &["FCALL_RO", "dlf", "0"]), bulk("from-master"));
        assert!(temp_rdbs(&replica).is_empty(), "{mode}");
        assert!(temp_rdbs(&master).is_empty(), "{mode}");
    }
}

/// A master whose transfer is slow (`keys` keys at 10 ms each) and a swapdb replica holding
/// data of its own.
fn slow_master_and_swapdb_replica(keys: usize) -> (Server, Server) {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let replica = tern_replica("swapdb");
    let mut m = master.conn();
    q(&mut m, &["DEBUG", "POPULATE", &keys.to_string(), "master"]);
    q(&mut m, &["CONFIG", "SET", "rdbcompression", "no"]);
    let mut r = replica.conn();
    q(&mut r, &["DEBUG", "POPULATE", "20", "replica"]);
    q(&mut r, &["SET", "mykey", "myvalue"]);
    (master, replica)
}

#[test]
fn swapdb_keeps_the_old_data_when_the_transfer_fails() {
    let (master, replica) = slow_master_and_swapdb_replica(1000);
    let mut m = master.conn();
    let mut r = replica.conn();
    q(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "10000"]);
    replicaof(&mut r, &master);
    wait_until("the replica to load", || {
        info_field(&mut r, "persistence", "loading") == "1"
    });
    // A different history: clients get -LOADING meanwhile, as in Redis.
    assert_eq!(info_field(&mut r, "persistence", "async_loading"), "0");
    assert!(err(&mut r, &["GET", "mykey"]).starts_with("LOADING"));
    q(&mut m, &["CONFIG", "SET", "repl-diskless-sync-delay", "60"]);
    q(&mut m, &["CLIENT", "KILL", "TYPE", "replica"]);
    wait_until("the load to stop", || {
        info_field(&mut r, "persistence", "loading") == "0"
    });
    assert_eq!(q(&mut r, &["GET", "mykey"]), bulk("myvalue"));
    assert_eq!(q(&mut r, &["DBSIZE"]), int(21));
    // The failure is logged just after the loading flag drops: wait for the line.
    wait_until("the failed load to be logged", || {
        replica.log().contains(
            "Failed trying to load the MASTER synchronization DB from socket, check server logs.",
        )
    });
    let log = replica.log();
    assert!(log.contains("MASTER <-> REPLICA sync: Discarding temporary DB in background"));
    q(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
}

#[test]
fn swapdb_serves_the_old_data_while_loading_the_same_history() {
    let (master, replica) = slow_master_and_swapdb_replica(500);
    let mut m = master.conn();
    let mut r = replica.conn();
    replicaof(&mut r, &master);
    wait_link_up(&mut r);
    q(&mut r, &["CONFIG", "SET", "replica-read-only", "no"]);
    q(&mut r, &["SET", "mykey", "myvalue"]);
    let before = q(&mut r, &["DBSIZE"]);
    // The next sync is a full one of the same history: the backlog no longer holds the
    // replica's offset.
    q(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "10000"]);
    q(&mut m, &["CONFIG", "SET", "repl-backlog-size", "16384"]);
    q(&mut m, &["MULTI"]);
    q(&mut m, &["CLIENT", "KILL", "TYPE", "replica"]);
    let big = "A".repeat(16384);
    for i in 0..4 {
        q(&mut m, &["SET", &format!("fill{i}"), &big]);
    }
    q(&mut m, &["EXEC"]);
    wait_until("the replica to load asynchronously", || {
        info_field(&mut r, "persistence", "async_loading") == "1"
    });
    assert_eq!(info_field(&mut r, "persistence", "loading"), "0");
    assert_eq!(q(&mut r, &["GET", "mykey"]), bulk("myvalue"));
    assert_eq!(q(&mut r, &["DBSIZE"]), before);
    // This transfer fails too: the old data stays.
    q(&mut m, &["CONFIG", "SET", "repl-diskless-sync-delay", "60"]);
    q(&mut m, &["CLIENT", "KILL", "TYPE", "replica"]);
    wait_until("the load to stop", || {
        info_field(&mut r, "persistence", "async_loading") == "0"
    });
    assert_eq!(q(&mut r, &["GET", "mykey"]), bulk("myvalue"));
    // Then one completes: the master's data replaces it.
    q(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    q(&mut m, &["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
    wait_until("the replica to resync", || {
        info_field(&mut r, "replication", "master_link_status") == "up"
            && q(&mut r, &["EXISTS", "mykey"]) == int(0)
    });
    assert_same(&mut m, &mut r);
}

#[test]
fn a_replica_waiting_for_the_transfer_is_in_handshake() {
    let master = Server::tern(&["--repl-diskless-sync-delay", "60"]);
    let mut m = master.conn();
    let replica = Server::tern(&[]);
    let mut r = replica.conn();
    replicaof(&mut r, &master);
    wait_until("the replica to wait for the transfer", || {
        m.info_text("replication").contains("state=wait_bgsave")
    });
    let redis::Value::Array(role) = q(&mut r, &["ROLE"]) else {
        panic!("ROLE")
    };
    assert_eq!(role[3], bulk("handshake"));
    assert_eq!(
        info_field(&mut r, "replication", "master_link_status"),
        "down"
    );
    // The transfer starts once the delay is shortened.
    q(&mut m, &["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
    wait_link_up(&mut r);
}

#[test]
fn a_replica_stuck_mid_transfer_times_out_by_the_repl_timeout_set_meanwhile() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let mut m = master.conn();
    // 30 MB, bigger than every buffer between the snapshot and a replica.
    q(&mut m, &["DEBUG", "POPULATE", "3000", "big", "10000"]);
    q(&mut m, &["CONFIG", "SET", "rdbcompression", "no"]);
    q(
        &mut m,
        &["CONFIG", "SET", "repl-diskless-sync-max-replicas", "2"],
    );
    q(&mut m, &["CONFIG", "SET", "repl-diskless-sync-delay", "5"]);
    let slow = tern_replica("swapdb");
    let fast = tern_replica("disabled");
    let (mut rs, mut rf) = (slow.conn(), fast.conn());
    // 1 ms per key: the transfer, bound to the slowest replica, takes 3 s at least.
    q(&mut rs, &["CONFIG", "SET", "key-load-delay", "1000"]);
    replicaof(&mut rs, &master);
    replicaof(&mut rf, &master);
    wait_until("the slow replica to load", || {
        slow.log()
            .contains("MASTER <-> REPLICA sync: Loading DB in memory")
    });
    std::thread::sleep(Duration::from_millis(500));
    // The snapshot now waits for the slow replica under the default 60 s; the replica stops
    // reading, and the limit shrinks while the wait is under way.
    slow.signal(libc::SIGSTOP);
    q(&mut m, &["CONFIG", "SET", "repl-timeout", "2"]);
    let stopped = std::time::Instant::now();
    wait_for("the transfer to end", Duration::from_secs(15), || {
        info_field(&mut m, "persistence", "rdb_bgsave_in_progress") == "0"
    });
    let took = stopped.elapsed();
    let log = master.log();
    slow.signal(libc::SIGCONT);
    assert!(
        log.contains(&format!(
            "Disconnecting timedout replica (full sync): 127.0.0.1:{}",
            slow.port
        )),
        "{log}"
    );
    assert!(
        log.contains("Diskless rdb transfer, done reading from pipe, 1 replicas still up."),
        "{log}"
    );
    assert!(took >= Duration::from_millis(1500), "{took:?}");
    // The other replica got the whole snapshot.
    wait_link_up(&mut rf);
    assert_same(&mut m, &mut rf);
    q(&mut rs, &["CONFIG", "SET", "key-load-delay", "0"]);
}

#[test]
fn a_diskless_load_interrupted_by_the_watchdog_carries_on() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let mut m = master.conn();
    q(&mut m, &["DEBUG", "POPULATE", "100", "master", "100000"]);
    q(&mut m, &["CONFIG", "SET", "rdbcompression", "no"]);
    // 10 ms per key: the replica waits in read() for most of a second.
    q(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "10000"]);
    let replica = tern_replica("on-empty-db");
    let mut r = replica.conn();
    q(&mut r, &["CONFIG", "SET", "watchdog-period", "200"]);
    replicaof(&mut r, &master);
    wait_until("the watchdog's report", || {
        replica.log().contains("--- WATCHDOG TIMER EXPIRED ---")
    });
    let log = replica.log();
    assert!(
        log.contains("loading the master's payload from the socket"),
        "{log}"
    );
    // The load was interrupted (its read got EINTR), not broken: still loading, then done,
    // with one full sync and no reconnection.
    assert_eq!(info_field(&mut r, "persistence", "loading"), "1");
    wait_link_up(&mut r);
    q(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    assert_same(&mut m, &mut r);
    assert_eq!(info_u64(&mut m, "stats", "sync_full"), 1);
    let log = replica.log();
    assert!(!log.contains("Reconnecting to MASTER"), "{log}");
    assert!(!log.contains("I/O error trying to sync"), "{log}");
}

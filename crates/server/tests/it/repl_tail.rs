//! The rest of Redis's integration/replication unit: a disk sync's snapshot given up when its
//! replicas leave, `key-load-delay` on a diskless (socket) load, -LOADING during an async
//! load, and the master's link as a client with an id of its own.

use crate::common::*;
use std::time::Duration;

fn replica_state(m: &mut redis::Connection, n: usize) -> String {
    let info = m.info_text("replication");
    info_value(&info, &format!("slave{n}")).unwrap_or_default()
}

fn bgsave_in_progress(m: &mut redis::Connection) -> bool {
    info_field(m, "persistence", "rdb_bgsave_in_progress") == "1"
}

#[test]
fn a_disk_sync_snapshot_stops_when_its_replicas_leave_unless_save_points_want_it() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let mut m = master.conn();
    for i in 0..10 {
        q(&mut m, &["SET", &i.to_string(), &i.to_string()]);
    }
    // 10 keys, 1 s each: the snapshots take 10 s unless given up.
    q(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "1000000"]);
    q(&mut m, &["CONFIG", "SET", "repl-diskless-sync", "no"]);
    let (s1, s2) = (Server::tern(&[]), Server::tern(&[]));
    let (mut r1, mut r2) = (s1.conn(), s2.conn());
    let both_waiting = |m: &mut redis::Connection| {
        bgsave_in_progress(m)
            && replica_state(m, 0).contains("wait_bgsave")
            && replica_state(m, 1).contains("wait_bgsave")
    };

    replicaof(&mut r1, &master);
    replicaof(&mut r2, &master);
    wait_for("both snapshots", Duration::from_secs(5), || {
        both_waiting(&mut m)
    });
    q(&mut r1, &["REPLICAOF", "NO", "ONE"]);
    // The other replica still waits for its snapshot.
    std::thread::sleep(Duration::from_millis(100));
    assert!(bgsave_in_progress(&mut m));
    q(&mut r2, &["REPLICAOF", "NO", "ONE"]);
    wait_for("the snapshots to stop", Duration::from_secs(1), || {
        !bgsave_in_progress(&mut m)
    });
    assert_eq!(
        count_lines(&master.log(), "Background saving for SYNC aborted"),
        2
    );
    assert_eq!(info_u64(&mut m, "persistence", "rdb_saves"), 0);

    // With save points the snapshot is finished: it becomes the server's dump.
    q(&mut m, &["CONFIG", "SET", "save", "900 1"]);
    replicaof(&mut r1, &master);
    replicaof(&mut r2, &master);
    wait_for("both snapshots", Duration::from_secs(5), || {
        both_waiting(&mut m)
    });
    q(&mut r1, &["REPLICAOF", "NO", "ONE"]);
    q(&mut r2, &["REPLICAOF", "NO", "ONE"]);
    std::thread::sleep(Duration::from_millis(200));
    assert!(bgsave_in_progress(&mut m));
    q(&mut m, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    wait_for("the snapshots to finish", Duration::from_secs(5), || {
        !bgsave_in_progress(&mut m)
    });
    assert_eq!(info_u64(&mut m, "persistence", "rdb_saves"), 2);
    assert_eq!(
        info_u64(&mut m, "persistence", "rdb_changes_since_last_save"),
        0
    );
    assert!(master.dir().join("dump.rdb").exists());
    // The dump loads: a restart from it holds the 10 keys.
    q(&mut m, &["DEBUG", "RELOAD", "NOSAVE"]);
    assert_eq!(q(&mut m, &["DBSIZE"]), int(10));
}

fn count_lines(log: &str, what: &str) -> usize {
    log.lines().filter(|l| l.contains(what)).count()
}

#[test]
fn key_load_delay_holds_a_diskless_load_until_set_back_to_zero() {
    let master = Server::tern(&["--repl-diskless-sync", "yes"]);
    let mut m = master.conn();
    for i in 0..50 {
        q(&mut m, &["SET", &format!("k{i}"), "v"]);
    }
    for mode in ["on-empty-db", "swapdb"] {
        let replica = Server::tern(&["--repl-diskless-load", mode]);
        let mut r = replica.conn();
        // 50 keys, 100 ms each.
        q(&mut r, &["CONFIG", "SET", "key-load-delay", "100000"]);
        replicaof(&mut r, &master);
        wait_for("the socket load", Duration::from_secs(5), || {
            info_field(&mut r, "persistence", "loading") == "1"
        });
        assert!(replica.log().contains("Loading DB in memory"), "{mode}");
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(info_field(&mut r, "persistence", "loading"), "1", "{mode}");
        assert_eq!(
            err(&mut r, &["GET", "k1"]),
            "LOADING Redis is loading the dataset in memory"
        );
        q(&mut r, &["CONFIG", "SET", "key-load-delay", "0"]);
        wait_for("the load to end", Duration::from_secs(3), || {
            info_field(&mut r, "replication", "master_link_status") == "up"
        });
        assert_eq!(q(&mut r, &["DBSIZE"]), int(50), "{mode}");
    }
}

#[test]
fn an_async_load_refuses_no_async_loading_commands_and_serves_the_old_data() {
    let master = Server::tern(&["--repl-diskless-sync", "yes"]);
    let mut m = master.conn();
    let replica = Server::tern(&["--repl-diskless-load", "swapdb"]);
    let mut r = replica.conn();
    replicaof(&mut r, &master);
    wait_link_up(&mut r);
    for i in 0..30 {
        q(&mut m, &["SET", &format!("k{i}"), "v"]);
    }
    wait_caught_up(&mut m, &mut r);
    // A transaction queued before the load: its EXEC is checked when it runs.
    let mut t = replica.conn();
    q(&mut t, &["MULTI"]);
    q(&mut t, &["BGSAVE"]);
    q(&mut r, &["CONFIG", "SET", "key-load-delay", "100000"]);
    // The replica must fully resync with the same history: drop it and push the stream past
    // the backlog in one step.
    let big = "A".repeat(16384);
    let mut tx = redis::pipe();
    tx.atomic()
        .cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .cmd("CONFIG")
        .arg("SET")
        .arg("repl-backlog-size")
        .arg("16384");
    for i in 0..10 {
        tx.cmd("SET").arg(format!("big{i}")).arg(&big);
    }
    let _: redis::Value = tx.query(&mut m).expect("kill and fill");
    wait_for("the async load", Duration::from_secs(5), || {
        info_field(&mut r, "persistence", "async_loading") == "1"
    });
    assert_eq!(info_field(&mut r, "persistence", "loading"), "0");
    // The old data serves reads meanwhile.
    assert_eq!(q(&mut r, &["GET", "k1"]), bulk("v"));
    assert_eq!(q(&mut r, &["DBSIZE"]), int(30));
    let loading = "LOADING Redis is loading the dataset in memory";
    for c in [
        &["REPLICAOF", "NO", "ONE"][..],
        &["BGSAVE"],
        &["SAVE"],
        &["BGREWRITEAOF"],
        &["CONFIG", "SET", "appendonly", "no"],
    ] {
        assert_eq!(err(&mut r, c), loading, "{c:?}");
    }
    assert_eq!(
        err(&mut t, &["EXEC"]),
        format!("EXECABORT Transaction discarded because of: {loading}")
    );
    // Queued during the load: refused at once, and the transaction with it.
    q(&mut t, &["MULTI"]);
    assert_eq!(err(&mut t, &["BGSAVE"]), loading);
    assert_eq!(
        err(&mut t, &["EXEC"]),
        "EXECABORT Transaction discarded because of previous errors."
    );
    q(&mut r, &["CONFIG", "SET", "key-load-delay", "0"]);
    wait_for("the load to end", Duration::from_secs(5), || {
        info_field(&mut r, "persistence", "async_loading") == "0"
            && info_field(&mut r, "replication", "master_link_status") == "up"
    });
    assert_eq!(q(&mut r, &["DBSIZE"]), int(40));
    assert_eq!(
        q(&mut r, &["BGSAVE"]),
        redis::Value::SimpleString("Background saving started".into())
    );
}

/// The replica's CLIENT LIST line for its master.
fn master_line(r: &mut redis::Connection) -> Option<String> {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query(r)
        .expect("CLIENT LIST");
    list.lines()
        .find(|l| l.contains(" flags=M "))
        .map(str::to_string)
}

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|f| f.strip_prefix(&format!("{name}=")))
        .unwrap_or_default()
}

#[test]
fn the_master_link_is_a_client_with_an_id_from_the_common_counter() {
    let master = Server::tern(&[]);
    let mut m = master.conn();
    let replica = Server::tern(&[]);
    let mut r = replica.conn();
    let before: i64 = redis::cmd("CLIENT").arg("ID").query(&mut r).unwrap();
    replicaof(&mut r, &master);
    wait_link_up(&mut r);
    q(&mut m, &["SET", "k", "v"]);
    wait_caught_up(&mut m, &mut r);
    let line = master_line(&mut r).expect("the master in CLIENT LIST");
    let id: i64 = field(&line, "id").parse().unwrap();
    assert!(id > before && id < 1000, "{line}");
    assert_eq!(field(&line, "addr"), format!("127.0.0.1:{}", master.port));
    assert_eq!(field(&line, "user"), "(superuser)");
    assert_eq!(field(&line, "cmd"), "set");
    // Clients that connect later get later ids.
    let after: i64 = redis::cmd("CLIENT")
        .arg("ID")
        .query(&mut replica.conn())
        .unwrap();
    assert!(after > id);
    // Killed by its id, the link reconnects as a new client.
    assert_eq!(
        q(&mut r, &["CLIENT", "KILL", "ID", &id.to_string()]),
        int(1)
    );
    wait_for("a new master link", Duration::from_secs(10), || {
        master_line(&mut r).is_some_and(|l| field(&l, "id").parse::<i64>().unwrap() > after)
    });
    wait_link_up(&mut r);
    // The stream is still obeyed (not refused as a normal client's writes on a replica).
    q(&mut m, &["SET", "k2", "v2"]);
    wait_caught_up(&mut m, &mut r);
    assert_eq!(q(&mut r, &["GET", "k2"]), bulk("v2"));
}

/// Read until the server closes the connection (the payload and newlines may come first).
fn closed_within(raw: &mut Raw<false>, limit: Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if raw.closed_by_server() {
            return true;
        }
    }
    false
}

#[test]
fn a_replica_that_sends_a_command_needing_a_reply_is_disconnected() {
    let master = Server::tern(&["--repl-diskless-sync", "no"]);
    let mut m = master.conn();
    q(&mut m, &["SET", "foo", "bar"]);
    for (sync, cmd, name, keyspace) in [
        (&[&b"SYNC"[..]][..], &[&b"PING"[..]][..], "ping", false),
        (&[b"SYNC"], &[b"XINFO", b"HELP"], "xinfo|help", false),
        (
            &[b"PSYNC", b"replicationid", b"-1"],
            &[b"GET", b"foo"],
            "get",
            true,
        ),
        (
            &[b"PSYNC", b"replicationid", b"-1"],
            &[b"SLOWLOG", b"GET"],
            "slowlog|get",
            false,
        ),
    ] {
        let mut raw: Raw<false> = Raw::new(master.port);
        raw.send(sync);
        raw.send(cmd);
        assert!(closed_within(&mut raw, Duration::from_secs(5)), "{name}");
        let log = master.log();
        assert!(
            log.contains(&format!(
                "Replica generated a reply to command '{name}', disconnecting it: id="
            )),
            "{name}"
        );
        assert_eq!(
            log.contains(
                "== CRITICAL == This master is sending an error to its replica: 'Replica can't interact with the keyspace' after processing the command 'get'"
            ),
            keyspace || name == "slowlog|get",
            "{name}"
        );
        assert_eq!(
            q(&mut m, &["PING"]),
            redis::Value::SimpleString("PONG".into())
        );
    }
}

#[test]
fn the_master_stream_waits_for_a_busy_script_on_the_replica() {
    let master = Server::tern(&[]);
    let mut m = master.conn();
    // The suite's configuration: an error on the stream would stop the replica.
    let replica = Server::tern(&["--propagation-error-behavior", "panic"]);
    let mut r = replica.conn();
    q(&mut r, &["CONFIG", "SET", "busy-reply-threshold", "100"]);
    replicaof(&mut r, &master);
    wait_link_up(&mut r);
    let script = replica.port;
    let busy = std::thread::spawn(move || {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{script}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        let _: redis::RedisResult<redis::Value> = redis::cmd("EVAL")
            .arg("local t = redis.call('TIME')[1] + 1 while tonumber(redis.call('TIME')[1]) <= t do end")
            .arg(0)
            .query(&mut c);
    });
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..100 {
        q(&mut m, &["SET", &format!("k{i}"), "v"]);
    }
    busy.join().unwrap();
    wait_caught_up(&mut m, &mut r);
    assert_eq!(q(&mut r, &["DBSIZE"]), int(100));
    assert!(!replica.log().contains("== CRITICAL =="));
}

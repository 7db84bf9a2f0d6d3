//! SHUTDOWN and SIGTERM/SIGINT as Redis 7.2: the final save (and what happens when it fails),
//! SHUTDOWN ABORT, `shutdown-on-sig*` flags, a second SIGINT, and a master waiting for its
//! replicas (`shutdown-timeout`), with a tern replica following a tern master.
use crate::common::*;
use redis::Value as V;
use std::time::{Duration, Instant};

fn exits_with(s: &mut Server, code: i32) {
    let status = s
        .wait_exit(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("the server did not exit\n{}", s.diagnose()));
    assert_eq!(status.code(), Some(code), "{}", s.log());
}

#[test]
fn shutdown_arguments_are_checked_as_redis_does() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    for args in [
        &["SHUTDOWN", "ABORT", "NOSAVE"][..],
        &["SHUTDOWN", "SAVE", "NOSAVE"],
        &["SHUTDOWN", "NOW", "bogus"],
        &["SHUTDOWN", "FORCE", "ABORT"],
    ] {
        assert_eq!(err(&mut c, args), "ERR syntax error", "{args:?}");
    }
    assert_eq!(
        err(&mut c, &["SHUTDOWN", "ABORT"]),
        "ERR No shutdown in progress."
    );
    assert_eq!(q(&mut c, &["PING"]), V::SimpleString("PONG".into()));
}

#[test]
fn sigterm_with_save_points_saves_the_final_snapshot_and_exits() {
    let mut s = Server::tern(&["--save", "900 1"]);
    let mut c = s.conn();
    q(&mut c, &["SET", "k", "kept"]);
    s.signal(libc::SIGTERM);
    exits_with(&mut s, 0);
    let log = s.log();
    let at = |line: &str| {
        log.find(line)
            .unwrap_or_else(|| panic!("{line:?} missing:\n{log}"))
    };
    // In Redis's order.
    assert!(at("Received SIGTERM scheduling shutdown...") < at("User requested shutdown..."));
    assert!(at("User requested shutdown...") < at("Saving the final RDB snapshot before exiting."));
    assert!(at("Saving the final RDB snapshot before exiting.") < at("DB saved on disk"));
    assert!(at("DB saved on disk") < at("Redis is now ready to exit, bye bye..."));
    // The snapshot holds the key: a server started on that directory loads it.
    let dir = s.dir();
    let again = Server::tern(&["--dir", dir.to_str().unwrap()]);
    let mut c = again.conn();
    wait_for("the dataset to load", Duration::from_secs(10), || {
        run(&mut c, &[b"GET", b"k"]).is_ok_and(|v| v == bulk("kept"))
    });
}

#[test]
fn shutdown_on_sigterm_nosave_and_on_sigint_save_choose_the_final_save() {
    let mut s = Server::tern(&["--save", "900 1", "--shutdown-on-sigterm", "nosave"]);
    q(&mut s.conn(), &["SET", "k", "v"]);
    s.signal(libc::SIGTERM);
    exits_with(&mut s, 0);
    assert!(!s.dir().join("dump.rdb").exists(), "{}", s.log());
    assert!(!s.log().contains("Saving the final RDB snapshot"));

    // No save points, but `shutdown-on-sigint save`: the final snapshot is written.
    let mut s = Server::tern(&["--shutdown-on-sigint", "save"]);
    q(&mut s.conn(), &["SET", "k", "v"]);
    s.signal(libc::SIGINT);
    exits_with(&mut s, 0);
    assert!(s.dir().join("dump.rdb").exists(), "{}", s.log());
    assert!(s.log().contains("Received SIGINT scheduling shutdown..."));
}

#[test]
fn a_failing_final_save_refuses_to_shut_down_unless_forced() {
    let mut s = Server::tern(&["--save", "900 1"]);
    let mut c = s.conn();
    q(&mut c, &["SET", "k", "v"]);
    // A directory where the file should go: the temp file cannot be renamed into place.
    std::fs::create_dir_all(s.dir().join("dump.rdb")).unwrap();

    assert_eq!(
        err(&mut c, &["SHUTDOWN"]),
        "ERR Errors trying to SHUTDOWN. Check logs."
    );
    assert_eq!(q(&mut c, &["PING"]), V::SimpleString("PONG".into()));
    let log = s.log();
    assert!(
        log.contains("Error trying to save the DB, can't exit."),
        "{log}"
    );
    assert!(
        log.contains("Errors trying to shut down the server. Check the logs for more information.")
    );

    // A signal's shutdown fails the same way; the server goes on serving.
    s.signal(libc::SIGTERM);
    wait_for("the second refusal", Duration::from_secs(10), || {
        s.log()
            .matches("Error trying to save the DB, can't exit.")
            .count()
            == 2
    });
    assert_eq!(q(&mut c, &["SET", "after", "1"]), V::Okay);
    assert!(!s.log().contains("bye bye"));

    // FORCE: the failure is logged and the server exits all the same.
    let _ = run(&mut c, &[b"SHUTDOWN", b"FORCE"]);
    exits_with(&mut s, 0);
    assert!(s
        .log()
        .contains("Error trying to save the DB. Exit anyway."));
}

#[test]
fn shutdown_abort_cancels_a_signal_the_cron_has_not_acted_on() {
    let s = Server::tern(&["--save", "900 1", "--enable-debug-command", "yes"]);
    let mut c = s.conn();
    q(&mut c, &["DEBUG", "PAUSE-CRON", "1"]);
    s.signal(libc::SIGTERM);
    wait_for("the signal to be logged", Duration::from_secs(10), || {
        s.log().contains("Received SIGTERM scheduling shutdown...")
    });
    assert_eq!(q(&mut c, &["SHUTDOWN", "ABORT"]), V::Okay);
    assert!(s.log().contains("Shutdown manually aborted."));
    assert_eq!(
        err(&mut c, &["SHUTDOWN", "ABORT"]),
        "ERR No shutdown in progress."
    );
    q(&mut c, &["DEBUG", "PAUSE-CRON", "0"]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(q(&mut c, &["PING"]), V::SimpleString("PONG".into()));
    assert!(!s.log().contains("User requested shutdown"));
}

#[test]
fn a_second_sigint_during_the_final_save_exits_at_once_and_removes_the_temp_file() {
    let mut s = Server::tern(&["--save", "900 1"]);
    let mut c = s.conn();
    for i in 0..20 {
        q(&mut c, &["SET", &i.to_string(), "v"]);
    }
    // 100 ms a key: the final save takes 2 s.
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "100000"]);
    let temp = s.dir().join(format!("temp-{}.rdb", s.pid()));
    s.signal(libc::SIGINT);
    wait_for(
        "the final save's temp file",
        Duration::from_secs(10),
        || temp.exists(),
    );
    s.signal(libc::SIGINT);
    exits_with(&mut s, 1);
    assert!(!temp.exists());
    assert!(!s.dir().join("dump.rdb").exists());
    assert!(s.log().contains("You insist... exiting now."));
}

#[test]
fn shutdown_nosave_kills_a_background_save_and_removes_its_temp_file() {
    let mut s = Server::tern(&[]);
    let mut c = s.conn();
    for i in 0..20 {
        q(&mut c, &["SET", &i.to_string(), "v"]);
    }
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "10000000"]);
    q(&mut c, &["BGSAVE"]);
    let dir = s.dir();
    let temp_files = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("temp-"))
            .count()
    };
    wait_for("the writer's temp file", Duration::from_secs(10), || {
        temp_files() > 0
    });
    let _ = run(&mut c, &[b"SHUTDOWN", b"NOSAVE"]);
    // Gone before SHUTDOWN's connection closes: no later client gets in.
    assert!(std::net::TcpStream::connect(("127.0.0.1", s.port)).is_err());
    exits_with(&mut s, 0);
    assert_eq!(temp_files(), 0);
    assert!(s
        .log()
        .contains("There is a child saving an .rdb. Killing it!"));
}

// ---------------------------------------------------------------------------------------------
// Waiting for replicas

/// A master and a tern replica in sync, with `k` = 1 on both; then the replica is stopped
/// (SIGSTOP) and the master's socket to it filled, so the next write cannot reach it.
struct Pair {
    master: Server,
    replica: Server,
}

fn offset(c: &mut redis::Connection) -> String {
    info_value(&c.info_text("replication"), "master_repl_offset").unwrap_or_default()
}

fn stopped_replica_pair(master_args: &[&str]) -> Pair {
    let master = Server::tern(master_args);
    let port = master.port.to_string();
    let replica = Server::tern(&["--replicaof", "127.0.0.1", &port]);
    let (mut m, mut r) = (master.conn(), replica.conn());
    wait_for("the replica to sync", Duration::from_secs(20), || {
        info_value(&r.info_text("replication"), "master_link_status").as_deref() == Some("up")
    });
    q(&mut m, &["SET", "k", "1"]);
    wait_for("the replica's offset", Duration::from_secs(20), || {
        offset(&mut m) == offset(&mut r)
    });
    replica.signal(libc::SIGSTOP);
    // As Redis's test: 1 MB at a time until the stream piles up in the master.
    let value = "x".repeat(1024);
    for round in 0.. {
        assert!(round < 200, "the replication buffer never filled");
        let mut p = redis::pipe();
        for i in 0..1024 {
            p.cmd("SET")
                .arg(format!("junk{round}:{i}"))
                .arg(&value)
                .ignore();
        }
        let () = p.query(&mut m).unwrap();
        let buffers: u64 = info_value(&m.info_text("memory"), "mem_total_replication_buffers")
            .unwrap()
            .parse()
            .unwrap();
        if buffers > 2 * 1024 * 1024 {
            break;
        }
    }
    assert_eq!(q(&mut m, &["INCR", "k"]), int(2));
    Pair { master, replica }
}

impl Drop for Pair {
    fn drop(&mut self) {
        self.replica.signal(libc::SIGCONT);
    }
}

fn shutdown_pending(m: &mut redis::Connection) -> bool {
    info_value(&m.info_text("server"), "shutdown_in_milliseconds")
        .is_some_and(|ms| ms.parse::<i64>().unwrap() > 0)
}

#[test]
fn shutdown_waits_for_a_lagging_replica_with_writes_held() {
    let mut pair = stopped_replica_pair(&[]);
    q(
        &mut pair.master.conn(),
        &["CONFIG", "SET", "shutdown-timeout", "300"],
    );
    let mut m = pair.master.conn();
    let mut shut = <Raw>::new(pair.master.port);
    shut.send(&[b"SHUTDOWN"]);
    wait_for("the shutdown to wait", Duration::from_secs(10), || {
        shutdown_pending(&mut m)
    });
    assert_eq!(
        info_value(&m.info_text("clients"), "blocked_clients").as_deref(),
        Some("1")
    );
    assert!(pair
        .master
        .log()
        .contains("Waiting for replicas before shutting down."));
    // Writes wait (they would move the offset the replica must reach); reads go on.
    let mut writer = <Raw>::new(pair.master.port);
    writer.send(&[b"SET", b"held", b"1"]);
    assert_eq!(q(&mut m, &["GET", "k"]), bulk("2"));

    pair.replica.signal(libc::SIGCONT);
    exits_with(&mut pair.master, 0);
    let mut r = pair.replica.conn();
    assert_eq!(q(&mut r, &["GET", "k"]), bulk("2"));
    // The held write never ran: the replica did not get it either.
    assert_eq!(q(&mut r, &["EXISTS", "held"]), int(0));
    let log = pair.master.log();
    assert!(
        log.contains("1 of 1 replicas are in sync when shutting down."),
        "{log}"
    );
    assert!(!log.contains("Lagging replica"), "{log}");
}

#[test]
fn shutdown_timeout_gives_up_on_a_replica_that_does_not_catch_up() {
    let mut pair = stopped_replica_pair(&[]);
    q(
        &mut pair.master.conn(),
        &["CONFIG", "SET", "shutdown-timeout", "1"],
    );
    let t0 = Instant::now();
    pair.master.signal(libc::SIGTERM);
    exits_with(&mut pair.master, 0);
    assert!(t0.elapsed() >= Duration::from_millis(900));
    let log = pair.master.log();
    assert!(log.contains("Lagging replica 127.0.0.1:"), "{log}");
    assert!(
        log.contains("0 of 1 replicas are in sync when shutting down."),
        "{log}"
    );
    pair.replica.signal(libc::SIGCONT);
    assert_eq!(q(&mut pair.replica.conn(), &["GET", "k"]), bulk("1"));
}

#[test]
fn shutdown_now_does_not_wait_for_replicas() {
    let mut pair = stopped_replica_pair(&[]);
    q(
        &mut pair.master.conn(),
        &["CONFIG", "SET", "shutdown-timeout", "300"],
    );
    let _ = run(&mut pair.master.conn(), &[b"SHUTDOWN", b"NOW"]);
    exits_with(&mut pair.master, 0);
    assert!(pair
        .master
        .log()
        .contains("0 of 1 replicas are in sync when shutting down."));
}

#[test]
fn shutdown_abort_while_waiting_answers_every_waiting_caller_and_resumes_writes() {
    let pair = stopped_replica_pair(&[]);
    let mut m = pair.master.conn();
    let mut first = <Raw>::new(pair.master.port);
    let mut second = <Raw>::new(pair.master.port);
    first.send(&[b"SHUTDOWN"]);
    wait_for("the shutdown to wait", Duration::from_secs(10), || {
        shutdown_pending(&mut m)
    });
    second.send(&[b"SHUTDOWN"]);
    wait_blocked(&mut m, 2); // both callers wait
    let mut writer = <Raw>::new(pair.master.port);
    writer.send(&[b"SET", b"during", b"1"]);

    assert_eq!(q(&mut m, &["SHUTDOWN", "ABORT"]), V::Okay);
    assert_eq!(first.read(), "!ERR Errors trying to SHUTDOWN. Check logs.");
    assert_eq!(second.read(), "!ERR Errors trying to SHUTDOWN. Check logs.");
    // The held write goes through once the shutdown is given up.
    assert_eq!(writer.read(), "OK");
    assert!(!shutdown_pending(&mut m));
    assert!(pair.master.log().contains("Shutdown manually aborted."));
}

#[test]
fn a_second_sigint_while_waiting_for_replicas_exits_at_once() {
    let mut pair = stopped_replica_pair(&[]);
    let mut m = pair.master.conn();
    q(&mut m, &["CONFIG", "SET", "shutdown-timeout", "300"]);
    pair.master.signal(libc::SIGINT);
    wait_for("the shutdown to wait", Duration::from_secs(10), || {
        shutdown_pending(&mut m)
    });
    pair.master.signal(libc::SIGINT);
    exits_with(&mut pair.master, 1);
    assert!(pair.master.log().contains("You insist... exiting now."));
}

/// Redis's integration/shutdown "waits for replica then aborted": two callers send SHUTDOWN
/// and, without waiting, a third connection counts them with INFO and aborts. Each caller's
/// request was sent first, so it is seen first, whatever thread serves it.
#[test]
fn shutdown_callers_are_seen_at_once_by_info_and_abort_on_another_connection() {
    let pair = stopped_replica_pair(&["--threads", "4"]);
    let port = pair.master.port;
    let mut m = <Raw>::new(port);
    for round in 0..20 {
        let mut first = <Raw>::new(port);
        let mut second = <Raw>::new(port);
        first.send(&[b"SHUTDOWN"]);
        second.send(&[b"SHUTDOWN"]);
        let info = m.info_text("clients");
        assert_eq!(
            info_value(&info, "blocked_clients").as_deref(),
            Some("2"),
            "round {round}:\n{info}"
        );
        assert_eq!(m.q("SHUTDOWN ABORT"), "OK", "round {round}");
        assert_eq!(first.read(), "!ERR Errors trying to SHUTDOWN. Check logs.");
        assert_eq!(second.read(), "!ERR Errors trying to SHUTDOWN. Check logs.");
    }
}

/// While a shutdown waits for replicas: ROLE answers as usual (as Redis, it is not held), and
/// CLIENT UNBLOCK of a SHUTDOWN caller works only with ERROR, as in Redis 7.2.6: the caller
/// gets -UNBLOCKED and the shutdown goes on waiting. With TIMEOUT (the default) Redis 7.2.6
/// crashes (a SHUTDOWN wait has no timeout reply); tern answers 0 and leaves the caller
/// waiting, as later Redis versions do.
#[test]
fn client_unblock_of_a_shutdown_caller_and_role_while_the_shutdown_waits() {
    let pair = stopped_replica_pair(&[]);
    let mut m = pair.master.conn();
    let mut shut = <Raw>::new(pair.master.port);
    let id = shut.q("CLIENT ID")[1..].to_string();
    shut.send(&[b"SHUTDOWN"]);
    wait_for("the shutdown to wait", Duration::from_secs(10), || {
        shutdown_pending(&mut m)
    });
    wait_blocked(&mut m, 1);

    let V::Array(role) = q(&mut m, &["ROLE"]) else {
        panic!("ROLE is not an array")
    };
    assert_eq!(role[0], bulk("master"));
    assert!(matches!(role[1], V::Int(_)), "{role:?}");
    match &role[2] {
        V::Array(replicas) => assert_eq!(replicas.len(), 1, "{role:?}"),
        other => panic!("ROLE's replicas: {other:?}"),
    }

    assert_eq!(q(&mut m, &["CLIENT", "UNBLOCK", &id]), int(0));
    assert_eq!(q(&mut m, &["CLIENT", "UNBLOCK", &id, "TIMEOUT"]), int(0));
    wait_blocked(&mut m, 1);
    assert_eq!(q(&mut m, &["CLIENT", "UNBLOCK", &id, "ERROR"]), int(1));
    assert_eq!(
        shut.read(),
        "!UNBLOCKED client unblocked via CLIENT UNBLOCK"
    );
    wait_blocked(&mut m, 0);
    assert!(shutdown_pending(&mut m), "the shutdown still waits");
    // The caller is served again (Redis 7.2.6 leaves it stuck, a bug fixed later).
    assert_eq!(shut.q("PING"), "PONG");
    assert_eq!(q(&mut m, &["SHUTDOWN", "ABORT"]), V::Okay);
    assert!(!shutdown_pending(&mut m));
}

//! FAILOVER: a coordinated hand-over from a master to one of its replicas (Redis 7.2's state
//! machine): writes are held until the target acknowledged the whole stream, the master
//! becomes the target's replica and the target takes over on `PSYNC ... FAILOVER`, both
//! continuing partially; errors, TIMEOUT, FORCE and ABORT as Redis; tern and redis-server
//! on either side; no write acknowledged by `WAIT 1` is lost when the old master dies after.
use crate::common::*;
use crate::psync::sync_counts;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const DEBUG: &[&str] = &["--enable-debug-command", "yes"];

fn state(c: &mut redis::Connection) -> String {
    info_field(c, "replication", "master_failover_state")
}

fn role(c: &mut redis::Connection) -> String {
    info_field(c, "replication", "role")
}

#[test]
fn failover_errors_match_redis() {
    let mut servers = vec![(Server::tern(DEBUG), Server::tern(DEBUG))];
    if let (Some(m), Some(r)) = (Server::redis(DEBUG), Server::redis(DEBUG)) {
        servers.push((m, r));
    }
    let mut replies = Vec::new();
    for (master, replica) in &servers {
        let mut m = master.conn();
        let mut r = replica.conn();
        let port = replica.port.to_string();
        let mut out = vec![
            err(&mut m, &["FAILOVER", "TO", "127.0.0.1", &port]),
            err(&mut m, &["FAILOVER", "ABORT"]),
        ];
        replicaof(&mut r, master);
        wait_caught_up(&mut m, &mut r);
        for args in [
            &["FAILOVER", "TO", "127.0.0.1", "1"][..],
            &["FAILOVER", "TO", "127.0.0.1", "notaport"],
            &["FAILOVER", "FORCE", "TIMEOUT", "100"],
            &["FAILOVER", "TO", "127.0.0.1", &port, "FORCE"],
            &["FAILOVER", "TIMEOUT", "0"],
            &["FAILOVER", "TIMEOUT", "10", "TIMEOUT", "10"],
            &["FAILOVER", "BOGUS"],
        ] {
            out.push(err(&mut m, args));
        }
        out.push(err(&mut r, &["FAILOVER"]));
        out.push(state(&mut m));
        replies.push(out);
    }
    assert_eq!(replies[0][0], "ERR FAILOVER requires connected replicas.");
    assert_eq!(
        replies[0][9],
        "ERR FAILOVER is not valid when server is a replica."
    );
    if replies.len() == 2 {
        assert_eq!(replies[0], replies[1]);
    }
}

/// FAILOVER TO the target (or to any replica): the old master follows the target, the other
/// replica is moved by hand, every move a partial resynchronization.
fn hand_over(master: &Server, target: &Server, other: &Server, to_target: bool) {
    let mut m = master.conn();
    let mut t = target.conn();
    let mut o = other.conn();
    replicaof(&mut t, master);
    replicaof(&mut o, master);
    for i in 0..200 {
        q(&mut m, &["SET", &format!("k{i}"), &i.to_string()]);
    }
    wait_caught_up(&mut m, &mut t);
    wait_caught_up(&mut m, &mut o);
    // The master puts a replica online at its first ACK, which follows the sync.
    for port in [target.port, other.port] {
        let row = format!("port={port},state=online");
        wait_until("the replica to be online", || {
            m.info_text("replication").contains(&row)
        });
    }
    let (full, partial, _) = sync_counts(&mut t);
    if to_target {
        let port = target.port.to_string();
        assert_eq!(q(&mut m, &["FAILOVER", "TO", "127.0.0.1", &port]), ok());
    } else {
        // Only the target can catch up: the other replica is stopped.
        other.signal(19);
        q(&mut m, &["SET", "one", "more"]);
        assert_eq!(q(&mut m, &["FAILOVER"]), ok());
    }
    wait_until("the failover to end", || state(&mut m) == "no-failover");
    if !to_target {
        other.signal(18);
    }
    assert_eq!(role(&mut m), "slave");
    wait_until("the target to be master", || role(&mut t) == "master");
    assert!(err(&mut m, &["SET", "after", "x"]).starts_with("READONLY"));
    replicaof(&mut o, target);
    q(&mut t, &["SET", "after", "failover"]);
    wait_caught_up(&mut t, &mut m);
    wait_caught_up(&mut t, &mut o);
    let (full2, ok2, _) = sync_counts(&mut t);
    assert_eq!(
        (full2, ok2),
        (full, partial + 2),
        "both followed with a PSYNC"
    );
    let digest = q(&mut t, &["DEBUG", "DIGEST"]);
    assert_eq!(q(&mut m, &["DEBUG", "DIGEST"]), digest);
    assert_eq!(q(&mut o, &["DEBUG", "DIGEST"]), digest);
}

#[test]
fn failover_to_a_given_replica() {
    hand_over(
        &Server::tern(DEBUG),
        &Server::tern(DEBUG),
        &Server::tern(DEBUG),
        true,
    );
}

#[test]
fn failover_to_any_replica_picks_the_one_that_caught_up() {
    hand_over(
        &Server::tern(DEBUG),
        &Server::tern(DEBUG),
        &Server::tern(DEBUG),
        false,
    );
}

#[test]
fn tern_master_fails_over_to_a_redis_replica() {
    let Some(target) = Server::redis(DEBUG) else {
        return;
    };
    hand_over(&Server::tern(DEBUG), &target, &Server::tern(DEBUG), true);
}

#[test]
fn redis_master_fails_over_to_a_tern_replica() {
    let Some(master) = Server::redis_master() else {
        return;
    };
    let Some(other) = Server::redis(DEBUG) else {
        return;
    };
    hand_over(&master, &Server::tern(DEBUG), &other, true);
}

#[test]
fn a_timeout_aborts_and_writes_go_on_and_force_fails_over_anyway() {
    let master = Server::tern(DEBUG);
    let replica = Server::tern(DEBUG);
    let mut m = master.conn();
    let mut r = replica.conn();
    replicaof(&mut r, &master);
    wait_caught_up(&mut m, &mut r);
    replica.signal(19);
    q(&mut m, &["SET", "lag", "1"]);
    let port = replica.port.to_string();
    assert_eq!(
        q(
            &mut m,
            &["FAILOVER", "TO", "127.0.0.1", &port, "TIMEOUT", "300"]
        ),
        ok()
    );
    assert_eq!(state(&mut m), "waiting-for-sync");
    assert_eq!(
        err(&mut m, &["REPLICAOF", "NO", "ONE"]),
        "ERR REPLICAOF not allowed while failing over."
    );
    assert_eq!(
        err(&mut m, &["FAILOVER"]),
        "ERR FAILOVER already in progress."
    );
    wait_until("the timeout", || state(&mut m) == "no-failover");
    assert_eq!(role(&mut m), "master");
    assert!(master
        .log()
        .contains("aborted: Replica never caught up before timeout"));
    // Writes are no longer held.
    assert_eq!(q(&mut m, &["SET", "free", "again"]), ok());
    // ABORT while waiting.
    assert_eq!(q(&mut m, &["FAILOVER", "TO", "127.0.0.1", &port]), ok());
    assert_eq!(q(&mut m, &["FAILOVER", "ABORT"]), ok());
    assert_eq!(state(&mut m), "no-failover");
    assert_eq!(q(&mut m, &["SET", "after", "abort"]), ok());
    // FORCE: the replica never caught up, the failover happens at the timeout.
    assert_eq!(
        q(
            &mut m,
            &[
                "FAILOVER",
                "TO",
                "127.0.0.1",
                &port,
                "FORCE",
                "TIMEOUT",
                "300"
            ]
        ),
        ok()
    );
    std::thread::sleep(Duration::from_millis(500));
    replica.signal(18);
    wait_until("the forced failover to end", || {
        state(&mut m) == "no-failover"
    });
    wait_until("the replica to be master", || role(&mut r) == "master");
    assert_eq!(role(&mut m), "slave");
    wait_caught_up(&mut r, &mut m);
    assert_eq!(q(&mut r, &["GET", "after"]), bulk("abort"));
}

/// Clients write with `WAIT 1`; the master fails over and then dies by SIGKILL: every write
/// a replica acknowledged is on the new master.
#[test]
fn no_write_acknowledged_by_wait_is_lost_when_the_old_master_dies() {
    let mut master = Server::tern(DEBUG);
    let replica = Server::tern(DEBUG);
    let mut m = master.conn();
    let mut r = replica.conn();
    replicaof(&mut r, &master);
    wait_caught_up(&mut m, &mut r);
    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (acked, stop, url) = (acked.clone(), stop.clone(), master.url());
            std::thread::spawn(move || {
                let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("w{w}:{i}");
                    i += 1;
                    if redis::cmd("SET")
                        .arg(&key)
                        .arg(i)
                        .query::<()>(&mut c)
                        .is_err()
                    {
                        continue;
                    }
                    let n: redis::RedisResult<i64> =
                        redis::cmd("WAIT").arg(1).arg(1000).query(&mut c);
                    if n == Ok(1) {
                        acked.lock().unwrap().push(key);
                    }
                }
            })
        })
        .collect();
    wait_until("writes under way", || acked.lock().unwrap().len() > 200);
    let port = replica.port.to_string();
    assert_eq!(q(&mut m, &["FAILOVER", "TO", "127.0.0.1", &port]), ok());
    wait_until("the failover to end", || state(&mut m) == "no-failover");
    std::thread::sleep(Duration::from_millis(200));
    master.signal(9);
    let _ = master.wait_exit(Duration::from_secs(5));
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap();
    assert!(acked.len() > 200);
    for key in acked.iter() {
        assert_eq!(
            qi(&mut r, &["EXISTS", key]),
            1,
            "{key} acknowledged, then lost"
        );
    }
}

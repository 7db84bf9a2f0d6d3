//! A master with an AOF never sends its replicas a write the AOF does not hold yet: killed
//! with SIGKILL and restarted from its AOF, it has at least everything its replica received
//! (Redis writes the AOF before it writes to replicas in the same event-loop pass; fsynced
//! first under `appendfsync always`).
use crate::common::*;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const WRITERS: usize = 8;

fn master_in(dir: &Path, policy: &str) -> Server {
    Server::tern(&[
        "--dir",
        dir.to_str().unwrap(),
        "--appendonly",
        "yes",
        "--appendfsync",
        policy,
        "--threads",
        "2",
    ])
}

fn counters(c: &mut redis::Connection) -> Vec<u64> {
    (0..WRITERS)
        .map(|t| {
            let v: Option<u64> = redis::cmd("GET")
                .arg(format!("counter:{t}"))
                .query(c)
                .unwrap();
            v.unwrap_or(0)
        })
        .collect()
}

/// One round: writers INCR their counters on the master while its replica follows; the master
/// is killed; what the replica holds then must be in the master's AOF.
fn round(policy: &str, n: usize) {
    let dir = fresh_dir(&format!("aof_replica-{policy}-{n}"));
    let master = master_in(&dir, policy);
    let replica = Server::tern(&[]);
    let mut r = replica.conn();
    q(
        &mut r,
        &["REPLICAOF", "127.0.0.1", &master.port.to_string()],
    );
    wait_link_up(&mut r);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let (url, stop) = (master.url(), stop.clone());
            std::thread::spawn(move || {
                let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
                while !stop.load(Ordering::Relaxed) {
                    let r: redis::RedisResult<u64> =
                        redis::cmd("INCR").arg(format!("counter:{t}")).query(&mut c);
                    if r.is_err() {
                        break;
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    master.signal(libc::SIGKILL);
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    // The replica keeps serving what it received (replica-serve-stale-data).
    wait_until("the replica to see its master gone", || {
        info_field(&mut r, "replication", "master_link_status") == "down"
    });
    let received = counters(&mut r);
    assert!(
        received.iter().sum::<u64>() > 100,
        "too few writes: {received:?}"
    );
    drop(master);
    let restarted = master_in(&dir, policy);
    let mut m = restarted.conn();
    wait_until("the AOF to load", || {
        info_field(&mut m, "persistence", "loading") == "0"
    });
    let kept = counters(&mut m);
    for t in 0..WRITERS {
        assert!(
            kept[t] >= received[t],
            "appendfsync {policy}, round {n}: counter:{t} reached the replica at {} but the \
             master's AOF holds {}",
            received[t],
            kept[t]
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_replica_never_gets_a_write_its_masters_aof_could_lose() {
    for policy in ["everysec", "always"] {
        for n in 0..3 {
            round(policy, n);
        }
    }
}

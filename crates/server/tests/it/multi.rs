//! MULTI / EXEC / DISCARD / WATCH / UNWATCH against the real binary: Redis's replies and errors,
//! WATCH invalidation from every source, and atomicity across worker threads (counts that
//! must come out exact, not timings).
use crate::common::{int, q, wait_blocked, Server};

type Raw = crate::common::Raw<true>;
use std::time::{Duration, Instant};

/// The same script of commands on tern and on redis-server (when installed) give the same
/// replies.
fn same_on_both(script: &[&str]) {
    let t = Server::tern(&[]);
    let mut tc = Raw::new(t.port);
    let tern: Vec<String> = script.iter().map(|c| tc.q(c)).collect();
    if let Some(r) = Server::redis(&[]) {
        let mut rc = Raw::new(r.port);
        let redis: Vec<String> = script.iter().map(|c| rc.q(c)).collect();
        assert_eq!(tern, redis, "script {script:?}");
    }
}

#[test]
fn queueing_and_exec_replies() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    assert_eq!(c.q("MULTI"), "OK");
    assert_eq!(c.q("SET a 1"), "QUEUED");
    assert_eq!(c.q("INCR a"), "QUEUED");
    assert_eq!(c.q("LPUSH a x"), "QUEUED");
    assert_eq!(c.q("GET a"), "QUEUED");
    assert_eq!(
        c.q("EXEC"),
        "[OK,:2,!WRONGTYPE Operation against a key holding the wrong kind of value,2]"
    );
    assert_eq!(c.q("MULTI"), "OK");
    assert_eq!(c.q("EXEC"), "[]");
    same_on_both(&[
        "MULTI",
        "SET a 1",
        "INCR a",
        "LPUSH a x",
        "GET a",
        "EXEC",
        "EXEC",
        "DISCARD",
        "MULTI",
        "MULTI",
        "WATCH x",
        "PING",
        "EXEC",
        "MULTI",
        "NOSUCHCOMMAND",
        "SET a",
        "SET a 2",
        "EXEC",
        "GET a",
        "MULTI",
        "SET a 3",
        "DISCARD",
        "GET a",
        "UNWATCH",
    ]);
}

#[test]
fn client_list_shows_the_open_transaction() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    assert!(c.q("CLIENT INFO").contains(" multi=-1 "));
    c.q("MULTI");
    c.q("SET a 1");
    c.q("SET b 1");
    // CLIENT INFO itself is queued inside MULTI: look from another connection.
    let mut o = Raw::new(s.port);
    let list = o.q("CLIENT LIST");
    assert!(
        list.lines()
            .any(|l| l.contains("flags=x") && l.contains(" multi=2 ")),
        "{list}"
    );
    c.q("DISCARD");
    assert!(c.q("CLIENT INFO").contains(" multi=-1 "));
}

#[test]
fn blocking_commands_inside_exec_do_not_block() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    c.q("MULTI");
    c.q("BLPOP empty 0");
    c.q("BZPOPMIN empty 0");
    let t = Instant::now();
    assert_eq!(c.q("EXEC"), "[(nilarr),(nilarr)]");
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_push_inside_exec_serves_a_blocked_client_after_the_transaction() {
    let s = Server::tern(&["--threads", "2"]);
    let mut w = Raw::new(s.port);
    let mut c = Raw::new(s.port);
    w.send_cmd("BLPOP q 0");
    wait_blocked(&mut c, 1);
    c.q("MULTI");
    c.q("RPUSH q a b");
    c.q("LLEN q");
    // Inside the transaction the list still holds both: the waiter is served after EXEC.
    assert_eq!(c.q("EXEC"), "[:2,:2]");
    assert_eq!(w.read(), "[q,a]");
    assert_eq!(c.q("LRANGE q 0 -1"), "[b]");
}

fn exec_after(c: &mut Raw, other: impl FnOnce()) -> String {
    other();
    c.q("MULTI");
    c.q("PING");
    c.q("EXEC")
}

#[test]
fn watch_is_invalidated_by_every_kind_of_change() {
    let s = Server::tern(&["--threads", "2", "--enable-debug-command", "yes"]);
    let mut c = Raw::new(s.port);
    let mut o = Raw::new(s.port);
    let aborted = "(nilarr)";
    let ran = "[PONG]";

    let mut case = |setup: &str, watch: &str, change: &str, want: &str| {
        c.q("FLUSHALL");
        for cmd in setup.split(';').filter(|s| !s.is_empty()) {
            c.q(cmd);
        }
        assert_eq!(c.q(&format!("WATCH {watch}")), "OK");
        let got = exec_after(&mut c, || {
            for cmd in change.split(';').filter(|s| !s.is_empty()) {
                o.q(cmd);
            }
        });
        assert_eq!(got, want, "setup {setup:?} watch {watch} change {change:?}");
    };
    case("SET k 1", "k", "", ran);
    case("SET k 1", "k", "SET k 2", aborted);
    case("SET k 1", "a b c k d", "INCR k", aborted);
    case("SET k 1", "k", "SET other 2", ran);
    case("", "k", "SET k 1", aborted);
    case("", "k", "DEL k", ran);
    case("RPUSH k a", "k", "LPOP k", aborted);
    case("SET k 1", "k", "EXPIRE k 100", aborted);
    case("SET k 1", "k", "RENAME k k2", aborted);
    case("SET k2 1", "k", "RENAME k2 k", aborted);
    case("SET k 1", "k", "FLUSHDB", aborted);
    case("SET other 1", "k", "FLUSHDB", ran);
    case("SET k 1", "k", "FLUSHALL", aborted);
    case("SET k 1", "k", "SELECT 9;FLUSHDB;SELECT 0", ran);
    case("SET k 1", "k", "SWAPDB 0 1", aborted);
    case("SELECT 1;SET k 1;SELECT 0", "k", "SWAPDB 0 1", aborted);
    case("SET k 1", "k", "SELECT 1;SET k 2;SELECT 0", ran);
    case("SADD s a", "s", "SADD s b", aborted);
    case("LPUSH l a", "dst", "SORT l ALPHA STORE dst", aborted);
    case("LPUSH dst a", "dst", "SORT emptylist STORE dst", aborted);
    case("HSET h f v", "h", "HINCRBY h n 1", aborted);
    // The transaction's own writes after WATCH do not abort it: only others' before EXEC.
    c.q("FLUSHALL");
    c.q("WATCH k");
    c.q("MULTI");
    c.q("SET k 1");
    assert_eq!(c.q("EXEC"), "[OK]");
    // EXEC and DISCARD forget the watched keys.
    c.q("WATCH k");
    c.q("MULTI");
    c.q("DISCARD");
    o.q("SET k 5");
    assert_eq!(exec_after(&mut c, || {}), ran);
    c.q("WATCH k");
    c.q("UNWATCH");
    o.q("SET k 6");
    assert_eq!(exec_after(&mut c, || {}), ran);
}

#[test]
fn watch_and_expiry() {
    let s = Server::tern(&["--enable-debug-command", "yes"]);
    let mut c = Raw::new(s.port);
    let mut o = Raw::new(s.port);
    // A key that expires after WATCH aborts EXEC, deleted or not.
    c.q("DEBUG SET-ACTIVE-EXPIRE 0");
    c.q("SET k 1 PX 50");
    c.q("WATCH k");
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(exec_after(&mut c, || {}), "(nilarr)");
    // Watching a key that had already expired: its deletion is no change.
    c.q("SET k 1 PX 1");
    std::thread::sleep(Duration::from_millis(5));
    c.q("WATCH k");
    assert_eq!(o.q("EXISTS k"), ":0");
    assert_eq!(exec_after(&mut c, || {}), "[PONG]");
    c.q("SET k 1 PX 1");
    std::thread::sleep(Duration::from_millis(5));
    c.q("WATCH k");
    o.q("FLUSHDB");
    assert_eq!(exec_after(&mut c, || {}), "[PONG]");
    // Active expiry deleting a watched key counts as a change.
    c.q("DEBUG SET-ACTIVE-EXPIRE 1");
    c.q("SET k 1 PX 100");
    c.q("WATCH k");
    let deadline = Instant::now() + Duration::from_secs(5);
    while o.q("DBSIZE") != ":0" {
        assert!(Instant::now() < deadline, "key never expired");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(exec_after(&mut c, || {}), "(nilarr)");
}

fn client(s: &Server) -> redis::Connection {
    s.conn()
}

/// 50 clients × 1,000 `MULTI; INCR counter; LPUSH log x; EXEC`: the counter and the list
/// length come out exact, and every transaction's INCR reply matches its LPUSH reply (nothing
/// interleaved between the two commands of one transaction).
#[test]
fn isolation_counter_and_log_stay_in_step() {
    let s = Server::tern(&["--threads", "2"]);
    let threads: Vec<_> = (0..50)
        .map(|_| {
            let mut c = client(&s);
            std::thread::spawn(move || {
                for _ in 0..1000 {
                    let (n, len): (i64, i64) = redis::pipe()
                        .atomic()
                        .cmd("INCR")
                        .arg("counter")
                        .cmd("LPUSH")
                        .arg("log")
                        .arg("x")
                        .query(&mut c)
                        .unwrap();
                    assert_eq!(n, len, "another transaction ran in between");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = client(&s);
    let n: i64 = redis::cmd("GET").arg("counter").query(&mut c).unwrap();
    let len: i64 = redis::cmd("LLEN").arg("log").query(&mut c).unwrap();
    assert_eq!((n, len), (50_000, 50_000));
}

/// 50 clients each add 100 to a counter by WATCH / GET / MULTI / SET / EXEC, retrying when EXEC
/// aborts: no increment is lost.
#[test]
fn isolation_optimistic_increments_lose_nothing() {
    let s = Server::tern(&["--threads", "2"]);
    let threads: Vec<_> = (0..50)
        .map(|_| {
            let mut c = client(&s);
            std::thread::spawn(move || {
                let mut retries = 0u64;
                for _ in 0..100 {
                    loop {
                        redis::cmd("WATCH").arg("opt").exec(&mut c).unwrap();
                        let v: Option<i64> = redis::cmd("GET").arg("opt").query(&mut c).unwrap();
                        let r: Option<(String,)> = redis::pipe()
                            .atomic()
                            .cmd("SET")
                            .arg("opt")
                            .arg(v.unwrap_or(0) + 1)
                            .query(&mut c)
                            .unwrap();
                        if r.is_some() {
                            break;
                        }
                        retries += 1;
                    }
                }
                retries
            })
        })
        .collect();
    let retries: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let mut c = client(&s);
    let v: i64 = redis::cmd("GET").arg("opt").query(&mut c).unwrap();
    assert_eq!(v, 5000, "lost updates (retries: {retries})");
}

/// Writers set a and b to the same value in one transaction; a reader's MULTI GET a GET b EXEC
/// never sees them differ.
#[test]
fn isolation_readers_see_whole_transactions() {
    let s = Server::tern(&["--threads", "2"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let mut c = client(&s);
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut i = 0i64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    i += 1;
                    let v = i * 10 + w;
                    let _: () = redis::pipe()
                        .atomic()
                        .cmd("SET")
                        .arg("a")
                        .arg(v)
                        .ignore()
                        .cmd("SET")
                        .arg("b")
                        .arg(v)
                        .ignore()
                        .query(&mut c)
                        .unwrap();
                }
            })
        })
        .collect();
    let mut r = client(&s);
    let mut seen = 0;
    for _ in 0..5000 {
        let (a, b): (Option<i64>, Option<i64>) = redis::pipe()
            .atomic()
            .cmd("GET")
            .arg("a")
            .cmd("GET")
            .arg("b")
            .query(&mut r)
            .unwrap();
        assert_eq!(a, b, "a torn transaction was visible");
        if a.is_some() {
            seen += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert!(seen > 0);
}

/// A transaction touching every shard (FLUSHDB, KEYS, SELECT) runs while other clients keep
/// running their own commands and transactions; nothing deadlocks.
#[test]
fn whole_keyspace_transactions_mix_with_keyed_ones() {
    let s = Server::tern(&["--threads", "2"]);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let mut c = client(&s);
            std::thread::spawn(move || {
                for i in 0..300 {
                    if t == 0 && i % 10 == 0 {
                        let _: (Vec<String>, i64) = redis::pipe()
                            .atomic()
                            .cmd("KEYS")
                            .arg("nomatch*")
                            .cmd("DBSIZE")
                            .query(&mut c)
                            .unwrap();
                    } else {
                        let k1 = format!("k{}", (t * 7 + i) % 50);
                        let k2 = format!("k{}", (t * 3 + i * 5) % 50);
                        let _: () = redis::pipe()
                            .atomic()
                            .cmd("INCR")
                            .arg(&k1)
                            .ignore()
                            .cmd("MSET")
                            .arg(&k2)
                            .arg(i)
                            .arg("other")
                            .arg(t)
                            .ignore()
                            .cmd("SELECT")
                            .arg(3)
                            .ignore()
                            .cmd("INCR")
                            .arg(&k1)
                            .ignore()
                            .cmd("SELECT")
                            .arg(0)
                            .ignore()
                            .query(&mut c)
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = client(&s);
    redis::cmd("SELECT").arg(3).exec(&mut c).unwrap();
    let total: i64 = (0..50)
        .map(|i| {
            redis::cmd("GET")
                .arg(format!("k{i}"))
                .query::<Option<i64>>(&mut c)
                .unwrap()
                .unwrap_or(0)
        })
        .sum();
    // db 3 only ever sees the INCRs: 7 keyed clients × 300 + client 0's 270.
    assert_eq!(total, 7 * 300 + 270);
}

/// WAIT with no replicas: 0 at once when none are asked for or it may not block (MULTI,
/// scripts), else 0 after the timeout; errors as Redis.
#[test]
fn wait_without_replicas() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(q(&mut c, &["WAIT", "0", "0"]), int(0));
    assert_eq!(q(&mut c, &["WAIT", "1", "50"]), int(0));
    assert_eq!(
        crate::common::err(&mut c, &["WAIT", "1", "-1"]),
        "ERR timeout is negative"
    );
    assert_eq!(
        crate::common::err(&mut c, &["WAIT", "x", "1"]),
        "ERR value is not an integer or out of range"
    );
    let v: i64 = redis::cmd("EVAL")
        .arg("return redis.call('wait', '1', '0')")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(v, 0);
    let r: Vec<i64> = redis::pipe()
        .atomic()
        .cmd("WAIT")
        .arg(1)
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(r, vec![0]);
    // Blocked forever (timeout 0) until CLIENT UNBLOCK, which ends it like a timeout.
    let mut b = s.conn();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut b).unwrap();
    let t = std::thread::spawn(move || -> i64 {
        redis::cmd("WAIT").arg(1).arg(0).query(&mut b).unwrap()
    });
    let mut unblocked = 0;
    for _ in 0..200 {
        unblocked = redis::cmd("CLIENT")
            .arg("UNBLOCK")
            .arg(id)
            .query(&mut c)
            .unwrap();
        if unblocked == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(unblocked, 1);
    assert_eq!(t.join().unwrap(), 0);
}

/// Wait until `c` gets BUSY for PING (a script of another client is past the threshold).
fn wait_busy(c: &mut Raw) {
    let t0 = Instant::now();
    while !c.q("PING").starts_with("!BUSY") {
        assert!(t0.elapsed() < Duration::from_secs(5), "no BUSY");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_busy_script_aborts_transactions_as_in_redis() {
    let s = Server::tern(&["--busy-reply-threshold", "10"]);
    let mut admin = Raw::new(s.port);
    let mut spin = Raw::new(s.port);
    let mut t = Raw::new(s.port);
    assert_eq!(admin.q("SET xx 1"), "OK");

    // EXEC during the busy script: EXECABORT naming BUSY, the transaction is gone.
    assert_eq!(t.q("MULTI"), "OK");
    assert_eq!(t.q("INCR xx"), "QUEUED");
    spin.send(&[b"EVAL", b"while true do end", b"0"]);
    wait_busy(&mut admin);
    assert_eq!(
        t.q("EXEC"),
        "!EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. \
         You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    );
    assert_eq!(admin.q("SCRIPT KILL"), "OK");
    assert!(spin.read().starts_with("!ERR Script killed by user"));
    assert_eq!(t.q("PING"), "PONG", "the client left the transaction");
    assert_eq!(admin.q("GET xx"), "1");

    // A command refused with BUSY while queueing dooms the transaction.
    assert_eq!(t.q("MULTI"), "OK");
    spin.send(&[b"EVAL", b"while true do end", b"0"]);
    wait_busy(&mut admin);
    assert!(t.q("INCR xx").starts_with("!BUSY"));
    assert_eq!(admin.q("SCRIPT KILL"), "OK");
    assert!(spin.read().starts_with("!ERR Script killed by user"));
    assert_eq!(t.q("INCR xx"), "QUEUED");
    assert_eq!(
        t.q("EXEC"),
        "!EXECABORT Transaction discarded because of previous errors."
    );
    assert_eq!(admin.q("GET xx"), "1");
}

#[test]
fn exec_over_maxmemory_is_aborted_with_oom() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    assert_eq!(c.q("MULTI"), "OK");
    assert_eq!(c.q("SET a b"), "QUEUED");
    let mut admin = Raw::new(s.port);
    assert_eq!(admin.q("CONFIG SET maxmemory 1"), "OK");
    assert_eq!(
        c.q("EXEC"),
        "!EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'."
    );
    assert_eq!(admin.q("CONFIG SET maxmemory 0"), "OK");
    assert_eq!(c.q("EXEC"), "!ERR EXEC without MULTI");
}

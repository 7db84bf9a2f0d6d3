//! CLIENT PAUSE / UNPAUSE against the real server: which commands WRITE and ALL hold, that held
//! clients count as blocked and run once the pause ends, that expiry is held meanwhile, and the
//! argument errors (compared with redis-server).
use crate::common::*;
use redis::Value as V;
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn write_pause_holds_writers_and_scripts_until_unpause() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["SET", "k", "v"]);
    q(&mut c, &["PFADD", "hll", "a"]);
    assert_eq!(q(&mut c, &["CLIENT", "PAUSE", "60000", "WRITE"]), V::Okay);
    // Reads, and scripts that declare no-writes, go through.
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("v"));
    assert_eq!(
        q(&mut c, &["EVAL", "#!lua flags=no-writes\nreturn 7", "0"]),
        int(7)
    );
    assert_eq!(q(&mut c, &["EVAL_RO", "return 8", "0"]), int(8));
    // A command with a wrong arity is answered at once.
    assert!(err(&mut c, &["SET", "k"]).contains("wrong number of arguments"));
    // Writes, may-replicate commands and scripts that may write wait.
    let held = [
        spawn_cmd(&s, &["SET", "k", "w"]),
        spawn_cmd(&s, &["PFCOUNT", "hll"]),
        spawn_cmd(&s, &["PUBLISH", "ch", "m"]),
        spawn_cmd(&s, &["EVAL", "return 1", "0"]),
    ];
    wait_blocked(&mut c, 4);
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("v"));
    assert_eq!(q(&mut c, &["CLIENT", "UNPAUSE"]), V::Okay);
    let replies: Vec<V> = held
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    assert_eq!(replies, vec![V::Okay, int(1), int(0), int(1)]);
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("w"));
    wait_blocked(&mut c, 0);
}

#[test]
fn all_pause_holds_everything_and_ends_by_itself() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["SET", "k", "v"]);
    let t0 = Instant::now();
    assert_eq!(q(&mut c, &["CLIENT", "PAUSE", "300", "ALL"]), V::Okay);
    // A later WRITE pause does not loosen it; the pausing client is held too.
    assert_eq!(q(&mut c, &["CLIENT", "PAUSE", "10", "WRITE"]), V::Okay);
    assert!(
        t0.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("v"));
}

#[test]
fn expiry_is_held_during_a_pause() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let before: u64 = info_field(&mut c, "stats", "expired_keys").parse().unwrap();
    q(&mut c, &["MULTI"]);
    q(&mut c, &["SET", "a", "1", "PX", "10"]);
    q(&mut c, &["SET", "b", "1", "PX", "10"]);
    q(&mut c, &["CLIENT", "PAUSE", "50000", "WRITE"]);
    q(&mut c, &["EXEC"]);
    thread::sleep(Duration::from_millis(300));
    // Logically gone, but not deleted.
    assert_eq!(q(&mut c, &["GET", "a"]), V::Nil);
    assert_eq!(q(&mut c, &["GET", "b"]), V::Nil);
    let during: u64 = info_field(&mut c, "stats", "expired_keys").parse().unwrap();
    assert_eq!(during, before);
    q(&mut c, &["CLIENT", "UNPAUSE"]);
    q(&mut c, &["GET", "a"]);
    q(&mut c, &["GET", "b"]);
    let after: u64 = info_field(&mut c, "stats", "expired_keys").parse().unwrap();
    assert_eq!(after, before + 2);
}

#[test]
fn argument_errors_as_redis() {
    let t = Server::tern(&[]);
    let Some(r) = Server::redis(&[]) else {
        return;
    };
    let (mut a, mut b) = (t.conn(), r.conn());
    for args in [
        &["CLIENT", "PAUSE", "100", "NONE"][..],
        &["CLIENT", "PAUSE", "abc"],
        &["CLIENT", "PAUSE", "-1"],
        &["CLIENT", "PAUSE", "1", "WRITE", "x"],
        &["CLIENT", "UNPAUSE", "x"],
        &["CLIENT", "PAUSE", "0"],
        &["CLIENT", "UNPAUSE"],
    ] {
        let (x, y) = both(&mut a, &mut b, args);
        assert_eq!(norm(x), norm(y), "{args:?}");
    }
}

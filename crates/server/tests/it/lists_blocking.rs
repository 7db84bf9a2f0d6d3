//! Blocking list commands that actually wait: BLPOP/BRPOP/BLMOVE/BRPOPLPUSH/BLMPOP woken by a
//! push from another connection, timeouts (decimals included), FIFO order among waiters,
//! chains of BLMOVEs, keys deleted or retyped while a client waits, and disconnected waiters.
//! These need the server's wait/wake machinery; the non-blocking paths are in `lists.rs`.
use crate::common::{arr, bulk, q, spawn_cmd, wait_blocked, Server};
use redis::{Connection, Value};
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn push_from_another_connection_wakes_blpop_and_brpop() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let w = spawn_cmd(&s, &["BLPOP", "k1", "k2", "0"]);
    wait_blocked(&mut c, 1);
    q(&mut c, &["RPUSH", "k2", "a", "b"]);
    assert_eq!(w.join().unwrap().unwrap(), arr(&["k2", "a"]));
    wait_blocked(&mut c, 0);
    let w = spawn_cmd(&s, &["BRPOP", "k2x", "k2", "0"]);
    // Data already there: served at once.
    assert_eq!(w.join().unwrap().unwrap(), arr(&["k2", "b"]));
    assert_eq!(q(&mut c, &["EXISTS", "k2"]), Value::Int(0));
    let w = spawn_cmd(&s, &["BRPOP", "k3", "0"]);
    wait_blocked(&mut c, 1);
    q(&mut c, &["LPUSH", "k3", "x", "y", "z"]);
    assert_eq!(w.join().unwrap().unwrap(), arr(&["k3", "x"]));
    assert_eq!(q(&mut c, &["LLEN", "k3"]), Value::Int(2));
}

#[test]
fn timeouts_with_decimals() {
    let s = Server::tern(&[]);
    for args in [
        &["BLPOP", "nokey", "0.2"][..],
        &["BRPOP", "nokey", "0.25"],
        &["BLMPOP", "0.2", "1", "nokey", "LEFT"],
        &["BLMOVE", "nokey", "dst", "LEFT", "RIGHT", "0.2"],
        &["BRPOPLPUSH", "nokey", "dst", "0.2"],
    ] {
        let start = Instant::now();
        let v = q(&mut s.conn(), args);
        let el = start.elapsed();
        assert_eq!(v, Value::Nil, "{args:?}");
        assert!(
            el >= Duration::from_millis(150),
            "{args:?} returned after {el:?}"
        );
        assert!(
            el < Duration::from_secs(2),
            "{args:?} returned after {el:?}"
        );
    }
    // RESP2 shape of the timeout replies: a null array, BLMOVE and BRPOPLPUSH included (as
    // Redis's replyToBlockedClientTimedOut for every list wait).
    let mut raw = s.raw();
    let r = crate::common::raw_roundtrip(&mut raw, b"BLPOP nokey 0.1\r\n", 5);
    assert_eq!(r, b"*-1\r\n");
    let r = crate::common::raw_roundtrip(&mut raw, b"BRPOPLPUSH nokey d 0.1\r\n", 5);
    assert_eq!(r, b"*-1\r\n");
    let r = crate::common::raw_roundtrip(&mut raw, b"BLMOVE nokey d LEFT RIGHT 0.1\r\n", 5);
    assert_eq!(r, b"*-1\r\n");
    // RESP3: `_` for both.
    let mut c3 = s.conn_resp3();
    assert_eq!(q(&mut c3, &["BLPOP", "nokey", "0.1"]), Value::Nil);
}

#[test]
fn waiters_are_served_first_come_first_served() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let a = spawn_cmd(&s, &["BLPOP", "q", "0"]);
    wait_blocked(&mut c, 1);
    let b = spawn_cmd(&s, &["BLPOP", "q", "0"]);
    wait_blocked(&mut c, 2);
    let d = spawn_cmd(&s, &["BRPOP", "q", "0"]);
    wait_blocked(&mut c, 3);
    q(&mut c, &["RPUSH", "q", "1"]);
    assert_eq!(a.join().unwrap().unwrap(), arr(&["q", "1"]));
    q(&mut c, &["RPUSH", "q", "2", "3"]);
    assert_eq!(b.join().unwrap().unwrap(), arr(&["q", "2"]));
    assert_eq!(d.join().unwrap().unwrap(), arr(&["q", "3"]));
    assert_eq!(q(&mut c, &["EXISTS", "q"]), Value::Int(0));
}

#[test]
fn blmove_chain_and_circular_moves() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let first = spawn_cmd(&s, &["BLMOVE", "a", "b", "LEFT", "RIGHT", "0"]);
    wait_blocked(&mut c, 1);
    let second = spawn_cmd(&s, &["BRPOPLPUSH", "b", "c", "0"]);
    wait_blocked(&mut c, 2);
    q(&mut c, &["RPUSH", "a", "x"]);
    assert_eq!(first.join().unwrap().unwrap(), bulk("x"));
    assert_eq!(second.join().unwrap().unwrap(), bulk("x"));
    assert_eq!(q(&mut c, &["EXISTS", "a", "b"]), Value::Int(0));
    let v: Vec<String> = crate::common::cmd(&["LRANGE", "c", "0", "-1"])
        .query(&mut c)
        .unwrap();
    assert_eq!(v, ["x"]);
    // Self-referential BRPOPLPUSH: the element rotates into the same list.
    let w = spawn_cmd(&s, &["BRPOPLPUSH", "self", "self", "0"]);
    wait_blocked(&mut c, 1);
    q(&mut c, &["RPUSH", "self", "1", "2"]);
    assert_eq!(w.join().unwrap().unwrap(), bulk("2"));
    let v: Vec<String> = crate::common::cmd(&["LRANGE", "self", "0", "-1"])
        .query(&mut c)
        .unwrap();
    assert_eq!(v, ["2", "1"]);
    // A BLMOVE whose destination another client BLPOPs.
    let popper = spawn_cmd(&s, &["BLPOP", "target", "0"]);
    wait_blocked(&mut c, 1);
    let mover = spawn_cmd(&s, &["BLMOVE", "src", "target", "RIGHT", "LEFT", "0"]);
    wait_blocked(&mut c, 2);
    q(&mut c, &["RPUSH", "src", "foo"]);
    assert_eq!(mover.join().unwrap().unwrap(), bulk("foo"));
    assert_eq!(popper.join().unwrap().unwrap(), arr(&["target", "foo"]));
    assert_eq!(q(&mut c, &["EXISTS", "target", "src"]), Value::Int(0));
}

#[test]
fn deleted_or_retyped_key_keeps_the_client_waiting() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let w = spawn_cmd(&s, &["BLPOP", "k", "0"]);
    wait_blocked(&mut c, 1);
    q(&mut c, &["SET", "k", "string"]);
    q(&mut c, &["DEL", "k"]);
    q(&mut c, &["SET", "k", "other"]);
    q(&mut c, &["DEL", "k"]);
    // Still blocked after a write of the wrong type.
    thread::sleep(Duration::from_millis(100));
    wait_blocked(&mut c, 1);
    q(&mut c, &["RPUSH", "k", "v"]);
    assert_eq!(w.join().unwrap().unwrap(), arr(&["k", "v"]));
    // A push immediately deleted in the same MULTI would not wake; here: a pushed list that
    // is renamed away before the waiter is served still ends up served by its new arrival.
    let w = spawn_cmd(&s, &["BLMPOP", "0", "2", "m1", "m2", "RIGHT", "COUNT", "5"]);
    wait_blocked(&mut c, 1);
    q(&mut c, &["RPUSH", "tmp", "1", "2", "3"]);
    q(&mut c, &["RENAME", "tmp", "m2"]);
    assert_eq!(
        w.join().unwrap().unwrap(),
        Value::Array(vec![bulk("m2"), arr(&["3", "2", "1"])])
    );
}

#[test]
fn wrong_destination_type_is_an_error_when_served() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["SET", "dst", "string"]);
    let w = spawn_cmd(&s, &["BRPOPLPUSH", "src", "dst", "0"]);
    wait_blocked(&mut c, 1);
    q(&mut c, &["RPUSH", "src", "foo"]);
    let e = w.join().unwrap().unwrap_err();
    assert_eq!(e.code(), Some("WRONGTYPE"));
    // The element stays in the source.
    let v: Vec<String> = crate::common::cmd(&["LRANGE", "src", "0", "-1"])
        .query(&mut c)
        .unwrap();
    assert_eq!(v, ["foo"]);
}

#[test]
fn disconnected_waiter_consumes_nothing() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    {
        let mut raw = s.raw();
        use std::io::Write;
        raw.write_all(b"BLPOP gone 0\r\n").unwrap();
        wait_blocked(&mut c, 1);
    } // connection dropped while blocked
    wait_blocked(&mut c, 0);
    q(&mut c, &["RPUSH", "gone", "v"]);
    assert_eq!(q(&mut c, &["LLEN", "gone"]), Value::Int(1));
}

#[test]
fn blocked_client_times_out_then_connection_still_works() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(q(&mut c, &["BLMPOP", "0.1", "1", "x", "LEFT"]), Value::Nil);
    assert_eq!(q(&mut c, &["PING"]), Value::SimpleString("PONG".into()));
    // And blocking on a key that gets a value after the timeout does not steal it.
    q(&mut c, &["RPUSH", "x", "1"]);
    assert_eq!(q(&mut c, &["LLEN", "x"]), Value::Int(1));
}

/// A blocked command that times out or is unblocked with an error is counted once in
/// commandstats (one call; a failed one for the error), as Redis's updateStatsOnUnblock.
#[test]
fn timed_out_and_unblocked_commands_are_counted_once() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let stat = |c: &mut Connection, name: &str| -> String {
        let Value::BulkString(b) = q(c, &["INFO", "commandstats"]) else {
            panic!("INFO")
        };
        String::from_utf8(b)
            .unwrap()
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!("cmdstat_{name}:"))
                    .map(str::to_string)
            })
            .unwrap_or_default()
    };
    q(&mut c, &["CONFIG", "RESETSTAT"]);
    assert_eq!(q(&mut c, &["BLPOP", "nolist", "0.05"]), Value::Nil);
    let st = stat(&mut c, "blpop");
    assert!(st.starts_with("calls=1,"), "{st}");
    assert!(st.ends_with("rejected_calls=0,failed_calls=0"), "{st}");

    let mut waiter = s.conn();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut waiter).unwrap();
    q(&mut c, &["CONFIG", "RESETSTAT"]);
    let h = thread::spawn(move || {
        redis::cmd("BRPOP")
            .arg("nolist")
            .arg(0)
            .query::<Value>(&mut waiter)
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while !matches!(
        q(&mut c, &["CLIENT", "UNBLOCK", &id.to_string(), "ERROR"]),
        Value::Int(1)
    ) {
        assert!(Instant::now() < deadline, "never blocked");
        thread::sleep(Duration::from_millis(10));
    }
    assert!(h.join().unwrap().is_err());
    let st = stat(&mut c, "brpop");
    assert!(st.starts_with("calls=1,"), "{st}");
    assert!(st.ends_with("rejected_calls=0,failed_calls=1"), "{st}");
}

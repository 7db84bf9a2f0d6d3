//! Blocking XREAD / XREADGROUP: clients that wait for entries, time out, or are woken with an
//! error when their stream or group goes away. These need the server's wait/wake machinery.
use crate::common::{bulk, entry, q, Server};
use redis::{Connection, Value};
use std::thread;
use std::time::{Duration, Instant};

/// A connection that gives up after 10 s, so a missing wake-up fails instead of hanging.
fn conn(s: &Server) -> Connection {
    let c = s.conn();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c
}

/// Run `args` on a fresh connection in a thread; the result comes back through the handle.
fn spawn_blocked(s: &Server, args: &[&str]) -> thread::JoinHandle<Result<Value, String>> {
    let mut c = conn(s);
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let h = thread::spawn(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::common::cmd(&a)
            .query::<Value>(&mut c)
            .map_err(|e| format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or("")))
    });
    // Let the command reach the server and block.
    thread::sleep(Duration::from_millis(200));
    h
}

#[test]
fn xread_block_wakes_on_xadd() {
    let s = Server::tern(&[]);
    let mut c = conn(&s);
    q(&mut c, &["XADD", "s1", "1-0", "old", "1"]);
    let h = spawn_blocked(
        &s,
        &["XREAD", "BLOCK", "5000", "STREAMS", "s1", "s2", "$", "$"],
    );
    q(&mut c, &["XADD", "s2", "5-0", "new", "2"]);
    assert_eq!(
        h.join().unwrap().unwrap(),
        Value::Array(vec![Value::Array(vec![
            bulk("s2"),
            Value::Array(vec![entry("5-0", &["new", "2"])])
        ])])
    );
}

#[test]
fn xread_block_dollar_means_after_block_time() {
    let s = Server::tern(&[]);
    let mut c = conn(&s);
    q(&mut c, &["XADD", "s", "1-0", "a", "1"]);
    let h = spawn_blocked(&s, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    q(&mut c, &["XADD", "s", "2-0", "b", "2"]);
    q(&mut c, &["XADD", "s", "3-0", "c", "3"]);
    // Only what was added after blocking (at least the first write).
    let v = h.join().unwrap().unwrap();
    let Value::Array(streams) = v else { panic!() };
    let Value::Array(kv) = &streams[0] else {
        panic!()
    };
    let Value::Array(entries) = &kv[1] else {
        panic!()
    };
    assert_eq!(entries[0], entry("2-0", &["b", "2"]));
}

#[test]
fn xread_block_times_out_with_nil() {
    let s = Server::tern(&[]);
    let mut c = conn(&s);
    let t = Instant::now();
    assert_eq!(
        q(
            &mut c,
            &["XREAD", "BLOCK", "100", "STREAMS", "nothing", "$"]
        ),
        Value::Nil
    );
    assert!(t.elapsed() >= Duration::from_millis(90));
}

#[test]
fn xread_block_ignores_deletions_and_other_types() {
    let s = Server::tern(&[]);
    let mut c = conn(&s);
    q(&mut c, &["XADD", "s", "666", "f", "v"]);
    let h = spawn_blocked(&s, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    q(&mut c, &["DEL", "s"]);
    q(&mut c, &["SET", "s", "x"]);
    q(&mut c, &["DEL", "s"]);
    q(&mut c, &["XADD", "s", "667", "f", "v"]);
    assert_eq!(
        h.join().unwrap().unwrap(),
        Value::Array(vec![Value::Array(vec![
            bulk("s"),
            Value::Array(vec![entry("667-0", &["f", "v"])])
        ])])
    );
}

#[test]
fn xreadgroup_block_wakes_on_xadd() {
    let s = Server::tern(&[]);
    let mut c = conn(&s);
    q(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let h = spawn_blocked(
        &s,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "BLOCK",
            "5000",
            "STREAMS",
            "s",
            ">",
        ],
    );
    q(&mut c, &["XADD", "s", "1-0", "f", "v"]);
    assert_eq!(
        h.join().unwrap().unwrap(),
        Value::Array(vec![Value::Array(vec![
            bulk("s"),
            Value::Array(vec![entry("1-0", &["f", "v"])])
        ])])
    );
    // The entry is pending for alice.
    assert_eq!(
        q(&mut c, &["XPENDING", "s", "g"]),
        Value::Array(vec![
            Value::Int(1),
            bulk("1-0"),
            bulk("1-0"),
            Value::Array(vec![Value::Array(vec![bulk("alice"), bulk("1")])])
        ])
    );
}

#[test]
fn xreadgroup_block_key_deleted_gives_nogroup() {
    let s = Server::tern(&[]);
    let mut c = conn(&s);
    q(&mut c, &["XADD", "s", "666", "f", "v"]);
    q(&mut c, &["XGROUP", "CREATE", "s", "g", "$"]);
    let h = spawn_blocked(
        &s,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "a",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    q(&mut c, &["DEL", "s"]);
    let e = h.join().unwrap().unwrap_err();
    assert!(e.starts_with("NOGROUP"), "{e}");
}

#[test]
fn xreadgroup_block_type_change_gives_wrongtype() {
    let s = Server::tern(&[]);
    let mut c = conn(&s);
    q(&mut c, &["XADD", "s", "666", "f", "v"]);
    q(&mut c, &["XGROUP", "CREATE", "s", "g", "$"]);
    let h = spawn_blocked(
        &s,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "a",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    q(&mut c, &["SET", "s", "x"]);
    let e = h.join().unwrap().unwrap_err();
    assert!(e.starts_with("WRONGTYPE"), "{e}");
}

#[test]
fn xreadgroup_block_group_destroyed_gives_nogroup() {
    let s = Server::tern(&[]);
    let mut c = conn(&s);
    q(&mut c, &["XADD", "s", "666", "f", "v"]);
    q(&mut c, &["XGROUP", "CREATE", "s", "g", "$"]);
    let h = spawn_blocked(
        &s,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "a",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    q(&mut c, &["XGROUP", "DESTROY", "s", "g"]);
    let e = h.join().unwrap().unwrap_err();
    assert!(e.starts_with("NOGROUP"), "{e}");
}

#[test]
fn xreadgroup_block_not_woken_by_deleted_entry() {
    let s = Server::tern(&[]);
    let mut c = conn(&s);
    q(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    q(&mut c, &["XADD", "s", "666", "f", "v"]);
    q(
        &mut c,
        &["XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">"],
    );
    q(&mut c, &["XADD", "s", "667", "f2", "v2"]);
    q(&mut c, &["XDEL", "s", "667"]);
    // Nothing new to deliver: it waits and then times out with nil, not an empty array.
    let mut c2 = conn(&s);
    assert_eq!(
        q(
            &mut c2,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "a",
                "BLOCK",
                "100",
                "STREAMS",
                "s",
                ">"
            ]
        ),
        Value::Nil
    );
}

#[test]
fn xreadgroup_history_ignores_block() {
    let s = Server::tern(&[]);
    let mut c = conn(&s);
    q(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    // An explicit ID serves the consumer's (empty) history at once.
    assert_eq!(
        q(
            &mut c,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "a",
                "BLOCK",
                "0",
                "STREAMS",
                "s",
                "0"
            ]
        ),
        Value::Array(vec![Value::Array(vec![bulk("s"), Value::Array(vec![])])])
    );
}

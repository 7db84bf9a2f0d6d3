//! Blocking sorted-set pops that actually wait (BZPOPMIN, BZPOPMAX, BZMPOP). These need the
//! server's wait/wake machinery; the non-waiting paths are covered in zsets.rs.
use crate::common::{wait_blocked, Server};
use std::time::{Duration, Instant};

type Raw = crate::common::Raw;

#[test]
fn bzpopmin_wakes_on_zadd() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    let mut w = Raw::new(s.port);
    w.send_cmd("BZPOPMIN k1 k2 0");
    wait_blocked(&mut c, 1);
    assert_eq!(c.q("ZADD k2 5 a 1 b"), ":2");
    assert_eq!(w.read(), "[k2,b,1]");
    assert_eq!(c.q("ZRANGE k2 0 -1"), "[a]");
}

#[test]
fn bzpopmax_times_out() {
    let s = Server::tern(&[]);
    let mut w = Raw::new(s.port);
    let t = Instant::now();
    assert_eq!(w.q("BZPOPMAX nokey 0.1"), "(nil)");
    assert!(t.elapsed() >= Duration::from_millis(90));
    w.q("HELLO 3");
    assert_eq!(w.q("BZPOPMAX nokey 0.05"), "(nil)");
}

#[test]
fn bzmpop_wakes_with_count() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    let mut w = Raw::new(s.port);
    w.send_cmd("BZMPOP 0 2 a b MAX COUNT 2");
    wait_blocked(&mut c, 1);
    assert_eq!(c.q("ZADD b 1 x 2 y 3 z"), ":3");
    assert_eq!(w.read(), "[b,[[z,3],[y,2]]]");
}

#[test]
fn wrong_type_keeps_waiting() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    let mut w = Raw::new(s.port);
    w.send_cmd("BZPOPMIN k 0");
    wait_blocked(&mut c, 1);
    c.q("SET k str");
    c.q("DEL k");
    assert_eq!(c.q("ZADD k 1 m"), ":1");
    assert_eq!(w.read(), "[k,m,1]");
}

#[test]
fn first_waiter_served_first() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    let mut w1 = Raw::new(s.port);
    let mut w2 = Raw::new(s.port);
    w1.send_cmd("BZPOPMIN k 0");
    wait_blocked(&mut c, 1);
    w2.send_cmd("BZPOPMIN k 0");
    wait_blocked(&mut c, 2);
    assert_eq!(c.q("ZADD k 1 a 2 b"), ":2");
    assert_eq!(w1.read(), "[k,a,1]");
    assert_eq!(w2.read(), "[k,b,2]");
}

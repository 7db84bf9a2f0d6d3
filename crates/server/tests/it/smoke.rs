//! The binary starts, answers a real client, and pipelines.
use crate::common::Server;

#[test]
fn set_get_roundtrip() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
    let v: String = redis::cmd("GET").arg("k").query(&mut c).unwrap();
    assert_eq!(v, "v");
}

#[test]
fn pipeline_answers_in_order() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let mut p = redis::pipe();
    for i in 0..100 {
        p.cmd("SET").arg(format!("k{i}")).arg(i).ignore();
    }
    for i in 0..100 {
        p.cmd("GET").arg(format!("k{i}"));
    }
    let vals: Vec<i64> = p.query(&mut c).unwrap();
    assert_eq!(vals, (0..100).collect::<Vec<_>>());
}

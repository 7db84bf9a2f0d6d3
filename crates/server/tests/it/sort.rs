//! SORT and SORT_RO against the real binary, replayed on Debian's redis-server when it is
//! installed: every reply (or error) must be the same.
use crate::common::{both, cmd, Server};

/// The data every scenario sorts: a list, a set, a sorted set, weights, hashes and strings.
const SETUP: &[&[&str]] = &[
    &["RPUSH", "l", "3", "1", "2", "10", "-5", "2.5"],
    &["RPUSH", "words", "pear", "apple", "fig", "banana"],
    &["SADD", "s", "5", "3", "9", "1"],
    &[
        "ZADD", "z", "1", "a", "5", "b", "2", "c", "10", "d", "3", "e",
    ],
    &[
        "MSET", "w_3", "30", "w_1", "10", "w_2", "20", "w_10", "1", "w_-5", "5",
    ],
    &["MSET", "o_3", "three", "o_1", "one", "o_2", "two"],
    &["HSET", "h_3", "f", "c"],
    &["HSET", "h_1", "f", "a"],
    &["HSET", "h_2", "f", "b"],
    &["RPUSH", "bad", "1", "x", "2"],
    &["SET", "str", "v"],
];

const SCENARIOS: &[&[&str]] = &[
    &["SORT", "l"],
    &["SORT", "l", "DESC"],
    &["SORT", "l", "LIMIT", "1", "3"],
    &["SORT", "l", "LIMIT", "-1", "2"],
    &["SORT", "l", "LIMIT", "10", "2"],
    &["SORT", "l", "LIMIT", "0", "0"],
    &["SORT", "words", "ALPHA"],
    &["SORT", "words", "ALPHA", "DESC", "LIMIT", "1", "2"],
    &["SORT", "words"],
    &["SORT", "s"],
    &["SORT", "z"],
    &["SORT", "z", "BY", "nosort"],
    &["SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "2"],
    &["SORT", "z", "ALPHA", "DESC"],
    &["SORT", "l", "BY", "w_*"],
    &["SORT", "l", "BY", "w_*", "DESC", "GET", "#", "GET", "o_*"],
    &["SORT", "l", "BY", "nosort", "GET", "o_*"],
    &[
        "SORT", "l", "BY", "h_*->f", "ALPHA", "GET", "h_*->f", "GET", "#",
    ],
    &["SORT", "l", "GET", "nostar"],
    &["SORT", "bad"],
    &["SORT", "str"],
    &["SORT", "missing"],
    &["SORT", "l", "LIMIT", "1"],
    &["SORT", "l", "LIMIT", "a", "1"],
    &["SORT", "l", "FOO"],
    &["SORT", "l", "STORE", "dst"],
    &["LRANGE", "dst", "0", "-1"],
    &["SORT", "l", "BY", "w_*", "GET", "o_*", "STORE", "dst2"],
    &["LRANGE", "dst2", "0", "-1"],
    &["SORT", "s", "BY", "const", "STORE", "dst3"],
    &["LRANGE", "dst3", "0", "-1"],
    &["SET", "dst4", "x"],
    &["SORT", "missing", "STORE", "dst4"],
    &["EXISTS", "dst4"],
    &["SORT_RO", "l", "DESC"],
    &["SORT_RO", "l", "STORE", "x"],
    &[
        "COMMAND", "GETKEYS", "SORT", "l", "STORE", "a", "BY", "w_*", "STORE", "b",
    ],
    &["COMMAND", "GETKEYS", "SORT_RO", "l", "GET", "x"],
];

#[test]
fn sort_matches_redis() {
    let tern = Server::tern(&[]);
    let mut t = tern.conn();
    let reference = Server::redis(&[]);
    let mut r = reference.as_ref().map(|s| s.conn());
    for args in SETUP {
        let _: redis::Value = cmd(args).query(&mut t).unwrap();
        if let Some(r) = r.as_mut() {
            let _: redis::Value = cmd(args).query(r).unwrap();
        }
    }
    for args in SCENARIOS {
        match r.as_mut() {
            Some(r) => {
                let (a, b) = both(&mut t, r, args);
                let a = a.map_err(|e| e.to_string());
                let b = b.map_err(|e| e.to_string());
                assert_eq!(a, b, "{args:?}");
            }
            None => {
                let _ = cmd(args).query::<redis::Value>(&mut t);
            }
        }
    }
}

#[test]
fn sort_results_without_reference() {
    let tern = Server::tern(&[]);
    let mut t = tern.conn();
    for args in SETUP {
        let _: redis::Value = cmd(args).query(&mut t).unwrap();
    }
    let v: Vec<String> = cmd(&["SORT", "l"]).query(&mut t).unwrap();
    assert_eq!(v, ["-5", "1", "2", "2.5", "3", "10"]);
    let v: Vec<String> = cmd(&["SORT", "z", "BY", "nosort"]).query(&mut t).unwrap();
    assert_eq!(v, ["a", "c", "e", "b", "d"]);
    let e = cmd(&["SORT", "bad"])
        .query::<redis::Value>(&mut t)
        .unwrap_err();
    assert_eq!(
        e.detail(),
        Some("One or more scores can't be converted into double")
    );
    let n: i64 = cmd(&["SORT", "l", "DESC", "STORE", "d"])
        .query(&mut t)
        .unwrap();
    assert_eq!(n, 6);
    let enc: String = cmd(&["OBJECT", "ENCODING", "d"]).query(&mut t).unwrap();
    assert_eq!(enc, "listpack");
    // Weights: 2.5 has none (0), then 10 (1), -5 (5), 1 (10), 2 (20), 3 (30).
    let v: Vec<Option<String>> = cmd(&["SORT", "l", "BY", "w_*", "GET", "o_*"])
        .query(&mut t)
        .unwrap();
    assert_eq!(
        v,
        [
            None,
            None,
            None,
            Some("one".into()),
            Some("two".into()),
            Some("three".into())
        ]
    );
}

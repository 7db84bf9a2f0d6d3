//! Hash family: every command against the real binary, error texts, encodings and their
//! conversions (also after CONFIG SET), RESP3 shapes, HRANDFIELD and HSCAN behaviour, and a
//! differential run against Debian's redis-server when it is installed.
use crate::common::{bulk, encoding, err, int, q, run, Server};
use redis::{Connection, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

fn s(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        Value::Okay => "OK".into(),
        other => panic!("not a string: {other:?}"),
    }
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a.iter().map(s).collect(),
        other => panic!("not an array: {other:?}"),
    }
}

/// HGETALL as a map, whichever protocol.
fn getall(c: &mut Connection, key: &str) -> BTreeMap<String, String> {
    match q(c, &["HGETALL", key]) {
        Value::Array(a) => a.chunks(2).map(|p| (s(&p[0]), s(&p[1]))).collect(),
        Value::Map(m) => m.iter().map(|(k, v)| (s(k), s(v))).collect(),
        other => panic!("{other:?}"),
    }
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";

#[test]
fn set_get_and_friends() {
    let srv = Server::tern(&[]);
    let mut c = srv.conn();
    assert_eq!(q(&mut c, &["HSET", "h", "a", "1", "b", "2"]), int(2));
    assert_eq!(q(&mut c, &["HSET", "h", "a", "x", "c", "3"]), int(1));
    assert_eq!(q(&mut c, &["HGET", "h", "a"]), bulk("x"));
    assert_eq!(q(&mut c, &["HGET", "h", "zz"]), Value::Nil);
    assert_eq!(q(&mut c, &["HGET", "nokey", "a"]), Value::Nil);
    assert_eq!(q(&mut c, &["HMSET", "h", "d", "4"]), Value::Okay);
    assert_eq!(q(&mut c, &["HLEN", "h"]), int(4));
    assert_eq!(q(&mut c, &["HLEN", "nokey"]), int(0));
    assert_eq!(
        q(&mut c, &["HMGET", "h", "a", "nope", "d"]),
        Value::Array(vec![bulk("x"), Value::Nil, bulk("4")])
    );
    assert_eq!(
        q(&mut c, &["HMGET", "nokey", "a", "b"]),
        Value::Array(vec![Value::Nil, Value::Nil])
    );
    assert_eq!(q(&mut c, &["HSETNX", "h", "a", "new"]), int(0));
    assert_eq!(q(&mut c, &["HSETNX", "h", "e", "5"]), int(1));
    assert_eq!(q(&mut c, &["HSETNX", "fresh", "f", "v"]), int(1));
    assert_eq!(q(&mut c, &["HGET", "h", "a"]), bulk("x"));
    assert_eq!(q(&mut c, &["HEXISTS", "h", "a"]), int(1));
    assert_eq!(q(&mut c, &["HEXISTS", "h", "x"]), int(0));
    assert_eq!(q(&mut c, &["HEXISTS", "nokey", "a"]), int(0));
    assert_eq!(q(&mut c, &["HSTRLEN", "h", "a"]), int(1));
    assert_eq!(q(&mut c, &["HSTRLEN", "h", "nope"]), int(0));
    assert_eq!(q(&mut c, &["HSTRLEN", "nokey", "a"]), int(0));
    for v in [
        "-9223372036854775808",
        "9223372036854775807",
        "9223372036854775808",
        "",
        "0",
        "-1",
        "007",
    ] {
        q(&mut c, &["HSET", "h", "n", v]);
        assert_eq!(
            q(&mut c, &["HSTRLEN", "h", "n"]),
            int(v.len() as i64),
            "{v}"
        );
        assert_eq!(q(&mut c, &["HGET", "h", "n"]), bulk(v));
    }
    let mut keys = strings(&q(&mut c, &["HKEYS", "h"]));
    keys.sort();
    assert_eq!(keys, ["a", "b", "c", "d", "e", "n"]);
    let mut vals = strings(&q(&mut c, &["HVALS", "h"]));
    vals.sort();
    assert_eq!(vals, ["007", "2", "3", "4", "5", "x"]);
    assert_eq!(getall(&mut c, "h").len(), 6);
    assert_eq!(q(&mut c, &["HKEYS", "nokey"]), Value::Array(vec![]));
    assert_eq!(q(&mut c, &["HVALS", "nokey"]), Value::Array(vec![]));
    assert_eq!(q(&mut c, &["HGETALL", "nokey"]), Value::Array(vec![]));
    // Binary-safe fields and values.
    run(&mut c, &[b"HSET", b"bin", b"f\0\r\n", b"\xff\x00v"]).unwrap();
    assert_eq!(
        run(&mut c, &[b"HGET", b"bin", b"f\0\r\n"]).unwrap(),
        Value::BulkString(b"\xff\x00v".to_vec())
    );
    assert_eq!(
        q(&mut c, &["TYPE", "h"]),
        Value::SimpleString("hash".into())
    );
}

#[test]
fn hdel_removes_empty_hash() {
    let srv = Server::tern(&[]);
    let mut c = srv.conn();
    q(&mut c, &["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(q(&mut c, &["HDEL", "h", "a", "zz", "a"]), int(1));
    assert_eq!(q(&mut c, &["HDEL", "nokey", "a"]), int(0));
    assert_eq!(q(&mut c, &["HDEL", "h", "b", "c", "d"]), int(2));
    assert_eq!(q(&mut c, &["EXISTS", "h"]), int(0));
    // The same on the hashtable encoding.
    let long = "x".repeat(100);
    q(&mut c, &["HSET", "t", "a", &long, "b", "2"]);
    assert_eq!(encoding(&mut c, "t"), "hashtable");
    assert_eq!(q(&mut c, &["HDEL", "t", "a", "b"]), int(2));
    assert_eq!(q(&mut c, &["EXISTS", "t"]), int(0));
}

#[test]
fn errors() {
    let srv = Server::tern(&[]);
    let mut c = srv.conn();
    q(&mut c, &["SET", "str", "v"]);
    for args in [
        &["HSET", "str", "a", "1"][..],
        &["HSETNX", "str", "a", "1"],
        &["HGET", "str", "a"],
        &["HMGET", "str", "a"],
        &["HMSET", "str", "a", "1"],
        &["HDEL", "str", "a"],
        &["HLEN", "str"],
        &["HSTRLEN", "str", "a"],
        &["HEXISTS", "str", "a"],
        &["HKEYS", "str"],
        &["HVALS", "str"],
        &["HGETALL", "str"],
        &["HINCRBY", "str", "a", "1"],
        &["HINCRBYFLOAT", "str", "a", "1"],
        &["HRANDFIELD", "str"],
        &["HRANDFIELD", "str", "3"],
        &["HSCAN", "str", "0"],
    ] {
        assert_eq!(err(&mut c, args), WRONGTYPE, "{args:?}");
    }
    assert_eq!(
        err(&mut c, &["HSET", "h", "a", "1", "b"]),
        "ERR wrong number of arguments for 'hset' command"
    );
    assert_eq!(
        err(&mut c, &["HMSET", "h", "a", "1", "b"]),
        "ERR wrong number of arguments for 'hmset' command"
    );
    assert_eq!(
        err(&mut c, &["HSET", "h", "a"]),
        "ERR wrong number of arguments for 'hset' command"
    );
    assert_eq!(
        err(&mut c, &["HGET", "h"]),
        "ERR wrong number of arguments for 'hget' command"
    );
    assert_eq!(q(&mut c, &["EXISTS", "h"]), int(0));
    // Argument errors come before type errors for the counters.
    assert_eq!(err(&mut c, &["HINCRBY", "str", "a", "x"]), NOT_INT);
    assert_eq!(
        err(&mut c, &["HINCRBYFLOAT", "str", "a", "x"]),
        "ERR value is not a valid float"
    );
}

#[test]
fn counters() {
    let srv = Server::tern(&[]);
    let mut c = srv.conn();
    assert_eq!(q(&mut c, &["HINCRBY", "h", "n", "5"]), int(5));
    assert_eq!(q(&mut c, &["HINCRBY", "h", "n", "-7"]), int(-2));
    assert_eq!(
        q(&mut c, &["HINCRBY", "h", "big", "17179869184"]),
        int(17179869184)
    );
    assert_eq!(
        q(&mut c, &["HINCRBY", "h", "big", "17179869184"]),
        int(34359738368)
    );
    q(
        &mut c,
        &[
            "HSET",
            "h",
            "max",
            "9223372036854775807",
            "sp",
            " 1",
            "sp2",
            "1 ",
            "f",
            "1.5",
        ],
    );
    assert_eq!(
        err(&mut c, &["HINCRBY", "h", "max", "1"]),
        "ERR increment or decrement would overflow"
    );
    assert_eq!(
        q(&mut c, &["HINCRBY", "h", "max", "-1"]),
        int(9223372036854775806)
    );
    for f in ["sp", "sp2", "f"] {
        assert_eq!(
            err(&mut c, &["HINCRBY", "h", f, "1"]),
            "ERR hash value is not an integer"
        );
    }
    assert_eq!(err(&mut c, &["HINCRBY", "h", "n", "1.5"]), NOT_INT);
    assert_eq!(
        err(&mut c, &["HINCRBY", "h", "n", "99999999999999999999"]),
        NOT_INT
    );

    assert_eq!(
        q(&mut c, &["HINCRBYFLOAT", "h", "fl", "1.23"]),
        bulk("1.23")
    );
    assert_eq!(q(&mut c, &["HINCRBYFLOAT", "h", "fl", "0.77"]), bulk("2"));
    assert_eq!(q(&mut c, &["HINCRBYFLOAT", "h", "fl", "-0.1"]), bulk("1.9"));
    assert_eq!(q(&mut c, &["HINCRBYFLOAT", "h", "n", "0.5"]), bulk("-1.5"));
    assert_eq!(q(&mut c, &["HINCRBYFLOAT", "h", "f", "1e2"]), bulk("101.5"));
    assert_eq!(
        q(&mut c, &["HINCRBYFLOAT", "h", "x", "5.0e3"]),
        bulk("5000")
    );
    assert_eq!(q(&mut c, &["HGET", "h", "x"]), bulk("5000"));
    for f in ["sp", "sp2"] {
        assert_eq!(
            err(&mut c, &["HINCRBYFLOAT", "h", f, "1"]),
            "ERR hash value is not a float"
        );
    }
    run(&mut c, &[b"HSET", b"h", b"nul", b"1\x002"]).unwrap();
    assert_eq!(
        err(&mut c, &["HINCRBYFLOAT", "h", "nul", "1"]),
        "ERR hash value is not a float"
    );
    for bad in ["+inf", "-inf", "inf"] {
        assert_eq!(
            err(&mut c, &["HINCRBYFLOAT", "hfoo", "f", bad]),
            "ERR value is NaN or Infinity"
        );
    }
    assert_eq!(
        err(&mut c, &["HINCRBYFLOAT", "hfoo", "f", "nan"]),
        "ERR value is not a valid float"
    );
    assert_eq!(q(&mut c, &["EXISTS", "hfoo"]), int(0));
    q(&mut c, &["HSET", "h", "huge", "1e308"]);
    q(&mut c, &["HINCRBYFLOAT", "h", "huge", "1e308"]);
    // Past long double range the sum is infinite.
    q(&mut c, &["HSET", "h", "ld", "1e4932"]);
    assert_eq!(
        err(&mut c, &["HINCRBYFLOAT", "h", "ld", "1e4932"]),
        "ERR increment would produce NaN or Infinity"
    );
}

#[test]
fn encoding_conversions() {
    let srv = Server::tern(&[]);
    let mut c = srv.conn();
    // Entry count (Redis's built-in default is 512): 512 fields stay a listpack, the 513th
    // converts.
    assert_eq!(
        q(&mut c, &["CONFIG", "GET", "hash-max-listpack-entries"]),
        Value::Array(vec![bulk("hash-max-listpack-entries"), bulk("512")])
    );
    for i in 0..512 {
        q(&mut c, &["HSET", "h", &format!("f{i}"), "v"]);
    }
    assert_eq!(encoding(&mut c, "h"), "listpack");
    q(&mut c, &["HSET", "h", "f512", "v"]);
    assert_eq!(encoding(&mut c, "h"), "hashtable");
    // Never converts back, even when small again.
    for i in 0..510 {
        q(&mut c, &["HDEL", "h", &format!("f{i}")]);
    }
    assert_eq!(encoding(&mut c, "h"), "hashtable");
    assert_eq!(q(&mut c, &["HLEN", "h"]), int(3));
    assert_eq!(q(&mut c, &["HGET", "h", "f512"]), bulk("v"));

    // Value and field length: 64 bytes fit, 65 do not.
    q(&mut c, &["HSET", "v64", "f", &"x".repeat(64)]);
    assert_eq!(encoding(&mut c, "v64"), "listpack");
    q(&mut c, &["HSET", "v65", "f", &"x".repeat(65)]);
    assert_eq!(encoding(&mut c, "v65"), "hashtable");
    q(&mut c, &["HSET", "f65", &"x".repeat(65), "v"]);
    assert_eq!(encoding(&mut c, "f65"), "hashtable");
    q(&mut c, &["HSET", "later", "a", "1"]);
    q(&mut c, &["HSETNX", "later", "b", &"x".repeat(65)]);
    assert_eq!(encoding(&mut c, "later"), "hashtable");
    assert_eq!(getall(&mut c, "later")["a"], "1");

    // CONFIG SET takes effect on the next write.
    q(&mut c, &["CONFIG", "SET", "hash-max-listpack-entries", "4"]);
    q(
        &mut c,
        &["HSET", "small", "a", "1", "b", "2", "c", "3", "d", "4"],
    );
    assert_eq!(encoding(&mut c, "small"), "listpack");
    q(&mut c, &["HSET", "small", "e", "5"]);
    assert_eq!(encoding(&mut c, "small"), "hashtable");
    // More pairs in one call than the limit convert up front, duplicates or not (Redis 7.2;
    // 7.0 did not check this).
    q(
        &mut c,
        &[
            "HSET", "dups", "a", "1", "a", "2", "a", "3", "a", "4", "a", "5",
        ],
    );
    assert_eq!(encoding(&mut c, "dups"), "hashtable");
    assert_eq!(q(&mut c, &["HLEN", "dups"]), int(1));
    q(&mut c, &["CONFIG", "SET", "hash-max-ziplist-value", "8"]);
    q(&mut c, &["HSET", "s8", "tmp", "0"]);
    q(&mut c, &["HINCRBYFLOAT", "s8", "tmp", "0.000005"]);
    assert_eq!(encoding(&mut c, "s8"), "listpack");
    q(&mut c, &["HSET", "s9", "tmp", "0"]);
    q(&mut c, &["HINCRBYFLOAT", "s9", "tmp", "0.0000005"]);
    assert_eq!(encoding(&mut c, "s9"), "hashtable");
    q(&mut c, &["HINCRBYFLOAT", "s10", "abcdefgh", "1"]);
    assert_eq!(encoding(&mut c, "s10"), "listpack");
    q(&mut c, &["HINCRBY", "s11", "abcdefghi", "1"]);
    assert_eq!(encoding(&mut c, "s11"), "hashtable");
    q(
        &mut c,
        &["CONFIG", "SET", "hash-max-listpack-entries", "128"],
    );
    q(&mut c, &["CONFIG", "SET", "hash-max-listpack-value", "64"]);

    // Contents survive the conversion, integers included.
    let mut expect = BTreeMap::new();
    for i in 0..200 {
        let (f, v) = (i.to_string(), format!("{}", i * 1000 - 5));
        q(&mut c, &["HSET", "conv", &f, &v]);
        expect.insert(f, v);
    }
    assert_eq!(encoding(&mut c, "conv"), "hashtable");
    assert_eq!(getall(&mut c, "conv"), expect);
}

#[test]
fn copy_and_rename_keep_hashes() {
    let srv = Server::tern(&[]);
    let mut c = srv.conn();
    q(&mut c, &["HSET", "h", "a", "1", "b", "two"]);
    q(&mut c, &["HSET", "t", "a", &"x".repeat(100)]);
    assert_eq!(q(&mut c, &["COPY", "h", "h2"]), int(1));
    assert_eq!(q(&mut c, &["COPY", "t", "t2"]), int(1));
    q(&mut c, &["HSET", "h2", "c", "3"]);
    assert_eq!(q(&mut c, &["HLEN", "h"]), int(2));
    assert_eq!(q(&mut c, &["HLEN", "h2"]), int(3));
    assert_eq!(encoding(&mut c, "t2"), "hashtable");
    q(&mut c, &["RENAME", "t2", "t3"]);
    assert_eq!(getall(&mut c, "t3"), getall(&mut c, "t"));
}

#[test]
fn resp3_shapes() {
    let srv = Server::tern(&[]);
    let mut c = srv.conn_resp3();
    q(&mut c, &["HSET", "h", "a", "1", "b", "2"]);
    match q(&mut c, &["HGETALL", "h"]) {
        Value::Map(m) => assert_eq!(m.len(), 2),
        other => panic!("HGETALL in RESP3 must be a map: {other:?}"),
    }
    assert_eq!(q(&mut c, &["HGETALL", "nokey"]), Value::Map(vec![]));
    assert_eq!(q(&mut c, &["HKEYS", "nokey"]), Value::Array(vec![]));
    assert_eq!(q(&mut c, &["HGET", "h", "zz"]), Value::Nil);
    assert_eq!(q(&mut c, &["HRANDFIELD", "nokey"]), Value::Nil);
    for args in [
        &["HRANDFIELD", "h", "2", "WITHVALUES"][..],
        &["HRANDFIELD", "h", "-5", "WITHVALUES"],
        &["HRANDFIELD", "h", "1", "WITHVALUES"],
    ] {
        let Value::Array(a) = q(&mut c, args) else {
            panic!()
        };
        for p in a {
            let Value::Array(pair) = p else {
                panic!("{args:?}: pairs must be arrays")
            };
            assert_eq!(pair.len(), 2);
        }
    }
    let Value::Array(a) = q(&mut c, &["HRANDFIELD", "h", "2"]) else {
        panic!()
    };
    assert!(a.iter().all(|v| matches!(v, Value::BulkString(_))));
    // The same on the hashtable encoding.
    q(
        &mut c,
        &[
            "HSET",
            "t",
            "long",
            &"x".repeat(100),
            "c",
            "3",
            "d",
            "4",
            "e",
            "5",
        ],
    );
    let Value::Array(a) = q(&mut c, &["HRANDFIELD", "t", "2", "WITHVALUES"]) else {
        panic!()
    };
    assert_eq!(a.len(), 2);
    assert!(a
        .iter()
        .all(|p| matches!(p, Value::Array(x) if x.len() == 2)));
}

fn hrandfield_checks(c: &mut Connection, key: &str, all: &BTreeMap<String, String>) {
    let n = all.len();
    // Negative counts: repeats allowed, exactly |count| results.
    let r = strings(&q(c, &["HRANDFIELD", key, "-1001"]));
    assert_eq!(r.len(), 1001);
    assert!(r.iter().all(|f| all.contains_key(f)));
    let mut hist: HashMap<String, usize> = HashMap::new();
    for f in strings(&q(c, &["HRANDFIELD", key, "-10000"])) {
        *hist.entry(f).or_default() += 1;
    }
    assert_eq!(hist.len(), n, "every field shows up");
    let expect = 10000.0 / n as f64;
    let chi: f64 = hist
        .values()
        .map(|&o| (o as f64 - expect).powi(2) / expect)
        .sum();
    assert!(chi < 60.0, "chi-square {chi} too large for {key}");
    let r = strings(&q(c, &["HRANDFIELD", key, "-20", "WITHVALUES"]));
    assert_eq!(r.len(), 40);
    for p in r.chunks(2) {
        assert_eq!(all[&p[0]], p[1]);
    }
    // Positive counts: distinct fields, at most the hash's size.
    for count in [1, 2, n / 3, n / 2, n - 1, n, n + 5] {
        let r = strings(&q(c, &["HRANDFIELD", key, &count.to_string()]));
        assert_eq!(r.len(), count.min(n), "count {count}");
        let set: BTreeSet<_> = r.iter().collect();
        assert_eq!(set.len(), r.len(), "distinct for count {count}");
        let r = strings(&q(
            c,
            &["HRANDFIELD", key, &count.to_string(), "withvalues"],
        ));
        assert_eq!(r.len(), 2 * count.min(n));
        for p in r.chunks(2) {
            assert_eq!(all[&p[0]], p[1]);
        }
    }
    // Unique samples still reach every field eventually.
    for count in [2, n - 2] {
        let mut seen = BTreeSet::new();
        for _ in 0..200 {
            seen.extend(strings(&q(c, &["HRANDFIELD", key, &count.to_string()])));
        }
        assert_eq!(seen.len(), n);
    }
    let mut seen = BTreeSet::new();
    for _ in 0..300 {
        seen.insert(s(&q(c, &["HRANDFIELD", key])));
    }
    assert_eq!(seen.len(), n);
    assert_eq!(q(c, &["HRANDFIELD", key, "0"]), Value::Array(vec![]));
    assert_eq!(
        q(c, &["HRANDFIELD", key, "0", "WITHVALUES"]),
        Value::Array(vec![])
    );
}

#[test]
fn hrandfield() {
    let srv = Server::tern(&[]);
    let mut c = srv.conn();
    let mut lp = BTreeMap::new();
    let mut ht = BTreeMap::new();
    for i in 0..10 {
        lp.insert(format!("f{i}"), format!("{i}"));
        ht.insert(format!("f{i}"), format!("{i}"));
    }
    ht.insert("long".into(), "y".repeat(100));
    for (k, v) in &lp {
        q(&mut c, &["HSET", "lp", k, v]);
    }
    for (k, v) in &ht {
        q(&mut c, &["HSET", "ht", k, v]);
    }
    assert_eq!(encoding(&mut c, "lp"), "listpack");
    assert_eq!(encoding(&mut c, "ht"), "hashtable");
    hrandfield_checks(&mut c, "lp", &lp);
    hrandfield_checks(&mut c, "ht", &ht);
    // A big table exercises the "pick until distinct" path.
    let mut big = BTreeMap::new();
    for i in 0..1000 {
        big.insert(format!("k{i}"), i.to_string());
    }
    let mut args = vec!["HSET".to_string(), "big".into()];
    for (k, v) in &big {
        args.push(k.clone());
        args.push(v.clone());
    }
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    q(&mut c, &a);
    let r = strings(&q(&mut c, &["HRANDFIELD", "big", "10"]));
    assert_eq!(r.iter().collect::<BTreeSet<_>>().len(), 10);
    let r = strings(&q(&mut c, &["HRANDFIELD", "big", "900", "WITHVALUES"]));
    assert_eq!(r.len(), 1800);
    assert_eq!(
        r.chunks(2).map(|p| &p[0]).collect::<BTreeSet<_>>().len(),
        900
    );

    // Errors and missing keys.
    assert_eq!(q(&mut c, &["HRANDFIELD", "nokey"]), Value::Nil);
    assert_eq!(
        q(&mut c, &["HRANDFIELD", "nokey", "5"]),
        Value::Array(vec![])
    );
    assert_eq!(err(&mut c, &["HRANDFIELD", "lp", "x"]), NOT_INT);
    assert_eq!(err(&mut c, &["HRANDFIELD", "lp", "1", "foo"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["HRANDFIELD", "lp", "1", "withvalues", "x"]),
        SYNTAX
    );
    assert_eq!(
        err(&mut c, &["HRANDFIELD", "lp", "-9223372036854775808"]),
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
    );
    assert_eq!(
        err(
            &mut c,
            &["HRANDFIELD", "lp", "-9223372036854770000", "withvalues"]
        ),
        "ERR value is out of range"
    );
    assert_eq!(
        err(
            &mut c,
            &["HRANDFIELD", "lp", "4611686018427387904", "withvalues"]
        ),
        "ERR value is out of range"
    );
}

/// Run HSCAN to the end; returns the pairs seen and how many calls it took.
fn full_scan(c: &mut Connection, key: &str, extra: &[&str]) -> (Vec<(String, String)>, usize) {
    let mut cursor = "0".to_string();
    let mut out = Vec::new();
    let mut calls = 0;
    loop {
        let mut args = vec!["HSCAN", key, &cursor];
        args.extend_from_slice(extra);
        let Value::Array(r) = q(c, &args) else {
            panic!()
        };
        calls += 1;
        let items = strings(&r[1]);
        assert_eq!(items.len() % 2, 0);
        for p in items.chunks(2) {
            out.push((p[0].clone(), p[1].clone()));
        }
        cursor = s(&r[0]);
        if cursor == "0" {
            return (out, calls);
        }
        assert!(calls < 100_000);
    }
}

#[test]
fn hscan() {
    let srv = Server::tern(&[]);
    let mut c = srv.conn();
    for i in 0..30 {
        q(&mut c, &["HSET", "lp", &format!("f{i}"), &i.to_string()]);
    }
    // A listpack comes back whole in one call, whatever COUNT says.
    let (pairs, calls) = full_scan(&mut c, "lp", &["COUNT", "2"]);
    assert_eq!((pairs.len(), calls), (30, 1));
    let (pairs, _) = full_scan(&mut c, "lp", &["MATCH", "f1*"]);
    let mut fields: Vec<_> = pairs.iter().map(|p| p.0.clone()).collect();
    fields.sort();
    assert_eq!(
        fields,
        ["f1", "f10", "f11", "f12", "f13", "f14", "f15", "f16", "f17", "f18", "f19"]
    );
    assert!(pairs.iter().all(|(f, v)| f[1..] == *v));

    let mut args = vec!["HSET".to_string(), "ht".into()];
    for i in 0..1000 {
        args.push(format!("key:{i}"));
        args.push(i.to_string());
    }
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    q(&mut c, &a);
    assert_eq!(encoding(&mut c, "ht"), "hashtable");
    let (pairs, calls) = full_scan(&mut c, "ht", &[]);
    assert!(calls > 1);
    let set: BTreeSet<_> = pairs.iter().map(|p| p.0.clone()).collect();
    assert_eq!(set.len(), 1000);
    assert!(pairs.iter().all(|(f, v)| f[4..] == *v));
    let (pairs, _) = full_scan(&mut c, "ht", &["MATCH", "key:1??", "COUNT", "100"]);
    assert_eq!(pairs.len(), 100);

    // Fields present for the whole scan are returned even while others are deleted.
    let mut cursor = "0".to_string();
    let mut seen = BTreeSet::new();
    let mut deleted = 0;
    loop {
        let Value::Array(r) = q(&mut c, &["HSCAN", "ht", &cursor, "COUNT", "20"]) else {
            panic!()
        };
        for p in strings(&r[1]).chunks(2) {
            seen.insert(p[0].clone());
        }
        for _ in 0..5 {
            if deleted < 500 {
                q(&mut c, &["HDEL", "ht", &format!("key:{}", deleted * 2)]);
                deleted += 1;
            }
        }
        cursor = s(&r[0]);
        if cursor == "0" {
            break;
        }
    }
    for i in 0..1000 {
        if i % 2 == 1 || i / 2 >= deleted {
            assert!(seen.contains(&format!("key:{i}")), "key:{i} missed");
        }
    }

    // Missing keys, errors.
    assert_eq!(
        q(&mut c, &["HSCAN", "nokey", "0"]),
        Value::Array(vec![bulk("0"), Value::Array(vec![])])
    );
    assert_eq!(err(&mut c, &["HSCAN", "lp", "abc"]), "ERR invalid cursor");
    assert_eq!(err(&mut c, &["HSCAN", "lp", "0", "COUNT", "0"]), SYNTAX);
    assert_eq!(err(&mut c, &["HSCAN", "lp", "0", "COUNT", "x"]), NOT_INT);
    assert_eq!(err(&mut c, &["HSCAN", "lp", "0", "TYPE", "hash"]), SYNTAX);
    assert_eq!(err(&mut c, &["HSCAN", "lp", "0", "MATCH"]), SYNTAX);
}

#[test]
fn dirty_counts_writes() {
    let srv = Server::tern(&[]);
    let mut c = srv.conn();
    let changes = |c: &mut Connection| -> i64 {
        let info = s(&q(c, &["INFO", "persistence"]));
        info.lines()
            .find_map(|l| l.strip_prefix("rdb_changes_since_last_save:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let base = changes(&mut c);
    q(&mut c, &["HSET", "h", "a", "1", "b", "2", "a", "3"]);
    assert_eq!(changes(&mut c) - base, 3);
    q(&mut c, &["HDEL", "h", "a", "zz"]);
    assert_eq!(changes(&mut c) - base, 4);
    q(&mut c, &["HINCRBY", "h", "n", "1"]);
    q(&mut c, &["HINCRBYFLOAT", "h", "n", "1"]);
    q(&mut c, &["HSETNX", "h", "n", "1"]);
    assert_eq!(changes(&mut c) - base, 6);
}

/// Sort the parts of a reply whose order Redis leaves unspecified.
fn normalize(cmd: &str, v: redis::RedisResult<Value>) -> String {
    match v {
        Err(e) => format!(
            "ERR {} {}",
            e.code().unwrap_or("?"),
            e.detail().unwrap_or("")
        ),
        Ok(Value::Array(a)) if cmd == "HGETALL" => {
            let mut pairs: Vec<String> = a.chunks(2).map(|p| format!("{:?}", p)).collect();
            pairs.sort();
            format!("{pairs:?}")
        }
        Ok(Value::Array(a)) if cmd == "HKEYS" || cmd == "HVALS" => {
            let mut items: Vec<String> = a.iter().map(|x| format!("{x:?}")).collect();
            items.sort();
            format!("{items:?}")
        }
        Ok(v) => format!("{v:?}"),
    }
}

#[test]
fn differential_against_redis() {
    let Some(r) = Server::redis(&[]) else {
        eprintln!("redis-server not installed; skipping the differential test");
        return;
    };
    let t = Server::tern(&[]);
    let mut rc = r.conn();
    let mut tc = t.conn();
    let long = "z".repeat(70);
    let script: Vec<Vec<&str>> = vec![
        vec!["HSET", "h", "a", "1", "b", "-2", "c", "hello"],
        vec!["HSET", "h", "a", "2"],
        vec!["HSET", "h"],
        vec!["HSET", "h", "a"],
        vec!["HSET", "h", "a", "1", "b"],
        vec!["HMSET", "h", "a", "1", "b"],
        vec!["HMSET", "h", "d", "4"],
        vec!["HSETNX", "h", "d", "5"],
        vec!["HSETNX", "h", "e", "5"],
        vec!["HGET", "h", "a"],
        vec!["HGET", "h", "nope"],
        vec!["HMGET", "h", "a", "b", "nope", "c"],
        vec!["HMGET", "nokey", "a"],
        vec!["HLEN", "h"],
        vec!["HSTRLEN", "h", "b"],
        vec!["HSTRLEN", "h", "c"],
        vec!["HEXISTS", "h", "c"],
        vec!["HKEYS", "h"],
        vec!["HVALS", "h"],
        vec!["HGETALL", "h"],
        vec!["HINCRBY", "h", "a", "10"],
        vec!["HINCRBY", "h", "c", "10"],
        vec!["HINCRBY", "h", "a", "9223372036854775807"],
        vec!["HINCRBY", "h", "b", "-9223372036854775807"],
        vec!["HINCRBY", "h", "b", "-9223372036854775807"],
        vec!["HINCRBY", "h", "a", "abc"],
        vec!["HINCRBY", "h", "a", ""],
        vec!["HINCRBYFLOAT", "h", "a", "0.1"],
        vec!["HINCRBYFLOAT", "h", "a", "1e10"],
        vec!["HINCRBYFLOAT", "h", "a", "-1e10"],
        vec!["HINCRBYFLOAT", "h", "c", "1"],
        vec!["HINCRBYFLOAT", "h", "f", "1.5e-7"],
        vec!["HINCRBYFLOAT", "h", "f", "inf"],
        vec!["HINCRBYFLOAT", "h", "f", "NaN"],
        vec!["HINCRBYFLOAT", "h", "f", "0x10"],
        vec!["HINCRBYFLOAT", "h", "g", "123456789.987654321"],
        vec!["HINCRBYFLOAT", "h", "g", "-0.0"],
        vec!["HINCRBYFLOAT", "h", "g", " 1"],
        vec!["HGETALL", "h"],
        vec!["HDEL", "h", "a", "nope", "a"],
        vec!["HDEL", "nokey", "a"],
        vec!["OBJECT", "ENCODING", "h"],
        vec!["HSET", "h", "long", &long],
        vec!["OBJECT", "ENCODING", "h"],
        vec!["HGETALL", "h"],
        vec!["HSCAN", "nokey", "0"],
        vec!["HSCAN", "nokey", "0", "COUNT", "0"],
        vec!["HSCAN", "nokey", "x"],
        vec!["HSCAN", "h", "0", "COUNT", "0"],
        vec!["HSCAN", "h", "0", "COUNT", "-1"],
        vec!["HSCAN", "h", "0", "NOVALUES"],
        vec!["HSCAN", "h", "0", "TYPE", "string"],
        vec!["HSCAN", "h", "18446744073709551616"],
        vec!["HRANDFIELD", "h", "0"],
        vec!["HRANDFIELD", "h", "x"],
        vec!["HRANDFIELD", "h", "1", "2"],
        vec!["HRANDFIELD", "h", "1", "withvalues", "3"],
        vec!["HRANDFIELD", "h", "-9223372036854775808"],
        vec!["HRANDFIELD", "h", "-4611686018427387904", "withvalues"],
        vec!["HRANDFIELD", "h", "4611686018427387904", "withvalues"],
        vec!["HRANDFIELD", "nokey"],
        vec!["HRANDFIELD", "nokey", "-5", "withvalues"],
        vec!["SET", "s", "x"],
        vec!["HGET", "s", "a"],
        vec!["HSCAN", "s", "0", "COUNT", "0"],
        vec!["HSCAN", "s", "abc"],
        vec!["HRANDFIELD", "s", "abc"],
        vec!["HRANDFIELD", "s", "1"],
        vec!["HINCRBY", "s", "a", "x"],
        vec!["HINCRBYFLOAT", "s", "a", "inf"],
        vec!["HSET", "dup", "a", "1", "a", "2", "a", "3"],
        vec!["HGETALL", "dup"],
        vec!["CONFIG", "SET", "hash-max-listpack-entries", "2"],
        vec!["HSET", "two", "a", "1", "b", "2"],
        vec!["OBJECT", "ENCODING", "two"],
        vec!["HSETNX", "two", "c", "3"],
        vec!["OBJECT", "ENCODING", "two"],
        vec!["CONFIG", "SET", "hash-max-listpack-entries", "128"],
        vec!["CONFIG", "SET", "hash-max-listpack-value", "3"],
        vec!["HINCRBY", "inc", "f", "999"],
        vec!["OBJECT", "ENCODING", "inc"],
        vec!["HINCRBY", "inc", "f", "1"],
        vec!["OBJECT", "ENCODING", "inc"],
        vec!["HSET", "inc2", "abcd", "1"],
        vec!["OBJECT", "ENCODING", "inc2"],
        vec!["CONFIG", "SET", "hash-max-listpack-value", "64"],
        vec!["HDEL", "inc2", "abcd"],
        vec!["EXISTS", "inc2"],
    ];
    for args in &script {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        let rv = normalize(args[0], run(&mut rc, &a));
        let tv = normalize(args[0], run(&mut tc, &a));
        assert_eq!(tv, rv, "differs on {args:?}");
    }
}

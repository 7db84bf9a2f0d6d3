//! A data set covering every type and encoding, and a server-independent description of a
//! key, shared by the DUMP/RESTORE and RDB tests.
#![allow(dead_code)]
use crate::common::*;
use redis::Value as V;
use std::time::{Duration, Instant};

/// Fill a server with every type in its small and large encodings.
pub fn populate(c: &mut redis::Connection) {
    let big = "x".repeat(100);
    q(c, &["SET", "s:int", "12345"]);
    q(c, &["SET", "s:neg", "-9223372036854775808"]);
    q(c, &["SET", "s:emb", "hello"]);
    q(c, &["SET", "s:raw", &"abc".repeat(300)]);
    q(c, &["SET", "s:bin", "\u{0}\u{1}\u{ff}zz"]);
    q(c, &["RPUSH", "l:small", "a", "1", "-5", "300000", "b"]);
    for i in 0..300 {
        q(c, &["RPUSH", "l:big", &format!("elem-{i}"), &i.to_string()]);
    }
    q(c, &["RPUSH", "l:bigval", &big, "tail"]);
    q(
        c,
        &["SADD", "set:int", "1", "2", "-3", "100000", "9999999999"],
    );
    q(c, &["SADD", "set:lp", "a", "b", "c", "1"]);
    for i in 0..600 {
        q(c, &["SADD", "set:ht", &format!("m{i}")]);
        q(c, &["SADD", "set:bigint", &(i * 7).to_string()]);
    }
    q(
        c,
        &[
            "ZADD", "z:small", "1", "a", "2.5", "b", "-inf", "c", "inf", "d",
        ],
    );
    for i in 0..300 {
        q(
            c,
            &[
                "ZADD",
                "z:big",
                &format!("{}", i as f64 / 4.0 - 7.0),
                &format!("m{i}"),
            ],
        );
    }
    q(c, &["HSET", "h:small", "f1", "v1", "f2", "2", "n", "-1"]);
    for i in 0..300 {
        q(c, &["HSET", "h:big", &format!("f{i}"), &format!("v{i}")]);
    }
    q(c, &["HSET", "h:bigval", "f", &big]);
    for i in 1..=250 {
        let f = if i % 5 == 0 { "other" } else { "field" };
        q(
            c,
            &[
                "XADD",
                "x:s",
                &format!("{i}-1"),
                f,
                &i.to_string(),
                "v",
                "val",
            ],
        );
    }
    q(c, &["XDEL", "x:s", "10-1", "11-1"]);
    q(c, &["XGROUP", "CREATE", "x:s", "g1", "0"]);
    q(c, &["XGROUP", "CREATE", "x:s", "g2", "$"]);
    q(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "alice",
            "COUNT",
            "3",
            "STREAMS",
            "x:s",
            ">",
        ],
    );
    q(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "g1",
            "bob",
            "COUNT",
            "2",
            "STREAMS",
            "x:s",
            ">",
        ],
    );
    q(c, &["XACK", "x:s", "g1", "2-1"]);
    q(c, &["XGROUP", "CREATECONSUMER", "x:s", "g2", "carol"]);
    q(c, &["XADD", "x:empty", "1-1", "a", "b"]);
    q(c, &["XDEL", "x:empty", "1-1"]);
}

pub const KEYS: &[&str] = &[
    "s:int",
    "s:neg",
    "s:emb",
    "s:raw",
    "s:bin",
    "l:small",
    "l:big",
    "l:bigval",
    "set:int",
    "set:lp",
    "set:ht",
    "set:bigint",
    "z:small",
    "z:big",
    "h:small",
    "h:big",
    "h:bigval",
    "x:s",
    "x:empty",
];

fn sorted(v: V) -> String {
    let V::Array(items) = v else {
        return format!("{v:?}");
    };
    let mut s: Vec<String> = items.into_iter().map(|i| format!("{i:?}")).collect();
    s.sort();
    s.join(",")
}

fn pairs_sorted(v: V) -> String {
    let V::Array(items) = v else {
        return format!("{v:?}");
    };
    let mut s: Vec<String> = items
        .chunks(2)
        .map(|p| format!("{:?}={:?}", p[0], p[1]))
        .collect();
    s.sort();
    s.join(",")
}

/// A description of a key's type, value and TTL that must be equal across servers.
pub fn describe(c: &mut redis::Connection, key: &str) -> String {
    let t = match q(c, &["TYPE", key]) {
        V::SimpleString(s) => s,
        v => format!("{v:?}"),
    };
    let ttl = match q(c, &["PTTL", key]) {
        V::Int(n) if n > 0 => "ttl".to_string(),
        v => format!("{v:?}"),
    };
    let body = match t.as_str() {
        "string" => format!("{:?}", q(c, &["GET", key])),
        "list" => format!("{:?}", q(c, &["LRANGE", key, "0", "-1"])),
        "set" => sorted(q(c, &["SMEMBERS", key])),
        "zset" => format!("{:?}", q(c, &["ZRANGE", key, "0", "-1", "WITHSCORES"])),
        "hash" => pairs_sorted(q(c, &["HGETALL", key])),
        "stream" => {
            let mut s = format!("{:?}", q(c, &["XRANGE", key, "-", "+"]));
            let info = q(c, &["XINFO", "STREAM", key]);
            if let V::Array(f) = info {
                for p in f.chunks(2) {
                    let name = format!("{:?}", p[0]);
                    if !name.contains("radix") && !name.contains("nodes") {
                        s += &format!(" {name}={:?}", p[1]);
                    }
                }
            }
            s += &format!(" groups={:?}", q(c, &["XINFO", "GROUPS", key]));
            if let V::Array(groups) = q(c, &["XINFO", "GROUPS", key]) {
                for g in groups {
                    let V::Array(f) = g else { continue };
                    let name = match &f[1] {
                        V::BulkString(b) => String::from_utf8_lossy(b).to_string(),
                        v => format!("{v:?}"),
                    };
                    if let V::Array(p) = q(c, &["XPENDING", key, &name, "-", "+", "100"]) {
                        for e in p {
                            if let V::Array(e) = e {
                                s += &format!(" pel={:?}/{:?}/{:?}", e[0], e[1], e[3]);
                            }
                        }
                    }
                    if let V::Array(cs) = q(c, &["XINFO", "CONSUMERS", key, &name]) {
                        for cons in cs {
                            if let V::Array(cf) = cons {
                                s += &format!(" consumer={:?}/{:?}", cf[1], cf[3]);
                            }
                        }
                    }
                }
            }
            s
        }
        other => other.to_string(),
    };
    format!("{t} {ttl} {body}")
}

/// `populate`, plus TTLs, keys in databases 1 and 5, and a function library.
pub fn fill_all(c: &mut redis::Connection) {
    populate(c);
    q(c, &["SET", "ttl:s", "v", "PX", "5000000"]);
    q(c, &["HSET", "ttl:h", "a", "b"]);
    q(c, &["PEXPIRE", "ttl:h", "7000000"]);
    for db in ["1", "5"] {
        q(c, &["SELECT", db]);
        q(c, &["SET", &format!("only-in-{db}"), db]);
        q(c, &["RPUSH", "shared-name", db, "x"]);
        q(c, &["SELECT", "0"]);
    }
    q(
        c,
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=mylib\nredis.register_function('f1', function() return 7 end)",
        ],
    );
}

/// The keys of the selected database, sorted.
pub fn all_keys(c: &mut redis::Connection) -> Vec<String> {
    let V::Array(ks) = q(c, &["KEYS", "*"]) else {
        panic!()
    };
    let mut v: Vec<String> = ks
        .into_iter()
        .map(|k| match k {
            V::BulkString(b) => String::from_utf8(b).unwrap(),
            k => panic!("{k:?}"),
        })
        .collect();
    v.sort();
    v
}

/// Wait until a freshly started server finished loading (-LOADING meanwhile).
pub fn loaded(s: &Server) -> redis::Connection {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(mut c) = redis::Client::open(s.url()).and_then(|cl| cl.get_connection()) {
            if let Ok(V::BulkString(b)) = cmd(&["INFO", "persistence"]).query::<V>(&mut c) {
                if String::from_utf8_lossy(&b)
                    .lines()
                    .any(|l| l == "loading:0")
                {
                    return c;
                }
            }
        }
        assert!(Instant::now() < deadline, "still loading");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Two servers hold the same `fill_all` data set: keys of databases 0, 1 and 5, values, TTLs
/// (within a minute), functions.
pub fn compare(a: &mut redis::Connection, b: &mut redis::Connection) {
    for db in ["0", "1", "5"] {
        q(a, &["SELECT", db]);
        q(b, &["SELECT", db]);
        let ka = all_keys(a);
        assert_eq!(ka, all_keys(b), "db {db} key sets");
        for k in &ka {
            assert_eq!(describe(a, k), describe(b, k), "db {db} key {k}");
        }
        // TTLs close to each other
        for k in ["ttl:s", "ttl:h"] {
            if let (V::Int(x), V::Int(y)) = (q(a, &["PTTL", k]), q(b, &["PTTL", k])) {
                assert!((x - y).abs() < 60_000, "{k}: {x} vs {y}");
            }
        }
    }
    q(a, &["SELECT", "0"]);
    q(b, &["SELECT", "0"]);
    assert_eq!(
        q(a, &["FUNCTION", "LIST", "WITHCODE"]),
        q(b, &["FUNCTION", "LIST", "WITHCODE"])
    );
}

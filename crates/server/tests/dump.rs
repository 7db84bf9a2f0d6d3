//! DUMP / RESTORE: payloads move between redis-server and tern in both directions, every
//! type and encoding; option and error handling as Redis 7.2.
mod common;
use common::*;
use redis::Value as V;

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

fn dump(c: &mut redis::Connection, key: &str) -> Vec<u8> {
    match q(c, &["DUMP", key]) {
        V::BulkString(b) => b,
        v => panic!("DUMP {key}: {v:?}"),
    }
}

#[test]
fn redis_to_tern_and_back() {
    let Some(redis) = Server::redis(&[]) else {
        return;
    };
    let tern = Server::tern(&[]);
    let (mut r, mut t) = (redis.conn(), tern.conn());
    populate(&mut r);
    q(&mut r, &["PEXPIRE", "s:emb", "1000000"]);
    for key in KEYS {
        let p = dump(&mut r, key);
        let ttl = if *key == "s:emb" { "1000000" } else { "0" };
        let ok = run(&mut t, &[b"RESTORE", key.as_bytes(), ttl.as_bytes(), &p]);
        assert_eq!(ok, Ok(V::Okay), "RESTORE {key} into tern");
        assert_eq!(
            describe(&mut r, key),
            describe(&mut t, key),
            "{key} redis->tern"
        );
        // (redis-server 7.0 has no listpack lists or sets: 7.2 does, and so does tern)
        if !key.starts_with("l:") && *key != "set:lp" {
            assert_eq!(
                encoding(&mut r, key),
                encoding(&mut t, key),
                "{key} encoding"
            );
        }
    }
    // tern's payloads restore into redis-server 7.0
    for key in KEYS {
        let p = dump(&mut t, key);
        let dst = format!("back:{key}");
        let ok = run(&mut r, &[b"RESTORE", dst.as_bytes(), b"0", &p]);
        assert_eq!(ok, Ok(V::Okay), "RESTORE {key} into redis-server");
        let a = describe(&mut r, key).replace(" ttl ", &format!(" {:?} ", V::Int(-1)));
        assert_eq!(a, describe(&mut r, &dst), "{key} tern->redis");
        // and tern restores its own payload
        run(&mut t, &[b"RESTORE", dst.as_bytes(), b"0", &p]).unwrap();
        assert_eq!(
            describe(&mut t, &dst),
            describe(&mut r, &dst),
            "{key} tern->tern"
        );
    }
}

#[test]
fn tern_populated_values_restore_into_redis() {
    let Some(redis) = Server::redis(&[]) else {
        return;
    };
    let tern = Server::tern(&[]);
    let (mut r, mut t) = (redis.conn(), tern.conn());
    populate(&mut t);
    populate(&mut r);
    for key in KEYS {
        let p = dump(&mut t, key);
        let dst = format!("from-tern:{key}");
        let ok = run(&mut r, &[b"RESTORE", dst.as_bytes(), b"0", &p]);
        assert_eq!(ok, Ok(V::Okay), "RESTORE {key} into redis-server");
        assert_eq!(describe(&mut r, key), describe(&mut r, &dst), "{key}");
        assert_eq!(
            encoding(&mut r, key),
            encoding(&mut r, &dst),
            "{key} encoding"
        );
    }
}

#[test]
fn options_and_errors() {
    let Some(redis) = Server::redis(&[]) else {
        return;
    };
    let tern = Server::tern(&[]);
    let (mut r, mut t) = (redis.conn(), tern.conn());
    for c in [&mut r, &mut t] {
        q(c, &["SET", "k", "v"]);
    }
    let p = dump(&mut t, "k");
    let mut bad = p.clone();
    let n = bad.len();
    bad[n - 1] ^= 0x55;
    let mut newer = p.clone();
    newer[n - 10] = 12;
    let cases: Vec<Vec<&[u8]>> = vec![
        vec![b"RESTORE", b"k", b"0", &p],
        vec![b"RESTORE", b"k2", b"0", &bad],
        vec![b"RESTORE", b"k2", b"0", &newer],
        vec![b"RESTORE", b"k2", b"0", b"garbage"],
        vec![b"RESTORE", b"k2", b"-1", &p],
        vec![b"RESTORE", b"k2", b"abc", &p],
        vec![b"RESTORE", b"k2", b"0", &p, b"IDLETIME", b"-1"],
        vec![b"RESTORE", b"k2", b"0", &p, b"FREQ", b"256"],
        vec![
            b"RESTORE",
            b"k2",
            b"0",
            &p,
            b"FREQ",
            b"1",
            b"IDLETIME",
            b"2",
        ],
        vec![b"RESTORE", b"k2", b"0", &p, b"BOGUS"],
        vec![b"RESTORE", b"k", b"0", &p, b"REPLACE"],
        vec![b"RESTORE", b"k3", b"0", &p, b"IDLETIME", b"1000"],
        vec![b"OBJECT", b"IDLETIME", b"k3"],
        vec![b"RESTORE", b"k4", b"1", &p, b"ABSTTL"],
        vec![b"EXISTS", b"k4"],
        vec![b"RESTORE", b"k4", b"100000", &p],
        vec![b"EXISTS", b"k4"],
        vec![b"DUMP", b"nosuch"],
        vec![b"RESTORE", b"k4", b"1", &p, b"ABSTTL", b"REPLACE"],
        vec![b"EXISTS", b"k4"],
    ];
    for args in cases {
        assert_eq!(
            norm(run(&mut r, &args)),
            norm(run(&mut t, &args)),
            "{:?}",
            String::from_utf8_lossy(&args.concat())
        );
    }
}

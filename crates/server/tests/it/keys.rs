//! Generic keyspace commands against the real binary: DEL/UNLINK/EXISTS/TOUCH/TYPE, renames,
//! the expiry family (lazy and active), KEYS/SCAN/RANDOMKEY, database-wide commands, OBJECT,
//! plus a differential run against redis-server when it is installed.
use crate::common::{cmd, err, error_line, info_u64, q_as, Server};
use redis::{Connection, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};

fn set(c: &mut Connection, k: &str, v: &str) {
    let _: () = q_as(c, &["SET", k, v]);
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Every key a full SCAN returns (cursor until 0), with the given extra options.
fn full_scan(c: &mut Connection, opts: &[&str]) -> Vec<String> {
    let mut cursor = "0".to_string();
    let mut out = Vec::new();
    let mut calls = 0;
    loop {
        let mut args = vec!["SCAN", cursor.as_str()];
        args.extend_from_slice(opts);
        let (next, keys): (String, Vec<String>) = q_as(c, &args);
        out.extend(keys);
        calls += 1;
        assert!(calls < 1_000_000, "scan does not terminate");
        if next == "0" {
            return out;
        }
        cursor = next;
    }
}

#[test]
fn del_unlink_exists_touch_type() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    for k in ["a", "b", "c", "d"] {
        set(&mut c, k, "1");
    }
    assert_eq!(q_as::<i64>(&mut c, &["EXISTS", "a", "a", "zz", "b"]), 3);
    assert_eq!(q_as::<i64>(&mut c, &["DEL", "a", "zz", "a"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["EXISTS", "a"]), 0);
    assert_eq!(q_as::<i64>(&mut c, &["UNLINK", "b", "c", "nope"]), 2);
    assert_eq!(q_as::<i64>(&mut c, &["TOUCH", "b", "d", "d"]), 2);
    assert_eq!(q_as::<String>(&mut c, &["TYPE", "d"]), "string");
    assert_eq!(q_as::<String>(&mut c, &["TYPE", "b"]), "none");
    assert_eq!(
        err(&mut c, &["DEL"]),
        "ERR wrong number of arguments for 'del' command"
    );
    assert_eq!(
        err(&mut c, &["TYPE", "a", "b"]),
        "ERR wrong number of arguments for 'type' command"
    );
    // A big UNLINK frees its values off the command path and still answers correctly.
    let mut p = redis::pipe();
    for i in 0..500 {
        p.cmd("SET")
            .arg(format!("big{i}"))
            .arg("x".repeat(10_000))
            .ignore();
    }
    let _: () = p.query(&mut c).unwrap();
    let keys: Vec<String> = (0..500).map(|i| format!("big{i}")).collect();
    let mut u = redis::cmd("UNLINK");
    for k in &keys {
        u.arg(k);
    }
    assert_eq!(u.query::<i64>(&mut c).unwrap(), 500);
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 1);
}

#[test]
fn rename_and_renamenx() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    set(&mut c, "src", "hello");
    assert_eq!(q_as::<String>(&mut c, &["RENAME", "src", "dst"]), "OK");
    assert_eq!(q_as::<Option<String>>(&mut c, &["GET", "src"]), None);
    assert_eq!(q_as::<String>(&mut c, &["GET", "dst"]), "hello");
    assert_eq!(err(&mut c, &["RENAME", "src", "x"]), "ERR no such key");
    assert_eq!(err(&mut c, &["RENAMENX", "src", "x"]), "ERR no such key");
    assert_eq!(err(&mut c, &["RENAME", "src", "src"]), "ERR no such key");
    // same key, existing
    assert_eq!(q_as::<String>(&mut c, &["RENAME", "dst", "dst"]), "OK");
    assert_eq!(q_as::<i64>(&mut c, &["RENAMENX", "dst", "dst"]), 0);
    // overwrite target, target's TTL is not inherited
    set(&mut c, "other", "o");
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "other", "100"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["RENAMENX", "dst", "other"]), 0);
    assert_eq!(q_as::<String>(&mut c, &["RENAME", "dst", "other"]), "OK");
    assert_eq!(q_as::<String>(&mut c, &["GET", "other"]), "hello");
    assert_eq!(q_as::<i64>(&mut c, &["TTL", "other"]), -1);
    // the source's TTL moves with it
    assert_eq!(q_as::<i64>(&mut c, &["PEXPIRE", "other", "50000"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["RENAMENX", "other", "fresh"]), 1);
    let pttl: i64 = q_as(&mut c, &["PTTL", "fresh"]);
    assert!((49_000..=50_000).contains(&pttl), "pttl {pttl}");
    // many renames across shards keep the key count exact
    for i in 0..200 {
        set(&mut c, &format!("r{i}"), &i.to_string());
    }
    for i in 0..200 {
        let (a, b) = (format!("r{i}"), format!("renamed:{i}"));
        assert_eq!(q_as::<String>(&mut c, &["RENAME", &a, &b]), "OK");
    }
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 201);
    assert_eq!(q_as::<String>(&mut c, &["GET", "renamed:137"]), "137");
}

#[test]
fn expire_family_options_and_errors() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    set(&mut c, "k", "v");
    assert_eq!(q_as::<i64>(&mut c, &["TTL", "k"]), -1);
    assert_eq!(q_as::<i64>(&mut c, &["PTTL", "missing"]), -2);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRETIME", "k"]), -1);
    assert_eq!(q_as::<i64>(&mut c, &["PEXPIRETIME", "missing"]), -2);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "missing", "10"]), 0);

    // NX / XX / GT / LT
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "k", "100", "XX"]), 0);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "k", "100", "GT"]), 0);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "k", "100", "LT"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "k", "200", "NX"]), 0);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "k", "200", "XX"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "k", "100", "GT"]), 0);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "k", "300", "gt"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "k", "400", "LT"]), 0);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "k", "250", "LT", "XX"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["TTL", "k"]), 250);
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "10", "NX", "XX"]),
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    );
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "10", "NX", "GT"]),
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    );
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "10", "GT", "LT"]),
        "ERR GT and LT options at the same time are not compatible"
    );
    assert_eq!(
        err(&mut c, &["PEXPIRE", "k", "10", "FOO"]),
        "ERR Unsupported option FOO"
    );
    // options are checked before the number
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "abc", "FOO"]),
        "ERR Unsupported option FOO"
    );
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "abc"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "9223372036854775807"]),
        "ERR invalid expire time in 'expire' command"
    );
    assert_eq!(
        err(&mut c, &["PEXPIRE", "k", "9223372036854775807"]),
        "ERR invalid expire time in 'pexpire' command"
    );
    assert_eq!(
        err(&mut c, &["EXPIREAT", "k", "9223372036854775807"]),
        "ERR invalid expire time in 'expireat' command"
    );
    assert_eq!(
        err(&mut c, &["EXPIRE", "k"]),
        "ERR wrong number of arguments for 'expire' command"
    );

    // absolute times
    let at = now_ms() / 1000 + 1000;
    assert_eq!(q_as::<i64>(&mut c, &["EXPIREAT", "k", &at.to_string()]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRETIME", "k"]), at);
    assert_eq!(q_as::<i64>(&mut c, &["PEXPIRETIME", "k"]), at * 1000);
    let pat = now_ms() + 123_456;
    assert_eq!(
        q_as::<i64>(&mut c, &["PEXPIREAT", "k", &pat.to_string()]),
        1
    );
    assert_eq!(q_as::<i64>(&mut c, &["PEXPIRETIME", "k"]), pat);
    assert_eq!(q_as::<i64>(&mut c, &["TTL", "k"]), 123);

    // PERSIST
    assert_eq!(q_as::<i64>(&mut c, &["PERSIST", "k"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["PERSIST", "k"]), 0);
    assert_eq!(q_as::<i64>(&mut c, &["PERSIST", "missing"]), 0);
    assert_eq!(q_as::<i64>(&mut c, &["TTL", "k"]), -1);

    // zero, negative and past times delete the key and reply 1
    for args in [
        ["EXPIRE", "k", "0"],
        ["PEXPIRE", "k", "-5"],
        ["EXPIREAT", "k", "1"],
        ["PEXPIREAT", "k", "-100"],
    ] {
        set(&mut c, "k", "v");
        assert_eq!(q_as::<i64>(&mut c, &args), 1, "{args:?}");
        assert_eq!(q_as::<i64>(&mut c, &["EXISTS", "k"]), 0, "{args:?}");
    }
    // LT against a persistent key with a past time still deletes
    set(&mut c, "k", "v");
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "k", "-1", "LT"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["EXISTS", "k"]), 0);
}

#[test]
fn lazy_expiry() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let _: () = q_as(&mut c, &["SET", "k", "v", "PX", "30"]);
    assert_eq!(q_as::<String>(&mut c, &["GET", "k"]), "v");
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(q_as::<Option<String>>(&mut c, &["GET", "k"]), None);
    assert_eq!(q_as::<i64>(&mut c, &["TTL", "k"]), -2);
    assert_eq!(q_as::<String>(&mut c, &["TYPE", "k"]), "none");
    // expired keys are invisible to every reader
    let _: () = q_as(&mut c, &["SET", "e", "v", "PX", "20"]);
    std::thread::sleep(Duration::from_millis(40));
    assert_eq!(q_as::<i64>(&mut c, &["EXISTS", "e"]), 0);
    assert!(q_as::<Vec<String>>(&mut c, &["KEYS", "*"]).is_empty());
    assert!(full_scan(&mut c, &[]).is_empty());
    assert_eq!(q_as::<Option<String>>(&mut c, &["RANDOMKEY"]), None);
    assert_eq!(err(&mut c, &["RENAME", "e", "f"]), "ERR no such key");
    assert_eq!(q_as::<i64>(&mut c, &["MOVE", "e", "1"]), 0);
    assert_eq!(q_as::<i64>(&mut c, &["COPY", "e", "f"]), 0);
}

#[test]
fn active_expiry_removes_untouched_keys() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let mut p = redis::pipe();
    for i in 0..300 {
        p.cmd("SET")
            .arg(format!("t{i}"))
            .arg("v")
            .arg("PX")
            .arg(100)
            .ignore();
    }
    for i in 0..20 {
        p.cmd("SET").arg(format!("keep{i}")).arg("v").ignore();
    }
    let _: () = p.query(&mut c).unwrap();
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 320);
    // DBSIZE counts keys not yet reclaimed, so it only drops if the server expires them itself.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let n: i64 = q_as(&mut c, &["DBSIZE"]);
        if n == 20 {
            break;
        }
        assert!(Instant::now() < deadline, "active expiry left {n} keys");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn keys_patterns() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    for k in [
        "foo_a", "foo_b", "foo_c", "key_x", "key_y", "key_z", "h[x]", "*star",
    ] {
        set(&mut c, k, "1");
    }
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(q_as(&mut c, &["KEYS", "foo*"])),
        vec!["foo_a", "foo_b", "foo_c"]
    );
    assert_eq!(
        sorted(q_as(&mut c, &["KEYS", "key_[xz]"])),
        vec!["key_x", "key_z"]
    );
    assert_eq!(
        sorted(q_as(&mut c, &["KEYS", "key_[^x]"])),
        vec!["key_y", "key_z"]
    );
    assert_eq!(
        sorted(q_as(&mut c, &["KEYS", "key_[a-y]"])),
        vec!["key_x", "key_y"]
    );
    assert_eq!(
        sorted(q_as(&mut c, &["KEYS", "???_?"])),
        vec!["foo_a", "foo_b", "foo_c", "key_x", "key_y", "key_z"]
    );
    assert_eq!(sorted(q_as(&mut c, &["KEYS", "h\\[x\\]"])), vec!["h[x]"]);
    assert_eq!(sorted(q_as(&mut c, &["KEYS", "\\**"])), vec!["*star"]);
    assert_eq!(q_as::<Vec<String>>(&mut c, &["KEYS", "*"]).len(), 8);
    assert!(q_as::<Vec<String>>(&mut c, &["KEYS", "nomatch*"]).is_empty());
    // pathological pattern returns promptly
    let t = Instant::now();
    let pat = "a*".repeat(50) + "b";
    set(&mut c, &"a".repeat(200), "1");
    assert!(q_as::<Vec<String>>(&mut c, &["KEYS", &pat]).is_empty());
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn scan_options_and_errors() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let (cur, keys): (String, Vec<String>) = q_as(&mut c, &["SCAN", "0"]);
    assert_eq!((cur.as_str(), keys.len()), ("0", 0));
    let mut p = redis::pipe();
    for i in 0..1000 {
        p.cmd("SET").arg(format!("key:{i}")).arg(i).ignore();
    }
    let _: () = p.query(&mut c).unwrap();
    let all: HashSet<String> = full_scan(&mut c, &[]).into_iter().collect();
    assert_eq!(all.len(), 1000);
    let small: HashSet<String> = full_scan(&mut c, &["COUNT", "1"]).into_iter().collect();
    assert_eq!(small.len(), 1000);
    let big = full_scan(&mut c, &["COUNT", "100000"]);
    assert_eq!(big.len(), 1000);
    let m: HashSet<String> = full_scan(&mut c, &["MATCH", "key:1??"])
        .into_iter()
        .collect();
    assert_eq!(m.len(), 100);
    assert!(m.iter().all(|k| k.starts_with("key:1") && k.len() == 7));
    assert_eq!(full_scan(&mut c, &["TYPE", "string"]).len(), 1000);
    assert_eq!(
        full_scan(&mut c, &["type", "STRING", "count", "7"]).len(),
        1000
    );
    assert!(full_scan(&mut c, &["TYPE", "list"]).is_empty());
    assert!(full_scan(&mut c, &["TYPE", "nosuchtype"]).is_empty());
    // COUNT is a hint: a call never returns wildly more than asked on a dense table
    let (_, some): (String, Vec<String>) = q_as(&mut c, &["SCAN", "0", "COUNT", "10"]);
    assert!(!some.is_empty() && some.len() < 100, "{}", some.len());

    assert_eq!(err(&mut c, &["SCAN", "abc"]), "ERR invalid cursor");
    assert_eq!(err(&mut c, &["SCAN", " 1"]), "ERR invalid cursor");
    assert_eq!(err(&mut c, &["SCAN", "1x"]), "ERR invalid cursor");
    assert_eq!(
        err(&mut c, &["SCAN", "18446744073709551616"]),
        "ERR invalid cursor"
    );
    assert_eq!(
        err(&mut c, &["SCAN", "0", "COUNT", "0"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["SCAN", "0", "COUNT", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(err(&mut c, &["SCAN", "0", "MATCH"]), "ERR syntax error");
    assert_eq!(
        err(&mut c, &["SCAN", "0", "FOO", "bar"]),
        "ERR syntax error"
    );
    // the largest cursor is accepted
    let _: (String, Vec<String>) = q_as(&mut c, &["SCAN", "18446744073709551615"]);
}

#[test]
fn scan_skips_and_reaps_expired_keys() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    // Keep active expiry out of the way when the server supports switching it off.
    let active_off = cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"])
        .query::<Value>(&mut c)
        .is_ok();
    let mut p = redis::pipe();
    for i in 0..500 {
        p.cmd("SET").arg(format!("live{i}")).arg(i).ignore();
        p.cmd("SET")
            .arg(format!("dying{i}"))
            .arg(i)
            .arg("PX")
            .arg(1)
            .ignore();
    }
    let _: () = p.query(&mut c).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let keys = full_scan(&mut c, &["COUNT", "10"]);
    assert_eq!(keys.len(), 500);
    assert!(keys.iter().all(|k| k.starts_with("live")));
    // with a type filter and an unknown type too
    assert!(full_scan(&mut c, &["TYPE", "string1"]).is_empty());
    if active_off {
        // SCAN itself deleted what it found expired
        assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 500);
        let _: Value = q_as(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    }
}

#[test]
fn scan_is_complete_under_concurrent_writes() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let mut p = redis::pipe();
    for i in 0..5000 {
        p.cmd("SET").arg(format!("orig:{i}")).arg(i).ignore();
    }
    let _: () = p.query(&mut c).unwrap();
    let mut writer = s.conn();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let h = std::thread::spawn(move || {
        // grow every shard's table (and shrink it back) while the scan runs
        let mut n = 0u64;
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            let mut p = redis::pipe();
            for i in 0..200 {
                p.cmd("SET").arg(format!("new:{}", n + i)).arg(1).ignore();
            }
            let _: () = p.query(&mut writer).unwrap();
            if n % 2000 == 1800 {
                let mut d = redis::cmd("DEL");
                for i in 0..n {
                    d.arg(format!("new:{i}"));
                }
                let _: i64 = d.query(&mut writer).unwrap();
            }
            n += 200;
        }
        n
    });
    let keys = full_scan(&mut c, &["COUNT", "20"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = h.join().unwrap();
    assert!(written > 0);
    let seen: HashSet<&str> = keys.iter().map(String::as_str).collect();
    for i in 0..5000 {
        let k = format!("orig:{i}");
        assert!(seen.contains(k.as_str()), "{k} missed by SCAN");
    }
}

#[test]
fn randomkey_dbsize_flush() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(q_as::<Option<String>>(&mut c, &["RANDOMKEY"]), None);
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 0);
    for i in 0..50 {
        set(&mut c, &format!("k{i}"), "v");
    }
    let mut seen = HashSet::new();
    for _ in 0..500 {
        let k: String = q_as(&mut c, &["RANDOMKEY"]);
        assert!(k.starts_with('k'));
        seen.insert(k);
    }
    assert!(seen.len() > 30, "RANDOMKEY is not random: {}", seen.len());
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 50);
    assert_eq!(
        err(&mut c, &["RANDOMKEY", "x"]),
        "ERR wrong number of arguments for 'randomkey' command"
    );

    // FLUSHDB only touches the selected database
    let _: () = q_as(&mut c, &["SELECT", "3"]);
    set(&mut c, "in3", "v");
    let _: () = q_as(&mut c, &["SELECT", "0"]);
    assert_eq!(q_as::<String>(&mut c, &["FLUSHDB"]), "OK");
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 0);
    let _: () = q_as(&mut c, &["SELECT", "3"]);
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 1);
    assert_eq!(q_as::<String>(&mut c, &["FLUSHDB", "ASYNC"]), "OK");
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 0);
    set(&mut c, "in3", "v");
    assert_eq!(q_as::<String>(&mut c, &["FLUSHDB", "sync"]), "OK");
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 0);
    assert_eq!(err(&mut c, &["FLUSHDB", "LAZY"]), "ERR syntax error");
    assert_eq!(err(&mut c, &["FLUSHDB", "ASYNC", "x"]), "ERR syntax error");

    for db in ["0", "5", "15"] {
        let _: () = q_as(&mut c, &["SELECT", db]);
        for i in 0..100 {
            set(&mut c, &format!("k{i}"), "v");
        }
    }
    assert_eq!(q_as::<String>(&mut c, &["FLUSHALL", "ASYNC"]), "OK");
    for db in ["0", "5", "15"] {
        let _: () = q_as(&mut c, &["SELECT", db]);
        assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 0, "db {db}");
    }
    set(&mut c, "x", "1");
    assert_eq!(q_as::<String>(&mut c, &["FLUSHALL"]), "OK");
    assert_eq!(q_as::<String>(&mut c, &["FLUSHALL", "SYNC"]), "OK");
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 0);
    assert_eq!(err(&mut c, &["FLUSHALL", "NOW"]), "ERR syntax error");
}

#[test]
fn move_copy_swapdb() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    set(&mut c, "k", "v");
    assert_eq!(q_as::<i64>(&mut c, &["PEXPIRE", "k", "100000"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["MOVE", "k", "1"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["EXISTS", "k"]), 0);
    assert_eq!(q_as::<i64>(&mut c, &["MOVE", "k", "1"]), 0);
    assert_eq!(
        err(&mut c, &["MOVE", "k", "0"]),
        "ERR source and destination objects are the same"
    );
    assert_eq!(
        err(&mut c, &["MOVE", "k", "16"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        err(&mut c, &["MOVE", "k", "-1"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        err(&mut c, &["MOVE", "k", "x"]),
        "ERR value is not an integer or out of range"
    );
    // Redis 7.2's wording for an index outside a 32-bit int (7.0 said "not an integer").
    assert_eq!(
        err(&mut c, &["MOVE", "k", "4294967296"]),
        "ERR value is out of range, value must between -2147483648 and 2147483647"
    );
    let _: () = q_as(&mut c, &["SELECT", "1"]);
    assert_eq!(q_as::<String>(&mut c, &["GET", "k"]), "v");
    let pttl: i64 = q_as(&mut c, &["PTTL", "k"]);
    assert!(pttl > 90_000, "move lost the TTL: {pttl}");
    // target exists: nothing moves
    let _: () = q_as(&mut c, &["SELECT", "0"]);
    set(&mut c, "k", "zero");
    assert_eq!(q_as::<i64>(&mut c, &["MOVE", "k", "1"]), 0);
    assert_eq!(q_as::<String>(&mut c, &["GET", "k"]), "zero");

    // COPY
    assert_eq!(q_as::<i64>(&mut c, &["COPY", "k", "k2"]), 1);
    assert_eq!(q_as::<String>(&mut c, &["GET", "k2"]), "zero");
    assert_eq!(q_as::<i64>(&mut c, &["TTL", "k2"]), -1);
    set(&mut c, "k", "changed");
    assert_eq!(q_as::<String>(&mut c, &["GET", "k2"]), "zero");
    assert_eq!(q_as::<i64>(&mut c, &["COPY", "k", "k2"]), 0);
    assert_eq!(q_as::<i64>(&mut c, &["COPY", "k", "k2", "REPLACE"]), 1);
    assert_eq!(q_as::<String>(&mut c, &["GET", "k2"]), "changed");
    assert_eq!(
        q_as::<i64>(&mut c, &["COPY", "missing", "k2", "REPLACE"]),
        0
    );
    assert_eq!(
        err(&mut c, &["COPY", "k", "k"]),
        "ERR source and destination objects are the same"
    );
    assert_eq!(q_as::<i64>(&mut c, &["COPY", "k", "k", "DB", "2"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["EXPIRE", "k", "500"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["COPY", "k", "k", "db", "2"]), 0);
    assert_eq!(
        q_as::<i64>(&mut c, &["COPY", "k", "k", "replace", "db", "2"]),
        1
    );
    assert_eq!(
        err(&mut c, &["COPY", "k", "x", "DB", "99"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        err(&mut c, &["COPY", "k", "x", "DB", "notanint"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(err(&mut c, &["COPY", "k", "x", "DB"]), "ERR syntax error");
    assert_eq!(err(&mut c, &["COPY", "k", "x", "FOO"]), "ERR syntax error");
    let _: () = q_as(&mut c, &["SELECT", "2"]);
    assert_eq!(q_as::<String>(&mut c, &["GET", "k"]), "changed");
    assert_eq!(q_as::<i64>(&mut c, &["TTL", "k"]), 500);

    // SWAPDB: db 2 holds {k}, db 3 holds {a, b}
    let _: () = q_as(&mut c, &["SELECT", "3"]);
    set(&mut c, "a", "1");
    set(&mut c, "b", "2");
    assert_eq!(q_as::<String>(&mut c, &["SWAPDB", "2", "3"]), "OK");
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 1);
    assert_eq!(q_as::<String>(&mut c, &["GET", "k"]), "changed");
    assert_eq!(q_as::<i64>(&mut c, &["TTL", "k"]), 500);
    let _: () = q_as(&mut c, &["SELECT", "2"]);
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 2);
    assert_eq!(q_as::<String>(&mut c, &["SWAPDB", "2", "2"]), "OK");
    assert_eq!(q_as::<i64>(&mut c, &["DBSIZE"]), 2);
    assert_eq!(
        err(&mut c, &["SWAPDB", "x", "1"]),
        "ERR invalid first DB index"
    );
    assert_eq!(
        err(&mut c, &["SWAPDB", "1", "y"]),
        "ERR invalid second DB index"
    );
    assert_eq!(
        err(&mut c, &["SWAPDB", "1", "16"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        err(&mut c, &["SWAPDB", "-1", "0"]),
        "ERR DB index is out of range"
    );
    // another connection sees the swap immediately
    let mut other = s.conn();
    let _: () = q_as(&mut other, &["SELECT", "3"]);
    assert_eq!(q_as::<String>(&mut other, &["GET", "k"]), "changed");
}

#[test]
fn object_subcommands() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    set(&mut c, "int", "12345");
    set(&mut c, "small", "123");
    set(&mut c, "emb", "hello");
    set(&mut c, "raw", &"x".repeat(100));
    assert_eq!(
        q_as::<String>(&mut c, &["OBJECT", "ENCODING", "int"]),
        "int"
    );
    assert_eq!(
        q_as::<String>(&mut c, &["object", "encoding", "emb"]),
        "embstr"
    );
    assert_eq!(
        q_as::<String>(&mut c, &["OBJECT", "ENCODING", "raw"]),
        "raw"
    );
    assert_eq!(
        q_as::<Option<String>>(&mut c, &["OBJECT", "ENCODING", "missing"]),
        None
    );
    assert_eq!(q_as::<i64>(&mut c, &["OBJECT", "REFCOUNT", "raw"]), 1);
    assert_eq!(q_as::<i64>(&mut c, &["OBJECT", "REFCOUNT", "int"]), 1);
    assert_eq!(
        q_as::<i64>(&mut c, &["OBJECT", "REFCOUNT", "small"]),
        2147483647
    );
    // The LRU clock ticks in whole seconds: a fresh key reads 0, or 1 across a tick.
    assert!(q_as::<i64>(&mut c, &["OBJECT", "IDLETIME", "raw"]) <= 1);
    assert_eq!(
        q_as::<Option<i64>>(&mut c, &["OBJECT", "IDLETIME", "missing"]),
        None
    );
    assert_eq!(
        err(&mut c, &["OBJECT", "FREQ", "raw"]),
        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
    );
    let help: Vec<String> = q_as(&mut c, &["OBJECT", "HELP"]);
    assert_eq!(
        help[0],
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    );
    assert_eq!(help.len(), 15);
    assert_eq!(help[13], "HELP");
    assert_eq!(
        err(&mut c, &["OBJECT", "NOPE", "x"]),
        "ERR unknown subcommand 'NOPE'. Try OBJECT HELP."
    );
    assert_eq!(
        err(&mut c, &["OBJECT"]),
        "ERR wrong number of arguments for 'object' command"
    );
    assert_eq!(
        err(&mut c, &["OBJECT", "ENCODING"]),
        "ERR wrong number of arguments for 'object|encoding' command"
    );
    // idle time grows while the key is not accessed, and OBJECT itself does not touch it
    std::thread::sleep(Duration::from_millis(2100));
    let idle: i64 = q_as(&mut c, &["OBJECT", "IDLETIME", "raw"]);
    assert!((1..=3).contains(&idle), "idle {idle}");
    let idle2: i64 = q_as(&mut c, &["OBJECT", "IDLETIME", "raw"]);
    assert!(idle2 >= idle);
    let _: i64 = q_as(&mut c, &["TOUCH", "raw"]);
    assert!(q_as::<i64>(&mut c, &["OBJECT", "IDLETIME", "raw"]) <= 1);
}

#[test]
fn object_under_lfu_policy() {
    let s = Server::tern(&["--maxmemory-policy", "allkeys-lfu"]);
    let mut c = s.conn();
    set(&mut c, "k", "v");
    for _ in 0..20 {
        let _: String = q_as(&mut c, &["GET", "k"]);
    }
    let freq: i64 = q_as(&mut c, &["OBJECT", "FREQ", "k"]);
    assert!((1..=255).contains(&freq), "freq {freq}");
    assert_eq!(
        err(&mut c, &["OBJECT", "IDLETIME", "k"]),
        "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
    );
    let _: i64 = q_as(&mut c, &["COPY", "k", "k2"]);
    let freq2: i64 = q_as(&mut c, &["OBJECT", "FREQ", "k2"]);
    assert!((0..=5).contains(&freq2), "fresh copy freq {freq2}");
}

/// The same tricky sequences against redis-server and tern: replies must be identical.
#[test]
fn differential_against_redis() {
    let Some(r) = Server::redis(&[]) else {
        eprintln!("redis-server not installed; skipping differential test");
        return;
    };
    let t = Server::tern(&[]);
    let mut a = r.conn();
    let mut b = t.conn();
    let script: &[&[&str]] = &[
        &["FLUSHALL"],
        &["SET", "a", "1"],
        &["SET", "b", "hello"],
        &["SET", "c", "x"],
        &["DEL", "a", "a", "nope"],
        &["UNLINK", "b", "zz"],
        &["EXISTS", "a", "b", "c", "c"],
        &["TYPE", "c"],
        &["TYPE", "a"],
        &["RENAME", "nope", "x"],
        &["RENAME", "c", "c"],
        &["RENAMENX", "c", "c"],
        &["SET", "d", "dd"],
        &["RENAMENX", "c", "d"],
        &["RENAME", "c", "d"],
        &["GET", "d"],
        &["EXPIRE", "d", "100", "NX", "GT"],
        &["EXPIRE", "d", "100", "GT", "LT"],
        &["EXPIRE", "d", "100", "XX", "LT"],
        &["EXPIRE", "d", "100", "XX"],
        &["EXPIRE", "d", "100", "bogus"],
        &["EXPIRE", "d", "1e3"],
        &["EXPIRE", "d", " 10"],
        &["EXPIRE", "d", "9223372036854775807"],
        &["EXPIRE", "d", "-9223372036854775808"],
        &["PEXPIRE", "d", "9223372036854775807"],
        &["EXPIREAT", "d", "9223372036854775807"],
        &["EXPIRE", "d", "1000"],
        &["EXPIRE", "d", "2000", "GT"],
        &["EXPIRE", "d", "3000", "LT"],
        &["EXPIRE", "d", "1000", "lt"],
        &["TTL", "d"],
        &["PERSIST", "d"],
        &["PERSIST", "d"],
        &["TTL", "d"],
        &["PTTL", "nokey"],
        &["EXPIRETIME", "d"],
        &["PEXPIRETIME", "nokey"],
        &["EXPIRE", "d", "-1"],
        &["EXISTS", "d"],
        &["SET", "e", "v"],
        &["PEXPIREAT", "e", "0"],
        &["EXISTS", "e"],
        &["MSET", "k1", "1", "k2", "2", "k3", "3"],
        &["SET", "kk", "1"],
        &["SET", "k[", "1"],
        &["KEYS", "k[12]"],
        &["KEYS", "k[^1]"],
        &["KEYS", "k\\["],
        &["KEYS", "k["],
        &["KEYS", "K1"],
        &["KEYS", "?"],
        &["KEYS", "[k-k]?"],
        &["KEYS", "k[3-1]"],
        &["KEYS", "*[\\]"],
        &["DBSIZE"],
        &["SCAN", "abc"],
        &["SCAN", "-"],
        &["SCAN", "0", "COUNT", "0"],
        &["SCAN", "0", "COUNT", "-1"],
        &["SCAN", "0", "COUNT"],
        &["SCAN", "0", "MATCH", "x", "BOGUS"],
        &["SCAN", "0", "COUNT", "1000", "MATCH", "k[12]"],
        &["SCAN", "0", "COUNT", "1000", "TYPE", "list"],
        &["SCAN", "0", "COUNT", "1000", "TYPE", "unknowntype"],
        &["MOVE", "k1", "0"],
        &["MOVE", "k1", "x"],
        &["MOVE", "k1", "100"],
        &["MOVE", "k1", "1"],
        &["MOVE", "k1", "1"],
        &["MOVE", "nokey", "1"],
        &["COPY", "k2", "k2"],
        &["COPY", "k2", "k2", "DB", "1"],
        &["COPY", "k2", "k2", "DB", "1"],
        &["COPY", "k2", "k2", "DB", "1", "REPLACE"],
        &["COPY", "k2", "k5", "DB"],
        &["COPY", "k2", "k5", "DB", "x"],
        &["COPY", "k2", "k5", "DB", "42"],
        &["COPY", "k2", "k5", "REPLACE", "REPLACE"],
        &["COPY", "nokey", "k5"],
        &["SWAPDB", "0", "1"],
        &["KEYS", "*"],
        &["SWAPDB", "0", "1"],
        &["SWAPDB", "a", "1"],
        &["SWAPDB", "0", "b"],
        &["SWAPDB", "0", "16"],
        &["TOUCH", "k2", "k3", "nokey"],
        &["OBJECT", "ENCODING", "k2"],
        &["OBJECT", "ENCODING", "nokey"],
        &["OBJECT", "REFCOUNT", "k2"],
        &["OBJECT", "FREQ", "k2"],
        &["OBJECT", "BOGUS"],
        // (OBJECT HELP itself is left out: Debian's 7.0 words its last line differently.)
        &["OBJECT", "HELP", "extra"],
        &["OBJECT"],
        &["FLUSHDB", "BOGUS"],
        &["FLUSHDB", "ASYNC"],
        &["DBSIZE"],
        &["RANDOMKEY"],
        &["FLUSHALL", "SYNC"],
    ];
    for step in script {
        let (ra, rb) = crate::common::both(&mut a, &mut b, step);
        let norm = |r: redis::RedisResult<Value>| match r {
            Ok(v) => format!("{:?}", sort_arrays(v)),
            Err(e) => format!("error: {}", error_line(&e)),
        };
        assert_eq!(norm(ra), norm(rb), "step {step:?}");
    }
}

/// Order-insensitive comparison for KEYS replies (hash order differs between servers).
fn sort_arrays(v: Value) -> Value {
    match v {
        Value::Array(items) => {
            let mut items: Vec<Value> = items.into_iter().map(sort_arrays).collect();
            if items.iter().all(|i| matches!(i, Value::BulkString(_))) {
                items.sort_by_key(|i| format!("{i:?}"));
            }
            Value::Array(items)
        }
        other => other,
    }
}

/// Wait until the background frees are done; returns lazyfreed_objects.
fn lazyfreed_settled(c: &mut Connection) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    while info_u64(c, "memory", "lazyfree_pending_objects") != 0 {
        assert!(Instant::now() < deadline, "lazy frees never finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    info_u64(c, "memory", "lazyfreed_objects")
}

#[test]
fn lazy_freeing_is_counted_and_gives_memory_back() {
    let s = Server::tern(&["--enable-debug-command", "yes"]);
    let mut c = s.conn();
    let orig = info_u64(&mut c, "memory", "used_memory");
    // One command with 100,000 arguments, on the connection that stays open afterwards.
    let mut sadd = redis::cmd("SADD");
    sadd.arg("big");
    for i in 0..100_000 {
        sadd.arg(i);
    }
    let added: i64 = sadd.query(&mut c).unwrap();
    assert_eq!(added, 100_000);
    let peak = info_u64(&mut c, "memory", "used_memory");
    assert!(peak > orig + 1_000_000, "orig {orig} peak {peak}");
    let _: String = q_as(&mut c, &["set", "small", "v"]);
    let n: i64 = q_as(&mut c, &["unlink", "big", "small"]);
    assert_eq!(n, 2);
    // Only the big set is worth a background free, as Redis decides by free effort.
    assert_eq!(lazyfreed_settled(&mut c), 1);
    let after = info_u64(&mut c, "memory", "used_memory");
    // The set and the connection's argument table are both given back.
    assert!(after < orig * 2, "orig {orig} after {after}");

    // A stream's effort counts its nodes: 1000 entries in nodes of 5 is lazy, one entry not.
    let _: String = q_as(&mut c, &["config", "set", "stream-node-max-entries", "5"]);
    for i in 0..1000 {
        let _: String = q_as(&mut c, &["xadd", "st", "*", "f", &i.to_string()]);
    }
    let _: String = q_as(&mut c, &["xadd", "one", "*", "f", "v"]);
    let _: i64 = q_as(&mut c, &["unlink", "st", "one"]);
    assert_eq!(lazyfreed_settled(&mut c), 2);

    // FLUSHALL ASYNC counts the keys it frees; CONFIG RESETSTAT clears the count.
    let _: String = q_as(&mut c, &["config", "resetstat"]);
    assert_eq!(lazyfreed_settled(&mut c), 0);
    let _: String = q_as(&mut c, &["debug", "populate", "300"]);
    let _: String = q_as(&mut c, &["flushall", "async"]);
    assert_eq!(lazyfreed_settled(&mut c), 300);
}

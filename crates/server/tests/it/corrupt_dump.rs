//! Corrupt DUMP payloads and RDB files are refused as Redis 7.2 refuses them
//! (`sanitize-dump-payload no|yes|clients`, DEBUG SET-SKIP-CHECKSUM-VALIDATION), and whatever
//! is accepted is safe to use. Payloads are made by DUMPing real values and flipping bytes,
//! with the CRC-64 recomputed; where redis-server (Debian's 7.0) answers the same, both are
//! asked side by side.
use crate::common::*;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use redis::Value as V;

/// CRC-64/Jones as Redis computes it (reflected, polynomial 0xad93d23594c935a9, init 0).
fn crc64(data: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5; // 0xad93d23594c935a9 bit-reversed
    let mut crc = 0u64;
    for &b in data {
        crc ^= b as u64;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// `body` (type byte and value) with the RDB version and a correct checksum appended.
fn payload(body: &[u8], version: u16) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

/// A payload's type byte and value, without version and checksum.
fn body_of(p: &[u8]) -> Vec<u8> {
    p[..p.len() - 10].to_vec()
}

fn restore(c: &mut redis::Connection, key: &str, p: &[u8]) -> String {
    match run(c, &[b"RESTORE", key.as_bytes(), b"0", p, b"REPLACE"]) {
        Ok(V::Okay) => "OK".to_string(),
        Ok(v) => format!("{v:?}"),
        Err(e) => e.to_string(),
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn refused(reply: &str) -> bool {
    reply.contains("Bad data format")
}

/// The payload: a quicklist whose ziplist header counts 3 entries but holds 2.
#[test]
fn ziplist_with_wrong_count_is_refused_in_every_mode() {
    let p = hex("0e0113130000000e00000003000002610004026200ff09004de20a2f0825df91");
    let tern = Server::tern(&["--loglevel", "verbose"]);
    let mut t = tern.conn();
    for mode in ["no", "yes", "clients"] {
        q(&mut t, &["CONFIG", "SET", "sanitize-dump-payload", mode]);
        let r = restore(&mut t, "k", &p);
        assert!(refused(&r), "{mode}: {r}");
        assert_eq!(q(&mut t, &["EXISTS", "k"]), V::Int(0));
    }
    assert!(tern.log().contains("Ziplist integrity check failed"));
    if let Some(redis) = Server::redis(&[]) {
        let mut r = redis.conn();
        assert!(refused(&restore(&mut r, "k", &p)));
    }
}

/// One payload per kind of corruption, each built from a real DUMP.
struct Case {
    name: &'static str,
    body: Vec<u8>,
    /// Refused with shallow sanitization too (else only with `yes`).
    shallow_refuses: bool,
    /// redis-server 7.0 gives the same answers (it knows the encoding).
    compare_redis: bool,
}

fn cases(t: &mut redis::Connection) -> Vec<Case> {
    let mut out = Vec::new();
    // Hash listpack: header count off by one.
    q(t, &["DEL", "h"]);
    q(t, &["HSET", "h", "a", "1", "b", "2"]);
    let mut b = body_of(&dump(t, "h"));
    assert_eq!(b[0], 16, "hash listpack");
    // type, string length byte, then the listpack: bytes(4) count(2)
    b[6] += 1;
    out.push(Case {
        name: "listpack count",
        body: b.clone(),
        shallow_refuses: true,
        compare_redis: false,
    });
    // Hash listpack: a back-length byte wrong.
    let mut b2 = body_of(&dump(t, "h"));
    let eof = b2.len() - 1;
    b2[eof - 1] ^= 0x7f;
    out.push(Case {
        name: "listpack backlen",
        body: b2,
        shallow_refuses: true,
        compare_redis: false,
    });
    // Hash listpack with a repeated field: "b" renamed "a".
    let mut b3 = body_of(&dump(t, "h"));
    let pos = b3.windows(2).rposition(|w| w == [0x81, b'b']).unwrap();
    b3[pos + 1] = b'a';
    out.push(Case {
        name: "hash listpack duplicate field",
        body: b3,
        shallow_refuses: true,
        compare_redis: false,
    });
    // Zset listpack with an odd number of entries: count in the header fixed up, the last
    // score dropped.
    q(t, &["DEL", "z"]);
    q(t, &["ZADD", "z", "1", "a", "2", "b"]);
    let z = body_of(&dump(t, "z"));
    assert_eq!(z[0], 17, "zset listpack");
    out.push(Case {
        name: "zset listpack odd count",
        body: drop_last_lp_entry(&z),
        shallow_refuses: true,
        compare_redis: false,
    });
    // Intset out of order.
    q(t, &["DEL", "s"]);
    q(t, &["SADD", "s", "1", "2", "3"]);
    let mut s = body_of(&dump(t, "s"));
    assert_eq!(s[0], 11, "intset");
    let n = s.len();
    s.swap(n - 2, n - 4); // int16 members: swap the high bytes of the last two... and
    s.swap(n - 1, n - 3); // the low bytes: 1 3 2
    out.push(Case {
        name: "intset order",
        body: s,
        shallow_refuses: true,
        compare_redis: false,
    });
    // Empty plain set (type 2, no members).
    out.push(Case {
        name: "empty set",
        body: vec![2, 0],
        shallow_refuses: true,
        compare_redis: true,
    });
    // Set listpack (RDB 11's type 20, built by hand: tern writes RDB 10) with a repeated
    // member, as the suite's sdiff-hang payload.
    let mut sl = vec![20u8];
    let lp = listpack(&[b"a", b"b", b"a"]);
    sl.push(lp.len() as u8);
    sl.extend_from_slice(&lp);
    out.push(Case {
        name: "set listpack duplicate member",
        body: sl,
        shallow_refuses: false,
        compare_redis: false,
    });
    out
}

/// A listpack of short strings (each under 64 bytes).
fn listpack(items: &[&[u8]]) -> Vec<u8> {
    let mut lp = vec![0u8; 6];
    for it in items {
        lp.push(0x80 | it.len() as u8);
        lp.extend_from_slice(it);
        lp.push(it.len() as u8 + 1); // back-length: header byte plus data
    }
    lp.push(0xff);
    let total = lp.len() as u32;
    lp[..4].copy_from_slice(&total.to_le_bytes());
    lp[4..6].copy_from_slice(&(items.len() as u16).to_le_bytes());
    lp
}

/// A listpack value (type byte, 1-byte string length, listpack) without its last entry.
fn drop_last_lp_entry(body: &[u8]) -> Vec<u8> {
    let lp = &body[2..];
    let eof = lp.len() - 1;
    // the last entry's back-length is one byte for small entries
    let last_len = lp[eof - 1] as usize + 1;
    let mut nlp = lp[..eof - last_len].to_vec();
    nlp.push(0xff);
    let total = nlp.len() as u32;
    nlp[..4].copy_from_slice(&total.to_le_bytes());
    let count = u16::from_le_bytes([nlp[4], nlp[5]]) - 1;
    nlp[4..6].copy_from_slice(&count.to_le_bytes());
    let mut out = vec![body[0], nlp.len() as u8];
    out.extend_from_slice(&nlp);
    out
}

#[test]
fn each_kind_of_corruption_is_refused() {
    let tern = Server::tern(&["--loglevel", "verbose"]);
    let mut t = tern.conn();
    let redis = Server::redis(&[]);
    let mut r = redis.as_ref().map(|s| s.conn());
    for c in cases(&mut t) {
        let p = payload(&c.body, 11);
        q(&mut t, &["CONFIG", "SET", "sanitize-dump-payload", "yes"]);
        let got = restore(&mut t, "x", &p);
        assert!(refused(&got), "{} (yes): {got}", c.name);
        assert_eq!(q(&mut t, &["EXISTS", "x"]), V::Int(0), "{}", c.name);
        q(&mut t, &["CONFIG", "SET", "sanitize-dump-payload", "no"]);
        let got = restore(&mut t, "x", &p);
        assert_eq!(refused(&got), c.shallow_refuses, "{} (no): {got}", c.name);
        if c.compare_redis {
            if let Some(r) = r.as_mut() {
                let p10 = payload(&c.body, 10);
                assert_eq!(
                    refused(&restore(r, "x", &p10)),
                    refused(&restore(&mut t, "x", &p10)),
                    "{} vs redis-server",
                    c.name
                );
            }
        }
        q(&mut t, &["DEL", "x"]);
    }
    assert!(tern.log().contains("integrity check failed"));
}

/// A shallow-accepted set listpack with a repeated member works with every set command, as
/// the suite's "set with duplicate elements causes sdiff to hang" expects.
#[test]
fn shallow_set_listpack_with_duplicates_is_usable() {
    let tern = Server::tern(&["--enable-debug-command", "yes"]);
    let mut t = tern.conn();
    q(&mut t, &["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1"]);
    // The suite's payload: 10 entries, "_3" twice (its CRC is not checked here).
    let p = b"\x14\x25\x25\x00\x00\x00\x0A\x00\x06\x01\x82\x5F\x35\x03\x04\x01\x82\x5F\x31\x03\x82\x5F\x33\x03\x00\x01\x82\x5F\x39\x03\x82\x5F\x33\x03\x08\x01\x02\x01\xFF\x0B\x00\x31\xBE\x7D\x41\x01\x03\x5B\xEC";
    q(&mut t, &["CONFIG", "SET", "sanitize-dump-payload", "yes"]);
    assert!(refused(&restore(&mut t, "k", p)));
    q(&mut t, &["CONFIG", "SET", "sanitize-dump-payload", "no"]);
    assert_eq!(restore(&mut t, "k", p), "OK");
    assert_eq!(encoding(&mut t, "k"), "listpack");
    assert_eq!(q(&mut t, &["SCARD", "k"]), V::Int(10));
    let V::Array(diff) = q(&mut t, &["SDIFF", "k"]) else {
        panic!("SDIFF")
    };
    assert_eq!(diff.len(), 9, "SDIFF answers each member once");
    {
        for cmd in [
            vec!["SMEMBERS", "k"],
            vec!["SDIFF", "k"],
            vec!["SINTER", "k", "k"],
            vec!["SUNION", "k"],
            vec!["SRANDMEMBER", "k", "-20"],
            vec!["SRANDMEMBER", "k", "7"],
            vec!["SISMEMBER", "k", "_3"],
            vec!["SREM", "k", "_3"],
            vec!["SADD", "k", "x", "y", "z"],
            vec!["SPOP", "k", "3"],
            vec!["SMOVE", "k", "k2", "_5"],
            vec!["SINTERCARD", "1", "k"],
        ] {
            let _ = run(
                &mut t,
                &cmd.iter().map(|s| s.as_bytes()).collect::<Vec<_>>(),
            );
        }
    }
    assert_eq!(q(&mut t, &["PING"]), V::SimpleString("PONG".into()));
}

/// Values of every type in its small and big encodings (as the suite's fuzzer makes them).
fn populate_all_types(c: &mut redis::Connection) -> Vec<String> {
    for (cfg, v) in [
        ("list-max-listpack-size", "5"),
        ("hash-max-listpack-entries", "5"),
        ("set-max-listpack-entries", "5"),
        ("zset-max-listpack-entries", "5"),
        ("stream-node-max-entries", "5"),
    ] {
        q(c, &["CONFIG", "SET", cfg, v]);
    }
    for (suffix, n) in [("", 3), ("big", 10)] {
        for j in 0..n {
            let val = if j % 2 == 0 {
                j.to_string()
            } else {
                format!("_{j}")
            };
            let js = j.to_string();
            q(c, &["HSET", &format!("hash{suffix}"), &js, &val]);
            q(c, &["LPUSH", &format!("list{suffix}"), &val]);
            q(c, &["ZADD", &format!("zset{suffix}"), &js, &val]);
            q(c, &["SADD", &format!("set{suffix}"), &val]);
            q(c, &["SADD", &format!("intset{suffix}"), &js]);
            q(
                c,
                &[
                    "XADD",
                    &format!("stream{suffix}"),
                    "*",
                    "item",
                    "1",
                    "value",
                    &val,
                ],
            );
        }
    }
    q(c, &["XGROUP", "CREATE", "stream", "mygroup", "0"]);
    q(
        c,
        &[
            "XREADGROUP",
            "GROUP",
            "mygroup",
            "Alice",
            "COUNT",
            "2",
            "STREAMS",
            "stream",
            ">",
        ],
    );
    q(
        c,
        &["XADD", "streambig", "*", "item", "1", "unique", "value"],
    );
    q(c, &["SET", "string", "str"]);
    q(c, &["INCR", "int"]);
    let V::Array(keys) = q(c, &["KEYS", "*"]) else {
        panic!("KEYS")
    };
    keys.into_iter()
        .map(|k| match k {
            V::BulkString(b) => String::from_utf8(b).unwrap(),
            v => panic!("{v:?}"),
        })
        .collect()
}

/// The commands run on a restored value: reads of its type, a few writes, and the generic
/// introspection commands.
fn traffic(k: &str) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut out = vec![
        s(&["TYPE", k]),
        s(&["OBJECT", "ENCODING", k]),
        s(&["DEBUG", "OBJECT", k]),
        s(&["DEBUG", "DIGEST-VALUE", k]),
        s(&["MEMORY", "USAGE", k]),
        s(&["DUMP", k]),
        s(&["SCAN", "0", "MATCH", k]),
    ];
    let by_type: &[&[&str]] = &[
        &["GET", k],
        &["STRLEN", k],
        &["APPEND", k, "x"],
        &["LRANGE", k, "0", "-1"],
        &["LINDEX", k, "-1"],
        &["LPOS", k, "_3"],
        &["LINSERT", k, "BEFORE", "2", "ins"],
        &["LREM", k, "0", "4"],
        &["RPOP", k],
        &["SMEMBERS", k],
        &["SISMEMBER", k, "_1"],
        &["SRANDMEMBER", k, "-7"],
        &["SDIFF", k, "nokey"],
        &["SINTERCARD", "1", k],
        &["SADD", k, "new", "7"],
        &["SPOP", k, "2"],
        &["ZRANGE", k, "0", "-1", "WITHSCORES"],
        &["ZRANGEBYSCORE", k, "-inf", "+inf"],
        &["ZREVRANGE", k, "0", "-1"],
        &["ZRANK", k, "_3"],
        &["ZSCORE", k, "_1"],
        &["ZRANDMEMBER", k, "-5", "WITHSCORES"],
        &["ZADD", k, "3.5", "new"],
        &["ZPOPMIN", k],
        &["HGETALL", k],
        &["HGET", k, "1"],
        &["HRANDFIELD", k, "-5", "WITHVALUES"],
        &["HSCAN", k, "0"],
        &["HSET", k, "new", "v"],
        &["HDEL", k, "2"],
        &["XRANGE", k, "-", "+"],
        &["XREVRANGE", k, "+", "-"],
        &["XLEN", k],
        &["XINFO", "STREAM", k, "FULL"],
        &["XINFO", "GROUPS", k],
        &["XPENDING", k, "mygroup", "-", "+", "10"],
        &["XREAD", "STREAMS", k, "0"],
        &["XAUTOCLAIM", k, "mygroup", "Bob", "0", "0"],
        &["XADD", k, "*", "f", "v"],
        &["XTRIM", k, "MAXLEN", "2"],
        &["XDEL", k, "0-1"],
    ];
    out.extend(by_type.iter().map(|c| s(c)));
    out
}

/// Random byte changes of valid payloads of every type (CRC recomputed, so the value itself
/// is parsed), restored with sanitization `yes` and `no`; whatever is accepted then takes
/// every command of its type. The server must answer PING after each payload; a value
/// accepted with deep sanitization must also survive DUMP and RESTORE again.
#[test]
fn fuzzed_payloads_never_crash_the_server() {
    let tern = Server::tern(&["--enable-debug-command", "yes"]);
    let mut c = tern.conn();
    let keys = populate_all_types(&mut c);
    let originals: Vec<Vec<u8>> = keys.iter().map(|k| dump(&mut c, k)).collect();
    // TERN_FUZZ_ROUNDS / TERN_FUZZ_SEED run longer or other campaigns by hand.
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let mut rng = SmallRng::seed_from_u64(env("TERN_FUZZ_SEED", 0x7e57_c0de_2026));
    let (mut accepted, mut refused_n) = (0, 0);
    for round in 0..env("TERN_FUZZ_ROUNDS", 1500) {
        let deep = round % 2 == 0;
        q(
            &mut c,
            &[
                "CONFIG",
                "SET",
                "sanitize-dump-payload",
                if deep { "yes" } else { "no" },
            ],
        );
        let i = rng.gen_range(0..originals.len());
        let mut body = body_of(&originals[i]);
        let flips = if rng.gen_range(0..10) == 0 { 2 } else { 1 };
        for _ in 0..flips {
            let at = rng.gen_range(0..body.len());
            body[at] = rng.gen_range(0..256) as u8;
        }
        let p = payload(&body, 11);
        let key = format!("_{}", keys[i]);
        let got = restore(&mut c, &key, &p);
        if got == "OK" {
            accepted += 1;
            if deep {
                let again = dump(&mut c, &key);
                assert_eq!(
                    restore(&mut c, "_again", &again),
                    "OK",
                    "re-restore of an accepted payload {p:02x?}"
                );
            }
            for cmd in traffic(&key) {
                let args: Vec<&[u8]> = cmd.iter().map(|s| s.as_bytes()).collect();
                let _ = run(&mut c, &args);
            }
        } else {
            assert!(
                got.contains("Bad data format") || got.contains("checksum"),
                "{got}"
            );
            refused_n += 1;
        }
        assert_eq!(
            q(&mut c, &["PING"]),
            V::SimpleString("PONG".into()),
            "after payload {p:02x?}"
        );
        q(&mut c, &["DEL", &key, "_again"]);
    }
    eprintln!("fuzzed payloads: {accepted} accepted, {refused_n} refused");
    // Both outcomes happen: the fuzzer is neither refusing nor accepting everything.
    assert!(accepted > 50 && refused_n > 50, "{accepted} / {refused_n}");
}

/// An RDB file with a corrupt value stops the server at start-up with Redis's log lines
/// (the reason, the checker's report, the terminating line).
#[test]
fn corrupt_rdb_file_stops_the_start_up() {
    let dir = fresh_dir("corrupt_dump-rdb");
    // REDIS0011, SELECTDB 0, a quicklist key whose ziplist counts 3 entries and holds 2, EOF
    // and a correct checksum.
    let value = hex("0113130000000e00000003000002610004026200ff");
    let mut f = b"REDIS0011\xfe\x00\x0e\x03bad".to_vec();
    f.extend_from_slice(&value);
    f.push(0xff);
    let crc = crc64(&f);
    f.extend_from_slice(&crc.to_le_bytes());
    std::fs::write(dir.join("dump.rdb"), &f).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tern-server"))
        .args(["--port", &free_port().to_string(), "--bind", "127.0.0.1"])
        .arg("--dir")
        .arg(&dir)
        .output()
        .expect("run tern-server");
    assert!(!out.status.success());
    let log =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        log.matches("Terminating server after rdb file reading failure.")
            .count(),
        1,
        "{log}"
    );
    assert!(log.matches("integrity check failed").count() > 1, "{log}");
    assert!(log.contains("Reading key 'bad'"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Files with empty collections (left by old servers) load without them, naming them.
#[test]
fn empty_keys_in_an_rdb_file_are_skipped() {
    let dir = fresh_dir("corrupt_dump-empty-rdb");
    let mut f = b"REDIS0011\xfe\x00".to_vec();
    f.extend_from_slice(b"\x02\x05empty\x00"); // a set with no members
    f.extend_from_slice(b"\x00\x02ok\x01v"); // a string
    f.push(0xff);
    let crc = crc64(&f);
    f.extend_from_slice(&crc.to_le_bytes());
    std::fs::write(dir.join("dump.rdb"), &f).unwrap();
    let port = free_port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tern-server"))
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .arg("--dir")
        .arg(&dir)
        .arg("--logfile")
        .arg(dir.join("log"))
        .spawn()
        .expect("run tern-server");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let mut c = loop {
        if let Ok(mut c) = client.get_connection() {
            if run(&mut c, &[b"PING"]).is_ok() {
                break c;
            }
        }
        assert!(std::time::Instant::now() < deadline, "no start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // loading happens in the background: wait for the key
    while q(&mut c, &["DBSIZE"]) != V::Int(1) {
        assert!(std::time::Instant::now() < deadline, "not loaded");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(q(&mut c, &["EXISTS", "empty"]), V::Int(0));
    let log = std::fs::read_to_string(dir.join("log")).unwrap();
    assert!(
        log.contains("rdbLoadObject skipping empty key: empty"),
        "{log}"
    );
    assert!(log.contains("empty keys skipped: 1"), "{log}");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sanitize-dump-payload clients`: deep for a normal client, shallow for a user with
/// `skip-sanitize-payload` (what a shallow check keeps: a set listpack with a repeated member).
#[test]
fn clients_mode_follows_the_user() {
    let tern = Server::tern(&[]);
    let mut t = tern.conn();
    let lp = listpack(&[b"a", b"b", b"a"]);
    let mut body = vec![20u8, lp.len() as u8];
    body.extend_from_slice(&lp);
    let p = payload(&body, 11);
    q(
        &mut t,
        &["CONFIG", "SET", "sanitize-dump-payload", "clients"],
    );
    assert!(refused(&restore(&mut t, "k", &p)));
    q(
        &mut t,
        &["ACL", "SETUSER", "default", "skip-sanitize-payload"],
    );
    let mut t2 = tern.conn();
    assert_eq!(restore(&mut t2, "k", &p), "OK");
    assert_eq!(q(&mut t2, &["SCARD", "k"]), V::Int(3));
    q(&mut t2, &["ACL", "SETUSER", "default", "sanitize-payload"]);
    assert!(refused(&restore(&mut t2, "k", &p)));
}

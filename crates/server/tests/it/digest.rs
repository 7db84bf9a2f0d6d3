//! DEBUG DIGEST / DEBUG DIGEST-VALUE: the same randomized data loaded into tern and into
//! Debian's redis-server must give the same digests, key by key and for the whole dataset.
use crate::common::*;
use redis::Value;

/// A small deterministic PRNG (xorshift64*), so both servers get the very same commands.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// An element: integers (small and large), short strings, long strings, binary bytes.
fn element(r: &mut Rng) -> Vec<u8> {
    match r.below(6) {
        0 => (r.below(1000) as i64 - 500).to_string().into_bytes(),
        1 => (r.next() as i64).to_string().into_bytes(),
        2 => format!("el:{}", r.below(100_000)).into_bytes(),
        3 => {
            let n = 60 + r.below(200) as usize;
            (0..n)
                .map(|i| b'a' + ((i as u64 + r.below(3)) % 26) as u8)
                .collect()
        }
        4 => (0..1 + r.below(12)).map(|_| r.below(256) as u8).collect(),
        _ => b"".to_vec(),
    }
}

/// A score both servers print alike (Redis 7.0 prints `%.17g`, 7.2 the shortest round trip:
/// they agree on integers below 1e17 and short binary fractions). No "-0" in big sets: 7.2
/// creates a big ZADD's set as a skiplist at once (keeping -0), 7.0 fills a listpack first
/// (turning it into 0) — a ZADD difference between the versions, not a digest one.
fn score(r: &mut Rng, big: bool) -> String {
    match r.below(10) {
        0 => "inf".into(),
        1 => "-inf".into(),
        2 if !big => "-0".into(),
        3 => (r.below(1 << 40) as i64 - (1 << 39)).to_string(),
        _ => format!("{}", (r.below(16_000) as f64 - 8000.0) / 8.0),
    }
}

/// Commands creating `n` keys of every type in the current DB.
fn dataset(r: &mut Rng, tag: &str, n: usize) -> Vec<Vec<Vec<u8>>> {
    let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
    let b = |s: &str| s.as_bytes().to_vec();
    for i in 0..n {
        let key = format!("{tag}:{i}");
        let big = r.below(3) == 0;
        let count = if big {
            150 + r.below(500)
        } else {
            1 + r.below(20)
        };
        match i % 6 {
            0 => {
                let v = match r.below(4) {
                    0 => (r.next() as i64).to_string().into_bytes(),
                    1 => r.below(10_000).to_string().into_bytes(),
                    _ => element(r),
                };
                cmds.push(vec![b("SET"), b(&key), v]);
            }
            1 => {
                let mut c = vec![b("RPUSH"), b(&key)];
                for _ in 0..count {
                    c.push(element(r));
                }
                cmds.push(c);
                if r.below(2) == 0 {
                    cmds.push(vec![b("LPUSH"), b(&key), b("front")]);
                }
            }
            2 => {
                let mut c = vec![b("SADD"), b(&key)];
                let ints_only = r.below(2) == 0;
                for _ in 0..count {
                    c.push(if ints_only {
                        (r.below(100_000) as i64 - 50_000).to_string().into_bytes()
                    } else {
                        element(r)
                    });
                }
                cmds.push(c);
            }
            3 => {
                let mut c = vec![b("ZADD"), b(&key)];
                for _ in 0..count {
                    c.push(b(&score(r, big)));
                    c.push(element(r));
                }
                cmds.push(c);
            }
            4 => {
                let mut c = vec![b("HSET"), b(&key)];
                for _ in 0..count {
                    c.push(element(r));
                    c.push(element(r));
                }
                cmds.push(c);
            }
            _ => {
                let entries = if big { 300 } else { 1 + r.below(10) };
                for e in 0..entries {
                    let mut c = vec![b("XADD"), b(&key), b(&format!("{}-{}", 1000 + e / 3, e))];
                    for _ in 0..1 + r.below(4) {
                        c.push(element(r));
                        c.push(element(r));
                    }
                    cmds.push(c);
                }
                if entries > 2 {
                    cmds.push(vec![b("XDEL"), b(&key), b("1000-1")]);
                }
                cmds.push(vec![b("XGROUP"), b("CREATE"), b(&key), b("g1"), b("0")]);
                cmds.push(vec![
                    b("XREADGROUP"),
                    b("GROUP"),
                    b("g1"),
                    b("alice"),
                    b("COUNT"),
                    b("2"),
                    b("STREAMS"),
                    b(&key),
                    b(">"),
                ]);
            }
        }
        if r.below(4) == 0 {
            cmds.push(vec![
                b("EXPIRE"),
                b(&key),
                b(&(1000 + r.below(1000)).to_string()),
            ]);
        }
    }
    cmds
}

fn run_all(c: &mut redis::Connection, cmds: &[Vec<Vec<u8>>]) {
    for cmd in cmds {
        let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_slice()).collect();
        run(c, &args).unwrap_or_else(|e| {
            panic!("{:?}: {e}", String::from_utf8_lossy(&cmd[0]));
        });
    }
}

fn digest(c: &mut redis::Connection) -> String {
    match q(c, &["DEBUG", "DIGEST"]) {
        Value::SimpleString(s) => s,
        v => panic!("DEBUG DIGEST gave {v:?}"),
    }
}

fn digest_values(c: &mut redis::Connection, keys: &[Vec<u8>]) -> Vec<String> {
    let mut cmd = redis::cmd("DEBUG");
    cmd.arg("DIGEST-VALUE");
    for k in keys {
        cmd.arg(k.as_slice());
    }
    match cmd.query::<Value>(c).unwrap() {
        Value::Array(a) => a
            .into_iter()
            .map(|v| match v {
                Value::SimpleString(s) => s,
                v => panic!("digest line {v:?}"),
            })
            .collect(),
        v => panic!("DIGEST-VALUE gave {v:?}"),
    }
}

fn sorted_keys(c: &mut redis::Connection) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    keys
}

fn servers() -> Option<(Server, Server)> {
    let redis = Server::redis(&["--enable-debug-command", "yes"])?;
    let tern = Server::tern(&["--enable-debug-command", "yes"]);
    Some((tern, redis))
}

#[test]
fn randomized_dataset_digests_match_redis() {
    let Some((tern, redis)) = servers() else {
        eprintln!("redis-server not installed: skipped");
        return;
    };
    let (mut t, mut r) = (tern.conn(), redis.conn());
    let zeros = "0".repeat(40);
    assert_eq!(digest(&mut t), zeros);
    assert_eq!(digest(&mut r), zeros);
    for seed in [1u64, 7, 42] {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed.wrapping_mul(0x1000_0001));
        for db in [0, 1, 9] {
            let cmds = dataset(&mut rng, &format!("s{seed}"), 90);
            for c in [&mut t, &mut r] {
                q(c, &["SELECT", &db.to_string()]);
                run_all(c, &cmds);
            }
            // Every key, compared one by one, then the whole dataset.
            let keys = sorted_keys(&mut t);
            assert_eq!(keys, sorted_keys(&mut r), "db {db}: different key sets");
            let (dt, dr) = (digest_values(&mut t, &keys), digest_values(&mut r, &keys));
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(
                    dt[i],
                    dr[i],
                    "seed {seed} db {db}: DIGEST-VALUE of {} ({}) differs",
                    String::from_utf8_lossy(k),
                    encoding(&mut r, std::str::from_utf8(k).unwrap())
                );
                assert_ne!(dt[i], zeros);
            }
            assert_eq!(digest(&mut t), digest(&mut r), "seed {seed} db {db}");
        }
    }
    // Order matters for lists, not for sets; a TTL changes the digest; so does the DB.
    let before = digest(&mut t);
    for c in [&mut t, &mut r] {
        q(c, &["SELECT", "3"]);
        q(c, &["RPUSH", "ordered", "a", "b"]);
        q(c, &["SADD", "unordered", "a", "b"]);
        q(c, &["SADD", "unordered2", "b", "a"]);
        q(c, &["RPUSH", "ordered2", "b", "a"]);
    }
    let v = digest_values(&mut t, &[b"ordered".to_vec(), b"ordered2".to_vec()]);
    assert_ne!(v[0], v[1]);
    let v = digest_values(&mut t, &[b"unordered".to_vec(), b"unordered2".to_vec()]);
    assert_eq!(v[0], v[1]);
    assert_ne!(digest(&mut t), before);
    assert_eq!(digest(&mut t), digest(&mut r));
    let plain = digest_values(&mut t, &[b"ordered".to_vec()]);
    for c in [&mut t, &mut r] {
        q(c, &["EXPIRE", "ordered", "1000"]);
    }
    let timed = digest_values(&mut t, &[b"ordered".to_vec()]);
    assert_ne!(plain, timed);
    assert_eq!(timed, digest_values(&mut r, &[b"ordered".to_vec()]));
    assert_eq!(digest(&mut t), digest(&mut r));
    // FLUSHALL: back to zeros.
    for c in [&mut t, &mut r] {
        q(c, &["FLUSHALL"]);
    }
    assert_eq!(digest(&mut t), zeros);
}

#[test]
fn encodings_do_not_change_the_digest() {
    let Some((tern, redis)) = servers() else {
        return;
    };
    let (mut t, mut r) = (tern.conn(), redis.conn());
    for c in [&mut t, &mut r] {
        // The same contents, once compact and once converted to the big encoding.
        q(c, &["SADD", "s1", "1", "2", "3"]);
        q(c, &["SADD", "s2", "1", "2", "3", "x"]);
        q(c, &["SREM", "s2", "x"]);
        q(c, &["HSET", "h1", "f", "v"]);
        q(c, &["CONFIG", "SET", "hash-max-listpack-entries", "0"]);
        q(c, &["HSET", "h2", "f", "v"]);
        q(c, &["CONFIG", "SET", "zset-max-listpack-entries", "0"]);
        q(c, &["ZADD", "z2", "1.5", "a", "2", "b"]);
        q(c, &["CONFIG", "SET", "zset-max-listpack-entries", "128"]);
        q(c, &["ZADD", "z1", "1.5", "a", "2", "b"]);
        q(c, &["SET", "n1", "12345"]);
        q(c, &["SET", "n2", "1234"]);
        q(c, &["APPEND", "n2", "5"]);
    }
    assert_eq!(encoding(&mut t, "h2"), "hashtable");
    assert_eq!(encoding(&mut t, "z2"), "skiplist");
    let pairs: &[(&str, &str)] = &[("s1", "s2"), ("h1", "h2"), ("z1", "z2"), ("n1", "n2")];
    for (a, b) in pairs {
        let d = digest_values(&mut t, &[a.as_bytes().to_vec(), b.as_bytes().to_vec()]);
        assert_eq!(d[0], d[1], "{a} vs {b}");
        assert_eq!(
            d,
            digest_values(&mut r, &[a.as_bytes().to_vec(), b.as_bytes().to_vec()])
        );
    }
    assert_eq!(digest(&mut t), digest(&mut r));
}

#[test]
fn digest_value_replies_and_expired_keys() {
    let Some((tern, redis)) = servers() else {
        return;
    };
    let (mut t, mut r) = (tern.conn(), redis.conn());
    let zeros = "0".repeat(40);
    // No keys: an empty array; a missing key: zeros.
    assert_eq!(q(&mut t, &["DEBUG", "DIGEST-VALUE"]), Value::Array(vec![]));
    assert_eq!(
        digest_values(&mut t, &[b"missing".to_vec()]),
        vec![zeros.clone()]
    );
    let mut raw3: Raw = Raw::resp3(tern.port);
    assert_eq!(
        raw3.q_raw("DEBUG DIGEST-VALUE missing"),
        format!("*1\r\n+{zeros}\r\n").into_bytes()
    );
    // A logically expired key that no one has touched still counts, as in Redis.
    for c in [&mut t, &mut r] {
        q(c, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
        q(c, &["SET", "gone", "x", "PX", "1"]);
        q(c, &["SET", "kept", "y"]);
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    let keys = [b"gone".to_vec(), b"kept".to_vec()];
    let dt = digest_values(&mut t, &keys);
    assert_ne!(dt[0], zeros);
    assert_eq!(dt, digest_values(&mut r, &keys));
    assert_eq!(digest(&mut t), digest(&mut r));
    // DEBUG DIGEST takes no arguments.
    assert_eq!(
        err(&mut t, &["DEBUG", "DIGEST", "x"]),
        err(&mut r, &["DEBUG", "DIGEST", "x"])
    );
}

/// Redis 7.2 hashes zset scores in their shortest round-trip form ("0.1"), where 7.0 used
/// `%.17g` ("0.10000000000000001"): tern follows 7.2, checked against a digest computed
/// here from the definition.
#[test]
fn zset_scores_are_hashed_as_redis_7_2_prints_them() {
    let tern = Server::tern(&["--enable-debug-command", "yes"]);
    let mut t = tern.conn();
    q(&mut t, &["ZADD", "z", "0.1", "m", "1e20", "n"]);
    let sha = |b: &[u8]| sha1_smol::Sha1::from(b).digest().bytes();
    let xor_in = |d: &mut [u8; 20], b: &[u8]| {
        for (a, h) in d.iter_mut().zip(sha(b)) {
            *a ^= h;
        }
    };
    let mix_in = |d: &mut [u8; 20], b: &[u8]| {
        xor_in(d, b);
        *d = sha(d);
    };
    let mut d = [0u8; 20];
    mix_in(&mut d, &3u32.to_be_bytes());
    for (m, s) in [("m", "0.1"), ("n", "1e+20")] {
        let mut e = [0u8; 20];
        mix_in(&mut e, m.as_bytes());
        mix_in(&mut e, s.as_bytes());
        xor_in(&mut d, &e);
    }
    let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(digest_values(&mut t, &[b"z".to_vec()]), vec![hex]);
}

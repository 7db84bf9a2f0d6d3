//! DUMP / RESTORE: payloads move between redis-server and tern in both directions, every
//! type and encoding; option and error handling as Redis 7.2.
use crate::common::*;
use crate::persist_data::*;
use redis::Value as V;

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

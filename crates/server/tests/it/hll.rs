//! HyperLogLog family: every command against the real binary, the exact error texts, the
//! Redis byte format (sparse and dense) and a differential run against Debian's redis-server:
//! the same elements give the same bytes and counts, and HLLs move between the two servers.
use crate::common::{err, q, qi, run, set_bytes, Server};
use redis::{Connection, Value};

fn get(c: &mut Connection, key: &str) -> Vec<u8> {
    match q(c, &["GET", key]) {
        Value::BulkString(b) => b,
        v => panic!("GET {key}: {v:?}"),
    }
}

fn status(c: &mut Connection, args: &[&str]) -> String {
    match q(c, args) {
        Value::SimpleString(s) => s,
        Value::Okay => "OK".into(),
        v => panic!("{args:?}: expected a status, got {v:?}"),
    }
}

/// A small deterministic generator for element names.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn elements(&mut self, n: usize) -> Vec<String> {
        (0..n).map(|_| format!("e{:x}", self.next())).collect()
    }
}

fn pfadd(c: &mut Connection, key: &str, elements: &[String]) -> i64 {
    let mut cmd = redis::cmd("PFADD");
    cmd.arg(key);
    for e in elements {
        cmd.arg(e);
    }
    cmd.query(c).unwrap()
}

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const INVALID: &str = "INVALIDOBJ Corrupted HLL object detected";

#[test]
fn pfadd_pfcount_basics() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    // PFADD without elements creates an empty sparse HLL.
    assert_eq!(qi(&mut c, &["PFADD", "h"]), 1);
    assert_eq!(qi(&mut c, &["PFADD", "h"]), 0);
    let v = get(&mut c, "h");
    assert_eq!(
        v,
        b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff".to_vec()
    );
    assert_eq!(qi(&mut c, &["PFCOUNT", "h"]), 0);
    assert_eq!(qi(&mut c, &["PFADD", "h", "a", "b", "c"]), 1);
    assert_eq!(qi(&mut c, &["PFADD", "h", "a", "b", "c"]), 0);
    assert_eq!(qi(&mut c, &["PFADD", "h", ""]), 1);
    assert_eq!(qi(&mut c, &["PFCOUNT", "h"]), 4);
    assert_eq!(qi(&mut c, &["PFCOUNT", "missing"]), 0);
    assert_eq!(q(&mut c, &["EXISTS", "missing"]), Value::Int(0));
    assert_eq!(status(&mut c, &["TYPE", "h"]), "string");
    assert_eq!(
        q(&mut c, &["OBJECT", "ENCODING", "h"]),
        Value::BulkString(b"raw".to_vec())
    );

    // The cached cardinality: written by PFCOUNT, invalidated (top bit) by a change.
    q(&mut c, &["DEL", "h"]);
    qi(&mut c, &["PFADD", "h", "a", "b", "c"]);
    assert_eq!(get(&mut c, "h")[15], 0x80);
    assert_eq!(qi(&mut c, &["PFCOUNT", "h"]), 3);
    let v = get(&mut c, "h");
    assert_eq!(&v[8..16], &[3, 0, 0, 0, 0, 0, 0, 0]);
    qi(&mut c, &["PFADD", "h", "a", "b", "c"]);
    assert_eq!(get(&mut c, "h")[15], 0);
    qi(&mut c, &["PFADD", "h", "1", "2", "3"]);
    assert_eq!(get(&mut c, "h")[15], 0x80);
    assert_eq!(qi(&mut c, &["PFCOUNT", "h"]), 6);

    // A cached value is believed as is.
    let mut v = get(&mut c, "h");
    v[8] = 42;
    v[15] = 0;
    set_bytes(&mut c, "h", &v);
    assert_eq!(qi(&mut c, &["PFCOUNT", "h"]), 42);

    // Estimation stays within a few percent over a large range.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    q(&mut c, &["DEL", "big"]);
    let mut n = 0;
    for _ in 0..50 {
        let els = rng.elements(1000);
        n += els.len();
        pfadd(&mut c, "big", &els);
        let card = qi(&mut c, &["PFCOUNT", "big"]);
        let e = (card - n as i64).abs() as f64;
        assert!(e < card as f64 * 0.05, "card {card} for {n}");
    }
    assert_eq!(status(&mut c, &["PFDEBUG", "ENCODING", "big"]), "dense");
    assert_eq!(get(&mut c, "big").len(), 12304);
}

#[test]
fn errors_and_type_checks() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["SET", "str", "hello world, not an HLL"]);
    q(&mut c, &["SET", "int", "12345"]);
    for k in ["str", "int"] {
        assert_eq!(err(&mut c, &["PFADD", k, "a"]), NOT_HLL);
        assert_eq!(err(&mut c, &["PFCOUNT", k]), NOT_HLL);
        assert_eq!(err(&mut c, &["PFCOUNT", k, "other"]), NOT_HLL);
        assert_eq!(err(&mut c, &["PFMERGE", "dst", k]), NOT_HLL);
        assert_eq!(err(&mut c, &["PFMERGE", k, "dst"]), NOT_HLL);
        assert_eq!(err(&mut c, &["PFDEBUG", "GETREG", k]), NOT_HLL);
    }
    // PFMERGE failed before creating anything.
    assert_eq!(q(&mut c, &["EXISTS", "dst"]), Value::Int(0));

    // Broken magic, unknown encoding, dense of the wrong length.
    qi(&mut c, &["PFADD", "h", "a", "b", "c"]);
    q(&mut c, &["SETRANGE", "h", "0", "0123"]);
    assert_eq!(err(&mut c, &["PFCOUNT", "h"]), NOT_HLL);
    q(&mut c, &["DEL", "h"]);
    qi(&mut c, &["PFADD", "h", "a", "b", "c"]);
    q(&mut c, &["SETRANGE", "h", "4", "x"]);
    assert_eq!(err(&mut c, &["PFCOUNT", "h"]), NOT_HLL);
    q(&mut c, &["DEL", "h"]);
    qi(&mut c, &["PFADD", "h", "a", "b", "c"]);
    run(&mut c, &[b"SETRANGE", b"h", b"4", b"\x00"]).unwrap();
    assert_eq!(err(&mut c, &["PFCOUNT", "h"]), NOT_HLL);

    // Sparse opcodes that do not cover exactly 16384 registers.
    q(&mut c, &["DEL", "h"]);
    qi(&mut c, &["PFADD", "h", "a", "b", "c"]);
    q(&mut c, &["APPEND", "h", "hello"]);
    assert_eq!(err(&mut c, &["PFCOUNT", "h"]), INVALID);
    assert_eq!(err(&mut c, &["PFCOUNT", "h", "x"]), INVALID);
    assert_eq!(err(&mut c, &["PFMERGE", "d", "h"]), INVALID);
    assert_eq!(err(&mut c, &["PFDEBUG", "TODENSE", "h"]), INVALID);
    assert_eq!(err(&mut c, &["PFDEBUG", "GETREG", "h"]), INVALID);
    // Too few registers: an add landing past the end is detected.
    let short = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x40\x00";
    set_bytes(&mut c, "s", short);
    assert_eq!(err(&mut c, &["PFCOUNT", "s"]), INVALID);
    assert_eq!(
        err(&mut c, &["PFADD", "s", "a", "b", "c", "d", "e"]),
        INVALID
    );

    // PFDEBUG's own errors.
    assert_eq!(
        err(&mut c, &["PFDEBUG", "ENCODING", "nokey"]),
        "ERR The specified key does not exist"
    );
    qi(&mut c, &["PFADD", "ok", "x"]);
    assert_eq!(
        err(&mut c, &["PFDEBUG", "nosuch", "ok"]),
        "ERR Unknown PFDEBUG subcommand 'nosuch'"
    );
    qi(&mut c, &["PFDEBUG", "TODENSE", "ok"]);
    assert_eq!(
        err(&mut c, &["PFDEBUG", "DECODE", "ok"]),
        "ERR HLL encoding is not sparse"
    );
    assert_eq!(
        err(&mut c, &["PFDEBUG", "GETREG"]),
        "ERR wrong number of arguments for 'pfdebug' command"
    );
    assert_eq!(
        err(&mut c, &["PFADD"]),
        "ERR wrong number of arguments for 'pfadd' command"
    );
    assert_eq!(
        err(&mut c, &["PFSELFTEST", "x"]),
        "ERR wrong number of arguments for 'pfselftest' command"
    );
}

#[test]
fn pfmerge_and_union_count() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    qi(&mut c, &["PFADD", "h1", "a", "b", "c"]);
    qi(&mut c, &["PFADD", "h2", "b", "c", "d"]);
    qi(&mut c, &["PFADD", "h3", "c", "d", "e"]);
    assert_eq!(qi(&mut c, &["PFCOUNT", "h1", "h2", "h3"]), 5);
    assert_eq!(qi(&mut c, &["PFCOUNT", "h1", "nokey"]), 3);
    // The union count leaves the sources alone (no cache written).
    assert_eq!(get(&mut c, "h1")[15], 0x80);
    assert_eq!(status(&mut c, &["PFMERGE", "h", "h1", "h2", "h3"]), "OK");
    assert_eq!(qi(&mut c, &["PFCOUNT", "h"]), 5);
    assert_eq!(status(&mut c, &["PFDEBUG", "ENCODING", "h"]), "sparse");

    // Missing sources create an empty destination; the destination is itself a source.
    assert_eq!(status(&mut c, &["PFMERGE", "d1", "nokey1", "nokey2"]), "OK");
    assert_eq!(qi(&mut c, &["EXISTS", "d1"]), 1);
    assert_eq!(qi(&mut c, &["PFCOUNT", "d1"]), 0);
    assert_eq!(status(&mut c, &["PFMERGE", "d2"]), "OK");
    assert_eq!(qi(&mut c, &["PFCOUNT", "d2"]), 0);
    qi(&mut c, &["PFADD", "d3", "a", "b", "c"]);
    assert_eq!(status(&mut c, &["PFMERGE", "d3"]), "OK");
    assert_eq!(qi(&mut c, &["PFCOUNT", "d3"]), 3);
    assert_eq!(status(&mut c, &["PFMERGE", "d3", "h3"]), "OK");
    assert_eq!(qi(&mut c, &["PFCOUNT", "d3"]), 5);

    // One dense input makes the destination dense.
    qi(&mut c, &["PFADD", "dense", "x", "y"]);
    qi(&mut c, &["PFDEBUG", "TODENSE", "dense"]);
    assert_eq!(status(&mut c, &["PFMERGE", "d4", "h1", "dense"]), "OK");
    assert_eq!(status(&mut c, &["PFDEBUG", "ENCODING", "d4"]), "dense");
    assert_eq!(qi(&mut c, &["PFCOUNT", "d4"]), 5);
}

#[test]
fn pfdebug_and_selftest() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    qi(&mut c, &["PFADD", "h", "a", "b", "c", "d", "e", "f", "g"]);
    assert_eq!(
        q(&mut c, &["PFDEBUG", "DECODE", "h"]),
        Value::BulkString(
            b"Z:1646 v:1,1 Z:5645 v:1,1 Z:1085 v:2,1 z:57 v:1,1 Z:4274 v:2,1 Z:2445 v:1,1 Z:622 v:1,1 Z:603"
                .to_vec()
        )
    );
    assert_eq!(status(&mut c, &["PFDEBUG", "ENCODING", "h"]), "sparse");
    let regs = match q(&mut c, &["PFDEBUG", "GETREG", "h"]) {
        Value::Array(v) => v,
        v => panic!("{v:?}"),
    };
    assert_eq!(regs.len(), 16384);
    assert_eq!(regs[1646], Value::Int(1));
    assert_eq!(regs[0], Value::Int(0));
    // GETREG converted it.
    assert_eq!(status(&mut c, &["PFDEBUG", "ENCODING", "h"]), "dense");
    assert_eq!(qi(&mut c, &["PFDEBUG", "TODENSE", "h"]), 0);
    assert_eq!(qi(&mut c, &["PFCOUNT", "h"]), 7);
    qi(&mut c, &["PFADD", "h2", "a"]);
    assert_eq!(qi(&mut c, &["PFDEBUG", "todense", "h2"]), 1);
    assert_eq!(get(&mut c, "h2").len(), 12304);

    // RESP3 shapes are the same.
    let mut c3 = s.conn_resp3();
    assert_eq!(status(&mut c3, &["PFDEBUG", "ENCODING", "h"]), "dense");
    assert_eq!(qi(&mut c3, &["PFCOUNT", "h", "h2"]), 7);

    assert_eq!(status(&mut c, &["PFSELFTEST"]), "OK");
}

#[test]
fn sparse_max_bytes_promotion() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    for max in [100usize, 500, 3000] {
        q(
            &mut c,
            &["CONFIG", "SET", "hll-sparse-max-bytes", &max.to_string()],
        );
        q(&mut c, &["DEL", "h"]);
        qi(&mut c, &["PFADD", "h"]);
        let mut rng = Rng(max as u64 * 7919 + 1);
        loop {
            let len = get(&mut c, "h").len();
            if len > max {
                break;
            }
            assert_eq!(status(&mut c, &["PFDEBUG", "ENCODING", "h"]), "sparse");
            pfadd(&mut c, "h", &rng.elements(10));
        }
        assert_eq!(status(&mut c, &["PFDEBUG", "ENCODING", "h"]), "dense");
    }
    q(&mut c, &["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]);
    q(&mut c, &["DEL", "h"]);
    qi(
        &mut c,
        &[
            "PFADD", "h", "a", "b", "c", "d", "e", "d", "g", "h", "i", "j", "k",
        ],
    );
    assert_eq!(status(&mut c, &["PFDEBUG", "ENCODING", "h"]), "sparse");
    q(&mut c, &["CONFIG", "SET", "hll-sparse-max-bytes", "30"]);
    qi(&mut c, &["PFADD", "h", "new_element"]);
    assert_eq!(status(&mut c, &["PFDEBUG", "ENCODING", "h"]), "dense");
}

/// Byte-for-byte agreement with redis-server: the same elements give the same strings, HLLs
/// copied between the servers count the same, corruption is reported the same way.
#[test]
fn interop_with_redis() {
    let Some(r) = Server::redis(&[]) else {
        return;
    };
    let t = Server::tern(&[]);
    let mut tc = t.conn();
    let mut rc = r.conn();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for (i, n) in [0usize, 1, 3, 10, 100, 400, 1000, 5000, 30000]
        .into_iter()
        .enumerate()
    {
        let key = format!("h{i}");
        let els = rng.elements(n);
        for chunk in els.chunks(500).chain(std::iter::once(&[][..])) {
            let a = pfadd(&mut tc, &key, chunk);
            let b = pfadd(&mut rc, &key, chunk);
            assert_eq!(a, b, "PFADD into {key}");
        }
        let tb = get(&mut tc, &key);
        let rb = get(&mut rc, &key);
        assert_eq!(tb, rb, "bytes of {key} ({n} elements)");
        let enc = status(&mut tc, &["PFDEBUG", "ENCODING", &key]);
        assert_eq!(enc, status(&mut rc, &["PFDEBUG", "ENCODING", &key]));
        let card = qi(&mut tc, &["PFCOUNT", &key]);
        assert_eq!(card, qi(&mut rc, &["PFCOUNT", &key]), "count of {key}");
        assert_eq!(get(&mut tc, &key), get(&mut rc, &key), "cache of {key}");
        // Cross copies count the same (and from an invalidated cache).
        let mut stale = tb.clone();
        stale[15] |= 0x80;
        set_bytes(&mut rc, "from_tern", &stale);
        set_bytes(&mut tc, "from_redis", &stale);
        assert_eq!(qi(&mut rc, &["PFCOUNT", "from_tern"]), card);
        assert_eq!(qi(&mut tc, &["PFCOUNT", "from_redis"]), card);
        if enc == "sparse" {
            assert_eq!(
                q(&mut tc, &["PFDEBUG", "DECODE", &key]),
                q(&mut rc, &["PFDEBUG", "DECODE", &key])
            );
        }
    }
    // Unions and merges.
    let keys = ["h2", "h4", "h6", "h8"];
    for k in 0..keys.len() {
        let mut args = vec!["PFCOUNT"];
        args.extend_from_slice(&keys[..=k]);
        assert_eq!(qi(&mut tc, &args), qi(&mut rc, &args));
        let mut m = vec!["PFMERGE", "m"];
        m.extend_from_slice(&keys[..=k]);
        q(&mut tc, &m);
        q(&mut rc, &m);
        assert_eq!(get(&mut tc, "m"), get(&mut rc, "m"), "PFMERGE of {k}");
        let mut m2 = vec!["PFMERGE", "h3"];
        m2.extend_from_slice(&keys[..=k]);
        q(&mut tc, &m2);
        q(&mut rc, &m2);
        assert_eq!(
            get(&mut tc, "h3"),
            get(&mut rc, "h3"),
            "PFMERGE into sparse"
        );
    }
    // Dense after TODENSE / GETREG, then further adds.
    for c in [&mut tc, &mut rc] {
        qi(c, &["PFDEBUG", "TODENSE", "h4"]);
        q(c, &["PFDEBUG", "GETREG", "h5"]);
    }
    let els = rng.elements(200);
    for k in ["h4", "h5"] {
        assert_eq!(pfadd(&mut tc, k, &els), pfadd(&mut rc, k, &els));
        assert_eq!(get(&mut tc, k), get(&mut rc, k));
        assert_eq!(
            q(&mut tc, &["PFDEBUG", "GETREG", k]),
            q(&mut rc, &["PFDEBUG", "GETREG", k])
        );
    }
    // Random corruption: same reply (count or error) and same bytes afterwards.
    let base = get(&mut tc, "h8");
    pfadd(&mut tc, "sp", &rng.elements(300));
    let sparse_base = get(&mut tc, "sp");
    assert_eq!(sparse_base[4], 1);
    for round in 0..300u32 {
        let src = if round.is_multiple_of(3) {
            &base
        } else {
            &sparse_base
        };
        let mut v = src.clone();
        for _ in 0..1 + rng.next() % 3 {
            let pos = (rng.next() % v.len() as u64) as usize;
            v[pos] = rng.next() as u8;
        }
        if rng.next().is_multiple_of(4) {
            v.extend_from_slice(b"tail");
        }
        set_bytes(&mut tc, "c", &v);
        set_bytes(&mut rc, "c", &v);
        for args in [
            &["PFCOUNT", "c"][..],
            &["PFADD", "c", "x1", "x2", "x3", "x4"],
            &["PFCOUNT", "c", "h2"],
            &["PFMERGE", "c2", "c"],
        ] {
            let a = run(
                &mut tc,
                &args.iter().map(|s| s.as_bytes()).collect::<Vec<_>>(),
            );
            let b = run(
                &mut rc,
                &args.iter().map(|s| s.as_bytes()).collect::<Vec<_>>(),
            );
            match (&a, &b) {
                (Ok(x), Ok(y)) => assert_eq!(x, y, "{args:?}"),
                (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string(), "{args:?}"),
                _ => panic!("{args:?}: tern {a:?} redis {b:?}"),
            }
        }
        assert_eq!(
            get(&mut tc, "c"),
            get(&mut rc, "c"),
            "corrupted round {round}"
        );
        q(&mut tc, &["DEL", "c2"]);
        q(&mut rc, &["DEL", "c2"]);
    }
}

//! String family: every command against the real binary, error texts, and a differential run
//! against Debian's redis-server when it is installed.
use crate::common::{bulk, err, int, norm, ok, q, run, Server};
use redis::Value;

const NOT_INT: &str = "ERR value is not an integer or out of range";
const NOT_FLOAT: &str = "ERR value is not a valid float";
const SYNTAX: &str = "ERR syntax error";

#[test]
fn get_set_and_options() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(q(&mut c, &["GET", "nokey"]), Value::Nil);
    assert_eq!(q(&mut c, &["SET", "k", "v"]), ok());
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("v"));
    assert_eq!(q(&mut c, &["SET", "empty", ""]), ok());
    assert_eq!(q(&mut c, &["GET", "empty"]), bulk(""));

    // NX / XX
    assert_eq!(q(&mut c, &["SET", "k", "w", "NX"]), Value::Nil);
    assert_eq!(q(&mut c, &["SET", "k2", "w", "XX"]), Value::Nil);
    assert_eq!(q(&mut c, &["SET", "k", "w", "xx"]), ok());
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("w"));
    assert_eq!(err(&mut c, &["SET", "k", "w", "NX", "XX"]), SYNTAX);
    assert_eq!(err(&mut c, &["SET", "k", "w", "bogus"]), SYNTAX);

    // GET option, alone and with NX / XX
    assert_eq!(q(&mut c, &["SET", "k", "x", "GET"]), bulk("w"));
    assert_eq!(q(&mut c, &["SET", "fresh", "x", "GET"]), Value::Nil);
    assert_eq!(q(&mut c, &["SET", "k", "y", "GET", "NX"]), bulk("x"));
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("x"));
    assert_eq!(q(&mut c, &["SET", "none", "y", "GET", "XX"]), Value::Nil);
    assert_eq!(q(&mut c, &["EXISTS", "none"]), int(0));

    // Expirations
    assert_eq!(q(&mut c, &["SET", "t", "v", "EX", "100"]), ok());
    let Value::Int(ttl) = q(&mut c, &["PTTL", "t"]) else {
        panic!()
    };
    assert!((99_000..=100_000).contains(&ttl), "{ttl}");
    assert_eq!(q(&mut c, &["SET", "t", "v2", "KEEPTTL"]), ok());
    let Value::Int(ttl) = q(&mut c, &["PTTL", "t"]) else {
        panic!()
    };
    assert!(ttl > 90_000, "KEEPTTL kept {ttl}");
    assert_eq!(q(&mut c, &["SET", "t", "v3"]), ok());
    assert_eq!(q(&mut c, &["PTTL", "t"]), int(-1));
    // Repeating the same expiry kind is allowed (the last wins); mixing kinds is not.
    assert_eq!(q(&mut c, &["SET", "t", "v", "EX", "1", "EX", "1000"]), ok());
    let Value::Int(ttl) = q(&mut c, &["PTTL", "t"]) else {
        panic!()
    };
    assert!(ttl > 990_000, "{ttl}");
    assert_eq!(
        err(&mut c, &["SET", "t", "v", "EX", "1", "PX", "1"]),
        SYNTAX
    );
    assert_eq!(
        err(&mut c, &["SET", "t", "v", "EX", "1", "KEEPTTL"]),
        SYNTAX
    );
    assert_eq!(err(&mut c, &["SET", "t", "v", "EX"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["SET", "t", "v", "EX", "0"]),
        "ERR invalid expire time in 'set' command"
    );
    assert_eq!(
        err(&mut c, &["SET", "t", "v", "PX", "-5"]),
        "ERR invalid expire time in 'set' command"
    );
    assert_eq!(
        err(&mut c, &["SET", "t", "v", "EX", "9223372036854775807"]),
        "ERR invalid expire time in 'set' command"
    );
    assert_eq!(err(&mut c, &["SET", "t", "v", "EX", "ten"]), NOT_INT);
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 100;
    assert_eq!(q(&mut c, &["SET", "t", "v", "EXAT", &at.to_string()]), ok());
    let Value::Int(ttl) = q(&mut c, &["TTL", "t"]) else {
        panic!()
    };
    assert!((98..=100).contains(&ttl), "{ttl}");
    // An absolute time in the past: the key is gone.
    assert_eq!(q(&mut c, &["SET", "t", "v", "PXAT", "1"]), ok());
    assert_eq!(q(&mut c, &["GET", "t"]), Value::Nil);
    assert_eq!(q(&mut c, &["EXISTS", "t"]), int(0));

    assert_eq!(
        err(&mut c, &["SET", "k"]),
        "ERR wrong number of arguments for 'set' command"
    );
    assert_eq!(
        err(&mut c, &["GET"]),
        "ERR wrong number of arguments for 'get' command"
    );
}

#[test]
fn binary_values_round_trip() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let v: Vec<u8> = (0..=255u8).chain(b"\r\n\0".iter().copied()).collect();
    run(&mut c, &[b"SET", b"bin", &v]).unwrap();
    assert_eq!(
        run(&mut c, &[b"GET", b"bin"]).unwrap(),
        Value::BulkString(v.clone())
    );
    let big = vec![b'x'; 1 << 20];
    run(&mut c, &[b"SET", b"big", &big]).unwrap();
    assert_eq!(q(&mut c, &["STRLEN", "big"]), int(1 << 20));
    assert_eq!(
        run(&mut c, &[b"GET", b"big"]).unwrap(),
        Value::BulkString(big)
    );
}

#[test]
fn setnx_setex_psetex_getset() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(q(&mut c, &["SETNX", "a", "1"]), int(1));
    assert_eq!(q(&mut c, &["SETNX", "a", "2"]), int(0));
    assert_eq!(q(&mut c, &["GET", "a"]), bulk("1"));

    assert_eq!(q(&mut c, &["SETEX", "e", "100", "v"]), ok());
    let Value::Int(ttl) = q(&mut c, &["TTL", "e"]) else {
        panic!()
    };
    assert!((99..=100).contains(&ttl));
    assert_eq!(q(&mut c, &["PSETEX", "p", "100000", "v"]), ok());
    let Value::Int(ttl) = q(&mut c, &["PTTL", "p"]) else {
        panic!()
    };
    assert!((99_000..=100_000).contains(&ttl));
    assert_eq!(
        err(&mut c, &["SETEX", "e", "0", "v"]),
        "ERR invalid expire time in 'setex' command"
    );
    assert_eq!(
        err(&mut c, &["PSETEX", "e", "-1", "v"]),
        "ERR invalid expire time in 'psetex' command"
    );
    assert_eq!(err(&mut c, &["SETEX", "e", "x", "v"]), NOT_INT);
    assert_eq!(
        err(&mut c, &["SETEX", "e", "1"]),
        "ERR wrong number of arguments for 'setex' command"
    );

    // GETSET returns the old value and clears the TTL.
    assert_eq!(q(&mut c, &["GETSET", "e", "new"]), bulk("v"));
    assert_eq!(q(&mut c, &["TTL", "e"]), int(-1));
    assert_eq!(q(&mut c, &["GETSET", "nothing", "x"]), Value::Nil);
    assert_eq!(q(&mut c, &["GET", "nothing"]), bulk("x"));
}

#[test]
fn getdel_and_getex() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["SET", "k", "v"]);
    assert_eq!(q(&mut c, &["GETDEL", "k"]), bulk("v"));
    assert_eq!(q(&mut c, &["GETDEL", "k"]), Value::Nil);
    assert_eq!(q(&mut c, &["EXISTS", "k"]), int(0));

    assert_eq!(q(&mut c, &["GETEX", "missing"]), Value::Nil);
    // The expiry value is not checked when the key is missing, as in Redis.
    assert_eq!(q(&mut c, &["GETEX", "missing", "EX", "-1"]), Value::Nil);
    q(&mut c, &["SET", "k", "v", "EX", "100"]);
    assert_eq!(q(&mut c, &["GETEX", "k"]), bulk("v"));
    let Value::Int(ttl) = q(&mut c, &["TTL", "k"]) else {
        panic!()
    };
    assert!((99..=100).contains(&ttl), "GETEX without options keeps TTL");
    assert_eq!(q(&mut c, &["GETEX", "k", "PX", "5000000"]), bulk("v"));
    let Value::Int(ttl) = q(&mut c, &["TTL", "k"]) else {
        panic!()
    };
    assert!((4990..=5000).contains(&ttl));
    assert_eq!(q(&mut c, &["GETEX", "k", "PERSIST"]), bulk("v"));
    assert_eq!(q(&mut c, &["TTL", "k"]), int(-1));
    assert_eq!(q(&mut c, &["GETEX", "k", "EX", "50"]), bulk("v"));
    let Value::Int(ttl) = q(&mut c, &["TTL", "k"]) else {
        panic!()
    };
    assert!((49..=50).contains(&ttl));
    assert_eq!(
        err(&mut c, &["GETEX", "k", "EX", "0"]),
        "ERR invalid expire time in 'getex' command"
    );
    assert_eq!(err(&mut c, &["GETEX", "k", "EX", "1", "PERSIST"]), SYNTAX);
    assert_eq!(err(&mut c, &["GETEX", "k", "KEEPTTL"]), SYNTAX);
    assert_eq!(err(&mut c, &["GETEX", "k", "NX"]), SYNTAX);
    // An absolute time in the past deletes the key after replying with its value.
    assert_eq!(q(&mut c, &["GETEX", "k", "EXAT", "1"]), bulk("v"));
    assert_eq!(q(&mut c, &["EXISTS", "k"]), int(0));
    assert_eq!(
        err(&mut c, &["GETEX"]),
        "ERR wrong number of arguments for 'getex' command"
    );
}

#[test]
fn mget_mset_msetnx() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(q(&mut c, &["MSET", "a", "1", "b", "2", "a", "3"]), ok());
    assert_eq!(
        q(&mut c, &["MGET", "a", "b", "c"]),
        Value::Array(vec![bulk("3"), bulk("2"), Value::Nil])
    );
    assert_eq!(
        err(&mut c, &["MSET", "a", "1", "b"]),
        "ERR wrong number of arguments for 'mset' command"
    );
    assert_eq!(
        err(&mut c, &["MSETNX", "a", "1", "b"]),
        "ERR wrong number of arguments for 'msetnx' command"
    );
    assert_eq!(q(&mut c, &["MSETNX", "x", "1", "a", "9"]), int(0));
    assert_eq!(q(&mut c, &["EXISTS", "x"]), int(0));
    assert_eq!(q(&mut c, &["MSETNX", "x", "1", "y", "2", "x", "3"]), int(1));
    assert_eq!(
        q(&mut c, &["MGET", "x", "y"]),
        Value::Array(vec![bulk("3"), bulk("2")])
    );
    // MSET clears TTLs.
    q(&mut c, &["SET", "t", "v", "EX", "100"]);
    q(&mut c, &["MSET", "t", "w"]);
    assert_eq!(q(&mut c, &["TTL", "t"]), int(-1));

    // Many keys across shards, atomically.
    let mut args = vec!["MSET".to_string()];
    for i in 0..200 {
        args.push(format!("key:{i}"));
        args.push(format!("val:{i}"));
    }
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(q(&mut c, &a), ok());
    let keys: Vec<String> = (0..200).map(|i| format!("key:{i}")).collect();
    let mut mget = vec!["MGET"];
    mget.extend(keys.iter().map(|s| s.as_str()));
    let Value::Array(vals) = q(&mut c, &mget) else {
        panic!()
    };
    for (i, v) in vals.iter().enumerate() {
        assert_eq!(*v, bulk(&format!("val:{i}")));
    }
}

#[test]
fn mset_is_atomic_under_concurrency() {
    let s = Server::tern(&[]);
    let port = s.port;
    let writers: Vec<_> = (0..4)
        .map(|w| {
            std::thread::spawn(move || {
                let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                    .unwrap()
                    .get_connection()
                    .unwrap();
                for i in 0..300 {
                    let v = format!("{w}-{i}");
                    let mut cmd = redis::cmd("MSET");
                    for k in 0..8 {
                        cmd.arg(format!("atom{k}")).arg(&v);
                    }
                    let _: () = cmd.query(&mut c).unwrap();
                }
            })
        })
        .collect();
    let mut c = s.conn();
    for _ in 0..300 {
        let mut cmd = redis::cmd("MGET");
        for k in 0..8 {
            cmd.arg(format!("atom{k}"));
        }
        let vals: Vec<Option<String>> = cmd.query(&mut c).unwrap();
        assert!(
            vals.windows(2).all(|w| w[0] == w[1]),
            "torn MSET seen: {vals:?}"
        );
    }
    for w in writers {
        w.join().unwrap();
    }
}

#[test]
fn counters() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(q(&mut c, &["INCR", "n"]), int(1));
    assert_eq!(q(&mut c, &["INCR", "n"]), int(2));
    assert_eq!(q(&mut c, &["DECR", "n"]), int(1));
    assert_eq!(q(&mut c, &["DECR", "m"]), int(-1));
    assert_eq!(q(&mut c, &["INCRBY", "n", "17179869184"]), int(17179869185));
    assert_eq!(q(&mut c, &["DECRBY", "n", "17179869186"]), int(-1));
    assert_eq!(q(&mut c, &["DECRBY", "fresh", "5"]), int(-5));
    q(&mut c, &["SET", "n", "9223372036854775806"]);
    assert_eq!(q(&mut c, &["INCR", "n"]), int(i64::MAX));
    assert_eq!(
        err(&mut c, &["INCR", "n"]),
        "ERR increment or decrement would overflow"
    );
    q(&mut c, &["SET", "n", "-9223372036854775808"]);
    assert_eq!(
        err(&mut c, &["DECR", "n"]),
        "ERR increment or decrement would overflow"
    );
    assert_eq!(
        err(&mut c, &["DECRBY", "n", "-9223372036854775808"]),
        "ERR decrement would overflow"
    );
    for bad in [" 11", "11 ", " 11 ", "1.5", "abc", "", "+1", "01"] {
        q(&mut c, &["SET", "s", bad]);
        assert_eq!(err(&mut c, &["INCR", "s"]), NOT_INT, "{bad:?}");
    }
    assert_eq!(err(&mut c, &["INCRBY", "n", "1.5"]), NOT_INT);
    assert_eq!(
        err(&mut c, &["INCRBY", "n", "99999999999999999999"]),
        NOT_INT
    );
    assert_eq!(
        err(&mut c, &["INCR"]),
        "ERR wrong number of arguments for 'incr' command"
    );
    // Counters keep the TTL.
    q(&mut c, &["SET", "t", "5", "EX", "100"]);
    assert_eq!(q(&mut c, &["INCR", "t"]), int(6));
    let Value::Int(ttl) = q(&mut c, &["TTL", "t"]) else {
        panic!()
    };
    assert!(ttl > 90);
    // A value made by APPEND still counts.
    q(&mut c, &["SET", "ap", "1"]);
    q(&mut c, &["APPEND", "ap", "2"]);
    assert_eq!(q(&mut c, &["INCR", "ap"]), int(13));
}

#[test]
fn incrbyfloat_matches_long_double() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(q(&mut c, &["INCRBYFLOAT", "f", "0.1"]), bulk("0.1"));
    assert_eq!(q(&mut c, &["INCRBYFLOAT", "f", "0.2"]), bulk("0.3"));
    q(&mut c, &["SET", "f", "10.5"]);
    assert_eq!(q(&mut c, &["INCRBYFLOAT", "f", "0.1"]), bulk("10.6"));
    q(&mut c, &["SET", "f", "17179869184"]);
    assert_eq!(
        q(&mut c, &["INCRBYFLOAT", "f", "1.5"]),
        bulk("17179869185.5")
    );
    q(&mut c, &["SET", "f", "5.0e3"]);
    assert_eq!(q(&mut c, &["INCRBYFLOAT", "f", "2.0e2"]), bulk("5200"));
    assert_eq!(q(&mut c, &["GET", "f"]), bulk("5200"));
    q(&mut c, &["SET", "f", "1"]);
    assert_eq!(q(&mut c, &["INCRBYFLOAT", "f", "-1.1"]), bulk("-0.1"));
    assert_eq!(q(&mut c, &["INCRBYFLOAT", "f", "0.1"]), bulk("0"));
    assert_eq!(q(&mut c, &["INCRBYFLOAT", "f", "1e3"]), bulk("1000"));
    assert_eq!(q(&mut c, &["INCRBYFLOAT", "f", "0x10"]), bulk("1016"));
    assert_eq!(
        err(&mut c, &["INCRBYFLOAT", "f", "+inf"]),
        "ERR increment would produce NaN or Infinity"
    );
    for bad in ["nan", " 1", "1 ", "abc", "", "1e99999"] {
        assert_eq!(
            err(&mut c, &["INCRBYFLOAT", "f", bad]),
            NOT_FLOAT,
            "{bad:?}"
        );
    }
    for bad in ["    11", "11    ", " 11 ", "x"] {
        q(&mut c, &["SET", "g", bad]);
        assert_eq!(
            err(&mut c, &["INCRBYFLOAT", "g", "1"]),
            NOT_FLOAT,
            "{bad:?}"
        );
    }
    // An embedded NUL is not a number.
    q(&mut c, &["SET", "z", "1"]);
    q(&mut c, &["SETRANGE", "z", "2", "2"]);
    assert_eq!(err(&mut c, &["INCRBYFLOAT", "z", "1"]), NOT_FLOAT);
    // The TTL survives.
    q(&mut c, &["SET", "t", "1.5", "EX", "100"]);
    assert_eq!(q(&mut c, &["INCRBYFLOAT", "t", "1.5"]), bulk("3"));
    let Value::Int(ttl) = q(&mut c, &["TTL", "t"]) else {
        panic!()
    };
    assert!(ttl > 90);
    // RESP3 still gets a bulk string.
    let mut c3 = s.conn_resp3();
    assert_eq!(q(&mut c3, &["INCRBYFLOAT", "r3", "2.5"]), bulk("2.5"));
}

#[test]
fn append_strlen_ranges() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(q(&mut c, &["APPEND", "a", "hello"]), int(5));
    assert_eq!(q(&mut c, &["APPEND", "a", " world"]), int(11));
    assert_eq!(q(&mut c, &["GET", "a"]), bulk("hello world"));
    assert_eq!(q(&mut c, &["STRLEN", "a"]), int(11));
    assert_eq!(q(&mut c, &["STRLEN", "nokey"]), int(0));
    q(&mut c, &["SET", "i", "-555"]);
    assert_eq!(q(&mut c, &["STRLEN", "i"]), int(4));

    q(&mut c, &["SET", "r", "Hello World"]);
    assert_eq!(q(&mut c, &["GETRANGE", "r", "0", "3"]), bulk("Hell"));
    assert_eq!(q(&mut c, &["GETRANGE", "r", "-4", "-1"]), bulk("orld"));
    assert_eq!(q(&mut c, &["GETRANGE", "r", "5", "3"]), bulk(""));
    assert_eq!(q(&mut c, &["GETRANGE", "r", "5", "5000"]), bulk(" World"));
    assert_eq!(
        q(&mut c, &["GETRANGE", "r", "-5000", "10000"]),
        bulk("Hello World")
    );
    assert_eq!(
        q(&mut c, &["GETRANGE", "r", "0", "4294967297"]),
        bulk("Hello World")
    );
    assert_eq!(q(&mut c, &["GETRANGE", "nokey", "0", "-1"]), bulk(""));
    assert_eq!(q(&mut c, &["GETRANGE", "i", "1", "2"]), bulk("55"));
    assert_eq!(err(&mut c, &["GETRANGE", "r", "a", "1"]), NOT_INT);
    assert_eq!(q(&mut c, &["SUBSTR", "r", "-1", "-3"]), bulk(""));
    assert_eq!(q(&mut c, &["SUBSTR", "r", "0", "0"]), bulk("H"));

    assert_eq!(q(&mut c, &["SETRANGE", "sr", "1", "foo"]), int(4));
    assert_eq!(q(&mut c, &["GET", "sr"]), bulk("\0foo"));
    assert_eq!(q(&mut c, &["SETRANGE", "none", "0", ""]), int(0));
    assert_eq!(q(&mut c, &["EXISTS", "none"]), int(0));
    q(&mut c, &["SET", "sr", "foo"]);
    assert_eq!(q(&mut c, &["SETRANGE", "sr", "4", "bar"]), int(7));
    assert_eq!(q(&mut c, &["GET", "sr"]), bulk("foo\0bar"));
    assert_eq!(q(&mut c, &["SETRANGE", "sr", "0", ""]), int(7));
    q(&mut c, &["SET", "n", "1234"]);
    assert_eq!(q(&mut c, &["SETRANGE", "n", "1", "3"]), int(4));
    assert_eq!(q(&mut c, &["GET", "n"]), bulk("1334"));
    assert_eq!(
        err(&mut c, &["SETRANGE", "sr", "-1", "x"]),
        "ERR offset is out of range"
    );
    assert_eq!(err(&mut c, &["SETRANGE", "sr", "x", "x"]), NOT_INT);
    for off in ["536870908", "9223372036854775807"] {
        assert_eq!(
            err(&mut c, &["SETRANGE", "sr", off, "world"]),
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
        );
        assert_eq!(
            err(&mut c, &["SETRANGE", "fresh", off, "world"]),
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
        );
    }
    assert_eq!(q(&mut c, &["EXISTS", "fresh"]), int(0));
}

#[test]
fn size_limit_follows_proto_max_bulk_len() {
    let s = Server::tern(&["--proto-max-bulk-len", "1mb"]);
    let mut c = s.conn();
    let chunk = "x".repeat(600 * 1024);
    assert_eq!(q(&mut c, &["APPEND", "a", &chunk]), int(600 * 1024));
    assert_eq!(
        err(&mut c, &["APPEND", "a", &chunk]),
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    );
    assert_eq!(q(&mut c, &["STRLEN", "a"]), int(600 * 1024));
    assert_eq!(
        err(&mut c, &["SETRANGE", "a", "1048575", "xy"]),
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    );
    assert_eq!(q(&mut c, &["SETRANGE", "a", "1048575", "x"]), int(1 << 20));
    // LCS refuses tables bigger than the limit.
    q(&mut c, &["SET", "l1", &"a".repeat(1000)]);
    q(&mut c, &["SET", "l2", &"b".repeat(1000)]);
    assert_eq!(
        err(&mut c, &["LCS", "l1", "l2"]),
        "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
    );
}

#[test]
fn lcs() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["MSET", "a", "ohmytext", "b", "mynewtext"]);
    assert_eq!(q(&mut c, &["LCS", "a", "b"]), bulk("mytext"));
    assert_eq!(q(&mut c, &["LCS", "a", "b", "LEN"]), int(6));
    let range = |x: i64, y: i64| Value::Array(vec![int(x), int(y)]);
    assert_eq!(
        q(&mut c, &["LCS", "a", "b", "IDX"]),
        Value::Array(vec![
            bulk("matches"),
            Value::Array(vec![
                Value::Array(vec![range(4, 7), range(5, 8)]),
                Value::Array(vec![range(2, 3), range(0, 1)]),
            ]),
            bulk("len"),
            int(6),
        ])
    );
    assert_eq!(
        q(
            &mut c,
            &["LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"]
        ),
        Value::Array(vec![
            bulk("matches"),
            Value::Array(vec![Value::Array(vec![range(4, 7), range(5, 8), int(4)])]),
            bulk("len"),
            int(6),
        ])
    );
    assert_eq!(q(&mut c, &["LCS", "a", "missing"]), bulk(""));
    assert_eq!(q(&mut c, &["LCS", "missing", "missing2", "LEN"]), int(0));
    assert_eq!(
        err(&mut c, &["LCS", "a", "b", "LEN", "IDX"]),
        "ERR If you want both the length and indexes, please just use IDX."
    );
    assert_eq!(err(&mut c, &["LCS", "a", "b", "MINMATCHLEN"]), SYNTAX);
    assert_eq!(err(&mut c, &["LCS", "a", "b", "MINMATCHLEN", "x"]), NOT_INT);
    assert_eq!(err(&mut c, &["LCS", "a", "b", "foo"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["LCS", "a"]),
        "ERR wrong number of arguments for 'lcs' command"
    );
    // RESP3 gets a real map.
    let mut c3 = s.conn_resp3();
    let v = q(&mut c3, &["LCS", "a", "b", "IDX"]);
    let Value::Map(pairs) = v else {
        panic!("expected a map, got {v:?}")
    };
    assert_eq!(pairs[1], (bulk("len"), int(6)));
}

#[test]
fn command_info_for_the_family() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    // (name, arity, first key, last key, step)
    let expect = [
        ("get", 2, 1, 1, 1),
        ("set", -3, 1, 1, 1),
        ("setnx", 3, 1, 1, 1),
        ("setex", 4, 1, 1, 1),
        ("psetex", 4, 1, 1, 1),
        ("mget", -2, 1, -1, 1),
        ("mset", -3, 1, -1, 2),
        ("msetnx", -3, 1, -1, 2),
        ("getset", 3, 1, 1, 1),
        ("getdel", 2, 1, 1, 1),
        ("getex", -2, 1, 1, 1),
        ("append", 3, 1, 1, 1),
        ("strlen", 2, 1, 1, 1),
        ("incr", 2, 1, 1, 1),
        ("decr", 2, 1, 1, 1),
        ("incrby", 3, 1, 1, 1),
        ("decrby", 3, 1, 1, 1),
        ("incrbyfloat", 3, 1, 1, 1),
        ("getrange", 4, 1, 1, 1),
        ("setrange", 4, 1, 1, 1),
        ("substr", 4, 1, 1, 1),
        ("lcs", -3, 1, 2, 1),
    ];
    for (name, arity, first, last, step) in expect {
        let Value::Array(info) = q(&mut c, &["COMMAND", "INFO", name]) else {
            panic!()
        };
        let Value::Array(entry) = &info[0] else {
            panic!("{name}: no entry")
        };
        assert_eq!(entry[0], bulk(name), "{name}");
        assert_eq!(entry[1], int(arity), "{name}");
        assert_eq!(entry[3], int(first), "{name}");
        assert_eq!(entry[4], int(last), "{name}");
        assert_eq!(entry[5], int(step), "{name}");
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
    let script: &[&[&str]] = &[
        &["SET", "s", "hello"],
        &["SET", "s", "x", "NX", "GET"],
        &["SET", "s", "y", "XX", "GET"],
        &["SET", "s", "z", "KEEPTTL", "KEEPTTL", "GET", "GET"],
        &["SET", "s", "z", "EX", "10", "KEEPTTL"],
        &["SET", "s", "z", "PX", "10", "PX", "abc"],
        &["SET", "s", "z", "PX"],
        &["SET", "s", "z", "EXAT", "0"],
        &["SET", "s", "z", "NX", "NX"],
        &["SET", "s", "z", "XX", "NX"],
        &["SETNX", "s", "1"],
        &["SETEX", "s", "-1", "v"],
        &["PSETEX", "s", "abc", "v"],
        &["GETSET", "s", "123"],
        &["INCR", "s"],
        &["INCRBY", "s", "-200"],
        &["DECRBY", "s", "9223372036854775807"],
        &["DECRBY", "s", "9223372036854775807"],
        &["DECRBY", "s", "-9223372036854775808"],
        &["INCRBY", "s", "x"],
        &["INCRBYFLOAT", "s", "0.1"],
        &["INCRBYFLOAT", "s", "1e400"],
        &["INCRBYFLOAT", "s", "-1e400"],
        &["INCRBYFLOAT", "fl", "1.23456789012345678"],
        &["INCRBYFLOAT", "fl", "0.00000000000000001"],
        &["INCRBYFLOAT", "fl", "-5e-5"],
        &["INCRBYFLOAT", "fl", "1e30"],
        &["INCRBYFLOAT", "fl", "-1e30"],
        &["INCRBYFLOAT", "fl2", "3.0"],
        &["INCRBYFLOAT", "fl2", "-3"],
        &["INCRBYFLOAT", "fl3", "1.5e-7"],
        &["INCRBYFLOAT", "fl4", "123456789.987654321"],
        &["INCRBYFLOAT", "fl4", "inf"],
        &["INCRBYFLOAT", "fl4", "-infinity"],
        &["INCRBYFLOAT", "fl4", "NaN"],
        &["INCRBYFLOAT", "fl4", "0X1P4"],
        &["INCRBYFLOAT", "fl4", "1e-5000"],
        &["INCR", "fl4"],
        &["APPEND", "ap", "12"],
        &["INCR", "ap"],
        &["APPEND", "ap", " "],
        &["INCR", "ap"],
        &["INCRBYFLOAT", "ap", "1"],
        &["STRLEN", "ap"],
        &["GETRANGE", "ap", "-100", "-50"],
        &["GETRANGE", "ap", "-1", "-2"],
        &["GETRANGE", "ap", "2", "1"],
        &["GETRANGE", "ap", "-2", "100"],
        &[
            "GETRANGE",
            "ap",
            "9223372036854775807",
            "-9223372036854775808",
        ],
        &["SUBSTR", "ap", "0", "-1"],
        &["SETRANGE", "ap", "10", "zz"],
        &["GET", "ap"],
        &["SETRANGE", "ap", "0", ""],
        &["SETRANGE", "nope", "5", ""],
        &["EXISTS", "nope"],
        &["MSET", "m1", "a", "m2"],
        &["MSET", "m1", "a", "m2", "b", "m1", "c"],
        &["MGET", "m1", "m2", "m3", "m1"],
        &["MSETNX", "m3", "x", "m1", "y"],
        &["MSETNX", "m3", "x", "m4", "y", "m3", "z"],
        &["MGET", "m3", "m4"],
        &["GETDEL", "m3"],
        &["GETDEL", "m3"],
        &["GETEX", "m4", "PERSIST"],
        &["GETEX", "m4", "PX", "0"],
        &["GETEX", "m4", "FOO"],
        &["GETEX", "m4", "EX", "10", "EX"],
        &["GETEX", "m4", "PXAT", "1"],
        &["EXISTS", "m4"],
        &["MSET", "l1", "ohmytext", "l2", "mynewtext"],
        &["LCS", "l1", "l2"],
        &["LCS", "l1", "l2", "LEN"],
        &["LCS", "l1", "l2", "IDX"],
        &["LCS", "l1", "l2", "IDX", "WITHMATCHLEN"],
        &["LCS", "l1", "l2", "IDX", "MINMATCHLEN", "3", "WITHMATCHLEN"],
        &["LCS", "l1", "l2", "IDX", "MINMATCHLEN", "-3"],
        &["LCS", "l1", "l2", "LEN", "IDX"],
        &["LCS", "l1", "l2", "MINMATCHLEN"],
        &["LCS", "l1", "nothing"],
        &[
            "SET",
            "rna1",
            "CACCTTCCCAGGTAACAAACCAACCAACTTTCGATCTCTTGTAG",
        ],
        &[
            "SET",
            "rna2",
            "ATTAAAGGTTTATACCTTCCCAGGTAACAAACCAACCAACTTTCGA",
        ],
        &["LCS", "rna1", "rna2", "IDX", "WITHMATCHLEN"],
        &["SET", "x", "1", "GET", "EX", "100", "NX"],
        &["SET", "x", "2", "PXAT", "1", "GET"],
        &["GET", "x"],
        &["STRLEN", "x"],
        &["MGET"],
        &["STRLEN"],
        &["GETRANGE", "x", "0"],
        &["INCRBYFLOAT", "x"],
        &["SETRANGE", "x", "-1", "a"],
        &["SET", "x", "1", "PX", "9223372036854775807"],
        &["SET", "x", "1", "EXAT", "9223372036854775"],
        &["SET", "x", "1", "EXAT", "9223372036854776"],
        &["GETEX", "x", "PXAT", "9223372036854775807"],
        &["INCRBYFLOAT", "huge", "1e4000"],
        &["INCRBYFLOAT", "huge", "-1e4000"],
        &["INCRBYFLOAT", "tiny", "1e-20"],
        &["INCRBYFLOAT", "tiny", "-1e-20"],
        &["INCRBYFLOAT", "neg", "-0.0"],
        &["INCRBYFLOAT", "neg", "-1.5"],
        &["INCRBYFLOAT", "ext", "1.1"],
        &["INCRBYFLOAT", "ext", "2.2"],
        &["INCRBYFLOAT", "ext", "3.3"],
        &["INCRBYFLOAT", "ext", "9999999999999999.5"],
    ];
    for cmd in script {
        let (a, b) = crate::common::both(&mut tc, &mut rc, cmd);
        assert_eq!(
            norm(a),
            norm(b),
            "reply to {cmd:?} differs (left: tern, right: redis)"
        );
    }
    // The same shapes over RESP3 (maps, nulls).
    let mut rc3 = r.conn_resp3();
    let mut tc3 = t.conn_resp3();
    let resp3: &[&[&str]] = &[
        &["GET", "nothing"],
        &["MGET", "l1", "nothing"],
        &["SET", "nothing", "v", "XX"],
        &["LCS", "l1", "l2", "IDX", "WITHMATCHLEN"],
        &["LCS", "l1", "l2", "LEN"],
        &["INCRBYFLOAT", "r3", "1.25"],
        &["GETEX", "nothing"],
    ];
    for cmd in resp3 {
        let (a, b) = crate::common::both(&mut tc3, &mut rc3, cmd);
        assert_eq!(
            norm(a),
            norm(b),
            "RESP3 reply to {cmd:?} differs (left: tern, right: redis)"
        );
    }
}

#[test]
fn wrongtype_against_other_types() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let a: Vec<&[u8]> = vec![b"RPUSH", b"list", b"x"];
    if let Err(e) = run(&mut c, &a) {
        eprintln!("lists not available yet ({e}); skipping");
        return;
    }
    const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for cmd in [
        &["GET", "list"][..],
        &["SET", "list", "v", "GET"],
        &["GETSET", "list", "v"],
        &["GETDEL", "list"],
        &["GETEX", "list", "PERSIST"],
        &["APPEND", "list", "v"],
        &["STRLEN", "list"],
        &["INCR", "list"],
        &["DECRBY", "list", "2"],
        &["INCRBYFLOAT", "list", "1.5"],
        &["GETRANGE", "list", "0", "-1"],
        &["SETRANGE", "list", "0", "v"],
    ] {
        assert_eq!(err(&mut c, cmd), WT, "{cmd:?}");
    }
    // Argument errors come before the type check where Redis checks them first.
    assert_eq!(err(&mut c, &["INCRBY", "list", "x"]), NOT_INT);
    assert_eq!(
        err(&mut c, &["SETRANGE", "list", "-1", "v"]),
        "ERR offset is out of range"
    );
    assert_eq!(
        err(&mut c, &["LCS", "list", "nokey"]),
        "ERR The specified keys must contain string values"
    );
    assert_eq!(
        q(&mut c, &["MGET", "list", "nokey"]),
        Value::Array(vec![Value::Nil, Value::Nil])
    );
    assert_eq!(q(&mut c, &["SETNX", "list", "v"]), int(0));
    assert_eq!(q(&mut c, &["MSETNX", "list", "v"]), int(0));
    // Plain SET replaces any type.
    assert_eq!(q(&mut c, &["SET", "list", "v"]), ok());
    assert_eq!(q(&mut c, &["GET", "list"]), bulk("v"));
}

//! Sorted-set family against the real binary: every command, error texts, encodings and their
//! conversions (also after CONFIG SET), RESP2 and RESP3 reply shapes, score formatting, and a
//! differential run against Debian's redis-server when it is installed.
use crate::common::{check, Server};

/// Replies rendered compactly; every nil is `(nil)`.
type Raw = crate::common::Raw;

#[test]
fn zadd_options_and_errors() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    check(
        &mut c,
        &[
            ("ZADD z 1 a 2 b 3 c", ":3"),
            ("ZADD z 1 a", ":0"),
            ("ZADD z CH 5 a 6 d", ":2"),
            ("ZADD z NX 100 a 7 e", ":1"),
            ("ZSCORE z a", "5"),
            ("ZADD z XX 9 a 9 zz", ":0"),
            ("ZSCORE z a", "9"),
            ("ZSCORE z zz", "(nil)"),
            ("ZADD z GT 1 a", ":0"),
            ("ZADD z GT CH 10 a", ":1"),
            ("ZADD z LT CH 11 a", ":0"),
            ("ZADD z LT CH 2 a", ":1"),
            ("ZADD z INCR 3 a", "5"),
            ("ZADD z NX INCR 3 a", "(nil)"),
            ("ZADD z XX INCR 3 nosuch", "(nil)"),
            ("ZADD z GT INCR -1 a", "(nil)"),
            ("ZINCRBY z 2.5 a", "7.5"),
            ("ZINCRBY z -7.5 a", "0"),
            ("ZINCRBY newz 1 m", "1"),
            (
                "ZADD z 1",
                "!ERR wrong number of arguments for 'zadd' command",
            ),
            ("ZADD z 1 a 2", "!ERR syntax error"),
            ("ZADD z NX 1", "!ERR syntax error"),
            (
                "ZADD z NX XX 1 a",
                "!ERR XX and NX options at the same time are not compatible",
            ),
            (
                "ZADD z GT LT 1 a",
                "!ERR GT, LT, and/or NX options at the same time are not compatible",
            ),
            (
                "ZADD z GT NX 1 a",
                "!ERR GT, LT, and/or NX options at the same time are not compatible",
            ),
            (
                "ZADD z INCR 1 a 2 b",
                "!ERR INCR option supports a single increment-element pair",
            ),
            ("ZADD z abc a", "!ERR value is not a valid float"),
            ("ZADD z nan a", "!ERR value is not a valid float"),
            ("ZADD z 1e400 a", "!ERR value is not a valid float"),
            ("ZINCRBY z abc a", "!ERR value is not a valid float"),
            ("ZADD z +inf a", ":0"),
            (
                "ZINCRBY z -inf a",
                "!ERR resulting score is not a number (NaN)",
            ),
            (
                "ZADD z INCR -inf a",
                "!ERR resulting score is not a number (NaN)",
            ),
            ("ZSCORE z a", "inf"),
            ("ZADD xz XX 1 a", ":0"),
            ("EXISTS xz", ":0"),
            ("SET str x", "OK"),
            (
                "ZADD str 1 a",
                "!WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            (
                "ZSCORE str a",
                "!WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            (
                "ZADD z",
                "!ERR wrong number of arguments for 'zadd' command",
            ),
        ],
    );
    // A failed variadic ZADD adds nothing.
    check(
        &mut c,
        &[
            ("DEL v", ":0"),
            ("ZADD v 1 a 2 b x c", "!ERR value is not a valid float"),
            ("EXISTS v", ":0"),
        ],
    );
}

#[test]
fn score_formatting() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    let cases = [
        ("1", "1"),
        ("1.0", "1"),
        ("-0", "0"),
        ("0.1", "0.1"),
        ("1.1", "1.1"),
        ("3.14159", "3.14159"),
        ("1e20", "1e+20"),
        ("1.5e-7", "1.5e-7"),
        ("-0.00001", "-0.00001"),
        ("0.000001", "0.000001"),
        ("123456789012", "123456789012"),
        ("4611686018427387904", "4611686018427387904"),
        ("9223372036854775807", "9223372036854776000"),
        ("1e300", "1e+300"),
        ("0x10", "16"),
        (".5", "0.5"),
        ("5.", "5"),
        ("+inf", "inf"),
        ("-INF", "-inf"),
        ("inf", "inf"),
        ("0.1e1", "1"),
        ("12345.6789", "12345.6789"),
    ];
    for (i, (input, want)) in cases.iter().enumerate() {
        let m = format!("m{i}");
        c.qa(&[b"ZADD", b"f", input.as_bytes(), m.as_bytes()]);
        assert_eq!(c.q(&format!("ZSCORE f {m}")), *want, "score {input}");
        // the skiplist encoding prints the same
        c.qa(&[b"ZADD", b"fbig", input.as_bytes(), m.as_bytes()]);
    }
    c.q("CONFIG SET zset-max-listpack-entries 0");
    c.q("ZADD g 1 x -0 negzero");
    assert_eq!(c.q("OBJECT ENCODING g"), "skiplist");
    // a listpack stores -0 as the integer 0; a skiplist keeps the sign
    assert_eq!(c.q("ZSCORE g negzero"), "-0");
    c.q("CONFIG SET zset-max-listpack-entries 128");
    // RESP3 doubles
    c.q("HELLO 3");
    assert_eq!(c.q("ZSCORE f m4"), ",1.1");
    assert_eq!(c.q("ZSCORE f m17"), ",inf");
    assert_eq!(c.q("ZSCORE f m18"), ",-inf");
    assert_eq!(c.q("ZINCRBY f 1 m0"), ",2");
}

#[test]
fn reads_and_ranges() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    c.q("ZADD z 1 a 2 b 3 c 4 d 5 e");
    check(
        &mut c,
        &[
            ("ZCARD z", ":5"),
            ("ZCARD nokey", ":0"),
            ("ZCOUNT z 2 4", ":3"),
            ("ZCOUNT z (2 (4", ":1"),
            ("ZCOUNT z -inf +inf", ":5"),
            ("ZCOUNT z x 1", "!ERR min or max is not a float"),
            ("ZCOUNT z (2 (x", "!ERR min or max is not a float"),
            ("ZRANK z c", ":2"),
            ("ZREVRANK z c", ":2"),
            ("ZRANK z a", ":0"),
            ("ZREVRANK z a", ":4"),
            ("ZRANK z nosuch", "(nil)"),
            ("ZRANK z c WITHSCORE", "[:2,3]"),
            ("ZREVRANK z e WITHSCORE", "[:0,5]"),
            ("ZRANK z nosuch WITHSCORE", "(nil)"),
            ("ZRANK nokey a WITHSCORE", "(nil)"),
            ("ZRANK z a WITHSCORES", "!ERR syntax error"),
            (
                "ZRANK z a WITHSCORE x",
                "!ERR wrong number of arguments for 'zrank' command",
            ),
            ("ZMSCORE z a nosuch e", "[1,(nil),5]"),
            ("ZMSCORE nokey a b", "[(nil),(nil)]"),
            ("ZRANGE z 0 -1", "[a,b,c,d,e]"),
            ("ZRANGE z 1 2 WITHSCORES", "[b,2,c,3]"),
            ("ZRANGE z -2 -1", "[d,e]"),
            ("ZRANGE z 3 1", "[]"),
            ("ZRANGE z 10 20", "[]"),
            ("ZRANGE z -100 0", "[a]"),
            ("ZRANGE z 0 1 REV", "[e,d]"),
            ("ZREVRANGE z 0 1 WITHSCORES", "[e,5,d,4]"),
            ("ZRANGE z (1 3 BYSCORE", "[b,c]"),
            ("ZRANGE z 3 (1 BYSCORE REV", "[c,b]"),
            ("ZRANGE z -inf +inf BYSCORE LIMIT 1 2", "[b,c]"),
            ("ZRANGE z -inf +inf BYSCORE LIMIT 1 -1", "[b,c,d,e]"),
            ("ZRANGE z -inf +inf BYSCORE LIMIT -1 2", "[]"),
            ("ZRANGE z -inf +inf BYSCORE LIMIT 10 2", "[]"),
            ("ZRANGE z +inf -inf BYSCORE REV LIMIT 1 2 WITHSCORES", "[d,4,c,3]"),
            ("ZRANGEBYSCORE z 2 4 WITHSCORES LIMIT 0 1", "[b,2]"),
            ("ZREVRANGEBYSCORE z 4 2", "[d,c,b]"),
            ("ZRANGEBYSCORE z 5 1", "[]"),
            ("ZRANGEBYSCORE z (3 (3", "[]"),
            (
                "ZRANGE z 0 1 LIMIT 0 1",
                "!ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
            ),
            (
                "ZRANGE z - + BYLEX WITHSCORES",
                "!ERR syntax error, WITHSCORES not supported in combination with BYLEX",
            ),
            ("ZRANGE z 0 1 FOO", "!ERR syntax error"),
            ("ZRANGE z a 1", "!ERR value is not an integer or out of range"),
            ("ZRANGE nokey 0 -1", "[]"),
            ("ZRANGEBYSCORE z a b", "!ERR min or max is not a float"),
        ],
    );
    c.q("ZADD l 0 a 0 b 0 c 0 d 0 e");
    check(
        &mut c,
        &[
            ("ZRANGEBYLEX l - +", "[a,b,c,d,e]"),
            ("ZRANGEBYLEX l [b (d", "[b,c]"),
            ("ZRANGEBYLEX l (b +", "[c,d,e]"),
            ("ZREVRANGEBYLEX l + - LIMIT 1 2", "[d,c]"),
            ("ZRANGE l [e [a BYLEX REV", "[e,d,c,b,a]"),
            ("ZRANGEBYLEX l + -", "[]"),
            ("ZLEXCOUNT l [b [d", ":3"),
            ("ZLEXCOUNT l - +", ":5"),
            (
                "ZRANGEBYLEX l a b",
                "!ERR min or max not valid string range item",
            ),
            (
                "ZLEXCOUNT l [a b",
                "!ERR min or max not valid string range item",
            ),
            (
                "ZLEXCOUNT l ++ -",
                "!ERR min or max not valid string range item",
            ),
        ],
    );
}

#[test]
fn removals_and_pops() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    check(
        &mut c,
        &[
            ("ZADD z 1 a 2 b 3 c 4 d 5 e", ":5"),
            ("ZREM z a nosuch", ":1"),
            ("ZREM nokey a", ":0"),
            ("ZREMRANGEBYRANK z 0 0", ":1"),
            ("ZREMRANGEBYRANK z 5 10", ":0"),
            (
                "ZREMRANGEBYRANK z a 1",
                "!ERR value is not an integer or out of range",
            ),
            ("ZREMRANGEBYSCORE z (3 4", ":1"),
            ("ZRANGE z 0 -1", "[c,e]"),
            ("ZREMRANGEBYSCORE z x 1", "!ERR min or max is not a float"),
            ("ZREMRANGEBYRANK z 0 -1", ":2"),
            ("EXISTS z", ":0"),
            ("ZADD l 0 a 0 b 0 c", ":3"),
            ("ZREMRANGEBYLEX l [a (c", ":2"),
            ("ZREMRANGEBYLEX l - +", ":1"),
            ("EXISTS l", ":0"),
            ("ZADD p 1 a 2 b 3 c 4 d", ":4"),
            ("ZPOPMIN p", "[a,1]"),
            ("ZPOPMAX p 2", "[d,4,c,3]"),
            ("ZPOPMIN p 0", "[]"),
            (
                "ZPOPMIN p -1",
                "!ERR value is out of range, must be positive",
            ),
            ("ZPOPMIN p 1 2", "!ERR syntax error"),
            ("ZPOPMIN nokey", "[]"),
            ("ZPOPMAX p 10", "[b,2]"),
            ("EXISTS p", ":0"),
            ("ZADD m1 1 a 2 b", ":2"),
            ("ZMPOP 2 nokey m1 MAX COUNT 5", "[m1,[[b,2],[a,1]]]"),
            ("ZMPOP 1 m1 MIN", "(nil)"),
            ("ZMPOP 0 m1 MIN", "!ERR numkeys should be greater than 0"),
            ("ZMPOP x m1 MIN", "!ERR numkeys should be greater than 0"),
            ("ZMPOP 1 m1 FOO", "!ERR syntax error"),
            ("ZMPOP 2 m1 MIN", "!ERR syntax error"),
            ("ZMPOP 9223372036854775807 m1 MIN", "!ERR syntax error"),
            ("BZMPOP 0 9223372036854775807 m1 MIN", "!ERR syntax error"),
            (
                "ZMPOP 1 m1 MIN COUNT 0",
                "!ERR count should be greater than 0",
            ),
            ("ZMPOP 1 m1 MIN COUNT 1 COUNT 1", "!ERR syntax error"),
            ("ZADD b1 1 a 2 b", ":2"),
            ("BZPOPMIN nokey b1 0", "[b1,a,1]"),
            ("BZPOPMAX b1 0.5", "[b1,b,2]"),
            ("BZPOPMIN b1 -1", "!ERR timeout is negative"),
            (
                "BZPOPMIN b1 x",
                "!ERR timeout is not a float or out of range",
            ),
            ("ZADD b2 1 a 2 b 3 c", ":3"),
            ("BZMPOP 0 1 b2 MAX COUNT 2", "[b2,[[c,3],[b,2]]]"),
            (
                "BZMPOP x 1 b2 MAX",
                "!ERR timeout is not a float or out of range",
            ),
            ("BZMPOP 0 0 b2 MAX", "!ERR numkeys should be greater than 0"),
            ("SET str x", "OK"),
            (
                "BZPOPMIN str 0",
                "!WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            (
                "ZMPOP 1 str MIN",
                "!WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
        ],
    );
    // RESP3 shapes
    c.q("HELLO 3");
    check(
        &mut c,
        &[
            ("ZADD r 1 a 2 b 3 c", ":3"),
            ("ZPOPMIN r", "[a,,1]"),
            ("ZPOPMIN r 1", "[[b,,2]]"),
            ("BZPOPMAX r 0", "[r,c,,3]"),
            ("ZADD r 1 a 2 b", ":2"),
            ("ZMPOP 1 r MIN COUNT 1", "[r,[[a,,1]]]"),
            ("ZRANGE r 0 -1 WITHSCORES", "[[b,,2]]"),
            ("ZSCORE r b", ",2"),
            ("ZMSCORE r b x", "[,2,(nil)]"),
            ("ZRANK r b WITHSCORE", "[:0,,2]"),
            ("ZINCRBY r 0.5 b", ",2.5"),
            ("ZMPOP 1 nokey MIN", "(nil)"),
        ],
    );
}

#[test]
fn set_operations() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    c.q("ZADD a 1 x 2 y 3 z");
    c.q("ZADD b 10 y 20 z 30 w");
    check(
        &mut c,
        &[
            ("ZUNION 2 a b WITHSCORES", "[x,1,y,12,z,23,w,30]"),
            ("ZUNION 2 a b", "[x,y,z,w]"),
            (
                "ZUNION 2 a b WEIGHTS 2 1 AGGREGATE MAX WITHSCORES",
                "[x,2,y,10,z,20,w,30]",
            ),
            ("ZINTER 2 a b AGGREGATE MIN WITHSCORES", "[y,2,z,3]"),
            ("ZINTER 2 a b WITHSCORES", "[y,12,z,23]"),
            ("ZINTER 2 a nokey", "[]"),
            ("ZDIFF 2 a b WITHSCORES", "[x,1]"),
            ("ZDIFF 1 a", "[x,y,z]"),
            ("ZINTERCARD 2 a b", ":2"),
            ("ZINTERCARD 2 a b LIMIT 1", ":1"),
            ("ZINTERCARD 2 a b LIMIT -1", "!ERR LIMIT can't be negative"),
            (
                "ZINTERCARD 0 a",
                "!ERR at least 1 input key is needed for 'zintercard' command",
            ),
            (
                "ZUNION 0 a",
                "!ERR at least 1 input key is needed for 'zunion' command",
            ),
            ("ZUNION 3 a b", "!ERR syntax error"),
            ("ZUNION x a", "!ERR value is not an integer or out of range"),
            (
                "ZUNION 2 a b WEIGHTS 1 x",
                "!ERR weight value is not a float",
            ),
            ("ZUNION 2 a b WEIGHTS 1", "!ERR syntax error"),
            ("ZUNION 2 a b AGGREGATE foo", "!ERR syntax error"),
            ("ZDIFF 2 a b WEIGHTS 1 1", "!ERR syntax error"),
            ("ZUNIONSTORE d 2 a b WITHSCORES", "!ERR syntax error"),
            ("ZUNIONSTORE d 2 a b", ":4"),
            ("ZRANGE d 0 -1 WITHSCORES", "[x,1,y,12,z,23,w,30]"),
            ("ZINTERSTORE d 2 a b WEIGHTS 1 0", ":2"),
            ("ZRANGE d 0 -1 WITHSCORES", "[y,2,z,3]"),
            ("ZDIFFSTORE d 2 a b", ":1"),
            ("ZINTERSTORE d 2 a nokey", ":0"),
            ("EXISTS d", ":0"),
            ("ZUNIONSTORE d 1 nokey", ":0"),
            ("ZADD inf1 +inf m", ":1"),
            ("ZADD inf2 -inf m", ":1"),
            ("ZUNION 2 inf1 inf2 WITHSCORES", "[m,0]"),
            ("ZINTER 2 inf1 inf1 WEIGHTS 0 0 WITHSCORES", "[m,0]"),
            ("SET str x", "OK"),
            (
                "ZUNION 2 a str",
                "!WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            ("ZRANGESTORE d a 0 1", ":2"),
            ("ZRANGE d 0 -1 WITHSCORES", "[x,1,y,2]"),
            ("ZRANGESTORE d a (1 +inf BYSCORE LIMIT 0 1", ":1"),
            ("ZRANGE d 0 -1", "[y]"),
            ("ZRANGESTORE d a 0 -1 WITHSCORES", "!ERR syntax error"),
            ("ZRANGESTORE d nokey 0 -1", ":0"),
            ("EXISTS d", ":0"),
            ("ZRANGESTORE d a - + BYLEX REV", ":0"),
            ("ZRANGESTORE d a + - BYLEX REV", ":3"),
            ("ZRANGE d 0 -1", "[x,y,z]"),
        ],
    );
    c.q("HELLO 3");
    assert_eq!(
        c.q("ZUNION 2 a b WITHSCORES"),
        "[[x,,1],[y,,12],[z,,23],[w,,30]]"
    );
}

#[test]
fn randmember_and_scan() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    c.q("ZADD z 1 a 2 b 3 c");
    check(
        &mut c,
        &[
            ("ZRANDMEMBER nokey", "(nil)"),
            ("ZRANDMEMBER nokey 5", "[]"),
            ("ZRANDMEMBER z 0", "[]"),
            ("ZRANDMEMBER z 5 WITHSCORES", "[c,3,b,2,a,1]"),
            ("ZRANDMEMBER z 1 2", "!ERR syntax error"),
            ("ZRANDMEMBER z x", "!ERR value is not an integer or out of range"),
            (
                "ZRANDMEMBER z -9223372036854775808",
                "!ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ),
            (
                "ZRANDMEMBER z 9223372036854775807 WITHSCORES",
                "!ERR value is out of range",
            ),
            ("ZSCAN z 0", "[0,[a,1,b,2,c,3]]"),
            ("ZSCAN z 0 MATCH b*", "[0,[b,2]]"),
            ("ZSCAN z x", "!ERR invalid cursor"),
            ("ZSCAN nokey 0", "[0,[]]"),
            ("ZSCAN z 0 COUNT 0", "!ERR syntax error"),
        ],
    );
    let one = c.q("ZRANDMEMBER z");
    assert!(["a", "b", "c"].contains(&one.as_str()));
    let neg = c.q("ZRANDMEMBER z -10");
    assert_eq!(neg.matches(',').count(), 9);
    let uniq = c.q("ZRANDMEMBER z 2");
    assert_eq!(uniq.matches(',').count(), 1);
    // a full ZSCAN over a skiplist returns every member once
    for i in 0..500 {
        c.q(&format!("ZADD big {i} m{i}"));
    }
    assert_eq!(c.q("OBJECT ENCODING big"), "skiplist");
    let mut cursor = "0".to_string();
    let mut seen = std::collections::HashSet::new();
    loop {
        let r = c.q(&format!("ZSCAN big {cursor} COUNT 50"));
        let inner = &r[1..r.len() - 1];
        let (cur, rest) = inner.split_once(',').unwrap();
        let items: Vec<&str> = rest
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .filter(|s| !s.is_empty())
            .collect();
        for pair in items.chunks(2) {
            assert_eq!(pair[0][1..], *pair[1]);
            seen.insert(pair[0].to_string());
        }
        cursor = cur.to_string();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 500);
}

#[test]
fn encodings_and_conversions() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    let long = "x".repeat(65);
    check(
        &mut c,
        &[
            ("ZADD z 1 a", ":1"),
            ("OBJECT ENCODING z", "listpack"),
            (&format!("ZADD z 2 {long}"), ":1"),
            ("OBJECT ENCODING z", "skiplist"),
            // removing the long member does not convert back
            (&format!("ZREM z {long}"), ":1"),
            ("OBJECT ENCODING z", "skiplist"),
            // but a store result sized for a listpack is one
            ("ZUNIONSTORE d 1 z", ":1"),
            ("OBJECT ENCODING d", "listpack"),
            ("ZRANGESTORE d2 z 0 -1", ":1"),
            ("OBJECT ENCODING d2", "listpack"),
            ("CONFIG SET zset-max-listpack-entries 4", "OK"),
            ("ZADD s 1 a 2 b 3 c 4 d", ":4"),
            ("OBJECT ENCODING s", "listpack"),
            ("ZADD s 5 e", ":1"),
            ("OBJECT ENCODING s", "skiplist"),
            ("ZUNIONSTORE d 1 s", ":5"),
            ("OBJECT ENCODING d", "skiplist"),
            ("ZRANGESTORE d s 0 3", ":4"),
            ("OBJECT ENCODING d", "listpack"),
            // ZADD with more pairs than a listpack holds converts up front
            ("ZADD t 1 a 1 a 1 a 1 a 1 a", ":1"),
            ("OBJECT ENCODING t", "skiplist"),
            ("CONFIG SET zset-max-listpack-entries 128", "OK"),
            ("CONFIG SET zset-max-listpack-value 2", "OK"),
            ("ZADD v 1 abc", ":1"),
            ("OBJECT ENCODING v", "skiplist"),
            ("ZADD w 1 ab", ":1"),
            ("OBJECT ENCODING w", "listpack"),
            ("CONFIG SET zset-max-listpack-value 64", "OK"),
        ],
    );
    // Both encodings answer alike.
    for enc in ["listpack", "skiplist"] {
        let k = format!("e{enc}");
        if enc == "skiplist" {
            c.q("CONFIG SET zset-max-listpack-entries 0");
        }
        for i in 0..50 {
            c.q(&format!("ZADD {k} {} m{:02}", i % 7, i));
        }
        assert_eq!(c.q(&format!("OBJECT ENCODING {k}")), enc);
        c.q("CONFIG SET zset-max-listpack-entries 128");
    }
    for q in [
        "ZRANGE {} 0 -1 WITHSCORES",
        "ZRANGE {} 5 20 REV",
        "ZRANGEBYSCORE {} (2 5 WITHSCORES LIMIT 3 7",
        "ZREVRANGEBYSCORE {} 5 (2 LIMIT 2 100",
        "ZCOUNT {} 1 (4",
        "ZRANK {} m33",
        "ZREVRANK {} m33 WITHSCORE",
        "ZRANGEBYLEX {} [m10 (m20",
        "ZLEXCOUNT {} - +",
        "ZSCORE {} m07",
    ] {
        let a = c.q(&q.replace("{}", "elistpack"));
        let b = c.q(&q.replace("{}", "eskiplist"));
        assert_eq!(a, b, "{q}");
    }
    for q in [
        "ZREMRANGEBYSCORE {} 2 3",
        "ZREMRANGEBYRANK {} 3 9",
        "ZPOPMAX {} 3",
        "ZRANGE {} 0 -1 WITHSCORES",
    ] {
        let a = c.q(&q.replace("{}", "elistpack"));
        let b = c.q(&q.replace("{}", "eskiplist"));
        assert_eq!(a, b, "{q}");
    }
}

#[test]
fn big_skiplist_ranks() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    let n = 2000;
    for i in (0..n).rev() {
        c.q(&format!("ZADD z {i} m{i}"));
    }
    for i in (0..n).step_by(97) {
        assert_eq!(c.q(&format!("ZRANK z m{i}")), format!(":{i}"));
        assert_eq!(c.q(&format!("ZRANGE z {i} {i}")), format!("[m{i}]"));
    }
    assert_eq!(c.q("ZCOUNT z 100 (200"), ":100");
    assert_eq!(c.q("ZREMRANGEBYSCORE z 100 (200"), ":100");
    assert_eq!(c.q("ZRANK z m200"), ":100");
    assert_eq!(c.q("ZCARD z"), format!(":{}", n - 100));
}

/// The same commands against Debian's redis-server (7.0): only those whose replies did not
/// change in 7.2 (7.0 prints non-integral doubles with %.17g).
#[test]
fn differential_against_redis() {
    let Some(r) = Server::redis(&[]) else {
        eprintln!("redis-server not installed; skipping");
        return;
    };
    let t = Server::tern(&[]);
    let mut a = Raw::new(r.port);
    let mut b = Raw::new(t.port);
    let script = [
        "ZADD z 1 a 2 b 3 c 4 d 5 e 0 f -3 g",
        "ZADD z NX XX 1 a",
        "ZADD z GT CH 10 a 1 b",
        "ZADD z LT CH 0 c 100 d",
        "ZADD z INCR 5 e",
        "ZADD z 0x20 h",
        "ZADD z 1e15 i 99999999999999 j -1e15 k",
        "ZRANGE z 0 -1 WITHSCORES",
        "ZSCORE z j",
        "ZRANGE z (1 +inf BYSCORE LIMIT 1 3 WITHSCORES",
        "ZRANGE z +inf -inf BYSCORE REV LIMIT 0 4",
        "ZRANGEBYSCORE z -inf 5 LIMIT -1 2",
        "ZRANGEBYSCORE z (5 5",
        "ZRANGEBYSCORE z '' 1",
        "ZCOUNT z 0 +inf",
        "ZREVRANGE z 2 -3",
        "ZRANGEBYLEX z - +",
        "ZLEXCOUNT z [a [z",
        "ZREMRANGEBYLEX z [h [j",
        "ZPOPMAX z 2",
        "ZPOPMIN z",
        "ZMPOP 2 nokey z MIN COUNT 2",
        "ZRANGE z 0 -1 WITHSCORES",
        "ZADD y 1 b 7 e 9 q",
        "ZUNION 2 z y WITHSCORES",
        "ZUNION 2 z y WEIGHTS 2 3 AGGREGATE MIN WITHSCORES",
        "ZINTER 2 z y WITHSCORES",
        "ZDIFF 2 z y WITHSCORES",
        "ZINTERCARD 2 z y LIMIT 1",
        "ZUNIONSTORE u 2 z y",
        "ZRANGE u 0 -1 WITHSCORES",
        "ZINTERSTORE u 2 z nokey",
        "EXISTS u",
        "ZRANGESTORE u z 1 -2",
        "ZRANGE u 0 -1 WITHSCORES",
        "ZREMRANGEBYRANK z 1 1",
        "ZREMRANGEBYSCORE z (0 10",
        "ZRANGE z 0 -1 WITHSCORES",
        "ZSCAN y 0",
        "ZRANDMEMBER y 10 WITHSCORES",
        "ZRANDMEMBER y 0",
        "ZADD e 0 a",
        "ZREM e a",
        "EXISTS e",
        "ZMSCORE y b nosuch",
        "ZADD y nan x",
        "ZADD y 1e999 x",
        "ZADD y ' 1' x",
        "ZINCRBY y +inf b",
        "ZINCRBY y -inf b",
        "ZRANGE y (a (b BYLEX",
        "ZRANGE y a b BYLEX",
        "ZINTERCARD 0 y",
        "ZUNIONSTORE d 0 y",
        "ZMPOP 0 y MIN",
        "BZMPOP 0 1 y MAX COUNT 0",
        // ZSCAN prints skiplist scores with %.17g (as 7.0 replied every double)
        "CONFIG SET zset-max-listpack-entries 0",
        "ZADD sk 1.1 a 0.3333333333333333 b 1e-5 c 2.5e300 d -0.5 e 12345678901234567 f",
        "ZSCAN sk 0 MATCH a",
        "ZSCAN sk 0 MATCH b",
        "ZSCAN sk 0 MATCH c",
        "ZSCAN sk 0 MATCH d",
        "ZSCAN sk 0 MATCH e",
        "ZSCAN sk 0 MATCH f",
        "CONFIG SET zset-max-listpack-entries 128",
    ];
    for line in script {
        let words: Vec<Vec<u8>> = line
            .split_whitespace()
            .map(|w| {
                if w == "''" {
                    Vec::new()
                } else if w == "'" || w == "1'" {
                    w.trim_matches('\'').as_bytes().to_vec()
                } else {
                    w.as_bytes().to_vec()
                }
            })
            .collect();
        let words: Vec<Vec<u8>> = if line.contains("' 1'") {
            vec![
                b"ZADD".to_vec(),
                b"y".to_vec(),
                b" 1".to_vec(),
                b"x".to_vec(),
            ]
        } else {
            words
        };
        let args: Vec<&[u8]> = words.iter().map(|w| w.as_slice()).collect();
        let ra = a.qa(&args);
        let rb = b.qa(&args);
        assert_eq!(rb, ra, "command: {line}");
    }
}

/// Random operations (integral scores, so 7.0 and 7.2 print alike) run against both servers
/// with small listpack limits so both encodings and the conversions are exercised.
#[test]
fn randomized_differential() {
    let Some(r) = Server::redis(&[]) else {
        eprintln!("redis-server not installed; skipping");
        return;
    };
    let t = Server::tern(&[]);
    let mut a = Raw::new(r.port);
    let mut b = Raw::new(t.port);
    for c in [&mut a, &mut b] {
        c.q("CONFIG SET zset-max-listpack-entries 16");
        c.q("CONFIG SET zset-max-listpack-value 8");
    }
    let mut seed: u64 = 0x1234_5678_9abc_def0;
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let members = [
        "a",
        "b",
        "c",
        "d",
        "e",
        "f",
        "g",
        "h",
        "i",
        "j",
        "k",
        "l",
        "m",
        "n",
        "o",
        "p",
        "q",
        "r",
        "s",
        "t",
        "u",
        "v",
        "w",
        "x",
        "y",
        "z",
        "1",
        "2",
        "10",
        "-3",
        "longmember1",
        "longmember2",
    ];
    let keys = ["k1", "k2", "k3"];
    for step in 0..4000 {
        let k = keys[rnd(3) as usize];
        let m = members[rnd(members.len() as u64) as usize];
        let m2 = members[rnd(members.len() as u64) as usize];
        let sc = rnd(21) as i64 - 10;
        let sc2 = rnd(21) as i64 - 10;
        let i1 = rnd(30) as i64 - 15;
        let i2 = rnd(30) as i64 - 15;
        let lb = |x: &str, r: u64| match r % 4 {
            0 => "-".to_string(),
            1 => "+".to_string(),
            2 => format!("[{x}"),
            _ => format!("({x}"),
        };
        let sb = |x: i64, r: u64| match r % 4 {
            0 => "-inf".to_string(),
            1 => "+inf".to_string(),
            2 => format!("{x}"),
            _ => format!("({x}"),
        };
        let cmd = match rnd(27) {
            24 => format!("ZADD lx 0 {m} 0 {m2}"),
            25 => format!("ZREMRANGEBYLEX lx {} {}", lb(m, rnd(4)), lb(m2, rnd(4))),
            26 => format!("ZREM lx {m}"),
            0..=5 => {
                let flags =
                    ["", "NX", "XX", "GT", "LT", "CH", "XX GT CH", "NX CH"][rnd(8) as usize];
                format!("ZADD {k} {flags} {sc} {m} {sc2} {m2}")
            }
            6 => format!("ZINCRBY {k} {sc} {m}"),
            7 => format!("ZREM {k} {m} {m2}"),
            8 => format!("ZRANGE {k} {i1} {i2} WITHSCORES"),
            9 => format!("ZRANGE {k} {i1} {i2} REV"),
            10 => format!(
                "ZRANGE {k} {} {} BYSCORE LIMIT {} {} WITHSCORES",
                sb(sc, rnd(4)),
                sb(sc2, rnd(4)),
                rnd(4),
                rnd(6) as i64 - 1
            ),
            11 => format!(
                "ZRANGE {k} {} {} BYSCORE REV WITHSCORES",
                sb(sc, rnd(4)),
                sb(sc2, rnd(4))
            ),
            12 => format!("ZRANGEBYLEX lx {} {}", lb(m, rnd(4)), lb(m2, rnd(4))),
            13 => format!(
                "ZREVRANGEBYLEX lx {} {} LIMIT {} 3",
                lb(m, rnd(4)),
                lb(m2, rnd(4)),
                rnd(3)
            ),
            14 => format!("ZCOUNT {k} {} {}", sb(sc, rnd(4)), sb(sc2, rnd(4))),
            15 => format!("ZLEXCOUNT lx {} {}", lb(m, rnd(4)), lb(m2, rnd(4))),
            16 => format!("ZRANK {k} {m}"),
            17 => format!("ZREVRANK {k} {m}"),
            18 => format!("ZREMRANGEBYRANK {k} {i1} {i2}"),
            19 => format!(
                "ZREMRANGEBYSCORE {k} {} {}",
                sb(sc, rnd(4)),
                sb(sc2, rnd(4))
            ),
            20 => format!(
                "ZPOP{} {k} {}",
                if rnd(2) == 0 { "MIN" } else { "MAX" },
                rnd(3)
            ),
            21 => format!(
                "ZUNIONSTORE {k} 2 {} {} WEIGHTS {} {} AGGREGATE {}",
                keys[rnd(3) as usize],
                keys[rnd(3) as usize],
                rnd(3),
                rnd(3),
                ["SUM", "MIN", "MAX"][rnd(3) as usize]
            ),
            22 => format!(
                "ZINTERSTORE {k} 2 {} {}",
                keys[rnd(3) as usize],
                keys[rnd(3) as usize]
            ),
            _ => format!("OBJECT ENCODING {k}"),
        };
        let ra = a.q(&cmd);
        let rb = b.q(&cmd);
        assert_eq!(rb, ra, "step {step}: {cmd}");
    }
}

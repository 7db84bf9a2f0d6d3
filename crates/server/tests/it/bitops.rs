//! Bitmap family: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO against the real
//! binary (replies, error texts, encodings, dirty counting, RESP3), plus randomized
//! differential runs against Debian's redis-server when it is installed.
use crate::common::{encoding, err, info_u64, int, norm, q, run, set_bytes, Server};
use redis::{Connection, Value};

fn ints(v: &[i64]) -> Value {
    Value::Array(v.iter().map(|&n| Value::Int(n)).collect())
}

fn bytes_of(c: &mut Connection, key: &str) -> Vec<u8> {
    match q(c, &["GET", key]) {
        Value::BulkString(b) => b,
        Value::Nil => Vec::new(),
        v => panic!("GET {key}: {v:?}"),
    }
}

const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";
const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BAD_BIT: &str = "ERR bit is not an integer or out of range";
const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

#[test]
fn setbit_and_getbit() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(q(&mut c, &["SETBIT", "k", "1", "1"]), int(0));
    assert_eq!(bytes_of(&mut c, "k"), b"\x40");
    assert_eq!(encoding(&mut c, "k"), "raw");
    assert_eq!(q(&mut c, &["SETBIT", "k", "1", "1"]), int(1));
    assert_eq!(q(&mut c, &["SETBIT", "k", "1", "0"]), int(1));
    assert_eq!(q(&mut c, &["SETBIT", "k", "15", "1"]), int(0));
    assert_eq!(bytes_of(&mut c, "k"), b"\x00\x01");
    assert_eq!(q(&mut c, &["GETBIT", "k", "15"]), int(1));
    assert_eq!(q(&mut c, &["GETBIT", "k", "14"]), int(0));
    assert_eq!(q(&mut c, &["GETBIT", "k", "100000"]), int(0));
    assert_eq!(q(&mut c, &["GETBIT", "missing", "0"]), int(0));
    assert_eq!(q(&mut c, &["EXISTS", "missing"]), int(0));

    // Integers are read through their decimal digits; a write turns them raw.
    assert_eq!(q(&mut c, &["SET", "n", "1"]), Value::Okay);
    assert_eq!(encoding(&mut c, "n"), "int");
    // '1' is 0x31 = 00110001
    for (bit, want) in [(0, 0), (1, 0), (2, 1), (3, 1), (7, 1), (8, 0)] {
        assert_eq!(q(&mut c, &["GETBIT", "n", &bit.to_string()]), int(want));
    }
    assert_eq!(encoding(&mut c, "n"), "int");
    assert_eq!(q(&mut c, &["SETBIT", "n", "6", "1"]), int(0));
    assert_eq!(bytes_of(&mut c, "n"), b"3");
    assert_eq!(encoding(&mut c, "n"), "raw");
    // embstr becomes raw as well, even when the bit does not change.
    q(&mut c, &["SET", "e", "abc"]);
    assert_eq!(encoding(&mut c, "e"), "embstr");
    assert_eq!(q(&mut c, &["SETBIT", "e", "0", "0"]), int(0));
    assert_eq!(encoding(&mut c, "e"), "raw");

    // Errors, checked before the key is looked at.
    assert_eq!(err(&mut c, &["SETBIT", "k", "-1", "1"]), BAD_OFFSET);
    assert_eq!(err(&mut c, &["SETBIT", "k", "abc", "1"]), BAD_OFFSET);
    assert_eq!(err(&mut c, &["SETBIT", "k", "#1", "1"]), BAD_OFFSET);
    assert_eq!(err(&mut c, &["SETBIT", "k", "4294967296", "1"]), BAD_OFFSET);
    assert_eq!(err(&mut c, &["SETBIT", "k", "0", "2"]), BAD_BIT);
    assert_eq!(err(&mut c, &["SETBIT", "k", "0", "-1"]), BAD_BIT);
    assert_eq!(err(&mut c, &["SETBIT", "k", "0", "x"]), BAD_BIT);
    assert_eq!(err(&mut c, &["SETBIT", "k", "0", "01"]), BAD_BIT);
    assert_eq!(err(&mut c, &["GETBIT", "k", "-1"]), BAD_OFFSET);
    assert_eq!(err(&mut c, &["GETBIT", "k", "4294967296"]), BAD_OFFSET);
    assert_eq!(
        err(&mut c, &["SETBIT", "k", "0"]),
        "ERR wrong number of arguments for 'setbit' command"
    );
    assert_eq!(
        err(&mut c, &["GETBIT", "k"]),
        "ERR wrong number of arguments for 'getbit' command"
    );

    // The highest offset follows proto-max-bulk-len.
    assert_eq!(
        q(&mut c, &["GETBIT", "k", "4294967295"]),
        int(0),
        "last bit of 512MB is addressable"
    );
    q(&mut c, &["CONFIG", "SET", "proto-max-bulk-len", "1048576"]);
    assert_eq!(err(&mut c, &["SETBIT", "big", "8388608", "1"]), BAD_OFFSET);
    assert_eq!(q(&mut c, &["SETBIT", "big", "8388607", "1"]), int(0));
    assert_eq!(q(&mut c, &["STRLEN", "big"]), int(1048576));
    assert_eq!(q(&mut c, &["BITCOUNT", "big"]), int(1));
    assert_eq!(q(&mut c, &["BITPOS", "big", "1"]), int(8388607));
    q(
        &mut c,
        &["CONFIG", "SET", "proto-max-bulk-len", "536870912"],
    );

    // SETBIT keeps the TTL.
    q(&mut c, &["SET", "t", "a", "EX", "100"]);
    q(&mut c, &["SETBIT", "t", "100", "1"]);
    assert!(matches!(q(&mut c, &["TTL", "t"]), Value::Int(n) if n > 0));
}

#[test]
fn dirty_counts_only_changes() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let d0 = info_u64(&mut c, "default", "rdb_changes_since_last_save");
    q(&mut c, &["SETBIT", "a", "0", "0"]); // created: +1
    q(&mut c, &["SETBIT", "a", "0", "0"]); // no change
    q(&mut c, &["SETBIT", "a", "0", "1"]); // +1
    q(&mut c, &["SETBIT", "a", "20", "0"]); // grew: +1
    q(&mut c, &["BITFIELD", "b", "SET", "u8", "0", "0"]); // created: +1
    q(&mut c, &["BITFIELD", "b", "SET", "u8", "0", "0"]); // no change
    q(
        &mut c,
        &[
            "BITFIELD", "b", "SET", "u8", "0", "1", "SET", "u8", "8", "1",
        ],
    ); // +2
    q(&mut c, &["BITFIELD", "b", "GET", "u8", "0"]); // read
    q(
        &mut c,
        &[
            "BITFIELD", "b", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "300",
        ],
    ); // refused
    q(&mut c, &["BITOP", "OR", "dst", "a", "b"]); // +1
    q(&mut c, &["BITOP", "OR", "dst", "nokey"]); // deletes dst: +1
    q(&mut c, &["BITOP", "OR", "dst", "nokey"]); // nothing to delete
    assert_eq!(
        info_u64(&mut c, "default", "rdb_changes_since_last_save") - d0,
        8
    );

    // Reads count keyspace hits and misses; writes do not.
    let (h0, m0) = (
        info_u64(&mut c, "default", "keyspace_hits"),
        info_u64(&mut c, "default", "keyspace_misses"),
    );
    q(&mut c, &["GETBIT", "a", "0"]);
    q(&mut c, &["GETBIT", "zz", "0"]);
    q(&mut c, &["BITCOUNT", "a"]);
    q(&mut c, &["BITPOS", "zz", "1"]);
    q(&mut c, &["BITFIELD_RO", "a", "GET", "u8", "0"]);
    q(&mut c, &["BITOP", "AND", "d2", "a", "zz"]);
    q(&mut c, &["SETBIT", "new", "0", "1"]);
    q(&mut c, &["BITFIELD", "new2", "SET", "u8", "0", "1"]);
    assert_eq!(info_u64(&mut c, "default", "keyspace_hits") - h0, 4);
    assert_eq!(info_u64(&mut c, "default", "keyspace_misses") - m0, 3);
}

#[test]
fn bitcount_ranges() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["SET", "s", "foobar"]);
    assert_eq!(q(&mut c, &["BITCOUNT", "s"]), int(26));
    assert_eq!(q(&mut c, &["BITCOUNT", "s", "0", "0"]), int(4));
    assert_eq!(q(&mut c, &["BITCOUNT", "s", "1", "1"]), int(6));
    assert_eq!(q(&mut c, &["BITCOUNT", "s", "1", "1", "BYTE"]), int(6));
    assert_eq!(q(&mut c, &["BITCOUNT", "s", "5", "30", "bit"]), int(17));
    assert_eq!(q(&mut c, &["BITCOUNT", "s", "-2", "-1"]), int(7));
    assert_eq!(q(&mut c, &["BITCOUNT", "s", "-3", "-1", "BIT"]), int(1));
    assert_eq!(q(&mut c, &["BITCOUNT", "s", "-1", "-2"]), int(0));
    assert_eq!(q(&mut c, &["BITCOUNT", "s", "100", "200"]), int(0));
    assert_eq!(q(&mut c, &["BITCOUNT", "s", "-100", "100"]), int(26));
    assert_eq!(q(&mut c, &["BITCOUNT", "s", "3", "1"]), int(0));
    assert_eq!(
        q(
            &mut c,
            &[
                "BITCOUNT",
                "s",
                "-9223372036854775808",
                "9223372036854775807"
            ]
        ),
        int(26)
    );
    assert_eq!(q(&mut c, &["BITCOUNT", "missing"]), int(0));
    assert_eq!(
        q(&mut c, &["BITCOUNT", "missing", "0", "1000", "bit"]),
        int(0)
    );
    // A missing key answers 0 before its arguments are looked at.
    assert_eq!(q(&mut c, &["BITCOUNT", "missing", "x"]), int(0));
    q(&mut c, &["SET", "n", "-1"]); // "-1" = 0x2d 0x31
    assert_eq!(q(&mut c, &["BITCOUNT", "n"]), int(7));
    q(&mut c, &["SET", "empty", ""]);
    assert_eq!(q(&mut c, &["BITCOUNT", "empty"]), int(0));
    assert_eq!(q(&mut c, &["BITCOUNT", "empty", "0", "-1"]), int(0));

    assert_eq!(err(&mut c, &["BITCOUNT", "s", "0"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["BITCOUNT", "s", "0", "1", "BIT", "x"]),
        SYNTAX
    );
    assert_eq!(err(&mut c, &["BITCOUNT", "s", "0", "1", "bits"]), SYNTAX);
    assert_eq!(err(&mut c, &["BITCOUNT", "s", "a", "1"]), NOT_INT);
    assert_eq!(err(&mut c, &["BITCOUNT", "s", "0", "1.5"]), NOT_INT);
    // Both ends are parsed before the unit, and negative start > end wins over the unit.
    assert_eq!(err(&mut c, &["BITCOUNT", "s", "0", "x", "bad"]), NOT_INT);
    assert_eq!(q(&mut c, &["BITCOUNT", "s", "-1", "-2", "bad"]), int(0));
    assert_eq!(err(&mut c, &["BITCOUNT", "s", "0", "1", "bad"]), SYNTAX);

    // Large string: word-at-a-time counting with misaligned edges.
    let big: Vec<u8> = (0..10_000u32).map(|i| (i * 37 % 251) as u8).collect();
    set_bytes(&mut c, "big", &big);
    let total: u32 = big.iter().map(|b| b.count_ones()).sum();
    assert_eq!(q(&mut c, &["BITCOUNT", "big"]), int(total as i64));
    let part: u32 = big[3..9_001].iter().map(|b| b.count_ones()).sum();
    assert_eq!(
        q(&mut c, &["BITCOUNT", "big", "3", "9000"]),
        int(part as i64)
    );
}

#[test]
fn bitpos_rules() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    set_bytes(&mut c, "s", b"\xff\xf0\x00");
    assert_eq!(q(&mut c, &["BITPOS", "s", "0"]), int(12));
    set_bytes(&mut c, "s", b"\x00\xff\xf0");
    assert_eq!(q(&mut c, &["BITPOS", "s", "1", "0"]), int(8));
    assert_eq!(q(&mut c, &["BITPOS", "s", "1", "2"]), int(16));
    assert_eq!(q(&mut c, &["BITPOS", "s", "1", "2", "-1", "BYTE"]), int(16));
    assert_eq!(q(&mut c, &["BITPOS", "s", "1", "7", "15", "BIT"]), int(8));
    assert_eq!(q(&mut c, &["BITPOS", "s", "1", "7", "-3", "bit"]), int(8));
    assert_eq!(q(&mut c, &["BITPOS", "s", "0", "9", "-1", "bit"]), int(20));
    set_bytes(&mut c, "z", b"\x00\x00\x00");
    assert_eq!(q(&mut c, &["BITPOS", "z", "1"]), int(-1));
    assert_eq!(q(&mut c, &["BITPOS", "z", "0"]), int(0));

    // Clear bits: past the end counts as zero only when no end was given.
    set_bytes(&mut c, "f", b"\xff\xff\xff");
    assert_eq!(q(&mut c, &["BITPOS", "f", "0"]), int(24));
    assert_eq!(q(&mut c, &["BITPOS", "f", "0", "0"]), int(24));
    assert_eq!(q(&mut c, &["BITPOS", "f", "0", "1"]), int(24));
    assert_eq!(q(&mut c, &["BITPOS", "f", "0", "0", "-1"]), int(-1));
    assert_eq!(q(&mut c, &["BITPOS", "f", "0", "0", "-1", "bit"]), int(-1));
    assert_eq!(q(&mut c, &["BITPOS", "f", "0", "5"]), int(-1));
    assert_eq!(q(&mut c, &["BITPOS", "f", "1", "5"]), int(-1));
    assert_eq!(q(&mut c, &["BITPOS", "f", "1", "2", "1"]), int(-1));

    // Missing keys: an endless run of zeros.
    assert_eq!(q(&mut c, &["BITPOS", "missing", "0"]), int(0));
    assert_eq!(q(&mut c, &["BITPOS", "missing", "1"]), int(-1));
    assert_eq!(
        q(&mut c, &["BITPOS", "missing", "1", "x", "y", "z", "w"]),
        int(-1)
    );
    // Empty string: an empty range.
    q(&mut c, &["SET", "empty", ""]);
    assert_eq!(q(&mut c, &["BITPOS", "empty", "0"]), int(-1));
    assert_eq!(q(&mut c, &["BITPOS", "empty", "1"]), int(-1));
    // Integer encoding: "10" = 0x31 0x30.
    q(&mut c, &["SET", "n", "10"]);
    assert_eq!(q(&mut c, &["BITPOS", "n", "1"]), int(2));
    assert_eq!(q(&mut c, &["BITPOS", "n", "0", "1"]), int(8));

    let must = "ERR The bit argument must be 1 or 0.";
    assert_eq!(err(&mut c, &["BITPOS", "s", "2"]), must);
    assert_eq!(err(&mut c, &["BITPOS", "missing", "-1"]), must);
    assert_eq!(err(&mut c, &["BITPOS", "s", "x"]), NOT_INT);
    assert_eq!(err(&mut c, &["BITPOS", "s", "1", "x"]), NOT_INT);
    assert_eq!(err(&mut c, &["BITPOS", "s", "1", "0", "x"]), NOT_INT);
    assert_eq!(err(&mut c, &["BITPOS", "s", "1", "0", "1", "bits"]), SYNTAX);
    // The unit is checked before the end.
    assert_eq!(err(&mut c, &["BITPOS", "s", "1", "0", "x", "bits"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["BITPOS", "s", "1", "0", "1", "bit", "x"]),
        SYNTAX
    );

    // Long runs: word skipping with unaligned starts.
    let mut big = vec![0u8; 5000];
    big[4321] = 0x04;
    set_bytes(&mut c, "big", &big);
    assert_eq!(q(&mut c, &["BITPOS", "big", "1"]), int(4321 * 8 + 5));
    assert_eq!(q(&mut c, &["BITPOS", "big", "1", "3"]), int(4321 * 8 + 5));
    assert_eq!(
        q(&mut c, &["BITPOS", "big", "1", "13", "-1", "bit"]),
        int(4321 * 8 + 5)
    );
    assert_eq!(q(&mut c, &["BITPOS", "big", "1", "4322"]), int(-1));
    let mut ones = vec![0xffu8; 5000];
    ones[4999] = 0xfe;
    set_bytes(&mut c, "ones", &ones);
    assert_eq!(q(&mut c, &["BITPOS", "ones", "0", "1"]), int(4999 * 8 + 7));
    assert_eq!(
        q(&mut c, &["BITPOS", "ones", "0", "1", "39990", "bit"]),
        int(-1)
    );
}

#[test]
fn bitop_operations() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    set_bytes(&mut c, "a", b"\xff\x0f\xaa");
    set_bytes(&mut c, "b", b"\x0f\xff");
    assert_eq!(q(&mut c, &["BITOP", "AND", "d", "a", "b"]), int(3));
    assert_eq!(bytes_of(&mut c, "d"), b"\x0f\x0f\x00");
    assert_eq!(encoding(&mut c, "d"), "raw");
    assert_eq!(q(&mut c, &["BITOP", "or", "d", "a", "b"]), int(3));
    assert_eq!(bytes_of(&mut c, "d"), b"\xff\xff\xaa");
    assert_eq!(q(&mut c, &["BITOP", "Xor", "d", "a", "b"]), int(3));
    assert_eq!(bytes_of(&mut c, "d"), b"\xf0\xf0\xaa");
    assert_eq!(q(&mut c, &["BITOP", "NOT", "d", "a"]), int(3));
    assert_eq!(bytes_of(&mut c, "d"), b"\x00\xf0\x55");
    // Shorter first source: AND pads with zeros.
    assert_eq!(q(&mut c, &["BITOP", "AND", "d", "b", "a"]), int(3));
    assert_eq!(bytes_of(&mut c, "d"), b"\x0f\x0f\x00");
    // Missing keys are zero strings.
    assert_eq!(q(&mut c, &["BITOP", "AND", "d", "nokey", "a"]), int(3));
    assert_eq!(bytes_of(&mut c, "d"), b"\x00\x00\x00");
    assert_eq!(
        q(&mut c, &["BITOP", "OR", "d", "nokey", "b", "nokey2"]),
        int(2)
    );
    assert_eq!(bytes_of(&mut c, "d"), b"\x0f\xff");
    // Single source: AND/OR/XOR copy it.
    for op in ["AND", "OR", "XOR"] {
        assert_eq!(q(&mut c, &["BITOP", op, "d", "a"]), int(3));
        assert_eq!(bytes_of(&mut c, "d"), b"\xff\x0f\xaa");
    }
    // Destination equal to a source.
    assert_eq!(q(&mut c, &["BITOP", "NOT", "a", "a"]), int(3));
    assert_eq!(bytes_of(&mut c, "a"), b"\x00\xf0\x55");
    // Integer-encoded sources are their digits.
    q(&mut c, &["SET", "n1", "1"]);
    q(&mut c, &["SET", "n2", "2"]);
    assert_eq!(q(&mut c, &["BITOP", "XOR", "d", "n1", "n2"]), int(1));
    assert_eq!(bytes_of(&mut c, "d"), b"\x03");
    assert_eq!(encoding(&mut c, "d"), "raw");
    // Empty result deletes the destination (and its TTL goes with a rewrite).
    q(&mut c, &["SET", "d", "x", "EX", "100"]);
    assert_eq!(q(&mut c, &["BITOP", "OR", "d", "a"]), int(3));
    assert_eq!(q(&mut c, &["TTL", "d"]), int(-1));
    assert_eq!(q(&mut c, &["BITOP", "OR", "d", "nokey", "nokey2"]), int(0));
    assert_eq!(q(&mut c, &["EXISTS", "d"]), int(0));
    q(&mut c, &["SET", "empty", ""]);
    q(&mut c, &["SET", "d", "x"]);
    assert_eq!(q(&mut c, &["BITOP", "NOT", "d", "empty"]), int(0));
    assert_eq!(q(&mut c, &["EXISTS", "d"]), int(0));
    // Empty after non-empty (issue #529).
    assert_eq!(q(&mut c, &["BITOP", "OR", "d", "a", "empty"]), int(3));
    assert_eq!(bytes_of(&mut c, "d"), b"\x00\xf0\x55");

    // Long inputs.
    let x: Vec<u8> = (0..3001u32).map(|i| (i * 7) as u8).collect();
    let y: Vec<u8> = (0..2000u32).map(|i| (i * 13 + 5) as u8).collect();
    set_bytes(&mut c, "x", &x);
    set_bytes(&mut c, "y", &y);
    q(&mut c, &["BITOP", "AND", "d", "x", "y"]);
    let want: Vec<u8> = (0..3001)
        .map(|i| x[i] & y.get(i).copied().unwrap_or(0))
        .collect();
    assert_eq!(bytes_of(&mut c, "d"), want);
    q(&mut c, &["BITOP", "XOR", "d", "y", "x", "y"]);
    let want: Vec<u8> = (0..3001)
        .map(|i| x[i] ^ (y.get(i).copied().unwrap_or(0) ^ y.get(i).copied().unwrap_or(0)))
        .collect();
    assert_eq!(bytes_of(&mut c, "d"), want);

    assert_eq!(err(&mut c, &["BITOP", "NAND", "d", "a"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["BITOP", "NOT", "d", "a", "b"]),
        "ERR BITOP NOT must be called with a single source key."
    );
    assert_eq!(
        err(&mut c, &["BITOP", "AND", "d"]),
        "ERR wrong number of arguments for 'bitop' command"
    );
}

#[test]
fn bitfield_basics() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(
        q(&mut c, &["BITFIELD", "bits", "SET", "i8", "0", "-100"]),
        ints(&[0])
    );
    assert_eq!(
        q(
            &mut c,
            &["BITFIELD", "bits", "SET", "i8", "0", "101", "GET", "i8", "0"]
        ),
        ints(&[-100, 101])
    );
    assert_eq!(
        q(
            &mut c,
            &["BITFIELD", "bits", "SET", "u8", "0", "255", "GET", "u8", "0"]
        ),
        ints(&[101, 255])
    );
    assert_eq!(encoding(&mut c, "bits"), "raw");
    assert_eq!(q(&mut c, &["BITFIELD", "bits"]), Value::Array(vec![]));
    assert_eq!(q(&mut c, &["BITFIELD", "nokey"]), Value::Array(vec![]));
    // '#' offsets count fields of the type's width.
    q(&mut c, &["DEL", "bits"]);
    assert_eq!(
        q(
            &mut c,
            &[
                "BITFIELD", "bits", "SET", "u8", "#0", "65", "SET", "u8", "#1", "66", "SET", "u8",
                "#2", "67"
            ]
        ),
        ints(&[0, 0, 0])
    );
    assert_eq!(bytes_of(&mut c, "bits"), b"ABC");
    assert_eq!(
        q(&mut c, &["BITFIELD", "bits", "GET", "u4", "#1"]),
        ints(&[1])
    );
    // INCRBY and the default WRAP.
    q(&mut c, &["DEL", "bits"]);
    assert_eq!(
        q(
            &mut c,
            &[
                "BITFIELD", "bits", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2",
                "102", "1"
            ]
        ),
        ints(&[1, 1])
    );
    assert_eq!(
        q(
            &mut c,
            &[
                "BITFIELD", "bits", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2",
                "102", "1"
            ]
        ),
        ints(&[2, 2])
    );
    assert_eq!(
        q(
            &mut c,
            &[
                "BITFIELD", "bits", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2",
                "102", "1"
            ]
        ),
        ints(&[3, 3])
    );
    assert_eq!(
        q(
            &mut c,
            &[
                "BITFIELD", "bits", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2",
                "102", "1"
            ]
        ),
        ints(&[0, 3])
    );
    // FAIL answers nil and leaves the field alone.
    assert_eq!(
        q(
            &mut c,
            &[
                "BITFIELD", "bits", "OVERFLOW", "FAIL", "INCRBY", "u2", "102", "1", "GET", "u2",
                "102"
            ]
        ),
        Value::Array(vec![Value::Nil, Value::Int(3)])
    );
    // Signed wrap and saturation; 64-bit signed.
    q(&mut c, &["DEL", "w"]);
    assert_eq!(
        q(
            &mut c,
            &["BITFIELD", "w", "SET", "i8", "0", "127", "INCRBY", "i8", "0", "1"]
        ),
        ints(&[0, -128])
    );
    assert_eq!(
        q(
            &mut c,
            &["BITFIELD", "w", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "-1000"]
        ),
        ints(&[-128])
    );
    assert_eq!(
        q(
            &mut c,
            &["BITFIELD", "w", "OVERFLOW", "sat", "SET", "i8", "0", "1000", "GET", "i8", "0"]
        ),
        ints(&[-128, 127])
    );
    assert_eq!(
        q(
            &mut c,
            &[
                "BITFIELD",
                "w",
                "SET",
                "i64",
                "100",
                "9223372036854775807",
                "INCRBY",
                "i64",
                "100",
                "1"
            ]
        ),
        ints(&[0, i64::MIN])
    );
    assert_eq!(
        q(
            &mut c,
            &["BITFIELD", "w", "SET", "u63", "100", "-1", "GET", "u63", "100"]
        ),
        ints(&[1 << 62, i64::MAX])
    );
    // Reads past the end are zero; integer strings are their digits.
    q(&mut c, &["SET", "n", "1"]);
    assert_eq!(
        q(
            &mut c,
            &["BITFIELD", "n", "GET", "u8", "0", "GET", "u1", "0", "GET", "i64", "1000"]
        ),
        ints(&[49, 0, 0])
    );
    assert_eq!(encoding(&mut c, "n"), "int");
    // Regression for Redis #3564.
    q(&mut c, &["DEL", "m"]);
    assert_eq!(
        q(
            &mut c,
            &[
                "BITFIELD", "m", "SET", "i8", "0", "10", "SET", "i8", "64", "10", "INCRBY", "i8",
                "10", "99900"
            ]
        ),
        ints(&[0, 0, 60])
    );

    // BITFIELD_RO: GETs only (OVERFLOW allowed).
    assert_eq!(
        q(
            &mut c,
            &[
                "BITFIELD_RO",
                "bits",
                "GET",
                "u2",
                "102",
                "OVERFLOW",
                "WRAP",
                "GET",
                "i3",
                "#1"
            ]
        ),
        ints(&[3, 0])
    );
    assert_eq!(q(&mut c, &["BITFIELD_RO", "bits"]), Value::Array(vec![]));
    assert_eq!(
        q(&mut c, &["BITFIELD_RO", "nokey", "GET", "u8", "0"]),
        ints(&[0])
    );
    assert_eq!(
        err(
            &mut c,
            &[
                "BITFIELD_RO",
                "bits",
                "SET",
                "u8",
                "0",
                "100",
                "GET",
                "u8",
                "0"
            ]
        ),
        "ERR BITFIELD_RO only supports the GET subcommand"
    );
    // Argument errors come before the read-only check.
    assert_eq!(
        err(&mut c, &["BITFIELD_RO", "bits", "SET", "u8", "0", "x"]),
        NOT_INT
    );
    assert_eq!(q(&mut c, &["EXISTS", "nokey"]), int(0));
}

#[test]
fn bitfield_errors() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    for t in [
        "u64", "i65", "i0", "u0", "I8", "x8", "i", "i08", "u-1", "", "i8 ",
    ] {
        assert_eq!(
            err(&mut c, &["BITFIELD", "k", "GET", t, "0"]),
            BAD_TYPE,
            "{t}"
        );
    }
    for o in [
        "-1",
        "x",
        "#-1",
        "##1",
        "4294967296",
        "#536870912",
        "1.0",
        "",
    ] {
        assert_eq!(
            err(&mut c, &["BITFIELD", "k", "GET", "u8", o]),
            BAD_OFFSET,
            "{o}"
        );
    }
    assert_eq!(
        q(&mut c, &["BITFIELD", "k", "GET", "u8", "#536870911"]),
        ints(&[0])
    );
    assert_eq!(
        err(
            &mut c,
            &["BITFIELD", "k", "OVERFLOW", "nope", "GET", "u8", "0"]
        ),
        "ERR Invalid OVERFLOW type specified"
    );
    assert_eq!(err(&mut c, &["BITFIELD", "k", "GET", "u8"]), SYNTAX);
    assert_eq!(err(&mut c, &["BITFIELD", "k", "SET", "u8", "0"]), SYNTAX);
    assert_eq!(err(&mut c, &["BITFIELD", "k", "INCRBY", "u8", "0"]), SYNTAX);
    assert_eq!(err(&mut c, &["BITFIELD", "k", "OVERFLOW"]), SYNTAX);
    assert_eq!(err(&mut c, &["BITFIELD", "k", "FOO", "u8", "0"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["BITFIELD", "k", "SET", "u8", "0", "1.5"]),
        NOT_INT
    );
    assert_eq!(
        err(&mut c, &["BITFIELD", "k", "INCRBY", "u8", "0", "z"]),
        NOT_INT
    );
    // Errors leave nothing behind, even after valid writes earlier in the command.
    assert_eq!(
        err(
            &mut c,
            &["BITFIELD", "k", "SET", "u8", "0", "1", "GET", "u99", "0"]
        ),
        BAD_TYPE
    );
    assert_eq!(q(&mut c, &["EXISTS", "k"]), int(0));
    // A refused write still creates the key, zero-filled (as Redis does).
    assert_eq!(
        q(
            &mut c,
            &["BITFIELD", "k", "OVERFLOW", "FAIL", "SET", "u8", "8", "1000"]
        ),
        Value::Array(vec![Value::Nil])
    );
    assert_eq!(bytes_of(&mut c, "k"), b"\x00\x00");
}

#[test]
fn bitfield_null_in_resp3() {
    let s = Server::tern(&[]);
    let mut c = s.conn_resp3();
    let v = q(
        &mut c,
        &[
            "BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "5", "GET", "u2", "0",
        ],
    );
    assert_eq!(v, Value::Array(vec![Value::Nil, Value::Int(0)]));
    // On the wire: RESP3 null inside the array.
    let mut raw = s.raw();
    let want = b"*2\r\n_\r\n:0\r\n";
    std::io::Write::write_all(
        &mut raw,
        b"HELLO 3\r\nBITFIELD k2 OVERFLOW FAIL INCRBY u2 0 5 GET u2 0\r\n",
    )
    .unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !out.ends_with(want) {
        match std::io::Read::read(&mut raw, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    assert!(out.starts_with(b"%"), "{:?}", String::from_utf8_lossy(&out));
    assert!(out.ends_with(want), "{:?}", String::from_utf8_lossy(&out));
}

#[test]
fn command_info_for_the_family() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    // (name, arity, first key, last key, step, flags, categories)
    type Row = (
        &'static str,
        i64,
        i64,
        i64,
        i64,
        &'static [&'static str],
        &'static [&'static str],
    );
    let expect: [Row; 7] = [
        (
            "setbit",
            4,
            1,
            1,
            1,
            &["write", "denyoom"],
            &["@write", "@bitmap", "@slow"],
        ),
        (
            "getbit",
            3,
            1,
            1,
            1,
            &["readonly", "fast"],
            &["@read", "@bitmap", "@fast"],
        ),
        (
            "bitcount",
            -2,
            1,
            1,
            1,
            &["readonly"],
            &["@read", "@bitmap", "@slow"],
        ),
        (
            "bitpos",
            -3,
            1,
            1,
            1,
            &["readonly"],
            &["@read", "@bitmap", "@slow"],
        ),
        (
            "bitop",
            -4,
            2,
            -1,
            1,
            &["write", "denyoom"],
            &["@write", "@bitmap", "@slow"],
        ),
        (
            "bitfield",
            -2,
            1,
            1,
            1,
            &["write", "denyoom"],
            &["@write", "@bitmap", "@slow"],
        ),
        (
            "bitfield_ro",
            -2,
            1,
            1,
            1,
            &["readonly", "fast"],
            &["@read", "@bitmap", "@fast"],
        ),
    ];
    let status_list = |v: &Value| -> Vec<String> {
        let Value::Array(items) = v else {
            panic!("{v:?}")
        };
        items
            .iter()
            .map(|i| match i {
                Value::SimpleString(s) => s.clone(),
                Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
                o => panic!("{o:?}"),
            })
            .collect()
    };
    for (name, arity, first, last, step, flags, cats) in expect {
        let Value::Array(info) = q(&mut c, &["COMMAND", "INFO", name]) else {
            panic!()
        };
        let Value::Array(e) = &info[0] else {
            panic!("{name}: no entry")
        };
        assert_eq!(e[1], int(arity), "{name}");
        assert_eq!(status_list(&e[2]), flags, "{name}");
        assert_eq!(e[3], int(first), "{name}");
        assert_eq!(e[4], int(last), "{name}");
        assert_eq!(e[5], int(step), "{name}");
        assert_eq!(status_list(&e[6]), cats, "{name}");
    }

    // Key specs and everything else against the real server (7.0 agrees with 7.2 here).
    let Some(r) = Server::redis(&[]) else {
        return;
    };
    let mut b = r.conn();
    for name in [
        "setbit",
        "getbit",
        "bitcount",
        "bitpos",
        "bitop",
        "bitfield_ro",
    ] {
        let (x, y) = crate::common::both(&mut c, &mut b, &["COMMAND", "INFO", name]);
        assert_eq!(x.unwrap(), y.unwrap(), "COMMAND INFO {name}");
    }
    for args in [
        &["COMMAND", "GETKEYS", "BITOP", "AND", "d", "a", "b"][..],
        &["COMMAND", "GETKEYSANDFLAGS", "BITOP", "AND", "d", "a", "b"],
        &["COMMAND", "GETKEYS", "SETBIT", "k", "0", "1"],
    ] {
        let (x, y) = crate::common::both(&mut c, &mut b, args);
        assert_eq!(x.unwrap(), y.unwrap(), "{args:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Differential fuzzing against redis-server
// ---------------------------------------------------------------------------------------------

/// splitmix64: a small deterministic generator (no extra dev-dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// A random bitmap: mostly-zero, mostly-one, random, or runs, of random length.
fn random_bitmap(rng: &mut Rng) -> Vec<u8> {
    let len = match rng.below(4) {
        0 => rng.below(4),
        1 => rng.below(20),
        2 => rng.below(100),
        _ => rng.below(600),
    } as usize;
    let style = rng.below(5);
    (0..len)
        .map(|_| {
            let b = match style {
                0 => 0,
                1 => 0xff,
                2 => rng.next() as u8,
                3 => rng.pick(&[0x00, 0xff, 0x0f, 0xf0, 0x80, 0x01]),
                _ => 1u8 << rng.below(8),
            };
            if rng.below(30) == 0 {
                rng.next() as u8
            } else {
                b
            }
        })
        .collect()
}

fn random_index(rng: &mut Rng, len: i64) -> String {
    match rng.below(10) {
        0 => rng
            .pick(&[
                "0",
                "-1",
                "9223372036854775807",
                "-9223372036854775808",
                "x",
                "1.5",
            ])
            .to_string(),
        1..=3 => rng.range(-len - 5, -1).to_string(),
        _ => rng.range(0, len + 5).to_string(),
    }
}

fn random_unit(rng: &mut Rng) -> &'static str {
    rng.pick(&["BIT", "BYTE", "bit", "byte", "bits"])
}

fn random_bitfield_type(rng: &mut Rng) -> String {
    match rng.below(20) {
        0 => rng.pick(&["u64", "i65", "i0", "U8", "x"]).to_string(),
        1..=9 => format!("i{}", rng.range(1, 64)),
        _ => format!("u{}", rng.range(1, 63)),
    }
}

fn random_value(rng: &mut Rng, bits: u32) -> String {
    match rng.below(8) {
        0 => rng
            .pick(&[
                "9223372036854775807",
                "-9223372036854775808",
                "0",
                "-1",
                "1",
                "zz",
            ])
            .to_string(),
        1 => (rng.next() as i64).to_string(),
        _ => {
            let span = 1i64 << bits.clamp(1, 62);
            rng.range(-span, span).to_string()
        }
    }
}

fn random_command(rng: &mut Rng, keys: &[&str]) -> Vec<String> {
    let key = rng.pick(keys).to_string();
    let s = |x: &str| x.to_string();
    let len = 80i64;
    match rng.below(9) {
        0 => {
            let mut v = vec![s("BITCOUNT"), key];
            match rng.below(4) {
                0 => {}
                1 => v.extend([random_index(rng, len), random_index(rng, len)]),
                2 => v.extend([
                    random_index(rng, len * 8),
                    random_index(rng, len * 8),
                    s(random_unit(rng)),
                ]),
                _ => v.extend([random_index(rng, len)]),
            }
            v
        }
        1 => {
            let bit = s(rng.pick(&["0", "1", "0", "1", "2"]));
            let mut v = vec![s("BITPOS"), key, bit];
            match rng.below(5) {
                0 => {}
                1 => v.push(random_index(rng, len)),
                2 => v.extend([random_index(rng, len), random_index(rng, len)]),
                3 => v.extend([
                    random_index(rng, len * 8),
                    random_index(rng, len * 8),
                    s(random_unit(rng)),
                ]),
                _ => v.extend([random_index(rng, len), random_index(rng, len), s("byte")]),
            }
            v
        }
        2 => vec![s("GETBIT"), key, rng.range(-2, len * 8 + 20).to_string()],
        3 => vec![
            s("SETBIT"),
            key,
            rng.range(-2, len * 8 + 20).to_string(),
            s(rng.pick(&["0", "1", "1", "0", "2"])),
        ],
        4 => {
            let op = s(rng.pick(&["AND", "OR", "XOR", "NOT", "and", "xor"]));
            let n = if op == "NOT" || rng.below(10) == 0 {
                1
            } else {
                rng.range(1, 4)
            };
            let mut v = vec![s("BITOP"), op, s(rng.pick(keys))];
            for _ in 0..n {
                v.push(s(rng.pick(keys)));
            }
            v
        }
        5 => vec![s("GET"), key],
        6 | 7 => {
            let ro = rng.below(4) == 0;
            let mut v = vec![s(if ro { "BITFIELD_RO" } else { "BITFIELD" }), key];
            for _ in 0..rng.range(0, 4) {
                let t = random_bitfield_type(rng);
                let bits: u32 = t[1..].parse().unwrap_or(8);
                let off = if rng.below(4) == 0 {
                    format!("#{}", rng.range(0, 12))
                } else {
                    rng.range(0, len * 8 + 10).to_string()
                };
                match rng.below(if ro { 8 } else { 4 }) {
                    0 => v.extend([s("SET"), t, off, random_value(rng, bits)]),
                    1 => v.extend([s("INCRBY"), t, off, random_value(rng, bits)]),
                    2 => v.extend([
                        s("OVERFLOW"),
                        s(rng.pick(&["WRAP", "SAT", "FAIL", "sat", "fail"])),
                    ]),
                    _ => v.extend([s("GET"), t, off]),
                }
            }
            v
        }
        _ => {
            // Reset a key to a fresh random bitmap, sometimes an integer.
            if rng.below(3) == 0 {
                vec![
                    s("SET"),
                    key,
                    (rng.next() as i64 >> rng.below(60)).to_string(),
                ]
            } else {
                vec![s("DEL"), key]
            }
        }
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
    let keys = ["k1", "k2", "k3", "k4"];
    let mut rng = Rng(0x05ee_db17);
    for round in 0..40 {
        for k in keys {
            let bm = random_bitmap(&mut rng);
            set_bytes(&mut rc, k, &bm);
            set_bytes(&mut tc, k, &bm);
        }
        for step in 0..150 {
            let cmdv = random_command(&mut rng, &keys);
            let args: Vec<&[u8]> = cmdv.iter().map(|a| a.as_bytes()).collect();
            let (x, y) = (norm(run(&mut tc, &args)), norm(run(&mut rc, &args)));
            assert_eq!(x, y, "round {round} step {step}: {cmdv:?}");
        }
        for k in keys {
            assert_eq!(
                bytes_of(&mut tc, k),
                bytes_of(&mut rc, k),
                "round {round}: contents of {k}"
            );
        }
    }
}

/// Exhaustive small ranges: every start/end pair over a few bitmaps, in both units.
#[test]
fn differential_ranges_exhaustive() {
    let Some(r) = Server::redis(&[]) else {
        return;
    };
    let t = Server::tern(&[]);
    let mut rc = r.conn();
    let mut tc = t.conn();
    let maps: [&[u8]; 4] = [
        b"\xff\x00\xf0",
        b"\x00\x00\x01\x80",
        b"\xff\xff\xff",
        b"\x5a",
    ];
    for m in maps {
        set_bytes(&mut rc, "m", m);
        set_bytes(&mut tc, "m", m);
        let nbits = m.len() as i64 * 8;
        let mut cmds: Vec<Vec<String>> = Vec::new();
        for a in -nbits - 2..nbits + 2 {
            for b in -nbits - 2..nbits + 2 {
                let (a, b) = (a.to_string(), b.to_string());
                cmds.push(vec![
                    "BITCOUNT".into(),
                    "m".into(),
                    a.clone(),
                    b.clone(),
                    "BIT".into(),
                ]);
                for bit in ["0", "1"] {
                    cmds.push(vec![
                        "BITPOS".into(),
                        "m".into(),
                        bit.into(),
                        a.clone(),
                        b.clone(),
                        "BIT".into(),
                    ]);
                }
            }
        }
        let nbytes = m.len() as i64;
        for a in -nbytes - 2..nbytes + 2 {
            for bit in ["0", "1"] {
                cmds.push(vec!["BITPOS".into(), "m".into(), bit.into(), a.to_string()]);
            }
            for b in -nbytes - 2..nbytes + 2 {
                cmds.push(vec![
                    "BITCOUNT".into(),
                    "m".into(),
                    a.to_string(),
                    b.to_string(),
                ]);
                for bit in ["0", "1"] {
                    cmds.push(vec![
                        "BITPOS".into(),
                        "m".into(),
                        bit.into(),
                        a.to_string(),
                        b.to_string(),
                    ]);
                }
            }
        }
        // Pipeline each batch on both servers.
        for chunk in cmds.chunks(500) {
            let mut p = redis::pipe();
            for cv in chunk {
                let mut c = redis::cmd(&cv[0]);
                for a in &cv[1..] {
                    c.arg(a);
                }
                p.add_command(c);
            }
            let x: Vec<Value> = p.query(&mut tc).unwrap();
            let y: Vec<Value> = p.query(&mut rc).unwrap();
            for (i, (a, b)) in x.iter().zip(&y).enumerate() {
                assert_eq!(a, b, "{:?} on {m:?}", chunk[i]);
            }
        }
    }
}

/// BITFIELD: every type and many offsets and values, SET/INCRBY under each overflow policy.
#[test]
fn differential_bitfield_overflow() {
    let Some(r) = Server::redis(&[]) else {
        return;
    };
    let t = Server::tern(&[]);
    let mut rc = r.conn();
    let mut tc = t.conn();
    let mut rng = Rng(77);
    for _ in 0..4000 {
        let signed = rng.below(2) == 0;
        let bits = if signed {
            rng.range(1, 64)
        } else {
            rng.range(1, 63)
        } as u32;
        let ty = format!("{}{bits}", if signed { 'i' } else { 'u' });
        let off = rng.range(0, 40).to_string();
        let ow = rng.pick(&["WRAP", "SAT", "FAIL"]);
        let op = rng.pick(&["SET", "INCRBY"]);
        let v1 = random_value(&mut rng, bits);
        let v2 = random_value(&mut rng, bits);
        let args = [
            "BITFIELD", "f", "OVERFLOW", ow, "SET", &ty, &off, &v1, op, &ty, &off, &v2, "GET", &ty,
            &off,
        ];
        let (x, y) = crate::common::both(&mut tc, &mut rc, &args);
        assert_eq!(norm(x), norm(y), "{args:?}");
    }
    assert_eq!(bytes_of(&mut tc, "f"), bytes_of(&mut rc, "f"));
}

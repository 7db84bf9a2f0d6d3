//! Set family: every command against the real binary, error texts, Redis 7.2's encodings and
//! conversions (intset / listpack / hashtable, also after CONFIG SET), RESP3 shapes, and
//! differential runs against Debian's redis-server when it is installed.
use crate::common::{encoding, err, q, qi, Server};
use redis::{Connection, Value};
use std::collections::BTreeSet;

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        v => panic!("not a string: {v:?}"),
    }
}

/// The elements of an array or set reply, as strings, in reply order.
fn items(v: Value) -> Vec<String> {
    match v {
        Value::Array(a) | Value::Set(a) => a.iter().map(text).collect(),
        Value::Nil => vec![],
        v => panic!("not an array: {v:?}"),
    }
}

fn sorted(c: &mut Connection, args: &[&str]) -> Vec<String> {
    let mut v = items(q(c, args));
    v.sort();
    v
}

fn strs(v: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// SADD `members` one command at a time.
fn sadd_each(c: &mut Connection, key: &str, members: impl IntoIterator<Item = String>) {
    for m in members {
        q(c, &["SADD", key, &m]);
    }
}

fn sadd_all(c: &mut Connection, key: &str, members: &[String]) -> i64 {
    let mut args = vec!["SADD", key];
    args.extend(members.iter().map(|s| s.as_str()));
    qi(c, &args)
}

fn range(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const SYNTAX: &str = "ERR syntax error";
const NOT_INT: &str = "ERR value is not an integer or out of range";

#[test]
fn basics() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(qi(&mut c, &["SADD", "s", "a", "b", "c", "a"]), 3);
    assert_eq!(qi(&mut c, &["SADD", "s", "A", "a", "b", "c", "B"]), 2);
    assert_eq!(qi(&mut c, &["SCARD", "s"]), 5);
    assert_eq!(
        sorted(&mut c, &["SMEMBERS", "s"]),
        strs(&["A", "B", "a", "b", "c"])
    );
    assert_eq!(qi(&mut c, &["SISMEMBER", "s", "a"]), 1);
    assert_eq!(qi(&mut c, &["SISMEMBER", "s", "z"]), 0);
    assert_eq!(
        items(q(&mut c, &["SMISMEMBER", "s", "a", "z", "B"])),
        vec!["1", "0", "1"]
    );
    assert_eq!(
        items(q(&mut c, &["SMISMEMBER", "nokey", "a", "b"])),
        vec!["0", "0"]
    );
    assert_eq!(qi(&mut c, &["SCARD", "nokey"]), 0);
    assert_eq!(qi(&mut c, &["SISMEMBER", "nokey", "a"]), 0);
    assert_eq!(
        items(q(&mut c, &["SMEMBERS", "nokey"])),
        Vec::<String>::new()
    );
    // SREM, deleting the key with its last member.
    assert_eq!(qi(&mut c, &["SREM", "s", "a", "zz", "A"]), 2);
    assert_eq!(qi(&mut c, &["SREM", "nokey", "a"]), 0);
    assert_eq!(qi(&mut c, &["SREM", "s", "b", "c", "B", "x", "y"]), 3);
    assert_eq!(qi(&mut c, &["EXISTS", "s"]), 0);
    // Integer members, binary members, the empty string.
    assert_eq!(qi(&mut c, &["SADD", "i", "17", "-3", "0", "17"]), 3);
    assert_eq!(sorted(&mut c, &["SMEMBERS", "i"]), strs(&["-3", "0", "17"]));
    assert_eq!(qi(&mut c, &["SISMEMBER", "i", "017"]), 0);
    assert_eq!(qi(&mut c, &["SADD", "i", ""]), 1);
    assert_eq!(qi(&mut c, &["SISMEMBER", "i", ""]), 1);
    assert_eq!(text(&q(&mut c, &["TYPE", "i"])), "set");
    let mut bin = redis::cmd("SADD");
    bin.arg("b").arg(&b"\x00\xff\r\n"[..]);
    assert_eq!(bin.query::<i64>(&mut c).unwrap(), 1);
    let mut ism = redis::cmd("SISMEMBER");
    ism.arg("b").arg(&b"\x00\xff\r\n"[..]);
    assert_eq!(ism.query::<i64>(&mut c).unwrap(), 1);
}

#[test]
fn errors_and_wrongtype() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["SET", "str", "x"]);
    q(&mut c, &["SADD", "set", "a", "b"]);
    for cmd in [
        &["SADD", "str", "a"][..],
        &["SREM", "str", "a"],
        &["SMEMBERS", "str"],
        &["SISMEMBER", "str", "a"],
        &["SMISMEMBER", "str", "a"],
        &["SCARD", "str"],
        &["SPOP", "str"],
        &["SPOP", "str", "2"],
        &["SRANDMEMBER", "str"],
        &["SRANDMEMBER", "str", "2"],
        &["SMOVE", "str", "set", "a"],
        &["SMOVE", "set", "str", "a"],
        &["SINTER", "str", "nokey"],
        &["SINTER", "nokey", "str"],
        &["SINTER", "set", "str"],
        &["SINTERCARD", "2", "nokey", "str"],
        &["SINTERSTORE", "dst", "set", "str"],
        &["SUNION", "nokey", "str"],
        &["SUNIONSTORE", "dst", "str"],
        &["SDIFF", "set", "str"],
        &["SDIFF", "str", "set"],
        &["SDIFFSTORE", "dst", "nokey", "str"],
        &["SSCAN", "str", "0"],
    ] {
        assert_eq!(err(&mut c, cmd), WT, "{cmd:?}");
    }
    assert_eq!(qi(&mut c, &["EXISTS", "dst"]), 0);
    // Arity.
    for cmd in [
        &["SADD", "k"][..],
        &["SREM", "k"],
        &["SMEMBERS"],
        &["SMEMBERS", "a", "b"],
        &["SISMEMBER", "k"],
        &["SMISMEMBER", "k"],
        &["SCARD"],
        &["SPOP"],
        &["SRANDMEMBER"],
        &["SMOVE", "a", "b"],
        &["SINTER"],
        &["SINTERCARD", "1"],
        &["SINTERSTORE", "d"],
        &["SUNION"],
        &["SUNIONSTORE", "d"],
        &["SDIFF"],
        &["SDIFFSTORE", "d"],
        &["SSCAN", "k"],
    ] {
        let e = err(&mut c, cmd);
        assert_eq!(
            e,
            format!(
                "ERR wrong number of arguments for '{}' command",
                cmd[0].to_lowercase()
            )
        );
    }
    // SPOP / SRANDMEMBER counts.
    assert_eq!(err(&mut c, &["SPOP", "set", "1", "2"]), SYNTAX);
    assert_eq!(err(&mut c, &["SRANDMEMBER", "set", "1", "2"]), SYNTAX);
    let pos = "ERR value is out of range, must be positive";
    assert_eq!(err(&mut c, &["SPOP", "set", "-1"]), pos);
    assert_eq!(err(&mut c, &["SPOP", "set", "x"]), pos);
    assert_eq!(err(&mut c, &["SPOP", "nokey", "-1"]), pos);
    assert_eq!(err(&mut c, &["SRANDMEMBER", "set", "x"]), NOT_INT);
    assert_eq!(
        err(&mut c, &["SRANDMEMBER", "set", "-9223372036854775808"]),
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
    );
    // SINTERCARD arguments.
    let nk = "ERR numkeys should be greater than 0";
    assert_eq!(err(&mut c, &["SINTERCARD", "0", "set"]), nk);
    assert_eq!(err(&mut c, &["SINTERCARD", "a", "set"]), nk);
    assert_eq!(err(&mut c, &["SINTERCARD", "-1", "set"]), nk);
    let many = "ERR Number of keys can't be greater than number of args";
    assert_eq!(err(&mut c, &["SINTERCARD", "2", "set"]), many);
    assert_eq!(err(&mut c, &["SINTERCARD", "3", "set", "x"]), many);
    assert_eq!(err(&mut c, &["SINTERCARD", "1", "set", "x"]), SYNTAX);
    assert_eq!(err(&mut c, &["SINTERCARD", "1", "set", "LIMIT"]), SYNTAX);
    let neg = "ERR LIMIT can't be negative";
    assert_eq!(err(&mut c, &["SINTERCARD", "1", "set", "LIMIT", "-1"]), neg);
    assert_eq!(err(&mut c, &["SINTERCARD", "1", "set", "limit", "a"]), neg);
    // SSCAN.
    assert_eq!(err(&mut c, &["SSCAN", "set", "x"]), "ERR invalid cursor");
    assert_eq!(err(&mut c, &["SSCAN", "nokey", "x"]), "ERR invalid cursor");
    assert_eq!(err(&mut c, &["SSCAN", "set", "0", "COUNT", "0"]), SYNTAX);
    assert_eq!(err(&mut c, &["SSCAN", "set", "0", "COUNT", "x"]), NOT_INT);
    assert_eq!(err(&mut c, &["SSCAN", "set", "0", "TYPE", "set"]), SYNTAX);
    assert_eq!(err(&mut c, &["SSCAN", "set", "0", "MATCH"]), SYNTAX);
    // Options are only parsed for an existing set, as in Redis.
    assert_eq!(
        q(&mut c, &["SSCAN", "nokey", "0", "COUNT", "0"]),
        Value::Array(vec![Value::BulkString(b"0".to_vec()), Value::Array(vec![])])
    );
}

#[test]
fn encodings_and_conversions() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    // intset while integers only; listpack on a string when small; hashtable when big.
    q(&mut c, &["SADD", "s", "1", "2", "3"]);
    assert_eq!(encoding(&mut c, "s"), "intset");
    q(&mut c, &["SADD", "s", "a"]);
    assert_eq!(encoding(&mut c, "s"), "listpack");
    q(&mut c, &["SADD", "big", "0"]);
    sadd_each(&mut c, "big", (1..130).map(|i| i.to_string()));
    assert_eq!(encoding(&mut c, "big"), "intset");
    q(&mut c, &["SADD", "big", "a"]);
    assert_eq!(encoding(&mut c, "big"), "hashtable");
    // An integer beyond 64 bits is a string.
    q(&mut c, &["SADD", "huge", "213244124402402314402033402"]);
    assert_eq!(encoding(&mut c, "huge"), "listpack");
    assert_eq!(
        qi(
            &mut c,
            &["SISMEMBER", "huge", "213244124402402314402033402"]
        ),
        1
    );
    // 512 integers stay an intset, the 513th converts.
    let ints: Vec<String> = (0..512).map(|i| i.to_string()).collect();
    assert_eq!(sadd_all(&mut c, "is", &ints), 512);
    assert_eq!(encoding(&mut c, "is"), "intset");
    q(&mut c, &["SADD", "is", "512"]);
    assert_eq!(encoding(&mut c, "is"), "hashtable");
    // 128 strings stay a listpack, the 129th converts.
    let mut m = vec!["a".to_string()];
    m.extend((0..127).map(|i| i.to_string()));
    sadd_all(&mut c, "lp", &m);
    assert_eq!(encoding(&mut c, "lp"), "listpack");
    assert_eq!(qi(&mut c, &["SCARD", "lp"]), 128);
    q(&mut c, &["SADD", "lp", "b"]);
    assert_eq!(encoding(&mut c, "lp"), "hashtable");
    // A member longer than set-max-listpack-value (64) converts.
    q(&mut c, &["SADD", "long", "a"]);
    q(&mut c, &["SADD", "long", &"x".repeat(64)]);
    assert_eq!(encoding(&mut c, "long"), "listpack");
    q(&mut c, &["SADD", "long", &"x".repeat(65)]);
    assert_eq!(encoding(&mut c, "long"), "hashtable");
    // Many members in one SADD go straight to a hash table, duplicates or not.
    let mut dup = vec!["SADD", "dup"];
    dup.extend(std::iter::repeat_n("a", 129));
    assert_eq!(qi(&mut c, &dup), 1);
    assert_eq!(encoding(&mut c, "dup"), "hashtable");
    let mut dupi = vec!["SADD", "dupi"];
    dupi.extend(std::iter::repeat_n("7", 300));
    q(&mut c, &dupi);
    assert_eq!(encoding(&mut c, "dupi"), "intset");
    let mut dupi2 = vec!["SADD", "dupi2"];
    dupi2.extend(std::iter::repeat_n("7", 513));
    q(&mut c, &dupi2);
    assert_eq!(encoding(&mut c, "dupi2"), "hashtable");
    // Hash tables never shrink back on SREM.
    q(&mut c, &["SREM", "lp", "b", "a"]);
    assert_eq!(encoding(&mut c, "lp"), "hashtable");
    // An intset whose members are too long for set-max-listpack-value goes to a hash table.
    q(&mut c, &["CONFIG", "SET", "set-max-listpack-value", "3"]);
    q(&mut c, &["SADD", "wide", "12345"]);
    q(&mut c, &["SADD", "wide", "a"]);
    assert_eq!(encoding(&mut c, "wide"), "hashtable");
    q(&mut c, &["SADD", "narrow", "123"]);
    q(&mut c, &["SADD", "narrow", "a"]);
    assert_eq!(encoding(&mut c, "narrow"), "listpack");
    q(&mut c, &["CONFIG", "SET", "set-max-listpack-value", "64"]);
}

#[test]
fn thresholds_follow_config_set() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["CONFIG", "SET", "set-max-intset-entries", "4"]);
    q(&mut c, &["CONFIG", "SET", "set-max-listpack-entries", "3"]);
    q(&mut c, &["CONFIG", "SET", "set-max-listpack-value", "5"]);
    q(&mut c, &["SADD", "i", "1", "2", "3", "4"]);
    assert_eq!(encoding(&mut c, "i"), "intset");
    q(&mut c, &["SADD", "i", "5"]);
    assert_eq!(encoding(&mut c, "i"), "hashtable");
    q(&mut c, &["SADD", "l", "a", "b", "c"]);
    assert_eq!(encoding(&mut c, "l"), "listpack");
    q(&mut c, &["SADD", "l", "d"]);
    assert_eq!(encoding(&mut c, "l"), "hashtable");
    q(&mut c, &["SADD", "v", "abcde"]);
    assert_eq!(encoding(&mut c, "v"), "listpack");
    q(&mut c, &["SADD", "v", "abcdef"]);
    assert_eq!(encoding(&mut c, "v"), "hashtable");
    // Four integers and a string: too many for a 3-entry listpack.
    q(&mut c, &["SADD", "mix", "1", "2", "3"]);
    q(&mut c, &["SADD", "mix", "x"]);
    assert_eq!(encoding(&mut c, "mix"), "hashtable");
    q(&mut c, &["SADD", "mix2", "1", "2"]);
    q(&mut c, &["SADD", "mix2", "x"]);
    assert_eq!(encoding(&mut c, "mix2"), "listpack");
    // Four members in one SADD exceed the listpack limit up front.
    q(&mut c, &["SADD", "four", "a", "a", "a", "a"]);
    assert_eq!(encoding(&mut c, "four"), "hashtable");
    // set-max-listpack-entries 0: strings always go to a hash table.
    q(&mut c, &["CONFIG", "SET", "set-max-listpack-entries", "0"]);
    q(&mut c, &["SADD", "z", "a"]);
    assert_eq!(encoding(&mut c, "z"), "hashtable");
    q(&mut c, &["SADD", "zi", "1"]);
    assert_eq!(encoding(&mut c, "zi"), "intset");
}

#[test]
fn store_results_encoding() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    // Two listpacks whose intersection is all integers: an intset.
    q(
        &mut c,
        &["SADD", "a", "a", "b", "c", "1", "3", "6", "x", "y", "z"],
    );
    q(
        &mut c,
        &["SADD", "b", "e", "f", "g", "1", "2", "3", "u", "v", "w"],
    );
    assert_eq!(qi(&mut c, &["SINTERSTORE", "r", "a", "b"]), 2);
    assert_eq!(encoding(&mut c, "r"), "intset");
    assert_eq!(sorted(&mut c, &["SMEMBERS", "r"]), strs(&["1", "3"]));
    // Two hash tables with an all-integer intersection: an intset as well.
    q(&mut c, &["DEL", "a", "b"]);
    let mut big: Vec<String> = (1..130).map(|i| i.to_string()).collect();
    big.push("x".into());
    sadd_all(&mut c, "a", &big);
    sadd_all(&mut c, "b", &big[..129]);
    q(&mut c, &["SADD", "b", "y"]);
    assert_eq!(encoding(&mut c, "a"), "hashtable");
    assert_eq!(qi(&mut c, &["SINTERSTORE", "r", "a", "b"]), 129);
    assert_eq!(encoding(&mut c, "r"), "intset");
    // Intersections with strings: a listpack when small.
    q(&mut c, &["SADD", "b", "x"]);
    assert_eq!(qi(&mut c, &["SINTERSTORE", "r", "a", "b"]), 130);
    assert_eq!(encoding(&mut c, "r"), "hashtable");
    q(&mut c, &["SADD", "c", "x", "1", "2"]);
    assert_eq!(qi(&mut c, &["SINTERSTORE", "r", "a", "c"]), 3);
    assert_eq!(encoding(&mut c, "r"), "listpack");
    // Unions and differences start from an intset and convert as members arrive.
    q(&mut c, &["SADD", "i1", "1", "2"]);
    q(&mut c, &["SADD", "i2", "2", "3"]);
    assert_eq!(qi(&mut c, &["SUNIONSTORE", "r", "i1", "i2"]), 3);
    assert_eq!(encoding(&mut c, "r"), "intset");
    assert_eq!(qi(&mut c, &["SUNIONSTORE", "r", "i1", "c"]), 3);
    assert_eq!(encoding(&mut c, "r"), "listpack");
    assert_eq!(qi(&mut c, &["SDIFFSTORE", "r", "c", "i1"]), 1);
    assert_eq!(encoding(&mut c, "r"), "listpack");
    assert_eq!(qi(&mut c, &["SDIFFSTORE", "r", "i2", "i1"]), 1);
    assert_eq!(encoding(&mut c, "r"), "intset");
    assert_eq!(qi(&mut c, &["SUNIONSTORE", "r", "a", "i1"]), 130);
    assert_eq!(encoding(&mut c, "r"), "hashtable");
    // SDIFF of hash tables leaving only integers: still a hash table (no narrowing).
    assert_eq!(qi(&mut c, &["SDIFFSTORE", "r", "a", "c"]), 127);
    // SMOVE creates the destination from the member.
    q(&mut c, &["SMOVE", "c", "newi", "1"]);
    assert_eq!(encoding(&mut c, "newi"), "intset");
    q(&mut c, &["SMOVE", "c", "news", "x"]);
    assert_eq!(encoding(&mut c, "news"), "listpack");
    // SPOP taking almost everything rebuilds the rest compact.
    let strs200 = range("m", 200);
    sadd_all(&mut c, "pop", &strs200);
    assert_eq!(encoding(&mut c, "pop"), "hashtable");
    assert_eq!(items(q(&mut c, &["SPOP", "pop", "190"])).len(), 190);
    assert_eq!(encoding(&mut c, "pop"), "listpack");
    assert_eq!(qi(&mut c, &["SCARD", "pop"]), 10);
}

#[test]
fn store_commands_replace_and_delete() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["SADD", "s1", "a", "b", "c"]);
    q(&mut c, &["SADD", "s2", "b", "c", "d"]);
    q(&mut c, &["SET", "dst", "string"]);
    q(&mut c, &["EXPIRE", "dst", "100"]);
    assert_eq!(qi(&mut c, &["SINTERSTORE", "dst", "s1", "s2"]), 2);
    assert_eq!(text(&q(&mut c, &["TYPE", "dst"])), "set");
    assert_eq!(qi(&mut c, &["TTL", "dst"]), -1);
    assert_eq!(sorted(&mut c, &["SMEMBERS", "dst"]), strs(&["b", "c"]));
    assert_eq!(qi(&mut c, &["SUNIONSTORE", "dst", "s1", "s2", "nokey"]), 4);
    assert_eq!(
        sorted(&mut c, &["SMEMBERS", "dst"]),
        strs(&["a", "b", "c", "d"])
    );
    assert_eq!(qi(&mut c, &["SDIFFSTORE", "dst", "s1", "s2"]), 1);
    assert_eq!(sorted(&mut c, &["SMEMBERS", "dst"]), strs(&["a"]));
    // A destination among the sources.
    assert_eq!(qi(&mut c, &["SUNIONSTORE", "s1", "s1", "s2"]), 4);
    assert_eq!(
        sorted(&mut c, &["SMEMBERS", "s1"]),
        strs(&["a", "b", "c", "d"])
    );
    // Empty results delete the destination, whatever it held.
    q(&mut c, &["SET", "dst", "x"]);
    assert_eq!(qi(&mut c, &["SINTERSTORE", "dst", "s1", "nokey"]), 0);
    assert_eq!(qi(&mut c, &["EXISTS", "dst"]), 0);
    q(&mut c, &["SET", "dst", "x"]);
    assert_eq!(qi(&mut c, &["SDIFFSTORE", "dst", "s2", "s1"]), 0);
    assert_eq!(qi(&mut c, &["EXISTS", "dst"]), 0);
    q(&mut c, &["SET", "dst", "x"]);
    assert_eq!(qi(&mut c, &["SUNIONSTORE", "dst", "n1", "n2"]), 0);
    assert_eq!(qi(&mut c, &["EXISTS", "dst"]), 0);
    assert_eq!(qi(&mut c, &["SINTERSTORE", "dst", "s1", "s1"]), 4);
    // A failing STORE leaves the destination alone.
    q(&mut c, &["SET", "str", "x"]);
    assert_eq!(err(&mut c, &["SINTERSTORE", "dst", "str", "s1"]), WT);
    assert_eq!(qi(&mut c, &["SCARD", "dst"]), 4);
}

#[test]
fn algebra() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    for (enc, large) in [("regular", "foo"), ("intset", "200")] {
        for i in 1..=5 {
            q(&mut c, &["DEL", &format!("set{i}")]);
        }
        let mut s1 = vec![];
        let mut s2 = vec![];
        for i in 0..200 {
            s1.push(i.to_string());
            s2.push((i + 195).to_string());
        }
        sadd_all(&mut c, "set1", &s1);
        sadd_all(&mut c, "set2", &s2);
        q(&mut c, &["SADD", "set3", "199", "195", "1000", "2000"]);
        sadd_all(
            &mut c,
            "set4",
            &(5..200).map(|i| i.to_string()).collect::<Vec<_>>(),
        );
        q(&mut c, &["SADD", "set5", "0"]);
        for i in 1..=5 {
            q(&mut c, &["SADD", &format!("set{i}"), large]);
        }
        let mut want = strs(&["195", "196", "197", "198", "199", large]);
        want.sort();
        assert_eq!(sorted(&mut c, &["SINTER", "set1", "set2"]), want, "{enc}");
        assert_eq!(qi(&mut c, &["SINTERCARD", "2", "set1", "set2"]), 6);
        assert_eq!(
            qi(&mut c, &["SINTERCARD", "2", "set1", "set2", "LIMIT", "0"]),
            6
        );
        assert_eq!(
            qi(&mut c, &["SINTERCARD", "2", "set1", "set2", "LIMIT", "3"]),
            3
        );
        assert_eq!(
            qi(&mut c, &["SINTERCARD", "2", "set1", "set2", "limit", "10"]),
            6
        );
        let mut want3 = strs(&["195", "199", large]);
        want3.sort();
        assert_eq!(sorted(&mut c, &["SINTER", "set1", "set2", "set3"]), want3);
        assert_eq!(
            qi(
                &mut c,
                &["SINTERCARD", "3", "set1", "set2", "set3", "LIMIT", "2"]
            ),
            2
        );
        let mut u: BTreeSet<String> = s1.iter().chain(s2.iter()).cloned().collect();
        u.insert(large.to_string());
        let u: Vec<String> = u.into_iter().collect();
        assert_eq!(sorted(&mut c, &["SUNION", "set1", "set2"]), u);
        assert_eq!(
            sorted(&mut c, &["SUNION", "nokey1", "set1", "set2", "nokey2"]),
            u
        );
        assert_eq!(
            sorted(&mut c, &["SDIFF", "set1", "set4"]),
            strs(&["0", "1", "2", "3", "4"])
        );
        assert_eq!(
            sorted(&mut c, &["SDIFF", "set1", "set4", "set5"]),
            strs(&["1", "2", "3", "4"])
        );
        assert_eq!(
            qi(&mut c, &["SDIFFSTORE", "res", "set1", "set4", "set5"]),
            4
        );
        if enc == "intset" {
            assert_eq!(encoding(&mut c, "res"), "intset");
        }
        let all = sorted(&mut c, &["SMEMBERS", "set1"]);
        assert_eq!(sorted(&mut c, &["SINTER", "set1", "set1", "set1"]), all);
        assert_eq!(sorted(&mut c, &["SUNION", "set1", "set1", "set1"]), all);
        assert_eq!(
            sorted(&mut c, &["SDIFF", "set1", "set1", "set1"]),
            Vec::<String>::new()
        );
        assert_eq!(
            sorted(&mut c, &["SDIFF", "set1", "set2", "set1"]),
            Vec::<String>::new()
        );
    }
    // Missing keys are empty sets.
    assert_eq!(
        sorted(&mut c, &["SINTER", "set1", "nokey"]),
        Vec::<String>::new()
    );
    assert_eq!(qi(&mut c, &["SINTERCARD", "1", "nokey"]), 0);
    assert_eq!(
        sorted(&mut c, &["SDIFF", "nokey", "set1"]),
        Vec::<String>::new()
    );
    // Same integers under different encodings.
    q(&mut c, &["SADD", "e1", "1", "2", "3"]);
    q(&mut c, &["SADD", "e2", "1", "2", "3", "a"]);
    q(&mut c, &["SREM", "e2", "a"]);
    assert_eq!(encoding(&mut c, "e2"), "listpack");
    assert_eq!(
        sorted(&mut c, &["SINTER", "e1", "e2"]),
        strs(&["1", "2", "3"])
    );
    assert_eq!(sorted(&mut c, &["SDIFF", "e1", "e2"]), Vec::<String>::new());
    // A hash table holding integer strings against an intset.
    let mut h: Vec<String> = range("h", 200);
    h.extend(["1".to_string(), "3".to_string()]);
    sadd_all(&mut c, "ht", &h);
    assert_eq!(sorted(&mut c, &["SINTER", "ht", "e1"]), strs(&["1", "3"]));
    assert_eq!(sorted(&mut c, &["SDIFF", "e1", "ht"]), strs(&["2"]));
    assert_eq!(qi(&mut c, &["SDIFFSTORE", "r", "ht", "e1"]), 200);
}

#[test]
fn spop_and_srandmember() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let cases: [(&str, Vec<String>); 3] = [
        ("intset", (1..=26).map(|i| i.to_string()).collect()),
        (
            "listpack",
            range("", 0)
                .into_iter()
                .chain((b'a'..=b'z').map(|b| (b as char).to_string()))
                .collect(),
        ),
        ("hashtable", {
            let mut v: Vec<String> = (b'b'..=b'z').map(|b| (b as char).to_string()).collect();
            v.push(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".into(),
            );
            v
        }),
    ];
    for (enc, members) in cases.iter() {
        q(&mut c, &["DEL", "s"]);
        sadd_all(&mut c, "s", members);
        assert_eq!(&encoding(&mut c, "s"), enc);
        let mut got = vec![];
        for n in ["11", "9", "0", "4", "1", "0", "1", "0"] {
            got.extend(items(q(&mut c, &["SPOP", "s", n])));
        }
        got.sort();
        let mut want = members.clone();
        want.sort();
        assert_eq!(got, want, "{enc}");
        assert_eq!(qi(&mut c, &["EXISTS", "s"]), 0);
        // Single pops.
        sadd_all(&mut c, "s", members);
        let mut got = vec![];
        for _ in 0..members.len() {
            got.push(text(&q(&mut c, &["SPOP", "s"])));
        }
        got.sort();
        assert_eq!(got, want);
        assert_eq!(q(&mut c, &["SPOP", "s"]), Value::Nil);
        // SRANDMEMBER cases: negative (repeats), all, most, few.
        sadd_all(&mut c, "s", members);
        let n = members.len();
        let r = items(q(&mut c, &["SRANDMEMBER", "s", "-100"]));
        assert_eq!(r.len(), 100);
        assert!(r.iter().all(|m| want.contains(m)));
        for (count, expect) in [(n + 10, n), (n, n), (n - 2, n - 2), (3, 3), (1, 1)] {
            let r = items(q(&mut c, &["SRANDMEMBER", "s", &count.to_string()]));
            assert_eq!(r.len(), expect, "{enc} count {count}");
            let uniq: BTreeSet<&String> = r.iter().collect();
            assert_eq!(
                uniq.len(),
                expect,
                "{enc}: members repeat for count {count}"
            );
            assert!(r.iter().all(|m| want.contains(m)));
        }
        let one = text(&q(&mut c, &["SRANDMEMBER", "s"]));
        assert!(want.contains(&one));
        assert_eq!(qi(&mut c, &["SCARD", "s"]), n as i64);
        // Every member eventually shows up.
        let mut seen = BTreeSet::new();
        for _ in 0..300 {
            seen.extend(items(q(&mut c, &["SRANDMEMBER", "s", "-10"])));
        }
        assert_eq!(seen.len(), n);
        q(&mut c, &["DEL", "s"]);
    }
    assert_eq!(q(&mut c, &["SRANDMEMBER", "nokey"]), Value::Nil);
    assert_eq!(
        items(q(&mut c, &["SRANDMEMBER", "nokey", "5"])),
        Vec::<String>::new()
    );
    q(&mut c, &["SADD", "s", "a"]);
    assert_eq!(
        items(q(&mut c, &["SRANDMEMBER", "s", "0"])),
        Vec::<String>::new()
    );
    assert_eq!(items(q(&mut c, &["SPOP", "s", "0"])), Vec::<String>::new());
    assert_eq!(
        items(q(&mut c, &["SPOP", "nokey", "3"])),
        Vec::<String>::new()
    );
    // SPOP with count over the size deletes the key and returns everything.
    q(&mut c, &["SADD", "s", "2", "1", "b"]);
    assert_eq!(
        sorted(&mut c, &["SPOP", "s", "100"]),
        strs(&["1", "2", "a", "b"])
    );
    assert_eq!(qi(&mut c, &["EXISTS", "s"]), 0);
    // Listpack with integers: SPOP returns them as strings.
    q(
        &mut c,
        &["SADD", "s", "a", "1", "2", "3", "4", "5", "6", "7"],
    );
    let popped: Vec<String> = (0..8).map(|_| text(&q(&mut c, &["SPOP", "s"]))).collect();
    assert!(popped.iter().any(|p| p.parse::<i64>().is_ok()));
}

#[test]
fn srandmember_distribution() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    for members in [
        strs(&["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]),
        strs(&[
            "1",
            "5",
            "10",
            "50",
            "125",
            "MARY",
            "PATRICIA",
            "LINDA",
            "BARBARA",
            "ELIZABETH",
        ]),
        {
            let mut v = range("x", 200);
            v.truncate(10);
            v.push("y".repeat(80));
            v
        },
    ] {
        q(&mut c, &["DEL", "d"]);
        sadd_all(&mut c, "d", &members);
        let n = members.len() as f64;
        let chi = |all: &[String]| {
            let mut counts = std::collections::HashMap::new();
            for m in all {
                *counts.entry(m.clone()).or_insert(0f64) += 1.0;
            }
            let exp = all.len() as f64 / n;
            counts
                .values()
                .map(|o| (o - exp) * (o - exp) / exp)
                .sum::<f64>()
        };
        let r = items(q(&mut c, &["SRANDMEMBER", "d", "-1000"]));
        assert!(chi(&r) < 40.0, "chi square {}", chi(&r));
        for size in [8, 2] {
            let mut all = vec![];
            for _ in 0..(1000 / size) {
                all.extend(items(q(&mut c, &["SRANDMEMBER", "d", &size.to_string()])));
            }
            assert!(chi(&all) < 40.0, "chi square {} (count {size})", chi(&all));
        }
    }
}

#[test]
fn smove() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let setup = |c: &mut Connection| {
        q(c, &["DEL", "s1", "s2", "s3"]);
        q(c, &["SADD", "s1", "1", "a", "b"]);
        q(c, &["SADD", "s2", "2", "3", "4"]);
    };
    setup(&mut c);
    assert_eq!(qi(&mut c, &["SMOVE", "s1", "s2", "a"]), 1);
    assert_eq!(sorted(&mut c, &["SMEMBERS", "s1"]), strs(&["1", "b"]));
    assert_eq!(
        sorted(&mut c, &["SMEMBERS", "s2"]),
        strs(&["2", "3", "4", "a"])
    );
    assert_eq!(encoding(&mut c, "s2"), "listpack");
    setup(&mut c);
    assert_eq!(qi(&mut c, &["SMOVE", "s1", "s2", "1"]), 1);
    assert_eq!(encoding(&mut c, "s2"), "intset");
    setup(&mut c);
    assert_eq!(qi(&mut c, &["SMOVE", "s2", "s1", "2"]), 1);
    assert_eq!(
        sorted(&mut c, &["SMEMBERS", "s1"]),
        strs(&["1", "2", "a", "b"])
    );
    setup(&mut c);
    assert_eq!(qi(&mut c, &["SMOVE", "s1", "s2", "foo"]), 0);
    assert_eq!(qi(&mut c, &["SMOVE", "s1", "s1", "foo"]), 0);
    assert_eq!(qi(&mut c, &["SMOVE", "s1", "s1", "a"]), 1);
    assert_eq!(sorted(&mut c, &["SMEMBERS", "s1"]), strs(&["1", "a", "b"]));
    assert_eq!(qi(&mut c, &["SMOVE", "noset", "s2", "foo"]), 0);
    // A missing source answers 0 even when the destination has another type.
    q(&mut c, &["SET", "str", "x"]);
    assert_eq!(qi(&mut c, &["SMOVE", "noset", "str", "foo"]), 0);
    assert_eq!(err(&mut c, &["SMOVE", "s1", "str", "a"]), WT);
    assert_eq!(qi(&mut c, &["SISMEMBER", "s1", "a"]), 1);
    // To a missing destination; the source disappears with its last member.
    assert_eq!(qi(&mut c, &["SMOVE", "s1", "s3", "a"]), 1);
    assert_eq!(sorted(&mut c, &["SMEMBERS", "s3"]), strs(&["a"]));
    q(&mut c, &["SMOVE", "s1", "s3", "1"]);
    q(&mut c, &["SMOVE", "s1", "s3", "b"]);
    assert_eq!(qi(&mut c, &["EXISTS", "s1"]), 0);
    assert_eq!(sorted(&mut c, &["SMEMBERS", "s3"]), strs(&["1", "a", "b"]));
    // Already in the destination: still moved out of the source.
    q(&mut c, &["SADD", "s4", "x", "y"]);
    q(&mut c, &["SADD", "s5", "x"]);
    assert_eq!(qi(&mut c, &["SMOVE", "s4", "s5", "x"]), 1);
    assert_eq!(sorted(&mut c, &["SMEMBERS", "s4"]), strs(&["y"]));
    assert_eq!(sorted(&mut c, &["SMEMBERS", "s5"]), strs(&["x"]));
}

fn scan_all(c: &mut Connection, key: &str, extra: &[&str]) -> Vec<String> {
    let mut cursor = "0".to_string();
    let mut out = vec![];
    loop {
        let mut args = vec!["SSCAN", key, &cursor];
        args.extend_from_slice(extra);
        let Value::Array(v) = q(c, &args) else {
            panic!("bad SSCAN reply")
        };
        let next = text(&v[0]);
        out.extend(items(v[1].clone()));
        if next == "0" {
            break;
        }
        cursor = next;
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn sscan() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    for (enc, prefix, n) in [
        ("intset", "", 100),
        ("listpack", "ele:", 100),
        ("hashtable", "ele:", 1000),
    ] {
        q(&mut c, &["DEL", "set"]);
        let m = range(prefix, n);
        sadd_all(&mut c, "set", &m);
        assert_eq!(encoding(&mut c, "set"), enc);
        let mut want = m.clone();
        want.sort();
        assert_eq!(scan_all(&mut c, "set", &[]), want);
        assert_eq!(scan_all(&mut c, "set", &["COUNT", "7"]), want);
        let matched = scan_all(&mut c, "set", &["MATCH", "*1?", "COUNT", "100"]);
        assert!(matched
            .iter()
            .all(|m| m.len() >= 2 && m.as_bytes()[m.len() - 2] == b'1'));
        assert!(!matched.is_empty());
    }
    // Compact encodings come back whole, cursor 0.
    q(&mut c, &["DEL", "small"]);
    q(&mut c, &["SADD", "small", "1", "a", "foo", "foobar"]);
    let Value::Array(v) = q(&mut c, &["SSCAN", "small", "0", "MATCH", "foo*"]) else {
        panic!()
    };
    assert_eq!(text(&v[0]), "0");
    let mut got = items(v[1].clone());
    got.sort();
    assert_eq!(got, strs(&["foo", "foobar"]));
    // Hash table: members present for the whole scan are returned despite deletions.
    for round in 0..20 {
        q(&mut c, &["DEL", "set"]);
        q(&mut c, &["SADD", "set", "x"]);
        let n = 101 + (round * 97) % 1000;
        sadd_all(
            &mut c,
            "set",
            &(0..n).map(|i| i.to_string()).collect::<Vec<_>>(),
        );
        let remove: Vec<String> = (100..n).map(|i| i.to_string()).collect();
        let mut cursor = "0".to_string();
        let mut found = BTreeSet::new();
        let mut it = 0;
        loop {
            let Value::Array(v) = q(&mut c, &["SSCAN", "set", &cursor]) else {
                panic!()
            };
            cursor = text(&v[0]);
            found.extend(items(v[1].clone()));
            it += 1;
            if it == 1 + round % 5 {
                let mut args = vec!["SREM", "set"];
                args.extend(remove.iter().map(|s| s.as_str()));
                q(&mut c, &args);
            }
            if cursor == "0" {
                break;
            }
        }
        for i in 0..100 {
            assert!(found.contains(&i.to_string()), "round {round}: {i} missing");
        }
    }
}

#[test]
fn resp3_shapes() {
    let s = Server::tern(&[]);
    let mut c = s.conn_resp3();
    q(&mut c, &["SADD", "a", "1", "2", "x"]);
    q(&mut c, &["SADD", "b", "2", "x", "y"]);
    for cmd in [
        &["SMEMBERS", "a"][..],
        &["SMEMBERS", "nokey"],
        &["SINTER", "a", "b"],
        &["SINTER", "a", "nokey"],
        &["SUNION", "a", "b"],
        &["SDIFF", "a", "b"],
        &["SPOP", "nokey", "2"],
        &["SPOP", "a", "0"],
        &["SPOP", "b", "1"],
        &["SPOP", "b", "10"],
    ] {
        assert!(
            matches!(q(&mut c, cmd), Value::Set(_)),
            "{cmd:?} should reply a set"
        );
    }
    for cmd in [
        &["SRANDMEMBER", "a", "2"][..],
        &["SRANDMEMBER", "a", "-2"],
        &["SRANDMEMBER", "nokey", "2"],
        &["SMISMEMBER", "a", "1", "z"],
        &["SSCAN", "a", "0"],
    ] {
        assert!(
            matches!(q(&mut c, cmd), Value::Array(_)),
            "{cmd:?} should reply an array"
        );
    }
    assert_eq!(q(&mut c, &["SRANDMEMBER", "nokey"]), Value::Nil);
    assert_eq!(q(&mut c, &["SPOP", "nokey"]), Value::Nil);
}

/// A reply as text, not telling simple strings from bulk strings.
fn flat(v: &Value) -> String {
    match v {
        Value::Array(a) | Value::Set(a) => {
            format!("[{}]", a.iter().map(flat).collect::<Vec<_>>().join(","))
        }
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        v => format!("{v:?}"),
    }
}

/// Replies with their arrays sorted where the order is Redis's hash order (not comparable).
fn norm(cmd: &[&str], r: redis::RedisResult<Value>) -> String {
    match r {
        Err(e) => format!(
            "ERR {} {}",
            e.code().unwrap_or("?"),
            e.detail().unwrap_or("")
        ),
        Ok(Value::Array(a)) | Ok(Value::Set(a))
            if !cmd[0].eq_ignore_ascii_case("SSCAN")
                && !cmd[0].eq_ignore_ascii_case("SMISMEMBER") =>
        {
            let mut v: Vec<String> = a.iter().map(|x| format!("{x:?}")).collect();
            v.sort();
            format!("[{}]", v.join(","))
        }
        Ok(Value::Array(a)) if cmd[0].eq_ignore_ascii_case("SSCAN") && a.len() == 2 => {
            let mut v = items(a[1].clone());
            v.sort();
            format!("scan {:?} {v:?}", a[0])
        }
        Ok(v) => format!("{v:?}"),
    }
}

#[test]
fn differential_against_redis() {
    let Some(r) = Server::redis(&[]) else {
        eprintln!("redis-server not installed; skipping");
        return;
    };
    let t = Server::tern(&[]);
    let (mut tc, mut rc) = (t.conn(), r.conn());
    let big: Vec<String> = range("m", 300);
    let bigi: Vec<String> = (0..600).map(|i| (i * 7).to_string()).collect();
    let mut script: Vec<Vec<String>> = vec![];
    let mut add = |v: &[&str]| script.push(v.iter().map(|s| s.to_string()).collect());
    add(&["SADD", "big", "seed"]);
    add(&["SADD", "bigi", "1"]);
    let mut s: Vec<Vec<String>> = script;
    let mut sb = vec!["SADD".to_string(), "big".to_string()];
    sb.extend(big.iter().cloned());
    s.push(sb);
    let mut sbi = vec!["SADD".to_string(), "bigi".to_string()];
    sbi.extend(bigi.iter().cloned());
    s.push(sbi);
    let fixed: &[&[&str]] = &[
        &["SADD", "a", "1", "2", "3", "x", "y"],
        &["SADD", "b", "2", "3", "4", "y", "z"],
        &["SADD", "c", "3", "y", "q"],
        &[
            "SADD",
            "i",
            "5",
            "-1",
            "70000",
            "-9223372036854775808",
            "9223372036854775807",
        ],
        &["SADD", "i", "5"],
        &["SMEMBERS", "i"],
        &["SISMEMBER", "i", "70000"],
        &["SISMEMBER", "i", "070000"],
        &["SMISMEMBER", "a", "1", "x", "nope"],
        &["SCARD", "a"],
        &["SINTER", "a", "b"],
        &["SINTER", "a", "b", "c"],
        &["SINTER", "a", "nokey"],
        &["SINTER", "big", "a"],
        &["SINTER", "bigi", "i", "a"],
        &["SINTERCARD", "2", "a", "b"],
        &["SINTERCARD", "3", "a", "b", "c", "LIMIT", "1"],
        &["SINTERCARD", "2", "big", "bigi"],
        &["SUNION", "a", "b", "c", "nokey"],
        &["SUNION", "i", "a"],
        &["SDIFF", "a", "b"],
        &["SDIFF", "a", "b", "c"],
        &["SDIFF", "bigi", "i"],
        &["SDIFF", "big", "a"],
        &["SDIFF", "a", "a"],
        &["SINTERSTORE", "r", "a", "b"],
        &["SMEMBERS", "r"],
        &["SUNIONSTORE", "r", "a", "big"],
        &["SCARD", "r"],
        &["SDIFFSTORE", "r", "big", "a", "bigi"],
        &["SCARD", "r"],
        &["SDIFFSTORE", "r", "a", "a"],
        &["EXISTS", "r"],
        &["SMOVE", "a", "b", "x"],
        &["SMOVE", "a", "b", "x"],
        &["SMOVE", "a", "a", "1"],
        &["SMOVE", "nokey", "b", "1"],
        &["SMEMBERS", "a"],
        &["SMEMBERS", "b"],
        &["SREM", "a", "1", "2", "nope"],
        &["SREM", "a", "3", "y"],
        &["EXISTS", "a"],
        &["SPOP", "nokey"],
        &["SPOP", "nokey", "3"],
        &["SPOP", "c", "0"],
        &["SPOP", "c", "5"],
        &["EXISTS", "c"],
        &["SRANDMEMBER", "nokey"],
        &["SRANDMEMBER", "nokey", "-3"],
        &["SRANDMEMBER", "b", "0"],
        &["SRANDMEMBER", "b", "100"],
        &["SRANDMEMBER", "b", "-9223372036854775808"],
        &["SRANDMEMBER", "b", "x"],
        &["SPOP", "b", "-1"],
        &["SPOP", "b", "1", "2"],
        &["SINTERCARD", "0", "b"],
        &["SINTERCARD", "5", "b"],
        &["SINTERCARD", "1", "b", "LIMIT", "-1"],
        &["SINTERCARD", "1", "b", "LIMITX", "1"],
        &["SSCAN", "b", "x"],
        &["SSCAN", "b", "0", "COUNT", "0"],
        &["SSCAN", "nokey", "0", "COUNT", "0"],
        &["SSCAN", "b", "0", "MATCH", "*"],
        &["SET", "str", "v"],
        &["SADD", "str", "a"],
        &["SINTER", "nokey", "str"],
        &["SUNIONSTORE", "d", "str"],
        &["SMOVE", "b", "str", "2"],
        &["SMOVE", "nokey", "str", "2"],
        &["SADD", "e", ""],
        &["SMEMBERS", "e"],
        &["SADD", "neg", "-0", "00", "+1", "1"],
        &["SMEMBERS", "neg"],
        &["SISMEMBER", "neg", "-0"],
    ];
    for cmd in s
        .iter()
        .map(|v| v.iter().map(|s| s.as_str()).collect::<Vec<_>>())
    {
        let (a, b) = crate::common::both(&mut tc, &mut rc, &cmd);
        assert_eq!(
            norm(&cmd, a),
            norm(&cmd, b),
            "reply to {:?} differs",
            &cmd[..2]
        );
    }
    for cmd in fixed {
        let (a, b) = crate::common::both(&mut tc, &mut rc, cmd);
        assert_eq!(
            norm(cmd, a),
            norm(cmd, b),
            "reply to {cmd:?} differs (left: tern, right: redis)"
        );
    }
    // RESP3 shapes.
    let (mut tc3, mut rc3) = (t.conn_resp3(), r.conn_resp3());
    for cmd in [
        &["SMEMBERS", "i"][..],
        &["SMEMBERS", "nokey"],
        &["SINTER", "big", "nokey"],
        &["SUNION", "i", "neg"],
        &["SDIFF", "i", "neg"],
        &["SPOP", "nokey", "2"],
        &["SPOP", "neg", "0"],
        &["SRANDMEMBER", "nokey", "2"],
        &["SRANDMEMBER", "i", "10"],
        &["SRANDMEMBER", "nokey"],
        &["SPOP", "nokey"],
    ] {
        let (a, b) = crate::common::both(&mut tc3, &mut rc3, cmd);
        let kind = |v: &redis::RedisResult<Value>| match v {
            Ok(Value::Set(_)) => "set",
            Ok(Value::Array(_)) => "array",
            Ok(Value::Nil) => "nil",
            _ => "other",
        };
        assert_eq!(kind(&a), kind(&b), "RESP3 shape of {cmd:?}");
        assert_eq!(norm(cmd, a), norm(cmd, b), "RESP3 reply to {cmd:?}");
    }
    // Command metadata.
    for name in [
        "sadd",
        "srem",
        "smembers",
        "sismember",
        "smismember",
        "scard",
        "spop",
        "srandmember",
        "smove",
        "sinter",
        "sintercard",
        "sinterstore",
        "sunion",
        "sunionstore",
        "sdiff",
        "sdiffstore",
        "sscan",
    ] {
        let (a, b) = crate::common::both(&mut tc, &mut rc, &["COMMAND", "INFO", name]);
        // (tern sends command tips as simple strings, Redis as bulk strings: compare text.)
        assert_eq!(flat(&a.unwrap()), flat(&b.unwrap()), "COMMAND INFO {name}");
        let (a, b) = crate::common::both(
            &mut tc,
            &mut rc,
            &["COMMAND", "GETKEYS", name, "k1", "k2", "k3"],
        );
        if name != "sintercard" {
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "COMMAND GETKEYS {name}");
        }
    }
    let (a, b) = crate::common::both(
        &mut tc,
        &mut rc,
        &[
            "COMMAND",
            "GETKEYS",
            "SINTERCARD",
            "2",
            "x",
            "y",
            "LIMIT",
            "1",
        ],
    );
    assert_eq!(a.unwrap(), b.unwrap());
}

#[test]
fn random_operations_match_a_model() {
    // A long random mix against an in-test model, across every encoding change.
    let s = Server::tern(&[]);
    let mut c = s.conn();
    use std::collections::HashSet;
    let mut model: Vec<HashSet<String>> = vec![HashSet::new(); 3];
    let keys = ["k0", "k1", "k2"];
    let mut seed: u64 = 0x9E3779B97F4A7C15;
    let mut rnd = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for step in 0..3000 {
        let k = rnd(3) as usize;
        let member = match rnd(4) {
            0 => rnd(50).to_string(),
            1 => (rnd(1 << 40) as i64 - (1 << 39)).to_string(),
            2 => format!("s{}", rnd(200)),
            _ => "z".repeat(1 + rnd(80) as usize),
        };
        match rnd(6) {
            0..=2 => {
                let added = qi(&mut c, &["SADD", keys[k], &member]);
                assert_eq!(added == 1, model[k].insert(member), "step {step}");
            }
            3 => {
                let removed = qi(&mut c, &["SREM", keys[k], &member]);
                assert_eq!(removed == 1, model[k].remove(&member), "step {step}");
            }
            4 => {
                if let Value::BulkString(b) = q(&mut c, &["SPOP", keys[k]]) {
                    assert!(model[k].remove(&String::from_utf8(b).unwrap()));
                } else {
                    assert!(model[k].is_empty());
                }
            }
            _ => {
                let d = (k + 1) % 3;
                let moved = qi(&mut c, &["SMOVE", keys[k], keys[d], &member]);
                if model[k].remove(&member) {
                    assert_eq!(moved, 1);
                    model[d].insert(member);
                } else {
                    assert_eq!(moved, 0);
                }
            }
        }
        if step % 100 == 0 {
            for (i, key) in keys.iter().enumerate() {
                let mut want: Vec<String> = model[i].iter().cloned().collect();
                want.sort();
                assert_eq!(sorted(&mut c, &["SMEMBERS", key]), want, "step {step}");
                let inter: BTreeSet<String> = model[0].intersection(&model[1]).cloned().collect();
                assert_eq!(
                    sorted(&mut c, &["SINTER", "k0", "k1"]),
                    inter.into_iter().collect::<Vec<_>>()
                );
            }
        }
    }
}

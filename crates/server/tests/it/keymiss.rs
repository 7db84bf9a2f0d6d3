//! `keymiss` keyspace notifications (class `m` of `notify-keyspace-events`) against the real
//! binary. A read lookup that finds no key (missing or expired) publishes `keymiss`; write
//! lookups and OBJECT's lookups do not. The main test runs one script of read and write
//! commands over missing, existing, expired and wrong-type keys on tern and on Debian's
//! redis-server (when installed) under `KEm`, `Km`, `Em` and `AKEm` (every class, so keymiss is
//! also checked in order with `expired`, `set`, `del` ...), and the event streams a
//! `__key*__:*` subscriber receives must be identical, command by command. The other tests
//! check tern alone: fixed expectations (so the test means something without redis-server),
//! and what Redis 7.2 does differently from the 7.0 installed here (a blocked XREAD that is
//! served runs again, reading its keys again).
use crate::common::{wait_blocked, Server};
use std::time::Duration;

type Raw = crate::common::Raw<true>;

/// Keys the script reads. `ex*` expire soon after they are written (SET ... PX 1; PEXPIRE
/// 50 ms, not 1: Redis 7.0 compares a PEXPIRE's time with a fresh clock, so under load 1 ms
/// could already be past and the key deleted at once); active expiry is off, so each is found
/// expired (and deleted, with its `expired` event) by the first command that looks at it. `sl` is sorted with BY/GET patterns over `w_*`, `g_*` and `wh_*`.
const SETUP: &[&str] = &[
    "DEBUG SET-ACTIVE-EXPIRE 0",
    "SET s hello",
    "RPUSH l a b c",
    "HSET h f v f2 v2",
    "SADD st a b c",
    "SADD ints 3 1 2",
    "ZADD z 1 a 2 b",
    "XADD x 1-0 f v",
    "XGROUP CREATE x g 0",
    "PFADD hll a b c",
    "GEOADD geo 13.361389 38.115556 Palermo",
    "SETBIT bits 3 1",
    "RPUSH sl 3 1 2",
    "SET w_1 10",
    "SET w_3 5",
    "HSET wh_2 f 7",
    "SET g_1 one",
    "SET ex1 v PX 1",
    "SET ex2 v PX 1",
    "SET ex3 v PX 1",
    "SET ex4 v PX 1",
    "SET ex5 v PX 1",
    "RPUSH exl a",
    "PEXPIRE exl 50",
    "HSET exh f v",
    "PEXPIRE exh 50",
    "SADD exs a",
    "PEXPIRE exs 50",
    "SADD exs2 a",
    "PEXPIRE exs2 50",
    "SADD exs3 b",
    "PEXPIRE exs3 50",
    "ZADD exz2 1 a",
    "PEXPIRE exz2 50",
    "ZADD exz3 1 b",
    "PEXPIRE exz3 50",
    "ZADD exz 1 a",
    "PEXPIRE exz 50",
    "XADD exx 1-0 f v",
    "PEXPIRE exx 50",
    "SLEEP 120",
];

/// Every command is followed by a marker PUBLISH, so each one's events are compared apart.
/// `m*` keys never exist (those written are deleted again).
const SCRIPT: &[&str] = &[
    // Strings.
    "GET m1",
    "GET s",
    "GET l",
    "GET ex1",
    "MGET m1 s m2 l",
    "MGET m3 ex2 s ex3 m4",
    "GETRANGE m1 0 -1",
    "GETRANGE m1 x 1",
    "GETRANGE s 0 1",
    "SUBSTR m1 0 1",
    "STRLEN m1",
    "STRLEN l",
    "GETDEL m1",
    "GETEX m1",
    "GETEX m1 EX 100",
    "GETEX m1 EX bad",
    "GETSET m1 v",
    "DEL m1",
    "SET m2 v GET",
    "DEL m2",
    "SET m3 v NX GET",
    "DEL m3",
    "LCS m1 s",
    "LCS m1 m2",
    // Writes that look missing keys up: no keymiss.
    "SET m4 v XX",
    "SET m5 v",
    "DEL m5",
    "SETNX m5 v",
    "DEL m5 m6",
    "INCR m6",
    "INCRBYFLOAT m7 1.5",
    "DEL m6 m7",
    "APPEND m7 x",
    "SETRANGE m8 0 x",
    "UNLINK m7 m8",
    "MSET m9 a m10 b",
    "MSETNX m9 a m11 b",
    "DEL m9 m10 m11",
    "LPUSH m8 x",
    "DEL m8",
    "HSET m10 f v",
    "HINCRBY m11 f 1",
    "DEL m10 m11",
    "SADD m11 a",
    "ZADD m12 1 a",
    "XADD m13 1-1 f v",
    "PFADD m14 a",
    "GEOADD m15 13 38 p",
    "SETBIT m16 0 1",
    "DEL m11 m12 m13 m14 m15 m16",
    "EXPIRE m1 10",
    "PEXPIREAT m1 100000000000",
    "PERSIST m1",
    "RENAME m1 m2",
    "RENAMENX m1 m2",
    "MOVE m1 1",
    "RESTORE m1 0 bad",
    "LPOP m1",
    "RPOP m1",
    "LSET m1 0 x",
    "LREM m1 0 x",
    "LTRIM m1 0 1",
    "LINSERT m1 BEFORE a b",
    "LPUSHX m1 a",
    "LMOVE m1 m2 LEFT RIGHT",
    "RPOPLPUSH m1 m2",
    "LMPOP 2 m1 m2 LEFT",
    "BLPOP m1 m2 0.01",
    "BLMOVE m1 m2 LEFT RIGHT 0.01",
    "HDEL m1 f",
    "SMOVE m1 m2 a",
    "SPOP m1",
    "SREM m1 a",
    "ZREM m1 a",
    "ZPOPMIN m1",
    "ZMPOP 1 m1 MIN",
    "BZPOPMAX m1 0.01",
    "ZREMRANGEBYRANK m1 0 1",
    "XDEL m1 1-0",
    "XTRIM m1 MAXLEN 0",
    "XSETID m1 1-0",
    "XGROUP CREATE m1 g $",
    "XGROUP DESTROY m1 g",
    "PFDEBUG GETREG m1",
    // Keyspace.
    "EXISTS m1 s m2 l",
    "EXISTS ex4 m1 ex5",
    "TOUCH m1 s m2",
    "TYPE m1",
    "TYPE s",
    "TTL m1",
    "PTTL m1",
    "EXPIRETIME m1",
    "PEXPIRETIME m1",
    "TTL s",
    "DUMP m1",
    "DUMP s",
    "COPY m1 m2",
    "COPY s scopy",
    "DEL scopy",
    // LOOKUP_NONOTIFY (OBJECT) and no lookup at all (MEMORY USAGE): no keymiss.
    "OBJECT ENCODING m1",
    "OBJECT ENCODING s",
    "OBJECT REFCOUNT m1",
    "OBJECT IDLETIME m1",
    "MEMORY USAGE m1",
    "DBSIZE",
    // Hashes.
    "HGET m1 f",
    "HGET h f",
    "HGET s f",
    "HGET exh f",
    "HMGET m1 a b",
    "HGETALL m1",
    "HKEYS m1",
    "HVALS m1",
    "HLEN m1",
    "HSTRLEN m1 f",
    "HEXISTS m1 f",
    "HRANDFIELD m1",
    "HRANDFIELD m1 2 WITHVALUES",
    "HRANDFIELD m1 x",
    "HSCAN m1 0",
    // Lists.
    "LRANGE m1 0 -1",
    "LRANGE m1 x 1",
    "LRANGE exl 0 -1",
    "LINDEX m1 0",
    "LINDEX m1 x",
    "LINDEX l x",
    "LLEN m1",
    "LLEN s",
    "LPOS m1 a",
    "LPOS m1 a COUNT 0",
    // Sets.
    "SMEMBERS m1",
    "SMEMBERS exs",
    "SISMEMBER m1 a",
    "SMISMEMBER m1 a b",
    "SCARD m1",
    "SRANDMEMBER m1",
    "SRANDMEMBER m1 2",
    "SSCAN m1 0",
    "SUNION m1 st m2",
    "SINTER m1 st m2",
    "SINTER st m1 m2",
    "SDIFF m1 st m2",
    "SUNION m1 s m2",
    "SUNION exs2 m1 exs3",
    "SINTERCARD 2 m1 m2",
    "SINTERCARD 2 m1 st LIMIT -1",
    "SINTERSTORE dst m1 m2",
    "SUNIONSTORE dst m1 m2",
    "SDIFFSTORE dst m1 st",
    "DEL dst",
    // Sorted sets.
    "ZSCORE m1 a",
    "ZSCORE z a",
    "ZMSCORE m1 a b",
    "ZCARD m1",
    "ZCOUNT m1 0 1",
    "ZLEXCOUNT m1 - +",
    "ZRANK m1 a",
    "ZREVRANK m1 a",
    "ZRANGE m1 0 -1",
    "ZRANGE m1 0 -1 BYSCORE",
    "ZRANGE exz 0 -1",
    "ZREVRANGE m1 0 -1",
    "ZRANGEBYSCORE m1 0 1",
    "ZREVRANGEBYLEX m1 + -",
    "ZRANDMEMBER m1",
    "ZRANDMEMBER m1 2",
    "ZRANDMEMBER s 2",
    "ZSCAN m1 0",
    "ZSCAN s 0",
    "ZRANGESTORE dst m1 0 -1",
    "ZRANGESTORE dst s 0 -1",
    "ZUNION 2 m1 z",
    "ZUNION 3 m1 z m2 WITHSCORES",
    "ZINTER 2 m1 m2",
    "ZDIFF 2 m1 z",
    // The sources are read before the options are parsed.
    "ZUNION 2 m1 m2 WEIGHTS x y",
    "ZUNION 3 m1 s m2",
    "ZUNION 3 exz2 m1 exz3",
    "ZUNIONSTORE dst 2 m1 m2",
    "ZINTERSTORE dst 2 m1 z",
    "ZDIFFSTORE dst 2 m1 z",
    "ZINTERCARD 2 m1 m2",
    "ZINTERCARD 2 m1 m2 LIMIT -1",
    "DEL dst",
    // Streams: XREAD reads every stream twice (the IDs, then the serving).
    "XRANGE m1 - +",
    "XREVRANGE m1 + -",
    "XRANGE exx - +",
    "XLEN m1",
    "XREAD STREAMS m1 0",
    "XREAD STREAMS m1 m2 0 0",
    "XREAD STREAMS m1 x 0 0",
    "XREAD STREAMS x m1 0 0",
    "XREAD COUNT 1 STREAMS m1 $",
    "XREAD STREAMS m1 bad",
    "XREAD BLOCK 10 STREAMS m1 m2 0 0",
    "XREADGROUP GROUP g c STREAMS m1 >",
    "XINFO STREAM m1",
    "XINFO GROUPS m1",
    "XINFO CONSUMERS m1 g",
    "XPENDING m1 g",
    "XACK m1 g 1-0",
    "XCLAIM m1 g c 0 1-0",
    "XAUTOCLAIM m1 g c 0 0",
    "XAUTOCLAIM m1 g c bad 0",
    // HyperLogLog and bitmaps.
    "PFCOUNT m1",
    "PFCOUNT m1 hll m2",
    "PFCOUNT m1 s m2",
    "PFMERGE dst m1 hll m2",
    "DEL dst",
    "GETBIT m1 0",
    "GETBIT m1 x",
    "BITCOUNT m1",
    "BITCOUNT m1 0 1",
    "BITPOS m1 1",
    "BITPOS m1 0 0 1",
    "BITFIELD m1 GET u8 0",
    "BITFIELD_RO m1 GET u8 0",
    "BITFIELD m1 SET u8 0 1",
    "DEL m1",
    "BITOP AND dst m1 bits m2",
    "DEL dst",
    // Geo.
    "GEOPOS m1 a",
    "GEOPOS geo Palermo",
    "GEOHASH m1 a",
    "GEODIST m1 a b",
    "GEODIST m1 a b km",
    "GEOSEARCH m1 FROMLONLAT 15 37 BYRADIUS 200 km",
    "GEOSEARCH m1 FROMMEMBER a BYRADIUS 200 km",
    "GEORADIUS m1 15 37 200 km",
    "GEORADIUS_RO m1 15 37 200 km",
    "GEORADIUSBYMEMBER m1 a 200 km",
    "GEORADIUSBYMEMBER_RO m1 a 200 km",
    "GEOSEARCHSTORE dst m1 FROMLONLAT 15 37 BYRADIUS 200 km",
    "GEORADIUS m1 15 37 200 km STORE dst",
    // SORT: the key, then BY lookups for every element, then GET lookups for the returned
    // ones (a list and an intset, so both servers see the elements in the same order).
    "SORT m1",
    "SORT s",
    "SORT sl",
    "SORT sl BY w_*",
    "SORT sl BY nosort",
    "SORT sl BY nosort GET g_*",
    "SORT sl GET g_* GET #",
    "SORT sl BY w_* GET g_* GET wh_*->f",
    "SORT sl BY wh_*->f",
    "SORT sl BY w_* LIMIT 0 1 GET g_*",
    "SORT sl BY w_* DESC GET g_*",
    "SORT sl ALPHA BY w_* GET g_*",
    "SORT ints BY w_*",
    "SORT sl BY w_* STORE dst",
    "SORT sl GET g_* STORE dst",
    "SORT_RO sl GET g_*",
    "SORT m1 BY w_* GET g_*",
    "DEL dst",
    // Other databases, scripts, transactions, MIGRATE (no key there: NOKEY, no connection).
    "SELECT 3",
    "GET m1",
    "EXISTS m1 m2",
    "SELECT 0",
    "EVAL return(redis.call('get','m1')) 0",
    "EVAL_RO return(redis.call('exists','m1','s','m2')) 1 m1",
    "MULTI",
    "GET m1",
    "EXISTS m2",
    "SET m3 x",
    "GET m3",
    "DEL m3",
    "EXEC",
    "MIGRATE 127.0.0.1 1 m1 0 100",
    "MIGRATE 127.0.0.1 1 \"\" 0 100 KEYS m1 m2",
];

/// One command of a run: the command, its reply, the events it caused.
struct Step {
    cmd: String,
    reply: String,
    events: Vec<String>,
}

/// Run SETUP and SCRIPT on `port` (after FLUSHALL) with `notify-keyspace-events conf`. After
/// each command its client publishes a marker; what a `__key*__:*` subscriber got before the
/// marker are that command's events (as "channel message"). `SLEEP n` pauses n ms.
fn run(port: u16, conf: &str) -> Vec<Step> {
    let mut c = Raw::new(port);
    assert_eq!(c.q("FLUSHALL"), "OK");
    assert_eq!(
        c.q(&format!("CONFIG SET notify-keyspace-events {conf}")),
        "OK"
    );
    let mut sub = Raw::new(port);
    assert_eq!(sub.q("PSUBSCRIBE __key*__:*"), "[psubscribe,__key*__:*,:1]");
    let mut steps = Vec::new();
    let mut in_multi = false;
    for &cmd in SETUP.iter().chain(SCRIPT) {
        if let Some(ms) = cmd.strip_prefix("SLEEP ") {
            std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
            continue;
        }
        let args: Vec<&[u8]> = words(cmd);
        let reply = c.qa(&args);
        let name = cmd.split(' ').next().unwrap();
        in_multi |= name == "MULTI";
        if in_multi && name != "EXEC" {
            // Queued: its events come with EXEC's.
            continue;
        }
        in_multi = false;
        c.q("PUBLISH __keyspace@0__:MARK x");
        let mut events = Vec::new();
        loop {
            let m = sub.read();
            let parts: Vec<&str> = m
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(',')
                .collect();
            assert_eq!(parts[0], "pmessage", "{m}");
            if parts[2] == "__keyspace@0__:MARK" {
                break;
            }
            events.push(format!("{} {}", parts[2], parts[3]));
        }
        steps.push(Step {
            cmd: cmd.to_string(),
            reply,
            events,
        });
    }
    steps
}

/// A command's words; `""` is an empty argument and `'` quotes stay inside a word (Lua).
fn words(cmd: &str) -> Vec<&[u8]> {
    cmd.split(' ')
        .map(|w| if w == "\"\"" { &b""[..] } else { w.as_bytes() })
        .collect()
}

fn keymiss_count(steps: &[Step]) -> usize {
    steps
        .iter()
        .flat_map(|s| &s.events)
        .filter(|e| e.ends_with(" keymiss") || e.contains("__:keymiss "))
        .count()
}

#[test]
fn keymiss_events_match_redis() {
    let t = Server::tern(&["--enable-debug-command", "yes"]);
    let r = Server::redis(&["--enable-debug-command", "yes"]);
    if r.is_none() {
        eprintln!("redis-server not installed: checking tern alone");
    }
    for conf in ["KEm", "Km", "Em", "AKEm"] {
        let ours = run(t.port, conf);
        if let Some(r) = &r {
            let theirs = run(r.port, conf);
            assert_eq!(ours.len(), theirs.len());
            let diffs: Vec<String> = ours
                .iter()
                .zip(&theirs)
                .filter(|(a, b)| a.events != b.events)
                .map(|(a, b)| {
                    format!(
                        "{}\n  tern  ({}): {:?}\n  redis ({}): {:?}",
                        a.cmd, a.reply, a.events, b.reply, b.events
                    )
                })
                .collect();
            assert!(
                diffs.is_empty(),
                "notify-keyspace-events {conf}: {} commands differ:\n{}",
                diffs.len(),
                diffs.join("\n")
            );
        }
        // The script does miss (206 reads), on both channels when both are on.
        let per_miss = if conf.contains('K') && conf.contains('E') {
            2
        } else {
            1
        };
        let n = keymiss_count(&ours);
        assert!(n >= 200 * per_miss, "{conf}: only {n} keymiss events");
    }
}

/// The events of the command `cmd` in a run.
fn events_of<'a>(steps: &'a [Step], cmd: &str) -> &'a [String] {
    &steps
        .iter()
        .find(|s| s.cmd == cmd)
        .unwrap_or_else(|| panic!("{cmd} not in the script"))
        .events
}

#[test]
fn keymiss_events_on_tern() {
    let t = Server::tern(&["--enable-debug-command", "yes"]);
    let miss = |db: u32, k: &str| {
        vec![
            format!("__keyspace@{db}__:{k} keymiss"),
            format!("__keyevent@{db}__:keymiss {k}"),
        ]
    };
    let steps = run(t.port, "KEm");
    for (cmd, keys) in [
        ("GET m1", &["m1"][..]),
        ("GET s", &[]),
        ("GET l", &[]),
        ("GET ex1", &["ex1"]),
        ("MGET m3 ex2 s ex3 m4", &["m3", "ex2", "ex3", "m4"]),
        ("GETSET m1 v", &["m1"]),
        ("SET m2 v GET", &["m2"]),
        ("SET m5 v", &[]),
        ("INCR m6", &[]),
        ("LPUSH m8 x", &[]),
        ("DEL m5 m6", &[]),
        ("OBJECT ENCODING m1", &[]),
        ("EXISTS m1 s m2 l", &["m1", "m2"]),
        ("SUNION m1 st m2", &["m1", "m2"]),
        ("XREAD STREAMS m1 m2 0 0", &["m1", "m2", "m1", "m2"]),
        ("PFCOUNT m1 s m2", &["m1"]),
        (
            "SORT sl BY w_* GET g_* GET wh_*->f",
            &["w_2", "g_2", "g_3", "wh_3", "wh_1"],
        ),
        ("EXEC", &["m1", "m2"]),
    ] {
        let want: Vec<String> = keys.iter().flat_map(|k| miss(0, k)).collect();
        assert_eq!(events_of(&steps, cmd), want, "{cmd}");
    }
    // The miss is published in the key's database.
    let db3 = steps.iter().position(|s| s.cmd == "SELECT 3").unwrap();
    assert_eq!(steps[db3 + 1].events, miss(3, "m1"));

    // With every class: a lazily expired key's `expired` comes first, then its keymiss.
    let steps = run(t.port, "AKEm");
    assert_eq!(
        events_of(&steps, "GET ex1"),
        [
            "__keyspace@0__:ex1 expired",
            "__keyevent@0__:expired ex1",
            "__keyspace@0__:ex1 keymiss",
            "__keyevent@0__:keymiss ex1",
        ]
    );
    assert_eq!(
        events_of(&steps, "GETSET m1 v"),
        [
            "__keyspace@0__:m1 keymiss",
            "__keyevent@0__:keymiss m1",
            "__keyspace@0__:m1 set",
            "__keyevent@0__:set m1",
        ]
    );
}

#[test]
fn keymiss_class_must_be_asked_for() {
    let t = Server::tern(&[]);
    let mut c = Raw::new(t.port);
    let mut sub = Raw::new(t.port);
    assert_eq!(sub.q("PSUBSCRIBE __key*__:*"), "[psubscribe,__key*__:*,:1]");
    // `A` is every class but `m`; `m` without K or E publishes nothing.
    for conf in ["KEA", "m", "KE"] {
        assert_eq!(
            c.q(&format!("CONFIG SET notify-keyspace-events {conf}")),
            "OK"
        );
        assert_eq!(c.q("GET nope"), "(nil)");
        assert_eq!(c.q("MGET nope1 nope2"), "[(nil),(nil)]");
    }
    assert_eq!(c.q("CONFIG SET notify-keyspace-events KEAm"), "OK");
    assert_eq!(
        c.q("CONFIG GET notify-keyspace-events"),
        "[notify-keyspace-events,AKEm]"
    );
    assert_eq!(c.q("GET nope"), "(nil)");
    // The first event the subscriber sees is this one.
    assert_eq!(
        sub.read(),
        "[pmessage,__key*__:*,__keyspace@0__:nope,keymiss]"
    );
    assert_eq!(
        sub.read(),
        "[pmessage,__key*__:*,__keyevent@0__:keymiss,nope]"
    );
    // A RESP3 client's own keymiss follows its reply.
    let mut r3 = Raw::resp3(t.port);
    assert_eq!(
        r3.q("SUBSCRIBE __keyevent@0__:keymiss"),
        ">[subscribe,__keyevent@0__:keymiss,:1]"
    );
    assert_eq!(r3.q("GET mine"), "(null)");
    assert_eq!(r3.read(), ">[message,__keyevent@0__:keymiss,mine]");
}

/// Redis 7.2 runs a blocked command again when one of its keys is ready, so a served
/// `XREAD BLOCK` over a missing and an existing stream misses the missing one twice more
/// (its two reads), after the XADD that woke it. redis-server 7.0 (Debian's) serves blocked
/// stream readers without running the command again, so this is not in the differential
/// script. The extra run tern makes right after a client starts waiting (for writes that came
/// in between) is not Redis's and counts nothing.
#[test]
fn served_xread_reads_again_as_redis_7_2() {
    let t = Server::tern(&[]);
    let mut c = Raw::new(t.port);
    assert_eq!(c.q("CONFIG SET notify-keyspace-events Em"), "OK");
    assert_eq!(c.q("XADD k 1-0 f v"), "1-0");
    let mut sub = Raw::new(t.port);
    assert_eq!(
        sub.q("PSUBSCRIBE __keyevent@0__:*"),
        "[psubscribe,__keyevent@0__:*,:1]"
    );
    let mut b = Raw::new(t.port);
    b.send_cmd("XREAD BLOCK 0 STREAMS nope k $ $");
    // Its first run: both reads of `nope`.
    for _ in 0..2 {
        assert_eq!(
            sub.read(),
            "[pmessage,__keyevent@0__:*,__keyevent@0__:keymiss,nope]"
        );
    }
    // Wait until it blocks, then wake it.
    wait_blocked(&mut c, 1);
    assert_eq!(c.q("XADD k 2-0 f v"), "2-0");
    assert_eq!(b.read(), "[[k,[[2-0,[f,v]]]]]");
    assert_eq!(c.q("PUBLISH __keyevent@0__:MARK x"), ":1");
    let mut rest = Vec::new();
    loop {
        let m = sub.read();
        if m.contains("MARK") {
            break;
        }
        rest.push(m);
    }
    assert_eq!(
        rest,
        [
            "[pmessage,__keyevent@0__:*,__keyevent@0__:keymiss,nope]",
            "[pmessage,__keyevent@0__:*,__keyevent@0__:keymiss,nope]",
        ]
    );
}

/// SUNION, ZUNION and SORT over huge inputs move to a background thread and read their keys
/// again there: each read still counts once (one keymiss per missing key, one hit per found
/// one), as in Redis.
#[test]
fn offloaded_commands_count_their_reads_once() {
    let t = Server::tern(&[]);
    let mut c = Raw::new(t.port);
    for script in [
        "for i = 1, 50001 do redis.call('sadd', 'big', i) end",
        "for i = 1, 50001 do redis.call('zadd', 'bigz', i, i) end",
    ] {
        assert_eq!(c.qa(&[b"EVAL", script.as_bytes(), b"0"]), "(nil)");
    }
    assert_eq!(c.q("CONFIG SET notify-keyspace-events Em"), "OK");
    assert_eq!(c.q("CONFIG RESETSTAT"), "OK");
    let mut sub = Raw::new(t.port);
    assert_eq!(
        sub.q("SUBSCRIBE __keyevent@0__:keymiss"),
        "[subscribe,__keyevent@0__:keymiss,:1]"
    );
    c.q("SUNION m1 big m2");
    c.q("SINTERCARD 3 m1 big m2");
    c.q("ZUNIONSTORE dst 3 m1 bigz m2");
    c.q("SORT big BY nosort LIMIT 0 1");
    c.q("PUBLISH __keyevent@0__:keymiss END");
    let mut got = Vec::new();
    loop {
        let m = sub.read();
        if m.ends_with(",END]") {
            break;
        }
        got.push(m);
    }
    let want: Vec<String> = (0..3)
        .flat_map(|_| ["m1", "m2"])
        .map(|k| format!("[message,__keyevent@0__:keymiss,{k}]"))
        .collect();
    assert_eq!(got, want);
    let info = c.q("INFO stats");
    assert!(info.contains("keyspace_hits:4\r\n"), "{info}");
    assert!(info.contains("keyspace_misses:6\r\n"), "{info}");
}

//! Expiry on a replica, as Redis 7.2: the master decides. A replica's clients see a key whose
//! time ran out as absent, but the replica neither deletes it nor logs anything until the
//! master's DEL arrives; the master's own stream sees it as present. Writable replicas expire
//! the keys their own clients gave a TTL; a promoted replica expires as a master at once;
//! `replica-ignore-maxmemory` keeps a replica from evicting. Where the claim is subtle, the
//! same commands go to a redis-server replica of the same master and the replies must match.

use crate::common::*;
use std::time::Duration;

/// TTL of the keys that expire during a test, and how long to sleep for them to.
const TTL_MS: &str = "200";
const PAST_TTL: Duration = Duration::from_millis(400);

/// A tern replica of `master`, its link up.
fn tern_replica(master: &Server) -> Server {
    let r = Server::tern(&[
        "--replicaof",
        "127.0.0.1",
        &master.port.to_string(),
        "--enable-debug-command",
        "yes",
    ]);
    wait_link_up(&mut r.conn());
    r
}

/// A redis-server replica of `master` (None where redis-server is not installed).
fn redis_replica(master: &Server) -> Option<Server> {
    let r = Server::redis(&[
        "--replicaof",
        "127.0.0.1",
        &master.port.to_string(),
        "--enable-debug-command",
        "yes",
    ])?;
    wait_link_up(&mut r.conn());
    Some(r)
}

/// Keys of every type with a short TTL, and two without, written on the master `m`.
fn write_expiring_keys(m: &mut redis::Connection) {
    q(m, &["SET", "str", "v", "PX", TTL_MS]);
    q(m, &["RPUSH", "list", "a", "b"]);
    q(m, &["SADD", "set", "a", "b"]);
    q(m, &["HSET", "hash", "f", "v"]);
    q(m, &["ZADD", "zset", "1", "a"]);
    q(m, &["PFADD", "hll", "a", "b"]);
    q(m, &["XADD", "stream", "1-1", "f", "v"]);
    for k in ["list", "set", "hash", "zset", "hll", "stream"] {
        q(m, &["PEXPIRE", k, TTL_MS]);
    }
    q(m, &["SET", "live", "v"]);
    q(m, &["SET", "live:ttl", "v", "EX", "1000"]);
}

/// Read commands a client may send a replica, each touching an expired key.
const READS: &[&[&str]] = &[
    &["GET", "str"],
    &["MGET", "str", "live"],
    &["STRLEN", "str"],
    &["GETRANGE", "str", "0", "-1"],
    &["EXISTS", "str", "list", "live"],
    &["TTL", "str"],
    &["PTTL", "list"],
    &["EXPIRETIME", "set"],
    &["PEXPIRETIME", "hash"],
    &["TYPE", "zset"],
    &["OBJECT", "ENCODING", "str"],
    &["OBJECT", "FREQ", "str"],
    &["TOUCH", "str", "live"],
    &["DUMP", "str"],
    &["LRANGE", "list", "0", "-1"],
    &["LLEN", "list"],
    &["LINDEX", "list", "0"],
    &["SMEMBERS", "set"],
    &["SCARD", "set"],
    &["SISMEMBER", "set", "a"],
    &["SUNION", "set", "live:none"],
    &["HGETALL", "hash"],
    &["HGET", "hash", "f"],
    &["HLEN", "hash"],
    &["ZRANGE", "zset", "0", "-1"],
    &["ZSCORE", "zset", "a"],
    &["ZCARD", "zset"],
    &["PFCOUNT", "hll"],
    &["XRANGE", "stream", "-", "+"],
    &["XLEN", "stream"],
    &["SORT_RO", "list", "ALPHA"],
    &["KEYS", "*"],
    &["SCAN", "0", "COUNT", "1000"],
    &["RANDOMKEY"],
    &["DBSIZE"],
];

/// The sorted elements of an array reply (KEYS and SCAN's order is the table's).
fn sorted(v: redis::Value) -> Vec<String> {
    let mut out: Vec<String> = match v {
        redis::Value::Array(items) => items.into_iter().map(|i| norm(Ok(i))).collect(),
        other => vec![norm(Ok(other))],
    };
    out.sort();
    out
}

/// `args` on `c` as comparable text (array replies of walks sorted).
fn reply(c: &mut redis::Connection, args: &[&str]) -> String {
    match args[0] {
        "KEYS" => format!("{:?}", sorted(q(c, args))),
        "SCAN" => match q(c, args) {
            redis::Value::Array(mut parts) => format!("{:?}", sorted(parts.remove(1))),
            other => panic!("SCAN replied {other:?}"),
        },
        // Of the two live keys either may come.
        "RANDOMKEY" => {
            let k: String = q_as(c, args);
            assert!(k.starts_with("live"), "RANDOMKEY gave expired key {k}");
            "live*".into()
        }
        _ => norm(cmd(args).query(c)),
    }
}

/// The scenario on one master: reads on a tern replica (and a redis-server one, where
/// installed) of keys the master has not expired yet (its active expiry off).
fn replica_hides_without_deleting(master: &Server) {
    let mut m = master.conn();
    q(&mut m, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let tern = tern_replica(master);
    let redis = redis_replica(master);
    let mut t = tern.conn();
    write_expiring_keys(&mut m);
    wait_caught_up(&mut m, &mut t);
    let mut rr = redis.as_ref().map(|r| {
        let mut c = r.conn();
        wait_caught_up(&mut m, &mut c);
        c
    });
    std::thread::sleep(PAST_TTL);
    // A few cron periods: no active expiry on a replica.
    std::thread::sleep(Duration::from_millis(300));
    let digest: String = q_as(&mut m, &["DEBUG", "DIGEST"]);
    for args in READS {
        let got = reply(&mut t, args);
        if let Some(r) = rr.as_mut() {
            assert_eq!(
                got,
                reply(r, args),
                "{args:?}: tern and redis replicas differ"
            );
        }
    }
    // Read as absent...
    assert_eq!(q(&mut t, &["GET", "str"]), redis::Value::Nil);
    assert_eq!(q(&mut t, &["TTL", "str"]), int(-2));
    assert_eq!(q(&mut t, &["EXISTS", "str", "list", "set", "live"]), int(1));
    assert_eq!(sorted(q(&mut t, &["KEYS", "*"])).len(), 2);
    // ...but none deleted, nothing counted or logged: the dataset is still the master's.
    assert_eq!(q(&mut t, &["DBSIZE"]), int(9));
    assert_eq!(q_as::<String>(&mut t, &["DEBUG", "DIGEST"]), digest);
    assert_eq!(info_u64(&mut t, "stats", "expired_keys"), 0);
    // (then tern's estimate of the database's memory)
    let line = info_field(&mut t, "keyspace", "db0");
    assert!(
        line.starts_with("keys=9,expires=8,avg_ttl=0,subexpiry=0,used_memory="),
        "{line}"
    );
    // The master's expiry DELs remove them.
    q(&mut m, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    wait_until("the master to expire its keys", || {
        q_as::<i64>(&mut m, &["DBSIZE"]) == 2
    });
    wait_caught_up(&mut m, &mut t);
    assert_eq!(q(&mut t, &["DBSIZE"]), int(2));
    assert_eq!(
        q_as::<String>(&mut t, &["DEBUG", "DIGEST"]),
        q_as::<String>(&mut m, &["DEBUG", "DIGEST"])
    );
    // Removed by the master's DEL, not expired here.
    assert_eq!(info_u64(&mut t, "stats", "expired_keys"), 0);
}

#[test]
fn a_tern_replica_of_tern_hides_expired_keys_until_the_master_deletes_them() {
    replica_hides_without_deleting(&Server::tern(&["--enable-debug-command", "yes"]));
}

#[test]
fn a_tern_replica_of_redis_hides_expired_keys_until_the_master_deletes_them() {
    let Some(master) = Server::redis_master() else {
        return;
    };
    replica_hides_without_deleting(&master);
}

/// The master's stream sees a key as present even where the replica's clock has passed its
/// expiry: inside a script the master's time stands still, so the script's APPEND finds the
/// key it gave a 1 ms TTL, and so must the replica running the script's effects later.
fn master_stream_acts_on_locally_expired_keys(master: &Server) {
    let mut m = master.conn();
    q(&mut m, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let tern = tern_replica(master);
    let mut t = tern.conn();
    let script = "redis.call('set', KEYS[1], 'v', 'px', 1) \
                  local t0 = redis.call('time') \
                  local n = 0 \
                  while n < 30000000 do n = n + 1 end \
                  return redis.call('append', KEYS[1], 'x')";
    assert_eq!(q(&mut m, &["EVAL", script, "1", "k"]), int(2));
    wait_caught_up(&mut m, &mut t);
    // The replica applied APPEND to the expired key (not to a new empty one): same value.
    let want: Vec<String> = q_as(&mut m, &["DEBUG", "DIGEST-VALUE", "k"]);
    assert_ne!(want, vec!["0".repeat(40)]);
    assert_eq!(
        q_as::<Vec<String>>(&mut t, &["DEBUG", "DIGEST-VALUE", "k"]),
        want
    );
    assert_eq!(q(&mut t, &["GET", "k"]), redis::Value::Nil);
    assert_eq!(q(&mut t, &["DBSIZE"]), int(1));
    // The master's DEL (its lazy expiry on a read) removes it.
    assert_eq!(q(&mut m, &["GET", "k"]), redis::Value::Nil);
    wait_caught_up(&mut m, &mut t);
    assert_eq!(q(&mut t, &["DBSIZE"]), int(0));
}

#[test]
fn the_master_stream_of_tern_sees_locally_expired_keys() {
    master_stream_acts_on_locally_expired_keys(&Server::tern(&["--enable-debug-command", "yes"]));
}

#[test]
fn the_master_stream_of_redis_sees_locally_expired_keys() {
    let Some(master) = Server::redis_master() else {
        return;
    };
    master_stream_acts_on_locally_expired_keys(&master);
}

/// The suite's "Writable replica doesn't return expired keys" and "Slave is able to evict keys
/// created in writable slaves", with a redis-server replica answering the same commands.
#[test]
fn a_writable_replica_deletes_on_writes_and_expires_its_own_keys() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let mut m = master.conn();
    q(&mut m, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let tern = tern_replica(&master);
    let redis = redis_replica(&master);
    let mut t = tern.conn();
    let mut rr = redis.as_ref().map(|r| r.conn());
    q(&mut m, &["SET", "key1", "5", "PX", "10"]);
    q(&mut m, &["SET", "key2", "5", "PX", "10"]);
    wait_caught_up(&mut m, &mut t);
    if let Some(r) = rr.as_mut() {
        wait_caught_up(&mut m, r);
    }
    std::thread::sleep(Duration::from_millis(50));
    let mut same = |args: &[&str]| -> String {
        let got = norm(cmd(args).query(&mut t));
        if let Some(r) = rr.as_mut() {
            assert_eq!(got, norm(cmd(args).query(r)), "{args:?}");
        }
        got
    };
    assert_eq!(same(&["DBSIZE"]), "int(2)");
    assert_eq!(same(&["EXISTS", "key1", "key2"]), "int(0)");
    same(&["CONFIG", "SET", "replica-read-only", "no"]);
    assert_eq!(same(&["DBSIZE"]), "int(2)");
    // A write deletes the expired key it meets, then creates a new one without a TTL.
    assert_eq!(same(&["INCR", "key1"]), "int(1)");
    assert_eq!(same(&["TTL", "key1"]), "int(-1)");
    // A read does not delete.
    assert_eq!(same(&["GET", "key2"]), "nil");
    assert_eq!(same(&["DBSIZE"]), "int(2)");
    // An already-past time on a replica sets it (the key waits for a DEL) instead of deleting.
    assert_eq!(same(&["SET", "past", "v"]), "ok");
    assert_eq!(same(&["PEXPIREAT", "past", "1000"]), "int(1)");
    assert_eq!(same(&["EXISTS", "past"]), "int(0)");
    assert_eq!(same(&["DBSIZE"]), "int(3)");
    same(&["DEL", "key1", "key2", "past"]);
    // Keys the replica's own clients give a TTL are expired by the replica.
    same(&["SELECT", "5"]);
    for k in ["a", "b", "c"] {
        same(&["SET", k, "1", "PX", TTL_MS]);
    }
    same(&["SET", "d", "1"]);
    same(&["PEXPIRE", "d", TTL_MS]);
    same(&["SET", "e", "1", "PX", TTL_MS]);
    same(&["PERSIST", "e"]);
    assert_eq!(same(&["DBSIZE"]), "int(5)");
    let before = info_u64(&mut t, "stats", "expired_keys");
    wait_until("the writable replica to expire its keys", || {
        q_as::<i64>(&mut t, &["DBSIZE"]) == 1
    });
    assert_eq!(info_u64(&mut t, "stats", "expired_keys"), before + 4);
    if let Some(r) = rr.as_mut() {
        wait_until("the redis replica to expire its keys", || {
            q_as::<i64>(r, &["DBSIZE"]) == 1
        });
    }
    assert_eq!(q(&mut t, &["GET", "e"]), bulk("1"));
}

/// REPLICAOF NO ONE: the keys the master had not expired yet go at once (active expiry), and
/// a read of one deletes it.
#[test]
fn a_promoted_replica_expires_as_a_master_at_once() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let mut m = master.conn();
    q(&mut m, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let tern = tern_replica(&master);
    let mut t = tern.conn();
    for i in 0..50 {
        q(&mut m, &["SET", &format!("k{i}"), "v", "PX", TTL_MS]);
    }
    q(&mut m, &["SET", "live", "v"]);
    wait_caught_up(&mut m, &mut t);
    std::thread::sleep(PAST_TTL);
    assert_eq!(q(&mut t, &["DBSIZE"]), int(51));
    // Every key is expired but one: RANDOMKEY still answers (a live key, here).
    assert_eq!(q(&mut t, &["RANDOMKEY"]), bulk("live"));
    q(&mut t, &["REPLICAOF", "NO", "ONE"]);
    wait_until("the promoted replica to expire its keys", || {
        q_as::<i64>(&mut t, &["DBSIZE"]) == 1
    });
    assert_eq!(info_u64(&mut t, "stats", "expired_keys"), 50);
}

/// A promoted replica with active expiry off: lazy expiry deletes what a read meets.
#[test]
fn a_promoted_replica_deletes_expired_keys_on_access() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let mut m = master.conn();
    q(&mut m, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let tern = tern_replica(&master);
    let mut t = tern.conn();
    q(&mut m, &["SET", "k", "v", "PX", TTL_MS]);
    wait_caught_up(&mut m, &mut t);
    q(&mut t, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    std::thread::sleep(PAST_TTL);
    assert_eq!(q(&mut t, &["GET", "k"]), redis::Value::Nil);
    assert_eq!(q(&mut t, &["DBSIZE"]), int(1));
    q(&mut t, &["REPLICAOF", "NO", "ONE"]);
    assert_eq!(q(&mut t, &["GET", "k"]), redis::Value::Nil);
    assert_eq!(q(&mut t, &["DBSIZE"]), int(0));
    assert_eq!(info_u64(&mut t, "stats", "expired_keys"), 1);
}

/// Every key of the replica expired (all have a TTL): RANDOMKEY gives one of them after its
/// tries instead of looping forever, as Redis's dbRandomKey on a replica.
#[test]
fn randomkey_on_a_replica_whose_keys_all_expired_answers() {
    let master = Server::tern(&["--enable-debug-command", "yes"]);
    let mut m = master.conn();
    q(&mut m, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    let tern = tern_replica(&master);
    let mut t = tern.conn();
    t.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    q(&mut m, &["SET", "a", "v", "PX", TTL_MS]);
    q(&mut m, &["SET", "b", "v", "PX", TTL_MS]);
    wait_caught_up(&mut m, &mut t);
    std::thread::sleep(PAST_TTL);
    let k: String = q_as(&mut t, &["RANDOMKEY"]);
    assert!(k == "a" || k == "b", "RANDOMKEY gave {k}");
    assert_eq!(q(&mut t, &["DBSIZE"]), int(2));
}

/// `replica-ignore-maxmemory yes` (the default): a replica over its maxmemory keeps every key
/// of its master; with `no` it evicts.
#[test]
fn a_replica_evicts_only_when_told_not_to_ignore_maxmemory() {
    let master = Server::tern(&[]);
    let mut m = master.conn();
    let tern = tern_replica(&master);
    let mut t = tern.conn();
    let used = info_u64(&mut t, "memory", "used_memory");
    let limit = (used + 2 * 1024 * 1024).to_string();
    q(&mut t, &["CONFIG", "SET", "maxmemory", &limit]);
    q(
        &mut t,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"],
    );
    assert_eq!(
        q(&mut t, &["CONFIG", "GET", "replica-ignore-maxmemory"]),
        redis::Value::Array(vec![bulk("replica-ignore-maxmemory"), bulk("yes")])
    );
    let value = "x".repeat(10_000);
    for i in 0..600 {
        q(&mut m, &["SET", &format!("k{i}"), &value]);
    }
    wait_caught_up(&mut m, &mut t);
    assert!(info_u64(&mut t, "memory", "used_memory") > used + 2 * 1024 * 1024);
    // A few cron periods: nothing evicted, by commands or the cron.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(q(&mut t, &["GET", "k0"]), bulk(&value));
    assert_eq!(q(&mut t, &["DBSIZE"]), int(600));
    assert_eq!(info_u64(&mut t, "stats", "evicted_keys"), 0);
    q(&mut t, &["CONFIG", "SET", "replica-ignore-maxmemory", "no"]);
    wait_until("the replica to evict", || {
        info_u64(&mut t, "stats", "evicted_keys") > 0
    });
    assert!(q_as::<i64>(&mut t, &["DBSIZE"]) < 600);
}

//! `maxmemory` against the real binary: OOM refusals (denyoom commands, MULTI queueing, shebang
//! scripts and `redis.call` inside scripts, errorstats), eviction under each policy family
//! (allkeys-* removes any key, volatile-* only keys with a TTL, volatile-ttl the nearest
//! expiry first), `evicted` keyspace events and INFO `evicted_keys`.
use crate::common::{info_u64, Raw, Server};

type R = Raw<false>;

/// Set maxmemory to `headroom` bytes above what is used now.
fn limit_above_now(c: &mut R, headroom: u64) -> u64 {
    let used = info_u64(c, "memory", "used_memory");
    let limit = used + headroom;
    assert_eq!(c.q(&format!("CONFIG SET maxmemory {limit}")), "OK");
    limit
}

#[test]
fn noeviction_refuses_growing_commands_only() {
    let s = Server::tern(&[]);
    let mut c = R::new(s.port);
    assert_eq!(c.q("SET keep 1"), "OK");
    assert_eq!(c.q("CONFIG SET maxmemory 1"), "OK");
    let oom = "!OOM command not allowed when used memory > 'maxmemory'.";
    assert_eq!(c.q("SET a b"), oom);
    assert_eq!(c.q("LPUSH l x"), oom);
    // Reads, deletes and admin commands still run.
    assert_eq!(c.q("GET keep"), "1");
    assert_eq!(c.q("DEL keep"), ":1");
    assert_eq!(c.q("PING"), "PONG");
    // Inside MULTI everything queued is refused and EXEC aborts.
    assert_eq!(c.q("MULTI"), "OK");
    assert_eq!(c.q("GET x"), oom);
    assert_eq!(
        c.q("EXEC"),
        "!EXECABORT Transaction discarded because of previous errors."
    );
    let errs = c.q("INFO errorstats");
    assert!(errs.contains("errorstat_OOM:count=3"), "{errs}");
    // The same counts as redis-server gives for this sequence.
    let stats = c.q("INFO commandstats");
    let line = |name: &str| {
        stats
            .lines()
            .find(|l| l.starts_with(&format!("cmdstat_{name}:")))
            .unwrap_or_else(|| panic!("no {name} in {stats}"))
            .to_string()
    };
    assert_eq!(
        line("lpush"),
        "cmdstat_lpush:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0"
    );
    assert!(line("set").starts_with("cmdstat_set:calls=1,"));
    assert!(line("set").ends_with("rejected_calls=1,failed_calls=0"));
    assert!(line("get").ends_with("rejected_calls=1,failed_calls=0"));
    assert!(line("exec").ends_with("rejected_calls=0,failed_calls=1"));
    assert!(errs.contains("errorstat_EXECABORT:count=1"), "{errs}");
    assert_eq!(c.q("CONFIG SET maxmemory 0"), "OK");
    assert_eq!(c.q("SET a b"), "OK");
}

#[test]
fn scripts_follow_their_flags() {
    let s = Server::tern(&[]);
    let mut c = R::new(s.port);
    assert_eq!(c.q("SET k v"), "OK");
    assert_eq!(c.q("CONFIG SET maxmemory 1"), "OK");
    let oom = "!OOM command not allowed when used memory > 'maxmemory'.";
    // A shebang script that may write is a denyoom command.
    assert_eq!(
        c.qa(&[
            b"EVAL",
            b"#!lua\nreturn redis.call('get', KEYS[1])",
            b"1",
            b"k"
        ]),
        oom
    );
    // allow-oom and no-writes scripts run.
    assert_eq!(
        c.qa(&[
            b"EVAL",
            b"#!lua flags=allow-oom\nreturn redis.call('get', KEYS[1])",
            b"1",
            b"k"
        ]),
        "v"
    );
    assert_eq!(
        c.qa(&[
            b"EVAL",
            b"#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])",
            b"1",
            b"k"
        ]),
        "v"
    );
    // Without a shebang the script runs; its first growing write is refused.
    assert_eq!(
        c.qa(&[b"EVAL", b"return redis.call('get', KEYS[1])", b"1", b"k"]),
        "v"
    );
    let r = c.qa(&[
        b"EVAL",
        b"return redis.call('set', KEYS[1], 'x')",
        b"1",
        b"k",
    ]);
    assert!(
        r.starts_with("!OOM command not allowed when used memory > 'maxmemory'."),
        "{r}"
    );
    let r = c.qa(&[
        b"EVAL",
        b"local t = redis.pcall('set', KEYS[1], 'x') return t['err']",
        b"1",
        b"k",
    ]);
    assert_eq!(r, "OOM command not allowed when used memory > 'maxmemory'.");
    assert_eq!(c.q("CONFIG SET maxmemory 0"), "OK");
}

#[test]
fn allkeys_policy_stays_under_the_limit_and_announces_evictions() {
    let s = Server::tern(&["--threads", "2"]);
    let mut c = R::new(s.port);
    assert_eq!(c.q("CONFIG SET maxmemory-policy allkeys-lru"), "OK");
    let limit = limit_above_now(&mut c, 200 * 1024);
    let value = "x".repeat(100);
    for i in 0..10_000 {
        assert_eq!(
            c.qa(&[b"SET", format!("key:{i}").as_bytes(), value.as_bytes()]),
            "OK"
        );
    }
    let used = info_u64(&mut c, "memory", "used_memory");
    assert!(used <= limit + 4096, "used {used} over limit {limit}");
    // Read together (EXEC holds every shard): the cron may still be evicting.
    assert_eq!(c.q("MULTI"), "OK");
    assert_eq!(c.q("DBSIZE"), "QUEUED");
    assert_eq!(c.q("INFO stats"), "QUEUED");
    let both = c.q("EXEC");
    let dbsize: u64 = both[2..both.find(',').unwrap()].parse().unwrap();
    let evicted: u64 = both
        .split("evicted_keys:")
        .nth(1)
        .and_then(|t| t.split(|ch: char| !ch.is_ascii_digit()).next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(evicted > 0);
    assert_eq!(dbsize + evicted, 10_000);

    // Each eviction is an `evicted` event naming the key. (Subscribed only now: the events
    // of the fill, unread, would be output buffer memory that eviction must make room for.)
    let mut sub = R::new(s.port);
    assert_eq!(c.q("CONFIG SET notify-keyspace-events Ee"), "OK");
    assert_eq!(
        sub.q("PSUBSCRIBE __keyevent@*__:evicted"),
        "[psubscribe,__keyevent@*__:evicted,:1]"
    );
    for i in 0..200 {
        let k = format!("more:{i}");
        assert_eq!(c.qa(&[b"SET", k.as_bytes(), value.as_bytes()]), "OK");
    }
    let first = sub.read();
    assert!(
        first.starts_with("[pmessage,__keyevent@*__:evicted,__keyevent@0__:evicted,"),
        "{first}"
    );
}

#[test]
fn volatile_policies_only_remove_keys_with_a_ttl() {
    let s = Server::tern(&[]);
    let mut c = R::new(s.port);
    assert_eq!(c.q("CONFIG SET maxmemory-policy volatile-ttl"), "OK");
    let value = "y".repeat(200);
    // Persistent keys first, then keys whose TTL grows with their number.
    for i in 0..200 {
        assert_eq!(
            c.qa(&[b"SET", format!("p:{i}").as_bytes(), value.as_bytes()]),
            "OK"
        );
    }
    // Headroom for what the server allocates besides keys (thread caches, tables growing),
    // which a fresh clone's first run showed can exceed 100 KB right after the limit is set.
    let limit = limit_above_now(&mut c, 400 * 1024);
    let mut refused = None;
    for i in 0..5000 {
        let r = c.qa(&[
            b"SET",
            format!("v:{i}").as_bytes(),
            value.as_bytes(),
            b"EX",
            format!("{}", 10_000 + i).as_bytes(),
        ]);
        if r.starts_with("!OOM") {
            refused = Some(i);
            break;
        }
        assert_eq!(r, "OK");
    }
    if let Some(i) = refused {
        let used = info_u64(&mut c, "memory", "used_memory");
        panic!("volatile keys were there to evict: OOM at v:{i}, used {used}, limit {limit}");
    }
    // Every persistent key survived. Eviction samples keys and takes the nearest expiry of
    // the sample, so the survivors are mostly the later-expiring half.
    for i in 0..200 {
        assert_eq!(c.q(&format!("EXISTS p:{i}")), ":1", "p:{i} evicted");
    }
    let alive = |c: &mut R, range: std::ops::Range<usize>| {
        range
            .filter(|i| c.q(&format!("EXISTS v:{i}")) == ":1")
            .count()
    };
    let (early, late) = (alive(&mut c, 0..2500), alive(&mut c, 2500..5000));
    assert!(late > 2 * early, "early {early} late {late}");
    assert!(info_u64(&mut c, "stats", "evicted_keys") > 0);
    // Far over the limit, eviction goes on a bounded time per command (the rest in the next
    // ones, as Redis's tenacity); once only persistent keys are left nothing can be evicted
    // and writes are refused.
    assert_eq!(c.q("CONFIG SET maxmemory 1"), "OK");
    let mut oom = false;
    for _ in 0..10_000 {
        let r = c.q("SET p:0 again");
        if r.starts_with("!OOM") {
            oom = true;
            break;
        }
    }
    assert!(oom, "never refused");
    let ks = c.q("INFO keyspace");
    assert!(ks.contains("db0:keys=200,expires=0,"), "{ks}");
}

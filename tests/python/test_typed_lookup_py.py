"""The typed key lookups every data-type family goes through (keyspace_access.rs), checked
against redis-server: the WRONGTYPE reply, the access clock of a wrong-typed key (Redis's
lookupKey touches it before the type check), keyspace hits and misses, and the replies for
missing keys."""

from __future__ import annotations

import redis

# One command per family and access kind (read, write, create-or-write), against a key of
# another type.
ON_STRING = [
    ["LPUSH", "k", "x"],
    ["LLEN", "k"],
    ["LRANGE", "k", "0", "-1"],
    ["LINDEX", "k", "0"],
    ["LPOP", "k"],
    ["HSET", "k", "f", "v"],
    ["HGET", "k", "f"],
    ["HINCRBY", "k", "f", "1"],
    ["SADD", "k", "m"],
    ["SISMEMBER", "k", "m"],
    ["SMEMBERS", "k"],
    ["ZADD", "k", "1", "m"],
    ["ZSCORE", "k", "m"],
    ["ZRANGE", "k", "0", "-1"],
    ["XADD", "k", "*", "f", "v"],
    ["XLEN", "k"],
    ["GEOPOS", "k", "m"],
]
ON_HASH = [
    ["GET", "k"],
    ["STRLEN", "k"],
    ["GETRANGE", "k", "0", "1"],
    ["GETDEL", "k"],
    ["INCR", "k"],
    ["INCRBYFLOAT", "k", "1.5"],
    ["APPEND", "k", "x"],
    ["SETRANGE", "k", "0", "x"],
    ["GETBIT", "k", "0"],
    ["SETBIT", "k", "0", "1"],
]
MISSING = [
    ["GET", "nokey"],
    ["STRLEN", "nokey"],
    ["GETRANGE", "nokey", "0", "1"],
    ["LLEN", "nokey"],
    ["LRANGE", "nokey", "0", "-1"],
    ["LINDEX", "nokey", "0"],
    ["HGET", "nokey", "f"],
    ["HMGET", "nokey", "a", "b"],
    ["HGETALL", "nokey"],
    ["SISMEMBER", "nokey", "m"],
    ["SMISMEMBER", "nokey", "a", "b"],
    ["SCARD", "nokey"],
    ["SRANDMEMBER", "nokey"],
    ["ZSCORE", "nokey", "m"],
    ["ZCARD", "nokey"],
    ["XLEN", "nokey"],
    ["BITCOUNT", "nokey"],
]


def reply(c: redis.Redis, cmd: list[str]):
    try:
        return c.execute_command(*cmd)
    except redis.ResponseError as e:
        return ("error", str(e))


def stats(c: redis.Redis) -> tuple[int, int]:
    s = c.info("stats")
    return s["keyspace_hits"], s["keyspace_misses"]


def lfu(c: redis.Redis):
    c.config_set("maxmemory-policy", "allkeys-lfu")
    c.config_set("lfu-log-factor", "0")  # every access counts one


def test_wrong_type_replies_touches_and_hits(pair):
    tern, ref = pair
    for setup, cmds in ((["SET", "k", "v"], ON_STRING), (["HSET", "k", "f", "v"], ON_HASH)):
        for c in (tern, ref):
            c.flushall()
            lfu(c)
            c.execute_command(*setup)
            c.config_resetstat()
        for cmd in cmds:
            got, want = reply(tern, cmd), reply(ref, cmd)
            assert got == want, cmd
            assert got[0] == "error" and got[1].startswith("WRONGTYPE Operation against a key"), cmd
        # Each command touched the key once, as Redis's lookupKey does before the type check.
        assert tern.object("freq", "k") == ref.object("freq", "k")
        assert stats(tern) == stats(ref)


def test_missing_key_replies_and_misses(pair):
    tern, ref = pair
    for c in (tern, ref):
        c.flushall()
        c.config_resetstat()
    for cmd in MISSING:
        assert reply(tern, cmd) == reply(ref, cmd), cmd
    assert stats(tern) == stats(ref)
    assert stats(tern)[1] == len(MISSING)


def test_found_reads_count_hits_and_touch(pair):
    tern, ref = pair
    for c in (tern, ref):
        c.flushall()
        lfu(c)
        c.rpush("l", "a", "b")
        c.config_resetstat()
    for cmd in (["LLEN", "l"], ["LRANGE", "l", "0", "-1"], ["LINDEX", "l", "1"], ["LPOS", "l", "b"]):
        assert reply(tern, cmd) == reply(ref, cmd), cmd
    assert stats(tern) == stats(ref) == (4, 0)
    assert tern.object("freq", "l") == ref.object("freq", "l")


def test_sort_and_migrate_touch_every_key_they_read(pair):
    """SORT's source, its BY weights and GET targets, and MIGRATE's keys are read with Redis's
    lookupKeyRead: each read bumps the key's access clock (LFU counter here)."""
    tern, ref = pair
    for c in (tern, ref):
        c.flushall()
        lfu(c)
        c.rpush("l", "2", "1", "3")
        # Weights that are not small integers: Redis would share those objects (and their
        # access clock) between keys.
        c.mset({"w_1": "3.5", "w_2": "2.5", "w_3": "1.5", "o_1": "a", "o_2": "b", "o_3": "c"})
        c.hset("h_1", "f", "x")
    cmds = [
        ["SORT", "l"],
        ["SORT", "l", "BY", "w_*", "GET", "o_*", "GET", "#"],
        ["SORT", "l", "BY", "w_*", "GET", "h_*->f", "STORE", "dst"],
        ["SORT_RO", "l", "BY", "nosort", "GET", "o_*"],
        # No server listens on port 1: the keys are looked up before the connection fails.
        ["MIGRATE", "127.0.0.1", "1", "", "0", "200", "KEYS", "l", "o_2"],
    ]
    for cmd in cmds:
        assert reply(tern, cmd) == reply(ref, cmd), cmd
    for key in ("l", "w_1", "w_2", "w_3", "o_1", "o_2", "o_3", "h_1"):
        assert tern.object("freq", key) == ref.object("freq", key), key

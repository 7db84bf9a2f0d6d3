"""Member expiry as KeyDB has it (EXPIREMEMBER, EXPIREMEMBERAT, PEXPIREMEMBERAT; TTL, PTTL
and PERSIST with a member) through redis-py, RESP2 and RESP3.

A set or sorted-set member past its time is deleted when its key is next looked up (on a
master) and by the active cycle, reaching replicas and the AOF as SREM / ZREM; on a hash the
time is the field's Redis 7.4 time. Times survive SAVE/restart (KeyDB's `keydb-subexpire-*`
AUX fields, which Redis skips), AOF rewrite (PEXPIREMEMBERAT) and full sync.
"""

import os
import shutil
import time

import pytest
import redis

from persist_helpers import stop, wait_for, wait_loaded



def stat(c, name):
    return int(c.info("stats")[name])



def test_replies(r):
    assert r.execute_command("EXPIREMEMBER", "nokey", "m", 10) == 0
    r.sadd("s", "a", "b", "c")
    assert r.execute_command("EXPIREMEMBER", "s", "zz", 10) == 0
    assert r.execute_command("EXPIREMEMBER", "s", "a", 100) == 1
    assert r.execute_command("EXPIREMEMBER", "s", "b", 100000, "ms") == 1
    assert r.execute_command("EXPIREMEMBER", "s", "c", 50, "S") == 1
    assert r.ttl("s") == -1  # the key itself has no time
    assert r.execute_command("TTL", "s", "a") == 100
    assert 99000 < r.execute_command("PTTL", "s", "b") <= 100000
    assert r.execute_command("TTL", "s", "c") == 50
    assert r.execute_command("TTL", "s", "nomember") == -1
    assert r.execute_command("TTL", "nokey", "a") == -2
    at = int(time.time()) + 1000
    assert r.execute_command("EXPIREMEMBERAT", "s", "a", at) == 1
    assert abs(r.execute_command("TTL", "s", "a") - 1000) <= 1
    at_ms = int(time.time() * 1000) + 500000
    assert r.execute_command("PEXPIREMEMBERAT", "s", "a", at_ms) == 1
    assert 490000 < r.execute_command("PTTL", "s", "a") <= 500000
    assert r.execute_command("PERSIST", "s", "a") == 1
    assert r.execute_command("PERSIST", "s", "a") == 0
    assert r.execute_command("TTL", "s", "a") == -1
    assert r.execute_command("PERSIST", "nokey", "a") == 0
    # Sorted sets and hashes too.
    r.zadd("z", {"x": 1, "y": 2})
    assert r.execute_command("EXPIREMEMBER", "z", "x", 30) == 1
    assert r.execute_command("TTL", "z", "x") == 30
    r.hset("h", mapping={"f": "1", "g": "2"})
    assert r.execute_command("EXPIREMEMBER", "h", "f", 40) == 1
    assert r.execute_command("TTL", "h", "f") == 40
    assert r.execute_command("HTTL", "h", "FIELDS", 2, "f", "g") == [40, -1]
    assert r.execute_command("PERSIST", "h", "f") == 1
    assert r.execute_command("HTTL", "h", "FIELDS", 1, "f") == [-1]
    # Types without members: a member has no time.
    r.set("str", "v")
    assert r.execute_command("TTL", "str", "a") == -1
    # A time already past deletes the member now; the last one takes the key.
    assert r.execute_command("EXPIREMEMBER", "z", "y", -1) == 1
    assert r.zrange("z", 0, -1) == (["x"] if r.get_encoder().decode_responses else [b"x"])
    assert r.execute_command("PEXPIREMEMBERAT", "z", "x", 1) == 1
    assert r.exists("z") == 0


def test_errors(r):
    r.sadd("s", "a")
    r.set("str", "v")
    r.rpush("list", "a")
    cases = [
        (["EXPIREMEMBER", "s", "a", "x"], "value is not an integer or out of range"),
        (["EXPIREMEMBER", "s", "a", 10, "minutes"], "Invalid unit arg"),
        (["EXPIREMEMBER", "s", "a", 10, "ms", "x"], "wrong number of arguments for 'expiremember' command"),
        (["EXPIREMEMBER", "s", "a"], "wrong number of arguments for 'expiremember' command"),
        (["EXPIREMEMBERAT", "s", "a", 1, 2], "wrong number of arguments for 'expirememberat' command"),
        (["EXPIREMEMBER", "s", "a", 2**62], "invalid expire time in 'expiremember' command"),
        (["PEXPIREMEMBERAT", "s", "a", 2**46], "invalid expire time in 'pexpirememberat' command"),
        (["TTL", "s", "a", "b"], "wrong number of arguments for 'ttl' command"),
        (["PTTL", "s", "a", "b"], "wrong number of arguments for 'pttl' command"),
        (["PERSIST", "s", "a", "b"], "wrong number of arguments for 'persist' command"),
    ]
    for argv, msg in cases:
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command(*argv)
        assert str(e.value) == msg, argv
    for key in ("str", "list"):
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
            r.execute_command("EXPIREMEMBER", key, "a", 10)
    # Plain TTL/PTTL/PERSIST are untouched.
    r.expire("s", 100)
    assert r.ttl("s") == 100
    assert r.persist("s") is True


def test_lazy_expiry_on_access(tern_factory, protocol):
    s = tern_factory("--enable-debug-command", "yes")
    c = s.client(protocol=protocol)
    c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    c.sadd("s", "a", "b", "c")
    c.zadd("z", {"x": 1, "y": 2, "w": 3})
    c.execute_command("EXPIREMEMBER", "s", "a", 50, "ms")
    c.execute_command("EXPIREMEMBER", "z", "x", 50, "ms")
    c.execute_command("EXPIREMEMBER", "z", "w", 100000, "ms")
    time.sleep(0.15)
    assert stat(c, "expired_subkeys") == 0
    assert c.scard("s") == 2
    assert sorted(c.smembers("s")) == ["b", "c"]
    assert c.sismember("s", "a") == 0
    assert c.zcard("z") == 2
    assert c.zrange("z", 0, -1) == ["y", "w"]
    assert c.execute_command("TTL", "z", "x") == -1
    assert stat(c, "expired_subkeys") == 2
    # Multi-key commands see the sets without their expired members.
    c.sadd("t", "b", "q")
    c.execute_command("EXPIREMEMBER", "t", "b", 10, "ms")
    time.sleep(0.05)
    assert c.sinter("s", "t") == set()
    # The last member gone: the key is gone.
    c.execute_command("EXPIREMEMBER", "s", "b", 10, "ms")
    c.execute_command("EXPIREMEMBER", "s", "c", 10, "ms")
    time.sleep(0.05)
    assert c.exists("s") == 0


def test_active_expiry(r):
    r.sadd("s", *[f"m{i}" for i in range(200)])
    r.zadd("z", {f"m{i}": i for i in range(200)})
    before = stat(r, "expired_subkeys")
    for i in range(0, 200, 2):
        r.execute_command("EXPIREMEMBER", "s", f"m{i}", 1000, "ms")
        r.execute_command("EXPIREMEMBER", "z", f"m{i}", 1000, "ms")
    assert r.info("keyspace")["db0"]["subexpiry"] == 2
    # No access to s or z: the active cycle removes them.
    assert wait_for(lambda: stat(r, "expired_subkeys") - before == 200)
    assert r.scard("s") == 100 and r.zcard("z") == 100
    assert r.info("keyspace")["db0"].get("subexpiry", 0) == 0
    # A whole set of expiring members goes, key and all.
    r.sadd("gone", "a", "b")
    r.execute_command("EXPIREMEMBER", "gone", "a", 50, "ms")
    r.execute_command("EXPIREMEMBER", "gone", "b", 60, "ms")
    assert wait_for(lambda: r.execute_command("DBSIZE") == 2)


def test_removal_clears_the_time(r):
    r.sadd("s", "a", "b", "c", "d")
    for m in "abcd":
        r.execute_command("EXPIREMEMBER", "s", m, 1000)
    r.srem("s", "a")
    r.sadd("s", "a")
    assert r.execute_command("TTL", "s", "a") == -1
    popped = r.spop("s", 2)
    for m in popped:
        if m != "a":
            r.sadd("s", m)
            assert r.execute_command("TTL", "s", m) == -1
    r.zadd("z", {"x": 1, "y": 2, "w": 3})
    for m in ("x", "y", "w"):
        r.execute_command("EXPIREMEMBER", "z", m, 1000)
    # A new score keeps the time; removal in any form drops it.
    r.zadd("z", {"y": 5})
    assert r.execute_command("TTL", "z", "y") == 1000
    r.zpopmin("z")
    r.zadd("z", {"x": 1})
    assert r.execute_command("TTL", "z", "x") == -1
    r.zremrangebyscore("z", 3, 3)
    r.zadd("z", {"w": 3})
    assert r.execute_command("TTL", "z", "w") == -1
    assert r.execute_command("TTL", "z", "y") == 1000
    # RENAME, COPY and MOVE carry the times with the value.
    r.rename("z", "z2")
    assert r.execute_command("TTL", "z2", "y") == 1000
    r.copy("z2", "z3")
    assert r.execute_command("TTL", "z3", "y") == 1000
    r.move("z3", 1)
    r.execute_command("SELECT", 1)
    assert r.execute_command("TTL", "z3", "y") == 1000


def test_encodings_unchanged(r):
    r.sadd("ints", 1, 2, 3)
    r.execute_command("EXPIREMEMBER", "ints", "2", 100)
    assert r.object("encoding", "ints") == "intset"
    r.sadd("ints", "x")
    assert r.object("encoding", "ints") == "listpack"
    r.sadd("big", *range(1000))
    r.execute_command("EXPIREMEMBER", "big", "7", 100)
    assert r.object("encoding", "big") == "hashtable"
    r.zadd("zs", {"a": 1})
    r.execute_command("EXPIREMEMBER", "zs", "a", 100)
    assert r.object("encoding", "zs") == "listpack"
    r.zadd("zs", {f"m{i}": i for i in range(200)})
    assert r.object("encoding", "zs") == "skiplist"
    assert r.execute_command("TTL", "zs", "a") == 100


def test_keyspace_events(tern):
    c = tern.client()
    c.config_set("notify-keyspace-events", "KEA")
    p = c.pubsub()
    p.psubscribe("__keyevent@0__:*")
    p.get_message(timeout=1)
    c.sadd("s", "a", "b")
    c.zadd("z", {"x": 1})
    c.execute_command("EXPIREMEMBER", "s", "a", 20, "ms")
    c.execute_command("EXPIREMEMBER", "z", "x", 20, "ms")
    events = []
    deadline = time.time() + 3
    while time.time() < deadline and len([e for e in events if e[0] in ("srem", "zrem", "del")]) < 3:
        m = p.get_message(timeout=0.2)
        if m and m["type"] == "pmessage":
            events.append((m["channel"].split(":")[-1], m["data"]))
    assert ("srem", "s") in events
    assert ("zrem", "z") in events
    assert ("del", "z") in events
    c.execute_command("EXPIREMEMBER", "s", "b", 100)
    c.execute_command("PERSIST", "s", "b")
    m = None
    deadline = time.time() + 2
    while time.time() < deadline:
        m = p.get_message(timeout=0.2)
        if m and m["type"] == "pmessage" and m["channel"].endswith(":persist"):
            break
    assert m and m["data"] == "s"
    p.close()


def test_save_restart_debug_reload_and_redis_loads_it(tern_factory, redis_factory, tmp_path):
    d = str(tmp_path)
    s = tern_factory("--dir", d, "--dbfilename", "dump.rdb", "--enable-debug-command", "yes")
    c = s.client()
    c.sadd("s", "a", "b", "c")
    c.zadd("z", {"x": 1, "y": 2})
    c.sadd("big", *[f"m{i}" for i in range(300)])
    c.execute_command("PEXPIREMEMBERAT", "s", "a", 2524600800123)
    c.execute_command("PEXPIREMEMBERAT", "z", "y", 2524600800456)
    c.execute_command("PEXPIREMEMBERAT", "big", "m77", 2524600800789)
    c.execute_command("DEBUG", "RELOAD")
    assert c.execute_command("PTTL", "s", "a") > 0
    c.save()
    stop(tern_factory, s)
    s2 = tern_factory("--dir", d, "--dbfilename", "dump.rdb")
    c2 = wait_loaded(s2.client())
    now_ms = int(time.time() * 1000)
    assert abs(c2.execute_command("PTTL", "s", "a") - (2524600800123 - now_ms)) < 2000
    assert c2.execute_command("TTL", "s", "b") == -1
    assert abs(c2.execute_command("PTTL", "z", "y") - (2524600800456 - now_ms)) < 2000
    assert abs(c2.execute_command("PTTL", "big", "m77") - (2524600800789 - now_ms)) < 2000
    assert c2.info("keyspace")["db0"]["subexpiry"] == 3
    stop(tern_factory, s2)
    # The file stays a Redis file: a real redis-server loads it (the members, without times).
    d2 = str(tmp_path / "redis")
    os.makedirs(d2)
    shutil.copy(os.path.join(d, "dump.rdb"), os.path.join(d2, "dump.rdb"))
    ref = redis_factory("--dir", d2, "--dbfilename", "dump.rdb")
    rc = wait_loaded(ref.client())
    assert sorted(rc.smembers("s")) == ["a", "b", "c"]
    assert rc.zrange("z", 0, -1, withscores=True) == [("x", 1.0), ("y", 2.0)]
    assert rc.scard("big") == 300


def test_aof_rewrite_and_restart(tern_factory, tmp_path):
    d = str(tmp_path)
    args = ("--dir", d, "--appendonly", "yes", "--aof-use-rdb-preamble", "no")
    s = tern_factory(*args)
    c = s.client()
    c.sadd("s", "a", "b")
    c.zadd("z", {"x": 1})
    c.execute_command("EXPIREMEMBER", "s", "a", 100)
    c.execute_command("EXPIREMEMBER", "z", "x", 200)
    stop(tern_factory, s)
    # Replayed from the AOF: the relative time was logged as an absolute PEXPIREMEMBERAT.
    s = tern_factory(*args)
    c = wait_loaded(s.client())
    left = c.execute_command("PTTL", "s", "a")
    assert 90000 < left <= 100000
    c.bgrewriteaof()
    assert wait_for(lambda: not int(c.info("persistence")["aof_rewrite_in_progress"]), 10)
    time.sleep(0.2)
    stop(tern_factory, s)
    s = tern_factory(*args)
    c = wait_loaded(s.client())
    assert 80000 < c.execute_command("PTTL", "s", "a") <= left
    assert 190 <= c.execute_command("TTL", "z", "x") <= 200
    assert c.execute_command("TTL", "s", "b") == -1


def test_replica_gets_times_and_removals(tern_factory):
    m = tern_factory("--enable-debug-command", "yes")
    rep = tern_factory()
    mc, rc = m.client(), rep.client()
    # Before the replica connects: reaches it through the full sync's RDB.
    mc.sadd("pre", "a", "b")
    mc.execute_command("PEXPIREMEMBERAT", "pre", "a", 2524600800123)
    rc.replicaof("127.0.0.1", m.port)
    assert wait_for(lambda: rc.info("replication")["master_link_status"] == "up", 10)
    assert abs(rc.execute_command("PTTL", "pre", "a") - mc.execute_command("PTTL", "pre", "a")) < 50
    mc.sadd("s", "a", "b", "c")
    mc.zadd("z", {"x": 1, "y": 2})
    mc.execute_command("EXPIREMEMBER", "s", "a", 100000, "ms")
    mc.execute_command("EXPIREMEMBER", "s", "b", 300, "ms")
    mc.execute_command("EXPIREMEMBER", "z", "x", 300, "ms")
    mc.execute_command("WAIT", 1, 2000)
    # Absolute times on both sides.
    assert abs(rc.execute_command("PTTL", "s", "a") - mc.execute_command("PTTL", "s", "a")) < 50
    # The master deletes and sends SREM / ZREM.
    assert wait_for(lambda: rc.scard("s") == 2 and rc.zcard("z") == 1)
    assert sorted(rc.smembers("s")) == ["a", "c"]
    assert rc.zrange("z", 0, -1) == ["y"]
    # A replica never deletes on its own: with the master's cycle off, it keeps the member.
    mc.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    mc.execute_command("EXPIREMEMBER", "s", "c", 50, "ms")
    mc.execute_command("WAIT", 1, 2000)
    time.sleep(0.15)
    assert rc.sismember("s", "c") == 1
    assert stat(rc, "expired_subkeys") == 0
    # Until the master looks the key up.
    assert mc.sismember("s", "c") == 0
    assert wait_for(lambda: rc.sismember("s", "c") == 0)


def test_lazy_removals_inside_multi_and_scripts_reach_the_replica(tern_factory):
    m = tern_factory("--enable-debug-command", "yes")
    rep = tern_factory("--enable-debug-command", "yes")
    mc, rc = m.client(), rep.client()
    rc.replicaof("127.0.0.1", m.port)
    assert wait_for(lambda: rc.info("replication")["master_link_status"] == "up", 10)
    mc.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    mc.sadd("s", "a", "b", "c")
    mc.zadd("z", {"x": 1, "y": 2})
    mc.execute_command("EXPIREMEMBER", "s", "a", 20, "ms")
    mc.execute_command("EXPIREMEMBER", "z", "x", 20, "ms")
    time.sleep(0.1)
    # The lookups inside MULTI and inside a script remove the members and log the removals.
    with mc.pipeline(transaction=True) as p:
        p.scard("s")
        p.sadd("s", "d")
        assert p.execute() == [2, 1]
    assert mc.eval("return redis.call('zcard', KEYS[1])", 1, "z") == 1
    mc.execute_command("WAIT", 1, 2000)
    assert sorted(rc.smembers("s")) == ["b", "c", "d"]
    assert rc.zrange("z", 0, -1) == ["y"]
    assert rc.execute_command("DEBUG", "DIGEST") == mc.execute_command("DEBUG", "DIGEST")

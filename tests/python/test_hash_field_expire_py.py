"""Hash-field expiration (Redis 7.4's HEXPIRE family) through redis-py, RESP2 and RESP3.

Redis 7.4's replies: per field -2 (no such field), 0 (NX/XX/GT/LT not met), 1 (set),
2 (deleted: the time is already past); HTTL & co. -2 / -1 (no time) / the time; HPERSIST
-2 / -1 / 1. Fields past their time are deleted lazily by the commands that touch them
(HGET, HMGET, HEXISTS, HSTRLEN, HINCRBY*, HSETNX; HRANDFIELD deletes them all), skipped by
HGETALL/HKEYS/HVALS/HSCAN, still counted by HLEN, and deleted by the active cycle.
"""

import os
import time

import pytest
import redis

from persist_helpers import wait_loaded


def stop(factory, s):
    """A deliberate stop (SIGTERM), not a crash the factory should report."""
    factory.servers.remove(s)
    s.stop()


def stat(c, name):
    return int(c.info("stats")[name])


def test_hexpire_replies(r):
    assert r.execute_command("HEXPIRE", "nokey", 100, "FIELDS", 2, "a", "b") == [-2, -2]
    r.hset("h", mapping={"f1": "v1", "f2": "v2", "f3": "v3"})
    assert r.execute_command("HPEXPIRE", "h", 100000, "NX", "FIELDS", 1, "f1") == [1]
    assert r.execute_command("HPEXPIRE", "h", 100000, "NX", "FIELDS", 2, "f1", "f2") == [0, 1]
    assert r.execute_command("HPEXPIRE", "h", 200000, "XX", "FIELDS", 2, "f1", "f3") == [1, 0]
    # GT: a field without a time never passes; LT: it always does.
    assert r.execute_command("HPEXPIRE", "h", 150000, "GT", "FIELDS", 3, "f1", "f2", "f3") == [0, 1, 0]
    assert r.execute_command("HPEXPIRE", "h", 120000, "LT", "FIELDS", 3, "f1", "f2", "f3") == [1, 1, 1]
    assert r.execute_command("HPEXPIRE", "h", 100, "FIELDS", 2, "f9", "f1") == [-2, 1]
    # A time in the past deletes the field.
    past = int(time.time()) - 10
    assert r.execute_command("HEXPIREAT", "h", past, "FIELDS", 2, "f2", "nope") == [2, -2]
    assert r.hexists("h", "f2") is False
    assert r.execute_command("HEXPIRE", "h", 0, "FIELDS", 2, "f1", "f3") == [2, 2]
    assert r.exists("h") == 0


def test_hexpire_errors(r):
    r.hset("h", "f", "v")
    cases = [
        (["HEXPIRE", "h", -1, "FIELDS", 1, "f"], "invalid expire time, must be >= 0"),
        (["HEXPIRE", "h", 2**48 // 1000, "FIELDS", 1, "f"], "invalid expire time in 'hexpire' command"),
        (["HPEXPIRE", "h", 2**48, "FIELDS", 1, "f"], "invalid expire time in 'hpexpire' command"),
        (["HPEXPIREAT", "h", 2**46, "FIELDS", 1, "f"], "invalid expire time in 'hpexpireat' command"),
        (["HEXPIRE", "h", "x", "FIELDS", 1, "f"], "value is not an integer or out of range"),
        (["HEXPIRE", "h", 10, "FIELDS", 0, "f"], "Parameter `numFields` should be greater than 0"),
        (["HEXPIRE", "h", 10, "FIELDS", 2, "f"], "The `numfields` parameter must match the number of arguments"),
        (["HEXPIRE", "h", 10, "NX", "FIELD", 1, "f"], "Mandatory argument FIELDS is missing or not at the right position"),
        (["HTTL", "h", "FIELDS", 0, "f"], "Number of fields must be a positive integer"),
        (["HPERSIST", "h", "FIELDS", 3, "f", "g"], "The `numfields` parameter must match the number of arguments"),
    ]
    for argv, msg in cases:
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command(*argv)
        assert str(e.value) == msg, argv
    r.set("s", "x")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.execute_command("HEXPIRE", "s", 10, "FIELDS", 1, "f")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.execute_command("HTTL", "s", "FIELDS", 1, "f")
    # Just below the limit of 2^46 ms is accepted.
    now_ms = int(time.time() * 1000)
    assert r.execute_command("HPEXPIRE", "h", 2**46 - now_ms - 1000, "FIELDS", 1, "f") == [1]


def test_ttl_queries_and_persist(r):
    assert r.execute_command("HTTL", "nokey", "FIELDS", 1, "a") == [-2]
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    r.execute_command("HEXPIREAT", "h", 2524600800, "FIELDS", 1, "a")
    r.execute_command("HPEXPIRE", "h", 5000, "FIELDS", 1, "b")
    assert r.execute_command("HEXPIRETIME", "h", "FIELDS", 3, "a", "c", "zz") == [2524600800, -1, -2]
    assert r.execute_command("HPEXPIRETIME", "h", "FIELDS", 1, "a") == [2524600800000]
    assert 4000 <= r.execute_command("HPTTL", "h", "FIELDS", 1, "b")[0] <= 5000
    assert r.execute_command("HTTL", "h", "FIELDS", 1, "b") == [5]
    assert r.object("encoding", "h") == "listpackex"
    assert r.execute_command("HPERSIST", "h", "FIELDS", 4, "a", "b", "c", "zz") == [1, 1, -1, -2]
    assert r.execute_command("HTTL", "h", "FIELDS", 2, "a", "b") == [-1, -1]
    # HSET discards a field's time; HINCRBY keeps it.
    r.execute_command("HPEXPIRE", "h", 50000, "FIELDS", 2, "a", "b")
    r.hset("h", "a", "new")
    assert r.hincrby("h", "b", 5) == 7
    assert r.execute_command("HTTL", "h", "FIELDS", 2, "a", "b") == [-1, 50]
    assert r.hincrbyfloat("h", "b", 0.5) == 7.5
    assert r.execute_command("HTTL", "h", "FIELDS", 1, "b") == [50]


@pytest.mark.parametrize("proto", [2, 3])
def test_lazy_expiry(tern_factory, proto):
    r = tern_factory("--enable-debug-command", "yes").client(protocol=proto)
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    r.config_resetstat()
    r.hset("h", mapping={"f1": "v1", "f2": "v2", "f3": "v3", "f4": "10"})
    r.execute_command("HPEXPIRE", "h", 1, "FIELDS", 3, "f1", "f2", "f4")
    time.sleep(0.01)
    # HLEN still counts fields past their time; HGETALL, HKEYS, HSCAN skip them.
    assert r.hlen("h") == 4
    assert r.hgetall("h") == {"f3": "v3"}
    assert r.hkeys("h") == ["f3"]
    assert r.hscan("h", 0)[1] == {"f3": "v3"}
    assert stat(r, "expired_subkeys") == 0
    # HGET deletes the field it reads; HINCRBY starts the expired field over.
    assert r.hget("h", "f1") is None
    assert stat(r, "expired_subkeys") == 1
    assert r.hlen("h") == 3
    assert r.hincrby("h", "f4", 1) == 1
    assert stat(r, "expired_subkeys") == 2
    assert r.hmget("h", ["f2", "f3"]) == [None, "v3"]
    assert stat(r, "expired_subkeys") == 3
    assert r.hlen("h") == 2
    # HRANDFIELD deletes every expired field first; the last one going deletes the hash.
    r.hset("g", mapping={"a": "1", "b": "2"})
    r.execute_command("HPEXPIRE", "g", 1, "FIELDS", 2, "a", "b")
    time.sleep(0.01)
    assert r.hrandfield("g", 5) == []
    assert r.exists("g") == 0
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_active_expiry_and_subexpiry(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    r.hset("h2", mapping={"a": "1", "b": "2", "c": "3"})
    assert r.info("keyspace")["db0"]["subexpiry"] == 0
    r.execute_command("HPEXPIRE", "h", 100, "FIELDS", 2, "a", "b")
    r.execute_command("HPEXPIRE", "h2", 100, "FIELDS", 1, "a")
    assert r.info("keyspace")["db0"]["subexpiry"] == 2
    deadline = time.time() + 5
    while time.time() < deadline and (r.exists("h") or r.hlen("h2") != 2):
        time.sleep(0.05)
    assert r.exists("h") == 0
    assert r.hgetall("h2") == {"b": "2", "c": "3"}
    assert r.info("keyspace")["db0"]["subexpiry"] == 0
    assert stat(r, "expired_subkeys") == 3


def test_big_hash_expires_in_hashtable_encoding(r):
    r.hset("big", mapping={f"f{i}": "x" * 10 for i in range(600)})
    assert r.object("encoding", "big") == "hashtable"
    fields = [f"f{i}" for i in range(0, 600, 2)]
    assert r.execute_command("HPEXPIRE", "big", 50, "FIELDS", len(fields), *fields) == [1] * 300
    deadline = time.time() + 5
    while time.time() < deadline and r.hlen("big") != 300:
        time.sleep(0.05)
    assert r.hlen("big") == 300
    assert r.hexists("big", "f1") and not r.hexists("big", "f0")


def test_keyspace_events(tern):
    c = tern.client()
    c.config_set("notify-keyspace-events", "KEA")
    p = c.pubsub()
    p.psubscribe("__keyevent@0__:*")
    assert p.get_message(timeout=1)["type"] == "psubscribe"
    c.hset("h", mapping={"a": "1", "b": "2"})
    c.execute_command("HPEXPIRE", "h", 100000, "FIELDS", 1, "a")
    c.execute_command("HPERSIST", "h", "FIELDS", 1, "a")
    c.execute_command("HPEXPIRE", "h", 1, "FIELDS", 2, "a", "b")
    events = []
    deadline = time.time() + 5
    while time.time() < deadline and "del" not in events:
        m = p.get_message(timeout=0.2)
        if m and m["type"] == "pmessage":
            events.append(m["channel"].split(":", 1)[1])
    assert events == ["hset", "hexpire", "hpersist", "hexpire", "hexpired", "del"]


def test_dump_restore_keeps_times(rb):
    rb.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    rb.execute_command("HEXPIREAT", "h", 2524600800, "FIELDS", 1, "a")
    rb.execute_command("HEXPIREAT", "h", 2524600801, "FIELDS", 1, "b")
    payload = rb.dump("h")
    # The payload's RDB version is Redis 7.4's (12) once a field has a time.
    assert int.from_bytes(payload[-10:-8], "little") == 12
    rb.delete("h")
    rb.restore("h", 0, payload)
    assert rb.execute_command("HEXPIRETIME", "h", "FIELDS", 3, "a", "b", "c") == [2524600800, 2524600801, -1]
    rb.hset("plain", "a", "1")
    assert int.from_bytes(rb.dump("plain")[-10:-8], "little") == 10
    # The hash-table encoding with times (RDB type 24).
    rb.hset("big", mapping={f"f{i}": "v" for i in range(600)})
    rb.execute_command("HEXPIREAT", "big", 2524600800, "FIELDS", 2, "f1", "f2")
    payload = rb.dump("big")
    rb.delete("big")
    rb.restore("big", 0, payload)
    assert rb.hlen("big") == 600
    assert rb.execute_command("HEXPIRETIME", "big", "FIELDS", 3, "f1", "f2", "f3") == [2524600800, 2524600800, -1]


def rdb_version(path):
    with open(path, "rb") as f:
        head = f.read(9)
    assert head[:5] == b"REDIS"
    return int(head[5:])


def test_save_restart_and_version(tern_factory, tmp_path):
    d = str(tmp_path)
    s = tern_factory("--dir", d, "--dbfilename", "dump.rdb")
    c = s.client()
    c.hset("plain", "a", "1")
    c.save()
    assert rdb_version(os.path.join(d, "dump.rdb")) == 10
    c.hset("small", mapping={"a": "1", "b": "2", "c": "3"})
    c.execute_command("HEXPIREAT", "small", 2524600800, "FIELDS", 2, "a", "c")
    c.hset("big", mapping={f"f{i}": "v" for i in range(600)})
    c.execute_command("HEXPIREAT", "big", 2524600900, "FIELDS", 1, "f7")
    c.save()
    assert rdb_version(os.path.join(d, "dump.rdb")) == 12
    stop(tern_factory, s)
    s2 = tern_factory("--dir", d, "--dbfilename", "dump.rdb")
    c2 = wait_loaded(s2.client())
    assert c2.execute_command("HEXPIRETIME", "small", "FIELDS", 3, "a", "b", "c") == [2524600800, -1, 2524600800]
    assert c2.execute_command("HEXPIRETIME", "big", "FIELDS", 2, "f7", "f8") == [2524600900, -1]
    assert c2.object("encoding", "small") == "listpackex"
    assert c2.info("keyspace")["db0"]["subexpiry"] == 2


def test_aof_rewrite_and_restart(tern_factory, tmp_path):
    d = str(tmp_path)
    args = ("--dir", d, "--appendonly", "yes", "--aof-use-rdb-preamble", "no")
    s = tern_factory(*args)
    c = s.client()
    c.hset("h", mapping={"a": "1", "b": "2"})
    c.execute_command("HEXPIRE", "h", 100000, "FIELDS", 1, "a")
    stop(tern_factory, s)
    # Replayed from the AOF: the relative time was logged as an absolute HPEXPIREAT.
    s = tern_factory(*args)
    c = wait_loaded(s.client())
    at = c.execute_command("HPEXPIRETIME", "h", "FIELDS", 1, "a")[0]
    assert at > int(time.time() * 1000) + 90000
    c.bgrewriteaof()
    deadline = time.time() + 10
    while time.time() < deadline and int(c.info("persistence")["aof_rewrite_in_progress"]):
        time.sleep(0.05)
    time.sleep(0.2)
    stop(tern_factory, s)
    s = tern_factory(*args)
    c = wait_loaded(s.client())
    assert c.execute_command("HPEXPIRETIME", "h", "FIELDS", 2, "a", "b") == [at, -1]


def test_replica_gets_absolute_times_and_hdels(tern_factory):
    m = tern_factory("--enable-debug-command", "yes")
    rep = tern_factory()
    mc, rc = m.client(), rep.client()
    # Written before the replica connects: reaches it through the full sync's RDB.
    mc.hset("pre", mapping={"a": "1", "b": "2"})
    mc.execute_command("HPEXPIREAT", "pre", 2524600800123, "FIELDS", 1, "a")
    rc.replicaof("127.0.0.1", m.port)
    deadline = time.time() + 10
    while time.time() < deadline and rc.info("replication")["master_link_status"] != "up":
        time.sleep(0.05)
    assert rc.execute_command("HPEXPIRETIME", "pre", "FIELDS", 2, "a", "b") == [2524600800123, -1]
    mc.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    mc.execute_command("HPEXPIRE", "h", 100000, "FIELDS", 1, "a")
    mc.execute_command("HPEXPIRE", "h", 300, "FIELDS", 1, "b")
    mc.execute_command("WAIT", 1, 2000)
    assert rc.execute_command("HPEXPIRETIME", "h", "FIELDS", 1, "a") == mc.execute_command(
        "HPEXPIRETIME", "h", "FIELDS", 1, "a"
    )
    # The master's active cycle deletes b and sends HDEL; the replica never deletes on its own.
    deadline = time.time() + 5
    while time.time() < deadline and rc.hlen("h") != 2:
        time.sleep(0.05)
    assert rc.hgetall("h") == {"a": "1", "c": "3"}
    # With the master's cycle off, a field past its time is hidden on the replica, not deleted.
    mc.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    mc.execute_command("HPEXPIRE", "h", 50, "FIELDS", 1, "c")
    mc.execute_command("WAIT", 1, 2000)
    time.sleep(0.1)
    assert rc.hget("h", "c") is None
    assert rc.hgetall("h") == {"a": "1"}
    assert rc.hlen("h") == 2
    assert stat(rc, "expired_subkeys") == 0

"""Persistence through redis-py's own APIs: DUMP/RESTORE (both directions with
redis-server), SAVE/BGSAVE/LASTSAVE, RDB files moving between redis-server and tern,
and INFO persistence fields."""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import pytest
import redis

from persist_helpers import snapshot, wait_loaded



def fill(c: redis.Redis) -> None:
    c.set("s", "hello")
    c.set("n", 12345)
    c.rpush("l", *[f"e{i}" for i in range(200)])
    c.sadd("si", *range(50))
    c.sadd("ss", *[f"m{i}" for i in range(300)])
    c.zadd("z", {f"m{i}": i / 2 for i in range(200)})
    c.hset("h", mapping={f"f{i}": f"v{i}" for i in range(10)})
    for i in range(20):
        c.xadd("x", {"a": i}, id=f"{i + 1}-0")
    c.xgroup_create("x", "g", id="0")
    c.xreadgroup("g", "alice", {"x": ">"}, count=3)
    c.set("ttl", "v", px=10_000_000)



def test_dump_restore_both_ways(tern_factory, redis_factory):
    t = tern_factory().client()
    r = redis_factory().client()
    fill(r)
    rb = redis.Redis(port=r.connection_pool.connection_kwargs["port"])
    tb = redis.Redis(port=t.connection_pool.connection_kwargs["port"])
    for k in r.keys("*"):
        tb.restore(k, 0, rb.dump(k))
    assert snapshot(t) == {k: (ty, v, False) for k, (ty, v, _) in snapshot(r).items()}
    for k in t.keys("*"):
        rb.restore("copy:" + k, 0, tb.dump(k))
        assert snapshot(r)["copy:" + k][:2] == snapshot(t)[k][:2]
    with pytest.raises(redis.ResponseError, match="BUSYKEY"):
        tb.restore("s", 0, tb.dump("s"))
    assert tb.restore("s", 0, tb.dump("n"), replace=True)
    assert t.get("s") == "12345"
    with pytest.raises(redis.ResponseError, match="DUMP payload version or checksum are wrong"):
        tb.restore("bad", 0, b"\x00\x01garbage-payload")
    assert tb.dump("nosuch") is None


def test_rdb_files_between_redis_and_tern(tern_factory, redis_factory):
    d = tempfile.mkdtemp(prefix="tern-py-rdb-")
    try:
        rs = redis_factory("--dir", d, "--dbfilename", "from-redis.rdb")
        r = rs.client()
        fill(r)
        assert r.save()
        t = wait_loaded(tern_factory("--dir", d, "--dbfilename", "from-redis.rdb").client())
        assert snapshot(t) == snapshot(r)
        t2s = tern_factory("--dir", d, "--dbfilename", "from-tern.rdb")
        t2 = t2s.client()
        fill(t2)
        before = t2.lastsave()
        time.sleep(1.1)
        assert t2.bgsave()
        for _ in range(200):
            info = t2.info("persistence")
            if info["rdb_bgsave_in_progress"] == 0 and info["rdb_saves"] >= 1:
                break
            time.sleep(0.02)
        assert info["rdb_last_bgsave_status"] == "ok"
        assert info["rdb_changes_since_last_save"] == 0
        assert t2.lastsave() > before
        r2 = wait_loaded(redis_factory("--dir", d, "--dbfilename", "from-tern.rdb").client())
        assert snapshot(r2) == snapshot(t2)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_info_persistence_fields(tern):
    c = tern.client()
    c.set("a", 1)
    info = c.info("persistence")
    for f in ("loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress",
              "rdb_last_save_time", "rdb_last_bgsave_status", "rdb_last_bgsave_time_sec",
              "rdb_current_bgsave_time_sec", "rdb_saves"):
        assert f in info, f
    assert info["rdb_changes_since_last_save"] >= 1
    assert info["loading"] == 0

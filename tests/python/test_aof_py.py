"""The append-only file through redis-py's own APIs: CONFIG SET appendonly, BGREWRITEAOF,
INFO persistence aof_* fields, restarts after SIGKILL (nothing acknowledged lost with
`appendfsync always`), and AOF directories moving between redis-server 7.0 and tern."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time

import pytest
import redis

from persist_helpers import snapshot, wait_loaded



def wait_rewrite(c: redis.Redis) -> dict:
    for _ in range(3000):
        info = c.info("persistence")
        if info["aof_rewrite_in_progress"] == 0 and info["aof_rewrite_scheduled"] == 0:
            return info
        time.sleep(0.01)
    raise AssertionError("rewrite never finished")


def sigkill(factory, s) -> None:
    """SIGKILL a server on purpose (the factory reports servers that died by themselves)."""
    factory.servers.remove(s)
    s.proc.kill()
    s.proc.wait()
    s.stop()


@pytest.fixture
def aof_dir():
    d = tempfile.mkdtemp(prefix="tern-py-aof-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def fill(c: redis.Redis) -> None:
    c.set("s", "hello")
    c.set("ttl", "v", ex=100_000)
    c.incrbyfloat("f", 1.25)
    c.rpush("l", *[f"e{i}" for i in range(200)])
    c.sadd("si", *range(50))
    c.sadd("ss", *[f"m{i}" for i in range(300)])
    c.spop("ss", 5)
    c.zadd("z", {f"m{i}": i / 2 for i in range(200)})
    c.hset("h", mapping={f"f{i}": f"v{i}" for i in range(10)})
    c.hincrbyfloat("h", "num", 0.5)
    for i in range(20):
        c.xadd("x", {"a": i})
    c.xgroup_create("x", "g", id="0")
    c.xreadgroup("g", "alice", {"x": ">"}, count=3)
    with c.pipeline(transaction=True) as p:
        p.incr("t1").incr("t2").lpush("l", "tx")
        p.execute()
    script = c.register_script("redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[2])")
    script(keys=["from-script", "script-counter"], args=["v"])



def test_info_and_bgrewriteaof(tern_factory, aof_dir):
    c = tern_factory("--dir", aof_dir, "--appendonly", "yes").client()
    wait_loaded(c)
    info = c.info("persistence")
    assert info["aof_enabled"] == 1
    assert info["aof_last_write_status"] == "ok"
    assert info["aof_last_bgrewrite_status"] == "ok"
    assert info["aof_rewrites"] == 0
    assert isinstance(info["aof_current_size"], int) and isinstance(info["aof_base_size"], int)
    fill(c)
    before = c.info("persistence")["aof_current_size"]
    assert c.bgrewriteaof()
    info = wait_rewrite(c)
    assert info["aof_rewrites"] == 1
    assert info["aof_last_rewrite_time_sec"] >= 0
    assert info["aof_current_size"] > 0 and before > 0
    files = sorted(os.listdir(os.path.join(aof_dir, "appendonlydir")))
    assert files == [
        "appendonly.aof.2.base.rdb",
        "appendonly.aof.2.incr.aof",
        "appendonly.aof.manifest",
    ]
    assert c.config_get("appendfsync") == {"appendfsync": "everysec"}


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_restart_after_sigkill_keeps_everything(tern_factory, aof_dir, preamble):
    args = ("--dir", aof_dir, "--appendonly", "yes", "--appendfsync", "always",
            "--aof-use-rdb-preamble", preamble)
    s = tern_factory(*args)
    c = wait_loaded(s.client())
    fill(c)
    assert c.bgrewriteaof()
    wait_rewrite(c)
    c.set("after", "rewrite")
    c.expire("after", 1000)
    expected = snapshot(c)
    sigkill(tern_factory, s)
    c2 = wait_loaded(tern_factory(*args).client())
    assert snapshot(c2) == expected


def test_config_set_appendonly(tern_factory, aof_dir):
    s = tern_factory("--dir", aof_dir)
    c = s.client()
    fill(c)
    assert c.config_set("appendonly", "yes")
    assert c.config_get("appendonly") == {"appendonly": "yes"}
    wait_rewrite(c)
    c.config_set("appendfsync", "always")
    c.set("after-enable", 1)
    expected = snapshot(c)
    sigkill(tern_factory, s)
    c2 = wait_loaded(tern_factory("--dir", aof_dir, "--appendonly", "yes").client())
    assert snapshot(c2) == expected
    assert c2.config_set("appendonly", "no")
    assert c2.info("persistence")["aof_enabled"] == 0


def test_acknowledged_writes_survive_sigkill(tern_factory, aof_dir):
    args = ("--dir", aof_dir, "--appendonly", "yes", "--appendfsync", "always")
    s = tern_factory(*args)
    wait_loaded(s.client())
    acked: list[tuple[str, str]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(t: int) -> None:
        c = s.client()
        n = 0
        while not stop.is_set():
            n += 1
            try:
                c.set(f"w{t}:{n}", n)
            except redis.ConnectionError:
                return
            with lock:
                acked.append((f"w{t}:{n}", str(n)))

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    time.sleep(1.0)
    tern_factory.servers.remove(s)
    s.proc.kill()
    stop.set()
    for th in threads:
        th.join()
    s.proc.wait()
    s.stop()
    assert len(acked) > 50
    c = wait_loaded(tern_factory(*args).client())
    values = c.mget([k for k, _ in acked])
    missing = [k for (k, v), got in zip(acked, values) if got != v]
    assert not missing, f"{len(missing)} acknowledged writes lost: {missing[:5]}"


def test_aof_dirs_between_redis_and_tern(tern_factory, redis_factory, aof_dir):
    r = redis_factory("--dir", aof_dir, "--appendonly", "yes", "--aof-use-rdb-preamble", "no",
                      "--appendfsync", "always").client()
    fill(r)
    expected = snapshot(r)
    t = wait_loaded(tern_factory("--dir", aof_dir, "--appendonly", "yes").client())
    # redis-server was SIGKILLed by nobody yet; tern reads the same files it wrote so far
    assert snapshot(t) == expected

    d2 = tempfile.mkdtemp(prefix="tern-py-aof2-")
    try:
        ts = tern_factory("--dir", d2, "--appendonly", "yes", "--appendfsync", "always",
                          "--aof-use-rdb-preamble", "no")
        t2 = wait_loaded(ts.client())
        fill(t2)
        t2.bgrewriteaof()
        wait_rewrite(t2)
        t2.set("tail", "after rewrite")
        expected = snapshot(t2)
        sigkill(tern_factory, ts)
        r2 = wait_loaded(redis_factory("--dir", d2, "--appendonly", "yes").client())
        assert snapshot(r2) == expected
    finally:
        shutil.rmtree(d2, ignore_errors=True)

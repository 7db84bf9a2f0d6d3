"""Helpers shared by the persistence tests (RDB and AOF): waiting for a server to finish
loading, and a comparable picture of a whole dataset."""

from __future__ import annotations

import time

import redis


def wait_loaded(c: redis.Redis) -> redis.Redis:
    """A server started on an RDB or AOF answers -LOADING until the data is in."""
    for _ in range(2000):
        try:
            if c.info("persistence")["loading"] == 0:
                return c
        except redis.BusyLoadingError:
            pass
        time.sleep(0.01)
    raise AssertionError("still loading")


def snapshot(c: redis.Redis) -> dict:
    """Every key of the selected database: type, contents (streams with their groups and
    pending entries) and whether it has a TTL."""
    out = {}
    for k in sorted(c.keys("*")):
        t = c.type(k)
        if t == "string":
            v = c.get(k)
        elif t == "list":
            v = c.lrange(k, 0, -1)
        elif t == "set":
            v = sorted(c.smembers(k))
        elif t == "zset":
            v = c.zrange(k, 0, -1, withscores=True)
        elif t == "hash":
            v = sorted(c.hgetall(k).items())
        else:
            groups = c.xinfo_groups(k)
            v = (
                c.xrange(k),
                [(g["name"], g["pending"], g["last-delivered-id"]) for g in groups],
                [
                    [(p["message_id"], p["consumer"], p["times_delivered"])
                     for p in c.xpending_range(k, g["name"], "-", "+", 100)]
                    for g in groups
                ],
            )
        out[k] = (t, v, c.pttl(k) > 0)
    return out


def stop(factory, s) -> None:
    """A deliberate stop (SIGTERM), not a crash the factory should report."""
    factory.servers.remove(s)
    s.stop()


def wait_for(pred, timeout: float = 5.0) -> bool:
    """Poll `pred` until it holds or `timeout` seconds pass; its last answer."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()

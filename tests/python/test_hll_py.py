"""HyperLogLog through redis-py: the client helpers, and byte-level agreement with redis-server."""

from __future__ import annotations

import random

import pytest
import redis


def test_pf_helpers(r):
    assert r.pfadd("h", "a", "b", "c") == 1
    assert r.pfadd("h", "a") == 0
    assert r.pfcount("h") == 3
    r.pfadd("h2", "c", "d")
    assert r.pfcount("h", "h2") == 4
    assert r.pfmerge("m", "h", "h2") is True
    assert r.pfcount("m") == 4
    r.set("s", "not an hll at all, really")
    with pytest.raises(redis.ResponseError, match="Key is not a valid HyperLogLog string value"):
        r.pfadd("s", "x")


def test_bytes_match_redis(pair):
    t, ref = pair
    rnd = random.Random(7)
    for n in (0, 5, 200, 2000, 20000):
        key = f"h{n}"
        items = [f"{rnd.random()}" for _ in range(n)]
        for i in range(0, max(n, 1), 1000):
            chunk = items[i : i + 1000]
            assert t.pfadd(key, *chunk) == ref.pfadd(key, *chunk)
        assert t.get(key) == ref.get(key)
        assert t.pfcount(key) == ref.pfcount(key)
        assert t.get(key) == ref.get(key)
        # Move the bytes across and count again.
        t.set("copy", ref.get(key))
        ref.set("copy", t.get(key))
        assert t.pfcount("copy") == ref.pfcount("copy")
    assert t.pfcount("h5", "h200", "h2000") == ref.pfcount("h5", "h200", "h2000")
    t.pfmerge("m", "h5", "h200", "h20000")
    ref.pfmerge("m", "h5", "h200", "h20000")
    assert t.get("m") == ref.get("m")

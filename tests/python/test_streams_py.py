"""Stream commands through redis-py's stream helpers, RESP2 and RESP3 (Redis 7.2 behaviour)."""

import pytest
import redis


def test_xadd_xrange_xread(r):
    assert r.xadd("s", {"a": "1"}, id="1-0") == "1-0"
    assert r.xadd("s", {"b": "2"}, id="2-*") == "2-0"
    assert r.xlen("s") == 2
    assert r.xrange("s") == [("1-0", {"a": "1"}), ("2-0", {"b": "2"})]
    assert r.xrevrange("s", count=1) == [("2-0", {"b": "2"})]
    got = r.xread({"s": "1-0"})
    if isinstance(got, dict):  # RESP3: a map of stream name to entries
        assert got == {"s": [[("2-0", {"b": "2"})]]} or got == {"s": [("2-0", {"b": "2"})]}
    else:
        assert got == [["s", [("2-0", {"b": "2"})]]]
    assert r.xread({"s": "$"}) in (None, [], {})
    with pytest.raises(redis.ResponseError, match="equal or smaller"):
        r.xadd("s", {"x": "y"}, id="1-0")


def test_trim_and_delete(r):
    for i in range(1, 11):
        r.xadd("s", {"n": str(i)}, id=f"{i}-0")
    assert r.xtrim("s", maxlen=8, approximate=False) == 2
    assert r.xtrim("s", minid="5-0", approximate=False) == 2
    assert r.xdel("s", "5-0", "99-0") == 1
    info = r.xinfo_stream("s")
    assert info["length"] == 5
    assert info["max-deleted-entry-id"] == "5-0"
    assert info["first-entry"] == ("6-0", {"n": "6"})


def test_groups(r):
    assert r.xgroup_create("s", "g", id="$", mkstream=True)
    for i in range(1, 4):
        r.xadd("s", {"n": str(i)}, id=f"{i}-0")
    res = r.xreadgroup("g", "alice", {"s": ">"}, count=2)
    entries = res["s"][0] if isinstance(res, dict) else res[0][1]
    assert entries == [("1-0", {"n": "1"}), ("2-0", {"n": "2"})]
    p = r.xpending("s", "g")
    assert p["pending"] == 2 and p["min"] == "1-0" and p["max"] == "2-0"
    assert p["consumers"] == [{"name": "alice", "pending": 2}]
    rows = r.xpending_range("s", "g", "-", "+", 10)
    assert [x["message_id"] for x in rows] == ["1-0", "2-0"]
    assert r.xack("s", "g", "1-0") == 1
    assert r.xclaim("s", "g", "bob", 0, ["2-0"], justid=True) == ["2-0"]
    claimed = r.xautoclaim("s", "g", "carol", 0, "0-0")
    assert claimed[0] == "0-0"
    groups = r.xinfo_groups("s")
    assert groups[0]["name"] == "g" and groups[0]["pending"] == 1
    names = [c["name"] for c in r.xinfo_consumers("s", "g")]
    assert names == ["alice", "bob", "carol"]
    assert r.xgroup_delconsumer("s", "g", "carol") == 1
    assert r.xgroup_destroy("s", "g") == 1
    with pytest.raises(redis.ResponseError, match="NOGROUP"):
        r.xreadgroup("g", "alice", {"s": ">"})

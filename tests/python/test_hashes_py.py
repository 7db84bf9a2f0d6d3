"""Hash commands through redis-py, RESP2 and RESP3 (Redis 7.2 behaviour)."""

import pytest
import redis

WRONGTYPE = r"^WRONGTYPE Operation against a key holding the wrong kind of value$"


def test_hset_hget_hgetall(r):
    assert r.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert r.hset("h", "a", "x") == 0
    assert r.hget("h", "a") == "x"
    assert r.hget("h", "missing") is None
    assert r.hgetall("h") == {"a": "x", "b": "2"}
    assert r.hgetall("nokey") == {}
    assert sorted(r.hkeys("h")) == ["a", "b"]
    assert sorted(r.hvals("h")) == ["2", "x"]
    assert r.hmget("h", ["a", "nope", "b"]) == ["x", None, "2"]
    assert r.hlen("h") == 2
    assert r.hexists("h", "a") is True
    assert r.hexists("h", "zz") is False
    assert r.hstrlen("h", "a") == 1
    assert r.hsetnx("h", "a", "y") == 0
    assert r.hsetnx("h", "c", "3") == 1
    assert r.hdel("h", "a", "b", "c", "d") == 3
    assert r.exists("h") == 0


def test_counters(r):
    assert r.hincrby("h", "n", 5) == 5
    assert r.hincrby("h", "n", -10) == -5
    assert r.hincrbyfloat("h", "f", 1.23) == pytest.approx(1.23)
    assert r.hget("h", "f") == "1.23"
    assert r.hincrbyfloat("h", "f", 0.77) == 2
    assert r.hget("h", "f") == "2"
    r.hset("h", "s", "abc")
    with pytest.raises(redis.ResponseError, match=r"^hash value is not an integer$"):
        r.hincrby("h", "s", 1)
    with pytest.raises(redis.ResponseError, match=r"^hash value is not a float$"):
        r.hincrbyfloat("h", "s", 1)
    r.hset("h", "max", str(2**63 - 1))
    with pytest.raises(redis.ResponseError, match=r"^increment or decrement would overflow$"):
        r.hincrby("h", "max", 1)


def test_wrong_type(r):
    r.set("s", "v")
    with pytest.raises(redis.ResponseError, match=WRONGTYPE):
        r.hget("s", "a")
    with pytest.raises(redis.ResponseError, match=WRONGTYPE):
        r.hset("s", "a", "1")
    with pytest.raises(redis.ResponseError, match=WRONGTYPE):
        r.hgetall("s")


def test_encodings(r):
    r.hset("h", "a", "1")
    assert r.object("encoding", "h") == "listpack"
    r.hset("h", "long", "x" * 65)
    assert r.object("encoding", "h") == "hashtable"
    r.config_set("hash-max-listpack-entries", 3)
    r.hset("h2", mapping={"a": 1, "b": 2, "c": 3})
    assert r.object("encoding", "h2") == "listpack"
    r.hset("h2", "d", 4)
    assert r.object("encoding", "h2") == "hashtable"
    assert r.hgetall("h2") == {"a": "1", "b": "2", "c": "3", "d": "4"}


def test_hrandfield(r, protocol):
    fields = {f"f{i}": str(i) for i in range(10)}
    r.hset("h", mapping=fields)
    assert r.hrandfield("h") in fields
    assert r.hrandfield("nokey") is None
    got = r.hrandfield("h", 5)
    assert len(got) == 5 and len(set(got)) == 5
    assert len(r.hrandfield("h", -30)) == 30
    assert sorted(r.hrandfield("h", 100)) == sorted(fields)
    pairs = r.hrandfield("h", 3, withvalues=True)
    if protocol == 3:
        assert len(pairs) == 3 and all(len(p) == 2 for p in pairs)
        assert all(fields[f] == v for f, v in pairs)
    else:
        assert len(pairs) == 6
        assert all(fields[f] == v for f, v in zip(pairs[::2], pairs[1::2]))


def test_hscan(r):
    r.hset("small", mapping={f"f{i}": i for i in range(20)})
    cursor, data = r.hscan("small", 0, count=2)
    assert cursor == 0 and len(data) == 20
    r.hset("big", mapping={f"k{i}": i for i in range(1000)})
    assert r.object("encoding", "big") == "hashtable"
    assert dict(r.hscan_iter("big")) == {f"k{i}": str(i) for i in range(1000)}
    assert dict(r.hscan_iter("big", match="k99*")) == {
        "k99": "99",
        **{f"k99{i}": f"99{i}" for i in range(10)},
    }
    assert r.hscan("nokey", 0) == (0, {})

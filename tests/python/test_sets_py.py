"""Set commands through redis-py, RESP2 and RESP3 (Redis 7.2 behaviour)."""

import pytest
import redis

WRONGTYPE = r"^WRONGTYPE Operation against a key holding the wrong kind of value$"


def test_add_remove_members(r):
    assert r.sadd("s", "a", "b", "c", "a") == 3
    assert r.scard("s") == 3
    assert r.smembers("s") == {"a", "b", "c"}
    assert r.sismember("s", "a") in (1, True)
    assert list(map(int, r.smismember("s", ["a", "z"]))) == [1, 0]
    assert r.srem("s", "a", "z") == 1
    assert r.srem("s", "b", "c") == 2
    assert r.exists("s") == 0
    assert r.smembers("nokey") == set()


def test_encodings(r):
    r.sadd("i", 1, 2, 3)
    assert r.object("encoding", "i") == "intset"
    r.sadd("i", "x")
    assert r.object("encoding", "i") == "listpack"
    r.sadd("h", *[f"m{i}" for i in range(129)])
    assert r.object("encoding", "h") == "hashtable"
    r.config_set("set-max-listpack-entries", 2)
    r.sadd("l", "a", "b")
    assert r.object("encoding", "l") == "listpack"
    r.sadd("l", "c")
    assert r.object("encoding", "l") == "hashtable"


def test_algebra_and_store(r):
    r.sadd("a", 1, 2, 3, "x")
    r.sadd("b", 2, 3, 4, "x")
    assert r.sinter("a", "b") == {"2", "3", "x"}
    assert r.sintercard(2, ["a", "b"]) == 3
    assert r.sintercard(2, ["a", "b"], limit=1) == 1
    assert r.sunion("a", "b", "nokey") == {"1", "2", "3", "4", "x"}
    assert r.sdiff("a", "b") == {"1"}
    assert r.sinterstore("d", "a", "b") == 3
    assert r.sunionstore("d", "a", "b") == 5
    assert r.sdiffstore("d", "b", "a") == 1
    assert r.smembers("d") == {"4"}
    assert r.object("encoding", "d") == "intset"
    assert r.sdiffstore("d", "a", "a") == 0
    assert r.exists("d") == 0


def test_pop_random_move(r):
    members = {str(i) for i in range(20)}
    r.sadd("s", *members)
    popped = r.spop("s", 5)
    assert len(popped) == 5 and set(popped) <= members
    assert r.scard("s") == 15
    one = r.spop("s")
    assert one in members
    assert len(r.srandmember("s", -30)) == 30
    assert len(set(r.srandmember("s", 10))) == 10
    assert r.srandmember("nokey") is None
    assert r.smove("s", "t", one) == 0
    rest = r.smembers("s")
    m = rest.pop()
    assert r.smove("s", "t", m) == 1
    assert r.smembers("t") == {m}


def test_sscan(r):
    r.sadd("h", *[f"m{i}" for i in range(500)])
    assert set(r.sscan_iter("h", count=17)) == {f"m{i}" for i in range(500)}
    assert set(r.sscan_iter("h", match="m1?")) == {f"m1{i}" for i in range(10)}


def test_errors(r):
    r.set("str", "v")
    for call in (
        lambda: r.sadd("str", "a"),
        lambda: r.smembers("str"),
        lambda: r.sinter("str", "nokey"),
        lambda: r.sunionstore("d", "str"),
        lambda: r.sscan("str", 0),
    ):
        with pytest.raises(redis.ResponseError, match=WRONGTYPE):
            call()
    with pytest.raises(redis.ResponseError, match="must be positive"):
        r.spop("str2", -1)
    with pytest.raises(redis.ResponseError, match="numkeys should be greater than 0"):
        r.execute_command("SINTERCARD", 0, "a")

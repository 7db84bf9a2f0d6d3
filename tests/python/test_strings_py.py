"""String commands through redis-py, RESP2 and RESP3 (Redis 7.2 behaviour)."""

import time

import pytest
import redis

ERR_INT = r"^value is not an integer or out of range$"
ERR_SYNTAX = r"^syntax error$"


def test_set_get(r):
    assert r.set("k", "v") is True
    assert r.get("k") == "v"
    assert r.get("missing") is None
    assert r.set("k", "v2") is True
    assert r.get("k") == "v2"


def test_set_ex_px(r):
    assert r.set("k", "v", ex=100)
    assert 99 <= r.ttl("k") <= 100
    assert r.set("k", "v", px=100_000)
    assert 99_000 <= r.pttl("k") <= 100_000
    # a plain SET clears the TTL
    assert r.set("k", "v")
    assert r.ttl("k") == -1


def test_set_exat_pxat(r):
    now = int(time.time())
    assert r.set("k", "v", exat=now + 100)
    assert 98 <= r.ttl("k") <= 100
    assert r.set("k", "v", pxat=(now + 200) * 1000)
    assert 198 <= r.ttl("k") <= 200
    # an absolute time in the past deletes the key at once
    assert r.set("k", "v", pxat=1000)
    assert r.get("k") is None


def test_set_px_expires(r):
    assert r.set("k", "v", px=50)
    assert r.get("k") == "v"
    time.sleep(0.15)
    assert r.get("k") is None
    assert r.exists("k") == 0


def test_set_nx_xx(r):
    assert r.set("k", "a", nx=True) is True
    assert r.set("k", "b", nx=True) is None
    assert r.get("k") == "a"
    assert r.set("k", "c", xx=True) is True
    assert r.get("k") == "c"
    assert r.set("missing", "x", xx=True) is None
    assert r.get("missing") is None


def test_set_get_option(r):
    assert r.set("k", "new", get=True) is None
    assert r.set("k", "newer", get=True) == "new"
    assert r.get("k") == "newer"
    # NX + GET is allowed since 7.0: returns the old value and does not set
    assert r.set("k", "x", nx=True, get=True) == "newer"
    assert r.get("k") == "newer"
    assert r.set("k2", "x", xx=True, get=True) is None
    assert r.get("k2") is None


def test_set_keepttl(r):
    assert r.set("k", "v", ex=100)
    assert r.set("k", "v2", keepttl=True)
    assert 99 <= r.ttl("k") <= 100
    assert r.get("k") == "v2"


def test_set_errors(r):
    with pytest.raises(redis.ResponseError, match=r"^invalid expire time in 'set' command$"):
        r.set("k", "v", ex=0)
    with pytest.raises(redis.ResponseError, match=r"^invalid expire time in 'set' command$"):
        r.execute_command("SET", "k", "v", "PX", "-5")
    with pytest.raises(redis.ResponseError, match=ERR_INT):
        r.execute_command("SET", "k", "v", "EX", "abc")
    with pytest.raises(redis.ResponseError, match=ERR_SYNTAX):
        r.execute_command("SET", "k", "v", "NX", "XX")
    with pytest.raises(redis.ResponseError, match=ERR_SYNTAX):
        r.execute_command("SET", "k", "v", "EX", "10", "PX", "100")
    with pytest.raises(redis.ResponseError, match=ERR_SYNTAX):
        r.execute_command("SET", "k", "v", "KEEPTTL", "EX", "10")
    with pytest.raises(redis.ResponseError, match=ERR_SYNTAX):
        r.execute_command("SET", "k", "v", "BOGUS")
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'set' command$"):
        r.execute_command("SET", "k")
    assert r.exists("k") == 0


def test_setnx_setex_psetex(r):
    assert r.setnx("k", "1") is True
    assert r.setnx("k", "2") is False
    assert r.get("k") == "1"
    assert r.setex("e", 100, "v") is True
    assert 99 <= r.ttl("e") <= 100
    assert r.psetex("p", 100_000, "v") is True
    assert 99_000 <= r.pttl("p") <= 100_000
    with pytest.raises(redis.ResponseError, match=r"^invalid expire time in 'setex' command$"):
        r.setex("e", 0, "v")
    with pytest.raises(redis.ResponseError, match=r"^invalid expire time in 'psetex' command$"):
        r.psetex("e", -1, "v")


def test_mset_mget(r):
    assert r.mset({"a": "1", "b": "2", "c": "3"}) is True
    assert r.mget("a", "b", "missing", "c") == ["1", "2", None, "3"]
    assert r.mget(["a"]) == ["1"]
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'mset' command$"):
        r.execute_command("MSET", "a", "1", "b")
    # the last duplicate wins
    assert r.execute_command("MSET", "d", "1", "d", "2")
    assert r.get("d") == "2"


def test_msetnx(r):
    assert r.msetnx({"a": "1", "b": "2"}) is True
    assert r.msetnx({"b": "x", "c": "3"}) is False
    assert r.mget("a", "b", "c") == ["1", "2", None]


def test_incr_family(r):
    assert r.incr("n") == 1
    assert r.incr("n", 10) == 11
    assert r.decr("n") == 10
    assert r.decr("n", 20) == -10
    assert r.execute_command("INCRBY", "n", "-5") == -15
    assert r.execute_command("DECRBY", "n", "-20") == 5
    assert r.get("n") == "5"
    r.set("n", "  1")
    with pytest.raises(redis.ResponseError, match=ERR_INT):
        r.incr("n")
    r.set("n", "abc")
    with pytest.raises(redis.ResponseError, match=ERR_INT):
        r.incr("n")
    r.set("n", str(2**63 - 1))
    with pytest.raises(redis.ResponseError, match=r"^increment or decrement would overflow$"):
        r.incr("n")
    r.set("n", str(-(2**63)))
    with pytest.raises(redis.ResponseError, match=r"^increment or decrement would overflow$"):
        r.decr("n")
    with pytest.raises(redis.ResponseError, match=ERR_INT):
        r.execute_command("INCRBY", "n", "1.5")
    with pytest.raises(redis.ResponseError, match=r"^decrement would overflow$"):
        r.execute_command("DECRBY", "x", str(-(2**63)))


def test_incr_keeps_ttl(r):
    r.set("n", "1", ex=100)
    assert r.incr("n") == 2
    assert 99 <= r.ttl("n") <= 100


def test_incrbyfloat(r):
    assert r.incrbyfloat("f", 10.5) == 10.5
    assert r.get("f") == "10.5"
    assert r.incrbyfloat("f", 0.1) == pytest.approx(10.6)
    assert r.get("f") == "10.6"
    assert r.execute_command("INCRBYFLOAT", "f", "-5.6") in ("5", 5.0)
    assert r.get("f") == "5"
    r.set("g", "3.0e3")
    assert r.incrbyfloat("g", 200) == 3200
    assert r.get("g") == "3200"
    r.set("h", "abc")
    with pytest.raises(redis.ResponseError, match=r"^value is not a valid float$"):
        r.incrbyfloat("h", 1)
    with pytest.raises(redis.ResponseError, match=r"^value is not a valid float$"):
        r.execute_command("INCRBYFLOAT", "f", "x")
    r.set("i", "1")
    with pytest.raises(redis.ResponseError, match=r"^increment would produce NaN or Infinity$"):
        r.execute_command("INCRBYFLOAT", "i", "inf")
    assert r.get("i") == "1"


def test_append_strlen(r):
    assert r.append("k", "hello") == 5
    assert r.append("k", " world") == 11
    assert r.get("k") == "hello world"
    assert r.strlen("k") == 11
    assert r.strlen("missing") == 0
    r.set("n", "10")
    assert r.append("n", "5") == 3
    assert r.incr("n") == 106


def test_getrange_setrange(r):
    r.set("k", "Hello World")
    assert r.getrange("k", 0, 4) == "Hello"
    assert r.getrange("k", -5, -1) == "World"
    assert r.getrange("k", 5, 3) == ""
    assert r.getrange("k", 0, 100) == "Hello World"
    assert r.getrange("missing", 0, -1) == ""
    assert r.execute_command("SUBSTR", "k", 0, 4) == "Hello"
    assert r.setrange("k", 6, "Redis") == 11
    assert r.get("k") == "Hello Redis"
    assert r.setrange("pad", 5, "x") == 6
    assert r.get("pad") == "\x00" * 5 + "x"
    assert r.setrange("empty", 0, "") == 0
    assert r.exists("empty") == 0
    with pytest.raises(redis.ResponseError, match=r"^offset is out of range$"):
        r.setrange("k", -1, "x")
    with pytest.raises(redis.ResponseError, match=r"^string exceeds maximum allowed size \(proto-max-bulk-len\)$"):
        r.setrange("k", 512 * 1024 * 1024, "x")


def test_getset_getdel_getex(r):
    assert r.getset("k", "1") is None
    assert r.getset("k", "2") == "1"
    assert r.getdel("k") == "2"
    assert r.exists("k") == 0
    assert r.getdel("k") is None
    r.set("k", "v")
    assert r.getex("k", ex=100) == "v"
    assert 99 <= r.ttl("k") <= 100
    assert r.getex("k", persist=True) == "v"
    assert r.ttl("k") == -1
    assert r.getex("k", px=100_000) == "v"
    assert r.pttl("k") > 99_000
    assert r.getex("missing", ex=10) is None
    with pytest.raises(redis.ResponseError, match=r"^invalid expire time in 'getex' command$"):
        r.execute_command("GETEX", "k", "EX", "0")
    with pytest.raises(redis.ResponseError, match=ERR_SYNTAX):
        r.execute_command("GETEX", "k", "EX", "10", "PERSIST")


def test_lcs(r):
    r.mset({"a": "ohmytext", "b": "mynewtext"})
    assert r.execute_command("LCS", "a", "b") == "mytext"
    assert r.execute_command("LCS", "a", "b", "LEN") == 6


def test_object_encoding(r):
    r.set("i", "12345")
    r.set("e", "short")
    r.set("raw", "x" * 100)
    assert r.object("encoding", "i") == "int"
    assert r.object("encoding", "e") == "embstr"
    assert r.object("encoding", "raw") == "raw"
    r.append("e", "!")
    assert r.object("encoding", "e") == "raw"


def test_resp3_reply_types(tern):
    """Exact wire types: RESP3 nulls, integers, and INCRBYFLOAT's bulk string."""
    with tern.raw() as raw:
        raw.cmd("HELLO", "3")
        assert raw.cmd("GET", "missing") == b"_\r\n"
        assert raw.cmd("SET", "k", "v", "NX", "GET") == b"_\r\n"
        assert raw.cmd("SET", "k", "v", "NX") == b"_\r\n"
        assert raw.cmd("MGET", "k", "missing") == b"*2\r\n$1\r\nv\r\n_\r\n"
        assert raw.cmd("INCR", "n") == b":1\r\n"
        assert raw.cmd("INCRBYFLOAT", "f", "1.5") == b"$3\r\n1.5\r\n"
        assert raw.cmd("STRLEN", "k") == b":1\r\n"
    with tern.raw() as raw:
        assert raw.cmd("GET", "missing") == b"$-1\r\n"
        assert raw.cmd("SET", "k", "v", "NX") == b"$-1\r\n"
        assert raw.cmd("MGET", "k", "missing") == b"*2\r\n$1\r\nv\r\n$-1\r\n"


def test_resp3_python_types(tern):
    c = tern.client(3, decode=False)
    assert c.get("missing") is None
    assert c.incr("n") == 1
    assert isinstance(c.incr("n"), int)
    assert c.mget("n", "missing") == [b"2", None]
    assert c.set("k", b"\x00\xff") is True
    assert c.get("k") == b"\x00\xff"

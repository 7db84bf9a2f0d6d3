"""Keyspace commands through redis-py, RESP2 and RESP3 (Redis 7.2 behaviour)."""

import time

import pytest
import redis

ERR_INT = r"^value is not an integer or out of range$"


def test_del_exists_unlink(r):
    r.mset({"a": "1", "b": "2", "c": "3"})
    assert r.exists("a") == 1
    assert r.exists("a", "a", "b", "missing") == 3  # duplicates count
    assert r.delete("a", "missing") == 1
    assert r.unlink("b", "c", "b") == 2
    assert r.exists("a", "b", "c") == 0
    assert r.delete("nothing") == 0


def test_ttl_pttl_states(r):
    assert r.ttl("missing") == -2
    assert r.pttl("missing") == -2
    r.set("k", "v")
    assert r.ttl("k") == -1
    assert r.pttl("k") == -1


def test_expire_ttl_persist(r):
    r.set("k", "v")
    assert r.expire("k", 100) is True
    assert 99 <= r.ttl("k") <= 100
    assert 99_000 <= r.pttl("k") <= 100_000
    assert r.persist("k") is True
    assert r.ttl("k") == -1
    assert r.persist("k") is False
    assert r.persist("missing") is False
    assert r.expire("missing", 100) is False
    assert r.pexpire("k", 100_000) is True
    assert 99_000 <= r.pttl("k") <= 100_000


def test_expireat_expiretime(r):
    now = int(time.time())
    r.set("k", "v")
    assert r.expiretime("k") == -1
    assert r.expiretime("missing") == -2
    assert r.expireat("k", now + 100) is True
    assert r.expiretime("k") == now + 100
    assert r.pexpiretime("k") == (now + 100) * 1000
    assert r.pexpireat("k", (now + 200) * 1000 + 5) is True
    assert r.pexpiretime("k") == (now + 200) * 1000 + 5


def test_expire_in_the_past_deletes(r):
    r.set("a", "1")
    r.set("b", "1")
    r.set("c", "1")
    assert r.expire("a", -1) is True
    assert r.pexpireat("b", 1000) is True
    assert r.expire("c", 0) is True
    assert r.exists("a", "b", "c") == 0


def test_key_expires_for_real(r):
    r.set("k", "v")
    assert r.pexpire("k", 50)
    time.sleep(0.15)
    assert r.get("k") is None
    assert r.exists("k") == 0
    assert r.ttl("k") == -2


def test_expire_options(r):
    r.set("k", "v")
    assert r.expire("k", 100, xx=True) is False  # no TTL yet
    assert r.expire("k", 100, nx=True) is True
    assert r.expire("k", 200, nx=True) is False
    assert r.expire("k", 50, gt=True) is False
    assert r.expire("k", 200, gt=True) is True
    assert r.expire("k", 300, lt=True) is False
    assert r.expire("k", 150, lt=True) is True
    assert 149 <= r.ttl("k") <= 150
    r.set("p", "v")
    # a key without TTL counts as infinite TTL for GT/LT
    assert r.expire("p", 100, gt=True) is False
    assert r.expire("p", 100, lt=True) is True
    with pytest.raises(redis.ResponseError, match=r"^NX and XX, GT or LT options at the same time are not compatible$"):
        r.execute_command("EXPIRE", "k", "10", "NX", "XX")
    with pytest.raises(redis.ResponseError, match=r"^GT and LT options at the same time are not compatible$"):
        r.execute_command("EXPIRE", "k", "10", "GT", "LT")
    with pytest.raises(redis.ResponseError, match=r"^Unsupported option BOGUS$"):
        r.execute_command("EXPIRE", "k", "10", "BOGUS")


def test_expire_errors(r):
    r.set("k", "v")
    with pytest.raises(redis.ResponseError, match=ERR_INT):
        r.execute_command("EXPIRE", "k", "abc")
    with pytest.raises(redis.ResponseError, match=r"^invalid expire time in 'expire' command$"):
        r.execute_command("EXPIRE", "k", str(2**63 - 1))
    with pytest.raises(redis.ResponseError, match=r"^invalid expire time in 'pexpire' command$"):
        r.execute_command("PEXPIRE", "k", str(2**63 - 1))
    assert r.ttl("k") == -1


def test_set_clears_ttl_but_append_keeps_it(r):
    r.set("k", "v", ex=100)
    r.append("k", "x")
    assert r.ttl("k") > 0
    r.set("k", "v")
    assert r.ttl("k") == -1


def test_type(r):
    r.set("s", "v")
    assert r.type("s") == "string"
    assert r.type("missing") == "none"


def test_rename(r):
    r.set("a", "1", ex=100)
    assert r.rename("a", "b") is True
    assert r.get("b") == "1"
    assert r.exists("a") == 0
    assert 99 <= r.ttl("b") <= 100
    with pytest.raises(redis.ResponseError, match=r"^no such key$"):
        r.rename("missing", "x")
    r.set("c", "3")
    assert r.renamenx("b", "c") is False
    assert r.renamenx("b", "d") is True
    assert r.mget("b", "c", "d") == [None, "3", "1"]
    assert r.rename("d", "d") is True
    assert r.get("d") == "1"


def test_keys_pattern(r):
    r.mset({"hello": "1", "hallo": "1", "hxllo": "1", "heeeello": "1", "world": "1", "h[a]": "1"})
    assert sorted(r.keys("h?llo")) == ["hallo", "hello", "hxllo"]
    assert sorted(r.keys("h*llo")) == ["hallo", "heeeello", "hello", "hxllo"]
    assert sorted(r.keys("h[ae]llo")) == ["hallo", "hello"]
    assert sorted(r.keys("h[^e]llo")) == ["hallo", "hxllo"]
    assert sorted(r.keys("h[a-b]llo")) == ["hallo"]
    assert r.keys("h\\[a\\]") == ["h[a]"]
    assert len(r.keys("*")) == 6
    assert r.keys("nomatch*") == []


def test_dbsize_flushdb_flushall(tern, protocol):
    c0 = tern.client(protocol)
    c1 = tern.client(protocol, db=1)
    assert c0.dbsize() == 0
    c0.mset({f"k{i}": i for i in range(10)})
    c1.set("x", "1")
    assert c0.dbsize() == 10
    assert c0.flushdb() is True
    assert c0.dbsize() == 0
    assert c1.dbsize() == 1
    assert c0.flushall() is True
    assert c1.dbsize() == 0


def test_randomkey(r):
    assert r.randomkey() is None
    r.mset({"a": "1", "b": "2"})
    assert r.randomkey() in ("a", "b")


def test_copy_move(tern, protocol):
    c0 = tern.client(protocol)
    c1 = tern.client(protocol, db=1)
    c0.set("src", "v", ex=100)
    assert c0.copy("src", "dst") is True
    assert c0.get("dst") == "v"
    assert 99 <= c0.ttl("dst") <= 100
    assert c0.copy("src", "dst") is False
    assert c0.copy("src", "dst", replace=True) is True
    assert c0.copy("src", "other", destination_db=1) is True
    assert c1.get("other") == "v"
    assert c0.move("src", 1) is True
    assert c0.exists("src") == 0
    assert c1.get("src") == "v"
    c0.set("src", "again")
    assert c0.move("src", 1) is False  # already exists in db 1
    with pytest.raises(redis.ResponseError, match=r"^source and destination objects are the same$"):
        c0.move("src", 0)


def test_touch_object(r):
    r.set("a", "1")
    assert r.touch("a", "b") == 1
    assert r.object("idletime", "a") == 0
    assert r.object("refcount", "a") >= 1
    assert r.object("encoding", "missing") is None


def test_scan_iter(r):
    keys = {f"user:{i}" for i in range(500)} | {f"other:{i}" for i in range(100)}
    r.mset({k: "1" for k in keys})
    assert set(r.scan_iter()) == keys
    assert set(r.scan_iter(match="user:1*")) == {k for k in keys if k.startswith("user:1")}
    assert set(r.scan_iter(match="other:*", count=7)) == {k for k in keys if k.startswith("other:")}
    assert set(r.scan_iter(_type="string", count=1000)) == keys
    assert list(r.scan_iter(_type="list")) == []


def test_scan_cursor_protocol(r):
    r.mset({f"k{i}": i for i in range(50)})
    cursor, seen, rounds = 0, [], 0
    while True:
        cursor, batch = r.scan(cursor=cursor, count=10)
        seen.extend(batch)
        rounds += 1
        if cursor == 0:
            break
        assert rounds < 1000
    assert set(seen) == {f"k{i}" for i in range(50)}
    with pytest.raises(redis.ResponseError, match=r"^invalid cursor$"):
        r.execute_command("SCAN", "abc")
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        r.execute_command("SCAN", "0", "BOGUS", "1")


def test_scan_sees_keys_present_throughout(r):
    """Keys present for the whole scan are returned, even while others are added/removed."""
    stable = {f"s{i}" for i in range(200)}
    r.mset({k: "1" for k in stable})
    cursor, seen, i = 0, set(), 0
    while True:
        cursor, batch = r.scan(cursor=cursor, count=20)
        seen.update(batch)
        r.set(f"new{i}", "1")
        r.delete(f"new{i - 1}")
        i += 1
        if cursor == 0:
            break
    assert stable <= seen


def test_resp3_reply_types(tern):
    with tern.raw() as raw:
        raw.cmd("HELLO", "3")
        raw.cmd("SET", "k", "v")
        assert raw.cmd("TYPE", "k") == b"+string\r\n"
        assert raw.cmd("TTL", "k") == b":-1\r\n"
        assert raw.cmd("EXISTS", "k") == b":1\r\n"
        assert raw.cmd("KEYS", "*") == b"*1\r\n$1\r\nk\r\n"
        assert raw.cmd("RANDOMKEY") == b"$1\r\nk\r\n"
        assert raw.cmd("SCAN", "0") == b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n"
        assert raw.cmd("DEL", "k") == b":1\r\n"
        assert raw.cmd("RANDOMKEY") == b"_\r\n"
        assert raw.cmd("OBJECT", "ENCODING", "k") == b"_\r\n"


def test_wrong_arity_errors(r):
    for cmd, name in [(["DEL"], "del"), (["EXPIRE", "k"], "expire"), (["TTL"], "ttl"),
                      (["RENAME", "a"], "rename"), (["SCAN"], "scan"), (["KEYS"], "keys")]:
        with pytest.raises(redis.ResponseError, match=rf"^wrong number of arguments for '{name}' command$"):
            r.execute_command(*cmd)

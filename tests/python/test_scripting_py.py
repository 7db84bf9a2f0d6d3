"""EVAL / EVALSHA / SCRIPT and FUNCTION / FCALL through redis-py's own scripting APIs
(``register_script``, ``eval``, ``evalsha``, ``script_*``, ``function_*``, ``fcall``), in
RESP2 and RESP3."""

import pytest
import redis

LIB = """#!lua name=pylib
redis.register_function('incrby2', function(keys, args)
  return redis.call('incrby', keys[1], 2 * tonumber(args[1]))
end)
redis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}
"""


def test_register_script_and_evalsha(r):
    script = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    assert script(keys=["counter"], args=[5]) == 5
    assert script(keys=["counter"], args=[2]) == 7
    assert r.script_exists(script.sha) == [True]
    # redis-py reloads the script after SCRIPT FLUSH (NOSCRIPT -> EVAL)
    r.script_flush()
    assert r.script_exists(script.sha) == [False]
    assert script(keys=["counter"], args=[1]) == 8


def test_eval_conversions(r):
    assert r.eval("return {1, 'two', {3}}", 0) == [1, "two", [3]]
    assert r.eval("return 3.99", 0) == 3
    assert r.eval("return redis.status_reply('FINE')", 0) in ("FINE", True)
    assert r.eval("return KEYS[1] .. ARGV[1]", 1, "k", "v") == "kv"
    with pytest.raises(redis.ResponseError, match="My error"):
        r.eval("return redis.error_reply('My error')", 0)
    with pytest.raises(redis.ResponseError, match="nonexistent global variable 'x'"):
        r.eval("return x", 0)
    r.hset("h", mapping={"a": "1"})
    got = r.eval("redis.setresp(3); return redis.call('hgetall', KEYS[1])", 1, "h")
    assert got in ({"a": "1"}, ["a", "1"])


def test_evalsha_and_script_load(r):
    sha = r.script_load("return ARGV[1]")
    assert r.evalsha(sha, 0, "x") == "x"
    assert r.evalsha_ro(sha, 0, "y") == "y"
    with pytest.raises(redis.exceptions.NoScriptError):
        r.evalsha("0" * 40, 0)
    with pytest.raises(redis.ResponseError, match="Write commands are not allowed"):
        r.eval_ro("return redis.call('set', KEYS[1], 'v')", 1, "k")


def test_functions(r):
    assert r.function_load(LIB) == "pylib"
    assert r.fcall("incrby2", 1, "n", 5) == 10
    assert r.fcall_ro("peek", 1, "n") == "10"
    with pytest.raises(redis.ResponseError, match="write flag"):
        r.fcall_ro("incrby2", 1, "n", 1)
    libs = r.function_list()
    assert len(libs) == 1
    dump = r.function_dump()
    r.function_flush()
    assert r.function_list() == []
    assert r.function_restore(dump) in ("OK", True)
    assert r.fcall("incrby2", 1, "n", 1) == 12
    assert r.function_delete("pylib") in ("OK", True)
    with pytest.raises(redis.ResponseError, match="Function not found"):
        r.fcall("incrby2", 1, "n", 1)

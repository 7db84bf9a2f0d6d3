"""Differential tests: the same command sequence goes to tern and to Debian's redis-server, and
every reply must be byte-identical, in RESP2 and in RESP3.

Each case starts on fresh, empty servers. Only deterministic commands belong here (no SCAN order,
no PTTL, no ids). Debian ships Redis 7.0; where 7.2 (tern's spec) answers differently the case
is listed in KNOWN_7_0_DIFFERENCES with the reason and checked against the 7.2 text instead.
"""

import pytest

from conftest import encode

C = tuple  # one command: C(("SET", "k", "v")) reads better in the table than nested lists

CASES = {
    # connection
    "ping_echo": [("PING",), ("PING", "hi"), ("ECHO", "x"), ("ECHO",), ("PING", "a", "b")],
    "select": [("SELECT", "1"), ("SET", "k", "1"), ("SELECT", "0"), ("GET", "k"), ("SELECT", "16"), ("SELECT", "x")],
    "unknown_command": [("NOSUCH",), ("NOSUCH", "a", "b" * 200), ("GETT", "k")],
    "case_insensitive": [("set", "k", "v"), ("gEt", "k"), ("Del", "k")],
    # SET and its options
    "set_basic": [("SET", "k", "v"), ("GET", "k"), ("SET", "k", ""), ("GET", "k"), ("GET", "nokey")],
    "set_nx_xx": [("SET", "k", "1", "XX"), ("SET", "k", "1", "NX"), ("SET", "k", "2", "NX"), ("SET", "k", "3", "XX"), ("GET", "k")],
    "set_get": [("SET", "k", "1", "GET"), ("SET", "k", "2", "GET"), ("SET", "k", "3", "NX", "GET"), ("SET", "j", "3", "XX", "GET"), ("GET", "k")],
    "set_ex_ttl": [("SET", "k", "v", "EX", "100"), ("TTL", "k"), ("SET", "k", "v", "KEEPTTL"), ("TTL", "k"), ("SET", "k", "v"), ("TTL", "k")],
    "set_errors": [
        ("SET", "k", "v", "EX", "0"), ("SET", "k", "v", "EX", "-1"), ("SET", "k", "v", "PX", "abc"),
        ("SET", "k", "v", "NX", "XX"), ("SET", "k", "v", "EX", "1", "PX", "1"), ("SET", "k", "v", "EX"),
        ("SET", "k", "v", "KEEPTTL", "PX", "5"), ("SET", "k", "v", "FOO"), ("SET", "k"),
        ("SET", "k", "v", "EX", "9223372036854775807"), ("SET", "k", "v", "PXAT", "0"), ("EXISTS", "k"),
    ],
    "setnx_setex": [("SETNX", "k", "1"), ("SETNX", "k", "2"), ("GET", "k"), ("SETEX", "e", "100", "v"), ("TTL", "e"),
                    ("SETEX", "e", "0", "v"), ("PSETEX", "e", "-1", "v"), ("SETEX", "e", "x", "v"), ("PSETEX", "p", "100000", "v"), ("TTL", "p")],
    # multi-key strings
    "mset_mget": [("MSET", "a", "1", "b", "2"), ("MGET", "a", "b", "c"), ("MSET", "a"), ("MSET", "a", "1", "b"), ("MSETNX", "b", "x", "c", "3"), ("MSETNX", "c", "3", "d", "4"), ("MGET", "a", "b", "c", "d")],
    # counters
    "incr": [("INCR", "n"), ("INCRBY", "n", "10"), ("DECR", "n"), ("DECRBY", "n", "100"), ("GET", "n"), ("INCRBY", "n", "x"), ("INCRBY", "n", "1.5")],
    "incr_not_int": [("SET", "n", "abc"), ("INCR", "n"), ("SET", "n", " 1"), ("INCR", "n"), ("SET", "n", "1 "), ("INCR", "n"), ("SET", "n", "01"), ("INCR", "n"), ("SET", "n", "-0"), ("INCR", "n")],
    "incr_overflow": [("SET", "n", "9223372036854775807"), ("INCR", "n"), ("SET", "n", "-9223372036854775808"), ("DECR", "n"), ("DECRBY", "m", "-9223372036854775808"), ("INCRBY", "m", "9223372036854775808")],
    "incrbyfloat": [("INCRBYFLOAT", "f", "10.5"), ("INCRBYFLOAT", "f", "0.1"), ("INCRBYFLOAT", "f", "-5.6"), ("INCRBYFLOAT", "f", "1e3"), ("INCRBYFLOAT", "f", "3.0e3"),
                    ("INCRBYFLOAT", "f", "x"), ("INCRBYFLOAT", "f", "inf"), ("INCRBYFLOAT", "f", "nan"), ("SET", "g", "1.5e2"), ("INCRBYFLOAT", "g", "0"), ("GET", "g"),
                    ("SET", "h", "abc"), ("INCRBYFLOAT", "h", "1"), ("INCRBYFLOAT", "i", "5.0"), ("INCRBYFLOAT", "i", "0.000001")],
    # byte-range commands
    "append_strlen": [("APPEND", "k", "he"), ("APPEND", "k", "llo"), ("STRLEN", "k"), ("STRLEN", "nokey"), ("GET", "k"), ("SET", "n", "12"), ("APPEND", "n", "3"), ("INCR", "n")],
    "getrange": [("SET", "k", "Hello World"), ("GETRANGE", "k", "0", "4"), ("GETRANGE", "k", "-5", "-1"), ("GETRANGE", "k", "5", "3"), ("GETRANGE", "k", "-100", "100"),
                 ("GETRANGE", "k", "0", "-100"), ("GETRANGE", "nokey", "0", "-1"), ("GETRANGE", "k", "a", "1"), ("SUBSTR", "k", "0", "1")],
    "setrange": [("SETRANGE", "k", "5", "x"), ("GET", "k"), ("SETRANGE", "k", "0", "ab"), ("GET", "k"), ("SETRANGE", "k", "-1", "x"), ("SETRANGE", "e", "0", ""), ("EXISTS", "e"),
                 ("SETRANGE", "k", "536870912", "x"), ("SETRANGE", "k", "2", ""), ("GET", "k")],
    "getset_getdel_getex": [("GETSET", "k", "1"), ("GETSET", "k", "2"), ("GETDEL", "k"), ("GETDEL", "k"), ("SET", "k", "v"), ("GETEX", "k", "EX", "100"), ("TTL", "k"),
                            ("GETEX", "k", "PERSIST"), ("TTL", "k"), ("GETEX", "k", "EX", "0"), ("GETEX", "k", "EX", "1", "PX", "1"), ("GETEX", "k", "FOO"), ("GETEX", "nokey")],
    "lcs": [("MSET", "a", "ohmytext", "b", "mynewtext"), ("LCS", "a", "b"), ("LCS", "a", "b", "LEN"), ("LCS", "a", "b", "IDX"), ("LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"), ("LCS", "a", "nokey")],
    "object_encoding": [("SET", "i", "123"), ("SET", "s", "short"), ("SET", "r", "x" * 60), ("OBJECT", "ENCODING", "i"), ("OBJECT", "ENCODING", "s"), ("OBJECT", "ENCODING", "r"),
                        ("APPEND", "s", "1"), ("OBJECT", "ENCODING", "s"), ("SET", "big", "12345678901234567890"), ("OBJECT", "ENCODING", "big"), ("OBJECT", "ENCODING", "nokey")],
    # keyspace
    "del_exists": [("MSET", "a", "1", "b", "2"), ("EXISTS", "a", "a", "c"), ("DEL", "a", "c"), ("UNLINK", "b", "b"), ("EXISTS", "a", "b"), ("DEL",)],
    "ttl_states": [("TTL", "k"), ("PTTL", "k"), ("SET", "k", "v"), ("TTL", "k"), ("PTTL", "k"), ("EXPIRETIME", "k"), ("EXPIRETIME", "nokey"), ("PERSIST", "k"), ("PERSIST", "nokey")],
    "expire": [("SET", "k", "v"), ("EXPIRE", "k", "100"), ("TTL", "k"), ("PERSIST", "k"), ("TTL", "k"), ("EXPIRE", "nokey", "10"), ("EXPIRE", "k", "x"), ("EXPIRE", "k", "9223372036854775807"),
               ("PEXPIRE", "k", "9223372036854775807"), ("EXPIREAT", "k", "9223372036854775807"), ("EXPIRE", "k", "-1"), ("EXISTS", "k")],
    "expireat_fixed": [("SET", "k", "v"), ("EXPIREAT", "k", "4000000000"), ("EXPIRETIME", "k"), ("PEXPIRETIME", "k"), ("PEXPIREAT", "k", "4000000000123"), ("PEXPIRETIME", "k"), ("EXPIRETIME", "k")],
    "expire_options": [("SET", "k", "v"), ("EXPIRE", "k", "100", "XX"), ("EXPIRE", "k", "100", "NX"), ("EXPIRE", "k", "200", "NX"), ("EXPIRE", "k", "50", "GT"), ("EXPIRE", "k", "200", "GT"),
                       ("EXPIRE", "k", "300", "LT"), ("EXPIRE", "k", "150", "LT"), ("TTL", "k"), ("EXPIRE", "k", "1", "NX", "XX"), ("EXPIRE", "k", "1", "GT", "LT"), ("EXPIRE", "k", "1", "FOO"),
                       ("EXPIRE", "k", "1", "nx", "gt"), ("SET", "p", "v"), ("EXPIRE", "p", "10", "GT"), ("EXPIRE", "p", "10", "LT")],
    "type_rename": [("SET", "a", "1"), ("TYPE", "a"), ("TYPE", "nokey"), ("RENAME", "a", "b"), ("RENAME", "a", "b"), ("RENAME", "b", "b"), ("SET", "c", "3"), ("RENAMENX", "b", "c"),
                    ("RENAMENX", "b", "d"), ("RENAMENX", "nokey", "x"), ("MGET", "a", "b", "c", "d")],
    # KEYS order depends on the per-process hash seed, so each pattern matches at most one key
    "keys_pattern": [("MSET", "hello", "1", "hallo", "1", "hxllo", "1", "h[a]", "1"), ("KEYS", "h[a]llo"), ("KEYS", "h\\[a\\]"), ("KEYS", "nomatch"),
                     ("KEYS", "h[^ea]llo"), ("KEYS", "hel*"), ("KEYS", "?[a]*"), ("KEYS", "h[f-z]llo"), ("KEYS", "*]")],
    "dbsize_flush": [("DBSIZE",), ("MSET", "a", "1", "b", "2"), ("DBSIZE",), ("FLUSHDB",), ("DBSIZE",), ("SET", "a", "1"), ("FLUSHALL", "SYNC"), ("DBSIZE",), ("FLUSHDB", "FOO"), ("RANDOMKEY",)],
    "copy_move": [("SET", "a", "1"), ("COPY", "a", "b"), ("COPY", "a", "b"), ("COPY", "a", "b", "REPLACE"), ("COPY", "a", "c", "DB", "1"), ("COPY", "a", "a"), ("COPY", "a", "x", "DB", "99"),
                  ("MOVE", "a", "1"), ("MOVE", "c", "1"), ("MOVE", "b", "0"), ("MOVE", "b", "99"), ("SELECT", "1"), ("MGET", "a", "b", "c")],
    "scan_small": [("SET", "k", "v"), ("SCAN", "0"), ("SCAN", "0", "MATCH", "x*"), ("SCAN", "0", "TYPE", "list"), ("SCAN", "0", "COUNT", "0"), ("SCAN", "x"), ("SCAN", "0", "FOO", "1")],
    "wrong_arity": [("GET",), ("GET", "a", "b"), ("TTL",), ("EXPIRE", "k"), ("MGET",), ("INCR",), ("APPEND", "k"), ("RENAME", "a"), ("KEYS",), ("GETRANGE", "k", "0")],
}

# Cases where Redis 7.0 (Debian's redis-server) and Redis 7.2 (tern's spec) differ.
KNOWN_7_0_DIFFERENCES: dict[str, str] = {}


def _run(server, protocol, cmds):
    with server.raw() as raw:
        if protocol == 3:
            raw.cmd("HELLO", "3")
        out = []
        for c in cmds:
            raw.send(encode(*c))
            out.append(raw.read_reply())
        return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_replies(name, tern, redis_ref, protocol):
    if name in KNOWN_7_0_DIFFERENCES:
        pytest.skip(KNOWN_7_0_DIFFERENCES[name])
    cmds = CASES[name]
    want = _run(redis_ref, protocol, cmds)
    got = _run(tern, protocol, cmds)
    diffs = [
        f"  {' '.join(map(str, c))[:80]!s}\n    redis: {w[:200]!r}\n    tern:  {g[:200]!r}"
        for c, w, g in zip(cmds, want, got)
        if w != g
    ]
    assert not diffs, f"{len(diffs)} replies differ from redis-server:\n" + "\n".join(diffs)


def test_pipelined_sequence_same_bytes(tern, redis_ref):
    """All cases concatenated in one write each: the whole byte stream must match."""
    cmds = [c for name in sorted(CASES) if name not in KNOWN_7_0_DIFFERENCES for c in CASES[name]
            if c[0].upper() not in ("FLUSHALL", "FLUSHDB", "SELECT", "MOVE", "COPY", "SCAN", "KEYS", "RANDOMKEY")]
    req = b"".join(encode(*c) for c in cmds)
    outs = []
    for s in (redis_ref, tern):
        with s.raw() as raw:
            raw.send(req)
            outs.append(raw.read_replies(len(cmds)))
    for c, w, g in zip(cmds, *outs):
        assert g == w, f"{c}: redis {w!r} tern {g!r}"

"""Bitmap commands through redis-py (RESP2 and RESP3): SETBIT GETBIT BITCOUNT BITPOS BITOP
BITFIELD BITFIELD_RO, with redis-py's own helpers (bitfield builder, BitFieldOperation)."""

import random

import pytest
import redis


def test_setbit_getbit(rb):
    assert rb.setbit("k", 7, 1) == 0
    assert rb.setbit("k", 7, 1) == 1
    assert rb.get("k") == b"\x01"
    assert rb.getbit("k", 7) == 1
    assert rb.getbit("k", 1000) == 0
    assert rb.object("encoding", "k") == b"raw"
    with pytest.raises(redis.ResponseError, match=r"^bit offset is not an integer or out of range$"):
        rb.setbit("k", -1, 1)
    with pytest.raises(redis.ResponseError, match=r"^bit is not an integer or out of range$"):
        rb.execute_command("SETBIT", "k", 0, 2)


def test_bitcount_bitpos(r):
    r.set("s", "foobar")
    assert r.bitcount("s") == 26
    assert r.bitcount("s", 1, 1) == 6
    assert r.bitcount("s", 5, 30, "BIT") == 17
    assert r.bitpos("s", 1) == 1
    assert r.bitpos("s", 0, 2, -1, "BYTE") == 16
    assert r.bitpos("s", 1, 7, 15, "BIT") == 9
    assert r.bitpos("nokey", 0) == 0
    with pytest.raises(redis.ResponseError, match=r"^The bit argument must be 1 or 0\.$"):
        r.execute_command("BITPOS", "s", 3)
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        r.execute_command("BITCOUNT", "s", "0")


def test_bitop(rb):
    rb.set("a", b"\xf0\x0f")
    rb.set("b", b"\xff")
    assert rb.bitop("AND", "d", "a", "b") == 2
    assert rb.get("d") == b"\xf0\x00"
    assert rb.bitop("NOT", "d", "a") == 2
    assert rb.get("d") == b"\x0f\xf0"
    assert rb.bitop("OR", "d", "nokey") == 0
    assert rb.exists("d") == 0
    with pytest.raises(redis.ResponseError, match=r"^BITOP NOT must be called with a single source key\.$"):
        rb.bitop("NOT", "d", "a", "b")


def test_bitfield_builder(r):
    bf = r.bitfield("bf")
    res = bf.set("i8", 0, 100).incrby("i8", 0, 100).overflow("FAIL").incrby("u2", 10, 7).get("u8", "#0").execute()
    assert res == [0, -56, None, 200]
    assert r.bitfield_ro("bf", "u8", 0, items=[("i8", 0)]) == [200, -56]
    with pytest.raises(redis.ResponseError, match=r"^Invalid bitfield type\. Use something like i16 u8\. Note that u64 is not supported but i64 is\.$"):
        r.bitfield("bf").get("u64", 0).execute()
    with pytest.raises(redis.ResponseError, match=r"^BITFIELD_RO only supports the GET subcommand$"):
        r.execute_command("BITFIELD_RO", "bf", "SET", "u8", "0", "1")


def test_random_differential(pair):
    tern, ref = pair
    rng = random.Random(1234)
    for _ in range(300):
        blob = bytes(rng.choice([0, 255, rng.randrange(256)]) for _ in range(rng.randrange(0, 40)))
        for c in (tern, ref):
            c.set("x", blob)
        n = len(blob) * 8 + 8
        a, b = rng.randrange(-n, n), rng.randrange(-n, n)
        cmds = [
            ("BITCOUNT", "x", a, b, "BIT"),
            ("BITCOUNT", "x", a // 8, b // 8),
            ("BITPOS", "x", rng.randrange(2), a, b, "BIT"),
            ("BITPOS", "x", rng.randrange(2), a // 8),
            ("BITFIELD", "x", "GET", f"i{rng.randrange(1, 65)}", rng.randrange(n),
             "OVERFLOW", rng.choice(["WRAP", "SAT", "FAIL"]),
             "INCRBY", f"u{rng.randrange(1, 64)}", rng.randrange(n), rng.randrange(-1000, 1000)),
        ]
        for cmd in cmds:
            assert tern.execute_command(*cmd) == ref.execute_command(*cmd), cmd
        assert tern.get("x") == ref.get("x")

"""Wire-level tests over raw sockets: inline commands, pipelining, binary safety, protocol
errors with Redis's exact texts (and that only the offending connection is closed), big values,
and proto-max-bulk-len."""

import os
import time

import pytest
import redis

from conftest import encode


# ---- inline commands ---------------------------------------------------------------------------


def test_inline_commands(tern):
    with tern.raw() as raw:
        raw.send(b"PING\r\n")
        assert raw.read_reply() == b"+PONG\r\n"
        raw.send(b"PING\n")  # a bare LF ends an inline command too
        assert raw.read_reply() == b"+PONG\r\n"
        raw.send(b"SET k 'x y'\r\nGET k\r\n")
        assert raw.read_replies(2) == [b"+OK\r\n", b"$3\r\nx y\r\n"]
        raw.send(b'ECHO "a\\x41\\x00\\n\\"b"\r\n')
        assert raw.read_reply() == b'$6\r\naA\x00\n"b\r\n'
        raw.send(b"  ECHO    spaced\t\r\n")
        assert raw.read_reply() == b"$6\r\nspaced\r\n"
        raw.send(b'ECHO ""\r\n')
        assert raw.read_reply() == b"$0\r\n\r\n"
        # empty lines are ignored (no reply at all)
        raw.send(b"\r\n\r\n   \r\nPING\r\n")
        assert raw.read_reply() == b"+PONG\r\n"


def test_inline_split_across_writes(tern):
    with tern.raw() as raw:
        for ch in b"ECHO hello\r\n":
            raw.send(bytes([ch]))
            time.sleep(0.001)
        assert raw.read_reply() == b"$5\r\nhello\r\n"


def test_inline_and_multibulk_mixed(tern):
    with tern.raw() as raw:
        raw.send(b"SET a 1\r\n" + encode("GET", "a") + b"GET a\r\n" + encode("PING"))
        assert raw.read_replies(4) == [b"+OK\r\n", b"$1\r\n1\r\n", b"$1\r\n1\r\n", b"+PONG\r\n"]


def test_unknown_command_inline(tern):
    with tern.raw() as raw:
        raw.send(b"NOSUCHCMD a b\r\n")
        assert raw.read_reply() == (
            b"-ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' 'b' \r\n"
        )
        assert raw.cmd("PING") == b"+PONG\r\n"


# ---- pipelining --------------------------------------------------------------------------------


def test_pipeline_1000_in_one_write(tern):
    req, want = [], []
    for i in range(1000):
        m = i % 4
        if m == 0:
            req.append(encode("SET", f"key:{i}", f"val:{i}"))
            want.append(b"+OK\r\n")
        elif m == 1:
            req.append(encode("GET", f"key:{i - 1}"))
            v = f"val:{i - 1}".encode()
            want.append(b"$%d\r\n%s\r\n" % (len(v), v))
        elif m == 2:
            req.append(encode("ECHO", str(i)))
            want.append(b"$%d\r\n%d\r\n" % (len(str(i)), i))
        else:
            req.append(b"PING\r\n" if i % 8 == 3 else encode("EXISTS", f"key:{i - 3}", "nokey"))
            want.append(b"+PONG\r\n" if i % 8 == 3 else b":1\r\n")
    with tern.raw() as raw:
        raw.send(b"".join(req))
        got = raw.read_replies(1000)
    assert got == want


def test_pipeline_redis_py(r):
    p = r.pipeline(transaction=False)
    for i in range(500):
        p.set(f"k{i}", i)
    for i in range(500):
        p.get(f"k{i}")
    res = p.execute()
    assert res[:500] == [True] * 500
    assert res[500:] == [str(i) for i in range(500)]


def test_pipeline_byte_by_byte(tern):
    data = encode("SET", "k", "hello") + encode("GET", "k") + encode("DEL", "k")
    with tern.raw() as raw:
        for i in range(len(data)):
            raw.send(data[i : i + 1])
        assert raw.read_replies(3) == [b"+OK\r\n", b"$5\r\nhello\r\n", b":1\r\n"]


# ---- binary safety -----------------------------------------------------------------------------


def test_binary_safe_keys_and_values(rb):
    key = b"\x00\r\n\xff key \x00"
    val = bytes(range(256)) * 3
    assert rb.set(key, val)
    assert rb.get(key) == val
    assert rb.exists(key) == 1
    assert rb.get(b"\x00\r\n\xff key ") is None
    assert rb.delete(key) == 1


def test_zero_length_args(tern):
    with tern.raw() as raw:
        assert raw.cmd("SET", "", "") == b"+OK\r\n"
        assert raw.cmd("GET", "") == b"$0\r\n\r\n"
        assert raw.cmd("EXISTS", "") == b":1\r\n"
        assert raw.cmd("SET", "k", "") == b"+OK\r\n"
        assert raw.cmd("GET", "k") == b"$0\r\n\r\n"
        assert raw.cmd("ECHO", "") == b"$0\r\n\r\n"
        assert raw.cmd("DEL", "", "k") == b":2\r\n"
        # an empty multibulk and a zero-length command name
        raw.send(b"*0\r\n*-1\r\n")
        assert raw.cmd("PING") == b"+PONG\r\n"
        assert raw.cmd("") == b"-ERR unknown command '', with args beginning with: \r\n"


# ---- protocol errors ---------------------------------------------------------------------------

# (id, request bytes, the exact reply; the server then closes that connection)
PROTOCOL_ERRORS = [
    ("multibulk_too_long", b"*3000000000\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    ("multibulk_not_number", b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    ("bulk_negative", b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    ("bulk_not_number", b"*1\r\n$blabla\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    ("bulk_too_big", b"*1\r\n$1000000000000\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    ("expected_dollar", b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", b"-ERR Protocol error: expected '$', got 'f'\r\n"),
    ("expected_dollar_x", b"*1\r\nx\r\n", b"-ERR Protocol error: expected '$', got 'x'\r\n"),
    ("too_big_inline", b"a" * (64 * 1024 + 100), b"-ERR Protocol error: too big inline request\r\n"),
    ("too_big_mbulk_count", b"*" + b"1" * (64 * 1024 + 100), b"-ERR Protocol error: too big mbulk count string\r\n"),
    ("too_big_bulk_count", b"*1\r\n$" + b"1" * (64 * 1024 + 100), b"-ERR Protocol error: too big bulk count string\r\n"),
    ("unbalanced_double", b'SET "a b\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
    ("unbalanced_single", b"SET 'a b\r\n", b"-ERR Protocol error: unbalanced quotes in request\r\n"),
    ("quote_then_char", b'SET "a"b c\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
]


@pytest.mark.parametrize("req,reply", [c[1:] for c in PROTOCOL_ERRORS], ids=[c[0] for c in PROTOCOL_ERRORS])
def test_protocol_error(tern, req, reply):
    other = tern.client(2)
    assert other.set("survivor", "yes")
    with tern.raw() as bystander, tern.raw() as bad:
        assert bystander.cmd("PING") == b"+PONG\r\n"
        bad.send(encode("PING"))
        assert bad.read_reply() == b"+PONG\r\n"
        bad.send(req)
        assert bad.read_until_closed() == reply
        # only that connection was closed: the others keep working on the same sockets
        assert bystander.cmd("GET", "survivor") == b"$3\r\nyes\r\n"
        assert other.get("survivor") == "yes"
    # and new connections are accepted
    with tern.raw() as again:
        assert again.cmd("PING") == b"+PONG\r\n"


@pytest.mark.parametrize("req,reply", [c[1:] for c in PROTOCOL_ERRORS], ids=[c[0] for c in PROTOCOL_ERRORS])
def test_protocol_error_text_matches_redis(redis_ref, tern, req, reply):
    """The table above is Redis's behaviour: check it against the real redis-server, and that
    tern answers byte for byte the same."""
    with redis_ref.raw() as a, tern.raw() as b:
        a.send(req)
        b.send(req)
        assert a.read_until_closed() == reply
        assert b.read_until_closed() == reply


def test_replies_before_protocol_error_are_delivered(tern):
    with tern.raw() as raw:
        raw.send(encode("SET", "k", "v") + encode("GET", "k") + b"*1\r\nx\r\n" + encode("PING"))
        assert raw.read_until_closed() == (
            b"+OK\r\n$1\r\nv\r\n-ERR Protocol error: expected '$', got 'x'\r\n"
        )


def test_unauthenticated_limits(tern_factory):
    s = tern_factory("--requirepass", "pw")
    with s.raw() as raw:
        raw.send(b"*11\r\n")
        assert raw.read_until_closed() == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    with s.raw() as raw:
        raw.send(b"*2\r\n$4\r\nAUTH\r\n$16385\r\n")
        assert raw.read_until_closed() == b"-ERR Protocol error: unauthenticated bulk length\r\n"
    with s.raw() as raw:
        # after AUTH the normal limits apply
        assert raw.cmd("AUTH", "pw") == b"+OK\r\n"
        assert raw.cmd("ECHO", "x" * 20000) == b"$20000\r\n" + b"x" * 20000 + b"\r\n"
        assert raw.cmd("DEL", *[f"k{i}" for i in range(20)]) == b":0\r\n"


# ---- big values and proto-max-bulk-len ------------------------------------------------------------


@pytest.mark.slow
def test_10mb_value_roundtrip(rb):
    val = os.urandom(10 * 1024 * 1024)
    assert rb.set("big", val)
    assert rb.get("big") == val
    assert rb.strlen("big") == len(val)


@pytest.mark.slow
def test_10mb_value_raw_chunked(tern):
    val = os.urandom(10 * 1024 * 1024)
    req = encode("SET", "big", val)
    with tern.raw(timeout=30) as raw:
        for i in range(0, len(req), 1 << 16):  # 64 KiB writes
            raw.send(req[i : i + (1 << 16)])
        assert raw.read_reply() == b"+OK\r\n"
        assert raw.cmd("GET", "big") == b"$%d\r\n%s\r\n" % (len(val), val)


MB = 1024 * 1024


def _check_max_bulk(s, limit):
    with s.raw() as raw:
        assert raw.cmd("SET", "ok", b"x" * limit) == b"+OK\r\n"
        assert raw.cmd("STRLEN", "ok") == b":%d\r\n" % limit
    with s.raw() as raw:
        # rejected as soon as the header arrives, before any payload
        raw.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (limit + 1))
        assert raw.read_until_closed() == b"-ERR Protocol error: invalid bulk length\r\n"


def test_proto_max_bulk_len_startup(tern_factory):
    s = tern_factory("--proto-max-bulk-len", str(MB))
    _check_max_bulk(s, MB)


def test_proto_max_bulk_len_config_set(tern):
    c = tern.client(2)
    assert c.config_set("proto-max-bulk-len", str(2 * MB))
    assert c.config_get("proto-max-bulk-len") == {"proto-max-bulk-len": str(2 * MB)}
    _check_max_bulk(tern, 2 * MB)
    with pytest.raises(redis.ResponseError):
        c.config_set("proto-max-bulk-len", "1000")  # below Redis's 1mb minimum


def test_proto_max_bulk_len_redis_py(tern_factory):
    s = tern_factory("--proto-max-bulk-len", str(MB))
    c = s.client(2, decode=False)
    with pytest.raises((redis.ConnectionError, redis.ResponseError)):
        c.set("k", b"x" * (MB + 1))
    assert s.client(2).ping()

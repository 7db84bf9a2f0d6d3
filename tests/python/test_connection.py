"""Connection commands through redis-py (RESP2 and RESP3): PING ECHO SELECT HELLO AUTH RESET QUIT."""

import pytest
import redis

from conftest import encode

PW = "s3cret pass"


def test_ping(r):
    assert r.ping() is True
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'ping' command$"):
        r.execute_command("PING", "a", "b")


def test_ping_raw(tern):
    with tern.raw() as raw:
        assert raw.cmd("PING") == b"+PONG\r\n"
        assert raw.cmd("PING", "hello world") == b"$11\r\nhello world\r\n"
        raw.cmd("HELLO", "3")
        assert raw.cmd("PING") == b"+PONG\r\n"
        assert raw.cmd("PING", "") == b"$0\r\n\r\n"


def test_echo(r):
    assert r.echo("x y") == "x y"
    assert r.echo("") == ""
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'echo' command$"):
        r.execute_command("ECHO")


def test_echo_binary(rb):
    payload = bytes(range(256)) * 4
    assert rb.echo(payload) == payload


def test_select_isolates_databases(tern, protocol):
    c0 = tern.client(protocol)
    c5 = tern.client(protocol, db=5)
    assert c0.set("k", "db0")
    assert c5.get("k") is None
    assert c5.set("k", "db5")
    assert c0.get("k") == "db0"
    assert c5.get("k") == "db5"
    # SELECT on a raw connection switches for the rest of the connection
    with tern.raw() as raw:
        assert raw.cmd("SELECT", "5") == b"+OK\r\n"
        assert raw.cmd("GET", "k") == b"$3\r\ndb5\r\n"
        assert raw.cmd("SELECT", "15") == b"+OK\r\n"
        assert raw.cmd("GET", "k") == b"$-1\r\n"


def test_select_errors(r):
    with pytest.raises(redis.ResponseError, match=r"^DB index is out of range$"):
        r.execute_command("SELECT", "16")
    with pytest.raises(redis.ResponseError, match=r"^DB index is out of range$"):
        r.execute_command("SELECT", "-1")
    with pytest.raises(redis.ResponseError, match=r"^value is not an integer or out of range$"):
        r.execute_command("SELECT", "abc")
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'select' command$"):
        r.execute_command("SELECT")


HELLO_KEYS = ["server", "version", "proto", "id", "mode", "role", "modules"]


def test_hello3_map_shape(tern):
    c = tern.client(3)
    h = c.execute_command("HELLO", "3")
    assert isinstance(h, dict)
    assert list(h.keys()) == HELLO_KEYS
    assert h["server"] == "redis"
    assert h["proto"] == 3
    assert isinstance(h["id"], int)
    assert h["mode"] == "standalone"
    assert h["role"] == "master"
    assert h["modules"] == []
    major, minor, _patch = (int(x) for x in h["version"].split("."))
    assert (major, minor) >= (7, 0)
    # the wire format is a RESP3 map of 7 pairs
    with tern.raw() as raw:
        reply = raw.cmd("HELLO", "3")
        assert reply.startswith(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n")
        assert b"$5\r\nproto\r\n:3\r\n" in reply
        assert reply.endswith(b"$7\r\nmodules\r\n*0\r\n")
        # after HELLO 3 the connection speaks RESP3: a missing key is the RESP3 null
        assert raw.cmd("GET", "nokey") == b"_\r\n"


def test_hello2_is_flat_array(tern):
    with tern.raw() as raw:
        reply = raw.cmd("HELLO", "2")
        assert reply.startswith(b"*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n")
        assert b"$5\r\nproto\r\n:2\r\n" in reply
        assert raw.cmd("GET", "nokey") == b"$-1\r\n"


def test_hello_without_args_keeps_protocol(tern):
    with tern.raw() as raw:
        assert raw.cmd("HELLO").startswith(b"*14\r\n")
        raw.cmd("HELLO", "3")
        assert raw.cmd("HELLO").startswith(b"%7\r\n")


def test_hello_errors(tern):
    with tern.raw() as raw:
        assert raw.cmd("HELLO", "4") == b"-NOPROTO unsupported protocol version\r\n"
        assert raw.cmd("HELLO", "1") == b"-NOPROTO unsupported protocol version\r\n"
        assert raw.cmd("HELLO", "x") == b"-ERR Protocol version is not an integer or out of range\r\n"
        assert raw.cmd("HELLO", "3", "FOO") == b"-ERR Syntax error in HELLO option 'FOO'\r\n"
        # nothing changed: still RESP2
        assert raw.cmd("GET", "nokey") == b"$-1\r\n"


def test_hello_setname(tern):
    with tern.raw() as raw:
        assert raw.cmd("HELLO", "3", "SETNAME", "myname").startswith(b"%7\r\n")
        assert raw.cmd("CLIENT", "GETNAME") == b"$6\r\nmyname\r\n"


def test_auth_without_password_configured(tern):
    with tern.raw() as raw:
        assert raw.cmd("AUTH", "foo") == (
            b"-ERR AUTH <password> called without any password configured for the default user. "
            b"Are you sure your configuration is correct?\r\n"
        )
        assert raw.cmd("AUTH", "default", "nopass") == b"+OK\r\n"
        # the default user has `nopass`: any password is accepted in the two-argument form
        assert raw.cmd("AUTH", "default", "anything") == b"+OK\r\n"


def test_auth_requirepass(tern_factory, protocol):
    s = tern_factory("--requirepass", PW)
    with s.raw() as raw:
        assert raw.cmd("PING") == b"-NOAUTH Authentication required.\r\n"
        assert raw.cmd("GET", "k") == b"-NOAUTH Authentication required.\r\n"
        assert raw.cmd("AUTH", "wrong") == (
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        )
        assert raw.cmd("AUTH", "default", "wrong") == (
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        )
        assert raw.cmd("AUTH", PW) == b"+OK\r\n"
        assert raw.cmd("PING") == b"+PONG\r\n"
    with s.raw() as raw:
        assert raw.cmd("AUTH", "default", PW) == b"+OK\r\n"
        assert raw.cmd("SET", "k", "v") == b"+OK\r\n"
    # redis-py authenticates with AUTH (RESP2) or HELLO 3 AUTH default pw (RESP3)
    c = s.client(protocol, password=PW)
    assert c.get("k") == "v"
    with pytest.raises(redis.AuthenticationError):
        s.client(protocol, password="wrong").ping()
    with pytest.raises(redis.AuthenticationError):
        s.client(protocol).get("k")


def test_hello_auth(tern_factory):
    # Redis 7.2 wording ("HELLO <proto> AUTH"); Redis 7.0 said "HELLO AUTH".
    s = tern_factory("--requirepass", PW)
    with s.raw() as raw:
        assert raw.cmd("HELLO", "3") == b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"
        assert raw.cmd("HELLO", "3", "AUTH", "default", "bad") == (
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        )
        assert raw.cmd("HELLO", "3", "AUTH", "default", PW).startswith(b"%7\r\n")
        assert raw.cmd("PING") == b"+PONG\r\n"


def test_reset(tern):
    c = tern.client(2, db=3)
    assert c.set("k", "in3")
    assert c.execute_command("RESET") == "RESET"
    # redis-py re-selects its db only on reconnect; the server side is back to db 0
    assert c.get("k") is None
    with tern.raw() as raw:
        raw.cmd("HELLO", "3", "SETNAME", "n1")
        raw.cmd("SELECT", "3")
        assert raw.cmd("GET", "k") == b"$3\r\nin3\r\n"
        assert raw.cmd("RESET") == b"+RESET\r\n"
        # RESP2 again, db 0 again, no name
        assert raw.cmd("GET", "k") == b"$-1\r\n"
        assert raw.cmd("HELLO").startswith(b"*14\r\n")
        assert raw.cmd("CLIENT", "GETNAME") == b"$-1\r\n"


def test_reset_deauthenticates(tern_factory):
    s = tern_factory("--requirepass", PW)
    with s.raw() as raw:
        assert raw.cmd("AUTH", PW) == b"+OK\r\n"
        assert raw.cmd("PING") == b"+PONG\r\n"
        assert raw.cmd("RESET") == b"+RESET\r\n"
        assert raw.cmd("PING") == b"-NOAUTH Authentication required.\r\n"


def test_quit_closes_connection(tern):
    with tern.raw() as raw:
        raw.send(b"PING\r\nQUIT\r\nPING\r\n")
        assert raw.read_until_closed() == b"+PONG\r\n+OK\r\n"
    with tern.raw() as raw:
        raw.send(encode("QUIT"))
        assert raw.read_until_closed() == b"+OK\r\n"


def test_quit_redis_py(r, tern, protocol):
    assert r.execute_command("QUIT") in (True, "OK")
    # the server keeps serving others
    assert tern.client(protocol).ping()

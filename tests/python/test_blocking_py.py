"""Blocking commands through redis-py: waiting, waking from another connection (which may run
on another worker thread), FIFO order among waiters, timeouts, CLIENT UNBLOCK / KILL, and
clean-up when a waiting client goes away. tern runs with --threads 2 so that pusher and waiter
usually live on different threads."""

import threading
import time

import pytest
import redis


@pytest.fixture
def srv(tern_factory):
    return tern_factory("--threads", "2")


def blocked_count(c) -> int:
    return int(c.info("clients")["blocked_clients"])


def wait_blocked(c, n: int, timeout: float = 5.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if blocked_count(c) == n:
            return
        time.sleep(0.005)
    raise AssertionError(f"expected {n} blocked clients, have {blocked_count(c)}")


class Waiter(threading.Thread):
    """Run one blocking call on its own connection and keep its result."""

    def __init__(self, srv, fn, protocol=2):
        super().__init__(daemon=True)
        # One connection, so the id read here is the connection that will block.
        self.conn = srv.client(protocol=protocol, single_connection_client=True)
        self.id = self.conn.client_id()
        self.fn = fn
        self.result = None
        self.error = None

    def run(self):
        try:
            self.result = self.fn(self.conn)
        except Exception as e:  # noqa: BLE001 - the test inspects it
            self.error = e


@pytest.mark.parametrize("protocol", [2, 3])
def test_blpop_woken_by_push_from_other_connection(srv, protocol):
    c = srv.client(protocol=protocol)
    w = Waiter(srv, lambda r: r.blpop(["q1", "q2"], timeout=0), protocol)
    w.start()
    wait_blocked(c, 1)
    assert c.lpush("q2", "x") == 1
    w.join(5)
    assert w.result in (["q2", "x"], ("q2", "x"))
    # The waiter consumed it: the push's reply comes after the serve, as in Redis.
    assert c.exists("q2") == 0
    assert blocked_count(c) == 0


def test_fifo_among_waiters(srv):
    c = srv.client()
    waiters = []
    for _ in range(3):
        w = Waiter(srv, lambda r: r.brpop("fifo", timeout=5))
        w.start()
        waiters.append(w)
        wait_blocked(c, len(waiters))
    c.rpush("fifo", "a", "b", "c")
    for w in waiters:
        w.join(5)
    # BRPOP pops from the tail: the first waiter gets the last element pushed.
    assert [tuple(w.result)[1] for w in waiters] == ["c", "b", "a"]


def test_timeout_with_decimals(srv):
    c = srv.client()
    t = time.time()
    assert c.blpop("nothing", timeout=0.2) is None
    took = time.time() - t
    assert 0.15 <= took < 2.0
    assert blocked_count(c) == 0


def test_negative_and_bad_timeouts(srv):
    c = srv.client()
    with pytest.raises(redis.ResponseError, match="timeout is negative"):
        c.execute_command("BLPOP", "k", "-1")
    with pytest.raises(redis.ResponseError, match="timeout is not a float or out of range"):
        c.execute_command("BLPOP", "k", "abc")


def test_blmove_chain(srv):
    c = srv.client()
    a = Waiter(srv, lambda r: r.blmove("l1", "l2", 5, "RIGHT", "LEFT"))
    a.start()
    wait_blocked(c, 1)
    b = Waiter(srv, lambda r: r.blmove("l2", "l3", 5, "RIGHT", "LEFT"))
    b.start()
    wait_blocked(c, 2)
    c.rpush("l1", "v")
    a.join(5)
    b.join(5)
    assert a.result == "v" and b.result == "v"
    assert c.lrange("l3", 0, -1) == ["v"]
    assert c.exists("l1", "l2") == 0


def test_wrong_type_keeps_waiting_then_served(srv):
    c = srv.client()
    w = Waiter(srv, lambda r: r.blpop("k", timeout=5))
    w.start()
    wait_blocked(c, 1)
    c.set("k", "string")  # wrong type: the waiter stays blocked
    time.sleep(0.1)
    assert blocked_count(c) == 1
    c.delete("k")
    c.rpush("k", "x")
    w.join(5)
    assert tuple(w.result) == ("k", "x")


def test_client_unblock_timeout_and_error(srv):
    c = srv.client()
    w = Waiter(srv, lambda r: r.blpop("u", timeout=0))
    w.start()
    wait_blocked(c, 1)
    assert c.client_unblock(w.id) is True
    w.join(5)
    assert w.result is None and w.error is None
    w2 = Waiter(srv, lambda r: r.blpop("u", timeout=0))
    w2.start()
    wait_blocked(c, 1)
    assert c.client_unblock(w2.id, error=True) is True
    w2.join(5)
    assert isinstance(w2.error, redis.ResponseError)
    assert "client unblocked via CLIENT UNBLOCK" in str(w2.error)
    assert c.client_unblock(999999) is False


def test_killed_and_disconnected_waiters_leave(srv):
    c = srv.client()
    w = Waiter(srv, lambda r: r.blpop("gone", timeout=0))
    w.start()
    wait_blocked(c, 1)
    c.client_kill_filter(_id=w.id)
    w.join(5)
    wait_blocked(c, 0)
    # A raw client that blocks and then simply closes its socket.
    raw = srv.raw()
    raw.send(b"BLPOP gone 0\r\n")
    wait_blocked(c, 1)
    raw.close()
    wait_blocked(c, 0)
    # Nothing was consumed by the departed clients.
    c.rpush("gone", "x")
    assert c.lrange("gone", 0, -1) == ["x"]


def test_pipeline_after_blocking_command_runs_after_wake(srv):
    c = srv.client()
    raw = srv.raw()
    raw.send(b"BLPOP p 0\r\nPING\r\n")
    wait_blocked(c, 1)
    c.rpush("p", "v")
    assert raw.read_replies(2) == [b"*2\r\n$1\r\np\r\n$1\r\nv\r\n", b"+PONG\r\n"]


def test_bzpopmin_and_xread_block(srv):
    c = srv.client()
    z = Waiter(srv, lambda r: r.bzpopmin("zs", timeout=5))
    z.start()
    x = Waiter(srv, lambda r: r.xread({"st": "$"}, block=5000))
    x.start()
    wait_blocked(c, 2)
    c.zadd("zs", {"m": 1.5})
    c.xadd("st", {"f": "v"}, id="1-1")
    z.join(5)
    x.join(5)
    assert tuple(z.result) == ("zs", "m", 1.5)
    assert x.result == [["st", [("1-1", {"f": "v"})]]] or x.result == {
        "st": [[("1-1", {"f": "v"})]]
    }

"""MULTI/EXEC and WATCH through redis-py's own transaction API, RESP2 and RESP3."""

import threading

import pytest
import redis


def test_pipeline_transaction(r):
    with r.pipeline(transaction=True) as p:
        p.set("a", 1).incr("a").lpush("l", "x", "y").lrange("l", 0, -1)
        assert p.execute() == [True, 2, 2, ["y", "x"]]


def test_runtime_error_does_not_abort_the_rest(r):
    r.set("s", "text")
    with r.pipeline(transaction=True) as p:
        p.incr("s").set("after", "ok").get("after")
        res = p.execute(raise_on_error=False)
    assert isinstance(res[0], redis.ResponseError)
    assert res[1:] == [True, "ok"]


def test_queue_time_error_aborts(r):
    with r.pipeline(transaction=True) as p:
        p.set("k", 1)
        p.execute_command("SET", "k")  # wrong arity: rejected while queueing
        # redis-py reports the queue-time error (EXEC answered EXECABORT).
        with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
            p.execute()
    assert r.get("k") is None


def test_watch_retry_with_transaction_helper(tern):
    c = tern.client()
    other = tern.client()
    c.set("balance", 100)
    attempts = []

    def spend(pipe):
        attempts.append(1)
        bal = int(pipe.get("balance"))
        if len(attempts) == 1:
            other.incrby("balance", 50)  # a concurrent change: the first EXEC must abort
        pipe.multi()
        pipe.set("balance", bal - 30)

    c.transaction(spend, "balance")
    assert len(attempts) == 2
    assert c.get("balance") == "120"


def test_watch_error_on_abort(r):
    r.set("w", 1)
    with r.pipeline() as p:
        p.watch("w")
        r.set("w", 2)  # another write through the plain client
        p.multi()
        p.set("w", 3)
        with pytest.raises(redis.WatchError):
            p.execute()
    assert r.get("w") == "2"


def test_discard_and_errors(tern):
    c = tern.client()
    with pytest.raises(redis.ResponseError, match="^EXEC without MULTI$"):
        c.execute_command("EXEC")
    with pytest.raises(redis.ResponseError, match="^DISCARD without MULTI$"):
        c.execute_command("DISCARD")
    with tern.raw() as raw:
        assert raw.cmd("MULTI") == b"+OK\r\n"
        assert raw.cmd("MULTI") == b"-ERR MULTI calls can not be nested\r\n"
        assert raw.cmd("WATCH", "x") == b"-ERR WATCH inside MULTI is not allowed\r\n"
        assert raw.cmd("SET", "x", "1") == b"+QUEUED\r\n"
        assert raw.cmd("DISCARD") == b"+OK\r\n"
    assert c.get("x") is None


def test_concurrent_transactions_are_atomic(tern_factory):
    s = tern_factory("--threads", "2")
    clients = [s.client() for _ in range(20)]

    def work(c):
        for _ in range(200):
            with c.pipeline(transaction=True) as p:
                n, length = p.incr("counter").rpush("log", "x").execute()
                assert n == length

    threads = [threading.Thread(target=work, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c = s.client()
    assert c.get("counter") == "4000"
    assert c.llen("log") == 4000

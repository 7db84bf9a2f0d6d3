"""Client-side caching through redis-py's own cache (protocol=3, CacheConfig), which turns on
CLIENT TRACKING and drops cached replies when tern's invalidation pushes arrive; plus the
RESP2 redirect pattern (a PubSub on __redis__:invalidate). tern runs with --threads 2 so the
caching client and the writer usually live on different worker threads."""

import time

import pytest
import redis


@pytest.fixture
def srv(tern_factory):
    return tern_factory("--threads", "2")


def test_resp3_invalidation_pushes_reach_redis_py(srv):
    # redis-py's own CacheConfig refuses servers older than 7.4 (tern reports 7.2.6), so this
    # registers a handler for invalidation pushes on its RESP3 parser, as that cache does.
    got = []
    cached = redis.Redis(port=srv.port, protocol=3, decode_responses=True, single_connection_client=True)
    cached.connection._parser.set_invalidation_push_handler(got.append)
    writer = redis.Redis(port=srv.port, decode_responses=True)
    writer.set("foo", "1")
    assert cached.client_tracking_on() == "OK"
    assert cached.get("foo") == "1"
    writer.set("foo", "2")
    deadline = time.time() + 5
    while not got and time.time() < deadline:
        cached.ping()  # the next reply read also reads the pushes queued before it
        time.sleep(0.01)
    assert got == [["invalidate", ["foo"]]]
    writer.flushall()
    got.clear()
    while not got and time.time() < deadline:
        cached.ping()
        time.sleep(0.01)
    assert got == [["invalidate", None]]


def invalidation_listener(srv):
    """A RESP2 client subscribed to __redis__:invalidate, its PubSub and its client id."""
    listener = redis.Redis(port=srv.port, decode_responses=True)
    p = listener.pubsub()
    p.subscribe("__redis__:invalidate")
    assert p.get_message(timeout=2)["type"] == "subscribe"
    redirect_id = next(c["id"] for c in listener.client_list() if c["cmd"] == "subscribe")
    return listener, p, int(redirect_id)


def next_message(p, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = p.get_message(timeout=0.5)
        if m is not None:
            return m
    return None


def test_resp2_redirect_to_pubsub(srv):
    listener, p, redirect_id = invalidation_listener(srv)
    tracker = redis.Redis(port=srv.port, decode_responses=True, single_connection_client=True)
    assert tracker.client_tracking_on(clientid=redirect_id) == "OK"
    assert tracker.client_getredir() == redirect_id
    tracker.get("k")
    listener.set("k", "v")
    m = next_message(p)
    assert m is not None and m["type"] == "message"
    assert m["channel"] == "__redis__:invalidate"
    assert m["data"] == ["k"]


def test_bcast_prefix_through_redis_py(srv):
    listener, p, redirect_id = invalidation_listener(srv)
    tracker = redis.Redis(port=srv.port, decode_responses=True, single_connection_client=True)
    assert tracker.client_tracking_on(clientid=redirect_id, bcast=True, prefix=["user:"]) == "OK"
    raw = tracker.client_trackinginfo()  # a flat RESP2 array: field, value, ...
    info = dict(zip(raw[::2], raw[1::2]))
    assert "bcast" in info["flags"]
    assert info["prefixes"] == ["user:"]
    listener.mset({"user:1": "a", "post:1": "b"})
    m = next_message(p)
    assert m["data"] == ["user:1"]
    assert p.get_message(timeout=0.3) is None

"""Pub/Sub through redis-py's own PubSub API: subscribe/psubscribe/ssubscribe, get_message and
listen, message handlers and run_in_thread, RESP3 (protocol=3) push messages, PUBSUB
introspection, and keyspace notifications as an application would consume them. tern runs
with --threads 2 so publisher and subscriber usually live on different worker threads."""

import threading
import time

import pytest
import redis


@pytest.fixture
def srv(tern_factory):
    return tern_factory("--threads", "2")


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request) -> int:
    return request.param


def next_message(p, timeout: float = 5.0):
    """The next non-confirmation message of a PubSub object."""
    end = time.time() + timeout
    while time.time() < end:
        m = p.get_message(ignore_subscribe_messages=True, timeout=0.2)
        if m is not None:
            return m
    raise AssertionError("no message")


def test_subscribe_confirmations_and_messages(srv, proto):
    r = srv.client(proto)
    p = r.pubsub()
    p.subscribe("a", "b")
    assert p.get_message(timeout=2) == {"type": "subscribe", "pattern": None, "channel": "a", "data": 1}
    assert p.get_message(timeout=2) == {"type": "subscribe", "pattern": None, "channel": "b", "data": 2}
    pub = srv.client(proto)
    assert pub.publish("a", "hello") == 1
    assert pub.publish("nobody", "x") == 0
    assert next_message(p) == {"type": "message", "pattern": None, "channel": "a", "data": "hello"}
    p.unsubscribe("a")
    assert p.get_message(timeout=2) == {"type": "unsubscribe", "pattern": None, "channel": "a", "data": 1}
    assert pub.publish("a", "gone") == 0
    p.close()


def test_patterns_and_counts(srv, proto):
    r = srv.client(proto)
    p = r.pubsub(ignore_subscribe_messages=True)
    p.psubscribe("news.*")
    p.subscribe("news.tech")
    time.sleep(0.05)
    pub = srv.client(proto)
    assert pub.pubsub_numpat() == 1
    assert pub.pubsub_numsub("news.tech", "x") == [("news.tech", 1), ("x", 0)]
    assert pub.pubsub_channels() == ["news.tech"]
    assert pub.publish("news.tech", "m") == 2
    first, second = next_message(p), next_message(p)
    assert first == {"type": "message", "pattern": None, "channel": "news.tech", "data": "m"}
    assert second == {"type": "pmessage", "pattern": "news.*", "channel": "news.tech", "data": "m"}
    p.close()


def test_handlers_and_run_in_thread(srv, proto):
    r = srv.client(proto)
    got = []
    done = threading.Event()

    def handler(msg):
        got.append((msg["channel"], msg["data"]))
        if len(got) == 200:
            done.set()

    p = r.pubsub(ignore_subscribe_messages=True)
    p.psubscribe(**{"job.*": handler})
    t = p.run_in_thread(sleep_time=0.01, daemon=True)
    pub = srv.client(proto)
    deadline = time.time() + 5
    while pub.pubsub_numpat() != 1 and time.time() < deadline:
        time.sleep(0.01)
    for i in range(200):
        assert pub.publish(f"job.{i % 3}", str(i)) == 1
    assert done.wait(5)
    t.stop()
    t.join(timeout=2)
    # One publisher: its messages arrive in order.
    assert [int(d) for _, d in got] == list(range(200))
    assert got[0] == ("job.0", "0")


def test_listen_and_sharded(srv, proto):
    r = srv.client(proto)
    p = r.pubsub()
    p.ssubscribe("orders")
    pub = srv.client(proto)
    deadline = time.time() + 5
    while pub.pubsub_shardnumsub("orders") != [("orders", 1)] and time.time() < deadline:
        time.sleep(0.01)
    assert pub.spublish("orders", "o1") == 1
    assert pub.publish("orders", "not for shard subscribers") == 0
    assert pub.execute_command("PUBSUB", "SHARDCHANNELS") == ["orders"]
    msgs = []
    for m in p.listen():
        msgs.append(m)
        if m["type"] == "smessage":
            break
    assert msgs[0]["type"] == "ssubscribe"
    assert msgs[-1]["channel"] == "orders" and msgs[-1]["data"] == "o1"
    p.close()


def test_resp2_subscribed_mode_rejects_commands(srv):
    with srv.raw() as c:
        c.cmd("SUBSCRIBE", "x")
        assert c.cmd("GET", "k") == (
            b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET"
            b" are allowed in this context\r\n"
        )
        assert c.cmd("PING") == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
        assert c.cmd("RESET") == b"+RESET\r\n"
        assert c.cmd("GET", "k") == b"$-1\r\n"


def test_resp3_client_runs_commands_while_subscribed(srv):
    with srv.raw() as c:
        c.cmd("HELLO", "3")
        assert c.cmd("SUBSCRIBE", "c") == b">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"
        assert c.cmd("SET", "k", "v") == b"+OK\r\n"
        assert c.cmd("PING") == b"+PONG\r\n"
        assert srv.client(3).publish("c", "x") == 1
        assert c.read_reply() == b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nx\r\n"


def test_keyspace_notifications(srv, proto):
    r = srv.client(proto)
    r.config_set("notify-keyspace-events", "KEA")
    assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKE"}
    p = r.pubsub(ignore_subscribe_messages=True)
    p.psubscribe("__keyspace@0__:*")
    time.sleep(0.05)
    w = srv.client(proto)
    w.set("k", "v")
    w.lpush("l", "a")
    w.hset("h", "f", "v")
    w.expire("k", 100)
    w.delete("k")
    events = [(m["channel"], m["data"]) for m in (next_message(p) for _ in range(5))]
    assert events == [
        ("__keyspace@0__:k", "set"),
        ("__keyspace@0__:l", "lpush"),
        ("__keyspace@0__:h", "hset"),
        ("__keyspace@0__:k", "expire"),
        ("__keyspace@0__:k", "del"),
    ]
    p.close()


def test_expired_events(srv, proto):
    r = srv.client(proto)
    r.config_set("notify-keyspace-events", "Ex")
    p = r.pubsub(ignore_subscribe_messages=True)
    p.subscribe("__keyevent@0__:expired")
    time.sleep(0.05)
    r.set("soon", "1", px=30)
    m = next_message(p, timeout=3)
    assert (m["channel"], m["data"]) == ("__keyevent@0__:expired", "soon")
    p.close()


def test_keymiss_events(srv, proto):
    """Class `m` (never part of `A`): a read that finds no key, missing or expired, publishes
    `keymiss` on both channels; hits, writes to missing keys and OBJECT lookups do not."""
    r = srv.client(proto)
    r.config_set("notify-keyspace-events", "KEAm")
    assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKEm"}
    r.config_set("notify-keyspace-events", "KEm")
    p = r.pubsub(ignore_subscribe_messages=True)
    p.subscribe("__keyevent@0__:keymiss")
    p.psubscribe("__keyspace@0__:gone*")
    time.sleep(0.05)
    w = srv.client(proto)
    w.set("present", "1")
    assert w.get("present") == "1"
    assert w.get("gone1") is None
    assert w.mget("gone2", "present", "gone3") == [None, "1", None]
    assert w.exists("gone4", "present") == 1
    w.set("gone5", "x", px=1)
    time.sleep(0.02)
    assert w.strlen("gone5") == 0
    assert w.incr("gone-counter") == 1
    w.lpush("gone-list", "a")
    assert w.object("encoding", "gone6") is None
    pipe = w.pipeline(transaction=True)
    pipe.hget("gone7", "f")
    pipe.zscore("gone8", "m")
    assert pipe.execute() == [None, None]
    assert w.publish("__keyevent@0__:keymiss", "END") == 1
    got = []
    while True:
        m = next_message(p)
        if m["data"] == "END":
            break
        got.append((m["type"], m["channel"], m["data"]))
    want = []
    for k in ["gone1", "gone2", "gone3", "gone4", "gone5", "gone7", "gone8"]:
        want.append(("pmessage", f"__keyspace@0__:{k}", "keymiss"))
        want.append(("message", "__keyevent@0__:keymiss", k))
    assert got == want
    p.close()


def test_keymiss_of_scripts_and_sort(srv, proto):
    r = srv.client(proto)
    r.config_set("notify-keyspace-events", "Em")
    p = r.pubsub(ignore_subscribe_messages=True)
    p.subscribe("__keyevent@0__:keymiss", "__keyevent@3__:keymiss")
    time.sleep(0.05)
    w = srv.client(proto)
    w.rpush("ids", 2, 1)
    w.set("weight_1", 5)
    # SORT reads the key, then one weight per element, then one GET key per element.
    assert w.sort("ids", by="weight_*", get="name_*") == [None, None]
    assert w.eval("return redis.call('exists', KEYS[1], KEYS[2])", 2, "a", "b") == 0
    w3 = srv.client(proto, db=3)
    assert w3.get("elsewhere") is None
    assert w.publish("__keyevent@0__:keymiss", "END") == 1
    got = []
    while True:
        m = next_message(p)
        if m["data"] == "END":
            break
        got.append((m["channel"], m["data"]))
    assert got == [
        ("__keyevent@0__:keymiss", "weight_2"),
        ("__keyevent@0__:keymiss", "name_2"),
        ("__keyevent@0__:keymiss", "name_1"),
        ("__keyevent@0__:keymiss", "a"),
        ("__keyevent@0__:keymiss", "b"),
        ("__keyevent@3__:keymiss", "elsewhere"),
    ]
    p.close()


def test_client_list_shows_subscriptions(srv):
    r = srv.client(2)
    p = r.pubsub()
    p.subscribe("a", "b")
    p.psubscribe("c*")
    p.ssubscribe("s")
    time.sleep(0.1)
    admin = srv.client(2)
    subs = admin.client_list(_type="pubsub")
    assert len(subs) == 1
    c = subs[0]
    assert (c["sub"], c["psub"], c["ssub"], c["flags"]) == ("2", "1", "1", "P")
    info = admin.info("stats")
    assert (info["pubsub_channels"], info["pubsub_patterns"], info["pubsubshard_channels"]) == (2, 1, 1)
    p.close()
    deadline = time.time() + 5
    while admin.info("stats")["pubsub_channels"] and time.time() < deadline:
        time.sleep(0.01)
    assert admin.info("stats")["pubsub_channels"] == 0

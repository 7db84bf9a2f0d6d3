"""Redis Cluster as a user drives it: nodes created, checked, resharded, rebalanced, grown and
shrunk with ``redis-cli --cluster``; redis-py's ``RedisCluster`` reading and writing through it
all; a master killed and its replica promoted; sharded pub/sub; the one-slot rules of
multi-key commands, MULTI/EXEC and scripts; and mixed clusters of redis-server and tern nodes
moving keys both ways.

Every test passes against real Redis (``TERN_PY_TARGET=redis``: all nodes are redis-server),
so a failure against tern is tern's. See cluster_harness.py for the binaries and ports used.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time

import pytest
import redis
from redis.cluster import RedisCluster

from conftest import RawConn, encode
from cluster_harness import (
    Cluster,
    Node,
    cli,
    cluster_port,
    key_in_slots,
    key_slot,
    redis_version,
    target_is_redis,
    wait_for,
)

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def clusters():
    """Cluster objects made by a test are stopped after it; a tern node that died on its own
    fails the test."""
    made: list[Cluster] = []
    yield made
    dead = []
    for cl in made:
        dead += cl.close()
    if dead:
        pytest.fail("a node crashed during the test:\n" + "\n".join(dead))


@pytest.fixture(scope="module")
def six():
    """Six tern nodes made into 3 masters + 3 replicas by ``--cluster create``, shared by the
    tests below that only read the cluster's shape (creating one costs seconds)."""
    cl = Cluster.create(["tern"] * 6, replicas=1)
    yield cl
    dead = cl.close()
    assert not dead, "\n".join(dead)


# ---- creation and the client ----------------------------------------------------------------


def test_create_six_nodes_and_check(six):
    six.check()
    view = six.entry.nodes()
    masters = [e for e in view if "master" in e["flags"]]
    replicas = [e for e in view if "slave" in e["flags"]]
    assert len(masters) == 3 and len(replicas) == 3, view
    assert sorted(s for e in masters for s in e["slots"]) == list(range(16384))
    master_ids = {e["id"] for e in masters}
    assert {e["master"] for e in replicas} == master_ids, "each master has one replica"
    info = six.entry.info()
    assert info["cluster_state"] == "ok"
    assert info["cluster_slots_assigned"] == "16384"
    assert info["cluster_known_nodes"] == "6"
    assert info["cluster_size"] == "3"
    # Each replica follows its master over replication too.
    for e in replicas:
        role = six.node_at(e["addr"]).c.execute_command("ROLE")
        assert role[0] == "slave"


def test_redis_cluster_client_10k_keys(six):
    rc = six.client()
    try:
        pipe = rc.pipeline()
        for i in range(10_000):
            pipe.set(f"user:{i}", f"v{i}")
        assert all(pipe.execute())
        pipe = rc.pipeline()
        for i in range(10_000):
            pipe.get(f"user:{i}")
        assert pipe.execute() == [f"v{i}" for i in range(10_000)]
        # The keys are spread over the three masters, each holding only its own slots.
        total = 0
        for e in six.masters():
            n = six.node_at(e["addr"])
            size = n.c.dbsize()
            assert 2500 < size < 4200, (n, size)
            total += size
            slot = e["slots"][0]
            owned = n.c.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
            assert owned == sum(1 for i in range(10_000) if key_slot(f"user:{i}") == slot)
        assert total == 10_000
    finally:
        rc.close()


def test_moved_redirection(six):
    key = "moved-key"
    owner = six.master_of_slot(key_slot(key))
    other = next(six.node_at(e["addr"]) for e in six.masters() if e["addr"] != owner.addr)
    with pytest.raises(redis.ResponseError) as e:
        other.c.execute_command("SET", key, "1")
    assert str(e.value) == f"MOVED {key_slot(key)} {owner.addr}"
    assert owner.c.execute_command("SET", key, "1") is True
    # A replica redirects reads to its master unless READONLY was sent.
    replica = six.replicas_of(owner)[0]
    wait_for(lambda: replica.c.execute_command("DBSIZE") >= 1, 10, what="replication")
    with pytest.raises(redis.ResponseError, match=f"MOVED {key_slot(key)} {owner.addr}"):
        replica.c.execute_command("GET", key)
    conn = redis.Redis(port=replica.port, decode_responses=True, single_connection_client=True)
    try:
        assert conn.execute_command("READONLY") is True
        assert conn.get(key) == "1"
        assert conn.execute_command("READWRITE") is True
        with pytest.raises(redis.ResponseError, match=f"MOVED {key_slot(key)} {owner.addr}"):
            conn.get(key)
    finally:
        conn.close()


def test_write_on_replica_is_moved(six):
    # A client with a stale slot map (after a failover, say) must be told where the master is.
    key = "moved-write"
    owner = six.master_of_slot(key_slot(key))
    replica = six.replicas_of(owner)[0]
    moved = f"-MOVED {key_slot(key)} {owner.addr}\r\n".encode()
    with RawConn(replica.port) as raw:
        assert raw.cmd("SET", key, "2") == moved
        # READONLY allows reads only: a write is still redirected.
        assert raw.cmd("READONLY") == b"+OK\r\n"
        assert raw.cmd("SET", key, "2") == moved


def test_scripts_on_a_readonly_replica_follow_their_declared_flags(six):
    # Redis weighs a script by the flags it declares: with a shebang and without `no-writes`
    # it is a write, redirected to the master even for a READONLY client; a `no-writes` script
    # and a script without a shebang (EVAL's own flags) read on the replica.
    key = "script-on-replica"
    owner = six.master_of_slot(key_slot(key))
    owner.c.set(key, "v")
    replica = six.replicas_of(owner)[0]
    moved = f"-MOVED {key_slot(key)} {owner.addr}\r\n".encode()
    writes = "#!lua\nreturn redis.call('del', KEYS[1])"
    reads = "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])"
    plain = "return redis.call('get', KEYS[1])"
    with RawConn(replica.port) as raw:
        assert raw.cmd("READONLY") == b"+OK\r\n"
        wait_for(lambda: raw.cmd("GET", key) == b"$1\r\nv\r\n", 10, what="the key replicated")
        assert raw.cmd("EVAL", writes, "1", key) == moved
        assert raw.cmd("EVAL", reads, "1", key) == b"$1\r\nv\r\n"
        assert raw.cmd("EVAL", plain, "1", key) == b"$1\r\nv\r\n"
        raw.cmd("SCRIPT", "LOAD", writes)
        sha = raw.cmd("SCRIPT", "LOAD", writes).split(b"\r\n")[1].decode()
        assert raw.cmd("EVALSHA", sha, "1", key) == moved


def test_crossslot_and_hash_tags(six):
    # Two keys in different slots served by the same master: the multi-key command is refused
    # for the slots, not redirected.
    m = six.masters()[0]
    node = six.node_at(m["addr"])
    slots = set(m["slots"])
    a, b = (k for k, _ in zip(key_in_slots(slots, "x"), range(2)))
    assert key_slot(a) != key_slot(b)
    for cmd in (("MSET", a, "1", b, "2"), ("MGET", a, b), ("DEL", a, b), ("SUNIONSTORE", a, a, b)):
        with pytest.raises(redis.ResponseError) as e:
            node.c.execute_command(*cmd)
        assert str(e.value) == "CROSSSLOT Keys in request don't hash to the same slot", cmd
    # The same names under one {hash tag} share a slot and go through as one command.
    rc = six.client()
    try:
        assert rc.execute_command("MSET", "{acct:7}.a", "1", "{acct:7}.b", "2") is True
        assert rc.execute_command("MGET", "{acct:7}.a", "{acct:7}.b") == ["1", "2"]
        assert key_slot("{acct:7}.a") == key_slot("acct:7")
        assert rc.keyslot("{acct:7}.b") == key_slot("acct:7")
        # The server's own idea of the slot agrees with the client's.
        assert node.c.execute_command("CLUSTER", "KEYSLOT", "{acct:7}.zzz") == key_slot("acct:7")
    finally:
        rc.close()


def test_multi_exec_limited_to_one_slot(six):
    m = six.masters()[0]
    node = six.node_at(m["addr"])
    a, b = (k for k, _ in zip(key_in_slots(set(m["slots"]), "tx"), range(2)))
    far = next(key_in_slots(set(six.masters()[1]["slots"]), "tx"))
    far_owner = six.node_at(six.masters()[1]["addr"])
    crossslot = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    with RawConn(node.port) as conn:
        # One slot (hash tag): the transaction runs.
        tag = "{%s}" % a
        assert conn.cmd("MULTI") == b"+OK\r\n"
        assert conn.cmd("SET", tag + "1", "a") == b"+QUEUED\r\n"
        assert conn.cmd("INCR", tag + "2") == b"+QUEUED\r\n"
        assert conn.cmd("EXEC") == b"*2\r\n+OK\r\n:1\r\n"
        # Two slots of this node: each command is queued, EXEC refuses the whole transaction.
        assert conn.cmd("MULTI") == b"+OK\r\n"
        assert conn.cmd("SET", a, "1") == b"+QUEUED\r\n"
        assert conn.cmd("SET", b, "2") == b"+QUEUED\r\n"
        assert conn.cmd("EXEC") == crossslot
        assert conn.cmd("EXISTS", a) == b":0\r\n", "nothing of the refused transaction ran"
        assert conn.cmd("EXISTS", b) == b":0\r\n"
        # A key of another master: redirected when queued, and EXEC is aborted.
        assert conn.cmd("MULTI") == b"+OK\r\n"
        moved = f"-MOVED {key_slot(far)} {far_owner.addr}\r\n".encode()
        assert conn.cmd("SET", far, "1") == moved
        assert conn.cmd("EXEC") == (
            b"-EXECABORT Transaction discarded because of previous errors.\r\n"
        )


def test_scripts_limited_to_one_slot(six):
    m = six.masters()[0]
    node = six.node_at(m["addr"])
    a, b = (k for k, _ in zip(key_in_slots(set(m["slots"]), "lua"), range(2)))
    far = next(key_in_slots(set(six.masters()[1]["slots"]), "lua"))
    both = "return {redis.call('incr', KEYS[1]), redis.call('incr', KEYS[2])}"
    with pytest.raises(redis.ResponseError) as e:
        node.c.eval(both, 2, a, b)
    assert str(e.value) == "CROSSSLOT Keys in request don't hash to the same slot"
    tag = "{%s}" % a
    assert node.c.eval(both, 2, tag + "x", tag + "y") == [1, 1]
    # A script that declares its flags (shebang) may touch only the declared keys' slot...
    with pytest.raises(
        redis.ResponseError, match="^Script attempted to access keys that do not hash to the same slot"
    ):
        node.c.eval("#!lua\nreturn redis.call('get', ARGV[1])", 1, a, b)
    # ...while a legacy script may use other slots of this node, but never another node's key.
    assert node.c.eval("return redis.call('get', ARGV[1])", 1, a, b) is None
    with pytest.raises(
        redis.ResponseError, match="^Script attempted to access a non local key in a cluster node"
    ):
        node.c.eval("return redis.call('get', ARGV[1])", 1, a, far)
    # Through the cluster client a one-slot script runs on the slot's master.
    rc = six.client()
    try:
        assert rc.eval("return redis.call('set', KEYS[1], ARGV[1])", 1, "{s}k", "v") == "OK"
        assert rc.get("{s}k") == "v"
    finally:
        rc.close()


def test_sharded_pubsub_replica_subscriber(six):
    channel = "news{shard}"
    master = six.master_of_slot(key_slot(channel))
    replica = six.replicas_of(master)[0]
    sub = redis.Redis(port=replica.port, decode_responses=True).pubsub()
    try:
        sub.ssubscribe(channel)
        msg = sub.get_sharded_message(timeout=5)
        assert msg["type"] == "ssubscribe" and msg["channel"] == channel
        # A channel of another master's slot is redirected.
        far = next(key_in_slots(set(six.masters(replica)[0]["slots"]) - {key_slot(channel)}, "ch"))
        if six.master_of_slot(key_slot(far)) is master:
            far = next(
                key_in_slots(
                    {s for e in six.masters() if e["addr"] != master.addr for s in e["slots"]}, "ch"
                )
            )
        with pytest.raises(redis.ResponseError, match=r"^MOVED "):
            master.c.execute_command("SPUBLISH", far, "x")
        # SPUBLISH on the master reaches the replica's subscriber over the cluster bus; the
        # reply counts the master's own subscribers only.
        assert master.c.execute_command("SPUBLISH", channel, "hello") == 0
        msg = wait_for(lambda: sub.get_sharded_message(timeout=0.2), 10, what="smessage")
        assert msg == {"type": "smessage", "pattern": None, "channel": channel, "data": "hello"}
        # A subscriber on the master counts.
        sub2 = redis.Redis(port=master.port, decode_responses=True).pubsub()
        try:
            sub2.ssubscribe(channel)
            assert sub2.get_sharded_message(timeout=5)["type"] == "ssubscribe"
            assert master.c.execute_command("SPUBLISH", channel, "again") == 1
            got = wait_for(lambda: sub.get_sharded_message(timeout=0.2), 10, what="smessage")
            assert got["data"] == "again"
        finally:
            sub2.close()
    finally:
        sub.close()


def push3(word: str, channel: str, n: int) -> bytes:
    """A RESP2 (un)subscribe push: [word, channel, count]."""
    return b"*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n:%d\r\n" % (
        len(word), word.encode(), len(channel), channel.encode(), n,
    )  # fmt: skip


def test_moving_a_slot_unsubscribes_its_shard_channels_on_master_and_replica(clusters):
    # Redis drops the shard channels of a slot that leaves a node's view (SETSLOT NODE, an
    # UPDATE from gossip, DELSLOTS): each subscriber gets `sunsubscribe` with its count left.
    cl = Cluster.create(["tern"] * 6, replicas=1)
    clusters.append(cl)
    channel = "ch3"
    slot = key_slot(channel)
    src = cl.master_of_slot(slot)
    dst = next(n for n in cl.live() if n.addr in {e["addr"] for e in cl.masters()} and n is not src)
    replica = cl.replicas_of(src)[0]
    src_slots = set(next(e for e in cl.masters() if e["addr"] == src.addr)["slots"])
    kept = next(key_in_slots(src_slots - {slot}, "kept"))
    with RawConn(src.port) as on_master, RawConn(replica.port) as on_replica:
        assert on_master.cmd("SSUBSCRIBE", channel) == push3("ssubscribe", channel, 1)
        assert on_master.cmd("SSUBSCRIBE", kept) == push3("ssubscribe", kept, 2)
        assert on_replica.cmd("SSUBSCRIBE", channel) == push3("ssubscribe", channel, 1)
        src_id, dst_id = src.myid(), dst.myid()
        assert src.c.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
        assert dst.c.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
        assert dst.c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
        assert src.c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
        assert on_master.read_reply() == push3("sunsubscribe", channel, 1)
        # The other channel still delivers.
        assert src.c.execute_command("SPUBLISH", kept, "hi") == 1
        assert on_master.read_reply() == b"*3\r\n$8\r\nsmessage\r\n$%d\r\n%s\r\n$2\r\nhi\r\n" % (
            len(kept), kept.encode(),
        )  # fmt: skip
        # The replica learns the move from gossip; its subscriber, left with none, is out of
        # subscribed mode (a RESP2 client may run any command again).
        on_replica.sock.settimeout(20)
        assert on_replica.read_reply() == push3("sunsubscribe", channel, 0)
        assert on_replica.cmd("ECHO", "back") == b"$4\r\nback\r\n"
        assert src.c.execute_command("PUBSUB", "SHARDCHANNELS") == [kept]
        assert replica.c.execute_command("PUBSUB", "SHARDCHANNELS") == []


# ---- resharding under load ------------------------------------------------------------------


class Load(threading.Thread):
    """A RedisCluster client writing and reading keys in a loop; every error it sees is kept."""

    def __init__(self, cl: Cluster, keys: list[str]):
        super().__init__(daemon=True)
        self.rc = cl.client()
        self.keys = keys
        self.values: dict[str, str] = {}
        self.errors: list[str] = []
        self.ops = 0
        self.stop_event = threading.Event()

    def run(self):
        rnd = random.Random(7)
        n = 0
        while not self.stop_event.is_set():
            k = self.keys[rnd.randrange(len(self.keys))]
            n += 1
            try:
                if n % 2:
                    v = f"{k}:{n}"
                    self.rc.set(k, v)
                    self.values[k] = v
                else:
                    got = self.rc.get(k)
                    if got != self.values.get(k, k):
                        self.errors.append(f"GET {k} -> {got!r}, wrote {self.values.get(k)!r}")
            except Exception as e:  # noqa: BLE001 - the client must surface nothing
                self.errors.append(f"{type(e).__name__}: {e}")
            self.ops += 1

    def finish(self) -> None:
        self.stop_event.set()
        self.join(30)
        self.rc.close()


def fill(cl: Cluster, keys: list[str]) -> None:
    rc = cl.client()
    try:
        pipe = rc.pipeline()
        for k in keys:
            pipe.set(k, k)
        pipe.execute()
    finally:
        rc.close()


def verify(cl: Cluster, expected: dict[str, str]) -> None:
    rc = cl.client()
    try:
        pipe = rc.pipeline()
        keys = list(expected)
        for k in keys:
            pipe.get(k)
        got = pipe.execute()
        bad = [(k, g, expected[k]) for k, g in zip(keys, got) if g != expected[k]]
        assert not bad, f"{len(bad)} keys differ, e.g. {bad[:5]}"
    finally:
        rc.close()


def test_reshard_and_rebalance_under_load(clusters):
    cl = Cluster.create(["tern"] * 3)
    clusters.append(cl)
    keys = [f"load:{i}" for i in range(10_000)]
    fill(cl, keys)
    load = Load(cl, keys)
    load.start()
    try:
        m = cl.masters()
        src, dst = cl.node_at(m[0]["addr"]), cl.node_at(m[1]["addr"])
        moved = set(m[0]["slots"][:600])
        in_moved = sum(1 for k in keys if key_slot(k) in moved)
        t0 = time.monotonic()
        cl.reshard(src, dst, 600)
        reshard_s = time.monotonic() - t0
        cl.wait_ok()
        cl.check()
        after = {e["addr"]: set(e["slots"]) for e in cl.masters()}
        assert moved <= after[dst.addr] and not moved & after[src.addr]
        both = set(m[0]["slots"]) | set(m[1]["slots"])
        assert src.c.dbsize() + dst.c.dbsize() == sum(1 for k in keys if key_slot(k) in both)
        ops_during_reshard = load.ops
        # Rebalance evens the masters out again (the 600 slots moved are past its threshold).
        out = cli("rebalance", cl.entry.addr, timeout=180)
        assert "Moving" in out, out
        cl.wait_ok()
        cl.check()
        counts = sorted(len(e["slots"]) for e in cl.masters())
        assert counts[-1] - counts[0] <= 2, counts
    finally:
        load.finish()
    print(f"reshard of 600 slots ({in_moved} keys) took {reshard_s:.2f}s; load ran {load.ops} ops "
          f"({ops_during_reshard} by the end of the reshard)")
    assert load.ops > 100, "the load made progress"
    assert not load.errors, f"{len(load.errors)} errors surfaced, e.g. {load.errors[:5]}"
    expected = {k: load.values.get(k, k) for k in keys}
    verify(cl, expected)


def test_add_node_master_and_replica_then_del_node(clusters):
    cl = Cluster.create(["tern"] * 3)
    clusters.append(cl)
    keys = [f"grow:{i}" for i in range(3000)]
    fill(cl, keys)
    new_master = cl.add("tern")
    cl.add_node(new_master)
    new_replica = cl.add("tern")
    cl.add_node(new_replica, replica_of=new_master)
    wait_for(
        lambda: new_replica.c.execute_command("ROLE")[0] == "slave"
        and new_replica.c.info("replication").get("master_link_status") == "up",
        30,
        what="the added replica to sync with its master",
    )
    view = {e["id"]: e for e in cl.entry.nodes()}
    assert "master" in view[new_master.myid()]["flags"]
    assert view[new_replica.myid()]["master"] == new_master.myid()
    # Give the new master slots (and their keys) of the first master.
    first = cl.node_at(cl.masters()[0]["addr"])
    cl.reshard(first, new_master, 400)
    cl.wait_ok()
    cl.check()
    owned = set(next(e for e in cl.masters() if e["addr"] == new_master.addr)["slots"])
    assert len(owned) == 400
    assert new_master.c.dbsize() == sum(1 for k in keys if key_slot(k) in owned)
    wait_for(lambda: new_replica.c.dbsize() == new_master.c.dbsize(), 20, what="replica caught up")
    verify(cl, {k: k for k in keys})
    # Remove the replica; then empty the added master and remove it too.
    gone = new_replica.myid()
    out = cli("del-node", cl.entry.addr, gone)
    assert "CLUSTER RESET SOFT" in out, out
    # The removed node was reset: it knows only itself, and the others forgot it.
    assert [e["id"] for e in new_replica.nodes()] == [gone]
    assert new_replica.c.execute_command("ROLE")[0] == "master"
    cl.nodes.remove(new_replica)
    new_replica.stop()
    assert all(gone not in {e["id"] for e in n.nodes()} for n in cl.live())
    # Move its slots back: a master left without slots becomes a replica of the master that
    # took its last ones (cluster-allow-replica-migration, on by default in Redis 7).
    cl.reshard(new_master, first, 400)
    wait_for(
        lambda: new_master.c.execute_command("ROLE")[0] == "slave"
        and next(e for e in first.nodes() if e["addr"] == new_master.addr)["master"]
        == first.myid(),
        30,
        what="the emptied master to become a replica of the one that took its slots",
    )
    cl.wait_ok()
    cl.check()
    cli("del-node", cl.entry.addr, new_master.myid())
    assert len(new_master.nodes()) == 1
    cl.nodes.remove(new_master)
    new_master.stop()
    assert all(len(n.nodes()) == 3 for n in cl.live())
    cl.check()
    verify(cl, {k: k for k in keys})


# ---- blocked clients follow their slot ------------------------------------------------------


def blocked_count(node) -> int:
    return int(node.c.info("clients")["blocked_clients"])


def block_on(node, key: str) -> RawConn:
    """A connection of `node` blocked in ``BRPOP key 0`` (its reply is read by the caller)."""
    conn = RawConn(node.port, timeout=30)
    conn.send(encode("BRPOP", key, "0"))
    wait_for(lambda: blocked_count(node) == 1, 10, step=0.05, what=f"a client blocked on {node}")
    return conn


def test_blocked_client_follows_its_slot(clusters):
    """A client blocked on a key is told where the key went once its slot leaves the node
    (MOVED), that the slot has no owner, or that the cluster is down: a write that could serve
    it will never come to this node."""
    cl = Cluster.create(["tern"] * 3)
    clusters.append(cl)
    m = cl.masters()
    src, dst = cl.node_at(m[-1]["addr"]), cl.node_at(m[0]["addr"])
    # redis-cli reshard moves the source's first slots.
    first = min(m[-1]["slots"])
    key = next(key_in_slots({first}, "blocked"))
    with block_on(src, key) as blocked:
        cl.reshard(src, dst, 1)
        t0 = time.monotonic()
        reply = blocked.read_reply()
        waited = time.monotonic() - t0
    assert first in next(e for e in src.nodes() if e["addr"] == dst.addr)["slots"]
    assert reply == f"-MOVED {first} {dst.addr}\r\n".encode()
    assert waited < 2, f"the MOVED came {waited:.2f}s after the reshard"
    cl.wait_ok()
    assert [blocked_count(n) for n in cl.nodes] == [0, 0, 0]

    # A slot the node stops serving, the cluster needing every slot: the cluster is down.
    other = next(s for s in m[0]["slots"] if s != first)
    key2 = next(key_in_slots({other}, "blocked"))
    with block_on(dst, key2) as blocked:
        assert dst.c.execute_command("CLUSTER", "DELSLOTS", other) == "OK"
        reply = blocked.read_reply()
    assert reply == b"-CLUSTERDOWN The cluster is down\r\n"
    assert dst.c.execute_command("CLUSTER", "ADDSLOTS", other) == "OK"
    wait_for(lambda: dst.info()["cluster_state"] == "ok", 10, what="the cluster ok again")

    # The same without cluster-require-full-coverage: the slot alone is not served.
    assert dst.c.config_set("cluster-require-full-coverage", "no")
    with block_on(dst, key2) as blocked:
        assert dst.c.execute_command("CLUSTER", "DELSLOTS", other) == "OK"
        reply = blocked.read_reply()
    assert reply == b"-CLUSTERDOWN Hash slot not served\r\n"
    assert blocked_count(dst) == 0


# ---- failover -------------------------------------------------------------------------------


def test_kill9_master_replica_promoted(clusters):
    timeout_ms = 2000
    cl = Cluster.create(["tern"] * 6, replicas=1, node_timeout=timeout_ms)
    clusters.append(cl)
    keys = [f"fo:{i}" for i in range(2000)]
    fill(cl, keys)
    victim = cl.master_of_slot(key_slot("fo:0"))
    replica = cl.replicas_of(victim)[0]
    assert victim.c.execute_command("WAIT", 1, 5000) == 1
    wait_for(lambda: replica.c.dbsize() == victim.c.dbsize(), 20, what="replica in sync")
    rc = cl.client()
    try:
        assert rc.get("fo:0") == "fo:0"
        victim.kill9()
        victim.killed = True
        t0 = time.monotonic()
        wait_for(
            lambda: replica.c.execute_command("ROLE")[0] == "master", 60, step=0.05,
            what="the replica to be promoted",
        )  # fmt: skip
        promoted_s = time.monotonic() - t0
        survivors = [n for n in cl.live()]
        wait_for(
            lambda: all(n.info()["cluster_state"] == "ok" for n in survivors),
            30,
            what="cluster_state:ok on every survivor",
        )
        ok_s = time.monotonic() - t0
        print(f"replica promoted {promoted_s:.2f}s after kill -9 (node-timeout {timeout_ms} ms), "
              f"cluster ok after {ok_s:.2f}s")
        # Failure detection takes node-timeout, the election starts 500-1000 ms after FAIL:
        # generous bound for a loaded 2-core machine.
        assert promoted_s < timeout_ms / 1000 * 2 + 8
        view = {e["addr"]: e for e in survivors[0].nodes()}
        assert "fail" in view[victim.addr]["flags"]
        assert "master" in view[replica.addr]["flags"] and view[replica.addr]["slots"]
        # The same client goes on: it finds the new master of the slot and reads every key.
        deadline = time.monotonic() + 30
        while True:
            try:
                assert rc.get("fo:0") == "fo:0"
                break
            except (redis.ConnectionError, redis.exceptions.ClusterDownError,
                    redis.exceptions.ClusterError, redis.TimeoutError):  # fmt: skip
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        pipe = rc.pipeline()
        for k in keys:
            pipe.get(k)
        assert pipe.execute() == keys
        assert rc.set("fo:after", "1") and rc.get("fo:after") == "1"
    finally:
        rc.close()


def shards_entry(via, node_id: str) -> dict:
    """The CLUSTER SHARDS entry of node `node_id` as `via` reports it."""
    for shard in via.c.execute_command("CLUSTER", "SHARDS"):
        shard = dict(zip(shard[::2], shard[1::2]))
        for n in shard["nodes"]:
            n = dict(zip(n[::2], n[1::2]))
            if n["id"] == node_id:
                return n
    raise AssertionError(f"{node_id} not in CLUSTER SHARDS")


def in_cluster_slots(via, port: int) -> bool:
    return any(n[1] == port for r in via.c.execute_command("CLUSTER", "SLOTS") for n in r[2:])


def test_replica_loading_a_full_sync_is_loading_in_shards_and_hidden_from_slots(clusters):
    # A replica replacing its data with a full sync's payload gossips offset 0: its master
    # shows it `loading` in CLUSTER SHARDS and leaves it out of CLUSTER SLOTS until it is done.
    cl = Cluster.create(["tern"] * 6, replicas=1, node_timeout=2000)
    clusters.append(cl)
    master = cl.master_of_slot(0)
    replica = cl.replicas_of(master)[0]
    rid = replica.myid()
    wait_for(lambda: shards_entry(master, rid)["health"] == "online", 20, what="replica online")
    assert in_cluster_slots(master, replica.port)
    master.c.execute_command("DEBUG", "POPULATE", 2000, "key", 100)
    master.c.config_set("repl-backlog-size", 16384)
    master.c.config_set("repl-diskless-sync-delay", 0)
    replica.c.config_set("repl-diskless-load", "disabled")
    replica.c.config_set("key-load-delay", 3000)  # µs per key: the load takes seconds
    # (Redis answers the bus while loading only every so many bytes loaded.)
    replica.c.config_set("loading-process-events-interval-bytes", 1024)
    pipe = master.c.pipeline(transaction=True)
    pipe.execute_command("CLIENT", "KILL", "TYPE", "replica")
    for j in range(100):
        pipe.set(f"{{ch3}}{j}", "A" * 1024)  # more than the backlog holds: a full sync
    pipe.execute()
    wait_for(lambda: shards_entry(master, rid)["health"] == "loading", 30, what="loading")
    assert not in_cluster_slots(master, replica.port)
    replica.c.config_set("key-load-delay", 0)
    wait_for(lambda: shards_entry(master, rid)["health"] == "online", 30, what="online again")
    wait_for(lambda: in_cluster_slots(master, replica.port), 10, what="back in CLUSTER SLOTS")
    assert shards_entry(replica, rid)["health"] == "online"


# ---- mixed clusters: redis-server and tern nodes ---------------------------------------------

MIXED_TYPES = ("string", "hash", "list", "set", "zset", "stream")


def zset_score(j: int) -> float:
    """Scores with many digits where the digests agree: Redis 7.2 (and tern) hash a score's
    shortest form, 7.0 its %.17g form, so a 7.0 node only gets exact binary fractions."""
    return j / 3 if redis_version() >= (7, 2) else j / 4


def write_typed(c, key: str, kind: str, i: int) -> None:
    if kind == "string":
        c.set(key, f"value-{i}" * (1 + i % 5))
    elif kind == "hash":
        c.hset(key, mapping={f"f{j}": j * i for j in range(1 + i % 20)})
    elif kind == "list":
        c.rpush(key, *[f"e{j}" for j in range(1 + i % 30)])
    elif kind == "set":
        c.sadd(key, *[j * 7 for j in range(1 + i % 40)])
    elif kind == "zset":
        c.zadd(key, {f"m{j}": zset_score(j) for j in range(1 + i % 25)})
    else:
        for j in range(1 + i % 4):
            c.xadd(key, {"n": j, "i": i})
    if i % 3 == 0:
        c.expire(key, 3600)


def digests(cl: Cluster, keys: list[str]) -> dict[str, str]:
    """DEBUG DIGEST-VALUE of every key, asked of the master that holds it."""
    owner = {s: e["addr"] for e in cl.masters() for s in e["slots"]}
    by_node: dict[str, list[str]] = {}
    for k in keys:
        by_node.setdefault(owner[key_slot(k)], []).append(k)
    out = {}
    for addr, ks in by_node.items():
        pipe = cl.node_at(addr).c.pipeline(transaction=False)
        for k in ks:
            pipe.execute_command("DEBUG", "DIGEST-VALUE", k)
        out.update((k, d[0]) for k, d in zip(ks, pipe.execute()))
    return out


def mixed_cluster_round_trip(cl: Cluster, newcomer_kind: str) -> None:
    """Add a node of `newcomer_kind`, reshard slots with typed keys onto it, compare digests."""
    rc = cl.client()
    try:
        keys = [f"mix:{i}" for i in range(4000)]
        pipe = rc.pipeline()
        for i, k in enumerate(keys):
            write_typed(pipe, k, MIXED_TYPES[i % len(MIXED_TYPES)], i)
        pipe.execute()
        ttls_before = {k: rc.ttl(k) for k in keys[:30]}
        ttl_time = time.monotonic()
    finally:
        rc.close()
    before = digests(cl, keys)
    new = cl.add(newcomer_kind)
    cl.add_node(new)
    m = cl.masters()
    src = cl.node_at(m[0]["addr"])
    moved = set(m[0]["slots"][:400])
    cl.reshard(src, new, 400)
    cl.wait_ok()
    cl.check()
    owned = set(next(e for e in cl.masters() if e["addr"] == new.addr)["slots"])
    assert owned == moved
    moved_keys = [k for k in keys if key_slot(k) in moved]
    assert len(moved_keys) > 50 and new.c.dbsize() == len(moved_keys)
    after = digests(cl, keys)
    assert after == before

    rc = cl.client()
    try:
        elapsed = time.monotonic() - ttl_time
        for k, t in ttls_before.items():
            if t > 0:  # the TTL moved with the key, counting down
                assert t - elapsed - 2 <= rc.ttl(k) <= t, k
        # The newcomer serves writes of its slots and the cluster client follows.
        assert rc.set(moved_keys[0] + ":new", "x") and rc.get(moved_keys[0] + ":new") == "x"
    finally:
        rc.close()
    # And back: the keys return to the first master intact.
    cl.reshard(new, src, 400)
    cl.wait_ok()
    cl.check()
    assert new.c.dbsize() == 0
    assert digests(cl, keys) == before


def test_mixed_tern_node_joins_redis_cluster(clusters):
    cl = Cluster.create(["redis"] * 3)
    clusters.append(cl)
    mixed_cluster_round_trip(cl, "tern")


@pytest.mark.skipif(
    redis_version() < (7, 2) and not target_is_redis(),
    reason="a redis-server < 7.2 cannot join a 7.2 cluster: redis-cli add-node's FUNCTION RESTORE "
    "refuses the 7.2 payload (as between real Redis versions); set CLUSTER_REDIS_SERVER to a 7.2",
)
def test_mixed_redis_node_joins_tern_cluster(clusters):
    cl = Cluster.create(["tern"] * 3)
    clusters.append(cl)
    mixed_cluster_round_trip(cl, "redis")


# ---- keys found at start-up ----------------------------------------------------------------


def test_keys_loaded_for_slots_not_owned_are_claimed_or_imported(clusters):
    """A master that restarts with keys of slots nodes.conf does not give it (Redis's
    verifyClusterConfigWithData): an unassigned slot becomes its own, a slot another node
    serves is marked as imported from that node, and the keys stay reachable."""
    extra = ("--cluster-require-full-coverage", "no")
    a, b = Node("tern", extra=extra), Node("tern", extra=extra)
    cl = Cluster([a, b])
    clusters.append(cl)
    a.c.execute_command("CLUSTER", "MEET", "127.0.0.1", b.port)
    wait_for(lambda: len(a.nodes()) == 2 and len(b.nodes()) == 2, 10, what="the nodes to meet")
    k_free, k_b = "claimed-key", "imported-key"
    s_free, s_b = key_slot(k_free), key_slot(k_b)
    assert s_free != s_b
    # A key of a slot that then loses its owner (DELSLOTS keeps the keys).
    a.c.execute_command("CLUSTER", "ADDSLOTS", s_free)
    wait_for(lambda: a.c.set(k_free, "1"), 10, what="the slot served")
    a.c.execute_command("CLUSTER", "DELSLOTS", s_free)
    # A key of a slot b serves, written during an import that was then closed.
    b.c.execute_command("CLUSTER", "ADDSLOTS", s_b)
    wait_for(lambda: s_b in next(e for e in a.nodes() if e["addr"] == b.addr)["slots"], 10,
             what="a to learn b's slot")  # fmt: skip
    wait_for(lambda: a.info()["cluster_state"] == "ok", 10, what="a's cluster state ok")
    a.c.execute_command("CLUSTER", "SETSLOT", s_b, "IMPORTING", b.myid())
    pipe = a.c.pipeline(transaction=False)
    pipe.execute_command("ASKING")
    pipe.set(k_b, "2")
    assert pipe.execute() == [True, True]
    a.c.execute_command("CLUSTER", "SETSLOT", s_b, "STABLE")
    assert a.c.dbsize() == 2
    a.c.save()

    a.restart()
    wait_for(lambda: a.c.dbsize() == 2 and a.info()["cluster_state"] == "ok", 10,
             what="the dump loaded and the cluster state ok")  # fmt: skip
    def whole_log() -> str:
        with open(a.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    log = whole_log()
    assert f"I have keys for unassigned slot {s_free}. Taking responsibility for it." in log
    assert (f"I have keys for slot {s_b}, but the slot is assigned to another node. "
            "Setting it to importing state.") in log  # fmt: skip
    me = next(e for e in a.nodes() if "myself" in e["flags"])
    assert me["slots"] == [s_free]
    line = next(l for l in a.c.execute_command("CLUSTER", "NODES").splitlines() if "myself" in l)
    assert f"[{s_b}-<-{b.myid()}]" in line.split(), line
    assert a.c.get(k_free) == "1"
    with pytest.raises(redis.ResponseError, match=f"MOVED {s_b} {b.addr}"):
        a.c.get(k_b)
    pipe = a.c.pipeline(transaction=False)
    pipe.execute_command("ASKING")
    pipe.get(k_b)
    assert pipe.execute() == [True, "2"]
    # Recorded in nodes.conf: a second restart finds it all in place, with nothing to fix.
    a.restart()
    wait_for(lambda: a.c.dbsize() == 2, 10, what="the dump loaded again")
    assert next(e for e in a.nodes() if "myself" in e["flags"])["slots"] == [s_free]
    assert whole_log().count("Taking responsibility") == 1


# ---- DEBUG SLEEP stops the bus too ----------------------------------------------------------


def test_debug_sleep_stops_the_bus(clusters):
    """DEBUG SLEEP stops the whole node, its cluster bus included, as single-threaded Redis:
    past node-timeout the others mark it failed (the cluster tests' way to fake a dead node),
    and it is back once the sleep is over."""
    timeout_ms = 1000
    cl = Cluster.create(["tern"] * 3, node_timeout=timeout_ms)
    clusters.append(cl)
    sleeper, others = cl.nodes[2], cl.nodes[:2]

    def flags_of_sleeper(n):
        return next(e for e in n.nodes() if e["addr"] == sleeper.addr)["flags"]

    sleep_s = 6
    with RawConn(sleeper.port, timeout=sleep_s + 10) as conn:
        conn.send(encode("DEBUG", "SLEEP", str(sleep_s)))
        t0 = time.monotonic()
        wait_for(
            lambda: all("fail" in flags_of_sleeper(n) for n in others), sleep_s - 1, step=0.05,
            what="the sleeping node marked failed by the others",
        )  # fmt: skip
        failed_s = time.monotonic() - t0
        assert all(n.info()["cluster_state"] == "fail" for n in others)
        assert conn.read_reply() == b"+OK\r\n"
        slept = time.monotonic() - t0
    print(f"marked failed {failed_s:.2f}s into the sleep (node-timeout {timeout_ms} ms)")
    assert failed_s > timeout_ms / 1000 * 0.9
    assert slept >= sleep_s - 0.5
    # Awake again: its slots were not failed over (no replica), so the FAIL flag is cleared.
    cl.wait_ok(30)
    assert all("fail" not in flags_of_sleeper(n) for n in others)


def test_keys_outside_db0_stop_a_cluster_node_at_start(clusters):
    """A cluster node has one database, as Redis (it logs the change from `databases`): a dump
    with keys in another database fails to load and the node stops, instead of hiding them."""
    a = Node("tern")
    cl = Cluster([a])
    clusters.append(cl)
    assert a.c.config_get("databases") == {"databases": "1"}
    a.kill9()
    a.killed = True  # its exit at the restart below is the point of the test
    port = cluster_port()
    plain = subprocess.Popen(
        [a.exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", a.dir],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        c = redis.Redis(port=port, db=1)
        wait_for(lambda: c.ping(), 10, what="the plain server up")
        c.set("in-db-1", "x")
        c.save()
        c.close()
    finally:
        plain.kill()
        plain.wait()
    with pytest.raises(RuntimeError, match=r"exited at start \(1\)"):
        a.restart()
    log = a.log()
    assert "Changing databases number from 16 to 1 since we are in cluster mode" in log
    assert "configured to handle more than 1 databases" in log

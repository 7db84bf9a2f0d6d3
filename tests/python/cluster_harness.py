"""Cluster test harness: start cluster-enabled nodes (tern or redis-server) each in its own
directory, drive them with ``redis-cli --cluster`` as a user would, and read their state.

The binaries are parameters, so every test is first proven on real Redis:

* ``TERN_SERVER``           the tern binary (see conftest.tern_binary)
* ``TERN_PY_TARGET=redis``  every "tern" node is a redis-server too (checks the tests themselves)
* ``CLUSTER_REDIS_SERVER``  the redis-server for redis nodes (default: ~/redis-7.2.6's build if
  there, else Debian's, as conftest)
* ``CLUSTER_REDIS_CLI``     the redis-cli that runs ``--cluster`` (default: ``redis-cli`` on PATH)
* ``CLUSTER_TEST_PORTS``    the client ports to use, ``FIRST-LAST`` (default 7800-7859); each
  node's bus port is its port + 10000, as a default Redis Cluster node has it.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest
import redis
from redis.cluster import RedisCluster

from conftest import REDIS_SERVER, tern_binary

REDIS_CLI = os.environ.get("CLUSTER_REDIS_CLI") or shutil.which("redis-cli")
# Redis 7.2 first, the version tern speaks: a 7.0 node cannot join a 7.2 cluster (redis-cli
# add-node copies the functions with FUNCTION DUMP/RESTORE, and 7.0 refuses 7.2's payload).
_REDIS72 = os.path.expanduser("~/redis-7.2.6/src/redis-server")
CLUSTER_REDIS = (
    os.environ.get("CLUSTER_REDIS_SERVER")
    or (_REDIS72 if os.access(_REDIS72, os.X_OK) else None)
    or REDIS_SERVER
)
TOTAL_SLOTS = 16384


def target_is_redis() -> bool:
    return os.environ.get("TERN_PY_TARGET") == "redis"


@functools.cache
def redis_version() -> tuple[int, ...]:
    """The version of the redis-server used for redis nodes, e.g. (7, 2, 6)."""
    if not CLUSTER_REDIS:
        return (0,)
    out = subprocess.run([CLUSTER_REDIS, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"v=(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(x) for x in m.groups()) if m else (0,)


def binary(kind: str) -> str:
    """The executable for a node of `kind` ("tern" or "redis")."""
    if kind == "tern" and not target_is_redis():
        return tern_binary()
    if not CLUSTER_REDIS:
        pytest.skip("redis-server is not installed (run scripts/setup.sh)")
    return CLUSTER_REDIS


# ---- ports ----------------------------------------------------------------------------------


def _can_bind(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _port_range() -> tuple[int, int]:
    spec = os.environ.get("CLUSTER_TEST_PORTS", "7800-7859")
    lo, hi = (int(x) for x in spec.split("-"))
    return lo, hi


_next_port = None


def cluster_port() -> int:
    """A client port whose bus port (+10000) is free too; cycles through the range."""
    global _next_port
    lo, hi = _port_range()
    if _next_port is None:
        _next_port = lo
    for _ in range(hi - lo + 1):
        p = _next_port
        _next_port = lo if p >= hi else p + 1
        if _can_bind(p) and _can_bind(p + 10000):
            return p
    raise RuntimeError(f"no free port pair in {lo}-{hi} (+10000)")


# ---- one node -------------------------------------------------------------------------------


class Node:
    """One cluster-enabled server process in a directory of its own (nodes.conf lives there)."""

    def __init__(self, kind: str, node_timeout: int = 3000, extra: tuple[str, ...] = ()):
        self.kind = kind
        self.exe = binary(kind)
        self.port = cluster_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.dir = tempfile.mkdtemp(prefix=f"cluster-{kind}-{self.port}-")
        self.log_path = os.path.join(self.dir, "server.log")
        self.argv = [
            self.exe,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(node_timeout),
            "--enable-debug-command", "yes",
            *extra,
        ]  # fmt: skip
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            self.argv, cwd=self.dir, stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        self._wait_ready()
        self._client: redis.Redis | None = None

    def __repr__(self) -> str:
        return f"<{self.kind} {self.addr}>"

    def _wait_ready(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self} exited at start ({self.proc.returncode}):\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"{self} did not answer within {timeout}s")

    @property
    def c(self) -> redis.Redis:
        """A plain (non-cluster) client of this node alone."""
        if self._client is None:
            self._client = redis.Redis(
                host="127.0.0.1", port=self.port, decode_responses=True, socket_timeout=30
            )
        return self._client

    def log(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-3000:].decode(errors="replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def myid(self) -> str:
        return self.c.execute_command("CLUSTER", "MYID")

    def nodes(self) -> list[dict]:
        """CLUSTER NODES as this node sees it."""
        return parse_nodes(self.c.execute_command("CLUSTER", "NODES"))

    def info(self) -> dict[str, str]:
        text = self.c.execute_command("CLUSTER", "INFO")
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)

    def kill9(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def restart(self) -> None:
        """Kill the process and start it again on the same port and directory: it loads its
        nodes.conf and its dump back."""
        self.kill9()
        if self._client is not None:
            self._client.close()
            self._client = None
        self.proc = subprocess.Popen(
            self.argv, cwd=self.dir, stdout=self._log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        self._wait_ready()

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def parse_nodes(text: str) -> list[dict]:
    """CLUSTER NODES lines -> dicts (id, addr host:port, flags set, master, slots list)."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) < 8:
            continue
        slots: list[int] = []
        for s in f[8:]:
            if s.startswith("["):  # an importing/migrating marker, not an owned slot
                continue
            a, _, b = s.partition("-")
            slots.extend(range(int(a), int(b or a) + 1))
        out.append(
            {
                "id": f[0],
                "addr": f[1].split("@")[0],
                "flags": set(f[2].split(",")),
                "master": f[3],
                "link": f[7],
                "slots": slots,
            }
        )
    return out


# ---- redis-cli --cluster --------------------------------------------------------------------


class CliError(AssertionError):
    pass


def cli(*args: str, timeout: float = 120, check: bool = True) -> str:
    """Run ``redis-cli --cluster ARGS``; return its output (stdout+stderr)."""
    if not REDIS_CLI:
        pytest.skip("redis-cli is not installed (run scripts/setup.sh)")
    argv = [REDIS_CLI, "--cluster", *args]
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    out = p.stdout + p.stderr
    print(f"[cluster] redis-cli --cluster {args[0]}: {time.monotonic() - t0:.2f}s")
    if check and p.returncode != 0:
        raise CliError(f"{' '.join(argv)} exited {p.returncode}:\n{out[-4000:]}")
    return out


class Cluster:
    """A set of nodes driven by redis-cli --cluster."""

    def __init__(self, nodes: list[Node]):
        self.nodes = list(nodes)

    # -- set-up ----------------------------------------------------------------------------
    @classmethod
    def create(cls, kinds: list[str], replicas: int = 0, node_timeout: int = 3000) -> "Cluster":
        nodes: list[Node] = []
        try:
            for k in kinds:
                nodes.append(Node(k, node_timeout))
            cl = cls(nodes)
            cli(
                "create", *(n.addr for n in nodes), "--cluster-replicas", str(replicas),
                "--cluster-yes",
            )  # fmt: skip
            cl.wait_ok()
            return cl
        except BaseException:
            for n in nodes:
                n.stop()
            raise

    def close(self) -> list[str]:
        """Stop every node; return a report of tern nodes that died on their own."""
        dead = []
        for n in self.nodes:
            if n.kind == "tern" and not n.alive() and not getattr(n, "killed", False):
                dead.append(f"{n} exited with {n.proc.returncode}:\n{n.log()}")
            n.stop()
        return dead

    def add(self, kind: str, node_timeout: int = 3000) -> Node:
        n = Node(kind, node_timeout)
        self.nodes.append(n)
        return n

    # -- state -----------------------------------------------------------------------------
    def live(self) -> list[Node]:
        return [n for n in self.nodes if n.alive()]

    @property
    def entry(self) -> Node:
        return self.live()[0]

    def check(self, node: Node | None = None) -> str:
        """``--cluster check``: every slot covered, all nodes agree, no open slot."""
        out = cli("check", (node or self.entry).addr)
        assert "[OK] All 16384 slots covered." in out, out
        assert "[OK] All nodes agree about slots configuration." in out, out
        assert "[ERR]" not in out and "[WARNING]" not in out, out
        return out

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Every live node says cluster_state:ok and they agree on the slot map and who
        replicates whom (the cluster's own view: a fresh cluster converges over gossip)."""

        def converged():
            maps = set()
            for n in self.live():
                if n.info().get("cluster_state") != "ok":
                    return False
                maps.add(slot_map_key(n.nodes()))
            return len(maps) == 1

        t0 = time.monotonic()
        wait_for(converged, timeout, what="cluster_state:ok and one slot map on every node")
        print(f"[cluster] converged in {time.monotonic() - t0:.2f}s")

    def masters(self, via: Node | None = None) -> list[dict]:
        return [
            e
            for e in (via or self.entry).nodes()
            if "master" in e["flags"] and "fail" not in e["flags"] and e["slots"]
        ]

    def node_at(self, addr: str) -> Node:
        return next(n for n in self.nodes if n.addr == addr)

    def master_of_slot(self, slot: int, via: Node | None = None) -> Node:
        for e in self.masters(via):
            if slot in e["slots"]:
                return self.node_at(e["addr"])
        raise AssertionError(f"no master serves slot {slot}")

    def replicas_of(self, master: Node, via: Node | None = None) -> list[Node]:
        mid = master.myid()
        return [self.node_at(e["addr"]) for e in (via or self.entry).nodes() if e["master"] == mid]

    def client(self, **kw) -> RedisCluster:
        e = self.entry
        return RedisCluster(host="127.0.0.1", port=e.port, decode_responses=True, **kw)

    # -- operations ------------------------------------------------------------------------
    def reshard(self, src: Node, dst: Node, slots: int, pipeline: int = 10, timeout: float = 180) -> str:
        return cli(
            "reshard", self.entry.addr, "--cluster-from", src.myid(), "--cluster-to", dst.myid(),
            "--cluster-slots", str(slots), "--cluster-pipeline", str(pipeline), "--cluster-yes",
            timeout=timeout,
        )  # fmt: skip

    def add_node(self, new: Node, replica_of: Node | None = None) -> str:
        args = ["add-node", new.addr, self.entry.addr]
        if replica_of is not None:
            args += ["--cluster-slave", "--cluster-master-id", replica_of.myid()]
        out = cli(*args)
        # add-node returns once MEET (and REPLICATE) were sent: wait until gossip has told
        # every node about the newcomer and the newcomer about everyone.
        self.wait_ok()
        return out


def slot_map_key(entries: list[dict]) -> tuple:
    """What every node must agree on: who is master of which slots, who replicates whom."""
    return tuple(
        sorted(
            (e["id"], "slave" in e["flags"], e["master"], tuple(e["slots"]))
            for e in entries
            if "fail" not in e["flags"] and "handshake" not in e["flags"]
        )
    )


def wait_for(pred, timeout: float = 30.0, step: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = pred()
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError) as e:
            last = e
        else:
            if last:
                return last
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


# ---- keys by slot ---------------------------------------------------------------------------

_CRC16_TABLE = []
for _i in range(256):
    _c = _i << 8
    for _ in range(8):
        _c = ((_c << 1) ^ 0x1021) if _c & 0x8000 else (_c << 1)
    _CRC16_TABLE.append(_c & 0xFFFF)


def key_slot(key: str | bytes) -> int:
    """HASH_SLOT as Redis Cluster computes it (CRC16/XMODEM of the hash tag, mod 16384)."""
    k = key.encode() if isinstance(key, str) else key
    s = k.find(b"{")
    if s >= 0:
        e = k.find(b"}", s + 1)
        if e > s + 1:
            k = k[s + 1 : e]
    crc = 0
    for b in k:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC16_TABLE[((crc >> 8) ^ b) & 0xFF]
    return crc % TOTAL_SLOTS


def key_in_slots(slots: set[int], prefix: str = "k", start: int = 0):
    """Yield keys `prefix:N` (N from start) whose slot is in `slots`."""
    i = start
    while True:
        k = f"{prefix}:{i}"
        if key_slot(k) in slots:
            yield k
        i += 1

"""A real Redis Sentinel drives tern: it monitors a tern master with two tern replicas, notices
the master is gone (SIGKILL), promotes one replica, points the other at it, and a redis-py client
that finds its master through Sentinel keeps working across the failover.

The Sentinel is $TERN_SENTINEL, else Redis 7.2.6's built one (~/redis-7.2.6/src), else Debian's
(``redis-sentinel`` package, installed by scripts/setup.sh); the test is skipped without one."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest
import redis
import redis.sentinel

from conftest import RawConn, encode, free_port, tern_binary

pytestmark = pytest.mark.skipif(
    os.environ.get("TERN_PY_TARGET") == "redis", reason="starts tern servers of its own"
)

SENTINEL = next(
    (
        p
        for p in (
            os.environ.get("TERN_SENTINEL", ""),
            os.path.expanduser("~/redis-7.2.6/src/redis-sentinel"),
            "/root/redis-7.2.6/src/redis-sentinel",
            "/usr/bin/redis-sentinel",
            "/usr/local/bin/redis-sentinel",
        )
        if os.access(p, os.X_OK)
    ),
    shutil.which("redis-sentinel"),
)

MASTER_NAME = "mymaster"


def wait_for(pred, timeout=30.0, step=0.05, what="condition"):
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
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


class SentinelProc:
    """One redis-sentinel with its own writable config file (Sentinel rewrites it)."""

    def __init__(self, master_port: int, quorum: int = 1):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix=f"sentinel-py-{self.port}-")
        self.conf = os.path.join(self.dir, "sentinel.conf")
        self.log_path = os.path.join(self.dir, "sentinel.log")
        with open(self.conf, "w") as f:
            f.write(
                f"port {self.port}\n"
                "bind 127.0.0.1\n"
                f'dir "{self.dir}"\n'
                f'logfile "{self.log_path}"\n'
                f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} {quorum}\n"
                # Above Sentinel's 1 s PING period: at exactly 1000 ms a master Sentinel has
                # just switched to gets its first PING a full period after the switch, and a
                # reply a few ms late marks it down and starts a second failover.
                f"sentinel down-after-milliseconds {MASTER_NAME} 2000\n"
                f"sentinel failover-timeout {MASTER_NAME} 20000\n"
                f"sentinel parallel-syncs {MASTER_NAME} 1\n"
            )
        self.proc = subprocess.Popen(
            [SENTINEL, self.conf],
            cwd=self.dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        self.client = redis.Redis(
            host="127.0.0.1", port=self.port, decode_responses=True, socket_timeout=10
        )
        wait_for(self.client.ping, timeout=10, what="sentinel to answer PING")

    def log(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-6000:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class ConfiguredTern:
    """A tern-server started from a configuration file of its own, which Sentinel's
    CONFIG REWRITE updates; it can be killed and started again on the same port."""

    def __init__(self, *lines: str):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix=f"tern-sentinel-py-{self.port}-")
        self.conf = os.path.join(self.dir, "tern.conf")
        self.log_path = os.path.join(self.dir, "server.log")
        with open(self.conf, "w") as f:
            f.write(f'port {self.port}\nbind 127.0.0.1\nsave ""\ndir "{self.dir}"\n')
            f.writelines(line + "\n" for line in lines)
        self.proc = None
        self.start()

    def start(self, *extra: str, wait_loaded: bool = True) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [tern_binary(), self.conf, *extra],
                cwd=self.dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if wait_loaded:
            wait_for(lambda: self.client().ping(), timeout=10, what=f"tern on {self.port} to start")
        else:
            wait_for(self.accepts, timeout=10, what=f"tern on {self.port} to listen")

    def accepts(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def client(self) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1", port=self.port, decode_responses=True, socket_timeout=5
        )

    def config_text(self) -> str:
        with open(self.conf) as f:
            return f.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def log(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-4000:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def servers():
    started: list = []
    yield started
    for s in reversed(started):
        s.stop()


def as_dict(flat: list) -> dict:
    """A Sentinel state reply (a flat field/value list) as a dict."""
    return dict(zip(flat[::2], flat[1::2]))


def sentinel_replicas(sc: redis.Redis) -> list[dict]:
    return [as_dict(row) for row in sc.execute_command("SENTINEL", "REPLICAS", MASTER_NAME)]


def role(port: int):
    c = redis.Redis(host="127.0.0.1", port=port, decode_responses=True, socket_timeout=5)
    try:
        return c.execute_command("ROLE")
    finally:
        c.close()


def link_up(replica_port: int, master_port: int) -> bool:
    r = role(replica_port)
    return r[0] == "slave" and int(r[2]) == master_port and r[3] == "connected"


def test_config_get_and_rewrite_show_the_master_followed_now(servers):
    """Sentinel's failover transaction is REPLICAOF then CONFIG REWRITE: the file must say
    what REPLICAOF just set, not what the server started with."""
    master = ConfiguredTern()
    replica = ConfiguredTern(f"replicaof 127.0.0.1 {master.port}")
    servers += [master, replica]
    c = replica.client()
    assert c.config_get("replicaof") == {"replicaof": f"127.0.0.1 {master.port}"}
    assert c.execute_command("REPLICAOF", "NO", "ONE") == "OK"
    assert c.config_get("replicaof") == {"replicaof": ""}
    assert c.config_get("slaveof") == {"slaveof": ""}
    assert c.config_rewrite() == "OK"
    assert "replicaof" not in replica.config_text()
    # ... and a server started as a master that is told to follow one writes the line.
    m = master.client()
    assert m.execute_command("REPLICAOF", "127.0.0.1", str(replica.port)) == "OK"
    assert m.config_get("replicaof") == {"replicaof": f"127.0.0.1 {replica.port}"}
    assert m.config_rewrite() == "OK"
    assert f"replicaof 127.0.0.1 {replica.port}" in master.config_text()
    m.close()
    c.close()


def test_key_load_delay_keeps_a_restarted_server_loading(servers):
    """Sentinel tells a rebooted master (new run_id, -LOADING to PING for longer than
    master-reboot-down-after-period) from one that is back; Redis's tests slow the load down
    with the hidden `key-load-delay` (microseconds after each key or AOF command)."""
    t = ConfiguredTern("appendonly yes", "appendfsync always")
    servers.append(t)
    c = t.client()
    with c.pipeline(transaction=False) as p:
        for i in range(2000):
            p.set(f"k{i}", i)
        p.execute()
    run_id = c.info("server")["run_id"]
    c.close()
    t.kill()
    started = time.monotonic()
    # 2000 commands, 1.5 ms each: 3 s or more. Redis answers clients every 1024 commands.
    t.start(
        "--key-load-delay",
        "1500",
        "--loading-process-events-interval-bytes",
        "1024",
        wait_loaded=False,
    )
    with RawConn(t.port, timeout=10) as raw:
        # One batch, so Redis too answers all three from one pause in its load.
        raw.send(encode("PING") + encode("INFO") + encode("ROLE"))
        pong, info, role_reply = raw.read_replies(3)
    assert pong.startswith(b"-LOADING Redis is loading the dataset in memory")
    # INFO and ROLE are served while loading: Sentinel reads the new run_id there.
    assert b"\r\nloading:1\r\n" in info
    assert b"\r\nrun_id:" in info and run_id.encode() not in info
    assert role_reply.startswith(b"*3\r\n$6\r\nmaster\r\n")
    c = t.client()
    wait_for(lambda: c.info("persistence")["loading"] == 0, timeout=30, what="the load to end")
    assert time.monotonic() - started >= 2.5
    assert c.dbsize() == 2000
    assert c.get("k1999") == "1999"
    c.close()


@pytest.mark.skipif(SENTINEL is None, reason="no redis-sentinel binary (apt install redis-sentinel)")
def test_sentinel_fails_over_a_killed_tern_master(servers):
    master = ConfiguredTern()
    servers.append(master)
    replicas = []
    for _ in range(2):
        rp = ConfiguredTern(f"replicaof 127.0.0.1 {master.port}")
        servers.append(rp)
        replicas.append(rp)
    for rp in replicas:
        wait_for(lambda: link_up(rp.port, master.port), what=f"replica {rp.port} link up")

    sentinel = SentinelProc(master.port)
    servers.append(sentinel)
    try:
        _run_failover(master, replicas, sentinel)
    except BaseException:
        print("---- sentinel log ----\n" + sentinel.log())
        for s in [master, *replicas]:
            print(f"---- tern {s.port} log ----\n" + s.log())
        raise


def _run_failover(master: ConfiguredTern, replicas: list[ConfiguredTern], sentinel: SentinelProc):
    sc = sentinel.client
    replica_ports = {rp.port for rp in replicas}

    # Sentinel learns the replicas from the master's INFO replication and sees them online.
    def replicas_seen():
        rows = sentinel_replicas(sc)
        found = {int(r["port"]) for r in rows if "s_down" not in r["flags"]}
        return found == replica_ports and all(r["master-link-status"] == "ok" for r in rows)

    wait_for(replicas_seen, what="sentinel to discover both replicas")
    info = as_dict(sc.execute_command("SENTINEL", "MASTER", MASTER_NAME))
    assert info["flags"] == "master"
    assert int(info["num-slaves"]) == 2

    # A client that finds the master through Sentinel.
    sentinel_client = redis.sentinel.Sentinel(
        [("127.0.0.1", sentinel.port)], socket_timeout=5, decode_responses=True
    )
    app = sentinel_client.master_for(MASTER_NAME, socket_timeout=5, decode_responses=True)
    assert app.set("before", "failover") is True
    assert sentinel_client.discover_master(MASTER_NAME) == ("127.0.0.1", master.port)
    for rp in replicas:
        rc = rp.client()
        wait_for(lambda: rc.get("before") == "failover", what="write to reach the replica")
        rc.close()

    events = sc.pubsub()
    events.subscribe("+switch-master")
    assert events.get_message(timeout=5)["type"] == "subscribe"

    master.kill()

    # +switch-master <name> <old-ip> <old-port> <new-ip> <new-port>
    def switched():
        msg = events.get_message(timeout=1)
        return msg["data"] if msg and msg["type"] == "message" else None

    switch = wait_for(switched, timeout=60, step=0, what="+switch-master")
    events.close()
    name, old_ip, old_port, new_ip, new_port = switch.split()
    assert (name, old_ip, int(old_port)) == (MASTER_NAME, "127.0.0.1", master.port)
    new_port = int(new_port)
    assert new_port in replica_ports

    addr = sc.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
    assert addr == ["127.0.0.1", str(new_port)]

    promoted = next(rp for rp in replicas if rp.port == new_port)
    other = next(rp for rp in replicas if rp.port != new_port)
    assert role(promoted.port)[0] == "master"
    pc = promoted.client()
    assert pc.get("before") == "failover"
    assert pc.set("after", "promotion") is True

    # The other replica now follows the promoted one and gets its writes.
    wait_for(lambda: link_up(other.port, new_port), what="the other replica to follow the new master")
    oc = other.client()
    wait_for(lambda: oc.get("after") == "promotion", what="new master's write to reach the replica")
    oc.close()

    # Sentinel's view: the old master is now listed as a (down) replica of the new one, the
    # other replica as an online one.
    def sentinel_view():
        rows = sentinel_replicas(sc)
        by_port = {int(r["port"]): r for r in rows}
        o = by_port.get(other.port)
        return (
            o is not None
            and "s_down" not in o["flags"]
            and o["master-link-status"] == "ok"
            and int(o["master-port"]) == new_port
            and master.port in by_port
        )

    wait_for(sentinel_view, what="sentinel to see the reconfigured replica")

    # The Sentinel-managed client reconnects to the new master by itself.
    def app_writes():
        return app.set("through-sentinel", "yes")

    wait_for(app_writes, timeout=20, what="the sentinel-managed client to write again")
    assert pc.get("through-sentinel") == "yes"
    assert app.get("before") == "failover"
    assert sentinel_client.discover_master(MASTER_NAME) == ("127.0.0.1", new_port)
    # The killed master is listed as a replica too, until Sentinel marks it down.
    wait_for(
        lambda: sentinel_client.discover_slaves(MASTER_NAME) == [("127.0.0.1", other.port)],
        what="sentinel to offer only the live replica",
    )
    pc.close()

    # Sentinel's failover transaction rewrote the configuration files: the promoted replica's
    # no longer follows anyone, the other one's follows the new master.
    assert "replicaof" not in promoted.config_text()
    assert f"replicaof 127.0.0.1 {new_port}" in other.config_text()

    # The old master comes back (empty: it saved nothing) as a master; Sentinel turns it into a
    # replica of the new master, and rewrites its file so it stays one across a restart.
    master.start()
    wait_for(
        lambda: link_up(master.port, new_port),
        timeout=60,
        what="sentinel to convert the old master into a replica",
    )
    mc = master.client()
    wait_for(lambda: mc.get("after") == "promotion", what="the old master to sync")
    mc.close()
    wait_for(
        lambda: f"replicaof 127.0.0.1 {new_port}" in master.config_text(),
        what="the old master's rewritten config file",
    )
    master.kill()
    master.start()
    r = role(master.port)
    assert r[0] == "slave" and int(r[2]) == new_port

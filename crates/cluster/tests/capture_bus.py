#!/usr/bin/env python3
"""Capture real Redis cluster-bus traffic and nodes.conf files as test fixtures.

Starts five real redis-server nodes (ports 7601-7605) with `cluster-enabled yes`. Each node
announces a cluster bus port (17651-17655) that is a TCP relay run by this script in front of
its real bus port (17601-17605), so every message other nodes send to it, and its replies on
those links, pass through the relay, which splits the stream on the header's totlen and logs
each message. The script then provokes every message type it can (MEET, PING/PONG with gossip
and extensions, PUBLISH, PUBLISHSHARD, MODULE, MFSTART and FAILOVER_AUTH_* via CLUSTER FAILOVER,
FAIL and a real election after kill -9, UPDATE when the old master comes back, the
forgotten-node extension after CLUSTER FORGET) and writes:

  fixtures/bus/<name>.hex   one message per file: `# key: value` facts, then hex lines
  fixtures/bus/nodes.txt    port, node id, hostname, human nodename of each node
  fixtures/nodes_conf/*.conf  nodes.conf files written by the nodes

Usage: capture_bus.py REDIS_SERVER HELLOCLUSTER_SO OUT_DIR
  (hellocluster.so: cc -fPIC -shared -I ~/redis-7.2.6/src -o hellocluster.so
   ~/redis-7.2.6/src/modules/hellocluster.c)
       capture_bus.py --tls REDIS_SERVER CERT_DIR OUT_DIR
  two nodes with `tls-cluster yes` (ports 7611-7612, TLS ports 7631-7632, bus 17631-17632):
  writes fixtures/nodes_conf/tls_*.conf only (the bus is encrypted, so no messages).
  CERT_DIR: the tests/tls directory made by Redis's utils/gen-test-certs.sh.
Needs redis-py.
"""

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import redis

TYPES = {
    0: "PING", 1: "PONG", 2: "MEET", 3: "FAIL", 4: "PUBLISH", 5: "FAILOVER_AUTH_REQUEST",
    6: "FAILOVER_AUTH_ACK", 7: "UPDATE", 8: "MFSTART", 9: "MODULE", 10: "PUBLISHSHARD",
}
BASE_PORT = 7600
RELAY_OFFSET = 50  # relay bus port = node port + 10000 + 50
NODES = {
    # index: (hostname, human nodename)
    1: ("node-a.example", "human-a"),
    2: ("node-b.example", ""),
    3: ("", ""),
    4: ("", "human-d"),
    5: ("", ""),
}

captured = []  # (time, relay node index, direction, bytes)
captured_lock = threading.Lock()
blackholed = set()  # nodes whose relay logs but does not deliver incoming messages


def port(i):
    return BASE_PORT + i


def bus_port(i):
    return port(i) + 10000


def relay_port(i):
    return bus_port(i) + RELAY_OFFSET


async def pump(reader, writer, node, direction):
    """Forward whole messages; messages to a node in `blackholed` are logged, not delivered."""
    buf = b""
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            buf += data
            while len(buf) >= 8:
                totlen = int.from_bytes(buf[4:8], "big")
                if buf[:4] != b"RCmb" or totlen < 8:
                    writer.write(buf)  # not a bus stream: pass it through untouched
                    buf = b""
                    break
                if len(buf) < totlen:
                    break
                msg, buf = buf[:totlen], buf[totlen:]
                with captured_lock:
                    captured.append((time.time(), node, direction, msg))
                if not (direction == "to" and node in blackholed):
                    writer.write(msg)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def relay(node):
    async def handle(client_reader, client_writer):
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", bus_port(node))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pump(client_reader, up_writer, node, "to"),
            pump(up_reader, client_writer, node, "from"),
        )

    server = await asyncio.start_server(handle, "127.0.0.1", relay_port(node))
    async with server:
        await server.serve_forever()


def run_relays():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    for i in NODES:
        loop.create_task(relay(i))
    loop.run_forever()


def start_node(redis_server, module, work, i):
    d = os.path.join(work, f"n{i}")
    os.makedirs(d, exist_ok=True)
    host, human = NODES[i]
    args = [
        redis_server, "--port", str(port(i)), "--cluster-enabled", "yes",
        "--cluster-config-file", "nodes.conf", "--dir", d, "--cluster-node-timeout", "2000",
        "--cluster-announce-bus-port", str(relay_port(i)), "--save", "", "--appendonly", "no",
        "--logfile", os.path.join(d, "log.txt"), "--loadmodule", module,
    ]
    if host:
        args += ["--cluster-announce-hostname", host]
    if human:
        args += ["--cluster-announce-human-nodename", human]
    p = subprocess.Popen(args)
    c = redis.Redis(port=port(i), decode_responses=True)
    for _ in range(100):
        try:
            c.ping()
            return p, c
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError(f"node {i} did not start")


def wait_for(what, cond, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        try:
            if cond():
                return
        except redis.RedisError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def cinfo(c):
    return dict(
        line.split(":", 1) for line in c.execute_command("CLUSTER", "INFO").splitlines() if ":" in line
    )


def role(c, node_id):
    for line in c.execute_command("CLUSTER", "NODES").splitlines():
        f = line.split()
        if f[0] == node_id:
            return f[2]
    return ""


def main():
    redis_server, module, out = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    work = f"/tmp/tern-bus-capture-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    threading.Thread(target=run_relays, daemon=True).start()
    time.sleep(0.3)
    procs, clients, ids = {}, {}, {}
    events = []  # (time, label) to find messages around an action

    def mark(label):
        events.append((time.time(), label))
        print(f"[{time.strftime('%H:%M:%S')}] {label}", flush=True)

    try:
        for i in range(1, 5):
            procs[i], clients[i] = start_node(redis_server, module, work, i)
            ids[i] = clients[i].execute_command("CLUSTER", "MYID")
        a, b, c, d = (clients[i] for i in range(1, 5))
        a.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 5460)
        b.execute_command("CLUSTER", "ADDSLOTSRANGE", 5461, 10922)
        c.execute_command("CLUSTER", "ADDSLOTSRANGE", 10923, 16383)
        mark("meet")
        for i in (2, 3, 4):
            a.execute_command("CLUSTER", "MEET", "127.0.0.1", port(i), relay_port(i))
        for i in range(1, 5):
            wait_for("cluster ok", lambda i=i: cinfo(clients[i])["cluster_state"] == "ok"
                     and cinfo(clients[i])["cluster_known_nodes"] == "4")
        mark("replicate")
        d.execute_command("CLUSTER", "REPLICATE", ids[1])
        wait_for("replica link", lambda: d.info("replication")["master_link_status"] == "up")
        time.sleep(2.5)  # a few PING/PONG rounds with gossip about the replica
        mark("publish")
        a.publish("news", "hello from a")
        a.execute_command("SPUBLISH", "bar", "shard hello")  # slot 5061, owned by node 1
        a.execute_command("hellocluster.pingall")
        time.sleep(1)
        mark("manual failover")
        d.execute_command("CLUSTER", "FAILOVER")
        wait_for("manual failover", lambda: "master" in role(d, ids[4]))
        # 7.2 may leave the old master as an empty master: make it the replica explicitly so
        # that killing node 4 triggers a real election.
        wait_for("node 1 replica", lambda: "slave" in role(a, ids[1])
                 or a.execute_command("CLUSTER", "REPLICATE", ids[4]) and False)
        wait_for("replica link", lambda: a.info("replication")["master_link_status"] == "up")
        a.execute_command("CLUSTER", "SAVECONFIG")
        os.makedirs(os.path.join(out, "nodes_conf"), exist_ok=True)
        shutil.copy(os.path.join(work, "n1", "nodes.conf"),
                    os.path.join(out, "nodes_conf", "replica.conf"))
        time.sleep(2)
        mark("kill 4")
        procs[4].kill()
        procs[4].wait()
        wait_for("node 1 promoted", lambda: "master" in role(a, ids[1])
                 and "fail" in role(b, ids[4]).split(","), timeout=40)
        time.sleep(1)
        mark("restart 4")
        # Node 4 comes back still claiming 0-5460 with its old configEpoch. While its relay
        # holds back what others send it, they answer its stale claims with UPDATE messages.
        blackholed.add(4)
        procs[4], clients[4] = start_node(redis_server, module, work, 4)
        d = clients[4]
        time.sleep(6)
        blackholed.discard(4)
        wait_for("node 4 learns the new owner", lambda: any(
            l.startswith(ids[1]) and l.endswith("0-5460")
            for l in d.execute_command("CLUSTER", "NODES").splitlines()), timeout=40)
        time.sleep(2)
        mark("migrating")
        a.execute_command("CLUSTER", "SETSLOT", 100, "MIGRATING", ids[2])
        b.execute_command("CLUSTER", "SETSLOT", 100, "IMPORTING", ids[1])
        mark("node 5 joins")
        procs[5], clients[5] = start_node(redis_server, module, work, 5)
        ids[5] = clients[5].execute_command("CLUSTER", "MYID")
        a.execute_command("CLUSTER", "MEET", "127.0.0.1", port(5), relay_port(5))
        wait_for("node 5 known", lambda: all(cinfo(clients[i])["cluster_known_nodes"] == "5"
                                             for i in range(1, 5)))
        for i in range(1, 5):
            clients[i].execute_command("CLUSTER", "SAVECONFIG")
        os.makedirs(os.path.join(out, "nodes_conf"), exist_ok=True)
        shutil.copy(os.path.join(work, "n1", "nodes.conf"),
                    os.path.join(out, "nodes_conf", "master_migrating.conf"))
        shutil.copy(os.path.join(work, "n2", "nodes.conf"),
                    os.path.join(out, "nodes_conf", "master_importing.conf"))
        shutil.copy(os.path.join(work, "n4", "nodes.conf"),
                    os.path.join(out, "nodes_conf", "empty_master.conf"))
        mark("forget 5")
        clients[5].shutdown(nosave=True)
        procs[5].wait()
        for i in range(1, 5):
            clients[i].execute_command("CLUSTER", "FORGET", ids[5])
        time.sleep(2)
        clients[3].execute_command("CLUSTER", "SAVECONFIG")
        shutil.copy(os.path.join(work, "n3", "nodes.conf"),
                    os.path.join(out, "nodes_conf", "plain_master.conf"))
        mark("done")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs.values():
            p.wait()
        with open(os.path.join(work, "all.txt"), "w") as f:
            for t, node, direction, msg in captured:
                i = describe(msg)
                f.write(f"{t:.3f} {direction} {node} {i['type']} {i['sender'][:8]} "
                        f"len={len(msg)} count={i['count']} ext={i['extensions']}\n")
        write_fixtures(out, ids, events)


def describe(msg):
    t = int.from_bytes(msg[12:14], "big")
    return {
        "type": TYPES.get(t, str(t)),
        "count": int.from_bytes(msg[14:16], "big"),
        "sender": msg[40:80].decode(),
        "extensions": int.from_bytes(msg[2214:2216], "big"),
        "mflags0": msg[2253],
    }


def write_fixtures(out, ids, events):
    bus = os.path.join(out, "bus")
    os.makedirs(bus, exist_ok=True)
    with open(os.path.join(bus, "nodes.txt"), "w") as f:
        f.write("# index port relay_bus_port node_id hostname human_nodename ('-' = none)\n")
        for i, nid in sorted(ids.items()):
            host, human = NODES[i]
            f.write(f"{i} {port(i)} {relay_port(i)} {nid} {host or '-'} {human or '-'}\n")
    with open(os.path.join(bus, "events.txt"), "w") as f:
        for t, label in events:
            f.write(f"{t:.3f} {label}\n")
    by_name = {v: k for k, v in ids.items()}
    picked = {}

    def want(name, pred, limit=1):
        n = 0
        for t, node, direction, msg in captured:
            info = describe(msg)
            if pred(info, msg, node, direction):
                picked[f"{name}_{n}" if limit > 1 else name] = (t, node, direction, msg, info)
                n += 1
                if n == limit:
                    return
        print(f"not captured: {name}", flush=True)

    def is_(typ):
        return lambda info, *_: info["type"] == typ

    want("meet", is_("MEET"), 2)
    want("ping_gossip_ext", lambda i, m, *_: i["type"] == "PING" and i["count"] >= 2
         and i["extensions"] >= 2, 2)
    want("pong_gossip_ext", lambda i, m, *_: i["type"] == "PONG" and i["count"] >= 2
         and i["extensions"] >= 3)
    want("pong_no_gossip", lambda i, *_: i["type"] == "PONG" and i["count"] == 0)
    want("ping_from_replica", lambda i, m, *_: i["type"] == "PING" and m[2128] != 0)
    want("ping_paused", lambda i, *_: i["type"] in ("PING", "PONG") and i["mflags0"] & 1)
    want("ping_forgotten_node", lambda i, m, *_: i["type"] in ("PING", "PONG")
         and forgotten_ext(m, i["count"], i["extensions"]))
    want("publish", is_("PUBLISH"))
    want("publishshard", is_("PUBLISHSHARD"))
    want("module", is_("MODULE"), 2)
    want("mfstart", is_("MFSTART"))
    want("failover_auth_request", is_("FAILOVER_AUTH_REQUEST"), 2)
    want("failover_auth_ack", is_("FAILOVER_AUTH_ACK"), 2)
    want("fail", is_("FAIL"))
    want("update", is_("UPDATE"))
    for name, (t, node, direction, msg, info) in sorted(picked.items()):
        with open(os.path.join(bus, name + ".hex"), "w") as f:
            f.write(f"# type: {info['type']}\n")
            f.write(f"# sender: {by_name.get(info['sender'], '?')}\n")
            f.write(f"# link: {direction} node {node}\n")
            f.write(f"# totlen: {len(msg)}\n")
            h = msg.hex()
            for k in range(0, len(h), 128):
                f.write(h[k:k + 128] + "\n")
    counts = {}
    for _, _, _, msg in captured:
        n = describe(msg)["type"]
        counts[n] = counts.get(n, 0) + 1
    print("captured:", counts, flush=True)


def forgotten_ext(msg, count, exts):
    off = 2256 + 104 * count
    for _ in range(exts):
        if off + 8 > len(msg):
            return False
        length = int.from_bytes(msg[off:off + 4], "big")
        if int.from_bytes(msg[off + 4:off + 6], "big") == 2:
            return True
        if length == 0:
            return False
        off += length
    return False


def capture_tls(redis_server, certs, out):
    work = f"/tmp/tern-bus-capture-tls-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    procs, clients = [], []
    try:
        for i in (1, 2):
            d = os.path.join(work, f"t{i}")
            os.makedirs(d)
            procs.append(subprocess.Popen([
                redis_server, "--port", str(7610 + i), "--tls-port", str(7630 + i),
                "--tls-cluster", "yes", "--tls-replication", "yes",
                "--tls-cert-file", os.path.join(certs, "redis.crt"),
                "--tls-key-file", os.path.join(certs, "redis.key"),
                "--tls-ca-cert-file", os.path.join(certs, "ca.crt"),
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--dir", d,
                "--save", "", "--appendonly", "no", "--logfile", os.path.join(d, "log.txt"),
                "--cluster-announce-human-nodename", f"tls-{i}",
            ]))
            c = redis.Redis(port=7610 + i, decode_responses=True)
            wait_for("tls node", c.ping)
            clients.append(c)
        clients[0].execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 8191)
        clients[1].execute_command("CLUSTER", "ADDSLOTSRANGE", 8192, 16383)
        clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", 7632)
        for c in clients:
            wait_for("tls cluster ok", lambda c=c: cinfo(c)["cluster_state"] == "ok")
        os.makedirs(os.path.join(out, "nodes_conf"), exist_ok=True)
        for i, c in enumerate(clients, 1):
            c.execute_command("CLUSTER", "SAVECONFIG")
            shutil.copy(os.path.join(work, f"t{i}", "nodes.conf"),
                        os.path.join(out, "nodes_conf", f"tls_{i}.conf"))
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1] == "--tls":
        capture_tls(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main()

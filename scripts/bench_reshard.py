#!/usr/bin/env python3
"""Resharding under load (issue #18's report): two cluster masters, BENCH_RESHARD_KEYS keys
(default 1,000,000) in the slots being moved, a cluster client reading and writing those keys
while `redis-cli --cluster reshard` moves the slots from one master to the other; tern vs
redis-server 7.2.6 side by side. Report-only, never part of `make test`.

Called by `make bench-reshard` (scripts/bench.sh with BENCH_SCRIPT=bench_reshard.py, which builds
tern first unless TERN_SERVER is set). The load generator is redis-py's RedisCluster (the
project's .venv; this script re-runs itself with the venv's python when redis-py is missing).

Per server kind (BENCH_RESHARD_SERVERS, default tern,redis-7.2.6):
1. Two nodes with `--cluster-enabled yes --save "" --appendonly no` (tern with `--threads
   BENCH_TERN_THREADS`, default 1), both pinned to core 0; node A gets slots 0-8191 and node B
   8192-16383 (CLUSTER SET-CONFIG-EPOCH 1/2, ADDSLOTSRANGE, MEET), then both must agree.
2. A is filled over one pipelined connection with BENCH_RESHARD_KEYS keys of BENCH_RESHARD_VALUE
   bytes (default 64) spread evenly over its first BENCH_RESHARD_SLOTS slots (default 4096):
   `{tag}:N` names where each tag hashes to one of those slots.
3. The load (one process on core 1, closed loop, one RedisCluster client): a random key of the
   moved set per operation, half GET (checked against what was last written) and half SET.
   It runs BENCH_RESHARD_WARMUP s (default 2) before the reshard and stops when it ends.
4. `redis-cli --cluster reshard A --cluster-from A --cluster-to B --cluster-slots
   BENCH_RESHARD_SLOTS --cluster-pipeline BENCH_RESHARD_PIPELINE (default 1000) --cluster-yes`
   on core 1, timed. Then `--cluster check`, and B must hold every key.

Printed (and saved to bench-results/): time to reshard, keys/s moved, the errors the load saw
(any exception surfaced by the client, or a GET returning something else than was written), the
load's ops/s and p50/p99/max latency during the reshard and during the warm-up before it.

Environment: TERN_SERVER, BENCH_REDIS72 (default ~/redis-7.2.6/src/redis-server), BENCH_REDIS_CLI
(default: the 7.2.6 build's redis-cli, else redis-cli on PATH), BENCH_RESHARD_KEYS,
BENCH_RESHARD_SLOTS, BENCH_RESHARD_VALUE, BENCH_RESHARD_PIPELINE, BENCH_RESHARD_WARMUP,
BENCH_RESHARD_SERVERS, BENCH_TERN_THREADS, BENCH_PORT_BASE (default 7890: ports base, base+1 and
their bus ports +10000).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import redis  # noqa: F401
    from redis.cluster import RedisCluster
except ImportError:
    venv_py = Path(__file__).resolve().parents[1] / ".venv/bin/python"
    if venv_py.exists() and Path(sys.executable).resolve() != venv_py.resolve():
        os.execv(str(venv_py), [str(venv_py), *sys.argv])
    sys.exit("bench_reshard needs redis-py: run scripts/setup.sh (it makes .venv)")

from bench_common import TERN, Server, bulk_body, fmt, invocation, resp, save_table  # noqa: E402

KEYS = int(os.environ.get("BENCH_RESHARD_KEYS", "1000000"))
SLOTS = int(os.environ.get("BENCH_RESHARD_SLOTS", "4096"))
VALUE = int(os.environ.get("BENCH_RESHARD_VALUE", "64"))
PIPELINE = int(os.environ.get("BENCH_RESHARD_PIPELINE", "1000"))
WARMUP = float(os.environ.get("BENCH_RESHARD_WARMUP", "2"))
TERN_THREADS = os.environ.get("BENCH_TERN_THREADS", "1")
PORT_BASE = int(os.environ.get("BENCH_PORT_BASE", "7890"))
REDIS72 = os.environ.get("BENCH_REDIS72", os.path.expanduser("~/redis-7.2.6/src/redis-server"))
REDIS_CLI = os.environ.get("BENCH_REDIS_CLI") or next(
    (p for p in (os.path.expanduser("~/redis-7.2.6/src/redis-cli"),) if os.access(p, os.X_OK)),
    shutil.which("redis-cli"),
)
SERVER_CPU, LOAD_CPU = "0", "1"


# ---- hash slots -----------------------------------------------------------------------------

_TABLE = []
for _i in range(256):
    _c = _i << 8
    for _ in range(8):
        _c = ((_c << 1) ^ 0x1021) if _c & 0x8000 else (_c << 1)
    _TABLE.append(_c & 0xFFFF)


def crc16(data: bytes) -> int:
    crc = 0
    for b in data:
        crc = ((crc << 8) & 0xFFFF) ^ _TABLE[((crc >> 8) ^ b) & 0xFF]
    return crc


def tags_for_slots(n: int) -> list[str]:
    """One hash tag per slot 0..n-1 (the tag's CRC16 mod 16384 is the slot)."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < n:
        t = f"t{i}"
        s = crc16(t.encode()) % 16384
        if s < n and s not in found:
            found[s] = t
        i += 1
    return [found[s] for s in range(n)]


def key_names(tags: list[str], total: int) -> list[str]:
    """`total` keys spread round-robin over the tags' slots."""
    return [f"{{{tags[i % len(tags)]}}}:{i}" for i in range(total)]


# ---- the two-node cluster ---------------------------------------------------------------------


def command(port: int, *args: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(resp(*(a.encode() for a in args)))
        buf = b""
        while not buf.endswith(b"\r\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
            if buf.startswith(b"$") and b"\r\n" in buf:
                n = int(buf[1 : buf.index(b"\r\n")])
                if len(buf) >= buf.index(b"\r\n") + 2 + n + 2:
                    break
        return buf


def text(port: int, *args: str) -> str:
    r = command(port, *args)
    return (bulk_body(r) if r.startswith(b"$") else r).decode(errors="replace").strip()


def start_nodes(kind: str, exe: str) -> list[Server]:
    extra = ["--threads", TERN_THREADS] if kind == "tern" else []
    nodes = []
    for i in range(2):
        s = Server(
            label=f"{kind}-{i}",
            argv=[
                exe, "--save", "", "--appendonly", "no", "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "15000",
                *extra,
            ],
            port=PORT_BASE + i,
            cpus=SERVER_CPU,
        )  # fmt: skip
        s.start()
        nodes.append(s)
    return nodes


def form_cluster(a: Server, b: Server) -> None:
    for node, epoch, lo, hi in ((a, 1, 0, 8191), (b, 2, 8192, 16383)):
        for args in (("CLUSTER", "SET-CONFIG-EPOCH", str(epoch)), ("CLUSTER", "ADDSLOTSRANGE", str(lo), str(hi))):
            r = text(node.port, *args)
            if r != "+OK":
                raise RuntimeError(f"{node.label}: {' '.join(args)} -> {r}")
    r = text(a.port, "CLUSTER", "MEET", "127.0.0.1", str(b.port))
    if r != "+OK":
        raise RuntimeError(f"CLUSTER MEET -> {r}")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        states = [text(n.port, "CLUSTER", "INFO") for n in (a, b)]
        if all("cluster_state:ok" in s and "cluster_known_nodes:2" in s for s in states):
            out = cli("check", f"127.0.0.1:{a.port}", check=False)
            if "[ERR]" not in out and "[WARNING]" not in out:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the two nodes did not form a cluster: {states}")


def cli(*args: str, check: bool = True, timeout: float = 3600) -> str:
    argv = ["taskset", "-c", LOAD_CPU, REDIS_CLI, "--cluster", *args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    out = p.stdout + p.stderr
    if check and p.returncode != 0:
        raise RuntimeError(f"redis-cli --cluster {args[0]} exited {p.returncode}: {out[-1500:]}")
    return out


def fill(port: int, keys: list[str]) -> None:
    """SET every key on one pipelined connection, 10,000 commands per batch."""
    value = (b"v" * VALUE)
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        for i in range(0, len(keys), 10_000):
            batch = keys[i : i + 10_000]
            s.sendall(b"".join(resp(b"SET", k.encode(), value) for k in batch))
            want, got = len(batch) * 5, b""  # "+OK\r\n" per command
            while len(got) < want:
                chunk = s.recv(1 << 20)
                if not chunk:
                    raise RuntimeError("connection closed while filling")
                got += chunk
            if got != b"+OK\r\n" * len(batch):
                raise RuntimeError(f"fill: unexpected reply {got[:200]!r}")


# ---- the load -------------------------------------------------------------------------------


def load_worker(port: int, keys: list[str], stop, conn) -> None:
    """Closed-loop GET/SET on the moved keys; sends back (t, latency) samples and errors."""
    os.sched_setaffinity(0, {int(LOAD_CPU)})
    rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)
    rnd = random.Random(1)
    base = "v" * VALUE
    written: dict[str, str] = {}
    times, lats, errors = [], [], []
    n = 0
    while not stop.is_set():
        k = keys[rnd.randrange(len(keys))]
        n += 1
        t0 = time.monotonic()
        try:
            if n % 2:
                v = f"{n}:{base}"[:VALUE]
                rc.set(k, v)
                written[k] = v
            else:
                got = rc.get(k)
                if got != written.get(k, base):
                    errors.append((t0, f"GET {k} returned {got!r}"))
        except Exception as e:  # noqa: BLE001 - every error the client surfaced is a finding
            errors.append((t0, f"{type(e).__name__}: {e}"))
        t1 = time.monotonic()
        times.append(t0)
        lats.append(t1 - t0)
    rc.close()
    conn.send((times, lats, errors))
    conn.close()


def stats(times: list[float], lats: list[float], lo: float, hi: float) -> dict:
    window = sorted(l for t, l in zip(times, lats) if lo <= t < hi)
    if not window:
        return {"ops": 0, "ops_s": float("nan"), "p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    pct = lambda q: window[min(len(window) - 1, int(q * len(window)))] * 1000  # noqa: E731
    return {
        "ops": len(window),
        "ops_s": len(window) / (hi - lo),
        "p50": pct(0.50),
        "p99": pct(0.99),
        "max": window[-1] * 1000,
    }


# ---- one run --------------------------------------------------------------------------------


def run(kind: str, exe: str, keys: list[str]) -> dict:
    a, b = start_nodes(kind, exe)
    try:
        form_cluster(a, b)
        t0 = time.monotonic()
        fill(a.port, keys)
        fill_s = time.monotonic() - t0
        assert int(text(a.port, "DBSIZE")[1:]) == len(keys), "A holds every key"
        stop = mp.Event()
        parent, child = mp.Pipe(duplex=False)
        worker = mp.get_context("fork").Process(target=load_worker, args=(a.port, keys, stop, child))
        worker.start()
        time.sleep(WARMUP)
        ids = [text(n.port, "CLUSTER", "MYID") for n in (a, b)]
        r0 = time.monotonic()
        out = cli(
            "reshard", f"127.0.0.1:{a.port}", "--cluster-from", ids[0], "--cluster-to", ids[1],
            "--cluster-slots", str(SLOTS), "--cluster-pipeline", str(PIPELINE), "--cluster-yes",
            check=False,
        )  # fmt: skip
        r1 = time.monotonic()
        stop.set()
        times, lats, errors = parent.recv()
        worker.join(30)
        failed = "[ERR]" in out or "clusterManagerMoveSlot failed" in out or "*** " in out
        check = cli("check", f"127.0.0.1:{a.port}", check=False)
        b_keys = int(text(b.port, "DBSIZE")[1:])
        a_keys = int(text(a.port, "DBSIZE")[1:])
        return {
            "kind": kind,
            "fill_s": fill_s,
            "reshard_s": r1 - r0,
            "reshard_ok": not failed and b_keys == len(keys) and a_keys == 0,
            "reshard_tail": "" if not failed else out.strip().splitlines()[-1][:160],
            "check_ok": "[ERR]" not in check and "[WARNING]" not in check,
            "a_keys": a_keys,
            "b_keys": b_keys,
            "errors": [e for e in errors if r0 - WARMUP <= e[0]],
            "during": stats(times, lats, r0, r1),
            "before": stats(times, lats, r0 - WARMUP, r0),
        }
    finally:
        a.stop()
        b.stop()


def main() -> None:
    if not REDIS_CLI:
        sys.exit("redis-cli not found (run scripts/setup.sh)")
    kinds = {"tern": TERN, "redis-7.2.6": REDIS72}
    wanted = os.environ.get("BENCH_RESHARD_SERVERS", "tern,redis-7.2.6").split(",")
    print(f"# {invocation()}", file=sys.stderr)
    print(f"preparing {KEYS} key names over {SLOTS} slots ...", file=sys.stderr)
    keys = key_names(tags_for_slots(SLOTS), KEYS)
    results = []
    for kind in wanted:
        exe = kinds.get(kind)
        if not exe or not os.access(exe, os.X_OK):
            print(f"skipping {kind}: no executable {exe}", file=sys.stderr)
            continue
        print(f"running {kind} ...", file=sys.stderr)
        try:
            results.append(run(kind, exe, keys))
        except Exception as e:  # noqa: BLE001 - a server that cannot do it is a row, not a crash
            results.append({"kind": kind, "failure": f"{type(e).__name__}: {e}"[:300]})
        print(f"  {results[-1] if 'failure' in results[-1] else 'done'}", file=sys.stderr)

    lines = [
        f"## Reshard of {SLOTS} slots holding {KEYS:,} keys ({VALUE} B values) between two "
        f"masters under load",
        "",
        f"redis-cli: {REDIS_CLI} (--cluster-pipeline {PIPELINE}); servers on core {SERVER_CPU}, "
        f"load and redis-cli on core {LOAD_CPU}; tern --threads {TERN_THREADS}",
        "",
        "| server | reshard s | keys/s moved | all keys moved | check | load errors | "
        "ops/s during | p50 ms during | p99 ms during | max ms during | p50 / p99 ms before |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "failure" in r:
            lines.append(f"| {r['kind']} | failed: {r['failure']} |" + " |" * 9)
            continue
        d, b = r["during"], r["before"]
        moved = "yes" if r["reshard_ok"] else f"no (A {r['a_keys']}, B {r['b_keys']}) {r['reshard_tail']}"
        lines.append(
            f"| {r['kind']} | {r['reshard_s']:.1f} | {fmt(KEYS / r['reshard_s'], ',.0f')} | {moved} | "
            f"{'clean' if r['check_ok'] else 'ERR'} | {len(r['errors'])} | {fmt(d['ops_s'], ',.0f')} | "
            f"{fmt(d['p50'], '.2f')} | {fmt(d['p99'], '.2f')} | {fmt(d['max'], '.1f')} | "
            f"{fmt(b['p50'], '.2f')} / {fmt(b['p99'], '.2f')} |"
        )
    for r in results:
        if r.get("errors"):
            lines.append("")
            lines.append(f"{r['kind']}: first errors seen by the load:")
            lines.extend(f"- {msg}" for _, msg in r["errors"][:5])
    save_table("\n".join(lines), "reshard")


if __name__ == "__main__":
    main()

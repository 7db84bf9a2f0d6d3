#!/usr/bin/env python3
"""What cluster mode costs one node: the same server with and without `cluster-enabled yes`.

Issue #18 asks that the per-command slot check cost at most 5 % of ops per server CPU-second.
Each server is one node owning all 16384 slots (CLUSTER ADDSLOTSRANGE 0 16383), so every
command passes the check and none is redirected; the load is bench.py's workloads (SET/GET,
100 B, unpipelined and -P16; SET 256 B -P30) from redis-benchmark on core 1, the server pinned
to core 0. tern runs with --threads 1; Redis 7.2.6 built from source (~/redis-7.2.6, or
$REDIS_726_SERVER) is measured the same way when present, for its own cluster-mode cost.
Medians of BENCH_ROUNDS interleaved rounds (default 3). Report only, never a test.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from bench import ROUNDS, WORKLOADS, median_result, run_workload
from bench_common import REDIS_726, Server, fmt, pick_port, save_table

ROOT = Path(__file__).resolve().parents[1]
PORT_BASE = int(os.environ.get("BENCH_PORT_BASE", "7590"))


def own_all_slots(server: Server) -> None:
    reply = server.command(b"CLUSTER", b"ADDSLOTSRANGE", b"0", b"16383")
    if not reply.startswith(b"+OK"):
        sys.exit(f"{server.label}: CLUSTER ADDSLOTSRANGE answered {reply!r}")
    deadline = time.monotonic() + 30
    while server.info(b"cluster").get("cluster_enabled") != "1" or b"cluster_state:ok" not in server.command(
        b"CLUSTER", b"INFO"
    ):
        if time.monotonic() > deadline:
            sys.exit(f"{server.label}: cluster_state never became ok")
        time.sleep(0.1)


def main() -> None:
    tern = os.environ.get("TERN_SERVER", str(ROOT / "target" / "release" / "tern-server"))
    pairs = [("tern --threads 1", [tern, "--save", "", "--threads", "1"])]
    if os.access(REDIS_726, os.X_OK):
        pairs.append(("redis 7.2.6", [REDIS_726, "--save", "", "--appendonly", "no"]))
    servers: list[tuple[Server, bool]] = []
    port = PORT_BASE
    for label, argv in pairs:
        for cluster in (False, True):
            extra = ["--cluster-enabled", "yes"] if cluster else []
            name = f"{label}{' cluster' if cluster else ''}"
            servers.append((Server(name, argv + extra, pick_port(port), "0"), cluster))
            port += 1
    samples: dict[tuple[str, str], list] = {}
    try:
        for s, cluster in servers:
            s.start()
            if cluster:
                own_all_slots(s)
        for rnd in range(ROUNDS):
            order = servers[rnd % len(servers):] + servers[: rnd % len(servers)]
            for w in WORKLOADS:
                for s, _ in order:
                    samples.setdefault((w.name, s.label), []).append(run_workload(s, w))
    finally:
        for s, _ in servers:
            s.stop()
    results = {k: median_result(v) for k, v in samples.items()}
    lines = [
        "| workload | server | ops/s | p50 ms | p99 ms | p99.9 ms | ops per server CPU-s | cluster/plain ops/CPU-s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for w in WORKLOADS:
        for i, (s, cluster) in enumerate(servers):
            r = results[(w.name, s.label)]
            ratio = ""
            if cluster:
                plain = results[(w.name, servers[i - 1][0].label)]
                ratio = fmt(r.ops_per_cpu_s / plain.ops_per_cpu_s, ".3f")
            lines.append(
                f"| {w.name} | {s.label} | {r.rps:,.0f} | {fmt(r.p50, '.3f')} | {fmt(r.p99, '.3f')} | "
                f"{fmt(r.p999, '.3f')} | {fmt(r.ops_per_cpu_s, ',.0f')} | {ratio} |"
                + (f" {r.note}" if r.note else "")
            )
    lines.append("")
    lines.append(
        f"Medians of {ROUNDS} interleaved rounds; each cluster-mode server is one node owning every "
        "slot; servers pinned to core 0, redis-benchmark on core 1."
    )
    save_table("\n".join(lines), "bench-cluster-mode")


if __name__ == "__main__":
    main()

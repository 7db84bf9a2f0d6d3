#!/usr/bin/env python3
"""Side-by-side benchmark of atomic and fan-out workloads: Debian's redis-server vs tern-server.

Called by `make bench-atomic` (scripts/bench.sh with BENCH_SCRIPT=bench_atomic.py, which builds
tern first unless TERN_SERVER is set). Report-only: never part of `make test`.

Method. Servers, each started fresh per workload:
  * redis-server pinned to core 0 (`taskset -c 0`, `--save "" --appendonly no`);
  * tern --threads 1 pinned to core 0;
  * tern --threads 2 on cores 0,1 (sharing core 1 with the load generator: marked *).
The load generator is target/release/tern-bench (closed loop: each connection sends one unit,
waits for its replies, records the unit's latency), pinned to core 1. Workloads:
  * multi-incr5: MULTI, 5 INCRs of random keys out of 10,000, EXEC; 50 connections;
  * evalsha: EVALSHA of a 2-key read-modify-write script on 2 random keys; 50 connections;
  * evalsha-p20: the same, 20 EVALSHAs per pipeline, so that the server (not the load
    generator) is the bottleneck: the tern --threads 2 row then shows whether scripts on
    different keys run in parallel on two threads;
  * publish: PUBLISH of 16 bytes to one channel with 100 subscriber connections; 4 publishers.
The server's CPU time (utime + stime of /proc/PID/stat) is read before and after each run, so
"ops per server CPU-s" compares efficiency independently of the load generator's limits. A
workload the server answers with an error (tern before scripting landed) is reported as such.

Environment: TERN_SERVER, TERN_BENCH (default target/release/tern-bench), BENCH_SECONDS
(default 5), BENCH_ROUNDS (default 3; medians are shown), BENCH_PORT_BASE (default 35300),
BENCH_WORKLOADS (comma-separated subset).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from dataclasses import dataclass

import bench_common
from bench_common import TERN, TERN_BENCH, pick_port, save_table

SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
PORT_BASE = int(os.environ.get("BENCH_PORT_BASE", "35300"))

WORKLOADS = {
    "multi-incr5": ["--workload", "multi-incr5", "--clients", "50"],
    "evalsha": ["--workload", "evalsha", "--clients", "50"],
    "evalsha-p20": ["--workload", "evalsha", "--clients", "50", "--pipeline", "20"],
    "publish": ["--workload", "publish", "--clients", "4", "--subscribers", "100"],
}


@dataclass
class Setup:
    """A server configuration; each run starts a fresh bench_common.Server from it."""

    label: str
    cpus: str
    argv: list[str]


SERVERS = [
    Setup("redis-server (core 0)", "0", ["redis-server", "--save", "", "--appendonly", "no"]),
    Setup("tern --threads 1 (core 0)", "0", [TERN, "--save", "", "--threads", "1"]),
    Setup("tern --threads 2 (cores 0,1)*", "0,1", [TERN, "--save", "", "--threads", "2"]),
]


def run_once(server: Setup, workload: str, port: int) -> dict:
    proc = bench_common.Server(server.label, server.argv, port, cpus=server.cpus)
    try:
        proc.start()
        cpu0 = proc.cpu_seconds()
        r = subprocess.run(
            ["taskset", "-c", "1", TERN_BENCH, "--port", str(port), "--seconds", str(SECONDS),
             *WORKLOADS[workload]],
            capture_output=True,
            text=True,
            timeout=SECONDS + 60,
        )
        cpu = proc.cpu_seconds() - cpu0
        if r.returncode != 0:
            err = (r.stderr.strip().splitlines() or ["failed"])[-1]
            return {"error": err[:120]}
        out = json.loads(r.stdout.strip().splitlines()[-1])
        out["cpu"] = cpu
        return out
    finally:
        proc.stop()


def med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> None:
    chosen = os.environ.get("BENCH_WORKLOADS", ",".join(WORKLOADS)).split(",")
    port = pick_port(PORT_BASE)
    lines = [
        "| workload | server | ops/s | p50 ms | p99 ms | p99.9 ms | deliveries/s | ops per server CPU-s "
        "| tern/redis ops/s | tern/redis ops/CPU-s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for w in chosen:
        results: dict[str, list[dict]] = {s.label: [] for s in SERVERS}
        errors: dict[str, str] = {}
        for _ in range(ROUNDS):  # interleaved rounds: noise hits every server alike
            for s in SERVERS:
                if s.label in errors:
                    continue
                r = run_once(s, w, port)
                if "error" in r or r.get("errors"):
                    errors[s.label] = r.get("error", f"{r.get('errors')} error replies")
                else:
                    results[s.label].append(r)
        base = None
        for s in SERVERS:
            rows = results[s.label]
            if s.label in errors:
                lines.append(f"| {w} | {s.label} | {errors[s.label]} | | | | | | | |")
                continue
            ops = med(rows, "ops_per_sec")
            eff = statistics.median(r["ops"] / r["cpu"] for r in rows if r["cpu"] > 0)
            deliv = statistics.median(r["delivered"] / r["secs"] for r in rows)
            if base is None:
                base = (ops, eff)
                ratio = ("", "")
            else:
                ratio = (f"{ops / base[0]:.2f}", f"{eff / base[1]:.2f}")
            lines.append(
                f"| {w} | {s.label} | {ops:,.0f} | {med(rows, 'p50_ms'):.3f} | "
                f"{med(rows, 'p99_ms'):.3f} | {med(rows, 'p999_ms'):.3f} | "
                f"{deliv:,.0f} | {eff:,.0f} | {ratio[0]} | {ratio[1]} |"
            )
    table = "\n".join(lines) + (
        f"\n\nMedians of {ROUNDS} interleaved rounds of {SECONDS:g} s; load from tern-bench on "
        "core 1. * tern --threads 2 shares core 1 with the load generator."
    )
    save_table(table, "bench-atomic")


if __name__ == "__main__":
    main()

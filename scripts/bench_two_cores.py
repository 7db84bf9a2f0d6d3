#!/usr/bin/env python3
"""Two cores, honestly: where each core's time goes when the server may use both.

Called by `make bench-two-cores` (scripts/bench.sh with BENCH_SCRIPT=bench_two_cores.py).
Report-only: never part of `make test`.

Servers, each on cores 0,1 (`taskset -c 0,1`), one at a time, fresh per run:
  * tern --threads 2 (epoll, and io_uring where that backend starts);
  * Redis 7.2.6 built from source (~/redis-7.2.6 or $REDIS_726_SERVER) with io-threads 2 and
    io-threads-do-reads yes (Debian's redis-server when 7.2.6 is absent).
The load generator, redis-benchmark (50 connections, 100-byte values, -r 100000), is pinned to
core 1: it shares that core with the server's second thread, as it would on any 2-core box
where the clients run locally. Workloads: SET and GET, unpipelined and -P16.

For each run the table gives ops/s and, per core, how its time was split (from /proc/stat:
user+nice+system+irq+softirq vs idle) next to who used it: the server's threads (utime+stime of
each /proc/PID/task/TID, grouped by thread name) and the load generator (its utime+stime), so
the second core's use is visible: server work, load generator, kernel network work done in
interrupt context, or idle.

Environment: TERN_SERVER, BENCH_REQUESTS (default 400000 unpipelined, 5x pipelined),
BENCH_ROUNDS (default 3; medians), BENCH_PORT_BASE (default 35700).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from bench_common import CLK_TCK, REDIS_726, TERN, Server, fmt, invocation, pick_port, save_table

N = int(os.environ.get("BENCH_REQUESTS", "400000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
PORT_BASE = int(os.environ.get("BENCH_PORT_BASE", "35700"))
WORKLOADS = [("SET", "set", 1), ("GET", "get", 1), ("SET -P16", "set", 16), ("GET -P16", "get", 16)]


def core_ticks() -> dict[str, tuple[int, int]]:
    """Per core: (busy, idle) ticks since boot (idle includes iowait)."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        f = line.split()
        if f[0].startswith("cpu") and f[0] != "cpu":
            user, nice, system, idle, iowait, irq, softirq, steal = map(int, f[1:9])
            out[f[0]] = (user + nice + system + irq + softirq + steal, idle + iowait)
    return out


def softirq_ticks() -> dict[str, int]:
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        f = line.split()
        if f[0].startswith("cpu") and f[0] != "cpu":
            out[f[0]] = int(f[6]) + int(f[7])
    return out


def thread_ticks(pid: int) -> dict[str, int]:
    """utime+stime per thread name of process `pid` (numbered names grouped: tern-worker-0)."""
    out: dict[str, int] = defaultdict(int)
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[name] += int(fields[11]) + int(fields[12])
    return out


def run(label: str, argv: list[str], test: str, pipeline: int, port: int) -> dict:
    server = Server(label, argv, port, cpus="0,1")
    server.start()
    try:
        requests = N if pipeline == 1 else 5 * N
        cmd = ["taskset", "-c", "1", "redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", "50",
               "-n", str(requests), "-d", "100", "-P", str(pipeline), "-t", test, "-r", "100000", "-q"]
        t0, c0, s0 = thread_ticks(server.proc.pid), core_ticks(), softirq_ticks()
        start = time.monotonic()
        bench = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        # The load generator's own CPU, read just before it exits (it is our child: wait4's
        # rusage gives it exactly).
        _, status, usage = os.wait4(bench.pid, 0)
        wall = time.monotonic() - start
        out = bench.stdout.read()
        t1, c1, s1 = thread_ticks(server.proc.pid), core_ticks(), softirq_ticks()
    finally:
        server.stop()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"redis-benchmark failed: {out[-300:]}")
    threads = {k: (t1.get(k, 0) - t0.get(k, 0)) / CLK_TCK for k in t1}
    return {
        "ops": requests / wall,
        "wall": wall,
        "threads": {k: v for k, v in threads.items() if v > 0},
        "load": usage.ru_utime + usage.ru_stime,
        "cores": {c: ((c1[c][0] - c0[c][0]) / CLK_TCK, (c1[c][1] - c0[c][1]) / CLK_TCK) for c in ("cpu0", "cpu1")},
        "softirq": {c: (s1[c] - s0[c]) / CLK_TCK for c in ("cpu0", "cpu1")},
    }


def main() -> None:
    if (os.cpu_count() or 1) < 2:
        sys.exit("needs 2 cores")
    redis = REDIS_726 if os.access(REDIS_726, os.X_OK) else "redis-server"
    rlabel = "redis 7.2.6" if redis == REDIS_726 else "redis-server"
    servers = [
        (f"{rlabel} io-threads 2", [redis, "--save", "", "--appendonly", "no", "--io-threads", "2",
                                    "--io-threads-do-reads", "yes"]),
        ("tern --threads 2", [TERN, "--save", "", "--threads", "2"]),
    ]
    probe = Server("probe", [TERN, "--save", "", "--io-backend", "io_uring"], pick_port(PORT_BASE))
    try:
        probe.start(timeout=5)
        probe.stop()
        servers.append(("tern --threads 2 io_uring", [TERN, "--save", "", "--threads", "2", "--io-backend", "io_uring"]))
    except SystemExit:
        pass
    port = pick_port(PORT_BASE + 1)
    results: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for rnd in range(ROUNDS):
        order = servers[rnd % len(servers):] + servers[: rnd % len(servers)]
        for name, test, pipeline in WORKLOADS:
            for label, argv in order:
                r = run(label, argv, test, pipeline, port)
                results[(name, label)].append(r)
                print(f"  {name:<9} {label:<26} {r['ops']:>10,.0f} ops/s  server threads "
                      + ", ".join(f"{k} {v:.2f}s" for k, v in sorted(r["threads"].items()))
                      + f"  load {r['load']:.2f}s  wall {r['wall']:.2f}s", file=sys.stderr, flush=True)

    def med(rs: list[dict], f) -> float:
        return statistics.median(f(r) for r in rs)

    lines = [
        "| workload | server | ops/s | / Redis | server CPU-s per wall-s | of which per thread | load generator CPU-s per wall-s "
        "| core 0 busy % (softirq %) | core 1 busy % (softirq %) |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for name, _, _ in WORKLOADS:
        base = med(results[(name, servers[0][0])], lambda r: r["ops"])
        for label, _ in servers:
            rs = results[(name, label)]
            ops = med(rs, lambda r: r["ops"])
            names = sorted({k for r in rs for k in r["threads"]})
            per_thread = {k: med(rs, lambda r, k=k: r["threads"].get(k, 0) / r["wall"]) for k in names}
            shown = ", ".join(f"{k} {v:.2f}" for k, v in sorted(per_thread.items(), key=lambda kv: -kv[1]) if v >= 0.01)
            core = {c: med(rs, lambda r, c=c: 100 * r["cores"][c][0] / max(1e-9, sum(r["cores"][c]))) for c in ("cpu0", "cpu1")}
            soft = {c: med(rs, lambda r, c=c: 100 * r["softirq"][c] / max(1e-9, sum(r["cores"][c]))) for c in ("cpu0", "cpu1")}
            lines.append(
                f"| {name} | {label} | {ops:,.0f} | {fmt(ops / base, '.2f') if label != servers[0][0] else ''} | "
                f"{med(rs, lambda r: sum(r['threads'].values()) / r['wall']):.2f} | {shown} | "
                f"{med(rs, lambda r: r['load'] / r['wall']):.2f} | {core['cpu0']:.0f} ({soft['cpu0']:.0f}) | "
                f"{core['cpu1']:.0f} ({soft['cpu1']:.0f}) |"
            )
    lines += [
        "",
        f"Medians of {ROUNDS} interleaved rounds; servers on cores 0,1, redis-benchmark (50 connections, "
        f"100 B values, -r 100000, {N:,} requests unpipelined, {5 * N:,} with -P16) pinned to core 1. "
        "Per-thread and load-generator figures are CPU-seconds per wall-second (1.00 = one core); "
        "core figures are the whole machine's /proc/stat, softirq = kernel network work in interrupt context.",
        "",
        f"    {invocation()}",
    ]
    save_table("\n".join(lines), "bench-two-cores")


if __name__ == "__main__":
    main()

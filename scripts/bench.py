#!/usr/bin/env python3
"""Side-by-side benchmark: Debian's redis-server vs tern-server, same workloads, one run.

Called by scripts/bench.sh (which builds tern first). Standard library only.

Layout on a 2-core machine:
  * each server pinned to core 0 (`taskset -c 0`), tern with --threads 1;
  * redis-benchmark pinned to core 1 (`taskset -c 1`);
  * Redis 7.2.6 built from source (~/redis-7.2.6 or $REDIS_726_SERVER) when present, the same way;
  * tern with `--io-backend io_uring` too, where it starts;
  * rows on cores 0,1: tern --threads 2 and Redis 7.2.6 with io-threads 2 (reads too) -- the
    load generator then shares core 1 with them, so these rows understate what 2 dedicated cores
    would give. Each tern row is compared with the Redis 7.2.6 row of the same cores.

Workloads (50 connections each):
  a) SET and GET, 100-byte values, no pipelining
  b) the same with -P 16
  c) SET, 256-byte values, -P 30

Numbers: redis-benchmark 7.0 with --csv prints rps and avg/min/p50/p95/p99/max but no p99.9.
So we run it WITHOUT --csv (one run per workload, no second run) and parse its full report:
the "Summary" block holds exactly the CSV fields (rps, avg, min, p50, p95, p99, max), and the
"Latency by percentile distribution" block is the HDR histogram walked at percentile ticks
(..., 99.805%, 99.902%, ...) with cumulative counts. p99.9 is the latency of the first tick whose
cumulative count reaches 99.9% of the requests, i.e. the 99.902th percentile: exact to within
one histogram tick, never below the true p99.9. `--precision 3` gives microsecond resolution.

Server CPU: utime+stime of the server process (fields 14 and 15 of /proc/PID/stat, all threads,
in clock ticks of `getconf CLK_TCK`) read before and after each run; "ops/CPU-s" is requests
divided by the server's CPU seconds for that run.

Environment: BENCH_REQUESTS (default 200000) requests per unpipelined run; pipelined runs use
5x that. BENCH_KEYSPACE (default 100000) random keys (-r). BENCH_PORT_BASE (default 7590).
BENCH_ROUNDS (default 3): every workload runs this many times on each server, interleaved, and
the table reports per-metric medians (this machine is shared and noisy). BENCH_MIXED=1 adds the
collection workloads (HSET/HGET, LPUSH/LPOP, ZADD/ZRANGE, unpipelined and -P16). BENCH_SERVERS:
comma-separated substrings; only servers whose label contains one run (e.g. "core 0)").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench_common import CLK_TCK, REDIS_726, Server, fmt, pick_port, save_table

ROOT = Path(__file__).resolve().parents[1]
N = int(os.environ.get("BENCH_REQUESTS", "200000"))
KEYSPACE = int(os.environ.get("BENCH_KEYSPACE", "100000"))
PORT_BASE = int(os.environ.get("BENCH_PORT_BASE", "7590"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
CLIENTS = 50


@dataclass
class Workload:
    name: str
    test: str  # redis-benchmark -t
    size: int
    pipeline: int
    # An explicit command instead of `-t test`.
    command: list[str] | None = None

    @property
    def requests(self) -> int:
        return N if self.pipeline == 1 else N * 5


WORKLOADS = [
    Workload("a) SET 100B", "set", 100, 1),
    Workload("a) GET 100B", "get", 100, 1),
    Workload("b) SET 100B -P16", "set", 100, 16),
    Workload("b) GET 100B -P16", "get", 100, 16),
    Workload("c) SET 256B -P30", "set", 256, 30),
]
# The mixed workload (BENCH_MIXED=1): the collection commands the issue names, each its own run,
# as explicit commands (redis-benchmark -t has no HGET or ZRANGE). __rand_int__ is the -r key.
MIXED_COMMANDS = [
    ("HSET", ["HSET", "h:__rand_int__", "f", "v" * 100]),
    ("HGET", ["HGET", "h:__rand_int__", "f"]),
    ("LPUSH", ["LPUSH", "l:__rand_int__", "v" * 100]),
    ("LPOP", ["LPOP", "l:__rand_int__"]),
    ("ZADD", ["ZADD", "z:__rand_int__", "__rand_int__", "m:__rand_int__"]),
    ("ZRANGE 0 9", ["ZRANGE", "z:__rand_int__", "0", "9"]),
]
MIXED = [Workload(f"d) {name}", "", 100, 1, cmd) for name, cmd in MIXED_COMMANDS] + [
    Workload(f"e) {name} -P16", "", 100, 16, cmd) for name, cmd in MIXED_COMMANDS
]
if os.environ.get("BENCH_MIXED", "") not in ("", "0"):
    WORKLOADS += MIXED


@dataclass
class Result:
    workload: str
    server: str
    rps: float = 0.0
    p50: float = float("nan")
    p99: float = float("nan")
    p999: float = float("nan")
    ops_per_cpu_s: float = float("nan")
    note: str = ""


def parse_report(text: str, requests: int) -> tuple[float, float, float, float]:
    """rps, p50, p99, p99.9 (ms) from redis-benchmark's full (non-CSV) report."""
    m = re.search(r"throughput summary: ([\d.]+) requests per second", text)
    rps = float(m.group(1)) if m else 0.0
    m = re.search(
        r"latency summary \(msec\):\s*\n\s*avg\s+min\s+p50\s+p95\s+p99\s+max\s*\n\s*([\d.\s]+)\n", text
    )
    p50 = p99 = float("nan")
    if m:
        avg, mn, p50, p95, p99, mx = (float(x) for x in m.group(1).split()[:6])
    p999 = float("nan")
    block = text.split("Latency by percentile distribution:", 1)
    if len(block) == 2:
        total = requests
        counts = re.findall(
            r"([\d.]+)% <= ([\d.]+) milliseconds \(cumulative count (\d+)\)",
            block[1].split("Cumulative distribution", 1)[0],
        )
        if counts:
            total = int(counts[-1][2])
            for _pct, ms, cum in counts:
                if int(cum) >= 0.999 * total:
                    p999 = float(ms)
                    break
    return rps, p50, p99, p999


def run_workload(server: Server, w: Workload) -> Result:
    cmd = [
        "taskset", "-c", "1", "redis-benchmark", "-h", "127.0.0.1", "-p", str(server.port),
        "-c", str(CLIENTS), "-n", str(w.requests), "-d", str(w.size), "-P", str(w.pipeline),
        "-r", str(KEYSPACE), "--precision", "3",
        *(["-t", w.test] if w.command is None else w.command),
    ]
    cpu0 = server.cpu_seconds()
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - t0
    cpu = server.cpu_seconds() - cpu0
    # progress lines are \r-separated; keep the final report
    report = out.stdout.replace("\r", "\n")
    rps, p50, p99, p999 = parse_report(report, w.requests)
    res = Result(w.name, server.label, rps, p50, p99, p999)
    res.ops_per_cpu_s = w.requests / cpu if cpu > 0 else float("nan")
    if out.returncode != 0 or rps == 0:
        res.note = f"redis-benchmark failed (rc={out.returncode}): {out.stderr.strip()[:200]}"
    elif w.test == "set" and server.dbsize() <= 0:
        # redis-benchmark does not check replies: make sure the SETs really stored keys
        res.note = "WARNING: DBSIZE is 0 after the SET run (errors instead of OK?)"
    print(
        f"  {w.name:<18} {server.label:<22} {rps:>12,.0f} ops/s  p50 {p50:.3f}  p99 {p99:.3f}  "
        f"p99.9 {p999:.3f} ms  server CPU {cpu:.2f}s / wall {wall:.2f}s",
        file=sys.stderr,
        flush=True,
    )
    return res


def median_result(runs: list[Result]) -> Result:
    """Per-metric median over the rounds (notes of any round are kept)."""
    def med(vals: list[float]) -> float:
        vals = sorted(v for v in vals if v == v)
        return vals[len(vals) // 2] if vals else float("nan")

    r = Result(runs[0].workload, runs[0].server)
    r.rps = med([x.rps for x in runs])
    r.p50 = med([x.p50 for x in runs])
    r.p99 = med([x.p99 for x in runs])
    r.p999 = med([x.p999 for x in runs])
    r.ops_per_cpu_s = med([x.ops_per_cpu_s for x in runs])
    r.note = " ".join(x.note for x in runs if x.note)
    return r


def starts(server: Server) -> bool:
    """Whether the server starts with these arguments (tern's io_uring backend refuses to start
    where the kernel forbids it, and older builds do not know the setting)."""
    try:
        server.start(timeout=5)
    except SystemExit:
        return False
    server.stop()
    return True


def main() -> None:
    tern = os.environ.get("TERN_SERVER", str(ROOT / "target" / "release" / "tern-server"))
    redis = shutil.which("redis-server")
    if not redis or not shutil.which("redis-benchmark"):
        sys.exit("redis-server / redis-benchmark missing: run scripts/setup.sh")
    plain = ["--save", "", "--appendonly", "no"]
    # (label, argv, cpus, the Redis row it is compared with)
    candidates = [
        ("redis-server (core 0)", [redis, *plain], "0", None),
        ("redis 7.2.6 (core 0)", [REDIS_726, *plain], "0", None),
        ("redis 7.2.6 io-threads 2 (cores 0,1)*", [REDIS_726, *plain, "--io-threads", "2",
                                                  "--io-threads-do-reads", "yes"], "0,1", None),
        ("tern --threads 1 (core 0)", [tern, "--save", "", "--threads", "1"], "0", "redis 7.2.6 (core 0)"),
        ("tern --threads 1 io_uring (core 0)", [tern, "--save", "", "--threads", "1", "--io-backend",
                                                "io_uring"], "0", "redis 7.2.6 (core 0)"),
        ("tern --threads 2 (cores 0,1)*", [tern, "--save", "", "--threads", "2"], "0,1",
         "redis 7.2.6 io-threads 2 (cores 0,1)*"),
        ("tern --threads 2 io_uring (cores 0,1)*", [tern, "--save", "", "--threads", "2", "--io-backend",
                                                    "io_uring"], "0,1", "redis 7.2.6 io-threads 2 (cores 0,1)*"),
    ]
    have_726 = os.access(REDIS_726, os.X_OK)
    have_uring = starts(Server("probe", [tern, "--save", "", "--io-backend", "io_uring"], pick_port(PORT_BASE)))
    # BENCH_SERVERS: a comma-separated subset of labels' first words ("redis-server", "redis",
    # "tern") is too coarse; it takes substrings of the labels instead.
    wanted = [w for w in os.environ.get("BENCH_SERVERS", "").split(",") if w]
    compare: dict[str, str] = {}
    servers = []
    for k, (label, argv, cpus, ref_label) in enumerate(candidates):
        if (argv[0] == REDIS_726 and not have_726) or ("io_uring" in label and not have_uring):
            continue
        if wanted and not any(w in label for w in wanted):
            continue
        servers.append(Server(label, argv, pick_port(PORT_BASE + k), cpus))
        if ref_label is None:
            ref_label = "redis 7.2.6 (core 0)" if have_726 else "redis-server (core 0)"
        compare[label] = ref_label
    samples: dict[tuple[str, str], list[Result]] = {}
    print(
        f"requests: {N} unpipelined / {N * 5} pipelined, {CLIENTS} clients, keyspace {KEYSPACE}, "
        f"{ROUNDS} rounds, CLK_TCK {CLK_TCK}, {os.cpu_count()} cpus",
        file=sys.stderr,
    )
    # All servers run for the whole benchmark (idle ones cost next to nothing); each workload
    # runs on every server in turn, in a rotated order each round, so that a noisy neighbour
    # on this shared machine hits all of them alike. The table shows per-metric medians.
    try:
        for s in servers:
            s.start()
        for rnd in range(ROUNDS):
            order = servers[rnd % len(servers):] + servers[: rnd % len(servers)]
            for w in WORKLOADS:
                for s in order:
                    samples.setdefault((w.name, s.label), []).append(run_workload(s, w))
    finally:
        for s in servers:
            s.stop()
    results = {k: median_result(v) for k, v in samples.items()}

    lines = [
        "| workload | server | ops/s | p50 ms | p99 ms | p99.9 ms | ops per server CPU-s | compared with "
        "| ops/s ratio | ops/CPU-s ratio |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for w in WORKLOADS:
        for s in servers:
            r = results[(w.name, s.label)]
            ref = compare[s.label]
            ratio = ratio_cpu = ""
            if ref != s.label and (w.name, ref) in results:
                base = results[(w.name, ref)]
                ratio = fmt(r.rps / base.rps if base.rps else float("nan"), ".2f")
                ratio_cpu = fmt(r.ops_per_cpu_s / base.ops_per_cpu_s, ".2f")
            else:
                ref = ""
            lines.append(
                f"| {w.name} | {s.label} | {r.rps:,.0f} | {fmt(r.p50, '.3f')} | {fmt(r.p99, '.3f')} | "
                f"{fmt(r.p999, '.3f')} | {fmt(r.ops_per_cpu_s, ',.0f')} | {ref} | {ratio} | {ratio_cpu} |"
                + (f" {r.note}" if r.note else "")
            )
    lines.append("")
    lines.append(
        f"Medians of {ROUNDS} interleaved rounds. "
        "\\* on cores 0,1: shares core 1 with redis-benchmark. "
        "p99.9 = latency at the first HDR percentile tick >= 99.9% (99.902%)."
    )
    save_table("\n".join(lines), "bench")


if __name__ == "__main__":
    main()

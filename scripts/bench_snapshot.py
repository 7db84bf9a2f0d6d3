#!/usr/bin/env python3
"""Snapshot cost side by side: BGSAVE under writes, redis-server (fork) vs tern-server (forkless).

Called by `make bench-snapshot` (scripts/bench.sh with BENCH_SCRIPT=bench_snapshot.py, which
builds tern first unless TERN_SERVER is set; the Makefile target builds tern-bench).
Report-only: never part of `make test`.

Method, for each server in turn (never both at once: each may need twice the dataset in RAM):
  1. start it fresh in a new directory under BENCH_DIR, pinned to core 0 (tern --threads 1),
     `--save "" --appendonly no --rdbcompression no`: DEBUG POPULATE's values are zero-padded
     and would compress ~50x, making the dump, save and load unrealistically cheap;
  2. DEBUG POPULATE BENCH_SNAP_KEYS keys `key:<n>` of BENCH_SNAP_SIZE bytes (server-side, fast);
  3. start the writer: tern-bench `set` (BENCH_SNAP_WRITERS connections, unpipelined) pinned to
     core 1, overwriting random existing keys with random values of the same size; after 1 s
     of writes, sample "before": VmRSS (/proc/PID/status) and PSS (/proc/PID/smaps_rollup);
  4. BGSAVE; every BENCH_SNAP_INTERVAL s sample RSS and PSS of the server plus those of its child
     processes (Redis's fork child; found by ppid in /proc/*/stat), until INFO persistence says
     rdb_bgsave_in_progress:0. RSS double-counts the pages a fork child shares with its parent;
     PSS splits them, so the PSS sum is the honest figure of the memory used;
  5. stop the writer; its rate during the save is the server's cmdstat_set calls over the save;
  6. stop the server, restart it on the dump and time until PING answers PONG (not -LOADING)
     and INFO says loading:0; check DBSIZE.
Peak/before = the largest sampled sum over the "before" figure of the server alone.

Memory: Redis under writes can need up to twice the dataset during a BGSAVE. The script
estimates that need from BENCH_SNAP_KEYS and MemAvailable (free -m) and stops with a message
if it does not fit (BENCH_SNAP_FORCE=1 runs anyway); the dump needs room in BENCH_DIR too.

Environment: TERN_SERVER, TERN_BENCH, BENCH_SNAP_KEYS (default 5000000), BENCH_SNAP_SIZE
(default 1024), BENCH_SNAP_WRITERS (default 4), BENCH_SNAP_INTERVAL (default 0.05),
BENCH_SNAP_FORCE, BENCH_DIR (default bench-results/), BENCH_PORT_BASE (default 35600).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from bench_common import (ROOT, TERN, TERN_BENCH, Server, child_pids, fmt, invocation, pick_port,
                          pss, rss, save_table)

KEYS = int(os.environ.get("BENCH_SNAP_KEYS", "5000000"))
SIZE = int(os.environ.get("BENCH_SNAP_SIZE", "1024"))
WRITERS = int(os.environ.get("BENCH_SNAP_WRITERS", "4"))
INTERVAL = float(os.environ.get("BENCH_SNAP_INTERVAL", "0.05"))
BENCH_DIR = os.environ.get("BENCH_DIR", str(ROOT / "bench-results"))
PORT_BASE = int(os.environ.get("BENCH_PORT_BASE", "35600"))
OPTS = ["--save", "", "--appendonly", "no", "--rdbcompression", "no", "--dbfilename", "dump.rdb",
        "--enable-debug-command", "local"]
SERVERS = {
    "redis-server": ["redis-server", *OPTS],
    "tern --threads 1": [TERN, *OPTS, "--threads", "1"],
}
MiB = 2**20


@dataclass
class Result:
    label: str
    populate_s: float = 0.0
    rss_before: int = 0
    pss_before: int = 0
    rss_peak: int = 0  # server + children, summed per sample
    pss_peak: int = 0
    children_seen: int = 0
    samples: int = 0
    save_s: float = 0.0
    save_s_info: str = ""
    dump: int = 0
    load_s: float = 0.0
    writer_sets_per_s: float = 0.0
    writer_p99: float = float("nan")
    writer_max_ms: float = float("nan")
    problem: str = ""


def fits_in_memory() -> None:
    """Exit with a message when the worst case (a fork's copy of every page) cannot fit."""
    per_key = SIZE * 1.25 + 150  # allocator size class of the value, key, entry overhead
    need = KEYS * per_key * 2
    meminfo = dict(l.split(":", 1) for l in open("/proc/meminfo"))
    avail = int(meminfo["MemAvailable"].split()[0]) * 1024
    disk = shutil.disk_usage(BENCH_DIR).free
    print(f"{KEYS:,} keys x {SIZE} B: dataset ~{KEYS * per_key / 2**30:.1f} GiB, worst case with a "
          f"fork ~{need / 2**30:.1f} GiB; MemAvailable {avail / 2**30:.1f} GiB; dump ~"
          f"{KEYS * SIZE / 2**30:.1f} GiB, {disk / 2**30:.0f} GiB free in {BENCH_DIR}", file=sys.stderr)
    if (need > avail * 0.9 or KEYS * SIZE * 1.1 > disk) and not os.environ.get("BENCH_SNAP_FORCE"):
        fit = int(avail * 0.9 / (2 * per_key))
        sys.exit(f"bench-snapshot: {KEYS:,} keys do not fit in memory/disk here (2x for a fork under "
                 f"writes); lower BENCH_SNAP_KEYS (about {fit:,} fits) or set BENCH_SNAP_FORCE=1")


def measure(label: str, port: int, commands: list[str]) -> Result:
    res = Result(label)
    server = Server(label, [], port, cpus="0", dir=tempfile.mkdtemp(prefix="snapshot-", dir=BENCH_DIR))
    server.argv = [*SERVERS[label], "--dir", server.dir]
    commands.append(shlex.join(["taskset", "-c", "0", *server.argv, "--port", str(port), "--bind", "127.0.0.1"]))
    writer = None
    try:
        server.start()
        t0 = time.monotonic()
        reply = server.command(b"DEBUG", b"POPULATE", b"%d" % KEYS, b"key", b"%d" % SIZE, timeout=3600)
        res.populate_s = time.monotonic() - t0
        if not reply.startswith(b"+OK") or server.dbsize() != KEYS:
            sys.exit(f"{label}: DEBUG POPULATE failed: {reply[:200]!r}, DBSIZE {server.dbsize()}")

        argv = ["taskset", "-c", "1", TERN_BENCH, "--port", str(port), "--workload", "set", "--clients",
                str(WRITERS), "--size", str(SIZE), "--keys", str(KEYS), "--seconds", "0"]
        if len(commands) == 1:
            commands.append(shlex.join(argv) + "   # writer: runs until its stdin closes")
        writer = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        pid = server.proc.pid
        res.rss_before, res.pss_before = rss(pid), pss(pid)

        sets0 = set_calls(server)
        t0 = time.monotonic()
        reply = server.command(b"BGSAVE")
        if not reply.startswith(b"+"):
            sys.exit(f"{label}: BGSAVE failed: {reply[:200]!r}")
        while True:
            pids = [pid, *child_pids(pid)]
            res.children_seen = max(res.children_seen, len(pids) - 1)
            res.rss_peak = max(res.rss_peak, sum(rss(p) for p in pids))
            res.pss_peak = max(res.pss_peak, sum(pss(p) for p in pids))
            res.samples += 1
            if server.info(b"persistence").get("rdb_bgsave_in_progress") == "0":
                break
            time.sleep(INTERVAL)
        res.save_s = time.monotonic() - t0
        res.writer_sets_per_s = (set_calls(server) - sets0) / res.save_s

        out, err = writer.communicate(timeout=60)  # closes its stdin: tern-bench stops, prints JSON
        if writer.returncode == 0:
            w = json.loads(out.strip().splitlines()[-1])
            res.writer_p99 = w["p99_ms"]
            if w["errors"]:
                res.problem = f"writer got {w['errors']} error replies; "
        else:
            res.problem = f"writer failed: {(err.strip().splitlines() or ['?'])[-1][:120]}; "

        info = server.info(b"persistence")
        res.save_s_info = info.get("rdb_last_bgsave_time_sec", "?")
        if info.get("rdb_last_bgsave_status") != "ok":
            res.problem += f"rdb_last_bgsave_status:{info.get('rdb_last_bgsave_status')}; "
        server.stop(keep_dir=True)
        dump = os.path.join(server.dir, "dump.rdb")
        res.dump = os.path.getsize(dump) if os.path.exists(dump) else 0

        # Reload: PONG (not -LOADING), then INFO loading:0, timed from the spawn.
        t0 = time.monotonic()
        server.start(timeout=3600)
        while server.info(b"persistence").get("loading") != "0":
            time.sleep(0.01)
        res.load_s = time.monotonic() - t0
        if server.dbsize() != KEYS:
            res.problem += f"DBSIZE after reload {server.dbsize()} != {KEYS}; "
    finally:
        if writer and writer.poll() is None:
            writer.kill()
        server.stop()
    print(f"  {label:<17} populate {res.populate_s:.1f}s  before RSS {res.rss_before / MiB:.0f} PSS "
          f"{res.pss_before / MiB:.0f} MiB  peak RSS {res.rss_peak / MiB:.0f} PSS {res.pss_peak / MiB:.0f} MiB  "
          f"save {res.save_s:.2f}s  dump {res.dump / MiB:.0f} MiB  load {res.load_s:.2f}s  "
          f"writer {res.writer_sets_per_s:,.0f} SET/s {res.problem}", file=sys.stderr, flush=True)
    return res


def set_calls(server: Server) -> int:
    """calls= of cmdstat_set in INFO commandstats: the writer's SETs as the server counts them."""
    stat = server.info(b"commandstats").get("cmdstat_set", "calls=0")
    return int(dict(kv.split("=", 1) for kv in stat.split(","))["calls"])


def main() -> None:
    if not shutil.which("redis-server") or not os.path.exists(TERN_BENCH):
        sys.exit("needs redis-server (scripts/setup.sh) and tern-bench (cargo build --release -p tern-bench)")
    os.makedirs(BENCH_DIR, exist_ok=True)
    fits_in_memory()
    port = pick_port(PORT_BASE)
    commands: list[str] = []
    results = [measure(label, port, commands) for label in SERVERS]

    lines = [
        "| server | RSS before MiB | PSS before MiB | peak RSS sum MiB | peak PSS sum MiB | peak/before RSS "
        "| peak/before PSS | children | BGSAVE s (INFO s) | dump MiB | load s | writer SET/s during save "
        "| writer p99 ms | check |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.label} | {r.rss_before / MiB:,.0f} | {r.pss_before / MiB:,.0f} | {r.rss_peak / MiB:,.0f} | "
            f"{r.pss_peak / MiB:,.0f} | {fmt(r.rss_peak / r.rss_before, '.2f')} | {fmt(r.pss_peak / r.pss_before, '.2f')} | "
            f"{r.children_seen} | {r.save_s:.2f} ({r.save_s_info}) | {r.dump / MiB:,.0f} | {r.load_s:.2f} | "
            f"{r.writer_sets_per_s:,.0f} | {fmt(r.writer_p99, '.3f')} | {r.problem.rstrip('; ') or 'ok'} |"
        )
    lines += [
        "",
        f"{KEYS:,} keys x {SIZE} B (DEBUG POPULATE), rdbcompression no; servers one after the other on core 0, "
        f"writer tern-bench `set` ({WRITERS} connections, random existing keys, {SIZE} B random values) on "
        f"core 1. Sums are over the server and its children, sampled every {INTERVAL * 1000:.0f} ms "
        "(RSS counts fork-shared pages twice, PSS once). BGSAVE s is wall clock from BGSAVE to "
        "rdb_bgsave_in_progress:0; load s from the restart until PONG and loading:0. "
        "Writer p99 is over its whole run (1 s before BGSAVE until the save ended).",
        "",
        "Commands:",
        "",
        *(f"    {c}" for c in commands),
        f"    {invocation()}   # this report",
    ]
    save_table("\n".join(lines), "bench-snapshot")
    if any(r.problem for r in results):
        sys.exit("bench-snapshot: a check failed (see the table)")


if __name__ == "__main__":
    main()

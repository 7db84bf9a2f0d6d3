#!/usr/bin/env python3
"""Durable writes side by side: redis-server vs tern-server, both with `appendfsync always`.

Called by `make bench-durable` (scripts/bench.sh with BENCH_SCRIPT=bench_durable.py, which builds
tern first unless TERN_SERVER is set; the Makefile target builds tern-bench). Report-only: never
part of `make test`.

Method. Each (workload, server) run starts a FRESH server in a fresh directory under BENCH_DIR
with `--save "" --appendonly yes --appendfsync always --appenddirname appendonlydir
--auto-aof-rewrite-percentage 0` (so the AOF growth check holds), pinned to
core 0 (tern with --threads 1). DEBUG POPULATE fills the keyspace (BENCH_KEYSPACE keys `key:<n>`,
100-byte values) so that the GETs hit; it is not a write the AOF logs in Redis. Then the load:
target/release/tern-bench pinned to core 1, workload `setget` — 50 connections, SET and GET
alternating 1:1 on random keys of the keyspace, 100-byte values, closed loop (redis-benchmark
cannot mix SET and GET in one run; with `-t set,get` it runs them as two phases, and the GETs
would not feel the fsyncs). Workloads: unpipelined, and 20 commands per pipeline (latency is
then per pipeline round trip, as redis-benchmark -P counts it).

Numbers: ops/s and p50/p99/p99.9 latency from tern-bench; server CPU from utime+stime of
/proc/PID/stat before and after the run ("ops per server CPU-s"). The AOF directory is measured
before and after the run: the run FAILS (exit 1, marked in the table) if it grew by less than
the SETs' values alone (ops/2 x 100 B) or if any reply was an error, so a run without a working
AOF cannot look fast. The files of the AOF directory are listed after the table.

BENCH_DIR must be a real disk: on tmpfs fsync costs nothing (the file system type is printed).

Busy disk (BENCH_DISK_NOISE=1): during each run a co-tenant process on core 1 writes 1 MiB
blocks to a file in BENCH_DIR and fdatasyncs each one, so both servers' fsyncs wait behind other
I/O, as on a shared or network-attached disk (on this VM's idle disk an fsync takes ~0.2 ms and
Redis's once-per-event-loop fsync costs it little).

Slow fsync (BENCH_FSYNC_DELAY_US, default 2000): both servers run with the LD_PRELOAD shim
target/release/libtern_fsync_delay.so (crate tern-fsync-delay), which sleeps that long before
every fsync/fdatasync, as on a network volume; 0 measures the bare disk. The fsync latency L the
servers see is measured first (100 x 100-byte write + fdatasync in BENCH_DIR, with the shim). The
table gives the bound L sets on a closed loop: every SET's round trip includes at least one fsync
that began after its write, a GET at least nothing, so a connection completes at most
(ops per round trip) x 2 ops per L with SET and GET alternating (-P1: 2 ops per L; -P20: a round
trip carries 10 SETs and waits at least one fsync: 20 ops per L) -> bound = connections x that / L.
Servers: Debian's redis-server, Redis 7.2.6 built from source when present (~/redis-7.2.6 or
$REDIS_726_SERVER; ratios are against it then), tern --threads 1.

Environment: BENCH_PIPELINES (default 1,20), TERN_SERVER, TERN_BEFORE_SERVER (an earlier tern build, measured as one more
server), TERN_BENCH, BENCH_SECONDS (per run, default 15), BENCH_KEYSPACE
(default 100000), BENCH_ROUNDS (default 1; medians, servers interleaved), BENCH_DIR (default
bench-results/), BENCH_PORT_BASE (default 35500), BENCH_DISK_NOISE (default off), BENCH_FSYNC
(the appendfsync policy of both servers, default always; everysec or no measure what writing
the log before the replies costs).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from bench_common import (REDIS_726, ROOT, TERN, TERN_BENCH, Server, dir_sizes, fmt, fs_type,
                          invocation, pick_port, save_table)

SECONDS = float(os.environ.get("BENCH_SECONDS", "15"))
KEYSPACE = int(os.environ.get("BENCH_KEYSPACE", "100000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "1"))
BENCH_DIR = os.environ.get("BENCH_DIR", str(ROOT / "bench-results"))
PORT_BASE = int(os.environ.get("BENCH_PORT_BASE", "35500"))
CLIENTS, SIZE = 50, 100
PIPELINES = [int(p) for p in os.environ.get("BENCH_PIPELINES", "1,20").split(",")]
DISK_NOISE = os.environ.get("BENCH_DISK_NOISE", "") not in ("", "0")
# The co-tenant: 1 MiB written and fdatasynced in a loop (the file is reused every 256 MiB).
NOISE_SCRIPT = (
    "import os,sys\n"
    "fd=os.open(sys.argv[1],os.O_WRONLY|os.O_CREAT|os.O_TRUNC,0o644)\n"
    "b=os.urandom(1<<20)\n"
    "n=0\n"
    "while True:\n"
    "    os.write(fd,b); os.fdatasync(fd); n+=1\n"
    "    if n%256==0: os.ftruncate(fd,0); os.lseek(fd,0,0)\n"
)
AOF_DIR = "appendonlydir"
# Automatic rewrites are off so the AOF's growth can be checked against the SETs' bytes (a
# rewrite in the middle of a run replaces the logged history with a smaller base).
FSYNC = os.environ.get("BENCH_FSYNC", "always")
DURABLE = ["--save", "", "--appendonly", "yes", "--appendfsync", FSYNC, "--appenddirname", AOF_DIR,
           "--auto-aof-rewrite-percentage", "0", "--enable-debug-command", "local"]
SERVERS = {  # label -> argv (before --dir/--port)
    "redis-server": ["redis-server", *DURABLE],
    **({"redis 7.2.6": [REDIS_726, *DURABLE]} if os.access(REDIS_726, os.X_OK) else {}),
    "tern --threads 1": [TERN, *DURABLE, "--threads", "1"],
    # An earlier build to compare with (TERN_BEFORE_SERVER=path), e.g. before a change.
    **({"tern before --threads 1": [os.environ["TERN_BEFORE_SERVER"], *DURABLE, "--threads", "1"]}
       if os.environ.get("TERN_BEFORE_SERVER") else {}),
}
# The ratios are against the Redis tern answers as when it is here.
BASELINE = "redis 7.2.6" if "redis 7.2.6" in SERVERS else "redis-server"
FSYNC_DELAY_US = int(os.environ.get("BENCH_FSYNC_DELAY_US", "2000"))
SHIM = str(ROOT / "target/release/libtern_fsync_delay.so")
SHIM_ENV = {"LD_PRELOAD": SHIM, "FSYNC_DELAY_US": str(FSYNC_DELAY_US)} if FSYNC_DELAY_US else {}
# What one connection's round trip of `pipeline` commands can complete per fsync latency.
def ops_per_fsync(pipeline: int) -> int:
    return 2 if pipeline == 1 else pipeline


def fsync_latency_ms(directory: str) -> float:
    """Median of 100 write(100 B) + fdatasync on a file in `directory`, with the shim's delay."""
    probe = ("import os,sys,time,statistics\n"
             "fd=os.open(sys.argv[1],os.O_WRONLY|os.O_CREAT|os.O_TRUNC,0o644)\n"
             "t=[]\n"
             "for _ in range(100):\n"
             "    a=time.perf_counter(); os.write(fd,b'x'*100); os.fdatasync(fd); t.append(time.perf_counter()-a)\n"
             "os.unlink(sys.argv[1]); print(statistics.median(t)*1000)\n")
    out = subprocess.run([sys.executable, "-c", probe, os.path.join(directory, "fsync-probe.tmp")],
                         env={**os.environ, **SHIM_ENV}, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


@dataclass
class Run:
    ops_per_sec: float
    p50: float
    p99: float
    p999: float
    ops_per_cpu: float
    aof_before: int
    aof_after: int
    aof_files: dict[str, int]
    problem: str


def load_argv(port: int, pipeline: int) -> list[str]:
    return ["taskset", "-c", "1", TERN_BENCH, "--port", str(port), "--workload", "setget",
            "--clients", str(CLIENTS), "--pipeline", str(pipeline), "--size", str(SIZE),
            "--keys", str(KEYSPACE), "--seconds", f"{SECONDS:g}"]


def run_once(label: str, pipeline: int, port: int, commands: dict[str, str]) -> Run:
    server = Server(label, [], port, cpus="0", dir=tempfile.mkdtemp(prefix="durable-", dir=BENCH_DIR),
                    env=SHIM_ENV)
    server.argv = [*SERVERS[label], "--dir", server.dir]
    commands[label] = " ".join([*(f"{k}={v}" for k, v in SHIM_ENV.items()),
                                shlex.join(["taskset", "-c", "0", *server.argv, "--port", str(port), "--bind", "127.0.0.1"])])
    aof = os.path.join(server.dir, AOF_DIR)
    try:
        server.start()
        reply = server.command(b"DEBUG", b"POPULATE", b"%d" % KEYSPACE, b"key", b"%d" % SIZE, timeout=300)
        if not reply.startswith(b"+OK"):
            sys.exit(f"{label}: DEBUG POPULATE failed: {reply[:200]!r}")
        aof_before = sum(dir_sizes(aof).values())
        argv = load_argv(port, pipeline)
        commands["load"] = shlex.join(argv)
        noise = None
        if DISK_NOISE:
            noise_file = os.path.join(server.dir, "noise.bin")
            noise = subprocess.Popen(["taskset", "-c", "1", sys.executable, "-c", NOISE_SCRIPT,
                                      noise_file])
            commands["disk noise"] = shlex.join(["taskset", "-c", "1", "python3", "-c", "<1 MiB write+fdatasync loop>", noise_file])
        cpu0 = server.cpu_seconds()
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=SECONDS + 120)
        finally:
            if noise:
                noise.kill()
                noise.wait()
                os.remove(noise_file)
        cpu = server.cpu_seconds() - cpu0
        files = dir_sizes(aof)
        aof_after = sum(files.values())
    finally:
        server.stop()
    if r.returncode != 0:
        return Run(0, *[float("nan")] * 4, aof_before, aof_after, files,
                   f"tern-bench failed: {(r.stderr.strip().splitlines() or ['?'])[-1][:150]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    problem = ""
    min_growth = out["ops"] // 2 * SIZE
    if out["errors"]:
        problem = f"{out['errors']} replies were errors"
    elif aof_after - aof_before < min_growth:
        problem = (f"AOF grew {aof_after - aof_before:,} B, less than the {out['ops'] // 2:,} SETs' "
                   f"values ({min_growth:,} B)")
    print(f"  -P{pipeline:<3} {label:<17} {out['ops_per_sec']:>9,.0f} ops/s  p50 {out['p50_ms']:.3f}  "
          f"p99 {out['p99_ms']:.3f}  p99.9 {out['p999_ms']:.3f} ms  server CPU {cpu:.2f}s  "
          f"AOF +{(aof_after - aof_before) / 2**20:.1f} MiB {problem}", file=sys.stderr, flush=True)
    return Run(out["ops_per_sec"], out["p50_ms"], out["p99_ms"], out["p999_ms"],
               out["ops"] / cpu if cpu > 0 else float("nan"), aof_before, aof_after, files, problem)


def main() -> None:
    if not shutil.which("redis-server") or not os.path.exists(TERN_BENCH):
        sys.exit("needs redis-server (scripts/setup.sh) and tern-bench (cargo build --release -p tern-bench)")
    os.makedirs(BENCH_DIR, exist_ok=True)
    fstype = fs_type(BENCH_DIR)
    if fstype == "tmpfs":
        print(f"WARNING: {BENCH_DIR} is tmpfs, where fsync is free: set BENCH_DIR to a disk", file=sys.stderr)
    if SHIM_ENV and not os.path.exists(SHIM):
        sys.exit(f"needs {SHIM} (cargo build --release -p tern-fsync-delay)")
    port = pick_port(PORT_BASE)
    fsync_ms = fsync_latency_ms(BENCH_DIR)
    print(f"{SECONDS:g} s per run, {ROUNDS} round(s), {CLIENTS} clients, keyspace {KEYSPACE:,}, "
          f"dir {BENCH_DIR} ({fstype}), fsync delay {FSYNC_DELAY_US} us: fdatasync takes {fsync_ms:.3f} ms",
          file=sys.stderr, flush=True)
    runs: dict[tuple[int, str], list[Run]] = {}
    commands: dict[str, str] = {}
    labels = list(SERVERS)
    for rnd in range(ROUNDS):
        order = labels[rnd % 2:] + labels[: rnd % 2]  # alternate who goes first
        for p in PIPELINES:
            for label in order:
                runs.setdefault((p, label), []).append(run_once(label, p, port, commands))

    def med(rs: list[Run], key: str) -> float:
        vals = [getattr(r, key) for r in rs if r.ops_per_sec > 0]
        return statistics.median(vals) if vals else float("nan")

    lines = [
        f"| workload | server | ops/s | fsync bound ops/s | % of bound | p50 ms | p99 ms | p99.9 ms "
        f"| ops per server CPU-s | AOF before → after MiB | /{BASELINE} ops/s | /{BASELINE} ops/CPU-s | check |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    failed = False
    for p in PIPELINES:
        base = runs[(p, BASELINE)]
        bound = CLIENTS * ops_per_fsync(p) / (fsync_ms / 1000)
        for label in labels:
            rs = runs[(p, label)]
            problems = "; ".join(r.problem for r in rs if r.problem)
            failed |= bool(problems)
            ratio = ratio_cpu = ""
            if label != BASELINE:
                ratio = fmt(med(rs, "ops_per_sec") / med(base, "ops_per_sec"), ".2f")
                ratio_cpu = fmt(med(rs, "ops_per_cpu") / med(base, "ops_per_cpu"), ".2f")
            last = rs[-1]
            lines.append(
                f"| 1:1 SET/GET 100B -P{p} | {label} | {fmt(med(rs, 'ops_per_sec'), ',.0f')} | {bound:,.0f} | "
                f"{fmt(100 * med(rs, 'ops_per_sec') / bound, '.0f')} | "
                f"{fmt(med(rs, 'p50'), '.3f')} | {fmt(med(rs, 'p99'), '.3f')} | {fmt(med(rs, 'p999'), '.3f')} | "
                f"{fmt(med(rs, 'ops_per_cpu'), ',.0f')} | {last.aof_before / 2**20:.2f} → {last.aof_after / 2**20:.2f} | "
                f"{ratio} | {ratio_cpu} | {'FAILED: ' + problems if problems else 'ok: AOF grew'} |"
            )
    lines += ["", "AOF files after the last run of each (sizes in bytes):", ""]
    for (p, label), rs in runs.items():
        files = ", ".join(f"{n} {s:,}" for n, s in sorted(rs[-1].aof_files.items()))
        lines.append(f"- -P{p} {label}: {files or '(none)'}")
    lines += [
        "",
        f"{'Medians of %d interleaved rounds' % ROUNDS if ROUNDS > 1 else 'One round'} of {SECONDS:g} s per run; "
        f"fresh server per run, appendfsync {FSYNC}, AOF on {fstype} ({BENCH_DIR}); "
        + (f"every fsync delayed {FSYNC_DELAY_US} µs by the LD_PRELOAD shim" if SHIM_ENV else "bare disk")
        + f", fdatasync measured at {fsync_ms:.3f} ms (the bound: {CLIENTS} connections × 2 ops (-P1) or "
        f"20 ops (-P20) per fsync latency). Load generator: tern-bench "
        f"`setget` (SET/GET alternating 1:1 per connection, {CLIENTS} connections, random keys of {KEYSPACE:,} "
        "populated ones), core 1; servers on core 0. -P20 latency is per 20-command round trip."
        + (" Busy disk: a co-tenant writes and fdatasyncs 1 MiB blocks in BENCH_DIR during every run."
           if DISK_NOISE else ""),
        "",
        "Commands (last run; -P1 runs use --pipeline 1):",
        "",
        *(f"    {commands[k]}" for k in [*SERVERS, "load", *(["disk noise"] if DISK_NOISE else [])]),
        f"    {invocation()}   # this report",
    ]
    save_table("\n".join(lines), "bench-durable")
    if failed:
        sys.exit("bench-durable: a run failed its AOF/error check (see the table)")


if __name__ == "__main__":
    main()

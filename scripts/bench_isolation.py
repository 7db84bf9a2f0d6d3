#!/usr/bin/env python3
"""Isolation benchmark: does one huge command on db 1 stall the small GET/SET traffic on db 0?

Called by `make bench-isolation` (scripts/bench.sh with BENCH_SCRIPT=bench_isolation.py, which
builds tern first unless TERN_SERVER is set). Standard library only. Report-only: never part of
`make test`.

Servers, one after the other, each fresh, all with `--save ""` and `--enable-debug-command yes`:
  * redis-server pinned to core 0 (`taskset -c 0`, also `--appendonly no`);
  * tern --threads 1 pinned to core 0 (its background threads too: taskset pins the process);
  * extra row: tern --threads 2 on cores 0,1 (not pinned to one core) -- it then shares core 1
    with the load generator, so that row is labelled and is not a like-for-like comparison.
This script pins itself (loader, disturbing client) to core 1, and runs redis-benchmark on core 1.

Per server:
  1. Load the dataset on db 1, pipelined over a raw socket (a writer plus a reply-counting reader
     thread). Which dataset depends on the disturbing command's name:
       Z... (ZINTERSTORE, ZUNIONSTORE, ...): two sorted sets zs1, zs2 of M members each, 50%
                                             overlapping (ZADD, 1000 members per command);
       SINTER/SUNION/SDIFF... :              two sets s1, s2 of M string members, 50% overlapping;
       anything else (KEYS, SCAN, ...):      M string keys from DEBUG POPULATE M.
     M = BENCH_ISO_MEMBERS (default 1,000,000); BENCH_ISO_DATA=zsets|sets|strings forces one.
  2. Run the disturbing command once, alone, on db 1 (its undisturbed duration; an error reply,
     e.g. tern's "unknown command" before a data type is implemented, is reported and the server
     skipped).
  3. (A) undisturbed: redis-benchmark on core 1, 50 clients, `-t set,get -d 100 -r 100000`,
     on db 0. Its full report is parsed as scripts/bench.py does (rps, p50, p99, p99.9).
  4. (B) disturbed: the same, while a client thread of this script (core 1, one raw socket)
     runs `SELECT 1` then the disturbing command in a loop, one at a time, from just before
     redis-benchmark starts until it ends; it counts completed commands and their mean duration.
  redis-benchmark has no time limit and disturbed throughput can be 100x below undisturbed, so
  -n adapts: (A) starts at BENCH_ISO_REQUESTS/10, (B) at 200, and -n grows (x20 at most per step,
  aimed at BENCH_ISO_SECONDS, default 5) until one run lasts >= BENCH_ISO_SECONDS/2 or -n reaches
  BENCH_ISO_REQUESTS (default 200000, ~2.5 s per test at ~75K ops/s); only that last run counts.
  For (B) the disturber keeps running through the growing runs; its rate is over all of them.
  Steps 3-4 repeat BENCH_ISO_ROUNDS times (default 1; A then B each round; medians reported).

redis-benchmark's latency histogram stops at 3 s: a p50/p99 of 3000.319 ms means ">= 3 s"
(redis-server blocked by a multi-second ZINTERSTORE on a slow machine shows exactly that).

Report: per server and test (SET, GET): ops/s undisturbed vs disturbed and their ratio (the
goal for tern: >= 0.8; redis-server, single-threaded, is expected near 0.1 with ZINTERSTORE),
p50/p99 both ways, and the disturbing commands completed per second during (B) and their mean
duration (one still running when redis-benchmark ends counts in the mean but not in the rate).

Environment / options: --ops CMD or BENCH_ISO_CMD (default "ZINTERSTORE out 2 zs1 zs2"; e.g.
"SUNIONSTORE out s1 s2", "KEYS nomatch*"), TERN_SERVER (default target/release/tern-server),
BENCH_ISO_MEMBERS, BENCH_ISO_DATA, BENCH_ISO_REQUESTS, BENCH_ISO_SECONDS, BENCH_ISO_ROUNDS,
BENCH_ISO_SERVERS
(comma-separated subset of redis,tern1,tern2; default all), BENCH_PORT_BASE (default 35200).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import parse_report  # noqa: E402  (same report parser as the throughput bench)
import bench_common  # noqa: E402
from bench_common import fmt, resp, save_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MEMBERS = int(os.environ.get("BENCH_ISO_MEMBERS", "1000000"))
REQUESTS = int(os.environ.get("BENCH_ISO_REQUESTS", "200000"))
SECONDS = float(os.environ.get("BENCH_ISO_SECONDS", "5"))
ROUNDS = int(os.environ.get("BENCH_ISO_ROUNDS", "1"))
PORT_BASE = int(os.environ.get("BENCH_PORT_BASE", "35200"))
CLIENTS = 50
BATCH = 1000  # members per ZADD / SADD
TESTS = ("SET", "GET")


class Reader:
    """Reads whole RESP2/RESP3 replies off a socket without building big objects."""

    def __init__(self, sock: socket.socket) -> None:
        self.s = sock
        self.buf = bytearray()
        self.pos = 0

    def _fill(self) -> None:
        if self.pos > 1 << 20:
            del self.buf[: self.pos]
            self.pos = 0
        chunk = self.s.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def _line(self) -> bytes:
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                line = bytes(self.buf[self.pos : end])
                self.pos = end + 2
                return line
            self._fill()

    def reply(self) -> bytes:
        """Skip one reply; return its first line (e.g. b':5', b'-ERR ...', b'*0')."""
        first = self._line()
        pending = 0
        line = first
        while True:
            kind, rest = line[:1], line[1:]
            if kind in (b"$", b"=", b"!") and rest != b"-1":
                need = int(rest) + 2
                while len(self.buf) - self.pos < need:
                    self._fill()
                self.pos += need
            elif kind in (b"*", b"~", b">") and rest != b"-1":
                pending += int(rest)
            elif kind == b"%" or kind == b"|":
                pending += 2 * int(rest)
            if pending == 0:
                return first
            pending -= 1
            line = self._line()


def pipeline(port: int, chunks, expected: int) -> tuple[int, str]:
    """Send `chunks` (bytes, `expected` single-line replies in all) on one connection with a
    reply-counting reader thread. Returns (error replies, first error)."""
    state = {"n": 0, "errors": 0, "first": b""}
    with socket.create_connection(("127.0.0.1", port), timeout=600) as s:
        def reader() -> None:
            tail = b"\n"
            while state["n"] < expected:
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                data = tail + chunk
                state["n"] += data.count(b"\r\n")
                pos = data.find(b"\n-")
                while pos >= 0:
                    state["errors"] += 1
                    if not state["first"]:
                        state["first"] = data[pos + 1 : data.find(b"\r\n", pos)]
                    pos = data.find(b"\n-", pos + 1)
                tail = data[-1:]

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        for blob in chunks:
            s.sendall(blob)
        th.join(600)
    if state["n"] < expected:
        return state["errors"] + 1, f"only {state['n']} of {expected} replies"
    return state["errors"], state["first"].decode(errors="replace")


def dataset_for(cmd: str) -> str:
    forced = os.environ.get("BENCH_ISO_DATA", "")
    if forced:
        return forced
    name = cmd.split()[0].upper()
    if name.startswith("Z"):
        return "zsets"
    if name[:6] in ("SINTER", "SUNION", "SDIFFS") or name == "SDIFF" or name == "SMEMBERS":
        return "sets"
    return "strings"


def dataset_chunks(kind: str):
    """(chunks, number of replies) that build the dataset on db 1 (SELECT 1 comes first)."""
    if kind == "strings":
        return [resp(b"SELECT", b"1"), resp(b"DEBUG", b"POPULATE", b"%d" % MEMBERS)], 2
    half = MEMBERS // 2

    def gen():
        yield resp(b"SELECT", b"1")
        for key, lo in ((b"1", 0), (b"2", half)):
            for start in range(lo, lo + MEMBERS, BATCH):
                end = min(lo + MEMBERS, start + BATCH)
                if kind == "zsets":
                    args = [b"ZADD", b"zs" + key]
                    for m in range(start, end):
                        args += [b"%d" % m, b"m%07d" % m]
                else:
                    args = [b"SADD", b"s" + key, *(b"m%07d" % m for m in range(start, end))]
                yield resp(*args)

    per_key = (MEMBERS + BATCH - 1) // BATCH
    return gen(), 1 + 2 * per_key


class Server(bench_common.Server):
    def command(self, *args: bytes, db: int = 0, timeout: float = 600) -> bytes:
        """One command (on database `db`) on a fresh connection; the first line of its reply."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            r = Reader(s)
            if db:
                s.sendall(resp(b"SELECT", b"%d" % db))
                r.reply()
            s.sendall(resp(*args))
            return r.reply()


class Disturber(threading.Thread):
    """Loops the disturbing command on db 1, one at a time, until stopped."""

    def __init__(self, port: int, cmd: list[bytes]) -> None:
        super().__init__(daemon=True)
        self.port, self.cmd = port, resp(*cmd)
        self.stop_flag = threading.Event()
        self.started = threading.Event()
        self.count = 0  # completed commands
        self.busy = 0.0  # their total duration
        self.done_at: list[float] = []  # monotonic completion times
        self.error = ""

    def run(self) -> None:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=600) as s:
                r = Reader(s)
                s.sendall(resp(b"SELECT", b"1"))
                r.reply()
                self.started.set()
                while not self.stop_flag.is_set():
                    t0 = time.monotonic()
                    s.sendall(self.cmd)
                    first = r.reply()
                    t1 = time.monotonic()
                    if first.startswith(b"-"):
                        self.error = first.decode(errors="replace")
                        break
                    self.busy += t1 - t0
                    self.done_at.append(t1)
                    self.count += 1
        except OSError as e:
            self.error = str(e)
        self.started.set()


@dataclass
class Sample:
    rps: float = 0.0
    p50: float = float("nan")
    p99: float = float("nan")
    p999: float = float("nan")


def redis_benchmark(port: int, n: int) -> tuple[dict[str, Sample], float, str]:
    cmd = [
        "taskset", "-c", "1", "redis-benchmark", "-h", "127.0.0.1", "-p", str(port),
        "-c", str(CLIENTS), "-n", str(n), "-d", "100", "-t", "set,get",
        "-r", "100000", "--precision", "3",
    ]
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    report = out.stdout.replace("\r", "\n")
    samples: dict[str, Sample] = {}
    for part in report.split("====== ")[1:]:
        name = part.split(" ", 1)[0]
        if name in TESTS:
            samples[name] = Sample(*parse_report(part, n))
    note = ""
    if out.returncode != 0 or any(t not in samples or samples[t].rps == 0 for t in TESTS):
        note = f"redis-benchmark failed (rc={out.returncode}): {out.stderr.strip()[:200]}"
    return samples, wall, note


def timed_benchmark(port: int, n0: int) -> tuple[dict[str, Sample], float, str, int]:
    """redis-benchmark with -n grown from n0 (at most x20 a step, capped at BENCH_ISO_REQUESTS)
    until one run takes >= BENCH_ISO_SECONDS / 2: disturbed throughput can be 100x lower than
    undisturbed, and redis-benchmark has no time limit. Only the last run is kept."""
    n = min(n0, REQUESTS)
    while True:
        samples, wall, note = redis_benchmark(port, n)
        if note or wall >= SECONDS / 2 or n >= REQUESTS:
            return samples, wall, note, n
        n = min(REQUESTS, n * 20, max(n * 2, int(n * SECONDS / max(wall, 0.01))))


@dataclass
class Outcome:
    label: str
    note: str = ""
    probe_s: float = float("nan")
    undisturbed: dict[str, list[Sample]] = field(default_factory=dict)
    disturbed: dict[str, list[Sample]] = field(default_factory=dict)
    dist_per_s: list[float] = field(default_factory=list)
    dist_avg_ms: list[float] = field(default_factory=list)


def med(vals: list[float]) -> float:
    vals = sorted(v for v in vals if v == v)
    return vals[len(vals) // 2] if vals else float("nan")


def run_server(server: Server, cmd: list[bytes], kind: str) -> Outcome:
    out = Outcome(server.label)
    server.start()
    try:
        chunks, expected = dataset_chunks(kind)
        t0 = time.monotonic()
        errors, first = pipeline(server.port, chunks, expected)
        load_s = time.monotonic() - t0
        if errors:
            out.note = (f"dataset load failed: {first.lstrip('-').split(', with args')[0]} "
                        f"({errors} error replies)")
            print(f"  {server.label}: {out.note}", file=sys.stderr, flush=True)
            return out
        size = server.command(b"DBSIZE", db=1).decode()
        print(f"  {server.label}: loaded {kind} on db 1 in {load_s:.1f}s (DBSIZE {size[1:]})",
              file=sys.stderr, flush=True)
        t0 = time.monotonic()
        first = server.command(*cmd, db=1)
        out.probe_s = time.monotonic() - t0
        if first.startswith(b"-"):
            out.note = f"disturbing command failed: {first.decode(errors='replace').lstrip('-').split(', with args')[0]}"
            print(f"  {server.label}: {out.note}", file=sys.stderr, flush=True)
            return out
        print(f"  {server.label}: one {cmd[0].decode()} alone: {out.probe_s * 1000:.1f} ms (reply {first.decode()[:40]})",
              file=sys.stderr, flush=True)
        for rnd in range(ROUNDS):
            samples, wall, note, n = timed_benchmark(server.port, REQUESTS // 10)
            for t, s in samples.items():
                out.undisturbed.setdefault(t, []).append(s)
            out.note = out.note or note
            print(f"  {server.label} r{rnd} A undisturbed: "
                  + "  ".join(f"{t} {s.rps:,.0f}/s p99 {s.p99:.3f}" for t, s in samples.items())
                  + f"  (-n {n}, {wall:.1f}s)", file=sys.stderr, flush=True)

            d = Disturber(server.port, cmd)
            d.start()
            d.started.wait(30)
            time.sleep(0.05)  # let the first disturbing command get going
            t0 = time.monotonic()
            samples, wall, note, n = timed_benchmark(server.port, 4 * CLIENTS)
            t1 = time.monotonic()
            disturbed_s = t1 - t0
            d.stop_flag.set()
            d.join(600)
            within = sum(1 for t in d.done_at if t <= t1)  # the rate counts only these
            for t, s in samples.items():
                out.disturbed.setdefault(t, []).append(s)
            out.note = out.note or note or (f"disturber: {d.error}" if d.error else "")
            out.dist_per_s.append(within / disturbed_s)
            out.dist_avg_ms.append(d.busy / d.count * 1000 if d.count else float("nan"))
            print(f"  {server.label} r{rnd} B disturbed:   "
                  + "  ".join(f"{t} {s.rps:,.0f}/s p99 {s.p99:.3f}" for t, s in samples.items())
                  + f"  (-n {n}, {wall:.1f}s; {within} x {cmd[0].decode()} done in {disturbed_s:.1f}s "
                  f"+ {d.count - within} after, mean "
                  f"{out.dist_avg_ms[-1]:.1f} ms)", file=sys.stderr, flush=True)
    finally:
        server.stop()
    return out


def ratio(b: float, a: float) -> str:
    """b/a with 2 decimals, 3 below 0.1 (a blocked server lands far below 0.01)."""
    r = b / a if a else float("nan")
    return fmt(r, ".3f" if r < 0.1 else ".2f")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", default=os.environ.get("BENCH_ISO_CMD", "ZINTERSTORE out 2 zs1 zs2"),
                    help="the disturbing command, run in a loop on db 1 (env BENCH_ISO_CMD)")
    opts = ap.parse_args()
    cmd_text = opts.ops
    cmd = [a.encode() for a in shlex.split(cmd_text)]
    kind = dataset_for(cmd_text)
    if kind not in ("zsets", "sets", "strings"):
        sys.exit(f"BENCH_ISO_DATA={kind!r}: expected zsets, sets or strings")
    tern = os.environ.get("TERN_SERVER", str(ROOT / "target" / "release" / "tern-server"))
    redis = shutil.which("redis-server")
    if not redis or not shutil.which("redis-benchmark"):
        sys.exit("redis-server / redis-benchmark missing: run scripts/setup.sh")
    if (os.cpu_count() or 1) < 2:
        sys.exit("bench_isolation: needs 2 CPUs (server on core 0, clients on core 1)")
    if not os.path.exists(tern):
        sys.exit(f"tern-server not found at {tern} (set TERN_SERVER or cargo build --release)")
    os.sched_setaffinity(0, {1})  # this script's threads (loader, disturber) on core 1

    common = ["--save", "", "--enable-debug-command", "yes"]
    all_servers = {
        "redis": Server("redis-server (core 0)", [redis, *common, "--appendonly", "no"], PORT_BASE, "0"),
        "tern1": Server("tern --threads 1 (core 0)", [tern, *common, "--threads", "1"], PORT_BASE + 1, "0"),
        "tern2": Server("tern --threads 2 (cores 0,1)*", [tern, *common, "--threads", "2"], PORT_BASE + 2, "0,1"),
    }
    wanted = os.environ.get("BENCH_ISO_SERVERS", "redis,tern1,tern2").split(",")
    servers = [all_servers[w] for w in wanted if w in all_servers]
    print(f"disturbing command on db 1: {cmd_text!r}; dataset: {kind}, {MEMBERS:,} "
          f"{'members per key' if kind != 'strings' else 'keys'}; db 0: redis-benchmark -t set,get "
          f"-n <= {REQUESTS} (~{SECONDS:g} s) -c {CLIENTS} -d 100 on core 1; {ROUNDS} round(s)", file=sys.stderr, flush=True)

    outcomes = [run_server(s, cmd, kind) for s in servers]

    name = cmd[0].decode().upper()
    lines = [
        f"| server | test | ops/s undisturbed | ops/s disturbed | disturbed/undisturbed | p50 ms A / B "
        f"| p99 ms A / B | {name}/s during B | {name} mean ms (alone) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for o in outcomes:
        if not o.undisturbed:
            lines.append(f"| {o.label} | | | | | | | | | {o.note}")
            continue
        for t in TESTS:
            a, b = o.undisturbed.get(t, []), o.disturbed.get(t, [])
            ra, rb = med([x.rps for x in a]), med([x.rps for x in b])
            lines.append(
                f"| {o.label} | {t} | {fmt(ra, ',.0f')} | {fmt(rb, ',.0f')} | {ratio(rb, ra)} "
                f"| {fmt(med([x.p50 for x in a]), '.3f')} / {fmt(med([x.p50 for x in b]), '.3f')} "
                f"| {fmt(med([x.p99 for x in a]), '.3f')} / {fmt(med([x.p99 for x in b]), '.3f')} "
                f"| {fmt(med(o.dist_per_s), '.2f')} | {fmt(med(o.dist_avg_ms), '.1f')} ({fmt(o.probe_s * 1000, '.1f')}) |"
                + (f" {o.note}" if o.note else "")
            )
    lines.append("")
    lines.append(
        f"db 0: redis-benchmark -t set,get -n <= {REQUESTS} (~{SECONDS:g} s) -c {CLIENTS} -d 100 -r 100000 on core 1; "
        f"A = undisturbed, B = while one client loops `{cmd_text}` on db 1 ({kind}, {MEMBERS:,}). "
        f"Medians of {ROUNDS} round(s). \\* tern --threads 2 runs on cores 0,1 and shares core 1 "
        "with redis-benchmark and the disturbing client."
    )
    if any(x.p99 >= 3000 for o in outcomes for v in o.disturbed.values() for x in v):
        lines.append("3000.319 ms = redis-benchmark's histogram ceiling: the latency was >= 3 s.")
    save_table("\n".join(lines), "bench-isolation")


if __name__ == "__main__":
    main()

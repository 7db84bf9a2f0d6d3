#!/usr/bin/env python3
"""Hash-field expiration, side by side with Redis 7.4.1 (the version that has it), when built at
~/redis-7.4.1 (or $REDIS_741_SERVER): what a field's time costs in memory, and what the active
cycle costs a concurrent GET/SET load while 1M fields expire over 60 s.

Called by `make bench-field-expiry` (scripts/bench.sh with BENCH_SCRIPT=bench_field_expiry.py,
which builds tern first unless TERN_SERVER is set). Standard library only. Report-only: never
part of `make test`.

Each server is started fresh for each part, pinned to core 0 (`taskset -c 0`; tern with
`--threads 1`), `--save ""`; this script and redis-benchmark run on core 1.

1. Memory: H hashes `h:<i>` of 10 fields (8-byte values; listpack in both servers) are loaded
   pipelined; used_memory and RSS are read; then every field gets a time an hour away
   (HPEXPIRE h:<i> 3600000 FIELDS 10 ...); bytes per field with a time = the growth / (10 H).
2. Active cycle: the same hashes, each field given a time spread evenly over the 60 s that start
   BENCH_FE_LEAD seconds (default 20) after the load. redis-benchmark (50 connections,
   `-t set,get -d 100 -r 100000` on db 1, the hashes being on db 0) runs in rounds of
   BENCH_FE_REQUESTS requests (default 200000) from the end of the load until every field is
   gone; rounds that end before the first field's time are "before", rounds that run wholly
   inside the 60 s are "during". Reported: median ops/s and p99 of each, the fields expired
   (INFO expired_subkeys) and how long after the last field's time the last hash went.

H = 100,000 x BENCH_FE_SCALE (default 1.0: 1M fields).

BENCH_FE_KIND=set or zset measures KeyDB's member expiry instead (tern alone: Redis has none):
H sets `s:<i>` of 10 members (SADD; or sorted sets, ZADD with scores 0..9), each member given
its time with PEXPIREMEMBERAT. `make bench-member-expiry` runs it for sets.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import TERN, Server, invocation, pick_port, resp, save_table  # noqa: E402

REDIS_741 = os.environ.get("REDIS_741_SERVER", str(Path.home() / "redis-7.4.1/src/redis-server"))
SCALE = float(os.environ.get("BENCH_FE_SCALE", "1.0"))
HASHES = int(100_000 * SCALE)
FIELDS = 10
LEAD = float(os.environ.get("BENCH_FE_LEAD", "20"))
SPREAD = 60.0
REQUESTS = int(os.environ.get("BENCH_FE_REQUESTS", "200000"))
FIELD_NAMES = [b"f%d" % i for i in range(FIELDS)]
KIND = os.environ.get("BENCH_FE_KIND", "hash")
PLURAL = {"hash": "hashes", "set": "sets", "zset": "sorted sets"}
if KIND not in PLURAL:
    sys.exit("BENCH_FE_KIND: hash, set or zset")


def pipeline(srv: Server, cmds: list[bytes], lines_per_reply: int, batch: int = 2000) -> None:
    """Send `cmds` in batches over one socket; each reply is `lines_per_reply` lines."""
    with socket.create_connection(("127.0.0.1", srv.port)) as s:
        for i in range(0, len(cmds), batch):
            chunk = cmds[i : i + batch]
            s.sendall(b"".join(chunk))
            need = len(chunk) * lines_per_reply
            buf = b""
            while buf.count(b"\r\n") < need:
                buf += s.recv(1 << 20)
            if b"\r\n-" in b"\r\n" + buf:
                sys.exit(f"{srv.label}: error reply while loading: {buf[:200]!r}")


def load_hashes(srv: Server) -> None:
    cmds = []
    for i in range(HASHES):
        if KIND == "hash":
            args = [b"HSET", b"h:%d" % i]
            for f in FIELD_NAMES:
                args += [f, b"v%07d" % i]
        elif KIND == "set":
            args = [b"SADD", b"h:%d" % i, *FIELD_NAMES]
        else:
            args = [b"ZADD", b"h:%d" % i]
            for j, f in enumerate(FIELD_NAMES):
                args += [b"%d" % j, f]
        cmds.append(resp(*args))
    pipeline(srv, cmds, 1)


def set_times(srv: Server, at_ms) -> None:
    """A time on every field (member): `at_ms(i, j)` for field j of key i."""
    if KIND == "hash":
        cmds = [
            resp(b"HPEXPIREAT", b"h:%d" % i, b"%d" % at_ms(i, j), b"FIELDS", b"1", FIELD_NAMES[j])
            for i in range(HASHES)
            for j in range(FIELDS)
        ]
        pipeline(srv, cmds, 2)
        return
    cmds = [
        resp(b"PEXPIREMEMBERAT", b"h:%d" % i, FIELD_NAMES[j], b"%d" % at_ms(i, j))
        for i in range(HASHES)
        for j in range(FIELDS)
    ]
    pipeline(srv, cmds, 1)


def servers() -> list[tuple[str, list[str]]]:
    out = [("tern --threads 1", [TERN, "--threads", "1", "--save", ""])]
    if KIND != "hash":
        return out
    if os.access(REDIS_741, os.X_OK):
        out.insert(0, ("redis-server 7.4.1", [REDIS_741, "--save", "", "--appendonly", "no"]))
    else:
        print(f"(no Redis 7.4.1 at {REDIS_741}: tern alone)", file=sys.stderr)
    return out


def memory_part(label: str, argv: list[str]) -> tuple[float, float]:
    srv = Server(label, argv, pick_port(35500), cpus="0")
    srv.start()
    try:
        load_hashes(srv)
        time.sleep(1)
        used0, rss0 = int(srv.info(b"memory")["used_memory"]), srv.rss()
        far = int(time.time() * 1000) + 3_600_000
        set_times(srv, lambda i, j: far)
        time.sleep(1)
        used1, rss1 = int(srv.info(b"memory")["used_memory"]), srv.rss()
    finally:
        srv.stop()
    n = HASHES * FIELDS
    return (used1 - used0) / n, (rss1 - rss0) / n


def bench_round(srv: Server) -> tuple[float, float, float, float]:
    """One redis-benchmark run: (start, end, ops/s, p99 ms)."""
    t0 = time.time()
    out = subprocess.run(
        ["taskset", "-c", "1", "redis-benchmark", "-p", str(srv.port), "-c", "50", "-n", str(REQUESTS),
         "-t", "set,get", "-d", "100", "-r", "100000", "--dbnum", "1", "--csv"],
        capture_output=True, text=True, check=True,
    ).stdout
    t1 = time.time()
    rps, p99 = [], []
    for line in out.splitlines()[1:]:
        cols = [c.strip('"') for c in line.split(",")]
        rps.append(float(cols[1]))
        p99.append(float(cols[6]))
    return t0, t1, statistics.mean(rps), max(p99)


def cycle_part(label: str, argv: list[str]) -> dict:
    srv = Server(label, argv, pick_port(35510), cpus="0")
    srv.start()
    try:
        load_hashes(srv)
        start_ms = int((time.time() + LEAD) * 1000)
        step = SPREAD * 1000 / (HASHES * FIELDS)
        set_times(srv, lambda i, j: start_ms + int((j * HASHES + i) * step))
        first, last = start_ms / 1000, start_ms / 1000 + SPREAD
        before, during = [], []
        gone_at = None
        while time.time() < last + 30:
            t0, t1, rps, p99 = bench_round(srv)
            if t1 < first:
                before.append((rps, p99))
            elif t0 > first and t1 < last:
                during.append((rps, p99))
            if time.time() > last and srv.dbsize() == 0:
                gone_at = time.time()
                break
        expired = int(srv.info(b"stats").get("expired_subkeys", "0"))
    finally:
        srv.stop()

    def med(xs, k):
        return statistics.median(x[k] for x in xs) if xs else float("nan")

    return {
        "before_rps": med(before, 0), "before_p99": med(before, 1), "before_n": len(before),
        "during_rps": med(during, 0), "during_p99": med(during, 1), "during_n": len(during),
        "expired": expired, "lag": (gone_at - last) if gone_at else float("nan"),
    }


def main() -> None:
    rows = []
    for label, argv in servers():
        used, rss = memory_part(label, argv)
        c = cycle_part(label, argv)
        rows.append((label, used, rss, c))
        print(label, used, rss, c, file=sys.stderr)
    n = HASHES * FIELDS
    what = {"hash": "Hash-field expiration", "set": "Set-member expiry (EXPIREMEMBER)",
            "zset": "Sorted-set-member expiry (EXPIREMEMBER)"}[KIND]
    lines = [
        f"{what}, {HASHES:,} {PLURAL[KIND]} x {FIELDS} {'fields' if KIND == 'hash' else 'members'} "
        f"({n:,}); server on core 0, "
        f"load on core 1; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "",
        "| server | B/field with a time (used_memory) | B/field (RSS) | GET/SET ops/s before | during 60 s of expiry | p99 ms before | during | fields expired | last key gone after last time (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, used, rss, c in rows:
        lines.append(
            f"| {label} | {used:.1f} | {rss:.1f} | {c['before_rps']:,.0f} ({c['before_n']}) | "
            f"{c['during_rps']:,.0f} ({c['during_n']}) | {c['before_p99']:.2f} | {c['during_p99']:.2f} | "
            f"{c['expired']:,} | {c['lag']:.1f} |"
        )
    lines += ["", "(n) = redis-benchmark rounds of that phase; medians.", "", f"`{invocation()}`"]
    save_table("\n".join(lines), "field-expiry" if KIND == "hash" else f"member-expiry-{KIND}")


if __name__ == "__main__":
    main()

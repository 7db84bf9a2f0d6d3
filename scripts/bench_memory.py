#!/usr/bin/env python3
"""Side-by-side memory benchmark: Debian's redis-server, Redis 7.2.6 built from source (when at
~/redis-7.2.6 or $REDIS_726_SERVER) and tern-server, same datasets, one run.

Called by `make bench-memory` (scripts/bench.sh with BENCH_SCRIPT=bench_memory.py, which builds
tern first unless TERN_SERVER is set). Standard library only. Report-only: never part of
`make test`.

Method. For every dataset, each server in turn (redis-server first, then tern) is started FRESH
(redis-server with `--save "" --appendonly no`, tern with `--save ""`, both on default settings
otherwise, not pinned), and:
  1. after it answers PING, its RSS (VmRSS in /proc/PID/status) and INFO memory `used_memory`
     are read: the "empty" figures;
  2. the dataset is loaded over one raw socket: the RESP of all its commands, generated once
     per dataset before either server starts, is written in chunks with sendall() while a second
     thread reads and counts the replies (every reply of these loaders is one line: +OK, :n or
     -ERR), so the socket is always pipelined and never deadlocks; "load s" is that time;
  3. after the last reply and a short settle pause (BENCH_MEM_SETTLE seconds, default 1), RSS and
     used_memory are read again, plus DBSIZE and OBJECT ENCODING of a sample key;
  4. the server is stopped (SIGTERM, then SIGKILL).
Per-entry bytes = (RSS_after - RSS_empty) / entries, and the same for used_memory. An "entry" is
a key, except for the list dataset where it is a list element. The tern/redis ratio compares the
RSS per entry.

The first command of each dataset is sent alone, synchronously: if the server answers it with an
error (tern before a data type is implemented: "unknown command"), the dataset is reported as not
supported on that server with the error text, and the load is skipped.

Datasets (N = 1,000,000 x BENCH_MEM_SCALE, default scale 1.0):
  hash     N hashes `h:<i>`, 10 fields f0..f9, 8-byte non-numeric values (listpack in both)
  set-str  N sets `s:<i>` of 10 8-byte non-numeric members (hashtable in Redis 7.0, listpack
           in Redis 7.2: Debian's redis-server is 7.0.15, so this row compares encodings too)
  set-int  N sets `si:<i>` of 10 integer members (intset)
  zset     N sorted sets `z:<i>` of 10 8-byte members with integer scores (listpack)
  list     1 list `l` of 10 x N 8-byte elements (RPUSH, 1000 elements per command; quicklist)
  string   N strings `k:<i>` = 8-byte value (SET)
  string-100, string-1k   N strings `key:<11 digits>` (15-byte keys) = 100-byte / 1024-byte values

Payload per entry: the key's bytes plus the value as Redis 7.2 encodes it (the string; the
listpack or intset bytes, computed from the encoding rules); overhead = RSS per entry - payload,
what the servers' layouts differ in (the issue's "per-key overhead").

Environment: TERN_SERVER (default target/release/tern-server), BENCH_MEM_SCALE (default 1.0),
BENCH_MEM_DATASETS (comma-separated subset of the names above, default all),
BENCH_MEM_SETTLE (seconds, default 1), BENCH_PORT_BASE (default 35100).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from bench_common import REDIS_726, Server, fmt, pick_port, read_reply, reply_text, save_table

ROOT = Path(__file__).resolve().parents[1]
SCALE = float(os.environ.get("BENCH_MEM_SCALE", "1.0"))
SETTLE = float(os.environ.get("BENCH_MEM_SETTLE", "1"))
PORT_BASE = int(os.environ.get("BENCH_PORT_BASE", "35100"))
N = max(1, int(1_000_000 * SCALE))
CHUNK = 2000  # commands per generated chunk


# --- dataset generators: each yields (command count, RESP bytes) chunks; the first chunk holds
# exactly the first command (the probe) ---------------------------------------------------------


def chunked(n: int, one: Callable[[int], bytes]) -> Iterator[tuple[int, bytes]]:
    yield 1, one(0)
    i = 1
    while i < n:
        j = min(n, i + CHUNK)
        yield j - i, b"".join(one(k) for k in range(i, j))
        i = j


# Templates: one bytes %-format per command keeps generation at ~1 s per million commands.
M7 = 10_000_000
_HASH = b"*22\r\n$4\r\nHSET\r\n$%d\r\nh:%d\r\n" + b"".join(
    b"$2\r\nf%d\r\n$8\r\nv%%07d\r\n" % f for f in range(10))
_SET_STR = b"*12\r\n$4\r\nSADD\r\n$%d\r\ns:%d\r\n" + b"$8\r\nm%07d\r\n" * 10
_ZSET = b"*22\r\n$4\r\nZADD\r\n$%d\r\nz:%d\r\n" + b"$%d\r\n%d\r\n$8\r\nm%07d\r\n" * 10


def hash_cmd(i: int) -> bytes:
    b = i * 10
    return _HASH % (len(b"h:%d" % i), i, *((b + f) % M7 for f in range(10)))


def set_str_cmd(i: int) -> bytes:
    b = i * 10
    return _SET_STR % (len(b"s:%d" % i), i, *((b + m) % M7 for m in range(10)))


_SET_INT = b"*12\r\n$4\r\nSADD\r\n$%d\r\nsi:%d\r\n" + b"$%d\r\n%d\r\n" * 10


def set_int_cmd(i: int) -> bytes:
    args: list[int] = []
    for m in range(i * 10, i * 10 + 10):
        args += [len(b"%d" % m), m]
    return _SET_INT % (len(b"si:%d" % i), i, *args)


def zset_cmd(i: int) -> bytes:
    args: list[int] = []
    for m in range(i * 10, i * 10 + 10):
        args += [len(b"%d" % m), m, m % M7]
    return _ZSET % (len(b"z:%d" % i), i, *args)


LIST_BATCH = 1000
_LIST = b"*%d\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n" % (LIST_BATCH + 2) + b"$8\r\ne%07d\r\n" * LIST_BATCH


def list_cmd(c: int) -> bytes:
    b = c * LIST_BATCH
    return _LIST % tuple((b + k) % M7 for k in range(LIST_BATCH))


def string_cmd(i: int) -> bytes:
    return b"*3\r\n$3\r\nSET\r\n$%d\r\nk:%d\r\n$8\r\nv%07d\r\n" % (len(b"k:%d" % i), i, i % M7)


def sized_string_cmd(size: int) -> Callable[[int], bytes]:
    """SET key:<11 digits> (15-byte keys) to a `size`-byte non-numeric value."""
    head = b"*3\r\n$3\r\nSET\r\n$15\r\nkey:%011d\r\n$" + b"%d" % size + b"\r\nv%07d"
    tail = b"x" * (size - 8) + b"\r\n"
    return lambda i: head % (i, i % M7) + tail


# --- payload: the bytes an entry cannot do without (its key, and its value as Redis 7.2 encodes
# it: the string, or the listpack / intset), so that RSS per entry minus payload is the per-key
# overhead the servers differ in ------------------------------------------------------------------


def lp_str(n: int) -> int:
    """A listpack string entry of n bytes: encoding header, data, back-length."""
    head = 1 if n < 64 else 2 if n < 4096 else 5
    return head + n + (1 if head + n < 128 else 2)


def lp_int(v: int) -> int:
    """A listpack integer entry: the smallest encoding that holds v, plus its back-length."""
    size = (1 if 0 <= v < 128 else 2 if -4096 <= v < 4096 else 3 if -2**15 <= v < 2**15
            else 4 if -2**23 <= v < 2**23 else 5 if -2**31 <= v < 2**31 else 9)
    return size + 1


LP_EMPTY = 7  # listpack header (6) + end byte


def avg_len(fmt_: bytes, n: int) -> float:
    return sum(len(fmt_ % i) for i in range(n)) / n


def payload_hash(n: int) -> float:
    return avg_len(b"h:%d", n) + LP_EMPTY + 10 * (lp_str(2) + lp_str(8))


def payload_set_str(n: int) -> float:
    return avg_len(b"s:%d", n) + LP_EMPTY + 10 * lp_str(8)


def payload_set_int(n: int) -> float:
    # intset: 8-byte header, then 10 members of the width the largest needs.
    width = sum(2 if i * 10 + 9 < 2**15 else 4 if i * 10 + 9 < 2**31 else 8 for i in range(n)) / n
    return avg_len(b"si:%d", n) + 8 + 10 * width


def payload_zset(n: int) -> float:
    scores = sum(sum(lp_int(m) for m in range(i * 10, i * 10 + 10)) for i in range(n)) / n
    return avg_len(b"z:%d", n) + LP_EMPTY + 10 * lp_str(8) + scores


@dataclass
class Dataset:
    name: str
    desc: str
    commands: int
    entries: int
    unit: str
    one: Callable[[int], bytes]
    sample: bytes
    # Payload bytes per entry (see above), given the number of keys.
    payload: Callable[[int], float] = lambda n: float("nan")

    _cache: list[tuple[int, bytes]] | None = None

    def generate(self) -> None:
        """Build the whole RESP stream up front (a few hundred MB at most), so that "load s"
        times the servers, not this script's generation, and both servers get the same bytes."""
        self._cache = list(chunked(self.commands, self.one))

    def chunks(self) -> Iterator[tuple[int, bytes]]:
        if self._cache is None:
            self.generate()
        return iter(self._cache)

    def forget(self) -> None:
        self._cache = None


LIST_CMDS = max(1, (10 * N) // LIST_BATCH)
DATASETS = [
    Dataset("hash", f"{N:,} hashes h:<i>, 10 fields x 8B", N, N, "key", hash_cmd, b"h:0", payload_hash),
    Dataset("set-str", f"{N:,} sets s:<i>, 10 string members x 8B", N, N, "key", set_str_cmd, b"s:0",
            payload_set_str),
    Dataset("set-int", f"{N:,} sets si:<i>, 10 integer members", N, N, "key", set_int_cmd, b"si:0",
            payload_set_int),
    Dataset("zset", f"{N:,} zsets z:<i>, 10 members x 8B + scores", N, N, "key", zset_cmd, b"z:0",
            payload_zset),
    Dataset("list", f"1 list, {LIST_CMDS * LIST_BATCH:,} elements x 8B", LIST_CMDS,
            LIST_CMDS * LIST_BATCH, "element", list_cmd, b"l", lambda n: float(lp_str(8))),
    Dataset("string", f"{N:,} strings k:<i> = 8B", N, N, "key", string_cmd, b"k:0",
            lambda n: avg_len(b"k:%d", n) + 8),
    Dataset("string-100", f"{N:,} strings key:<11 digits> = 100B", N, N, "key", sized_string_cmd(100),
            b"key:00000000000", lambda n: 15 + 100),
    Dataset("string-1k", f"{N:,} strings key:<11 digits> = 1KB", N, N, "key", sized_string_cmd(1024),
            b"key:00000000000", lambda n: 15 + 1024),
]


# --- servers ------------------------------------------------------------------------------------


def used_memory(server: Server) -> int:
    return int(server.info(b"memory").get("used_memory", -1))


def short_error(err: str) -> str:
    """The error line without its leading '-' and without the echoed arguments."""
    return err.lstrip("-").split(", with args beginning with", 1)[0].strip()


@dataclass
class LoadResult:
    sent: int = 0
    replies: int = 0
    errors: int = 0
    first_error: str = ""
    seconds: float = 0.0


def load(server: Server, ds: Dataset) -> LoadResult:
    """Probe with the first command, then stream the rest pipelined (writer here, reader thread)."""
    res = LoadResult()
    chunks = ds.chunks()
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=600) as s:
        _n, first = next(chunks)
        s.sendall(first)
        reply = read_reply(s)
        res.sent = res.replies = 1
        if reply.startswith(b"-"):
            res.errors = 1
            res.first_error = reply_text(reply)
            return res

        state = {"replies": 0, "errors": 0, "first_error": b""}
        expected = [None]  # total set by the writer when done
        done = threading.Event()

        def reader() -> None:
            tail = b"\n"  # as if a reply had just ended: a leading '-' is an error
            try:
                while True:
                    chunk = s.recv(1 << 20)
                    if not chunk:
                        break
                    data = tail + chunk
                    state["replies"] += data.count(b"\r\n")
                    pos = data.find(b"\n-")
                    while pos >= 0:
                        state["errors"] += 1
                        if not state["first_error"]:
                            end = data.find(b"\r\n", pos)
                            state["first_error"] = data[pos + 1 : end if end > 0 else pos + 200]
                        pos = data.find(b"\n-", pos + 1)
                    tail = data[-1:]
                    if expected[0] is not None and state["replies"] >= expected[0]:
                        break
            except OSError:
                pass
            done.set()

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        sent = 0
        for n, blob in chunks:
            s.sendall(blob)
            sent += n
        expected[0] = sent
        # the reader may have finished counting before `expected` was set: wait with a poll
        while not done.wait(0.05):
            if state["replies"] >= sent:
                break
        s.shutdown(socket.SHUT_WR)
        done.wait(600)
        res.sent += sent
        res.replies += state["replies"]
        res.errors += state["errors"]
        res.first_error = state["first_error"].decode(errors="replace")
    res.seconds = time.monotonic() - t0
    return res


@dataclass
class Row:
    dataset: Dataset
    server: str
    rss_empty: int = 0
    rss_after: int = 0
    used_empty: int = 0
    used_after: int = 0
    dbsize: str = ""
    encoding: str = ""
    load_s: float = 0.0
    note: str = ""
    ok: bool = False

    @property
    def rss_per_entry(self) -> float:
        return (self.rss_after - self.rss_empty) / self.dataset.entries if self.ok else float("nan")

    @property
    def used_per_entry(self) -> float:
        return (self.used_after - self.used_empty) / self.dataset.entries if self.ok else float("nan")


def measure(server: Server, ds: Dataset) -> Row:
    row = Row(ds, server.label)
    server.start()
    try:
        server.command(b"PING")
        row.rss_empty, row.used_empty = server.rss(), used_memory(server)
        lr = load(server, ds)
        row.load_s = lr.seconds
        if lr.errors and lr.replies == 1:
            row.note = f"not supported: {short_error(lr.first_error)}"
        elif lr.errors:
            row.note = f"{lr.errors} error replies of {lr.sent}, first: {short_error(lr.first_error)}"
        elif lr.replies != lr.sent:
            row.note = f"only {lr.replies} replies to {lr.sent} commands"
        if not row.note.startswith("not supported"):
            time.sleep(SETTLE)
            row.rss_after, row.used_after = server.rss(), used_memory(server)
            row.dbsize = reply_text(server.command(b"DBSIZE")).lstrip(":")
            row.encoding = reply_text(server.command(b"OBJECT", b"ENCODING", ds.sample))
            row.ok = True
    finally:
        server.stop()
    print(
        f"  {ds.name:<8} {server.label:<13} load {row.load_s:6.1f}s  RSS {row.rss_empty / 2**20:7.1f} -> "
        f"{row.rss_after / 2**20:8.1f} MiB  used_memory {row.used_empty / 2**20:7.1f} -> "
        f"{row.used_after / 2**20:8.1f} MiB  dbsize {row.dbsize}  encoding {row.encoding} {row.note}",
        file=sys.stderr, flush=True,
    )
    return row


def main() -> None:
    tern = os.environ.get("TERN_SERVER", str(ROOT / "target" / "release" / "tern-server"))
    redis = shutil.which("redis-server")
    if not redis:
        sys.exit("redis-server missing: run scripts/setup.sh")
    if not os.path.exists(tern):
        sys.exit(f"tern-server not found at {tern} (set TERN_SERVER or cargo build --release)")
    wanted = os.environ.get("BENCH_MEM_DATASETS", "")
    datasets = [d for d in DATASETS if not wanted or d.name in wanted.split(",")]
    if not datasets:
        sys.exit(f"BENCH_MEM_DATASETS={wanted!r} names none of {[d.name for d in DATASETS]}")
    version = subprocess.run([redis, "--version"], capture_output=True, text=True).stdout.split()
    redis_version = next((v[2:] for v in version if v.startswith("v=")), "?")
    print(f"scale {SCALE} (N = {N:,}), settle {SETTLE}s, redis-server {redis_version}, tern {tern}",
          file=sys.stderr, flush=True)

    servers = [("redis-server", [redis, "--save", "", "--appendonly", "no"])]
    if os.access(REDIS_726, os.X_OK):
        servers.append(("redis 7.2.6", [REDIS_726, "--save", "", "--appendonly", "no"]))
    servers.append(("tern", [tern, "--save", ""]))
    # Ratios are against the Redis tern answers as when it is here.
    baseline = servers[-2][0]
    rows: list[list[Row]] = []
    for ds in datasets:
        t0 = time.monotonic()
        ds.generate()
        print(f"  {ds.name:<8} generated {sum(len(b) for _, b in ds.chunks()) / 2**20:.0f} MiB of RESP "
              f"in {time.monotonic() - t0:.1f}s", file=sys.stderr, flush=True)
        rows.append([measure(Server(label, argv, pick_port(PORT_BASE + k)), ds)
                     for k, (label, argv) in enumerate(servers)])
        ds.forget()

    lines = [
        "| dataset | server | encoding | RSS empty MiB | RSS loaded MiB | RSS B/entry | used_memory B/entry "
        f"| payload B/entry | overhead B/entry | tern/{baseline} RSS B/entry | tern/{baseline} overhead "
        "| load s | note |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for per_server in rows:
        base = next(r for r in per_server if r.server == baseline)
        ds = per_server[0].dataset
        payload = ds.payload(ds.entries)
        for row in per_server:
            ratio = ratio_over = ""
            if row.server == "tern" and row.ok and base.ok:
                ratio = fmt(row.rss_per_entry / base.rss_per_entry, ".2f")
                ratio_over = fmt((row.rss_per_entry - payload) / (base.rss_per_entry - payload), ".2f")
            cells = (
                [row.encoding, f"{row.rss_empty / 2**20:.1f}", f"{row.rss_after / 2**20:.1f}",
                 fmt(row.rss_per_entry, ",.1f"), fmt(row.used_per_entry, ",.1f"), fmt(payload, ",.1f"),
                 fmt(row.rss_per_entry - payload, ",.1f")]
                if row.ok else ["", f"{row.rss_empty / 2**20:.1f}", "", "n/a", "n/a", "", ""]
            )
            lines.append(
                f"| {ds.name}: {ds.desc} | {row.server} | " + " | ".join(cells)
                + f" | {ratio} | {ratio_over} | {row.load_s:.1f} | {row.note} |"
            )
    lines.append("")
    lines.append(
        f"redis-server {redis_version} (Debian's){' and Redis 7.2.6 built from source' if len(servers) > 2 else ''} "
        f"(`--save \"\" --appendonly no`) vs tern (`--save \"\"`), each dataset loaded into a fresh server. "
        f"B/entry = (after load - empty) / entries; an entry is a key, a list element for the list. Payload = "
        f"the key's bytes plus the value as Redis 7.2 encodes it (the string; the listpack or intset bytes); "
        f"overhead = RSS B/entry - payload. BENCH_MEM_SCALE={SCALE}."
    )
    save_table("\n".join(lines), "bench-memory")


if __name__ == "__main__":
    main()

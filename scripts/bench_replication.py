#!/usr/bin/env python3
"""Replication side by side (issue #17): full sync of a big dataset to a fresh replica, and the
resume after a 5 s network drop under a steady write load; tern vs redis-server. Report-only.

Called by `make bench-replication` (scripts/bench.sh with BENCH_SCRIPT=bench_replication.py, which
builds tern first unless TERN_SERVER is set). Never part of `make test`.

Server pairs (master -> replica of the same binary): tern (`--threads 1`), Redis 7.2.6 built at
~/redis-7.2.6/src/redis-server (BENCH_REDIS72 overrides), Debian's /usr/bin/redis-server 7.0
(BENCH_REDIS70); a binary that is missing is skipped. Every server runs pinned to core 0 (a fork
child inherits that), in a fresh directory, `--save "" --appendonly no --rdbcompression no
--enable-debug-command yes` (DEBUG POPULATE's zero-padded values would compress ~50x and make the
transfer unrealistically cheap). This script and its writer run on core 1.

For each round (BENCH_REPL_ROUNDS, default 3) and each pair in turn (interleaved: tern, redis
7.2.6, redis 7.0, tern, ...), one master is started and filled with
`DEBUG POPULATE BENCH_REPL_KEYS key BENCH_REPL_SIZE` (default 5,000,000 x 100 B), then:

1. Full sync, one fresh replica per form, connected straight to the master:
     disk      master repl-diskless-sync no;                    replica repl-diskless-load disabled
     diskless  master repl-diskless-sync yes, -sync-delay 0;    replica repl-diskless-load disabled
     swapdb    master repl-diskless-sync yes, -sync-delay 0;    replica repl-diskless-load swapdb
   Timed from REPLICAOF to the replica's master_link_status:up, and to its DBSIZE equal to the
   master's. Every BENCH_REPL_INTERVAL s (default 0.05) the script samples VmRSS and PSS
   (/proc/PID/smaps_rollup) of master and replica plus their child processes (Redis's fork child
   for the RDB): RSS counts pages shared with a fork child twice, PSS once, so the PSS sum is the
   honest figure. The replica is stopped after each form.

2. Resume after a link drop: a new replica connects through a TCP proxy run by this script
   (asyncio, core 1). The master has repl-diskless-sync yes, delay 0. A writer process on core 1
   SETs random existing keys (100 B random-ish values, so DBSIZE stays put) at BENCH_REPL_RATE
   (default 50,000/s): pipelined batches of rate/100 commands every 10 ms on one connection,
   paced by a clock (a late batch is sent at once, never more than 1 s of backlog). With the
   writer running, for backlog 64mb and then 1mb (CONFIG SET repl-backlog-size on the master):
   wait until the replica is caught up, run 2 s steady, then the proxy aborts both connections
   and refuses the replica's reconnects (accept, close) for BENCH_REPL_DROP s (default 5); then
   it forwards again. Measured from that restore until the replica's slave_repl_offset reaches
   the master's master_repl_offset (the master is read first, then the replica), and whether the
   master answered the PSYNC partially (sync_partial_ok went up) or fully (sync_full went up).
   The time includes the replica's reconnect delay (Redis retries about once a second).

Medians over the rounds are printed as markdown tables and saved to bench-results/.

Environment: TERN_SERVER, BENCH_REPL_KEYS (default 5000000), BENCH_REPL_SIZE (100),
BENCH_REPL_ROUNDS (3), BENCH_REPL_RATE (50000), BENCH_REPL_DROP (5), BENCH_REPL_INTERVAL (0.05),
BENCH_REPL_SERVERS (comma list of labels to run, default all: tern,redis-7.2.6,redis-7.0),
BENCH_REPL_FORMS (default disk,diskless,swapdb), BENCH_REPL_RESUME (1; 0 skips part 2),
BENCH_DIR (default bench-results/), BENCH_PORT_BASE (default 7400).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench_common import (ROOT, TERN, Server, child_pids, invocation, pick_port, proc_kb_field, pss,
                          resp, rss, save_table)

KEYS = int(os.environ.get("BENCH_REPL_KEYS", "5000000"))
SIZE = int(os.environ.get("BENCH_REPL_SIZE", "100"))
ROUNDS = int(os.environ.get("BENCH_REPL_ROUNDS", "3"))
RATE = int(os.environ.get("BENCH_REPL_RATE", "50000"))
DROP_S = float(os.environ.get("BENCH_REPL_DROP", "5"))
INTERVAL = float(os.environ.get("BENCH_REPL_INTERVAL", "0.05"))
FORMS = os.environ.get("BENCH_REPL_FORMS", "disk,diskless,swapdb").split(",")
RESUME = os.environ.get("BENCH_REPL_RESUME", "1") != "0"
BENCH_DIR = os.environ.get("BENCH_DIR", str(ROOT / "bench-results"))
PORT_BASE = int(os.environ.get("BENCH_PORT_BASE", "7400"))
SYNC_TIMEOUT = 900.0
# A resume that has not caught up by then is reported as "> N s": under this write rate a
# replica that needs a full sync may never converge (see buffer_drops).
RESUME_TIMEOUT = float(os.environ.get("BENCH_REPL_RESUME_TIMEOUT", "120"))
BACKLOGS = [("64mb", 64 * 2**20), ("1mb", 2**20)]
MiB = 2**20

OPTS = ["--save", "", "--appendonly", "no", "--rdbcompression", "no", "--enable-debug-command", "yes"]
CANDIDATES = {
    "tern": [TERN, "--threads", "1"],
    "redis-7.2.6": [os.environ.get("BENCH_REDIS72", os.path.expanduser("~/redis-7.2.6/src/redis-server"))],
    "redis-7.0": [os.environ.get("BENCH_REDIS70", "/usr/bin/redis-server")],
}
FORM_CONFIG = {  # form -> (master repl-diskless-sync, replica repl-diskless-load)
    "disk": (b"no", b"disabled"),
    "diskless": (b"yes", b"disabled"),
    "swapdb": (b"yes", b"swapdb"),
}


# --- results ------------------------------------------------------------------------------------


@dataclass
class FullSync:
    link_up_s: float = float("nan")
    dbsize_s: float = float("nan")
    master_rss_before: int = 0
    master_rss_peak: int = 0  # master + children, summed per sample
    master_pss_peak: int = 0
    replica_rss_peak: int = 0
    replica_anon_peak: int = 0  # RssAnon: without the mapped RDB file's page cache
    master_children: int = 0
    problem: str = ""


@dataclass
class Resume:
    link_up_s: float = float("nan")  # restore -> replica's master_link_status:up
    catch_up_s: float = float("nan")
    kind: str = "?"  # partial / full / none
    lag_before: int = 0  # master offset - replica offset just before the cut (bytes)
    behind_at_restore: int = 0  # bytes the replica had to catch up when the link came back
    buffer_drops: int = 0  # master log lines: replica closed for overcoming output buffer limits
    writes_per_s: float = 0.0  # master cmdstat_set calls over the drop + catch-up window
    problem: str = ""


@dataclass
class PairResults:
    full: dict[str, list[FullSync]] = field(default_factory=dict)
    resume: dict[str, list[Resume]] = field(default_factory=dict)
    writer: list[dict] = field(default_factory=list)


# --- the writer (a subprocess: `bench_replication.py --writer PORT`) -----------------------------


def writer_main(port: int) -> None:
    """SET random existing keys at RATE/s in batches every 10 ms until stdin closes; print JSON."""
    batch = max(1, RATE // 100)
    period = batch / RATE
    rng = random.Random(17)
    # Pre-encoded batches, cycled: the pacing loop then costs almost nothing per command.
    pool = []
    for b in range(64):
        cmds = []
        for _ in range(batch):
            key = b"key:%d" % rng.randrange(KEYS)
            cmds.append(resp(b"SET", key, (b"w%d-" % b).ljust(SIZE, b"x")))
        pool.append(b"".join(cmds))
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sent = errors = late = 0
    worst_batch = 0.0
    t0 = next_at = time.monotonic()
    i = 0
    while not stop.is_set():
        now = time.monotonic()
        if next_at > now:
            time.sleep(next_at - now)
        elif now - next_at > 1.0:  # more than 1 s behind: drop the missed slots, no burst
            late += 1
            next_at = now
        b0 = time.monotonic()
        s.sendall(pool[i % len(pool)])
        i += 1
        lines = 0
        buf = b""
        while lines < batch:  # every reply is one line (+OK or -ERR...)
            chunk = s.recv(1 << 16)
            if not chunk:
                sys.exit("writer: server closed the connection")
            buf += chunk
            lines = buf.count(b"\r\n")
        errors += buf.count(b"-")  # '-' starts an error line; +OK never contains one
        sent += batch
        worst_batch = max(worst_batch, time.monotonic() - b0)
        next_at += period
    elapsed = time.monotonic() - t0
    print(json.dumps({"sets": sent, "seconds": elapsed, "rate": sent / elapsed, "errors": errors,
                      "worst_batch_ms": worst_batch * 1000, "fell_behind_1s": late}))


# --- the link proxy -----------------------------------------------------------------------------


class LinkProxy:
    """127.0.0.1:listen_port -> 127.0.0.1:target_port in an asyncio loop on its own thread.
    cut() aborts every forwarded connection and makes new ones close at once (as a peer that
    is unreachable would); restore() forwards again."""

    def __init__(self, listen_port: int, target_port: int):
        self.listen_port, self.target_port = listen_port, target_port
        self.down = False
        self.transports: set[asyncio.Transport] = set()
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", self.listen_port, reuse_address=True))
        ready.set()
        self.loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        pair = {writer.transport, up_writer.transport}
        self.transports |= pair
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        self.transports -= pair

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(1 << 18):
                writer.write(chunk)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.transport.abort()

    def _call(self, fn) -> None:
        async def run():
            fn()
        asyncio.run_coroutine_threadsafe(run(), self.loop).result()

    def cut(self) -> None:
        def go():
            self.down = True
            for t in list(self.transports):
                t.abort()
        self._call(go)

    def restore(self) -> None:
        self._call(lambda: setattr(self, "down", False))

    def close(self) -> None:
        self.cut()
        self.loop.call_soon_threadsafe(self.server.close)


# --- measurements -------------------------------------------------------------------------------


LOADAVG: list[float] = []  # 1-minute load average at each measurement: other work on the machine


def note_load() -> None:
    LOADAVG.append(os.getloadavg()[0])


def is_nan(x: float) -> bool:
    return x != x


def config_set(server: Server, name: bytes, value: bytes) -> None:
    reply = server.command(b"CONFIG", b"SET", name, value)
    if not reply.startswith(b"+OK"):
        sys.exit(f"{server.label}: CONFIG SET {name.decode()} {value.decode()}: {reply[:200]!r}")


def safe_info(server: Server, section: bytes) -> dict[str, str]:
    try:
        return server.info(section)
    except OSError:
        return {}


def tree_memory(pid: int) -> tuple[int, int, int, int]:
    """(RSS sum, PSS sum, RssAnon sum, child count) of a process and its children. RssAnon
    leaves out file pages a process maps (tern maps the RDB file it loads): page cache the
    kernel may drop, which RSS and PSS count while they stay mapped."""
    pids = [pid, *child_pids(pid)]
    return (sum(rss(p) for p in pids), sum(pss(p) for p in pids),
            sum(proc_kb_field(f"/proc/{p}/status", "RssAnon:") for p in pids), len(pids) - 1)


def new_replica(label: str, argv: list[str], port: int, load: bytes) -> Server:
    replica = Server(f"{label} replica", [], port, cpus="0", dir=tempfile.mkdtemp(prefix="repl-r-", dir=BENCH_DIR))
    replica.argv = [*argv, *OPTS, "--dir", replica.dir, "--repl-diskless-load", load.decode()]
    replica.start()
    return replica


def full_sync(label: str, argv: list[str], master: Server, port: int, form: str) -> FullSync:
    res = FullSync()
    diskless, load = FORM_CONFIG[form]
    config_set(master, b"repl-diskless-sync", diskless)
    config_set(master, b"repl-diskless-sync-delay", b"0")
    replica = new_replica(label, argv, port, load)
    try:
        mpid, rpid = master.proc.pid, replica.proc.pid
        res.master_rss_before = rss(mpid)
        note_load()
        full_before = int(safe_info(master, b"stats").get("sync_full", "0"))
        t0 = time.monotonic()
        reply = replica.command(b"REPLICAOF", b"127.0.0.1", b"%d" % master.port)
        if not reply.startswith(b"+OK"):
            sys.exit(f"{label}: REPLICAOF: {reply[:200]!r}")
        while time.monotonic() - t0 < SYNC_TIMEOUT:
            m_rss, m_pss, _, kids = tree_memory(mpid)
            res.master_rss_peak = max(res.master_rss_peak, m_rss)
            res.master_pss_peak = max(res.master_pss_peak, m_pss)
            res.master_children = max(res.master_children, kids)
            r_rss, _, r_anon, _ = tree_memory(rpid)
            res.replica_rss_peak = max(res.replica_rss_peak, r_rss)
            res.replica_anon_peak = max(res.replica_anon_peak, r_anon)
            now = time.monotonic() - t0
            if is_nan(res.link_up_s):
                if safe_info(replica, b"replication").get("master_link_status") == "up":
                    res.link_up_s = now
            if not is_nan(res.link_up_s):
                try:
                    if replica.dbsize() == KEYS:
                        res.dbsize_s = time.monotonic() - t0
                        break
                except OSError:
                    pass
            if replica.proc.poll() is not None or master.proc.poll() is not None:
                res.problem = "a server exited during the sync; "
                break
            time.sleep(INTERVAL)
        else:
            res.problem = f"no sync within {SYNC_TIMEOUT:g}s; "
        if int(safe_info(master, b"stats").get("sync_full", "0")) != full_before + 1:
            res.problem += "sync_full did not go up by 1; "
    finally:
        replica.stop()
    print(f"  {label:<12} full sync {form:<8} link up {res.link_up_s:6.2f}s  DBSIZE equal "
          f"{res.dbsize_s:6.2f}s  master RSS {res.master_rss_before / MiB:,.0f} -> peak RSS sum "
          f"{res.master_rss_peak / MiB:,.0f} PSS sum {res.master_pss_peak / MiB:,.0f} MiB "
          f"(children {res.master_children})  replica peak RSS {res.replica_rss_peak / MiB:,.0f} "
          f"RssAnon {res.replica_anon_peak / MiB:,.0f} MiB "
          f"{res.problem}", file=sys.stderr, flush=True)
    return res


def offsets(master: Server, replica: Server) -> tuple[int, int, str]:
    """(master_repl_offset, replica slave_repl_offset, replica link status); the master first."""
    m = int(safe_info(master, b"replication").get("master_repl_offset", "-1"))
    r_info = safe_info(replica, b"replication")
    return m, int(r_info.get("slave_repl_offset", "-1")), r_info.get("master_link_status", "?")


def wait_caught_up(master: Server, replica: Server, timeout: float, link_up: list[float] | None = None) -> float:
    """Seconds until the replica's offset reaches the master's (read first); NaN on timeout.
    Appends to `link_up` the seconds until its link was first seen up."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        m, r, link = offsets(master, replica)
        if link == "up" and link_up is not None and not link_up:
            link_up.append(time.monotonic() - t0)
        if link == "up" and r >= m >= 0:
            return time.monotonic() - t0
        if replica.proc.poll() is not None or master.proc.poll() is not None:
            return float("nan")
        time.sleep(0.01)
    return float("nan")


def sync_counters(master: Server) -> tuple[int, int]:
    stats = safe_info(master, b"stats")
    return int(stats.get("sync_partial_ok", "0")), int(stats.get("sync_full", "0"))


def buffer_limit_drops(master: Server) -> int:
    """Lines of the master's log saying a client was closed for its output buffer limits."""
    try:
        with open(os.path.join(master.dir, "server.log"), errors="replace") as f:
            return sum("output buffer limits" in line for line in f)
    except FileNotFoundError:
        return 0


def set_calls(server: Server) -> int:
    stat = safe_info(server, b"commandstats").get("cmdstat_set", "calls=0")
    return int(dict(kv.split("=", 1) for kv in stat.split(","))["calls"])


def resume_runs(label: str, argv: list[str], master: Server, port: int, proxy_port: int,
                results: PairResults, commands: list[str]) -> None:
    config_set(master, b"repl-diskless-sync", b"yes")
    config_set(master, b"repl-diskless-sync-delay", b"0")
    config_set(master, b"repl-backlog-size", b"%d" % BACKLOGS[0][1])
    proxy = LinkProxy(proxy_port, master.port)
    replica = new_replica(label, argv, port, b"disabled")
    writer = None
    try:
        replica.command(b"REPLICAOF", b"127.0.0.1", b"%d" % proxy_port)
        if is_nan(wait_caught_up(master, replica, SYNC_TIMEOUT)):
            sys.exit(f"{label}: the replica behind the proxy never caught up with the master")
        argv_w = ["taskset", "-c", "1", sys.executable, os.path.abspath(__file__), "--writer", str(master.port)]
        if not any("--writer" in c for c in commands):
            commands.append(shlex.join(argv_w) + "   # writer: runs until its stdin closes")
        writer = subprocess.Popen(argv_w, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env={**os.environ, "BENCH_REPL_KEYS": str(KEYS)})
        for name, size in BACKLOGS:
            res = Resume()
            config_set(master, b"repl-backlog-size", b"%d" % size)
            if is_nan(wait_caught_up(master, replica, SYNC_TIMEOUT)):
                res.problem = "replica not caught up before the cut; "
            time.sleep(2)
            m, r, _ = offsets(master, replica)
            res.lag_before = max(0, m - r)  # the master is read first: a caught-up replica may be ahead
            partial0, full0 = sync_counters(master)
            sets0 = set_calls(master)
            t_cut = time.monotonic()
            proxy.cut()
            time.sleep(DROP_S)
            m_restore, r_restore, _ = offsets(master, replica)
            res.behind_at_restore = m_restore - r_restore
            proxy.restore()
            note_load()
            t0 = time.monotonic()
            link_up: list[float] = []
            log0 = buffer_limit_drops(master)
            res.catch_up_s = wait_caught_up(master, replica, RESUME_TIMEOUT, link_up)
            res.buffer_drops = buffer_limit_drops(master) - log0
            res.link_up_s = link_up[0] if link_up else float("nan")
            res.writes_per_s = (set_calls(master) - sets0) / (time.monotonic() - t_cut)
            partial1, full1 = sync_counters(master)
            if is_nan(res.catch_up_s):
                res.catch_up_s = float("inf")
                if is_nan(res.link_up_s):
                    res.link_up_s = float("inf")
                res.problem += f"not caught up within {RESUME_TIMEOUT:g}s; "
            # More than one full sync: the master dropped the syncing replica (typically its
            # output buffer passed client-output-buffer-limit replica) and it started over.
            fulls = full1 - full0
            res.kind = " + ".join(
                ["partial"] * (partial1 > partial0) + [f"full×{fulls}" if fulls > 1 else "full"] * (fulls > 0)) or "none"
            if res.buffer_drops:
                res.problem += (f"master dropped the syncing replica {res.buffer_drops}× for "
                                "client-output-buffer-limit; ")
            if not is_nan(res.catch_up_s) and res.catch_up_s != float("inf") and replica.dbsize() != KEYS:
                res.problem += f"replica DBSIZE {replica.dbsize()} != {KEYS}; "
            results.resume.setdefault(name, []).append(res)
            print(f"  {label:<12} resume backlog {name:<5} {res.kind:<7} link up {res.link_up_s:6.2f}s, caught up "
                  f"{res.catch_up_s:6.2f}s after the restore  behind at restore {res.behind_at_restore / MiB:,.1f} MiB  lag before "
                  f"{res.lag_before:,} B  SET/s {res.writes_per_s:,.0f} {res.problem}", file=sys.stderr, flush=True)
    finally:
        if writer:
            out, _ = writer.communicate(timeout=60)
            if writer.returncode == 0 and out.strip():
                results.writer.append(json.loads(out.strip().splitlines()[-1]))
        proxy.close()
        replica.stop()


def run_pair(label: str, argv: list[str], ports: tuple[int, int, int], results: PairResults,
             commands: list[str]) -> None:
    master = Server(f"{label} master", [], ports[0], cpus="0", dir=tempfile.mkdtemp(prefix="repl-m-", dir=BENCH_DIR))
    master.argv = [*argv, *OPTS, "--dir", master.dir]
    if not any(c.startswith(shlex.join(["taskset", "-c", "0", *argv])) for c in commands):
        commands.append(shlex.join(["taskset", "-c", "0", *master.argv, "--port", str(ports[0]),
                                    "--bind", "127.0.0.1"]) + "   # master; replicas alike in their own --dir")
    try:
        master.start()
        t0 = time.monotonic()
        reply = master.command(b"DEBUG", b"POPULATE", b"%d" % KEYS, b"key", b"%d" % SIZE, timeout=3600)
        if not reply.startswith(b"+OK") or master.dbsize() != KEYS:
            sys.exit(f"{label}: DEBUG POPULATE failed: {reply[:200]!r}, DBSIZE {master.dbsize()}")
        print(f"  {label:<12} populate {time.monotonic() - t0:.1f}s, RSS {master.rss() / MiB:,.0f} MiB",
              file=sys.stderr, flush=True)
        for form in FORMS:
            results.full.setdefault(form, []).append(full_sync(label, argv, master, ports[1], form))
        if RESUME:
            resume_runs(label, argv, master, ports[1], ports[2], results, commands)
    finally:
        master.stop()


# --- report -------------------------------------------------------------------------------------


def median(xs: list[float]) -> float:
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def f2(x: float) -> str:
    if x == float("inf"):
        return f"> {RESUME_TIMEOUT:g}"
    return "n/a" if x != x else f"{x:.2f}"


def mib(x: float) -> str:
    return "n/a" if x != x else f"{x / MiB:,.0f}"


def report(pairs: dict[str, PairResults], commands: list[str]) -> str:
    lines = [
        "| pair | form | REPLICAOF → link up s | → DBSIZE equal s | master RSS before MiB "
        "| master peak RSS sum MiB | master peak PSS sum MiB | replica peak RSS MiB | replica peak RssAnon MiB "
        "| checks |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for label, pr in pairs.items():
        for form, runs in pr.full.items():
            problems = "; ".join(sorted({r.problem.rstrip("; ") for r in runs if r.problem})) or f"ok ×{len(runs)}"
            lines.append(
                f"| {label} → {label} | {form} | {f2(median([r.link_up_s for r in runs]))} | "
                f"{f2(median([r.dbsize_s for r in runs]))} | {mib(median([r.master_rss_before for r in runs]))} | "
                f"{mib(median([r.master_rss_peak for r in runs]))} | {mib(median([r.master_pss_peak for r in runs]))} | "
                f"{mib(median([r.replica_rss_peak for r in runs]))} | "
                f"{mib(median([r.replica_anon_peak for r in runs]))} | {problems} |")
    if any(pr.resume for pr in pairs.values()):
        lines += [
            "",
            f"| pair | backlog | resync (per round) | restore → link up s | restore → caught up s "
            f"| behind at restore MiB | SET/s during drop + catch-up | checks |",
            "|---|---|---|---:|---:|---:|---:|---|",
        ]
        for label, pr in pairs.items():
            for name, runs in pr.resume.items():
                problems = "; ".join(sorted({r.problem.rstrip("; ") for r in runs if r.problem})) or f"ok ×{len(runs)}"
                lines.append(
                    f"| {label} → {label} | {name} | {', '.join(r.kind for r in runs)} | "
                    f"{f2(median([r.link_up_s for r in runs]))} | {f2(median([r.catch_up_s for r in runs]))} | "
                    f"{median([r.behind_at_restore for r in runs]) / MiB:,.1f} | "
                    f"{median([r.writes_per_s for r in runs]):,.0f} | {problems} |")
        writer = [f"{label}: " + ", ".join(f"{w['rate']:,.0f}/s" for w in pr.writer)
                  for label, pr in pairs.items() if pr.writer]
        lines += ["", "Writer's average rate over each whole resume phase: " + "; ".join(writer) + "."]
    lines += [
        "",
        f"{KEYS:,} keys × {SIZE} B (DEBUG POPULATE), rdbcompression no, {ROUNDS} interleaved rounds, medians. "
        f"Master and replica on core 0 (one pair at a time), the script, its proxy and writer on core 1. "
        f"Memory sampled every {INTERVAL * 1000:.0f} ms; sums are over the process and its children "
        "(Redis's fork child), RSS counting fork-shared pages twice and PSS once. Resume: writer "
        f"{RATE:,} SET/s target in batches of {max(1, RATE // 100)} every 10 ms; link cut for {DROP_S:g} s "
        "by the proxy (connections aborted, reconnects refused), time from the restore until the "
        "replica's slave_repl_offset ≥ the master's master_repl_offset. "
        f"1-minute load average at the measurements: {min(LOADAVG, default=0):.1f}–{max(LOADAVG, default=0):.1f} "
        f"on {os.cpu_count()} CPUs.",
        "",
        "Commands:",
        "",
        *(f"    {c}" for c in commands),
        f"    {invocation()}   # this report",
    ]
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--writer":
        writer_main(int(sys.argv[2]))
        return
    # Started in the background by a non-interactive shell, SIGINT arrives ignored: restore it,
    # and make SIGTERM unwind too, so the `finally` blocks stop every server this script started.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench-replication: terminated"))
    os.sched_setaffinity(0, {1})  # the script, its proxy thread and the writer stay off core 0
    os.makedirs(BENCH_DIR, exist_ok=True)
    wanted = os.environ.get("BENCH_REPL_SERVERS", ",".join(CANDIDATES)).split(",")
    servers = {}
    for label in wanted:
        argv = CANDIDATES[label]
        if os.path.exists(argv[0]):
            servers[label] = argv
        else:
            print(f"skipping {label}: {argv[0]} not found", file=sys.stderr)
    for form in FORMS:
        if form not in FORM_CONFIG:
            sys.exit(f"BENCH_REPL_FORMS: unknown form {form!r} (disk, diskless, swapdb)")
    ports = (pick_port(PORT_BASE), pick_port(PORT_BASE + 1), pick_port(PORT_BASE + 2))
    pairs = {label: PairResults() for label in servers}
    commands: list[str] = []
    for rnd in range(ROUNDS):
        for label, argv in servers.items():
            print(f"round {rnd + 1}/{ROUNDS}: {label}", file=sys.stderr, flush=True)
            run_pair(label, argv, ports, pairs[label], commands)
    save_table(report(pairs, commands), "bench-replication")


if __name__ == "__main__":
    main()

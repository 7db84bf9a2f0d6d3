"""Helpers shared by the benchmark scripts (bench.py, bench_memory.py, bench_isolation.py,
bench_atomic.py, bench_durable.py, bench_snapshot.py, bench_replication.py).

Standard library only.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TERN = os.environ.get("TERN_SERVER", str(ROOT / "target/release/tern-server"))
TERN_BENCH = os.environ.get("TERN_BENCH", str(ROOT / "target/release/tern-bench"))
# Redis 7.2.6 built from its sources (the version tern answers as), measured where present.
REDIS_726 = os.environ.get("REDIS_726_SERVER", str(Path.home() / "redis-7.2.6/src/redis-server"))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def resp(*args: bytes) -> bytes:
    """One command in RESP (an array of bulk strings)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def pick_port(preferred: int) -> int:
    """preferred if nothing listens there, else any free port."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]


def fmt(x: float, spec: str) -> str:
    """`x` formatted with `spec`, or n/a for NaN."""
    return "n/a" if x != x else format(x, spec)


def stop_process(proc: subprocess.Popen | None, timeout: float) -> None:
    """Terminate a server that is still running; kill it if it takes longer than `timeout` s."""
    if proc and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def invocation() -> str:
    """This script's command line with the BENCH_*/TERN_* settings in effect, to paste again."""
    env = [f"{k}={shlex.quote(v)}" for k, v in sorted(os.environ.items()) if k.startswith(("BENCH_", "TERN_"))]
    return " ".join([*env, "python3", *map(shlex.quote, sys.argv)])


def save_table(table: str, prefix: str) -> None:
    """Print the table and save it as bench-results/<prefix>-<timestamp>.md."""
    print(table)
    out_dir = ROOT / "bench-results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / time.strftime(f"{prefix}-%Y%m%d-%H%M%S.md")
    path.write_text(table + "\n")
    print(f"\n(saved to {path.relative_to(ROOT)})", file=sys.stderr)


def read_reply(s: socket.socket) -> bytes:
    """Read one whole RESP reply of a simple type or a bulk string."""
    buf = b""
    while b"\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return buf
        buf += chunk
    if buf.startswith(b"$"):
        n = int(buf[1 : buf.index(b"\r\n")])
        need = buf.index(b"\r\n") + 2 + max(n, 0) + (2 if n >= 0 else 0)
        while len(buf) < need:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return buf


def bulk_body(reply: bytes) -> bytes:
    """The payload of a bulk string reply (b"" for nil or another type)."""
    if not reply.startswith(b"$") or reply.startswith(b"$-1"):
        return b""
    head = reply.index(b"\r\n")
    return reply[head + 2 : head + 2 + int(reply[1:head])]


def reply_text(reply: bytes) -> str:
    """A short printable form of a reply: the bulk payload or the status/error line."""
    if reply.startswith(b"$"):
        body = reply.split(b"\r\n", 2)
        return body[1].decode(errors="replace") if len(body) > 1 and not reply.startswith(b"$-1") else "(nil)"
    return reply.split(b"\r\n", 1)[0].decode(errors="replace")


# --- /proc readings ---------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime (fields 14, 15 of /proc/PID/stat, all threads) in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # fields from #3 on
    return (int(fields[14 - 3]) + int(fields[15 - 3])) / CLK_TCK


def proc_kb_field(path: str, key: str) -> int:
    """The `key:  N kB` line of a /proc file, in bytes; 0 if the process is gone."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def rss(pid: int) -> int:
    return proc_kb_field(f"/proc/{pid}/status", "VmRSS:")


def pss(pid: int) -> int:
    """Proportional set size: pages shared with a fork()ed child count half for each."""
    return proc_kb_field(f"/proc/{pid}/smaps_rollup", "Pss:")


def child_pids(pid: int) -> list[int]:
    """Processes whose parent is `pid` (field 4 of /proc/*/stat), e.g. Redis's BGSAVE child."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                out.append(int(d))
    return out


def dir_sizes(path: str) -> dict[str, int]:
    """name -> size of the files in a directory ({} if it does not exist)."""
    try:
        return {e.name: e.stat().st_size for e in os.scandir(path) if e.is_file()}
    except FileNotFoundError:
        return {}


def fs_type(path: str) -> str:
    """The file system type of `path` (tmpfs, ext4, overlay, ...)."""
    r = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True)
    return r.stdout.strip() or "?"


# --- a server under test -----------------------------------------------------------------------


@dataclass
class Server:
    """One server process in its own temporary directory (its cwd; log in server.log), on
    127.0.0.1:`port`, pinned with `taskset -c cpus` when cpus is set."""

    label: str
    argv: list[str]
    port: int
    cpus: str | None = None
    proc: subprocess.Popen | None = None
    dir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="tern-bench-"))
    # Extra environment variables of the server process (e.g. an LD_PRELOAD shim).
    env: dict[str, str] | None = None

    def start(self, timeout: float = 10) -> float:
        """Start and wait until PING answers PONG (not -LOADING); returns the seconds that took."""
        pin = ["taskset", "-c", self.cpus] if self.cpus else []
        os.makedirs(self.dir, exist_ok=True)  # again after a stop() removed it
        log = open(os.path.join(self.dir, "server.log"), "ab")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [*pin, *self.argv, "--port", str(self.port), "--bind", "127.0.0.1"],
            cwd=self.dir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env} if self.env else None,
        )
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                sys.exit(f"{self.label} exited at start; see {self.dir}/server.log")
            try:
                if self.command(b"PING", timeout=1).startswith(b"+PONG"):
                    return time.monotonic() - t0
            except OSError:
                pass
            time.sleep(0.01)
        self.stop()
        sys.exit(f"{self.label} did not answer on port {self.port} within {timeout:g}s")

    def command(self, *args: bytes, timeout: float = 30) -> bytes:
        """One command on a fresh connection; its raw reply (a simple type or a bulk string)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall(resp(*args))
            return read_reply(s)

    def info(self, section: bytes = b"default") -> dict[str, str]:
        text = bulk_body(self.command(b"INFO", section)).decode(errors="replace")
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("#"))

    def dbsize(self) -> int:
        reply = self.command(b"DBSIZE")
        return int(reply[1:].split(b"\r\n")[0]) if reply.startswith(b":") else -1

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.proc.pid)

    def rss(self) -> int:
        return rss(self.proc.pid)

    def stop(self, keep_dir: bool = False) -> None:
        stop_process(self.proc, 20)
        if not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

"""Helpers shared by the benchmark scripts (bench.py, bench_memory.py, bench_isolation.py).

Standard library only.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


def save_table(table: str, prefix: str) -> None:
    """Print the table and save it as bench-results/<prefix>-<timestamp>.md."""
    print(table)
    out_dir = ROOT / "bench-results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / time.strftime(f"{prefix}-%Y%m%d-%H%M%S.md")
    path.write_text(table + "\n")
    print(f"\n(saved to {path.relative_to(ROOT)})", file=sys.stderr)

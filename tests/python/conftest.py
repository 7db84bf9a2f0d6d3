"""Fixtures for the Python client tests.

Every test gets fresh server processes (tern starts in ~10 ms), so tests never depend on
FLUSHALL or on each other:

* ``tern``       -- a fresh ``tern-server`` on a free port (``--port N --bind 127.0.0.1 --save ""``)
* ``tern_factory`` -- start more tern servers with extra arguments (``--requirepass`` ...)
* ``r``          -- a redis-py client (``decode_responses=True``), parametrized over RESP2 and RESP3
* ``rb``         -- the same with raw ``bytes`` replies
* ``redis_ref``  -- Debian's ``redis-server`` on another free port (skipped if not installed)
* ``pair``       -- (tern client, redis client) speaking the same protocol, for differential tests

``TERN_SERVER`` points at the binary; otherwise ``target/release/tern-server`` is used and built
with ``cargo build --release`` if it is missing. ``TERN_PY_TARGET=redis`` runs the ``r``/``rb``
tests against Debian's redis-server instead, to check the tests themselves against real Redis.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[2]
REDIS_SERVER = next(
    (p for p in ("/usr/bin/redis-server", "/usr/local/bin/redis-server") if os.path.exists(p)),
    shutil.which("redis-server"),
)

_tern_bin: str | None = None


def tern_binary() -> str:
    """Locate (or build once) the release tern-server binary."""
    global _tern_bin
    if _tern_bin:
        return _tern_bin
    env = os.environ.get("TERN_SERVER")
    if env:
        if not os.access(env, os.X_OK):
            pytest.exit(f"TERN_SERVER={env} is not an executable", returncode=2)
        _tern_bin = env
        return env
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    path = target / "release" / "tern-server"
    if not path.exists():
        subprocess.run(
            ["cargo", "build", "--release", "--bin", "tern-server"], cwd=ROOT, check=True
        )
    _tern_bin = str(path)
    return _tern_bin


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProc:
    """A server process on a free loopback port; its output goes to a log in a temp dir."""

    def __init__(self, kind: str, exe: str, extra: list[str]):
        self.kind = kind
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix=f"{kind}-py-{self.port}-")
        self.log_path = os.path.join(self.dir, "server.log")
        argv = [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        if kind == "redis":
            argv += ["--appendonly", "no"]
        argv += list(extra)
        self.argv = argv
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            argv, cwd=self.dir, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited at start ({self.proc.returncode}):\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64):  # +PONG or -NOAUTH: either way it answers
                        return
            except OSError:
                pass
            time.sleep(0.01)
        self.stop()
        raise RuntimeError(f"{self.kind} on port {self.port} did not answer within {timeout}s")

    def log(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-4000:].decode(errors="replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def client(self, protocol: int = 2, decode: bool = True, **kw) -> redis.Redis:
        return redis.Redis(
            host="127.0.0.1",
            port=self.port,
            protocol=protocol,
            decode_responses=decode,
            socket_timeout=30,
            **kw,
        )

    def raw(self, timeout: float = 10.0) -> "RawConn":
        return RawConn(self.port, timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            # redis-server only acts on SIGTERM at its next cron tick (~100 ms); nothing is
            # persisted in these tests, so SIGKILL it. tern gets a normal SIGTERM.
            if self.kind == "redis":
                self.proc.kill()
            else:
                self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def start_tern(*extra: str) -> ServerProc:
    return ServerProc("tern", tern_binary(), list(extra))


def start_redis(*extra: str) -> ServerProc:
    if not REDIS_SERVER:
        pytest.skip("redis-server is not installed (run scripts/setup.sh)")
    return ServerProc("redis", REDIS_SERVER, list(extra))


class _Factory:
    def __init__(self, start):
        self._start = start
        self.servers: list[ServerProc] = []

    def __call__(self, *extra: str) -> ServerProc:
        s = self._start(*extra)
        self.servers.append(s)
        return s

    def close(self) -> list[str]:
        """Stop all servers; return descriptions of tern servers that died during the test."""
        dead = []
        for s in self.servers:
            if s.kind == "tern" and not s.alive():
                dead.append(f"tern-server {s.argv} exited with {s.proc.returncode}:\n{s.log()}")
            s.stop()
        return dead


def _target_kind() -> str:
    return os.environ.get("TERN_PY_TARGET", "tern")


@pytest.fixture
def tern_factory():
    f = _Factory(start_redis if _target_kind() == "redis" else start_tern)
    yield f
    dead = f.close()
    if dead:
        pytest.fail("server crashed during the test:\n" + "\n".join(dead))


@pytest.fixture
def redis_factory():
    f = _Factory(start_redis)
    yield f
    f.close()


@pytest.fixture
def tern(tern_factory) -> ServerProc:
    """A fresh server under test (tern, or redis-server with TERN_PY_TARGET=redis)."""
    return tern_factory()


@pytest.fixture
def redis_ref(redis_factory) -> ServerProc:
    """Debian's redis-server, the reference for differential tests."""
    return redis_factory()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request) -> int:
    return request.param


@pytest.fixture
def r(tern, protocol) -> redis.Redis:
    c = tern.client(protocol)
    yield c
    c.close()


@pytest.fixture
def rb(tern, protocol) -> redis.Redis:
    c = tern.client(protocol, decode=False)
    yield c
    c.close()


@pytest.fixture
def pair(tern, redis_ref, protocol):
    a, b = tern.client(protocol, decode=False), redis_ref.client(protocol, decode=False)
    yield a, b
    a.close()
    b.close()


# ---- raw protocol helpers --------------------------------------------------------------------


def encode(*args) -> bytes:
    """Encode one command as a RESP multibulk request."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RawConn:
    """A plain TCP connection that reads whole RESP2/RESP3 replies as raw bytes."""

    def __init__(self, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def cmd(self, *args) -> bytes:
        """Send one command and return its raw reply."""
        self.send(encode(*args))
        return self.read_reply()

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("connection closed by server")
        self.buf += chunk

    def _line(self, pos: int) -> int:
        """Index just past the CRLF of the line starting at pos (reading more as needed)."""
        while True:
            i = self.buf.find(b"\r\n", pos)
            if i >= 0:
                return i + 2
            self._fill()

    def _need(self, n: int) -> None:
        while len(self.buf) < n:
            self._fill()

    def _reply_end(self, pos: int) -> int:
        end = self._line(pos)
        t = self.buf[pos : pos + 1]
        header = self.buf[pos + 1 : end - 2]
        if t in (b"+", b"-", b":", b"_", b",", b"#", b"("):
            return end
        if t in (b"$", b"=", b"!"):
            n = int(header)
            if n < 0:
                return end
            self._need(end + n + 2)
            return end + n + 2
        if t in (b"*", b"~", b">", b"%", b"|"):
            n = int(header)
            if n < 0:
                return end
            if t in (b"%", b"|"):
                n *= 2
            for _ in range(n):
                end = self._reply_end(end)
            if t == b"|":  # an attribute precedes the real reply
                end = self._reply_end(end)
            return end
        raise ValueError(f"bad RESP type byte {t!r} in {self.buf[pos:pos + 80]!r}")

    def read_reply(self) -> bytes:
        end = self._reply_end(0)
        out, self.buf = self.buf[:end], self.buf[end:]
        return out

    def read_replies(self, n: int) -> list[bytes]:
        return [self.read_reply() for _ in range(n)]

    def read_until_closed(self, timeout: float = 5.0) -> bytes:
        """Everything the server sends until it closes the connection."""
        self.sock.settimeout(timeout)
        out = self.buf
        self.buf = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        return out

    def is_closed(self, timeout: float = 2.0) -> bool:
        """True if the server closed the connection (EOF or reset) within timeout."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

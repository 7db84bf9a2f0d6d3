"""client-output-buffer-limit for normal clients, as Redis applies it: replies are counted as
they are produced; a client that crosses the hard limit is closed without getting anything of
that batch (even in the middle of one command's reply); a client over the soft limit for longer
than its seconds is closed; CLIENT LIST shows what waits for a slow reader (omem).

Every test runs against tern and against Debian's redis-server (the `server` fixture), so the
expectations are Redis's own.
"""

from __future__ import annotations

import socket
import time

import pytest

from conftest import encode


@pytest.fixture(params=["tern", "redis"])
def server(request, tern_factory, redis_factory):
    return (tern_factory if request.param == "tern" else redis_factory)(
        "--enable-debug-command", "yes"
    )


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def client_line(c, name: str) -> str | None:
    for line in c.execute_command("CLIENT", "LIST").splitlines():
        if f" name={name} " in line:
            return line
    return None


def field(line: str, name: str) -> int:
    for part in line.split():
        if part.startswith(name + "="):
            return int(part.split("=", 1)[1])
    raise AssertionError(f"no {name} in {line}")


def read_all(sock: socket.socket, timeout: float = 2.0) -> bytes:
    """Everything the server sends until it closes the connection (or goes quiet)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                return data
            data += chunk
    except (socket.timeout, ConnectionResetError):
        return data


def named_socket(port: int, name: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(encode("CLIENT", "SETNAME", name))
    assert s.recv(64) == b"+OK\r\n"
    return s


def test_big_reply_over_hard_limit_closes_without_reply(server):
    c = server.client()
    c.config_set("client-output-buffer-limit", "normal 100000 0 0")
    c.rpush("big", *(["x" * 1000] * 150))
    s = named_socket(server.port, "biglist")
    s.sendall(encode("LRANGE", "big", "0", "-1"))
    assert read_all(s) == b"", "nothing of the reply is sent"
    assert client_line(c, "biglist") is None
    # INFO field of Redis 7.2 (Debian's 7.0 lacks it).
    stats = c.info("stats")
    if "client_output_buffer_limit_disconnections" in stats or server.kind == "tern":
        assert int(stats["client_output_buffer_limit_disconnections"]) == 1
    # Under the limit the same reply is delivered whole.
    c.config_set("client-output-buffer-limit", "normal 1mb 0 0")
    assert len(c.lrange("big", 0, -1)) == 150


def test_pipeline_over_hard_limit_gets_nothing(server):
    c = server.client()
    c.config_set("client-output-buffer-limit", "normal 100000 0 0")
    c.set("bigkey", "x" * 10000)
    s = named_socket(server.port, "pipe")
    s.sendall(b"".join(encode("SET", str(i), str(i)) + encode("GET", "bigkey") for i in range(15)))
    assert read_all(s) == b""
    assert client_line(c, "pipe") is None
    # The commands before the limit was crossed ran.
    assert c.get("0") == "0"


def test_transaction_runs_completely_even_when_its_reply_is_dropped(server):
    c = server.client()
    c.config_set("client-output-buffer-limit", "normal 100000 0 0")
    c.rpush("big", *(["x" * 1000] * 150))
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(
        encode("MULTI")
        + encode("SET", "k2", "v2")
        + encode("LRANGE", "big", "0", "-1")
        + encode("SET", "k3", "v3")
        + encode("EXEC")
    )
    data = read_all(s)
    assert b"*" not in data.split(b"+QUEUED")[-1], "EXEC's reply is never sent"
    assert c.get("k2") == "v2" and c.get("k3") == "v3"


@pytest.mark.parametrize(
    "setup,cmd",
    [
        (("HSET", "h", "a", "b"), ("HRANDFIELD", "h", "-9223372036854775807")),
        (("ZADD", "z", "1", "a"), ("ZRANDMEMBER", "z", "-100000000")),
        (("SADD", "s", "a"), ("SRANDMEMBER", "s", "-2000000000")),
    ],
)
def test_huge_random_count_stops_at_the_limit(server, setup, cmd):
    c = server.client()
    c.config_set("client-output-buffer-limit", "normal 64mb 0 0")
    c.execute_command(*setup)
    before = rss_bytes(server.proc.pid)
    s = socket.create_connection(("127.0.0.1", server.port))
    t0 = time.monotonic()
    s.sendall(encode(*cmd))
    read_all(s, timeout=20)
    took = time.monotonic() - t0
    assert took < 15, f"{cmd[0]} ran {took:.1f}s"
    assert c.ping()
    grew = rss_bytes(server.proc.pid) - before
    assert grew < 200 << 20, f"server grew by {grew >> 20} MB"


def test_keys_stops_at_the_limit(server):
    c = server.client()
    c.config_set("client-output-buffer-limit", "normal 100000 0 0")
    c.mset({f"long-key-name-prefix-{'-' * 80}{i}": "v" for i in range(2000)})
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(encode("KEYS", "*"))
    assert read_all(s) == b""
    assert c.dbsize() == 2000


def test_slow_reader_shows_omem_and_soft_limit_closes_it(server):
    c = server.client()
    c.config_set("client-output-buffer-limit", "normal 0 1mb 2")
    c.set("v", "x" * 100_000)
    s = named_socket(server.port, "slow")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    # 8 MB of replies the client never reads: most stays in the server's output buffer.
    sent = time.monotonic()
    s.sendall(b"".join(encode("GET", "v") for _ in range(80)))
    deadline = time.monotonic() + 5
    omem = 0
    while time.monotonic() < deadline:
        line = client_line(c, "slow")
        assert line is not None, "closed before the soft limit's seconds"
        omem = field(line, "omem")
        if omem > 1 << 20:
            break
        time.sleep(0.05)
    assert omem > 1 << 20, f"omem={omem}"
    started = time.monotonic()
    while client_line(c, "slow") is not None:
        assert time.monotonic() - started < 8, "soft limit never closed the client"
        time.sleep(0.1)
    # Over the soft limit for more than its 2 seconds, counted from no earlier than the send
    # (a loaded machine may see the growth late, so not from `started`).
    assert time.monotonic() - sent >= 1.9
    s.close()


def test_no_limit_delivers_everything(server):
    c = server.client()
    c.rpush("big", *(["x" * 1000] * 3000))
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(encode("LRANGE", "big", "0", "-1"))
    data = b""
    s.settimeout(10)
    while data.count(b"\r\n") < 1 + 2 * 3000:
        chunk = s.recv(1 << 16)
        assert chunk
        data += chunk
    assert data.startswith(b"*3000\r\n")


# ---- client eviction (maxmemory-clients) and reply buffer sizing --------------------------------


def big_partial_request(
    port: int, name: str, size: int, may_be_evicted: bool = False
) -> socket.socket:
    """A client holding `size` bytes in its query buffer: a bulk argument not yet complete.

    With `may_be_evicted`, the server may close the client while it is still sending (it
    crossed maxmemory-clients part-way): that is the outcome the caller waits for anyway.
    """
    s = named_socket(port, name)
    try:
        s.sendall(b"*2\r\n$%d\r\n" % size + b"v" * size)
    except (ConnectionResetError, BrokenPipeError):
        if not may_be_evicted:
            raise
    return s


def wait_gone(c, name: str, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client_line(c, name) is None:
            return True
        time.sleep(0.02)
    return False


def test_maxmemory_clients_evicts_the_biggest_client(server):
    c = server.client()
    c.execute_command("CLIENT", "NO-EVICT", "on")
    c.config_set("maxmemory-clients", "3mb")
    small = big_partial_request(server.port, "small", 100_000)
    big = big_partial_request(server.port, "big", 2_000_000)
    # Both fit: nobody is evicted.
    time.sleep(0.3)
    assert client_line(c, "small") is not None and client_line(c, "big") is not None
    assert field(client_line(c, "big"), "tot-mem") >= 2_000_000
    # Lowering the limit evicts the biggest client at once, and only it.
    c.config_set("maxmemory-clients", "1mb")
    assert wait_gone(c, "big")
    assert client_line(c, "small") is not None
    assert int(c.info("stats")["evicted_clients"]) == 1
    small.close()
    big.close()


def test_client_growing_past_maxmemory_clients_is_evicted(server):
    c = server.client()
    c.execute_command("CLIENT", "NO-EVICT", "on")
    c.config_set("maxmemory", "10mb")
    c.config_set("maxmemory-clients", "10%")  # 1 MB
    assert c.config_get("maxmemory-clients")["maxmemory-clients"] == "10%"
    s = big_partial_request(server.port, "grower", 1_500_000, may_be_evicted=True)
    assert wait_gone(c, "grower")
    # A no-evict client is never evicted, whatever it holds.
    s2 = named_socket(server.port, "kept")
    s2.sendall(encode("CLIENT", "NO-EVICT", "on"))
    assert s2.recv(64) == b"+OK\r\n"
    s2.sendall(b"*2\r\n$1500000\r\n" + b"v" * 1_500_000)
    time.sleep(0.5)
    line = client_line(c, "kept")
    assert line is not None and field(line, "tot-mem") > 1 << 20
    s.close()
    s2.close()


def test_idle_reply_buffer_shrinks_and_busy_one_grows(server):
    c = server.client()
    c.execute_command("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100")
    t = server.client()
    t.client_setname("rb")
    deadline = time.monotonic() + 3
    while field(client_line(c, "rb"), "rbs") >= 2048:
        assert time.monotonic() < deadline, client_line(c, "rb")
        time.sleep(0.05)
    assert field(client_line(c, "rb"), "rbs") >= 1024
    c.set("bigval", "x" * 32768)
    c.execute_command("DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never")
    deadline = time.monotonic() + 5
    while True:
        t.get("bigval")
        if field(client_line(c, "rb"), "rbs") >= 16384:
            break
        assert time.monotonic() < deadline, client_line(c, "rb")
        time.sleep(0.05)
    stats = c.info("stats")
    assert int(stats["reply_buffer_shrinks"]) >= 1 and int(stats["reply_buffer_expands"]) >= 1


# ---- requests are read while replies wait for the socket -----------------------------------------


def slow_reader(port: int, name: str) -> socket.socket:
    """A client that reads (almost) nothing of what it is sent."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(encode("CLIENT", "SETNAME", name))
    assert s.recv(64) == b"+OK\r\n"
    return s


def wait_field(c, name: str, f: str, at_least: int, timeout: float = 5.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        line = client_line(c, name)
        assert line is not None, f"{name} is gone"
        v = field(line, f)
        if v >= at_least:
            return v
        assert time.monotonic() < deadline, line
        time.sleep(0.02)


def fill_output(c, s: socket.socket, name: str, at_least: int) -> int:
    """Send `GET v` one at a time until at least `at_least` bytes of replies wait in the
    server for `name` (what the kernel's buffers took aside)."""
    deadline = time.monotonic() + 10
    while True:
        s.sendall(encode("GET", "v"))
        settle = time.monotonic() + 0.2
        omem = 0
        while time.monotonic() < settle:
            line = client_line(c, name)
            assert line is not None, f"{name} is gone"
            omem = field(line, "omem")
            if omem >= at_least:
                return omem
            time.sleep(0.02)
        assert time.monotonic() < deadline, f"omem={omem}"


def test_unread_replies_grow_while_new_requests_are_served(server):
    """Redis reads a client's requests whatever its pending output: each GET sent one by one
    (never read) adds its reply to what waits, so the client's memory keeps growing."""
    c = server.client()
    c.set("v", "x" * (1 << 20))
    s = slow_reader(server.port, "grower")
    deadline = time.monotonic() + 10
    while True:
        s.sendall(encode("GET", "v"))
        time.sleep(0.01)
        line = client_line(c, "grower")
        if field(line, "tot-mem") > 10 << 20:
            break
        assert time.monotonic() < deadline, line
    assert field(line, "omem") > 8 << 20
    # The server answers everyone else meanwhile, and the slow client still gets everything
    # it asked for once it reads.
    assert c.ping()
    s.close()


def test_client_sending_a_big_query_while_not_reading_is_evicted(server):
    c = server.client()
    c.execute_command("CLIENT", "NO-EVICT", "on")
    c.config_set("maxmemory-clients", "3mb")
    c.set("v", "x" * (1 << 20))
    s = slow_reader(server.port, "piper")
    fill_output(c, s, "piper", 1)
    # Its reply waits; the query it goes on sending is still read, and its memory with it.
    size = 3 << 20
    try:
        s.sendall(b"*2\r\n$%d\r\n" % size + b"v" * size)
    except OSError:
        pass  # closed while we were still sending: evicted already
    assert wait_gone(c, "piper")
    assert int(c.info("stats")["evicted_clients"]) == 1
    s.close()


def test_output_limit_close_takes_the_clients_memory_out_of_the_total(server):
    """A client closed for its output-buffer limit gives its memory back to the clients'
    total at once: what it held is never a reason to evict anyone else."""
    limit = 10 << 20
    c = server.client()
    c.client_setname("control")
    c.execute_command("CLIENT", "NO-EVICT", "on")
    c.config_set("maxmemory-clients", str(limit))
    c.config_set("client-output-buffer-limit", "normal 3mb 0 0")
    c.set("v", "x" * (1 << 19))
    c.setrange("big", 4 << 20, "x")
    x = slow_reader(server.port, "obuf")
    # Replies wait for it in 512 KiB steps: 1.5 to 2 MiB, under its 3 MiB hard limit.
    fill_output(c, x, "obuf", 3 << 19)
    x_mem = field(client_line(c, "obuf"), "tot-mem")
    control = field(client_line(c, "control"), "tot-mem")
    # Everyone fits with 1 MB to spare.
    q_size = limit - x_mem - control - (1 << 20)
    q = big_partial_request(server.port, "qbuf", q_size)
    wait_field(c, "qbuf", "qbuf", q_size)
    assert client_line(c, "obuf") is not None
    # Over its hard limit: closed, its memory leaves the total...
    x.sendall(encode("GET", "big"))
    assert wait_gone(c, "obuf")
    # ... so a client taking less than that memory back fits too.
    y = big_partial_request(server.port, "late", (1 << 20) + (1 << 19))
    wait_field(c, "late", "qbuf", (1 << 20) + (1 << 19))
    time.sleep(0.3)  # a cron tick or more: figures refreshed, limit enforced again
    assert client_line(c, "qbuf") is not None and client_line(c, "late") is not None
    assert int(c.info("stats")["evicted_clients"]) == 0
    for s in (x, q, y):
        s.close()

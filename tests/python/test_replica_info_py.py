"""INFO replication on a replica: the master_sync_* fields while a full sync is in progress and
master_link_down_since_seconds (-1 before the link was ever up, then counting once it drops),
as Redis 7.2 reports them."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from conftest import free_port, start_tern

pytestmark = pytest.mark.skipif(
    os.environ.get("TERN_PY_TARGET") == "redis", reason="starts tern servers of its own"
)


def wait_for(pred, timeout=15.0, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def test_sync_progress_fields_against_a_stalled_master():
    """A fake master that announces a 1000-byte payload, sends 300 bytes and stalls."""
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]
    done = threading.Event()

    def fake_master():
        conn, _ = lsock.accept()
        f = conn.makefile("rb")
        while True:
            n = int(f.readline()[1:])
            args = []
            for _ in range(n):
                size = int(f.readline()[1:])
                args.append(f.read(size + 2)[:-2])
            name = args[0].upper()
            if name == b"PSYNC":
                break
            conn.sendall(b"+PONG\r\n" if name == b"PING" else b"+OK\r\n")
        conn.sendall(b"+FULLRESYNC " + b"a" * 40 + b" 0\r\n$1000\r\n" + b"R" * 300)
        done.wait(30)
        conn.close()

    t = threading.Thread(target=fake_master, daemon=True)
    t.start()
    replica = start_tern()
    try:
        r = replica.client()
        r.replicaof("127.0.0.1", port)
        info = wait_for(
            lambda: (i := r.info("replication")).get("master_sync_read_bytes") == 300 and i
        )
        assert info, r.info("replication")
        assert info["master_sync_in_progress"] == 1
        assert info["master_sync_total_bytes"] == 1000
        assert info["master_sync_left_bytes"] == 700
        assert info["master_sync_perc"] == 30.0
        assert info["master_sync_last_io_seconds_ago"] in (0, 1)
        assert info["master_link_down_since_seconds"] == -1
        with socket.create_connection(("127.0.0.1", replica.port)) as c:
            c.sendall(b"INFO replication\r\n")
            time.sleep(0.2)
            raw = c.recv(65536)
        assert b"\r\nmaster_sync_total_bytes:1000\r\nmaster_sync_read_bytes:300\r\n" in raw
        assert b"\r\nmaster_sync_left_bytes:700\r\nmaster_sync_perc:30.00\r\n" in raw
        time.sleep(2.1)
        assert r.info("replication")["master_sync_last_io_seconds_ago"] >= 2
    finally:
        done.set()
        replica.stop()
        lsock.close()


def test_link_down_since_counts_after_the_link_drops():
    master = start_tern("--enable-debug-command", "yes")
    replica = start_tern()
    try:
        m, r = master.client(), replica.client()
        m.execute_command("DEBUG", "POPULATE", "3000")
        # Never connected: -1.
        r.replicaof("127.0.0.1", free_port())
        info = r.info("replication")
        assert info["master_link_status"] == "down"
        assert info["master_link_down_since_seconds"] == -1
        r.replicaof("127.0.0.1", master.port)
        up = wait_for(lambda: r.info("replication")["master_link_status"] == "up", timeout=30)
        assert up, r.info("replication")
        info = r.info("replication")
        assert "master_sync_total_bytes" not in info
        assert "master_link_down_since_seconds" not in info
        assert r.dbsize() == 3000
        # The link drops: the time counts from then.
        master.stop()
        assert wait_for(lambda: r.info("replication")["master_link_status"] == "down")
        first = r.info("replication")["master_link_down_since_seconds"]
        assert 0 <= first <= 1
        time.sleep(2.1)
        assert r.info("replication")["master_link_down_since_seconds"] >= first + 2
    finally:
        replica.stop()
        master.stop()

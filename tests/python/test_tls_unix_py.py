"""TLS (tls-port) and Unix sockets with redis-py: ``ssl=True`` and ``unix_socket_path=``.

Certificates are made per module with the openssl CLI (scripts/setup.sh installs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time

import pytest
import redis

from conftest import free_port

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI missing")


def _openssl(*args: str, cwd: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki():
    d = tempfile.mkdtemp(prefix="tern-py-tls-")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
             "-subj", "/CN=tern-py-ca", "-keyout", "ca.key", "-out", "ca.crt", cwd=d)
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                 "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-sha256", "-extfile", f"{name}.ext",
                 "-out", f"{name}.crt", cwd=d)
    # An encrypted PKCS#8 key (what `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes).
    _openssl("pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", "server.key",
             "-out", "server.enc.key", "-passout", "pass:pw123", cwd=d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def tls_args(pki: str, port: int, key: str = "server.key") -> list[str]:
    return ["--tls-port", str(port),
            "--tls-cert-file", os.path.join(pki, "server.crt"),
            "--tls-key-file", os.path.join(pki, key),
            "--tls-ca-cert-file", os.path.join(pki, "ca.crt")]


def tls_client(pki: str, port: int, cert: bool = True, **kw) -> redis.Redis:
    extra = {}
    if cert:
        extra = dict(ssl_certfile=os.path.join(pki, "client.crt"),
                     ssl_keyfile=os.path.join(pki, "client.key"))
    return redis.Redis(host="127.0.0.1", port=port, ssl=True,
                       ssl_ca_certs=os.path.join(pki, "ca.crt"), decode_responses=True,
                       socket_timeout=10, **extra, **kw)


@pytest.mark.parametrize("protocol", [2, 3])
def test_tls_commands_pipeline_and_pubsub(tern_factory, pki, protocol):
    port = free_port()
    srv = tern_factory(*tls_args(pki, port))
    c = tls_client(pki, port, protocol=protocol)
    assert c.set("a", "1") is True
    assert c.get("a") == "1"
    assert srv.client().get("a") == "1"
    p = c.pipeline(transaction=False)
    for i in range(500):
        p.rpush("l", i)
    p.lrange("l", 0, -1)
    out = p.execute()
    assert out[-1] == [str(i) for i in range(500)]
    big = "y" * (2 << 20)
    c.set("big", big)
    assert c.get("big") == big
    ps = c.pubsub()
    ps.subscribe("news")
    assert ps.get_message(timeout=5)["type"] == "subscribe"
    assert srv.client().publish("news", "hi") == 1
    msg = ps.get_message(timeout=5)
    assert msg["data"] == "hi"
    ps.close()
    assert c.client_info()["laddr"] == f"127.0.0.1:{port}"


def test_tls_requires_client_cert_by_default(tern_factory, pki):
    port = free_port()
    tern_factory(*tls_args(pki, port))
    with pytest.raises(redis.ConnectionError):
        tls_client(pki, port, cert=False).ping()
    assert tls_client(pki, port).ping() is True


def test_tls_encrypted_key_and_reload(tern_factory, pki):
    port = free_port()
    srv = tern_factory(*tls_args(pki, port, key="server.enc.key"), "--tls-key-file-pass", "pw123")
    assert tls_client(pki, port).ping() is True
    plain = srv.client()
    with pytest.raises(redis.ResponseError, match="Unable to update TLS configuration"):
        plain.config_set("tls-cert-file", os.path.join(pki, "missing.crt"))
    assert plain.config_get("tls-cert-file")["tls-cert-file"] == os.path.join(pki, "server.crt")
    # Switch to the unencrypted key file: new connections still work.
    plain.config_set("tls-key-file", os.path.join(pki, "server.key"))
    assert tls_client(pki, port).ping() is True


def test_tls_port_set_at_run_time(tern_factory, pki):
    srv = tern_factory("--tls-cert-file", os.path.join(pki, "server.crt"),
                       "--tls-key-file", os.path.join(pki, "server.key"),
                       "--tls-ca-cert-file", os.path.join(pki, "ca.crt"))
    port = free_port()
    srv.client().config_set("tls-port", port)
    assert tls_client(pki, port).ping() is True
    srv.client().config_set("tls-port", 0)
    with pytest.raises(redis.ConnectionError):
        tls_client(pki, port).ping()


def test_unix_socket_with_redis_py(tern_factory):
    d = tempfile.mkdtemp(prefix="tern-py-unix-")
    path = os.path.join(d, "s.sock")
    try:
        srv = tern_factory("--unixsocket", path, "--unixsocketperm", "770")
        assert oct(os.stat(path).st_mode & 0o777) == oct(0o770)
        u = redis.Redis(unix_socket_path=path, decode_responses=True)
        assert u.set("x", "y") is True
        assert srv.client().get("x") == "y"
        info = u.client_info()
        assert info["addr"] == f"{path}:0"
        assert info["laddr"] == f"{path}:0"
        assert info["flags"] == "U"
        # A transaction and a blocking pop over the socket.
        p = u.pipeline(transaction=True)
        p.incr("c").incr("c")
        assert p.execute() == [1, 2]
        assert u.blpop(["nothing"], timeout=0.1) is None
    finally:
        shutil.rmtree(d, ignore_errors=True)

"""tern's Prometheus endpoint (`metrics-port`): fetched over HTTP and read with the official
prometheus_client parser; its values must agree with INFO after known operations."""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import free_port, start_tern

pytestmark = pytest.mark.skipif(
    os.environ.get("TERN_PY_TARGET") == "redis", reason="metrics-port is tern's own"
)


@pytest.fixture
def metered():
    port = free_port()
    s = start_tern("--metrics-port", str(port))
    s.metrics_port = port
    yield s
    s.stop()


def fetch(port: int, path: str = "/metrics") -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, "", ""


def scrape(port: int) -> dict:
    """{family name: family} (counter families are named without `_total` by the parser)."""
    status, ctype, text = fetch(port)
    assert status == 200
    assert ctype.startswith("text/plain; version=0.0.4")
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    for f in fams.values():
        assert f.documentation, f"{f.name} has no HELP"
        assert f.type in ("gauge", "counter", "summary"), f.name
    return fams


def value(fams: dict, family: str, sample: str | None = None, **labels) -> float:
    for s in fams[family].samples:
        if (sample is None or s.name == sample) and all(
            s.labels.get(k) == v for k, v in labels.items()
        ):
            return s.value
    raise KeyError(f"{sample or family} {labels}")


def test_values_match_info(metered):
    r = metered.client()
    for i in range(10):
        r.set(f"k{i}", i)
    r.expire("k0", 1000)
    r.expire("k1", 1000)
    r.select(2)
    r.sadd("s", "a", "b")
    r.select(0)
    for _ in range(5):
        r.get("k3")
    r.get("missing")
    with pytest.raises(Exception):
        r.execute_command("LPUSH", "k3", "x")  # WRONGTYPE: a failed call
    with pytest.raises(Exception):
        r.execute_command("GET")  # arity: rejected
    fams = scrape(metered.metrics_port)
    info = r.info("everything")
    assert value(fams, "redis_up") == 1
    assert value(fams, "redis_instance_info", role="master", redis_version="7.2.6") == 1
    assert value(fams, "redis_db_keys", db="db0") == info["db0"]["keys"] == 10
    assert value(fams, "redis_db_keys_expiring", db="db0") == info["db0"]["expires"] == 2
    assert value(fams, "redis_db_keys", db="db2") == info["db2"]["keys"] == 1
    assert "db1" not in {s.labels.get("db") for s in fams["redis_db_keys"].samples}
    assert value(fams, "redis_db_avg_ttl_seconds", db="db0") == 0
    cs = info["cmdstat_get"]
    assert value(fams, "redis_commands", cmd="get") == cs["calls"] == 6
    assert value(fams, "redis_commands_rejected_calls", cmd="get") == cs["rejected_calls"] == 1
    assert value(fams, "redis_commands", cmd="set") == info["cmdstat_set"]["calls"] == 10
    assert value(fams, "redis_commands_failed_calls", cmd="lpush") == 1
    dur = value(fams, "redis_commands_duration_seconds", cmd="get")
    assert abs(dur - cs["usec"] / 1e6) < 1e-9
    assert value(fams, "redis_errors", err="WRONGTYPE") == info["errorstat_WRONGTYPE"]["count"]
    assert value(fams, "redis_errors", err="ERR") == info["errorstat_ERR"]["count"]
    assert value(fams, "redis_keyspace_hits") == info["keyspace_hits"]
    assert value(fams, "redis_keyspace_misses") == info["keyspace_misses"]
    assert value(fams, "redis_connected_clients") == info["connected_clients"] == 1
    assert value(fams, "redis_rdb_changes_since_last_save") == info["rdb_changes_since_last_save"]
    assert value(fams, "redis_aof_enabled") == info["aof_enabled"] == 0
    assert value(fams, "redis_memory_max_bytes") == info["maxmemory"]
    used = value(fams, "redis_memory_used_bytes")
    assert 0.5 * info["used_memory"] < used < 2 * info["used_memory"]
    # Latency percentiles, labelled as redis_exporter does (quantile = percentile / 100).
    assert value(fams, "redis_latency_percentiles_usec", cmd="get", quantile="0.5") >= 0
    assert value(fams, "redis_latency_percentiles_usec", cmd="get", quantile="0.999") >= 0
    count = value(
        fams, "redis_latency_percentiles_usec", "redis_latency_percentiles_usec_count", cmd="get"
    )
    assert count == cs["calls"]
    # Per-thread figures add up to the server's total in the same scrape.
    threads = [s for s in fams["tern_thread_commands_processed"].samples if s.name.endswith("_total")]
    # (a worker that has served nobody yet has no figures)
    assert 1 <= len(threads) <= value(fams, "tern_threads")
    assert sum(s.value for s in threads) == value(fams, "redis_commands_processed")


def test_replica_metrics(metered, tern_factory):
    master = metered.client()
    master.set("x", "1")
    rport = free_port()
    replica = start_tern("--replicaof", "127.0.0.1", str(metered.port), "--metrics-port", str(rport))
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            info = master.info("replication")
            if info.get("connected_slaves") == 1 and info["slave0"]["state"] == "online":
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"replica never came online: {master.info('replication')}")
        master.set("y", "2")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            acked = master.info("replication")["slave0"]["offset"]
            if replica.client().dbsize() == 2 and acked > 0:
                break
            time.sleep(0.05)
        fams = scrape(metered.metrics_port)
        info = master.info("replication")
        assert value(fams, "redis_connected_slaves") == 1
        s0 = info["slave0"]
        labels = dict(slave_ip=s0["ip"], slave_port=str(s0["port"]), slave_state="online")
        off = value(fams, "redis_connected_slave_offset_bytes", **labels)
        assert acked <= off <= info["master_repl_offset"]
        assert value(fams, "redis_connected_slave_lag_seconds", **labels) >= 0
        rf = scrape(rport)
        assert value(rf, "redis_instance_info", role="slave") == 1
        assert value(rf, "redis_db_keys", db="db0") == 2
    finally:
        replica.stop()


def test_config_set_rebinds_and_other_paths(metered):
    r = metered.client()
    assert fetch(metered.metrics_port, "/")[0] == 404
    new = free_port()
    assert r.config_set("metrics-port", new)
    assert r.config_get("metrics-port") == {"metrics-port": str(new)}
    assert fetch(new)[0] == 200
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{metered.metrics_port}/metrics", timeout=2)
    assert r.config_set("metrics-port", 0)
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{new}/metrics", timeout=2)


def test_off_by_default(tern):
    assert tern.client().config_get("metrics-port") == {"metrics-port": "0"}

"""Per-database policies through redis-py: its INFO parser reads the keyspace line with tern's
``used_memory=`` field and the ``dbN_*`` lines of INFO memory; CONFIG SET/GET of the
``db-*`` parameters as a Python application sets them; a cache database stays within its
quota while a noeviction one refuses writes with redis-py's ``OutOfMemoryError``."""

import pytest
import redis


def test_redis_py_parses_per_db_memory(tern_factory):
    s = tern_factory("--db-maxmemory", "2 10mb", "--db-maxmemory-policy", "2 allkeys-lru")
    c = s.client()
    r3 = s.client(db=3)
    for i in range(200):
        r3.set(f"k{i}", "x" * 100)
    keyspace = r3.info("keyspace")
    db3 = keyspace["db3"]
    assert db3["keys"] == 200 and db3["expires"] == 0
    assert isinstance(db3["used_memory"], int)
    assert 200 * 100 <= db3["used_memory"] < 200 * 400
    memory = c.info("memory")
    assert memory["db3_used_memory"] == db3["used_memory"]
    assert memory["db3_maxmemory"] == 0
    assert memory["db2_maxmemory"] == 10 * 1024 * 1024
    assert memory["db2_maxmemory_policy"] == "allkeys-lru"
    # CONFIG SET merges per database; CONFIG GET reads back every override.
    assert c.config_set("db-maxmemory", "3 1mb")
    assert c.config_get("db-maxmemory") == {"db-maxmemory": "2 10485760 3 1048576"}
    with pytest.raises(redis.ResponseError, match="database index must be between 0 and 15"):
        c.config_set("db-persistence", "42 no")


def test_cache_db_evicts_and_durable_db_refuses_with_out_of_memory_error(tern_factory):
    s = tern_factory(
        "--db-maxmemory", "1 512kb 2 512kb", "--db-maxmemory-policy", "1 allkeys-random"
    )
    cache, durable = s.client(db=1), s.client(db=2)
    value = "v" * 1000
    for i in range(2000):
        assert cache.set(f"c{i}", value)
    assert cache.dbsize() < 2000
    assert cache.info("memory")["db1_used_memory"] <= 512 * 1024 + 2000
    stored = 0
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        for i in range(2000):
            durable.set(f"d{i}", value)
            stored += 1
    assert durable.dbsize() == stored
    assert durable.get("d0") == value

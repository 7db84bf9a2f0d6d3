"""KEYDB.CRON through redis-py: a Lua script run once (SINGLE) or every interval (REPEAT),
stored as a key of type `cron` that DEL cancels, that persists (RDB type 64, AOF rewrite),
replicates, and that only a master runs.
"""

import os
import time

import pytest
import redis

from persist_helpers import stop, wait_for, wait_loaded

INCR = "redis.call('incr', KEYS[1])"




def count(c, key="n"):
    return int(c.get(key) or 0)


def test_errors(r):
    cases = [
        (["KEYDB.CRON", "j", "SOMETIMES", 100, "return 1"], "syntax error"),
        (["KEYDB.CRON", "j", "REPEAT", "soon", "return 1"], "missing expire time"),
        (["KEYDB.CRON", "j", "REPEAT", 0, "return 1"], "interval must be positive"),
        (["KEYDB.CRON", "j", "REPEAT", 1000, -5, "return 1"], "interval must be positive"),
        (["KEYDB.CRON", "j", "REPEAT", 100, "return 1", "x"], "value is not an integer or out of range"),
        (["KEYDB.CRON", "j", "REPEAT", 100, "return 1", -1], "Number of keys can't be negative"),
        (["KEYDB.CRON", "j", "REPEAT", 100, "return 1", 2, "a"], "Missing arguments or numkeys is too big"),
        (["KEYDB.CRON", "j", "REPEAT", 100], "wrong number of arguments for 'keydb.cron' command"),
    ]
    for argv, msg in cases:
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command(*argv)
        assert str(e.value) == msg, argv
    assert r.exists("j") == 0


def test_single_runs_once_and_its_key_goes(r):
    assert r.execute_command("KEYDB.CRON", "once", "SINGLE", 100,
                             "redis.call('set', KEYS[1], ARGV[1])", 1, "k", "hello") in (True, "OK", b"OK")
    assert r.type("once") in ("cron", b"cron")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.get("once")
    assert wait_for(lambda: r.get("k") is not None)
    assert r.get("k") in ("hello", b"hello")
    assert wait_for(lambda: r.exists("once") == 0)


def test_repeat_runs_until_deleted(r):
    r.execute_command("KEYDB.CRON", "job", "REPEAT", 100, INCR, 1, "n")
    assert wait_for(lambda: count(r) >= 3)
    assert int(r.info("stats")["cron_jobs_executed"]) >= 3
    assert r.delete("job") == 1
    time.sleep(0.3)
    settled = count(r)
    time.sleep(0.5)
    assert count(r) == settled
    # An explicit start: nothing until start + delay.
    start = int(time.time() * 1000) + 600
    r.execute_command("KEYDB.CRON", "later", "SINGLE", start, 100, INCR, 1, "m")
    time.sleep(0.4)
    assert count(r, "m") == 0
    assert wait_for(lambda: count(r, "m") == 1)
    # RENAME moves the job; overwriting its key replaces it.
    r.execute_command("KEYDB.CRON", "a", "REPEAT", 100, INCR, 1, "x")
    r.rename("a", "b")
    assert wait_for(lambda: count(r, "x") >= 2)
    r.set("b", "plain")
    time.sleep(0.3)
    before = count(r, "x")
    time.sleep(0.4)
    assert count(r, "x") == before


def test_failing_script_keeps_its_schedule(tern):
    c = tern.client()
    c.execute_command("KEYDB.CRON", "bad", "REPEAT", 100, "this is not lua")
    c.execute_command("KEYDB.CRON", "good", "REPEAT", 100, INCR, 1, "n")
    assert wait_for(lambda: count(c) >= 3)
    assert "KEYDB.CRON job 'bad' failed" in tern.log()


def test_cron_executed_event(tern):
    c = tern.client()
    c.config_set("notify-keyspace-events", "E")
    p = c.pubsub()
    p.subscribe("__keyevent@0__:CRON Executed")
    p.get_message(timeout=1)
    c.execute_command("KEYDB.CRON", "ev", "SINGLE", 50, "return 1")
    m = None
    deadline = time.time() + 3
    while time.time() < deadline:
        m = p.get_message(timeout=0.2)
        if m and m["type"] == "message":
            break
    assert m and m["data"] == "ev"
    p.close()


def test_save_restart_and_aof_rewrite(tern_factory, tmp_path):
    d = str(tmp_path)
    s = tern_factory("--dir", d, "--dbfilename", "dump.rdb", "--enable-debug-command", "yes")
    c = s.client()
    far = int(time.time() * 1000) + 3_600_000
    c.execute_command("KEYDB.CRON", "rep", "REPEAT", 150, INCR, 1, "n")
    c.execute_command("KEYDB.CRON", "one", "SINGLE", far, 1000, INCR, 1, "never", "arg1")
    c.execute_command("DEBUG", "RELOAD")
    assert c.type("one") == "cron"
    c.save()
    stop(tern_factory, s)
    s = tern_factory("--dir", d, "--dbfilename", "dump.rdb")
    c = wait_loaded(s.client())
    assert c.type("rep") == "cron" and c.type("one") == "cron"
    base = count(c)
    assert wait_for(lambda: count(c) >= base + 2)
    stop(tern_factory, s)
    # The AOF: the command itself (with its start time), then a rewrite.
    d2 = str(tmp_path / "aof")
    os.makedirs(d2)
    args = ("--dir", d2, "--appendonly", "yes", "--aof-use-rdb-preamble", "no")
    s = tern_factory(*args)
    c = s.client()
    c.execute_command("KEYDB.CRON", "one", "SINGLE", far, 1000, INCR, 1, "never")
    c.execute_command("KEYDB.CRON", "rep", "REPEAT", 150, INCR, 1, "n")
    stop(tern_factory, s)
    s = tern_factory(*args)
    c = wait_loaded(s.client())
    assert c.type("one") == "cron"
    c.bgrewriteaof()
    assert wait_for(lambda: not int(c.info("persistence")["aof_rewrite_in_progress"]), 10)
    time.sleep(0.2)
    stop(tern_factory, s)
    s = tern_factory(*args)
    c = wait_loaded(s.client())
    assert c.type("one") == "cron" and c.type("rep") == "cron"
    base = count(c)
    assert wait_for(lambda: count(c) >= base + 2)
    assert count(c, "never") == 0


def test_replica_keeps_the_job_and_never_runs_it(tern_factory):
    m = tern_factory("--enable-debug-command", "yes")
    rep = tern_factory("--enable-debug-command", "yes")
    mc, rc = m.client(), rep.client()
    mc.execute_command("KEYDB.CRON", "pre", "REPEAT", 3_600_000, INCR, 1, "x")
    rc.replicaof("127.0.0.1", m.port)
    assert wait_for(lambda: rc.info("replication")["master_link_status"] == "up", 10)
    assert rc.type("pre") == "cron"
    mc.execute_command("KEYDB.CRON", "job", "REPEAT", 100, INCR, 1, "n")
    assert wait_for(lambda: count(mc) >= 3)
    # The replica holds the job and gets the script's writes; it runs nothing itself.
    mc.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    time.sleep(0.3)
    mc.execute_command("WAIT", 1, 2000)
    assert rc.type("job") == "cron"
    assert count(rc) == count(mc)
    time.sleep(0.5)
    assert count(rc) == count(mc)
    assert rc.execute_command("DEBUG", "DIGEST") == mc.execute_command("DEBUG", "DIGEST")

"""rename-command, on the command line and in a config file, side by side with redis-server:
the command answers under its new name only, an empty name removes it, COMMAND INFO and INFO
commandstats keep the original name, and a rename of an unknown command stops the start-up."""

import subprocess

import pytest
import redis

from conftest import tern_binary


def _observe(server):
    c = server.client()
    c.set_response_callback("COMMAND", lambda r, **kw: r)  # keep the nils of unknown names
    out = {}
    out["new name"] = c.execute_command("CFG", "GET", "maxmemory")
    for name, args in (("old name", ("CONFIG", "GET", "maxmemory")), ("removed", ("FLUSHALL",))):
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command(*args)
        out[name] = str(e.value)
    info = c.execute_command("COMMAND", "INFO", "cfg", "config")
    out["command info"] = [i[0] if i else None for i in info]
    out["count drop"] = c.execute_command("COMMAND", "COUNT")
    c.execute_command("CFG", "SET", "maxmemory", "0")
    stats = c.info("commandstats")
    out["stats"] = sorted(k for k in stats if "config" in k or "cfg" in k)
    return out


def test_rename_command_matches_redis(tern_factory, redis_factory):
    args = ("--rename-command", "config", "cfg", "--rename-command", "flushall", "")
    t = _observe(tern_factory(*args))
    r = _observe(redis_factory(*args))
    # Debian's redis-server has fewer commands: compare how much renaming took away.
    t_full = tern_factory().client().command_count()
    r_full = redis_factory().client().command_count()
    t["count drop"] = t_full - t["count drop"]
    r["count drop"] = r_full - r["count drop"]
    assert t == r
    assert t["old name"].startswith("unknown command 'CONFIG'")
    assert t["command info"] == ["config", None]
    assert t["count drop"] == 1


def test_rename_command_in_config_file(tern_factory, tmp_path):
    conf = tmp_path / "tern.conf"
    conf.write_text('rename-command debug ""\nrename-command keys safe-keys\n')
    s = tern_factory("--include", str(conf))
    c = s.client()
    c.set("a", 1)
    assert c.execute_command("SAFE-KEYS", "*") == ["a"]
    for cmd in ("KEYS", "DEBUG"):
        with pytest.raises(redis.ResponseError, match="unknown command"):
            c.execute_command(cmd, "*")


def test_rename_of_unknown_command_refuses_to_start():
    p = subprocess.run(
        [tern_binary(), "--port", "0", "--rename-command", "nosuch", "x"],
        capture_output=True, text=True, timeout=20,
    )
    assert p.returncode != 0
    assert "No such command in rename-command" in p.stdout + p.stderr

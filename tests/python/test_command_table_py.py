"""The command table as clients see it, against Redis 7.2.6 itself: COMMAND's reply for every
command and subcommand (arity, flags, first/last/step, ACL categories, tips, key specs) must match
redis-server 7.2.6, built at ~/redis-7.2.6 (or $REDIS_726_SERVER); skipped when it is absent.

Commands past Redis 7.2 (BEYOND_726: Redis 7.4's hash-field expiration) are compared with Redis
7.4.1 instead, built at ~/redis-7.4.1 (or $REDIS_741_SERVER), when it is there.

KeyDB's commands go past both: EXPIREMEMBER, EXPIREMEMBERAT, PEXPIREMEMBERAT and KEYDB.CRON (not
in Redis: checked present, not compared), and TTL, PTTL and PERSIST taking an optional member
(arity -2 where Redis says 2; everything else about them is compared).

Known gaps, listed so that a new one fails and a fixed one must be removed from the list:
- tern's key specs carry no `notes` text (Redis's free-form remarks); notes are not compared;
- the commands in MISSING_TIPS lack some of Redis's command tips.
"""

import os
from pathlib import Path

import pytest
import redis

from conftest import ServerProc

REDIS_726 = os.environ.get("REDIS_726_SERVER", str(Path.home() / "redis-7.2.6/src/redis-server"))

NOT_IMPLEMENTED = set()

REDIS_741 = os.environ.get("REDIS_741_SERVER", str(Path.home() / "redis-7.4.1/src/redis-server"))
BEYOND_726 = {
    "hexpire", "hpexpire", "hexpireat", "hpexpireat", "httl", "hpttl", "hexpiretime",
    "hpexpiretime", "hpersist",
}
KEYDB_COMMANDS = {"expiremember", "expirememberat", "pexpirememberat", "keydb.cron"}
KEYDB_MEMBER_ARG = {"ttl", "pttl", "persist"}

# Commands whose COMMAND tips differ from Redis 7.2.6 (everything else about them matches).
MISSING_TIPS = {
    "client|info", "client|list", "client|setinfo", "client|setname", "command", "command|docs",
    "command|info", "command|list", "config|resetstat", "config|rewrite", "config|set", "info",
    "latency|doctor", "latency|graph", "latency|histogram", "latency|history", "latency|latest",
    "latency|reset", "mget", "mset", "object|encoding", "object|freq", "object|idletime",
    "object|refcount", "pttl", "slowlog|get", "slowlog|len", "slowlog|reset", "time", "ttl",
}

FIELDS = ["name", "arity", "flags", "first_key", "last_key", "step", "acl_categories", "tips", "key_specs"]


@pytest.fixture
def redis726():
    if not os.access(REDIS_726, os.X_OK):
        pytest.skip(f"redis-server 7.2.6 not found at {REDIS_726}")
    server = ServerProc("redis", REDIS_726, [])
    yield server
    server.stop()


def without_notes(value):
    if isinstance(value, dict):
        return {k: without_notes(v) for k, v in value.items() if k != "notes"}
    if isinstance(value, list):
        return [without_notes(v) for v in value]
    return value


def command_table(server):
    """name (container|sub for subcommands) -> the first nine fields of its COMMAND entry."""
    # A bare connection: redis-py's client would reshape COMMAND's reply into its own dict.
    conn = redis.Connection(host="127.0.0.1", port=server.port, protocol=3, decode_responses=True)
    conn.send_command("COMMAND")
    reply = conn.read_response()
    conn.disconnect()
    table = {}
    for entry in reply:
        for e in [entry] + list(entry[9]):
            table[e[0]] = dict(zip(FIELDS, without_notes(list(e[:9]))))
    return table


def test_command_info_matches_redis_726(tern, redis726):
    ours, theirs = command_table(tern), command_table(redis726)
    assert set(theirs) - set(ours) == NOT_IMPLEMENTED
    assert set(ours) - set(theirs) == BEYOND_726 | KEYDB_COMMANDS
    ours = {k: v for k, v in ours.items() if k not in KEYDB_COMMANDS}
    if os.access(REDIS_741, os.X_OK):
        newer = ServerProc("redis", REDIS_741, [])
        try:
            theirs.update({k: v for k, v in command_table(newer).items() if k in BEYOND_726})
        finally:
            newer.stop()
    else:
        ours = {k: v for k, v in ours.items() if k not in BEYOND_726}
    diffs = []
    for name in sorted(ours):
        a, b = ours[name], theirs[name]
        differing = [f for f in FIELDS if a[f] != b[f]]
        if name in KEYDB_MEMBER_ARG and (a["arity"], b["arity"]) == (-2, 2):
            differing.remove("arity")
        if name in MISSING_TIPS:
            if differing != ["tips"]:
                diffs.append(f"{name}: expected only tips to differ, differs in {differing}")
            continue
        for f in differing:
            diffs.append(f"{name} {f}: tern {a[f]!r} redis {b[f]!r}")
    assert not diffs, "\n".join(diffs)


def test_acl_categories_match_redis_726(tern, redis726):
    ours = tern.client(protocol=3)
    theirs = redis726.client(protocol=3)
    cats = sorted(ours.execute_command("ACL", "CAT"))
    assert cats == sorted(theirs.execute_command("ACL", "CAT"))
    for cat in cats:
        a = set(ours.execute_command("ACL", "CAT", cat)) - BEYOND_726 - KEYDB_COMMANDS
        b = set(theirs.execute_command("ACL", "CAT", cat)) - NOT_IMPLEMENTED
        assert a == b, (cat, sorted(a ^ b))

#!/bin/bash
# Per-database appendfsync: SET ops/s on db 0 (appendfsync always) beside db 1
# (db-appendfsync no) of one server, on the local disk and with every fsync 2 ms slow (the
# tern-fsync-delay LD_PRELOAD shim). Run under the machine lock:
#   flock -x /tmp/machine.lock bash scripts/bench_db_policy.sh [tern-server]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/target/release/tern-server}
SHIM=$(dirname "$BIN")/libtern_fsync_delay.so
PORT=${PORT:-7431}
DIR=$(mktemp -d /tmp/bench-db-policy.XXXXXX)
cd "$DIR" || exit 1

run() { # label, fsync delay in us, rounds
    for round in $(seq "$3"); do
        rm -rf appendonlydir
        LD_PRELOAD=$( [ "$2" -gt 0 ] && echo "$SHIM" ) FSYNC_DELAY_US=$2 "$BIN" --port "$PORT" \
            --save "" --appendonly yes --appendfsync always --db-appendfsync "1 no" > server.log 2>&1 &
        local pid=$!
        for _ in $(seq 50); do redis-cli -p "$PORT" ping > /dev/null 2>&1 && break; sleep 0.1; done
        for db in 0 1; do
            r=$(redis-benchmark -p "$PORT" -n 100000 -t set --dbnum "$db" -q 2>&1 |
                tr '\r' '\n' | grep "requests per second" | tail -1)
            echo "$1 round $round db $db: $r"
        done
        redis-cli -p "$PORT" shutdown nosave > /dev/null
        wait "$pid"
    done
}

run "local disk" 0 3
[ -e "$SHIM" ] && run "fsync +2ms" 2000 2
rm -rf "$DIR"

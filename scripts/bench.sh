#!/usr/bin/env bash
# Side-by-side benchmark of tern-server and Debian's redis-server in one run (see scripts/bench.py
# for the method). Never part of `make test`: numbers depend on the machine.
#   BENCH_REQUESTS=200000 (unpipelined; pipelined runs use 5x)   BENCH_KEYSPACE=100000
# BENCH_SCRIPT picks another report-only bench with the same set-up (tern build, redis tools):
#   bench_memory.py (make bench-memory), bench_isolation.py (make bench-isolation),
#   bench_atomic.py, bench_durable.py, bench_snapshot.py, bench_replication.py,
#   bench_reshard.py (make bench-atomic/-durable/-snapshot/-replication/-reshard).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v redis-benchmark >/dev/null 2>&1 && command -v redis-server >/dev/null 2>&1 \
    || bash scripts/setup.sh
command -v taskset >/dev/null 2>&1 || { echo "taskset (util-linux) is required" >&2; exit 1; }
if [ "$(nproc)" -lt 2 ]; then
    echo "bench: needs at least 2 CPUs (server on core 0, load generator on core 1)" >&2
    exit 1
fi
if [ -z "${TERN_SERVER:-}" ]; then
    cargo build --release --bin tern-server
    export TERN_SERVER="$PWD/target/release/tern-server"
fi
exec python3 "scripts/${BENCH_SCRIPT:-bench.py}" "$@"

#!/usr/bin/env bash
# Instructions per operation (valgrind --tool=callgrind) of redis-server and tern-server for
# one tern-bench workload: deterministic where wall-clock benchmarks on a shared machine are not.
# Report-only, never part of `make test`.
#
#   scripts/callgrind_atomic.sh SERVER WORKLOAD [tern-bench options...]
#     SERVER    redis | tern | tern2 (tern --threads 2)
#     WORKLOAD  evalsha | multi-incr5 | publish
#   e.g. scripts/callgrind_atomic.sh tern evalsha --clients 10 --seconds 8
#
# The server starts under callgrind with instrumentation off; a 1 s warm-up run of the same
# workload (script loaded and compiled, connections' buffers grown), CONFIG RESETSTAT, then
# instrumentation on for the measured run only. Instructions are callgrind's total Ir of the
# whole process (every thread) over that run; operations are the server's own count of the
# workload's command (INFO commandstats: evalsha, exec or publish calls).
# CG_PORT (default 35990), CG_OUT (directory for callgrind.out files, default /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
server=$1 workload=$2
shift 2
port=${CG_PORT:-35990}
out_dir=${CG_OUT:-/tmp}
out="$out_dir/callgrind.$server.$workload.out"
bench=${TERN_BENCH:-target/release/tern-bench}
case $server in
redis) argv=(redis-server --port "$port" --save "" --appendonly no) ;;
tern) argv=("${TERN_SERVER:-target/release/tern-server}" --port "$port" --save "" --threads 1) ;;
tern2) argv=("${TERN_SERVER:-target/release/tern-server}" --port "$port" --save "" --threads 2) ;;
*) echo "unknown server $server" >&2; exit 2 ;;
esac
case $workload in
evalsha) cmd=evalsha ;;
multi-incr5) cmd=exec ;;
publish) cmd=publish ;;
*) echo "unknown workload $workload" >&2; exit 2 ;;
esac
rm -f "$out"*
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" "${argv[@]}" \
    >"$out_dir/callgrind.$server.log" 2>&1 &
vg=$!
trap 'kill $vg 2>/dev/null || true' EXIT
for _ in $(seq 200); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
done
"$bench" --port "$port" --workload "$workload" --seconds 1 "$@" >/dev/null
redis-cli -p "$port" config resetstat >/dev/null
callgrind_control -i on $vg >/dev/null
"$bench" --port "$port" --workload "$workload" "$@" >"$out_dir/callgrind.$server.bench.json"
callgrind_control -i off $vg >/dev/null
calls=$(redis-cli -p "$port" info commandstats | tr -d '\r' \
    | sed -n "s/^cmdstat_$cmd:calls=\([0-9]*\),.*/\1/p")
callgrind_control -d $vg >/dev/null
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait $vg || true
trap - EXIT
ir=$(cat "$out"* | sed -n 's/^totals: \([0-9]*\)/\1/p' | awk '{s += $1} END {print s}')
echo "$server $workload: $ir instructions / $calls $cmd calls = $((ir / calls)) per op ($out)"

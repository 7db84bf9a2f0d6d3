#!/usr/bin/env bash
# TLS cost: redis-benchmark (--tls for the TLS runs) against tern and redis-server, each on its
# plain port and its tls-port, server pinned to core 0 and the load on core 1; ops/s and ops
# per server CPU-second (utime+stime from /proc/PID/stat), 3 interleaved rounds, medians.
# Needs a TLS-enabled redis-server/redis-benchmark (REDIS_SRC, default ~/redis-7.2.6) and the
# test certificates from its utils/gen-test-certs.sh (tests/tls).
#   scripts/bench-tls.sh [TERN_BINARY]
set -euo pipefail
TERN=${1:-target/release/tern-server}
RS=${REDIS_SRC:-$HOME/redis-7.2.6}
T=$RS/tests/tls
N=${N:-200000}
P=${P:-16}
ROUNDS=${ROUNDS:-3}
CERTS=(--tls-cert-file "$T/server.crt" --tls-key-file "$T/server.key" --tls-ca-cert-file "$T/ca.crt")
CLI_TLS=(--tls --cert "$T/client.crt" --key "$T/client.key" --cacert "$T/ca.crt")
TICK=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' /proc/"$1"/stat; }
start() { # name binary port tls-port
    taskset -c 0 "$2" --port "$3" --tls-port "$4" --save "" --appendonly no "${CERTS[@]}" \
        --tls-auth-clients no --logfile /dev/null >/dev/null 2>&1 &
    echo $!
}
declare -A res
run() { # label pid port tls?
    local extra=()
    [ "$4" = 1 ] && extra=("${CLI_TLS[@]}")
    local c0; c0=$(cpu "$2")
    local t0; t0=$(date +%s.%N)
    local out
    out=$(taskset -c 1 "$RS/src/redis-benchmark" -p "$3" "${extra[@]}" -n "$N" -c 50 -P "$P" \
          -t set,get -r 100000 -q 2>/dev/null | tr '\r' '\n' | grep -E '^(SET|GET): [0-9.]+ requests per second')
    local c1; c1=$(cpu "$2")
    local ops; ops=$(echo "$out" | awk '{s+=$2; n++} END {printf "%.0f", s/n}')
    # 2*N requests (SET and GET) over the server's CPU seconds.
    local per; per=$(awk -v n="$N" -v c=$((c1 - c0)) -v t="$TICK" 'BEGIN {printf "%.0f", 2*n/(c/t)}')
    res["$1"]+="$ops/$per "
}
tp=7180; tt=7181; rp=7182; rt=7183
tpid=""; rpid=""
trap 'kill $tpid $rpid 2>/dev/null || true' EXIT
for r in $(seq "$ROUNDS"); do
    tpid=$(start tern "$TERN" $tp $tt); rpid=$(start redis "$RS/src/redis-server" $rp $rt); sleep 1
    run tern-tcp "$tpid" $tp 0; run redis-tcp "$rpid" $rp 0
    run tern-tls "$tpid" $tt 1; run redis-tls "$rpid" $rt 1
    # The servers were started in a command substitution, so they are not this shell's
    # children and `wait` cannot reap them: poll until both are gone before the next round
    # binds the same ports.
    kill "$tpid" "$rpid"
    while [ -e /proc/"$tpid" ] || [ -e /proc/"$rpid" ]; do sleep 0.1; done
done
med() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "%-10s %12s %16s   (-P %s, -c 50, SET+GET, %s rounds)\n" server "ops/s" "ops/CPU-s" "$P" "$ROUNDS"
for k in tern-tcp redis-tcp tern-tls redis-tls; do
    o=$(echo "${res[$k]}" | tr ' ' '\n' | cut -d/ -f1 | tr '\n' ' ' | med)
    c=$(echo "${res[$k]}" | tr ' ' '\n' | cut -d/ -f2 | tr '\n' ' ' | med)
    printf "%-10s %12s %16s   [%s]\n" "$k" "$o" "$c" "${res[$k]}"
done

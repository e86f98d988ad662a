#!/usr/bin/env bash
# bench-ab.sh: two Leasehold builds against the bare floor, interleaved, with
# the lockbench load generator (undici, closed-loop workers).
#
#   LOCKBENCH=/path/to/lockbench scripts/bench-ab.sh dist/baseline.mjs dist/server.mjs ["u64 u1"] [duration_s] [rounds]
#
# Each round runs, per scenario: floor, build A, build B (each its own server
# on a fresh data directory, API only, NODE_ENV=production), and prints one
# JSON line per run (cycles/s, acquire p50, server and client CPU per cycle).
# Ports: FLOOR_PORT (4210), A_PORT (4251), B_PORT (4252). Method: docs/benchmarks.md.
set -euo pipefail
A=$1 B=$2 SCENARIOS=${3:-"u64 u1"} DURATION=${4:-4} ROUNDS=${5:-3}
: "${LOCKBENCH:?set LOCKBENCH to the lockbench directory (with node_modules installed)}"
FLOOR_PORT=${FLOOR_PORT:-4210} A_PORT=${A_PORT:-4251} B_PORT=${B_PORT:-4252}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOK=lh_admin_$(openssl rand -hex 16)
TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
start() { # port build
  mkdir -p "$TMP/$1"
  (cd "$ROOT" && PORT=$1 LEASEHOLD_CONSOLE=off LEASEHOLD_DATA_DIR="$TMP/$1" LEASEHOLD_BOOTSTRAP_TOKEN=$TOK NODE_ENV=production \
    exec node "$2" >"$TMP/$1.log" 2>&1) &
  PIDS+=($!)
}
start "$A_PORT" "$A"; AP=${PIDS[-1]}
start "$B_PORT" "$B"; BP=${PIDS[-1]}
(cd "$LOCKBENCH" && PORT=$FLOOR_PORT exec node floor-server.mjs >/dev/null 2>&1) & PIDS+=($!); FP=${PIDS[-1]}
sleep 2
cd "$LOCKBENCH"
run() { # label adapter port pid scenario
  local envs=(FLOOR_URL="http://127.0.0.1:$3")
  [ "$2" = leasehold ] && envs=(LH_BASE_URL="http://127.0.0.1:$3" LH_TOKEN="$TOK")
  env "${envs[@]}" node lockbench.mjs --adapter "$2" --label "$1" --scenario "$5" --warmup 1 --duration "$DURATION" --server-pid "$4" | tail -1 |
    jq -c --arg r "$ROUND" '{round: $r, l: .label, scenario, cycles_per_s, acquire_p50_ms, server_cpu_us_per_cycle, client_cpu_us_per_cycle, errors, server_check}'
}
for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
  for sc in $SCENARIOS; do
    run floor floor "$FLOOR_PORT" "$FP" "$sc"
    run A leasehold "$A_PORT" "$AP" "$sc"
    run B leasehold "$B_PORT" "$BP" "$sc"
  done
done

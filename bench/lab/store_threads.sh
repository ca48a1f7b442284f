#!/usr/bin/env bash
# Issue 35: where gpulabd's CPU goes per job with its store at a size bound and without
# one, thread by thread (gpulab-store is the writer that commits batches and prunes,
# gpulab-ckpt the WAL's checkpoints, gpulab-http the answers). A seed database is filled
# once to the bound (as prune_ab.sh's); each run starts gpulabd on a fresh copy of it,
# warms up, then sends tiny transposes from CONNECTIONS keep-alive connections for
# SECONDS and reads each thread's user and system time from /proc/PID/task before and
# after. Rows alternate: bound, none, bound, none...
#   bash bench/lab/store_threads.sh BUILD_DIR [ROUNDS [SECONDS]]
# e.g. bash bench/lab/store_threads.sh build 2 8
# Environment: MAX_DB_BYTES (104857600), CONNECTIONS (64), WARMUP (4 s), BACKEND (cpu),
# EXTRA (more gpulabd flags).
set -uo pipefail
b=$(cd "$1" && pwd) || exit 2
rounds=${2:-2} secs=${3:-8}
max=${MAX_DB_BYTES:-104857600} conns=${CONNECTIONS:-64}
dir=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null; rm -rf "$dir"' EXIT
# shellcheck source=bench/lab/store_lib.sh
. "$(dirname "$0")/store_lib.sh"

# Clock ticks of user and system time by thread name, summed over threads of one name.
ticks() {
  for t in /proc/$pid/task/*; do
    echo "$(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"
  done | awk '{n[$1] += $2} END {for (k in n) print k, n[k]}' | sort
}

seed

for r in $(seq "$rounds"); do
  for bound in "$max" 0; do
    run_on_seed "$bound"
    ticks >"$dir/before"
    out=$("$b/loadgen" "http://127.0.0.1:$port/transpose" "$tiny" "$conns" "$secs")
    ticks >"$dir/after"
    stop
    jobs=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
    rate=$(echo "$out" | python3 -c 'import json,sys; print("%.0f" % json.load(sys.stdin)["per_second"])')
    echo "round $r, --max-db-bytes $bound: $rate jobs/s; CPU us per job by thread:"
    join "$dir/before" "$dir/after" |
      awk -v n="$jobs" -v hz="$(getconf CLK_TCK)" '{us = ($3 - $2) / hz * 1e6 / n; if (us >= 0.05) printf "  %-16s %6.1f\n", $1, us}'
  done
done

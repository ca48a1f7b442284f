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
# Environment: MAX_DB_BYTES (104857600), CONNECTIONS (64), WARMUP (4 s).
set -uo pipefail
b=$(cd "$1" && pwd) || exit 2
rounds=${2:-2} secs=${3:-8}
max=${MAX_DB_BYTES:-104857600} conns=${CONNECTIONS:-64} warm=${WARMUP:-4}
dir=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null; rm -rf "$dir"' EXIT
tiny='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'

# start DB MAX_DB_BYTES: gpulabd on DB in the background; sets pid and port
start() {
  port=$((19100 + RANDOM % 300))
  "$b/gpulabd" --backend cpu --port $port --no-ceilings --access-log off --max-queued 100000 \
    --db "$1" --max-db-bytes "$2" >/dev/null 2>>"$dir/gpulabd.log" &
  pid=$!
  for _ in $(seq 300); do curl -sf "localhost:$port/health" >/dev/null && return; sleep 0.05; done
  echo "gpulabd did not start" >&2
  tail "$dir/gpulabd.log" >&2
  exit 1
}
stop() { kill -TERM $pid; wait $pid 2>/dev/null; }
used_mb() { curl -s "localhost:$port/health" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["store"]["used_bytes"]) >> 20)'; }
# Clock ticks of user and system time by thread name, summed over threads of one name.
ticks() {
  for t in /proc/$pid/task/*; do
    echo "$(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"
  done | awk '{n[$1] += $2} END {for (k in n) print k, n[k]}' | sort
}

start "$dir/seed.db" 0
while [ "$(used_mb)" -lt $((max >> 20)) ]; do
  "$b/loadgen" "http://127.0.0.1:$port/transpose" "$tiny" "$conns" 2 >/dev/null
done
echo "seed: $(used_mb) MB in use" >&2
stop

for r in $(seq "$rounds"); do
  for bound in "$max" 0; do
    rm -f "$dir"/run.db*
    cp "$dir/seed.db" "$dir/run.db"
    start "$dir/run.db" "$bound"
    "$b/loadgen" "http://127.0.0.1:$port/transpose" "$tiny" "$conns" "$warm" >/dev/null
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

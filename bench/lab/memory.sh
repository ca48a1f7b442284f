#!/usr/bin/env bash
# Where gpulabd's resident memory goes under sustained load (issue 35): the same load
# (tiny transposes from CONNECTIONS keep-alive connections, bench/loadgen.c, ROUNDS
# rounds of SECONDS) on gpulabd as configured by default with its store at a 100 MB bound,
# and with one part taken away at a time. The difference from the first row is what
# that part holds. Prints a markdown table: RSS after each round, and the last round's
# anonymous and file-backed (shared libraries) parts.
#   bash bench/lab/memory.sh BUILD_DIR [ROUNDS [SECONDS]]      (defaults 3 10)
# Environment: CONNECTIONS (64), MAX_DB_BYTES (104857600).
set -uo pipefail
b=$(cd "$1" && pwd) || exit 2
rounds=${2:-3} secs=${3:-10} conns=${CONNECTIONS:-64}
dir=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null; rm -rf "$dir"' EXIT
tiny='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'
bound="--max-db-bytes ${MAX_DB_BYTES:-104857600}"

# row NAME ENV FLAGS: one gpulabd on a new database, the rounds, a table row
row() {
  local name=$1 envs=$2 flags=$3 port=$((19200 + RANDOM % 500)) rss=""
  rm -rf "$dir"/m.db*
  # shellcheck disable=SC2086 # lists of settings and flags
  env $envs "$b/gpulabd" --backend cpu --port $port --no-ceilings --access-log off \
    --max-queued 100000 --db "$dir/m.db" $flags >/dev/null 2>"$dir/gpulabd.log" &
  local pid=$!
  for _ in $(seq 300); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.05; done
  for _ in $(seq "$rounds"); do
    "$b/loadgen" "http://127.0.0.1:$port/transpose" "$tiny" "$conns" "$secs" >/dev/null
    sleep 1
    rss="$rss $(awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' /proc/$pid/status)"
  done
  local anon file
  anon=$(awk '/^RssAnon:/ {printf "%.0f", $2 / 1024}' /proc/$pid/status)
  file=$(awk '/^RssFile:/ {printf "%.0f", $2 / 1024}' /proc/$pid/status)
  kill -TERM $pid
  wait $pid 2>/dev/null
  echo "| $name | ${rss# } | $anon | $file |"
}

echo "| gpulabd | RSS MB after each round | anonymous MB | file-backed MB |"
echo "| --- | --- | --- | --- |"
row "defaults, $bound" "" "$bound"
row "--max-jobs-kept 100" "" "$bound --max-jobs-kept 100"
row "MALLOC_ARENA_MAX=2" "MALLOC_ARENA_MAX=2" "$bound"
row "--db none" "" "--db none"
row "--http-threads 1" "" "$bound --http-threads 1"

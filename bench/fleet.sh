#!/bin/sh
# A fleet's throughput and claim latency on one machine (the CPU backend by default):
# bench/loadgen against one gpulabd on SQLite, one on PostgreSQL, and three on one
# PostgreSQL database (a loadgen per node, at once); then the claim latency: a node
# with queued jobs is killed (-9) and the others' first claim is timed from the
# take-over. A throwaway cluster (tests/pg/pg_cluster.sh) lives in BUILD/bench-pg.
#   bench/fleet.sh BUILD [SECONDS] [CONNECTIONS]     (e.g. bench/fleet.sh build 10 8)
set -eu
build=$(cd "${1:?usage: bench/fleet.sh BUILD [SECONDS] [CONNECTIONS]}" && pwd)
seconds=${2:-10}
conns=${3:-8}
here=$(cd "$(dirname "$0")/.." && pwd)
cluster=$here/tests/pg/pg_cluster.sh
pgdir=$build/bench-pg
work=$(mktemp -d)
body='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1}'
slow='{"n":2000000,"radius":64,"variant":"naive","warmup":0,"batches":40,"reps":1}'
pids=""

stop_all() {
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  for p in $pids; do wait "$p" 2>/dev/null || true; done
  pids=""
}
cleanup() {
  stop_all
  "$cluster" stop "$pgdir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# gpulabd NAME DB [flags...]: started on a free port, its URL in $work/NAME.url.
gpulabd() {
  name=$1 db=$2
  shift 2
  "$build/gpulabd" --backend cpu --port 0 --db "$db" --node "$name" --access-log off \
    --lease-s 2 "$@" 2>"$work/$name.log" &
  pids="$pids $!"
  for _ in $(seq 100); do
    url=$(grep -o 'listening on http://[0-9.:]*' "$work/$name.log" | head -n 1 | cut -d' ' -f3)
    [ -n "$url" ] && break
    sleep 0.1
  done
  echo "$url" >"$work/$name.url"
}

# load NAME...: a loadgen per node at once; prints each one's JSON line.
load() {
  loads=""
  for n in "$@"; do
    "$build/loadgen" "$(cat "$work/$n.url")/transpose" "$body" "$conns" "$seconds" >"$work/$n.load" &
    loads="$loads $!"
  done
  for p in $loads; do wait "$p"; done
  for n in "$@"; do echo "  $n: $(cat "$work/$n.load")"; done
}

# queued -> running of a run's jobs, in ms (the command "$@" prints one a line):
# median and 99th percentile.
queue_ms() {
  "$@" | sort -n | awk '{ v[NR] = $1 } END { p = int(NR * 0.99); if (p < 1) p = 1;
    if (NR) printf "median %.2f ms, p99 %.2f ms (%d jobs)\n", v[int((NR + 1) / 2)], v[p], NR }'
}

"$cluster" start "$pgdir" >/dev/null
pg=$("$cluster" uri "$pgdir")

echo "one node, SQLite:"
gpulabd one "$work/one.db"
load one
stop_all
records="SELECT json_extract(record, '$.queue_ms') FROM jobs WHERE state = 'done'"
echo "queued -> running, one node, SQLite: $(queue_ms sqlite3 "$work/one.db" "$records")"
echo "one node, PostgreSQL:"
gpulabd a "$pg"
load a
stop_all
pg_records="SELECT (record::json->>'queue_ms')::float8 FROM jobs WHERE state = 'done'"
echo "queued -> running, one node, PostgreSQL: $(queue_ms psql "$pg" -At -c "$pg_records")"
psql "$pg" -q -c "TRUNCATE jobs" >/dev/null
echo "three nodes, one PostgreSQL database:"
for n in a b c; do gpulabd "$n" "$pg"; done
load a b c
stop_all


echo "claims after a take-over (node a killed with 20 queued jobs; b, idle, claims them):"
psql "$pg" -q -c "TRUNCATE jobs" >/dev/null
gpulabd a "$pg" --streams 1
gpulabd b "$pg" --streams 1
a=$(cat "$work/a.url")
curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d "$slow" "$a/stencil?wait=0"
for _ in $(seq 20); do
  curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d "$body" "$a/transpose?wait=0"
done
kill -9 "$(echo $pids | cut -d' ' -f1)"
sleep 8
echo "  claimed -> running: $(queue_ms psql "$pg" -At -c "SELECT (extract(epoch from
  (record::json->>'started_at')::timestamptz) - claimed_at) * 1e3 FROM jobs WHERE node = 'b'
  AND state = 'done'")"
taken=$(grep -m 1 "node a's lease ran out" "$work/b.log" | cut -d' ' -f1)
psql "$pg" -At -c "SELECT '  take-over -> claimed: first ' || round(((MIN(claimed_at) -
  extract(epoch from '$taken'::timestamptz)) * 1e3)::numeric, 1) || ' ms, last ' ||
  round(((MAX(claimed_at) - extract(epoch from '$taken'::timestamptz)) * 1e3)::numeric, 1) ||
  ' ms' FROM jobs WHERE node = 'b'"

#!/usr/bin/env bash
# ctest's load_wrk: wrk on loopback against a gpulabd --backend cpu ($GPULABD), twice
# (LOAD_SECONDS each, default 20; 64 connections, 2 threads), with mix.lua's mix of tiny
# jobs, job reads and health checks. Fails on any socket error, timeout, 5xx or other
# non-2xx (--max-queued is far above the 64 jobs that can be in flight, so no 429 is
# expected), when gpulabd died, /health is not ok, or its RSS after the second run is
# more than 20% above its RSS after the first (memory flat: --max-jobs-kept is small
# enough for the first run to fill it). The store is bounded at 32 MiB, which the first
# run passes within seconds: both runs prune all along, as a lab's gpulabd does after
# its first weeks (a prune that refused jobs would show as 507s). Prints p50/p99. Fails
# without wrk.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seconds=${LOAD_SECONDS:-20}
: "${GPULABD:?GPULABD must name the gpulabd binary}"
if ! command -v wrk >/dev/null; then
  echo "FAIL: wrk is not installed (apt-get install wrk; scripts/gpulab test installs it)"
  exit 1
fi

work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- gpulabd's log (last lines):"
  tail -20 "$work/gpulabd.log" || true
  exit 1
}

: >"$work/gpulabd.log" # there before the loop below reads it (the & may start gpulabd later)
# Its database in the work folder, removed after: in ctest's folder it grew to ~800 MB a
# run, and the next run's start (its integrity check) outlasted the wait below.
"$GPULABD" --backend cpu --host 127.0.0.1 --port 0 --streams 4 --http-threads 4 \
  --max-queued 100000 --max-jobs-kept 2000 --max-db-bytes 33554432 --db "$work/gpulab.db" \
  >/dev/null 2>"$work/gpulabd.log" &
pid=$!
port=""
for _ in $(seq 300); do
  port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/gpulabd.log")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || fail "gpulabd exited at start-up"
  sleep 0.1
done
[ -n "$port" ] || fail "gpulabd did not say 'listening on' within 30 s"
url="http://127.0.0.1:$port"

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }

# One wrk run; checks its output and gpulabd's health, and prints its latencies.
run() {
  local out="$work/wrk$1.txt"
  wrk --latency -t 2 -c 64 -d "${seconds}s" --timeout 10s -s "$here/mix.lua" "$url" >"$out" 2>&1 ||
    { cat "$out"; fail "wrk exited with $?"; }
  local statuses mix latency
  statuses=$(grep '^statuses:' "$out") || { cat "$out"; fail "no statuses line from mix.lua"; }
  mix=$(grep '^mix:' "$out")
  latency=$(grep '^latency_ms:' "$out")
  echo "run $1: $(grep -E '^ +[0-9]+ requests in' "$out" | sed 's/^ *//'); $(grep '^Requests/sec' "$out")"
  echo "  $statuses"
  echo "  $mix"
  echo "  $latency"
  if grep -q 'Socket errors' "$out"; then
    cat "$out"
    fail "wrk saw socket errors (connect/read/write/timeout)"
  fi
  [[ $statuses =~ 2xx=([0-9]+)\ 4xx=0\ 429=0\ 5xx=0\ other=0 ]] || fail "non-2xx answers: $statuses"
  [ "${BASH_REMATCH[1]}" -ge 100 ] || fail "only ${BASH_REMATCH[1]} answers in ${seconds} s"
  kill -0 "$pid" 2>/dev/null || fail "gpulabd died under load"
  local health
  health=$(curl -s -m 10 -w ' %{http_code}' "$url/health") || fail "GET /health failed after the run"
  [[ $health == *'"status":"ok"'*' 200' ]] || fail "GET /health after the run: $health"
}

run 1
rss1=$(rss_kb)
run 2
rss2=$(rss_kb)
pruned=$(curl -s "$url/metrics" | awk '$1 == "gpulab_store_pruned_jobs_total" {print $2}')
echo "gpulabd RSS: ${rss1} kB after run 1, ${rss2} kB after run 2; ${pruned} jobs pruned"
[ "${pruned%.*}" -gt 0 ] || fail "the store never reached its 32 MiB bound (nothing pruned)"
[ $((rss2 * 100)) -le $((rss1 * 120)) ] || fail "RSS grew from ${rss1} kB to ${rss2} kB (over 20%)"

kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
[ "$rc" -eq 0 ] || fail "gpulabd exited with $rc after SIGTERM"
echo "load_wrk: ok"

#!/usr/bin/env bash
# Where a tiny checked job's HTTP time goes (issue 16's table), in one run: the bare
# libmicrohttpd floor (bench/lab/bare_http.c), then gpulabd with its default flags
# (the on-disk store in a fresh folder, the access log to a file, the machine's
# default threads and lanes), ?wait=0, --db none (and its ?wait=0), --durability full
# and through the workers (--inline-max-bytes 0), from 1 and 64 keep-alive connections
# (bench/loadgen.c, the same client for every row). "server CPU" is the CPU time the
# server process spent per request over the row (utime + stime from /proc): less noisy
# than latency on a shared machine. Builds its targets (gpulabd, loadgen, bare_http)
# first.
#   bash bench/lab/http_breakdown.sh [BUILD_DIR]   (default build-gpu; libmicrohttpd.so.12
#                                                   may sit in BUILD_DIR/lib; targets built
#                                                   unless there)
# Environment: SECONDS_PER_ROW (default 3; 12 rows, about 65 s in all), BACKEND
# (gpulabd's --backend; default its own, auto), EXTRA (more gpulabd flags for every
# gpulabd row). Only the defaults' gpulabd measures the device's ceilings at start
# (the others take --no-ceilings, to save the time; the request path is the same).
# Markdown on stdout: every row, then issue 16's table last; logs and the databases
# in $OUT (or a temporary folder).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
b=$(cd "${1:-$root/build-gpu}" && pwd) || exit 2
# Built here unless already there (the GPU machine has no libmicrohttpd headers: a
# build folder carried there must not rebuild).
if [ ! -x "$b/gpulabd" ] || [ ! -x "$b/loadgen" ] || [ ! -x "$b/bare_http" ]; then
  cmake --build "$b" --target gpulabd loadgen bare_http -j"$(nproc)" >/dev/null || {
    echo "cannot build gpulabd, loadgen and bare_http in $b" >&2
    exit 2
  }
fi
export LD_LIBRARY_PATH=$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
secs=${SECONDS_PER_ROW:-3}
work=${OUT:-$(mktemp -d)}
mkdir -p "$work"
results=$work/rows.tsv
: >"$results"
tiny='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'
port=18097
tick=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

wait_up() { # gpulabd's /health, or (the bare floor has none) any answer
  for _ in $(seq 900); do
    curl -sf "localhost:$port/health" >/dev/null && return 0
    curl -s -o /dev/null "localhost:$port/" && return 0
    sleep 0.1
  done
  return 1
}

# row KEY NAME PID CONNECTIONS PATH: a markdown row on stdout, and KEY's figures in
# $results (key, connections, jobs/s, p50, p99, errors).
row() {
  local key=$1 name=$2 pid=$3 conns=$4 path=$5 t0 t1 out
  t0=$(cpu_ticks "$pid")
  out=$("$b/loadgen" "http://127.0.0.1:$port$path" "$tiny" "$conns" "$secs")
  t1=$(cpu_ticks "$pid")
  python3 - "$key" "$name" "$conns" "$out" "$t0" "$t1" "$tick" "$results" <<'EOF'
import json, sys
key, name, conns, out, t0, t1, tick, results = sys.argv[1:]
r = json.loads(out)
cpu = (int(t1) - int(t0)) / int(tick) * 1e6 / max(r["requests"], 1)
print("| %s | %s | %.0f | %.0f | %.0f | %d | %.0f |" % (name, conns, r["per_second"], r["p50_us"],
                                                    r["p99_us"], r["errors"], cpu))
with open(results, "a") as f:
    f.write("%s\t%s\t%.0f\t%.0f\t%.0f\t%d\n" % (key, conns, r["per_second"], r["p50_us"], r["p99_us"],
                                              r["errors"]))
EOF
}

# gpulabd_rows SLUG NAME FLAGS...: starts gpulabd with FLAGS in a fresh folder
# ($work/SLUG: its default ./gpulab.db there), measures its rows, stops it.
gpulabd_rows() {
  local slug=$1 name=$2
  shift 2
  local dir="$work/$slug"
  rm -rf "$dir"
  mkdir -p "$dir"
  # shellcheck disable=SC2086 # EXTRA and BACKEND are lists of words
  (cd "$dir" && exec "$b/gpulabd" --port $port ${BACKEND:+--backend $BACKEND} ${EXTRA:-} "$@" \
     >"$dir/access.log" 2>"$dir/gpulabd.log") &
  local pid=$!
  if ! wait_up; then
    echo "| $name: gpulabd did not start (see $dir/gpulabd.log) | | | | | | |"
    kill $pid 2>/dev/null
    wait $pid 2>/dev/null
    return
  fi
  curl -s -XPOST "localhost:$port/transpose" -d "$tiny" >/dev/null # first launches, outside the rows
  if [ "$slug" = defaults ]; then
    row defaults "gpulabd, defaults" $pid 1 /transpose
    row accept "gpulabd, defaults, ?wait=0 (accepted, not waited for)" $pid 1 "/transpose?wait=0"
    row defaults "gpulabd, defaults" $pid 64 /transpose
  else
    row "$slug" "gpulabd $name" $pid 1 /transpose
    # ?wait=0 without the store: what the accept's commit costs, against the defaults'
    [ "$slug" = db-none ] && row accept-db-none "gpulabd $name, ?wait=0" $pid 1 "/transpose?wait=0"
    row "$slug" "gpulabd $name" $pid 64 /transpose
  fi
  grep -h "listening on\|durability" "$dir/gpulabd.log" | sed 's/^/    /' >&2
  kill -TERM $pid
  wait $pid
}

echo "| server | connections | jobs/s | p50 us | p99 us | errors | server CPU us/job |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
"$b/bare_http" $port "$(nproc)" &
bare=$!
wait_up
row bare "bare libmicrohttpd handler (the floor)" $bare 1 /transpose
row bare "bare libmicrohttpd handler (the floor)" $bare 64 /transpose
kill -TERM $bare
wait $bare
gpulabd_rows defaults defaults
gpulabd_rows db-none "--db none" --db none --no-ceilings
gpulabd_rows durability-full "--durability full" --durability full --no-ceilings
gpulabd_rows workers "--inline-max-bytes 0 (through the workers)" --inline-max-bytes 0 --no-ceilings

# Issue 16's table: one connection's p50 and p99, and 64 connections' jobs/s.
echo
python3 - "$results" <<'EOF'
import sys
rows = {}
for line in open(sys.argv[1]):
    key, conns, per_s, p50, p99, errors = line.rstrip("\n").split("\t")
    rows[(key, conns)] = (per_s, p50, p99, errors)
def cell(key, conns, i):
    r = rows.get((key, conns))
    return r[i] if r else "-"
names = [("bare", "bare libmicrohttpd handler (the floor)"), ("defaults", "gpulabd, defaults"),
         ("accept", "gpulabd, defaults, `?wait=0` (accepted, not waited for)"),
         ("db-none", "gpulabd `--db none`"), ("accept-db-none", "gpulabd `--db none`, `?wait=0`"),
         ("durability-full", "gpulabd `--durability full`"),
         ("workers", "gpulabd `--inline-max-bytes 0` (through the workers)")]
print("| server | p50 us | p99 us | 64 connections: jobs/s | errors (64) |")
print("| --- | --- | --- | --- | --- |")
for key, name in names:
    print("| %s | %s | %s | %s | %s |" % (name, cell(key, "1", 1), cell(key, "1", 2), cell(key, "64", 0),
                                       cell(key, "64", 3)))
EOF

#!/usr/bin/env bash
# Issue 16's tiny job on two (or more) gpulabd builds, alternated: on a shared, noisy
# machine one build's run beside the other's says more than http_breakdown.sh's one
# pass each. Per round, per build (the order flipped every other round), a fresh
# gpulabd (--no-ceilings, its database in a new folder) for each row: the defaults from
# 1 connection, ?wait=0 from 1, --db none from 1, the defaults from 64 (bench/loadgen.c,
# keep-alive). Prints a line per row, then the medians as a markdown table ("server
# CPU" is utime + stime of gpulabd from /proc over the row, per job).
#   bash bench/lab/host_ab.sh ROUNDS SECONDS NAME=BUILD_DIR NAME=BUILD_DIR...
# e.g. bash bench/lab/host_ab.sh 5 4 old=/tmp/old new=build-cpu
# Environment: BACKEND (gpulabd's --backend; default cpu), LOADGEN (default the first
# build's loadgen).
set -uo pipefail
rounds=$1 secs=$2
shift 2
builds=("$@")
loadgen=${LOADGEN:-${builds[0]#*=}/loadgen}
tiny='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'
rows=("def1 /transpose 1" "acc1 /transpose?wait=0 1" "none1 /transpose 1 --db none" "def64 /transpose 64")
lines=$(mktemp)

# one BUILD_DIR PATH CONNECTIONS [FLAGS...]: "jobs/s p50 p99 cpu_us_per_job errors"
one() {
  local b=$1 path=$2 conns=$3 port=$((18200 + RANDOM % 500)) dir pid t0 t1 out
  shift 3
  dir=$(mktemp -d)
  (cd "$dir" && exec "$b/gpulabd" --backend "${BACKEND:-cpu}" --port $port --no-ceilings "$@" \
     >/dev/null 2>"$dir/gpulabd.log") &
  pid=$!
  for _ in $(seq 200); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.05; done
  curl -s -XPOST "localhost:$port/transpose" -d "$tiny" >/dev/null # first run, outside the row
  t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  out=$("$loadgen" "http://127.0.0.1:$port$path" "$tiny" "$conns" "$secs")
  t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  kill -TERM $pid
  wait $pid 2>/dev/null
  rm -rf "$dir"
  python3 -c 'import json, sys
r = json.loads(sys.argv[1])
cpu = (int(sys.argv[3]) - int(sys.argv[2])) / int(sys.argv[4]) * 1e6 / max(r["requests"], 1)
print("%.0f %.0f %.0f %.1f %d" % (r["per_second"], r["p50_us"], r["p99_us"], cpu, r["errors"]))' \
    "$out" "$t0" "$t1" "$(getconf CLK_TCK)"
}

for r in $(seq "$rounds"); do
  order=("${builds[@]}")
  [ $((r % 2)) = 0 ] && mapfile -t order < <(printf '%s\n' "${builds[@]}" | tac)
  for nb in "${order[@]}"; do
    for row in "${rows[@]}"; do
      read -r key path conns flags <<<"$row"
      # shellcheck disable=SC2086 # flags is a list of words
      line="${nb%%=*} $key $(one "$(cd "${nb#*=}" && pwd)" "$path" "$conns" $flags)"
      echo "$line" | tee -a "$lines"
    done
  done
done

python3 - "$lines" <<'EOF'
import collections, statistics as st, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, key, per_s, p50, p99, cpu, errors = line.split()
    runs[(key, name)].append((float(per_s), float(p50), float(p99), float(cpu), int(errors)))
print("| row | build | runs | jobs/s | p50 us (each run) | p99 us | server CPU us/job (each run) | errors |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for (key, name), v in sorted(runs.items()):
    med = lambda i: st.median(x[i] for x in v)
    each = lambda i: ", ".join("%.0f" % x[i] for x in v)
    print("| %s | %s | %d | %.0f | %.0f (%s) | %.0f | %.0f (%s) | %d |" % (
        key, name, len(v), med(0), med(1), each(1), med(2), med(3), each(3), sum(x[4] for x in v)))
EOF
rm -f "$lines"

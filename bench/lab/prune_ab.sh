#!/usr/bin/env bash
# Issue 35's pruning cost: gpulabd with its store held at a size bound (pruning all the
# time) and with no bound, for one build or more, alternated on one machine at one time.
# A seed database is filled once to the bound; each row starts gpulabd on a fresh copy of
# it, warms up, then measures the tiny transpose from CONNECTIONS keep-alive connections
# (bench/loadgen.c). Prints a line per row, then the medians as a markdown table.
#   bash bench/lab/prune_ab.sh ROUNDS SECONDS NAME=BUILD_DIR...
# e.g. bash bench/lab/prune_ab.sh 3 15 old=/tmp/old/build new=build
# Environment: BACKEND (cpu), MAX_DB_BYTES (104857600), CONNECTIONS (64), WARMUP (4 s),
# EXTRA (more gpulabd flags, both sides).
set -uo pipefail
rounds=$1 secs=$2
shift 2
builds=("$@")
max=${MAX_DB_BYTES:-104857600} conns=${CONNECTIONS:-64}
dir=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null; rm -rf "$dir"' EXIT
# shellcheck source=bench/lab/store_lib.sh
. "$(dirname "$0")/store_lib.sh"

b=$(cd "${builds[0]#*=}" && pwd) || exit 2
seed

lines=$dir/lines
sides=()
for nb in "${builds[@]}"; do sides+=("${nb%%=*}:bound" "${nb%%=*}:none"); done
for r in $(seq "$rounds"); do
  order=("${sides[@]}")
  [ $((r % 2)) -eq 0 ] && order=($(printf '%s\n' "${sides[@]}" | tac))
  for side in "${order[@]}"; do
    for nb in "${builds[@]}"; do [ "${nb%%=*}" = "${side%%:*}" ] && b=$(cd "${nb#*=}" && pwd); done
    run_on_seed "$([ "${side#*:}" = bound ] && echo "$max" || echo 0)"
    cpu0=$(awk '{print $14 + $15}' /proc/$pid/stat)
    out=$("$b/loadgen" "http://127.0.0.1:$port/transpose" "$tiny" "$conns" "$secs")
    cpu1=$(awk '{print $14 + $15}' /proc/$pid/stat)
    rss=$(awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' /proc/$pid/status)
    mb=$(used_mb)
    stop
    echo "$out" | python3 -c '
import json, sys
r = json.load(sys.stdin)
side, rnd, cpu, rss, mb = sys.argv[1:6]
print(side, rnd, "%.0f" % r["per_second"], "%.0f" % r["p50_us"], "%.0f" % r["p99_us"],
      "%.1f" % (float(cpu) / 100 * 1e6 / max(r["requests"], 1)), rss, mb, r.get("errors", 0))' \
      "$side" "$r" $((cpu1 - cpu0)) "$rss" "$mb" | tee -a "$lines"
  done
done
python3 - "$lines" "$max" "${sides[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("| store | rounds | jobs/s | p50 us | p99 us | server CPU us/job | RSS MB | in use MB |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for side in sys.argv[3:]:
    mine = [r for r in rows if r[0] == side]
    med = lambda i: statistics.median(float(r[i]) for r in mine)
    build, bound = side.split(":")
    name = build + (": no bound" if bound == "none" else ": bound %d MB" % (int(sys.argv[2]) >> 20))
    print("| %s | %d | %.0f | %.0f | %.0f | %.1f | %.0f | %.0f |" % (
        name, len(mine), med(2), med(3), med(4), med(5), med(6), med(7)))
PY

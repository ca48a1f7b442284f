#!/usr/bin/env bash
# The store's work per tiny job (issue 16): a fresh gpulabd (its database in a new
# folder), the tiny job of http_breakdown.sh from CONNECTIONS keep-alive connections
# for SECONDS (bench/loadgen.c), and /metrics before and after: rows written, commits,
# answers that waited for the store and how long, and the time per commit.
#   bash bench/lab/store_counters.sh BUILD_DIR [PATH [CONNECTIONS [SECONDS]]]
# e.g. bash bench/lab/store_counters.sh build-cpu '/transpose?wait=0' 1 3
# Environment: BACKEND (gpulabd's --backend; default cpu).
set -uo pipefail
b=$(cd "$1" && pwd) || exit 2
path=${2:-/transpose} conns=${3:-1} secs=${4:-3}
dir=$(mktemp -d)
port=$((18600 + RANDOM % 300))
(cd "$dir" && exec "$b/gpulabd" --backend "${BACKEND:-cpu}" --port $port --no-ceilings \
   >/dev/null 2>"$dir/gpulabd.log") &
pid=$!
for _ in $(seq 200); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.05; done
tiny='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'
curl -s "localhost:$port/metrics" >"$dir/before.txt"
run=$("$b/loadgen" "http://127.0.0.1:$port$path" "$tiny" "$conns" "$secs")
curl -s "localhost:$port/metrics" >"$dir/after.txt"
kill -TERM $pid
wait $pid 2>/dev/null
python3 - "$run" "$dir/before.txt" "$dir/after.txt" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
n = max(r["requests"], 1)
def read(f):
    return {l.split()[0]: float(l.split()[1]) for l in open(f) if l[0] != "#" and len(l.split()) == 2}
a, b = read(sys.argv[2]), read(sys.argv[3])
d = lambda k: b.get(k, 0) - a.get(k, 0)
commits = d("gpulab_store_commits_total")
print("%.0f jobs/s, p50 %.0f us, p99 %.0f us | per job: %.2f rows written, %.2f commits, %.2f answers "
      "waited %.1f us | %.1f us per commit" % (
          r["per_second"], r["p50_us"], r["p99_us"], d("gpulab_store_rows_written_total") / n,
          commits / n, d("gpulab_store_waits_total") / n, d("gpulab_store_wait_seconds_total") / n * 1e6,
          d("gpulab_store_commit_seconds_total") / max(commits, 1) * 1e6))
PY
rm -rf "$dir"

#!/usr/bin/env bash
# Issue 16's 64 connections (2026-12-02, sixth pass): does an HTTP thread that waits for
# the store's commit stall the other connections it serves? The tiny job of
# bench/lab/http_breakdown.sh from 64 keep-alive connections, with the store and with
# --db none, at --http-threads 16 (the H200 machine's default: its cores), 32 and 64,
# and at 16 with --streams 4. If waiting threads are the bound, more threads help the
# store's rows and not --db none's. Each row also reads /metrics before and after: rows
# written and commits per job, and how long answers waited for the store; and each
# kind of thread's CPU (threads-cpu.md: gpulabd names its threads), and where a job's
# time went (phases.md: queue_ms, run_ms, the access log's duration_ms).
#   bash bench/runs/host_threads.sh [BUILD_DIR]   (there; default build, carried)
# THREADS (default "16 32 64") and STREAMS4 (default 1; "" leaves its rows out) pick rows.
# Logs in $OUT; the table last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
b=$(cd "${1:-$root/build}" && pwd) || exit 2
export LD_LIBRARY_PATH=$b/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
secs=${SECONDS_PER_ROW:-4}
tiny='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'
port=18099
tick=$(getconf CLK_TCK)

metric() { awk -v m="$1" '$1 == m {print $2}' "$2"; }

# Each thread's name and CPU ticks (utime + stime) so far.
threads_cpu() {
  local task
  for task in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(cat "$task/comm")" "$(awk '{print $14 + $15}' "$task/stat")"
  done
}

# run SLUG FLAGS...: one row
run() {
  local slug=$1 dir=$out/$1
  shift
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && exec "$b/gpulabd" --port $port --no-ceilings "$@" >"$dir/access.log" 2>"$dir/gpulabd.log") &
  local pid=$!
  for _ in $(seq 600); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
  "$b/loadgen" "http://127.0.0.1:$port/transpose" "$tiny" 64 1 >/dev/null # warm
  curl -s "localhost:$port/metrics" >"$dir/before.txt"
  local t0 t1
  t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  threads_cpu $pid >"$dir/threads0.txt"
  "$b/loadgen" "http://127.0.0.1:$port/transpose" "$tiny" 64 "$secs" >"$dir/loadgen.json"
  threads_cpu $pid >"$dir/threads1.txt"
  t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  curl -s "localhost:$port/metrics" >"$dir/after.txt"
  curl -s "localhost:$port/jobs?limit=1000" >"$dir/jobs.json" # the last jobs' queue_ms and run_ms
  kill -TERM $pid
  wait $pid
  python3 - "$slug" "$*" "$dir" "$t0" "$t1" "$tick" <<'EOF'
import json, sys
slug, flags, d, t0, t1, tick = sys.argv[1:]
r = json.load(open(d + "/loadgen.json"))
def m(f):
    out = {}
    for line in open(d + "/" + f):
        if line and line[0] != "#":
            k, _, v = line.rpartition(" ")
            out[k] = float(v)
    return out
a, b = m("before.txt"), m("after.txt")
d_ = lambda k: b.get(k, 0) - a.get(k, 0)
jobs = max(r["requests"], 1)
waits = d_("gpulab_store_waits_total")
print("| %s | %.0f | %.0f | %.0f | %d | %.0f | %.2f | %.2f | %.2f | %.0f |" % (
    flags or "defaults", r["per_second"], r["p50_us"], r["p99_us"], r["errors"],
    (int(t1) - int(t0)) / int(tick) * 1e6 / jobs,
    d_("gpulab_store_rows_written_total") / jobs, d_("gpulab_store_commits_total") / jobs,
    waits / jobs, d_("gpulab_store_wait_seconds_total") * 1e6 / max(waits, 1)))
with open(d + "/../phases.md", "a") as f:
    f.write("%s: the engine's lock: %.2f waits/job, %.1f us waited/job; rows that waited for "
            "another thread's: %.3f/job; the store's queue: %.2f waits/job, %.1f us waited/job\n" % (
        flags or "defaults", d_("gpulab_engine_lock_waits_total") / jobs,
        d_("gpulab_engine_lock_wait_seconds_total") * 1e6 / jobs,
        d_("gpulab_engine_row_waits_total") / jobs,
        d_("gpulab_store_queue_lock_waits_total") / jobs,
        d_("gpulab_store_queue_lock_wait_seconds_total") * 1e6 / jobs))
commits = d_("gpulab_store_commits_total")
if commits:
    with open(d + "/../phases.md", "a") as f:
        f.write("%s: the store wrote %.0f%% of the time, %.0f us per commit of %.1f rows\n" % (
            flags or "defaults", d_("gpulab_store_commit_seconds_total") / r["seconds"] * 100,
            d_("gpulab_store_commit_seconds_total") * 1e6 / commits,
            d_("gpulab_store_rows_written_total") / commits))
# Per kind of thread (its name less the numbers): how many, and their CPU over the run
# as a share of one core, together and the busiest one's.
import re
def ticks(f):
    out = {}
    for i, line in enumerate(open(d + "/" + f)):
        name, _, t = line.rpartition(" ")
        out[(i, name)] = int(t)
    return out
t0_, t1_ = ticks("threads0.txt"), ticks("threads1.txt")
kinds = {}
for key, t in t1_.items():
    k = re.sub(r"[0-9.]+$", "", key[1])
    kinds.setdefault(k, []).append((t - t0_.get(key, 0)) / int(tick) / r["seconds"] * 100)
# Where a job's time went, medians over the last 1,000 jobs: waiting for a stream
# (queue_ms), running (run_ms), and in gpulabd from its request's arrival to its
# answer (the access log's duration_ms; the rest of it is HTTP, the answer's wait for
# the store and the thread hops).
def median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else float("nan")
jobs = json.load(open(d + "/jobs.json")).get("jobs", [])
dur = []
for line in open(d + "/access.log"):
    try:
        a = json.loads(line)
    except ValueError:
        continue
    if a.get("method") == "POST":
        dur.append(a.get("duration_ms"))
with open(d + "/../phases.md", "a") as f:
    f.write("%s: queue_ms %.3f, run_ms %.3f, duration_ms %.3f, client p50 ms %.3f\n" % (
        flags or "defaults", median(j.get("queue_ms") for j in jobs),
        median(j.get("run_ms") for j in jobs), median(dur[-1000:]), r["p50_us"] / 1000))
with open(d + "/../threads-cpu.md", "a") as f:
    f.write("%s: %s\n" % (flags or "defaults", ", ".join(
        "%s x%d %.0f%% (max %.0f%%)" % (k, len(v), sum(v), max(v)) for k, v in sorted(kinds.items()))))
EOF
  rm -f "$dir"/gpulab.db* "$dir/access.log" "$dir/jobs.json"
}

{
  echo "| flags (64 connections) | jobs/s | p50 us | p99 us | errors | server CPU us/job | rows written/job | commits/job | waits/job | us per wait |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for t in ${THREADS:-16 32 64}; do
    run "t$t" --http-threads $t
    run "t$t-none" --http-threads $t --db none
  done
  if [ -n "${STREAMS4-1}" ]; then
    run t16-s4 --http-threads 16 --streams 4
    run t16-s4-none --http-threads 16 --streams 4 --db none
  fi
} | tee "$out/threads.md"
cat "$out/threads-cpu.md" "$out/phases.md"

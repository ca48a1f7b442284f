#!/usr/bin/env bash
# What the finished jobs gpulabd keeps (--max-jobs-kept) cost in memory: a CPU-backend
# gpulabd with --db none takes tiny transposes from loadgen for a while, then prints
# the client's line, the server's resident memory (now and its peak) and its minor
# page faults.
#   bash bench/lab/kept_memory.sh GPULABD LOADGEN [SECONDS [CONNECTIONS]]   (5, 8)
# Environment: PORT (18123), EXTRA (more gpulabd flags, e.g. --max-jobs-kept 1000).
set -uo pipefail
g=${1:?gpulabd}; lg=${2:?loadgen}; secs=${3:-5}; conns=${4:-8}; port=${PORT:-18123}
log=$(mktemp)
# shellcheck disable=SC2086
"$g" --backend cpu --db none --port "$port" --host 127.0.0.1 --no-ceilings ${EXTRA:-} >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do curl -sf "127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
tiny='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'
line=$("$lg" "http://127.0.0.1:$port/transpose" "$tiny" "$conns" "$secs") || { cat "$log" >&2; exit 1; }
rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
hwm=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
faults=$(awk '{print $10}' "/proc/$pid/stat")
echo "$line rss_kb=$rss peak_kb=$hwm minor_faults=$faults"

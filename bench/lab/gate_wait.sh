#!/usr/bin/env bash
# How long a tiny job (transpose 64x64, its defaults: exclusive) waits behind two long
# exclusive jobs (naive stencils of 2^22 elements, 10 batches of 20 launches) that take
# turns at the device's gate; gpulabd on the CPU backend, a fresh one per row.
#   bash bench/lab/gate_wait.sh BUILD_DIR [ROWS]      prints the tiny job's seconds, sorted
set -uo pipefail
b=$(cd "$1" && pwd) || exit 2
rows=${2:-6}
long='{"n":4194304,"radius":32,"variant":"naive","warmup":1,"batches":10,"reps":20}'
for _ in $(seq "$rows"); do
  port=$((19500 + RANDOM % 300))
  "$b/gpulabd" --backend cpu --port $port --db :memory: --access-log off --no-ceilings \
    >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.05; done
  curl -s -o /dev/null "localhost:$port/stencil?wait=0" -d "$long"
  curl -s -o /dev/null "localhost:$port/stencil?wait=0" -d "$long"
  sleep 0.5 # both running and taking turns
  curl -s -o /dev/null -w '%{time_total}\n' "localhost:$port/transpose?wait=300" -d '{"m":64,"n":64}'
  kill "$pid"
  wait "$pid" 2>/dev/null
done | sort -n | tr '\n' ' '
echo

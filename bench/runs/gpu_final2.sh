#!/usr/bin/env bash
# The session's closing device run, in two calls that each fit the device tool's
# 10-minute limit:
#   bash bench/runs/gpu_final2.sh tests   # every GPU test, then bench/lab/host_costs
#   bash bench/runs/gpu_final2.sh bench   # bench/run.sh: lecture tables, best variants
#                                    # against ceilings and PyTorch, HTTP load
# Expects build-gpu/ built here (README: CMAKE_CUDA_ARCHITECTURES=90a) with
# libmicrohttpd.so.12 in build-gpu/lib. Logs to $OUT; a summary last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gpulab-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/build-gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
smi() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv,noheader; }
smi >> "$out/nvidia-smi.txt" 2>&1
case "${1:-}" in
tests)
  (cd "$root/build-gpu" && timeout 420 ctest -L gpu --output-on-failure) > "$out/ctest-gpu.log" 2>&1
  echo "ctest -L gpu exit $?" >> "$out/ctest-gpu.log"
  timeout 60 "$root/build-gpu/host_costs" > "$out/host_costs.log" 2>&1
  echo "host_costs exit $?" >> "$out/host_costs.log"
  grep -aE "Test +#|tests passed|exit|FAIL|failed" "$out/ctest-gpu.log" | tail -25
  grep -E "^\|" "$out/host_costs.log"
  ;;
bench)
  OUT=$out timeout 540 bash "$root/bench/run.sh" "$root/build-gpu" > "$out/bench-run.log" 2>&1
  echo "bench exit $?" >> "$out/bench-run.log"
  tail -n 3 "$out/bench-run.log"
  cat "$out/bench.md" 2>/dev/null
  ;;
*) echo "usage: gpu_final2.sh tests|bench" >&2; exit 2 ;;
esac
smi >> "$out/nvidia-smi.txt" 2>&1
cat "$out/nvidia-smi.txt"

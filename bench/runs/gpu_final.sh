#!/usr/bin/env bash
# One device call before a release: every GPU test, then the benchmark
# (bench/run.sh: the lecture's tables, the best variants against the measured
# ceilings and PyTorch, HTTP latency and throughput). Logs to $OUT; tables last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gpulab-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/build-gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$out/nvidia-smi.txt" 2>&1
(cd "$root/build-gpu" && ctest -L gpu --output-on-failure) > "$out/ctest-gpu.log" 2>&1
echo "ctest -L gpu exit $?" >> "$out/ctest-gpu.log"
OUT=$out bash "$root/bench/run.sh" "$root/build-gpu" > "$out/bench-run.log" 2>&1
echo "bench exit $?" >> "$out/bench-run.log"
grep -aE "Test +#|tests passed|exit" "$out/ctest-gpu.log" | tail -10
tail -n 4 "$out/bench-run.log"
cat "$out/bench.md" 2>/dev/null

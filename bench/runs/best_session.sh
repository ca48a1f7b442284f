#!/usr/bin/env bash
# One device call for the best variants: SASS of cuda_best_*.cu (vector accesses, HMMA,
# local memory), bench_best (the best variants against the d2d copy and cuBLAS,
# measured in the same run), then test_gpu_backend. Logs go to $OUT; summaries last.
# Expects build-best/ built here for sm_90 with libmicrohttpd.so.12 in build-best/lib:
#   cmake -S . -B build-best -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
#   cmake --build build-best -j2
#   mkdir -p build-best/lib && cp -L /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 build-best/lib/
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build-best}
out=${OUT:-/tmp/gpulab-best}
mkdir -p "$out"
export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv > "$out/nvidia-smi.txt" 2>&1

for obj in "$build"/CMakeFiles/gpulab_kernels.dir/kernels/cuda/cuda_best_*.cu.o; do
  cuobjdump -sass "$obj"
done > "$out/cuda_best.sass" 2>&1
{
  for k in transpose_best stencil_best gemm_best gemm_tf32; do
    awk -v k="${k}_kernel" '/Function :/ {p = index($0, k) > 0} p' "$out/cuda_best.sass" |
      grep -oE '\b(LDG|STG|LDS|STS|LDSM|LDGSTS|HMMA|FFMA|DADD|SHFL|BAR|LDL|STL)(\.[A-Z0-9_]+)*' |
      sort | uniq -c | sort -rn | awk -v k="$k" 'BEGIN {printf "%s:", k} {printf " %s=%s", $2, $1} END {print ""}'
  done
} > "$out/sass_summary.txt"

timeout 100 "$build/bench_best" > "$out/bench_best.log" 2>&1
echo "bench_best exit $?" >> "$out/bench_best.log"
timeout 125 "$build/tests/test_gpu_backend" > "$out/test_gpu_backend.log" 2>&1
echo "test_gpu_backend exit $?" >> "$out/test_gpu_backend.log"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv,noheader >> "$out/nvidia-smi.txt" 2>&1

cat "$out/nvidia-smi.txt"
cut -c1-400 "$out/sass_summary.txt"
grep -E "FAILED|failed|error|rc -|kernel: [0-9]+ registers" "$out/test_gpu_backend.log" | head -20
tail -n 3 "$out/test_gpu_backend.log"
grep -E "^ceilings|exit" "$out/bench_best.log"
grep -E "^\|" "$out/bench_best.log"

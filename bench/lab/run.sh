#!/usr/bin/env bash
# One device call for the lab (issue 4's misses): what a tiny job's host steps cost,
# the tiny job over HTTP on the CUDA and on the CPU backend of the same machine, the
# stencil, FP32 GEMM and TF32 candidates (bench/lab/*_lab.cu), and Nsight Compute on
# the best kernels as gpulabd runs them. Logs under $OUT; a short summary last.
# Expects build-gpu/ built here for sm_90 (README: "On a GPU"), with the lab programs
# (cmake --build build-gpu --target gemm_lab stencil_lab tf32_lab), and
# libmicrohttpd.so.12 in build-gpu/lib.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build-gpu}
out=${OUT:-/tmp/gpulab-lab}
mkdir -p "$out"
export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv,noheader; }
smi > "$out/nvidia-smi.txt" 2>&1

timeout 120 "$build/host_costs" > "$out/host_costs.log" 2>&1
echo "host_costs exit $?" >> "$out/host_costs.log"

# The tiny job over HTTP: one keep-alive client, then 64; CUDA backend, then CPU.
tiny='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'
port=18099
for backend in cuda cpu; do
  rm -f "$out/$backend.db"*
  "$build/gpulabd" --backend "$backend" --port $port --db "$out/$backend.db" --access-log off \
    --http-threads 8 --streams 8 --max-queued 100000 2> "$out/gpulabd-$backend.log" &
  pid=$!
  for _ in $(seq 300); do curl -sf "localhost:$port/health" > /dev/null && break; sleep 0.1; done
  curl -s -d "$tiny" "localhost:$port/transpose" > "$out/tiny-$backend.json"
  for conns in 1 64; do
    echo "$backend $conns $("$build/loadgen" "http://127.0.0.1:$port/transpose" "$tiny" $conns 5)" \
      >> "$out/http.log"
  done
  kill -TERM $pid; wait $pid
done

for lab in stencil_lab gemm_lab tf32_lab; do
  if [ -x "$build/$lab" ]; then
    timeout 150 "$build/$lab" > "$out/$lab.log" 2>&1
    echo "$lab exit $?" >> "$out/$lab.log"
  else
    echo "$lab: not built" > "$out/$lab.log"
  fi
done

# Nsight Compute: the first launches of each best kernel in bench_best --quick (the
# CUDA backend's own launches); clocks left as they are (METHOD.md).
for k in stencil_best_kernel gemm_tile_kernel gemm_tf32_wgmma_kernel; do
  timeout 90 ncu --clock-control none -k "regex:^$k" -c 2 \
    --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section ComputeWorkloadAnalysis \
    "$build/bench_best" --quick > "$out/ncu-$k.txt" 2>&1
  echo "ncu exit $?" >> "$out/ncu-$k.txt"
done
smi >> "$out/nvidia-smi.txt" 2>&1

cat "$out/nvidia-smi.txt"
grep -E "^\|" "$out/host_costs.log"
cat "$out/http.log"
for lab in stencil_lab gemm_lab tf32_lab; do grep -E "^\||exit|FAIL" "$out/$lab.log" | tail -40; done
for k in stencil_best_kernel gemm_tile_kernel gemm_tf32_wgmma_kernel; do
  grep -E "Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Duration|ncu exit" "$out/ncu-$k.txt" | head -16
done

#!/usr/bin/env bash
# One device call on the GPU machine: GPU tests, the lecture's tables through HTTP,
# and PyTorch's ceilings, all in one run. Logs go to $OUT; a short table is printed last.
# Expects build-gpu/ built here for sm_90 with libmicrohttpd.so.12 in build-gpu/lib
# (see bench/RESULTS.md for the commands), and build-gpu/torch_anchors.py.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gpulab-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/build-gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$out/nvidia-smi.txt" 2>&1

(cd "$root/build-gpu" && ctest -L gpu --output-on-failure) > "$out/ctest-gpu.log" 2>&1
echo "ctest -L gpu exit $?" >> "$out/ctest-gpu.log"

"$root/build-gpu/gpulabd" --backend cuda --port 18080 2> "$out/gpulabd.log" &
pid=$!
for _ in $(seq 100); do curl -sf localhost:18080/health >/dev/null && break; sleep 0.1; done
python3 "$root/bench/lecture_tables.py" http://127.0.0.1:18080 "$out/lecture.json" > "$out/lecture.md" 2>&1
kill -TERM $pid; wait $pid

[ -f "$root/build-gpu/torch_anchors.py" ] && python3 "$root/build-gpu/torch_anchors.py" > "$out/anchors.txt" 2>&1

tail -n 3 "$out/ctest-gpu.log"
cat "$out/lecture.md"
cat "$out/anchors.txt" 2>/dev/null | head -30

#!/usr/bin/env bash
# One device call for the engine (issue 3) and several devices (issue 7): the GPU
# tests, a 100-link chain (events vs host synchronization) and a batch of
# independent jobs on one device and on two. Logs to $OUT; a short table last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/gpulab-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$root/build-gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu,power.draw --format=csv > "$out/nvidia-smi.txt" 2>&1
nvidia-smi topo -m >> "$out/nvidia-smi.txt" 2>&1

(cd "$root/build-gpu" && ctest -L gpu --output-on-failure ${CTEST_EXCLUDE:+-E "$CTEST_EXCLUDE"}) > "$out/ctest-gpu.log" 2>&1
echo "ctest -L gpu exit $?" >> "$out/ctest-gpu.log"

serve() { # devices port
  "$root/build-gpu/gpulabd" --backend cuda --devices "$1" --port "$2" --access-log off 2>> "$out/gpulabd.log" &
  pid=$!
  for _ in $(seq 100); do curl -sf "localhost:$2/health" >/dev/null && return; sleep 0.1; done
}
serve 0 18081
python3 "$root/bench/chain.py" http://127.0.0.1:18081 100 3 > "$out/chain.md" 2>&1
{ echo "| devices | jobs | seconds | jobs per device |"; echo "| --- | --- | --- | --- |"; } > "$out/batch.md"
python3 "$root/bench/batch.py" http://127.0.0.1:18081 16 >> "$out/batch.md" 2>&1
kill -TERM $pid; wait $pid
serve 0,1 18082
python3 "$root/bench/batch.py" http://127.0.0.1:18082 16 >> "$out/batch.md" 2>&1
kill -TERM $pid; wait $pid

grep -E "tests passed|Passed|Failed|Skipped|exit" "$out/ctest-gpu.log" | tail -12
cat "$out/chain.md" "$out/batch.md"

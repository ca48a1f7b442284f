#!/usr/bin/env bash
# Issue 15's device run: every GPU test (test_gpu_shapes first: each configuration the
# shape pickers can choose), then bench/shapes.py through bench/run.sh, in one call that
# fits the device tool's 10 minutes (a 570 s budget: the later tests run only while time
# is left, and the benchmark gets what remains, at least 200 s).
#   bash bench/runs/shapes_session.sh pack   # here: build build-gpu/ (90a) and copy what
#                                            # the run needs into build-gpu-run/ (< 64 MiB)
#   bash bench/runs/shapes_session.sh        # on the H200, build-gpu-run/ carried
#   bash bench/runs/shapes_session.sh tests|bench   # one half alone
# Logs to $OUT (default /tmp/gpulab-shapes): a log per test, bench-run.log, shapes.md,
# nvidia-smi.txt; a summary last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
run=$root/build-gpu-run
tests=(test_gpu_shapes test_gpu_backend "test_experiments cuda" test_gpu_http test_gpu_jobs
       test_gpu_devices "test_recovery cuda")

if [ "${1:-}" = pack ]; then
  set -e
  cmake -S "$root" -B "$root/build-gpu" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$root/build-gpu" -j"${JOBS:-1}" --target gpulabd test_gpu_shapes test_gpu_backend \
    test_experiments test_gpu_http test_gpu_jobs test_gpu_devices test_recovery
  rm -rf "$run" && mkdir -p "$run/tests" "$run/lib"
  cp "$root/build-gpu/gpulabd" "$run/"
  for t in "${tests[@]}"; do cp "$root/build-gpu/tests/${t%% *}" "$run/tests/"; done
  cp -L /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 "$run/lib/"
  du -sh "$run"
  exit 0
fi

out=${OUT:-/tmp/gpulab-shapes}
mkdir -p "$out"
export LD_LIBRARY_PATH=$run/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GPULABD=$run/gpulabd
start=$SECONDS
smi() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv,noheader; }
smi >> "$out/nvidia-smi.txt" 2>&1

run_tests() {
  for t in "${tests[@]}"; do
    left=$((570 - 200 - (SECONDS - start)))
    [ "${1:-}" = all ] || left=$((570 - (SECONDS - start)))
    if [ "$left" -lt 20 ]; then echo "$t: not run (time)" >> "$out/tests.txt"; continue; fi
    name=${t// /_}
    timeout "$left" "$run/tests/"$t > "$out/$name.log" 2>&1
    echo "$t exit $? ($((SECONDS - start)) s)" >> "$out/tests.txt"
  done
}

run_bench() {
  left=$((570 - (SECONDS - start)))
  OUT=$out BENCH_ONLY=shapes timeout "$left" bash "$root/bench/run.sh" "$run" > "$out/bench-run.log" 2>&1
  echo "bench exit $? ($((SECONDS - start)) s)" >> "$out/tests.txt"
}

case "${1:-all}" in
  all) run_tests all; run_bench ;;
  tests) run_tests ;;
  bench) run_bench ;;
  *) echo "usage: shapes_session.sh [pack|all|tests|bench]" >&2; exit 2 ;;
esac
smi >> "$out/nvidia-smi.txt" 2>&1

cat "$out/nvidia-smi.txt" "$out/tests.txt"
for f in "$out"/test_*.log; do
  [ -f "$f" ] || continue
  echo "== $(basename "$f"): $(grep -aE ': ok|SKIP|failed|FAIL|CHECK' "$f" | tail -n 3 | tr '\n' ' ')"
done
grep -aE "^gemm best|^gemm tf32" "$out/test_gpu_backend.log" 2>/dev/null | cut -c1-160 | head -30
cat "$out/shapes.md" 2>/dev/null || tail -n 20 "$out/bench-run.log"

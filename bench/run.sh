#!/usr/bin/env bash
# gpulab's benchmark, re-runnable by anyone on a GPU machine:
#   bench/run.sh [BUILD_DIR]
# builds gpulab into BUILD_DIR (default build-bench) unless a gpulabd is already
# there, starts gpulabd on the GPU, and runs bench/lecture_tables.py (the lecture's
# tables), bench/best_vs_cub.py (reduce, scan and histogram: best against cub at
# 2^20..2^26 elements, the histogram at 1..65536 bins), bench/bench.py (best variants
# against the measured ceilings and PyTorch, and HTTP latency and throughput) and
# bench/shapes.py (issue 15's table: best at every shape beside the library or the copy
# ceiling). The tables go to stdout and to $OUT (default bench/out/): lecture.md,
# best_vs_cub.md (and .json), bench.md, shapes.md, and gpulabd's log.
# bench/limits.py (each best against the copy at its own size: limits.md).
# BENCH_ONLY=a,b (of lecture, cub, bench, shapes, limits) runs those parts alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
out=${OUT:-$root/bench/out}
mkdir -p "$out"
if [ ! -x "$build/gpulabd" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$build" -j"$(nproc)" --target gpulabd loadgen
fi
# A machine without libmicrohttpd installed can carry it beside the build.
[ -d "$build/lib" ] && export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
port=${PORT:-18088}
# 16 HTTP threads and 8 lanes: the H200 machine's 16 cores (a tiny job that is waited
# for runs on its HTTP thread when a lane is idle: --inline-max-bytes).
"$build/gpulabd" --backend cuda --devices 0 --port "$port" --db :memory: --access-log off \
  --http-threads 16 --streams 8 --max-queued 100000 2> "$out/gpulabd.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 300); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
only=",${BENCH_ONLY:-lecture,cub,bench,shapes,limits},"
if [[ $only == *,bench,* ]]; then
  python3 "$root/bench/bench.py" "http://127.0.0.1:$port" "$build/loadgen" "$out/bench.md"
fi
if [[ $only == *,lecture,* ]]; then
  python3 "$root/bench/lecture_tables.py" "http://127.0.0.1:$port" "$out/lecture.json" | tee "$out/lecture.md"
fi
if [[ $only == *,limits,* ]]; then
  python3 "$root/bench/limits.py" "http://127.0.0.1:$port" "$out/limits.md" || true
fi
if [[ $only == *,cub,* ]]; then
  python3 "$root/bench/best_vs_cub.py" "http://127.0.0.1:$port" "$out/best_vs_cub.md" "$out/best_vs_cub.json" || true
fi
if [[ $only == *,shapes,* ]]; then
  python3 "$root/bench/shapes.py" "http://127.0.0.1:$port" "$out/shapes.md"
fi

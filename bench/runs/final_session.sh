#!/usr/bin/env bash
# This round's device runs (issues 13-17) on the H200, one device call each half:
#   bash bench/runs/final_session.sh pack      # here: build-gpu/ (90a), every target the
#                                              # run needs, libmicrohttpd beside them
#   bash bench/runs/final_session.sh stash     # here: what the run does not need out of
#                                              # build-gpu/ (the carry's 64 MiB); unstash after
#   bash bench/runs/final_session.sh tests     # there: ctest -L gpu, bench/ukernels.sh,
#                                              # bench/best_vs_cub.py (reduce, scan, histogram)
#   bash bench/runs/final_session.sh bench     # there: bench/lab/http_breakdown.sh, then
#                                              # bench/run.sh (BENCH_ONLY, default bench,lecture);
#                                              # RETEST=regex first reruns those GPU tests
# The working tree, build-gpu/ included, sits at the same absolute path there, so
# ctest's paths hold. Logs to $OUT (default /tmp/gpulab-final) and a tarball of them;
# a summary last. Each half keeps within the device tool's 10 minutes (570 s).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
b=$root/build-gpu

if [ "${1:-}" = pack ]; then
  set -e
  cmake -S "$root" -B "$b" -DCMAKE_BUILD_TYPE=Release -DGPULAB_GPUS=1 >/dev/null
  cmake --build "$b" -j"${JOBS:-2}"
  cmake --build "$b" -j"${JOBS:-2}" --target loadgen bare_http
  mkdir -p "$b/lib" && cp -L /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 "$b/lib/"
  du -sh "$b"
  exit 0
fi

# The carry holds 64 MiB: stash moves every large file the run does not need (object
# files, libraries, the tests that are not GPU tests, the labs) to $STASH, unstash
# brings them back (build-gpu/ stays incremental here).
stash=${STASH:-/tmp/gpulab-build-gpu-stash}
if [ "${1:-}" = stash ]; then
  keep=" gpulabd gpulab-runner loadgen bare_http $(ctest --test-dir "$b" -L gpu -N -V 2>/dev/null |
    sed -n 's|.*Test command: [^ ]*/\([^/ ]*\).*|\1|p' | tr '\n' ' ') "
  (cd "$b" && find . -type f -size +200k ! -path './lib/*' | while read -r f; do
    case "$keep" in *" $(basename "$f") "*) continue ;; esac
    mkdir -p "$stash/$(dirname "$f")" && mv "$f" "$stash/$f"
  done)
  du -sh "$b"
  exit 0
fi
if [ "${1:-}" = unstash ]; then
  (cd "$stash" && find . -type f | while read -r f; do mv "$f" "$b/$f"; done) && rm -rf "$stash"
  exit 0
fi

out=${OUT:-/tmp/gpulab-final}
mkdir -p "$out"
export LD_LIBRARY_PATH=$b/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
start=$SECONDS
left() { echo $((570 - (SECONDS - start))); }
smi() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv,noheader; }
smi >> "$out/nvidia-smi.txt" 2>&1

case "${1:-}" in
  tests)
    timeout $(( $(left) - 150 )) ctest --test-dir "$b" -L gpu --output-on-failure --timeout 300 \
      > "$out/ctest-gpu.log" 2>&1
    echo "ctest -L gpu exit $? ($((SECONDS - start)) s)" >> "$out/summary.txt"
    timeout 90 bash "$root/bench/ukernels.sh" "$b" > "$out/ukernels.txt" 2>&1
    echo "ukernels.sh exit $? ($((SECONDS - start)) s)" >> "$out/summary.txt"
    port=18089
    "$b/gpulabd" --backend cuda --devices 0 --port $port --db :memory: --access-log off \
      --max-queued 100000 2> "$out/gpulabd-cub.log" &
    pid=$!
    for _ in $(seq 300); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
    timeout $(( $(left) - 10 )) python3 "$root/bench/best_vs_cub.py" "http://127.0.0.1:$port" \
      "$out/best_vs_cub.md" "$out/best_vs_cub.json" > "$out/best_vs_cub.log" 2>&1
    echo "best_vs_cub.py exit $? ($((SECONDS - start)) s)" >> "$out/summary.txt"
    kill -TERM $pid; wait $pid
    ;;
  bench)
    [ -n "${RETEST:-}" ] && timeout 200 ctest --test-dir "$b" -L gpu -R "$RETEST" --output-on-failure \
      --timeout 150 > "$out/ctest-gpu.log" 2>&1
    [ -n "${RETEST:-}" ] && echo "ctest -R $RETEST exit $? ($((SECONDS - start)) s)" >> "$out/summary.txt"
    SECONDS_PER_ROW=3 OUT=$out/http timeout 150 bash "$root/bench/lab/http_breakdown.sh" "$b" \
      > "$out/http_breakdown.md" 2> "$out/http_breakdown.err"
    echo "http_breakdown exit $? ($((SECONDS - start)) s)" >> "$out/summary.txt"
    BENCH_ONLY=${BENCH_ONLY:-bench,lecture} OUT=$out timeout $(( $(left) - 10 )) bash "$root/bench/run.sh" "$b" > "$out/bench-run.log" 2>&1
    echo "bench/run.sh exit $? ($((SECONDS - start)) s)" >> "$out/summary.txt"
    ;;
  *) echo "usage: final_session.sh pack|stash|unstash|tests|bench" >&2; exit 2 ;;
esac
smi >> "$out/nvidia-smi.txt" 2>&1
rm -rf "$out/http/"*.db* 2>/dev/null
tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
cat "$out/nvidia-smi.txt" "$out/summary.txt"
grep -E "tests passed|Failed|\*\*\*|Passed" "$out/ctest-gpu.log" 2>/dev/null | tail -n 25
tail -n 12 "$out/ukernels.txt" 2>/dev/null
cat "$out/best_vs_cub.md" 2>/dev/null
tail -n 12 "$out/http_breakdown.md" 2>/dev/null
cat "$out/bench.md" "$out/shapes.md" 2>/dev/null | grep -vE '^\| (gemm|tf32|transpose|stencil) \|' | tail -n 60

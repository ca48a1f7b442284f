#!/usr/bin/env bash
# This round's closing device runs (2026-12-02): every GPU test on the final main, then
# issue 16's table before and after, alternated, in one call each:
#   bash bench/runs/host_path_final.sh pack OLD_GPULABD   # here: build/ (90a, GPULAB_GPUS=1,
#        # every target), the old gpulabd (the commit before this session) beside it in
#        # .gpu/old, libraries the H200 machine lacks (libmicrohttpd, libpq and the
#        # LDAP/SASL libraries it loads) in build/lib
#   bash bench/runs/host_path_final.sh stash              # here: what the runs do not need out
#        # of build/ (the carry's 64 MiB); unstash after
#   bash bench/runs/host_path_final.sh tests              # there: ctest -L gpu
#   bash bench/runs/host_path_final.sh bench              # there: http_breakdown.sh old, new,
#        # old, new (one machine, one time: its noise seen twice), host_costs; SIDES="old
#        # new g5" adds builds (.gpu/g5 laid out as .gpu/old)
# The working tree sits at the same absolute path there, so ctest's paths hold. Logs in
# $OUT; a summary last. Each half keeps within the device tool's 10 minutes.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
b=${BUILD:-$root/build}
g=$root/.gpu
stash=${STASH:-/tmp/gpulab-build-stash}

case "${1:-}" in
  pack)
    set -e
    old=${2:?"pack needs the old gpulabd"}
    cmake -S "$root" -B "$b" -DCMAKE_BUILD_TYPE=Release -DGPULAB_GPUS=1 >/dev/null
    cmake --build "$b" -j"${JOBS:-2}"
    cmake --build "$b" -j"${JOBS:-2}" --target loadgen bare_http host_costs
    mkdir -p "$b/lib" "$g/old"
    for l in libmicrohttpd.so.12 libpq.so.5 libldap-2.5.so.0 liblber-2.5.so.0 libsasl2.so.2; do
      cp -L "/usr/lib/x86_64-linux-gnu/$l" "$b/lib/"
    done
    [ "$(readlink -f "$old")" = "$(readlink -f "$g/old/gpulabd")" ] || cp "$old" "$g/old/gpulabd"
    cp "$b/loadgen" "$b/bare_http" "$g/old/" && rm -rf "$g/old/lib" && cp -r "$b/lib" "$g/old/lib"
    du -sh "$b" "$g/old"
    exit 0
    ;;
  stash) # every large file the runs do not need (objects, libraries, other tests, labs)
    keep=" gpulabd gpulab-runner loadgen bare_http host_costs $(ctest --test-dir "$b" -L gpu -N -V 2>/dev/null |
      sed -n 's|.*Test command: [^ ]*/\([^/ ]*\).*|\1|p' | tr '\n' ' ') "
    [ -e "$stash" ] && { echo "$stash exists: unstash first" >&2; exit 1; }
    mkdir -p "$stash" && mv "$b/CMakeFiles" "$stash/CMakeFiles.top" # objects, cmake's own
    (cd "$b" && find . -type f -size +200k ! -path './lib/*' | while read -r f; do
      case "$keep" in *" $(basename "$f") "*) continue ;; esac
      mkdir -p "$stash/$(dirname "$f")" && mv "$f" "$stash/$f"
    done)
    du -sh "$b" "$g"
    exit 0
    ;;
  unstash) # back where they were; the stash goes only once empty
    [ -d "$stash/CMakeFiles.top" ] && mv "$stash/CMakeFiles.top" "$b/CMakeFiles"
    (cd "$stash" && find . -type f | while read -r f; do mkdir -p "$b/$(dirname "$f")" && mv "$f" "$b/$f"; done)
    [ -z "$(find "$stash" -type f)" ] && rm -rf "$stash"
    exit 0
    ;;
esac

out=${OUT:-/tmp/gpulab-final}
mkdir -p "$out"
export LD_LIBRARY_PATH=$b/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
start=$SECONDS
smi() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader; }
smi >> "$out/nvidia-smi.txt" 2>&1
case "${1:-}" in
  tests)
    timeout 540 ctest --test-dir "$b" -L gpu --output-on-failure --timeout 300 > "$out/ctest-gpu.log" 2>&1
    echo "ctest -L gpu exit $? ($((SECONDS - start)) s)" >> "$out/summary.txt"
    grep -E "tests passed|Failed|\*\*\*|Passed|Skipped" "$out/ctest-gpu.log" | tail -n 25
    ;;
  bench)
    # SIDES: more builds than old and new, each a folder .gpu/NAME as .gpu/old is
    for pass in $(seq "${PASSES:-2}"); do
      for side in ${SIDES:-old new}; do
        dir=$g/$side
        [ $side = new ] && dir=$b
        SECONDS_PER_ROW=3 OUT=$out/http-$side-$pass timeout 150 bash "$root/bench/lab/http_breakdown.sh" "$dir" \
          > "$out/http-$side-$pass.md" 2> "$out/http-$side-$pass.err"
        echo "http_breakdown $side pass $pass exit $? ($((SECONDS - start)) s)" >> "$out/summary.txt"
        rm -f "$out/http-$side-$pass"/*/gpulab.db*
      done
    done
    timeout 100 "$b/host_costs" > "$out/host_costs.md" 2>&1
    echo "host_costs exit $? ($((SECONDS - start)) s)" >> "$out/summary.txt"
    cat "$out/summary.txt" "$out/host_costs.md"
    for pass in $(seq "${PASSES:-2}"); do
      for side in ${SIDES:-old new}; do
        echo "## $side-$pass"
        grep '^| [bg]' "$out/http-$side-$pass.md" | tail -n 7
      done
    done
    ;;
  *) echo "usage: host_path_final.sh pack OLD_GPULABD|stash|unstash|tests|bench" >&2; exit 2 ;;
esac
smi >> "$out/nvidia-smi.txt" 2>&1
cat "$out/nvidia-smi.txt"

#!/usr/bin/env bash
# ctest's fuzz_request / fuzz_npy: builds the libFuzzer targets (tests/fuzz/CMakeLists.txt)
# with clang into BUILD_DIR and runs one for SECONDS on a copy of its seed corpus, so the
# repository is not modified. Fails where clang or its fuzzer runtime is missing;
# a crash leaves its input in BUILD_DIR/artifacts/ and fails the test.
#   run.sh TARGET SEED_CORPUS BUILD_DIR SECONDS [libFuzzer flags...]
set -euo pipefail
target=$1 seeds=$2 build=$3 seconds=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)

clang=""
for c in ${GPULAB_CLANG:-} clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do
  if command -v "$c" >/dev/null; then clang=$(command -v "$c"); break; fi
done
if [ -z "$clang" ]; then
  echo "FAIL: clang is not installed (apt-get install clang libclang-rt-dev; scripts/gpulab test installs them)"
  exit 1
fi
mkdir -p "$build"
probe="$build/probe"
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return (int)(n && d[0]); }' > "$probe.c"
if ! "$clang" -fsanitize=fuzzer,address,undefined "$probe.c" -o "$probe" 2>"$probe.log"; then
  echo "FAIL: $clang cannot link -fsanitize=fuzzer,address,undefined (apt-get install libclang-rt-dev):"
  sed 's/^/  /' "$probe.log" | head -5
  exit 1
fi

# Both tests may run at once: each builds only its own target, under a lock.
exec 9>"$build/.lock"
flock 9
cmake -S "$here" -B "$build" -DCMAKE_C_COMPILER="$clang" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
cmake --build "$build" --target "$target" -j2 >"$build/build-$target.log" 2>&1 ||
  { cat "$build/build-$target.log"; exit 1; }
flock -u 9

corpus="$build/corpus-$target"
rm -rf "$corpus"
mkdir -p "$corpus" "$build/artifacts"
cp -r "$seeds"/. "$corpus"/
echo "$target: $(ls "$corpus" | wc -l) seeds, ${seconds}s, built with $("$clang" --version | head -1)"
# libFuzzer's own exit code for a finding is 77, which ctest would read as a skip.
set +e
"$build/$target" -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
  -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$build/artifacts/$target-" "$@" \
  "$corpus" 2>"$build/$target.log"
rc=$?
set -e
grep -E '^(stat::|Done |#[0-9]+ +DONE)' "$build/$target.log" || true
if [ $rc -ne 0 ]; then
  tail -60 "$build/$target.log"
  echo "$target FAILED (exit $rc); reproduce: $build/$target $build/artifacts/$target-*"
  exit 1
fi
echo "$target: no crash, $(ls "$corpus" | wc -l) inputs in the corpus"

#!/usr/bin/env bash
# bench/lab/job_text_bench.c built against two (or more) builds' libraries and run
# alternated, ROUNDS times each (the order flipped every other round): on a shared,
# noisy machine one build beside the other says more than one run each. Prints each
# run's line, then the medians.
#   bash bench/lab/job_text_ab.sh ROUNDS NAME=BUILD_DIR NAME=BUILD_DIR...
# e.g. bash bench/lab/job_text_ab.sh 5 old=/tmp/old/build-cpu new=build-cpu
# A build folder needs its gpulabd built (its libraries); the source tree is the one
# its CMakeCache.txt names. Environment: ITERATIONS (default 20000).
set -uo pipefail
rounds=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
libs=$(pkg-config --libs jansson libmicrohttpd sqlite3 libpq libcrypto)
names=()
for nb in "$@"; do
  name=${nb%%=*} b=$(cd "${nb#*=}" && pwd) || exit 2
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$b/CMakeCache.txt")
  gcc -O2 -std=c11 -D_GNU_SOURCE -I"$src" "$here/job_text_bench.c" -o "$tmp/$name" \
    "$b/libgpulab_server.a" "$b/libgpulab_api.a" "$b/libgpulab_user.a" "$b/libgpulab_kernels.a" \
    $libs -lm -ldl -lpthread || exit 2
  names+=("$name")
done
for r in $(seq "$rounds"); do
  order=("${names[@]}")
  [ $((r % 2)) = 0 ] && mapfile -t order < <(printf '%s\n' "${names[@]}" | tac)
  for name in "${order[@]}"; do
    echo "$name $("$tmp/$name" "${ITERATIONS:-20000}")" | tee -a "$tmp/lines"
  done
done
python3 - "$tmp/lines" <<'PY'
import collections, re, statistics as st, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) (\d+) bytes: job_text (\d+) ns, job_json \+ json_text (\d+) ns", line)
    runs[m.group(1)].append((int(m.group(2)), int(m.group(3)), int(m.group(4))))
print("| build | bytes | job_text ns (each run) | job_json + json_text ns (each run) |")
print("| --- | --- | --- | --- |")
for name, v in runs.items():
    print("| %s | %d | %.0f (%s) | %.0f (%s) |" % (name, v[0][0], st.median(x[1] for x in v),
          ", ".join(str(x[1]) for x in v), st.median(x[2] for x in v), ", ".join(str(x[2]) for x in v)))
PY

#!/usr/bin/env bash
# Issue 16 on the H200 (2026-12-02): the tiny job's HTTP path before and after this
# session's changes, in one device call, so that the two come from one machine at one
# time.
#   bash bench/runs/host_path_session.sh pack OLD_GPULABD   # here: .gpu/old and .gpu/new,
#        # each gpulabd (OLD_GPULABD: a Release build of the commit before), loadgen,
#        # bare_http and libmicrohttpd; .gpu/new also host_costs (its phase table)
#   bash bench/runs/host_path_session.sh run                 # there (name .gpu in carry)
# Run: the machine's facts (nvidia-smi, the file systems), host_costs (the CUDA
# backend's steps and a tiny job's phases), then bench/lab/http_breakdown.sh with the
# old and the new gpulabd, then the new one's again with its database in /dev/shm (is
# the store's cost the file system's?). Logs to $OUT; the tables last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
g=$root/.gpu

if [ "${1:-}" = pack ]; then
  set -e
  old=${2:?"pack needs the old gpulabd"}
  b=${BUILD:-$root/build}
  cmake --build "$b" -j2 --target gpulabd loadgen bare_http host_costs >/dev/null
  tmp=$(mktemp) && cp "$old" "$tmp" # it may lie in what is made anew below
  rm -rf "$g/old" "$g/new"
  for side in old new; do
    mkdir -p "$g/$side/lib"
    cp "$b/loadgen" "$b/bare_http" "$g/$side/"
    cp -L /usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12 "$g/$side/lib/"
  done
  mv "$tmp" "$g/old/gpulabd" && chmod +x "$g/old/gpulabd"
  cp "$b/gpulabd" "$b/host_costs" "$g/new/"
  du -sh "$g"
  exit 0
fi

out=${OUT:-/tmp/gpulab-host-path}
mkdir -p "$out"
export LD_LIBRARY_PATH=$g/new/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv,noheader
  nproc
  df -hT "$out" /tmp /dev/shm
} > "$out/machine.txt" 2>&1
timeout 120 "$g/new/host_costs" > "$out/host_costs.md" 2>&1
echo "host_costs exit $?" >> "$out/summary.txt"
for side in old new; do
  SECONDS_PER_ROW=${SECONDS_PER_ROW:-3} OUT=$out/http-$side timeout 150 \
    bash "$root/bench/lab/http_breakdown.sh" "$g/$side" > "$out/http-$side.md" 2> "$out/http-$side.err"
  echo "http_breakdown $side exit $?" >> "$out/summary.txt"
done
rm -f /dev/shm/gpulab-bench.db*
SECONDS_PER_ROW=${SECONDS_PER_ROW:-3} EXTRA="--db /dev/shm/gpulab-bench.db" OUT=$out/http-shm timeout 150 \
  bash "$root/bench/lab/http_breakdown.sh" "$g/new" > "$out/http-new-shm.md" 2> "$out/http-new-shm.err"
echo "http_breakdown new, db in /dev/shm exit $?" >> "$out/summary.txt"
rm -f /dev/shm/gpulab-bench.db*
(cd "$out" && tar czf logs.tgz --exclude=logs.tgz ./*)
cat "$out/machine.txt" "$out/summary.txt" "$out/host_costs.md"
for f in old new new-shm; do
  echo "## $f"
  grep -v '^    ' "$out/http-$f.md"
done

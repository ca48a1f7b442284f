#!/usr/bin/env bash
# Issue 16 on the H200 (2026-12-02): where a tiny job's server time goes there, by
# sampling gpulabd with perf while one keep-alive client sends tiny jobs (the same job
# as bench/lab/http_breakdown.sh). That machine has no perf: .gpu/perf carries this
# machine's (Debian 12's) with the libraries it needs that Ubuntu 24.04 may lack.
#   bash bench/runs/host_path_profile.sh pack   # here, after host_path_session.sh pack
#   bash bench/runs/host_path_profile.sh run    # there (name .gpu in carry)
# For each of the defaults, ?wait=0 and --db none (and the defaults from 64 connections): perf
# record (cpu-clock, DWARF call chains) for 3 s, then perf report's flat and inclusive
# tables to $OUT; the tops last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
g=$root/.gpu

if [ "${1:-}" = pack ]; then
  set -e
  mkdir -p "$g/perf/lib"
  cp "$(readlink -f /usr/bin/perf)" "$g/perf/perf"
  for l in $(ldd /usr/bin/perf | awk '/=>/ {print $3}'); do
    case $(basename "$l") in
      libc.so* | libm.so* | libstdc++* | libgcc_s* | libz.so* | libcrypt.so*) ;; # the machine's own
      *) cp -L "$l" "$g/perf/lib/" ;;
    esac
  done
  du -sh "$g/perf"
  exit 0
fi

out=${OUT:-/tmp/gpulab-profile}
mkdir -p "$out"
b=$g/new
export LD_LIBRARY_PATH=$b/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
perf() { LD_LIBRARY_PATH=$g/perf/lib "$g/perf/perf" "$@"; }
tiny='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'
port=18098
profile() { # SLUG FLAGS... (CONNS: the client's connections, default 1; Q: a query string)
  local slug=$1 dir=$out/$1
  shift
  mkdir -p "$dir"
  (cd "$dir" && exec "$b/gpulabd" --port $port --no-ceilings "$@" >"$dir/access.log" 2>"$dir/gpulabd.log") &
  local pid=$!
  for _ in $(seq 600); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
  "$b/loadgen" "http://127.0.0.1:$port/transpose${Q:-}" "$tiny" 1 2 >/dev/null # warm
  perf record -e cpu-clock -F 4999 --call-graph dwarf,16384 -p $pid -o "$dir/perf.data" -- sleep 3 \
    >"$dir/record.log" 2>&1 &
  local rec=$!
  sleep 0.3
  "$b/loadgen" "http://127.0.0.1:$port/transpose${Q:-}" "$tiny" "${CONNS:-1}" 3 >"$dir/loadgen.json"
  wait $rec
  kill -TERM $pid
  wait $pid
  perf report -i "$dir/perf.data" --no-children --sort dso,symbol -g none --percent-limit 0.4 \
    >"$dir/flat.txt" 2>/dev/null
  perf report -i "$dir/perf.data" --children --sort symbol -g none --percent-limit 1.5 \
    >"$dir/inclusive.txt" 2>/dev/null
  echo "## $slug: $(cat "$dir/loadgen.json")"
  grep -v '^#' "$dir/flat.txt" | grep -v '^$' | head -45 | cut -c1-110
  grep -v '^#' "$dir/inclusive.txt" | grep -v '^$' | grep -v '\[k\]' | head -70 | cut -c1-100
  cat "$dir/loadgen.json" >>"$out/loadgen.txt"
  rm -f "$dir/perf.data" "$dir/access.log" "$dir/gpulabd.log" "$dir/record.log" "$dir/loadgen.json" "$dir/gpulab.db"*
}
profile defaults
Q='?wait=0' profile accept
profile db-none --db none
CONNS=64 profile defaults-64

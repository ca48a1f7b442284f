#!/usr/bin/env bash
# Where a tiny job's HTTP time goes on the GPU machine: the bare HTTP path (a 400 for
# a bad body), an accepted job not waited for, the waited-for job inline and through
# the workers (--inline-max-bytes 0), on the CUDA and the CPU backend, and without a
# store (--db none); 3 s each.
# Needs build-gpu/ (gpulabd, loadgen) and libmicrohttpd.so.12 in build-gpu/lib.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
b=$root/build-gpu
export LD_LIBRARY_PATH=$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tiny='{"m":64,"n":64,"variant":"naive","warmup":0,"batches":1,"reps":1,"isolation":"shared"}'
port=18097
row() { echo "| $1 | $2 | $("$b/loadgen" "http://127.0.0.1:$port$3" "$4" "$2" 3 |
  python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.0f | %.0f | %.0f | %d" % (r["per_second"], r["p50_us"], r["p99_us"], r["errors"]))') |"; }
echo "| case | connections | per second | p50 us | p99 us | errors |"
echo "| --- | --- | --- | --- | --- | --- |"
for cfg in "cuda 1048576 :memory:" "cuda 0 :memory:" "cpu 1048576 :memory:" "cuda 1048576 none"; do
  set -- $cfg
  "$b/gpulabd" --backend "$1" --port $port --db "$3" --access-log off --http-threads 16 \
    --streams 8 --max-queued 1000000 --inline-max-bytes "$2" --no-ceilings 2>"${OUT:-/tmp}/gpulabd-$1-$2-$3.log" &
  pid=$!
  for _ in $(seq 300); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
  [ "$1 $2 $3" = "cuda 1048576 :memory:" ] && row "bare HTTP: 400 for a bad body" 1 /transpose '{"m":-1}'
  [ "$1 $2 $3" = "cuda 1048576 :memory:" ] && row "$1, accepted, not waited for (?wait=0)" 1 "/transpose?wait=0" "$tiny"
  row "$1, waited for, --inline-max-bytes $2, --db $3" 1 /transpose "$tiny"
  row "$1, waited for, --inline-max-bytes $2, --db $3" 64 /transpose "$tiny"
  kill -TERM $pid; wait $pid
done
